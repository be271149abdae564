#!/usr/bin/env bash
# bench/run.sh: the mq benchmark (`make bench` runs it after `make`).
#
# Prints mq's figures beside baselines measured in the same run, on the same
# filesystem: the raw syscall floor (bench/floor.c), python3-dirq, a raw
# inotify round trip (bench/lat.c) and the raw cost of a process spawn
# (floor spawn); for replication, rsync(1) of the same spool; for mq-stat,
# the raw listing of its directories (floor count) and find(1).  It measures
# and reports; it never fails because a figure is slow (only when a tool
# fails or a build breaks).
# bench/README.md says what each figure is.
#
# Usage: bench/run.sh [fanout | replicate | stat | shared | signed | sealed |
#                     req | http | roles | peers | scale]
#   With no argument every section runs; `fanout` runs section 6 alone
#   (publish fan-out into 1, 10 and 100 groups, unfiltered and with a jq
#   filter on each group); `replicate` runs section 7 alone (mq-replicate:
#   initial sync beside rsync, and the lag of push --follow); `stat` runs
#   section 8 alone (mq-stat on a spool with 1,000,000 pending, 100,000
#   when quick, beside the raw listing of its directories; then a spool of
#   storage format 2 with ten times as many, counted from cursors);
#   `shared` runs
#   section 9 alone (bench/shared.bash: publish, drain and cross-mount
#   latency on a GlusterFS volume mounted twice, beside the floor on the
#   volume and on the local disk; as root with glusterd, else it says why
#   it was not measured); `signed` runs section 10 alone (publish and
#   drain of a topic without signers beside a topic with signers, the
#   publisher signing each chunk and the consumer checking each message,
#   verifying each chunk's signature once); `sealed`
#   runs section 11 alone (bench/sealed.bash: publish and drain of a plain
#   and of a sealed topic, in one run); `req` section 12 alone (request
#   and reply); `http` section 13 alone (bench/http.bash: mq-http's
#   publish throughput beside mq_pub_send, and its WebSocket and SSE
#   latency beside mosquitto's websockets listener); `roles` section 14
#   alone (bench/roles.bash: drain of a topic with roles beside a plain one,
#   and single publishes into a filtered group beside an unfiltered one);
#   `peers` section 15 alone (bench/peers.bash: mq beside Redis streams,
#   NATS JetStream and an append-log floor: durable publish in batches and
#   one at a time, claim+ack drain, fan-out and space, with the syncs per
#   message that strace counts; needs redis-server, nats-server, strace,
#   libhiredis-dev and libnats-dev); `scale` section 16 alone, and only
#   when named (bench/scale.bash: issue 28's targets of scale on format 2,
#   each beside format 1 or the run without: mq-stat, mq-group list and
#   mq-topic info with 10,000,000 pending per group, cold and warm; gc of
#   1,000,000 acked messages with a publisher beside it; space and inodes
#   with 1, 10 and 100 groups; a 10-minute soak at 1,000 msgs/s; about
#   9 GB and 20 minutes, 2 GB and 5 minutes when quick).
#
# Environment:
#   BENCH_DIR=DIR     where the scratch directory goes (default /var/tmp)
#   BENCH_QUICK=1     counts 10x smaller, deep backlog and mq-stat's pending
#                     100k, handlers 1000 (instead of 5000), one run each;
#                     replication lag measured for 3 s instead of 10
#   BENCH_REPEAT=N    runs per publish/drain/deep/handler/stat figure (median
#                     shown); default 3, or 1 with BENCH_QUICK=1
#   BENCH_KEEP=1      keep the scratch directory
#   BENCH_DROP_CACHES=auto|0|1
#                     sync and drop the page cache before measuring; auto
#                     (default) does it when root on ext4 without a journal
#                     (see the comment at the drop below); section 8's
#                     cold runs drop it unless this is 0
#   MQ_BIN=DIR        the tools (default: bin/ of this tree)
#   CC                C compiler (default cc)
set -eu -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${MQ_BIN:-$ROOT/bin}
CC=${CC:-cc}
PY=/usr/bin/python3           # Debian's python: it has python3-dirq
SIZE=1024                     # bytes per message

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	N=10000 LATN=200 DEEP=100000 DEEPN=10000 SHALLOW=1000 N_EXEC=1000
	REPEAT=${BENCH_REPEAT:-1} LAG_SECS=3
else
	N=100000 LATN=2000 DEEP=1000000 DEEPN=100000 SHALLOW=1000 N_EXEC=5000
	REPEAT=${BENCH_REPEAT:-3} LAG_SECS=10
fi
WARMUP=20
SECTION=${1:-all}
case $SECTION in
all|fanout|replicate|stat|shared|signed|sealed|req|http|roles|peers|scale) ;;
*) echo "usage: bench/run.sh [fanout | replicate | stat | shared | signed | sealed | req | http | roles | peers | scale]" >&2; exit 64 ;;
esac
# Section 6: messages per fan-out publish, and the group counts.
FAN_N=$((N / 5)) FAN_GROUPS="1 10 100"
# Section 7: messages of the initial sync (one run), and the lag test's
# publishing rate (msgs/s) and length (s).
REPL_N=$N LAG_RATE=1000 LAG_N=$((LAG_RATE * LAG_SECS))
# Section 8: names pending in all (as many as the deep backlog), the
# partitions and the groups of the one topic, and each message's line
# (mq-pub -l strips the newline: 15-byte bodies).
STAT_PENDING=$DEEP STAT_PARTS=4 STAT_GROUPS="s1 s2" STAT_LEN=16
STAT_MSGS=$((STAT_PENDING / 2))   # each is pending in both groups
# The same in format 2, ten times as many (the issue's 10 M pending when
# not quick): counts from cursors, not names.
STAT2_PENDING=$((10 * STAT_PENDING)) STAT2_MSGS=$((5 * STAT_PENDING))
STAT2_FORMS="floor2 table2 groups2 info2"
STAT_CRIT="pending>$((2 * STAT_PENDING))"
# Section 16 (bench/scale.bash; `bench/run.sh scale` only): messages of
# 100 B pending in each of two groups, format 2 and format 1 (mq-stat and
# co.); acked for gc, format 2 and 1, and the publisher beside gc; retained
# for space, per group count; the soak's length, retention and sampling
# period in seconds (shortened from the issue's 30 min and 10 min).
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	SC_STAT2_N=1000000 SC_STAT1_N=100000 SC_GC_N=100000 SC_GC1_N=10000
	SC_GCPUB_N=500000 SC_SPACE_N=100000
	SC_SOAK_SECS=${SCALE_SOAK_SECS:-120} SC_SOAK_RET=20 SC_SOAK_EVERY=10
else
	SC_STAT2_N=10000000 SC_STAT1_N=1000000 SC_GC_N=1000000 SC_GC1_N=100000
	SC_GCPUB_N=1000000 SC_SPACE_N=1000000
	SC_SOAK_SECS=${SCALE_SOAK_SECS:-600} SC_SOAK_RET=60 SC_SOAK_EVERY=30
fi
SC_SOAK_RATE=1000
# Section 10: messages per publish and drain, plain and signed.
SIGN_N=$((N / 2))

die() { echo "bench: $*" >&2; exit 1; }

# Sections 1 to 14 measure topics of format 1, as they did before format 2
# was the default, so that their figures compare with earlier runs (and
# the file counts above hold); the rows and sections of format 2 set
# MQ_FORMAT=2 themselves.  MQ_FORMAT in the caller's environment wins.
export MQ_FORMAT=${MQ_FORMAT:-1}

for t in mq-pub mq-sub; do
	[ -x "$BIN/$t" ] || die "$BIN/$t missing: run make first"
done
[ "$SECTION" != all ] || "$PY" -c 'import dirq' 2>/dev/null ||
	die "$PY cannot import dirq: apt-get install python3-dirq"
if [ "$SECTION" = all ] || [ "$SECTION" = stat ]; then
	for t in mq-topic mq-stat; do
		[ -x "$BIN/$t" ] || die "$BIN/$t missing: run make first"
	done
fi
if [ "$SECTION" = all ] || [ "$SECTION" = replicate ]; then
	[ -x "$BIN/mq-replicate" ] || die "$BIN/mq-replicate missing: run make first"
	command -v rsync > /dev/null || die "rsync missing: apt-get install rsync"
	[ -r /proc/net/tcp ] || die "/proc/net/tcp unreadable: needed to find free ports"
fi

BASE=${BENCH_DIR:-/var/tmp}
[ -d "$BASE" ] || die "$BASE: no such directory"

# Room: every message file takes at least one 4 KiB block and an inode
# (the handlers' topics: a message and an exactly-once ledger entry each;
# the publish runs' three twins for the counters' cost: 3 * REPEAT * N).
files=$(( (REPEAT + 2) * N * 2 + 4 * REPEAT * N + DEEP + REPEAT * SHALLOW + 4 * LATN +
    REPEAT * N_EXEC * 2 ))
# Section 6: a log/ file per message, three topics per group count and run.
files=$(( files + REPEAT * 9 * FAN_N ))
# Section 7: the source and mq's copy (a file each per message: a group's
# link is no inode), rsync's copies (two files each without -H, one with),
# and the two spools of the lag test.
repl_files=$(( 8 * REPL_N + 2 * LAG_N ))
# Section 8: a log/ file per message (its groups' links are no inodes).
# Section 10: two topics per run.  Section 11: a log/ file per message,
# two topics per run.
sign_files=$(( REPEAT * 2 * SIGN_N ))
seal_files=$(( 2 * REPEAT * N / 5 ))
# Section 14: a log/ file per message, two topics of each kind per run.
role_files=$(( 2 * REPEAT * (N / 5 + N / 500) ))
# Section 15: mq's spools (2 N messages, N/5 for each of three fan-outs,
# N/2 + N/50 under strace), a file each.
peer_files=$(( 2 * N + 3 * N / 5 + N / 2 + N / 50 ))
# Section 16: format 1's files (the monitoring and gc baselines); format
# 2's bytes, about 370 a message of 100 B, in scale_kb.
scale_files=$(( SC_STAT1_N + SC_GC1_N + 100000 ))
scale_kb=$(( (SC_STAT2_N + 3 * SC_SPACE_N + 3 * SC_GC_N + 6 * SC_GCPUB_N) * 370 / 1024 ))
case $SECTION in
scale) files=$scale_files ;;
all) files=$(( files + repl_files + STAT_MSGS + sign_files + seal_files + role_files + peer_files )) ;;
roles) files=$role_files ;;
peers) files=$peer_files ;;
signed) files=$sign_files ;;
sealed) files=$seal_files ;;
fanout) files=$(( REPEAT * 9 * FAN_N )) ;;
replicate) files=$repl_files ;;
stat) files=$(( STAT_MSGS + STAT2_MSGS / 1000 )) ;;
shared|req|http) files=0 ;;
esac
need_kb=$(( files * 5 + N * SIZE / 1024 + 100000 ))
[ "$SECTION" != scale ] || need_kb=$(( files * 5 + scale_kb + 100000 ))
avail_kb=$(df -Pk "$BASE" | awk 'NR == 2 { print $4 }')
ifree=$(df -Pi "$BASE" | awk 'NR == 2 { print $4 }')
if [ "$avail_kb" -lt "$need_kb" ]; then
	die "$BASE has $((avail_kb / 1024)) MiB free, the run needs about" \
	    "$((need_kb / 1024)) MiB (try BENCH_QUICK=1 or BENCH_DIR=)"
