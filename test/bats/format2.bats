#!/usr/bin/env bats
# Format 2 (mq-spool(5), SEGMENTED STORAGE): a partition's log of segment
# files, a group's cursor and the names it feeds, on topics made with
# mq-topic create --format 2 (or MQ_FORMAT=2): what they store, what the
# tools deliver from them, crashes at each step, and the tools that do
# not read the format yet refusing it by name.  Publishers and consumers
# killed at random are test/slow/format2.bats.

load helper

# seg_lines TOPIC [PARTITION]: the first line of each segment, in order.
seg_lines() {
	local f
	for f in "$MQ_SPOOL/topics/$1/p${2:-0}"/log/*; do
		head -n 1 "$f"
	done
}

# tmp_left DIR: the names a publish or a merge left in a partition's
# tmp/, but for .merge (the merges' lock and count, kept).
tmp_left() {
	find "$1" -mindepth 1 -maxdepth 1 ! -name .merge -printf x | wc -c
}

# dead_letter TOPIC REASON: the id of the topic's one dead letter, whose
# reason is REASON.
dead_letter() {
	mq-dlq list --json "$1" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
assert len(d) == 1 and d[0]["reason"] == sys.argv[1], d
print(d[0]["id"])' "$2"
}

# tiles TOPIC [PARTITION]: the segments' ranges follow each other from 0
# with no gap and no overlap, and each segment is named by its first.
tiles() {
	local f line want=0 first count
	for f in "$MQ_SPOOL/topics/$1/p${2:-0}"/log/*; do
		IFS= read -r line <"$f"
		[[ $line =~ ^mq-segment\ 2\ first=([0-9]{20})\ count=([0-9]{10})\ size=([0-9]{20})$ ]] ||
			fail "$f: no segment line: $line"
		[[ ${f##*/} == "${BASH_REMATCH[1]}" ]] || fail "$f is not named by its first"
		first=$((10#${BASH_REMATCH[1]})) count=$((10#${BASH_REMATCH[2]}))
		((first == want)) || fail "$f starts at $first, not $want"
		(($(stat -c %s "$f") == 10#${BASH_REMATCH[3]})) || fail "$f: size"
		want=$((first + count))
	done
	echo "$want"
}

@test "format 2: the default, written into topic.conf; --format 1 and MQ_FORMAT=1 make format 1; bad formats are 64 and make nothing" {
	unset MQ_FORMAT                         # the default, whatever MQ_TEST_FORMAT says
	run -0 mq-topic create t
	grep -qx 'format=2' "$MQ_SPOOL/topics/t/topic.conf"
	[[ -d $MQ_SPOOL/topics/t/p0/tmp && -d $MQ_SPOOL/topics/t/p0/log ]]
	run -0 mq-topic info t
	assert_line 'format: 2'
	run -0 mq-topic create --format 2 two
	grep -qx 'format=2' "$MQ_SPOOL/topics/two/topic.conf"
	# Format 1 writes no key: what earlier versions read the same.
	run -0 mq-topic create --format 1 old
	! grep -q '^format=' "$MQ_SPOOL/topics/old/topic.conf"
	run -0 mq-topic info old
	assert_line 'format: 1'
	local f
	for f in 0 3 x ''; do
		run --separate-stderr mq-topic create --format "$f" bad
		assert_equal "$status" 64
		assert_one_line_error mq-topic
		[[ ! -e $MQ_SPOOL/topics/bad ]]
	done
	# MQ_FORMAT gives new topics their format, not old ones.
	MQ_FORMAT=1 mq-pub -q made x
	! grep -q '^format=' "$MQ_SPOOL/topics/made/topic.conf"
	[[ $(ls "$MQ_SPOOL/topics/made/p0/log") =~ ^[0-9]{20}\.[0-9a-f]{32}$ ]]
	MQ_FORMAT=1 mq-pub -q t x
	grep -qx 'format=2' "$MQ_SPOOL/topics/t/topic.conf"
	[[ $(ls "$MQ_SPOOL/topics/t/p0/log") == 00000000000000000000 ]]
	MQ_FORMAT=2 mq-pub -q old x
	! grep -q '^format=' "$MQ_SPOOL/topics/old/topic.conf"
}

@test "format 2: a publish is one segment named by its first sequence number, readable with grep; no file per message" {
	mq-topic create --format 2 t
	seq 1000 | mq-pub -q -l t
	mq-pub -q t one two
	run -0 seg_lines t
	assert_output "mq-segment 2 first=00000000000000000000 count=0000001000 size=$(printf '%020d' "$(stat -c %s "$MQ_SPOOL/topics/t/p0/log/00000000000000000000")")
mq-segment 2 first=00000000000000001000 count=0000000002 size=$(printf '%020d' "$(stat -c %s "$MQ_SPOOL/topics/t/p0/log/00000000000000001000")")"
	assert_equal "$(tiles t)" 1002
	assert_equal "$(count_entries "$MQ_SPOOL/topics/t/p0/log")" 2
	assert_equal "$(tmp_left "$MQ_SPOOL/topics/t/p0/tmp")" 0
	assert_equal "$(head_field t committed)" 1002
	# Header blocks and bodies as in a message file, one after another.
	run -0 grep -c '^Topic: t$' "$MQ_SPOOL/topics/t/p0/log/00000000000000000000"
	assert_output 1000
	grep -qx 'Seq: 1001' "$MQ_SPOOL/topics/t/p0/log/00000000000000001000"
	grep -qx two "$MQ_SPOOL/topics/t/p0/log/00000000000000001000"
}

@test "format 2: small segments are merged: 300 single publishes make a few files, delivered in order; a merge's leftovers are removed by the next" {
	mq-topic create --format 2 t
	mkgroup t g
	local x p=$MQ_SPOOL/topics/t/p0
	for ((x = 1; x <= 100; x++)); do mq-pub -q t "m$x"; done
	# The 64 small segments a merge needs, then one that covers them:
	# keep a copy of one that it is about to cover.
	cp "$p/log/00000000000000000099" "$TD/left"
	for ((x = 101; x <= 300; x++)); do mq-pub -q t "m$x"; done
	(($(count_entries "$p/log") < 70)) || fail "$(count_entries "$p/log") segments for 300 messages"
	assert_equal "$(tiles t)" 300
	run -0 mq-sub -g g -n 150 t
	assert_output "$(printf 'm%s\n' $(seq 150))"
	# As a merge that died between its rename and its unlinks: a name
	# inside the range of the one before it.  Readers take the same
	# records from either; the next merge unlinks it.
	[[ ! -e $p/log/00000000000000000099 ]] || fail "not merged"
	cp "$TD/left" "$p/log/00000000000000000099"
	run -0 mq-sub -g g -n 10 t
	assert_output "$(printf 'm%s\n' $(seq 151 160))"
	for ((x = 301; x <= 370; x++)); do mq-pub -q t "m$x"; done
	[[ ! -e $p/log/00000000000000000099 ]] || fail "the leftover stayed"
	assert_equal "$(tiles t)" 370
	run -0 mq-sub -g g t
	assert_output "$(printf 'm%s\n' $(seq 161 370))"
	run -0 mq-topic info --json t
	[[ $output == *'"messages": 370'* || $output == *'"messages":370'* ]] || fail "$output"
}

@test "format 2: groups get what was published after them, --from-start all of it, in order, each once; acks empty the queue" {
	mq-topic create --format 2 t
	mkgroup t early
	seq 3 | mq-pub -q -l t
	mkgroup t late
	mq-pub -q t 4 5
	run -0 mq-sub -g early t
	assert_output "$(seq 5)"
	run -0 mq-sub -g late t
	assert_output "$(printf '4\n5')"
	run -0 mq-sub -g all --from-start t
	assert_output "$(seq 5)"
	run mq-sub -g early t
	assert_equal "$status" 1
	group_empty t early
	assert_equal "$(cursor_of t early)" 5
	# Nothing is left in the group's queue once acked.
	assert_equal "$(count_entries "$(group_dir t early)/new")" 0
	assert_equal "$(count_entries "$(group_dir t early)/cur")" 0
}

@test "format 2: mq-stat, mq-group list and mq-topic info count the log past each cursor as pending" {
	mq-topic create --format 2 --partitions 2 t
	mkgroup t a
	mkgroup t b
	seq 1000 | mq-pub -q -l t
	mq-sub -q -n 10 -g a t
	run -0 mq-group list --json
	"$PY" - "$output" <<'EOF'
import json, sys
g = {x['group']: x for x in json.loads(sys.argv[1])}
assert g['a']['pending'] == 990, g['a']
assert g['b']['pending'] == 1000, g['b']
assert g['b']['lag'] == 1000, g['b']
EOF
	run -0 mq-topic info --json t
	"$PY" - "$output" <<'EOF'
import json, sys
t = json.loads(sys.argv[1])
assert t['format'] == 2, t
assert sum(p['messages'] for p in t['heads']) == 1000, t['heads']
assert sum(p['committed'] for p in t['heads']) == 1000, t['heads']
g = {x['name']: x for x in t['groups']}
assert g['a']['pending'] == 990 and g['b']['pending'] == 1000, g
EOF
	run -0 mq-stat t b
	assert_line --regexp '^t +b +1000 +0 +0 +0 '
}

@test "format 2: 4 publishers at once, single and batched: the segments tile the sequence numbers; every id once" {
	mq-topic create --format 2 t
	mkgroup t g
	local w
	for w in 1 2 3 4; do
		(
			for b in $(seq 20); do
				seq "$w$b"001 "$w$b"050 | mq-pub -l t
				mq-pub t "single-$w-$b"
			done
		) >"$TD/ids.$w" &
	done
	wait
	assert_equal "$(cat "$TD"/ids.* | sort -u | wc -l)" $((4 * 20 * 51))
	assert_equal "$(tiles t)" $((4 * 20 * 51))
	run -0 mq-sub -F '%i\n' -g g t
	assert_equal "$(printf '%s\n' "$output" | sort -u | wc -l)" $((4 * 20 * 51))
	diff <(printf '%s\n' "$output" | sort) <(cat "$TD"/ids.* | sort)
}

# set_head TOPIC NEXT COMMITTED: p0/head as a publisher killed there left it.
set_head() {
	local line
	# %s: numbers past the shell's 64-bit signed integers.
	line=$(printf 'mq-head 1 next=%s committed=%s' "$(printf %20s "$2" | tr ' ' 0)" \
	    "$(printf %20s "$3" | tr ' ' 0)")
	printf '%s sum=%s\n' "$line" "$("$PY" -c 'import sys, xxhash
print("%08x" % xxhash.xxh32(sys.argv[1].encode()).intdigest())' "$line")" \
	    >"$MQ_SPOOL/topics/$1/p0/head"
}

@test "format 2: a publisher killed between its link and its head is repaired by the next; one killed before its link leaves nothing" {
	mq-topic create --format 2 t
	mkgroup t g
	seq 10 | mq-pub -q -l t
	local p=$MQ_SPOOL/topics/t/p0
	# Killed after its link: a segment at 10 the head does not know,
	# its tmp/ name still there.
	printf '%s\n' a b c | mq-pub -q -l t
	cp "$p/log/00000000000000000010" "$p/tmp/00000000000000000010.$(printf '%032d' 0)"
	set_head t 13 10
	run -0 mq-sub -g g t
	assert_output "$(printf '%s\n' $(seq 10) a b c)"
	assert_equal "$(head_field t committed)" 13
	assert_equal "$(head_field t next)" 13
	assert_equal "$(tmp_left "$p/tmp")" 0
	# Killed before its link: next above committed, a half written
	# segment in tmp/, an idempotency key claimed for a number it took.
	mq-pub -q -i key-1 t first
	set_head t 20 14
	printf 'mq-segment 2 first=000' >"$p/tmp/00000000000000000014.$(printf '%032d' 1)"
	ln -s 00000000000000000016.66200000000000000000000000000001 "$p/dedup/00000000000000000000000000000abc"
	run -0 mq-pub -q t after
	assert_equal "$(tmp_left "$p/tmp")" 0
	[[ ! -L $p/dedup/00000000000000000000000000000abc ]]
	[[ -n $(find "$p/dedup" -type l) ]] || fail "the committed key went too"
	run -0 mq-sub -g g t
	assert_output "$(printf 'first\nafter')"
	assert_equal "$(tiles t)" 15
}

@test "format 2: delayed messages wait in delay/ until due; TTL expiry dead-letters with the message kept" {
	mq-topic create --format 2 t
	mkgroup t g
	local t0=${EPOCHREALTIME/./}
	mq-pub -q --delay 1.5 t later
	mq-pub -q --ttl 0.3 t brief
	mq-pub -q t now
	wait_for past_ms $(( t0 / 1000 + 400 ))
	run -0 mq-sub -g g t
	assert_output now
	assert_equal "$(count_entries "$(group_dir t g)/delay")" 1
	run -0 mq-sub -g g -t 10 -n 1 t
	assert_output later
	(( ${EPOCHREALTIME/./} - t0 >= 1500000 )) || fail "delivered before it was due"
	run -0 dead_letter t expired
	run -0 mq-dlq show t "$output"
	[[ $output == *brief* ]] || fail "the dead letter lost its message: $output"
}

@test "format 2: a group's filter is applied as it is fed" {
	mq-topic create --format 2 t
	mkgroup t even --group-filter '(.n % 2) == 0'
	mkgroup t all
	local x
	for x in 1 2 3 4 5 6; do mq-pub -q t "{\"n\": $x}"; done
	run -0 mq-sub -g even t
	assert_output "$(printf '{"n": 2}\n{"n": 4}\n{"n": 6}')"
	run -0 mq-sub -q -g all t
	group_empty t even
}

@test "format 2: an idempotency key repeated returns the first id, and says so when the content differs" {
	mq-topic create --format 2 t
	mkgroup t g
	local a b
	a=$(mq-pub -i order-7 t first)
	run --separate-stderr mq-pub -i order-7 t first
	assert_success
	assert_output "$a"
	assert_equal "$stderr" ""
	run --separate-stderr mq-pub -i order-7 t other
	assert_success
	assert_output "$a"
	assert_equal "$stderr" "mq-pub: warning: idempotency key order-7 was used by message $a with other content; not stored"
	run -0 mq-sub -g g t
	assert_output first
}

@test "format 2: a damaged record is never delivered: dead-lettered as unreadable, the rest delivered" {
	mq-topic create --format 2 t
	mkgroup t g
	mq-pub -q t aaaa bbbb cccc
	local f=$MQ_SPOOL/topics/t/p0/log/00000000000000000000 off
	off=$(grep -abo '^bbbb$' "$f" | cut -d: -f1)
	printf 'X' | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
	run -0 mq-sub -g g t
	assert_output "$(printf 'aaaa\ncccc')"
	run -0 mq-dlq list t
	assert_line --partial unreadable
	group_empty t g
}

@test "format 2: what is in log/ is not trusted: a FIFO, a link or a lie named as a segment is refused, never waited on" {
	mq-topic create --format 2 t
	mkgroup t g
	mq-pub -q t one
	local p=$MQ_SPOOL/topics/t/p0
	mkfifo "$p/log/00000000000000000001"
	run --separate-stderr timeout 10 mq-pub t two
	assert_equal "$status" 65
	assert_one_line_error mq-pub
	rm "$p/log/00000000000000000001"
	ln -s /etc/passwd "$p/log/00000000000000000001"
	run --separate-stderr timeout 10 mq-pub t two
	assert_equal "$status" 65
	rm "$p/log/00000000000000000001"
	printf 'mq-segment 2 first=00000000000000000007 count=0000000001 size=00000000000000000085\n' >"$p/log/00000000000000000001"
	run --separate-stderr timeout 10 mq-pub t two
	assert_equal "$status" 65
	[[ $stderr == *"not the segment its name says"* ]] || fail "$stderr"
	rm "$p/log/00000000000000000001"
	run -0 mq-pub -q t two
	run -0 mq-sub -g g t
	assert_output "$(printf 'one\ntwo')"
}

@test "format 2: mq-ack --commit acks below an offset, records not taken by moving the cursor, claimed ones by their bits, fed ones by their names" {
	mq-topic create --format 2 t
	mkgroup t g
	mkgroup t h
	mkgroup t o --ordered
	seq 10 | mq-pub -q -l t
	# g: nothing fed yet; the commit moves the cursor past 0..6.
	run -0 mq-ack -g g --commit 0:7 t
	assert_equal "$(cursor_of t g)" 7
	run -0 mq-sub -g g t
	assert_output "$(seq 8 10)"
	# h: 1 and 2 in flight, in one claim; the cursor is raised only
	# once it is settled (claims.c).
	run -0 mq-sub -g h --manual -n 2 -F '%s\n' t
	assert_output "$(seq 2)"
	assert_equal "$(count_claims "$(group_dir t h)/claims")" 1
	assert_equal "$(cursor_of t h)" 0
	run -0 mq-ack -g h --commit 0:1 t
	assert_equal "$(count_claims "$(group_dir t h)/claims")" 1
	run -0 mq-ack -g h --commit 0:4 t
	assert_equal "$(count_claims "$(group_dir t h)/claims")" 0
	assert_equal "$(cursor_of t h)" 4
	run -0 mq-sub -g h t
	assert_output "$(seq 5 10)"
	# o, ordered, is fed names: all fed, one in flight; the cursor
	# never goes back.
	run -0 mq-sub -g o --manual -n 1 -F '%s' t
	assert_output 1
	assert_equal "$(cursor_of t o)" 10
	run -0 mq-ack -g o --commit 0:4 t
	assert_equal "$(cursor_of t o)" 10
	assert_equal "$(count_cur t o)" 0
	run -0 mq-sub -g o t
	assert_output "$(seq 5 10)"
}

@test "format 2: gc removes whole segments older than the retention that every group is past, never one a group still needs" {
	mq-topic create --format 2 --retention 1h t
	mkgroup t fast
	mkgroup t slow
	# Listed after slow, and past everything: the least of every
	# group's low mark counts, not the last one's.
	mkgroup t the-last
	seq 5 | mq-pub -q -l t
	seq 6 10 | mq-pub -q -l t
	mq-sub -q -g fast t
	mq-sub -q -g the-last t
	run -0 mq-topic gc t
	assert_equal "$(count_log t)" 10
	touch -d '-2 hours' "$MQ_SPOOL"/topics/t/p0/log/*
	run -0 mq-topic gc t
	assert_equal "$(count_log t)" 10
	mq-sub -q -n 7 -g slow t
	run -0 mq-topic gc t
	# The first segment (0..4) is behind both; the second holds 7..9.
	assert_equal "$(count_log t)" 5
	run -0 mq-sub -g slow t
	assert_output "$(seq 8 10)"
}

@test "format 2: replication ships it: the replica's topic is of format 2, with the same records, and the group's acks (replicate_format2.bats has the rest)" {
	mq-topic create --format 2 t
	mkgroup t g
	printf '%s\n' one two three | mq-pub -q -l t
	run -0 mq-sub -g g -n 1 t
	run --separate-stderr mq-replicate push --rsh env --remote-spool "$TD/replica"
	assert_success
	grep -qx 'format=2' "$TD/replica/topics/t/topic.conf"
	assert_equal "$(MQ_SPOOL=$TD/replica count_log t)" 3
	run -0 mq-sub -s "$TD/replica" -g g -n 5 t
	assert_output "$(printf '%s\n' two three)"
}

@test "format 2: a feed's names (an ordered group's) share one inode, not one each; a dead letter of one gets a file of its own, the others stay empty and are delivered" {
	mq-topic create --format 2 t
	mkgroup t g --ordered
	printf 'msg-%s\n' 1 2 3 4 5 | mq-pub -q -l t
	run -0 mq-sub -g g -n 1 --manual -F '%r' t
	local receipt=$output d f
	d=$(group_dir t g)
	assert_equal "$(count_entries "$d/new")" 4
	# One inode for the batch: 4 names in new/ and the claim in cur/.
	assert_equal "$(stat -c %i "$d"/new/* "$d"/cur/* | sort -u | wc -l)" 1
	assert_equal "$(stat -c %h "$d"/new/* | sort -u)" 5
	run -0 mq-ack -g g --reject --reason bad t "$receipt"
	for f in "$d"/new/*; do
		[[ ! -s $f ]] || fail "$f got the dead letter's copy"
		assert_equal "$(stat -c %h "$f")" 4
	done
	run -0 dead_letter t rejected
	run -0 mq-dlq show t "$output"
	[[ $output == *msg-1* && $output != *msg-2* ]] ||
		fail "the dead letter holds another message than its own: $output"
	assert_equal "$(count_entries "$d/cur")" 0
	run -0 mq-sub -g g t
	assert_output "$(printf 'msg-%s\n' 2 3 4 5)"
	group_empty t g
	# Where the file system is shared the swap may not be there: each
	# name is a file of its own.
	mq-topic create --format 2 u
	mkgroup u g --ordered
	seq 3 | mq-pub -q -l u
	MQ_SHARED_FS=1 mq-sub -q -g g -n 1 --manual u
	assert_equal "$(stat -c %h "$(group_dir u g)"/new/* | sort -u)" 1
	assert_equal "$(count_entries "$(group_dir u g)/new")" 2
	# A copy that a crash left before its swap: gc removes it once stale.
	touch -d '2 hours ago' "$d/cur/.tmp.0123456789abcdef"
	touch "$d/cur/.tmp.fedcba9876543210"
	run -0 mq-topic gc t
	[[ ! -e $d/cur/.tmp.0123456789abcdef ]] || fail "the stale copy is left"
	[[ -e $d/cur/.tmp.fedcba9876543210 ]] || fail "a fresh one went"
}

@test "format 2: mq-stat --peek shows a group's next messages, the names fed below its cursor and then the records past it, its filter applied; it claims and moves nothing" {
	mq-topic create --format 2 t
	mkgroup t g
	mkgroup t f --group-match 'h=yes'
	printf '%s\n' 1 2 3 | mq-pub -q -l t
	# The first receive takes 1 as a claim; its ack raises the cursor.
	run -0 mq-sub -g g -n 1 t
	assert_output 1
	assert_equal "$(cursor_of t g)" 1
	mq-pub -q -H 'h: yes' t 4
	mq-pub -q --delay 1h -H 'h: yes' t later
	mq-pub -q -H 'h: no' t 5
	mq-pub -q -H 'h: yes' t 6
	local before
	before=$(spool_snapshot)
	run -0 mq-stat --peek t g
	assert_output "$(printf '%s\n' 2 3 4 5 6)"
	run -0 mq-stat --peek -n 3 t g
	assert_output "$(printf '%s\n' 2 3 4)"
	run -0 mq-stat --peek --json -n 1 t f
	[[ $output == *'"body":"4"'* && $output == *'"seq":3'* ]] || fail "$output"
	run -0 mq-stat --peek t f
	assert_output "$(printf '%s\n' 4 6)"
	assert_equal "$(spool_snapshot)" "$before"
	run -0 mq-sub -g g t
	assert_output "$(printf '%s\n' 2 3 4 5 6)"
	run -0 mq-sub -g f t
	assert_output "$(printf '%s\n' 4 6)"
}

@test "format 2: mq-stat --message finds a message by id, in a group's names or in the log, and tells each group's state; --peek --message writes it" {
	mq-topic create --format 2 t
	mkgroup t g
	mkgroup t f --group-match 'h=yes'
	local a b c d
	a=$(mq-pub t one)
	b=$(mq-pub t two)
	# g is fed one and two, and takes one.
	run -0 mq-sub -g g -n 1 t
	assert_output one
	c=$(mq-pub --delay 1h -H 'h: yes' t later)
	d=$(mq-pub -H 'h: yes' t four)
	local before
	before=$(spool_snapshot)
	run -0 mq-stat --message "$a" t
	assert_output "$(printf 't/f filtered\nt/g acked')"
	run -0 mq-stat --message "$b" t
	assert_output "$(printf 't/f filtered\nt/g pending attempts=0')"
	run -0 mq-stat --message "$c" t
	assert_line --index 0 --regexp '^t/f delayed attempts=0 due=20[0-9-]+T[0-9:.]+Z$'
	assert_line --index 1 --regexp '^t/g delayed attempts=0 due='
	run -0 mq-stat --json --message "$d" t
	"$PY" -c 'import json, sys
d = json.loads(sys.argv[1])
assert d["seq"] == 3, d
s = {g["group"]: (g["state"], g["in"]) for g in d["groups"]}
assert s == {"f": ("pending", "log"), "g": ("pending", "log")}, s' "$output"
	run -0 mq-stat --peek --message "$d" t f
	assert_output four
	run -0 mq-stat --peek --message "$b" t g
	assert_output two
	run --separate-stderr mq-stat --peek --message "$a" t g
	assert_equal "$status" 66
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat --message 0123456789abcdef0123456789abcdef t
	assert_equal "$status" 66
	[[ $stderr == *"no message 0123456789abcdef0123456789abcdef"* ]] || fail "$stderr"
	assert_equal "$(spool_snapshot)" "$before"
	# Fed into delay/, under a name that starts with its due time.
	run mq-sub -g g -t 0 t
	assert_equal "$(count_entries "$(group_dir t g)/delay")" 1
	run -0 mq-stat --peek --message "$c" t g
	assert_output later
}

@test "format 2: merges count small publishes in tmp/.merge and look on from where the last look stopped; a line that does not check is a fresh count" {
	mq-topic create --format 2 t
	mkgroup t g
	local x f p=$MQ_SPOOL/topics/t/p0
	# Large segments (what mq-pub -l chunks 3000 lines into), then two
	# rounds of the 64 small publishes that make a look.
	head -c 300000 /dev/zero | tr '\0' x | fold -w 100 | mq-pub -q -l t
	for ((x = 1; x <= 128; x++)); do mq-pub -q t "m$x"; done
	run -0 cat "$p/tmp/.merge"
	[[ $output =~ ^mq-merge\ 2\ small=([0-9]{10})\ from=([0-9]{20})\ sum=[0-9a-f]{8}$ ]] ||
		fail "tmp/.merge: $output"
	# The looks moved on: below where the next starts, every segment is
	# large, or small with a large one after it (it never merges).
	local counted=$((10#${BASH_REMATCH[1]})) from=$((10#${BASH_REMATCH[2]}))
	local -a names sizes
	for f in "$p"/log/*; do
		names+=($((10#${f##*/}))) sizes+=($(stat -c %s "$f"))
	done
	((from > names[0])) || fail "the next look starts at $from"
	for ((x = 0; x < ${#names[@]} && names[x] < from; x++)); do
		((sizes[x] >= 262144 || sizes[x + 1] >= 262144)) ||
			fail "segment ${names[x]} below $from could still merge"
	done
	# The small ones, merged: what is left is one merged segment and those
	# linked since the last look (mq-pub -l may have made small ones too).
	local small=0
	for f in "$p"/log/*; do
		((10#${f##*/} < 3000)) || small=$((small + 1))
	done
	((small <= 1 + counted)) || fail "$small segments for 128 small publishes, $counted since the look"
	echo garbage >"$p/tmp/.merge"
	for ((x = 129; x <= 134; x++)); do mq-pub -q t "m$x"; done
	run -0 cat "$p/tmp/.merge"
	[[ $output =~ ^mq-merge\ 2\ small=0000000006\ from= ]] || fail "tmp/.merge: $output"
	assert_equal "$(tiles t)" 3134
	run -0 mq-sub -g g t
	assert_equal "${#lines[@]}" 3134
	assert_equal "${lines[3133]}" m134
}

