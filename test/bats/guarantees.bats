#!/usr/bin/env bats
# The promises of the design notes, one test each: delivery, fan-out,
# competing consumers, ordering, crash safety, bad input, the maildir view,
# receipts, --exec and wake-ups.

load helper
load torture

# --------------------------------------------------------------------------
# Delivery

@test "round trip: what mq-pub stores, mq-sub delivers, byte for byte" {
	mkgroup t g
	local id
	id=$(mq-pub t 'hello world')
	run --separate-stderr mq-sub -F '%i %s\n' -g g t
	assert_success
	assert_output "$id hello world"
	# Every byte value, twice, through stdin.
	"$PY" -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 2)' >"$TD/bin"
	mq-pub -q t <"$TD/bin"
	mq-sub -F '%s' -g g t >"$TD/out"
	cmp "$TD/bin" "$TD/out"
	group_empty t g
}

@test "fan-out: two groups each get every message exactly once" {
	mkgroup t g1
	mkgroup t g2
	seq 1 100 | mq-pub -q -l t
	seq 101 200 | mq-pub -q -l t
	mq-pub -q t 201
	run --separate-stderr mq-sub -g g1 t
	assert_success
	assert_output "$(seq 1 201)"
	run --separate-stderr mq-sub -g g2 t
	assert_success
	assert_output "$(seq 1 201)"
	run mq-sub -g g1 t
	assert_equal "$status" 1
	assert_equal "$output" ""
	run mq-sub -g g2 t
	assert_equal "$status" 1
	assert_equal "$output" ""
}

@test "a group created later does not get older messages, but does with --from-start" {
	mkgroup t early
	seq 1 10 | mq-pub -q -l t
	mkgroup t late
	seq 11 20 | mq-pub -q -l t
	run --separate-stderr mq-sub -g late t
	assert_success
	assert_output "$(seq 11 20)"
	run --separate-stderr mq-sub --from-start -g back t
	assert_success
	assert_output "$(seq 1 20)"
	run --separate-stderr mq-sub -g early t
	assert_success
	assert_output "$(seq 1 20)"
	# --from-start on an existing group does not deliver anything again.
	run mq-sub --from-start -g late t
	assert_equal "$status" 1
}

@test "competing consumers: 4 producers x 5000, 4 consumers, every message exactly once" {
	mkgroup t g
	local p c
	local -a prod cons
	for p in 1 2 3 4; do
		awk -v p="$p" 'BEGIN { for (i = 1; i <= 5000; i++) print "p" p "-" i }' >"$TD/in.$p"
	done
	for c in 1 2 3 4; do
		spawn "$TD/c.$c" mq-sub -f -g g t
		cons+=("$SPAWNED")
	done
	for p in 1 2 3 4; do
		spawn "$TD/pub.$p" bash -c 'mq-pub -q -l t <"$1"' _ "$TD/in.$p"
		prod+=("$SPAWNED")
	done
	local rc
	for p in "${prod[@]}"; do
		wait_for -t 120 exited "$p"
		rc=0
		wait "$p" || rc=$?
		assert_equal "$rc" 0
	done
	all_consumed() {
		[[ $(cat "$TD"/c.[1-4] | wc -l) -ge 20000 ]] && group_empty t g
	}
	wait_for -t 120 all_consumed
	for c in "${cons[@]}"; do
		! exited "$c" || fail "consumer $c exited: $(cat "$TD/c.$c.err")"
		kill "$c"
	done
	run bash -c 'cat "$1"/c.[1-4] | sort | uniq -d | head' _ "$TD"
	assert_output ""
	assert_equal "$(cat "$TD"/c.[1-4] | wc -l)" 20000
	cat "$TD"/in.[1-4] | sort >"$TD/want"
	cat "$TD"/c.[1-4] | sort >"$TD/got"
	cmp "$TD/want" "$TD/got"
	assert_equal "$(count_log t)" 20000
}