fi
case $ifree in
''|*[!0-9]*) ;;               # filesystems without inode counts say "-"
*) [ "$ifree" -eq 0 ] || [ "$ifree" -ge "$files" ] ||
	die "$BASE has $ifree free inodes, the run needs about $files" ;;
esac

W=$(mktemp -d "$BASE/mq-bench.XXXX")
BG_PIDS=""                    # daemons started in the background (section 7)
cleanup() {
	local p
	for p in $BG_PIDS; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	declare -F shared_down > /dev/null && shared_down
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "bench: kept $W" >&2
	else
		# Minutes on a filesystem that discards each freed file.
		echo "bench: removing $W" >&2
		rm -rf "$W"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$W/bin" "$W/res"
SP=$W/spool

# ---- build the helpers ----
CF=(-std=c11 -O2 -Wall -Wextra -Werror)
# $CC stays unquoted: it may be a command with arguments (ccache cc).
# shellcheck disable=SC2086
$CC "${CF[@]}" -o "$W/bin/floor" "$ROOT/bench/floor.c"
# shellcheck disable=SC2086
$CC "${CF[@]}" -o "$W/bin/timeit" "$ROOT/bench/timeit.c"
have_lib=0
# What a program linked with libmq needs: the Makefile's PKGS, jq, m.
# shellcheck disable=SC2046
MQ_LIBS="$ROOT/lib/libmq.a $(pkg-config --libs libbsd-overlay jansson \
    libxxhash libarchive libsodium libacl) -ljq -lm"
if [ -f "$ROOT/lib/libmq.a" ]; then
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -I"$ROOT/lib" -o "$W/bin/lat" "$ROOT/bench/lat.c" \
	    $MQ_LIBS && have_lib=1
fi
if [ "$have_lib" = 1 ] && [ "$SECTION" = all ]; then
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -I"$ROOT/lib" -I"$ROOT/lib/base" -o "$W/bin/counters" \
	    "$ROOT/bench/counters.c" $MQ_LIBS ||
	    die "bench/counters.c does not build"
fi
if [ "$have_lib" = 1 ] && [ "$SECTION" != fanout ]; then
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -pthread -I"$ROOT/lib" -o "$W/bin/replag" \
	    "$ROOT/bench/replag.c" $MQ_LIBS ||
	    die "bench/replag.c does not build"
fi
if [ "$have_lib" = 1 ]; then
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -I"$ROOT/lib" -o "$W/bin/reqlat" "$ROOT/bench/reqlat.c" \
	    $MQ_LIBS || die "bench/reqlat.c does not build"
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -I"$ROOT/lib" -o "$W/bin/httppub" "$ROOT/bench/httppub.c" \
	    $MQ_LIBS || die "bench/httppub.c does not build"
fi
# Section 15's program links the clients of Redis and NATS too; without
# them the section says it was not measured.
if [ "$have_lib" = 1 ] && { [ "$SECTION" = all ] || [ "$SECTION" = peers ]; }; then
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -I"$ROOT/lib" -o "$W/bin/peers" "$ROOT/bench/peers.c" \
	    $MQ_LIBS -lhiredis -lnats ||
	    echo "bench: bench/peers.c does not build (libhiredis-dev, libnats-dev?): no section 15" >&2
fi
if [ "$SECTION" = scale ]; then
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -o "$W/bin/scale" "$ROOT/bench/scale.c" ||
	    die "bench/scale.c does not build"
fi
if [ "$have_lib" = 0 ]; then
	echo "bench: lib/libmq.a missing or not linkable: no mq latency" >&2
	# shellcheck disable=SC2086
	$CC "${CF[@]}" -DLAT_NO_MQ -o "$W/bin/lat" "$ROOT/bench/lat.c"
fi
FLOOR=$W/bin/floor
TIMEIT=$W/bin/timeit
LAT=$W/bin/lat
. "$ROOT/bench/shared.bash"
. "$ROOT/bench/sealed.bash"
. "$ROOT/bench/req.bash"
. "$ROOT/bench/http.bash"
. "$ROOT/bench/roles.bash"
. "$ROOT/bench/peers.bash"
. "$ROOT/bench/scale.bash"

# kv FILE KEY: a value from a key=value result line.
kv() {
	awk -v k="$2" '{ for (i = 1; i <= NF; i++) { split($i, a, "=");
	    if (a[1] == k) { print a[2]; exit } } }' "$1"
}
# us_per_msg FILE: µs per message of a result.
us_per_msg() {
	awk -v s="$(kv "$1" seconds)" -v c="$(kv "$1" count)" \
	    'BEGIN { printf "%.1f", s / c * 1e6 }'
}
# us_rows LABEL:FILE...: a table's header and a line per result, with its
# µs per message (sections 11 and 14).
us_rows() {
	local label f
	printf '  %-42s %9s %9s %7s %7s %8s\n' "" "msgs/s" "seconds" "user s" \
	    "sys s" "µs/msg"
	for f in "$@"; do
		label=${f%%:*} f=${f#*:}
		printf '  %-42s %9.0f %9.3f %7.2f %7.2f %8s\n' "$label" \
		    "$(kv "$f" rate)" "$(kv "$f" seconds)" "$(kv "$f" user)" \
		    "$(kv "$f" sys)" "$(us_per_msg "$f")"
	done
}
# run NAME COUNT CMD...: time CMD (redirections of the caller apply) into
# res/NAME; a failing tool stops the bench.
run() {
	local name=$1 count=$2 rc=0
	shift 2
	"$TIMEIT" "$W/res/$name" "$count" "$@" || rc=$?
	[ "$rc" = 0 ] || die "$* exited $rc"
}
# subscribe TOPIC [GROUP [OPTION...]]: creates the topic and the group
# (default "bench"), with the group's OPTIONs such as --exactly-once
# (mq-sub -t 0 exits 1: nothing delivered).
subscribe() {
	local t=$1 g=${2:-bench} rc=0
	shift
	[ $# = 0 ] || shift
	"$BIN/mq-sub" -s "$SP" -g "$g" -t 0 "$@" "$t" > /dev/null || rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 1 ] ||
	    die "subscribe $t -g $g: mq-sub exited $rc"
}
# left TOPIC GROUP: how many messages the group still holds (pending,
# claimed or delayed), in every partition; a drain must leave none.
left() {
	find "$SP/topics/$1"/p*/g/"$2"/new "$SP/topics/$1"/p*/g/"$2"/cur \
	    "$SP/topics/$1"/p*/g/"$2"/delay -mindepth 1 2>/dev/null | wc -l
}
step() { printf 'bench: %s\n' "$*" >&2; }
# med PREFIX: the result file of the run with the median rate, of those
# named PREFIX.<run>.
med() {
	local f
	for f in "$W/res/$1".*; do echo "$(kv "$f" rate) $f"; done |
	    sort -g | awk '{ l[NR] = $2 } END { print l[int((NR + 1) / 2)] }'
}
# runs PREFIX [k|1]: the rate of each run of PREFIX, in thousands or not.
runs() {
	local f out=""
	for r in $(seq "$REPEAT"); do
		f=$W/res/$1.$r
		out="$out $(awk -v x="$(kv "$f" rate)" -v u="${2:-k}" 'BEGIN {
		    if (u == "k") printf "%.1fk", x / 1000; else printf "%.0f", x }')"
	done
	echo "${out# }"
}
# row LABEL FILE [RUNS]: a figure's line of a table.
row() { # LABEL FILE [RUNS]
	printf '  %-42s %9.0f %9.3f %7.2f %7.2f  %s\n' "$1" "$(kv "$2" rate)" \
	    "$(kv "$2" seconds)" "$(kv "$2" user)" "$(kv "$2" sys)" "${3:-}"
}
# backlog NAME SPOOL TOPIC COUNT LEN: a backlog, the fastest way: COUNT
# lines of LEN - 1 characters to TOPIC in one `mq-pub -q -l --sync=none`,
# timed into res/NAME (sections 4 and 8).
backlog() {
	"$FLOOR" lines "$4" "$5" |
	    run "$1" "$4" "$BIN/mq-pub" -s "$2" -q -l --sync=none "$3"
}

