#!/usr/bin/env bats
# mq-pub: options, output, exit codes and what it leaves on disk.

load helper

ID_RE='^[0-9a-f]{32}$'
ZERO=00000000000000000000

log_dir() {
	echo "$MQ_SPOOL/topics/${1:-t}/p${2:-0}/log"
}

# check_headers FILE ID TOPIC PARTITION SEQ LEN [KEY]: the fixed header block
# of a message file, in the order of the notes, and nothing else before the
# user headers.
check_headers() {
	"$PY" - "$@" <<'EOF'
import re, sys
f, mid, topic, part, seq, length = sys.argv[1:7]
key = sys.argv[7] if len(sys.argv) > 7 else None
data = open(f, 'rb').read()
head, body = data.split(b'\n\n', 1)
lines = head.decode().split('\n')
names = [l.split(': ', 1)[0] for l in lines]
want = ['Message-Id', 'Topic', 'Partition', 'Seq'] + (['Key'] if key else []) + \
    ['Published', 'Content-Length', 'Content-Hash']
assert names[:len(want)] == want, names
h = dict(l.split(': ', 1) for l in lines[:len(want)])
assert h['Message-Id'] == mid, h
assert h['Topic'] == topic, h
assert h['Partition'] == part, h
assert h['Seq'] == seq, h
if key:
    assert h['Key'] == key, h
assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z', h['Published']), h
assert h['Content-Length'] == length, h
assert int(length) == len(body), (length, len(body))
assert re.fullmatch(r'xxh3-128:[0-9a-f]{32}', h['Content-Hash']), h
EOF
}

@test "mq-pub --help prints usage and exits 0" {
	run --separate-stderr mq-pub --help
	assert_success
	assert_usage_output mq-pub
}

@test "mq-pub without a topic is a usage error (64)" {
	run --separate-stderr mq-pub
	assert_equal "$status" 64
	assert_equal "$output" ""
	[[ -n $stderr ]]
}

@test "mq-pub with an unknown option is a usage error (64)" {
	run --separate-stderr mq-pub -Z t hello
	assert_equal "$status" 64
	assert_equal "$output" ""
	[[ -n $stderr ]]
	assert_equal "$(count_entries "$MQ_SPOOL")" 0
}

@test "mq-pub creates the spool on first use (mkdir -p) with VERSION, ID, tmp/" {
	local s=$TD/not/yet/there
	run --separate-stderr mq-pub -s "$s" t hello
	assert_success
	assert_output --regexp "$ID_RE"
	assert_equal "$stderr" "mq-pub: warning: topic 't' has no groups: the message is kept in log/ only"
	printf 'mq-spool 1\n' | cmp - "$s/VERSION"
	[[ $(cat "$s/ID") =~ ^[0-9a-f]{32}$ ]]
	assert_equal "$(wc -c <"$s/ID")" 33
	[[ -d $s/tmp ]]
	assert_equal "$(count_entries "$s/tmp")" 0
	# The topic was created with the default settings.
	run grep -x 'partitions=1' "$s/topics/t/topic.conf"
	assert_success
	run grep -x 'max-message-size=1048576' "$s/topics/t/topic.conf"
	assert_success
	run grep -x 'retention=604800' "$s/topics/t/topic.conf"
	assert_success
	# -s was used, so $MQ_SPOOL was not touched.
	assert_equal "$(count_entries "$MQ_SPOOL")" 0
}

