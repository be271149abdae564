#!/usr/bin/env bats
# Cross-host tests on one directory exported over ssh and mounted twice
# with sshfs (sshfs.bash): the mount SF_M1 is host 1, SF_M2 host 2, each a
# FUSE client with an ssh connection and caches of its own.  Each test has
# its own spool on the export, S1 as host 1 sees it, S2 as host 2 does, and
# SX as the server has it (counted there, past every client cache).  Run as
# root; without root, FUSE, sshd or sshfs the tests are skipped, but fail
# when CI is set.
#
#   PATH=$PWD/bin:$PATH bats --tap test/shared/sshfs.bats
#
# What sshfs gives (found with two mounts of one export, sshfs 3.7.3, FUSE
# 7.31, OpenSSH 9.2):
#   - fcntl(2) locks (F_OFD_SETLK, F_SETLK) and flock(2) are kept by each
#     client's kernel: a lock taken through one mount does not exclude one
#     taken through the other, nor one on the server.  sftp has no locks.
#   - rename(2) is the server's (posix-rename@openssh.com): of two mounts
#     renaming one name, exactly one wins, the other gets ENOENT.
#   - O_CREAT|O_EXCL and link(2) are the server's: exactly one of two
#     mounts wins; the loser gets EEXIST when its mount had looked the name
#     up, else EPERM (sftp v3 has no "exists" status, only FAILURE).  A
#     rename of a directory onto a non-empty one fails with EPERM, not
#     ENOTEMPTY, even within one mount; mkdir(2) loses with EEXIST.
#   - A file another mount rewrote in place is read anew by every
#     descriptor, held or fresh; a size that grew is seen only when the
#     reading mount's attributes time out (1 s): until then reads stop at
#     the old size, O_DIRECT or not.  fallocate(2): EOPNOTSUPP.
#   - Directory listings: see SF_OPTS in sshfs.bash (dir_cache=no); a
#     rewound directory stream never lists anything new.
#   - st_nlink is 1 for every file, whatever the server has.
#   - A file unlinked while its mount has it open is renamed to
#     .fuse_hidden<N> and unlinked on close (libfuse without hard_remove).
#
# So on sshfs only one host may take a partition's lock: publishing into a
# partition, subscribing, and the repair a consumer does when it starts
# all take it (mq-spool(5), Publish, Subscribe, Repair).  The tests below
# publish into a partition from one host only, create topics and groups
# before consumers start on the other host, and wait until those are
# members (past their start) before publishing.  The last four tests check
# what hosts need but do not get yet on sshfs (see each): they fail with
# the library as it is.

load sshfs

setup_file() {
	sf_up
}

teardown_file() {
	sf_down
}

setup() {
	sf_setup
}

teardown() {
	# Kills what the test spawned (helper.bash).
	helper_teardown
}

# --- checks used by the tests -----------------------------------------------
# lines, ids, same_ids, queue_left, stop_all, member_of, pub_singles,
# pub_rounds, spawn_publishers, fail_with and the like: checks.bash.  What
# only these tests use follows.

# names_in DIR: number of names in DIR that do not start with a dot (0 if
# DIR does not exist).  mq skips dot names, as maildir readers do; and on
# sshfs a file unlinked while its mount still has it open is renamed to
# .fuse_hidden<N> and unlinked when it is closed, a moment after an ack.
names_in() {
	[[ -d $1 ]] || {
		echo 0
		return
	}
	find "$1" -mindepth 1 -maxdepth 1 ! -name '.*' -printf x | wc -c
}

# queue_left (checks.bash) counts with names_in here, passing over the
# .fuse_hidden<N> names.
# shellcheck disable=SC2034 # read by queue_left
QUEUE_COUNT=names_in

# assert_queue_empty SPOOL TOPIC GROUP: nothing of GROUP pending, in
# flight or delayed; else fail with how many are left and the names left
# (format 2: only those that left a claim for a name of their own).
assert_queue_empty() {
	queue_empty "$@" ||
	    fail "left in the queue of $3: $(queue_left "$@"); names: $(cd "$1/topics/$2" && find p*/g/"$3"/{new,cur,delay} -mindepth 1 ! -name '.*' 2>/dev/null | tr '\n' ' ')"
}

