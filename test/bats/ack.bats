#!/usr/bin/env bats
# mq-ack: acking and nacking receipts from mq-sub --manual.

load helper

# claim TOPIC GROUP [ARGS...]: claim one message with --manual, set RECEIPT.
claim() {
	local t=$1 g=$2
	shift 2
	RECEIPT=$(mq-sub --manual -n 1 -F '%r' -g "$g" "$@" "$t")
	[[ $RECEIPT == "$t/$g/0/"* ]] || fail "no receipt from mq-sub: '$RECEIPT'"
}

@test "mq-ack --help prints usage and exits 0" {
	run --separate-stderr mq-ack --help
	assert_success
	assert_usage_output mq-ack
}

@test "mq-ack without -g, or without a topic, or with an unknown option, is a usage error (64)" {
	mkgroup t g
	mq-pub -q t hello
	claim t g
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-ack t "$RECEIPT"
	assert_equal "$status" 64
	[[ -n $stderr ]]
	run --separate-stderr mq-ack -g g
	assert_equal "$status" 64
	[[ -n $stderr ]]
	run --separate-stderr mq-ack -Z -g g t "$RECEIPT"
	assert_equal "$status" 64
	[[ -n $stderr ]]
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-ack RECEIPT removes the claim from cur/; the log keeps the message" {
	mkgroup t g
	mq-pub -q t hello other
	claim t g
	assert_equal "$(count_cur t g)" 1
	run --separate-stderr mq-ack -g g t "$RECEIPT"
	assert_success
	assert_equal "$output" ""
	assert_equal "$stderr" ""
	assert_equal "$(count_cur t g)" 0
	assert_equal "$(count_new t g)" 1
	assert_equal "$(count_log t)" 2
	run mq-sub -g g t
	assert_output other
}

@test "mq-ack reads receipts from stdin, one per line, when none are given" {
	mkgroup t g
	seq 1 3 | mq-pub -q -l t
	mq-sub --manual -F '%r\n' -g g t >"$TD/receipts"
	assert_equal "$(wc -l <"$TD/receipts")" 3
	assert_equal "$(count_cur t g)" 3
	run --separate-stderr mq-ack -g g t <"$TD/receipts"
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(count_cur t g)" 0
	assert_equal "$(count_new t g)" 0
}

@test "mq-ack with several RECEIPT arguments acks them all" {
	mkgroup t g
	mq-pub -q t a b c
	local -a r
	mapfile -t r < <(mq-sub --manual -n 2 -F '%r\n' -g g t)
	assert_equal "${#r[@]}" 2
	run --separate-stderr mq-ack -g g t "${r[@]}"
	assert_success
	assert_equal "$(count_cur t g)" 0
	assert_equal "$(count_new t g)" 1
}

@test "mq-ack --nack returns the message to new/ with its attempts kept" {
	mkgroup t g
	local id
	id=$(mq-pub t hello)
	claim t g
	run --separate-stderr mq-ack --nack -g g t "$RECEIPT"
	assert_success
	assert_equal "$(count_cur t g)" 0
	assert_equal "$(ls "$(group_dir t g)/new")" "00000000000000000000.$id,a1"
	run --separate-stderr mq-sub -F '%a %s\n' -g g t
	assert_success
	assert_output '2 hello'
}

@test "mq-ack of a receipt already acked is 66, one line per refused receipt" {
	mkgroup t g
	mq-pub -q t a b
	claim t g
	local r1=$RECEIPT
	mq-ack -g g t "$r1"
	claim t g
	local r2=$RECEIPT
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-ack -g g t "$r1"
	assert_equal "$status" 66
	assert_equal "$output" ""
	assert_one_line_error mq-ack
	assert_equal "$(spool_snapshot)" "$snap"
	run --separate-stderr mq-ack --nack -g g t "$r1"
	assert_equal "$status" 66
	assert_one_line_error mq-ack
	assert_equal "$(spool_snapshot)" "$snap"
	# A good receipt among gone ones is still acked; status is 66.
	run --separate-stderr mq-ack -g g t "$r1" "$r2" "$r1"
	assert_equal "$status" 66
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "$(count_cur t g)" 0
}

