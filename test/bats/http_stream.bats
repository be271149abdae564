#!/usr/bin/env bats
# mq-http's streams: Server-Sent Events (python3-requests) and WebSocket
# (python3-websockets), real clients against a real daemon.

load http_helper

CLIENTS="$BATS_TEST_DIRNAME/http_clients.py"

# ws SCRIPT: the WebSocket client on /v1/ws with $TOKEN.
ws() {
	"$PY" "$CLIENTS" ws "ws://127.0.0.1:$PORT/v1/ws" "$TOKEN" "$1"
}

@test "SSE: a group's messages as events whose id is the receipt; acked by POST; nothing left" {
	mkgroup t g
	mq-pub -q t one two
	http_start
	TOKEN=$(token 'consume:t/g')
	(sleep 0.5; mq-pub -q t three) &
	# The acks go late, as on a loaded machine, while the stream is open.
	ACK_DELAY=0.5 run --separate-stderr "$PY" "$CLIENTS" sse "$URL/v1/topics/t/groups/g/events" "$TOKEN" 3
	assert_success
	assert_output $'one\ntwo\nthree\nacked 200 3'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
}

@test "SSE: credit bounds what a client holds unsettled; a client that goes away gives back what it held, at once" {
	mkgroup t g
	mq-pub -q t a b c d
	http_start
	TOKEN=$(token 'consume:t/g')
	timeout 2 curl -sN "$URL/v1/topics/t/groups/g/events?credit=2&lease=1h&access_token=$TOKEN" >"$TD/sse" || true
	assert_equal "$(grep -c '^event: message' "$TD/sse")" 2
	# The two it held come back with no wait for their hour's lease.
	wait_for cur_is 0
	assert_equal "$(count_new t g)" 4
	# Without the token: 401; a stream of a group the token lacks: 403.
	run curl -s -o /dev/null -w '%{http_code}' "$URL/v1/topics/t/groups/g/events"
	assert_output 401
	TOKEN=$(token 'consume:t/other') run api GET /v1/topics/t/groups/g/events
	status_is 403
	run api GET '/v1/topics/t/groups/g/events?credit=0'
	status_is 400
	# A group is made by PUT, not by a stream of it.
	TOKEN=$(token 'consume:t/*') run api GET /v1/topics/t/groups/nog/events
	status_is 404
	[[ ! -e $MQ_SPOOL/topics/t/groups/nog.conf ]] || fail "a group was made"
}

cur_is() { [[ $(count_cur t g) == "$1" ]]; }

@test "WebSocket: publish, subscribe and ack in one connection; answers carry the request's id" {
	mkgroup t g
	http_start
	TOKEN=$(token 'publish:t consume:t/g')
	run --separate-stderr ws '[
	    {"send": {"op": "subscribe", "id": "s", "topic": "t", "group": "g"}},
	    {"recv": 1},
	    {"send": {"op": "publish", "id": "p", "topic": "t", "messages": [{"body": "hi"}, {"body": "there", "headers": {"X-A": "1"}}]}},
	    {"recv": 3},
	    {"ack_last": true}, {"recv": 1},
	    {"send": {"op": "publish", "id": "p2", "topic": "t", "message": {"body": "third"}}},
	    {"recv": 2}, {"ack_last": true}, {"recv": 1},
	    {"close": true}]'
	assert_success
	# "hi" was not acked: it is given back when the connection closes.
	assert_output $'subscribed s\npublished p 2\nmessage hi\nmessage there\nacked a\npublished p2 1\nmessage third\nacked a\nclosed 1000'
	wait_for cur_is 0
	run --separate-stderr mq-sub -g g t
	assert_output hi
}

@test "WebSocket: credit holds back deliveries until one is settled; errors are answers, not the end" {
	mkgroup t g
	mq-pub -q t 1 2 3
	http_start
	TOKEN=$(token 'publish:t consume:t/g')
	run --separate-stderr ws '[
	    {"send": {"op": "subscribe", "id": "s", "topic": "t", "group": "g", "credit": 1}},
	    {"recv": 2}, {"quiet": 0.5},
	    {"ack_last": true}, {"recv": 2},
	    {"send": {"op": "publish", "id": "x", "topic": "other"}}, {"recv": 1},
	    {"send": {"op": "publish", "id": "y", "topic": "u", "message": {"body": "b"}}}, {"recv": 1},
	    {"send": {"op": "nope", "id": "z"}}, {"recv": 1},
	    {"send_raw": "not json"}, {"recv": 1},
	    {"send": {"op": "ack", "id": "w", "receipt": "t/g/0/bogus"}}, {"recv": 1},
	    {"send": {"op": "subscribe", "id": "again", "topic": "t", "group": "g"}}, {"recv": 1},
	    {"close": true}]'
	assert_success
	assert_output $'subscribed s\nmessage 1\nquiet\nacked a\nmessage 2\nerror x 400\nerror y 403\nerror z 400\nerror None 400\nerror w 400\nerror again 409\nclosed 1000'
}

