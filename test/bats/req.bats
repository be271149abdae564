#!/usr/bin/env bats
# mq-req and mq-sub --exec CMD --reply: request and reply (issue 17,
# items 1 and 2).

load helper

# serve [OPTIONS] CMD: a server for topic rpc, group srv, in the
# background for 20 s at most; SERVER is its pid.
serve() {
	spawn "$TD/server" mq-sub -g srv -f -t 20 --exec "${@: -1}" --reply \
	    "${@:1:$#-1}" rpc
	SERVER=$SPAWNED
}

setup_rpc() {
	mq-group create rpc srv
}

@test "a request gets its reply: the handler's output, exit 0; nothing is left behind" {
	setup_rpc
	serve 'tr a-z A-Z'
	run -0 mq-req rpc hello
	assert_output HELLO
	run -0 mq-req --json rpc 'a "quoted" one'
	assert_equal "$(jq -r '[.status, .body] | @tsv' <<<"$output")" "$(printf '0\tA "QUOTED" ONE')"
	[[ $(jq -r .in_reply_to <<<"$output") =~ ^[0-9a-f]{32}$ ]] || fail "$output"
	# The request from standard input, whole.
	run -0 mq-req rpc < <(printf 'two\nlines\n')
	assert_output "$(printf 'TWO\nLINES')"
	# No box is left, no topic made for the replies, every request acked.
	assert_equal "$(ls "$MQ_SPOOL/replies")" ""
	assert_equal "$(mq-topic list)" rpc
	assert_equal "$(mq-group info --json -t rpc srv | jq '.[0].total | .pending + .inflight + .dead')" 0
}

@test "headers go with the request; Reply-To and Correlation-Id are mq-req's" {
	setup_rpc
	serve 'printf "%s %s\n" "$MQ_ID" "$(cat)"'
	run -0 mq-req -H 'X-Trace: 42' -k user7 rpc ping
	[[ $output =~ ^[0-9a-f]{32}\ ping$ ]] || fail "$output"
	run --separate-stderr mq-req -H 'Reply-To: elsewhere' rpc ping
	assert_equal "$status" 64
	assert_one_line_error mq-req
	[[ $stderr == *"Reply-To is set by mq-req"* ]] || fail "$stderr"
}

@test "no reply within -t: exit 69, saying so; the late reply is dropped and counted, the request not run when its caller is gone" {
	setup_rpc
	run --separate-stderr mq-req -t 0.3 rpc lost
	assert_equal "$status" 69
	assert_one_line_error mq-req
	[[ $stderr == "mq-req: no reply to request "*" within 0.3 s" ]] || fail "$stderr"
	# The server comes later: the request's caller gave up.
	run --separate-stderr mq-sub -g srv -n 1 -t 2 --exec 'touch "$TD/ran"; cat' --reply rpc
	assert_success
	[[ $stderr == *"not run, counted late"* ]] || fail "$stderr"
	[[ ! -e $TD/ran ]] || fail "the handler ran for a request no one waits for"
	assert_equal "$(wc -l <"$MQ_SPOOL/replies/.late")" 1
	assert_equal "$(ls "$MQ_SPOOL/replies")" ""
	assert_equal "$(mq-topic list)" rpc
}

@test "a reply whose caller left while the handler ran is dropped and counted" {
	setup_rpc
	serve 'sleep 1; cat'
	run -69 mq-req -t 0.3 rpc slow
	wait_for -t 10 grep -q "is gone: its reply is late, dropped" "$TD/server.err"
	assert_equal "$(wc -l <"$MQ_SPOOL/replies/.late")" 1
	assert_equal "$(ls "$MQ_SPOOL/replies")" ""
}

