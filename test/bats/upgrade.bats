#!/usr/bin/env bats
# mq-topic upgrade (mq-spool(5), SEGMENTED STORAGE, Upgrade): a topic of
# format 1 converted into format 2 with every group's state kept, what
# the tools deliver from it after, and the refusals.  A kill -9 at random
# points of the conversion and a rerun is test/slow/upgrade.bats.

load helper
load upgrade_helper

# Topics are made of format 1, what an upgrade converts, whatever
# MQ_TEST_FORMAT says; one of format 2 says so (--format 2).
MQ_FILE_FORMAT=1

# topic_g [CREATE-OPTION...] -- MESSAGE...: topic t made with the options,
# its group g, and the messages published into it.
topic_g() {
	local -a opts=()
	while [[ $1 != -- ]]; do
		opts+=("$1")
		shift
	done
	shift
	mq-topic create "${opts[@]}" t
	mkgroup t g
	mq-pub -q t "$@"
}

# upgrade_noted TOPIC: nothing to convert: exit 0, and a note saying so.
upgrade_noted() {
	run --separate-stderr mq-topic upgrade "$1"
	assert_success
	assert_equal "$stderr" "mq-topic: topic '$1' is already of format 2"
}

# upgrade_ok TOPIC: upgraded, quietly, and of format 2 after.
upgrade_ok() {
	run --separate-stderr mq-topic upgrade "$1"
	assert_success
	assert_equal "$stderr" ""
	is_format2 "$1"
}

@test "upgrade: pending, in flight, delayed, dead, acked, ordered and exactly-once groups of a keyed topic keep their state" {
	mq-topic create --partitions 3 t
	local g
	for g in plain flight later once; do mkgroup t "$g"; done
	mkgroup t dead --max-attempts 1
	mkgroup t ord --ordered
	mkgroup t once2 --exactly-once
	local n
	for n in $(seq 1 30); do echo "m$n"; done >"$TD/all"
	# Keyed: a key's messages share a partition.
	for n in $(seq 1 30); do mq-pub -q -k "k$((n % 4))" t "m$n"; done
	mq-pub -q -i idem-1 t dup1
	echo dup1 >>"$TD/all"
	mq-pub -q --delay 1h t late1

	mq-sub -g plain -n 5 t >"$TD/plain.got"
	mq-sub --manual -n 3 --lease 1h -F '%r\n' -g flight t >"$TD/flight.r"
	mapfile -t late < <(mq-sub --manual -n 2 -F '%r\n' -g later t)
	mq-ack -g later --nack --delay 1h t "${late[@]}"
	run --separate-stderr mq-sub --backoff 0 --exec '
		x=$(cat); case $x in m3|m7) exit 4;; esac; echo "$x" >>"$TD/dead.got"' \
	    -g dead t
	assert_equal "$status" 75
	mq-sub -g ord -n 4 t >"$TD/ord.got"
	mq-sub -g once2 --exactly-once -n 6 t >"$TD/once2.got"

	figures t >"$TD/before"
	run -0 cat "$TD/before"
	assert_line 'plain 26 0 1 0'
	assert_line 'flight 28 3 1 0'
	assert_line 'later 29 0 3 0'
	assert_line 'dead 0 0 1 2'
	assert_line 'ord 27 0 1 0'
	assert_line 'once2 25 0 1 0'
	local -a committed
	for n in 0 1 2; do committed[n]=$(head_field t committed "$n"); done

	upgrade_ok t
	figures t >"$TD/after"
	run -0 diff "$TD/before" "$TD/after"
	# The log as segments holding every record, the message files gone,
	# each group's cursor at its partition's end.
	local total=0
	for n in 0 1 2; do
		run -0 segments_tile t "$n"
		assert_equal "$output" "${committed[n]}"
		total=$((total + output))
		for g in plain flight later dead ord once once2; do
			assert_equal "$(cursor_of t "$g" "$n")" "${committed[n]}"
		done
		assert_equal "$(head_field t committed "$n")" "${committed[n]}"
	done
	assert_equal "$total" 32
	run -0 mq-topic info t
	assert_line 'format: 2'

	# What each group had pending comes, once; nothing it acked.
	mq-sub -g plain t >"$TD/plain.after"
	run -0 sort -u "$TD/plain.got" "$TD/plain.after"
	assert_equal "$output" "$(sorted_lines "$TD/all")"
	assert_equal "$(($(wc -l <"$TD/plain.got") + $(wc -l <"$TD/plain.after")))" 31
	# In flight before: acked after with the receipts given before.
	mapfile -t r <"$TD/flight.r"
	run -0 mq-ack -g flight t "${r[@]}"
	mq-sub -g flight t >"$TD/flight.after"
	assert_equal "$(wc -l <"$TD/flight.after")" 28
	run -0 mq-sub -g once t
	assert_equal "${#lines[@]}" 31
	run -0 sort "$TD/once2.got" <(mq-sub -g once2 --exactly-once t)
	assert_equal "$output" "$(sorted_lines "$TD/all")"
	run -0 sort "$TD/ord.got" <(mq-sub -g ord t)
	assert_equal "$output" "$(sorted_lines "$TD/all")"
	run -0 mq-sub -g later t
	assert_equal "${#lines[@]}" 29
	# Dead letters keep their copies, and redrive from them.
	run -0 mq-dlq -g dead count t
	assert_output 2
	run -0 mq-dlq -g dead redrive -q t
	run -0 mq-sub -g dead t
	run -0 sort <<<"$output"
	assert_output "$(printf 'm3\nm7\n')"
	run -0 figures t
	assert_line 'plain 0 0 1 0'
	assert_line 'later 0 0 3 0'
	assert_line 'dead 0 0 1 0'

	# A repeat of an idempotency key is still one; new messages come once.
	mq-pub -q -i idem-1 t dup1
	mq-pub -q -k k1 t new1
	for g in plain flight later dead ord once; do
		run -0 mq-sub -g "$g" t
		assert_output new1
	done
	run -0 mq-sub -g once2 --exactly-once t
	assert_output new1
	run -1 mq-sub -g plain t
	# Nothing of the conversion is left in tmp/ (.merge is the merges'
	# count, which the publishes since made).
	for n in 0 1 2; do
		assert_equal "$(find "$MQ_SPOOL/topics/t/p$n/tmp" -mindepth 1 \
		    ! -name .merge -printf x | wc -c)" 0
	done
}

