#!/usr/bin/env bats
# Format 2's claims (mq-spool(5), SEGMENTED STORAGE, Claims): a group that
# is not ordered takes the log as claims, one file per batch handed out,
# and only what leaves the happy path gets a name of its own.  Consumers
# killed at random while they hold claims are test/slow/format2.bats.

load helper

# claims_of TOPIC GROUP: the names in the group's claims/.
claims_of() {
	ls "$(group_dir "$1" "$2")/claims"
}

# all_settled TOPIC GROUP NEXT: the group holds nothing, no claim is left,
# and its cursor stands at NEXT.
all_settled() {
	group_empty "$1" "$2"
	assert_equal "$(count_claims "$(group_dir "$1" "$2")/claims")" 0
	assert_equal "$(cursor_of "$1" "$2")" "$3"
}

# figure TOPIC GROUP KEY: a figure of the group's total (mq-group info).
figure() {
	mq-group info --json -t "$1" "$2" | "$PY" -c 'import json, sys
print(json.load(sys.stdin)[0]["total"][sys.argv[1]])' "$3"
}

@test "claims: a batch handed out is one claim file; receipts name the claim and the record; acks set its bits and the last unlinks it and raises the cursor" {
	mq-topic create --format 2 t
	mkgroup t g
	seq 5 | mq-pub -q -l t
	run -0 mq-sub -g g --manual -n 3 -F '%r %s\n' t
	local -a r=()
	mapfile -t r < <(printf '%s\n' "$output" | cut -d' ' -f1)
	assert_equal "${#r[@]}" 3
	local claim
	claim=$(claims_of t g)
	[[ $claim =~ ^00000000000000000000\+3,r[0-9a-f]{8}$ ]] || fail "claim $claim"
	assert_equal "${r[0]}" "t/g/0/$claim/0"
	assert_equal "${r[2]}" "t/g/0/$claim/2"
	# Nothing named: the claim is the queue's only trace.
	assert_equal "$(count_entries "$(group_dir t g)/new")" 0
	assert_equal "$(count_entries "$(group_dir t g)/cur")" 0
	assert_equal "$(count_new t g)" 2
	assert_equal "$(count_cur t g)" 3
	[[ $(cat "$(group_dir t g)/claims/$claim") =~ ^mq-claim\ 2\ deadline=[0-9]{20}\ settled=0{128}\ sum=[0-9a-f]{8}$ ]] ||
		fail "claim line $(cat "$(group_dir t g)/claims/$claim")"
	assert_equal "$(figure t g inflight)" 3
	assert_equal "$(figure t g pending)" 2
	# The cursor is raised once the claim is settled whole, not before.
	assert_equal "$(cursor_of t g)" 0
	run -0 mq-ack -g g t "${r[1]}"
	[[ $(cat "$(group_dir t g)/claims/$claim") == *settled=02* ]] || fail "bit 1 not set"
	assert_equal "$(figure t g inflight)" 2
	# A receipt settles once.
	run --separate-stderr mq-ack -g g t "${r[1]}"
	assert_equal "$status" 66
	assert_one_line_error mq-ack
	run -0 mq-ack -g g t "${r[0]}" "${r[2]}"
	assert_equal "$(count_claims "$(group_dir t g)/claims")" 0
	assert_equal "$(cursor_of t g)" 3
	assert_equal "$(figure t g inflight)" 0
	run -0 mq-sub -g g t
	assert_output "$(seq 4 5)"
	group_empty t g
	# A receipt that names no claim, or a record outside its claim.
	run --separate-stderr mq-ack -g g t "t/g/0/00000000000000000000+3,r0000000z/1"
	assert_equal "$status" 65
	run --separate-stderr mq-ack -g g t "t/g/0/$claim/3"
	assert_equal "$status" 65
	run --separate-stderr mq-ack -g g t "t/g/0/$claim/01"
	assert_equal "$status" 65
}

