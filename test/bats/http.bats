#!/usr/bin/env bats
# mq-http: the REST routes with curl, tokens, limits, and the daemon's
# life (issue 18).

load http_helper

ALL='publish:* consume:* admin:*'

@test "mq-http: no token, a bad one, an expired one, a wrong signature: 401 with WWW-Authenticate, and nothing happens; /healthz needs none" {
	mq-topic create t >/dev/null
	http_start
	local snap
	snap=$(spool_snapshot)
	run curl -s -w '\n%{http_code}' "$URL/healthz"
	status_is 200
	assert_equal "$BODY" $'ok\n'
	run api POST /v1/topics/t/messages -d hello
	status_is 401
	assert_equal "$(jq -r .error <<<"$BODY")" "no bearer token"
	run curl -s -D - -o /dev/null -X POST -d x "$URL/v1/topics/t/messages"
	assert_line --partial 'WWW-Authenticate: Bearer realm="mq"'
	TOKEN=garbage run api POST /v1/topics/t/messages -d hello
	status_is 401
	TOKEN=$(token "$ALL" '{"exp": 1000}') run api POST /v1/topics/t/messages -d hello
	status_is 401
	assert_equal "$(jq -r .error <<<"$BODY")" "token expired"
	TOKEN=$(token "$ALL" '{"exp": null}') run api POST /v1/topics/t/messages -d hello
	status_is 401
	head -c 32 /dev/urandom >"$TD/secret"    # tokens signed with another key
	TOKEN=$(token "$ALL") run api POST /v1/topics/t/messages -d hello
	status_is 401
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-http publish: a body as it is, with key, partition, delay and ttl in the query; ids back; a missing topic is 404, not made" {
	mq-topic create --partitions 2 t >/dev/null
	mkgroup t g
	http_start
	TOKEN=$(token 'publish:t')
	run api POST '/v1/topics/t/messages?key=k1' --data-binary $'line one\nline two'
	status_is 200
	local id
	id=$(jq -r '.ids[0]' <<<"$BODY")
	[[ $id =~ ^[0-9a-f]{32}$ ]] || fail "$BODY"
	run api POST '/v1/topics/t/messages?partition=1&delay=1h' -d later
	status_is 200
	run --separate-stderr mq-sub -g g -F '%i %k|%s' t
	assert_output "$id k1|line one"$'\n'"line two"
	run api POST '/v1/topics/t/messages?sync=none' -d fast
	status_is 200
	assert_equal "$(mq-sub -g g t)" fast
	assert_equal "$(count_delay t g 1)" 1
	run api POST '/v1/topics/t/messages?delay=5s&ttl=1s' -d never
	status_is 400
	run api POST '/v1/topics/t/messages?sync=sometimes' -d never
	status_is 400
	run api POST '/v1/topics/nosuch/messages' -d x
	status_is 403
	TOKEN=$(token 'publish:*') run api POST '/v1/topics/nosuch/messages' -d x
	status_is 404
	[[ ! -e $MQ_SPOOL/topics/nosuch ]] || fail "a topic was made"
	run api POST '/v1/topics/bad..name/messages' -d x
	status_is 400
}

