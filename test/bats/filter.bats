#!/usr/bin/env bats
# Filters: a group's stored filter (jq over the JSON body, header globs)
# decides which messages enter its queue: at publish time in format 1, as
# the group is fed in format 2 (queued in helper.bash reads both); mq-sub
# --filter and --match filter at consume time.

load helper

# hog_limits TOOL: for a filter that allocates without end, asan (1 when
# TOOL runs under ASan, whose allocator the memory bound does not stop)
# and limit, the MQ_FILTER_TIMEOUT: without ASan the memory bound is what
# stops it, and 30 s is far enough that a busy machine never reaches the
# timeout first; under ASan the 3 s timeout does.
hog_limits() {
	asan=0 limit=30
	if ldd "$MQ_BIN_DIR/$1" | grep -q libasan; then
		asan=1 limit=3
	fi
}

conf_value() { # FILE KEY
	sed -n "s/^$2=//p" "$1"
}

# pending TOPIC GROUP: the group's PENDING column of mq-topic info.
pending() {
	mq-topic info "$1" | awk -v g="$2" '$1 == g { print $3 }'
}

@test "a jq filter: only matching messages enter the group's queue" {
	mkgroup t even --group-filter '.n % 2 == 0'
	mkgroup t all
	local n
	for n in 1 2 3 4 5 6; do
		mq-pub -q t "{\"n\":$n}"
	done
	# Written to the log once, queued only where it matches.
	assert_equal "$(count_log t)" 6
	assert_equal "$(count_queued t even)" 3
	assert_equal "$(count_queued t all)" 6
	# mq-topic info counts what count_new does (format 2: the log past
	# the cursor, before the feed applies the filter).
	assert_equal "$(pending t even)" "$(count_new t even)"
	assert_equal "$(pending t all)" 6
	run --separate-stderr mq-sub -g even t
	assert_success
	assert_output $'{"n":2}\n{"n":4}\n{"n":6}'
	assert_equal "$(conf_value "$MQ_SPOOL/topics/t/groups/even.conf" filter)" \
	    '.n % 2 == 0'
}

@test "a filter matches when its first output is neither false nor null" {
	mkgroup t sel --group-filter '.tags[]? | select(. == "x")'
	mkgroup t val --group-filter '.v'
	mq-pub -q -l t <<'EOF'
{"tags":["a","x","x"],"v":0}
{"tags":["a"],"v":false}
{"v":null}
{"tags":"no","v":"yes"}
EOF
	run mq-sub -g sel t
	assert_success
	# .tags[]? of a string is an error caught by ?: no output, no match.
	assert_output '{"tags":["a","x","x"],"v":0}'
	run mq-sub -g val t
	assert_success
	assert_output $'{"tags":["a","x","x"],"v":0}\n{"tags":"no","v":"yes"}'
}

@test "a jq run-time error is no match, and the publish goes on" {
	mkgroup t g --group-filter '.a.b == 1'
	mq-pub -q -l t <<'EOF'
[1,2]
{"a":{"b":1}}
"text"
EOF
	assert_equal "$(count_log t)" 3
	run mq-sub -g g t
	assert_success
	assert_output '{"a":{"b":1}}'
}

@test "two groups with different filters on one topic" {
	mkgroup t red --group-filter '.color == "red"'
	mkgroup t big --group-filter '.size > 10'
	mq-pub -q -l t <<'EOF'
{"color":"red","size":1}
{"color":"blue","size":20}
{"color":"red","size":30}
{"color":"green","size":2}
EOF
	assert_equal "$(count_queued t red)" 2
	assert_equal "$(count_queued t big)" 2
	run mq-sub -g red t
	assert_output $'{"color":"red","size":1}\n{"color":"red","size":30}'
	run mq-sub -g big t
	assert_output $'{"color":"blue","size":20}\n{"color":"red","size":30}'
	run mq-topic info t
	assert_output --partial 'MESSAGES'
	assert_equal "$(pending t red)" 0
}

