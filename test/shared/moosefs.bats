#!/usr/bin/env bats
# What only MooseFS has (moosefs.bash): where an acknowledged publish is
# once the chunkservers' HDD_FSYNC_BEFORE_CLOSE is on, and where it is
# with MooseFS's default (off).  The checks every shared file system must
# pass are in crosshost.bats (crosshost-moosefs.bats runs them here).  Run
# as root; without root or MooseFS the tests are skipped, but fail when CI
# is set.
#
#   PATH=$PWD/bin:$PATH bats --tap test/shared/moosefs.bats

load moosefs

setup_file() {
	mfs_up
}

teardown_file() {
	mfs_down
}

setup() {
	mfs_setup
	command -v strace >/dev/null || {
		[[ -n ${CI:-} ]] && fail "strace is missing (apt-get install strace)"
		skip "strace is missing (apt-get install strace)"
	}
}

teardown() {
	# Kills what the test spawned (the tracers: helper.bash).
	helper_teardown
	# MooseFS's default again, whatever the test set.
	mfs_cs_fsync 1 0 || true
	mfs_cs_fsync 2 0 || true
	return 0
}

# traced PID: every thread of PID has a tracer.
traced() {
	local s
	for s in /proc/"$1"/task/*/status; do
		grep -q '^TracerPid:[[:space:]]*[1-9]' "$s" || return 1
	done
}

# trace_chunkserver K: strace chunkserver K's fsyncs and closes (with the
# file each is on, -y) into $TD/cs.K, spawned; returns once every thread
# is traced.
trace_chunkserver() {
	local pid
	pid=$(mfs_cs_pid "$1")
	spawn "$TD/strace.$1" strace -f -qq -ttt -y -e trace=fsync,fdatasync,close \
	    -o "$TD/cs.$1" -p "$pid"
	TRACERS+=("$SPAWNED")
	wait_for -t 20 traced "$pid" || fail "strace did not attach to chunkserver $1 ($pid)"
}

# chunk_of FILE: the name of the chunk file holding FILE on a chunkserver
# (chunk_ID_VERSION.mfs), from mfsfileinfo.
chunk_of() {
	mfs_ns mfsfileinfo "$1" |
	    awk '$1 == "chunk" && $2 == "0:" { print "chunk_" $3 ".mfs"; exit }'
}

# calls K CALL CHUNK: the times of chunkserver K's calls CALL (fsync or
# close) on CHUNK, one a line.
calls() {
	awk -v c="$2(" -v f="/$3>" 'index($3, c) == 1 && index($3, f) { print $2 }' "$TD/cs.$1"
}

# closed_everywhere CHUNK...: both chunkservers closed every CHUNK.
closed_everywhere() {
	local c k
	for c in "$@"; do
		for k in 1 2; do
			[[ -n $(calls "$k" close "$c") ]] || return 1
		done
	done
}

# file_of SPOOL SEQ: the file of topic t's partition 0 that holds message
# SEQ: log/SEQ.ID in format 1, the segment that holds it in format 2 (a
# single publish writes one of its own).
file_of() {
	local f line
	for f in "$1/topics/t/p0/log"/*; do
		if [[ ${f##*/} == $(printf %020d "$2").* ]]; then
			echo "$f"
			return 0
		fi
		[[ ${f##*/} =~ ^[0-9]{20}$ ]] || continue
		IFS= read -r line <"$f"
		[[ $line =~ first=([0-9]{20})\ count=([0-9]{10}) ]] || continue
		if ((10#${BASH_REMATCH[1]} <= $2 && $2 < 10#${BASH_REMATCH[1]} + 10#${BASH_REMATCH[2]})); then
			echo "$f"
			return 0
		fi
	done
	return 1
}

# publish_traced FSYNC N: both chunkservers set to HDD_FSYNC_BEFORE_CLOSE
# FSYNC and traced, N single publishes (a chunk each for its message
# file, in format 2 its segment), their return times in $TD/returned, the
# message files' chunks in CHUNKS; returns once both chunkservers closed
# every one of them.
publish_traced() {
	local k
	mfs_cs_fsync 1 "$1"
	mfs_cs_fsync 2 "$1"
	mkgroup t g
	# The spool's own files first, so that the traced publishes only
	# add their message files.
	pub_singles "$S1" t warm 1 "$TD/pub"
	trace_chunkserver 1
	trace_chunkserver 2
	for ((k = 1; k <= $2; k++)); do
		pub_singles "$S1" t m 1 "$TD/pub"
		date +%s.%N >>"$TD/returned"
	done
	assert_equal "$(lines "$TD/pub")" "$(($2 + 1))"
	CHUNKS=()
	for ((k = 1; k <= $2; k++)); do
		CHUNKS+=("$(chunk_of "$(file_of "$S1" "$k")")")
	done
	[[ ${#CHUNKS[@]} == "$2" && " ${CHUNKS[*]}" != *" .mfs"* && " ${CHUNKS[*]} " != *"  "* ]] ||
	    fail "no chunk for a message file: ${CHUNKS[*]}"
	# Each message's file is one of its own.
	assert_equal "$(printf '%s\n' "${CHUNKS[@]}" | sort -u | wc -l)" "$2"
	# A chunkserver closes a chunk file a little after the client's
	# write to it ended (and fsyncs it just before, if told to).
	wait_for -t 30 closed_everywhere "${CHUNKS[@]}" ||
	    fail_with "the chunkservers did not close every message's chunk" "$TD/cs.1" "$TD/cs.2"
}

@test "HDD_FSYNC_BEFORE_CLOSE=1: each message's chunk is fsynced on both chunkservers, tens of milliseconds after its publish returned" {
	local n=20 k c t f late=0 lag max=0
	TRACERS=()
	publish_traced 1 "$n"
	for ((k = 1; k <= n; k++)); do
		c=${CHUNKS[k - 1]}
		t=$(sed -n "${k}p" "$TD/returned")
		for f in 1 2; do
			# One fsync, before the close (the second is the
			# chunk's version bump, if any).
			[[ -n $(calls "$f" fsync "$c") ]] ||
			    fail_with "chunkserver $f closed $c (message $k) without an fsync" "$TD/cs.$f"
			awk -v a="$(calls "$f" fsync "$c" | head -1)" -v b="$(calls "$f" close "$c" | head -1)" 'BEGIN { exit !(a < b) }' ||
			    fail "chunkserver $f fsynced $c after closing it"
			lag=$(awk -v a="$(calls "$f" fsync "$c" | head -1)" -v b="$t" 'BEGIN { printf "%d", (a - b) * 1000 }')
			((lag > 0)) && late=$((late + 1))
			((lag > max)) && max=$lag
		done
	done
	note "$((2 * n)) fsyncs of $n messages' chunks: $late after the publish returned, the latest $max ms after"
	# The bound the man page states (mq(7), Sharing a spool).
	((max < 2000)) || fail "a chunk was fsynced $max ms after its publish returned"
	stop_all "${TRACERS[@]}"
	assert_equal "$(grep -c '= -1' "$TD/cs.1" "$TD/cs.2" | awk -F: '{ n += $2 } END { print n }')" 0
}

@test "HDD_FSYNC_BEFORE_CLOSE=0 (MooseFS's default): the chunkservers close each message's chunk without an fsync" {
	local n=20
	TRACERS=()
	publish_traced 0 "$n"
	stop_all "${TRACERS[@]}"
	assert_equal "$(grep -cE ' (fsync|fdatasync)\(' "$TD/cs.1" "$TD/cs.2" | awk -F: '{ n += $2 } END { print n }')" 0
}

@test "mfsmount's log of the operations it served (.oplog): a file's fsync reaches it, a directory's fsync does not" {
	mkdir "$M1/d"
	spawn "$TD/oplog" cat "$M1/.oplog"
	local c=$SPAWNED
	wait_for -t 10 grep -q 'internal node: OPLOG' "$TD/oplog"
	# As mq syncs a directory after a rename into it: fsync(2) of the
	# directory, before and after a file in it is made and fsynced.
	python3 -c '
import os, sys
def syncdir(p):
    d = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(d)
    os.close(d)
syncdir(sys.argv[1])
f = os.open(sys.argv[1] + "/f", os.O_CREAT | os.O_WRONLY)
os.write(f, b"x")
os.fsync(f)
os.close(f)
syncdir(sys.argv[1])
open(sys.argv[1] + "/end", "w").close()' "$M1/d"
	wait_for -t 10 grep -q 'cmd:create ([0-9]*,end,' "$TD/oplog"
	stop_all "$c"
	grep -v OPLOG "$TD/oplog" >"$TD/ops"
	note "$(grep -cE 'cmd:(opendir|fsync|fsyncdir) ' "$TD/ops") opendir, fsync and fsyncdir operations served"
	# Both directory opens reached it, and the file's fsync; no fsync
	# of a directory did.
	assert_equal "$(grep -cE 'cmd:opendir \(' "$TD/ops")" 2
	assert_equal "$(grep -cE 'cmd:fsync \(' "$TD/ops")" 1
	assert_equal "$(grep -ciE 'cmd:fsyncdir|cmd:dirfsync' "$TD/ops")" 0
}
