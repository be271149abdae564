#!/usr/bin/env bats
# Cross-host tests, one set for every shared file system: each is a
# harness (gluster.bash, moosefs.bash) that mounts one file system twice,
# M1 as host 1 and M2 as host 2, each a FUSE client with caches of its
# own, and gives the same API: fs_up and fs_down (setup_file and
# teardown_file), fs_setup (per test: TD, S1 and S2, this test's spool as
# host 1 and host 2 see it, M1 and M2) and fs_name.  Each test checks exact
# counts at the end: every message whose id mq-pub printed is delivered,
# and, where the promise is exactly once (no crash), delivered once.
#
# The harness: fs.bash picks it (MQ_FS, or NAME in crosshost-NAME.bats,
# a symbolic link to this file).  What only one file system has (a
# GlusterFS brick killed, its volume profile; MooseFS's chunkservers'
# fsyncs) is in gluster.bats and moosefs.bats.  Run as root; without root
# or the file system the tests are skipped, but fail when CI is set.
#
#   PATH=$PWD/bin:$PATH MQ_FS=moosefs bats --tap test/shared/crosshost.bats

load fs
# same_spools: the spool and a peer hold the same.
load ../bats/replicate_helper

setup_file() {
	fs_up
}

teardown_file() {
	fs_down
}

setup() {
	fs_setup
}

teardown() {
	# Kills what the test spawned (helper.bash).
	helper_teardown
	return 0
}

# pub_singles, slow_lines, spawn_fn, spawn_publishers, same_ids,
# all_delivered, done_or_gone, fail_with, lines, ids, queue_left, note and
# the like: checks.bash.

@test "a consumer following on host 2 gets every message published on host 1, once" {
	local n=100
	mkgroup t g
	spawn "$TD/sub2" mq-sub -s "$S2" -f -t 15 -n "$n" -g g -F '%i %a\n' t
	local c=$SPAWNED
	wait_for -t 20 member_of "$S2" t g "$c"
	pub_singles "$S1" t m "$n" "$TD/pub"
	assert_equal "$(lines "$TD/pub")" "$n"
	# -n: it exits once it has them all; -t: 15 s after the last it saw.
	wait_for -t 60 exited "$c"
	same_ids "$TD/pub" "$TD/sub2"
	assert_equal "$(awk '$2 != 1' "$TD/sub2" | wc -l)" 0
	assert_equal "$(queue_left "$S1" t g)" 0
}

@test "competing consumers on both hosts: every message once in total, both hosts work" {
	local n
	mkgroup t g
	spawn "$TD/c1" mq-sub -s "$S1" -f -t 15 -g g -F '%i %a\n' t
	local c1=$SPAWNED
	spawn "$TD/c2" mq-sub -s "$S2" -f -t 15 -g g -F '%i %a\n' t
	local c2=$SPAWNED
	wait_for -t 20 member_of "$S1" t g "$c1"
	wait_for -t 20 member_of "$S2" t g "$c2"
	# All from host 1, single messages and bursts of 8 (20 rounds of 9):
	# host 2 only gets work if it sees host 1's commits, and the two race
	# for the same names.
	pub_rounds "$S1" t 20 "$TD/pub"
	n=$((20 * 9))
	assert_equal "$(lines "$TD/pub")" "$n"
	wait_for -t 60 done_or_gone "$n" "$TD/c1" "$TD/c2" -- "$c1" "$c2"
	wait_for -t 30 queue_empty "$S1" t g || true
	stop_all "$c1" "$c2"
	note "host 1 got $(lines "$TD/c1"), host 2 got $(lines "$TD/c2")"
	same_ids "$TD/pub" "$TD/c1" "$TD/c2"
	(($(lines "$TD/c1") > 0 && $(lines "$TD/c2") > 0)) ||
	    fail "one host did all the work: host 1 $(lines "$TD/c1"), host 2 $(lines "$TD/c2")"
	assert_equal "$(queue_left "$S1" t g)" 0
}

