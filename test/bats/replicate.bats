#!/usr/bin/env bats
# mq-replicate: keys and authorized peers (the channel itself is tested by
# test/unit/test_link.c).

load helper
load replicate_helper

@test "keygen makes a private key and a public key line, and prints the key" {
	run --separate-stderr mq-replicate keygen --name hostA
	assert_success
	[[ $output =~ ^[0-9a-f]{64}$ ]] || fail "not a key: $output"
	local key=$output
	assert_equal "$(stat -c %a "$MQ_SPOOL/replicate/key")" 600
	assert_equal "$(head -1 "$MQ_SPOOL/replicate/key")" "mq-replicate-key 1"
	assert_equal "$(cat "$MQ_SPOOL/replicate/key.pub")" "mq-replicate-pub $key hostA"
	run -0 mq-replicate pubkey
	assert_output "$key"
}

@test "keygen does not replace a key without --force" {
	run -0 mq-replicate keygen
	local first=$output
	local before; before=$(spool_snapshot)
	run --separate-stderr mq-replicate keygen
	assert_equal "$status" 73
	assert_one_line_error mq-replicate
	assert_equal "$(spool_snapshot)" "$before"
	run -0 mq-replicate keygen --force
	[[ $output != "$first" ]] || fail "the same key again"
	run -0 mq-replicate pubkey
	[[ $output != "$first" ]] || fail "pubkey shows the old key"
}

@test "pubkey without a key says what to do" {
	mq-topic create t
	run --separate-stderr mq-replicate pubkey
	assert_equal "$status" 78
	assert_one_line_error mq-replicate
	[[ $stderr == *keygen* ]] || fail "$stderr"
}

@test "authorize adds a peer once; a bad key is refused and changes nothing" {
	local k=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
	run -0 mq-replicate authorize "$k" peerB
	run --separate-stderr mq-replicate authorize "${k^^}"
	assert_success
	[[ $stderr == *"authorized already"* ]] || fail "$stderr"
	assert_equal "$(cat "$MQ_SPOOL/replicate/authorized_peers")" "$k peerB"
	local before; before=$(spool_snapshot)
	for bad in xyz "${k}00" "${k:1}" "${k:0:63}g"; do
		run --separate-stderr mq-replicate authorize "$bad"
		assert_equal "$status" 65
		assert_one_line_error mq-replicate
	done
	run --separate-stderr mq-replicate authorize "$k" $'two\nlines'
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot)" "$before"
}

@test "usage errors" {
	local before; before=$(spool_snapshot)
	for args in "" "nosuch" "keygen extra" "pubkey --force" "authorize" \
	    "authorize a b c" "--bogus keygen"; do
		run --separate-stderr mq-replicate $args
		assert_equal "$status" 64
	done
	run -0 mq-replicate --help
	assert_usage_output mq-replicate
	assert_equal "$(spool_snapshot)" "$before"
}

# --- replication between two spools on this host, over the ssh-style
# channel: --rsh runs "env mq-replicate serve --stdio -s B" here instead of
# on another host.  (test/bats/replicate_net.bats has the network tests.)

@test "push copies topics, groups and messages, byte for byte, with what was acked, delayed and dead" {
	pair
	mq-topic create --partitions 2 orders
	mq-topic create --partitions 4 events
	mq-topic create logs
	mq-group create orders billing
	mq-group create orders audit
	mq-group create --filter '.n % 2 == 0' events even
	mq-group create events all
	mq-group create logs tail
	seq 1 20000 | awk '{ printf "{\"n\":%d}\n", $1 }' >"$TD/json"
	mq-pub -l orders <"$TD/json" >/dev/null
	mq-pub -l events <"$TD/json" >/dev/null
	seq 1 10000 | mq-pub -l logs >/dev/null
	mq-pub --delay 1h orders later >/dev/null
	mq-sub -g billing orders -n 700 >/dev/null
	run -0 mq-sub -g audit --json orders -n 2 --manual
	local r1 r2
	r1=$(sed -n 1p <<<"$output" | jq -r .receipt)
	r2=$(sed -n 2p <<<"$output" | jq -r .receipt)
	mq-ack -g audit --reject --reason "bad order" orders "$r1"
	mq-ack -g audit orders "$r2"
	# Every record of A's journal goes to a B that had nothing: in
	# format 1 a P record per message, an A per ack, a D and the topics'
	# and groups' T; format 2 journals no publish (its logs go by
	# position) and an ack per claim settled.
	local records=50711
	is_format2 orders && records=$(wc -l <"$A/journal")
	run --separate-stderr push_ab -v
	assert_success
	[[ $stderr == *"sent $records records (50001 messages"* ]] || fail "$stderr"
	same_spools
	# What consumers of B see: the same counts as A's.
	local t k n=0
	for t in orders events logs; do
		assert_equal "$(MQ_SPOOL=$B mq-topic info --json $t | jq -c '[.groups[] | [.name, .pending, .delayed, .dead]]')" \
		    "$(mq-topic info --json $t | jq -c '[.groups[] | [.name, .pending, .delayed, .dead]]')"
	done
	# What B's filtered group hands out (format 2's pending counts
	# records before its filter drops any).
	for k in 0 1 2 3; do
		n=$((n + $(MQ_SPOOL=$B count_queued events even $k)))
	done
	assert_equal "$n" 10000
	# The groups' settings came along.
	assert_equal "$(grep '^filter=' "$B/topics/events/groups/even.conf")" "filter=.n % 2 == 0"
}