@test "claims: a nack, a rejection, an extension; what leaves the happy path gets a name of format 1" {
	mq-topic create --format 2 t
	mkgroup t g --max-attempts 3
	seq 4 | mq-pub -q -l t
	run -0 mq-sub -g g --manual -n 4 -F '%r\n' t
	local -a r=()
	mapfile -t r <<<"$output"
	local claim line
	claim=$(claims_of t g)
	# A nack: the record is pending again, under its name of attempt 1.
	run -0 mq-ack -g g --nack t "${r[0]}"
	run -0 ls "$(group_dir t g)/new"
	assert_output --regexp '^00000000000000000000\.[0-9a-f]{32},a1$'
	# A rejection: a dead letter, its record copied.
	run -0 mq-ack -g g --reject --reason broken t "${r[1]}"
	run -0 mq-dlq list --json t
	[[ $output == *'"reason":"rejected"'* ]] || fail "$output"
	# An extension moves the claim's deadline, for all its records.
	line=$(cat "$(group_dir t g)/claims/$claim")
	run -0 mq-ack -g g --extend 1h t "${r[2]}"
	[[ $(cat "$(group_dir t g)/claims/$claim") != "$line" ]] || fail "deadline unchanged"
	run -0 mq-ack -g g t "${r[2]}" "${r[3]}"
	assert_equal "$(count_claims "$(group_dir t g)/claims")" 0
	run -0 mq-sub -g g -F '%s %a\n' t
	assert_output "1 2"
	group_empty t g
	run -0 dead_letters_count t
	assert_output 1
}

dead_letters_count() {
	mq-dlq list --json "$1" | "$PY" -c 'import json, sys
print(len(json.load(sys.stdin)))'
}

@test "claims: a lease that expires hands the claim's unsettled records out again as their next attempt; its receipts no longer settle anything" {
	mq-topic create --format 2 t
	mkgroup t g
	seq 3 | mq-pub -q -l t
	run -0 mq-sub -g g --manual --lease 0.5 -n 3 -F '%r\n' t
	local -a r=()
	mapfile -t r <<<"$output"
	run -0 mq-ack -g g t "${r[1]}"
	wait_for past_ms $(( $(now_ms) + 600 ))
	run -0 mq-sub -g g -F '%s %a\n' t
	assert_output "$(printf '1 2\n3 2')"
	run --separate-stderr mq-ack -g g t "${r[0]}"
	assert_equal "$status" 66
	assert_one_line_error mq-ack
	all_settled t g 3
}

@test "claims: mq-stat --message says a claimed record is in flight; --peek shows what no claim took" {
	mq-topic create --format 2 t
	mkgroup t g
	local a b
	a=$(mq-pub t one)
	b=$(mq-pub t two)
	run -0 mq-sub -g g --manual -n 1 t
	assert_output one
	run -0 mq-stat --message "$a" t
	assert_output --regexp '^t/g in-flight attempts=1 lease-deadline=20'
	run -0 mq-stat --json --message "$a" t
	[[ $output == *'"in":"claims"'* ]] || fail "$output"
	run -0 mq-stat --message "$b" t
	assert_output 't/g pending attempts=0'
	run -0 mq-stat --peek t g
	assert_output two
}

@test "claims: many consumers of one group, each taking batches, deliver every message exactly once when none fails" {
	mq-topic create --format 2 t
	mkgroup t g
	seq 3000 | mq-pub -q -l t
	local i
	for i in 1 2 3 4; do
		mq-sub -g g -t 2 -F '%s\n' t >"$TD/out.$i" &
	done
	wait
	sort -n "$TD"/out.* >"$TD/all"
	assert_equal "$(wc -l <"$TD/all")" 3000
	assert_equal "$(sort -un "$TD/all" | wc -l)" 3000
	all_settled t g 3000
}

@test "claims: a claim file that does not check is read as nothing settled, its lease over: delivered again, never lost" {
	mq-topic create --format 2 t
	mkgroup t g
	seq 2 | mq-pub -q -l t
	run -0 mq-sub -g g --manual -n 2 t
	local claim
	claim=$(claims_of t g)
	printf 'mq-claim 2 garbage\n' >"$(group_dir t g)/claims/$claim"
	run -0 mq-sub -g g -F '%s %a\n' t
	assert_output "$(printf '1 2\n2 2')"
	group_empty t g
	# An empty one is a taker that died before it wrote it: its range
	# was never handed out, and is taken again.
	seq 3 4 | mq-pub -q -l t
	: >"$(group_dir t g)/claims/00000000000000000002+2,r01234567"
	run -0 mq-sub -g g -F '%s %a\n' t
	assert_output "$(printf '3 1\n4 1')"
	assert_equal "$(count_claims "$(group_dir t g)/claims")" 0
}

@test "claims: a batch over many partitions takes one claim per partition and never more than it hands out" {
	mq-topic create --format 2 --partitions 3 t
	mkgroup t g
	local k
	for k in 0 1 2; do
		seq 10 | mq-pub -q -p "$k" -l t
	done
	run -0 mq-sub -g g --manual -n 5 -F '%r\n' t
	assert_equal "${#lines[@]}" 5
	# Five in flight, in one claim: nothing held that was not handed out.
	assert_equal "$(figure t g inflight)" 5
	assert_equal "$(figure t g pending)" 25
	run -0 mq-sub -g g --manual -n 25 -F '%r\n' t
	assert_equal "$(printf '%s\n' "$output" | sort -u | wc -l)" 25
	assert_equal "$(figure t g inflight)" 30
	local n=0
	for k in 0 1 2; do
		n=$((n + $(count_claims "$(group_dir t g "$k")/claims")))
	done
	((n <= 4)) || fail "$n claims for two batches over 3 partitions"
}

