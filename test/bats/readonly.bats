#!/usr/bin/env bats
# Read-only monitoring (issue 14, item 2): the commands that only look
# work for a real Unix user with read and search permission and nothing
# else, and leave the spool as it was, name for name, byte for byte and
# mode for mode; a read command never creates a spool.
#
# The user is made in setup_file and removed in teardown_file, so these
# tests need root: CI runs them as root, and they say why they skip
# anywhere else.  The spool is built once, as root, under a directory the
# user can reach (users_dir: bats' own temporary directories may be
# 0700), with the tools copied beside it for the same reason.

load helper
load users

setup_file() {
	[[ $(id -u) == 0 ]] || skip "needs root (useradd, and a second user)"
	export PATH="$MQ_BIN_DIR:$PATH"
	unset XDG_STATE_HOME MQ_POLL MQ_NOW MQ_SHARED_FS MQ_FORMAT
	# The spools' format, as helper.bash's setup gives a test's.
	[[ -z ${MQ_TEST_FORMAT:-} ]] || export MQ_FORMAT=$MQ_TEST_FORMAT
	RO_USER=mqro$$
	useradd -r -M -U -s /usr/sbin/nologin "$RO_USER"
	RO_DIR=$(users_dir mq-readonly)
	USERS_DIR=$RO_DIR
	mkdir -m 700 "$RO_DIR/out"
	chown "$RO_USER:" "$RO_DIR/out"
	# A reader rewrites nothing: its snapshots compare times too.
	export RO_USER RO_DIR USERS_DIR
	ro_spool "$RO_DIR/a" "$RO_DIR/b"
	# A spool that never replicated: status must not make replicate/.
	mq-topic -s "$RO_DIR/c" create t
	chmod -R a+rX,go-w "$RO_DIR/a" "$RO_DIR/b" "$RO_DIR/c"
}

teardown_file() {
	[[ -n ${RO_USER:-} ]] && userdel "$RO_USER" 2>/dev/null
	[[ -n ${RO_DIR:-} ]] && rm -rf "$RO_DIR"
	return 0
}

# ro_spool A B: in A, topic t (2 partitions) with groups g and h, and
# topic u without groups.  g (max-attempts 1): b and d dead-lettered, a
# and c acked, "later" delayed.  h: 3 pending, 1 in flight (an hour's
# lease), "later" delayed.  A pushed to B, then y published to u: B is a
# peer of A that lags one record.
ro_spool() {
	export MQ_SPOOL=$1
	mq-topic create --partitions 2 t
	mkgroup t h
	kill_two t g
	mq-sub -g h --manual --lease 1h -n 1 t >/dev/null
	mq-pub -q --delay 1h t later
	mq-pub -q u x
	mq-replicate -s "$1" push --rsh env --remote-spool "$2"
	mq-pub -q u y
}

setup() {
	export PATH="$MQ_BIN_DIR:$PATH"
	export HOME="$BATS_TEST_TMPDIR/home"
	unset XDG_STATE_HOME MQ_POLL MQ_NOW MQ_SHARED_FS
	TD="$BATS_TEST_TMPDIR"
	A=$RO_DIR/a S=$A
	export MQ_SPOOL=$A
}

# as_ro CMD...: CMD as the read-only user (its own group only, none of
# root's) on the spool $S, with the copied tools first on PATH.
as_ro() {
	as_user "$RO_USER" 022 "$@"
}

