#!/usr/bin/env bats
# mq-sub: options, output formats, exit codes and what it leaves on disk.

load helper

KEY_RE='[0-9]{20}\.[0-9a-f]{32}'

conf_value() { # FILE KEY
	sed -n "s/^$2=//p" "$1"
}

@test "mq-sub --help prints usage and exits 0" {
	run --separate-stderr mq-sub --help
	assert_success
	assert_usage_output mq-sub
}

@test "mq-sub without -g is a usage error (64)" {
	mq-pub -q t hello
	run --separate-stderr mq-sub t
	assert_equal "$status" 64
	assert_equal "$output" ""
	[[ -n $stderr ]]
}

@test "mq-sub without a topic, or with an unknown option, is a usage error (64)" {
	run --separate-stderr mq-sub -g g
	assert_equal "$status" 64
	[[ -n $stderr ]]
	run --separate-stderr mq-sub -Z -g g t
	assert_equal "$status" 64
	assert_equal "$output" ""
	[[ ! -e $MQ_SPOOL/topics/t ]]
}

@test "mq-sub with nothing pending exits 1 at once, after creating topic and group" {
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 1
	assert_equal "$output" ""
	local c=$MQ_SPOOL/topics/t/groups/g.conf
	[[ -f $c ]]
	[[ -f $MQ_SPOOL/topics/t/topic.conf ]]
	[[ -d $(group_dir t g)/tmp && -d $(group_dir t g)/new && -d $(group_dir t g)/cur ]]
	assert_equal "$(conf_value "$c" from-start)" 0
	assert_equal "$(conf_value "$c" state)" ready
	assert_equal "$(conf_value "$c" start.p0)" 0
	[[ -n $(conf_value "$c" created) ]]
	run "$PY" -c 'import sys; assert float(sys.argv[1]) == 30' "$(conf_value "$c" lease)"
	assert_success
	# Subscribing again changes nothing.
	local snap
	snap=$(spool_snapshot)
	run mq-sub -g g t
	assert_equal "$status" 1
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-sub records start.p0 = committed at subscription time" {
	mq-pub -q t a b c
	mkgroup t g
	assert_equal "$(conf_value "$MQ_SPOOL/topics/t/groups/g.conf" start.p0)" 3
	assert_equal "$(count_new t g)" 0
}

