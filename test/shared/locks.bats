#!/usr/bin/env bats
# Lock waits and dead lock holders on a shared file system (issue 27,
# mq-spool(5) SHARED FILE SYSTEMS, mq(7) Sharing a spool), on the harness
# fs.bash picks (MQ_FS, or NAME in locks-NAME.bats, a symbolic link to
# this file): it provides fs_up and fs_down (per file), fs_setup (per
# test: TD, S1 and S2, this test's spool as host 1 and host 2 see it, M1
# and M2 their mounts), fs_kill_client N (kill -9 of host N's FUSE client:
# its mount goes dead), fs_remount N, FS_DEAD_BOUND, the seconds within
# which the file system gives up the locks of a host whose client was
# killed, and fs_kill_ready, which waits until that bound holds.  Run as
# root:
#
#   PATH=$PWD/bin:$PATH bats --tap test/shared/locks.bats
#   PATH=$PWD/bin:$PATH bats --tap test/shared/locks-moosefs.bats

load fs

PROBE=$BATS_TEST_DIRNAME/lockprobe.py

setup_file() {
	fs_up
}

teardown_file() {
	fs_down
}

setup() {
	fs_setup
}

teardown() {
	helper_teardown
	# A client the test killed comes back for the next test.
	if [[ -f $TD/.client-killed ]]; then
		fs_remount "$(cat "$TD/.client-killed")" || echo "# mount not back" >&3
	fi
	return 0
}

# offsets_exact N FILE: FILE's lines are "OFFSET ID", the offsets 0 .. N-1,
# each once.
offsets_exact() {
	local n=$1
	awk '{ print $1 }' "$2" | LC_ALL=C sort >"$TD/offsets"
	uniq -d "$TD/offsets" >"$TD/twice"
	seq 0 $((n - 1)) | LC_ALL=C sort | LC_ALL=C comm -23 - "$TD/offsets" >"$TD/gaps"
	if [[ -s $TD/twice || -s $TD/gaps || $(lines "$2") != "$n" ]]; then
		fail "$(lines "$2") offsets for $n: $(lines "$TD/twice") given twice, $(lines "$TD/gaps") missing (first: $(sort -n "$TD/gaps" | head -5 | tr '\n' ' '))"
	fi
}

# in_kernel_wait PID...: one of the PIDs is blocked in the kernel (state
# D): a request of the file system that has not been answered.
in_kernel_wait() {
	local p
	for p in "$@"; do
		[[ $(proc_state "$p") == D ]] && return 0
	done
	return 1
}

# all_sleeping PID...: every PID is asleep (state S).
all_sleeping() {
	local p
	for p in "$@"; do
		sleeping "$p" || return 1
	done
}

# hold_head: a process of its own takes partition 0's head lock through
# host 1's mount and keeps it until release_head (a holder that does not
# let go, as a stalled host).
hold_head() {
	mq-pub -s "$S1" -p 0 t first >/dev/null
	coproc HOLD { exec python3 "$PROBE" hold "$S1/topics/t/p0/head"; }
	local l
	read -r -t 30 l <&"${HOLD[0]}"
	assert_equal "$l" held
}

release_head() {
	eval "exec ${HOLD[1]}>&-"
}