@test "publishers on both hosts into one partition: every publish delivered, offsets unique and gap-free" {
	mkgroup t g
	# 60 single publishes and 150 lines through mq-pub -l from each host.
	spawn_publishers t 60 150
	wait_for -t 180 all_exited "${PUBLISHERS[@]}"
	cat "$TD"/pub.? >"$TD/pub"
	note "published $(lines "$TD/pub") of 420; failed: $(cat "$TD"/pub.?.fail "$TD"/pub.?.err 2>/dev/null | head -5)"
	run --separate-stderr mq-sub -s "$S1" -g g -F '%o %i\n' t
	echo "$output" >"$TD/got"
	note "mq-sub exit $status: $stderr"
	awk '{ print $2 }' "$TD/got" >"$TD/got.ids"
	local n
	n=$(lines "$TD/got")
	same_ids "$TD/pub" "$TD/got.ids"
	# Offsets 0, 1, ..., n-1: each once, none missing.
	awk '{ print $1 }' "$TD/got" | LC_ALL=C sort >"$TD/offsets"
	uniq -d "$TD/offsets" | sort -n >"$TD/twice"
	seq 0 $((n - 1)) | LC_ALL=C sort | LC_ALL=C comm -23 - "$TD/offsets" | sort -n >"$TD/gaps"
	if [[ -s $TD/twice || -s $TD/gaps ]]; then
		fail "of $n offsets, $(lines "$TD/twice") given twice (first: $(head -5 "$TD/twice" | tr '\n' ' ')), $(lines "$TD/gaps") missing (first: $(head -5 "$TD/gaps" | tr '\n' ' '))"
	fi
	assert_equal "$(head_field t committed)" "$n"
	assert_equal "$(count_log t)" "$n"
}

# --- SIGKILL torture ---------------------------------------------------------

# slot NAME: (re)start the process of slot NAME, its output in a file of
# its own for each start: SLOT[NAME] is its pid.
declare -gA SLOT GEN
slot() {
	local name=$1 out
	GEN[$name]=$((${GEN[$name]:-0} + 1))
	out=$TD/tort/$name.${GEN[$name]}
	case $name in
	pub1 | pub2)
		local s=$S1
		[[ $name == pub2 ]] && s=$S2
		spawn "$out" bash -c "
			for ((k = 1; ; k++)); do
				mq-pub -s '$s' t '$name-${GEN[$name]}-'\$k || true
			done"
		;;
	line1 | line2)
		local s=$S1
		[[ $name == line2 ]] && s=$S2
		spawn "$out" bash -c "$(declare -f slow_lines); slow_lines $name-${GEN[$name]} 100000 | mq-pub -s '$s' -l t"
		;;
	sub1 | sub2)
		local s=$S1
		[[ $name == sub2 ]] && s=$S2
		spawn "$out" mq-sub -s "$s" -f -g g -F '%i %a\n' t
		;;
	esac
	SLOT[$name]=$SPAWNED
	# No "Killed" notices from this shell for the kills to come.
	disown "$SPAWNED"
}

