# gluster.bash: a GlusterFS volume mounted twice on this machine, for the
# cross-host tests of gluster.bats (two FUSE clients, each with its own
# caches, stand for two hosts sharing a spool).
#
# What gl_up sets up (from setup_file, once per bats file; a few seconds),
# everything under $BATS_FILE_TMPDIR/gl (GL_DIR):
#   - a network namespace of its own, mqgl-PID (ip netns), so that this
#     glusterd's TCP port 24007 and its bricks' ports meet no other glusterd
#     on the machine.  Where no namespace can be made (or GL_NO_NETNS=1)
#     it runs in the host's, and then refuses to start (a clear failure)
#     if port 24007 is taken.
#   - a private glusterd: working directory, run directory (pid files), log
#     directory and CLI socket in GL_DIR, from a copy of
#     /etc/glusterfs/glusterd.vol; gl_cli talks to it.
#   - a replica-3 volume mq<PID> (GL_VOL) of three bricks GL_DIR/b1..b3 on a
#     host name that resolves to 127.0.0.1 (the machine's own name, or a
#     line "127.0.0.1 mqgl-PID" added to /etc/hosts).
#   - two FUSE mounts of it, GL_M1 and GL_M2: host 1 and host 2.
# How gl_down cleans up (from teardown_file, whatever the tests did):
# unmount both (lazily if busy), stop and delete the volume, then kill what
# it started by pid, never by name: glusterd by its pid file, the bricks
# and the self-heal daemon by the pid files of its run directory, and, in
# the namespace, whatever still runs there (a client left by a lazy
# unmount); remove the sockets those left in /var/run/gluster; then
# delete the namespace and the /etc/hosts line it added.
# The state is also written to GL_DIR/state and /run/mq-gluster/NAME, so
# that test/shared/gluster-down can clean up after a run that was killed
# before its teardown_file.
#
# Prerequisites (gl_missing): root, /dev/fuse, glusterd, gluster,
# mount.glusterfs, python3, ss, nsenter.  Missing ones skip the tests, but
# fail them when CI is set: CI never skips these.

# checks.bash: helper.bash (its setup and teardown as helper_setup and
# helper_teardown) and the checks the cross-host tests share.
load checks

GL_FUSE_MAGIC=65735546
GL_STATE_DIR=/run/mq-gluster

# gl_missing: the first prerequisite missing, on stdout (status 1), or
# nothing (status 0).
gl_missing() {
	local c
	[[ $(id -u) == 0 ]] || { echo "root (glusterd, mount)"; return 1; }
	[[ -c /dev/fuse ]] || { echo "/dev/fuse"; return 1; }
	for c in glusterd gluster mount.glusterfs python3 ss nsenter; do
		command -v "$c" >/dev/null || {
			echo "$c (apt-get install glusterfs-server glusterfs-client iproute2 util-linux python3)"
			return 1
		}
	done
	[[ -r /etc/glusterfs/glusterd.vol ]] || { echo "/etc/glusterfs/glusterd.vol (glusterfs-server)"; return 1; }
	return 0
}

# gl_skip_or_fail: from gl_up, with a prerequisite missing: under CI,
# fail (setup_file fails); else set GL_SKIP, for gl_setup to skip each
# test (bats 1.8 cannot skip from setup_file).  Plain calls only: fail
# works through set -e.
gl_skip_or_fail() {
	if [[ -n ${CI:-} ]]; then
		fail "GlusterFS tests cannot run, and CI=$CI, so they fail: they need $1"
	fi
	export GL_SKIP="GlusterFS tests need $1"
}

# gl_log MSG: a line on the TAP stream (bats shows fd 3 as is).
gl_log() {
	echo "# gluster: $*" >&3
}

# gl_ns CMD...: run CMD in glusterd's network namespace (if it has one).
gl_ns() {
	if [[ -n $GL_NS ]]; then
		nsenter --net="/run/netns/$GL_NS" "$@"
	else
		"$@"
	fi
}

