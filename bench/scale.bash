# bench/scale.bash: section 16 of bench/run.sh (sourced by it), `bench/run.sh
# scale`: issue 28's targets of scale on format 2 (mq-spool(5), SEGMENTED
# STORAGE), each beside its baseline measured in the same run.  Messages
# are 100-byte lines, batch-published with mq-pub -l.
#
#  a. monitoring: mq-stat, mq-group list and mq-topic info on a format 2
#     topic of SC_PARTS partitions with SC_STAT2_N messages pending in each
#     of the groups SC_GROUPS, cold (sync; echo 3 > drop_caches before
#     each) and warm (median of REPEAT); the baseline: the same on format 1
#     with SC_STAT1_N, and for each the floor of what the tools read
#     (format 2: a head and a cursor per partition and the first line of
#     each segment, head -n1; format 1: getdents of each new/).
#  b. retention: gc of SC_GC_N acked messages (a group committed to the
#     log's end, MQ_NOW past the retention), while a durable mq-pub -l of
#     SC_GCPUB_N messages publishes into the same topic; the publish rate
#     alone, with gc, and inside gc's window (the head's committed count
#     read as gc starts and ends, beside a window of the same place in the
#     run alone).  The baseline: format 1's gc of SC_GC1_N acked (drained)
#     messages.
#  c. space: SC_SPACE_N messages retained in a format 2 topic with 1, 10
#     and 100 groups: bytes on disk (du) over payload bytes, and inodes
#     (distinct inode numbers under the topic); the baseline: the format 1
#     topic of (a).
#  d. a soak, shortened: SC_SOAK_RATE msgs/s (bench/scale.c pace into
#     mq-pub -l) consumed by 3 groups with mq-sub -f, retention
#     SC_SOAK_RET s, for SC_SOAK_SECS s, mq-topic gc every SC_SOAK_EVERY s
#     (as cron would); every SC_SOAK_EVERY s the topic's bytes, inodes,
#     segments and pending, and each group's publish-to-delivery latency
#     in that window (bench/scale.c lat).
#
# Uses run, kv, med, step, backlog, die and the variables of run.sh
# (BIN, W, FLOOR, TIMEIT, REPEAT, BG_PIDS); SC_* sizes are set there.

SC_LEN=101                    # lines of 100 characters: 100-byte bodies
SC_PARTS=4 SC_GROUPS="s1 s2"
SC_STAT_FORMS="floor stat groups info"
SC_SPACE_GROUPS="1 10 100"
SC_PARTS_RUN=${SCALE_PARTS:-stat space gc soak}  # the parts to run
SC_GC_RUNS=3                  # gc runs: each gc is once per spool filled
SC_SOAK_GROUPS="c1 c2 c3"
SC_COLD="first run, page cache not dropped"

# sc_drop: sync, and drop the page cache, dentries and inodes when we may.
sc_drop() {
	sync
	case $SC_COLD in sync*) echo 3 > /proc/sys/vm/drop_caches ;; esac
}
# sc_create SPOOL FORMAT TOPIC PARTITIONS RETENTION GROUP...: a topic and
# its groups, made before anything is published.
sc_create() {
	local sp=$1 fmt=$2 t=$3 parts=$4 ret=$5 g
	shift 5
	MQ_FORMAT=$fmt "$BIN/mq-topic" -s "$sp" create --format "$fmt" \
	    --partitions "$parts" --retention "$ret" "$t" ||
	    die "mq-topic create $t failed"
	for g in "$@"; do
		"$BIN/mq-group" -s "$sp" create "$t" "$g" ||
		    die "mq-group create $t $g failed"
	done
}
# sc_space DIR PREFIX: bytes on disk (du, a hard link counted once), names
# and distinct inodes under DIR, into res/PREFIX.{bytes,names,inodes}.
sc_space() {
	# In the soak, files come and go under du and find: a name gone
	# before they got to it is no error.
	{ du -sB1 "$1" 2> /dev/null || true; } | cut -f1 > "$W/res/$2.bytes"
	find "$1" -printf '%i\n' 2> /dev/null > "$W/res/$2.list" || true
	wc -l < "$W/res/$2.list" > "$W/res/$2.names"
	sort -u "$W/res/$2.list" | wc -l > "$W/res/$2.inodes"
	rm "$W/res/$2.list"
}
# sc_committed SPOOL TOPIC: the sum of the heads' committed counts.
sc_committed() {
	sed -n 's/.*committed=\([0-9]*\).*/\1/p' "$1/topics/$2"/p*/head |
	    awk '{ n += $1 } END { print n + 0 }'
}
# sc_pending FILE: the pending of an mq-stat --json output, every group.
sc_pending() { jq '[.groups[].pending] | add' "$1"; }

