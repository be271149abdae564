#!/usr/bin/env bats
# Format 2 (mq-spool(5), SEGMENTED STORAGE) under SIGKILL at random:
# publishers and consumers, then consumers alone while they feed and
# claim.  About two minutes, so run once by make check-slow (in
# check-all), not again under the sanitizers; test/bats/format2.bats
# tests each crash point on its own.

load ../bats/helper
load ../bats/torture

@test "format 2: crash safety, kill -9 producers and consumers at random; nothing acked is lost, nothing half-written is delivered" {
	export MQ_FORMAT=2 CRASH_ROUNDS=${CRASH_ROUNDS:-12}
	crash_torture
	# The log is segments: fewer files than messages.
	(($(count_entries "$MQ_SPOOL/topics/t/p0/log") < $(count_log t)))
}

@test "format 2: consumers killed at random while they feed and claim: every message delivered, none lost, the queue ends empty" {
	mq-topic create --format 2 t
	mkgroup t g --lease 1
	seq 20000 | mq-pub -q -l t
	local r pid
	for r in $(seq 12); do
		spawn "$TD/d.$r.1" mq-sub -f --lease 1 -g g t
		local a=$SPAWNED
		spawn "$TD/d.$r.2" mq-sub -f --lease 1 -g g t
		local b=$SPAWNED
		sleep "0.$(printf '%03d' $((RANDOM % 300)))"
		for pid in $a $b; do
			kill -9 -- "-$pid" 2>/dev/null || true
			wait_for -t 30 pgroup_gone "$pid"
		done
	done
	drain() {
		mq-sub -g g t >>"$TD/d.drain" || true
		group_empty t g
	}
	wait_for -t 60 drain
	# Every message at least once (a kill between a print and its ack
	# delivers it again), nothing that was not published.
	cat "$TD"/d.* | grep -x '[0-9]*' | sort -n | uniq >"$TD/seen"
	cmp "$TD/seen" <(seq 20000)
	assert_equal "$(cursor_of t g)" 20000
}
