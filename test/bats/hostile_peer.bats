#!/usr/bin/env bats
# Replication against a hostile peer and damaged journals: what a peer
# sends is checked whole before anything is touched (mq-protocol(5),
# Applying records), sequence numbers never wrap, and a damaged journal
# costs linear time and never keeps a push from ending.

load helper
load replicate_helper

PEER=eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee
OTHER=0123456789abcdef0123456789abcdef
ID0=6616aff5f3e00a3f9c1e27b400000000
KEY0=00000000000000000000.$ID0
KEY1=00000000000000000001.$ID0
TOP=18446744073709551614        # the largest sequence number
MSG='Message-Id: 6616aff5f3e00a3f9c1e27b400000000\nTopic: t\n\nhello'

# hostile: hostile_peer.py, as spool PEER, against spool B, its script on
# stdin.
hostile() {
	"$PY" "$BATS_TEST_DIRNAME/hostile_peer.py" "$B" "$PEER"
}

# rec AT LINE [DATA [WHY]] and batch START END [N [TAG]]: script lines.
rec() {
	local IFS=$'\t'
	echo "rec$IFS$*"
}
batch() {
	local IFS=$'\t'
	echo "batch$IFS$*"
}

# spool B with topic t and group g, and one session already had (so that
# replicate/ exists and a snapshot taken now sees only what comes later).
setup_b() {
	pair
	MQ_SPOOL=$B mq-topic create t
	MQ_SPOOL=$B mq-group create t g
	hostile </dev/null >/dev/null
	BID=$(cat "$B/ID")
}

# xxh32 TEXT: the journal's and the head's checksum of TEXT.
xxh32() {
	"$PY" -c 'import ctypes, sys
x = ctypes.CDLL("libxxhash.so.0")
x.XXH32.restype = ctypes.c_uint32
x.XXH32.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]
b = sys.argv[1].encode()
print("%08x" % x.XXH32(b, len(b), 0))' "$1"
}

# set_head SPOOL TOPIC NEXT COMMITTED: partition 0's head, as a crash or a
# peer could have left it (numbers past what bash computes with).
set_head() {
	local body
	body="mq-head 1 next=$(printf %20s "$3" | tr ' ' 0) committed=$(printf %20s "$4" | tr ' ' 0)"
	printf '%s sum=%s\n' "$body" "$(xxh32 "$body")" >"$1/topics/$2/p0/head"
}

# assert_refused: the session ended with a refusal (76) that names the
# peer, by its spool id (over a pipe it has no name), and B is as it was
# ($before).
assert_refused() {
	assert_equal "$status" 76
	[[ $output == *"< ERROR 76 peer: $PEER sent a bad "* ]] ||
	    fail "no error naming the peer: $output"
	assert_equal "$(spool_snapshot "$B")" "$before"
}

@test "hostile peer: a name with extra characters is refused before any file is touched" {
	setup_b
	local before bad
	before=$(spool_snapshot "$B")
	local -a bad_lines=(
		"P 1 t 0 ${KEY0}XYZ g"
		"P 1 t 0 ${KEY0},a1,l5,r0badcafe:2, g"
		"P 1 t 0 $KEY0 g,../x"
		"P 1 t 0 $KEY0 g,,g"
		"P 1 t 0 $KEY0 "
		"P 1 t/x 0 $KEY0 g"
		"P 1 t 00 $KEY0 g"
		"L 1 t 0 g ${KEY0}XYZ"
		"A 1 t 0 g ${KEY0}X"
		"D 1 t 0 g ${KEY0},a1,l5,r0badcafe:2,"
		"D 1 t 0 g ${KEY0},a0"
		"R 1 t 0 g ${KEY0}"
		"X 1 t 0 .. ${KEY0},a1"
		"T 1 t junk"
		"A x t 0 g $KEY0"
		"A 1 t 0 g $KEY0 more"
	)
	for bad in "${bad_lines[@]}"; do
		local data=
		[[ $bad == P* || $bad == D* ]] && data=$MSG
		run hostile < <(rec 0 "@$PEER 0 $bad" "$data"; batch 0 100)
		assert_refused
	done
	# Nothing was made from them (no junk name in log/ or tmp/).
	assert_equal "$(count_entries "$B/topics/t/p0/log")" 0
	assert_equal "$(count_entries "$B/topics/t/p0/g/g/tmp")" 0
}