# wait_member SPOOL TOPIC GROUP PID: wait (bounded) until member_of; else
# fail, saying what the members are and what became of PID.
wait_member() {
	wait_for -t 60 member_of "$@" 2>/dev/null ||
	    fail "consumer $4 is no member of $3 after 60 s (state '$(proc_state "$4")'); members: $(find "$1/topics/$2/groups/$3.members" -mindepth 1 -printf '%f ' 2>&1)"
}

# head_of SPOOL TOPIC PARTITION FIELD: next or committed of the head.
head_of() {
	local line
	line=$(cat "$1/topics/$2/p$3/head" 2>/dev/null) || return 1
	[[ $line =~ $4=([0-9]{20}) ]] || return 1
	echo $((10#${BASH_REMATCH[1]}))
}

# publish_under_way SPOOL TOPIC: partition 0's head says next > committed.
publish_under_way() {
	local next committed
	next=$(head_of "$1" "$2" 0 next) || return 1
	committed=$(head_of "$1" "$2" 0 committed) || return 1
	((next > committed))
}

# log_held SPOOL PARTITION: the messages partition PARTITION of topic t
# holds in SPOOL: its names in log/ that do not start with a dot
# (names_in) in format 1, the records of its segments in format 2
# (count_log, helper.bash).
log_held() {
	if MQ_SPOOL=$1 is_format2 t; then
		MQ_SPOOL=$1 count_log t "$2"
	else
		names_in "$1/topics/t/p$2/log"
	fi
}

# spawn_rc OUT CMD...: spawn (helper.bash) CMD, its exit status written to
# OUT.rc when it ends.
spawn_rc() {
	local out=$1
	shift
	# shellcheck disable=SC2016 # expanded by that bash
	spawn "$out" bash -c '"$@"; echo $? >"$0.rc"' "$out" "$@"
}

# rc_of OUT: the exit status spawn_rc wrote (empty while it runs).
rc_of() {
	cat "$1.rc" 2>/dev/null || true
}

# --- one host publishes, consumers anywhere ----------------------------------

@test "sshfs: a consumer waiting on host 2 gets every message published on host 1, exactly once" {
	local n=100 b
	mkgroup t g
	spawn_rc "$TD/sub2" mq-sub -s "$S2" -f -t 15 -n "$n" -g g -F '%i %a\n' t
	local c=$SPAWNED
	wait_member "$SX" t g "$c"
	# 40 single publishes, then 3 batches of 20.
	pub_singles "$S1" t one 40 "$TD/pub"
	for b in 1 2 3; do
		seq 1 20 | sed "s/^/batch-$b-/" | mq-pub -s "$S1" -l t >>"$TD/pub"
	done
	assert_equal "$(lines "$TD/pub")" "$n"
	# -n: it exits once it has them all; -t: 15 s after the last it saw.
	wait_for -t 60 exited "$c"
	assert_equal "$(rc_of "$TD/sub2")" 0
	same_ids "$TD/pub" "$TD/sub2"
	assert_equal "$(awk '$2 != 1' "$TD/sub2" | wc -l)" 0
	assert_queue_empty "$SX" t g
	[[ ! -s $TD/sub2.err ]] || fail_with "the consumer wrote errors" "$TD/sub2.err"
}

@test "sshfs: competing consumers on both hosts: every message once in total, both hosts work" {
	local n p c=()
	mkgroup t g
	# Each takes 60 at most (-n), so that neither host can take all 180.
	for p in 1 2; do
		spawn "$TD/c1.$p" mq-sub -s "$S1" -f -t 15 -n 60 -g g -F '%i %a\n' t
		c+=("$SPAWNED")
		spawn "$TD/c2.$p" mq-sub -s "$S2" -f -t 15 -n 60 -g g -F '%i %a\n' t
		c+=("$SPAWNED")
	done
	for p in "${c[@]}"; do
		wait_member "$SX" t g "$p"
	done
	# Single messages and bursts of 8 (20 rounds of 9), all from host 1:
	# the four consumers race for the same names.
	pub_rounds "$S1" t 20 "$TD/pub"
	n=$((20 * 9))
	assert_equal "$(lines "$TD/pub")" "$n"
	wait_for -t 60 has_lines "$n" "$TD"/c?.?
	wait_for -t 30 queue_empty "$SX" t g || true
	stop_all "${c[@]}"
	local h1 h2
	h1=$(lines "$TD"/c1.?)
	h2=$(lines "$TD"/c2.?)
	echo "host 1 got $h1, host 2 got $h2"
	same_ids "$TD/pub" "$TD"/c?.?
	((h1 > 0 && h2 > 0)) || fail "one host did all the work: host 1 $h1, host 2 $h2"
	assert_equal "$(cat "$TD"/c?.? | awk '$2 != 1' | wc -l)" 0
	assert_queue_empty "$SX" t g
}

@test "sshfs: a lease taken on host 1 that runs out brings the message to host 2" {
	local id r
	mkgroup t g
	id=$(mq-pub -s "$S1" t lease-me)
	# Host 1 claims it for 1 s and never settles it (as if it died).
	run --separate-stderr mq-sub -s "$S1" -g g --manual --lease 1s -n 1 -F '%i %r\n' t
	assert_success
	assert_equal "${output%% *}" "$id"
	r=${output#* }
	# Host 2, waiting, expires the lease and gets it: second attempt.
	run --separate-stderr mq-sub -s "$S2" -g g -t 15 -n 1 -F '%i %a\n' t
	assert_success
	assert_equal "$output" "$id 2"
	assert_queue_empty "$SX" t g
	# Host 1's receipt is stale: it settles nothing.
	run --separate-stderr mq-ack -s "$S1" -g g t "$r"
	assert_failure
}

@test "sshfs: a receipt of a claim on host 1 acknowledges on host 2" {
	local id r
	mkgroup t g
	id=$(mq-pub -s "$S1" t ack-me)
	run --separate-stderr mq-sub -s "$S1" -g g --manual -n 1 -F '%i %r\n' t
	assert_success
	assert_equal "${output%% *}" "$id"
	r=${output#* }
	assert_equal "$(names_in "$SX/topics/t/p0/g/g/cur")" 1
	run --separate-stderr mq-ack -s "$S2" -g g t "$r"
	assert_success
	assert_queue_empty "$SX" t g
	run --separate-stderr mq-sub -s "$S1" -g g t
	assert_equal "$status" 1
}

# --- one host per partition ---------------------------------------------------

@test "sshfs: locks stay within a mount: host 2 is not held up by a head lock held on host 1 (so only one host may publish into a partition)" {
	# What mq-spool(5), SHARED FILE SYSTEMS, says of sshfs.  Should sshfs
	# ever make fcntl(2) locks reach the server, this fails: then the
	# manual can let every host publish, and this file test it.
	mkgroup t g
	mq-pub -q -s "$S1" t first
	spawn "$TD/holder" python3 -c '
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
print("locked", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)' "$S1/topics/t/p0/head" "$TD/unlock"
	local holder=$SPAWNED
	wait_for -t 10 has_lines 1 "$TD/holder"
	# On host 1 the lock holds: a publisher waits for it.
	run timeout 2 mq-pub -s "$S1" t held-up
	assert_equal "$status" 124
	# On host 2 the same lock is free ...
	run python3 -c '
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
    print("free")
except OSError as e:
    print("held:", e)' "$S2/topics/t/p0/head"
	assert_output free
	# ... and a publisher goes ahead.
	run --separate-stderr timeout 10 mq-pub -q -s "$S2" t went-ahead
	assert_success
	run --separate-stderr mq-sub -s "$S1" -g g t
	assert_success
	assert_equal "$output" $'first\nwent-ahead'
	touch "$TD/unlock"
	wait_for -t 10 exited "$holder"
}

@test "sshfs: publishers on both hosts, each into a partition of its own: every publish delivered once, offsets unique and gap-free" {
	local p c=()
	mq-topic -s "$S1" create --partitions 2 t
	mkgroup t g
	spawn "$TD/c1" mq-sub -s "$S1" -f -t 15 -g g -F '%i %p %o\n' t
	c+=("$SPAWNED")
	spawn "$TD/c2" mq-sub -s "$S2" -f -t 15 -g g -F '%i %p %o\n' t
	c+=("$SPAWNED")
	for p in "${c[@]}"; do
		wait_member "$SX" t g "$p"
	done
	# Host 1 publishes into partition 0 only, host 2 into 1 only; on each
	# host two publishers share the partition (the lock holds there): 40
	# single publishes and 100 lines through mq-pub -l.
	spawn_publishers t 40 100 0 1
	wait_for -t 120 all_exited "${PUBLISHERS[@]}"
	cat "$TD"/pub.? >"$TD/pub"
	[[ ! -s $TD/pub.a.fail && ! -s $TD/pub.b.fail && ! -s $TD/pub.c.err && ! -s $TD/pub.d.err ]] ||
	    fail_with "a publish failed" "$TD"/pub.?.fail "$TD"/pub.?.err
	assert_equal "$(lines "$TD/pub")" 280
	wait_for -t 60 has_lines 280 "$TD/c1" "$TD/c2"
	wait_for -t 30 queue_empty "$SX" t g || true
	stop_all "${c[@]}"
	echo "host 1 got $(lines "$TD/c1"), host 2 got $(lines "$TD/c2")"
	same_ids "$TD/pub" "$TD/c1" "$TD/c2"
	# Each partition: offsets 0 ... n-1, once each; host 1's messages in
	# 0, host 2's in 1.
	local k n
	for k in 0 1; do
		n=$(head_of "$SX" t "$k" committed)
		assert_equal "$n" 140
		assert_equal "$(head_of "$SX" t "$k" next)" 140
		assert_equal "$(cat "$TD/c1" "$TD/c2" | awk -v k="$k" '$2 == k { print $3 }' | sort -n | tr '\n' ' ')" \
		    "$(seq -s ' ' 0 $((n - 1))) "
		assert_equal "$(log_held "$SX" "$k")" "$n"
	done
	ids "$TD/pub.a" "$TD/pub.c" >"$TD/host1.ids"
	assert_equal "$(cat "$TD/c1" "$TD/c2" | awk '$2 == 0 { print $1 }' | LC_ALL=C sort | tr '\n' ' ')" \
	    "$(tr '\n' ' ' <"$TD/host1.ids")"
}

# --- what sshfs got wrong before the library knew it ------------------------
# Each of these failed at 4a6b20e; each says why.

@test "sshfs: a consumer that starts on host 2 while host 1 publishes takes nothing from the publish" {
	# mq-sub, when it starts, repairs a partition whose head says next >
	# committed if it can take the lock without waiting (mq-spool(5),
	# Repair).  On sshfs it always can, from another host: it then
	# deletes the names of host 1's publish under way, which host 1 goes
	# on to commit and report (exit 0, every id printed, some never
	# delivered), or fails on (exit 66).  Where locks stay within a
	# mount, only the next publisher repairs (mq-spool(5), SHARED FILE
	# SYSTEMS).
	local n=2000
	mkgroup t g
	mkgroup t late
	# One chunk of 2000 takes a while on sshfs: 2000 files in format 1
	# (seconds); in format 2 a segment, of 32 MB with lines of 16 KB: the
	# head says next > committed meanwhile.
	local pad=0
	is_format2 t && pad=16000
	spawn_rc "$TD/pub" bash -c "seq 1 $n | awk '{ printf \"%s-%0${pad}d\\n\", \$1, 0 }' | mq-pub -s '$S1' -l t"
	local p=$SPAWNED
	wait_for -t 30 publish_under_way "$SX" t
	run --separate-stderr mq-sub -s "$S2" -g late -q -t 0 t
	echo "consumer on host 2: status $status${stderr:+, stderr: $stderr}"
	wait_for -t 120 exited "$p"
	assert_equal "$(rc_of "$TD/pub")" 0
	assert_equal "$(lines "$TD/pub")" "$n"
	run --separate-stderr mq-sub -s "$S1" -g g -F '%i\n' t
	echo "$output" >"$TD/got"
	same_ids "$TD/pub" "$TD/got"
}

@test "sshfs: consumers starting on both hosts at once on a new topic both work" {
	# Topic create builds the topic under tmp/ and renames it into place,
	# taking EEXIST or ENOTEMPTY to mean another made it first.  sshfs
	# reports a directory renamed onto a non-empty one as EPERM (sftp's
	# FAILURE): the slower one exits 77, "create topic T: Operation not
	# permitted", on one host as on two.
	local r
	mq-topic -s "$S1" create first
	for ((r = 1; r <= 8; r++)); do
		spawn_rc "$TD/s1.$r" mq-sub -s "$S1" -g a -t 0 "t$r"
		spawn_rc "$TD/s2.$r" mq-sub -s "$S2" -g b -t 0 "t$r"
		wait_for -t 30 test -s "$TD/s1.$r.rc" -a -s "$TD/s2.$r.rc"
	done
	for ((r = 1; r <= 8; r++)); do
		[[ $(rc_of "$TD/s1.$r") == 1 && $(rc_of "$TD/s2.$r") == 1 ]] ||
		    fail_with "topic t$r: host 1 exit $(rc_of "$TD/s1.$r"), host 2 exit $(rc_of "$TD/s2.$r")" \
		    "$TD/s1.$r.err" "$TD/s2.$r.err"
	done
}

@test "sshfs: mq-stat --message on host 2 says a message published on host 1 is pending" {
	# msgstate.c takes a log/ name whose st_nlink is 1 for one that no
	# group holds, and reports every group acked.  sshfs says st_nlink 1
	# for every file (sftp v3 has no link count); the server has 3 here.
	local id
	mkgroup t g
	mkgroup t h
	id=$(mq-pub -s "$S1" t pending)
	# Format 1: the file and a name in each group's new/; format 2: its
	# record in the log, past both groups' cursors, and no name.
	if is_format2 t; then
		assert_equal "$(MQ_SPOOL=$SX log_keys t)" "00000000000000000000.$id"
		assert_equal "$(MQ_SPOOL=$SX cursor_of t g) $(MQ_SPOOL=$SX cursor_of t h)" "0 0"
		assert_equal "$(names_in "$SX/topics/t/p0/g/g/new") $(names_in "$SX/topics/t/p0/g/h/new")" "0 0"
	else
		assert_equal "$(stat -c %h "$SX/topics/t/p0/log/"*)" 3
	fi
	run --separate-stderr mq-stat -s "$SX" --message "$id" t
	assert_success
	assert_output $'t/g pending attempts=0\nt/h pending attempts=0'
	run --separate-stderr mq-stat -s "$S2" --message "$id" t
	assert_success
	assert_output $'t/g pending attempts=0\nt/h pending attempts=0'
}

@test "sshfs: topics made through a mount are of format 1, whose claims are renames; format 2 there is refused (69), by create and by upgrade, and nothing is made" {
	# A group of format 2 feeds under its cursor's lock, which sshfs
	# keeps within one mount: consumers on two hosts would take the
	# same records.
	unset MQ_FORMAT
	mq-topic -s "$S1" create t
	run -0 mq-topic -s "$S2" info t
	assert_line 'format: 1'
	mq-pub -s "$S1" -q made x
	run -0 mq-topic -s "$S2" info made
	assert_line 'format: 1'
	run --separate-stderr mq-topic -s "$S1" create --format 2 two
	assert_equal "$status" 69
	[[ $stderr == *"locks stay within one mount"* ]] || fail "$stderr"
	[[ ! -e $SX/topics/two ]]
	MQ_FORMAT=2 run --separate-stderr mq-pub -s "$S1" three x
	assert_equal "$status" 69
	[[ ! -e $SX/topics/three ]]
	run --separate-stderr mq-topic -s "$S1" upgrade t
	assert_equal "$status" 69
	run -0 mq-topic -s "$S2" info t
	assert_line 'format: 1'
	# On the server's own disk a topic is of format 2, as anywhere.
	mq-topic -s "$SX" create local
	run -0 mq-topic -s "$S1" info local
	assert_line 'format: 2'
}