@test "mq-http publish JSON: an object, an array, NDJSON, with headers, keys and idempotency keys; one bad message refuses the whole batch" {
	mkgroup t g
	http_start
	TOKEN=$(token 'publish:t')
	run api POST /v1/topics/t/messages -H 'Content-Type: application/json' \
	    -d '{"body": "one", "headers": {"X-Trace": "7"}, "key": "k"}'
	status_is 200
	run api POST /v1/topics/t/messages -H 'Content-Type: application/json; charset=utf-8' \
	    -d '[{"body": "two", "idempotency_key": "i2"}, {"body": "three"}]'
	status_is 200
	assert_equal "$(jq '.ids | length' <<<"$BODY")" 2
	local two
	two=$(jq -r '.ids[0]' <<<"$BODY")
	run api POST /v1/topics/t/messages -H 'Content-Type: application/x-ndjson' \
	    --data-binary $'{"body": "two again", "idempotency_key": "i2"}\n\n{"body": "four", "ttl": 3600}\n'
	status_is 200
	assert_equal "$(jq -r '.ids[0]' <<<"$BODY")" "$two"
	local snap
	snap=$(spool_snapshot)
	for bad in '[{"body": "ok"}, {"body": 5}]' '[{"body": "ok"}, {"body": "x", "headers": {"Mq-Own": "x"}}]' \
	    '{"body": "x", "partition": -1}' '{"nobody": 1}' '{"body": "x", "delay": "soon"}' 'not json' '[]'; do
		run api POST /v1/topics/t/messages -H 'Content-Type: application/json' -d "$bad"
		status_is 400
	done
	assert_equal "$(spool_snapshot)" "$snap"
	run --separate-stderr mq-sub -g g -F '%s %{X-Trace}h %k\n' t
	assert_output $'one 7 k\ntwo  \nthree  \nfour  '
}

@test "mq-http receive and settle: a long poll, receipts, ack, nack with a delay, extend; a receipt no longer claimed is 404" {
	mkgroup t g
	mq-pub -q t a b c
	http_start
	TOKEN=$(token 'consume:t/g')
	run api GET '/v1/topics/t/groups/g/messages?max=2&lease=60s'
	status_is 200
	assert_equal "$(jq -r '[.[].body] | join(",")' <<<"$BODY")" a,b
	local ra rb
	ra=$(jq -r '.[0].receipt' <<<"$BODY")
	rb=$(jq -r '.[1].receipt' <<<"$BODY")
	assert_equal "$(count_cur t g)" 2
	run api POST /v1/topics/t/groups/g/ack -d "{\"receipt\": \"$ra\"}"
	status_is 200
	assert_equal "$(jq .settled <<<"$BODY")" 1
	run api POST /v1/topics/t/groups/g/ack -d "{\"receipt\": \"$ra\"}"
	status_is 404
	run api POST /v1/topics/t/groups/g/extend -d "{\"receipt\": \"$rb\", \"lease\": \"2m\"}"
	status_is 200
	run api POST /v1/topics/t/groups/g/nack -d "{\"receipts\": [\"$rb\"], \"delay\": 3600}"
	status_is 200
	assert_equal "$(count_delay t g)" 1
	# A long poll: the message comes while it waits.
	run api GET '/v1/topics/t/groups/g/messages?max=5'
	assert_equal "$(jq -r '.[].body' <<<"${output%$'\n'*}")" c
	(sleep 0.5; mq-pub -q t d) &
	local t0=$EPOCHREALTIME
	run api GET '/v1/topics/t/groups/g/messages?wait=10s'
	status_is 200
	assert_equal "$(jq -r '.[0].body' <<<"$BODY")" d
	(( ${EPOCHREALTIME/./} - ${t0/./} < 5000000 )) || fail "the long poll took too long"
	run api GET '/v1/topics/t/groups/g/messages?wait=0'
	status_is 200
	assert_equal "$(jq -c . <<<"$BODY")" "[]"
	# Another group, or a group that is not there.
	run api GET '/v1/topics/t/groups/h/messages'
	status_is 403
	TOKEN=$(token 'consume:t') run api GET '/v1/topics/t/groups/h/messages'
	status_is 404
	run api GET '/v1/topics/t/groups/g/messages?max=0'
	status_is 400
	run api GET '/v1/topics/t/groups/g/messages?wait=2h'
	status_is 400
	run api POST /v1/topics/t/groups/g/ack -d '{"receipts": 5}'
	status_is 400
}

@test "mq-http: a client that goes away during a long poll: nothing is claimed for it, so the message is there at once, not after its 1 h lease" {
	mkgroup t g
	http_start
	TOKEN=$(token 'consume:t/g')
	run curl -s --max-time 1 -H "Authorization: Bearer $TOKEN" \
	    "$URL/v1/topics/t/groups/g/messages?wait=3s&lease=1h"
	mq-pub -q t orphan
	# The server claims it, fails to send it, and gives it back.
	sleep 3
	run --separate-stderr mq-sub -g g -t 5 t
	assert_output orphan
}