@test "hostile peer: a good batch is applied, and a bad record anywhere in a batch refuses all of it" {
	setup_b
	local before
	before=$(spool_snapshot "$B")
	run hostile < <(rec 0 "@$PEER 0 P 1 t 0 $KEY0 g" "$MSG"
		rec 50 "@$PEER 50 P 1 t 0 ${KEY1}XYZ g" "$MSG"; batch 0 100)
	assert_refused
	run hostile < <(rec 0 "@$PEER 0 P 1 t 0 $KEY0 g" "$MSG"; batch 0 100)
	assert_success
	assert_line "< OK 100"
	[[ -f $B/topics/t/p0/log/$KEY0 && -f $B/topics/t/p0/g/g/new/$KEY0 ]]
}

@test "hostile peer: records forged inside an unknown record are refused; an unknown record is dropped, not journaled" {
	setup_b
	local before sum forged
	# A record of a later version whose text holds a newline and a
	# whole, sealed ack after it: journaled as it came, it would read
	# as an ack of origin OTHER, which B would forward as that spool's.
	MQ_SPOOL=$B mq-pub -q t hello
	local key; key=$(MQ_SPOOL=$B log_keys t)
	sum=$(xxh32 "@$OTHER 7 A 1 t 0 g $key")
	forged="Y 1 x 00000000\\n@$OTHER 7 A 1 t 0 g $key $sum\\nQ"
	before=$(spool_snapshot "$B")
	run hostile < <(rec 0 "@$PEER 0 $forged"; batch 0 100)
	assert_refused
	assert_equal "$(MQ_SPOOL=$B count_queued t g)" 1
	# Control characters anywhere, in a known record too.
	run hostile < <(rec 0 "@$PEER 0 T 1 t\\r"; batch 0 100)
	assert_refused
	run hostile < <(rec 0 "@$PEER 0 Y 1 tab\\there"; batch 0 100)
	assert_refused
	# A plain record of a type this version does not know: answered,
	# counted as seen, but not journaled (it is dropped).
	local size; size=$(stat -c %s "$B/journal")
	run hostile < <(rec 0 "@$PEER 0 Y 1 some later thing"; batch 0 100)
	assert_success
	assert_line "< OK 100"
	assert_equal "$(stat -c %s "$B/journal")" "$size"
	run hostile </dev/null
	assert_line "$PEER 100"
	# M records are the merge's own and never come from a peer.
	before=$(spool_snapshot "$B")
	run hostile < <(rec 100 "@$PEER 100 M 1 host 5"; batch 100 200)
	assert_refused
}

@test "hostile peer: origin claims are bounded: not ours, the peer's own at its offset, at most 4096 origins" {
	setup_b
	local before
	before=$(spool_snapshot "$B")
	# Our own origin: refused, not skipped in silence.
	run hostile < <(rec 0 "@$BID 0 T 1 t"; batch 0 100)
	assert_refused
	# The peer's own record is at its offset, inside the batch.
	run hostile < <(rec 10 "@$PEER 90 T 1 t"; batch 0 100)
	assert_refused
	run hostile < <(rec 100 "@$PEER 100 T 1 t"; batch 0 100)
	assert_refused
	run hostile < <(rec 10 "@$PEER 10 T 1 t"; rec 5 "@$PEER 5 T 1 t"; batch 0 100)
	assert_refused
	run hostile < <(rec 10 "@$PEER 10 T 1 t"; batch 50 20)
	assert_refused
	# Sequence numbers past the largest.
	run hostile < <(rec 0 "@$OTHER 18446744073709551615 T 1 t"; batch 0 100)
	assert_refused
	# Another origin's record is relayed as it is.
	run hostile < <(rec 0 "@$OTHER 5000 T 1 t"; batch 0 100)
	assert_success
	# At most 4096 origins in the vector, ours, the peer's and OTHER
	# included: 3 + 3072 + 1021 fit, one more does not.
	"$PY" - 1024 1024 1024 1021 >"$TD/fit" <<'EOF'
import sys
n = 0
for size in map(int, sys.argv[1:]):
    for i in range(size):
        print("rec\t%d\t@%032x 0 T 1 t" % (n + i, n + i + 1))
    print("batch\t%d\t%d" % (n, n + size))
    n += size
EOF
	head -n -1 "$TD/fit" >"$TD/over"
	rec 4093 "@$(printf %032x 9999) 0 T 1 t" >>"$TD/over"
	batch 3072 4094 >>"$TD/over"
	run hostile <"$TD/over"
	assert_equal "$status" 76
	assert_output --partial "more than 4096 origins"
	assert_line "< OK 3072"
	run hostile <"$TD/fit"
	assert_success
	assert_line "< OK 4093"
	run hostile </dev/null
	assert_equal "$(grep -c '^[0-9a-f]\{32\} ' <<<"$output")" 4096
}