@test "upgrade: the same bytes: ids, headers and bodies as before, and a signed topic's signatures still verify" {
	mq-pub --keygen "$TD/pub.key" >/dev/null
	mq-pub --pubkey "$TD/pub.key" >"$TD/signers"
	mq-topic create --signers "$TD/signers" t
	mkgroup t g
	mkgroup t h
	mq-pub -q --sign "$TD/pub.key" -H 'X-Kind: first' t one
	printf 'two\nlines\n' | mq-pub -q --sign "$TD/pub.key" -H 'X-Kind: second' t
	local f
	for f in "$MQ_SPOOL"/topics/t/p0/log/*; do cat "$f"; done >"$TD/files"
	upgrade_ok t
	# The records' header blocks and bodies are the message files.
	"$PY" - "$MQ_SPOOL/topics/t/p0/log/00000000000000000000" "$TD/files" <<'EOF'
import sys
seg = open(sys.argv[1], 'rb').read()
lines = seg.split(b'\n', 1)
rest, out = lines[1], b''
while rest:
    frame, rest = rest.split(b'\n', 1)
    _, seq, h, b, _ = frame.split(b' ')
    n = int(h) + int(b)
    out += rest[:n]
    rest = rest[n + 1:]
assert out == open(sys.argv[2], 'rb').read(), (out, open(sys.argv[2], 'rb').read())
EOF
	run -0 mq-sub -g g t
	assert_output "$(printf 'one\ntwo\nlines')"
	run -0 mq-sub -F '%{X-Kind}h\n' -g h t
	assert_output "$(printf 'first\nsecond')"
}

@test "upgrade: a sealed topic's bodies stay sealed and open with the key; a filtered group keeps filtering" {
	local pub
	pub=$(mq-sub --keygen "$TD/c.key")
	mq-topic create t
	mq-topic key add t "$pub"
	mkgroup t g
	mkgroup t f --group-match 'X-Kind=yes'
	mq-pub -q -H 'X-Kind: yes' t secret1
	mq-pub -q -H 'X-Kind: no' t secret2
	upgrade_ok t
	! grep -q secret "$MQ_SPOOL"/topics/t/p0/log/*
	mq-pub -q -H 'X-Kind: no' t secret3
	mq-pub -q -H 'X-Kind: yes' t secret4
	run -0 mq-sub --key "$TD/c.key" -g g t
	assert_output "$(printf 'secret1\nsecret2\nsecret3\nsecret4')"
	run -0 mq-sub --key "$TD/c.key" -g f t
	assert_output "$(printf 'secret1\nsecret4')"
}

@test "upgrade: mq-stat figures and mq-topic info counts are the same before and after" {
	mq-topic create --partitions 2 t
	mkgroup t a
	mkgroup t b
	mq-pub -q t $(seq 1 40)
	mq-sub -g a -n 15 t >/dev/null
	mq-sub --manual --lease 1h -n 4 -g b t >/dev/null
	figures t >"$TD/before"
	mq-topic info t | sed -n '/^GROUP/,$p' >"$TD/info.before"
	upgrade_ok t
	run -0 diff "$TD/before" <(figures t)
	run -0 diff "$TD/info.before" <(mq-topic info t | sed -n '/^GROUP/,$p')
	run -0 mq-topic info t
	assert_line --regexp '^0 +20 +20 '
	assert_line --regexp '^1 +20 +20 '
}

@test "upgrade: retention removes the upgraded segments as it removed the messages; a group made after reads from its start" {
	topic_g --retention 1h -- a b c
	mq-sub -g g t >/dev/null
	upgrade_ok t
	local seg=$MQ_SPOOL/topics/t/p0/log/00000000000000000000
	# The segment's time is its last message's publish.
	local pub
	pub=$(stat -c %Y "$seg")
	(($(date +%s) - pub < 60))
	touch -d '2 hours ago' "$seg"
	run -0 mq-topic gc t
	[[ ! -e $seg ]]
	mq-pub -q t d
	run -0 mq-sub -g g t
	assert_output d
	run -0 mq-sub -g late --from-start t
	assert_output d
}

@test "upgrade: a pending message whose file format 1 retention removed is delivered, and peeked at, from its name" {
	topic_g --retention 1h -- old
	local now
	now=$(date +%s)
	MQ_NOW=$((now + 7200)) mq-topic gc t
	assert_equal "$(count_entries "$MQ_SPOOL/topics/t/p0/log")" 0
	mq-pub -q t new
	upgrade_ok t
	run -0 figures t
	assert_output 'g 2 0 0 0'
	run -0 mq-stat --peek t g
	assert_output "$(printf 'old\nnew')"
	run -0 mq-sub -g g t
	assert_output "$(printf 'old\nnew')"
}

@test "upgrade: a topic of format 2 is left as it is: exit 0 and a note" {
	topic_g --format 2 -- a
	local snap
	snap=$(spool_snapshot "$MQ_SPOOL/topics")
	upgrade_noted t
	assert_equal "$(spool_snapshot "$MQ_SPOOL/topics")" "$snap"
	run -0 mq-sub -g g t
	assert_output a
}

@test "upgrade: refusals: no topic 66, a bad name 64, no operand 64, a read-only topic 77, a replicating spool 69; nothing changed" {
	topic_g -- a b
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-topic upgrade nosuch
	assert_equal "$status" 66
	assert_one_line_error mq-topic
	run --separate-stderr mq-topic upgrade '../t'
	assert_equal "$status" 64
	assert_one_line_error mq-topic
	run --separate-stderr mq-topic upgrade
	assert_equal "$status" 64
	run --separate-stderr mq-topic upgrade t u
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot)" "$snap"

	# Read-only: for root the mode bits do not stop a write, a read-only
	# mount does.
	if [[ $(id -u) == 0 ]]; then
		mount --bind "$MQ_SPOOL" "$MQ_SPOOL" && echo "$MQ_SPOOL" >>"$TD/.mounts"
		mount -o remount,bind,ro "$MQ_SPOOL"
		run --separate-stderr mq-topic upgrade t
		umount "$MQ_SPOOL"
		assert_equal "$status" 77
	else
		chmod a-w "$MQ_SPOOL/topics/t" "$MQ_SPOOL/topics/t/p0/log"
		run --separate-stderr mq-topic upgrade t
		chmod u+w "$MQ_SPOOL/topics/t" "$MQ_SPOOL/topics/t/p0/log"
		assert_equal "$status" 77
	fi
	assert_one_line_error mq-topic
	assert_equal "$(spool_snapshot)" "$snap"

	# A spool with a replication peer: replication refuses format 2.
	mkdir -p "$MQ_SPOOL/replicate/peers"
	: >"$MQ_SPOOL/replicate/peers/0123456789abcdef0123456789abcdef"
	snap=$(spool_snapshot)
	run --separate-stderr mq-topic upgrade t
	assert_equal "$status" 69
	assert_one_line_error mq-topic
	[[ $stderr == *replicat* ]]
	assert_equal "$(spool_snapshot)" "$snap"
	rm "$MQ_SPOOL/replicate/peers/0123456789abcdef0123456789abcdef"
	echo x >"$MQ_SPOOL/replicate/seen"
	run --separate-stderr mq-topic upgrade t
	assert_equal "$status" 69
	rm "$MQ_SPOOL/replicate/seen"
	upgrade_ok t
	run -0 mq-sub -g g t
	assert_output "$(printf 'a\nb')"
}

@test "upgrade: a publisher that had the topic open as format 1 across the switch exits 75 and publishes nothing" {
	topic_g -- a
	# mq-pub -l opens the topic once, then publishes each line it reads.
	mkfifo "$TD/in"
	exec 4<>"$TD/in"
	spawn "$TD/pub" sh -c 'exec mq-pub -l t <"$1"' sh "$TD/in"
	echo b >&4
	wait_for grep -q . "$TD/pub"
	upgrade_ok t
	echo c >&4
	exec 4>&-
	local rc=0
	wait "$SPAWNED" || rc=$?
	assert_equal "$rc" 75
	grep -q 'upgraded to format 2' "$TD/pub.err"
	run -0 mq-sub -g g t
	assert_output "$(printf 'a\nb')"
	mq-pub -q t c
	run -0 mq-sub -g g t
	assert_output c
}

@test "upgrade: two upgrades at once: one converts, the other finds it done; every message once" {
	mq-topic create --partitions 2 t
	mkgroup t g
	seq 1 3000 | mq-pub -q -l t
	spawn "$TD/one" mq-topic upgrade t
	local first=$SPAWNED
	spawn "$TD/two" mq-topic upgrade t
	local second=$SPAWNED
	# wait in this shell: run's subshell has no children to wait for.
	wait "$first"
	wait "$second"
	is_format2 t
	# At most one note, from the one that found it converted.
	(($(cat "$TD/one.err" "$TD/two.err" | wc -l) <= 1))
	run -0 mq-sub -g g t
	run -0 sort -n <<<"$output"
	assert_equal "$output" "$(seq 1 3000)"
}

@test "upgrade: what a run killed before the switch left is repaired: a damaged segment, tmp/ names, stale cursors" {
	topic_g -- a b c
	mq-sub -g g -n 1 t >/dev/null
	local p=$MQ_SPOOL/topics/t/p0
	mkdir -p "$p/tmp"
	echo junk >"$p/tmp/00000000000000000000"
	echo 'mq-segment 2 first=' >"$p/log/00000000000000000001"
	printf 'mq-cursor 2 next=00000000000000000000 sum=00000000\n' >"$p/g/g/cursor"
	# Format 1 reads none of it.
	run -0 mq-sub -g g -n 1 t
	assert_output b
	upgrade_ok t
	assert_equal "$(ls -A "$p/tmp")" ""
	assert_equal "$(ls "$p/log")" 00000000000000000000
	assert_equal "$(cursor_of t g)" 3
	run -0 mq-sub -g g t
	assert_output c
}

@test "upgrade: a run killed after the switch is finished by the next: the log's message files go, with a note" {
	topic_g -- a b
	local p=$MQ_SPOOL/topics/t/p0 f
	mkdir "$TD/keys"
	cp -a "$p"/log/* "$TD/keys"
	upgrade_ok t
	cp -a "$TD/keys"/* "$p/log"
	for f in "$TD"/keys/*; do [[ -e $p/log/${f##*/} ]]; done
	upgrade_noted t
	assert_equal "$(ls "$p/log")" 00000000000000000000
	run -0 mq-sub -g g t
	assert_output "$(printf 'a\nb')"
}

@test "upgrade: --help and the completion name it" {
	run -0 mq-topic --help
	assert_output --partial 'upgrade TOPIC'
	run -0 completions _mq_topic mq-topic up
	assert_output upgrade
}
