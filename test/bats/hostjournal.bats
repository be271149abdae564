#!/usr/bin/env bats
# Host journals: on a shared spool each host appends to journals/<host>,
# and a merge puts the records into SPOOL/journal (mq-spool(5), CHANGE JOURNAL).

load helper
load replicate_helper

# shared [SKEW]: every file system counts as shared; records younger than
# SKEW (100ms unless told) are not merged yet.
shared() {
	export MQ_SHARED_FS=1 MQ_CLOCK_SKEW=${1:-100ms}
}

# sealed TEXT: TEXT as a journal line, with its checksum (no newline).
sealed() {
	"$PY" - "$1" <<'PY'
import sys, xxhash
t = sys.argv[1]
print('%s %s' % (t, xxhash.xxh32(t.encode()).hexdigest()))
PY
}

# journal_audit SPOOL HOST...: SPOOL/journal (from byte $AUDIT_FROM on,
# 0 unless set) is the hosts' journals merged: every line of it and of
# theirs passes its checksum; each of its records other than M is the
# next record of one host's journal, in that journal's order; each M
# record says how far its host's records have been merged, to the byte;
# in the end every host's journal is merged whole, each record once.
# Prints the number of records checked.
journal_audit() {
	"$PY" - "${AUDIT_FROM:-0}" "$@" <<'PY'
import os, sys, xxhash
start, spool, hosts = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

def records(path, skip=0):
    data = open(path, 'rb').read()[skip:]
    assert not data or data.endswith(b'\n'), '%s: a cut line at its end' % path
    out, at = [], skip
    for line in data.split(b'\n')[:-1]:
        body, _, s = line.rpartition(b' ')
        assert xxhash.xxh32(body).hexdigest() == s.decode(), \
            '%s: bad checksum: %r' % (path, line)
        at += len(line) + 1
        out.append((body.decode(), at))     # the record, where it ends
    return out

host = {}
for h in hosts:
    recs = records(os.path.join(spool, 'journals', h))
    assert not [r for r, _ in recs if r.startswith('M ')], '%s: an M record' % h
    host[h] = recs
pos = dict.fromkeys(hosts, 0)               # records of each merged so far
mark = dict.fromkeys(hosts, 0)
n = 0
for rec, _ in records(os.path.join(spool, 'journal'), start):
    n += 1
    if rec.startswith('M '):
        _, ms, h, off = rec.split(' ')
        assert h in host, 'an M record of no host of ours: ' + rec
        end = host[h][pos[h] - 1][1] if pos[h] else 0
        assert int(off) == end, \
            '%s: %s has %d bytes merged' % (rec, h, end)
        mark[h] = end
        continue
    assert not rec.startswith('@'), 'a copied record: ' + rec
    who = [h for h in hosts if pos[h] < len(host[h]) and host[h][pos[h]][0] == rec]
    assert who, 'not the next record of any host (twice, or out of order): ' + rec
    pos[who[0]] += 1
for h in hosts:
    assert pos[h] == len(host[h]), '%s: %d of %d records merged' % (h, pos[h], len(host[h]))
    size = os.path.getsize(os.path.join(spool, 'journals', h))
    assert mark[h] == size, '%s: M says %d, the journal has %d bytes' % (h, mark[h], size)
print(n)
PY
}

# push [OPTIONS]: push_ab, given 30 s at most: a merge that never ends
# fails the test instead of hanging it.
push() {
	timeout 30 mq-replicate -s "$A" push --rsh env --remote-spool "$B" "$@"
}

# count_lines PATTERN FILE: lines of FILE matching PATTERN (0 if none).
count_lines() {
	grep -c -- "$1" "$2" || true
}

# jline TYPE KEY: the line number in A's journal of the first record of
# TYPE (P, A...) naming KEY (a regular expression).
jline() {
	grep -n "^$1 .* $2 " "$A/journal" | head -1 | cut -d: -f1
}