@test "header conditions: globs, all must hold, names without case, Key" {
	mkgroup t eu --group-match 'Region=eu-*' --group-match 'Kind=order'
	mkgroup t keyed --group-match 'Key=user-?'
	mq-pub -q -H 'Region: eu-west' -H 'Kind: order' t a
	mq-pub -q -H 'region: eu-north' -H 'KIND: order' -k user-1 t b
	mq-pub -q -H 'Region: us-east' -H 'Kind: order' -k user-22 t c
	mq-pub -q -H 'Region: eu-west' t d
	mq-pub -q -k user-3 t e
	run mq-sub -g eu t
	assert_output $'a\nb'
	run mq-sub -g keyed t
	assert_output $'b\ne'
	assert_equal "$(conf_value "$MQ_SPOOL/topics/t/groups/eu.conf" match)" \
	    $'Region=eu-*\nKind=order'
}

@test "header conditions work on any body; a jq filter never matches a non-JSON body" {
	mkgroup t hdr --group-match 'Type=t*'
	mkgroup t jq --group-filter 'true'
	mkgroup t both --group-match 'Type=text' --group-filter '. != null'
	mq-pub -q -H 'Type: text' t 'plain words'
	mq-pub -q -H 'Type: text' t ''
	mq-pub -q -H 'Type: text' t '{"ok":1} {"two":2}'
	mq-pub -q -H 'Type: text' t '{"ok":1}'
	assert_equal "$(count_log t)" 4
	assert_equal "$(count_queued t hdr)" 4
	assert_equal "$(count_queued t jq)" 1
	assert_equal "$(count_queued t both)" 1
	run mq-sub -g jq t
	assert_output '{"ok":1}'
	run mq-sub -g both t
	assert_output '{"ok":1}'
}