@test "mq-http killed with -9 with messages in flight: they come back after their lease" {
	mkgroup t g
	mq-pub -q t x y
	http_start
	TOKEN=$(token 'consume:t/g')
	run api GET '/v1/topics/t/groups/g/messages?max=2&lease=1s'
	status_is 200
	kill -9 "$HTTPD"
	assert_equal "$(count_cur t g)" 2
	# Each lease ends at its own millisecond: -f waits for both, not
	# only for the first to come back.
	run --separate-stderr mq-sub -f -n 2 -g g -t 5 t
	assert_output $'x\ny'
}

@test "mq-http topics and groups: list and info as the token may see them; PUT makes a topic (admin) or a group (its consumer), idempotent, 409 on other settings" {
	mq-topic create a >/dev/null
	mq-topic create b >/dev/null
	mkgroup a g
	http_start
	TOKEN=$(token 'consume:a/g')
	run api GET /v1/topics
	status_is 200
	assert_equal "$(jq -r '[.[].name] | join(",")' <<<"$BODY")" a
	run api GET /v1/topics/a
	status_is 200
	assert_equal "$(jq -r .name <<<"$BODY")" a
	run api GET /v1/topics/b
	status_is 403
	run api GET /v1/topics/a/groups
	status_is 200
	assert_equal "$(jq -r '.[0].group' <<<"$BODY")" g
	run api GET /v1/topics/a/groups/g
	status_is 200
	run api GET /v1/topics/a/groups/nog
	status_is 403
	TOKEN=$(token 'consume:a') run api GET /v1/topics/a/groups/nog
	status_is 404
	run api PUT /v1/topics/c -d '{"partitions": 3}'
	status_is 403
	TOKEN=$(token 'admin:c') run api PUT /v1/topics/c -d '{"partitions": 3, "retention": "1d"}'
	status_is 201
	assert_equal "$(mq-topic info --json c | jq .partitions)" 3
	TOKEN=$(token 'admin:c') run api PUT /v1/topics/c
	status_is 200
	TOKEN=$(token 'admin:*') run api PUT /v1/topics/d -d '{"partitions": 0}'
	status_is 400
	TOKEN=$(token 'consume:c/w') run api PUT /v1/topics/c/groups/w -d '{"exactly_once": true}'
	status_is 201
	TOKEN=$(token 'consume:c/w') run api PUT /v1/topics/c/groups/w -d '{"exactly_once": true}'
	status_is 200
	TOKEN=$(token 'consume:c/w') run api PUT /v1/topics/c/groups/w -d '{"ordered": true}'
	status_is 409
	TOKEN=$(token 'consume:*') run api PUT /v1/topics/nosuch/groups/w
	status_is 404
	[[ ! -e $MQ_SPOOL/topics/nosuch ]] || fail "a topic was made"
}

@test "mq-http: where a message is, by id; /metrics for the spool's admin only" {
	mkgroup t g
	local id
	id=$(mq-pub t one)
	http_start
	TOKEN=$(token 'consume:t') run api GET "/v1/topics/t/messages/$id"
	status_is 200
	assert_equal "$(jq -r .id <<<"$BODY")" "$id"
	TOKEN=$(token 'consume:t') run api GET /v1/topics/t/messages/nothex
	status_is 404
	TOKEN=$(token 'admin:t') run api GET /metrics
	status_is 403
	TOKEN=$(token 'admin:*') run api GET /metrics
	status_is 200
	assert_line 'mq_pending_messages{topic="t",group="g"} 1'
}