# gl_cli ARGS...: the gluster CLI, talking to our glusterd only.
gl_cli() {
	timeout 120 gluster --glusterd-sock="$GL_DIR/glusterd.socket" \
	    --log-file="$GL_DIR/log/cli.log" --mode=script "$@"
}

# gl_ours PID: PID is a process this harness started (it runs in our
# namespace, or, without one, its command line names GL_DIR).
gl_ours() {
	local pid=$1 cmd
	[[ $pid =~ ^[0-9]+$ && -e /proc/$pid ]] || return 1
	if [[ -n $GL_NS ]]; then
		[[ $(readlink "/proc/$pid/ns/net" 2>/dev/null) == "$GL_NS_ID" ]]
	else
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
		[[ $cmd == *"$GL_DIR"* ]]
	fi
}

# gl_kill PID: kill -9 PID if it is ours, and wait (bounded) until it is gone.
gl_kill() {
	gl_ours "$1" || return 0
	kill -9 "$1" 2>/dev/null || true
	wait_for -t 10 exited "$1" || true
}

# gl_ns_pids: every process in our namespace (none without one).
gl_ns_pids() {
	local p
	[[ -n $GL_NS ]] || return 0
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/ns/net" 2>/dev/null) == "$GL_NS_ID" ]] && echo "${p#/proc/}"
	done
	return 0
}

# gl_note_sockets: glusterd puts the sockets of its bricks and self-heal
# daemon in /var/run/gluster whatever its run directory says, and nothing
# removes them after a kill: their paths (-S of each process started from a
# pid file in our run directory) are kept in GL_DIR/sockets for gl_down.
gl_note_sockets() {
	local f pid k
	local -a a
	while IFS= read -r f; do
		pid=$(cat "$f" 2>/dev/null || true)
		gl_ours "$pid" || continue
		mapfile -d '' -t a <"/proc/$pid/cmdline" 2>/dev/null || continue
		for ((k = 0; k + 1 < ${#a[@]}; k++)); do
			[[ ${a[k]} == -S && ${a[k + 1]} == /var/run/gluster/*.socket ]] &&
			    echo "${a[k + 1]}" >>"$GL_DIR/sockets"
		done
	done < <(find "$GL_DIR/run" -name '*.pid' 2>/dev/null)
	return 0
}

gl_port_taken() {
	[[ -n $(ss -Hltn 'sport = :24007' 2>/dev/null) ]]
}

# gl_save_state: what gl_down (or test/shared/gluster-down) needs.
gl_save_state() {
	local s
	s=$(declare -p GL_NAME GL_DIR GL_NS GL_NS_ID GL_VOL GL_M1 GL_M2 GL_HOSTS_LINE GL_OWNER)
	echo "$s" >"$GL_DIR/state"
	mkdir -p "$GL_STATE_DIR"
	echo "$s" >"$GL_STATE_DIR/$GL_NAME"
}

# gl_leftovers: states of earlier runs whose owner (the bats process) is
# gone without cleaning up.
gl_leftovers() {
	local f owner
	for f in "$GL_STATE_DIR"/mqgl-*; do
		[[ -f $f ]] || continue
		owner=$(. "$f" && echo "$GL_OWNER")
		[[ -n $owner && -e /proc/$owner ]] && continue
		echo "$f"
	done
}

# gl_host: a name for the bricks that resolves to 127.0.0.1 and is neither
# localhost nor an address (gluster refuses those); adds one to /etc/hosts
# if the machine's own name does not do.
gl_host() {
	local h addr
	h=$(hostname)
	addr=$(getent hosts "$h" | awk '{ print $1; exit }')
	if [[ $h != localhost && $addr == 127.* ]]; then
		GL_HOST=$h
		return
	fi
	GL_HOST=$GL_NAME
	GL_HOSTS_LINE="127.0.0.1 $GL_HOST"
	echo "$GL_HOSTS_LINE" >>/etc/hosts
}

# gl_bricks: one line per brick of the volume: PATH PID ONLINE(1/0).
gl_bricks() {
	gl_cli volume status "$GL_VOL" --xml 2>/dev/null | python3 -c '
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.stdin).getroot()
except ET.ParseError:
    sys.exit(1)
for n in root.iter("node"):
    if n.findtext("hostname") == "Self-heal Daemon":
        continue
    print(n.findtext("path"), n.findtext("pid"), n.findtext("status"))
'
}

# gl_bricks_online N: N bricks report status 1.
gl_bricks_online() {
	local n
	n=$(gl_bricks | awk '$3 == 1' | wc -l)
	((n == $1))
}

# gl_brick_pid K: the pid of brick K (1, 2 or 3), as gluster reports it.
gl_brick_pid() {
	gl_bricks | awk -v p="$GL_DIR/b$1" '$1 == p { print $2 }'
}

# gone PID: no process PID at all, not even a zombie (glusterd takes a
# zombie brick for a running one and will not start it again).
gone() {
	[[ ! -e /proc/$1 ]]
}

# gl_brick_kill K: kill -9 brick K (1, 2 or 3), by the pid gluster reports,
# and wait until it is gone; its pid is written to $TD/.brick-killed for
# the test's teardown.
gl_brick_kill() {
	local pid
	pid=$(gl_brick_pid "$1")
	if ! [[ $pid =~ ^[0-9]+$ ]] || ! gl_ours "$pid"; then
		fail "no pid for brick $1: $(gl_bricks)"
	fi
	echo "$pid" >"$TD/.brick-killed"
	kill -9 "$pid"
	wait_for -t 60 gone "$pid"
}

# gl_brick_restart: start the bricks that are down (volume start force)
# and wait until all three are online; glusterd may not have taken in the
# death yet, so the start is tried again.
gl_brick_restart() {
	local pid _
	if [[ -f $TD/.brick-killed ]]; then
		pid=$(cat "$TD/.brick-killed")
		wait_for -t 60 gone "$pid" || true
	fi
	for _ in 1 2 3; do
		gl_cli volume start "$GL_VOL" force >/dev/null 2>&1 || true
		if wait_for -t 20 gl_bricks_online 3; then
			gl_note_sockets
			rm -f "$TD/.brick-killed"
			return 0
		fi
	done
	return 1
}

gl_mounted() {
	[[ $(stat -f -c %t "$1" 2>/dev/null) == "$GL_FUSE_MAGIC" ]]
}

gl_glusterd_up() {
	[[ -s $GL_DIR/glusterd.pid ]] && gl_cli volume list >/dev/null 2>&1
}

# gl_up: start glusterd, make and start the volume, mount it twice.
gl_up() {
	local f why
	if ! why=$(gl_missing); then
		gl_skip_or_fail "$why"
		return 0
	fi
	export GL_OWNER=$$
	export GL_NAME=mqgl-$$
	export GL_DIR=$BATS_FILE_TMPDIR/gl
	export GL_VOL=mq$$
	export GL_M1=$GL_DIR/m1 GL_M2=$GL_DIR/m2
	export GL_NS="" GL_NS_ID="" GL_HOSTS_LINE=""
	mkdir -p "$GL_DIR"/{wd,run,log,b1,b2,b3,m1,m2}
	# The CLI socket path must fit in sockaddr_un.
	((${#GL_DIR} < 80)) || fail "GL_DIR too long for a socket path: $GL_DIR"
	f=$(gl_leftovers)
	if [[ -n $f ]]; then
		fail "an earlier run of the GlusterFS tests was killed before it cleaned up ($f): run test/shared/gluster-down first"
	fi

	if [[ -z ${GL_NO_NETNS:-} ]] && ip netns add "$GL_NAME" 2>/dev/null; then
		GL_NS=$GL_NAME
		GL_NS_ID=$(nsenter --net="/run/netns/$GL_NS" readlink /proc/self/ns/net)
		gl_ns ip link set lo up || fail "cannot bring up lo in namespace $GL_NS"
	else
		gl_log "no network namespace${GL_NO_NETNS:+ (GL_NO_NETNS is set)}: glusterd runs in the host's"
		if gl_port_taken; then
			fail "TCP port 24007 is taken: another glusterd runs on this machine ($(ss -Hltnp 'sport = :24007')). Stop it (or run where 'ip netns add' works) and run the tests again."
		fi
	fi
	gl_host
	gl_save_state

	sed -e "s|/var/lib/glusterd|$GL_DIR/wd|" \
	    -e "/^end-volume/i\\    option glusterd-sockfile $GL_DIR/glusterd.socket" \
	    -e "/^end-volume/i\\    option run-directory $GL_DIR/run" \
	    -e "/^end-volume/i\\    option logging-directory $GL_DIR/log" \
	    /etc/glusterfs/glusterd.vol >"$GL_DIR/glusterd.vol"
	gl_ns glusterd -f "$GL_DIR/glusterd.vol" -p "$GL_DIR/glusterd.pid" \
	    -l "$GL_DIR/log/glusterd.log" ||
	    fail "glusterd did not start: $(tail -5 "$GL_DIR/log/glusterd.log" 2>/dev/null)"
	wait_for -t 30 gl_glusterd_up ||
	    fail "glusterd does not answer: $(tail -5 "$GL_DIR/log/glusterd.log" 2>/dev/null)"

	gl_cli volume create "$GL_VOL" replica 3 \
	    "$GL_HOST:$GL_DIR/b1" "$GL_HOST:$GL_DIR/b2" "$GL_HOST:$GL_DIR/b3" force >/dev/null ||
	    fail "volume create failed"
	gl_cli volume start "$GL_VOL" >/dev/null || fail "volume start failed"
	wait_for -t 60 gl_bricks_online 3 || fail "bricks not online: $(gl_bricks)"
	gl_note_sockets

	for f in 1 2; do
		gl_ns mount -t glusterfs -o "log-file=$GL_DIR/log/m$f.log" \
		    "127.0.0.1:/$GL_VOL" "$GL_DIR/m$f" ||
		    fail "mount $f failed: $(tail -5 "$GL_DIR/log/m$f.log" 2>/dev/null)"
		gl_mounted "$GL_DIR/m$f" || fail "$GL_DIR/m$f is not a FUSE mount"
	done
	gl_log "volume $GL_VOL (replica 3, bricks on $GL_HOST${GL_NS:+, netns $GL_NS}) mounted at $GL_M1 and $GL_M2"
}

# gl_down: undo gl_up, as far as it got.  Never fails.
gl_down() {
	local m p f
	[[ -n ${GL_NAME:-} ]] || return 0
	# A run killed after bats removed its directory: what is left is in
	# its namespace and its state file.
	[[ -n ${GL_DIR:-} && -d $GL_DIR ]] || {
		gl_down_ns
		return 0
	}
	gl_note_sockets
	for m in "$GL_M1" "$GL_M2"; do
		if gl_mounted "$m"; then
			timeout 30 umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		fi
	done
	if [[ -S $GL_DIR/glusterd.socket ]] && gl_glusterd_up; then
		gl_cli volume stop "$GL_VOL" force >/dev/null 2>&1 || true
		gl_cli volume delete "$GL_VOL" >/dev/null 2>&1 || true
	fi
	if [[ -s $GL_DIR/glusterd.pid ]]; then
		gl_kill "$(cat "$GL_DIR/glusterd.pid")"
	fi
	while IFS= read -r f; do
		gl_kill "$(cat "$f" 2>/dev/null)"
	done < <(find "$GL_DIR/run" -name '*.pid' 2>/dev/null)
	if [[ -f $GL_DIR/sockets ]]; then
		while IFS= read -r f; do
			[[ -S $f ]] && rm -f "$f"
		done < <(sort -u "$GL_DIR/sockets")
	fi
	gl_down_ns
	return 0
}

# gl_down_ns: what a run leaves outside its directory: the processes in
# its network namespace, the namespace, its /etc/hosts line, its state.
gl_down_ns() {
	local p hosts
	for p in $(gl_ns_pids); do
		gl_kill "$p"
	done
	if [[ -n $GL_NS ]]; then
		ip netns del "$GL_NS" 2>/dev/null || true
	fi
	if [[ -n $GL_HOSTS_LINE ]]; then
		# Rewritten in place: /etc/hosts may be a bind mount.
		hosts=$(mktemp)
		grep -vxF "$GL_HOSTS_LINE" /etc/hosts >"$hosts" || true
		cat "$hosts" >/etc/hosts
		rm -f "$hosts"
	fi
	rm -f "$GL_STATE_DIR/$GL_NAME"
}

# --- per test ----------------------------------------------------------------

# gl_setup: the helper's setup, then this test's spool on the volume: S1 as
# host 1 sees it, S2 as host 2 does.  MQ_SPOOL is S1.  Consumers poll every
# 200 ms (MQ_POLL) instead of the default second on FUSE.
gl_setup() {
	helper_setup
	[[ -z ${GL_SKIP:-} ]] || skip "$GL_SKIP"
	[[ -n ${GL_DIR:-} ]] || fail "setup_file did not run gl_up"
	gl_mounted "$GL_M1" && gl_mounted "$GL_M2" || fail "the volume is not mounted"
	S1=$GL_M1/s$BATS_TEST_NUMBER
	S2=$GL_M2/s$BATS_TEST_NUMBER
	export MQ_SPOOL=$S1
	export MQ_POLL=200ms
}

# --- the harness API (crosshost.bats, test/shared/locks.bats) ----------------

fs_up() { gl_up; }
fs_down() { gl_down; }
fs_setup() {
	gl_setup
	M1=$GL_M1 M2=$GL_M2
}
fs_name() { echo GlusterFS; }

# --- clients (the fs API of locks.bats) -------------------------------------

# fs_client_pid N: the pid of host N's FUSE client (the glusterfs process
# whose last argument is mount N), on stdout; status 1 if none.
fs_client_pid() {
	local m=$GL_DIR/m$1 p
	local -a a
	for p in /proc/[0-9]*; do
		gl_ours "${p#/proc/}" || continue
		mapfile -d '' -t a <"$p/cmdline" 2>/dev/null || continue
		[[ ${a[0]##*/} == glusterfs && ${a[-1]} == "$m" ]] || continue
		echo "${p#/proc/}"
		return 0
	done
	return 1
}

# fs_kill_ready: a client killed now has its locks released within
# FS_DEAD_BOUND (a brick lets them go when the connection closes).
fs_kill_ready() { :; }

# fs_kill_client N: kill -9 host N's FUSE client, by pid, as a host that
# dies does: its TCP connections close, its mount answers ENOTCONN.
fs_kill_client() {
	local pid
	pid=$(fs_client_pid "$1") || fail "no FUSE client for mount $1"
	kill -9 "$pid"
	wait_for -t 10 gone "$pid"
}

# fs_remount N: mount N again after fs_kill_client (the dead mount is
# unmounted lazily first: processes may still hold files in it).
fs_remount() {
	local m=$GL_DIR/m$1
	umount -l "$m" 2>/dev/null || true
	gl_ns mount -t glusterfs -o "log-file=$GL_DIR/log/m$1.log" \
	    "127.0.0.1:/$GL_VOL" "$m" || fail "remount $1 failed"
	wait_for -t 30 gl_mounted "$m"
}

# FS_DEAD_BOUND: seconds within which the file system releases the locks
# of a host whose client was killed (fs_kill_client): each brick drops a
# client's locks when its connection closes (locks.bats measured it).
FS_DEAD_BOUND=${FS_DEAD_BOUND:-10}
