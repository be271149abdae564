# bench/shared.bash: section 9 of bench/run.sh, a spool shared between
# hosts, on each shared file system the test suite has a harness for
# (SH_FS): a GlusterFS replica-3 volume and a MooseFS file system (one
# master, two chunkservers, goal 2) on this machine, each mounted twice
# (test/shared/gluster.bash and moosefs.bash set them up and take them
# down, fs_up and fs_down; the two FUSE clients stand for two hosts).  Sourced by run.sh, which has built the
# helpers and defined W, BIN, FLOOR, LAT, SIZE, REPEAT, run, kv, med, die
# and step.
#
# Figures, each beside its floor on the same file system, and the same on
# the local disk of the scratch directory:
#   publish   floor: create+write+close+rename per file, then syncfs (which
#             reaches no server on FUSE); floor each: the same with an
#             fsync of each file and of both directories, what a shared
#             file system needs to be durable; mq: SH_N lines through one
#             `mq-pub -q -l` (--sync=batch, the default).
#   drain     floor: rename new/ -> cur/ and unlink, per file; mq: `mq-sub
#             -g G TOPIC > /dev/null` of the SH_N published.
#   two hosts mq-pub -l on mount 1 and on mount 2 at once (MQ_HOST h1
#             and h2, so each appends to its own journal), SH_N/2 lines
#             each into a partition of its own of one topic: their rate
#             together, beside one mount's alone above.  Nothing but the
#             file system is shared between them.
#   latency   one message in flight, published on mount 1 (in process,
#             libmq), received by `mq-sub -f` on mount 2, which polls every
#             MQ_POLL (100 ms here; 1 s by default); beside the same on the
#             local disk, where mq-sub waits in inotify.

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	SH_N=300 SH_LATN=50
else
	SH_N=2000 SH_LATN=200
fi
SH_POLL=100ms
SH_FS="gluster moosefs"