# ---- 10. signed messages: publish and drain, without and with signers ----
# Per run r, two topics with one group each, subscribed first (not timed):
# sig.plain.r (no signers) and sig.signed.r (one signer, whose key signs
# every chunk: mq-pub signs, mq-sub checks each message and verifies each
# chunk's signature once).  Each is published with
# mq-pub -l --sync=batch and drained with mq-sub, timed; the order of the
# two alternates from run to run, so that a drift cancels.
signed_pub() { # NAME TOPIC [OPTION...]
	local name=$1 topic=$2
	shift 2
	run "$name" "$SIGN_N" "$BIN/mq-pub" -s "$SP" -q -l --sync=batch "$@" \
	    "$topic" < "$W/signlines"
	sync
}
signed_drain() { # NAME TOPIC
	run "$1" "$SIGN_N" "$BIN/mq-sub" -s "$SP" -g bench "$2" > /dev/null
	sync
	[ "$(left "$2" bench)" = 0 ] || die "$2: not drained"
}
signed_measure() {
	local r kind
	"$FLOOR" lines "$SIGN_N" "$SIZE" > "$W/signlines"
	"$BIN/mq-pub" --keygen "$W/sign.key" > "$W/signers"
	for r in $(seq "$REPEAT"); do
		"$BIN/mq-topic" -s "$SP" create "sig.plain.$r"
		"$BIN/mq-topic" -s "$SP" create --signers "$W/signers" "sig.signed.$r"
		subscribe "sig.plain.$r"
		subscribe "sig.signed.$r"
	done
	sync
	for r in $(seq "$REPEAT"); do
		for kind in $( [ $((r % 2)) = 1 ] && echo plain signed || echo signed plain); do
			step "signed: $SIGN_N messages, publish, $kind (run $r/$REPEAT)"
			if [ "$kind" = signed ]; then
				signed_pub "sig.pub.signed.$r" "sig.signed.$r" \
				    --sign "$W/sign.key"
			else
				signed_pub "sig.pub.plain.$r" "sig.plain.$r"
			fi
		done
	done
	for r in $(seq "$REPEAT"); do
		for kind in $( [ $((r % 2)) = 1 ] && echo plain signed || echo signed plain); do
			step "signed: $SIGN_N messages, drain, $kind (run $r/$REPEAT)"
			signed_drain "sig.drain.$kind.$r" "sig.$kind.$r"
		done
	done
}
# pair_medians PREFIX KIND: pp, ps, dp and ds, the median results of
# publish and drain into the plain topics and into those of KIND (sections
# 10 and 11).
pair_medians() {
	pp=$(med "$1.pub.plain") ps=$(med "$1.pub.$2")
	dp=$(med "$1.drain.plain") ds=$(med "$1.drain.$2")
}

signed_table() {
	local pp ps dp ds
	pair_medians sig signed
	echo "10. signed messages: $SIGN_N messages of $SIZE bytes, one group"
	printf '  %-42s %9s %9s %7s %7s  %s\n' "" "msgs/s" "seconds" "user s" \
	    "sys s" "runs (msgs/s)"
	row "mq-pub -l --sync=batch, no signers" "$pp" "$(runs sig.pub.plain)"
	row "mq-pub -l --sync=batch --sign, signers" "$ps" "$(runs sig.pub.signed)"
	row "mq-sub, no signers" "$dp" "$(runs sig.drain.plain)"
	row "mq-sub, signers (each message checked)" "$ds" "$(runs sig.drain.signed)"
	awk -v pp="$(kv "$pp" seconds)" -v ps="$(kv "$ps" seconds)" \
	    -v dp="$(kv "$dp" seconds)" -v ds="$(kv "$ds" seconds)" \
	    -v n="$SIGN_N" 'BEGIN {
	    a = (ps - pp) / n * 1e6; b = (ds - dp) / n * 1e6
	    t = (pp + dp) / n * 1e6
	    printf "  %-42s %9.1f µs/msg\n", "signing, added to publish", a
	    printf "  %-42s %9.1f µs/msg\n", "verifying, added to drain", b
	    printf "  %-42s %9.1f µs/msg of %.1f: %.0f%%   target < 50%%   %s\n",
		"publish + drain, added", a + b, t, (a + b) / t * 100,
		((a + b) / t < 0.5) ? "met" : "NOT MET" }'
}

# ---- 6. fan-out: publish into a topic with 1, 10 and 100 groups ----
# For each group count G and run r, three topics, subscribed first (not
# timed): fan.G.plain.r (G groups, no filter), fan.G.all.r (each group a
# jq filter every message matches) and fan.G.half.r (each group a jq
# filter half of them match).  The filters differ from group to group
# (the group's number is in each), so each is compiled and run on its own.
fanout_measure() {
	local g i r kind
	awk -v n="$FAN_N" -v size="$SIZE" 'BEGIN {
	    pad = "x"; while (length(pad) < size) pad = pad pad
	    for (i = 1; i <= n; i++) {
		head = sprintf("{\"n\":%d,\"pad\":\"", i)
		print head substr(pad, 1, size - length(head) - 2) "\"}"
	    } }' > "$W/fanlines"
	for g in $FAN_GROUPS; do
		for r in $(seq "$REPEAT"); do
			step "fan-out: subscribing 3 x $g groups (run $r/$REPEAT)"
			for i in $(seq "$g"); do
				subscribe "fan.$g.plain.$r" "g$i"
				subscribe "fan.$g.all.$r" "g$i" \
				    --group-filter ".n + $i > 0"
				subscribe "fan.$g.half.$r" "g$i" \
				    --group-filter "(.n + $i) % 2 == 0"
			done
		done
	done
	sync
	for g in $FAN_GROUPS; do
		for r in $(seq "$REPEAT"); do
			for kind in plain all half; do
				step "fan-out: $FAN_N messages, $g groups, $kind (run $r/$REPEAT)"
				run "fan.$g.$kind.$r" "$FAN_N" "$BIN/mq-pub" -s "$SP" \
				    -q -l --sync=batch "fan.$g.$kind.$r" < "$W/fanlines"
				sync
			done
		done
	done
	# The fixed cost of a publishing process (start-up, and a compile
	# per filtered group): one message.
	for g in $FAN_GROUPS; do
		for kind in plain all; do
			run "fan.one.$g.$kind" 1 "$BIN/mq-pub" -s "$SP" -q \
			    "fan.$g.$kind.1" '{"n":1}'
		done
	done
	local want
	want=$(find "$SP/topics/fan.$g.half.1"/p*/g/g1/new -mindepth 1 | wc -l)
	[ "$want" = $((FAN_N / 2)) ] ||
	    die "fan.$g.half.1 -g g1: $want messages, expected $((FAN_N / 2))"
}
fanout_table() {
	local g kind f b label
	echo "6. fan-out: mq-pub -l --sync=batch, $FAN_N JSON messages of $SIZE bytes, G groups"
	printf '  %-42s %9s %9s %7s %7s %8s %8s\n' "" "msgs/s" "seconds" \
	    "user s" "sys s" "µs/msg" "µs/g/msg"
	for g in $FAN_GROUPS; do
		for kind in plain all half; do
			case $kind in
			plain) label="$g group(s), no filter" ;;
			all) label="  jq filter each, all match" ;;
			half) label="  jq filter each, half match" ;;
			esac
			f=$(med "fan.$g.$kind")
			awk -v l="$label" -v c="$(kv "$f" count)" -v s="$(kv "$f" seconds)" \
			    -v u="$(kv "$f" user)" -v y="$(kv "$f" sys)" -v g="$g" 'BEGIN {
			    printf "  %-42s %9.0f %9.3f %7.2f %7.2f %8.1f %8.2f\n", l,
				c / s, s, u, y, s / c * 1e6, s / c / g * 1e6 }'
		done
	done
	# Marginal cost of a group: (time with the most groups less time
	# with one) / (extra groups x messages); and the filter's own cost,
	# all-match less unfiltered at the same count (same links).
	local lo=${FAN_GROUPS%% *} hi=${FAN_GROUPS##* }
	for kind in plain all half; do
		f=$(med "fan.$hi.$kind") b=$(med "fan.$lo.$kind")
		awk -v l="  context: µs per extra group per msg, $kind" \
		    -v a="$(kv "$f" seconds)" -v b="$(kv "$b" seconds)" \
		    -v n="$FAN_N" -v hi="$hi" -v lo="$lo" 'BEGIN {
		    printf "  %-42s %9.2f   (G=%d less G=%d)\n", l,
			(a - b) / (hi - lo) / n * 1e6, hi, lo }'
	done
	# The filter's cost per group and message: all-match less no filter
	# (the same links), less the difference of the one-message runs (the
	# compile, once per process).
	for g in $FAN_GROUPS; do
		f=$(med "fan.$g.all") b=$(med "fan.$g.plain")
		awk -v l="  context: jq filter cost, G=$g" \
		    -v a="$(kv "$f" seconds)" -v b="$(kv "$b" seconds)" \
		    -v oa="$(kv "$W/res/fan.one.$g.all" seconds)" \
		    -v ob="$(kv "$W/res/fan.one.$g.plain" seconds)" \
		    -v n="$FAN_N" -v g="$g" 'BEGIN {
		    printf "  %-42s %9.2f   µs/group/msg (all match less no filter, compiles excluded)\n",
			l, (a - b - (oa - ob)) / g / n * 1e6 }'
	done
	for g in $FAN_GROUPS; do
		printf '  %-42s %9s %9.3f %9.3f  %s\n' \
		    "  context: mq-pub of one message, G=$g" "" \
		    "$(kv "$W/res/fan.one.$g.plain" seconds)" \
		    "$(kv "$W/res/fan.one.$g.all" seconds)" \
		    "s, no filter | jq filters (start-up; with jq, one compile of $g filters)"
	done
}

