#!/usr/bin/env bats
# A hostile group filter (issue 26, 4 and 5): a filter is code from whoever
# may make a group (a consumer's token over HTTP, a co-user, a peer), run
# by every publisher.  What reads files, the environment or other input is
# refused when the group is made; a filter accepted runs as it was checked;
# one found on disk that would be refused is never run; nothing is compiled
# outside the bounded worker, which sees nothing of the publisher.

load http_helper
load replicate_helper

conf_of() { # TOPIC GROUP [SPOOL]
	echo "${3:-$MQ_SPOOL}/topics/$1/groups/$2.conf"
}

# plant CONF FILTER: the conf's filter as no tool would write it now.
plant() {
	local esc=${2//\\/\\\\}
	esc=${esc//|/\\|}
	esc=${esc//&/\\&}
	sed -i "s|^filter=.*|filter=$esc|" "$1"
	grep -qxF "filter=$2" "$1" || fail "not planted: $(cat "$1")"
}

# fifo_modules: a search directory whose modules are FIFOs (opening one
# blocks until a writer comes, which none does); IMPORT imports from it.
fifo_modules() {
	mkdir -p "$TD/mods"
	mkfifo "$TD/mods/x.json" "$TD/mods/x.jq"
	IMPORT="import \"x\" as \$x {search: \"$TD/mods\"}; ."
}

@test "a filter with a top-level import of a FIFO is refused by mq-sub --group-filter, mq-group create --filter and HTTP PUT (64, 400), nothing made; publishing goes on" {
	fifo_modules
	mkgroup t all
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr timeout 20 mq-sub -g evil --group-filter "$IMPORT" t
	assert_equal "$status" 64
	assert_one_line_error mq-sub
	assert_equal "$stderr" "mq-sub: bad filter: import at line 1: a filter may not load modules, which are files"
	run --separate-stderr timeout 20 mq-group create --filter "$IMPORT" t evil
	assert_equal "$status" 64
	assert_one_line_error mq-group
	[[ $stderr == *"bad filter: import at line 1"* ]] || fail "$stderr"
	# include, and a module's function, the same.
	run --separate-stderr timeout 20 mq-group create \
	    --filter "include \"x\" {search: \"$TD/mods\"}; ." t evil
	assert_equal "$status" 64
	run --separate-stderr timeout 20 mq-group create --filter 'x::f' t evil
	assert_equal "$status" 64
	[[ $stderr == *"bad filter: x::f at line 1: a filter may not call into modules"* ]] ||
	    fail "$stderr"
	assert_equal "$(spool_snapshot)" "$snap"
	http_start
	TOKEN=$(token 'consume:t/evil') run api PUT /v1/topics/t/groups/evil \
	    --max-time 20 -d "$(jq -nc --arg f "$IMPORT" '{filter: $f}')"
	status_is 400
	[[ $(jq -r .error <<<"$BODY") == "bad filter: import at line 1"* ]] || fail "$BODY"
	[[ ! -e $(conf_of t evil) ]] || fail "the group was made"
	run timeout 20 mq-pub -q t one
	assert_success
	assert_equal "$(count_new t all)" 1
}

@test "a group.conf planted with an import of a FIFO neither hangs nor stops a publisher: that group gets nothing, said once, the others their messages" {
	fifo_modules
	# Format 1, whose publisher runs the filters; format 2's feed: the
	# format-2 test below.
	mq-topic create --format 1 t
	mkgroup t all
	mkgroup t even --group-filter '.n % 2 == 0'
	mkgroup t evil --group-filter 'true'
	plant "$(conf_of t evil)" "$IMPORT"
	run --separate-stderr timeout 20 mq-pub -q -l t < <(printf '{"n":1}\n{"n":2}\n')
	assert_success
	assert_one_line_error mq-pub
	[[ $stderr == *"groups/evil.conf: filter: bad filter: import at line 1: a filter may not load modules, which are files; it is not run and the group gets no message" ]] ||
	    fail "$stderr"
	assert_equal "$(count_log t)" 2
	assert_equal "$(count_new t all)" 2
	assert_equal "$(count_new t even)" 1
	assert_equal "$(count_new t evil)" 0
	# mq-http's publisher too.
	http_start
	TOKEN=$(token 'publish:t') run api POST /v1/topics/t/messages \
	    --max-time 20 -d '{"n":4}'
	status_is 200
	assert_equal "$(count_new t even)" 2
	assert_equal "$(count_new t evil)" 0
}

@test "a filter that closes the brackets it is set in, to reach the other groups' filters, is refused; planted, it is not run" {
	local f='.n) catch null] | .[0]), ([try (true'
	run --separate-stderr mq-sub -g evil --group-filter "$f" t
	assert_equal "$status" 64
	assert_one_line_error mq-sub
	assert_equal "$stderr" "mq-sub: bad filter: ')' at line 1 closes what it did not open"
	# Format 1, whose publisher runs the filters; format 2's feed: the
	# format-2 test below.
	mq-topic create --format 1 t
	mkgroup t even --group-filter '.n % 2 == 0'
	mkgroup t evil --group-filter 'true'
	plant "$(conf_of t evil)" "$f"
	run --separate-stderr timeout 20 mq-pub -q t '{"n":1}' '{"n":2}'
	assert_success
	[[ $stderr == *"evil.conf: filter: bad filter: ')' at line 1 closes what it did not open; it is not run"* ]] ||
	    fail "$stderr"
	assert_equal "$(count_new t even)" 1
	assert_equal "$(count_new t evil)" 0
}

@test "\$ENV, env and what reads input, writes or looks at the process are refused at subscribe (64), for --filter too; fields and keys of those names are not calls" {
	local f
	for f in '$ENV.SECRET' 'env.SECRET' '$ ENV | length > 0' '"\(env)" != ""' \
	    'input' '[inputs]' 'input_filename' 'input_line_number' 'debug' \
	    'stderr' '"x" | modulemeta' 'get_search_list' 'get_prog_origin' \
	    'get_jq_origin' '$__loc__' 'halt' '"x" | halt_error' \
	    'def env: 1; env' '{a: (env)}'; do
		run --separate-stderr mq-sub -g g --group-filter "$f" t
		assert_equal "$status" 64
		assert_one_line_error mq-sub
		[[ $stderr == "mq-sub: bad filter: "*" at line 1: a filter may not "* ]] ||
		    fail "$f: $stderr"
		run --separate-stderr mq-sub -g g --filter "$f" t
		assert_equal "$status" 64
	done
	[[ ! -e $MQ_SPOOL/topics/t ]] || fail "the topic was made"
	mkgroup t keys --group-filter '{env: .a, input, debug: 1} |
	    .env == .input and .env != null and .debug == 1'
	mkgroup t fields --group-filter '.env.input or ."debug" or (. as $env | $env.stderr)'
	mq-pub -q t '{"a":1,"input":1}' '{"env":{"input":true}}' '{"b":1}'
	assert_equal "$(count_queued t keys)" 1
	assert_equal "$(count_queued t fields)" 1
}

@test "with a secret in the publisher's environment no filter sees it: planted \$ENV and env filters get nothing, and the zone a filter may read is not the publisher's TZ" {
	# Format 1, whose publisher runs the filters; format 2's feed: the
	# format-2 test below.
	mq-topic create --format 1 t
	mkgroup t all
	mkgroup t envvar --group-filter 'true'
	mkgroup t envfn --group-filter 'true'
	mkgroup t zone --group-filter '0 | strflocaltime("%Z") == "SECRET"'
	plant "$(conf_of t envvar)" 'select($ENV.SECRET != null)'
	plant "$(conf_of t envfn)" 'env.SECRET != null'
	SECRET=s3cr3t TZ=SECRET-3 run --separate-stderr timeout 20 mq-pub -q t '{"n":1}'
	assert_success
	assert_equal "${#stderr_lines[@]}" 2
	[[ $stderr == *"envvar.conf: filter: bad filter: \$ENV at line 1"* ]] || fail "$stderr"
	[[ $stderr == *"envfn.conf: filter: bad filter: env at line 1"* ]] || fail "$stderr"
	assert_equal "$(count_new t all)" 1
	assert_equal "$(count_new t envvar)" 0
	assert_equal "$(count_new t envfn)" 0
	assert_equal "$(count_new t zone)" 0
	# A consumer's own filter runs in an empty environment as well.
	SECRET=s3cr3t TZ=SECRET-3 run --separate-stderr mq-sub -g all \
	    --filter '0 | strflocaltime("%Z") != "SECRET"' -n 1 t
	assert_success
	assert_output '{"n":1}'
}

@test "format 2: planted filters that would be refused (a FIFO import, brackets closed, \$ENV) are never run by the feed: their groups get nothing, their consumer says so once, without hanging; the others get their messages, and the zone a filter may read is not the consumer's TZ" {
	fifo_modules
	mq-topic create --format 2 t
	mkgroup t all
	mkgroup t even --group-filter '.n % 2 == 0'
	local g
	for g in fifo brackets envvar; do
		mkgroup t $g --group-filter 'true'
	done
	plant "$(conf_of t fifo)" "$IMPORT"
	plant "$(conf_of t brackets)" '.n) catch null] | .[0]), ([try (true'
	plant "$(conf_of t envvar)" 'select($ENV.SECRET != null)'
	mkgroup t zone --group-filter '0 | strflocaltime("%Z") == "SECRET"'
	run -0 timeout 20 mq-pub -q -l t < <(printf '{"n":1}\n{"n":2}\n')
	SECRET=s3cr3t run --separate-stderr timeout 20 mq-sub -g fifo t
	assert_equal "$status" 1
	assert_one_line_error mq-sub
	[[ $stderr == *"fifo: filter: bad filter: import at line 1: a filter may not load modules, which are files; it is not run and the group gets no message" ]] ||
	    fail "$stderr"
	SECRET=s3cr3t run --separate-stderr timeout 20 mq-sub -g brackets t
	assert_equal "$status" 1
	assert_one_line_error mq-sub
	[[ $stderr == *"brackets: filter: bad filter: ')' at line 1 closes what it did not open; it is not run"* ]] ||
	    fail "$stderr"
	SECRET=s3cr3t run --separate-stderr timeout 20 mq-sub -g envvar t
	assert_equal "$status" 1
	assert_one_line_error mq-sub
	[[ $stderr == *"envvar: filter: bad filter: \$ENV at line 1"* ]] || fail "$stderr"
	SECRET=s3cr3t TZ=SECRET-3 run --separate-stderr timeout 20 mq-sub -g zone t
	assert_equal "$status" 1
	assert_equal "$stderr" ''
	for g in fifo brackets envvar zone; do
		group_empty t $g
	done
	run -0 mq-sub -g even t
	assert_output '{"n":2}'
	run -0 mq-sub -g all t
	assert_output $'{"n":1}\n{"n":2}'
}

@test "hostile peer: a group filter that would import a FIFO is refused on receipt (76), without waiting on it; the replica goes on publishing" {
	fifo_modules
	pair
	mq-sub -g g -t 0 t || [[ $? == 1 ]]
	mq-sub -g h -t 0 --group-filter '.a == 1' t || [[ $? == 1 ]]
	echo x | mq-pub -q t
	plant "$(conf_of t h "$A")" "$IMPORT"
	run --separate-stderr timeout 20 mq-replicate -s "$A" push --rsh env \
	    --remote-spool "$B"
	assert_equal "$status" 76
	assert_one_line_error mq-replicate
	[[ $stderr == *"groups/h.conf: filter: bad filter: import at line 1"* ]] ||
	    fail "$stderr"
	[[ ! -e $(conf_of t h "$B") ]] || fail "the group was adopted"
	run -0 timeout 20 mq-pub -s "$B" t y
}