@test "hostile peer: a BATCH with a huge record count, or frames cut short, are refused at once" {
	setup_b
	local before
	before=$(spool_snapshot "$B")
	run hostile < <(batch 0 0 1000000000000000)
	assert_refused
	run hostile < <(batch 0 0 1025)
	assert_refused
	run hostile < <(rec 0 "@$PEER 0 T 1 t"; batch 0 100 2)
	assert_refused
	run hostile < <(printf 'frame\tBATCH 0 100 1\\n0 30 0 0 -\n')
	assert_refused
	run hostile < <(printf 'frame\tBATCH 0 100 1\\n0 -1 0 0 -\\n@\n')
	assert_refused
	run hostile < <(printf 'frame\tBATCH 0 100\n')
	assert_refused
	run hostile < <(printf 'frame\tBATCH -1 100 0\\n\n')
	assert_refused
}

@test "hostile peer: frames are parsed by their length, never read past (valgrind)" {
	setup_b
	mkdir "$TD/vg"
	# Under the sanitizers (make check-sanitize) ASan watches the reads
	# itself; else valgrind does, which CI installs.
	local wrap='valgrind -q --error-exitcode=99'
	if ldd "$MQ_BIN_DIR/mq-replicate" | grep -q libasan; then
		wrap=
	elif ! command -v valgrind >/dev/null; then
		[[ -z ${CI:-} ]] || fail "CI must install valgrind"
		skip "no valgrind"
	fi
	cat >"$TD/vg/mq-replicate" <<EOF
#!/bin/sh
exec $wrap "$MQ_BIN_DIR/mq-replicate" "\$@"
EOF
	chmod +x "$TD/vg/mq-replicate"
	# Frames without a NUL anywhere: a batch, then an error.
	PATH=$TD/vg:$PATH run hostile < <(rec 0 "@$PEER 0 T 1 t"
		batch 0 100; printf 'frame\tERROR 7\n')
	assert_equal "$status" 76
	assert_line "< OK 100"
}

@test "sequence numbers: a partition whose numbers are used up refuses a publish, and never wraps" {
	mq-topic create t
	mq-group create t g
	set_head "$MQ_SPOOL" t 18446744073709551613 18446744073709551613
	run -0 mq-pub -q t one
	local before
	before=$(spool_snapshot)
	# Two at once would pass the end: neither goes.
	run --separate-stderr mq-pub -l t <<<$'two\nthree'
	assert_equal "$status" 65
	assert_one_line_error mq-pub
	[[ $stderr == *full* ]] || fail "$stderr"
	assert_equal "$(spool_snapshot)" "$before"
	run -0 mq-pub -q t two
	[[ $(cat "$MQ_SPOOL/topics/t/p0/head") == "mq-head 1 next=18446744073709551615 committed=18446744073709551615 "* ]]
	before=$(spool_snapshot)
	run --separate-stderr mq-pub t three
	assert_equal "$status" 65
	assert_output ""
	assert_one_line_error mq-pub
	assert_equal "$(spool_snapshot)" "$before"
	# What was published is delivered, in order.
	run -0 mq-sub -g g t -n 2
	assert_output $'one\ntwo'
}