@test "mq-pub MESSAGE stores one message file with the header block, prints its id" {
	local before after
	before=$(now_us)
	run --separate-stderr mq-pub t hello
	after=$(now_us)
	assert_success
	assert_equal "$stderr" "mq-pub: warning: topic 't' has no groups: the message is kept in log/ only"
	assert_equal "${#lines[@]}" 1
	local id=$output
	[[ $id =~ $ID_RE ]]
	local f
	f=$(log_file t "$ZERO.$id")
	assert_equal "$(count_log t)" 1
	check_headers "$f" "$id" t 0 0 5
	assert_equal "$(body_of "$f")" hello
	# Id: 13 hex digits of microseconds since the epoch come first.
	local us=$((16#${id:0:13}))
	((us >= before && us <= after)) || fail "id time $us not in [$before, $after]"
	# Published: the time of publishing, with microseconds, UTC.
	local pub
	pub=$("$PY" -c '
import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
d = t - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
print(d.days * 86400000000 + d.seconds * 1000000 + d.microseconds)' "$(header_of "$f" Published)")
	((pub >= before && pub <= after)) || fail "Published $pub not in [$before, $after]"
	# The head commits exactly this message.
	[[ $(cat "$MQ_SPOOL/topics/t/p0/head") =~ ^mq-head\ 1\ next=00000000000000000001\ committed=00000000000000000001\ sum=[0-9a-f]{8}$ ]]
	assert_equal "$(wc -c <"$MQ_SPOOL/topics/t/p0/head")" 80
}

@test "mq-pub with several MESSAGE arguments stores one message per argument, in order" {
	run --separate-stderr mq-pub t first 'second one' $'third\nline'
	assert_success
	assert_equal "${#lines[@]}" 3
	local x id f
	local -a want=(first 'second one' $'third\nline')
	for x in 0 1 2; do
		id=${lines[$x]}
		[[ $id =~ $ID_RE ]]
		f=$(log_file t "0000000000000000000$x.$id")
		check_headers "$f" "$id" t 0 "$x" "${#want[$x]}"
		assert_equal "$(body_of "$f")" "${want[$x]}"
	done
	assert_equal "$(count_log t)" 3
	[[ ${lines[0]} != "${lines[1]}" && ${lines[1]} != "${lines[2]}" ]]
}

@test "mq-pub without MESSAGE reads one message from stdin, bytes as they are" {
	printf 'a\nb\0c\n\n' >"$TD/in"
	run --separate-stderr mq-pub t <"$TD/in"
	assert_success
	assert_equal "${#lines[@]}" 1
	local f
	f=$(log_file t "$ZERO.$output")
	check_headers "$f" "$output" t 0 0 7
	body_of "$f" | cmp - "$TD/in"
	assert_equal "$(count_log t)" 1
}

@test "mq-pub -l: one message per line, newline stripped, empty lines skipped, last line without newline counts" {
	printf 'one\n\ntwo\n\n\nthree' >"$TD/in"
	run --separate-stderr mq-pub -l t <"$TD/in"
	assert_success
	assert_equal "${#lines[@]}" 3
	local x f
	local -a want=(one two three)
	for x in 0 1 2; do
		f=$(log_file t "0000000000000000000$x.${lines[$x]}")
		assert_equal "$(body_of "$f")" "${want[$x]}"
	done
	assert_equal "$(count_log t)" 3
}

@test "mq-pub -0: one message per NUL-terminated record" {
	printf 'a b\nc\0d\0' >"$TD/in"
	run --separate-stderr mq-pub -0 t <"$TD/in"
	assert_success
	assert_equal "${#lines[@]}" 2
	local f
	f=$(log_file t "$ZERO.${lines[0]}")
	assert_equal "$(body_of "$f")" $'a b\nc'
	f=$(log_file t "00000000000000000001.${lines[1]}")
	assert_equal "$(body_of "$f")" d
	assert_equal "$(count_log t)" 2
}

@test "mq-pub -q prints nothing and still stores" {
	run --separate-stderr mq-pub -q t a b
	assert_success
	assert_equal "$output" ""
	assert_equal "$stderr" ""
	assert_equal "$(count_log t)" 2
	run --separate-stderr bash -c 'printf "x\ny\nz\n" | mq-pub -q -l t'
	assert_success
	assert_equal "$output" ""
	assert_equal "$(count_log t)" 5
}

@test "mq-pub -H adds user headers after the fixed ones, in the order given" {
	run --separate-stderr mq-pub -H 'X-One: 1' -H 'X-Url: http://h:80/a b' -H 'x-lower: v' t body
	assert_success
	local f
	f=$(log_file t "$ZERO.$output")
	check_headers "$f" "$output" t 0 0 4
	run "$PY" -c '
import sys
head = open(sys.argv[1], "rb").read().split(b"\n\n", 1)[0].decode().split("\n")
print("\n".join(head[7:]))' "$f"
	assert_success
	assert_output $'X-One: 1\nX-Url: http://h:80/a b\nx-lower: v'
	assert_equal "$(body_of "$f")" body
}

@test "mq-pub -H refuses reserved names, case-insensitively (65), and stores nothing" {
	mq-pub -q t before
	local snap h
	snap=$(spool_snapshot)
	for h in 'Message-Id: x' 'topic: x' 'PARTITION: 1' 'Seq: 1' 'Key: k' \
	    'Published: x' 'content-length: 1' 'Content-Hash: x' 'Mq-Foo: x' \
	    'mq-deliver-at: 1' 'MQ-X: y'; do
		run --separate-stderr mq-pub -H "$h" t hello
		assert_equal "$status" 65
		assert_equal "$output" ""
		assert_one_line_error mq-pub
		assert_equal "$(spool_snapshot)" "$snap"
	done
}

@test "mq-pub -H refuses malformed headers (65), and stores nothing" {
	mq-pub -q t before
	local snap h long
	snap=$(spool_snapshot)
	long=$(printf 'X%.0s' {1..101})
	for h in 'NoColon' 'Bad Name: x' ': no name' "$long: v" $'X-A: line\nbreak' \
	    $'X-A: cr\rhere' $'X\x01Ctl: v'; do
		run --separate-stderr mq-pub -H "$h" t hello
		assert_equal "$status" 65
		assert_equal "$output" ""
		assert_one_line_error mq-pub
		assert_equal "$(spool_snapshot)" "$snap"
	done
	# 100 characters is still a valid name.
	run --separate-stderr mq-pub -H "${long:1}: v" t hello
	assert_success
}

@test "mq-pub -k stores the key as a Key header after Seq" {
	run --separate-stderr mq-pub -k customer-7 t hello
	assert_success
	local f
	f=$(log_file t "$ZERO.$output")
	check_headers "$f" "$output" t 0 0 5 customer-7
	assert_equal "$(header_of "$f" Key)" customer-7
}

@test "mq-pub -k refuses a key with a newline (65), and stores nothing" {
	mq-pub -q t before
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-pub -k $'a\nb' t hello
	assert_equal "$status" 65
	assert_one_line_error mq-pub
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-pub -s SPOOL wins over MQ_SPOOL" {
	run --separate-stderr mq-pub -s "$TD/other" t hello
	assert_success
	MQ_SPOOL=$TD/other log_file t "$ZERO.$output" >/dev/null
	assert_equal "$(count_entries "$MQ_SPOOL")" 0
}

@test "mq-pub finds the spool in XDG_STATE_HOME/mq, then ~/.local/state/mq" {
	unset MQ_SPOOL
	export XDG_STATE_HOME=$TD/xdg
	run --separate-stderr mq-pub t one
	assert_success
	MQ_SPOOL=$TD/xdg/mq log_file t "$ZERO.$output" >/dev/null
	unset XDG_STATE_HOME
	run --separate-stderr mq-pub t two
	assert_success
	MQ_SPOOL=$HOME/.local/state/mq log_file t "$ZERO.$output" >/dev/null
	printf 'mq-spool 1\n' | cmp - "$HOME/.local/state/mq/VERSION"
}

@test "mq-pub --sync=each|batch|none all store the message" {
	local mode f x=0
	for mode in each batch none; do
		run --separate-stderr mq-pub --sync=$mode t "$mode"
		assert_success
		[[ $output =~ $ID_RE ]]
		f=$(log_file t "0000000000000000000$x.$output")
		assert_equal "$(body_of "$f")" "$mode"
		x=$((x + 1))
	done
	run --separate-stderr bash -c 'printf "a\nb\n" | mq-pub --sync=each -l t'
	assert_success
	assert_equal "${#lines[@]}" 2
	assert_equal "$(count_log t)" 5
	assert_equal "$(head_field t committed)" 5
}

@test "mq-pub --sync with a bad mode is a usage error (64), nothing stored" {
	mq-pub -q t before
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-pub --sync=sometimes t hello
	assert_equal "$status" 64
	assert_equal "$output" ""
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-pub -p N publishes into partition N" {
	run mq-topic create --partitions 2 t
	assert_success
	run --separate-stderr mq-pub -p 1 t one
	assert_success
	local f
	f=$(log_file t "$ZERO.$output" 1)
	check_headers "$f" "$output" t 1 0 3
	assert_equal "$(count_log t 0)" 0
	run --separate-stderr mq-pub -p 0 t zero
	assert_success
	log_file t "$ZERO.$output" 0 >/dev/null
	assert_equal "$(count_log t 1)" 1
	# A partition the topic does not have stores nothing.
	run --separate-stderr mq-pub -p 2 t two
	assert_failure
	assert_equal "$output" ""
	assert_one_line_error mq-pub
	assert_equal "$(count_log t 0)" 1
	assert_equal "$(count_log t 1)" 1
	[[ ! -e $MQ_SPOOL/topics/t/p2 ]]
}

@test "mq-pub refuses a body larger than max-message-size (65), stores nothing" {
	run mq-topic create --max-message-size 10 t
	assert_success
	run --separate-stderr mq-pub t 0123456789
	assert_success
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-pub t 01234567890
	assert_equal "$status" 65
	assert_equal "$output" ""
	assert_one_line_error mq-pub
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-pub links each message into new/ of every group, once" {
	# Format 1's names; format 2's publish is the test below.
	mq-topic create --format 1 t
	mkgroup t g1
	mkgroup t g2
	run --separate-stderr mq-pub t a b
	assert_success
	local key0=$ZERO.${lines[0]} key1=00000000000000000001.${lines[1]}
	assert_equal "$(ls "$(group_dir t g1)/new")" "$key0"$'\n'"$key1"
	assert_equal "$(ls "$(group_dir t g2)/new")" "$key0"$'\n'"$key1"
	assert_equal "$(count_cur t g1)" 0
	# log/ plus one link per group.
	assert_equal "$(stat -c %h "$(log_dir)/$key0")" 3
	[[ $(log_dir)/$key0 -ef $(group_dir t g1)/new/$key0 ]]
	[[ $(log_dir)/$key0 -ef $(group_dir t g2)/new/$key0 ]]
	assert_equal "$(count_entries "$(group_dir t g1)/tmp")" 0
}

@test "mq-pub in format 2 names nothing per group: each message is one record, pending in every group" {
	mq-topic create --format 2 t
	mkgroup t g1
	mkgroup t g2
	run --separate-stderr mq-pub t a b
	assert_success
	assert_equal "$(log_keys t)" "$ZERO.${lines[0]}"$'\n'"00000000000000000001.${lines[1]}"
	assert_equal "$(count_entries "$(log_dir)")" 1
	local g
	for g in g1 g2; do
		assert_equal "$(count_entries "$(group_dir t $g)/new")" 0
		assert_equal "$(count_new t $g)" 2
		assert_equal "$(count_cur t $g)" 0
		assert_equal "$(count_entries "$(group_dir t $g)/tmp")" 0
	done
}

@test "mq-pub continues the sequence across runs, with fresh ids" {
	local a b
	a=$(mq-pub t one)
	b=$(mq-pub t two)
	[[ $a != "$b" ]]
	log_file t "$ZERO.$a" >/dev/null
	log_file t "00000000000000000001.$b" >/dev/null
	assert_equal "$(head_field t committed)" 2
	assert_equal "$(head_field t next)" 2
}

@test "mq-pub refuses a non-empty directory that is not a spool (78)" {
	echo mine >"$MQ_SPOOL/notes.txt"
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-pub t hello
	assert_equal "$status" 78
	assert_equal "$output" ""
	assert_one_line_error mq-pub
	[[ $stderr == *"not an mq spool"* ]]
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-pub refuses an invalid topic name (64), creates nothing" {
	run --separate-stderr mq-pub 'a/b' hello
	assert_equal "$status" 64
	assert_one_line_error mq-pub
	[[ ! -e $MQ_SPOOL/topics/a ]]
	# 200 characters is the longest valid name.
	local long
	long=$(printf 'n%.0s' {1..200})
	run --separate-stderr mq-pub "$long" hello
	assert_success
	[[ -d $MQ_SPOOL/topics/$long ]]
}

@test "a mistyped topic: mq-pub warns of a topic without groups (0; -q silences it); --no-create and MQ_STRICT=1 refuse a missing topic (66), nothing made" {
	mkgroup orders g
	run --separate-stderr mq-pub orders x
	assert_success
	assert_equal "$stderr" ""
	run --separate-stderr mq-pub ordres x
	assert_success
	assert_equal "$stderr" "mq-pub: warning: topic 'ordres' has no groups: the message is kept in log/ only"
	run --separate-stderr mq-pub -q ordres y
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(count_log ordres)" 2
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-pub --no-create ordrs x
	assert_equal "$status" 66
	assert_equal "$stderr" "mq-pub: no topic 'ordrs' (--no-create: create it with mq-topic create)"
	MQ_STRICT=1 run --separate-stderr mq-pub ordrs x
	assert_equal "$status" 66
	assert_equal "$stderr" "mq-pub: no topic 'ordrs' (MQ_STRICT: create it with mq-topic create)"
	MQ_STRICT=1 run --separate-stderr mq-sub -g g ordrs
	assert_equal "$status" 66
	assert_equal "$stderr" "mq-sub: no topic 'ordrs' (MQ_STRICT: create it with mq-topic create)"
	run --separate-stderr mq-sub --no-create -g g2 ordrs
	assert_equal "$status" 66
	assert_equal "$(spool_snapshot)" "$snap"
	# A topic that exists is taken; MQ_STRICT=0 is not strict.
	MQ_STRICT=1 run --separate-stderr mq-pub -q orders y
	assert_success
	MQ_STRICT=1 run --separate-stderr mq-sub --no-create -g g -n 2 orders
	assert_success
	assert_output $'x\ny'
	MQ_STRICT=0 run --separate-stderr mq-pub -q other z
	assert_success
}
