# checks.bash: what the cross-host tests have in common, whatever the
# shared file system: loaded by the harnesses gluster.bash and sshfs.bash
# (bats load), which set S1 and S2 (this test's spool as host 1 and host 2
# see it) for the functions below.  It loads helper.bash and keeps the
# helper's setup and teardown as helper_setup and helper_teardown.
#
# Counting: lines, has_lines, ids, missing_ids, queue_left, queue_empty.
# Checks that fail the test: same_ids, all_delivered, fail_with.
# Waiting: done_or_gone.  Reporting: note.
# Processes: all_exited, stop_all, member_of.
# Publishing: pub_singles, slow_lines, pub_rounds, spawn_fn,
# spawn_publishers.

load ../bats/helper

# The helper's setup and teardown, under names of their own, since the
# tests define setup and teardown (and call these from theirs).
if declare -F setup >/dev/null; then
	eval "helper_setup() $(declare -f setup | tail -n +2)"
	eval "helper_teardown() $(declare -f teardown | tail -n +2)"
fi

# --- counting ---------------------------------------------------------------

# lines FILE...: number of lines in the FILEs (missing ones count 0; a pipe,
# such as <(...), counts as a file).
lines() {
	local f n=0 k
	for f in "$@"; do
		[[ -f $f || -p $f ]] || continue
		k=$(wc -l <"$f")
		n=$((n + k))
	done
	echo "$n"
}

# has_lines N FILE...: the FILEs have at least N lines together.
has_lines() {
	local n=$1
	shift
	(($(lines "$@") >= n))
}

# ids FILE...: the message ids (32 hex digits, first word of a line) in
# FILEs, one per line, sorted, repeats kept.
ids() {
	cat "$@" 2>/dev/null | grep -E '^[0-9a-f]{32}( |$)' | cut -d' ' -f1 | LC_ALL=C sort || true
}

# missing_ids WANT GOT: ids of file WANT not in file GOT.
missing_ids() {
	LC_ALL=C comm -23 <(LC_ALL=C sort -u "$1") <(LC_ALL=C sort -u "$2")
}

