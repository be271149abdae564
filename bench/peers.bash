# bench/peers.bash: section 15 of bench/run.sh (sourced by it), mq beside
# its peers: Redis streams (appendfsync always, then everysec), NATS
# JetStream (file storage) and an append-only log file, the same messages
# through each, driven by one program (bench/peers.c), in the scratch
# directory, in one run.  Each server is started here on 127.0.0.1 and
# stopped by its pid; readiness is polled (run's listening), never slept
# for.  What durability each really gives is counted, not assumed: a
# second, smaller run of each publish figure under strace -c counts the
# sync calls (PEER_SYNCS) that the server (or mq's own process, or the
# floor's) made, per message.  Without redis-server, nats-server or strace
# the rows that need it say so.
# Uses run's helpers and variables (kv, step, die, listening, port_busy,
# free_port, stop_bg, BG_PIDS, W, N, SIZE, have_lib).

PEER_N=$N                      # messages per batch publish and drain
PEER_N1=$((N / 50))            # per-message publishes (one round trip each)
PEER_FAN_N=$((N / 5))          # messages per fan-out publish
PEER_BATCH=1000                # messages per mq call, Redis pipeline, NATS
                               # acks in flight, floor write
PEER_COUNT=100                 # messages per claim batch / fetch / XREADGROUP
PEER_K=$((N / 2))              # batch publishes counted under strace
PEER_SYNCS=fsync,fdatasync,sync_file_range,syncfs,sync,msync
PEER_FANS="1 10 100"
PEERS=$W/bin/peers

# peers_port WANT: WANT if nothing listens on it, else a free port.
peers_port() {
	if port_busy "$1"; then free_port; else echo "$1"; fi
}

