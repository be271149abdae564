# moosefs.bash: a MooseFS file system run on this machine and mounted
# twice, for the cross-host tests (crosshost.bats, moosefs.bats): two
# mfsmount clients, each a FUSE mount with caches and a master session of
# its own, stand for two hosts sharing a spool.
#
# What mfs_up sets up (from setup_file, once per bats file; two seconds),
# everything under $BATS_FILE_TMPDIR/mfs (MFS_DIR):
#   - a network namespace of its own, mqmfs-PID (ip netns), so that its
#     ports meet no other MooseFS on the machine.  Where no namespace can
#     be made (or MFS_NO_NETNS=1) it runs in the host's, and then refuses
#     to start (a clear failure) if one of its ports is taken.
#   - config files written here, not in /etc/mfs: one mfsmaster (DATA_PATH
#     MFS_DIR/master, started from a copy of the package's empty metadata,
#     /var/lib/mfs/metadata.mfs.empty, as metadata.mfs: a master with no
#     metadata.mfs refuses to start), ports MFS_PORT..MFS_PORT+2 (9419..9421
#     by default); two mfschunkservers (DATA_PATH MFS_DIR/csK, one HDD
#     directory MFS_DIR/hddK each, ports MFS_PORT+3 and +4).  The goal is
#     2, MooseFS's default: every chunk on both chunkservers.
#   - MooseFS refuses 127.0.0.1 as a chunkserver's or a client's address,
#     so the chunkservers bind to 127.0.0.1 but reach the master at 0.0.0.0
#     (which Linux takes for the local address), and the master remaps the
#     chunkservers' 127.0.0.1 (REMAP_*) to 0.0.0.0 in what it tells the
#     clients; the clients reach the master with -H 127.0.0.1.
#   - two mfsmount mounts, MFS_M1 and MFS_M2: host 1 and host 2.
# How mfs_down cleans up (from teardown_file, whatever the tests did):
# unmount both (lazily if busy), then kill what it started by pid, never
# by name: the mounts' clients, the chunkservers and the master by their
# lock files (each holds its daemon's pid), the master's children, and
# whatever still runs in the namespace; then delete the namespace.  The
# state is also written to MFS_DIR/state and /run/mq-moosefs/NAME, so that
# test/shared/moosefs-down can clean up after a run killed before its
# teardown_file.
#
# Mount options (MFS_OPTS), each a cache that would show host 2 a state
# older than the one host 1 left, beyond what mq revalidates itself:
#   mfsattrcacheto=0      attributes (1 s by default): the size of a head
#                         or a journal another host appended to, a lease's
#                         deadline in a name's mtime.
#   mfsdirentrycacheto=0  the entries a directory listing returned (1 s):
#                         mfsmount answers lookups from them, so a message
#                         another host already renamed from new/ to cur/
#                         would still be found in new/.
#   mfsentrycacheto=0, mfsnegentrycacheto=0 (their defaults, said so that
#                         a site's mfsmount.cfg cannot change them): the
#                         kernel's positive and negative dentries; a
#                         negative one hides a reply or a message another
#                         host has just made.
# File data stays in mfscachemode=AUTO: the master tells a client to drop
# what it cached of a file another client opened for writing, and what
# decides a commit mq reads with O_DIRECT anyway (lib/base/sharedfs.c).
# Without these, the cross-host checks were seen to pass, but only by the
# luck of a second's poll; with them, a lookup costs a round trip to the
# master, as it does on GlusterFS.  mfsnice=0 and the daemons' NICE_LEVEL
# = 0: the default -19 would starve the test's own processes on 2 CPUs.
#
# Prerequisites (mfs_missing): root, /dev/fuse, mfsmaster, mfschunkserver,
# mfsmount, ip, nsenter, ss, findmnt.  Missing ones skip the tests, but
# fail them when CI is set: CI never skips these.

# checks.bash: helper.bash (its setup and teardown as helper_setup and
# helper_teardown) and the checks the cross-host tests share.
load checks

MFS_STATE_DIR=/run/mq-moosefs
MFS_EMPTY_META=/var/lib/mfs/metadata.mfs.empty
MFS_OPTS=mfsattrcacheto=0,mfsdirentrycacheto=0,mfsentrycacheto=0,mfsnegentrycacheto=0,mfsnice=0,mfsallowoomkiller
# How long the master keeps the session of a client that went away, and
# with it the session's locks: MooseFS's default is a day, and 60 s the
# least it takes; mq(7) tells an admin to shorten it.
MFS_SESSION_SUSTAIN=60