@test "mq-sub prints each pending body and a newline, in order, and acks them" {
	mkgroup t g
	printf '%s\n' one two 'three four' | mq-pub -q -l t
	run --separate-stderr mq-sub -g g t
	assert_success
	assert_equal "$stderr" ""
	assert_output $'one\ntwo\nthree four'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
	# The log keeps the messages; only the group's links are gone.
	assert_equal "$(count_log t)" 3
	local f
	for f in "$MQ_SPOOL"/topics/t/p0/log/*; do
		assert_equal "$(stat -c %h "$f")" 1
	done
	run mq-sub -g g t
	assert_equal "$status" 1
	assert_equal "$output" ""
}

@test "mq-sub -0 ends each body with NUL instead of newline" {
	mkgroup t g
	mq-pub -q t a $'b\nc'
	mq-sub -0 -g g t >"$TD/out"
	printf 'a\0b\nc\0' | cmp - "$TD/out"
}

@test "mq-sub --json prints one object per message with every field" {
	mkgroup t g
	local id1 id2
	id1=$(mq-pub -k K1 -H 'X-A: 1' -H 'X-B: two words' t 'héllo')
	id2=$(printf '\xff\xfe\x00' | mq-pub t)
	run --separate-stderr mq-sub --json -g g t
	assert_success
	assert_equal "${#lines[@]}" 2
	local f1 f2
	f1=$(log_file t "00000000000000000000.$id1")
	f2=$(log_file t "00000000000000000001.$id2")
	"$PY" - "$output" "$id1" "$id2" "$(header_of "$f1" Published)" "$(header_of "$f2" Published)" <<'EOF'
import base64, json, re, sys
out, id1, id2, pub1, pub2 = sys.argv[1:]
a, b = [json.loads(l) for l in out.split('\n')]
for o in (a, b):
    assert set(o) >= {'id', 'receipt', 'topic', 'partition', 'seq', 'key',
                      'headers', 'published', 'attempts'}, o
    assert o['topic'] == 't' and o['partition'] == 0 and o['attempts'] == 1, o
    assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z', o['published']), o
assert a['id'] == id1 and a['seq'] == 0 and a['key'] == 'K1', a
assert a['headers'] == {'X-A': '1', 'X-B': 'two words'}, a
assert a['body'] == 'héllo' and 'body_base64' not in a, a
assert a['published'] == pub1, (a, pub1)
assert b['id'] == id2 and b['seq'] == 1 and b['key'] is None, b
assert b['headers'] == {}, b
assert 'body' not in b and base64.b64decode(b['body_base64']) == b'\xff\xfe\x00', b
assert b['published'] == pub2, (b, pub2)
EOF
	# Each its claim's receipt.
	local l
	for l in "${lines[@]}"; do
		is_receipt_of "$(jq -r .receipt <<<"$l")" t g 0 \
		    "$(printf '%020d.%s' "$(jq .seq <<<"$l")" "$(jq -r .id <<<"$l")")" 1
	done
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
}

@test "mq-sub -F prints every format token" {
	mkgroup t g
	local id
	id=$(mq-pub -k key-1 -H 'X-A: 1' -H 'X-B: 2' t hello)
	mq-pub -q t second
	local f pubms
	f=$(log_file t "00000000000000000000.$id")
	pubms=$("$PY" -c '
import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
d = t - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
print((d.days * 86400000000 + d.seconds * 1000000 + d.microseconds) // 1000)' "$(header_of "$f" Published)")
	run --separate-stderr mq-sub -n 1 -F '%t|%p|%o|%k|%K|%s|%S|%i|%a|%T|%h|%%|%r' -g g t
	assert_success
	local want="t|0|0|key-1|5|hello|5|$id|1|$pubms|X-A=1,X-B=2|%|"
	[[ $output == "$want"* ]] || fail "got: $output, want prefix: $want"
	is_receipt_of "${output#"$want"}" t g 0 "00000000000000000000.$id" 1
	# No newline is added to a format.
	run --separate-stderr bash -c 'mq-sub -F "%s" -g g t | od -An -c'
	assert_success
	assert_equal "$(echo $output)" "s e c o n d"
}

@test "mq-sub -F %{NAME}h: a header's value by name, any case; empty when absent" {
	mkgroup t g
	local id id2
	id=$(mq-pub -k k1 -H 'X-Custom: hello world' -H 'Reply-To: r.t' t one)
	id2=$(mq-pub t two)
	run --separate-stderr mq-sub -F '%{X-Custom}h|%{x-custom}h|%{Reply-To}h|%{Absent}h|%{Topic}h|%{Seq}h|%{Key}h|%{message-id}h\n' -g g t
	assert_success
	assert_equal "$output" "hello world|hello world|r.t||t|0|k1|$id
||||t|1||$id2"
	local bad
	for bad in '%{}h' '%{X-Custom}' '%{X-Custom' '%{X}x'; do
		run --separate-stderr mq-sub -F "$bad" -g g t
		assert_equal "$status" 65
		assert_one_line_error mq-sub
	done
}

@test "mq-sub -F understands the escapes \\n \\t \\0 \\\\" {
	mkgroup t g
	mq-pub -q t a b
	mq-sub -F '%s\t\\\0\n' -g g t >"$TD/out"
	printf 'a\t\\\0\nb\t\\\0\n' | cmp - "$TD/out"
}

@test "mq-sub -F with a bad format is a data error (65), nothing consumed" {
	mkgroup t g
	mq-pub -q t hello
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-sub -F '%s %z' -g g t
	assert_equal "$status" 65
	assert_equal "$output" ""
	assert_one_line_error mq-sub
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-sub -n COUNT stops after COUNT messages, leaving the rest pending" {
	mkgroup t g
	seq 1 5 | mq-pub -q -l t
	run --separate-stderr mq-sub -n 2 -g g t
	assert_success
	assert_output $'1\n2'
	assert_equal "$(count_new t g)" 3
	assert_equal "$(count_cur t g)" 0
	run mq-sub -n 10 -g g t
	assert_success
	assert_output $'3\n4\n5'
}

@test "mq-sub -n, -t and --lease with bad values are usage errors (64)" {
	mkgroup t g
	mq-pub -q t hello
	local snap opt
	snap=$(spool_snapshot)
	for opt in '-n abc' '-n -1' '-t abc' '-t -1' '--lease abc' '--lease -2' '--lease 1x'; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-sub $opt -g g t
		assert_equal "$status" 64
		assert_equal "$output" ""
		[[ -n $stderr ]]
		assert_equal "$(spool_snapshot)" "$snap"
	done
}

@test "mq-sub -t SECONDS waits that long for a message, then exits 1" {
	mkgroup t g
	local t0 t1
	t0=$(now_ms)
	run --separate-stderr mq-sub -t 0.5 -g g t
	t1=$(now_ms)
	assert_equal "$status" 1
	assert_equal "$output" ""
	(((t1 - t0) >= 450)) || fail "returned after $((t1 - t0)) ms, before the timeout"
	(((t1 - t0) < 5000)) || fail "returned after $((t1 - t0)) ms"
}

@test "mq-sub -t SECONDS returns a message published while it waits" {
	mkgroup t g
	local t0=$(now_ms)
	spawn "$TD/out" mq-sub -t 30 -g g t
	local pid=$SPAWNED
	mq-pub -q t late
	wait_for exited "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	assert_equal "$(cat "$TD/out")" late
	(($(now_ms) - t0 < 20000)) || fail "it waited for the whole timeout"
	assert_equal "$(count_new t g)" 0
}

@test "mq-sub -f keeps following until killed" {
	mkgroup t g
	spawn "$TD/out" mq-sub -f -g g t
	local pid=$SPAWNED
	mq-pub -q t one
	wait_for grep -qx one "$TD/out"
	mq-pub -q t two
	wait_for grep -qx two "$TD/out"
	! exited "$pid" || fail "mq-sub -f exited"
	assert_equal "$(cat "$TD/out")" $'one\ntwo'
	kill "$pid"
	wait_for exited "$pid"
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
}

@test "mq-sub -f -n COUNT exits 0 after COUNT messages" {
	mkgroup t g
	spawn "$TD/out" mq-sub -f -n 2 -g g t
	local pid=$SPAWNED
	mq-pub -q t one
	mq-pub -q t two
	mq-pub -q t three
	wait_for exited "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	assert_equal "$(cat "$TD/out")" $'one\ntwo'
	assert_equal "$(count_new t g)" 1
}

@test "mq-sub --manual leaves messages claimed in cur/ under the group's lease" {
	# Format 1's names; format 2's claims are claims.bats.
	mq-topic create --format 1 t
	mkgroup t g
	local id
	id=$(mq-pub t hello)
	local t0=$(now_ms)
	run --separate-stderr mq-sub --manual -F '%s %r\n' -g g t
	local t1=$(now_ms)
	assert_success
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 1
	local cur
	cur=$(ls "$(group_dir t g)/cur")
	[[ $cur =~ ^00000000000000000000\.$id,a1,l([0-9]+),r[0-9a-f]{8}:2,$ ]] || fail "bad cur/ name $cur"
	local dl=${BASH_REMATCH[1]}
	((dl >= t0 + 30000 && dl <= t1 + 30001)) || fail "deadline $dl not 30 s after [$t0, $t1]"
	assert_output "hello t/g/0/${cur%:2,}"
	# Still the same inode as the log entry.
	[[ $(group_dir t g)/cur/$cur -ef $MQ_SPOOL/topics/t/p0/log/00000000000000000000.$id ]]
	# Claimed messages are not delivered again while the lease runs.
	run mq-sub -g g t
	assert_equal "$status" 1
	assert_equal "$output" ""
}

@test "mq-sub --manual in format 2 leaves messages in a claim file under the group's lease, naming nothing" {
	mq-topic create --format 2 t
	mkgroup t g
	mq-pub -q t hello
	local t0=$(now_ms)
	run --separate-stderr mq-sub --manual -F '%s %r\n' -g g t
	local t1=$(now_ms)
	assert_success
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 1
	assert_equal "$(count_entries "$(group_dir t g)/cur")" 0
	assert_equal "$(count_entries "$(group_dir t g)/new")" 0
	local claim
	claim=$(ls "$(group_dir t g)/claims")
	[[ $claim =~ ^00000000000000000000\+1,r[0-9a-f]{8}$ ]] || fail "bad claim $claim"
	assert_output "hello t/g/0/$claim/0"
	local dl
	dl=$(receipt_deadline "t/g/0/$claim/0")
	((dl >= t0 + 30000 && dl <= t1 + 30001)) || fail "deadline $dl not 30 s after [$t0, $t1]"
	# Claimed messages are not delivered again while the lease runs.
	run mq-sub -g g t
	assert_equal "$status" 1
	assert_equal "$output" ""
}

@test "mq-sub --lease sets the deadline of a claim (durations with units too)" {
	mkgroup t g
	mq-pub -q t a b
	local t0=$(now_ms) t1 dl
	run --separate-stderr mq-sub --manual --lease 5m -n 1 -F '%r' -g g t
	t1=$(now_ms)
	assert_success
	dl=$(receipt_deadline "$output")
	((dl >= t0 + 300000 && dl <= t1 + 300001)) || fail "deadline $dl not 5 min after [$t0, $t1]"
	t0=$(now_ms)
	run --separate-stderr mq-sub --manual --lease 2.5 -n 1 -F '%r' -g g t
	t1=$(now_ms)
	assert_success
	dl=$(receipt_deadline "$output")
	((dl >= t0 + 2500 && dl <= t1 + 2501)) || fail "deadline $dl not 2.5 s after [$t0, $t1]"
}

@test "mq-sub returns an expired claim to the queue with its attempts counted" {
	mkgroup t g
	mq-pub -q t hello
	run --separate-stderr mq-sub --manual --lease 0.2 -F '%r' -g g t
	assert_success
	wait_for past_ms "$(receipt_deadline "$output")"
	run --separate-stderr mq-sub -F '%a %s\n' -g g t
	assert_success
	assert_output '2 hello'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
}

@test "mq-sub exits 1 when everything is claimed by someone else" {
	mkgroup t g
	mq-pub -q t hello
	run mq-sub --manual -g g t
	assert_success
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 1
	assert_equal "$output" ""
	assert_equal "$(count_cur t g)" 1
}

@test "mq-sub --from-start backfills what the log holds" {
	mq-pub -q t a b
	run --separate-stderr mq-sub --from-start -g g t
	assert_success
	assert_output $'a\nb'
	assert_equal "$(conf_value "$MQ_SPOOL/topics/t/groups/g.conf" from-start)" 1
	assert_equal "$(conf_value "$MQ_SPOOL/topics/t/groups/g.conf" state)" ready
}

@test "mq-sub --unsubscribe removes the group and its queue; again is 66" {
	mkgroup t g
	mkgroup t other
	mq-pub -q t a
	run --separate-stderr mq-sub --unsubscribe -g g t
	assert_success
	assert_equal "$output" ""
	[[ ! -e $MQ_SPOOL/topics/t/groups/g.conf ]]
	[[ ! -e $(group_dir t g) ]]
	[[ -f $MQ_SPOOL/topics/t/groups/other.conf ]]
	# Later messages reach the remaining group only.
	mq-pub -q t b
	[[ ! -e $(group_dir t g) ]]
	assert_equal "$(count_new t other)" 2
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-sub --unsubscribe -g g t
	assert_equal "$status" 66
	assert_equal "$output" ""
	assert_one_line_error mq-sub
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-sub -q consumes without printing" {
	mkgroup t g
	mq-pub -q t a b
	run --separate-stderr mq-sub -q -g g t
	assert_success
	assert_equal "$output" ""
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
}

@test "mq-sub -s SPOOL wins over MQ_SPOOL" {
	mq-pub -s "$TD/other" -q t before
	run mq-sub -s "$TD/other" -g g t
	assert_equal "$status" 1
	mq-pub -s "$TD/other" -q t hello
	run --separate-stderr mq-sub -s "$TD/other" -g g t
	assert_success
	assert_output hello
	assert_equal "$(count_entries "$MQ_SPOOL")" 0
}

@test "mq-sub never delivers a message whose body fails the hash or length check" {
	mkgroup t g
	local a b c
	a=$(mq-pub t hello)
	b=$(mq-pub t 'good one')
	c=$(mq-pub t 'cut short')
	# Same length, other bytes: only Content-Hash can tell (in format 2
	# the record's own hash made right, as by a hand that writes it).
	rewrite_stored "$(log_file t "00000000000000000000.$a")" "d = d[:-5] + b'j' + d[-4:]"
	rewrite_stored "$(log_file t "00000000000000000002.$c")" "d = d[:-3]"
	run --separate-stderr mq-sub -g g t
	assert_success
	assert_output 'good one'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
	# They went to the group's dead letters.
	[[ $(find "$MQ_SPOOL/topics/t/p0/dlq/g" -type f | wc -l) -ge 2 ]]
	run mq-sub -g g t
	assert_equal "$status" 1
}

@test "mq-sub --exec: body on stdin, only the command's output is printed" {
	mkgroup t g
	mq-pub -q -k k1 t one
	mq-pub -q t two
	run --separate-stderr mq-sub --exec 'printf "<%s|%s|%s|%s|%s>\n" "$(cat)" "$MQ_GROUP" "$MQ_PARTITION" "$MQ_SEQ" "$MQ_KEY"' -g g t
	assert_success
	assert_output $'<one|g|0|0|k1>\n<two|g|0|1|>'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
}

@test "mq-sub --exec: the message's headers in MQ_HEADER_NAME, inherited ones not passed on" {
	mkgroup t g
	local id id2 f
	id=$(mq-pub -k k1 -i idem-1 -H 'Reply-To: replies.me' -H 'X-Custom: hello world' t one)
	id2=$(mq-pub t two)
	f=$(log_file t "00000000000000000000.$id")
	MQ_HEADER_STALE=x MQ_HEADER_X_CUSTOM=inherited run --separate-stderr mq-sub -g g \
	    --exec 'echo "<$MQ_HEADER_REPLY_TO|$MQ_HEADER_X_CUSTOM|$MQ_HEADER_KEY|$MQ_HEADER_MQ_IDEMPOTENCY_KEY|$MQ_HEADER_MESSAGE_ID|$MQ_HEADER_TOPIC|$MQ_HEADER_PARTITION|$MQ_HEADER_SEQ|$MQ_HEADER_PUBLISHED|${MQ_HEADER_STALE-unset}>"' t
	assert_success
	assert_equal "$output" "<replies.me|hello world|k1|idem-1|$id|t|0|0|$(header_of "$f" Published)|unset>
<||||$id2|t|0|1|$(header_of "$(log_file t "00000000000000000001.$id2")" Published)|unset>"
	# Exactly these header variables, and the usual ones as they were.
	mq-pub -q -H 'X-A: 1' t three
	run --separate-stderr mq-sub -g g --exec 'env | grep ^MQ_ | grep -v -e ^MQ_SPOOL= -e ^MQ_FORMAT= -e ^MQ_TEST_FORMAT= | cut -d= -f1 | LC_ALL=C sort | tr "\n" " "' t
	assert_success
	assert_equal "$output" "MQ_ATTEMPTS MQ_GROUP MQ_HEADER_MESSAGE_ID MQ_HEADER_PARTITION MQ_HEADER_PUBLISHED MQ_HEADER_SEQ MQ_HEADER_TOPIC MQ_HEADER_X_A MQ_ID MQ_KEY MQ_PARTITION MQ_RECEIPT MQ_SEQ MQ_TOPIC "
}

@test "mq-sub --exec: odd header names map to A-Z0-9_, the first of a name wins, control characters dropped" {
	mkgroup t g
	local id f
	id=$(mq-pub -H 'x.odd~name!: v1' -H 'X_ODD-NAME_: v2' -H 'Message_Id: mine' -H 'X-C: a-b' t one)
	# A message file written by another hand: control characters in a value.
	f=$(log_file t "00000000000000000000.$id")
	rewrite_stored "$f" "d = d.replace(b'X-C: a-b', b'X-C: a\x1b[31m\x01-\tb\x7f')"
	run --separate-stderr mq-sub -g g --exec 'printf "<%s|%s|%s>" "$MQ_HEADER_X_ODD_NAME_" "$MQ_HEADER_MESSAGE_ID" "$MQ_HEADER_X_C"' t
	assert_success
	assert_equal "$output" "<v1|$id|a[31m-$(printf '\t')b>"
}

@test "mq-sub | head -n N: into a pipe a message is acked once read; what the reader left unread comes back; mq-sub ends as by SIGPIPE" {
	mkgroup t g
	mq-pub -q t 1 2 3 4 5 6 7 8 9 10
	run bash -c 'mq-sub -g g t | head -n 1; echo "status ${PIPESTATUS[0]}"'
	assert_output $'1\nstatus 141'
	assert_equal "$(count_new t g)" 9
	assert_equal "$(count_cur t g)" 0
	run bash -c 'mq-sub -g g t | head -n 3'
	assert_output $'2\n3\n4'
	assert_equal "$(count_new t g)" 6
	# A reader that reads line by line and stops.
	run bash -c 'mq-sub -g g t | { read -r a; read -r b; echo "$a$b"; }'
	assert_output 56
	assert_equal "$(count_new t g)" 4
	# A slow reader that reads everything gets everything, all acked.
	run bash -c 'mq-sub -g g t | { sleep 0.3; cat; }; echo "status ${PIPESTATUS[0]}"'
	assert_output $'7\n8\n9\n10\nstatus 0'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
	# -n 1 takes one, as before.
	mq-pub -q t 1 2 3
	run bash -c 'mq-sub -g g -n 1 t | head -n 1'
	assert_output 1
	assert_equal "$(count_new t g)" 2
	# Into a file (not a pipe) batches are written whole, as before.
	run bash -c 'mq-sub -g g t > "$1"; cat "$1"' _ "$TD/out"
	assert_output $'2\n3'
}

cur_is() { [[ $(count_cur t g) == "$1" ]]; }
gone() { ! kill -0 "$1" 2>/dev/null; }

@test "mq-sub into a pipe nobody reads: it writes one message and waits; stopped by SIGTERM, the unread message comes back" {
	mkgroup t g
	mq-pub -q t a b
	mkfifo "$TD/fifo"
	# This shell holds the FIFO open for reading and never reads.
	exec 8<>"$TD/fifo"
	spawn "$TD/sub.out" sh -c 'exec mq-sub -f -g g t > "$1"' _ "$TD/fifo"
	wait_for cur_is 1
	sleep 0.2
	assert_equal "$(count_cur t g)" 1
	assert_equal "$(count_new t g)" 1
	kill -TERM "$SPAWNED"
	wait_for gone "$SPAWNED"
	exec 8>&-
	assert_equal "$(count_cur t g)" 0
	assert_equal "$(count_new t g)" 2
	run --separate-stderr mq-sub -g g t
	assert_output $'a\nb'
}