@test "sequence numbers: a record past the largest is refused; one at the largest fills the partition" {
	setup_b
	local before
	before=$(spool_snapshot "$B")
	run hostile < <(rec 0 "@$PEER 0 P 1 t 0 18446744073709551615.$ID0 g" "$MSG"
		batch 0 100)
	assert_refused
	run hostile < <(rec 0 "@$PEER 0 P 1 t 0 99999999999999999999.$ID0 g" "$MSG"
		batch 0 100)
	assert_refused
	run hostile < <(rec 0 "@$PEER 0 P 1 t 0 $TOP.$ID0 g" "$MSG"; batch 0 100)
	assert_success
	MQ_SPOOL=$B run --separate-stderr mq-pub t after
	assert_equal "$status" 65
	assert_output ""
	assert_one_line_error mq-pub
}

@test "sequence numbers: mq-dlq import of a dead letter at the largest fills the partition, and publishing then fails" {
	mq-topic create t
	mkgroup t g --max-attempts 1
	set_head "$MQ_SPOOL" t "$TOP" "$TOP"
	mq-pub -q t doomed
	run --separate-stderr mq-sub --backoff 0 --exec 'cat >/dev/null; exit 4' -g g t
	assert_equal "$(mq-dlq count t)" 1
	mq-dlq export t "$TD/t.tar"
	mq-topic -s "$TD/other" create t
	run -0 mq-dlq -s "$TD/other" import "$TD/t.tar"
	run --separate-stderr mq-pub -s "$TD/other" t after
	assert_equal "$status" 65
	assert_output ""
	assert_one_line_error mq-pub
}

@test "damaged journal: a 1 MB damaged line is skipped in linear time" {
	pair
	mq-group create t g
	mq-pub -q t before
	# A line of "P " a million bytes long that fails its sum: every
	# offset in it could start a record.
	"$PY" -c 'import sys; sys.stdout.write("P " * 500000 + "00000000\n")' >>"$A/journal"
	mq-pub -q t after
	local t0=$EPOCHREALTIME
	run -0 timeout 20 mq-replicate -s "$A" push --rsh env --remote-spool "$B"
	local ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
	((ms < 5000)) || fail "push took ${ms} ms"
	assert_equal "$(MQ_SPOOL=$B mq-sub -g g t -n 2)" $'before\nafter'
}

@test "damaged journal: a push ends when the journal ends in a torn or damaged line" {
	pair
	mq-group create t g
	mq-pub -q t one
	printf 'P 1 t 0 0000000000' >>"$A/journal"
	run --separate-stderr timeout 20 mq-replicate -s "$A" push --rsh env --remote-spool "$B"
	assert_success
	assert_equal "$(MQ_SPOOL=$B mq-sub -g g t -n 1)" one
	# The torn line, completed by the next record, fails its sum: a
	# push of what follows ends too.
	mq-pub -q t two
	printf 'T 1 t 00000000\n' >>"$A/journal"
	run --separate-stderr timeout 20 mq-replicate -s "$A" push --rsh env --remote-spool "$B"
	assert_success
	assert_equal "$(MQ_SPOOL=$B mq-sub -g g t -n 1)" two
}

@test "hostile peer: a group filter that does not compile is refused on receipt (76); the replica goes on publishing" {
	pair
	mq-sub -g g -t 0 t || [[ $? == 1 ]]
	mq-sub -g h -t 0 --group-filter '.a == 1' t || [[ $? == 1 ]]
	echo x | mq-pub -q t
	# What no tool writes: a stored filter that does not compile.
	sed -i 's/^filter=.*/filter=.a ==/' "$A/topics/t/groups/h.conf"
	run --separate-stderr push_ab
	assert_equal "$status" 76
	assert_one_line_error mq-replicate
	[[ $stderr == *"groups/h.conf: filter"* ]] || fail "$stderr"
	[[ ! -e $B/topics/t/groups/h.conf ]] || fail "the group was adopted"
	run -0 mq-pub -s "$B" t y
}
