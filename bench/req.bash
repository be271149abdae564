# bench/req.bash: section 12 of bench/run.sh (sourced by it), request and
# reply (mq-req(1)): round trips one at a time against a server that
# already waits, `mq-sub -f --exec cat --reply` (a shell and cat spawned
# per request), in the library (bench/reqlat.c lib: box, publish, wait)
# and through the command (reqlat cli: mq-req -q per call); beside, in the
# same run, two publish-to-delivery hops (bench/lat.c mq, p50 times two:
# a request and its reply, if the reply were a message) and the spawn of
# a handler alone (floor spawn).  Uses run, kv, step, die, stop_bg and the
# variables of run.sh.

REQ_N=$((LATN / 4))

req_measure() {
	local sp=$W/req-spool pid
	[ "$have_lib" = 1 ] || return 0
	"$BIN/mq-group" -s "$sp" create rpc srv > /dev/null ||
	    die "mq-group create rpc srv failed"
	"$BIN/mq-sub" -s "$sp" -g srv -f --exec cat --reply rpc \
	    > /dev/null 2> "$W/res/req.server.log" &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	step "request/reply: $REQ_N round trips in the library"
	"$W/bin/reqlat" lib "$sp" rpc "$REQ_N" "$WARMUP" > "$W/res/req.lib" ||
	    die "reqlat lib failed: $(cat "$W/res/req.server.log")"
	step "request/reply: $REQ_N calls of mq-req"
	"$W/bin/reqlat" cli "$sp" rpc "$BIN/mq-req" "$REQ_N" "$WARMUP" \
	    > "$W/res/req.cli" || die "reqlat cli failed"
	stop_bg "$pid"
	step "request/reply: $REQ_N publish-to-delivery hops, and spawns"
	"$LAT" mq "$W/req-lat" "$BIN/mq-sub" "$REQ_N" "$WARMUP" \
	    > "$W/res/req.hop" || die "lat mq failed"
	run req.spawn "$REQ_N" "$FLOOR" spawn "$REQ_N"
}

req_table() {
	[ -f "$W/res/req.lib" ] || {
		echo "12. request/reply: no figures (lib/libmq.a missing or not linkable)"
		return 0
	}
	echo "12. request/reply, one call at a time, server mq-sub -f --exec cat --reply, $REQ_N calls (ms)"
	printf '  %-42s %9s %9s %9s %9s %9s\n' "" p50 p90 p99 max mean
	local f lbl
	for f in lib cli; do
		case $f in
		lib) lbl="library: box, publish, wait for reply" ;;
		cli) lbl="mq-req -q TOPIC x, per call" ;;
		esac
		awk -v l="$lbl" -v a="$(kv "$W/res/req.$f" p50_us)" \
		    -v b="$(kv "$W/res/req.$f" p90_us)" \
		    -v c="$(kv "$W/res/req.$f" p99_us)" \
		    -v d="$(kv "$W/res/req.$f" max_us)" \
		    -v e="$(kv "$W/res/req.$f" mean_us)" 'BEGIN {
		    printf "  %-42s %9.2f %9.2f %9.2f %9.2f %9.2f\n", l, a / 1000,
			b / 1000, c / 1000, d / 1000, e / 1000 }'
	done
	awk -v h="$(kv "$W/res/req.hop" p50_us)" \
	    -v s="$(kv "$W/res/req.spawn" rate)" 'BEGIN {
	    printf "  %-42s %9.2f   %s\n", "two hops: 2 x publish->delivery p50",
		2 * h / 1000, "(mq_pub_send -> mq-sub -f, measured now)"
	    printf "  %-42s %9.2f   %s\n", "  context: spawning sh -c, alone",
		1000 / s, "(floor spawn: the handler, once per request)" }'
	awk -v p="$(kv "$W/res/req.cli" p50_us)" 'BEGIN {
	    printf "  %-42s %9.2f   target %-9s %s\n", "mq-req p50 (ms)", p / 1000,
		"< 5 ms", (p < 5000) ? "met" : "NOT MET" }'
}