@test "a second push sends only what changed, and a third sends nothing" {
	pair
	mq-group create t g
	seq 1 5000 | mq-pub -l t >/dev/null
	run -0 push_ab
	local before
	before=$(wc -l <"$A/journal")
	seq 1 10 | mq-pub -l t >/dev/null
	mq-sub -g g t -n 5 >/dev/null
	# Format 1: 10 P records and 5 A; format 2 journals the acks only
	# (one record per claim settled), its log going by position.
	local records=15
	is_format2 t && records=$(($(wc -l <"$A/journal") - before))
	run --separate-stderr push_ab -v
	assert_success
	[[ $stderr == *"sent $records records (10 messages"* ]] || fail "$stderr"
	run --separate-stderr push_ab -v
	[[ $stderr == *"sent 0 records"* ]] || fail "$stderr"
	same_spools
	assert_equal "$(MQ_SPOOL=$B mq-group info --json -t t g | jq .[0].total.pending)" 5005
}

@test "pull is push the other way; topics and groups made later come along" {
	pair
	mq-group create t g
	seq 1 10 | mq-pub -l t >/dev/null
	run -0 mq-replicate -s "$B" pull --rsh env --remote-spool "$A"
	same_spools
	mq-topic alter --partitions 3 t
	mq-group create t late
	mq-group create u g2
	seq 1 30 | mq-pub -l t >/dev/null
	mq-pub u one >/dev/null
	run -0 mq-replicate -s "$B" pull --rsh env --remote-spool "$A"
	same_spools
	assert_equal "$(MQ_SPOOL=$B mq-topic info --json t | jq .partitions)" 3
	assert_equal "$(MQ_SPOOL=$B mq-group info --json -t t late | jq .[0].total.pending)" 30
	assert_equal "$(MQ_SPOOL=$B mq-sub -g g2 u -n 1)" one
}

@test "dead letters, redrives and purges are replicated" {
	pair
	mq-group create t g
	seq 1 6 | mq-pub -l t >/dev/null
	mq-sub -g g t -n 2 >/dev/null
	run -0 mq-sub -g g --json --manual t -n 2
	local r
	for r in $(jq -r .receipt <<<"$output"); do
		mq-ack -g g --reject --reason "no good" t "$r"
	done
	run -0 push_ab
	same_spools
	assert_equal "$(MQ_SPOOL=$B mq-group info --json -t t g | jq -c '.[0].total | [.pending, .dead]')" "[2,2]"
	run -0 mq-dlq -g g list --json t
	local first second
	first=$(jq -r '.[0].id' <<<"$output")
	second=$(jq -r '.[1].id' <<<"$output")
	mq-dlq -g g redrive t "$first"
	mq-dlq -g g purge t "$second"
	run -0 push_ab
	same_spools
	assert_equal "$(MQ_SPOOL=$B mq-group info --json -t t g | jq -c '.[0].total | [.pending, .dead]')" "[3,0]"
}

@test "a delayed message waits on the replica too, then is delivered" {
	pair
	mq-group create t g
	local at
	at=$(date +%s)
	mq-pub --delay 2 t soon >/dev/null
	run -0 push_ab
	same_spools
	# Not due on B either: a consumer there, at the time of the
	# publish, gets nothing, and it waits in delay/ (format 2: that
	# consumer's feed put it there).
	run -1 env MQ_NOW="$at" mq-sub -s "$B" -g g t -n 1 -t 0
	assert_output ""
	assert_equal "$(MQ_SPOOL=$B count_delay t g)" 1
	run -0 mq-sub -s "$B" -g g t -n 1 -t 5
	assert_output soon
}