@test "mq-http limits: a body over --max-body is 413; a token over --rate is 429; an unknown route 404, a wrong method 405" {
	mq-topic create t >/dev/null
	http_start --max-body 2048 --rate 5
	TOKEN=$(token 'publish:t')
	run api POST /v1/topics/t/messages --data-binary "$(head -c 4096 /dev/zero | tr '\0' x)"
	status_is 413
	local n codes=""
	for n in 1 2 3 4 5 6 7 8; do
		codes+=$(curl -s -o /dev/null -w '%{http_code} ' -H "Authorization: Bearer $TOKEN" "$URL/v1/topics")
	done
	[[ $codes == *429* ]] || fail "no 429 in $codes"
	sleep 1.2
	run api GET /v1/nothing
	status_is 404
	run api DELETE /v1/topics/t
	status_is 405
}

@test "mq-http usage: no key is 64; plain HTTP off loopback is refused unless --plain-anywhere; SIGTERM ends it with 0, a long poll answered" {
	run --separate-stderr mq-http
	assert_equal "$status" 64
	assert_equal "${stderr%%$'\n'*}" "mq-http: a key to verify tokens with is required: --jwt-secret, --jwt-key or --jwks"
	head -c 32 /dev/urandom >"$TD/secret"
	run --separate-stderr timeout 5 mq-http -l "0.0.0.0:$(free_port)" --jwt-secret "$TD/secret"
	assert_equal "$status" 64
	[[ $stderr == *"plain HTTP listens on loopback only"* ]] || fail "$stderr"
	run --separate-stderr mq-http --jwt-secret "$TD/nosuch"
	assert_equal "$status" 66
	mkgroup t g
	http_start
	TOKEN=$(token 'consume:t/g')
	api GET '/v1/topics/t/groups/g/messages?wait=30s' >"$TD/poll" &
	local poll=$!
	sleep 0.5
	kill -TERM "$HTTPD"
	wait_for gone "$HTTPD"
	wait "$poll"
	assert_equal "$(tail -1 "$TD/poll")" 200
}

gone() { ! kill -0 "$1" 2>/dev/null; }

@test "mq-http over TLS with a test CA: curl trusting the CA is served; plain HTTP to it fails" {
	local d=$TD/ca
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	    -subj /CN=test-ca -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
	    -keyout "$d/srv.key" -out "$d/srv.csr" 2>/dev/null
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
	    -days 1 -extfile <(echo 'subjectAltName=IP:127.0.0.1') -out "$d/srv.pem" 2>/dev/null
	mkgroup t g
	URL_SCHEME=https CURL_TLS="--cacert $d/ca.pem" http_start --cert "$d/srv.pem" --key "$d/srv.key"
	TOKEN=$(token 'publish:t')
	CURL_TLS="--cacert $d/ca.pem" run api POST /v1/topics/t/messages -d secure
	status_is 200
	run curl -s "$URL/healthz"
	assert_failure
	run curl -s "http://127.0.0.1:$PORT/healthz"
	[[ $output != ok ]] || fail "plain HTTP was served"
	assert_equal "$(mq-sub -g g t)" secure
}

@test "mq-http dead letters: list and show for the group's consumer; redrive and purge for the admin, as chosen; counts back" {
	kill_two t g
	http_start
	TOKEN=$(token 'consume:t/g')
	run api GET /v1/topics/t/groups/g/dead
	status_is 200
	assert_equal "$(jq length <<<"$BODY")" 2
	local b d
	b=$(jq -r '.[0].id' <<<"$BODY")
	d=$(jq -r '.[1].id' <<<"$BODY")
	run api GET "/v1/topics/t/groups/g/dead/$b"
	status_is 200
	assert_equal "$(jq -r .message.body <<<"$BODY")" b
	assert_equal "$(jq -r '.dead[0].reason' <<<"$BODY")" "$(mq-dlq list --json t | jq -r '.[0].reason')"
	run api POST /v1/topics/t/groups/g/dead/redrive -d "{\"ids\": [\"$b\"]}"
	status_is 403
	TOKEN=$(token 'admin:t')
	run api POST /v1/topics/t/groups/g/dead/purge -d '{}'
	status_is 400
	run api POST /v1/topics/t/groups/g/dead/redrive -d "{\"ids\": [\"$b\"]}"
	status_is 200
	assert_equal "$BODY" '{"redriven":1}'
	run api POST /v1/topics/t/groups/g/dead/purge -d '{"all": true}'
	status_is 200
	assert_equal "$BODY" '{"purged":1}'
	assert_equal "$(mq-dlq count t)" 0
	run --separate-stderr mq-sub -g g t
	assert_output b
	run api GET "/v1/topics/t/groups/g/dead/$d"
	status_is 404
}