# What the harnesses need of bats, outside bats.
load() {
	case $1 in
	/*) . "$1.bash" ;;
	*) . "$ROOT/test/shared/$1.bash" ;;
	esac
}
bats_require_minimum_version() { :; }
fail() { die "$SH_ON: $*"; }

# shared_up FS: file system FS (a harness of test/shared), mounted at
# SH_M1 and SH_M2; its scratch directory is short, since glusterd's socket
# path must fit in sockaddr_un.  Where the harness's prerequisites are
# missing, SH_SKIP_FS says which and nothing is set up.
shared_up() {
	SH_ON=$1
	SH_TMP=$(mktemp -d "/tmp/mqbench-$1.XXXX")
	BATS_FILE_TMPDIR=$SH_TMP TD=$SH_TMP
	BATS_TEST_DIRNAME=$ROOT/test/shared
	exec 3>&2
	unset GL_SKIP MFS_SKIP
	load "$1"
	fs_up
	eval "SH_SKIP_$1=\${GL_SKIP:-\${MFS_SKIP:-}}"
	[ "$1" = gluster ] && SH_M1=$GL_M1 SH_M2=$GL_M2
	[ "$1" = moosefs ] && SH_M1=$MFS_M1 SH_M2=$MFS_M2
	return 0
}

shared_down() {
	[ -n "${SH_TMP:-}" ] || return 0
	fs_down
	rm -rf "$SH_TMP"
	SH_TMP=""
}

# shared_on WHERE DIR: the figures of one file system into res/sh.WHERE.*.
shared_on() {
	local where=$1 dir=$2 r sp
	mkdir -p "$dir"
	for r in $(seq "$REPEAT"); do
		step "shared ($where): floor publish and drain, run $r"
		run "sh.$where.floor.$r" "$SH_N" "$FLOOR" publish \
		    "$dir/floor.$r" "$SH_N" "$SIZE" > /dev/null
		FLOOR_SYNC=each run "sh.$where.floorf.$r" "$SH_N" "$FLOOR" \
		    publish "$dir/floorf.$r" "$SH_N" "$SIZE" > /dev/null
		run "sh.$where.floord.$r" "$SH_N" "$FLOOR" drain \
		    "$dir/floorf.$r" > /dev/null
		step "shared ($where): mq-pub -l and mq-sub, run $r"
		sp=$dir/spool.$r
		"$BIN/mq-sub" -s "$sp" -g g -t 0 t > /dev/null || [ $? = 1 ] ||
		    die "subscribe on $where failed"
		"$FLOOR" lines "$SH_N" "$SIZE" |
		    run "sh.$where.pub.$r" "$SH_N" "$BIN/mq-pub" -s "$sp" -q -l t
		run "sh.$where.drain.$r" "$SH_N" "$BIN/mq-sub" -s "$sp" -g g t \
		    > /dev/null
		# The same on a topic of format 2 (segments and a cursor):
		# issue 28's target, 10x format 1's rates on the same volume.
		sp=$dir/spool2.$r
		MQ_FORMAT=2 "$BIN/mq-sub" -s "$sp" -g g -t 0 t > /dev/null ||
		    [ $? = 1 ] || die "subscribe on $where failed (format 2)"
		"$FLOOR" lines "$SH_N" "$SIZE" |
		    MQ_FORMAT=2 run "sh.$where.f2pub.$r" "$SH_N" "$BIN/mq-pub" \
		    -s "$sp" -q -l t
		MQ_FORMAT=2 run "sh.$where.f2drain.$r" "$SH_N" "$BIN/mq-sub" \
		    -s "$sp" -g g t > /dev/null
	done
}

# shared_fs FS: the figures of file system FS, on its mounts.
shared_fs() {
	local fs=$1 r half=$((SH_N / 2))
	shared_on "$fs" "$SH_M1/bench"
	for r in $(seq "$REPEAT"); do
		step "shared ($fs): mq-pub -l from both mounts at once, run $r"
		"$BIN/mq-topic" -s "$SH_M1/two.$r" create --partitions 2 t ||
		    die "topic on $fs failed"
		"$BIN/mq-sub" -s "$SH_M1/two.$r" -g g -t 0 t > /dev/null ||
		    [ $? = 1 ] || die "subscribe on $fs failed"
		run "sh.$fs.pub2.$r" "$SH_N" bash -c '
			"$1" lines "$3" "$4" | MQ_HOST=h1 "$2/mq-pub" -s "$5" -q -p 0 -l t &
			"$1" lines "$3" "$4" | MQ_HOST=h2 "$2/mq-pub" -s "$6" -q -p 1 -l t &
			wait -n && wait -n' - "$FLOOR" "$BIN" "$half" "$SIZE" \
		    "$SH_M1/two.$r" "$SH_M2/two.$r"
	done
	if [ "$have_lib" = 1 ]; then
		step "shared ($fs): latency, mount 1 to mount 2, MQ_POLL=$SH_POLL"
		MQ_POLL=$SH_POLL "$LAT" mq "$SH_M1/lat" "$BIN/mq-sub" \
		    "$SH_LATN" 5 "$SH_M2/lat" > "$W/res/sh.lat.$fs" ||
		    die "lat mq across the $fs mounts failed"
	fi
}

shared_measure() {
	local fs skip
	mkdir -p "$W/sh-local"
	shared_on local "$W/sh-local"
	if [ "$have_lib" = 1 ]; then
		"$LAT" mq "$W/sh-local/lat" "$BIN/mq-sub" "$SH_LATN" 5 \
		    > "$W/res/sh.lat.local" || die "lat mq on the local disk failed"
	fi
	for fs in $SH_FS; do
		shared_up "$fs"
		eval "skip=\$SH_SKIP_$fs"
		[ -n "$skip" ] || shared_fs "$fs"
		shared_down
	done
}

# shared_row LABEL PREFIX: the median run's rate, time per message and
# the runs' rates.
shared_row() {
	local f runs
	f=$(med "$2")
	runs=$(for r in "$W/res/$2".*; do kv "$r" rate; done |
	    awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 }')
	printf '  %-44s %9.0f %9.2f  %s\n' "$1" "$(kv "$f" rate)" \
	    "$(awk -v r="$(kv "$f" rate)" 'BEGIN { print 1000 / r }')" "$runs"
}

# shared_ratio LABEL A B: the median rate of B over that of A ("mq takes
# x times the floor's time").
shared_ratio() {
	printf '  %-44s %9s\n' "$1" "$(awk -v a="$(kv "$(med "$2")" rate)" \
	    -v b="$(kv "$(med "$3")" rate)" 'BEGIN { printf "%.2fx", a / b }')"
}

# shared_target LABEL A B: the median rate of B over that of A, against
# issue 28's target for a shared file system (format 2 >= 10x format 1).
shared_target() {
	awk -v l="$1" -v a="$(kv "$(med "$2")" rate)" \
	    -v b="$(kv "$(med "$3")" rate)" 'BEGIN { x = b / a
	    printf "  %-44s %8.2fx   target >= 10x: %s\n", l, x,
	    (x >= 10 ? "met" : "NOT MET") }'
}

# shared_fs_name FS: how the table names file system FS.
shared_fs_name() {
	case $1 in
	gluster) echo "GlusterFS 10 replica 3" ;;
	moosefs) echo "MooseFS 3.0, goal 2 on 2 chunkservers" ;;
	local) echo "the local disk ($fs)" ;;
	esac
}

# shared_lat_row LABEL FILE: the latency figures of one run of lat.
shared_lat_row() {
	printf '  %-44s p50 %.1f  p99 %.1f  max %.1f\n' "$1" \
	    "$(awk -v u="$(kv "$2" p50_us)" 'BEGIN { print u / 1000 }')" \
	    "$(awk -v u="$(kv "$2" p99_us)" 'BEGIN { print u / 1000 }')" \
	    "$(awk -v u="$(kv "$2" max_us)" 'BEGIN { print u / 1000 }')"
}

shared_table() {
	local w skip
	echo
	echo "9. a spool shared between hosts: each file system mounted twice on this machine"
	echo "  $SH_N messages of $SIZE bytes per run; median of $REPEAT run(s)"
	for w in $SH_FS local; do
		if [ $w != local ]; then
			eval "skip=\${SH_SKIP_$w:-}"
			echo "  on $(shared_fs_name $w) (mount 1)${skip:+: not measured: $skip}"
			[ -z "$skip" ] || continue
		else
			echo "  on $(shared_fs_name local)"
		fi
		printf '  %-44s %9s %9s  %s\n' "" "msgs/s" "ms/msg" "runs (msgs/s)"
		shared_row "floor publish: create, write, rename; syncfs" "sh.$w.floor"
		shared_row "floor publish, fsync of each file and dir" "sh.$w.floorf"
		shared_row "mq-pub -l (--sync=batch)" "sh.$w.pub"
		[ $w = local ] || shared_row "mq-pub -l on both mounts, a partition each" "sh.$w.pub2"
		shared_ratio "  mq-pub time / floor with fsync" "sh.$w.floorf" "sh.$w.pub"
		shared_row "floor drain: rename to cur/, unlink" "sh.$w.floord"
		shared_row "mq-sub -g G TOPIC > /dev/null" "sh.$w.drain"
		shared_ratio "  mq-sub time / floor drain" "sh.$w.floord" "sh.$w.drain"
		shared_row "mq-pub -l, a topic of format 2" "sh.$w.f2pub"
		shared_row "mq-sub, a topic of format 2" "sh.$w.f2drain"
		# The target is issue 28's for a shared file system; on the
		# local disk the ratio is context.
		if [ $w = local ]; then
			shared_ratio "  format 2 / format 1, mq-pub -l" "sh.$w.f2pub" "sh.$w.pub"
			shared_ratio "  format 2 / format 1, mq-sub" "sh.$w.f2drain" "sh.$w.drain"
		else
			shared_target "  format 2 / format 1, mq-pub -l" "sh.$w.pub" "sh.$w.f2pub"
			shared_target "  format 2 / format 1, mq-sub" "sh.$w.drain" "sh.$w.f2drain"
		fi
	done
	echo "  latency, one message in flight (ms)"
	for w in $SH_FS; do
		[ -f "$W/res/sh.lat.$w" ] &&
		    shared_lat_row "$w: mount 1 -> mount 2, MQ_POLL=$SH_POLL" "$W/res/sh.lat.$w"
	done
	[ -f "$W/res/sh.lat.local" ] &&
	    shared_lat_row "local disk, inotify" "$W/res/sh.lat.local"
	return 0
}