# the messages B's group g of t holds to hand out: its names in new/ in
# format 1, also its log's records past its cursor in format 2
b_pending() {
	MQ_SPOOL=$B count_queued t g
}

# b_unstaged: nothing a receive writes before its commit point is left on
# B: a link staged in g/g/tmp/ (format 1), a segment in p0/tmp/ (format 2;
# .merge is a merge's hint).
b_unstaged() {
	assert_equal "$(count_entries "$B/topics/t/p0/g/g/tmp")" 0
	assert_equal "$(find "$B/topics/t/p0/tmp" -mindepth 1 ! -name .merge -printf x 2>/dev/null | wc -c)" 0
}
b_has_some() {
	(($(b_pending) > 100))
}

# killed_push KILL: 30,000 messages; a push that stops halfway (its
# stream to B held after 4 MiB, hold-relay), and KILL (a command) once B
# has some of them; then a push again: all there, once, byte for byte.
killed_push() {
	pair
	mq-group create t g
	seq 1 30000 | awk '{ printf "%s %0512d\n", $1, 0 }' | mq-pub -l t >/dev/null
	spawn "$TD/push" mq-replicate -s "$A" push \
	    --rsh "$BATS_TEST_DIRNAME/hold-relay $((4 << 20)) env" --remote-spool "$B"
	local pid=$SPAWNED
	wait_for -t 30 b_has_some
	"$@"
	wait_for exited "$pid"
	(($(b_pending) < 30000)) || fail "B has all of it before the kill"
	run -0 push_ab
	same_spools
	assert_equal "$(b_pending)" 30000
	b_unstaged
}

@test "kill -9 of the sender in the middle of a push, then a push: all there once, byte for byte" {
	kill_sender() { kill -9 -- "-$SPAWNED"; }
	killed_push kill_sender
}

@test "kill -9 of the receiver in the middle of a push, then a push: all there once, byte for byte" {
	kill_receiver() { pkill -9 -f "serve --stdio -s $B" || true; }
	killed_push kill_receiver
}

@test "a byte flipped in transit is detected by its hash and the message is sent again" {
	pair
	mq-group create t g
	seq 1 200 | awk '{ s = sprintf("%1000s", ""); gsub(/ /, "x", s); print $1, s }' |
	    mq-pub -l t >/dev/null
	local relay="$BATS_TEST_DIRNAME/flip-relay $TD/flipped env"
	run --separate-stderr mq-replicate -s "$A" push --rsh "$relay" \
	    --remote-spool "$B" -v
	[[ -e $TD/flipped ]] || fail "the relay flipped nothing"
	if is_format2 t; then
		# Format 2: a segment is checked whole by its hash; a damaged
		# one ends the session (76), nothing of it linked, and the
		# next session sends it again from where B's log ends.
		assert_equal "$status" 76
		[[ $stderr == *"segment t/0/0 damaged on its way"* ]] || fail "$stderr"
		assert_equal "$(MQ_SPOOL=$B count_log t)" 0
		run -0 mq-replicate -s "$A" push --rsh "$relay" --remote-spool "$B"
	else
		assert_success
		[[ $stderr == *"damaged"* ]] || fail "$stderr"
	fi
	same_spools
	assert_equal "$(b_pending)" 200
}

@test "mq-pub --replicas waits for a peer; without one it exits 69 after the timeout, the message stored" {
	pair
	mq-group create t g
	run -0 push_ab
	spawn "$TD/follow" mq-replicate -s "$A" push --follow --rsh env --remote-spool "$B"
	local pid=$SPAWNED
	run --separate-stderr mq-pub --replicas 1 t "kept twice"
	assert_success
	local id=$output
	# Confirmed means it is on B already, and durable there.
	run -0 mq-sub -s "$B" -g g t -n 1 -t 0
	assert_output "kept twice"
	kill -- "-$pid"
	wait_for exited "$pid"
	run --separate-stderr mq-pub --replicas 1 --replica-timeout 0.5 t "kept once"
	assert_equal "$status" 69
	assert_one_line_error mq-pub
	[[ $stderr == *"0 of 1 replicas"* ]] || fail "$stderr"
	[[ $output =~ ^[0-9a-f]{32}$ ]] || fail "no id printed: $output"
	run -0 mq-sub -g g t -n 2 -t 0
	assert_output "kept twice
kept once"
	[[ $id != "$output" ]]
}