# mfs_missing: the first prerequisite missing, on stdout (status 1), or
# nothing (status 0).
mfs_missing() {
	local c
	[[ $(id -u) == 0 ]] || { echo "root (mfsmaster, mount)"; return 1; }
	[[ -c /dev/fuse ]] || { echo "/dev/fuse"; return 1; }
	for c in mfsmaster mfschunkserver mfsmount ip nsenter ss findmnt; do
		command -v "$c" >/dev/null || {
			echo "$c (apt-get install moosefs-master moosefs-chunkserver moosefs-client iproute2 util-linux)"
			return 1
		}
	done
	[[ -r $MFS_EMPTY_META ]] || { echo "$MFS_EMPTY_META (moosefs-master)"; return 1; }
	return 0
}

# mfs_log MSG: a line on the TAP stream (bats shows fd 3 as is).
mfs_log() {
	echo "# moosefs: $*" >&3
}

# mfs_ns CMD...: run CMD in the namespace (if there is one).  Only the
# network namespace: ip netns exec would also give CMD a mount namespace
# of its own, and the mounts would be seen by no one else.
mfs_ns() {
	if [[ -n $MFS_NS ]]; then
		nsenter --net="/run/netns/$MFS_NS" "$@"
	else
		"$@"
	fi
}

# mfs_cli ARGS...: mfscli, talking to our master (the mounts' own tools,
# mfsfileinfo and the like, go through their mount: run them with mfs_ns).
mfs_cli() {
	mfs_ns timeout 30 mfscli -H 127.0.0.1 -P "$((MFS_PORT + 2))" "$@"
}

# mfs_ours PID: PID is a process this harness started: it runs in our
# namespace, or, without one, its command line names MFS_DIR (mfsmount
# names its mount point, the daemons their config file), or it is a
# child of one that does (the master's data writer).
mfs_ours() {
	local pid=$1 cmd ppid
	[[ $pid =~ ^[0-9]+$ && -e /proc/$pid ]] || return 1
	if [[ -n $MFS_NS ]]; then
		[[ $(readlink "/proc/$pid/ns/net" 2>/dev/null) == "$MFS_NS_ID" ]]
		return
	fi
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
	[[ $cmd == *"$MFS_DIR/"* ]] && return 0
	ppid=$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null || true)
	[[ $ppid != "$pid" && $ppid != 1 && -n $ppid ]] &&
	    [[ $(tr '\0' ' ' <"/proc/$ppid/cmdline" 2>/dev/null) == *"$MFS_DIR/"* ]]
}

# mfs_kill PID: kill -9 PID if it is ours, and wait (bounded) until it is
# gone; its children (the master's data writer) with it.
mfs_kill() {
	local pid=$1 c
	mfs_ours "$pid" || return 0
	for c in $(cat "/proc/$pid/task/"*/children 2>/dev/null); do
		mfs_ours "$c" && kill -9 "$c" 2>/dev/null
	done
	kill -9 "$pid" 2>/dev/null || true
	wait_for -t 10 exited "$pid" || true
}

# mfs_lock_pid DIR: the pid a daemon wrote to the lock file of its
# DATA_PATH DIR.
mfs_lock_pid() {
	cat "$1"/.mfs*.lock 2>/dev/null | head -1
}