@test "a failing handler replies its failure: exit 70 with the output; the request is dead-lettered, not run again; exit 75 is no reply" {
	setup_rpc
	serve 'echo "cannot: $(cat)"; exit 3'
	run --separate-stderr mq-req rpc x
	assert_equal "$status" 70
	assert_output "cannot: x"
	[[ $stderr == "mq-req: the handler of request "*" failed (exit 3)" ]] || fail "$stderr"
	run -0 mq-dlq -g srv list --json rpc
	assert_equal "$(jq -c '[length, .[0].attempts]' <<<"$output")" "[1,1]"
	run -70 mq-req --json rpc y
	assert_equal "$(jq -c '[.status, .body]' <<<"$output")" '[3,"cannot: y\n"]'
	kill "$SERVER"
	wait_for pgroup_gone "$SERVER"
	# A handler that asks for another try (75) answers nothing yet.
	serve 'exit 75'
	run -69 mq-req -t 1 rpc later
}

@test "a crashed caller's box is removed by a later caller once past its deadline" {
	setup_rpc
	mkdir -p "$MQ_SPOOL/replies/1000.0123456789abcdef0123456789abcdef" \
	    "$MQ_SPOOL/replies/99999999999999.0123456789abcdef0123456789abcdef"
	serve cat
	run -0 mq-req rpc x
	assert_equal "$(ls "$MQ_SPOOL/replies")" 99999999999999.0123456789abcdef0123456789abcdef
}

@test "a Reply-To that is no reply box is refused by the server, which touches no path from it" {
	setup_rpc
	mq-pub -H 'Reply-To: ../../escape' -H 'Correlation-Id: c1' rpc evil >/dev/null
	run --separate-stderr mq-sub -g srv -n 1 -t 2 --exec cat --reply rpc
	[[ $stderr == *"Reply-To '../../escape' is not a reply box"* ]] || fail "$stderr"
	[[ ! -e $MQ_SPOOL/../escape && ! -e $TD/escape ]]
}

@test "many callers at once, served by -j 3 workers: each gets its own reply, exactly" {
	setup_rpc
	serve -j 3 'tr a-z A-Z'
	local i pids=()
	for i in $(seq 1 40); do
		(mq-req -t 20 rpc "caller$i" >"$TD/out.$i" 2>"$TD/err.$i"; echo $? >"$TD/rc.$i") &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in $(seq 1 40); do
		assert_equal "$(cat "$TD/rc.$i")" 0
		assert_equal "$(cat "$TD/out.$i")" "CALLER$i"
	done
	assert_equal "$(ls "$MQ_SPOOL/replies")" ""
}

@test "mq-req: usage errors" {
	run -64 mq-req
	run -64 mq-req -t 0 rpc x
	run -64 mq-req rpc a b
	run --separate-stderr mq-req 'bad/topic' x
	assert_equal "$status" 64
	assert_one_line_error mq-req
	run -64 mq-sub -g srv --reply rpc
}

@test "a request whose box is gone (its caller is done: a delivery again after a crash) is not run again" {
	setup_rpc
	# A box with a deadline far ahead, removed: its caller had its reply.
	mq-pub -H 'Reply-To: 99999999999999.0123456789abcdef0123456789abcdef' \
	    -H 'Correlation-Id: c1' rpc again >/dev/null
	run --separate-stderr mq-sub -g srv -n 1 -t 2 --exec 'touch "$TD/ran"; cat' --reply rpc
	assert_success
	[[ $stderr == *"not run, counted late"* ]] || fail "$stderr"
	[[ ! -e $TD/ran ]] || fail "the handler ran again"
	assert_equal "$(wc -l <"$MQ_SPOOL/replies/.late")" 1
}

@test "an ordered group and an exactly-once group serve requests too, each key in its order" {
	mq-group create --ordered --exactly-once rpc srv
	serve -j 2 'tr a-z A-Z'
	local k
	for k in a b c; do
		run -0 mq-req -k "$k" rpc "key $k"
		assert_output "KEY ${k^^}"
	done
	assert_equal "$(ls "$MQ_SPOOL/topics/rpc/p0/g/srv/done" | wc -l)" 3
}

# runs: how many times the handler of the kept-reply tests ran.
runs() { [[ -e $TD/runs ]] && wc -l <"$TD/runs" || echo 0; }

