#!/usr/bin/env bats
# mq-dlq: list, count, show, redrive, purge.

load helper

@test "mq-dlq --help prints usage; bad commands and combinations are usage errors (64)" {
	run mq-dlq --help
	assert_success
	assert_output --partial 'usage: mq-dlq'
	local -a bad=(
		""
		"frobnicate t"
		"list"
		"show t"
		"count --json t"
		"list --older-than 1h t"
		"purge t"
		"list --to u t"
		"redrive --all t"
		"list --max 0 t"
		"redrive --older-than soon t"
		"list -q t"
	)
	local b
	for b in "${bad[@]}"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-dlq $b
		assert_equal "$status" 64
	done
	run --separate-stderr mq-dlq -g ../x list t
	assert_equal "$status" 64
	assert_one_line_error mq-dlq
}

@test "mq-dlq list, count and show describe each dead letter and why" {
	kill_two t g
	run --separate-stderr mq-dlq count t
	assert_success
	assert_output 2
	run --separate-stderr mq-dlq -g g list t
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp '^ID +GROUP +PART +SEQ +ATTEMPTS +REASON +TIME +DETAIL$'
	assert_line --index 1 --regexp '^[0-9a-f]{32} +g +0 +1 +1 +max-attempts +20[0-9-]+T[0-9:.]+Z'
	assert_line --index 2 --regexp '^[0-9a-f]{32} +g +0 +3 +1 +max-attempts '
	# A handler failure's DETAIL: its exit status and first stderr line.
	assert_line --index 1 --regexp ' exit 4: refusing b$'
	assert_line --index 2 --regexp ' exit 4: refusing d$'
	run --separate-stderr mq-dlq list --json t
	assert_success
	"$PY" -c '
import json, sys
v = json.loads(sys.argv[1])
assert [d["seq"] for d in v] == [1, 3], v
for d in v:
    assert list(d) == ["id", "topic", "group", "partition", "seq", "attempts",
        "reason", "time", "detail", "status"], list(d)
    assert (d["topic"], d["group"], d["attempts"], d["reason"], d["status"]) == \
        ("t", "g", 1, "max-attempts", 4), d
' "$output"
	local id
	id=$(mq-dlq list --json t | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
	run --separate-stderr mq-dlq -g g show t "$id"
	assert_success
	assert_line "Id: $id"
	assert_line 'Reason: max-attempts'
	assert_line 'Status: 4'
	assert_line 'refusing b'
	assert_equal "${lines[-1]}" b
	run --separate-stderr mq-dlq show t 0123456789abcdef0123456789abcdef
	assert_equal "$status" 66
	assert_one_line_error mq-dlq
}

@test "mq-dlq redrive puts dead letters back with attempts reset; a second run has nothing to do" {
	kill_two t g
	run --separate-stderr mq-dlq -g g redrive t
	assert_success
	assert_output "redrove 2 dead letters of topic t, group g to topic t"
	assert_equal "$stderr" ""
	assert_equal "$(mq-dlq count t)" 0
	# No record is left behind.
	assert_equal "$(count_entries "$MQ_SPOOL/topics/t/p0/dlq/g")" 0
	run --separate-stderr mq-dlq -g g redrive t
	assert_success
	assert_output ""
	# The handler is fixed: every dead letter is processed once.
	run --separate-stderr mq-sub --exec 'echo "$(cat) $MQ_ATTEMPTS"' -g g t
	assert_success
	assert_output $'b 1\nd 1'
	group_empty t g
}

@test "mq-dlq redrive by id, --max, and --to another topic" {
	kill_two t g
	local -a ids
	mapfile -t ids < <(mq-dlq list --json t | "$PY" -c 'import json,sys; [print(d["id"]) for d in json.load(sys.stdin)]')
	# By id: only d goes back.
	run --separate-stderr mq-dlq -g g redrive t "${ids[1]}"
	assert_success
	assert_output "redrove 1 dead letter of topic t, group g to topic t"
	assert_equal "$(mq-dlq count t)" 1
	run mq-sub -F '%i %s\n' -g g t
	assert_output "${ids[1]} d"
	# --to: a copy of b is published to another topic, the dead letter goes.
	mkgroup other h
	run --separate-stderr mq-dlq -g g redrive --max 5 --to other t
	assert_success
	assert_output "redrove 1 dead letter of topic t, group g to topic other"
	assert_equal "$(mq-dlq count t)" 0
	run mq-sub -g h other
	assert_output b
	# An id that is not there is reported, and is 66.
	run --separate-stderr mq-dlq -g g redrive t 0123456789abcdef0123456789abcdef
	assert_equal "$status" 66
	assert_one_line_error mq-dlq
}

@test "mq-dlq purge: by id, --older-than (injected clock), --all" {
	kill_two t g
	local -a ids
	mapfile -t ids < <(mq-dlq list --json t | "$PY" -c 'import json,sys; [print(d["id"]) for d in json.load(sys.stdin)]')
	run --separate-stderr mq-dlq -g g purge t "${ids[0]}"
	assert_success
	assert_output "purged 1 dead letter of topic t, group g"
	assert_equal "$(mq-dlq count t)" 1
	# Not older than an hour yet (nothing done, nothing said); an hour
	# later it is.
	run --separate-stderr mq-dlq purge --older-than 1h t
	assert_success
	assert_output ""
	assert_equal "$(mq-dlq count t)" 1
	MQ_NOW=$(($(date +%s) + 3601)) run --separate-stderr mq-dlq purge --older-than 1h t
	assert_success
	assert_equal "$(mq-dlq count t)" 0
	assert_equal "$(count_entries "$MQ_SPOOL/topics/t/p0/dlq/g")" 0
	kill_two u g
	run --separate-stderr mq-dlq purge -q --all u
	assert_success
	assert_output ""
	assert_equal "$stderr" ""
	assert_equal "$(mq-dlq count u)" 0
	# Nothing was redelivered by purging.
	run mq-sub -g g u
	assert_equal "$status" 1
}

@test "mq-dlq: two redrives at once never redrive a message twice" {
	mkgroup t g --max-attempts 1
	local n
	for n in $(seq 200); do echo "m$n"; done | mq-pub -q -l t
	run --separate-stderr mq-sub --backoff 0 --exec 'cat >/dev/null; exit 4' -g g t
	assert_equal "$(mq-dlq count t)" 200
	mq-dlq -g g redrive t &
	local p1=$!
	mq-dlq -g g redrive t &
	local p2=$!
	wait "$p1"
	wait "$p2"
	assert_equal "$(mq-dlq count t)" 0
	assert_equal "$(count_new t g)" 200
	run mq-sub -g g t
	assert_equal "${#lines[@]}" 200
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" 200
}

@test "mq-dlq on a missing topic or group is 66; on an empty dead-letter queue it prints nothing" {
	run --separate-stderr mq-dlq list nosuch
	assert_equal "$status" 66
	assert_one_line_error mq-dlq
	mkgroup t g
	run --separate-stderr mq-dlq -g nosuch list t
	assert_equal "$status" 66
	run --separate-stderr mq-dlq -g g list t
	assert_success
	assert_output ""
	run --separate-stderr mq-dlq -g g redrive t
	assert_success
	assert_output ""
}

@test "mq-dlq redrive --rate spaces redrives out (N and N/s alike)" {
	kill_two t g
	TIMEFORMAT='%R'
	{ time mq-dlq -g g redrive --rate 4/s t; } 2>"$TD/took"
	assert_equal "$(mq-dlq count t)" 0
	# Two redrives at 4 a second: one pause of a quarter second between.
	awk '{ exit !($1 >= 0.25) }' "$TD/took" || fail "took $(cat "$TD/took") s"
	run --separate-stderr mq-dlq -g g redrive --rate 0 t
	assert_equal "$status" 64
	run --separate-stderr mq-dlq -g g redrive --rate fast/s t
	assert_equal "$status" 64
}