# sc_stat_run FMT FORM NAME: one timed run into res/NAME, its output in
# scale-out/NAME.
sc_stat_run() {
	local sp=$W/scale$1 n
	n=$(( ($1 == 2 ? SC_STAT2_N : SC_STAT1_N) * 2 ))
	case $1:$2 in
	2:floor) run "$3" "$n" sh -c '{ cat "$1"/p*/head "$1"/p*/g/*/cursor
	    head -q -n1 "$1"/p*/log/*; } 2> /dev/null | wc -l' sh "$sp/topics/stat" ;;
	1:floor) run "$3" "$n" "$FLOOR" count "$sp"/topics/stat/p*/g/*/new ;;
	*:stat) run "$3" "$n" "$BIN/mq-stat" -s "$sp" --json ;;
	*:groups) run "$3" "$n" "$BIN/mq-group" -s "$sp" list ;;
	*:info) run "$3" "$n" "$BIN/mq-topic" -s "$sp" info stat ;;
	esac > "$W/scale-out/$3"
}
sc_stat_measure() {
	local fmt n f r
	mkdir -p "$W/scale-out"
	for fmt in 1 2; do
		n=$SC_STAT1_N
		[ "$fmt" = 1 ] || n=$SC_STAT2_N
		step "scale: format $fmt, publishing $n messages of 100 B into $SC_PARTS partitions, groups $SC_GROUPS"
		sc_create "$W/scale$fmt" "$fmt" stat "$SC_PARTS" 7d $SC_GROUPS
		backlog "sc.pub$fmt" "$W/scale$fmt" stat "$n" "$SC_LEN"
		sc_space "$W/scale$fmt/topics/stat" "sc.space.f$fmt"
		find "$W/scale$fmt"/topics/stat/p*/log -type f | wc -l \
		    > "$W/res/sc.segs$fmt"
		for f in $SC_STAT_FORMS; do
			step "scale: format $fmt, $f, cold"
			sc_drop
			sc_stat_run "$fmt" "$f" "sc.cold.$fmt.$f"
		done
		for r in $(seq "$REPEAT"); do
			step "scale: format $fmt, every form, warm (run $r/$REPEAT)"
			for f in $SC_STAT_FORMS; do
				sc_stat_run "$fmt" "$f" "sc.$fmt.$f.$r"
			done
		done
	done
	# The floor of a stat(2) per segment, warm, for the reader of a miss.
	run sc.statsegs "$(cat "$W/res/sc.segs2")" sh -c \
	    'stat -c %s "$@" > /dev/null' sh "$W/scale2"/topics/stat/p*/log/*
}

# sc_pub_bg SPOOL KIND: starts the durable publish of scale-gc.lines into
# topic SC_TOPIC (timed into res/sc.gc.pub.KIND) and a sampler of its head's
# committed count every 2 ms (res/sc.gc.heads.KIND); SC_PUB, SC_HEADS their
# pids, SC_T0 the start (ns).
sc_pub_bg() {
	: > "$W/res/sc.gc.heads.$2"
	"$W/bin/scale" heads 2 "$W/res/sc.gc.heads.$2" "$1/topics/$SC_TOPIC"/p*/head &
	SC_HEADS=$!
	BG_PIDS="$BG_PIDS $SC_HEADS"
	SC_T0=$(date +%s%N)
	"$TIMEIT" "$W/res/sc.gc.pub.$2" "$SC_GCPUB_N" "$BIN/mq-pub" -s "$1" \
	    -q -l "$SC_TOPIC" < "$W/scale-gc.lines" &
	SC_PUB=$!
}
sc_pub_wait() {
	wait "$SC_PUB" || die "mq-pub (gc $1) failed"
	kill "$SC_HEADS"
	wait "$SC_HEADS" 2>/dev/null || true
}
# sc_window KIND FROM SECONDS NAME: the publish rate from FROM (ns) for
# SECONDS, from the samples of KIND (the count interpolated between two
# samples), into res/NAME: count= seconds= rate=.
sc_window() {
	awk -v a="$2" -v d="$3" '
	    function at(t,   k) { for (k = 2; k <= n; k++) if (ts[k] >= t)
		    return c[k - 1] + (c[k] - c[k - 1]) * (t - ts[k - 1]) / (ts[k] - ts[k - 1])
		return c[n] }
	    { n++; ts[n] = $1; c[n] = $2 }
	    END { b = a + d * 1e9; x = at(b) - at(a)
		printf "count=%d seconds=%.6f rate=%.1f\n", x, d, x / d }
	' "$W/res/sc.gc.heads.$1" > "$W/res/$4"
}
# sc_windows KIND SECONDS: the rates of every window of SECONDS of the run
# KIND, from 0.2 s after its first sample to its last commit, every 20 ms:
# "min= med= max= n=".
sc_windows() {
	awk -v d="$2" '
	    function at(t,   k) { for (k = 2; k <= n; k++) if (ts[k] >= t)
		    return c[k - 1] + (c[k] - c[k - 1]) * (t - ts[k - 1]) / (ts[k] - ts[k - 1])
		return c[n] }
	    { n++; ts[n] = $1; c[n] = $2; if (n == 1 || $2 > c[n - 1]) last = $1 }
	    END { for (a = ts[1] + 0.2e9; a + d * 1e9 <= last; a += 0.02e9)
		    r[++m] = (at(a + d * 1e9) - at(a)) / d
		if (m == 0) { print "min=0 med=0 max=0 n=0"; exit }
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
		    if (r[j] < r[i]) { x = r[i]; r[i] = r[j]; r[j] = x }
		printf "min=%.1f med=%.1f max=%.1f n=%d\n", r[1], r[int((m + 1) / 2)], r[m], m }
	' "$W/res/sc.gc.heads.$1"
}
# sc_gc_with SPOOL TOPIC R: the publish of run R with gc of TOPIC in it.
sc_gc_with() {
	local gs ge rc=0
	step "scale: gc run $3: gc of $SC_GC_N acked messages while the same mq-pub -l runs"
	sc_pub_bg "$1" "with.$3"
	SC_T0W=$SC_T0
	sleep 0.5
	gs=$(date +%s%N)
	MQ_NOW=$(( $(date +%s) + 3600 )) "$TIMEIT" "$W/res/sc.gc.$3" "$SC_GC_N" \
	    "$BIN/mq-topic" -s "$1" gc "$2" || rc=$?
	ge=$(date +%s%N)
	sc_pub_wait with
	[ "$rc" = 0 ] || die "mq-topic gc exited $rc"
	SC_GS=$gs SC_GE=$ge
}
sc_gc_alone() {
	step "scale: gc run $2: a durable mq-pub -l of $SC_GCPUB_N alone"
	sc_pub_bg "$1" "alone.$2"
	SC_T0A=$SC_T0
	sc_pub_wait alone
}
# sc_gc_run R: a topic of SC_GC_N messages acked by its group (committed
# to the end), then the publisher alone and with gc, in turns (alone
# first in odd runs), each into that topic.
sc_gc_run() {
	local sp=$W/scale-gc r=$1 t=gc$1 end
	step "scale: gc run $r: publishing $SC_GC_N messages (format 2), committing group g to the end"
	sc_create "$sp" 2 "$t" 1 60 g
	backlog "sc.gc.fill.$r" "$sp" "$t" "$SC_GC_N" "$SC_LEN"
	end=$(sc_committed "$sp" "$t")
	"$BIN/mq-ack" -s "$sp" -g g --commit "0:$end" "$t" ||
	    die "mq-ack --commit 0:$end failed"
	find "$sp/topics/$t"/p*/log -type f | wc -l > "$W/res/sc.gc.segs.$r"
	sync
	SC_TOPIC=$t
	if [ $((r % 2)) = 1 ]; then
		sc_gc_alone "$sp" "$r"; sync; sc_gc_with "$sp" "$t" "$r"
	else
		sc_gc_with "$sp" "$t" "$r"; sync; sc_gc_alone "$sp" "$r"
	fi
	# The window: gc's, at least 200 ms (a chunk of 4096 is ~10 ms), and
	# the same place in the run alone, and every window of the run alone.
	SC_WIN=$(awk -v d=$((SC_GE - SC_GS)) 'BEGIN { d /= 1e9; printf "%.6f", d < 0.2 ? 0.2 : d }')
	sc_window "with.$r" "$SC_GS" "$SC_WIN" "sc.gc.win.with.$r"
	sc_window "alone.$r" $((SC_T0A + SC_GS - SC_T0W)) "$SC_WIN" "sc.gc.win.alone.$r"
	sc_windows "alone.$r" "$SC_WIN" > "$W/res/sc.gc.wins.alone.$r"
	find "$sp/topics/$t"/p*/log -type f | wc -l > "$W/res/sc.gc.left.$r"
}
sc_gc_measure() {
	local sp1=$W/scale-gc1 r
	"$FLOOR" lines "$SC_GCPUB_N" "$SC_LEN" > "$W/scale-gc.lines"
	for r in $(seq "$SC_GC_RUNS"); do sc_gc_run "$r"; done
	# Format 1: the same messages, drained (acked) by the group, then gc.
	step "scale: gc, format 1: publishing and draining $SC_GC1_N messages"
	sc_create "$sp1" 1 gc 1 60 g
	backlog sc.gc1.fill "$sp1" gc "$SC_GC1_N" "$SC_LEN"
	"$BIN/mq-sub" -s "$sp1" -g g -q gc || die "mq-sub -q (drain) failed"
	sync
	step "scale: gc, format 1, of $SC_GC1_N acked messages"
	MQ_NOW=$(( $(date +%s) + 3600 )) run sc.gc1 "$SC_GC1_N" \
	    "$BIN/mq-topic" -s "$sp1" gc gc
	find "$sp1"/topics/gc/p*/log -type f | wc -l > "$W/res/sc.gc1.left"
}