@test "mq-ack of an expired lease is 66 and changes nothing" {
	mkgroup t g
	mq-pub -q t hello
	claim t g --lease 0.2
	wait_for past_ms "$(receipt_deadline "$RECEIPT")"
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-ack -g g t "$RECEIPT"
	assert_equal "$status" 66
	assert_one_line_error mq-ack
	assert_equal "$(spool_snapshot)" "$snap"
	run --separate-stderr mq-ack --nack -g g t "$RECEIPT"
	assert_equal "$status" 66
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-ack of an expired receipt never acks the later claim of the same message" {
	mkgroup t g
	mq-pub -q t hello
	claim t g --lease 0.2
	local old=$RECEIPT
	wait_for past_ms "$(receipt_deadline "$old")"
	claim t g --lease 60
	[[ $RECEIPT == *,a2,* ]] || fail "second claim should be attempt 2: $RECEIPT"
	run --separate-stderr mq-ack -g g t "$old"
	assert_equal "$status" 66
	assert_equal "$(count_cur t g)" 1
	run --separate-stderr mq-ack -g g t "$RECEIPT"
	assert_success
	assert_equal "$(count_cur t g)" 0
}

@test "mq-ack refuses malformed receipts (65) and changes nothing" {
	mkgroup t g
	mq-pub -q t hello
	claim t g
	local snap r bad
	snap=$(spool_snapshot)
	r=$RECEIPT
	local name=${r#t/g/0/}
	local -a bads=(garbage '' "t/g/0/" "t/g/0/${name%%,*}" "t/g/x/$name"
	    "t/g/0/../../../../../VERSION" "t/g/0/${name/,r/,rZZ}" "t/g/$name")
	if [[ $name == */* ]]; then
		# Format 2: a record of a claim, <claim>/<seq>.
		bads+=("${r/+1,/+01,}" "${r%/*}/1" "${r%/*}/" "${r%/*}/x"
		    "${r%/*}/00" "${r%/*}")
	else
		bads+=("${r/,a1,/,a,}" "${r/,l/,x}")
	fi
	for bad in "${bads[@]}"; do
		run --separate-stderr mq-ack -g g t "$bad"
		assert_equal "$status" 65
		assert_equal "$output" ""
		assert_one_line_error mq-ack
		assert_equal "$(spool_snapshot)" "$snap"
	done
	# Mixed with a good one: the good one is acked, the status is 65.
	run --separate-stderr mq-ack -g g t garbage "$r"
	assert_equal "$status" 65
	assert_one_line_error mq-ack
	assert_equal "$(count_cur t g)" 0
}

@test "mq-ack refuses a receipt of another group or topic (65)" {
	mkgroup t g
	mkgroup t h
	mkgroup u g
	mq-pub -q t hello
	claim t g
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-ack -g h t "$RECEIPT"
	assert_equal "$status" 65
	assert_one_line_error mq-ack
	assert_equal "$(spool_snapshot)" "$snap"
	run --separate-stderr mq-ack -g g u "$RECEIPT"
	assert_equal "$status" 65
	assert_one_line_error mq-ack
	assert_equal "$(spool_snapshot)" "$snap"
	run mq-ack -g g t "$RECEIPT"
	assert_success
}

@test "mq-ack -s SPOOL wins over MQ_SPOOL" {
	mq-sub -s "$TD/other" -g g t || true
	mq-pub -s "$TD/other" -q t hello
	RECEIPT=$(mq-sub -s "$TD/other" --manual -F '%r' -g g t)
	run --separate-stderr mq-ack -s "$TD/other" -g g t "$RECEIPT"
	assert_success
	assert_equal "$(count_entries "$TD/other/topics/t/p0/g/g/cur")" 0
	assert_equal "$(count_entries "$MQ_SPOOL")" 0
}