# ---- 7. replicate: initial sync beside rsync, and steady-state lag ----
# port_busy PORT [ADDR]: something listens on TCP PORT (on ADDR, hex as in
# /proc/net/tcp, e.g. 0100007F for 127.0.0.1; any address if not given).
port_busy() {
	local t=/proc/net/tcp6
	[ -r "$t" ] || t=""
	awk -v p="$(printf ':%04X' "$1")" -v a="${2:-}" 'FNR > 1 && $4 == "0A" &&
	    substr($2, length($2) - 4) == p && (a == "" || $2 == a p) { f = 1 }
	    END { exit !f }' /proc/net/tcp $t
}
# free_port: a TCP port nothing listens on, below the ephemeral range.
free_port() {
	local p=$(( 20000 + RANDOM % 10000 ))
	while port_busy "$p"; do p=$(( p + 1 )); done
	echo "$p"
}
# listening PORT PID LOG: wait (10 s at most) until PID listens on
# 127.0.0.1:PORT; stop the bench with its LOG if it exits or never does.
listening() {
	local i
	for i in $(seq 1000); do
		port_busy "$1" 0100007F && return 0
		kill -0 "$2" 2>/dev/null || die "pid $2 exited: $(cat "$3")"
		sleep 0.01
	done
	die "pid $2 not listening on 127.0.0.1:$1 after 10 s: $(cat "$3")"
}
# stop_bg PID: end a background daemon of ours and reap it.
stop_bg() {
	local p left=""
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	for p in $BG_PIDS; do [ "$p" = "$1" ] || left="$left $p"; done
	BG_PIDS=$left
}
# repl_pair SRC DST: keys for both spools, each authorizing the other.
repl_pair() {
	"$BIN/mq-replicate" -s "$1" keygen --name src > /dev/null ||
	    die "mq-replicate keygen $1 failed"
	"$BIN/mq-replicate" -s "$2" keygen --name dst > /dev/null ||
	    die "mq-replicate keygen $2 failed"
	"$BIN/mq-replicate" -s "$1" authorize \
	    "$("$BIN/mq-replicate" -s "$2" pubkey)" dst ||
	    die "mq-replicate authorize in $1 failed"
	"$BIN/mq-replicate" -s "$2" authorize \
	    "$("$BIN/mq-replicate" -s "$1" pubkey)" src ||
	    die "mq-replicate authorize in $2 failed"
}
# serve DST PORT NAME: mq-replicate serve on 127.0.0.1:PORT, in the
# background; its pid in SERVE_PID, its log in res/NAME.log.
serve() {
	"$BIN/mq-replicate" -s "$1" serve --listen "127.0.0.1:$2" -v \
	    > "$W/res/$3.log" 2>&1 &
	SERVE_PID=$!
	BG_PIDS="$BG_PIDS $SERVE_PID"
	listening "$2" "$SERVE_PID" "$W/res/$3.log"
}
# queued SPOOL TOPIC GROUP: messages in the group's new/ directories.
queued() {
	find "$1/topics/$2"/p*/g/"$3"/new -mindepth 1 2>/dev/null | wc -l
}
# timed_sync NAME: a sync right after a copy, timed (what it left unwritten).
timed_sync() { run "$1" 1 sync; }
repl_measure() {
	local rs=$W/repl-src rd=$W/repl-dst port pid i c j
	step "replicate: publishing $REPL_N messages into the source spool"
	"$BIN/mq-sub" -s "$rs" -g g -t 0 repl > /dev/null || [ $? = 1 ] ||
	    die "subscribe repl -g g failed"
	repl_pair "$rs" "$rd"
	"$FLOOR" lines "$REPL_N" "$SIZE" > "$W/repl-lines"
	sync
	run repl.pub "$REPL_N" "$BIN/mq-pub" -s "$rs" -l --sync=batch repl \
	    < "$W/repl-lines" > /dev/null
	rm -f "$W/repl-lines"
	stat -c %s "$rs/journal" > "$W/res/repl.journal"
	sync

	step "replicate: mq-replicate push of $REPL_N messages over 127.0.0.1"
	port=$(free_port)
	serve "$rd" "$port" repl.serve
	sync
	run repl.mq "$REPL_N" "$BIN/mq-replicate" -s "$rs" --no-progress \
	    push "127.0.0.1:$port"
	timed_sync repl.mq.sync
	stop_bg "$SERVE_PID"
	queued "$rd" repl g > "$W/res/repl.count"
	du -sk "$rd" | cut -f1 > "$W/res/repl.mq.du"

	step "replicate: format 2: the same messages in segments, pushed"
	local rs2=$W/repl2-src rd2=$W/repl2-dst
	MQ_FORMAT=2 "$BIN/mq-sub" -s "$rs2" -g g -t 0 repl > /dev/null ||
	    [ $? = 1 ] || die "subscribe repl -g g (format 2) failed"
	repl_pair "$rs2" "$rd2"
	"$FLOOR" lines "$REPL_N" "$SIZE" |
	    "$BIN/mq-pub" -s "$rs2" -l --sync=batch repl > /dev/null ||
	    die "mq-pub into format 2 failed"
	sync
	port=$(free_port)
	serve "$rd2" "$port" repl2.serve
	sync
	run repl.mq2 "$REPL_N" "$BIN/mq-replicate" -s "$rs2" --no-progress \
	    push "127.0.0.1:$port"
	timed_sync repl.mq2.sync
	stop_bg "$SERVE_PID"
	"$BIN/mq-topic" -s "$rd2" info --json repl |
	    jq '[.groups[].pending] | add' > "$W/res/repl.count2" ||
	    echo "?" > "$W/res/repl.count2"
	du -sk "$rd2" | cut -f1 > "$W/res/repl.mq2.du"
	rm -rf "$rs2" "$rd2"

	step "replicate: rsync -a to an rsync daemon on 127.0.0.1"
	mkdir "$W/repl-rsyncd"
	port=$(free_port)
	cat > "$W/rsyncd.conf" <<-EOF
	log file = $W/res/rsyncd.log
	[dst]
	path = $W/repl-rsyncd
	read only = no
	use chroot = no
	uid = root
	gid = root
	EOF
	rsync --daemon --no-detach --config="$W/rsyncd.conf" \
	    --address=127.0.0.1 --port="$port" > "$W/res/rsyncd.out" 2>&1 &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	listening "$port" "$pid" "$W/res/rsyncd.out"
	sync
	run repl.rsyncd "$REPL_N" rsync -a "$rs/" "rsync://127.0.0.1:$port/dst/"
	timed_sync repl.rsyncd.sync
	stop_bg "$pid"
	du -sk "$W/repl-rsyncd" | cut -f1 > "$W/res/repl.rsyncd.du"

	step "replicate: rsync -a and rsync -aH to a local directory"
	sync
	run repl.rsync "$REPL_N" rsync -a "$rs/" "$W/repl-rsync/"
	timed_sync repl.rsync.sync
	du -sk "$W/repl-rsync" | cut -f1 > "$W/res/repl.rsync.du"
	sync
	run repl.rsyncH "$REPL_N" rsync -aH "$rs/" "$W/repl-rsyncH/"
	timed_sync repl.rsyncH.sync
	du -sk "$W/repl-rsyncH" | cut -f1 > "$W/res/repl.rsyncH.du"

	step "replicate: the local floor, create, write and rename of each message"
	sync
	"$FLOOR" publish "$W/repl-floor" "$REPL_N" "$SIZE" > "$W/res/repl.floor"
	timed_sync repl.floor.sync
	du -sk "$W/repl-floor" | cut -f1 > "$W/res/repl.floor.du"

	[ "$have_lib" = 1 ] || return 0
	step "replicate: lag of push --follow, $LAG_RATE msgs/s for $LAG_SECS s"
	local ls=$W/lag-src ld=$W/lag-dst
	"$BIN/mq-sub" -s "$ls" -g g -t 0 lag > /dev/null || [ $? = 1 ] ||
	    die "subscribe lag -g g failed"
	repl_pair "$ls" "$ld"
	port=$(free_port)
	serve "$ld" "$port" lag.serve
	"$BIN/mq-replicate" -s "$ls" --no-progress -v push --follow \
	    "127.0.0.1:$port" > "$W/res/lag.push.log" 2>&1 &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	# Ready when the peer confirmed all of the journal (the topic's
	# records): the session is up and replag finds the peer's file.
	j=$(stat -c %s "$ls/journal")
	for i in $(seq 1000); do
		c=$(awk -F= '$1 == "confirmed" { print $2 }' \
		    "$ls"/replicate/peers/* 2>/dev/null || true)
		[ "${c:-0}" -lt "$j" ] || break
		kill -0 "$pid" 2>/dev/null ||
		    die "push --follow exited: $(cat "$W/res/lag.push.log")"
		sleep 0.01
	done
	[ "${c:-0}" -ge "$j" ] ||
	    die "push --follow: nothing confirmed after 10 s: $(cat "$W/res/lag.push.log")"
	sync
	"$W/bin/replag" "$ls" lag "$LAG_RATE" "$LAG_SECS" > "$W/res/lag" ||
	    die "replag failed"
	stop_bg "$pid"
	stop_bg "$SERVE_PID"
	queued "$ld" lag g > "$W/res/lag.count"
}
repl_table() {
	local f lbl c
	echo "7. replicate: initial sync of $REPL_N messages of $SIZE bytes (one topic, one group), over 127.0.0.1"
	printf '  %-42s %9s %9s %7s %7s %9s\n' "" "msgs/s" "seconds" \
	    "user s" "sys s" "then sync"
	for f in mq mq2 rsyncd rsync rsyncH floor; do
		case $f in
		mq) lbl="mq-replicate push (serve, encrypted)" ;;
		mq2) lbl="the same, a topic of format 2" ;;
		rsyncd) lbl="rsync -a to an rsync daemon" ;;
		rsync) lbl="rsync -a, local copy (no network)" ;;
		rsyncH) lbl="rsync -aH, local copy (no network)" ;;
		floor) lbl="floor: create+write+rename, one syncfs" ;;
		esac
		printf '  %-42s %9.0f %9.3f %7.2f %7.2f %8.3fs  %s MiB on disk (du)\n' \
		    "$lbl" "$(kv "$W/res/repl.$f" rate)" \
		    "$(kv "$W/res/repl.$f" seconds)" "$(kv "$W/res/repl.$f" user)" \
		    "$(kv "$W/res/repl.$f" sys)" \
		    "$(kv "$W/res/repl.$f.sync" seconds)" \
		    "$(( $(cat "$W/res/repl.$f.du") / 1024 ))"
	done
	awk -v a="$(kv "$W/res/repl.rsyncd" seconds)" \
	    -v b="$(kv "$W/res/repl.mq" seconds)" 'BEGIN { v = a / b
	    printf "  %-42s %8.2fx   target %-9s %s\n", "rsync daemon time / mq time",
		v, ">= 2x", (v >= 2) ? "met" : "NOT MET" }'
	awk -v a="$(kv "$W/res/repl.rsyncd" seconds)" \
	    -v b="$(kv "$W/res/repl.mq2" seconds)" 'BEGIN { v = a / b
	    printf "  %-42s %8.2fx   target %-9s %s\n", "rsync daemon time / mq time, format 2",
		v, ">= 2x", (v >= 2) ? "met" : "NOT MET" }'
	awk -v a="$(kv "$W/res/repl.mq" seconds)" \
	    -v b="$(kv "$W/res/repl.floor" seconds)" 'BEGIN {
	    printf "  %-42s %8.2fx   %s\n", "mq time / floor time", a / b,
		"(the local floor writes no journal and no log/ link, over no network)" }'
	awk -v a="$(kv "$W/res/repl.floor" seconds)" \
	    -v b="$(kv "$W/res/repl.mq2" seconds)" 'BEGIN { v = a / b
	    printf "  %-42s %8.2fx   target %-9s %s\n", "floor time / mq time, format 2",
		v, ">= 0.5x", (v >= 0.5) ? "met" : "NOT MET" }'
	printf '  %-42s %9s   %s\n' "  context: check of the format 2 copy" \
	    "$(cat "$W/res/repl.count2")" "pending in the destination's group (expected $REPL_N)"
	c=$(cat "$W/res/repl.count")
	if [ "$c" = "$REPL_N" ]; then
		printf '  %-42s %9s   %s\n' "  context: check of the copy" "$c" \
		    "messages in the destination group's new/ (as published)"
	else
		printf '  %-42s %9s   %s\n' "  WARNING: check of the copy" "$c" \
		    "messages in the destination group's new/, expected $REPL_N"
	fi
	printf '  %-42s %9.0f   msgs/s (%.3f s): building the source, cf. section 1\n' \
	    "  context: mq-pub -l --sync=batch" "$(kv "$W/res/repl.pub" rate)" \
	    "$(kv "$W/res/repl.pub" seconds)"
	awk -v j="$(cat "$W/res/repl.journal")" -v n="$REPL_N" 'BEGIN {
	    printf "  %-42s %9.1f   (%d bytes of SPOOL/journal)\n",
		"  context: journal bytes per message", j / n, j }'
	[ -f "$W/res/lag" ] || {
		echo "  (no lag figures: lib/libmq.a missing or not linkable)"
		return 0
	}
	f=$W/res/lag
	echo "7. replicate: lag, push --follow, one mq_pub_send(MQ_SYNC_BATCH) per message, $LAG_RATE msgs/s for $LAG_SECS s (ms)"
	printf '  %-42s %9s %9s %9s %9s %9s\n' "" p50 p90 p99 max mean
	printf '  %-42s %9s %9s %9s %9s %9s\n' "publish -> durable on the peer" \
	    "$(kv "$f" p50_ms)" "$(kv "$f" p90_ms)" "$(kv "$f" p99_ms)" \
	    "$(kv "$f" max_ms)" "$(kv "$f" mean_ms)"
	printf '  %-42s %9s %9s %9s %9s\n' "publish call alone (local durability)" \
	    "$(kv "$f" send_p50_ms)" "$(kv "$f" send_p90_ms)" \
	    "$(kv "$f" send_p99_ms)" "$(kv "$f" send_max_ms)"
	awk -v p="$(kv "$f" p99_ms)" -v m="$(kv "$f" missing)" 'BEGIN {
	    printf "  %-42s %9.2f   target %-9s %s\n", "p99 publish -> durable on the peer",
		p, "< 100 ms", (p < 100 && m == 0) ? "met" : "NOT MET" }'
	printf '  %-42s %9.0f   msgs/s (%s in %s s; %s sends started > 1 ms late)\n' \
	    "  context: the publishing loop's rate" "$(kv "$f" rate)" \
	    "$(kv "$f" count)" "$(kv "$f" seconds)" "$(kv "$f" late)"
	[ "$(kv "$f" missing)" = 0 ] ||
	    printf '  %-42s %9s   %s\n' "  WARNING: not confirmed within 30 s" \
		"$(kv "$f" missing)" "messages (left out of the percentiles)"
	c=$(cat "$W/res/lag.count")
	[ "$c" = "$LAG_N" ] ||
	    printf '  %-42s %9s   %s\n' "  WARNING: check of the copy" "$c" \
		"messages in the destination group's new/, expected $LAG_N"
}

# ---- 8. stat: mq-stat on a spool with STAT_PENDING pending ----
# A spool of its own (mq-stat with no TOPIC reads the whole spool), with
# one topic `stat` of STAT_PARTS partitions and the groups STAT_GROUPS:
# STAT_MSGS messages, each pending in both groups, so STAT_PENDING names
# in the groups' new/ directories.  Each form, the baselines first, runs
# once cold (sync, then page cache, dentries and inodes dropped, when
# BENCH_DROP_CACHES is not 0 and we may), then REPEAT times warm, the
# forms taking turns.
STAT_FORMS="floor find table json prom check"
STAT_DIRS=()                  # the groups' new/ directories
# stat_run FORM NAME: one timed run of FORM into res/NAME; its output in
# stat-out/NAME.
stat_run() {
	local ss=$W/stat-spool out=$W/stat-out/$2
	case $1 in
	floor) run "$2" "$STAT_PENDING" "$FLOOR" count "${STAT_DIRS[@]}" ;;
	find) run "$2" "$STAT_PENDING" sh -c 'find "$@" -type f | wc -l' sh \
	    "${STAT_DIRS[@]}" ;;
	table) run "$2" "$STAT_PENDING" "$BIN/mq-stat" -s "$ss" ;;
	json) run "$2" "$STAT_PENDING" "$BIN/mq-stat" -s "$ss" --json ;;
	prom) run "$2" "$STAT_PENDING" "$BIN/mq-stat" -s "$ss" --prometheus ;;
	check) run "$2" "$STAT_PENDING" "$BIN/mq-stat" -s "$ss" --check \
	    --crit "$STAT_CRIT" ;;
	esac > "$out"
}
stat_measure() {
	local ss=$W/stat-spool g r f cold="first run, page cache not dropped"
	step "stat: publishing $STAT_MSGS messages into $STAT_PARTS partitions, groups $STAT_GROUPS"
	"$BIN/mq-topic" -s "$ss" create --partitions "$STAT_PARTS" stat ||
	    die "mq-topic create stat failed"
	for g in $STAT_GROUPS; do
		"$BIN/mq-sub" -s "$ss" -g "$g" -t 0 stat > /dev/null ||
		    [ $? = 1 ] || die "subscribe stat -g $g failed"
	done
	backlog stat.pub "$ss" stat "$STAT_MSGS" "$STAT_LEN"
	STAT_DIRS=("$ss"/topics/stat/p*/g/*/new)
	mkdir "$W/stat-out"
	sync
	if [ "${BENCH_DROP_CACHES:-auto}" != 0 ] &&
	    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
		cold="sync; echo 3 > /proc/sys/vm/drop_caches before each"
	fi
	echo "$cold" > "$W/res/stat.coldnote"
	for f in $STAT_FORMS; do
		step "stat: $f, cold"
		sync
		case $cold in sync*) echo 3 > /proc/sys/vm/drop_caches ;; esac
		stat_run "$f" "stat.cold.$f"
	done
	for r in $(seq "$REPEAT"); do
		step "stat: every form, warm (run $r/$REPEAT)"
		for f in $STAT_FORMS; do stat_run "$f" "stat.$f.$r"; done
	done
}
# stat2_run FORM NAME: one timed run of a format 2 FORM into res/NAME.
stat2_run() {
	local ss=$W/stat2-spool out=$W/stat-out/$2
	case $1 in
	floor2) run "$2" "$STAT2_PENDING" sh -c 'cat "$@" | wc -l' sh \
	    "$ss"/topics/stat/p*/head "$ss"/topics/stat/p*/g/*/cursor ;;
	table2) run "$2" "$STAT2_PENDING" "$BIN/mq-stat" -s "$ss" --json ;;
	groups2) run "$2" "$STAT2_PENDING" "$BIN/mq-group" -s "$ss" list ;;
	info2) run "$2" "$STAT2_PENDING" "$BIN/mq-topic" -s "$ss" info stat ;;
	esac > "$out"
}
stat2_measure() {
	local ss=$W/stat2-spool g r f
	step "stat: format 2, publishing $STAT2_MSGS messages into $STAT_PARTS partitions, groups $STAT_GROUPS"
	MQ_FORMAT=2 "$BIN/mq-topic" -s "$ss" create --partitions "$STAT_PARTS" \
	    stat || die "mq-topic create stat failed"
	for g in $STAT_GROUPS; do
		"$BIN/mq-sub" -s "$ss" -g "$g" -t 0 stat > /dev/null ||
		    [ $? = 1 ] || die "subscribe stat -g $g failed"
	done
	backlog stat2.pub "$ss" stat "$STAT2_MSGS" "$STAT_LEN"
	sync
	for f in $STAT2_FORMS; do
		step "stat: format 2, $f, cold"
		sync
		case $(cat "$W/res/stat.coldnote") in
		sync*) echo 3 > /proc/sys/vm/drop_caches ;;
		esac
		stat2_run "$f" "stat.cold.$f"
	done
	for r in $(seq "$REPEAT"); do
		step "stat: format 2, every form, warm (run $r/$REPEAT)"
		for f in $STAT2_FORMS; do stat2_run "$f" "stat.$f.$r"; done
	done
	# Retention of all of it: every group commits to the log's end (the
	# cursor passes what it never fed), then gc, a day later by MQ_NOW,
	# unlinks the segments, one each.
	step "stat: format 2, gc of $STAT2_MSGS acked messages"
	local k end
	for k in $(seq 0 $((STAT_PARTS - 1))); do
		end=$("$BIN/mq-topic" -s "$ss" info --json stat |
		    jq ".heads[$k].committed")
		for g in $STAT_GROUPS; do
			"$BIN/mq-ack" -s "$ss" -g "$g" --commit "$k:$end" stat ||
			    die "mq-ack --commit $k:$end failed"
		done
	done
	find "$ss"/topics/stat/p*/log -type f | wc -l > "$W/res/stat2.segments"
	(export MQ_NOW=$(( $(date +%s) + 8 * 86400 ))
	run stat2.gc "$STAT2_MSGS" "$BIN/mq-topic" -s "$ss" gc stat)
	find "$ss"/topics/stat/p*/log -type f | wc -l > "$W/res/stat2.left"
}
stat2_table() {
	local f m label c
	echo "  format 2 (mq-spool(5), SEGMENTED STORAGE): $STAT2_PENDING pending: $STAT2_MSGS messages, each pending in both groups; counted from cursors"
	for f in $STAT2_FORMS; do
		case $f in
		floor2) label="floor: cat every head and cursor" ;;
		table2) label="mq-stat --json" ;;
		groups2) label="mq-group list" ;;
		info2) label="mq-topic info stat" ;;
		esac
		m=$(med "stat.$f")
		awk -v l="$label" -v c="$(kv "$W/res/stat.cold.$f" seconds)" \
		    -v w="$(kv "$m" seconds)" -v f="$f" 'BEGIN {
		    t = f == "floor2" ? "" : sprintf("target < 50 ms warm, < 1 s cold: %s",
			(w < 0.05 && c < 1) ? "met" : "NOT MET")
		    printf "  %-42s %9.1f cold %9.1f warm (ms)  %s\n", l, c * 1000,
			w * 1000, t }'
	done
	c=$(jq '[.groups[].pending] | add' "$W/stat-out/stat.table2.1")
	[ "$c" = "$STAT2_PENDING" ] || printf '  %-42s %9s   %s\n' \
	    "  WARNING: mq-stat --json counted" "$c" "(expected $STAT2_PENDING)"
	awk -v s="$(kv "$W/res/stat2.gc" seconds)" -v n="$(cat "$W/res/stat2.segments")" \
	    -v l="$(cat "$W/res/stat2.left")" -v m="$STAT2_MSGS" 'BEGIN {
	    printf "  %-42s %9.1f ms      %d segments, %d left; target < 1 s: %s\n",
		"gc of " m " acked messages", s * 1000, n, l, (s < 1 && l == 0) ? "met" : "NOT MET" }'
	printf '  %-42s %9.0f   msgs/s (%.3f s for %s): building the spool\n' \
	    "  context: format 2, mq-pub -l --sync=none" \
	    "$(kv "$W/res/stat2.pub" rate)" "$(kv "$W/res/stat2.pub" seconds)" \
	    "$STAT2_MSGS"
}
stat_table() {
	local f m fl flc label c first=cold
	fl=$(med stat.floor) flc=$W/res/stat.cold.floor
	case $(cat "$W/res/stat.coldnote") in first*) first=first ;; esac
	echo "8. stat: $STAT_PENDING pending: $STAT_MSGS messages, each pending in the groups ${STAT_GROUPS// /, }; $STAT_PARTS partitions, ${#STAT_DIRS[@]} new/ (wall ms)"
	printf '  %-42s %9s %7s %9s %7s %7s %7s  %s\n' "" "$first" "/floor" \
	    "warm" "/floor" "user s" "sys s" "runs (warm, ms)"
	for f in $STAT_FORMS; do
		case $f in
		floor) label="floor: getdents64 of each new/, count" ;;
		find) label="find NEW... -type f | wc -l" ;;
		table) label="mq-stat" ;;
		json) label="mq-stat --json" ;;
		prom) label="mq-stat --prometheus" ;;
		check) label="mq-stat --check --crit '$STAT_CRIT'" ;;
		esac
		m=$(med "stat.$f")
		awk -v l="$label" -v c="$(kv "$W/res/stat.cold.$f" seconds)" \
		    -v cf="$(kv "$flc" seconds)" -v w="$(kv "$m" seconds)" \
		    -v wf="$(kv "$fl" seconds)" -v u="$(kv "$m" user)" \
		    -v y="$(kv "$m" sys)" -v o="$(for r in $(seq "$REPEAT"); do
			kv "$W/res/stat.$f.$r" seconds; done | tr '\n' ' ')" 'BEGIN {
		    n = split(o, a, " "); o = ""
		    for (i = 1; i <= n; i++) o = o sprintf("%s%.0f", i > 1 ? " " : "", a[i] * 1000)
		    printf "  %-42s %9.0f %6.2fx %9.0f %6.2fx %7.2f %7.2f  %s\n", l,
			c * 1000, c / cf, w * 1000, w / wf, u, y, o }'
	done
	m=$(med stat.table)
	awk -v w="$(kv "$m" seconds)" 'BEGIN {
	    printf "  %-42s %9.3f   target %-9s %s\n", "mq-stat, warm (s)", w,
		"< 1 s", (w < 1) ? "met" : "NOT MET" }'
	printf '  %-42s %9s   %s\n' "  context: $first" "" "$(cat "$W/res/stat.coldnote")"
	printf '  %-42s %9.0f   msgs/s (%.3f s for %s): building the spool\n' \
	    "  context: mq-pub -l --sync=none" "$(kv "$W/res/stat.pub" rate)" \
	    "$(kv "$W/res/stat.pub" seconds)" "$STAT_MSGS"
	# Every form must have seen every pending name.
	for f in $STAT_FORMS; do
		m=$W/stat-out/stat.$f.1
		case $f in
		floor) c=$(kv "$m" count) ;;
		find) c=$(cat "$m") ;;
		prom) c=$(awk '/^mq_pending_messages\{/ { n += $2 } END { print n + 0 }' "$m") ;;
		check) c=$(sed -n 's/^MQ OK - .*/ok/p' "$m") ;;
		*) continue ;;
		esac
		case $f:$c in
		check:ok|*:"$STAT_PENDING") ;;
		*) printf '  %-42s %9s   %s\n' "  WARNING: $f saw" "$c" \
		    "(expected $STAT_PENDING pending; check: MQ OK)" ;;
		esac
	done
}