sc_space_measure() {
	local g i sp=$W/scale-space
	for g in $SC_SPACE_GROUPS; do
		step "scale: space: $SC_SPACE_N messages, format 2, $g group(s)"
		# shellcheck disable=SC2046
		sc_create "$sp" 2 "space$g" 1 7d $(for i in $(seq "$g"); do
			echo "g$i"; done)
		backlog "sc.space.pub$g" "$sp" "space$g" "$SC_SPACE_N" "$SC_LEN"
		sc_space "$sp/topics/space$g" "sc.space.g$g"
	done
}

# sc_soak_sample T: one line of res/sc.soak.samples.
sc_soak_sample() {
	local d=$W/scale-soak/topics/soak
	sc_space "$d" sc.soak.now
	printf 't=%s bytes=%s inodes=%s names=%s segments=%s pending=%s\n' "$1" \
	    "$(cat "$W/res/sc.soak.now.bytes")" \
	    "$(cat "$W/res/sc.soak.now.inodes")" \
	    "$(cat "$W/res/sc.soak.now.names")" \
	    "$({ find "$d"/p*/log -type f 2> /dev/null || true; } | wc -l)" \
	    "$("$BIN/mq-stat" -s "$W/scale-soak" --json soak |
		jq '[.groups[].pending] | add')" >> "$W/res/sc.soak.samples"
}
sc_soak_measure() {
	local sp=$W/scale-soak g spids="" lpids="" ppid pacepid t0 t next p
	step "scale: soak: $SC_SOAK_RATE msgs/s for $SC_SOAK_SECS s, groups $SC_SOAK_GROUPS, retention $SC_SOAK_RET s, gc and a sample every $SC_SOAK_EVERY s"
	sc_create "$sp" 2 soak 1 "$SC_SOAK_RET" $SC_SOAK_GROUPS
	: > "$W/res/sc.soak.lat"
	: > "$W/res/sc.soak.samples"
	: > "$W/res/sc.soak.gc"
	for g in $SC_SOAK_GROUPS; do
		mkfifo "$W/soak.$g"
		"$W/bin/scale" lat "$SC_SOAK_EVERY" "$W/res/sc.soak.lat" "$g" \
		    < "$W/soak.$g" & lpids="$lpids $!"
		"$BIN/mq-sub" -s "$sp" -f -g "$g" soak > "$W/soak.$g" &
		spids="$spids $!"
	done
	BG_PIDS="$BG_PIDS$spids$lpids"
	mkfifo "$W/soak.pub"
	"$BIN/mq-pub" -s "$sp" -q -l soak < "$W/soak.pub" & ppid=$!
	"$W/bin/scale" pace "$SC_SOAK_RATE" "$SC_SOAK_SECS" "$SC_LEN" \
	    > "$W/soak.pub" 2> "$W/res/sc.soak.pace" & pacepid=$!
	BG_PIDS="$BG_PIDS $ppid $pacepid"
	t0=$(date +%s)
	next=$SC_SOAK_EVERY
	while [ "$next" -le "$SC_SOAK_SECS" ]; do
		t=$(( $(date +%s) - t0 ))
		[ "$t" -ge "$next" ] || { sleep 0.2; continue; }
		"$TIMEIT" "$W/res/sc.soak.gc1" 1 "$BIN/mq-topic" -s "$sp" gc soak ||
		    die "mq-topic gc soak failed"
		cat "$W/res/sc.soak.gc1" >> "$W/res/sc.soak.gc"
		sc_soak_sample "$next"
		step "scale: soak: $(tail -n1 "$W/res/sc.soak.samples")"
		next=$(( next + SC_SOAK_EVERY ))
	done
	wait "$pacepid" || die "scale pace failed"
	wait "$ppid" || die "mq-pub (soak) failed"
	sleep 2                       # the consumers' last deliveries
	for p in $spids; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	for p in $lpids; do wait "$p" || die "scale lat failed"; done
	"$BIN/mq-stat" -s "$sp" --json soak > "$W/scale-out/sc.soak.stat"
}