@test "ordering: one producer, one following consumer: output is seq 1 2000 in order" {
	mkgroup t g
	spawn "$TD/out" mq-sub -f -n 2000 -g g t
	local cpid=$SPAWNED
	spawn "$TD/pub" bash -c 'seq 1 2000 | mq-pub -q -l t'
	local ppid=$SPAWNED
	wait_for -t 60 exited "$ppid"
	local rc=0
	wait "$ppid" || rc=$?
	assert_equal "$rc" 0
	wait_for -t 60 exited "$cpid"
	rc=0
	wait "$cpid" || rc=$?
	assert_equal "$rc" 0
	seq 1 2000 | cmp - "$TD/out"
	group_empty t g
}

# --------------------------------------------------------------------------
# Crash safety

@test "crash safety: kill -9 producers and consumers at random; nothing acked is lost, nothing half-written is delivered" {
	crash_torture
}

# --------------------------------------------------------------------------
# Bad input: one-line error, exit code, spool unchanged.

# A spool with a topic t, a group g, a pending message and a claimed one;
# sets RECEIPT to the claimed one's receipt.
populate() {
	mkgroup t g
	mkgroup t other
	mq-pub -q t first second
	RECEIPT=$(mq-sub --manual -n 1 -F '%r' -g g t)
	[[ $RECEIPT == t/g/0/* ]] || fail "no receipt: $RECEIPT"
}

bad_names() {
	BAD_NAMES=('../x' 'a/b' '' $'a\tb' $'a\nb' $'a\x01b' "$(printf 'x%.0s' {1..201})" '.x' '..' '.')
}

@test "bad input: invalid topic names are refused by every tool (64)" {
	populate
	bad_names
	local snap name
	snap=$(spool_snapshot)
	for name in "${BAD_NAMES[@]}"; do
		run --separate-stderr mq-pub "$name" hello
		assert_equal "$status" 64
		assert_equal "$output" ""
		assert_one_line_error mq-pub
		run --separate-stderr mq-pub -l "$name" </dev/null
		assert_equal "$status" 64
		assert_one_line_error mq-pub
		run --separate-stderr mq-sub -g g "$name"
		assert_equal "$status" 64
		assert_equal "$output" ""
		assert_one_line_error mq-sub
		run --separate-stderr mq-ack -g g "$name" "$RECEIPT"
		assert_equal "$status" 64
		assert_one_line_error mq-ack
		run --separate-stderr mq-topic create "$name"
		assert_equal "$status" 64
		assert_one_line_error mq-topic
		run --separate-stderr mq-topic info "$name"
		assert_equal "$status" 64
		assert_one_line_error mq-topic
		run --separate-stderr mq-topic delete "$name"
		assert_equal "$status" 64
		assert_one_line_error mq-topic
		assert_equal "$(spool_snapshot)" "$snap"
	done
}

@test "bad input: invalid group names are refused by every tool (64)" {
	populate
	bad_names
	local snap name
	snap=$(spool_snapshot)
	for name in "${BAD_NAMES[@]}"; do
		run --separate-stderr mq-sub -g "$name" t
		assert_equal "$status" 64
		assert_equal "$output" ""
		assert_one_line_error mq-sub
		run --separate-stderr mq-sub --unsubscribe -g "$name" t
		assert_equal "$status" 64
		assert_one_line_error mq-sub
		run --separate-stderr mq-ack -g "$name" t "$RECEIPT"
		assert_equal "$status" 64
		assert_one_line_error mq-ack
		assert_equal "$(spool_snapshot)" "$snap"
	done
}

@test "bad input: an unknown spool version is refused by every tool (78)" {
	populate
	printf 'mq-spool 99\n' >"$MQ_SPOOL/VERSION"
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-pub t hello
	assert_equal "$status" 78
	assert_equal "$output" ""
	assert_one_line_error mq-pub
	[[ $stderr == *"unknown spool version"* ]]
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 78
	assert_equal "$output" ""
	assert_one_line_error mq-sub
	[[ $stderr == *"unknown spool version"* ]]
	run --separate-stderr mq-ack -g g t "$RECEIPT"
	assert_equal "$status" 78
	assert_one_line_error mq-ack
	[[ $stderr == *"unknown spool version"* ]]
	run --separate-stderr mq-topic list
	assert_equal "$status" 78
	assert_equal "$output" ""
	assert_one_line_error mq-topic
	[[ $stderr == *"unknown spool version"* ]]
	run --separate-stderr mq-topic create u
	assert_equal "$status" 78
	assert_one_line_error mq-topic
	assert_equal "$(spool_snapshot)" "$snap"
	# The right version makes it usable again, and nothing was lost.
	printf 'mq-spool 1\n' >"$MQ_SPOOL/VERSION"
	run mq-sub -g g t
	assert_success
	assert_output second
}

@test "bad input: a malformed receipt is refused (65)" {
	populate
	local snap bad
	snap=$(spool_snapshot)
	for bad in 'not a receipt' 't/g/0/' 't/g/0/00000000000000000000.zz' \
	    't/g/0/../../../../../VERSION' "${RECEIPT%,r*}" "t/g/${RECEIPT#t/g/0/}"; do
		run --separate-stderr mq-ack -g g t "$bad"
		assert_equal "$status" 65
		assert_equal "$output" ""
		assert_one_line_error mq-ack
		assert_equal "$(spool_snapshot)" "$snap"
		run --separate-stderr mq-ack -g g t <<<"$bad"
		assert_equal "$status" 65
		assert_one_line_error mq-ack
		assert_equal "$(spool_snapshot)" "$snap"
	done
}

@test "bad input: a receipt of another group is refused (65)" {
	populate
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-ack -g other t "$RECEIPT"
	assert_equal "$status" 65
	assert_equal "$output" ""
	assert_one_line_error mq-ack
	assert_equal "$(spool_snapshot)" "$snap"
	run --separate-stderr mq-ack --nack -g other t "$RECEIPT"
	assert_equal "$status" 65
	assert_one_line_error mq-ack
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "bad input: an unwritable (read-only) spool is refused (77)" {
	require_root
	export MQ_SPOOL=$TD/ro
	mount_tmpfs "$MQ_SPOOL" size=1m
	populate
	mount -o remount,ro "$MQ_SPOOL"
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-pub t hello
	assert_equal "$status" 77
	assert_equal "$output" ""
	assert_one_line_error mq-pub
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 77
	assert_equal "$output" ""
	assert_one_line_error mq-sub
	run --separate-stderr mq-sub -g newgroup t
	assert_equal "$status" 77
	assert_one_line_error mq-sub
	run --separate-stderr mq-ack -g g t "$RECEIPT"
	assert_equal "$status" 77
	assert_one_line_error mq-ack
	run --separate-stderr mq-topic create u
	assert_equal "$status" 77
	assert_one_line_error mq-topic
	assert_equal "$(spool_snapshot)" "$snap"
	# An empty read-only directory cannot become a spool either.
	mount_tmpfs "$TD/ro2" ro,size=1m
	run --separate-stderr mq-pub -s "$TD/ro2" t hello
	assert_equal "$status" 77
	assert_one_line_error mq-pub
}

@test "bad input: a full disk fails publishing with 75; what succeeded is delivered, what failed is not" {
	require_root
	mount_tmpfs "$TD/full" size=256k
	export MQ_SPOOL=$TD/full/spool
	mkgroup t g
	local filler x p
	filler=$(printf 'x%.0s' {1..1019})
	local -a ok=() failed=()
	for ((x = 1; x <= 2000; x++)); do
		p=$(printf '%04d:%s' "$x" "$filler")
		run --separate-stderr mq-pub t "$p"
		if ((status != 0)); then
			failed+=("$p")
			break
		fi
		ok+=("$p")
	done
	((${#failed[@]} == 1)) || fail "the disk never filled after ${#ok[@]} messages"
	((${#ok[@]} > 0)) || fail "nothing could be published at all: $stderr"
	assert_equal "$status" 75
	assert_equal "$output" ""
	assert_one_line_error mq-pub
	[[ $stderr == *": disk full (try again later)" ]] || fail "message does not say the disk is full: $stderr"
	# Still full: more attempts fail the same way.
	for x in 1 2 3; do
		p=$(printf 'f%03d:%s' "$x" "$filler")
		run --separate-stderr mq-pub t "$p"
		assert_equal "$status" 75
		assert_one_line_error mq-pub
		failed+=("$p")
	done
	run --separate-stderr mq-sub -g g t
	assert_success
	assert_output "$(printf '%s\n' "${ok[@]}")"
	for p in "${failed[@]}"; do
		[[ $output != *"${p:0:5}"* ]] || fail "a failed publish was delivered: ${p:0:5}"
	done
	group_empty t g
	assert_equal "$(head_field t next)" "$(head_field t committed)"
	assert_equal "$(count_log t)" "${#ok[@]}"
}

@test "bad input: a full inode table fails publishing with 75 and says \"no free inodes\", not \"disk full\"; what succeeded is delivered" {
	require_root
	mount_tmpfs "$TD/inodes" size=64m,nr_inodes=64
	export MQ_SPOOL=$TD/inodes/spool
	mkgroup t g
	local x
	local -a ok=()
	for ((x = 1; x <= 100; x++)); do
		run --separate-stderr mq-pub t "m$x"
		((status == 0)) || break
		ok+=("m$x")
	done
	((x <= 100)) || fail "the inode table never filled"
	((${#ok[@]} > 0)) || fail "nothing could be published at all: $stderr"
	assert_equal "$status" 75
	assert_equal "$output" ""
	assert_one_line_error mq-pub
	[[ $stderr == *": no free inodes (try again later)" ]] || fail "message does not name the inodes: $stderr"
	# The blocks are nearly all free: it is the inodes.
	(($(stat -f -c %a "$TD/inodes") > 1000)) || fail "the blocks ran out instead"
	run --separate-stderr mq-sub -g g t
	assert_success
	assert_output "$(printf '%s\n' "${ok[@]}")"
	assert_equal "$(count_log t)" "${#ok[@]}"
}

# --------------------------------------------------------------------------
# The maildir view

# maildir_list DIR: "subdir key payload" for every message Python's
# mailbox.Maildir sees, sorted by payload.
maildir_list() {
	"$PY" - "$1" <<'EOF'
import mailbox, sys
md = mailbox.Maildir(sys.argv[1], factory=None, create=False)
rows = []
for key in md.keys():
    msg = md[key]
    rows.append((msg.get_payload(), msg.get_subdir(), key))
for payload, subdir, key in sorted(rows):
    print(subdir, key, payload)
EOF
}

@test "maildir: Python's mailbox.Maildir lists exactly the pending and the claimed messages" {
	# Format 1, whose queues are maildirs (format 2's names are empty).
	mq-topic create --format 1 t
	mkgroup t g
	local -a ids
	mapfile -t ids < <(mq-pub t m1 m2 m3 m4 m5)
	assert_equal "${#ids[@]}" 5
	run maildir_list "$(group_dir t g)"
	assert_success
	local x want=""
	for x in 0 1 2 3 4; do
		want+="new 0000000000000000000$x.${ids[$x]} m$((x + 1))"$'\n'
	done
	assert_output "${want%$'\n'}"
	# Claim two: Maildir shows exactly those in cur, under the receipt's name.
	local -a claimed
	mapfile -t claimed < <(mq-sub --manual -n 2 -F '%s %r\n' -g g t)
	assert_equal "${#claimed[@]}" 2
	run maildir_list "$(group_dir t g)"
	assert_success
	want="cur ${claimed[0]#m1 t/g/0/} m1"$'\n'"cur ${claimed[1]#m2 t/g/0/} m2"$'\n'
	for x in 2 3 4; do
		want+="new 0000000000000000000$x.${ids[$x]} m$((x + 1))"$'\n'
	done
	assert_output "${want%$'\n'}"
	[[ ${claimed[0]} == "m1 t/g/0/"* && ${claimed[1]} == "m2 t/g/0/"* ]]
}

# --------------------------------------------------------------------------
# Receipts

@test "receipts: ack with the receipt; acking again is 66; an expired lease is 66 and the message comes back as attempt 2" {
	mkgroup t g
	mq-pub -q t one two
	local r
	r=$(mq-sub --manual -n 1 -F '%r\n' -g g t)
	# The claim in cur/, or in format 2 a record of a claim in claims/.
	local held
	if [[ $r =~ ^t/g/0/([0-9]{20}\.[0-9a-f]{32},a1,l[0-9]+,r[0-9a-f]{8})$ ]]; then
		held=$(group_dir t g)/cur/${BASH_REMATCH[1]}:2,
	elif is_format2 t &&
	    [[ $r =~ ^t/g/0/(00000000000000000000\+1,r[0-9a-f]{8})/0$ ]]; then
		held=$(group_dir t g)/claims/${BASH_REMATCH[1]}
	else
		fail "bad receipt $r"
	fi
	[[ -f $held ]]
	run --separate-stderr mq-ack -g g t "$r"
	assert_success
	assert_equal "$(count_cur t g)" 0
	[[ ! -e $held ]]
	run --separate-stderr mq-ack -g g t "$r"
	assert_equal "$status" 66
	assert_one_line_error mq-ack

	r=$(mq-sub --manual --lease 0.2 -n 1 -F '%r\n' -g g t)
	wait_for past_ms "$(receipt_deadline "$r")"
	run --separate-stderr mq-ack -g g t "$r"
	assert_equal "$status" 66
	assert_one_line_error mq-ack
	run --separate-stderr mq-sub -F '%a %s\n' -g g t
	assert_success
	assert_output '2 two'
	group_empty t g
}

# --------------------------------------------------------------------------
# --exec

@test "--exec: exit 0 acks, nonzero nacks with attempts counted, MQ_* set for the handler" {
	mkgroup t g
	local id
	id=$(mq-pub -k kk t hello)
	export OUT=$TD/h
	run --separate-stderr mq-sub -n 1 --backoff 0 --exec '
		cat >"$OUT.body"
		printf "%s\n" "$MQ_ID" "$MQ_TOPIC" "$MQ_GROUP" "$MQ_PARTITION" "$MQ_SEQ" \
		    "$MQ_KEY" "$MQ_RECEIPT" "$MQ_ATTEMPTS" >"$OUT.env"
		r=${MQ_RECEIPT#t/g/0/}
		# Its claim in cur/, or in format 2 the claim holding it.
		[ -e "$MQ_SPOOL/topics/t/p0/g/g/cur/$r:2," ] ||
		    [ -e "$MQ_SPOOL/topics/t/p0/g/g/claims/${r%/0}" ] &&
		    echo claimed >"$OUT.claimed"
		exit 3' -g g t
	assert_equal "$output" ""
	assert_equal "$(cat "$OUT.body")" hello
	local -a env
	mapfile -t env <"$OUT.env"
	assert_equal "${env[0]}" "$id"
	assert_equal "${env[1]}" t
	assert_equal "${env[2]}" g
	assert_equal "${env[3]}" 0
	assert_equal "${env[4]}" 0
	assert_equal "${env[5]}" kk
	[[ ${env[6]} =~ ^t/g/0/00000000000000000000\.$id,a1,l[0-9]+,r[0-9a-f]{8}$ ]] ||
	    { is_format2 t && [[ ${env[6]} =~ ^t/g/0/00000000000000000000\+1,r[0-9a-f]{8}/0$ ]]; } ||
	    fail "MQ_RECEIPT=${env[6]}"
	assert_equal "${env[7]}" 1
	assert_equal "$(cat "$OUT.claimed")" claimed
	# Exit 3 nacked it: back in new/ with one attempt counted.
	assert_equal "$(count_cur t g)" 0
	assert_equal "$(ls "$(group_dir t g)/new")" "00000000000000000000.$id,a1"
	# The next delivery is attempt 2; exit 0 acks it.
	run --separate-stderr mq-sub --exec 'cat; echo " attempt $MQ_ATTEMPTS"' -g g t
	assert_success
	assert_output 'hello attempt 2'
	group_empty t g
}

@test "--exec -f --backoff 0: a failing handler gets the message again at once, with attempts incremented" {
	mkgroup t g
	mq-pub -q t job
	run --separate-stderr mq-sub -f -n 3 --backoff 0 --exec 'echo "$(cat) $MQ_ATTEMPTS"; [ "$MQ_ATTEMPTS" -ge 3 ]' -g g t
	assert_output $'job 1\njob 2\njob 3'
	group_empty t g
}

@test "--exec without -f: a refused message is tried once per run, given back at the end, exit 75" {
	mkgroup t g
	mq-pub -q t a b c
	run --separate-stderr mq-sub --backoff 0 --exec 'x=$(cat); echo "$x $MQ_ATTEMPTS"; [ "$x" != b ]' -g g t
	assert_equal "$status" 75
	assert_output $'a 1\nb 1\nc 1'
	# b is back in new/ with one delivery counted, nothing is claimed.
	assert_equal "$(count_cur t g)" 0
	run ls "$(group_dir t g)/new"
	assert_output --regexp '^00000000000000000001\.[0-9a-f]{32},a1$'
	run --separate-stderr mq-sub --exec 'echo "$(cat) $MQ_ATTEMPTS"' -g g t
	assert_success
	assert_output 'b 2'
	group_empty t g
}

# --------------------------------------------------------------------------
# Wake-ups

has_inotify() {
	local fd
	for fd in /proc/"$1"/fd/*; do
		[[ $(readlink "$fd" 2>/dev/null || true) == *inotify* ]] && return 0
	done
	return 1
}

# publish_wakes PID: the consumer PID, asleep with nothing delivered, gets
# a message published now, exits 0, and the group is left empty.
publish_wakes() {
	wait_for sleeping "$1"
	assert_equal "$(cat "$TD/out")" ""
	mq-pub -q t wake
	wait_for exited "$1"
	local rc=0
	wait "$1" || rc=$?
	assert_equal "$rc" 0
	assert_equal "$(cat "$TD/out")" wake
	group_empty t g
}

@test "wake-ups: a following consumer started before any publish receives a later message (inotify)" {
	mkgroup t g
	spawn "$TD/out" mq-sub -f -n 1 -g g t
	# On a local filesystem it blocks in inotify, not in a polling loop.
	wait_for has_inotify "$SPAWNED"
	publish_wakes "$SPAWNED"
}

@test "wake-ups: the same with MQ_POLL=0.1 (polling, no inotify at all)" {
	mkgroup t g
	spawn "$TD/out" env MQ_POLL=0.1 mq-sub -f -n 1 -g g t
	wait_for sleeping "$SPAWNED"
	if has_inotify "$SPAWNED"; then
		fail "a polling consumer has an inotify descriptor"
	fi
	publish_wakes "$SPAWNED"
}

@test "wake-ups: a waiting consumer wakes at the deadline of a lease another consumer let expire" {
	mkgroup t g
	mq-pub -q t lost
	# A consumer claims it and never acks (as if it had died).
	run --separate-stderr mq-sub --manual --lease 1 -g g t
	assert_success
	assert_equal "$(count_cur t g)" 1
	# A follower started now has nothing to do until the lease ends; it
	# must wake then by itself, with no publish to wake it.
	spawn "$TD/out" mq-sub -f -n 1 -F '%s %a\n' -g g t
	local pid=$SPAWNED
	wait_for -t 10 exited "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	assert_equal "$(cat "$TD/out")" "lost 2"
	group_empty t g
}

@test "signals: SIGTERM ends a waiting mq-sub -f at once; nothing claimed is left behind" {
	mkgroup t g
	spawn "$TD/out" mq-sub -f -g g t
	local pid=$SPAWNED
	wait_for sleeping "$pid"
	kill -TERM "$pid"
	wait_for -t 5 exited "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 1
	mq-pub -q t after
	assert_equal "$(count_new t g)" 1
	assert_equal "$(count_cur t g)" 0
}
