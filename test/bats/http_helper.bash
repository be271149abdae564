# http_helper.bash: an mq-http daemon on a free loopback port, tokens
# for it (HS256 with a secret of the test's own, minted with python3-jwt),
# and curl against it.

load helper

# free_port: a TCP port on 127.0.0.1 no one listens on now.
free_port() {
	"$PY" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# http_start [OPTION...]: mq-http on 127.0.0.1:$PORT with the test's
# secret and OPTIONs; HTTPD is its pid, URL its base.  Waits until it
# answers /healthz.  A port taken between free_port and the daemon's
# bind (a client's ephemeral port) is given up for another.
http_start() {
	local try
	[[ -f $TD/secret ]] || head -c 32 /dev/urandom >"$TD/secret"
	for try in 1 2 3; do
		PORT=$(free_port)
		URL=${URL_SCHEME:-http}://127.0.0.1:$PORT
		spawn "$TD/httpd" mq-http -l "127.0.0.1:$PORT" --jwt-secret "$TD/secret" "$@"
		HTTPD=$SPAWNED
		wait_for healthy_or_gone
		healthy && return 0
		grep -q 'Address already in use' "$TD/httpd.err" || break
	done
	fail "mq-http did not start: $(cat "$TD/httpd.err")"
}

healthy() {
	curl -sf ${CURL_TLS:-} "$URL/healthz" >/dev/null
}

healthy_or_gone() {
	healthy || exited "$HTTPD"
}

# token SCOPE [CLAIMS-JSON]: an HS256 token for SCOPE, valid 10 minutes,
# with the claims of CLAIMS-JSON over those (exp: null drops exp).
token() {
	"$PY" - "$TD/secret" "$1" "${2:-{\}}" <<'PYEOF'
import json, sys, time, jwt
secret = open(sys.argv[1], 'rb').read()
claims = {"sub": "tester", "scope": sys.argv[2], "exp": int(time.time()) + 600}
claims.update(json.loads(sys.argv[3]))
claims = {k: v for k, v in claims.items() if v is not None}
print(jwt.encode(claims, secret, algorithm="HS256"))
PYEOF
}

# api METHOD PATH [CURL-ARG...]: curl with $TOKEN; output is the body and,
# on a last line, the status.
api() {
	local method=$1 path=$2
	shift 2
	curl -s ${CURL_TLS:-} -X "$method" -w '\n%{http_code}' \
	    ${TOKEN:+-H "Authorization: Bearer $TOKEN"} "$@" "$URL$path"
}

# status_is CODE: the last line of $output is CODE; BODY is the rest.
status_is() {
	local got=${output##*$'\n'}
	BODY=${output%$'\n'*}
	[[ $got == "$1" ]] || fail "status $got, not $1: $BODY"
}