scale_measure() {
	[ -x "$W/bin/scale" ] || die "bench/scale.c did not build"
	command -v jq > /dev/null || die "jq missing: apt-get install jq"
	mkdir -p "$W/scale-out"
	if [ "${BENCH_DROP_CACHES:-auto}" != 0 ] && sync &&
	    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
		SC_COLD="sync; echo 3 > /proc/sys/vm/drop_caches before each"
	fi
	case " $SC_PARTS_RUN " in *" stat "*) sc_stat_measure ;; esac
	case " $SC_PARTS_RUN " in *" space "*) sc_space_measure ;; esac
	case " $SC_PARTS_RUN " in *" gc "*) sc_gc_measure ;; esac
	case " $SC_PARTS_RUN " in *" soak "*) sc_soak_measure ;; esac
}

# ---- the table ----
# sc_ms FILE: a result's seconds in ms.
sc_ms() { awk -v s="$(kv "$1" seconds)" 'BEGIN { printf "%.1f", s * 1000 }'; }
sc_met() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "NOT MET"; fi; }
sc_stat_table() {
	local f label c1 w1 c2 w2 m
	echo "  a. monitoring, format 2: $SC_STAT2_N messages of 100 B pending in each of $SC_GROUPS ($((2 * SC_STAT2_N)) pending), $SC_PARTS partitions, $(cat "$W/res/sc.segs2") segments; baseline format 1 with $SC_STAT1_N ($((2 * SC_STAT1_N)) pending)"
	printf '  %-34s %10s %10s %10s %10s  %s\n' "(wall ms)" "f2 cold" "f2 warm" \
	    "f1 cold" "f1 warm" "target < 50 ms warm, < 1 s cold (format 2)"
	for f in $SC_STAT_FORMS; do
		case $f in
		floor) label="floor (f2: head -n1 of each segment, heads, cursors; f1: getdents of new/)" ;;
		stat) label="mq-stat --json" ;;
		groups) label="mq-group list" ;;
		info) label="mq-topic info stat" ;;
		esac
		c2=$(sc_ms "$W/res/sc.cold.2.$f") w2=$(sc_ms "$(med "sc.2.$f")")
		c1=$(sc_ms "$W/res/sc.cold.1.$f") w1=$(sc_ms "$(med "sc.1.$f")")
		m=""
		[ "$f" = floor ] || m=$(sc_met "$w2 < 50 && $c2 < 1000")
		if [ "$f" = floor ]; then
			echo "  $label:"
			label="  floor"
		fi
		printf '  %-34s %10s %10s %10s %10s  %s\n' "$label" "$c2" "$w2" \
		    "$c1" "$w1" "$m"
	done
	printf '  %-34s %10s   %s\n' "  context: stat(2) of each segment" \
	    "$(sc_ms "$W/res/sc.statsegs")" "ms warm ($(cat "$W/res/sc.segs2") files)"
	printf '  %-34s   %s\n' "  context: cold" "$SC_COLD"
	for m in 1 2; do
		printf '  %-34s %10.0f   msgs/s (%.1f s): building the spool\n' \
		    "  context: f$m mq-pub -l --sync=none" "$(kv "$W/res/sc.pub$m" rate)" \
		    "$(kv "$W/res/sc.pub$m" seconds)"
	done
	c2=$(sc_pending "$W/scale-out/sc.2.stat.1") c1=$(sc_pending "$W/scale-out/sc.1.stat.1")
	[ "$c2" = $((2 * SC_STAT2_N)) ] || echo "    WARNING: format 2 mq-stat counted $c2 pending (expected $((2 * SC_STAT2_N)))"
	[ "$c1" = $((2 * SC_STAT1_N)) ] || echo "    WARNING: format 1 mq-stat counted $c1 pending (expected $((2 * SC_STAT1_N)))"
}
# sc_med: the median of the numbers on standard input, one a line.
sc_med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
sc_gc_table() {
	local r gc="" wa="" ww="" whole="" win="" segs="" left=""
	for r in $(seq "$SC_GC_RUNS"); do
		gc="$gc $(sc_ms "$W/res/sc.gc.$r")"
		segs="$segs $(cat "$W/res/sc.gc.segs.$r")"
		left="$left $(cat "$W/res/sc.gc.left.$r")"
		whole="$whole $(awk -v a="$(kv "$W/res/sc.gc.pub.alone.$r" rate)" \
		    -v w="$(kv "$W/res/sc.gc.pub.with.$r" rate)" 'BEGIN { printf "%.2f", w / a }')"
		win="$win $(awk -v m="$(kv "$W/res/sc.gc.wins.alone.$r" med)" \
		    -v w="$(kv "$W/res/sc.gc.win.with.$r" rate)" 'BEGIN { printf "%.2f", w / m }')"
		wa="$wa $(kv "$W/res/sc.gc.pub.alone.$r" rate)"
		ww="$ww $(kv "$W/res/sc.gc.pub.with.$r" rate)"
	done
	echo "  b. retention: gc of $SC_GC_N acked messages (format 2, a group committed to the end, MQ_NOW an hour on), beside a durable mq-pub -l (--sync=batch) of $SC_GCPUB_N into the same topic; $SC_GC_RUNS runs, each on a topic of its own (segments:$segs; left after gc:$left, the concurrent publishes')"
	awk -v s="$(echo $gc | tr ' ' '\n' | sc_med)" -v n="$SC_GC_N" -v o="${gc# }" \
	    -v s1="$(kv "$W/res/sc.gc1" seconds)" -v n1="$SC_GC1_N" 'BEGIN {
	    printf "  %-42s %9.1f ms   (runs: %s); %.3f µs/msg; target < 1 s: %s\n",
		"mq-topic gc, median", s, o, s / n * 1e3, (s < 1000) ? "met" : "NOT MET"
	    printf "  %-42s %9.1f ms   %.1f µs/msg\n", "  baseline: format 1, " n1 " drained", s1 * 1000, s1 / n1 * 1e6 }'
	awk -v a="$(echo $wa | tr ' ' '\n' | sc_med)" -v w="$(echo $ww | tr ' ' '\n' | sc_med)" \
	    -v r="$(echo $whole | tr ' ' '\n' | sc_med)" -v o="${whole# }" 'BEGIN {
	    printf "  %-42s %9.0f   msgs/s alone (median), %.0f with gc; with / alone per run: %s, median %.2fx\n",
		"mq-pub -l, whole run", a, w, o, r }'
	awk -v r="$(echo $win | tr ' ' '\n' | sc_med)" -v o="${win# }" \
	    -v d="$(kv "$W/res/sc.gc.win.with.1" seconds)" \
	    -v lo="$(kv "$W/res/sc.gc.wins.alone.1" min)" -v md="$(kv "$W/res/sc.gc.wins.alone.1" med)" \
	    -v hi="$(kv "$W/res/sc.gc.wins.alone.1" max)" -v ww="$(kv "$W/res/sc.gc.win.with.1" rate)" 'BEGIN {
	    printf "  %-42s %9.2fx  per run: %s; target 1x (unaffected): %s\n",
		"mq-pub -l while gc runs / alone, median", r, o, (r >= 0.9) ? "met (within 10%)" : "NOT MET"
	    printf "  %-42s %9s   run 1: %.0f msgs/s in the %.0f ms from gc start; alone, every window of that length: %.0f..%.0f, median %.0f\n",
		"  (the window: gc'"'"'s, at least 200 ms)", "", ww, d * 1000, lo, hi, md }'
}
sc_space_table() {
	local g n label pay
	echo "  c. space: 100-byte messages retained, batch-published (mq-pub -l); bytes = du (blocks), inodes = distinct inode numbers under the topic"
	printf '  %-46s %12s %9s %9s %9s  %s\n' "" "bytes" "/payload" "inodes" "names" \
	    "target <= 1.3x payload, < 1,000 inodes"
	while IFS=: read -r g n label; do
		pay=$((n * 100))
		awk -v l="$label" -v b="$(cat "$W/res/sc.space.$g.bytes")" -v p="$pay" \
		    -v i="$(cat "$W/res/sc.space.$g.inodes")" \
		    -v m="$(cat "$W/res/sc.space.$g.names")" -v t="$g" 'BEGIN {
		    v = (t == "f1" || t == "f2") ? "" : \
			sprintf("%s, %s", (b / p <= 1.3) ? "met" : "NOT MET", (i < 1000) ? "met" : "NOT MET")
		    printf "  %-46s %12.0f %8.2fx %9d %9d  %s\n", l, b, b / p, i, m, v }'
	done <<EOF
