#!/usr/bin/env bats
# mq-topic upgrade (mq-spool(5), SEGMENTED STORAGE, Upgrade) under
# SIGKILL at random points, then a rerun.  About 40 seconds, so run once
# by make check-slow (in check-all), not again under the sanitizers;
# test/bats/upgrade.bats tests what a killed run leaves on its own.

load ../bats/helper
load ../bats/upgrade_helper
# Topics of format 1: what an upgrade converts, whatever MQ_TEST_FORMAT says.
MQ_FILE_FORMAT=1

# kill_at TOPIC MICROSECONDS ROUND: an upgrade of TOPIC killed after a
# random part of MICROSECONDS; counts in KILLS the kills that left it of
# format 1.  The wait is sleep(1)'s, whose start costs a millisecond, not
# an interpreter's tens that would push most kills past the switch.
kill_at() {
	local us=$((RANDOM * $2 / 32768))
	spawn "$TD/up.$3" mq-topic upgrade "$1"
	sleep "$((us / 1000000)).$(printf '%06d' $((us % 1000000)))"
	kill -9 "$SPAWNED" 2>/dev/null || true
	wait_for exited "$SPAWNED"
	is_format2 "$1" || KILLS=$((KILLS + 1))
}

@test "upgrade: kill -9 at random points, then a rerun: every message exactly once, each group's state kept" {
	mq-topic create --partitions 2 t
	mkgroup t a
	mkgroup t b
	mkgroup t c
	# Enough messages for several segments a partition.
	seq 1 8000 | mq-pub -q -l t
	mq-sub -g a -n 2000 t >"$TD/a.first"
	mq-sub --manual --lease 1h -F '%r\n' -n 7 -g c t >"$TD/c.r"
	cp -a "$MQ_SPOOL" "$TD/orig"
	# How long a whole run takes here: the kills fall inside it.
	local t0 d
	MQ_SPOOL=$TD/orig.run
	cp -a "$TD/orig" "$MQ_SPOOL"
	t0=${EPOCHREALTIME/./}
	mq-topic upgrade t
	d=$((${EPOCHREALTIME/./} - t0))
	KILLS=0
	local round n last
	for round in 1 2 3 4 5; do
		export MQ_SPOOL=$TD/spool.$round
		cp -a "$TD/orig" "$MQ_SPOOL"
		cp "$TD/a.first" "$TD/a.got"
		last=8000
		# The first round's kill within the first quarter of a run:
		# before the switch, which ends the run's writing.
		kill_at t $((round == 1 ? d / 4 : d)) "$round.1"
		if ! is_format2 t; then
			# Format 1 works between the runs, and what it does
			# meanwhile is in the next run's segments and cursors.
			seq 8001 8100 | mq-pub -q -l t
			last=8100
			mq-sub -g a -n 40 t >>"$TD/a.got"
			kill_at t "$d" "$round.2"
		fi
		figures t >"$TD/before"
		run --separate-stderr mq-topic upgrade t
		assert_success
		is_format2 t
		run -0 diff "$TD/before" <(figures t)
		for n in 0 1; do
			run -0 segments_tile t "$n"
			assert_equal "$output" "$(head_field t committed "$n")"
			assert_equal "$(ls -A "$MQ_SPOOL/topics/t/p$n/tmp")" ""
			assert_equal "$(find "$MQ_SPOOL/topics/t/p$n/log" -name '*.*' | wc -l)" 0
		done
		mq-sub -g a t >>"$TD/a.got"
		run -0 sort -n "$TD/a.got"
		assert_equal "$output" "$(seq 1 "$last")"
		run -0 mq-sub -g b t
		run -0 sort -n <<<"$output"
		assert_equal "$output" "$(seq 1 "$last")"
		mapfile -t r <"$TD/c.r"
		run -0 mq-ack -g c t "${r[@]}"
		mq-sub -g c t >"$TD/c.got"
		run -0 sort -u "$TD/c.got"
		assert_equal "${#lines[@]}" $((last - 7))
		assert_equal "$(wc -l <"$TD/c.got")" $((last - 7))
		rm -rf "$MQ_SPOOL"
	done
	# Some kills fell before the switch (most fall there).
	((KILLS > 0))
}