# seg_frames ORIGIN SEGMENT TOPIC: a sender's stream over --stdio: its
# HELLO (of format 2: segments), a SEG frame of partition 0 carrying the
# bytes of the segment file SEGMENT, and END.
seg_frames() {
	"$PY" - "$@" <<'PY'
import re, struct, sys, xxhash
origin, path, topic = sys.argv[1:4]
seg = open(path, 'rb').read()
m = re.match(rb'mq-segment 2 first=(\d{20}) count=(\d{10}) ', seg)
out = []
def frame(b):
    out.append(struct.pack('>I', len(b)) + b)
frame(('HELLO mq-replicate 1 send %s peer epoch=0 segments' % origin).encode())
frame(b'SEG %s 0 %d %d %s epoch=0\n' % (topic.encode(), int(m.group(1)),
      int(m.group(2)), xxhash.xxh3_128_hexdigest(seg).encode()) + seg)
frame(b'END')
sys.stdout.buffer.write(b''.join(out))
PY
}

@test "a name that arrives with other content is quarantined, never written over" {
	pair
	mq-group create t g
	mq-pub t original >/dev/null
	run -0 push_ab
	if is_format2 t; then
		# A sender sends from where the receiver's log ends, so only
		# a segment from below it (a race with a publish there, or a
		# peer that lies) brings a record where B holds one: sent here
		# by hand, record 0 of another spool's log.
		local C=$TD/c key st=0
		mq-topic -s "$C" create t
		mq-pub -s "$C" t imposter >/dev/null
		seg_frames "$(cat "$A/ID")" "$C/topics/t/p0/log/00000000000000000000" t >"$TD/frames"
		mq-replicate -s "$B" serve --stdio <"$TD/frames" >"$TD/said" 2>"$TD/err" || st=$?
		assert_equal "$st" 0
		grep -q quarantined "$TD/err" || fail "$(cat "$TD/err")"
		[[ $(tr -d '\000' <"$TD/said") == *"SEGOK t 0 1"* ]] || fail "$(cat -v "$TD/said")"
		# B keeps its record, the one A has; the other is kept aside
		# whole and never delivered.
		assert_equal "$(MQ_SPOOL=$B count_log t)" 1
		key=$(log_keys t)
		cp "$(log_file t "$key")" "$TD/record_a"
		cmp "$TD/record_a" "$(MQ_SPOOL=$B log_file t "$key")"
		cmp "$C/topics/t/p0/log/00000000000000000000" \
		    "$B/replicate/quarantine/t.0.00000000000000000000.segment.$(cat "$A/ID")"
		run -0 mq-replicate -s "$B" status
		[[ $output == *"1 quarantined"* ]] || fail "$output"
		run -0 mq-sub -s "$B" -g g t -n 5 -t 0
		assert_output original
		return
	fi
	local f
	f=$(cd "$B/topics/t/p0/log" && ls)
	# B's copy is changed, and B forgets what it had seen.
	sed 's/original/imposter/' "$B/topics/t/p0/log/$f" >"$TD/other"
	rm "$B/topics/t/p0/log/$f" "$B/replicate/seen" "$B/journal"
	cp "$TD/other" "$B/topics/t/p0/log/$f"
	run --separate-stderr push_ab
	assert_success
	[[ $stderr == *quarantined* ]] || fail "$stderr"
	cmp "$TD/other" "$B/topics/t/p0/log/$f"
	cmp "$A/topics/t/p0/log/$f" "$B/replicate/quarantine/t.0.$f".*
	run -0 mq-replicate -s "$B" status
	[[ $output == *"1 quarantined"* ]] || fail "$output"
}

@test "status shows each peer, what it confirmed and the lag, in text and JSON" {
	pair
	mq-group create t g
	seq 1 10 | mq-pub -l t >/dev/null
	run -0 push_ab
	seq 1 5 | mq-pub -l t >/dev/null
	run -0 mq-replicate -s "$A" status --json
	local peer
	peer=$(jq -c '.peers[0] | [.state, .lag_records, .lag_bytes > 0, .lag_seconds >= 0]' <<<"$output")
	assert_equal "$peer" '["idle",5,true,true]'
	assert_equal "$(jq -r '.peers[0].id' <<<"$output")" "$(cat "$B/ID")"
	run -0 push_ab
	run -0 mq-replicate -s "$A" status
	assert_line --index 0 --regexp '^PEER +STATE'
	assert_line --index 1 --regexp ' 0 +0 +0\.000$'
}