@test "format 2: a gap in the log (segments retention removed, numbers a head skipped) is passed over, never dead-lettered; a cursor may stand past the largest number" {
	mq-topic create --format 2 --retention 1h t
	mkgroup t done
	seq 3 | mq-pub -q -l t
	mq-sub -q -g done t
	touch -d '-2 hours' "$MQ_SPOOL"/topics/t/p0/log/*
	run -0 mq-topic gc t
	assert_equal "$(count_log t)" 0
	mq-pub -q t after
	# From the start: what retention removed is not there, and not bad.
	mq-group create --from-start t all
	run -0 mq-stat --peek t all
	assert_output after
	run -0 mq-sub -g all t
	assert_output after
	assert_equal "$(mq-dlq count t)" 0
	assert_equal "$(cursor_of t all)" 4
	# A head set near the end of the numbers: the cursor ends past the
	# largest, and reads back.
	mq-topic create --format 2 u
	mkgroup u g
	set_head u 18446744073709551613 18446744073709551613
	mq-pub -q u one two
	run -0 mq-sub -g g u
	assert_output "$(printf 'one\ntwo')"
	run -0 cat "$(group_dir u g)/cursor"
	[[ $output == "mq-cursor 2 next=18446744073709551615 "* ]] || fail "$output"
	run mq-sub -g g -t 0 u
	assert_equal "$status" 1
	assert_equal "$(mq-dlq count u)" 0
}

@test "format 2: dead letters imported into a spool without their topic are redriven and delivered: the numbers its head skipped are passed, with no segment after them" {
	mq-topic create --format 2 t
	kill_two t g
	mq-dlq export t "$TD/t.tar"
	export MQ_SPOOL=$TD/other
	MQ_FORMAT=2 mq-dlq import "$TD/t.tar"
	grep -qx 'format=2' "$MQ_SPOOL/topics/t/topic.conf"
	assert_equal "$(head_field t committed)" 4
	run -0 mq-dlq -g g redrive t
	run --separate-stderr mq-sub --exec 'echo "$(cat) $MQ_ATTEMPTS"' -g g t
	assert_success
	assert_output $'b 1\nd 1'
	assert_equal "$(cursor_of t g)" 4
	mq-pub -q t e
	run -0 mq-sub -g g t
	assert_output e
}

@test "format 2: with the inode table full, consumers still drain: a claim is written into a spare of claims/ and renamed, a settled one renamed back" {
	require_root
	mount_tmpfs "$TD/inodes" size=64m,nr_inodes=96
	export MQ_SPOOL=$TD/inodes/spool
	mq-topic create --format 2 t
	mq-group create t g
	mq-group create t h
	local d x
	d=$(group_dir t g)/claims
	[[ -f $d/.spare0 && -f $d/.spare1 ]] || fail "no spares: $(ls -a "$d")"
	local -a ok=()
	for ((x = 1; x <= 200; x++)); do
		run --separate-stderr mq-pub t "m$x"
		((status == 0)) || break
		ok+=("m$x")
	done
	((x <= 200)) || fail "the inode table never filled"
	assert_equal "$status" 75
	[[ $stderr == *": no free inodes (try again later)" ]] || fail "$stderr"
	# What the publish could not use, taken: none is left.
	for ((x = 0; x < 100; x++)); do
		: 2>/dev/null >"$TD/inodes/fill.$x" || break
	done
	assert_equal "$(stat -f -c %d "$TD/inodes")" 0
	# Into a pipe, one claim per message, each taken before the last
	# is acked: more claims than spares, each settled one a spare again.
	run --separate-stderr mq-sub -g g t
	assert_success
	assert_output "$(printf '%s\n' "${ok[@]}")"
	# In batches, acked as written.
	mq-sub -g h -n 1000 t >"$TD/h.out"
	assert_equal "$(cat "$TD/h.out")" "$(printf '%s\n' "${ok[@]}")"
	for x in g h; do
		assert_equal "$(count_queued t "$x")" 0
		assert_equal "$(count_claims "$(group_dir t "$x")/claims")" 0
	done
	run -1 mq-sub -g g t
}