# ---- where we are ----
fs=$(stat -f -c %T "$W")
mnt_fs=$(findmnt -n -o FSTYPE -T "$W" 2>/dev/null || echo "?")
mnt_opts=$(findmnt -n -o OPTIONS -T "$W" 2>/dev/null || echo "?")
mnt_src=$(findmnt -n -o SOURCE -T "$W" 2>/dev/null || echo "")
fsnote=""
if [ "$mnt_fs" = ext4 ] && [ -n "$mnt_src" ]; then
	fsnote="ext4 without a journal"
	for j in /proc/fs/jbd2/"$(basename "$mnt_src")"-*; do
		[ -e "$j" ] && fsnote=""
	done
fi
case ",$mnt_opts," in *,discard,*) fsnote="${fsnote:+$fsnote, }online discard" ;; esac
# ext4 without a journal will not reuse an inode freed in the last 60 s (300 s
# while its inode table block is dirty) and scans past every such inode on
# each create: right after a mass delete (the end of a previous run, say)
# creating files is several times slower, whatever creates them.  The check
# only looks at inode table blocks still in the page cache, so a sync and a
# dropped cache put every run on the same footing.
drop=${BENCH_DROP_CACHES:-auto}
if [ "$drop" = auto ]; then
	drop=0
	case $fsnote in "ext4 without a journal"*)
		[ "$(id -u)" != 0 ] || drop=1 ;;
	esac