@test "mq-http redrive into another topic takes publish there: a sandbox token cannot move its dead letter into payments (issue 26)" {
	kill_two sandbox g
	mkgroup payments p
	http_start
	local sandbox='publish:sandbox consume:sandbox admin:sandbox'
	TOKEN=$(token "$sandbox")
	run api POST /v1/topics/payments/messages -d forged
	status_is 403
	local snap
	snap=$(spool_snapshot)
	run api POST /v1/topics/sandbox/groups/g/dead/redrive -d '{"to_topic": "payments"}'
	status_is 403
	assert_equal "$(jq -r .error <<<"$BODY")" "the token does not allow publish on payments"
	assert_equal "$(spool_snapshot)" "$snap"
	assert_equal "$(count_new payments p)" 0
	# Admin of payments is not publish there either.
	TOKEN=$(token "$sandbox admin:payments") run api POST /v1/topics/sandbox/groups/g/dead/redrive -d '{"to_topic": "payments"}'
	status_is 403
	# Into its own topic, to_topic named, it is a publish there too.
	TOKEN=$(token 'admin:sandbox') run api POST /v1/topics/sandbox/groups/g/dead/redrive -d '{"to_topic": "sandbox"}'
	status_is 403
	TOKEN=$(token "$sandbox publish:payments") run api POST /v1/topics/sandbox/groups/g/dead/redrive -d '{"to_topic": "payments", "max": 1}'
	status_is 200
	assert_equal "$BODY" '{"redriven":1}'
	assert_equal "$(mq-sub -g p payments)" b
	# Back into the group itself: admin of the topic, as before.
	TOKEN=$(token 'admin:sandbox') run api POST /v1/topics/sandbox/groups/g/dead/redrive -d '{}'
	status_is 200
	assert_equal "$BODY" '{"redriven":1}'
}

@test "mq-http: a group's settings are its consumers' and the topic's admins': the list shows those groups only, another group is 403, a message's place names them only (issue 26)" {
	mq-group create --filter '.body | test("vip")' --match 'X-Tier=gold*' a mine >/dev/null
	mq-group create --filter '.body | test("secret-plan")' a theirs >/dev/null
	local id
	id=$(mq-pub a hello)
	http_start
	TOKEN=$(token 'consume:a/mine')
	run api GET /v1/topics/a/groups
	status_is 200
	assert_equal "$(jq -c '[.[] | [.group, .filter, .match]]' <<<"$BODY")" '[["mine",".body | test(\"vip\")",["X-Tier=gold*"]]]'
	run api GET /v1/topics/a/groups/mine
	status_is 200
	run api GET /v1/topics/a/groups/theirs
	status_is 403
	[[ $BODY != *secret-plan* ]] || fail "$BODY"
	run api GET /v1/topics/a/groups/nosuch
	status_is 403
	run api GET "/v1/topics/a/messages/$id"
	status_is 200
	assert_equal "$(jq -c '[.topic, [.groups[].group]]' <<<"$BODY")" '["a",["mine"]]'
	# A publisher sees where its message went in the topic, no group.
	TOKEN=$(token 'publish:a') run api GET /v1/topics/a/groups
	status_is 200
	assert_equal "$(jq -c . <<<"$BODY")" '[]'
	TOKEN=$(token 'publish:a') run api GET "/v1/topics/a/messages/$id"
	status_is 200
	assert_equal "$(jq -c '[.topic, .partition, .groups]' <<<"$BODY")" '["a",0,[]]'
	# The topic's admin, and a consumer of every group, see them all.
	for scope in 'admin:a' 'consume:a'; do
		TOKEN=$(token "$scope") run api GET /v1/topics/a/groups
		status_is 200
		assert_equal "$(jq -r '[.[].group] | sort | join(",")' <<<"$BODY")" mine,theirs
		TOKEN=$(token "$scope") run api GET /v1/topics/a/groups/theirs
		status_is 200
		assert_equal "$(jq -r '.[0].filter' <<<"$BODY")" '.body | test("secret-plan")'
	done
}