# staged_on_b: 3 messages pushed, then one of them put back in B's tmp/
# as a receive cut before its rename leaves it; its name in STAGED.
# Format 2 stages no link: 2 more published, and their segment left in
# B's p0/tmp/ as a receive cut before its link leaves it (the head's next
# raised over it, its committed not).
staged_on_b() {
	pair
	mq-group create t g
	seq 1 3 | mq-pub -l t >/dev/null
	run -0 push_ab
	if is_format2 t; then
		seq 4 5 | mq-pub -l t >/dev/null
		cp "$A/topics/t/p0/log/00000000000000000003" \
		    "$B/topics/t/p0/tmp/00000000000000000003.0123456789abcdef0123456789abcdef"
		"$PY" - "$B/topics/t/p0/head" <<'PY'
import sys, xxhash
line = 'mq-head 1 next=%020d committed=%020d' % (5, 3)
open(sys.argv[1], 'w').write('%s sum=%s\n' % (line, xxhash.xxh32(line.encode()).hexdigest()))
PY
		return
	fi
	STAGED=$(cd "$B/topics/t/p0/g/g/new" && ls | head -1)
	mv "$B/topics/t/p0/g/g/new/$STAGED" "$B/topics/t/p0/g/g/tmp/$STAGED"
}

@test "promote finishes links an interrupted receive left staged" {
	staged_on_b
	if is_format2 t; then
		# Nothing to finish: the segment was never B's (its link is
		# the commit point); a publish there takes its numbers.
		run -0 mq-replicate -s "$B" promote
		[[ $output == *": 0 link(s) left staged"* ]] || fail "$output"
		assert_equal "$(b_pending)" 3
		mq-pub -s "$B" t own >/dev/null
		assert_equal "$(MQ_SPOOL=$B count_log t)" 4
		assert_equal "$(MQ_SPOOL=$B log_end t)" 4
		b_unstaged
		run -0 mq-sub -s "$B" -g g t -n 10 -t 0
		assert_output "$(printf '1\n2\n3\nown')"
		assert_equal "$(cat "$B/replicate/role" | cut -d' ' -f1)" primary
		return
	fi
	local f=$STAGED
	ln "$B/topics/t/p0/log/$f" "$B/topics/t/p0/g/g/tmp/orphan-not-a-key" 2>/dev/null || true
	run -0 mq-replicate -s "$B" promote
	[[ $output == *": 1 link(s) left staged"* ]] || fail "$output"
	assert_equal "$(count_entries "$B/topics/t/p0/g/g/new")" 3
	assert_equal "$(cat "$B/replicate/role" | cut -d' ' -f1)" primary
}

@test "the journal: one checksummed line per change, the publish before its commit" {
	mq-group create t g
	seq 1 3 | mq-pub -l t >/dev/null
	mq-sub -g g t -n 1 >/dev/null
	run -0 "$PY" - "$MQ_SPOOL/journal" <<'PY'
import sys, xxhash
for line in open(sys.argv[1], 'rb').read().splitlines():
    body, _, s = line.rpartition(b' ')
    assert xxhash.xxh32(body).hexdigest() == s.decode(), line
    print(body.decode().split(' ')[0], *body.decode().split(' ')[2:5])
PY
	if is_format2 t; then
		# Format 2: a publish journals nothing (its log is its own
		# record); the ack is a K record of its claim's settled records and
		# the id of its last.
		assert_equal "$(cut -d' ' -f1 <<<"$output" | tr -d '\n')" TTK
		assert_line --index 2 'K t 0 g'
		[[ $(sed -n 3p "$MQ_SPOOL/journal") =~ ^K\ [0-9]+\ t\ 0\ g\ 0\+1,01,[0-9a-f]{32}\ [0-9a-f]{8}$ ]] ||
		    fail "$(cat "$MQ_SPOOL/journal")"
		return
	fi
	assert_equal "$(cut -d' ' -f1 <<<"$output" | tr -d '\n')" TTPPPA
	assert_line --index 2 --regexp '^P t 0 00000000000000000000\.[0-9a-f]{32}$'
}

