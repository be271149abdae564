#!/usr/bin/env bats
# mq-replicate: keys and authorized peers (the channel itself is tested by
# test/unit/test_link.c).

load helper

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
