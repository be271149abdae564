# sshfs.bash: one directory exported by an sshd of the test's own and
# mounted twice with sshfs, for the cross-host tests of sshfs.bats: two
# sshfs clients, each a FUSE mount with caches of its own and an ssh
# connection of its own, stand for two hosts sharing a spool.
#
# What sf_up sets up (from setup_file, once per bats file; under a second),
# everything under $BATS_FILE_TMPDIR/sf (SF_DIR):
#   - a host key and a client key (ssh-keygen), authorized_keys holding the
#     client's public key;
#   - a private sshd (/usr/sbin/sshd -D -e -f SF_DIR/sshd_config) listening
#     on 127.0.0.1 at a port nothing else listens on (SF_PORT), root login
#     by key only, sftp served by internal-sftp; its log in SF_DIR/sshd.log;
#   - SF_DIR/export, the server's directory, and two sshfs mounts of it,
#     SF_M1 and SF_M2: host 1 and host 2.  ssh reads SF_DIR/ssh_config only
#     (sshfs -F): the port, the key, no known_hosts, batch mode.
# How sf_down cleans up (from teardown_file, whatever the tests did):
# unmount both (lazily if busy), wait for the sshfs processes to end, then
# end what is left by pid, never by name: the sshfs processes, the sshd
# by its pid file, the sshd processes serving the connections (children of
# that sshd).  The state is also written to /run/mq-sshfs/NAME; sf_up
# cleans up after a run killed before its teardown_file (its bats process
# gone) the same way: its mounts, and the processes whose command line
# names its directory, with their children.
#
# Mount options (SF_OPTS): dir_cache=no.  sshfs caches directory listings
# for dcache_timeout (20 s by default) and drops a listing only when the
# same mount changes that directory, so with its defaults a consumer on
# host 2 lists a new/ without host 1's new messages for up to 20 s, fresh
# opendir(3) or not.  Nothing is lost, but nothing arrives "within the poll
# interval" either; mq cannot turn that cache off from inside, so hosts
# sharing a spool over sshfs mount with -o dir_cache=no.
#
# Prerequisites (sf_require): root, /dev/fuse, sshfs, fusermount3 (or
# fusermount), /usr/sbin/sshd and its /run/sshd (made if missing), ssh,
# ssh-keygen, ss, python3, setsid.  Missing ones skip the tests, but fail
# them when CI is set: CI never skips these.

# checks.bash: helper.bash (its setup and teardown as helper_setup and
# helper_teardown) and the checks the cross-host tests share.
load checks

SF_FUSE_MAGIC=65735546
SF_STATE_DIR=/run/mq-sshfs
SF_SSHD=/usr/sbin/sshd
SF_OPTS=dir_cache=no

# sf_unavailable REASON: set SF_NEED to REASON and return 1: sf_up then
# fails under CI, else makes every test skip (SF_SKIP, sf_setup).  (Bats
# 1.8 has no skip in setup_file: there it fails the file.)
sf_unavailable() {
	SF_NEED=$1
	return 1
}

# sf_require: every prerequisite is there, else sf_unavailable.
sf_require() {
	local c
	[[ $(id -u) == 0 ]] || {
		sf_unavailable "root (sshd, FUSE mounts)"
		return
	}
	[[ -c /dev/fuse ]] || {
		sf_unavailable "/dev/fuse"
		return
	}
	[[ -x $SF_SSHD ]] || {
		sf_unavailable "$SF_SSHD (apt-get install openssh-server)"
		return
	}
	for c in sshfs ssh ssh-keygen ss python3 setsid; do
		command -v "$c" >/dev/null || {
			sf_unavailable "$c (apt-get install sshfs openssh-client iproute2 python3 util-linux)"
			return
		}
	done
	SF_FUSERMOUNT=$(command -v fusermount3 || command -v fusermount || true)
	[[ -n $SF_FUSERMOUNT ]] || {
		sf_unavailable "fusermount3 (apt-get install fuse3)"
		return
	}
	# sshd's privilege separation directory.
	[[ -d /run/sshd ]] || mkdir -m 0755 /run/sshd || {
		sf_unavailable "/run/sshd (sshd's privilege separation directory)"
		return
	}
	return 0
}