# mfs_ns_pids: every process in our namespace (none without one).
mfs_ns_pids() {
	local p
	[[ -n $MFS_NS ]] || return 0
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/ns/net" 2>/dev/null) == "$MFS_NS_ID" ]] && echo "${p#/proc/}"
	done
	return 0
}

# mfs_save_state: what mfs_down (or test/shared/moosefs-down) needs.
mfs_save_state() {
	local s
	s=$(declare -p MFS_NAME MFS_DIR MFS_NS MFS_NS_ID MFS_PORT MFS_M1 MFS_M2 MFS_OWNER)
	echo "$s" >"$MFS_DIR/state"
	mkdir -p "$MFS_STATE_DIR"
	echo "$s" >"$MFS_STATE_DIR/$MFS_NAME"
}

# mfs_leftovers: states of earlier runs whose owner (the bats process) is
# gone without cleaning up.
mfs_leftovers() {
	local f owner
	for f in "$MFS_STATE_DIR"/mqmfs-*; do
		[[ -f $f ]] || continue
		owner=$(. "$f" && echo "$MFS_OWNER")
		[[ -n $owner && -e /proc/$owner ]] && continue
		echo "$f"
	done
}

mfs_ports_taken() {
	local p
	for ((p = MFS_PORT; p <= MFS_PORT + 4; p++)); do
		[[ -n $(ss -Hltn "sport = :$p" 2>/dev/null) ]] && return 0
	done
	return 1
}

# mfs_daemon_config: the settings both daemons take: run as root (the
# files are root's), at normal priority, killable by the OOM killer.
mfs_daemon_config() {
	printf '%s\n' "WORKING_USER = root" "WORKING_GROUP = root" \
	    "NICE_LEVEL = 0" "DISABLE_OOM_KILLER = 0" "DATA_PATH = $1"
}

# mfs_write_master: the master's config files and its fresh metadata.
mfs_write_master() {
	local d=$MFS_DIR
	echo "*	/	rw,alldirs,admin,maproot=0:0" >"$d/mfsexports.cfg"
	: >"$d/mfstopology.cfg"
	cp "$MFS_EMPTY_META" "$d/master/metadata.mfs"
	{
		mfs_daemon_config "$d/master"
		cat <<-EOF
		EXPORTS_FILENAME = $d/mfsexports.cfg
		TOPOLOGY_FILENAME = $d/mfstopology.cfg
		MATOML_LISTEN_HOST = 127.0.0.1
		MATOML_LISTEN_PORT = $MFS_PORT
		MATOCS_LISTEN_HOST = 127.0.0.1
		MATOCS_LISTEN_PORT = $((MFS_PORT + 1))
		MATOCL_LISTEN_HOST = 127.0.0.1
		MATOCL_LISTEN_PORT = $((MFS_PORT + 2))
		REMAP_BITS = 32
		REMAP_SOURCE_IP_CLASS = 127.0.0.1
		REMAP_DESTINATION_IP_CLASS = 0.0.0.0
		SESSION_SUSTAIN_TIME = $MFS_SESSION_SUSTAIN
		EOF
	} >"$d/mfsmaster.cfg"
}

# mfs_write_chunkserver K [FSYNC]: chunkserver K's config files;
# HDD_FSYNC_BEFORE_CLOSE is FSYNC (0, MooseFS's default, unless given).
mfs_write_chunkserver() {
	local d=$MFS_DIR k=$1
	echo "$d/hdd$k" >"$d/mfshdd$k.cfg"
	{
		mfs_daemon_config "$d/cs$k"
		cat <<-EOF
		HDD_CONF_FILENAME = $d/mfshdd$k.cfg
		HDD_FSYNC_BEFORE_CLOSE = ${2:-0}
		MASTER_HOST = 0.0.0.0
		MASTER_PORT = $((MFS_PORT + 1))
		BIND_HOST = 127.0.0.1
		CSSERV_LISTEN_HOST = 127.0.0.1
		CSSERV_LISTEN_PORT = $((MFS_PORT + 2 + k))
		EOF
	} >"$d/mfschunkserver$k.cfg"
}

# mfs_daemon NAME CFG: start the daemon NAME (it forks once it listens).
# Its output goes to a log of its own, and it keeps no descriptor of
# bats' (fd 3), which would hold the run open.
mfs_daemon() {
	mfs_ns "$1" -c "$2" start </dev/null >>"$MFS_DIR/log/${2##*/}.log" 2>&1 3>&- ||
	    fail "$1 did not start: $(tail -5 "$MFS_DIR/log/${2##*/}.log")"
}

# mfs_chunkservers N: the master counts N chunkservers.
mfs_chunkservers() {
	local n
	n=$(mfs_cli -SCS -p 2>/dev/null | grep -c '^chunk servers:' || true)
	((n == $1))
}

# mfs_cs_pid K: chunkserver K's pid.
mfs_cs_pid() {
	mfs_lock_pid "$MFS_DIR/cs$1"
}

# mfs_cs_fsync K 0|1: chunkserver K runs with HDD_FSYNC_BEFORE_CLOSE 0 or
# 1: its config rewritten, then reloaded (SIGHUP, as mfschunkserver
# reload sends, by pid), which takes the setting in at once.
mfs_cs_fsync() {
	mfs_write_chunkserver "$1" "$2"
	kill -HUP "$(mfs_cs_pid "$1")"
}

mfs_mounted() {
	[[ $(findmnt -n -o SOURCE --mountpoint "$1" 2>/dev/null) == "mfs#127.0.0.1:$((MFS_PORT + 2))" ]]
}

# mfs_mount N: mount the file system at MFS_MN (host N).
mfs_mount() {
	local m
	m=$(mfs_mount_point "$1")
	mfs_ns mfsmount -H 127.0.0.1 -P "$((MFS_PORT + 2))" -o "$MFS_OPTS" "$m" \
	    </dev/null >>"$MFS_DIR/log/m$1.log" 2>&1 3>&- ||
	    fail "mfsmount $1 failed: $(tail -5 "$MFS_DIR/log/m$1.log")"
	mfs_mounted "$m" || fail "$m is not a MooseFS mount: $(findmnt "$m")"
}

mfs_mount_point() {
	echo "$MFS_DIR/m$1"
}

# mfs_client_pid N: the pid of host N's mfsmount, which names its mount
# point in its process title ("mfsmount (mounted on: M)").
mfs_client_pid() {
	local m p
	m=$(mfs_mount_point "$1")
	for p in /proc/[0-9]*; do
		[[ $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) == "mfsmount (mounted on: $m)"* ]] &&
		    mfs_ours "${p#/proc/}" && echo "${p#/proc/}"
	done
	return 0
}

# mfs_up: start the master and the chunkservers, mount twice.
mfs_up() {
	local f why
	if ! why=$(mfs_missing); then
		if [[ -n ${CI:-} ]]; then
			fail "MooseFS tests cannot run, and CI=$CI, so they fail: they need $why"
		fi
		# Bats 1.8 cannot skip from setup_file: mfs_setup skips.
		export MFS_SKIP="MooseFS tests need $why"
		return 0
	fi
	export MFS_OWNER=$$ MFS_NAME=mqmfs-$$ MFS_DIR=$BATS_FILE_TMPDIR/mfs
	export MFS_PORT=${MFS_PORT:-19419}
	export MFS_M1=$MFS_DIR/m1 MFS_M2=$MFS_DIR/m2 MFS_NS="" MFS_NS_ID=""
	mkdir -p "$MFS_DIR"/{master,cs1,cs2,hdd1,hdd2,m1,m2,log}
	f=$(mfs_leftovers)
	if [[ -n $f ]]; then
		fail "an earlier run of the MooseFS tests was killed before it cleaned up ($f): run test/shared/moosefs-down first"
	fi
	if [[ -z ${MFS_NO_NETNS:-} ]] && ip netns add "$MFS_NAME" 2>/dev/null; then
		MFS_NS=$MFS_NAME
		MFS_NS_ID=$(nsenter --net="/run/netns/$MFS_NS" readlink /proc/self/ns/net)
		mfs_ns ip link set lo up || fail "cannot bring up lo in namespace $MFS_NS"
	else
		mfs_log "no network namespace${MFS_NO_NETNS:+ (MFS_NO_NETNS is set)}: MooseFS runs in the host's"
		mfs_ports_taken && fail "a TCP port of $MFS_PORT..$((MFS_PORT + 4)) is taken: set MFS_PORT to a free range (or run where 'ip netns add' works)"
	fi
	mfs_save_state

	mfs_write_master
	mfs_daemon mfsmaster "$MFS_DIR/mfsmaster.cfg"
	for f in 1 2; do
		mfs_write_chunkserver "$f"
		mfs_daemon mfschunkserver "$MFS_DIR/mfschunkserver$f.cfg"
	done
	wait_for -t 30 mfs_chunkservers 2 ||
	    fail "the master does not count 2 chunkservers: $(mfs_cli -SCS 2>&1 | tail -5)"
	mfs_mount 1
	mfs_mount 2
	mfs_log "master on 127.0.0.1:$((MFS_PORT + 2)), 2 chunkservers, goal 2${MFS_NS:+, netns $MFS_NS}; mounted at $MFS_M1 and $MFS_M2"
}

# mfs_down: undo mfs_up, as far as it got.  Never fails.
mfs_down() {
	local m p
	[[ -n ${MFS_NAME:-} ]] || return 0
	# A run killed after bats removed its directory: what is left is in
	# its namespace and its state file.
	[[ -n ${MFS_DIR:-} && -d $MFS_DIR ]] || {
		mfs_down_ns
		return 0
	}
	for m in "$MFS_M1" "$MFS_M2"; do
		if findmnt --mountpoint "$m" >/dev/null 2>&1; then
			timeout 30 umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		fi
	done
	for m in 1 2; do
		for p in $(mfs_client_pid "$m"); do
			mfs_kill "$p"
		done
	done
	for m in cs1 cs2 master; do
		mfs_kill "$(mfs_lock_pid "$MFS_DIR/$m")"
	done
	mfs_down_ns
	return 0
}

# mfs_down_ns: what a run leaves outside its directory: the processes in
# its network namespace, the namespace, its state.
mfs_down_ns() {
	local p
	for p in $(mfs_ns_pids); do
		mfs_kill "$p"
	done
	if [[ -n $MFS_NS ]]; then
		ip netns del "$MFS_NS" 2>/dev/null || true
	fi
	rm -f "$MFS_STATE_DIR/$MFS_NAME"
}

# --- per test ----------------------------------------------------------------

# mfs_setup: the helper's setup, then this test's spool on the file
# system: S1 as host 1 sees it, S2 as host 2 does.  MQ_SPOOL is S1.
# Consumers poll every 200 ms (MQ_POLL) instead of the default second on
# FUSE.
mfs_setup() {
	helper_setup
	[[ -z ${MFS_SKIP:-} ]] || skip "$MFS_SKIP"
	[[ -n ${MFS_DIR:-} ]] || fail "setup_file did not run mfs_up"
	mfs_mounted "$MFS_M1" && mfs_mounted "$MFS_M2" || fail "the file system is not mounted"
	M1=$MFS_M1 M2=$MFS_M2
	S1=$M1/s$BATS_TEST_NUMBER
	S2=$M2/s$BATS_TEST_NUMBER
	export MQ_SPOOL=$S1
	export MQ_POLL=200ms
}

# --- the harness API (crosshost.bats, test/shared/locks.bats) ----------------

fs_up() { mfs_up; }
fs_down() { mfs_down; }
fs_setup() { mfs_setup; }
fs_name() { echo MooseFS; }

# FS_DEAD_BOUND: seconds within which the file system releases the locks
# of a host whose client was killed (fs_kill_client): the master's
# SESSION_SUSTAIN_TIME and the few seconds its session sweep takes (65 s
# measured with 60).
FS_DEAD_BOUND=${FS_DEAD_BOUND:-$((MFS_SESSION_SUSTAIN + 10))}

# fs_kill_ready: wait until a client killed now has its locks released
# within FS_DEAD_BOUND.  The master sweeps away a disconnected session
# only once it has run two minutes (mfsmaster's sessions.c): a master
# just started would add its start-up to the bound, which a running
# cluster never sees.
fs_kill_ready() {
	wait_for -t 180 mfs_master_up_for 125
}

# fs_kill_client N: kill -9 host N's mfsmount, as a host that dies would
# leave it: the mount stays, dead (ENOTCONN), until fs_remount N; the
# master keeps the session (and its locks) for SESSION_SUSTAIN_TIME.
fs_kill_client() {
	local p
	p=$(mfs_client_pid "$1")
	[[ $p =~ ^[0-9]+$ ]] || fail "no mfsmount for host $1: '$p'"
	kill -9 "$p"
	wait_for -t 30 exited "$p" || fail "mfsmount $p (host $1) does not die"
}

# mfs_master_up_for SECONDS: the master has run at least SECONDS.
mfs_master_up_for() {
	local t
	t=$(ps -o etimes= -p "$(mfs_lock_pid "$MFS_DIR/master")") || return 1
	((t >= $1))
}

# fs_remount N: host N comes back: its dead mount lazily unmounted, a new
# mfsmount (a new session) mounted in its place.
fs_remount() {
	local m
	m=$(mfs_mount_point "$1")
	umount -l "$m" 2>/dev/null || true
	mfs_mount "$1"
}