@test "claims: on a shared file system a group is fed names instead, and a feed passes what claims hold" {
	mq-topic create --format 2 t
	mkgroup t g
	seq 6 | mq-pub -q -l t
	# A consumer on a local mount takes 1 and 2 as a claim, and holds it.
	run -0 mq-sub -g g --manual -n 2 t
	assert_equal "$(count_claims "$(group_dir t g)/claims")" 1
	# One where the file system is shared is fed names: never 1 or 2.
	MQ_SHARED_FS=1 run -0 mq-sub -g g -n 1 --manual -F '%s %r\n' t
	[[ $output =~ ^3\ t/g/0/00000000000000000002\.[0-9a-f]{32},a1,l ]] || fail "$output"
	assert_equal "$(count_claims "$(group_dir t g)/claims")" 1
	assert_equal "$(count_entries "$(group_dir t g)/new")" 3
	run -0 env MQ_SHARED_FS=1 mq-sub -g g t
	assert_output "$(seq 4 6)"
}

@test "claims: a name's own bytes never win over the log's record: a forged message file in new/ delivers what was published" {
	mq-topic create --format 2 t
	mkgroup t g
	mq-pub -q t real
	run -0 mq-sub -g g --manual -n 1 -F '%r' t
	run -0 mq-ack -g g --nack t "$output"
	local name
	name=$(ls "$(group_dir t g)/new")
	# A whole, well-formed message file of that id and number, with
	# another body and its right hash, over the nacked name.
	"$PY" - "$(group_dir t g)/new/$name" "$MQ_SPOOL/topics/t/p0/log/00000000000000000000" <<'PYEOF'
import sys, xxhash
seg = open(sys.argv[2], "rb").read().split(b"\n")
hdr = []
for line in seg[2:]:
    if not line:
        break
    hdr.append(line)
body = b"forged"
out = []
for h in hdr:
    if h.startswith(b"Content-Length:"):
        h = b"Content-Length: %d" % len(body)
    elif h.startswith(b"Content-Hash:"):
        h = b"Content-Hash: xxh3-128:" + xxhash.xxh3_128_hexdigest(body).encode()
    out.append(h)
open(sys.argv[1], "wb").write(b"\n".join(out) + b"\n\n" + body)
PYEOF
	run -0 mq-sub -g g -F '%s\n' t
	assert_output real
	group_empty t g
}

@test "claims: gc keeps a segment whose records a claim holds unsettled, past the retention" {
	mq-topic create --format 2 --retention 1h t
	mkgroup t g
	seq 5 | mq-pub -q -l t
	seq 6 10 | mq-pub -q -l t
	# 1 to 7 in flight in one claim; the cursor file still at 0.
	run -0 mq-sub -g g --manual --lease 0.5 -n 7 t
	touch -d '-2 hours' "$MQ_SPOOL"/topics/t/p0/log/*
	run -0 mq-topic gc t
	assert_equal "$(count_log t)" 10
	# The lease over, they come again from the segments kept.
	wait_for past_ms $(( $(now_ms) + 600 ))
	run -0 mq-sub -g g -F '%s %a\n' t
	assert_output "$(printf '%s 2\n' 1 2 3 4 5 6 7; printf '%s 1\n' 8 9 10)"
	run -0 mq-topic gc t
	assert_equal "$(count_log t)" 0
}

@test "claims: a claim settled whole that a crash left before its unlink changes nothing and goes at the next pass" {
	mq-topic create --format 2 t
	mkgroup t g
	seq 4 | mq-pub -q -l t
	run -0 mq-sub -g g -n 2 t
	assert_equal "$(cursor_of t g)" 2
	# Its cursor written, its unlink not made: every bit set.
	"$PY" - "$(group_dir t g)/claims/00000000000000000000+2,r01234567" <<'PYEOF'
import sys, xxhash
body = "mq-claim 2 deadline=%020d settled=%s" % (1, "03" + "00" * 63)
open(sys.argv[1], "w").write("%s sum=%08x\n" % (body, xxhash.xxh32(body.encode()).intdigest()))
PYEOF
	assert_equal "$(figure t g inflight)" 0
	run -0 mq-sub -g g t
	assert_output "$(seq 3 4)"
	all_settled t g 4
}
