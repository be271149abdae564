#!/usr/bin/env bats
# Partitions: key hashing, -p, spreading, per-key order; mq-topic alter
# (growing a topic); partitions placed on other file systems (--place).

load helper

# xxh3_mod N KEY...: "PARTITION KEY" per key, computed independently of mq
# with python3-xxhash: XXH3_64 (seed 0) of the key's bytes modulo N.
xxh3_mod() {
	"$PY" - "$@" <<'PYEOF'
import sys, xxhash
n = int(sys.argv[1])
for k in sys.argv[2:]:
    print(xxhash.xxh3_64_intdigest(k.encode(), seed=0) % n, k)
PYEOF
}

# consume_all TOPIC GROUP FORMAT: everything pending, one line per message.
consume_all() {
	mq-sub -g "$2" -F "$3" "$1"
}

@test "the XXH3-64 helper gives the published test vector" {
	# XXH3_64bits("") is 0x2D06800538D394C2: the reference used below is
	# the real hash, not a look-alike.
	run "$PY" -c 'import xxhash; print(hex(xxhash.xxh3_64_intdigest(b"")))'
	assert_success
	assert_output 0x2d06800538d394c2
}

@test "a key's partition is XXH3-64 of the key modulo the partition count" {
	local n key keys=() exp got
	for n in 4 7; do
		mq-topic create --partitions "$n" "t$n"
		mkgroup "t$n" g
		keys=()
		for key in user-{1..40} "" é ∑x 'a b' 'x=y'; do
			[[ -n $key ]] || continue
			keys+=("$key")
			mq-pub -q -k "$key" "t$n" "$key"
		done
		exp=$(xxh3_mod "$n" "${keys[@]}" | LC_ALL=C sort)
		got=$(consume_all "t$n" g '%p %s\n' | LC_ALL=C sort)
		assert_equal "$got" "$exp"
		# Every partition got at least one key: the test means something.
		assert_equal "$(cut -d' ' -f1 <<<"$got" | sort -u | wc -l)" "$n"
	done
}

@test "a key goes to the same partition in every process and publish" {
	mq-topic create --partitions 5 t
	mkgroup t g
	local r
	for r in 1 2 3 4 5 6; do
		mq-pub -q -k order-4711 t "m$r"
	done
	mq-pub -q -l -k order-4711 t < <(seq 7 20 | sed 's/^/m/')
	local exp
	exp=$(xxh3_mod 5 order-4711 | cut -d' ' -f1)
	run consume_all t g '%p\n'
	assert_success
	assert_equal "${#lines[@]}" 20
	assert_equal "$(sort -u <<<"$output")" "$exp"
	assert_equal "$(count_log t "$exp")" 20
}

@test "-p N picks the partition, whatever the key" {
	mq-topic create --partitions 3 t
	mkgroup t g
	local k
	for k in 0 1 2; do
		mq-pub -q -p "$k" t "a$k" "b$k"
		mq-pub -q -p "$k" -k some-key t "c$k"
	done
	for k in 0 1 2; do
		assert_equal "$(count_log t "$k")" 3
	done
	run consume_all t g '%p %s\n'
	assert_success
	assert_equal "$(LC_ALL=C sort <<<"$output" | tr '\n' ' ')" \
	    "0 a0 0 b0 0 c0 1 a1 1 b1 1 c1 2 a2 2 b2 2 c2 "
}

@test "-p out of range is refused with one line (64) and stores nothing" {
	mq-topic create --partitions 3 t
	local before
	before=$(spool_snapshot)
	run --separate-stderr mq-pub -p 3 t x
	assert_equal "$status" 64
	assert_one_line_error mq-pub
	assert_equal "$(spool_snapshot)" "$before"
}

@test "keyless messages are spread evenly: 800 over 4 partitions, 200 each" {
	mq-topic create --partitions 4 t
	mkgroup t g
	seq 800 | mq-pub -q -l t
	local k
	for k in 0 1 2 3; do
		assert_equal "$(count_log t "$k")" 200
		assert_equal "$(count_new t g "$k")" 200
	done
	# Arguments too, and a second process starting elsewhere: 3 + 3 + 2 + 2
	# in some order, never 4 on one partition.
	mq-topic create --partitions 4 u
	mq-pub -q u a b c d e f g h i j
	local counts
	counts=$(for k in 0 1 2 3; do count_log u "$k"; done | sort | tr '\n' ' ')
	assert_equal "$counts" "2 2 3 3 "
}

@test "messages of one key keep their publish order within their partition" {
	mq-topic create --partitions 4 t
	mkgroup t g
	local r key
	# Interleaved keys, in several processes and in batches.
	for r in 1 2 3 4 5; do
		for key in alpha beta gamma delta; do
			mq-pub -q -k "$key" t "$key $((r * 2 - 1))" "$key $((r * 2))"
		done
	done
	for key in alpha beta gamma delta; do
		seq 11 30 | sed "s/^/$key /" | mq-pub -q -l -k "$key" t
	done
	run consume_all t g '%p %o %k %s\n'
	assert_success
	assert_equal "${#lines[@]}" 120
	# Per key: one partition, the expected one, and in that partition the
	# sequence numbers rise with the publish order.
	for key in alpha beta gamma delta; do
		local exp parts order
		exp=$(xxh3_mod 4 "$key" | cut -d' ' -f1)
		parts=$(grep " $key $key " <<<"$output" | cut -d' ' -f1 | sort -u)
		assert_equal "$parts" "$exp"
		order=$(grep " $key $key " <<<"$output" | sort -n -k2,2 |
		    cut -d' ' -f5 | tr '\n' ' ')
		assert_equal "$order" "$(seq 1 30 | tr '\n' ' ')"
	done
	# The Seq headers in the log say the same.
	local f seqs=() bodies=()
	for f in "$MQ_SPOOL"/topics/t/p"$(xxh3_mod 4 alpha | cut -d' ' -f1)"/log/*; do
		[[ $(header_of "$f" Key) == alpha ]] || continue
		seqs+=("$(header_of "$f" Seq)")
	done
	assert_equal "${#seqs[@]}" 30
	local prev=-1 s
	for s in "${seqs[@]}"; do
		((s > prev)) || fail "Seq not increasing: $s after $prev"
		prev=$s
	done
}

@test "the example in mq-spool(5): alpha goes to 2 and beta to 1 of 4" {
	mq-topic create --partitions 4 t
	mq-pub -q -k alpha t x
	mq-pub -q -k beta t y
	assert_equal "$(count_log t 2)" 1
	assert_equal "$(count_log t 1)" 1
	assert_equal "$(xxh3_mod 4 alpha beta | tr '\n' ' ')" "2 alpha 1 beta "
}