@test "WebSocket: no token is 401 before the upgrade; a plain GET is 426; SIGTERM closes a session with 1001 and gives back what it held" {
	mkgroup t g
	mq-pub -q t held
	http_start
	run curl -s -o /dev/null -w '%{http_code}' "$URL/v1/ws"
	assert_output 401
	TOKEN=$(token 'consume:t/g')
	run api GET /v1/ws
	status_is 426
	"$PY" "$CLIENTS" ws "ws://127.0.0.1:$PORT/v1/ws" "$TOKEN" '[
	    {"send": {"op": "subscribe", "id": "s", "topic": "t", "group": "g", "lease": "1h"}},
	    {"recv": 2}, {"recv": 1}]' >"$TD/ws.out" 2>&1 &
	local client=$!
	wait_for cur_is 1
	kill -TERM "$HTTPD"
	wait "$client" || true
	assert_equal "$(cat "$TD/ws.out")" $'subscribed s\nmessage held\nclosed by the server 1001'
	wait_for cur_is 0
	assert_equal "$(count_new t g)" 1
}

# A token for SCOPE that expires in 5 seconds (time for a client to start
# on a loaded machine); EXP is when.  (The server
# runs with --leeway 0: the token holds until EXP exactly.)
short_token() {
	EXP=$(( $(date +%s) + 5 ))
	TOKEN=$(token "$1" "{\"exp\": $EXP}")
}

# ended_by_exp: now is past EXP, and well before the 60 s idle timeout
# could have ended it (a bound generous for a loaded machine).
ended_by_exp() {
	(( $(date +%s) >= EXP && $(date +%s) <= EXP + 15 )) || fail "ended at $(date +%s), the token expired at $EXP"
}

@test "WebSocket: a session ends when its token expires, subscribed or idle: close 1008 \"token expired\"; what it held is given back (issue 26)" {
	mkgroup t g
	mq-pub -q t held
	http_start --leeway 0
	short_token 'publish:t consume:t/g'
	run --separate-stderr ws '[
	    {"send": {"op": "subscribe", "id": "s", "topic": "t", "group": "g", "lease": "1h"}},
	    {"recv": 2}, {"recv": 1}]'
	assert_success
	assert_output $'subscribed s\nmessage held\nclosed by the server 1008 token expired'
	ended_by_exp
	wait_for cur_is 0
	assert_equal "$(count_new t g)" 1
	short_token 'publish:t'
	run --separate-stderr ws '[
	    {"send": {"op": "publish", "id": "p", "topic": "t", "message": {"body": "b"}}},
	    {"recv": 1}, {"recv": 1}]'
	assert_success
	assert_output $'published p 1\nclosed by the server 1008 token expired'
	ended_by_exp
}

@test "SSE: a stream ends when its token expires, with an event saying so; what it held is given back (issue 26)" {
	mkgroup t g
	mq-pub -q t held
	http_start --leeway 0
	short_token 'consume:t/g'
	run --separate-stderr timeout 40 curl -sN "$URL/v1/topics/t/groups/g/events?lease=1h&access_token=$TOKEN"
	assert_success
	ended_by_exp
	assert_equal "$(grep -c '^event: message' <<<"$output")" 1
	assert_equal "$(tail -2 <<<"$output")" $'event: error\ndata: {"error":"token expired"}'
	wait_for cur_is 0
	assert_equal "$(count_new t g)" 1
}

@test "WebSocket: --rate counts each request; one over it is answered 429 with its id, and not done (issue 26)" {
	mq-topic create t >/dev/null
	http_start --rate 1
	TOKEN=$(token 'publish:t')
	local n script='['
	for n in 1 2 3 4 5 6 7 8; do
		script+="{\"send\": {\"op\": \"publish\", \"id\": \"p$n\", \"topic\": \"t\", \"message\": {\"body\": \"m$n\"}}},"
	done
	run --separate-stderr ws "$script"'{"recv": 8}, {"close": true}]'
	assert_success
	local refused
	refused=$(grep -c '^error p[1-8] 429$' <<<"$output")
	(( refused >= 4 )) || fail "$refused refused: $output"
	assert_equal "$(grep -c '^published p[1-8] 1$' <<<"$output")" $(( 8 - refused ))
	assert_equal "$(count_log t)" $(( 8 - refused ))
}

@test "a real browser (headless Chromium): a page of another origin publishes with fetch, follows a group with EventSource and another over a WebSocket, acks, and shows the messages" {
	mkgroup t web
	mkgroup t live
	local page_port
	page_port=$(free_port)
	spawn "$TD/page" "$PY" -m http.server -b 127.0.0.1 -d "$BATS_TEST_DIRNAME/../browser" "$page_port"
	http_start --allow-origin "http://127.0.0.1:$page_port"
	wait_for curl -sf -o /dev/null "http://127.0.0.1:$page_port/page.html"
	TOKEN=$(token 'publish:t consume:t/*')
	run --separate-stderr "$PY" "$BATS_TEST_DIRNAME/../browser/drive.py" \
	    "http://127.0.0.1:$page_port/page.html#base=$URL&token=$TOKEN" "$TD/page.png" 30
	echo "# $output" >&3
	# What made it fail, if it did (a traceback, chromium's complaint).
	[[ $status == 0 ]] || echo "# $stderr" >&3
	assert_success
	assert_equal "$(jq -c '[.status, .sse, .ws, .done]' <<<"$output")" '["published 200",["first","second"],["first","second"],"done"]'
	# The screenshot is a PNG, kept beside the test's files.
	assert_equal "$(head -c 8 "$TD/page.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a
	# Every message was acked, by fetch and over the WebSocket.
	wait_for empty_groups
}

empty_groups() {
	[[ $(count_new t web) == 0 && $(count_cur t web) == 0 &&
	    $(count_new t live) == 0 && $(count_cur t live) == 0 ]]
}
