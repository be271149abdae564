#!/usr/bin/env bats
# What only GlusterFS has, on a volume mounted twice (gluster.bash): a
# brick killed under a publish loop, the volume profile's count of fsyncs,
# a mount with direct-io-mode.  The mount GL_M1 is host 1, GL_M2 host 2;
# each test has its own spool on the volume, S1 as host 1 sees it and S2 as
# host 2 does.  The checks every shared file system must pass are in
# crosshost.bats.  Run as root; without root or GlusterFS the tests are
# skipped, but fail when CI is set.
#
#   PATH=$PWD/bin:$PATH bats --tap test/shared/gluster.bats

load gluster

setup_file() {
	gl_up
}

teardown_file() {
	gl_down
}

setup() {
	gl_setup
}

teardown() {
	# Kills what the test spawned (helper.bash).
	helper_teardown
	# A brick the test stopped comes back, whatever the test did.
	if [[ -f $TD/.brick-killed ]]; then
		gl_brick_restart || echo "# brick not back: $(gl_bricks)" >&3
	fi
	return 0
}

# all_delivered, done_or_gone, pub_singles, spawn_fn, fail_with, lines,
# ids, queue_left, note: checks.bash.

@test "a brick killed during a publish loop: every publish delivered" {
	local n=100
	mkgroup t g
	spawn_fn "$TD/l1" pub_singles "$S1" t a "$n" "$TD/pub"
	local pub=$SPAWNED
	# A consumer on host 2 takes them as they come, through the kill.
	spawn "$TD/c2" mq-sub -s "$S2" -f -t 30 -g g -F '%i %a\n' t
	local c2=$SPAWNED
	wait_for -t 60 has_lines 20 "$TD/pub"
	gl_brick_kill 1
	wait_for -t 180 exited "$pub"
	note "published $(lines "$TD/pub") of $n with a brick down; failed: $(head -5 "$TD/pub.fail" 2>/dev/null)"
	gl_brick_restart || fail "brick 1 does not come back: $(gl_bricks)"
	wait_for -t 60 done_or_gone "$(lines "$TD/pub")" "$TD/c2" -- "$c2" || true
	stop_all "$c2"
	# What the consumer did not get, a fresh one on host 2 does.
	run --separate-stderr mq-sub -s "$S2" -g g -F '%i %a\n' t
	echo "$output" >"$TD/rest"
	note "the consumer got $(lines "$TD/c2"), then $(ids "$TD/rest" | wc -l) more; $(ids "$TD/c2" "$TD/rest" | uniq -d | wc -l) repeats"
	all_delivered "$TD/pub" "$TD/c2" "$TD/rest"
	assert_equal "$(queue_left "$S1" t g)" 0
	assert_equal "$(count_entries "$S1/topics/t/p0/dlq/g")" 0
}

# profile_counting PROBE: the volume profile counts: an fsynced write of
# PROBE shows as an FSYNC.
profile_counting() {
	dd if=/dev/zero of="$1" bs=1 count=1 conv=fsync status=none
	gl_cli volume profile "$GL_VOL" info cumulative |
	    awk '$NF == "FSYNC" && $(NF - 1) > 0 { found = 1 } END { exit !found }'
}

@test "--sync=batch reaches the bricks: the volume profile counts an FSYNC per message file (format 2: per segment) and FSYNCDIRs" {
	# syncfs(2) on the FUSE mount reaches no brick: before the shared
	# paths a batch of 40 showed 1 FSYNC (the head's).  8 batches of 5
	# messages, each one publish, so one segment each in format 2.
	local b=8 per=5 n=40 want wantdirs fsyncs dirs writes k
	mkgroup t g
	# Format 1: a message file each; each batch's log/ and the group's
	# new/ (and delay/).  Format 2: each batch's segment, written in tmp/
	# and fdatasynced before its link, and the head twice (its next, then
	# its committed): 3 a batch, 2 without the segment's; log/ each.
	want=$n wantdirs=$((2 * b))
	is_format2 t && want=$((3 * b)) wantdirs=$b
	gl_cli volume profile "$GL_VOL" start >/dev/null
	# It starts counting a little after it says it started.
	wait_for -t 30 profile_counting "$GL_M1/probe.$BATS_TEST_NUMBER"
	count_fop() { awk -v f="$1" '$NF == f { print $(NF - 1); exit }' "$TD/profile"; }
	# The bricks' counts reach the profile a while after the calls (on a
	# volume that has worked a while, seconds): it is read until it
	# counts the FSYNCs wanted, or 60 s have passed.
	profile_read() {
		gl_cli volume profile "$GL_VOL" info cumulative >"$TD/profile"
		fsyncs=$(count_fop FSYNC) dirs=$(count_fop FSYNCDIR) writes=$(count_fop WRITE)
		((${fsyncs:-0} >= want && ${dirs:-0} >= wantdirs))
	}
	gl_cli volume profile "$GL_VOL" info clear >/dev/null
	for ((k = 1; k <= b; k++)); do
		mq-pub -s "$S1" -q t $(seq -f "$k-%g" "$per")
	done
	local synced=0
	wait_for -t 60 profile_read && synced=1
	gl_cli volume profile "$GL_VOL" stop >/dev/null
	note "first brick: ${fsyncs:-0} FSYNC, ${dirs:-0} FSYNCDIR, ${writes:-0} WRITE for $n messages in $b batches"
	((${fsyncs:-0} >= want)) || fail_with "only ${fsyncs:-0} FSYNC for $n messages in $b batches (want $want)" "$TD/profile"
	((${dirs:-0} >= wantdirs)) || fail_with "only ${dirs:-0} FSYNCDIR for $b batches (want $wantdirs)" "$TD/profile"
	((synced)) || fail_with "the profile did not count what it was waiting for" "$TD/profile"
	assert_equal "$(MQ_SPOOL=$S1 count_log t)" "$n"
	run -0 mq-sub -s "$S2" -g g -t 0 t
	assert_equal "$(lines <(echo "$output"))" "$n"
}

@test "a mount that cannot map files (direct-io-mode=enable): publishing works, and the counters say they are off" {
	local m3=$GL_DIR/m3.$BATS_TEST_NUMBER
	mkdir -p "$m3"
	gl_ns mount -t glusterfs -o "direct-io-mode=enable,log-file=$GL_DIR/log/m3.log" \
	    "127.0.0.1:/$GL_VOL" "$m3" || fail "mount with direct-io-mode=enable failed"
	echo "$m3" >>"$TD/.mounts"
	mkgroup t g
	run --separate-stderr mq-pub -s "$m3/s$BATS_TEST_NUMBER" t hello
	assert_success
	[[ $stderr == *"not counted for mq-stat on this host: cannot map the counters"* ]] ||
	    fail "no word that the counters are off: '$stderr'"
	run -0 mq-sub -s "$S2" -g g -t 0 t
	assert_output hello
}