# rs_token KEY ALG SCOPE [CLAIMS-JSON] [HEADERS-JSON]: a token signed with
# the private key KEY (PEM) by ALG.
signed_token() {
	"$PY" - "$@" <<'PYEOF'
import json, sys, time, jwt
key, alg, scope = sys.argv[1:4]
claims = {"sub": "tester", "scope": scope, "exp": int(time.time()) + 600}
claims.update(json.loads(sys.argv[4] if len(sys.argv) > 4 else "{}"))
headers = json.loads(sys.argv[5] if len(sys.argv) > 5 else "{}")
secret = open(key, 'rb').read()
print(jwt.encode(claims, secret, algorithm=alg, headers=headers or None))
PYEOF
}

@test "mq-http tokens: RS256 from a PEM key, ES256 from a JWKS with kid, audience and issuer checked; an HS256 token signed with the public key is refused" {
	mq-topic create t >/dev/null
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TD/rsa.key" 2>/dev/null
	openssl pkey -in "$TD/rsa.key" -pubout -out "$TD/rsa.pub"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TD/ec.key" 2>/dev/null
	"$PY" - "$TD/ec.key" "$TD/jwks.json" <<'PYEOF'
import json, sys
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from jwt.algorithms import ECAlgorithm
k = load_pem_private_key(open(sys.argv[1], 'rb').read(), None).public_key()
jwk = json.loads(ECAlgorithm.to_jwk(k))
jwk.update(kid="ec1", use="sig")
json.dump({"keys": [jwk]}, open(sys.argv[2], 'w'))
PYEOF
	http_start --jwt-key "$TD/rsa.pub" --jwks "$TD/jwks.json" --audience mq-api --issuer https://idp.test
	local good='{"aud": "mq-api", "iss": "https://idp.test"}'
	TOKEN=$(signed_token "$TD/rsa.key" RS256 publish:t "$good") run api POST /v1/topics/t/messages -d r
	status_is 200
	TOKEN=$(signed_token "$TD/ec.key" ES256 publish:t "$good" '{"kid": "ec1"}') run api POST /v1/topics/t/messages -d e
	status_is 200
	TOKEN=$(signed_token "$TD/ec.key" ES256 publish:t "$good" '{"kid": "other"}') run api POST /v1/topics/t/messages -d x
	status_is 401
	TOKEN=$(signed_token "$TD/rsa.key" RS256 publish:t '{"aud": ["x", "mq-api"], "iss": "https://idp.test"}') run api POST /v1/topics/t/messages -d r2
	status_is 200
	TOKEN=$(signed_token "$TD/rsa.key" RS256 publish:t '{"aud": "other", "iss": "https://idp.test"}') run api POST /v1/topics/t/messages -d x
	status_is 401
	assert_equal "$(jq -r .error <<<"$BODY")" "wrong audience"
	TOKEN=$(signed_token "$TD/rsa.key" RS256 publish:t '{"aud": "mq-api", "iss": "https://evil"}') run api POST /v1/topics/t/messages -d x
	status_is 401
	assert_equal "$(jq -r .error <<<"$BODY")" "wrong issuer"
	# The confusion: the public key, which anyone has, as an HMAC secret.
	TOKEN=$("$PY" -c 'import sys, hmac, hashlib, base64, json, time
b = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=")
h = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
p = b(json.dumps({"scope": "publish:t", "exp": int(time.time()) + 600, "aud": "mq-api", "iss": "https://idp.test"}).encode())
s = b(hmac.new(open(sys.argv[1], "rb").read(), h + b"." + p, hashlib.sha256).digest())
print((h + b"." + p + b"." + s).decode())' "$TD/rsa.pub") run api POST /v1/topics/t/messages -d forged
	status_is 401
	assert_equal "$(count_log t)" 3
}

@test "mq-http CORS: a preflight from an allowed origin is answered; responses carry the origin; another origin gets no CORS headers" {
	mq-topic create t >/dev/null
	http_start --allow-origin http://page.test
	run curl -s -D - -o /dev/null -X OPTIONS -H 'Origin: http://page.test' \
	    -H 'Access-Control-Request-Method: POST' "$URL/v1/topics/t/messages"
	assert_line --partial 'HTTP/1.1 204'
	assert_line --partial 'Access-Control-Allow-Origin: http://page.test'
	assert_line --partial 'Access-Control-Allow-Headers: Authorization, Content-Type'
	TOKEN=$(token 'publish:t')
	run curl -s -D - -o /dev/null -H 'Origin: http://page.test' -H "Authorization: Bearer $TOKEN" -d x "$URL/v1/topics/t/messages"
	assert_line --partial 'Access-Control-Allow-Origin: http://page.test'
	run curl -s -D - -o /dev/null -H 'Origin: http://evil.test' -H "Authorization: Bearer $TOKEN" -d x "$URL/v1/topics/t/messages"
	refute_line --partial 'Access-Control-Allow-Origin'
	run curl -s -o /dev/null -w '%{http_code}' -X OPTIONS -H 'Origin: http://evil.test' "$URL/v1/topics/t/messages"
	assert_output 401
}

@test "systemd: the units verify; socket activation hands mq-http its listening socket" {
	sed "s|/usr/local/bin/mq-http|$MQ_BIN_DIR/mq-http|" \
	    "$BATS_TEST_DIRNAME/../../systemd/mq-http.service" >"$TD/mq-http.service"
	cp "$BATS_TEST_DIRNAME/../../systemd/mq-http.socket" "$TD/"
	run systemd-analyze verify --man=no "$TD/mq-http.socket" "$TD/mq-http.service"
	assert_success
	assert_output ""
	head -c 32 /dev/urandom >"$TD/secret"
	PORT=$(free_port)
	URL=http://127.0.0.1:$PORT
	spawn "$TD/sa" systemd-socket-activate -l "127.0.0.1:$PORT" mq-http -s "$MQ_SPOOL" --jwt-secret "$TD/secret"
	wait_for healthy
	mkgroup t g
	TOKEN=$(token 'publish:t') run api POST /v1/topics/t/messages -d activated
	status_is 200
	grep -q 'serving the socket it was given over HTTP' "$TD/sa.err" || fail "$(cat "$TD/sa.err")"
	assert_equal "$(mq-sub -g g t)" activated
}

@test "mq-http: bash completion offers its options, and files for its key options" {
	run completions _mq_http mq-http --jw
	assert_output $'--jwt-secret\n--jwt-key\n--jwks'
	touch "$TD/key.pem"
	run completions _mq_http mq-http --jwt-key "$TD/ke"
	assert_output "$TD/key.pem"
	run completions _mq_http mq-http --plain
	assert_output --plain-anywhere
}

@test "mq-http publish ?replicas=1: answered once the peer has it; without a peer, 504 after replica_timeout, the messages published" {
	load replicate_helper
	pair
	mq-group create t g
	run -0 push_ab
	spawn "$TD/follow" mq-replicate -s "$A" push --follow --rsh env --remote-spool "$B"
	local follow=$SPAWNED
	http_start
	TOKEN=$(token 'publish:t')
	run api POST '/v1/topics/t/messages?replicas=1' -d "kept twice"
	status_is 200
	assert_equal "$(jq .replicas <<<"$BODY")" 1
	run -0 mq-sub -s "$B" -g g t -n 1 -t 0
	assert_output "kept twice"
	kill -- "-$follow"
	wait_for exited "$follow"
	run api POST '/v1/topics/t/messages?replicas=1&replica_timeout=0.5s' -d "kept once"
	status_is 504
	[[ $(jq -r .error <<<"$BODY") == "published, but only 0 of 1 replicas have it after 0.5 s" ]] || fail "$BODY"
	run api POST '/v1/topics/t/messages?replicas=0' -d x
	status_is 400
	run -0 mq-sub -g g t -n 2 -t 0
	assert_output $'kept twice\nkept once'
}

@test "mq-http: an exactly-once group over HTTP keeps its ledger as mq-sub does; --max-connections holds a third connection back until one goes" {
	mq-group create --exactly-once t eo
	local id
	id=$(mq-pub t once)
	http_start --max-connections 2
	TOKEN=$(token 'consume:t/eo')
	run api GET /v1/topics/t/groups/eo/messages
	status_is 200
	run api POST /v1/topics/t/groups/eo/ack -d "{\"receipt\": $(jq '.[0].receipt' <<<"$BODY")}"
	status_is 200
	[[ -e $MQ_SPOOL/topics/t/p0/g/eo/done/$id ]] || fail "no ledger entry"
	# Two idle connections hold both places: a third waits, unserved and
	# costing nothing, until one of them goes.
	"$PY" - "$PORT" <<'PYEOF'
import socket, sys, time
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
time.sleep(0.3)
third = socket.create_connection(("127.0.0.1", port))
third.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
third.settimeout(1.5)
try:
    got = third.recv(100)
    raise SystemExit("served past the limit: %r" % got)
except socket.timeout:
    pass
idle[0].close()
third.settimeout(5)
assert third.recv(100).startswith(b"HTTP/1.1 200"), "not served once one left"
PYEOF
}

@test "mq-http under concurrent clients: 8 publishers over their own connections, 400 messages, 400 distinct ids, each delivered once" {
	mkgroup t g
	http_start
	TOKEN=$(token 'publish:t')
	local c pids=()
	for c in 1 2 3 4 5 6 7 8; do
		(for n in $(seq 1 50); do
			curl -s -H "Authorization: Bearer $TOKEN" -d "c$c-$n" "$URL/v1/topics/t/messages"
			echo
		done >"$TD/ids.$c") &
		pids+=($!)
	done
	wait "${pids[@]}"
	assert_equal "$(cat "$TD"/ids.* | jq -r '.ids[0]' | sort -u | wc -l)" 400
	run --separate-stderr mq-sub -g g t
	assert_equal "$(sort <<<"$output" | uniq | wc -l)" 400
	assert_equal "$(wc -l <<<"$output")" 400
}

@test "mq-http: slow uploads hold at most 16 bodies of --max-body at once: the next is refused; the held ones publish; the server goes on" {
	mq-topic create t >/dev/null
	http_start --max-body 2048
	TOKEN=$(token 'publish:t')
	"$PY" - "$PORT" "$TOKEN" <<'PYEOF'
import socket, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
head = ("POST /v1/topics/t/messages HTTP/1.1\r\nHost: x\r\n"
        "Authorization: Bearer %s\r\nContent-Length: 2000\r\n\r\n" % token).encode()
held, refused = [], 0
for i in range(24):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head + b"x" * 1990)          # 10 bytes short: it waits
    s.settimeout(0.5)
    try:
        # Refused in the middle of its body: a 503, or the connection
        # closed (libmicrohttpd may not send an answer before the body).
        got = s.recv(200)
        if got and b" 503 " not in got.split(b"\r\n")[0]:
            raise SystemExit("unexpected: %r" % got[:60])
        refused += 1
    except socket.timeout:
        held.append(s)
assert len(held) == 16 and refused == 8, (len(held), refused)
for s in held:
    s.sendall(b"y" * 10)                    # they end: all published
    s.settimeout(5)
    assert s.recv(200).startswith(b"HTTP/1.1 200"), "not published"
PYEOF
	assert_equal "$(count_log t)" 16
	run api POST /v1/topics/t/messages -d after
	status_is 200
}