@test "a bad jq expression is refused at subscribe with jq's message, nothing made" {
	mq-pub -q t x
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-sub -g g --group-filter '.n | ][' t
	assert_equal "$status" 64
	assert_output ""
	assert_one_line_error mq-sub
	assert_equal "$stderr" "mq-sub: bad filter: jq: error: syntax error, unexpected INVALID_CHARACTER (Unix shell quoting issues?) at <top-level>, line 1"
	run --separate-stderr mq-sub -g g --group-filter 'nosuchfn' t2
	assert_equal "$status" 64
	assert_one_line_error mq-sub
	assert_equal "$stderr" "mq-sub: bad filter: jq: error: nosuchfn/0 is not defined at <top-level>, line 1"
	# Modules are not available.
	run --separate-stderr mq-sub -g g --group-filter 'import "m" as m; .' t
	assert_equal "$status" 64
	assert_one_line_error mq-sub
	# An ad hoc filter is checked the same way, before anything is made.
	run --separate-stderr mq-sub -g h --filter '.a |' t3
	assert_equal "$status" 64
	assert_one_line_error mq-sub
	[[ $stderr == *"syntax error"* ]]
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "bad header conditions are refused, nothing made" {
	mq-pub -q t x
	local snap bad
	snap=$(spool_snapshot)
	for bad in 'NoEquals' '=glob' 'Seq=1' 'Message-Id=*' 'Bad Name=x' \
	    'a:b=x'; do
		run --separate-stderr mq-sub -g g --group-match "$bad" t
		assert_equal "$status" 64
		assert_one_line_error mq-sub
		[[ $stderr == *"bad header condition"* ]] || fail "$bad: $stderr"
		run --separate-stderr mq-sub -g g --match "$bad" t
		assert_equal "$status" 64
		assert_one_line_error mq-sub
	done
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "a filter with a newline and a backslash round-trips through the conf" {
	local f=$'.s == "a\\\\b" # a comment\nor .n == 1'
	mkgroup t g --group-filter "$f"
	local c=$MQ_SPOOL/topics/t/groups/g.conf
	# One line in the conf, escaped.
	assert_equal "$(grep -c '^filter=' "$c")" 1
	assert_equal "$(conf_value "$c" filter)" '.s == "a\\\\b" # a comment\nor .n == 1'
	mq-pub -q -l t <<'EOF'
{"s":"a\\b"}
{"s":"ab"}
{"n":1}
EOF
	run mq-sub -g g t
	assert_success
	assert_output $'{"s":"a\\\\b"}\n{"n":1}'
}

@test "--from-start backfill applies the group's filter" {
	mq-pub -q -l t <<'EOF'
{"n":1}
{"n":2}
not json
{"n":4}
EOF
	mq-pub -q -H 'Tag: yes' t '{"n":5}'
	# Old messages reach the group only through the backfill.
	run --separate-stderr mq-sub --from-start -g g --group-filter '.n > 1' t
	assert_success
	assert_output $'{"n":2}\n{"n":4}\n{"n":5}'
	assert_equal "$(conf_value "$MQ_SPOOL/topics/t/groups/g.conf" state)" ready
	run mq-sub --from-start -g h --group-match 'Tag=y*' --manual -F '%o\n' t
	assert_success
	assert_output 4
	# Then the publisher applies the same filter.
	mq-pub -q t '{"n":0}' '{"n":9}'
	run mq-sub -g g t
	assert_output '{"n":9}'
	assert_equal "$(count_queued t h)" 0
}

@test "mq-sub --filter: non-matching messages are acked unseen, not left for others" {
	mkgroup t g
	mkgroup t other
	mq-pub -q -l t <<'EOF'
{"n":1}
{"n":2}
junk
{"n":3}
EOF
	run --separate-stderr mq-sub -g g --filter '.n >= 2' t
	assert_success
	assert_equal "$stderr" ""
	assert_output $'{"n":2}\n{"n":3}'
	# All four were consumed from g; the other group is untouched.
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
	assert_equal "$(count_new t other)" 4
	run mq-sub -g g t
	assert_equal "$status" 1
	# Nothing matching: exit 1 (nothing delivered), and the messages are gone.
	mq-pub -q t '{"n":0}'
	run mq-sub -g g --filter '.n > 0' t
	assert_equal "$status" 1
	assert_output ""
	assert_equal "$(count_new t g)" 0
}

@test "mq-sub --match, -n counts delivered messages only, --exec sees only matches" {
	mkgroup t g
	local n
	for n in 1 2 3 4 5 6; do
		mq-pub -q -H "Parity: $((n % 2))" t "m$n"
	done
	run mq-sub -g g --match 'Parity=0' -n 2 t
	assert_success
	assert_output $'m2\nm4'
	# m1 and m3 were acked unseen on the way; m5 and m6 are left.
	assert_equal "$(count_new t g)" 2
	run mq-sub -g g --match 'Parity=1' --exec 'cat; echo " ran"' t
	assert_success
	assert_output 'm5 ran'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
}

@test "mq-sub --filter with -t waits for a matching message" {
	mkgroup t g
	spawn "$TD/out" mq-sub -g g --filter '.ok' -t 10 t
	local pid=$SPAWNED
	wait_for sleeping "$pid"
	mq-pub -q t '{"ok":false}'
	# Evaluated at each try (a $(...) argument would be read once).
	wait_for group_empty t g
	run exited "$pid"
	assert_failure
	mq-pub -q t '{"ok":true}'
	wait_for exited "$pid"
	assert_equal "$(cat "$TD/out")" '{"ok":true}'
}

@test "--group-filter only applies when the group is created" {
	mkgroup t g
	mkgroup t g --group-filter '.n == 1'
	[[ -z $(conf_value "$MQ_SPOOL/topics/t/groups/g.conf" filter) ]]
	mq-pub -q t '{"n":2}'
	assert_equal "$(count_new t g)" 1
}

@test "a filtered group with several partitions and delayed messages" {
	mq-topic create --partitions 3 t
	mkgroup t g --group-filter '.keep'
	local n
	for n in 1 2 3 4 5 6; do
		mq-pub -q t "{\"keep\":$([[ $((n % 3)) == 0 ]] && echo true || echo false),\"n\":$n}"
	done
	mq-pub -q --delay 1h t '{"keep":true,"n":7}' '{"keep":false,"n":8}'
	local total=0 k
	for k in 0 1 2; do
		total=$((total + $(count_queued t g "$k")))
	done
	assert_equal "$total" 2
	run mq-sub -g g t
	assert_output --partial '"n":3'
	assert_output --partial '"n":6'
	local delayed
	delayed=$(find "$MQ_SPOOL"/topics/t/p*/g/g/delay -mindepth 1 | wc -l)
	assert_equal "$delayed" 1
}

@test "one publish of many chunks: each message is judged once per group" {
	mkgroup t even --group-filter '. % 2 == 0'
	mkgroup t all
	seq 1 9000 | mq-pub -q -l t
	assert_equal "$(count_queued t even)" 4500
	assert_equal "$(count_queued t all)" 9000
	local key f
	key=$(queued t even | tail -n 1)
	[[ $key == 00000000000000008999.* ]] || fail "last queued: $key"
	f=$(log_file t "$key")
	assert_equal "$(body_of "$f")" 9000
}

@test "a stored filter that no longer compiles stops the publish (78), nothing stored" {
	# Format 1, whose publisher runs the filters; format 2: the next test.
	mq-topic create --format 1 t
	mkgroup t g --group-filter '.n'
	mkgroup t other
	local c=$MQ_SPOOL/topics/t/groups/g.conf
	sed -i 's/^filter=.*/filter=.n | ][/' "$c"
	run --separate-stderr mq-pub t '{"n":1}'
	assert_equal "$status" 78
	assert_one_line_error mq-pub
	[[ $stderr == *"groups/g.conf: filter: bad filter: jq: error: syntax error"* ]] ||
	    fail "$stderr"
	assert_equal "$(count_log t)" 0
	assert_equal "$(count_new t other)" 0
	assert_equal "$(head_field t committed)" 0
}

@test "format 2: a stored filter that no longer compiles stops its group's feed (78), not the publish nor the other groups" {
	mq-topic create --format 2 t
	mkgroup t g --group-filter '.n'
	mkgroup t other
	sed -i 's/^filter=.*/filter=.n | ][/' "$MQ_SPOOL/topics/t/groups/g.conf"
	run -0 mq-pub -q t '{"n":1}'
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 78
	assert_one_line_error mq-sub
	[[ $stderr == *"g: filter: bad filter: jq: error: syntax error"* ]] || fail "$stderr"
	assert_equal "$(cursor_of t g)" 0
	assert_equal "$(count_new t g)" 1
	run -0 mq-sub -g other t
	assert_output '{"n":1}'
}

@test "many groups' filters run as one program, each keeping its own meaning" {
	mkgroup t comment --group-filter $'.n > 1 # a comment )]'
	mkgroup t defs --group-filter 'def big: .n > 2; big'
	mkgroup t none --group-filter 'empty'
	mkgroup t fails --group-filter 'error("no")'
	# halt would end the program of every group's filter: refused now, and
	# a conf from before that holds it is never run (hostile_filter.bats).
	mkgroup t halts --group-filter 'true'
	sed -i 's/^filter=.*/filter=halt/' "$MQ_SPOOL/topics/t/groups/halts.conf"
	mkgroup t two --group-filter '.n == 2, true'
	mkgroup t hdr --group-filter '.n >= 1' --group-match 'Region=eu*'
	local n
	for n in 1 2 3; do
		mq-pub -q -H 'Region: eu-west' t "{\"n\":$n}"
	done
	mq-pub -q t 'not json'
	assert_equal "$(count_queued t comment)" 2
	assert_equal "$(count_queued t defs)" 1
	assert_equal "$(count_queued t none)" 0
	assert_equal "$(count_queued t fails)" 0
	assert_equal "$(count_queued t halts)" 0
	assert_equal "$(count_queued t two)" 1
	assert_equal "$(count_queued t hdr)" 3
}

# A filter is code from whoever may write a group's conf (a co-user, a
# peer), run by every publisher while it holds the partition lock: its
# time and memory are bounded (lib/jqrun.c).

@test "a group filter that never ends is stopped after MQ_FILTER_TIMEOUT: the message is published, it only misses that group" {
	# Format 1, whose publisher runs the filters; format 2: the next test.
	mq-topic create --format 1 t
	mkgroup t loops --group-filter 'def f: f; f'
	mkgroup t even --group-filter '.n % 2 == 0'
	mkgroup t all
	local t0=$SECONDS
	MQ_FILTER_TIMEOUT=0.5 run --separate-stderr timeout 60 mq-pub -q -l t \
	    < <(printf '{"n":1}\n{"n":2}\n')
	assert_success
	((SECONDS - t0 < 30)) || fail "took $((SECONDS - t0)) s"
	assert_one_line_error mq-pub
	[[ $stderr == *"groups/loops.conf: filter: ran past its 0.5 s (MQ_FILTER_TIMEOUT); a message it cannot judge does not match" ]] ||
	    fail "$stderr"
	assert_equal "$(count_log t)" 2
	assert_equal "$(count_new t all)" 2
	assert_equal "$(count_new t even)" 1
	assert_equal "$(count_new t loops)" 0
	assert_equal "$(head_field t committed)" 2
}

@test "format 2: a group filter that never ends is stopped after MQ_FILTER_TIMEOUT as the group is fed: the message only misses that group" {
	mq-topic create --format 2 t
	mkgroup t loops --group-filter 'def f: f; f'
	mkgroup t even --group-filter '.n % 2 == 0'
	mkgroup t all
	run -0 mq-pub -q -l t < <(printf '{"n":1}\n{"n":2}\n')
	local t0=$SECONDS
	MQ_FILTER_TIMEOUT=0.5 run --separate-stderr timeout 60 mq-sub -g loops t
	assert_equal "$status" 1
	((SECONDS - t0 < 30)) || fail "took $((SECONDS - t0)) s"
	assert_one_line_error mq-sub
	[[ $stderr == *"loops: filter: ran past its 0.5 s (MQ_FILTER_TIMEOUT); a message it cannot judge does not match" ]] ||
	    fail "$stderr"
	group_empty t loops
	assert_equal "$(cursor_of t loops)" 2
	run -0 mq-sub -g even t
	assert_output '{"n":2}'
	run -0 mq-sub -g all t
	assert_output $'{"n":1}\n{"n":2}'
}

@test "a group filter that allocates without end dies at MQ_FILTER_MEMORY (under ASan, which reserves terabytes, at MQ_FILTER_TIMEOUT)" {
	# Format 1, whose publisher runs the filters.
	mq-topic create --format 1 t
	mkgroup t hog --group-filter '[range(1e12)] | length > 0'
	mkgroup t all
	local asan limit
	hog_limits mq-pub
	MQ_FILTER_TIMEOUT=$limit MQ_FILTER_MEMORY=64M run --separate-stderr \
	    timeout 90 mq-pub -q t '{"n":1}'
	assert_success
	assert_one_line_error mq-pub
	if ((asan)); then
		[[ $stderr == *"hog.conf: filter: ran past its 3 s"* ]] || fail "$stderr"
	else
		[[ $stderr == *"hog.conf: filter: jq died of "*"MQ_FILTER_MEMORY"* ]] ||
		    fail "$stderr"
	fi
	assert_equal "$(count_new t all)" 1
	assert_equal "$(count_new t hog)" 0
}

@test "format 2: a group filter that allocates without end dies at MQ_FILTER_MEMORY as the group is fed (under ASan at MQ_FILTER_TIMEOUT): the message only misses that group" {
	mq-topic create --format 2 t
	mkgroup t hog --group-filter '[range(1e12)] | length > 0'
	mkgroup t all
	run -0 mq-pub -q t '{"n":1}'
	local asan limit
	hog_limits mq-sub
	MQ_FILTER_TIMEOUT=$limit MQ_FILTER_MEMORY=64M run --separate-stderr \
	    timeout 90 mq-sub -g hog t
	assert_equal "$status" 1
	assert_one_line_error mq-sub
	if ((asan)); then
		[[ $stderr == *"hog: filter: ran past its 3 s"* ]] || fail "$stderr"
	else
		[[ $stderr == *"hog: filter: jq died of "*"MQ_FILTER_MEMORY"* ]] ||
		    fail "$stderr"
	fi
	group_empty t hog
	run -0 mq-sub -g all t
	assert_output '{"n":1}'
}

@test "a filter's worker dies with a publisher killed while it runs, and the partition lock is free" {
	# Format 1, whose publisher runs the filters.
	mq-topic create --format 1 t
	mkgroup t loops --group-filter 'def f: f; f'
	MQ_FILTER_TIMEOUT=120 mq-pub -q t '{"n":1}' 2>/dev/null &
	local pub=$! worker= i
	for ((i = 0; i < 100 && !worker; i++)); do
		worker=$(pgrep -P "$pub" || true)
		[[ $worker ]] || sleep 0.1
	done
	[[ $worker ]] || fail "no worker under mq-pub $pub"
	kill -9 "$pub"
	wait "$pub" || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$worker" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$worker" 2>/dev/null && fail "worker $worker outlived mq-pub"
	# The dead publisher's chunk is undone; the next one commits.
	MQ_FILTER_TIMEOUT=0.2 run --separate-stderr timeout 60 mq-pub -q t '{"n":2}'
	assert_success
	assert_equal "$(head_field t committed)" 1
	assert_equal "$(count_log t)" 1
}

# worker_of PID: the pid of PID's child, a filter's worker (fails while
# there is none).
worker_of() {
	WORKER=$(pgrep -P "$1" || true)
	[[ -n $WORKER ]]
}

@test "format 2: a filter's worker dies with a consumer killed while it feeds the group, and the group's cursor lock is free" {
	mq-topic create --format 2 t
	mkgroup t loops --group-filter 'def f: f; f'
	run -0 mq-pub -q t '{"n":1}'
	spawn "$TD/sub" env MQ_FILTER_TIMEOUT=120 mq-sub -g loops t
	local sub=$SPAWNED
	# env execs mq-sub: the spawned pid is the consumer's.
	wait_for worker_of "$sub"
	local worker=$WORKER
	kill -9 "$sub"
	wait_for exited "$worker" || fail "worker $worker outlived mq-sub"
	# The dead consumer's feed is undone; the next one feeds.
	assert_equal "$(cursor_of t loops)" 0
	MQ_FILTER_TIMEOUT=0.2 run --separate-stderr timeout 60 mq-sub -g loops t
	assert_equal "$status" 1
	assert_equal "$(cursor_of t loops)" 1
	group_empty t loops
}

@test "mq-sub --filter that never ends on one message is stopped there; the others are judged" {
	mq-topic create t
	local n
	for n in 1 2 3 4 5; do
		mq-pub -q t "{\"n\":$n}"
	done
	MQ_FILTER_TIMEOUT=0.3 run --separate-stderr timeout 60 mq-sub -g c \
	    --from-start -n 10 -t 0 \
	    --filter 'if .n == 3 then (def f: f; f) else .n != 4 end' t
	assert_success
	assert_output $'{"n":1}\n{"n":2}\n{"n":5}'
	[[ $stderr == *"--filter: filter: ran past its 0.3 s"* ]] || fail "$stderr"
	# Unmatched messages are acked: nothing is left for the group.
	assert_equal "$(count_new t c)" 0
	assert_equal "$(count_cur t c)" 0
}
