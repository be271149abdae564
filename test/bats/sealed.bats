#!/usr/bin/env bats
# Sealed topics: consumer keys (mq-sub --keygen, --pubkey), a topic's keys
# (mq-topic key add|list|remove), bodies stored encrypted and opened by
# mq-sub --key; what happens without the key, with the wrong one, with a
# damaged ciphertext; filters; rotation.

load helper
load replicate_helper

# keygen NAME: a consumer key pair in $TD/NAME.key; its public key in $NAME.
keygen() {
	local pub
	pub=$(mq-sub --keygen "$TD/$1.key") || fail "keygen $1"
	printf -v "$1" '%s' "$pub"
}

# sealed_topic TOPIC GROUP KEY...: a topic sealed to the keys, with a group.
sealed_topic() {
	local t=$1 g=$2
	shift 2
	mkgroup "$t" "$g"
	mq-topic key add "$t" "$@" || fail "key add"
}

# seq_file TOPIC SEQ: a file with the stored bytes of message SEQ of
# partition 0 (log_files): in format 1 its log/ file, which rewrite changes
# in place.
seq_file() {
	log_files "$1" | sed -n "$(($2 + 1))p"
}

# rewrite FILE PY: replaces the body of a stored message (FILE from
# seq_file) with PY's value of b (the old body given as b), with
# Content-Length and Content-Hash made to match: only the encryption can
# tell.  In either format (rewrite_stored).
rewrite() {
	BODY_EXPR=$2 rewrite_stored "$1" "import os, re, xxhash
head, b = d.split(b'\\n\\n', 1)
b = eval(os.environ['BODY_EXPR'])
h = xxhash.xxh3_128(b).hexdigest().encode()
head = re.sub(rb'Content-Length: \\d+', b'Content-Length: %d' % len(b), head)
head = re.sub(rb'xxh3-128:[0-9a-f]{32}', b'xxh3-128:' + h, head)
d = head + b'\\n\\n' + b"
}

@test "keygen makes a 0600 key file and prints its public key; pubkey prints it again" {
	run --separate-stderr mq-sub --keygen "$TD/a.key"
	assert_success
	[[ $output =~ ^[0-9a-f]{64}$ ]] || fail "not a public key: $output"
	local pub=$output
	assert_equal "$(stat -c %a "$TD/a.key")" 600
	assert_equal "$(head -1 "$TD/a.key")" "mq-seal-key 1"
	! grep -q "$pub" "$TD/a.key"
	run --separate-stderr mq-sub --pubkey "$TD/a.key"
	assert_success
	assert_output "$pub"
	# An existing key is never replaced.
	cp "$TD/a.key" "$TD/a.copy"
	run --separate-stderr mq-sub --keygen "$TD/a.key"
	assert_equal "$status" 73
	assert_one_line_error mq-sub
	cmp "$TD/a.key" "$TD/a.copy"
	# Something that is not a key.
	echo nonsense >"$TD/bad.key"
	run --separate-stderr mq-sub --pubkey "$TD/bad.key"
	assert_equal "$status" 78
	assert_one_line_error mq-sub
	run --separate-stderr mq-sub --key "$TD/bad.key" -g g -t 0 t
	assert_equal "$status" 78
	[[ ! -e $MQ_SPOOL/topics/t ]]
}

@test "key add, list and remove; bad input changes nothing" {
	keygen a
	keygen b
	keygen c
	mkgroup t g
	run mq-topic key list t
	assert_success
	assert_output ""
	mq-topic key add t "$a" "$b" "$a"
	run mq-topic key list t
	assert_output "$a"$'\n'"$b"
	assert_equal "$(cat "$MQ_SPOOL/topics/t/keys")" "$a"$'\n'"$b"
	local before
	before=$(spool_snapshot)
	run --separate-stderr mq-topic key add t "$a" 1234
	assert_equal "$status" 65
	assert_one_line_error mq-topic
	run --separate-stderr mq-topic key remove t "$c"
	assert_equal "$status" 66
	assert_one_line_error mq-topic
	run --separate-stderr mq-topic key add nosuch "$a"
	assert_equal "$status" 66
	run --separate-stderr mq-topic key frob t
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot)" "$before"
	mq-topic key remove t "$a"
	assert_equal "$(mq-topic key list t)" "$b"
	# The last key stays: a sealed topic never turns plain by accident.
	run --separate-stderr mq-topic key remove t "$b"
	assert_equal "$status" 64
	assert_one_line_error mq-topic
	assert_equal "$(mq-topic key list t)" "$b"
}