@test "kill -9 of publishers and consumers on both hosts, at random, for 30 s: nothing published is lost" {
	mkdir -p "$TD/tort"
	mkgroup t g --lease 2s --max-attempts 0
	local name kills=0 restarts=0 deadline victim
	local names=(pub1 pub2 line1 line2 sub1 sub2)
	for name in "${names[@]}"; do
		slot "$name"
	done
	deadline=$(($(now_ms) + 30000))
	while ! past_ms "$deadline"; do
		# A random moment, 0.1 to 0.8 s from the last kill.
		sleep "0.$((RANDOM % 8 + 1))"
		victim=${names[RANDOM % ${#names[@]}]}
		kill -9 -- "-${SLOT[$victim]}" 2>/dev/null || true
		wait_for -t 10 pgroup_gone "${SLOT[$victim]}"
		kills=$((kills + 1))
		slot "$victim"
		for name in "${names[@]}"; do
			if exited "${SLOT[$name]}"; then
				restarts=$((restarts + 1))
				slot "$name"
			fi
		done
	done
	for name in "${names[@]}"; do
		kill -9 -- "-${SLOT[$name]}" 2>/dev/null || true
		wait_for -t 10 pgroup_gone "${SLOT[$name]}"
	done
	# A last publish, which also repairs a publish killed before its commit.
	pub_singles "$S1" t last 1 "$TD/tort/last"
	cat "$TD"/tort/pub?.* "$TD"/tort/line?.* "$TD/tort/last" >"$TD/pub"
	note "$kills kills, $restarts processes that ended by themselves, $(ids "$TD/pub" | wc -l) messages published"
	# Two consumers drain what is left (leases of 2 s run out).
	spawn "$TD/d1" mq-sub -s "$S1" -f -t 20 -g g -F '%i %a\n' t
	local d1=$SPAWNED
	spawn "$TD/d2" mq-sub -s "$S2" -f -t 20 -g g -F '%i %a\n' t
	local d2=$SPAWNED
	wait_for -t 90 queue_empty "$S1" t g || true
	stop_all "$d1" "$d2"
	note "delivered $(ids "$TD"/tort/sub?.* "$TD/d1" "$TD/d2" | wc -l) times, $(ids "$TD"/tort/sub?.* "$TD/d1" "$TD/d2" | sort -u | wc -l) distinct"
	all_delivered "$TD/pub" "$TD"/tort/sub?.* "$TD/d1" "$TD/d2"
	assert_equal "$(queue_left "$S1" t g)" 0
	assert_equal "$(count_entries "$S1/topics/t/p0/dlq/g")" 0
}

@test "a lease taken on host 1 by a consumer that is killed is delivered again on host 2, attempts 2" {
	mkgroup t g --lease 2s
	pub_singles "$S1" t m 5 "$TD/pub"
	spawn "$TD/c1" mq-sub -s "$S1" -f --manual -g g -F '%i %a\n' t
	local c1=$SPAWNED
	wait_for -t 20 has_lines 5 "$TD/c1"
	kill -9 -- "-$c1"
	assert_equal "$(awk '$2 != 1' "$TD/c1" | wc -l)" 0
	spawn "$TD/c2" mq-sub -s "$S2" -f -t 15 -n 5 -g g -F '%i %a\n' t
	local c2=$SPAWNED
	wait_for -t 40 exited "$c2"
	same_ids "$TD/pub" "$TD/c2"
	assert_equal "$(awk '$2 != 2' "$TD/c2" | wc -l)" 0
	assert_equal "$(queue_left "$S1" t g)" 0
}

@test "an ordered group with a consumer on each host keeps every key's order" {
	local keys=8 per=12 n r k
	n=$((keys * per))
	mq-topic -s "$S1" create --partitions 4 t
	mkgroup t g --ordered --session 4s
	# Each handler appends a line (key, body, partition, seq, attempts,
	# time, host) to one local file: the order in which the two hosts
	# handled the messages.
	local handler='echo "$MQ_KEY $(cat) $MQ_PARTITION $MQ_SEQ $MQ_ATTEMPTS $(date +%T.%N)'
	spawn "$TD/c1" mq-sub -s "$S1" -f -t 90 -g g --exec "$handler host1\" >>$TD/order" t
	local c1=$SPAWNED
	spawn "$TD/c2" mq-sub -s "$S2" -f -t 90 -g g --exec "$handler host2\" >>$TD/order" t
	local c2=$SPAWNED
	wait_for -t 20 member_of "$S1" t g "$c1"
	wait_for -t 20 member_of "$S2" t g "$c2"
	# Message r of every key, then r + 1: from host 1 and host 2 in turn.
	for ((r = 1; r <= per; r++)); do
		for ((k = 1; k <= keys; k++)); do
			if (((r + k) % 2)); then
				mq-pub -q -s "$S1" -k "key$k" t "$r"
			else
				mq-pub -q -s "$S2" -k "key$k" t "$r"
			fi
		done
	done
	local last
	last=$(date +%T.%N)
	# Both consumers stay (-t 90): a partition moves only if its owner
	# stalls, not because the other one timed out.
	wait_for -t 60 has_lines "$n" "$TD/order" || true
	local handled
	handled=$(lines "$TD/order")
	wait_for -t 10 queue_empty "$S1" t g || true
	stop_all "$c1" "$c2"
	note "host 1 handled $(grep -c host1 "$TD/order"), host 2 $(grep -c host2 "$TD/order"), from $(head -1 "$TD/order" | cut -d' ' -f6) to $(tail -1 "$TD/order" | cut -d' ' -f6); the last publish at $last"
	# Per key, in the order handled: 1, 2, ..., per, each once.
	run awk '{ if ($2 != last[$1] + 1) print "key " $1 ": " $2 " after " last[$1] + 0 " (" $0 ")"
		   if ($2 > last[$1]) last[$1] = $2 }' "$TD/order"
	[[ -z $output ]] || fail_with "out of order:"$'\n'"$output" "$TD/order"
	# A partition's sequence numbers are each one message's.
	run awk '{ m = $1 " " $2; k = "partition " $3 " seq " $4
		   if (k in seen && seen[k] != m) print k ": " seen[k] " and " m; seen[k] = m }' "$TD/order"
	[[ -z $output ]] || fail_with "a sequence number given twice:"$'\n'"$output" "$TD/order"
	((handled == n)) ||
	    fail_with "handled $handled of $n messages within 60 s of the last publish, $(lines "$TD/order") once stopped (lost, or the consumers stalled)" "$TD/order"
	assert_equal "$(lines "$TD/order")" "$n"
	assert_equal "$(cut -d' ' -f1 "$TD/order" | sort -u | wc -l)" "$keys"
	assert_equal "$(queue_left "$S1" t g)" 0
}

# peer_level PEER PUB G [h]: the spool PEER holds what this test's spool
# does (same_spools, < spool, > peer): the records of topic t, each a
# message whose id is in the file PUB (mq-pub printed it), once; G of
# them queued for group g, and with h, all of them for group h.
peer_level() {
	local peer=$1 n
	n=$(ids "$2" | wc -l)
	A=$S1 B=$peer same_spools >"$TD/diff" 2>&1 ||
	    fail_with "${peer##*/} differs from the spool (< spool, > peer):" "$TD/diff"
	assert_equal "$(MQ_SPOOL=$peer count_log t)" "$n"
	MQ_SPOOL=$peer log_keys t | cut -d. -f2 >"$TD/peer.ids"
	same_ids "$2" "$TD/peer.ids"
	[[ -z ${4:-} ]] || assert_equal "$(queue_left "$peer" t h)" "$n"
	assert_equal "$(queue_left "$peer" t g)" "$3"
}

# journal_settled JOURNAL TOPIC GROUP: how many of GROUP's messages
# JOURNAL says left its queue as done: an A record each, and in format 2
# each bit of its K records (the records of a claim settled).
journal_settled() {
	awk -v t="$2" -v g="$3" '$3 == t && $5 == g && $1 == "A" { n++ }
	    $3 == t && $5 == g && $1 == "K" {
		split($6, f, ",")
		for (i = 1; i <= length(f[2]); i++)
			n += substr("0112122312232334", index("0123456789abcdef", substr(f[2], i, 1)), 1)
	    }
	    END { print n + 0 }' "$1"
}

@test "mq-replicate push of a spool written through both hosts sends every change" {
	# O_APPEND is not atomic across hosts: each host appends to its own
	# journal, and the push merges them into SPOOL/journal (mq-spool(5),
	# CHANGE JOURNAL).  Before that, about one record in 500 was lost.
	mkgroup t g
	mkgroup t h
	# Each host appends to its own journal: 50 single publishes and 150
	# lines through mq-pub -l from each.
	spawn_publishers t 50 150
	local p=("${PUBLISHERS[@]}")
	# Acks (one record each in format 1, a record per claim settled in
	# format 2) from both hosts while they publish.
	MQ_HOST=h1 spawn "$TD/s1" mq-sub -s "$S1" -f -t 5 -n 80 -g g -F '%i\n' t
	p+=("$SPAWNED")
	MQ_HOST=h2 spawn "$TD/s2" mq-sub -s "$S2" -f -t 5 -n 80 -g g -F '%i\n' t
	p+=("$SPAWNED")
	wait_for -t 180 all_exited "${p[@]}"
	local n acked
	cat "$TD"/pub.? >"$TD/pub"
	n=$(ids "$TD/pub" | wc -l)
	acked=$(lines "$TD/s1" "$TD/s2")
	note "published $n, acked $acked"
	# Two pushes at once, one from each host, to two peers: both merge the
	# hosts' journals into SPOOL/journal, under its lock.
	spawn "$TD/push1" mq-replicate -s "$S1" push --rsh env --remote-spool "$TD/peer1" -v
	local p1=$SPAWNED
	spawn "$TD/push2" mq-replicate -s "$S2" push --rsh env --remote-spool "$TD/peer2" -v
	wait_for -t 180 all_exited "$p1" "$SPAWNED"
	local peer
	for peer in peer1 peer2; do
		grep -q "($n messages" "$TD/push${peer#peer}.err" ||
		    fail_with "the push to $peer did not send $n messages:" "$TD/push${peer#peer}.err"
		peer_level "$TD/$peer" "$TD/pub" "$((n - acked))" h
	done
	# Every record once in SPOOL/journal: an A for each ack (format 2: a
	# bit of a K record), and a P for each publish in format 1 (in format
	# 2 a publish writes none: the log is sent by position).
	local pubs=$n
	is_format2 t && pubs=0
	assert_equal "$(grep -c '^P ' "$S1/journal" || true)" "$pubs"
	assert_equal "$(journal_settled "$S1/journal" t g)" "$acked"
}

# journal_bytes SPOOL: the bytes of every journal file of the spool:
# SPOOL/journal, the hosts' journals and the files cut off them all.
journal_bytes() {
	find "$1/journal" "$1/journal.d" "$1/journals" -type f ! -name '.*' \
	    -printf '%s\n' 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'
}

# spawn_takers N [OUT]: on each host a loop of N runs of mq-sub, each
# taking one message of group g of topic t (waiting up to 5 s for it) and
# acking it: each settles a claim of its own, so each ack is a record of
# the host's journal in either format (A in format 1, K in format 2,
# where a claim of many is settled by one).  The ids in OUT.1 and OUT.2
# (default $TD/s); the pids appended to TAKERS.
spawn_takers() {
	local h out=${2:-$TD/s}
	for h in 1 2; do
		local s=$S1
		((h == 2)) && s=$S2
		MQ_HOST=h$h spawn "$out.$h.log" bash -c '
			for ((k = 1; k <= $2; k++)); do
				mq-sub -s "$1" -n 1 -t 5 -g g -F "%i\n" t >>"$3" || exit 0
			done' bash "$s" "$1" "$out.$h"
		TAKERS+=("$SPAWNED")
	done
}

@test "the journals stay bounded where hosts share the spool: cut, merged, confirmed and dropped; a peer gets every change" {
	# Small files, so that a few hundred records cut them often; the
	# merge takes records a tenth of a second old.
	export MQ_JOURNAL_SEGMENT=4096 MQ_CLOCK_SKEW=0.1
	mkgroup t g
	mkgroup t h
	local round n=0 acked=0 k a
	for round in 1 2 3; do
		spawn_publishers t 20 80
		TAKERS=()
		spawn_takers 50 "$TD/s.$round"
		wait_for -t 180 all_exited "${PUBLISHERS[@]}" "${TAKERS[@]}"
		k=$(ids "$TD"/pub.? | wc -l)
		a=$(lines "$TD/s.$round.1" "$TD/s.$round.2")
		n=$((n + k))
		acked=$((acked + a))
		cat "$TD"/pub.? >>"$TD/pub"
		rm -f "$TD"/pub.?
		sleep 0.2
		MQ_HOST=h1 run --separate-stderr mq-replicate -s "$S1" push --rsh env --remote-spool "$TD/peer" -v
		((status == 0)) || fail "round $round: the push failed, status $status: $stderr"
		peer_level "$TD/peer" "$TD/pub" "$((n - acked))" h
	done
	note "published $n, acked $acked"
	# Every host journal was cut, and what was merged dropped; so was
	# what the peer confirmed of SPOOL/journal.
	[[ -d $S1/journals/h1.d && -d $S1/journals/h2.d && -d $S1/journal.d ]] ||
	    fail "no journal was cut: $(ls -R "$S1/journals" "$S1"/journal*)"
	local bytes written
	bytes=$(journal_bytes "$S1")
	written=$(head -c 200 "$S1/journal" | awk 'NR == 1 && $1 == "B" { print $3 }')
	note "journal files hold $bytes bytes; SPOOL/journal starts at ${written:-0}"
	((${written:-0} > 3 * 4096)) || fail "SPOOL/journal was not cut"
	# Each host's journal and SPOOL/journal: at most the file appended to
	# and one cut file not yet merged or confirmed, each up to a segment
	# and a record over.
	((bytes <= 3 * 2 * (4096 + 512))) ||
	    fail "the journals hold $bytes bytes: $(find "$S1/journal"* "$S1/journals" -type f -printf '%p %s\n')"
}

@test "a spool shared by hosts that no peer needs keeps no cut journal file; a peer that comes later is brought level by comparing" {
	export MQ_JOURNAL_SEGMENT=4096
	mkgroup t g
	# 320 publishes, 240 of them acked, 120 on each host: enough records
	# to cut each host's journal more than once in either format.
	spawn_publishers t 40 120
	TAKERS=()
	spawn_takers 120
	wait_for -t 180 all_exited "${PUBLISHERS[@]}" "${TAKERS[@]}"
	local n acked h
	cat "$TD"/pub.? >"$TD/pub"
	n=$(ids "$TD/pub" | wc -l)
	acked=$(lines "$TD/s.1" "$TD/s.2")
	note "published $n, acked $acked"
	# The hosts' journals were cut and their records dropped, unmerged:
	# SPOOL/journal was cut past them, so a peer finds the gap.
	for h in h1 h2; do
		[[ $(head -c 2 "$S1/journals/$h") == "B " ]] ||
		    fail "the journal of $h was not cut: $(ls -l "$S1/journals")"
		[[ ! -e $S1/journals/$h.d || -z $(ls "$S1/journals/$h.d") ]] ||
		    fail "cut files kept: $(ls "$S1/journals/$h.d")"
	done
	[[ $(head -c 2 "$S1/journal") == "B " ]] || fail "SPOOL/journal was not cut"
	MQ_HOST=h2 run --separate-stderr mq-replicate -s "$S2" push --rsh env --remote-spool "$TD/peer" -v
	assert_success
	[[ $stderr == *"no longer holds its place"* ]] || fail "$stderr"
	peer_level "$TD/peer" "$TD/pub" "$((n - acked))"
}

# 32 callers on one mount: on MooseFS a tenth caller parked in a blocking
# lock wait would freeze the mount; the tools never wait in the kernel
# (mq-spool(5) SHARED FILE SYSTEMS).
@test "request and reply across hosts: callers on host 2, a server on host 1, each its own reply" {
	mkgroup rpc srv
	MQ_HOST=h1 spawn "$TD/server" mq-sub -s "$S1" -g srv -f -t 60 --exec 'tr a-z A-Z' --reply rpc
	local i pids=() n=32
	for i in $(seq 1 "$n"); do
		(MQ_HOST=h2 mq-req -s "$S2" -t 60 rpc "caller$i" >"$TD/out.$i" 2>"$TD/err.$i"
		    echo $? >"$TD/rc.$i") &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in $(seq 1 "$n"); do
		[[ $(cat "$TD/rc.$i") == 0 ]] || fail_with "caller $i failed:" "$TD/err.$i"
		assert_equal "$(cat "$TD/out.$i")" "CALLER$i"
	done
	assert_equal "$(ls "$S1/replies")" ""
	assert_equal "$(queue_left "$S1" rpc srv)" 0
}

@test "a retried request across hosts: an exactly-once server on host 1 keeps its reply, the caller's repeats on host 2 get it, the handler run once" {
	mkgroup rpc srv --exactly-once
	# The first call gives up before any server runs.
	run --separate-stderr env MQ_HOST=h2 mq-req -s "$S2" -i order-1 -t 0.5 rpc work
	assert_equal "$status" 69
	MQ_HOST=h1 spawn "$TD/server" mq-sub -s "$S1" -g srv -f -t 60 \
	    --exec 'echo run >>"$TD/runs"; echo "done $(cat)"' --reply rpc
	local i
	for i in 1 2; do
		run --separate-stderr env MQ_HOST=h2 mq-req -s "$S2" -i order-1 -t 30 rpc work
		assert_success
		assert_output "done work"
	done
	assert_equal "$(wc -l <"$TD/runs")" 1
	assert_equal "$(queue_left "$S1" rpc srv)" 0
}