@test "replication refuses bad input with one line and a documented status" {
	pair
	mq-topic create t
	run --separate-stderr mq-replicate push
	assert_equal "$status" 64
	assert_one_line_error mq-replicate
	run --separate-stderr mq-replicate push --rsh env 127.0.0.1:1
	assert_equal "$status" 64
	assert_one_line_error mq-replicate
	run --separate-stderr mq-replicate push 'nohost-port'
	assert_equal "$status" 64
	assert_one_line_error mq-replicate
	mq-replicate keygen >/dev/null
	run --separate-stderr mq-replicate push 127.0.0.1:1
	assert_equal "$status" 69
	assert_one_line_error mq-replicate
	# (sh says why on the line before ours, as ssh would.)
	run --separate-stderr mq-replicate push --rsh "$TD/no-such-command"
	assert_equal "$status" 69
	[[ ${stderr_lines[-1]} == "mq-replicate: --rsh: could not run "* ]] ||
	    fail "$stderr"
	run --separate-stderr mq-replicate push --rsh env --remote-spool "$A"
	assert_equal "$status" 64
	assert_one_line_error mq-replicate
	[[ $stderr == *itself* ]] || fail "$stderr"
	run --separate-stderr mq-replicate serve --follow
	assert_equal "$status" 64
	run --separate-stderr mq-replicate serve --stdio <<<"not a frame at all"
	assert_equal "$status" 76
	assert_one_line_error mq-replicate
	run --separate-stderr mq-replicate status --follow
	assert_equal "$status" 64
}

@test "serve listens on loopback unless told otherwise" {
	mq-replicate keygen >/dev/null
	spawn "$TD/serve" mq-replicate serve --listen 7469
	listening() { ss -ltnH | grep -q '127.0.0.1:7469 '; }
	wait_for listening
	run -0 ss -ltnH
	refute_output --partial '0.0.0.0:7469'
}

@test "--compare sends by hash what the journal does not cover, and only that" {
	pair
	mq-group create t g
	mq-group create t h
	seq 1 100 | mq-pub -l t >/dev/null
	mq-sub -g g t -n 10 >/dev/null
	run -0 mq-sub -g h --json --manual t -n 1
	mq-ack -g h --reject t "$(jq -r .receipt <<<"$output")"
	# As if these had been published before the journal existed.
	rm "$A/journal"
	seq 101 110 | mq-pub -l t >/dev/null
	run -0 push_ab
	local sent=100 groups=""
	if is_format2 t; then
		# Format 2: the log goes by position whatever the journal
		# holds, so B has every record; what the journal held was the
		# groups' changes: on B, g and h hold all 110.
		assert_equal "$(MQ_SPOOL=$B count_log t)" 110
		assert_equal "$(b_pending)" 110
		assert_equal "$(MQ_SPOOL=$B mq-dlq -g h list --json t | jq length)" 0
		# Compared, each group's state goes: g's cursor; h's cursor
		# and its dead letter.
		sent=0 groups="; the groups of format 2 as 3 records"
	else
		assert_equal "$(b_pending)" 10
	fi
	run --separate-stderr push_ab -v --compare
	assert_success
	[[ $stderr == *"compared by hash: $sent messages sent$groups"* ]] || fail "$stderr"
	same_spools
	run --separate-stderr push_ab -v --compare
	[[ $stderr == *"compared by hash: 0 messages sent$groups"* ]] || fail "$stderr"
	same_spools
	# What B's groups hand out is what A's hold: g all but the 10 it
	# acknowledged, h all but the one it rejected, whose dead letter came.
	diff <(mq-dlq -g h list --json t) <(mq-dlq -s "$B" -g h list --json t)
	assert_equal "$(mq-sub -s "$B" -g g t -n 200 -t 0 | sort -n)" "$(seq 11 110)"
	assert_equal "$(mq-sub -s "$B" -g h t -n 200 -t 0 | sort -n)" "$(seq 2 110)"
}

@test "a message published on both spools at the same place is not settled by the other's acknowledgements" {
	pair
	mq-group create t g
	seq 1 5 | mq-pub -l t >/dev/null
	run -0 push_ab
	# Both publish one more (a replica that was not fenced), A's
	# consumer acknowledges all of A's.
	mq-pub -s "$B" t "B's own" >/dev/null
	mq-pub t "A's own" >/dev/null
	mq-sub -g g t -n 6 >/dev/null
	run --separate-stderr push_ab -v
	assert_success
	run -0 mq-sub -s "$B" -g g t -n 10 -t 0
	if is_format2 t; then
		# Format 2: the logs went apart at 5 (of the same length): the
		# sender says so, and sends neither records nor changes there.
		[[ $stderr == *"topic t partition 0 has other records on peer"*"than here before 6"* ]] ||
		    fail "$stderr"
		assert_output "$(printf "1\n2\n3\n4\n5\nB's own")"
	else
		# Format 1: A's message comes under a name of its own, acked.
		assert_output "B's own"
	fi
}

# info_of SPOOL: per group of t, pending + in flight, delayed and dead (a
# message held at the primary is pending on its replica).
info_of() {
	MQ_SPOOL=$1 mq-topic info --json t |
	    jq -c '[.groups[] | [.name, .pending + .inflight, .delayed, .dead]]'
}