$(for g in $SC_SPACE_GROUPS; do echo "g$g:$SC_SPACE_N:format 2, $g group(s), $SC_SPACE_N msgs"; done
case " $SC_PARTS_RUN " in *" stat "*)
	echo "f2:$SC_STAT2_N:format 2, 2 groups, 4 part., $SC_STAT2_N msgs"
	echo "f1:$SC_STAT1_N:format 1 (baseline), 2 groups, 4 part., $SC_STAT1_N" ;;
esac)
EOF
	printf '  %-42s %12s   %s\n' "  context: a record's bytes" \
	    "$(awk -v a="$(cat "$W/res/sc.space.g1.bytes")" -v n="$SC_SPACE_N" 'BEGIN { printf "%.0f", a / n }')" \
	    "per 100-byte message, format 2, 1 group (frame line, header block, body, newline)"
}
sc_soak_table() {
	local ret=$SC_SOAK_RET
	echo "  d. soak, shortened from the issue's 30 min with 10 min retention to $SC_SOAK_SECS s with $SC_SOAK_RET s (the time one run can give one figure; the retention shortened with it, so that it still turns over $((SC_SOAK_SECS / SC_SOAK_RET)) times): $SC_SOAK_RATE msgs/s of 100 B ($(kv "$W/res/sc.soak.pace" rate) paced) into mq-pub -l, 3 groups mq-sub -f, gc every $SC_SOAK_EVERY s"
	printf '  %7s %10s %8s %8s %8s %8s %10s %9s %9s %9s\n' "t (s)" "bytes" \
	    "inodes" "names" "segments" "pending" "delivered" "p50 µs" "p99 µs" "max µs"
	awk -v every="$SC_SOAK_EVERY" '
	    FNR == NR { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] }
		w = int(v["t"] / every + 0.5); if (v["t"] + 0 < w * every - 0.5) next
		cnt[w] += v["count"]
		if (v["p50_us"] != "-" && v["p50_us"] + 0 > p50[w]) p50[w] = v["p50_us"]
		if (v["p99_us"] != "-" && v["p99_us"] + 0 > p99[w]) p99[w] = v["p99_us"]
		if (v["max_us"] != "-" && v["max_us"] + 0 > mx[w]) mx[w] = v["max_us"]
		next }
	    { for (i = 1; i <= NF; i++) { split($i, a, "="); s[a[1]] = a[2] }
		w = int(s["t"] / every + 0.5)
		printf "  %7d %10.0f %8d %8d %8d %8d %10d %9s %9s %9s\n", s["t"], s["bytes"],
		    s["inodes"], s["names"], s["segments"], s["pending"], cnt[w],
		    p50[w] == "" ? "-" : p50[w], p99[w] == "" ? "-" : p99[w], mx[w] == "" ? "-" : mx[w] }
	' "$W/res/sc.soak.lat" "$W/res/sc.soak.samples" > "$W/res/sc.soak.rows"
	cat "$W/res/sc.soak.rows"
	echo "  (p50, p99, max: the worst of the 3 groups in the window ending at t; delivered: all 3 groups)"
	# Once retention turned over (t > retention + one gc period): the
	# median of the first half of those samples against the second's.
	awk -v from=$((ret + SC_SOAK_EVERY)) '
	    $1 + 0 > from { n++; b[n] = $2; i[n] = $3; p[n] = $8; q[n] = $9 }
	    function half(x, lo, hi,   k, c, v, j, t) { c = 0
		for (k = lo; k <= hi; k++) if (x[k] != "-") v[++c] = x[k] + 0
		for (k = 1; k <= c; k++) for (j = k + 1; j <= c; j++)
		    if (v[j] < v[k]) { t = v[k]; v[k] = v[j]; v[j] = t }
		return c ? (c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2) : 0 }
	    END { if (n < 2) { print "  too few samples past the retention"; exit }
		h = int(n / 2)
		for (k = 1; k <= n; k++) { if (k == 1 || b[k] < bmin) bmin = b[k]; if (b[k] > bmax) bmax = b[k]
		    if (k == 1 || i[k] < imin) imin = i[k]; if (i[k] > imax) imax = i[k] }
		db = half(b, h + 1, n) / half(b, 1, h) - 1; di = half(i, h + 1, n) / half(i, 1, h) - 1
		dp = half(p, h + 1, n) / half(p, 1, h) - 1; dq = half(q, h + 1, n) / half(q, 1, h) - 1
		printf "  %-42s bytes %d..%d, inodes %d..%d over %d samples\n", "past retention + one gc:", bmin, bmax, imin, imax, n
		printf "  %-42s bytes %+.0f%%, inodes %+.0f%%, p50 %+.0f%%, p99 %+.0f%%\n", "drift, medians, 2nd half / 1st half:", db * 100, di * 100, dp * 100, dq * 100
		printf "  %-42s %s\n", "target flat, no latency drift (|drift| < 20%):",
		    (db < 0.2 && db > -0.2 && di < 0.2 && di > -0.2 && dp < 0.2 && dq < 0.2) ? "met" : "NOT MET" }
	' "$W/res/sc.soak.rows"
	awk '{ s = s sprintf("%s%.0f", NR > 1 ? " " : "", $2 * 1000) } END {
	    printf "  %-42s %s\n", "  context: each gc (ms)", s }' FS='seconds=| rate' "$W/res/sc.soak.gc"
}
scale_table() {
	echo "16. scale (issue 28), format 2, 100-byte messages; this machine is shared (other engineers' tests run on its 2 CPUs): noisy figures"
	case " $SC_PARTS_RUN " in *" stat "*) sc_stat_table ;; esac
	case " $SC_PARTS_RUN " in *" space "*) sc_space_table ;; esac
	case " $SC_PARTS_RUN " in *" gc "*) sc_gc_table ;; esac
	case " $SC_PARTS_RUN " in *" soak "*) sc_soak_table ;; esac
}