# sf_log MSG: a line on the TAP stream (bats shows fd 3 as is).
sf_log() {
	echo "# sshfs: $*" >&3
}

# sf_cmdline PID: the command line of PID, arguments joined by spaces.
sf_cmdline() {
	tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true
}

# sf_children PID: the pids of PID's descendants (children first).
sf_children() {
	local -A kids=()
	local s pid ppid
	local -a a
	for s in /proc/[0-9]*/stat; do
		s=$(cat "$s" 2>/dev/null) || continue
		pid=${s%% *}
		read -ra a <<<"${s##*) }"
		ppid=${a[1]}
		kids[$ppid]+=" $pid"
	done
	local queue=("$1") p c
	while ((${#queue[@]})); do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		for c in ${kids[$p]:-}; do
			echo "$c"
			queue+=("$c")
		done
	done
}

# sf_ours DIR PID: PID runs, and its command line names DIR (the sshd by
# its config, sshfs and its ssh by their ssh_config).
sf_ours() {
	local dir=$1 pid=$2
	[[ $pid =~ ^[0-9]+$ && -e /proc/$pid ]] || return 1
	[[ $(sf_cmdline "$pid") == *"$dir/"* ]]
}

# sf_kill_tree DIR PID: if PID is ours (sf_ours), SIGTERM it and its
# descendants, then SIGKILL what is left after a bounded wait.
sf_kill_tree() {
	local dir=$1 pid=$2 p
	sf_ours "$dir" "$pid" || return 0
	local -a all=("$pid")
	mapfile -t -O 1 all < <(sf_children "$pid")
	for p in "${all[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${all[@]}"; do
		wait_for -t 5 exited "$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
	done
	return 0
}

# sf_mounted DIR: DIR is an sshfs mount now.
sf_mounted() {
	awk -v m="$1" '$2 == m && $3 == "fuse.sshfs" { f = 1 } END { exit !f }' /proc/mounts
}

# sf_unmount DIR: unmount DIR if it is mounted, lazily if it is busy.
sf_unmount() {
	sf_mounted "$1" || return 0
	timeout 20 "${SF_FUSERMOUNT:-fusermount3}" -u "$1" 2>/dev/null ||
	    timeout 20 umount "$1" 2>/dev/null ||
	    umount -l "$1" 2>/dev/null || true
}

# sf_listening PORT PID: PID listens on 127.0.0.1:PORT.
sf_listening() {
	[[ $(ss -Hltnp "sport = :$1" 2>/dev/null) == *"pid=$2,"* ]]
}

sf_port_free() {
	[[ -z $(ss -Hltn "sport = :$1" 2>/dev/null) ]]
}

# sf_save_state: what sf_down (or a later sf_up) needs.
sf_save_state() {
	local s
	s=$(declare -p SF_DIR SF_NAME SF_OWNER SF_M1 SF_M2 SF_PORT SF_SSHD_PID \
	    SF_PIDS)
	echo "$s" >"$SF_DIR/state"
	mkdir -p "$SF_STATE_DIR"
	echo "$s" >"$SF_STATE_DIR/$SF_NAME"
}

# sf_cleanup_leftovers: undo the runs whose bats process is gone without
# their teardown_file (killed): unmount their mounts, end the processes
# whose command lines name their directory, with their children.
sf_cleanup_leftovers() {
	local f owner dir m p
	for f in "$SF_STATE_DIR"/mqsf-*; do
		[[ -f $f ]] || continue
		# shellcheck source=/dev/null
		owner=$(. "$f" && echo "$SF_OWNER")
		# (A zombie is gone: where init does not reap, it stays.)
		[[ -n $owner ]] && ! exited "$owner" && continue
		# shellcheck source=/dev/null
		dir=$(. "$f" && echo "$SF_DIR")
		sf_log "cleaning up after a killed run: $dir"
		# shellcheck source=/dev/null
		for m in $(. "$f" && echo "$SF_M1 $SF_M2"); do
			sf_unmount "$m"
		done
		for p in /proc/[0-9]*; do
			p=${p#/proc/}
			sf_ours "$dir" "$p" && sf_kill_tree "$dir" "$p"
		done
		rm -f "$f"
	done
	return 0
}

# sf_start_sshd: an sshd on a free port of 127.0.0.1; sets SF_PORT and
# SF_SSHD_PID.  A port taken between the check and sshd's bind makes sshd
# exit: another port is tried, ten at most.
sf_start_sshd() {
	local try port lo
	# Below the kernel's ephemeral range, where no outgoing connection
	# takes a port.
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	((lo > 12000)) || lo=61000
	for ((try = 0; try < 10; try++)); do
		if ((lo == 61000)); then
			port=$((61000 + RANDOM % 4000))
		else
			port=$((10000 + RANDOM % (lo - 10000)))
		fi
		sf_port_free "$port" || continue
		cat >"$SF_DIR/sshd_config" <<-EOF
			ListenAddress 127.0.0.1:$port
			HostKey $SF_DIR/host_key
			PidFile $SF_DIR/sshd.pid
			AuthorizedKeysFile $SF_DIR/authorized_keys
			AllowUsers root
			PermitRootLogin prohibit-password
			PubkeyAuthentication yes
			PasswordAuthentication no
			KbdInteractiveAuthentication no
			UsePAM no
			StrictModes no
			UseDNS no
			PrintMotd no
			MaxStartups 50
			Subsystem sftp internal-sftp
			LogLevel INFO
		EOF
		rm -f "$SF_DIR/sshd.pid"
		setsid "$SF_SSHD" -D -e -f "$SF_DIR/sshd_config" \
		    >>"$SF_DIR/sshd.log" 2>&1 </dev/null 3>&- &
		SF_SSHD_PID=$!
		SF_PORT=$port
		sf_save_state
		wait_for -t 10 sf_sshd_settled ||
		    fail "sshd neither listens nor exits: $(tail -5 "$SF_DIR/sshd.log")"
		if sf_listening "$port" "$SF_SSHD_PID"; then
			wait_for -t 5 test -s "$SF_DIR/sshd.pid" ||
			    fail "sshd wrote no pid file"
			[[ $(cat "$SF_DIR/sshd.pid") == "$SF_SSHD_PID" ]] ||
			    fail "sshd's pid file says $(cat "$SF_DIR/sshd.pid"), not $SF_SSHD_PID"
			return 0
		fi
		sf_log "sshd did not start on port $port: $(tail -2 "$SF_DIR/sshd.log" | tr '\n' ' ')"
	done
	fail "sshd did not start on any of 10 ports: $(tail -5 "$SF_DIR/sshd.log")"
}

sf_sshd_settled() {
	sf_listening "$SF_PORT" "$SF_SSHD_PID" || exited "$SF_SSHD_PID"
}

# sf_mount DIR: mount the export at DIR with sshfs in the foreground (-f,
# in a session of its own), so that its pid is known; appends it to
# SF_PIDS.
sf_mount() {
	local m=$1 pid
	setsid sshfs -f -F "$SF_DIR/ssh_config" -o "$SF_OPTS" \
	    "root@127.0.0.1:$SF_DIR/export" "$m" \
	    >>"$SF_DIR/sshfs.log" 2>&1 </dev/null 3>&- &
	pid=$!
	SF_PIDS+=("$pid")
	sf_save_state
	wait_for -t 30 sf_mount_settled "$m" "$pid" ||
	    fail "sshfs neither mounts $m nor exits: $(tail -5 "$SF_DIR/sshfs.log")"
	sf_mounted "$m" ||
	    fail "sshfs did not mount $m: $(tail -5 "$SF_DIR/sshfs.log"; tail -5 "$SF_DIR/sshd.log")"
	[[ $(stat -f -c %t "$m") == "$SF_FUSE_MAGIC" ]] ||
	    fail "$m: statfs says $(stat -f -c %t "$m"), not FUSE ($SF_FUSE_MAGIC)"
}

sf_mount_settled() {
	sf_mounted "$1" || exited "$2"
}

# sf_up: keys, sshd, two mounts (or SF_SKIP, see sf_unavailable).
sf_up() {
	export SF_SKIP=""
	if ! sf_require; then
		[[ -z ${CI:-} ]] ||
		    fail "sshfs tests cannot run (CI=$CI, so this fails): they need $SF_NEED"
		export SF_SKIP="sshfs tests need $SF_NEED"
		sf_log "skipped: $SF_SKIP"
		return 0
	fi
	export SF_OWNER=$$
	export SF_NAME=mqsf-$$
	export SF_DIR=$BATS_FILE_TMPDIR/sf
	export SF_M1=$SF_DIR/m1 SF_M2=$SF_DIR/m2
	export SF_PORT="" SF_SSHD_PID=""
	SF_PIDS=()
	sf_cleanup_leftovers
	mkdir -p "$SF_DIR"/{export,m1,m2}
	ssh-keygen -q -t ed25519 -N '' -C mq-sshfs-host -f "$SF_DIR/host_key" ||
	    fail "ssh-keygen (host key) failed"
	ssh-keygen -q -t ed25519 -N '' -C mq-sshfs-client -f "$SF_DIR/client_key" ||
	    fail "ssh-keygen (client key) failed"
	cp "$SF_DIR/client_key.pub" "$SF_DIR/authorized_keys"
	sf_start_sshd
	cat >"$SF_DIR/ssh_config" <<-EOF
		Host *
		  Port $SF_PORT
		  User root
		  IdentityFile $SF_DIR/client_key
		  IdentitiesOnly yes
		  BatchMode yes
		  StrictHostKeyChecking no
		  UserKnownHostsFile /dev/null
		  GlobalKnownHostsFile /dev/null
		  ConnectTimeout 10
		  LogLevel ERROR
	EOF
	sf_mount "$SF_M1"
	sf_mount "$SF_M2"
	sf_log "sshd $SF_SSHD_PID on 127.0.0.1:$SF_PORT; $SF_DIR/export mounted at $SF_M1 and $SF_M2 (-o $SF_OPTS)"
}

# sf_down: undo sf_up, as far as it got.  Never fails.
sf_down() {
	local m p
	if [[ -n ${SF_SKIP:-} || -z ${SF_DIR:-} || ! -d ${SF_DIR:-} ]]; then
		return 0
	fi
	# What sf_up got as far as (SF_PIDS is no environment variable).
	# shellcheck source=/dev/null
	[[ ! -f $SF_DIR/state ]] || . "$SF_DIR/state"
	for m in "$SF_M1" "$SF_M2"; do
		sf_unmount "$m"
	done
	# sshfs ends once unmounted; its ssh with it, and then the sshd
	# processes that served it.
	for p in "${SF_PIDS[@]}"; do
		wait_for -t 10 exited "$p" 2>/dev/null || sf_kill_tree "$SF_DIR" "$p"
	done
	if [[ -n ${SF_SSHD_PID:-} ]]; then
		wait_for -t 10 sf_no_children "$SF_SSHD_PID" 2>/dev/null || true
		sf_kill_tree "$SF_DIR" "$SF_SSHD_PID"
	fi
	rm -f "$SF_STATE_DIR/$SF_NAME"
	return 0
}

sf_no_children() {
	[[ -z $(sf_children "$1") ]]
}

# --- per test ----------------------------------------------------------------

# sf_setup: the helper's setup, then this test's spool on the export: S1 as
# host 1 sees it, S2 as host 2 does, SX as the server has it (for counting
# without any client's caches).  MQ_SPOOL is S1.  Consumers poll every
# 200 ms (MQ_POLL) instead of the default second on FUSE.
sf_setup() {
	helper_setup
	[[ -z ${SF_SKIP:-} ]] || skip "$SF_SKIP"
	[[ -n ${SF_DIR:-} ]] || fail "setup_file did not run sf_up"
	if ! sf_mounted "$SF_M1" || ! sf_mounted "$SF_M2"; then
		fail "the export is not mounted twice"
	fi
	S1=$SF_M1/s$BATS_TEST_NUMBER
	# shellcheck disable=SC2034 # S2 and SX: used by the tests
	S2=$SF_M2/s$BATS_TEST_NUMBER
	# shellcheck disable=SC2034
	SX=$SF_DIR/export/s$BATS_TEST_NUMBER
	export MQ_SPOOL=$S1
	export MQ_POLL=200ms
}
