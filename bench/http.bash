# bench/http.bash: section 13 of bench/run.sh (sourced by it), mq-http(1).
#
# Publish throughput over one keep-alive connection (bench/httppub.c http:
# POSTs of 1 message, and of 100 as a JSON array), beside mq_pub_send in
# this process (httppub lib) with the same batches, on the same spool, in
# the same run, 1 KiB messages synced per batch.  Then publish-to-delivery
# latency, one message in flight (bench/wslat.py): over mq-http's
# WebSocket (publish with sync none on one connection, receive on
# another) and as Server-Sent Events, beside mosquitto's websockets
# listener (MQTT QoS 0), the same python3-websockets client on every
# side; and, as the floor, one publish-to-delivery hop of the library
# alone (bench/lat.c mq).  Without mosquitto, mosquitto's row says so.
# Uses run's helpers and variables (kv, step, die, stop_bg, BG_PIDS, W,
# BIN, PY, LAT, N, LATN, WARMUP, SIZE).

HTTP_N=$((N / 10)) HTTP_N1=$((N / 50)) HTTP_LATN=$((LATN / 2))

http_free_port() {
	"$PY" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

http_measure() {
	local sp=$W/http-spool port token pid mport
	[ "$have_lib" = 1 ] || return 0
	head -c 32 /dev/urandom > "$W/http-secret"
	token=$("$PY" -c 'import jwt, sys, time
print(jwt.encode({"sub": "bench", "scope": "publish:* consume:*",
    "exp": int(time.time()) + 86400}, open(sys.argv[1], "rb").read(),
    algorithm="HS256"))' "$W/http-secret") || die "no token (python3-jwt?)"
	for t in lib1 lib100 http1 http100 ws sse; do
		"$BIN/mq-topic" -s "$sp" create "h$t" > /dev/null ||
		    die "mq-topic create h$t failed"
	done
	"$BIN/mq-group" -s "$sp" create hws g > /dev/null &&
	    "$BIN/mq-group" -s "$sp" create hsse g > /dev/null ||
	    die "mq-group create failed"
	port=$(http_free_port)
	"$BIN/mq-http" -q -s "$sp" -l "127.0.0.1:$port" \
	    --jwt-secret "$W/http-secret" 2> "$W/res/http.log" &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	local tries=0
	until curl -sf "http://127.0.0.1:$port/healthz" > /dev/null; do
		tries=$((tries + 1))
		[ "$tries" -lt 100 ] || die "mq-http did not start: $(cat "$W/res/http.log")"
		sleep 0.05
	done
	step "http: publishing $HTTP_N1 messages one a call, in the library and over HTTP"
	"$W/bin/httppub" lib "$sp" hlib1 "$HTTP_N1" 1 "$SIZE" > "$W/res/http.lib1" ||
	    die "httppub lib failed"
	"$W/bin/httppub" http "127.0.0.1:$port" "$token" hhttp1 "$HTTP_N1" 1 \
	    "$SIZE" > "$W/res/http.http1" || die "httppub http failed"
	step "http: publishing $HTTP_N messages 100 a call, in the library and over HTTP"
	"$W/bin/httppub" lib "$sp" hlib100 "$HTTP_N" 100 "$SIZE" \
	    > "$W/res/http.lib100" || die "httppub lib failed"
	"$W/bin/httppub" http "127.0.0.1:$port" "$token" hhttp100 "$HTTP_N" 100 \
	    "$SIZE" > "$W/res/http.http100" || die "httppub http failed"
	step "http: $HTTP_LATN round trips publish -> WebSocket, publish -> SSE"
	"$PY" "$ROOT/bench/wslat.py" ws "http://127.0.0.1:$port" "$token" hws g \
	    "$HTTP_LATN" "$WARMUP" > "$W/res/http.ws" || die "wslat ws failed"
	"$PY" "$ROOT/bench/wslat.py" sse "http://127.0.0.1:$port" "$token" hsse g \
	    "$HTTP_LATN" "$WARMUP" > "$W/res/http.sse" || die "wslat sse failed"
	stop_bg "$pid"
	step "http: $HTTP_LATN publish-to-delivery hops in the library"
	"$LAT" mq "$W/http-lat" "$BIN/mq-sub" "$HTTP_LATN" "$WARMUP" \
	    > "$W/res/http.hop" || die "lat mq failed"
	command -v mosquitto > /dev/null || return 0
	# mosquitto 2.0.11 starts no websockets listener alone, and binds
	# one to an interface, not an address.
	mport=$(http_free_port)
	printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nlistener %s\nbind_interface lo\nprotocol websockets\n' \
	    "$(http_free_port)" "$mport" > "$W/mosquitto.conf"
	mosquitto -c "$W/mosquitto.conf" > "$W/res/mosquitto.log" 2>&1 &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	tries=0
	until "$PY" -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$mport" 2> /dev/null; do
		tries=$((tries + 1))
		[ "$tries" -lt 100 ] || die "mosquitto did not start: $(cat "$W/res/mosquitto.log")"
		sleep 0.05
	done
	step "http: $HTTP_LATN round trips through mosquitto over websockets"
	"$PY" "$ROOT/bench/wslat.py" mqtt "$mport" "$HTTP_LATN" "$WARMUP" \
	    > "$W/res/http.mqtt" || die "wslat mqtt failed"
	stop_bg "$pid"
}

http_table() {
	[ -f "$W/res/http.lib1" ] || {
		echo "13. mq-http: no figures (lib/libmq.a missing or not linkable)"
		return 0
	}
	echo "13. mq-http: publish over one keep-alive connection, 1 KiB messages synced per call"
	printf '  %-42s %9s %9s\n' "" "msgs/s" "seconds"
	local f lbl
	for f in lib1 http1 lib100 http100; do
		case $f in
		lib1) lbl="mq_pub_send, 1 a call (in process)" ;;
		http1) lbl="POST, 1 a call (body as it is)" ;;
		lib100) lbl="mq_pub_send, 100 a call (in process)" ;;
		http100) lbl="POST, 100 a call (JSON array)" ;;
		esac
		printf '  %-42s %9.0f %9.3f\n' "$lbl" "$(kv "$W/res/http.$f" rate)" \
		    "$(kv "$W/res/http.$f" seconds)"
	done
	awk -v a="$(kv "$W/res/http.lib100" rate)" \
	    -v b="$(kv "$W/res/http.http100" rate)" 'BEGIN {
	    printf "  %-42s %8.2fx   target %-9s %s\n",
		"in process / HTTP, 100 a call", a / b, "<= 2x",
		(a / b <= 2) ? "met" : "NOT MET" }'
	echo "   publish-to-delivery, one message in flight, python3-websockets clients (ms)"
	printf '  %-42s %9s %9s %9s %9s\n' "" p50 p90 p99 max
	for f in ws sse mqtt hop; do
		case $f in
		ws) lbl="mq-http WebSocket -> WebSocket" ;;
		sse) lbl="mq-http WebSocket -> Server-Sent Events" ;;
		mqtt) lbl="mosquitto websockets, MQTT QoS 0" ;;
		hop) lbl="  floor: mq_pub_send -> mq-sub -f (no HTTP)" ;;
		esac
		if [ ! -f "$W/res/http.$f" ]; then
			printf '  %-42s %9s   (mosquitto not installed)\n' "$lbl" -
			continue
		fi
		awk -v l="$lbl" -v a="$(kv "$W/res/http.$f" p50_us)" \
		    -v b="$(kv "$W/res/http.$f" p90_us)" \
		    -v c="$(kv "$W/res/http.$f" p99_us)" \
		    -v d="$(kv "$W/res/http.$f" max_us)" 'BEGIN {
		    printf "  %-42s %9.3f %9.3f %9.3f %9.3f\n", l, a / 1000,
			b / 1000, c / 1000, d / 1000 }'
	done
	[ -f "$W/res/http.mqtt" ] && awk -v a="$(kv "$W/res/http.ws" p50_us)" \
	    -v b="$(kv "$W/res/http.mqtt" p50_us)" 'BEGIN {
	    printf "  %-42s %8.2fx   target %-9s %s\n",
		"WebSocket p50, mq-http / mosquitto", a / b, "< 1x",
		(a < b) ? "met" : "NOT MET" }'
	return 0
}