@test "publishes and acks of two hosts go to their journals, and a push merges them into SPOOL/journal, each once" {
	pair
	shared
	MQ_HOST=h1 mq-group create t g
	MQ_HOST=h1 mq-pub -q t a b c
	MQ_HOST=h2 mq-pub -q t d e
	run -0 env MQ_HOST=h2 mq-sub -g g t -n 2
	assert_output $'a\nb'
	run -0 env MQ_HOST=h1 mq-sub -g g t -n 1
	assert_output c
	[[ ! -e $A/journal ]] || fail "SPOOL/journal written before a merge: $(cat "$A/journal")"
	assert_equal "$(cd "$A/journals" && ls)" $'h1\nh2'
	# Format 2: a publish writes no record (its log goes by position),
	# an ack an A record (on a shared file system a group takes names).
	local h1=TTPPPA h2=PPAA
	is_format2 t && h1=TTA h2=AA
	assert_equal "$(cut -d' ' -f1 "$A/journals/h1" | tr -d '\n')" $h1
	assert_equal "$(cut -d' ' -f1 "$A/journals/h2" | tr -d '\n')" $h2
	local n=$((${#h1} + ${#h2}))
	run --separate-stderr push -v
	assert_success
	[[ $stderr == *"sent $n records (5 messages"* ]] || fail "$stderr"
	run -0 journal_audit "$A" h1 h2
	# n records and at least one M record per host
	((output >= n + 2)) || fail "$output records in SPOOL/journal"
	assert_equal "$(grep -c '^M ' "$A/journal" | tr -d '\n')" "$((output - n))"
	same_spools
	assert_equal "$(MQ_SPOOL=$B count_queued t g)" 2
	# The hosts' journals are kept as they were: appended to, not emptied.
	assert_equal "$(wc -l <"$A/journals/h1")" ${#h1}
	# A second push merges and sends nothing.
	local before
	before=$(cat "$A/journal")
	run --separate-stderr push -v
	[[ $stderr == *"sent 0 records"* ]] || fail "$stderr"
	assert_equal "$(cat "$A/journal")" "$before"
}

@test "host names: MQ_HOST or the hostname, other characters made '-'; a spool not shared keeps SPOOL/journal" {
	shared
	MQ_HOST='db.example_1' mq-topic create t
	[[ -f $MQ_SPOOL/journals/db-example-1 ]] || fail "$(ls -A "$MQ_SPOOL/journals")"
	unset MQ_HOST
	mq-topic create u
	local h
	h=$(hostname | tr -c 'A-Za-z0-9\n-' '-')
	h=${h:0:63}
	assert_equal "$(cut -d' ' -f1,3 "$MQ_SPOOL/journals/$h")" "T u"
	[[ ! -e $MQ_SPOOL/journal ]]
	# Not shared: one journal, as before.
	unset MQ_SHARED_FS
	export MQ_SPOOL=$TD/plain
	MQ_HOST=h1 mq-group create t g
	MQ_HOST=h2 mq-pub -q t one
	run -0 env MQ_HOST=h2 mq-sub -g g t
	assert_output one
	# Format 2: no record of the publish, a K of the claim acked.
	local types=TTPA
	is_format2 t && types=TTK
	assert_equal "$(cut -d' ' -f1 "$MQ_SPOOL/journal" | tr -d '\n')" $types
	[[ ! -e $MQ_SPOOL/journals ]] || fail "$(ls -A "$MQ_SPOOL/journals")"
}

@test "many writers on two hosts and a consumer: the replica gets every message once, and the same queues" {
	pair
	shared
	MQ_HOST=h1 mq-group create t g
	MQ_HOST=h1 mq-group create t h
	# Two followers merge while the hosts write.
	spawn "$TD/fb" env MQ_HOST=h1 mq-replicate -s "$A" push --follow --rsh env --remote-spool "$B"
	spawn "$TD/fc" env MQ_HOST=h2 mq-replicate -s "$A" push --follow --rsh env --remote-spool "$TD/c"
	# -f: follows until it has 60, or nothing came for 30 s (without it,
	# the first receive that finds fewer pending ends it).
	spawn "$TD/sub" env MQ_HOST=h2 mq-sub -f -g g t -n 60 -t 30
	local sub=$SPAWNED host w
	# And one on h1: in format 2, where a publish writes no record, the
	# consumers' acks are what both hosts append meanwhile.
	spawn "$TD/sub1" env MQ_HOST=h1 mq-sub -f -g h t -n 40 -t 30
	local sub1=$SPAWNED
	local -a pids=()
	for host in h1 h2; do
		for w in 1 2 3; do
			(
				for n in $(seq 1 50); do
					MQ_HOST=$host mq-pub -q t "$host-$w-$n" || exit 1
				done
			) &
			pids+=($!)
		done
	done
	for w in "${pids[@]}"; do
		wait "$w" || fail "a publisher failed"
	done
	wait_for -t 30 exited "$sub"
	wait_for -t 30 exited "$sub1"
	assert_equal "$(wc -l <"$TD/sub")" 60
	assert_equal "$(wc -l <"$TD/sub1")" 40
	# Format 2: the log goes by position, and no publish is journaled.
	local per_host=150
	is_format2 t && per_host=0
	assert_equal "$(count_lines '^P ' "$A/journals/h1")" $per_host
	assert_equal "$(count_lines '^P ' "$A/journals/h2")" $per_host
	assert_equal "$(count_lines '^A ' "$A/journals/h1")" 40
	assert_equal "$(count_lines '^A ' "$A/journals/h2")" 60
	# A push of its own after the followers: then stop them.
	run -0 push
	B=$TD/c run -0 push
	run -0 journal_audit "$A" h1 h2
	assert_equal "$(count_lines '^P ' "$A/journal")" $((2 * per_host))
	assert_equal "$(count_lines '^A ' "$A/journal")" 100
	same_spools
	B=$TD/c same_spools
	assert_equal "$(MQ_SPOOL=$B count_queued t g)" 240
	assert_equal "$(MQ_SPOOL=$B count_queued t h)" 260
	assert_equal "$(MQ_SPOOL=$B count_log t)" 300
	assert_equal "$(MQ_SPOOL=$B log_keys t | sort -u | wc -l)" 300
}

# b_level N: B has the N messages of t in its log and none queued in g:
# every ack it was sent found its message there.
b_level() {
	[[ $(MQ_SPOOL=$B count_log t) == "$1" && $(MQ_SPOOL=$B count_queued t g) == 0 ]]
}

@test "a message published on one host and acked on another: its P record comes before its A record, and the replica has it before its ack" {
	pair
	shared
	MQ_HOST=h1 mq-group create t g
	# A follower sends while they go on, as well as a push after them.
	spawn "$TD/follow" env MQ_HOST=h1 mq-replicate -s "$A" push --follow --rsh env --remote-spool "$B"
	local follower=$SPAWNED n id pub ack
	local -a ids=()
	for n in 1 2 3 4 5 6 7 8; do
		# h1 publishes and h2 acks, then the other way round.
		pub=h$((n % 2 + 1)) ack=h$(((n + 1) % 2 + 1))
		id=$(MQ_HOST=$pub mq-pub t "m$n")
		ids+=("$id")
		run -0 env MQ_HOST=$ack mq-sub -g g t -n 1
		assert_output "m$n"
	done
	assert_equal "$(count_lines '^A ' "$A/journals/h1")" 4
	assert_equal "$(count_lines '^A ' "$A/journals/h2")" 4
	# An ack that reached B before the message (its P record, or in
	# format 2 the segment of the log that holds it) would find nothing
	# to settle there, and leave the message queued for good.
	wait_for b_level 8
	kill -- "-$follower"
	wait_for exited "$follower"
	run -0 push
	b_level 8
	local p a
	for id in "${ids[@]}"; do
		a=$(jline A "[0-9]*\.$id")
		[[ -n $a ]] || fail "$id: no A record"
		# Format 2: no P record; its log goes by position.
		is_format2 t && continue
		p=$(jline P "[0-9]*\.$id")
		[[ -n $p ]] || fail "$id: no P record"
		((p < a)) || fail "$id: P at line $p, A at line $a: $(cat "$A/journal")"
	done
	run -0 journal_audit "$A" h1 h2
	same_spools
}

@test "clocks apart by less than MQ_CLOCK_SKEW: an ack on the host whose clock is behind still comes after its publish" {
	pair
	shared 1s
	MQ_HOST=h1 mq-group create t g
	local id behind
	id=$(MQ_HOST=h1 mq-pub t one)
	# h2's clock is 300 ms behind h1's.
	behind=$("$PY" -c 'import time; print("%.3f" % (time.time() - 0.3))')
	run -0 env MQ_NOW="$behind" MQ_HOST=h2 mq-sub -g g t -n 1
	assert_output one
	run -0 push
	local p a
	a=$(jline A "[0-9]*\.$id")
	[[ -n $a ]] || fail "no A record"
	# Format 2: no P record; the log goes by position, and b_level says
	# the ack found its message on B.
	if ! is_format2 t; then
		p=$(jline P "[0-9]*\.$id")
		[[ -n $p ]] || fail "no P record"
		((p < a)) || fail "P at line $p, A at line $a: $(cat "$A/journal")"
	fi
	# What the replica's consumers see: nothing left.
	same_spools
	b_level 1
}

@test "journals/.merged lost, or an older copy of it: a merge still merges nothing twice" {
	pair
	shared
	MQ_HOST=h1 mq-group create t g
	MQ_HOST=h1 mq-pub -q t a1 a2
	MQ_HOST=h2 mq-pub -q t b1
	run -0 push
	[[ -f $A/journals/.merged ]] || fail "no journals/.merged"
	cp "$A/journals/.merged" "$TD/merged.old"
	MQ_HOST=h1 mq-pub -q t a3
	MQ_HOST=h2 mq-pub -q t b2
	run -0 env MQ_HOST=h2 mq-sub -g g t -n 1
	assert_output a1
	# Format 2: the publishes write no record, the acks do.
	local pubs=1
	is_format2 t && pubs=0
	rm "$A/journals/.merged"
	run --separate-stderr push -v
	assert_success
	[[ $stderr == *"sent $((2 * pubs + 1)) records (2 messages"* ]] || fail "$stderr"
	run -0 journal_audit "$A" h1 h2
	same_spools
	# An older copy (as a crash before its write reached the disk leaves).
	cp "$TD/merged.old" "$A/journals/.merged"
	MQ_HOST=h1 mq-pub -q t a4
	run -0 env MQ_HOST=h1 mq-sub -g g t -n 1
	assert_output a2
	run --separate-stderr push -v
	assert_success
	[[ $stderr == *"sent $((pubs + 1)) records (1 messages"* ]] || fail "$stderr"
	run -0 journal_audit "$A" h1 h2
	same_spools
	# Lost again with nothing new: nothing merged, nothing sent.
	local before
	before=$(cat "$A/journal")
	rm "$A/journals/.merged"
	run --separate-stderr push -v
	[[ $stderr == *"sent 0 records"* ]] || fail "$stderr"
	assert_equal "$(cat "$A/journal")" "$before"
	assert_equal "$(MQ_SPOOL=$B count_queued t g)" 4
}

@test "a record younger than MQ_CLOCK_SKEW waits: status counts it as lag, and a push waits it out and sends it" {
	pair
	shared 2s
	MQ_HOST=h1 mq-group create t g
	# The record that waits is an ack's (a publish writes none in format
	# 2): of messages published, and sent, before.
	local t0 id size
	id=$(MQ_HOST=h1 mq-pub t old)
	MQ_HOST=h1 mq-pub -q t young later
	MQ_CLOCK_SKEW=0 run -0 push
	size=$(stat -c %s "$A/journal")
	t0=$(now_ms)
	run -0 env MQ_HOST=h1 mq-sub -g g t -n 1
	assert_output old
	run -0 timeout 30 mq-replicate -s "$A" status --json
	assert_equal "$(jq -c '.peers[0] | [.lag_records, .lag_bytes]' <<<"$output")" \
	    "[1,$(tail -1 "$A/journals/h1" | wc -c)]"
	assert_equal "$(stat -c %s "$A/journal")" "$size"
	run -0 push
	# Sent only once 2 s had passed since the record was made.
	(($(now_ms) >= t0 + 2000)) || fail "the push did not wait out the skew"
	grep -q "$id" "$A/journal" || fail "not merged"
	run -0 mq-stat -s "$B" --peek t g
	assert_output $'young\nlater'
	run -0 timeout 30 mq-replicate -s "$A" status --json
	assert_equal "$(jq -c '.peers[0] | [.lag_records, .lag_bytes]' <<<"$output")" "[0,0]"
	# A follower holds it back as long too, then sends it.
	spawn "$TD/follow" env MQ_HOST=h2 mq-replicate -s "$A" push --follow --rsh env --remote-spool "$B"
	t0=$(now_ms)
	run -0 env MQ_HOST=h1 mq-sub -g g t -n 1
	assert_output young
	b_acked_young() { [[ $(MQ_SPOOL=$B count_queued t g) == 1 ]]; }
	wait_for b_acked_young
	(($(now_ms) >= t0 + 2000)) || fail "merged within $(($(now_ms) - t0)) ms"
	run -0 mq-stat -s "$B" --peek t g
	assert_output later
	run -0 journal_audit "$A" h1
}

@test "forged lines, a FIFO, a symbolic link and bad names in journals/: no hang, nothing of them merged but whole records" {
	pair
	shared
	MQ_HOST=h1 mq-group create t g
	MQ_HOST=h1 mq-pub -q t one
	local ms forged ok
	ms=$(now_ms)
	# h3: M records (one with a right sum, saying h1 and h3 are merged
	# far past their ends), garbage, then a record that is whole.
	forged=$(sealed "M $ms h1 1000000")
	ok=$(sealed "T $ms t")
	{
		echo "$forged"
		echo "M $ms h3 999999 00000000"
		sealed "M $ms h3 999999"
		echo "garbage, not a record"
		echo "$ok"
	} >"$A/journals/h3"
	mkfifo "$A/journals/h4"
	sealed "T $ms leaked" >"$TD/elsewhere"
	ln -s "$TD/elsewhere" "$A/journals/h5"
	cp "$TD/elsewhere" "$A/journals/bad.name"
	cp "$TD/elsewhere" "$A/journals/bad_name"
	mkdir "$A/journals/h6"
	run -0 push
	run -0 timeout 30 mq-replicate -s "$A" status --json
	assert_equal "$(jq -c '.peers[0] | [.lag_records, .lag_bytes]' <<<"$output")" "[0,0]"
	run -0 cat "$A/journal"
	refute_output --partial leaked
	refute_output --partial "$forged"
	refute_line --regexp "^M [0-9]+ h3 999999 "
	refute_line --regexp '^M [0-9]+ (h4|h5|h6|bad.name) '
	assert_equal "$(count_lines "^$ok\$" "$A/journal")" 1
	assert_equal "$(grep '^M [0-9]* h3 ' "$A/journal" | tail -1 | cut -d' ' -f4)" \
	    "$(stat -c %s "$A/journals/h3")"
	# The forged M record did not stop h1's later records: a publish's
	# (none in format 2) and an ack's.
	MQ_HOST=h1 mq-pub -q t two
	run -0 env MQ_HOST=h1 mq-sub -g g t -n 1
	assert_output one
	run -0 push
	same_spools
	run -0 mq-sub -s "$B" -g g t -n 5 -t 0
	assert_output two
	[[ -p $A/journals/h4 && -L $A/journals/h5 ]]
	assert_equal "$(cat "$TD/elsewhere")" "$(sealed "T $ms leaked")"
}

@test "a spool that had SPOOL/journal before it was shared: its records stay, byte for byte, and the new ones follow" {
	pair
	mq-group create t g
	seq 1 5 | mq-pub -l t >/dev/null
	run -0 mq-sub -g g t -n 1
	run -0 push
	[[ ! -e $A/journals ]] || fail "journals/ on a spool not shared"
	cp "$A/journal" "$TD/old"
	local n
	n=$(stat -c %s "$TD/old")
	shared
	MQ_HOST=h1 mq-pub -q t new1
	MQ_HOST=h2 mq-pub -q t new2
	run -0 env MQ_HOST=h2 mq-sub -g g t -n 1
	assert_output 2
	run -0 env MQ_HOST=h1 mq-sub -g g t -n 1
	assert_output 3
	cmp "$TD/old" "$A/journal"
	# Two acks, and two publishes but in format 2 (no record of those).
	local records=4
	is_format2 t && records=2
	run --separate-stderr push -v
	assert_success
	[[ $stderr == *"sent $records records (2 messages"* ]] || fail "$stderr"
	cmp -n "$n" "$TD/old" "$A/journal"
	AUDIT_FROM=$n run -0 journal_audit "$A" h1 h2
	same_spools
	assert_equal "$(MQ_SPOOL=$B count_queued t g)" 4
	run -0 timeout 30 mq-replicate -s "$A" status --json
	assert_equal "$(jq -c '.peers[0] | [.confirmed == .journal, .lag_records]' <<<"$output")" "[true,0]"
}

@test "mq-pub --replicas on a shared spool: returns once the peer has it; without one, exits 69 with its record merged" {
	pair
	shared
	MQ_HOST=h1 mq-group create t g
	run -0 push
	spawn "$TD/follow" env MQ_HOST=h1 mq-replicate -s "$A" push --follow --rsh env --remote-spool "$B"
	local pid=$SPAWNED
	run --separate-stderr timeout 20 env MQ_HOST=h2 mq-pub --replicas 1 --replica-timeout 10 t "kept twice"
	assert_success
	# Confirmed means it is on B already.
	run -0 mq-sub -s "$B" -g g t -n 1 -t 0
	assert_output "kept twice"
	kill -- "-$pid"
	wait_for exited "$pid"
	local t0
	t0=$(now_ms)
	run --separate-stderr timeout 20 env MQ_HOST=h2 mq-pub --replicas 1 --replica-timeout 0.5 t "kept once"
	assert_equal "$status" 69
	assert_one_line_error mq-pub
	[[ $stderr == *"0 of 1 replicas"* ]] || fail "$stderr"
	[[ $output =~ ^[0-9a-f]{32}$ ]] || fail "no id printed: $output"
	(($(now_ms) - t0 < 5000)) || fail "took $(($(now_ms) - t0)) ms"
	# It merged its own record into SPOOL/journal before it waited: its
	# publish's P, or in format 2 its S of where the log ends, past it.
	local own="\.$output "
	is_format2 t && own="^S [0-9]* t 0 2 "
	assert_equal "$(count_lines "$own" "$A/journal")" 1
	run -0 journal_audit "$A" h1 h2
	run -1 mq-sub -s "$B" -g g t -n 1 -t 0
	run -0 mq-sub -g g t -n 2 -t 0
	assert_output $'kept twice\nkept once'
}

@test "mq-stat --message reads the hosts' journals: an ack on another host, not merged yet, tells acked from expired" {
	shared
	MQ_HOST=h1 mq-topic create --expired drop t
	MQ_HOST=h1 mq-group create t a
	MQ_HOST=h1 mq-group create t e
	local t0 m
	t0=$(date +%s)
	m=$(MQ_HOST=h1 MQ_NOW=$t0 mq-pub --ttl 1h t m)
	# On h2: a acknowledges it in time; e claims it 2 h later and drops
	# it.  Their A records are in journals/h2 only.
	run -0 env MQ_HOST=h2 mq-sub -g a -n 1 t
	run -1 env MQ_HOST=h2 MQ_NOW=$((t0 + 7200)) mq-sub -g e -t 0 t
	[[ ! -e $MQ_SPOOL/journal ]] || ! grep -q '^A ' "$MQ_SPOOL/journal" ||
	    fail "the acks were merged already"
	run --separate-stderr env MQ_NOW=$((t0 + 7300)) mq-stat --message "$m"
	assert_success
	assert_output "t/a acked
t/e expired expires=$(date -u -d "@$((t0 + 3600))" +%FT%T.000Z) time=$(date -u -d "@$((t0 + 7200))" +%FT%T.000Z)"
}