@test "a topic holds at most 64 keys: the 65th is refused and changes nothing" {
	mkgroup t g
	local keys
	mapfile -t keys < <(python3 -c 'import os
for _ in range(65): print(os.urandom(32).hex())')
	run --separate-stderr mq-topic key add t "${keys[@]}"
	assert_equal "$status" 64
	assert_one_line_error mq-topic
	[[ ! -e $MQ_SPOOL/topics/t/keys ]]
	mq-topic key add t "${keys[@]:0:64}"
	assert_equal "$(mq-topic key list t | wc -l)" 64
	run --separate-stderr mq-topic key add t "${keys[64]}"
	assert_equal "$status" 64
	assert_equal "$(mq-topic key list t | wc -l)" 64
}

@test "a sealed topic round-trips bodies exactly, binary ones too" {
	keygen a
	sealed_topic t g "$a"
	"$PY" -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 5 + b"\n\n\x00end")' >"$TD/body"
	mq-pub -q t <"$TD/body"
	mq-pub -q t ""
	mq-sub -g g -n 1 --key "$TD/a.key" --exec "cat > $TD/out" t
	cmp "$TD/body" "$TD/out"
	mq-sub -g g -n 1 --key "$TD/a.key" --exec "cat > $TD/empty" t
	[[ -f $TD/empty && ! -s $TD/empty ]]
	group_empty t g
}