# ro_run [-STATUS] CMD...: run (stdout in $output, stderr apart) CMD as
# the read-only user, expecting STATUS (0), and fail unless A is unchanged.
ro_run() {
	local want=0 before
	if [[ $1 == -* ]]; then
		want=${1#-}
		shift
	fi
	before=$(snapshot "$A")
	run --separate-stderr as_ro "$@"
	if [[ $status != "$want" ]]; then
		fail "as $RO_USER: $* exited $status, not $want: $stderr"
	fi
	assert_equal "$(snapshot "$A")" "$before"
}

@test "the user reads but cannot write: the test's premise" {
	run as_ro test -w "$A/topics/t/p0/head"
	assert_failure
	run as_ro test -r "$A/topics/t/p0/head"
	assert_success
	run as_ro test -w "$A/topics/t/p0/g/g"
	assert_failure
}

# ro_counts: G and H, groups g's and h's pending, in flight, delayed and
# dead in A.  "later", published with a delay, is delayed in format 1; in
# format 2, where the counts come from the cursor and no feed has taken
# it yet, it counts as pending (mq-stat(1), COUNTS).
ro_counts() {
	if grep -qx 'format=2' "$A/topics/t/topic.conf"; then
		G=(1 0 0 2) H=(4 1 0 0)
	else
		G=(0 0 1 2) H=(3 1 1 0)
	fi
}

# row_re ROW...: the table line's regular expression for counts ROW.
row_re() {
	local re=$1
	shift
	local c
	for c in "$@"; do
		re+=" +$c"
	done
	echo "$re "
}

@test "mq-stat: the table, JSON, Prometheus text and -o, as a read-only user" {
	ro_counts
	ro_run mq-stat
	assert_line --regexp "$(row_re '^t +g' "${G[@]}")"
	assert_line --regexp "$(row_re '^t +h' "${H[@]}")"
	assert_line --regexp '^t +[0-9]+ '
	ro_run mq-stat --json
	assert_equal "$(jq -c '[.groups[] | [.group, .pending, .inflight, .delayed, .dead]]' <<<"$output")" \
	    "[[\"g\",$(IFS=,; echo "${G[*]}")],[\"h\",$(IFS=,; echo "${H[*]}")]]"
	assert_equal "$(jq -r '.replication[0].id' <<<"$output")" "$(cat "$RO_DIR/b/ID")"
	assert_equal "$(jq -r '.replication[0].lag_records' <<<"$output")" 1
	ro_run mq-stat --prometheus t
	assert_line "mq_pending_messages{topic=\"t\",group=\"h\"} ${H[0]}"
	assert_line 'mq_inflight_messages{topic="t",group="h"} 1'
	assert_line 'mq_dead_letter_messages{topic="t",group="g"} 2'
	# The textfile collector's way: a file outside the spool.
	ro_run mq-stat --prometheus -o "$RO_DIR/out/mq.prom"
	grep -qx "mq_delayed_messages{topic=\"t\",group=\"g\"} ${G[2]}" "$RO_DIR/out/mq.prom"
	ro_run mq-stat t h
	assert_line --regexp "$(row_re '^t +h' "${H[@]}")"
	refute_line --regexp '^t +g '
}

@test "mq-stat --check answers OK and CRITICAL as a read-only user" {
	ro_run mq-stat --check --warn 'pending>100' --crit 'dlq>5'
	assert_output --regexp '^MQ OK'
	ro_run -2 mq-stat --check --crit 't/g:dlq>=2' t g
	assert_output --regexp '^MQ CRITICAL - t/g dlq=2 '
	ro_run -1 mq-stat --check --warn 't/h:inflight>=1'
	assert_output --regexp '^MQ WARNING - t/h inflight=1 '
}

@test "mq-stat --message finds a dead letter as a read-only user" {
	local id
	id=$(mq-dlq list --json t | jq -r '.[0].id')
	ro_run mq-stat --message "$id"
	assert_line --regexp '^t/g dead attempts=1 reason=max-attempts '
	ro_run mq-stat --message "$id" --json t
	assert_equal "$(jq -r '.id' <<<"$output")" "$id"
}

@test "mq-stat --peek shows pending messages as a read-only user, moving nothing" {
	ro_run mq-stat --peek -F '%s|' t h
	[[ $output =~ ^[abcd]\|[abcd]\|[abcd]\|$ ]] || fail "got: $output"
	local id
	id=$(mq-stat --peek -n 1 -F %i t h)
	ro_run mq-stat --peek --message "$id" --json t h
	assert_equal "$(jq -r .id <<<"$output")" "$id"
}

@test "mq-group list and info as a read-only user" {
	ro_counts
	ro_run mq-group list
	assert_line --regexp "$(row_re '^t +g +shared' "${G[@]}")"
	assert_line --regexp "$(row_re '^t +h +shared' "${H[@]}")"
	ro_run mq-group list --json
	assert_equal "$(jq -c '[.[] | [.group, .pending, .dead]]' <<<"$output")" \
	    "[[\"g\",${G[0]},2],[\"h\",${H[0]},0]]"
	ro_run mq-group info -t t h --json
	assert_equal "$(jq -c '.[0].total | [.pending, .inflight, .delayed, .dead]' <<<"$output")" \
	    "[$(IFS=,; echo "${H[*]}")]"
	ro_run mq-group info g
	assert_output --partial 'max-attempts'
}

@test "mq-topic list and info as a read-only user" {
	ro_run mq-topic list
	assert_output $'t\nu'
	ro_run mq-topic list --json
	assert_equal "$output" '[{"name":"t","partitions":2},{"name":"u","partitions":1}]'
	ro_run mq-topic info t
	assert_line --regexp '^partitions: 2$'
	ro_run mq-topic info --json t
	ro_counts
	assert_equal "$(jq -c '[.groups[] | [.name, .pending, .inflight, .delayed, .dead]]' <<<"$output")" \
	    "[[\"g\",$(IFS=,; echo "${G[*]}")],[\"h\",$(IFS=,; echo "${H[*]}")]]"
	assert_equal "$(jq '[.heads[].committed] | add' <<<"$output")" 5
}

@test "mq-dlq list, count, show and export as a read-only user" {
	ro_run mq-dlq list t
	assert_equal "${#lines[@]}" 3
	ro_run mq-dlq list --json t
	assert_equal "$(jq -c '[.[] | .reason] | unique' <<<"$output")" '["max-attempts"]'
	local id
	id=$(jq -r '.[0].id' <<<"$output")
	ro_run mq-dlq -g g count t
	assert_output 2
	ro_run mq-dlq show t "$id"
	assert_line "Id: $id"
	assert_line --regexp '^(b|d)$'
	ro_run mq-dlq export t "$RO_DIR/out/dead.tar"
	run -0 tar -tf "$RO_DIR/out/dead.tar"
	[[ $output == *"$id"* ]] || fail "$output"
}

@test "mq-replicate status shows the peer as a read-only user" {
	ro_run mq-replicate status
	assert_line --index 0 --regexp '^PEER +STATE'
	ro_run mq-replicate status --json
	assert_equal "$(jq -r '.peers[0].id' <<<"$output")" "$(cat "$RO_DIR/b/ID")"
	assert_equal "$(jq -r '.peers[0].lag_records' <<<"$output")" 1
}

@test "status and mq-stat of a spool that never replicated make no replicate/" {
	export MQ_SPOOL=$RO_DIR/c A=$RO_DIR/c S=$RO_DIR/c
	ro_run mq-replicate status --json
	assert_equal "$(jq -c '.peers' <<<"$output")" '[]'
	ro_run mq-stat --json
	[[ ! -e $A/replicate ]] || fail "replicate/ was made"
}

@test "a writing command of the read-only user fails with 77 and one line, changing nothing" {
	ro_run -77 mq-pub t z
	assert_one_line_error mq-pub
	ro_run -77 mq-topic create v
	assert_one_line_error mq-topic
	ro_run -77 mq-group create t z
	assert_one_line_error mq-group
}

@test "a read command given a path that is no spool, or a directory without VERSION, creates nothing (as root)" {
	local p=$TD/typo cmd
	for cmd in "mq-topic list" "mq-topic info t" "mq-group list" \
	    "mq-group info -t t g" "mq-stat" "mq-stat --json t" \
	    "mq-dlq list t" "mq-dlq count t" "mq-replicate status"; do
		# shellcheck disable=SC2086
		run --separate-stderr $cmd -s "$p"
		assert_equal "$status" 66
		assert_one_line_error "${cmd%% *}"
		assert_equal "$stderr" "${cmd%% *}: no spool at $p"
		[[ ! -e $p ]] || fail "$cmd made $p"
	done
	run --separate-stderr mq-stat --check --crit 'dlq>0' -s "$p"
	assert_equal "$status" 3
	assert_output "MQ UNKNOWN - no spool at $p"
	[[ ! -e $p ]] || fail "mq-stat --check made $p"
	# Nor does one given a directory without VERSION: an interrupted
	# creation is a writer's to finish.
	local e=$TD/empty
	mkdir "$e"
	for cmd in "mq-topic list" "mq-group list" "mq-stat" "mq-dlq count t" \
	    "mq-replicate status"; do
		# shellcheck disable=SC2086
		run --separate-stderr $cmd -s "$e"
		assert_equal "$status" 66
		assert_equal "$stderr" "${cmd%% *}: no spool at $e"
		[[ -z $(ls -A "$e") ]] || fail "$cmd wrote in $e"
	done
	# A writing command still makes the spool on first use.
	run -0 mq-topic -s "$p" create t
	[[ -f $p/VERSION ]] || fail "no spool made"
}

@test "a read command shows a writer's crash leftover as it is (as root)" {
	export MQ_SPOOL=$TD/spool
	kill_two t g
	local dlq name
	dlq=$(ls -d "$MQ_SPOOL"/topics/t/p0/dlq/g)
	name=$(cd "$dlq" && ls | grep -v '\.why$' | head -1)
	# A redrive that died after claiming it, two hours ago.
	mv "$dlq/$name" "$dlq/.redrive.$name"
	local later before
	later=$(($(date +%s) + 7200))
	before=$(snapshot "$MQ_SPOOL")
	MQ_NOW=$later run -0 mq-dlq count t
	assert_output 1
	MQ_NOW=$later run -0 mq-stat --json
	assert_equal "$(snapshot "$MQ_SPOOL")" "$before"
	# A writer puts it back.
	MQ_NOW=$later run -0 mq-dlq redrive --max 1 --older-than 1d t
	[[ -e $dlq/$name ]] || fail "not swept back by a writer"
}