fi
dropped="no"
if [ "$drop" = 1 ]; then
	sync
	if echo 1 > /proc/sys/vm/drop_caches 2>/dev/null; then
		dropped="yes (sync; echo 1 > /proc/sys/vm/drop_caches)"
	else
		dropped="failed (not root?)"
	fi
fi
rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
[ -z "$(git -C "$ROOT" status --porcelain -- lib src 2>/dev/null)" ] ||
	rev="$rev + uncommitted changes"

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
busy=$(ps -eo pcpu=,pid=,comm= --sort=-pcpu |
    awk -v me=$$ '$2 != me && $3 != "ps" && $1 >= 20 { printf "%s%s (%s%%)", s, $3, $1; s = ", " }')

# alone_header TITLE: the header of a section run alone.
alone_header() {
	echo
	echo "mq benchmark, $1"
	echo "  scratch $W"
	echo "  filesystem: stat -f says $fs; mounted $mnt_fs ($mnt_opts)${fsnote:+; $fsnote}"
	echo "  page cache dropped at start: $dropped"
	echo "  $(nproc) CPUs, $(uname -sr), mq $rev"
	echo "  load average at start $load_start, at end $(cut -d' ' -f1-3 /proc/loadavg)${busy:+; busy at start: $busy}"
	echo
}
if [ "$SECTION" = fanout ]; then
	fanout_measure
	alone_header "section 6 alone: median of $REPEAT run(s) where several"
	fanout_table
	exit 0
fi
if [ "$SECTION" = replicate ]; then
	repl_measure
	alone_header "section 7 alone: one run of each figure"
	repl_table
	exit 0
fi
if [ "$SECTION" = stat ]; then
	stat_measure
	stat2_measure
	alone_header "section 8 alone: median of $REPEAT warm run(s) where several"
	stat_table
	stat2_table
	exit 0
fi
if [ "$SECTION" = sealed ]; then
	sealed_measure
	alone_header "section 11 alone: median of $REPEAT run(s)"
	sealed_table
	exit 0
fi
if [ "$SECTION" = roles ]; then
	roles_measure
	alone_header "section 14 alone: median of $REPEAT run(s)"
	roles_table
	exit 0
fi
if [ "$SECTION" = shared ]; then
	shared_measure
	alone_header "section 9 alone: median of $REPEAT run(s)"
	shared_table
	exit 0
fi
if [ "$SECTION" = signed ]; then
	signed_measure
	alone_header "section 10 alone: median of $REPEAT run(s)"
	signed_table
	exit 0
fi
if [ "$SECTION" = req ]; then
	req_measure
	alone_header "section 12 alone: one run"
	req_table
	exit 0
fi
if [ "$SECTION" = http ]; then
	http_measure
	alone_header "section 13 alone: one run"
	http_table
	exit 0
fi
if [ "$SECTION" = scale ]; then
	scale_measure
	alone_header "section 16 alone: median of $REPEAT warm run(s) where several"
	scale_table
	exit 0
fi
if [ "$SECTION" = peers ]; then
	peers_measure
	alone_header "section 15 alone: one run"
	peers_table
	exit 0
fi

# ---- 1. latency (first: it creates few files, nothing has been deleted) ----
step "latency: $LATN messages, one in flight"
if [ "$have_lib" = 1 ]; then
	"$LAT" mq "$W/lat-spool" "$BIN/mq-sub" "$LATN" "$WARMUP" \
	    > "$W/res/lat.mq" || die "lat mq failed"
fi
"$LAT" inotify "$W/lat-ino" "$LATN" "$WARMUP" > "$W/res/lat.ino" ||
	die "lat inotify failed"