# head_busy SPOOL: partition 0's head says a publish is under way (next >
# committed), as SPOOL's mount reads it.
head_busy() {
	local line
	line=$(cat "$1/topics/t/p0/head" 2>/dev/null) || return 1
	[[ $line =~ next=([0-9]{20})\ committed=([0-9]{20}) ]] || return 1
	((10#${BASH_REMATCH[1]} > 10#${BASH_REMATCH[2]}))
}

@test "32 publish loops on one mount into one partition: all finish, every publish once, offsets gap-free" {
	mkgroup t g
	local i pids=()
	for i in $(seq 1 32); do
		spawn_fn "$TD/l$i" pub_singles "$S1" t "p$i" 5 "$TD/pub.$i" -p 0
		pids+=("$SPAWNED")
	done
	wait_for -t 300 all_exited "${pids[@]}"
	cat "$TD"/pub.* >"$TD/pub"
	[[ ! -s $TD/pub.1.fail ]] || fail_with "a publish failed" "$TD"/pub.*.fail
	assert_equal "$(lines "$TD/pub")" 160
	run --separate-stderr mq-sub -s "$S2" -g g -F '%o %i\n' t
	echo "$output" >"$TD/got"
	awk '{ print $2 }' "$TD/got" >"$TD/got.ids"
	same_ids "$TD/pub" "$TD/got.ids"
	offsets_exact 160 "$TD/got"
	assert_equal "$(head_field t committed)" 160
	assert_equal "$(head_field t next)" 160
}

@test "32 mq-req callers on one mount with a server: each gets its own reply" {
	mkgroup rpc srv
	spawn "$TD/server" mq-sub -s "$S1" -g srv -f -t 120 --exec 'tr a-z A-Z' --reply rpc
	# 32 at once; xargs exits 123 if any of them failed.
	run xargs -P 32 -I{} sh -c 'exec mq-req -s "$1" -t 120 rpc caller{} \
	    >"$2/out.{}" 2>"$2/err.{}"' sh "$S1" "$TD" < <(seq 1 32)
	[[ $status == 0 ]] || fail_with "a caller failed (xargs $status):" "$TD"/err.*
	local i
	for i in $(seq 1 32); do
		assert_equal "$(cat "$TD/out.$i")" "CALLER$i"
	done
	assert_equal "$(queue_left "$S1" rpc srv)" 0
}

@test "32 publishers waiting for a held head: none waits in the kernel, the mount answers, all publish once it is free" {
	mkgroup t g
	hold_head
	local i pids=()
	for i in $(seq 1 32); do
		spawn "$TD/pub.$i" mq-pub -s "$S1" -p 0 t "w$i"
		pids+=("$SPAWNED")
	done
	# Each is in lock.c's naps: asleep, never parked in a request.
	wait_for -t 30 all_sleeping "${pids[@]}"
	local k
	for k in $(seq 1 20); do
		! in_kernel_wait "${pids[@]}" || fail "a waiting publisher is in D state"
	done
	# The holder's mount still answers (issue 27: with ten requests parked
	# a FUSE client with ten threads answers nothing).
	run timeout 10 ls "$S1/topics/t/p0"
	assert_success
	run timeout 10 mq-sub -s "$S1" -g g -n 1 t
	assert_success
	release_head
	wait_for -t 120 all_exited "${pids[@]}"
	cat "$TD"/pub.[0-9]* >"$TD/pub"
	assert_equal "$(ids "$TD/pub" | wc -l)" 32
	assert_equal "$(head_field t committed)" 33
}

@test "a publishing host's FUSE client killed mid-publish: host 2 resumes within FS_DEAD_BOUND, nothing that exited 0 lost, offsets gap-free, the half-done publish repaired" {
	mkgroup t g
	fs_kill_ready
	# Host 2 publishes all along, one message per run, until told to
	# stop once it has published again after the kill.
	PUB_STOP=$TD/stop MQ_HOST=h2 spawn_fn "$TD/l2" pub_singles "$S2" t b 400 \
	    "$TD/pub.b" -p 0
	local p2=$SPAWNED
	# Host 1: chunks of 1000 lines, each a publish taking seconds, so that
	# the kill lands inside one (the head says next > committed).
	MQ_HOST=h1 spawn "$TD/pub.a" bash -c "for r in 1 2 3 4 5 6 7 8; do seq 1 1000 | sed \"s/^/a\$r-/\" | mq-pub -s '$S1' -p 0 -l t || exit; done"
	local p1=$SPAWNED
	# One chunk committed, the next under way.
	wait_for -t 180 has_lines 1000 "$TD/pub.a"
	wait_for -t 120 head_busy "$S1"
	echo 1 >"$TD/.client-killed"
	fs_kill_client 1
	local t0=$EPOCHREALTIME
	note "right after the kill: $(count_entries "$S2/topics/t/p0/log") names in log/, head $(cut -c9-66 "$S2/topics/t/p0/head")"
	wait_for -t 30 all_exited "$p1"
	# The file system lets the dead host's lock go: host 2 can take it.
	run --separate-stderr python3 "$PROBE" try "$S2/topics/t/p0/head" $((FS_DEAD_BOUND + 120))
	assert_success
	local freed=$output
	note "host 1's lock released ${freed} s after its client was killed (bound: ${FS_DEAD_BOUND} s)"
	awk -v t="$freed" -v b="$FS_DEAD_BOUND" 'BEGIN { exit !(t <= b) }' ||
	    fail "the lock was released after ${freed} s, past the bound of ${FS_DEAD_BOUND} s"
	# The next publish on host 2 repairs and commits: one unlink per
	# message the dead publish wrote (up to 1000 here).
	run --separate-stderr timeout 120 mq-pub -s "$S2" -p 0 t after
	assert_success
	echo "$output" >"$TD/pub.after"
	local took
	took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	note "host 2 published again ${took} s after the kill"
	awk -v t="$took" -v f="$freed" 'BEGIN { exit !(t <= f + 15) }' ||
	    fail "host 2 published ${took} s after the kill, the repair took past 15 s"
	touch "$TD/stop"
	wait_for -t 300 all_exited "$p2"
	[[ ! -s $TD/pub.b.fail ]] || fail_with "a publish on host 2 failed" "$TD/pub.b.fail"
	# Everything printed is delivered; what committed is gap-free; nothing
	# beyond committed is left in log/.
	run --separate-stderr mq-sub -s "$S2" -g g -F '%o %i\n' t
	echo "$output" >"$TD/got"
	awk '{ print $2 }' "$TD/got" >"$TD/got.ids"
	cat "$TD/pub.a" "$TD/pub.b" "$TD/pub.after" >"$TD/pub"
	missing=$(missing_ids <(ids "$TD/pub") "$TD/got.ids" | wc -l)
	((missing == 0)) || fail "$missing of $(ids "$TD/pub" | wc -l) printed ids never delivered"
	local n
	n=$(lines "$TD/got")
	offsets_exact "$n" "$TD/got"
	MQ_SPOOL=$S2
	note "host 1 printed $(ids "$TD/pub.a" | wc -l) ids, host 2 $(ids "$TD/pub.b" "$TD/pub.after" | wc -l); delivered $n"
	assert_equal "$(head_field t committed)" "$n"
	assert_equal "$(head_field t next)" "$n"
	assert_equal "$(count_log t)" "$n"
}

@test "a head held past MQ_LOCK_WARN: the waiting publisher says so once and keeps waiting; past MQ_LOCK_TIMEOUT it exits 75" {
	mkgroup t g
	# No file system bounds how long a live holder keeps a lock.
	hold_head
	MQ_LOCK_WARN=1s spawn "$TD/waiter" mq-pub -s "$S2" -p 0 t waited
	local w=$SPAWNED
	wait_for -t 30 has_lines 1 "$TD/waiter.err"
	run cat "$TD/waiter.err"
	assert_output --regexp "^mq-pub: .*/topics/t/p0/head: locked for [0-9]+ s by another process or host; still waiting; see mq\(7\) Sharing a spool$"
	! exited "$w" || fail "the waiter gave up"
	run --separate-stderr env MQ_LOCK_WARN=1h MQ_LOCK_TIMEOUT=2s mq-pub -s "$S2" -p 0 t gives-up
	assert_equal "$status" 75
	[[ $stderr =~ ^mq-pub:\ .*/topics/t/p0/head:\ locked\ for\ [0-9]+\ s\ by\ another\ process\ or\ host\;\ gave\ up ]] ||
	    fail "stderr: $stderr"
	release_head
	wait_for -t 60 exited "$w"
	assert_equal "$(ids "$TD/waiter" | wc -l)" 1
	assert_equal "$(lines "$TD/waiter.err")" 1
	assert_equal "$(head_field t committed)" 2
}