@test "an exactly-once group keeps the reply to a request with -i KEY: a repeat gets the same reply, the handler not run again; another key runs" {
	mq-group create --exactly-once rpc srv
	serve 'echo run >>"$TD/runs"; echo "reply $(date +%s%N) to $(cat)"'
	local first
	run -0 mq-req -i K1 rpc hello
	[[ $output =~ ^reply\ [0-9]+\ to\ hello$ ]] || fail "$output"
	first=$output
	run -0 mq-req -i K1 rpc hello
	assert_output "$first"
	# Another body under the same key: the first's reply, and a warning.
	run --separate-stderr mq-req -i K1 rpc other
	assert_success
	assert_output "$first"
	[[ $stderr == "mq-req: warning: idempotency key K1 was used by request "*" with other content; its reply is the answer" ]] || fail "$stderr"
	assert_equal "$(runs)" 1
	run -0 mq-req -i K2 rpc hello
	[[ $output == "reply "*" to hello" && $output != "$first" ]] || fail "$output"
	assert_equal "$(runs)" 2
	# The kept reply is the ledger entry: the reply file, whole.
	local id
	id=$(mq-req -i K1 --json rpc hello | jq -r .in_reply_to)
	run cat "$MQ_SPOOL/topics/rpc/p0/g/srv/done/$id"
	assert_line --index 1 "In-Reply-To: $id"
	assert_line --index 2 "Mq-Reply-Status: 0"
	assert_line --index 3 "$first"
	assert_equal "$(runs)" 2
}

@test "a caller that timed out retries with the same -i KEY: the request was run once anyway, and the retry gets its kept reply" {
	mq-group create --exactly-once rpc srv
	run --separate-stderr mq-req -i retry-me -t 0.3 rpc work
	assert_equal "$status" 69
	# The server comes after the first caller gave up: a request whose
	# reply is kept is run all the same.
	serve 'echo run >>"$TD/runs"; echo "done $(cat)"'
	run -0 mq-req -i retry-me -t 5 rpc work
	assert_output "done work"
	assert_equal "$(runs)" 1
	assert_equal "$(wc -l <"$MQ_SPOOL/replies/.late")" 1
}

@test "a repeat of -i KEY where no exactly-once group keeps replies: 69 after -t, saying why; the handler ran once" {
	setup_rpc
	serve 'echo run >>"$TD/runs"; cat'
	run -0 mq-req -i K rpc one
	assert_output one
	run --separate-stderr mq-req -i K -t 0.5 rpc one
	assert_equal "$status" 69
	assert_one_line_error mq-req
	[[ $stderr == *"this call repeats its idempotency key; only exactly-once groups keep replies)" ]] || fail "$stderr"
	assert_equal "$(runs)" 1
}

@test "a failed request's reply is not kept: it is dead-lettered, and a repeat waits for it in vain (69)" {
	mq-group create --exactly-once rpc srv
	serve 'echo run >>"$TD/runs"; echo bad; exit 3'
	run --separate-stderr mq-req -i F rpc x
	assert_equal "$status" 70
	assert_output bad
	run --separate-stderr mq-req -i F -t 0.5 rpc x
	assert_equal "$status" 69
	assert_equal "$(runs)" 1
	assert_equal "$(find "$MQ_SPOOL/topics/rpc/p0/g/srv/done" -type f | wc -l)" 0
}

@test "mq-req -F prints the reply through a format of mq-sub(1); -F with --json is refused" {
	setup_rpc
	serve 'tr a-z A-Z'
	run -0 mq-req -F '%t|%i|%{Mq-Reply-Status}h|%S|%s' rpc abc
	[[ $output =~ ^rpc\|[0-9a-f]{32}\|0\|3\|ABC$ ]] || fail "$output"
	run -0 mq-req -F '%{In-Reply-To}h=%i\n' rpc x
	[[ $output =~ ^([0-9a-f]{32})=([0-9a-f]{32})$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] || fail "$output"
	run --separate-stderr mq-req -F '%s' --json rpc x
	assert_equal "$status" 64
	run --separate-stderr mq-req -F '%z' rpc x
	assert_equal "$status" 65
	assert_one_line_error mq-req
}