@test "--compare brings a peer's groups to ours: what was acknowledged, given back, held, delayed and dead" {
	pair
	mq-group create --lease 1s t x
	mq-group create --ordered t y
	seq 1 50 | mq-pub -l t >/dev/null
	mq-pub --delay 1h t later >/dev/null
	# x: of a batch of 5, 2 acknowledged, one given back, one rejected
	# and one held (its lease runs out); y: 7 acknowledged.
	run -0 mq-sub -g x --json --manual t -n 5
	local -a r
	mapfile -t r < <(jq -r .receipt <<<"$output")
	mq-ack -g x t "${r[0]}" "${r[1]}"
	mq-ack -g x --nack t "${r[2]}"
	mq-ack -g x --reject --reason "no good" t "${r[3]}"
	local over=$(($(now_ms) + 1100))
	mq-sub -g y t -n 7 >/dev/null
	# None of it in the journal: a peer has only what comparing sends.
	rm "$A/journal"
	run --separate-stderr push_ab -v --compare
	assert_success
	[[ $stderr == *"compared by hash: "* ]] || fail "$stderr"
	assert_equal "$(info_of "$B")" "$(info_of "$A")"
	# (x's delayed one has no name yet in format 2: no feed reached it.)
	local x='["x",47,1,1]'
	is_format2 t && x='["x",48,0,1]'
	assert_equal "$(info_of "$B")" "[$x,[\"y\",43,1,0]]"
	diff <(mq-dlq -g x list --json t) <(mq-dlq -s "$B" -g x list --json t)
	# The same again changes nothing.
	run -0 push_ab --compare
	assert_equal "$(info_of "$B")" "$(info_of "$A")"
	# Promoted, B hands out what A does once the held one is over.
	run -0 mq-replicate -s "$B" promote
	wait_for past_ms "$over"
	local g
	for g in x y; do
		assert_equal "$(mq-sub -s "$B" -g $g t -t 1 | sort -n)" \
		    "$(mq-sub -g $g t -t 1 | sort -n)"
	done
	assert_equal "$(mq-sub -s "$B" -g x t -t 0 | wc -l)" 0
}

@test "--progress shows what was sent; --syslog sends the log to syslog, not to stderr" {
	pair
	mq-group create t g
	seq 1 50 | mq-pub -l t >/dev/null
	run --separate-stderr push_ab --progress
	assert_success
	[[ $stderr == *"50 messages"*"MB"* ]] || fail "$stderr"
	seq 1 5 | mq-pub -l t >/dev/null
	run --separate-stderr push_ab -v --syslog
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(b_pending)" 55
}

@test "a message whose log/ name retention removed is sent from a group that holds it" {
	pair
	mq-group create t g
	mq-pub t old >/dev/null
	local later=$(($(date +%s) + 30 * 86400))
	MQ_NOW=$later mq-topic gc t
	# Format 2 keeps a segment past the retention while a group needs
	# it (its only copy): it goes as it is.
	if is_format2 t; then
		assert_equal "$(count_log t)" 1
	else
		assert_equal "$(count_entries "$A/topics/t/p0/log")" 0
	fi
	run -0 push_ab
	run -0 mq-sub -s "$B" -g g t -n 1 -t 0
	assert_output old
	is_format2 t || return 0
	# What retention did remove, no group needing it, is a gap to a
	# peer that never had it: its log goes on past it.
	mq-sub -g g t -n 1 >/dev/null
	mq-pub t new >/dev/null
	MQ_NOW=$later mq-topic gc t
	assert_equal "$(count_log t)" 1
	run -0 mq-replicate -s "$A" push --rsh env --remote-spool "$TD/c"
	assert_equal "$(MQ_SPOOL=$TD/c count_log t)" 1
	assert_equal "$(MQ_SPOOL=$TD/c log_end t)" 2
	run -0 mq-sub -s "$TD/c" -g g t -n 5 -t 0
	assert_output new
}

@test "names from a peer are never used as paths unchecked" {
	pair
	mq-group create t g
	mq-pub t one >/dev/null
	# A journal record naming a group and a dead letter outside the spool.
	printf 'X 1 t 0 ../../../../escape 00000000000000000000.0123456789abcdef0123456789abcdef,a1' >"$TD/rec"
	"$PY" - "$TD/rec" "$A/journal" <<'PY'
import sys, xxhash
line = open(sys.argv[1]).read()
open(sys.argv[2], 'a').write('%s %s\n' % (line, xxhash.xxh32(line.encode()).hexdigest()))
PY
	run -0 push_ab
	[[ ! -e $TD/escape && ! -e $B/escape ]]
	assert_equal "$(b_pending)" 1
}