# queue_left SPOOL TOPIC GROUP: messages of GROUP pending, in flight or
# delayed, over every partition: its names in new/, cur/ and delay/, and
# in format 2 the records of the log past its next record and those its
# claims hold unsettled (helper.bash: log_end, next_of, claimed; on a
# replica, a record held at the primary is in a claim of no lease).  Each
# directory is counted by the command QUEUE_COUNT names: count_entries
# (helper.bash, every entry) unless the harness sets another (sshfs.bats:
# names_in, no dot names).
queue_left() {
	local d n=0 k
	for d in "$1/topics/$2"/p*/g/"$3"/{new,cur,delay}; do
		k=$("${QUEUE_COUNT:-count_entries}" "$d")
		n=$((n + k))
	done
	MQ_SPOOL=$1 is_format2 "$2" || {
		echo "$n"
		return
	}
	for d in "$1/topics/$2"/p*; do
		[[ ${d##*/} =~ ^p([0-9]+)$ ]] || continue
		k=$(export MQ_SPOOL=$1 p=${BASH_REMATCH[1]}
		    echo $(($(log_end "$2" "$p") - $(next_of "$2" "$3" "$p") + $(claimed "$2" "$3" "$p"))))
		n=$((n + k))
	done
	echo "$n"
}

queue_empty() {
	[[ $(queue_left "$@") == 0 ]]
}

# --- checks that fail the test ----------------------------------------------

# same_ids WANT GOT...: the ids of file WANT are those in files GOT, each
# exactly once (a repeat or a missing one fails, with both counted).
same_ids() {
	local want=$1
	shift
	ids "$want" >"$TD/.want.ids"
	ids "$@" >"$TD/.got.ids"
	local nw ng nu miss extra
	nw=$(lines "$TD/.want.ids")
	ng=$(lines "$TD/.got.ids")
	nu=$(sort -u "$TD/.got.ids" | wc -l)
	miss=$(missing_ids "$TD/.want.ids" "$TD/.got.ids" | wc -l)
	extra=$(missing_ids "$TD/.got.ids" "$TD/.want.ids" | wc -l)
	((nw > 0)) || fail "no publish printed an id"
	if ((ng != nw || nu != nw || miss || extra)); then
		fail "published $nw, delivered $ng ($nu distinct): $miss never delivered, $((ng - nu)) repeats, $extra unknown ids"
	fi
}

# fail_with MSG FILE...: fail with MSG and the first lines of each FILE.
fail_with() {
	local msg=$1 f
	shift
	for f in "$@"; do
		[[ -s $f ]] && msg+=$'\n'"--- $f:"$'\n'"$(head -20 "$f")"
	done
	fail "$msg"
}

# all_delivered WANT GOT...: every id of WANT is among the ids in GOT
# (repeats allowed: at least once).
all_delivered() {
	ids "$1" >"$TD/.want.ids"
	shift
	ids "$@" >"$TD/.got.ids"
	local miss
	(($(lines "$TD/.want.ids") > 0)) || fail "no publish printed an id"
	miss=$(missing_ids "$TD/.want.ids" "$TD/.got.ids" | wc -l)
	if ((miss)); then
		fail "$miss of $(lines "$TD/.want.ids") published messages never delivered (delivered $(lines "$TD/.got.ids"), $(sort -u "$TD/.got.ids" | wc -l) distinct)"
	fi
}

# done_or_gone N OUT... -- PID...: the OUTs have N lines, or every PID
# exited (so that a consumer that never wakes ends the wait at its -t).
done_or_gone() {
	local n=$1 f=()
	shift
	while [[ $1 != -- ]]; do
		f+=("$1")
		shift
	done
	shift
	has_lines "$n" "${f[@]}" || all_exited "$@"
}

# note MSG: a line on the TAP stream, shown whether the test passes or
# not (what was published, who got what, how long it took).
note() {
	local line
	while IFS= read -r line; do
		echo "#   $line" >&3
	done <<<"$*"
}

# --- processes --------------------------------------------------------------

# all_exited PID...: every PID is gone.
all_exited() {
	local p
	for p in "$@"; do
		exited "$p" || return 1
	done
}

# stop_all PID...: SIGTERM to each spawned session (mq-sub finishes its batch
# and exits), then wait, bounded, for all of them.
stop_all() {
	local p
	for p in "$@"; do
		kill -TERM -- "-$p" 2>/dev/null || true
	done
	wait_for -t 30 all_exited "$@"
}

# member_of SPOOL TOPIC GROUP PID: the consumer PID, or one in the session
# PID leads (a consumer spawned through a wrapper, as sshfs.bats' spawn_rc
# does), is a member of GROUP: its file <random>.<pid>.<host>,l<deadline> is
# in groups/GROUP.members/, as the mount of SPOOL shows it.  A consumer
# joins once its partitions are open, after the repair it may do when it
# starts (mq-spool(5), Repair).
member_of() {
	local f n pid
	for f in "$1/topics/$2/groups/$3.members"/*; do
		[[ -e $f ]] || continue
		n=${f##*/}
		pid=${n#*.}
		pid=${pid%%.*}
		[[ $pid == "$4" || $(proc_session "$pid") == "$4" ]] && return 0
	done
	return 1
}

# --- publishing -------------------------------------------------------------

# pub_singles SPOOL TOPIC PREFIX N OUT [OPTIONS...]: N runs of mq-pub, one
# message each (PREFIX-1 ... PREFIX-N); the id of each that exits 0 is
# appended to OUT, the status of each that does not to OUT.fail.
pub_singles() {
	local s=$1 t=$2 p=$3 n=$4 out=$5 k rc id
	shift 5
	for ((k = 1; k <= n; k++)); do
		# PUB_STOP: a file whose making ends the loop early.
		[[ -n ${PUB_STOP:-} && -e $PUB_STOP ]] && break
		rc=0
		id=$(mq-pub -s "$s" "$@" "$t" "$p-$k") || rc=$?
		if ((rc == 0)); then
			echo "$id" >>"$out"
		else
			echo "$p-$k exit $rc" >>"$out.fail"
		fi
	done
}

# slow_lines PREFIX N: N lines PREFIX-1 ... PREFIX-N, one every 10 ms, so
# that a reading mq-pub -l publishes them in many small batches.
slow_lines() {
	local k
	for ((k = 1; k <= $2; k++)); do
		echo "$1-$k"
		sleep 0.01
	done
}

# spawn_fn OUT FUNC ARGS...: spawn (helper.bash) the function FUNC of this
# file (pub_singles or slow_lines) in a bash of its own.
spawn_fn() {
	local out=$1
	shift
	spawn "$out" bash -c "$(declare -f pub_singles slow_lines); \"\$@\"" bash "$@"
}

# pub_rounds SPOOL TOPIC R OUT: R rounds of a single publish (pub_singles:
# one-K-1) and a burst of 8 lines through one mq-pub -l (burst-K-1 ...
# burst-K-8), 9 R messages in all; their ids appended to OUT.
pub_rounds() {
	local s=$1 t=$2 r
	for ((r = 1; r <= $3; r++)); do
		pub_singles "$s" "$t" "one-$r" 1 "$4"
		seq 1 8 | sed "s/^/burst-$r-/" | mq-pub -s "$s" -l "$t" >>"$4"
	done
}

# spawn_publishers TOPIC N M [P1 P2]: four publishers into TOPIC at once,
# two on each host, spawned (helper.bash); their pids in PUBLISHERS.  On
# host 1 (S1), pub_singles of N messages (ids in $TD/pub.a) and M
# slow_lines through one mq-pub -l (ids in $TD/pub.c); on host 2 (S2) the
# same into $TD/pub.b and $TD/pub.d.  With P1 and P2, host 1 publishes into
# partition P1 only, host 2 into P2 only.
spawn_publishers() {
	local t=$1 n=$2 m=$3 o1=() o2=()
	if (($# > 3)); then
		o1=(-p "$4")
		o2=(-p "$5")
	fi
	PUBLISHERS=()
	# Each mount is a host of its own name (MQ_HOST), as two machines
	# would be: each appends to its own journal.
	MQ_HOST=h1 spawn_fn "$TD/l1" pub_singles "$S1" "$t" a "$n" "$TD/pub.a" "${o1[@]}"
	PUBLISHERS+=("$SPAWNED")
	MQ_HOST=h2 spawn_fn "$TD/l2" pub_singles "$S2" "$t" b "$n" "$TD/pub.b" "${o2[@]}"
	PUBLISHERS+=("$SPAWNED")
	MQ_HOST=h1 spawn "$TD/pub.c" bash -c "$(declare -f slow_lines); slow_lines c $m | mq-pub -s '$S1' ${o1[*]} -l '$t'"
	PUBLISHERS+=("$SPAWNED")
	MQ_HOST=h2 spawn "$TD/pub.d" bash -c "$(declare -f slow_lines); slow_lines d $m | mq-pub -s '$S2' ${o2[*]} -l '$t'"
	PUBLISHERS+=("$SPAWNED")
}