# ---- 2. publish: fresh directories, nothing deleted until the drains ----
# (ext4 without a journal skips inodes freed in the last 60-300 s when it
# allocates one, a scan that makes creating files right after mass deletes
# many times slower: so all creating comes before all deleting.)
# The cost of counting (mq-spool(5) COUNTERS): each run publishes the same
# messages three times more, counted (pub$r, pubb$r) and uncounted (off$r,
# offb$r, MQ_STATS=off), in the order ABBA in odd runs and BAAB in even
# ones, so that a drift cancels and the first place goes to each in turn;
# section 3 drains them alike.
"$FLOOR" lines "$N" "$SIZE" > "$W/lines"
# pub_mq NAME TOPIC [ENV...]: one timed publish of $W/lines.
pub_mq() {
	local name=$1 topic=$2
	shift 2
	run "$name" "$N" env "$@" "$BIN/mq-pub" -s "$SP" -l --sync=batch \
	    "$topic" < "$W/lines" > /dev/null
	sync
}
# abba R STEP FN: the four timed runs of STEP (pub or drain) in run R,
# FN NAME TOPIC [ENV...] doing each: counted (mq, mqb) and uncounted
# (off, offb), in the order ABBA in odd runs and BAAB in even ones.
abba() {
	local r=$1 step=$2 fn=$3
	local a=("$fn" "$step.mq.$r" "pub$r") a2=("$fn" "$step.mqb.$r" "pubb$r")
	local b=("$fn" "$step.off.$r" "off$r" MQ_STATS=off)
	local b2=("$fn" "$step.offb.$r" "offb$r" MQ_STATS=off)
	if [ $((r % 2)) = 1 ]; then
		"${a[@]}"; "${b[@]}"; "${b2[@]}"; "${a2[@]}"
	else
		"${b[@]}"; "${a[@]}"; "${a2[@]}"; "${b2[@]}"
	fi
}
for r in $(seq "$REPEAT"); do
	step "publish run $r/$REPEAT: $N messages each"
	for t in pub off offb pubb; do subscribe "$t$r"; done
	sync
	abba "$r" pub pub_mq
	"$FLOOR" publish "$W/floor$r" "$N" "$SIZE" > "$W/res/pub.floor.$r"
	sync
	"$PY" "$ROOT/bench/dirq_add.py" "$W/dirq$r" "$N" "$SIZE" \
	    > "$W/res/pub.dirq.$r"
	sync
done
# Two more floor sets for the context rows of the drain.
"$FLOOR" publish "$W/floorfree" "$N" "$SIZE" > /dev/null
"$FLOOR" publish "$W/floorread" "$N" "$SIZE" > /dev/null

# ---- 3. drains, right after the publishes (the page cache still holds
# the messages, as for a consumer that keeps up); none of them frees an
# inode, so the creating below is not slowed ----
"$FLOOR" keep "$W/floorread"
for r in $(seq "$REPEAT"); do "$FLOOR" keep "$W/floor$r"; done
sync
# drain_mq NAME TOPIC [ENV...]: one timed drain of TOPIC.
drain_mq() {
	local name=$1 topic=$2
	shift 2
	run "$name" "$N" env "$@" "$BIN/mq-sub" -s "$SP" -g bench "$topic" \
	    > /dev/null
	sync
}
for r in $(seq "$REPEAT"); do
	step "drain run $r/$REPEAT"
	abba "$r" drain drain_mq
	"$FLOOR" drain "$W/floor$r" > "$W/res/drain.floor.$r"
	sync
done
"$FLOOR" drainread "$W/floorread" 2> "$W/res/drain.floorread" > /dev/null
sync
# The counting alone, per call, beside a rename(2) in the same directory.
if [ "$have_lib" = 1 ]; then
	step "counters: $((N * 10)) calls each"
	"$W/bin/counters" "$W/counters" "$((N * 10))" > "$W/res/counters" ||
	    die "bench counters failed"
fi

# ---- 5. handlers: publish, then drain at once (nothing above freed an
# inode, and these drains free none: the log holds every message; the
# exactly-once drain creates its ledger's files, so it comes before the
# inode-freeing drain of step 4) ----
# One topic per run, four groups subscribed before the publish, so every
# group drains the same N_EXEC messages: plain (mq-sub > /dev/null, also
# the normal group beside the ledger), eo (--exactly-once), exec1 (--exec
# true) and exec2 (-j 2 --exec true).
for r in $(seq "$REPEAT"); do
	step "handlers: publishing $N_EXEC messages to hand$r"
	subscribe "hand$r" plain
	subscribe "hand$r" eo --exactly-once
	subscribe "hand$r" exec1
	subscribe "hand$r" exec2
	subscribe "hand$r" pipe
	"$FLOOR" lines "$N_EXEC" "$SIZE" |
	    "$BIN/mq-pub" -s "$SP" -q -l --sync=batch "hand$r" ||
	    die "publish hand$r failed"
done
sync
for r in $(seq "$REPEAT"); do
	step "handlers run $r/$REPEAT: $N_EXEC messages each"
	run "h.plain.$r" "$N_EXEC" "$BIN/mq-sub" -s "$SP" -g plain "hand$r" \
	    > /dev/null
	sync
	run "h.eo.$r" "$N_EXEC" "$BIN/mq-sub" -s "$SP" -g eo "hand$r" \
	    > /dev/null
	sync
	# Into a pipe each message waits for its reader (mq-sub(1)).
	run "h.pipe.$r" "$N_EXEC" sh -c '"$1" -s "$2" -g pipe "$3" | cat' \
	    sh "$BIN/mq-sub" "$SP" "hand$r" > /dev/null
	sync
	run "h.exec1.$r" "$N_EXEC" "$BIN/mq-sub" -s "$SP" -g exec1 \
	    --exec true "hand$r" > /dev/null
	sync
	run "h.exec2.$r" "$N_EXEC" "$BIN/mq-sub" -s "$SP" -j 2 -g exec2 \
	    --exec true "hand$r" > /dev/null
	sync
	"$FLOOR" spawn "$N_EXEC" > "$W/res/h.spawn.$r" ||
	    die "floor spawn failed"
	for g in plain eo exec1 exec2 pipe; do
		n=$(left "hand$r" "$g")
		[ "$n" = 0 ] || die "hand$r -g $g: $n messages left after the drain"
	done
done
# Ledger entries of the last run's exactly-once group (expected: N_EXEC).
eo_done=$(find "$SP/topics/hand$REPEAT"/p*/g/eo/done -mindepth 1 \
    2>/dev/null | wc -l)

# ---- 6. fan-out (creates files only: before step 4 frees any) ----
fanout_measure

# ---- 7. replicate (creates files only, too) ----
repl_measure

# ---- 8. stat (creates its spool, then only reads) ----
stat_measure
stat2_measure

# ---- 9. a spool shared between hosts (GlusterFS, when it can run) ----
shared_measure

# ---- 10. signed messages (a drain unlinks group links only: the log
# keeps every file, so no inode is freed yet) ----
signed_measure

# ---- 11. sealed topics (creates files only) ----
sealed_measure

# ---- 12. request/reply (a few files) ----
req_measure

# ---- 14. roles and filters (creates files; drains unlink links only) ----
roles_measure

# ---- 13. mq-http (publishes: files) ----
http_measure

# ---- 15. peers (creates files; its drains unlink group links only) ----
peers_measure

# ---- 4. deep backlog: DEEP pending vs SHALLOW pending ----
step "deep backlog: publishing $DEEP messages (--sync=none)"
subscribe deep
for r in $(seq "$REPEAT"); do subscribe "shallow$r"; done
backlog pub.deep "$SP" deep "$DEEP" "$SIZE"
for r in $(seq "$REPEAT"); do
	backlog "pub.shallow$r" "$SP" "shallow$r" "$SHALLOW" "$SIZE"
done

# Frees its inodes: only after all creating.
"$FLOOR" drain "$W/floorfree" > "$W/res/drain.floorfree"
sync
for r in $(seq "$REPEAT"); do
	step "deep backlog drain run $r/$REPEAT"
	run "deep.big.$r" "$DEEPN" "$BIN/mq-sub" -s "$SP" -g bench \
	    -n "$DEEPN" deep > /dev/null
	run "deep.small.$r" "$SHALLOW" "$BIN/mq-sub" -s "$SP" -g bench \
	    -n "$SHALLOW" "shallow$r" > /dev/null
	run "deep.one.$r" 1 "$BIN/mq-sub" -s "$SP" -g bench -n 1 deep \
	    > /dev/null
done
# The listing floor, on mq's own queue directory of the deep backlog.
deepq=$SP/topics/deep/p0/g/bench
if [ -d "$deepq/new" ]; then
	sync
	"$FLOOR" list "$deepq" > "$W/res/deep.list"
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the table ----
# runs PREFIX [UNIT]: every run's rate, in k msgs/s (UNIT 1: in msgs/s), in
# run order.
ratio() { # LABEL A B TARGET KIND(pct|x) MIN
	local v
	v=$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.4f", a / b }')
	awk -v l="$1" -v v="$v" -v t="$4" -v k="$5" -v m="$6" 'BEGIN {
	    s = (k == "pct") ? sprintf("%.0f%%", v * 100) : sprintf("%.2fx", v)
	    printf "  %-42s %9s   target %-9s %s\n", l, s, t,
	        (v >= m) ? "met" : "NOT MET" }'
}

p_mq=$(med pub.mq) p_fl=$(med pub.floor) p_dq=$(med pub.dirq)
d_mq=$(med drain.mq) d_fl=$(med drain.floor)
p_off=$(med pub.off) d_off=$(med drain.off)
# cost LABEL STEP: what counting costs in STEP (pub or drain): for each
# run, the counted pair's seconds (mq, mqb) against the uncounted pair's
# (off, offb), as a change of msgs/s; the median of the runs, and each.
cost() {
	local r each="" v
	for r in $(seq "$REPEAT"); do
		v=$(awk -v a="$(kv "$W/res/$2.mq.$r" seconds)" \
		    -v b="$(kv "$W/res/$2.mqb.$r" seconds)" \
		    -v c="$(kv "$W/res/$2.off.$r" seconds)" \
		    -v d="$(kv "$W/res/$2.offb.$r" seconds)" 'BEGIN {
		    printf "%+.1f", ((c + d) / (a + b) - 1) * 100 }')
		each="$each $v%"
	done
	echo "$each" | tr ' ' '\n' | grep . | sort -g |
	    awk -v l="$1" -v e="$each" '{ v[NR] = $1 } END {
	    printf "  %-42s %+8.1f%%   msgs/s counted vs MQ_STATS=off, ABBA/BAAB; runs:%s\n",
		l, v[int((NR + 1) / 2)], e }'
}
k_big=$(med deep.big) k_small=$(med deep.small)

