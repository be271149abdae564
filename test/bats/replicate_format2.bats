#!/usr/bin/env bats
# mq-replicate with topics of format 2 (mq-spool(5), Replication, format
# 2; mq-protocol(5), Format 2 partitions): a partition's log goes by
# position, as segments, a group's changes as K, L, A, C and D records;
# between two spools on this host over the ssh-style channel (--rsh env).

load helper
load replicate_helper

# drain SPOOL GROUP [TOPIC]: every message the group delivers there now
# (leases of 1 s over), sorted.
drain() {
	MQ_SPOOL=$1 mq-sub -g "$2" "${3:-t}" -t 1 | LC_ALL=C sort
}

# info_of SPOOL: per group, pending + in flight, delayed and dead, which a
# replica must have as its primary has them (a record held at the
# primary is in a claim of no lease there: pending).
info_of() {
	MQ_SPOOL=$1 mq-topic info --json t |
	    jq -c '[.groups[] | [.name, .pending + .inflight, .delayed, .dead]]'
}

# sent STDERR: the messages a push -v says it sent.
sent() {
	[[ $1 =~ sent\ [0-9]+\ records\ \(([0-9]+)\ messages ]] || return 1
	echo "${BASH_REMATCH[1]}"
}

setup_file() {
	export MQ_FORMAT=2
}

@test "format 2: a push sends the log and each group's changes; held records come back on the promoted replica, acked ones never" {
	pair
	mq-topic create --format 2 t
	mq-group create --lease 1s t g
	mq-group create --ordered t o
	mq-group create --filter '.n % 2 == 0' t even
	mq-group create t c
	seq 1 300 | awk '{ printf "{\"n\":%d}\n", $1 }' | mq-pub -l t >/dev/null
	mq-pub --delay 1h t '{"n":1000}' >/dev/null
	# g: 100 acked, 20 held (their lease runs out), one given back, one
	# rejected.
	mq-sub -g g t -n 100 >/dev/null
	mq-sub -g g t -n 20 --manual --lease 1s >/dev/null
	local over=$(($(now_ms) + 1100))
	run -0 mq-sub -g g --json t -n 2 --manual
	local r1 r2
	r1=$(sed -n 1p <<<"$output" | jq -r .receipt)
	r2=$(sed -n 2p <<<"$output" | jq -r .receipt)
	mq-ack -g g --nack t "$r1"
	mq-ack -g g --reject --reason "bad" t "$r2"
	# o: 7 acked one by one; even: 40 acked (filtered ones settled at
	# take); c: committed to 250.
	mq-sub -g o t -n 7 >/dev/null
	mq-sub -g even t -n 40 >/dev/null
	mq-ack -g c --commit 0:250 t
	run --separate-stderr push_ab -v
	assert_success
	assert_equal "$(sent "$stderr")" 301
	assert_equal "$(info_of "$B")" "$(info_of "$A")"
	# The delayed one is delayed there too.
	assert_equal "$(info_of "$B" | jq '[.[] | .[2]] | add')" 1
	assert_equal "$(MQ_SPOOL=$B mq-dlq list --json t)" "$(mq-dlq list --json t)"
	assert_equal "$(mq-dlq list --json t | jq -r '.[].reason')" rejected
	assert_equal "$(MQ_SPOOL=$B mq-dlq show t "$(mq-dlq list --json t |
	    jq -r '.[0].id')" | tail -1)" '{"n":122}'
	# The same records, byte for byte, in the same numbers.
	assert_equal "$(log_end t)" 301
	assert_equal "$(MQ_SPOOL=$B log_end t)" 301
	diff <(cat "$A"/topics/t/p0/log/* | grep -a '^{') \
	    <(cat "$B"/topics/t/p0/log/* | grep -a '^{')
	run -0 mq-replicate -s "$B" promote
	# A delivers the held ones again once their lease is over.
	wait_for past_ms "$over"
	local g
	for g in g o even c; do
		assert_equal "$(drain "$B" $g)" "$(drain "$A" $g)"
	done
	# g: the 20 held, then the 178 never taken; not the acked ones.
	assert_equal "$(drain "$B" g | wc -l)" 0
	assert_equal "$(MQ_SPOOL=$B mq-topic info --json t |
	    jq '[.groups[] | .pending] | add')" 0
}

@test "format 2: a drain on the replica after promote gives exactly what the primary had not settled" {
	pair
	mq-topic create --format 2 t
	mq-group create --lease 1s t g
	seq 1 1000 | mq-pub -l t >/dev/null
	mq-sub -g g t -n 600 >/dev/null
	mq-sub -g g t -n 50 --manual --lease 1h >/dev/null
	run -0 push_ab
	run -0 mq-replicate -s "$B" promote
	run -0 drain "$B" g
	assert_equal "$(wc -l <<<"$output")" 400
	assert_equal "$output" "$(seq 601 1000 | LC_ALL=C sort)"
}

@test "format 2: a second push sends only what came since, a third nothing" {
	pair
	mq-topic create --format 2 t
	mq-group create t g
	seq 1 500 | mq-pub -l t >/dev/null
	run --separate-stderr push_ab -v
	assert_equal "$(sent "$stderr")" 500
	seq 1 10 | mq-pub -l t >/dev/null
	mq-sub -g g t -n 5 >/dev/null
	run --separate-stderr push_ab -v
	assert_success
	assert_equal "$(sent "$stderr")" 10
	run --separate-stderr push_ab -v
	assert_success
	assert_equal "$(sent "$stderr")" 0
	assert_equal "$(MQ_SPOOL=$B count_log t)" 510
	assert_equal "$(info_of "$B")" "$(info_of "$A")"
}

@test "format 2: logs that went apart are never mixed: the sender says so and sends nothing of that partition" {
	pair
	mq-topic create --format 2 t
	mq-group create t g
	seq 1 5 | mq-pub -l t >/dev/null
	run -0 push_ab
	# Both publish at 5.
	seq 1 3 | mq-pub -l t >/dev/null
	MQ_SPOOL=$B mq-pub t "B's own" >/dev/null
	seq 4 6 | mq-pub -l t >/dev/null
	run --separate-stderr push_ab -v
	assert_success
	[[ $stderr == *"topic t partition 0 has other records on peer"*"than here before 6"* ]] ||
	    fail "$stderr"
	assert_equal "$(MQ_SPOOL=$B count_log t)" 6
	# Nor the changes of its records: B's g still has all six.
	mq-sub -g g t -n 3 >/dev/null
	run -0 push_ab
	run -0 drain "$B" g
	assert_equal "$(wc -l <<<"$output")" 6
	assert_equal "$(MQ_SPOOL=$B mq-sub -g g t -n 6 -t 1 | wc -l)" 0
	[[ $output == *"B's own"* ]] || fail "$output"
}

@test "format 2: a --follow push sends what is published as it is published" {
	pair
	mq-topic create --format 2 t
	mq-group create t g
	spawn "$TD/follow" mq-replicate -s "$A" push --follow --rsh env \
	    --remote-spool "$B"
	has_on_b() { [[ -d $B/topics/t ]] && (($(MQ_SPOOL=$B count_log t) == $1)); }
	seq 1 20 | mq-pub -l t >/dev/null
	wait_for has_on_b 20
	mq-pub t one more >/dev/null
	wait_for has_on_b 22
	mq-sub -g g t -n 22 >/dev/null
	b_drained() { [[ $(info_of "$B") == '[["g",0,0,0]]' ]]; }
	wait_for b_drained
	kill -- "-$SPAWNED"
}

@test "format 2: mq-pub --replicas waits until a peer has the records; without one it exits 69, stored" {
	pair
	mq-topic create --format 2 t
	mq-group create t g
	run -0 push_ab
	spawn "$TD/follow" mq-replicate -s "$A" push --follow --rsh env \
	    --remote-spool "$B"
	local pid=$SPAWNED
	run --separate-stderr mq-pub --replicas 1 t "kept twice"
	assert_success
	assert_equal "$(MQ_SPOOL=$B mq-sub -g g t -n 1)" "kept twice"
	kill -- "-$pid"
	wait_for exited "$pid"
	run --separate-stderr mq-pub --replicas 1 --replica-timeout 0.5 t "kept once"
	assert_equal "$status" 69
	assert_equal "$(count_log t)" 2
}

@test "format 2: kill -9 of the receiver in the middle of a push, then a push: every record there once, in order" {
	pair
	mq-topic create --format 2 t
	mq-group create t g
	seq 1 30000 | awk '{ printf "%s %0512d\n", $1, 0 }' | mq-pub -l t >/dev/null
	# A kill at a moment chance picks, once B has some of it (the push
	# may have ended by then).
	spawn "$TD/push" mq-replicate -s "$A" push --rsh env --remote-spool "$B"
	local pid=$SPAWNED
	some_on_b() { [[ -d $B/topics/t/p0/log ]] &&
	    (($(MQ_SPOOL=$B count_log t) >= 2048)); }
	wait_for -t 30 some_on_b
	pkill -9 -f "serve --stdio -s $B" || true
	wait_for exited "$pid"
	# And one that surely falls inside a push: the receiver is waiting
	# for replicate/lock-recv, held here, when it is killed.
	seq 30001 31000 | awk '{ printf "%s %0512d\n", $1, 0 }' | mq-pub -l t >/dev/null
	# (It holds the lock while its standard input is open.)
	spawn "$TD/hold" bash -c 'sleep 3600 | python3 "$1" hold "$2"' _ \
	    "$BATS_TEST_DIRNAME/../shared/lockprobe.py" "$B/replicate/lock-recv"
	local holder=$SPAWNED
	wait_for grep -qx held "$TD/hold"
	spawn "$TD/push2" mq-replicate -s "$A" push --rsh env --remote-spool "$B"
	pid=$SPAWNED
	serving() { pgrep -f "serve --stdio -s $B" >/dev/null; }
	wait_for serving
	pkill -9 -f "serve --stdio -s $B"
	wait_for exited "$pid"
	kill -- "-$holder"
	wait_for exited "$holder"
	(($(MQ_SPOOL=$B count_log t) < 31000)) || fail "the push ended first"
	run -0 push_ab
	assert_equal "$(MQ_SPOOL=$B count_log t)" 31000
	assert_equal "$(MQ_SPOOL=$B log_end t)" 31000
	assert_equal "$(ls "$B"/topics/t/p0/tmp | grep -cv '^\.merge$' || true)" 0
	run -0 mq-replicate -s "$B" promote
	run -0 drain "$B" g
	assert_equal "$(wc -l <<<"$output")" 31000
	assert_equal "$(cut -d' ' -f1 <<<"$output" | sort -n | uniq | wc -l)" 31000
}

# lag_of SPOOL: the first peer's lag in status --json: records, whether
# any bytes, and its age in whole seconds.
lag_of() {
	mq-replicate -s "$1" status --json |
	    jq -r '.peers[0] | "\(.lag_records) \(.lag_bytes > 0) \(.lag_seconds | floor)"'
}

@test "format 2: status counts the log records a peer lacks, their bytes and age, from where it said its logs end; mq-stat alerts; forget drops the file" {
	pair
	mq-topic create --format 2 t
	mq-topic create --format 2 --partitions 2 u
	mq-group create t g
	seq 1 10 | mq-pub -l t >/dev/null
	run -0 push_ab
	assert_equal "$(lag_of "$A")" "0 false 0"
	local id
	id=$(cat "$B/ID")
	grep -qx 't 0 10 -' "$A/replicate/peers/$id.ends" ||
	    fail "$(cat "$A/replicate/peers/$id.ends")"
	# 5 more in t, 6 in u (never sent: each partition counts whole),
	# and 3 acks: the journal records they make.
	local t0 j0 j
	t0=$(now_ms)
	seq 1 5 | mq-pub -l t >/dev/null
	seq 1 6 | mq-pub -l u >/dev/null
	j0=$(wc -l <"$A/journal")
	mq-sub -g g t -n 3 >/dev/null
	j=$(($(wc -l <"$A/journal") - j0 + 11))
	((j > 11)) || fail "no journal record for the acks"
	assert_equal "$(MQ_SPOOL=$B count_log t)" 10
	# Its age is the oldest record's: wait until it is past a second.
	wait_for past_ms $((t0 + 1200))
	run -0 lag_of "$A"
	[[ $output =~ ^$j\ true\ ([0-9]+)$ ]] || fail "$output, not $j"
	local age=${BASH_REMATCH[1]} now
	now=$(now_ms)
	((age >= 1 && age <= (now - t0) / 1000)) || fail "age $age"
	run -0 mq-replicate -s "$A" status
	assert_line --index 1 --regexp " $j +[0-9]+\.[0-9]{3}$"
	run -1 mq-stat --check --warn "lag>$((j - 1))"
	assert_output --partial "peer $id lag=$j"
	run -0 mq-stat --check --warn "lag>$j"
	run -0 push_ab
	assert_equal "$(lag_of "$A")" "0 false 0"
	run -0 mq-stat --check --warn 'lag>0'
	# A damaged file is named, not believed.
	printf 't 0 x -\n' >"$A/replicate/peers/$id.ends"
	run --separate-stderr mq-replicate -s "$A" status
	assert_equal "$status" 65
	[[ $stderr == *"replicate/peers/$id.ends: "* ]] || fail "$stderr"
	run -0 push_ab
	assert_equal "$(lag_of "$A")" "0 false 0"
	run -0 mq-replicate -s "$A" forget "$id"
	[[ ! -e $A/replicate/peers/$id.ends ]] || fail "ends file left"
}