# peers_traced PID SPID: wait (10 s at most) until strace (SPID) has
# attached to every thread of PID; 1 if it exited first (ptrace refused).
peers_traced() {
	local i
	for i in $(seq 1000); do
		grep -qs '^TracerPid:[[:space:]]*0$' /proc/"$1"/task/*/status ||
		    return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.01
	done
	die "strace did not attach to pid $1 in 10 s"
}

# peers_calls FILE: the sync calls that an strace -c summary counted (an
# empty summary: none).
peers_calls() {
	awk -v l=",$PEER_SYNCS," 'index(l, "," $NF ",") && $4 ~ /^[0-9]+$/ {
	    n += $4 } END { print n + 0 }' "$1"
}

# peers_strace_pid NAME PID COUNT CMD...: CMD (COUNT messages) run while
# strace counts PID's sync calls; res/NAME.syncs gets them per message.
peers_strace_pid() {
	local name=$1 pid=$2 count=$3 sp
	shift 3
	command -v strace > /dev/null || return 0
	strace -f -c -e trace="$PEER_SYNCS" -o "$W/res/$name.strace" \
	    -p "$pid" 2> "$W/res/$name.strace.log" &
	sp=$!
	if ! peers_traced "$pid" "$sp"; then
		wait "$sp" || true
		echo "bench: strace -p $pid: $(cat "$W/res/$name.strace.log")" >&2
		return 0
	fi
	"$@" > "$W/res/$name.traced" || die "$* (traced) failed"
	kill -INT "$sp"
	wait "$sp" || true
	awk -v c="$(peers_calls "$W/res/$name.strace")" -v n="$count" \
	    'BEGIN { printf "%.4f\n", c / n }' > "$W/res/$name.syncs"
}

# peers_strace_run NAME COUNT CMD...: as peers_strace_pid, of CMD itself.
peers_strace_run() {
	local name=$1 count=$2
	shift 2
	command -v strace > /dev/null || return 0
	strace -f -c -e trace="$PEER_SYNCS" -o "$W/res/$name.strace" "$@" \
	    > "$W/res/$name.traced" 2> "$W/res/$name.strace.log" ||
	    die "$* (traced) failed: $(cat "$W/res/$name.strace.log")"
	awk -v c="$(peers_calls "$W/res/$name.strace")" -v n="$count" \
	    'BEGIN { printf "%.4f\n", c / n }' > "$W/res/$name.syncs"
}

# peers_space NAME PATH MSGS BYTES: bytes on disk (du -B1, blocks as
# allocated) of PATH per payload byte, and its inodes (distinct, so a
# name linked twice counts once) per 10,000 messages, in res/NAME.space.
peers_space() {
	local b i
	sync
	b=$(du -sB1 "$2" | cut -f1)
	i=$(find "$2" -printf '%i\n' | sort -u | wc -l)
	echo "bytes=$b inodes=$i per_byte=$(awk -v b="$b" -v p="$(($3 * $4))" \
	    'BEGIN { printf "%.2f", b / p }') per_10k=$(awk -v i="$i" -v n="$3" \
	    'BEGIN { printf "%.1f", i / n * 10000 }')" > "$W/res/$1.space"
}

# peers_grown NAME DIR BEFORE MSGS BYTES: as peers_space, of what DIR
# grew by since du said BEFORE (a server's directory, which also holds
# the other figures' data).
peers_grown() {
	local b
	sync
	b=$(( $(du -sB1 "$2" | cut -f1) - $3 ))
	echo "bytes=$b per_byte=$(awk -v b="$b" -v p="$(($4 * $5))" \
	    'BEGIN { printf "%.2f", b / p }')" > "$W/res/$1.space"
}

peers_run() { # NAME CMD...: one figure into res/NAME
	local name=$1
	shift
	"$@" > "$W/res/$name" || die "$* failed"
}

peers_floor() {
	step "peers: append-log floor, $PEER_N records of $SIZE and of 100 bytes"
	peers_run peer.floor.1k "$PEERS" append "$W/peers-floor1k" "$PEER_N" \
	    "$SIZE" "$PEER_BATCH"
	peers_run peer.floor.100 "$PEERS" append "$W/peers-floor100" "$PEER_N" \
	    100 "$PEER_BATCH"
	peers_run peer.floor.each "$PEERS" append "$W/peers-floor1" \
	    "$PEER_N1" "$SIZE" 1
	peers_space peer.floor.100 "$W/peers-floor100" "$PEER_N" 100
	peers_space peer.floor.1k "$W/peers-floor1k" "$PEER_N" "$SIZE"
	peers_strace_run peer.floor.1k "$PEER_K" "$PEERS" append \
	    "$W/peers-floortr" "$PEER_K" "$SIZE" "$PEER_BATCH"
	peers_strace_run peer.floor.each "$PEER_N1" "$PEERS" append \
	    "$W/peers-floortr1" "$PEER_N1" "$SIZE" 1
	peers_strace_run peer.floor.100 "$PEER_K" "$PEERS" append \
	    "$W/peers-floortr100" "$PEER_K" 100 "$PEER_BATCH"
	sync
}

# peers_mq FORMAT: mq's figures with topics of that storage format
# (mq-spool(5), SEGMENTED STORAGE), named peer.mq.* for format 1 and
# peer.mq2.* for format 2.
peers_mq() {
	local m=mq w=$W/peers-f$1 g
	[ "$1" = 2 ] && m=mq2
	local s1k=$w-sp1k s100=$w-sp100 sp=$w-sp was=${MQ_FORMAT-}
	export MQ_FORMAT=$1
	step "peers: mq, $PEER_N messages of $SIZE and of 100 bytes, $PEER_BATCH a call"
	# Each spool of its own, one topic with one group: its du and its
	# inodes are the space figures.
	"$PEERS" mq-pub "$s1k" t 0 "$SIZE" 1 batch 1 || die "mq set-up failed"
	"$PEERS" mq-pub "$s100" t 0 100 1 batch 1 || die "mq set-up failed"
	sync
	peers_run peer.$m.1k "$PEERS" mq-pub "$s1k" t "$PEER_N" "$SIZE" \
	    "$PEER_BATCH" batch
	sync
	peers_run peer.$m.100 "$PEERS" mq-pub "$s100" t "$PEER_N" 100 \
	    "$PEER_BATCH" batch
	peers_space peer.$m.100 "$s100" "$PEER_N" 100
	peers_space peer.$m.1k "$s1k" "$PEER_N" "$SIZE"
	step "peers: mq, $PEER_N1 messages one a call, MQ_SYNC_EACH"
	"$PEERS" mq-pub "$sp" each 0 "$SIZE" 1 each 1 || die "mq set-up failed"
	sync
	peers_run peer.$m.each "$PEERS" mq-pub "$sp" each "$PEER_N1" "$SIZE" 1 each
	step "peers: mq, drain of $PEER_N, $PEER_COUNT claims then one ack_batch"
	sync
	peers_run peer.$m.drain "$PEERS" mq-sub "$s1k" t g1 "$PEER_N" \
	    "$PEER_COUNT"
	for g in $PEER_FANS; do
		step "peers: mq, fan-out of $PEER_FAN_N messages into $g group(s)"
		"$PEERS" mq-pub "$sp" "fan$g" 0 "$SIZE" 1 batch "$g" ||
		    die "mq set-up failed"
		sync
		peers_run "peer.$m.fan$g" "$PEERS" mq-pub "$sp" "fan$g" \
		    "$PEER_FAN_N" "$SIZE" "$PEER_BATCH" batch
	done
	step "peers: mq under strace"
	"$PEERS" mq-pub "$sp" trb 0 "$SIZE" 1 batch 1 || die "mq set-up failed"
	"$PEERS" mq-pub "$sp" tre 0 "$SIZE" 1 batch 1 || die "mq set-up failed"
	"$PEERS" mq-pub "$sp" tr100 0 100 1 batch 1 || die "mq set-up failed"
	"$PEERS" mq-pub "$sp" trfan 0 "$SIZE" 1 batch 10 ||
	    die "mq set-up failed"
	peers_strace_run peer.$m.100 "$PEER_K" "$PEERS" mq-pub "$sp" tr100 \
	    "$PEER_K" 100 "$PEER_BATCH" batch
	peers_strace_run peer.$m.fan10 "$PEER_FAN_N" "$PEERS" mq-pub "$sp" \
	    trfan "$PEER_FAN_N" "$SIZE" "$PEER_BATCH" batch
	peers_strace_run peer.$m.1k "$PEER_K" "$PEERS" mq-pub "$sp" trb \
	    "$PEER_K" "$SIZE" "$PEER_BATCH" batch
	peers_strace_run peer.$m.each "$PEER_N1" "$PEERS" mq-pub "$sp" tre \
	    "$PEER_N1" "$SIZE" 1 each
	peers_strace_run peer.$m.drain "$PEER_K" "$PEERS" mq-sub "$sp" trb g1 \
	    "$PEER_K" "$PEER_COUNT"
	export MQ_FORMAT=$was
}

# peers_redis MODE: the Redis figures with appendfsync MODE.
peers_redis() {
	local mode=$1 dir=$W/peers-redis-$1 port pid before r
	port=$(peers_port 16379)
	mkdir "$dir"
	redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" \
	    --appendonly yes --appendfsync "$mode" --save '' \
	    --auto-aof-rewrite-percentage 0 --daemonize no \
	    > "$W/res/redis.$mode.log" 2>&1 &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	listening "$port" "$pid" "$W/res/redis.$mode.log"
	r=peer.redis.$mode
	step "peers: Redis ($mode), $PEER_N XADDs of $SIZE bytes, pipelined $PEER_BATCH"
	sync
	before=$(du -sB1 "$dir" | cut -f1)
	peers_run "$r.1k" "$PEERS" redis-pub "$port" b1k "$PEER_N" "$SIZE" \
	    "$PEER_BATCH"
	peers_grown "$r.1k" "$dir" "$before" "$PEER_N" "$SIZE"
	step "peers: Redis ($mode), $PEER_N1 XADDs one round trip each"
	peers_run "$r.each" "$PEERS" redis-pub "$port" each "$PEER_N1" \
	    "$SIZE" 1
	step "peers: Redis ($mode) under strace"
	peers_strace_pid "$r.1k" "$pid" "$PEER_K" "$PEERS" redis-pub "$port" \
	    trb "$PEER_K" "$SIZE" "$PEER_BATCH"
	peers_strace_pid "$r.each" "$pid" "$PEER_N1" "$PEERS" redis-pub \
	    "$port" tre "$PEER_N1" "$SIZE" 1
	if [ "$mode" = always ]; then
		step "peers: Redis (always), $PEER_N XADDs of 100 bytes"
		sync
		before=$(du -sB1 "$dir" | cut -f1)
		peers_run "$r.100" "$PEERS" redis-pub "$port" b100 "$PEER_N" \
		    100 "$PEER_BATCH"
		peers_grown "$r.100" "$dir" "$before" "$PEER_N" 100
		step "peers: Redis (always), drain of $PEER_N, XREADGROUP COUNT $PEER_COUNT + XACK"
		peers_run "$r.drain" "$PEERS" redis-sub "$port" b1k d "$PEER_N" \
		    "$PEER_COUNT"
		step "peers: Redis (always), $PEER_FAN_N XADDs into a stream of 10 groups"
		peers_run "$r.fan10" "$PEERS" redis-pub "$port" fan10 \
		    "$PEER_FAN_N" "$SIZE" "$PEER_BATCH" 10
		peers_strace_pid "$r.drain" "$pid" "$PEER_K" "$PEERS" redis-sub \
		    "$port" trb d "$PEER_K" "$PEER_COUNT"
		peers_strace_pid "$r.100" "$pid" "$PEER_K" "$PEERS" redis-pub \
		    "$port" tr100 "$PEER_K" 100 "$PEER_BATCH"
		peers_strace_pid "$r.fan10" "$pid" "$PEER_FAN_N" "$PEERS" \
		    redis-pub "$port" trfan "$PEER_FAN_N" "$SIZE" "$PEER_BATCH" 10
	fi
	stop_bg "$pid"
}

peers_nats() {
	local dir=$W/peers-nats port pid before url n=peer.nats
	port=$(peers_port 14222)
	url=nats://127.0.0.1:$port
	nats-server -js -sd "$dir" -a 127.0.0.1 -p "$port" \
	    > "$W/res/nats.log" 2>&1 &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	listening "$port" "$pid" "$W/res/nats.log"
	step "peers: NATS JetStream, $PEER_N async publishes, $PEER_BATCH acks awaited at a time"
	sync
	before=$(du -sB1 "$dir" | cut -f1)
	peers_run "$n.1k" "$PEERS" nats-pub "$url" B1K "$PEER_N" "$SIZE" async \
	    "$PEER_BATCH"
	peers_grown "$n.1k" "$dir" "$before" "$PEER_N" "$SIZE"
	sync
	before=$(du -sB1 "$dir" | cut -f1)
	peers_run "$n.100" "$PEERS" nats-pub "$url" B100 "$PEER_N" 100 async \
	    "$PEER_BATCH"
	peers_grown "$n.100" "$dir" "$before" "$PEER_N" 100
	step "peers: NATS JetStream, $PEER_N1 publishes, each ack awaited"
	peers_run "$n.each" "$PEERS" nats-pub "$url" EACH "$PEER_N1" "$SIZE" \
	    sync 1
	step "peers: NATS JetStream, drain of $PEER_N, Fetch $PEER_COUNT + an ack each"
	peers_run "$n.drain" "$PEERS" nats-sub "$url" B1K "$PEER_N" "$PEER_COUNT"
	step "peers: NATS JetStream under strace"
	peers_strace_pid "$n.1k" "$pid" "$PEER_K" "$PEERS" nats-pub "$url" TRB \
	    "$PEER_K" "$SIZE" async "$PEER_BATCH"
	peers_strace_pid "$n.each" "$pid" "$PEER_N1" "$PEERS" nats-pub "$url" \
	    TRE "$PEER_N1" "$SIZE" sync 1
	peers_strace_pid "$n.drain" "$pid" "$PEER_K" "$PEERS" nats-sub "$url" \
	    TRB "$PEER_K" "$PEER_COUNT"
	peers_strace_pid "$n.100" "$pid" "$PEER_K" "$PEERS" nats-pub "$url" \
	    TR100 "$PEER_K" 100 async "$PEER_BATCH"
	stop_bg "$pid"
}

peers_measure() {
	[ -x "$PEERS" ] || return 0
	peers_floor
	peers_mq 1
	peers_mq 2
	if command -v redis-server > /dev/null; then
		peers_redis always
		peers_redis everysec
	fi
	command -v nats-server > /dev/null && peers_nats
	return 0
}

# peers_row LABEL NAME [NOTE]: a figure's rate, seconds and syncs per
# message (from its strace run; "-" when not counted); "not measured"
# when the figure is missing.
peers_row() {
	local f=$W/res/$2 s=-
	if [ ! -f "$f" ]; then
		printf '  %-46s %9s   %s\n' "$1" - "(not measured: ${4:-server missing})"
		return 0
	fi
	[ -f "$f.syncs" ] && s=$(cat "$f.syncs")
	printf '  %-46s %9.0f %9.3f %9s%s\n' "$1" "$(kv "$f" rate)" \
	    "$(kv "$f" seconds)" "$s" "${3:+  $3}"
}
# peers_x A B: the ratio of two figures' rates ("-" if one is missing).
peers_x() {
	if [ -f "$W/res/$1" ] && [ -f "$W/res/$2" ]; then
		awk -v a="$(kv "$W/res/$1" rate)" -v b="$(kv "$W/res/$2" rate)" \
		    'BEGIN { printf "%.2fx", a / b }'
	else
		echo "-"
	fi
}
# peers_met A B MIN: "met" when A's rate is at least MIN times B's.
peers_met() {
	if [ ! -f "$W/res/$1" ] || [ ! -f "$W/res/$2" ]; then
		echo "not measured"
		return 0
	fi
	awk -v a="$(kv "$W/res/$1" rate)" -v b="$(kv "$W/res/$2" rate)" \
	    -v m="$3" 'BEGIN { print (a >= m * b) ? "met" : "NOT MET" }'
}
# peers_both A: the worse of two verdicts.
peers_both() {
	case "$1 $2" in *"not measured"*) echo "not measured" ;;
	*NOT*) echo "NOT MET" ;; *) echo met ;; esac
}
peers_rate() { awk -v r="$(kv "$W/res/$1" rate 2>/dev/null)" \
    'BEGIN { printf "%.0f", r }'; }
# peers_space_row LABEL NAME: bytes per payload byte and inodes.
peers_space_row() {
	local f=$W/res/$2.space
	if [ ! -f "$f" ]; then
		printf '  %-46s %9s   (not measured)\n' "$1" -
		return 0
	fi
	printf '  %-46s %9s %9s  %s\n' "$1" "$(kv "$f" per_byte)x" \
	    "$(kv "$f" per_10k)" "$(kv "$f" bytes) bytes$(
	    [ -n "$(kv "$f" inodes)" ] && echo ", $(kv "$f" inodes) inodes")"
}

# peers_mq_row LABEL NAME: the figure NAME of format 1 (peer.mq.NAME) and
# of format 2 (peer.mq2.NAME).
peers_mq_row() {
	peers_row "mq: $1" "peer.mq.$2"
	peers_row "mq format 2: $1" "peer.mq2.$2"
}
# peers_verdict WHAT TARGET A B MIN [C D MIN]: for each format, a line
# of WHAT's ratios to the peers and whether TARGET (A >= MIN x B, and
# C >= MIN x D) is met.
peers_verdict() {
	local what=$1 target=$2 a=$3 b=$4 m1=$5 c=${6:-} d=${7:-} m2=${8:-} f x v1 v2
	for f in mq mq2; do
		x="peer.$f.$a"
		v1=$(peers_met "$x" "$b" "$m1")
		v2=met
		[ -n "$c" ] && v2=$(peers_met "$x" "$d" "$m2")
		printf '  %s, %s: %s/s, %s %s%s\n' "$what" \
		    "$([ $f = mq ] && echo "format 1" || echo "format 2")" \
		    "$(peers_rate "$x")" "$(peers_x "$x" "$b") of ${b#peer.}" \
		    "" "${c:+, $(peers_x "$x" "$d") of ${d#peer.}}"
		echo "    target $target: $(peers_both "$v1" "$v2")"
	done
}

peers_table() {
	local r=peer. v2 rv nv f
	if [ ! -f "$W/res/peer.mq.1k" ]; then
		echo "15. peers: no figures (lib/libmq.a, libhiredis or libnats missing: see the build's message)"
		return 0
	fi
	rv=$(redis-server --version 2>/dev/null | sed -n 's/.* v=\([^ ]*\).*/\1/p')
	nv=$(nats-server --version 2>/dev/null | sed 's/.*v//')
	echo "15. peers: mq (storage formats 1 and 2) beside Redis ${rv:-?} streams, NATS ${nv:-?} JetStream and an append log, on 127.0.0.1"
	echo "    $PEER_N messages a batch figure, $PEER_BATCH a call/pipeline/ack wait, drains $PEER_COUNT a batch;"
	echo "    syncs/msg: strace -c of a second run ($PEER_K messages; $PEER_N1 one a call; $PEER_FAN_N fan-out) of the server, or of mq's or the floor's process"
	printf '  %-46s %9s %9s %9s\n' "" "msgs/s" "seconds" "syncs/msg"
	echo "  durable batch publish, $SIZE bytes"
	peers_mq_row "mq_pub_send $PEER_BATCH a call, MQ_SYNC_BATCH" 1k
	peers_row "Redis XADD pipelined $PEER_BATCH, appendfsync always" ${r}redis.always.1k
	peers_row "Redis XADD pipelined $PEER_BATCH, everysec" ${r}redis.everysec.1k \
	    "(durable only to the last second)"
	peers_row "NATS JetStream async, $PEER_BATCH acks awaited" ${r}nats.1k \
	    "NATS 2.9 does not fsync on publish"
	peers_row "floor: append, fdatasync per $PEER_BATCH" ${r}floor.1k
	peers_verdict "durable batch publish 1 KiB" ">= 2x Redis always pipelined, >= 0.5x the floor" \
	    1k ${r}redis.always.1k 2 1k ${r}floor.1k 0.5
	echo "  durable batch publish, 100 bytes"
	peers_mq_row "mq_pub_send $PEER_BATCH a call, MQ_SYNC_BATCH" 100
	peers_row "Redis XADD pipelined $PEER_BATCH, appendfsync always" ${r}redis.always.100
	peers_row "NATS JetStream async, $PEER_BATCH acks awaited" ${r}nats.100 \
	    "NATS 2.9 does not fsync on publish"
	peers_row "floor: append, fdatasync per $PEER_BATCH" ${r}floor.100
	peers_verdict "durable batch publish 100 B" ">= 2x Redis always pipelined, >= 0.3x the floor" \
	    100 ${r}redis.always.100 2 100 ${r}floor.100 0.3
	echo "  durable publish, one message a call (a round trip each), $SIZE bytes"
	peers_mq_row "mq_pub_send 1 a call, MQ_SYNC_EACH" each
	peers_row "Redis XADD unpipelined, appendfsync always" ${r}redis.always.each
	peers_row "Redis XADD unpipelined, everysec" ${r}redis.everysec.each \
	    "(durable only to the last second)"
	peers_row "NATS JetStream js_Publish, ack awaited" ${r}nats.each \
	    "NATS 2.9 does not fsync on publish"
	peers_row "floor: append, fdatasync per record" ${r}floor.each
	peers_verdict "per-message durable publish" ">= 1x Redis always unpipelined" \
	    each ${r}redis.always.each 1
	for f in mq mq2; do
		v2="not measured"
		[ -f "$W/res/peer.$f.each.syncs" ] && v2=$(awk -v s="$(cat "$W/res/peer.$f.each.syncs")" \
		    'BEGIN { print (s <= 2) ? "met" : "NOT MET" }')
		echo "    $([ $f = mq ] && echo "format 1" || echo "format 2"): $(cat "$W/res/peer.$f.each.syncs" 2>/dev/null || echo -) syncs/msg; target <= 2: $v2"
	done
	echo "  claim+ack drain of one group, $PEER_N pending, $PEER_COUNT a batch"
	peers_mq_row "$PEER_COUNT mq_sub_receive, one mq_sub_ack_batch" drain
	peers_row "NATS pull: Fetch $PEER_COUNT, an ack each" ${r}nats.drain
	peers_row "Redis (always): XREADGROUP COUNT $PEER_COUNT, XACK" ${r}redis.always.drain
	peers_verdict "claim+ack drain" ">= 1x NATS, >= 2x Redis" \
	    drain ${r}nats.drain 1 drain ${r}redis.always.drain 2
	echo "  fan-out: $PEER_FAN_N messages of $SIZE bytes, $PEER_BATCH a call, into G groups"
	peers_mq_row "1 group" fan1
	peers_mq_row "10 groups" fan10
	peers_mq_row "100 groups" fan100
	peers_row "Redis (always) XADD, stream of 10 groups" ${r}redis.always.fan10 \
	    "(a group is a cursor: no work per group at XADD)"
	for f in mq mq2; do
		echo "  fan-out, $([ $f = mq ] && echo "format 1" || echo "format 2"): 10 groups $(peers_rate peer.$f.fan10)/s, $(peers_x peer.$f.fan10 ${r}redis.always.fan10) of Redis always XADD with 10 groups; 100 groups / 1 group: $(peers_x peer.$f.fan100 peer.$f.fan1)   target >= 0.8x: $(peers_met peer.$f.fan100 peer.$f.fan1 0.8)"
	done
	echo "  space: $PEER_N messages, on disk (du -B1) per payload byte, inodes per 10,000 messages"
	printf '  %-46s %9s %9s\n' "" "bytes/B" "inodes"
	peers_space_row "mq spool, 100 B (one topic, one group)" ${r}mq.100
	peers_space_row "mq spool, format 2, 100 B" ${r}mq2.100
	peers_space_row "append floor file, 100 B" ${r}floor.100
	peers_space_row "Redis AOF (always), 100 B, growth" ${r}redis.always.100
	peers_space_row "NATS JetStream store, 100 B, growth" ${r}nats.100
	peers_space_row "mq spool, $SIZE B (one topic, one group)" ${r}mq.1k
	peers_space_row "mq spool, format 2, $SIZE B" ${r}mq2.1k
	peers_space_row "append floor file, $SIZE B" ${r}floor.1k
	peers_space_row "Redis AOF (always), $SIZE B, growth" ${r}redis.always.1k
	peers_space_row "NATS JetStream store, $SIZE B, growth" ${r}nats.1k
}