echo
echo "mq benchmark: $SIZE-byte messages; median of $REPEAT run(s) where several"
echo "  scratch $W"
echo "  filesystem: stat -f says $fs; mounted $mnt_fs ($mnt_opts)${fsnote:+; $fsnote}"
echo "  page cache dropped at start: $dropped"
echo "  $(nproc) CPUs, $(uname -sr), mq $rev"
echo "  load average at start $load_start, at end $load_end${busy:+; busy at start: $busy}"
echo
printf '  %-42s %9s %9s %7s %7s  %s\n' "" "msgs/s" "seconds" "user s" "sys s" "runs (msgs/s)"
echo "1. publish, $N messages"
row "mq-pub -l --sync=batch" "$p_mq" "$(runs pub.mq)"
row "floor: create+write+close+rename, 1 syncfs" "$p_fl" "$(runs pub.floor)"
row "dirq QueueSimple.add (never fsyncs)" "$p_dq" "$(runs pub.dirq)"
ratio "mq / floor" "$(kv "$p_mq" rate)" "$(kv "$p_fl" rate)" ">= 60%" pct 0.6
ratio "mq / dirq" "$(kv "$p_mq" rate)" "$(kv "$p_dq" rate)" ">= 2x" x 2
row "  context: mq-pub, MQ_STATS=off" "$p_off" "$(runs pub.off)"
cost "  context: the counters' cost" pub
# ns NAME: nanoseconds per call of a counters figure.
ns() { awk -v n="$1" '{ split($1, a, "="); if (a[2] == n) {
    split($2, b, "="); print b[2] } }' "$W/res/counters"; }
[ "$have_lib" = 0 ] || printf '  %-42s %9s   ns per call (a rename(2) here: %s ns; one per chunk)\n' \
    "  context: counting a publish, alone" "$(ns published)" "$(ns rename)"
echo "2. drain, $N pending messages"
row "mq-sub -g bench TOPIC > /dev/null" "$d_mq" "$(runs drain.mq)"
row "floor: rename+unlink (log link kept)" "$d_fl" "$(runs drain.floor)"
row "  context: floor, unlink frees the file" "$W/res/drain.floorfree"
row "  context: floor + read + write to stdout" "$W/res/drain.floorread"
ratio "mq / floor (log link kept)" "$(kv "$d_mq" rate)" "$(kv "$d_fl" rate)" ">= 50%" pct 0.5
row "  context: mq-sub, MQ_STATS=off" "$d_off" "$(runs drain.off)"
cost "  context: the counters' cost (acks, latency)" drain
[ "$have_lib" = 0 ] || printf '  %-42s %9s   ns per call (a rename(2) here: %s ns)\n' \
    "  context: counting an ack, alone" "$(ns acked)" "$(ns rename)"
echo "3. latency, publish to delivery, one message in flight, $LATN messages (µs)"
printf '  %-42s %9s %9s %9s %9s %9s  %s\n' "" p50 p90 p99 max mean "publish call p50"
latrow() {
	printf '  %-42s %9s %9s %9s %9s %9s  %s\n' "$1" "$(kv "$2" p50_us)" \
	    "$(kv "$2" p90_us)" "$(kv "$2" p99_us)" "$(kv "$2" max_us)" \
	    "$(kv "$2" mean_us)" "$(kv "$2" send_p50_us)"
}
if [ "$have_lib" = 1 ]; then
	latrow "mq: mq_pub_send(MQ_SYNC_NONE) -> mq-sub -f" "$W/res/lat.mq"
fi
latrow "floor: tmp+rename -> inotify child" "$W/res/lat.ino"
if [ "$have_lib" = 1 ]; then
	awk -v p="$(kv "$W/res/lat.mq" p50_us)" 'BEGIN {
	    printf "  %-42s %9.3f   target %-9s %s\n", "mq p50 (ms)", p / 1000,
	        "< 0.5 ms", (p < 500) ? "met" : "NOT MET" }'
fi
echo "4. deep backlog: claim+ack cost per message, one mq-sub, its readdir included"
printf '  %-42s %9s %9s %7s %7s  %s\n' "" "µs/msg" "seconds" "user s" "sys s" "runs (µs/msg)"
deeprow() { # LABEL PREFIX
	local f=$W/res/$2 out="" r
	for r in $(seq "$REPEAT"); do
		out="$out $(awk -v c="$(kv "$f.$r" count)" -v s="$(kv "$f.$r" seconds)" \
		    'BEGIN { printf "%.1f", s / c * 1e6 }')"
	done
	local m
	m=$(med "$2")
	awk -v l="$1" -v c="$(kv "$m" count)" -v s="$(kv "$m" seconds)" \
	    -v u="$(kv "$m" user)" -v y="$(kv "$m" sys)" -v o="${out# }" 'BEGIN {
	    printf "  %-42s %9.1f %9.3f %7.2f %7.2f  %s\n", l, s / c * 1e6, s, u, y, o }'
}
deeprow "mq-sub -n $DEEPN, $DEEP pending" deep.big
deeprow "mq-sub -n $SHALLOW, $SHALLOW pending" deep.small
one=$(med deep.one)
printf '  %-42s %9s %9.3f %7.2f %7.2f  %s\n' \
    "  context: mq-sub -n 1, $DEEP pending" "" "$(kv "$one" seconds)" \
    "$(kv "$one" user)" "$(kv "$one" sys)" "(start-up and the listing)"
if [ -f "$W/res/deep.list" ]; then
	f=$W/res/deep.list
	printf '  %-42s %9s %9.3f %7.2f %7.2f  %s\n' \
	    "  context: floor readdir+sort of that new/" "" "$(kv "$f" seconds)" \
	    "$(kv "$f" user)" "$(kv "$f" sys)" \
	    "($(kv "$f" count) names; readdir $(kv "$f" readdir) s, sort $(kv "$f" sort) s)"
fi
awk -v a="$(kv "$k_big" seconds)" -v o="$(kv "$one" seconds)" \
    -v ca="$(kv "$k_big" count)" 'BEGIN {
    v = (a - o) / (ca - 1) * 1e6
    printf "  %-42s %9s   (the -n %d row less the -n 1 row%s)\n",
        "  context: marginal claim+ack, deep", sprintf("%.1f", v), ca,
        (v <= 0) ? ": below the noise" : "" }'
awk -v a="$(kv "$k_big" seconds)" -v ca="$(kv "$k_big" count)" \
    -v b="$(kv "$k_small" seconds)" -v cb="$(kv "$k_small" count)" 'BEGIN {
    v = (a / ca) / (b / cb)
    printf "  %-42s %8.2fx   target %-9s %s\n", "deep / shallow", v, "<= 2x",
        (v <= 2) ? "met" : "NOT MET" }'
printf '  %-42s %9.0f msgs/s (%s s for %s)\n' \
    "context: mq-pub -l --sync=none of the backlog" \
    "$(kv "$W/res/pub.deep" rate)" "$(kv "$W/res/pub.deep" seconds)" "$DEEP"

h_plain=$(med h.plain) h_x1=$(med h.exec1) h_x2=$(med h.exec2)
h_sp=$(med h.spawn)
# note LABEL VALUE TEXT: a figure without a target.
note() { printf '  %-42s %9s   %s\n' "$1" "$2" "${3:-}"; }
echo "5. handlers, $N_EXEC pending messages, one mq-sub (-j 2: two processes)"
printf '  %-42s %9s %9s %7s %7s  %s\n' "" "msgs/s" "seconds" "user s" "sys s" "runs (msgs/s)"
row "mq-sub -g G TOPIC > /dev/null" "$h_plain" "$(runs h.plain)"
h_pipe=$(med h.pipe)
row "mq-sub -g G TOPIC | cat > /dev/null" "$h_pipe" "$(runs h.pipe)"
note "  into a pipe / into a file" "$(awk -v a="$(kv "$h_pipe" rate)" \
    -v b="$(kv "$h_plain" rate)" 'BEGIN { printf "%.2fx", a / b }')" \
    "(a message at a time, acked once read)"
row "mq-sub -g G --exec true TOPIC" "$h_x1" "$(runs h.exec1 1)"
row "mq-sub -j 2 -g G --exec true TOPIC" "$h_x2" "$(runs h.exec2 1)"
row "floor: fork+exec sh -c true, wait (spawns/s)" "$h_sp" "$(runs h.spawn 1)"
note "--exec true / spawn floor" "$(awk -v a="$(kv "$h_x1" rate)" \
    -v b="$(kv "$h_sp" rate)" 'BEGIN { printf "%.0f%%", a / b * 100 }')"
note "-j 2 / -j 1" "$(awk -v a="$(kv "$h_x2" rate)" \
    -v b="$(kv "$h_x1" rate)" 'BEGIN { printf "%.2fx", a / b }')" \
    "($(nproc) CPUs)"
note "  context: --exec true less the spawn floor" "$(awk \
    -v a="$(kv "$h_x1" rate)" -v b="$(kv "$h_sp" rate)" \
    'BEGIN { printf "%.1f", 1e6 / a - 1e6 / b }')" \
    "µs/msg (pipes, environment, body, claim and ack)"
printf '  %-42s %9s %9s %7s %7s  %s\n' "exactly-once ledger" "µs/msg" "seconds" "user s" "sys s" "runs (µs/msg)"
deeprow "mq-sub -g G, normal group" h.plain
deeprow "mq-sub -g G, --exactly-once group" h.eo
h_eo=$(med h.eo)
note "ledger cost: --exactly-once less normal" "$(awk \
    -v a="$(kv "$h_eo" seconds)" -v ca="$(kv "$h_eo" count)" \
    -v b="$(kv "$h_plain" seconds)" -v cb="$(kv "$h_plain" count)" \
    'BEGIN { printf "%.1f", (a / ca - b / cb) * 1e6 }')" \
    "µs/msg (create in done/; one fsync of done/ per batch; $eo_done entries)"
fanout_table
repl_table
stat_table
stat2_table
shared_table
signed_table
sealed_table
req_table
http_table
roles_table
peers_table