@test "a spool whose journal went back (a restore from a backup) is refused, not half replicated" {
	pair
	mq-group create t g
	seq 1 5 | mq-pub -l t >/dev/null
	run -0 push_ab
	: >"$A/journal"
	mq-pub t new >/dev/null
	local before
	before=$(spool_snapshot "$B/topics")
	run --separate-stderr push_ab
	assert_equal "$status" 65
	[[ $stderr == *"restored from a backup"* ]] || fail "$stderr"
	assert_equal "$(spool_snapshot "$B/topics")" "$before"
}

@test "a receive cut after its records were journaled, before its links were moved: the next session finishes them" {
	# As the cut left it: staged, and the vector covering less of the
	# journal than the journal has.
	staged_on_b
	sed -i '1s/.*/journal 0/' "$B/replicate/seen"
	run -0 push_ab
	# Format 2: the segment left unlinked comes again.
	local all=3
	is_format2 t && all=5
	assert_equal "$(b_pending)" "$all"
	b_unstaged
	same_spools
}

@test "a receiver whose replicate/seen is empty or has no line end reads the journal instead (it used to crash)" {
	pair
	mq-group create t g
	seq 1 2 | mq-pub -l t >/dev/null
	run -0 push_ab
	local damaged
	for damaged in '' 'journal 0'; do
		printf '%s' "$damaged" >"$B/replicate/seen"
		mq-pub t more >/dev/null
		run -0 push_ab
	done
	assert_equal "$(b_pending)" 4
	same_spools
}

@test "three spools over several paths: a relay that lost a message does not hide it from the direct path" {
	pair
	local C=$TD/c
	mq-group create t g
	mq-topic -s "$C" create t
	mq-group -s "$C" create t g
	seq 1 3 | mq-pub -l t >/dev/null
	# A -> C; C consumes everything and retention takes its log/ names.
	run -0 mq-replicate -s "$A" push --rsh env --remote-spool "$C"
	mq-sub -s "$C" -g g t -n 3 >/dev/null
	MQ_NOW=$(($(date +%s) + 30 * 86400)) mq-topic -s "$C" gc t
	assert_equal "$(count_entries "$C/topics/t/p0/log")" 0
	# A publishes one more; A -> C; C -> B relays A's records, lacking
	# the first three messages; then A -> B directly.
	mq-pub t four >/dev/null
	run -0 mq-replicate -s "$A" push --rsh env --remote-spool "$C"
	run -0 mq-replicate -s "$C" push --rsh env --remote-spool "$B"
	run -0 push_ab
	run -0 mq-sub -s "$B" -g g t -n 10 -t 0
	assert_output "1
2
3
four"
}

@test "push --follow under MQ_POLL sends what a spool without a journal publishes later" {
	pair
	mq-topic create t
	rm -f "$A/journal"
	MQ_POLL=0.1 spawn "$TD/follow" mq-replicate -s "$A" push --follow --rsh env --remote-spool "$B"
	mq-group create t g
	mq-pub t later >/dev/null
	b_later() { [[ $(b_pending) == 1 ]]; }
	wait_for b_later
}

@test "mq-pub -i with --replicas waits for the peer even when the key is a repeat" {
	pair
	mq-group create t g
	run -0 push_ab
	run -0 mq-pub -i order-7 t first
	# Not replicated yet: a repeat of the key must not pass at once.
	run --separate-stderr mq-pub -i order-7 --replicas 1 --replica-timeout 0.3 t first
	assert_equal "$status" 69
	run -0 push_ab
	run -0 mq-pub -i order-7 --replicas 1 --replica-timeout 5 t first
}

@test "a backfill (--from-start) reaches the replica as link records; an alter as a topic record" {
	pair
	mq-topic create t
	seq 1 4 | mq-pub -l t >/dev/null
	run -0 push_ab
	mq-group create --from-start t late
	mq-topic alter --partitions 2 t
	run -0 push_ab
	assert_equal "$(MQ_SPOOL=$B count_queued t late)" 4
	# Format 2: a backfill is where the group's cursor starts, in its
	# conf; nothing is journaled per record.
	local links=4
	is_format2 t && links=0
	assert_equal "$(grep -c '^L ' "$A/journal" || true)" "$links"
	[[ $(tail -1 "$A/journal") == "T "*" t "* ]] || fail "$(tail -1 "$A/journal")"
	same_spools
}