@test "the spool holds no plaintext of a sealed body" {
	keygen a
	sealed_topic t g "$a"
	mkgroup t other
	mq-pub -q -H 'Kind: order' t "attack at dawn, gate 7"
	run grep -ra "attack at dawn" "$MQ_SPOOL"
	assert_failure
	run grep -ra "gate 7" "$MQ_SPOOL"
	assert_failure
	local f
	f=$(seq_file t 0)
	assert_equal "$(header_of "$f" Mq-Sealed)" "${a:0:16}"
	# Headers are not sealed.
	assert_equal "$(header_of "$f" Kind)" order
	# One copy: the log's file, linked into each group (format 1); the
	# segment's record, of which no group has a copy (format 2).
	if is_format2 t; then
		assert_equal "$(stat -c %h "$MQ_SPOOL/topics/t/p0/log/00000000000000000000")" 1
		assert_equal "$(count_entries "$(group_dir t g)/new")" 0
		assert_equal "$(count_entries "$(group_dir t other)/new")" 0
	else
		assert_equal "$(stat -c %h "$f")" 3
	fi
	# A plain topic beside it is untouched.
	mkgroup p g
	mq-pub -q p "attack at dawn"
	run grep -rla "attack at dawn" "$MQ_SPOOL"
	assert_success
	[[ $output == */topics/p/* ]]
	run --separate-stderr mq-sub -g g --key "$TD/a.key" t
	assert_success
	assert_output "attack at dawn, gate 7"
}

@test "without the key or with the wrong one: exit 77, the message stays pending" {
	keygen a
	keygen b
	sealed_topic t g "$a"
	mq-pub -q t "for a only"
	run --separate-stderr mq-sub -g g -t 0 t
	assert_equal "$status" 77
	assert_one_line_error mq-sub
	assert_output ""
	[[ $stderr == *"--key"* ]]
	assert_equal "$(count_new t g)" 1
	assert_equal "$(count_cur t g)" 0
	run --separate-stderr mq-sub -g g -t 0 --key "$TD/b.key" t
	assert_equal "$status" 77
	assert_one_line_error mq-sub
	assert_output ""
	assert_equal "$(count_new t g)" 1
	run mq-dlq count t
	assert_output 0
	# Giving up is no failed delivery: no attempt is counted.
	[[ $(ls "$(group_dir t g)/new") != *,a* ]]
	MQ_SUB_KEY=$TD/a.key run --separate-stderr mq-sub -g g -t 0 t
	assert_success
	assert_output "for a only"
	group_empty t g
}

@test "a jq group filter is refused on a sealed topic; header conditions work" {
	keygen a
	sealed_topic t g "$a"
	run --separate-stderr mq-sub -g j --group-filter '.n > 1' t
	assert_equal "$status" 78
	assert_one_line_error mq-sub
	[[ $stderr == *sealed* ]]
	[[ ! -e $MQ_SPOOL/topics/t/groups/j.conf ]]
	mkgroup t h --group-match 'Kind=ord*'
	mq-pub -q -H 'Kind: order' t '{"n":1}'
	mq-pub -q -H 'Kind: refund' t '{"n":2}'
	assert_equal "$(count_queued t h)" 1
	run --separate-stderr mq-sub -g h --key "$TD/a.key" t
	assert_output '{"n":1}'
	# A consumer's own jq filter sees the opened body.
	run --separate-stderr mq-sub -g g --key "$TD/a.key" --filter '.n == 2' t
	assert_success
	assert_output '{"n":2}'
}

@test "a key is refused while a group has a jq filter; a publisher that finds both exits 78" {
	keygen a
	mkgroup t j --group-filter '.n > 1'
	run --separate-stderr mq-topic key add t "$a"
	assert_equal "$status" 78
	assert_one_line_error mq-topic
	[[ ! -e $MQ_SPOOL/topics/t/keys ]]
	# Keys written by hand beside the filter: nothing is published.
	echo "$a" >"$MQ_SPOOL/topics/t/keys"
	run --separate-stderr mq-pub t '{"n":2}'
	assert_equal "$status" 78
	assert_one_line_error mq-pub
	[[ $stderr == *"group j"* ]]
	assert_equal "$(count_log t)" 0
}

@test "rotation: old messages stay readable with the old key, new ones use the new" {
	keygen old
	keygen new
	sealed_topic t g "$old"
	mq-pub -q t "before"
	mq-topic key add t "$new"
	mq-topic key remove t "$old"
	assert_equal "$(mq-topic key list t)" "$new"
	mq-pub -q t "after"
	assert_equal "$(header_of "$(seq_file t 0)" Mq-Sealed)" "${old:0:16}"
	assert_equal "$(header_of "$(seq_file t 1)" Mq-Sealed)" "${new:0:16}"
	run --separate-stderr mq-sub -g g -n 1 --key "$TD/old.key" t
	assert_success
	assert_output before
	# The new message is not the old key's.
	run --separate-stderr mq-sub -g g -t 0 --key "$TD/old.key" t
	assert_equal "$status" 77
	run --separate-stderr mq-sub -g g --key "$TD/new.key" t
	assert_success
	assert_output after
}

@test "a damaged or moved ciphertext is dead-lettered as undecryptable, never delivered" {
	keygen a
	sealed_topic t g "$a"
	mq-pub -q t "first message"
	mq-pub -q t "second message"
	mq-pub -q t "third message"
	# A flipped byte, Content-Hash and all made to match.
	rewrite "$(seq_file t 0)" 'b[:-5] + bytes([b[-5] ^ 1]) + b[-4:]'
	# The second's body moved into the third: not that message's.
	local second
	second=$(seq_file t 1)
	rewrite "$(seq_file t 2)" "open('$second', 'rb').read().split(b'\n\n', 1)[1]"
	run --separate-stderr mq-sub -g g -t 0 --key "$TD/a.key" t
	assert_success
	assert_output "second message"
	group_empty t g
	run mq-dlq count t
	assert_output 2
	run mq-dlq list --json t
	assert_success
	[[ $(grep -o '"reason":"[a-z-]*"' <<<"$output" | sort -u) == '"reason":"undecryptable"' ]]
	# A flipped byte that Content-Hash sees: unreadable, as in a plain topic.
	mq-pub -q t "fourth message"
	local f
	f=$(seq_file t 3)
	rewrite_stored "$f" "d = bytearray(d); d[-3] ^= 1; d = bytes(d)"
	run --separate-stderr mq-sub -g g -t 0 --key "$TD/a.key" t
	assert_equal "$status" 1
	assert_output ""
	run mq-dlq count t
	assert_output 3
}

@test "a topic sealed to two keys: both consumers read every message" {
	keygen a
	keygen b
	sealed_topic t ga "$a" "$b"
	mkgroup t gb
	mq-pub -q t "one" "two"
	[[ $(header_of "$(seq_file t 0)" Mq-Sealed) == "${a:0:16} ${b:0:16}" ]]
	run --separate-stderr mq-sub -g ga --key "$TD/a.key" t
	assert_success
	assert_output $'one\ntwo'
	run --separate-stderr mq-sub -g gb --key "$TD/b.key" t
	assert_success
	assert_output $'one\ntwo'
}

@test "completions offer the key options and subcommands" {
	keygen a
	sealed_topic t g "$a"
	run completions _mq_sub mq-sub --ke
	assert_output $'--key\n--keygen'
	run completions _mq_topic mq-topic k
	assert_output key
	run completions _mq_topic mq-topic key r
	assert_output remove
	run completions _mq_topic mq-topic key remove t ""
	assert_output "$a"
	grep -q -- "--keygen=" "$BATS_TEST_DIRNAME/../../completions/_mq"
	grep -q "'key:" "$BATS_TEST_DIRNAME/../../completions/_mq"
}

@test "a sealed dead letter is redriven in place, never copied to another topic" {
	keygen a
	mkgroup t g --max-attempts 1
	mq-topic key add t "$a"
	mq-pub -q t "payload"
	run --separate-stderr mq-sub -g g --key "$TD/a.key" --exec false t
	assert_equal "$(mq-dlq count t)" 1
	run --separate-stderr mq-dlq redrive --to other t
	assert_equal "$status" 65
	assert_one_line_error mq-dlq
	[[ $stderr == *sealed* ]]
	assert_equal "$(mq-dlq count t)" 1
	[[ ! -e $MQ_SPOOL/topics/other/p0/log || $(count_log other) == 0 ]]
	mq-dlq redrive t
	run --separate-stderr mq-sub -g g --key "$TD/a.key" t
	assert_success
	assert_output payload
}

@test "a signed and sealed topic: the publisher seals then signs; the consumer verifies the stored bytes, then opens them" {
	keygen a
	mq-pub --keygen "$TD/signer" >/dev/null
	echo "$(mq-pub --pubkey "$TD/signer") signer" >"$TD/signers"
	mq-topic create --signers "$TD/signers" t
	sealed_topic t g "$a"
	mq-pub -q --sign "$TD/signer" t "first message"
	mq-pub -q --sign "$TD/signer" t "second message"
	# Stored sealed and signed: no plaintext, both headers.
	run grep -r "first message" "$MQ_SPOOL"
	assert_failure
	grep -q '^Mq-Sealed: ' "$(seq_file t 0)" || fail "not sealed"
	grep -q '^Mq-Signature: ' "$(seq_file t 0)" || fail "not signed"
	# A flipped byte of the ciphertext, Content-Hash made to match: the
	# signature catches it before the opening is tried.
	rewrite "$(seq_file t 0)" 'b[:-5] + bytes([b[-5] ^ 1]) + b[-4:]'
	run --separate-stderr mq-sub -g g -t 0 -F '%P %s\n' --key "$TD/a.key" t
	assert_success
	assert_output "$(mq-pub --pubkey "$TD/signer") second message"
	run mq-dlq list --json t
	assert_success
	[[ $(grep -o '"reason":"[a-z-]*"' <<<"$output" | sort -u) == '"reason":"signature"' ]] ||
	    fail "$output"
	# A batch is sealed message by message and signed once, over the
	# sealed bodies: each verifies, then opens.
	printf 'batch body %s\n' 1 2 3 >"$TD/lines"
	mq-pub -q -l --sign "$TD/signer" t <"$TD/lines"
	grep -q '^Mq-Signature: ed25519-tree:[0-9a-f]* 2/3 ' "$(seq_file t 4)" ||
	    fail "not signed as a chunk"
	run grep -r "batch body" "$MQ_SPOOL"
	assert_failure
	run --separate-stderr mq-sub -g g -t 0 -F '%s\n' --key "$TD/a.key" t
	assert_success
	assert_output "$(printf 'batch body %s\n' 1 2 3)"
}

@test "a sealed topic's keys come along with replication: the replica's publishers seal too, and a rotation follows" {
	keygen a
	keygen b
	pair
	sealed_topic t g "$a"
	mq-pub -q t "from A"
	run -0 push_ab
	assert_equal "$(cat "$B/topics/t/keys")" "$a"
	run -0 env MQ_SPOOL="$B" mq-pub -q t "from B"
	run grep -r "from B" "$B"
	assert_failure
	run --separate-stderr env MQ_SPOOL="$B" mq-sub -n 2 -g g -t 0 \
	    --key "$TD/a.key" t
	assert_success
	assert_output $'from A\nfrom B'
	# A rotation on A reaches B at the next push.
	mq-topic key add t "$b"
	mq-topic key remove t "$a"
	run -0 push_ab
	assert_equal "$(cat "$B/topics/t/keys")" "$b"
}
