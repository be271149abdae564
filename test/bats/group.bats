#!/usr/bin/env bats
# mq-group: list, info, create, delete.

load helper

# receipt_of FILE K SEQ: the receipt, among those in FILE, of partition K's
# message SEQ.
receipt_of() {
	local seq
	seq=$(printf '%020d' "$3")
	# Format 1's receipts name the message; format 2's its claim and it.
	grep -E "^[^/]*/[^/]*/$2/($seq\\.|[0-9]{20}\\+[0-9]+,r[0-9a-f]{8}/$3\$)" "$1"
}

# known_state: topic t with 3 partitions and group g in a known state.
#   p0: seq 0 acked, 1 given back with a delay, 2 in flight, 3 given back
#       (pending): head 4, offset 1, lag 3
#   p1: seq 0 rejected (dead), 1 acked, 2 in flight: head 3, offset 2, lag 1
#   p2: both acked: head 2, offset 2, lag 0
known_state() {
	mq-topic create --partitions 3 t
	mq-group create t g
	mq-pub -q -p 0 t a b c d
	mq-pub -q -p 1 t e f g
	mq-pub -q -p 2 t h i
	mq-sub --manual -n 9 -g g -F '%r\n' t >"$TD/receipts"
	assert_equal "$(wc -l <"$TD/receipts")" 9
	mq-ack -g g t "$(receipt_of "$TD/receipts" 0 0)"
	mq-ack -g g --nack --delay 60 t "$(receipt_of "$TD/receipts" 0 1)"
	mq-ack -g g --nack t "$(receipt_of "$TD/receipts" 0 3)"
	mq-ack -g g --reject t "$(receipt_of "$TD/receipts" 1 0)"
	mq-ack -g g t "$(receipt_of "$TD/receipts" 1 1)"
	mq-ack -g g t "$(receipt_of "$TD/receipts" 2 0)"
	mq-ack -g g t "$(receipt_of "$TD/receipts" 2 1)"
}

@test "mq-group --help prints usage and exits 0" {
	run --separate-stderr mq-group --help
	assert_success
	assert_usage_output mq-group
}

@test "mq-group usage errors are 64 and change nothing" {
	mq-topic create --partitions 3 t
	local snap args
	snap=$(spool_snapshot)
	for args in "" "frobnicate" "list a b" "info" "info a b" "create t" \
	    "delete t" "create --json t g" "list --lease 5" "info --ordered g" \
	    "list -t t" "create --session 0 t g" \
	    "create --from-start --from-offset 0:1 t g" \
	    "create --from-offset 0:1 --from-time @0 t g" \
	    "create --from-start --from-time @0 t g" \
	    "create --from-offset 0 t g" "create --from-offset x:1 t g" \
	    "create --from-offset 0:-1 t g" "create --from-time yesterday t g" \
	    "create --match novalue t g" "create --lease 0 t g" \
	    "create --max-attempts 1000001 t g" "create t ../g" "info ../g" \
	    "create --bogus t g"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-group $args
		assert_equal "$status" 64
		assert_equal "$output" ""
		[[ -n $stderr ]]
		assert_equal "$(spool_snapshot)" "$snap"
	done
}

@test "mq-group info: per-partition figures and totals of a known state" {
	known_state
	# A publish in progress is invisible: a name at or above the head.
	touch "$(group_dir t g 2)/new/00000000000000000007.00000000000000000000000000000000"
	run --separate-stderr mq-group info g
	assert_success
	assert_equal "$stderr" ""
	assert_line 'topic: t'
	assert_line 'group: g'
	assert_line 'mode: shared'
	assert_line 'lease: 30'
	assert_line 'max-attempts: 5'
	assert_line 'exactly-once: 0'
	assert_line 'state: ready'
	assert_line --regexp '^PARTITION +HEAD +OFFSET +LAG +PENDING +IN-FLIGHT +DELAYED +DEAD$'
	assert_line --regexp '^0 +4 +1 +3 +1 +1 +1 +0$'
	assert_line --regexp '^1 +3 +2 +1 +0 +1 +0 +1$'
	assert_line --regexp '^2 +2 +2 +0 +0 +0 +0 +0$'
	assert_line --regexp '^total +9 +- +4 +1 +2 +1 +1$'
	refute_output --partial OWNER
	refute_output --partial MEMBER
}

@test "mq-group info --json: the same figures" {
	known_state
	run --separate-stderr mq-group info --json g
	assert_success
	run "$PY" -c '
import json, sys
a = json.loads(sys.argv[1])
assert len(a) == 1, a
o = a[0]
assert o["topic"] == "t" and o["group"] == "g" and o["mode"] == "shared", o
assert o["session"] == 10 and o["lease"] == 30 and o["max_attempts"] == 5, o
assert o["exactly_once"] is False and o["from_start"] is False, o
assert o["filter"] is None and o["match"] == [] and o["pattern"] is None, o
assert o["state"] == "ready" and o["created"] > 0 and o["members"] == [], o
keys = ("partition", "head", "offset", "lag", "pending", "inflight",
        "delayed", "dead", "owner", "owner_deadline_ms")
got = [tuple(p[k] for k in keys) for p in o["partitions"]]
assert got == [(0, 4, 1, 3, 1, 1, 1, 0, None, None),
               (1, 3, 2, 1, 0, 1, 0, 1, None, None),
               (2, 2, 2, 0, 0, 0, 0, 0, None, None)], got
assert o["total"] == {"head": 9, "lag": 4, "pending": 1, "inflight": 2,
                      "delayed": 1, "dead": 1}, o["total"]' "$output"
	assert_success
	# The figures agree with the disk.
	assert_equal "$(count_new t g 0)" 1
	assert_equal "$(count_cur t g 0)" 1
	assert_equal "$(count_entries "$(group_dir t g 0)/delay")" 1
	assert_equal "$(count_entries "$MQ_SPOOL/topics/t/p1/dlq/g")" 2  # with .why
}

@test "mq-group list: one row per group, glob on topic names, --json" {
	known_state
	mq-group create orders.eu audit
	mq-group create orders.us audit
	mq-pub -q orders.eu x y
	run --separate-stderr mq-group list
	assert_success
	assert_line --index 0 --regexp '^TOPIC +GROUP +MODE +PENDING +IN-FLIGHT +DELAYED +DEAD +LAG +PATTERN$'
	assert_line --index 1 --regexp '^orders\.eu +audit +shared +2 +0 +0 +0 +2 +-$'
	assert_line --index 2 --regexp '^orders\.us +audit +shared +0 +0 +0 +0 +0 +-$'
	assert_line --index 3 --regexp '^t +g +shared +1 +2 +1 +1 +4 +-$'
	assert_equal "${#lines[@]}" 4
	run --separate-stderr mq-group list 'orders.*'
	assert_success
	assert_equal "${#lines[@]}" 3
	refute_output --regexp '^t '
	run --separate-stderr mq-group list 'nomatch*'
	assert_success
	assert_output ""
	run --separate-stderr mq-group list --json '*.eu'
	assert_success
	run "$PY" -c '
import json, sys
a = json.loads(sys.argv[1])
assert a == [{"topic": "orders.eu", "group": "audit", "wildcard": False,
              "mode": "shared", "pattern": None, "lag": 2, "pending": 2,
              "inflight": 0, "delayed": 0, "dead": 0}], a' "$output"
	assert_success
}

@test "mq-group list shows wildcard subscriptions and the pattern of the groups they made" {
	mq-group create orders.eu audit
	mq-group create logs keep
	echo 'pattern=orders.>' >>"$MQ_SPOOL/topics/orders.eu/groups/audit.conf"
	mkdir -p "$MQ_SPOOL/wildcards/orders.>"
	printf 'created=1.000\nmode=ordered\n' >"$MQ_SPOOL/wildcards/orders.>/audit.conf"
	touch "$MQ_SPOOL/wildcards/orders.>/not a group.conf"
	run --separate-stderr mq-group list
	assert_success
	assert_equal "${#lines[@]}" 4
	assert_line --index 1 --regexp '^logs +keep +shared( +0){5} +-$'
	assert_line --index 2 --regexp '^orders\.eu +audit +shared( +0){5} +orders\.>$'
	assert_line --index 3 --regexp '^orders\.> +audit +ordered( +-){5} +orders\.>$'
	run --separate-stderr mq-group list --json 'orders*'
	assert_success
	run "$PY" -c '
import json, sys
a = json.loads(sys.argv[1])
assert [(o["topic"], o["wildcard"], o["pattern"]) for o in a] == [
    ("orders.eu", False, "orders.>"), ("orders.>", True, "orders.>")], a
w = a[1]
assert w["mode"] == "ordered" and w["group"] == "audit", w
assert all(w[k] is None for k in ("pending", "inflight", "delayed", "dead", "lag")), w' "$output"
	assert_success
	run --separate-stderr mq-group info audit
	assert_success
	assert_line 'pattern: orders.>'
	run --separate-stderr mq-group list logs
	assert_success
	assert_equal "${#lines[@]}" 2
}

@test "mq-group info shows a group on every topic that has it, -t one" {
	mq-group create a g
	mq-group create b g
	mq-group create b other
	mq-pub -q b x
	run --separate-stderr mq-group info --json g
	assert_success
	run "$PY" -c '
import json, sys
a = json.loads(sys.argv[1])
assert [(o["topic"], o["total"]["pending"]) for o in a] == [("a", 0), ("b", 1)], a' "$output"
	assert_success
	run --separate-stderr mq-group info g
	assert_success
	assert_line --index 0 'topic: a'
	assert_line 'topic: b'
	run --separate-stderr mq-group info -t b --json g
	assert_success
	run "$PY" -c '
import json, sys
a = json.loads(sys.argv[1])
assert len(a) == 1 and a[0]["topic"] == "b", a' "$output"
	assert_success
}

@test "mq-group info of an unknown group or topic is 66 with one line" {
	mq-group create t g
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-group info nope
	assert_equal "$status" 66
	assert_equal "$output" ""
	assert_one_line_error mq-group
	[[ $stderr == *nope* ]]
	run --separate-stderr mq-group info -t t nope
	assert_equal "$status" 66
	assert_one_line_error mq-group
	run --separate-stderr mq-group info -t missing g
	assert_equal "$status" 66
	assert_one_line_error mq-group
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-group create writes the settings; info shows them" {
	mq-topic create --partitions 2 t
	run --separate-stderr mq-group create --lease 45 --max-attempts 3 \
	    --exactly-once --filter '.kind == "a b"' --match 'Type=order*' \
	    --match 'X-Region=eu' t g
	assert_success
	assert_equal "$output" ""
	assert_equal "$stderr" ""
	local conf=$MQ_SPOOL/topics/t/groups/g.conf
	run grep -x 'lease=45' "$conf"
	assert_success
	run grep -x 'max-attempts=3' "$conf"
	assert_success
	run grep -x 'exactly-once=1' "$conf"
	assert_success
	run grep -x 'mode=shared' "$conf"
	assert_success
	[[ -d $(group_dir t g 1)/new ]]
	run --separate-stderr mq-group info --json g
	assert_success
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])[0]
assert o["lease"] == 45 and o["max_attempts"] == 3, o
assert o["exactly_once"] is True and o["mode"] == "shared", o
assert o["filter"] == ".kind == \"a b\"", o["filter"]
assert o["match"] == ["Type=order*", "X-Region=eu"], o["match"]' "$output"
	assert_success
	run --separate-stderr mq-group info g
	assert_line 'filter: .kind == "a b"'
	assert_line 'match: Type=order*'
	assert_line 'match: X-Region=eu'
}

@test "mq-group create of an existing group is 73 and changes nothing" {
	mq-group create --lease 5 t g
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-group create --lease 9 t g
	assert_equal "$status" 73
	assert_one_line_error mq-group
	[[ $stderr == *exists* ]]
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-group create makes a missing topic; --from-offset past the partitions is 64 and makes nothing" {
	run --separate-stderr mq-group create --from-offset 1:0 new g
	assert_equal "$status" 64
	assert_one_line_error mq-group
	[[ ! -e $MQ_SPOOL/topics/new ]]
	mq-topic create --partitions 3 t
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-group create --from-offset 0:0 --from-offset 3:0 t g
	assert_equal "$status" 64
	assert_one_line_error mq-group
	[[ $stderr == *"no partition 3"* ]]
	assert_equal "$(spool_snapshot)" "$snap"
	run --separate-stderr mq-group create new g
	assert_success
	[[ -f $MQ_SPOOL/topics/new/groups/g.conf ]]
}

@test "mq-group create --from-offset backfills from there; --from-start from the log's start" {
	mq-topic create --partitions 2 t
	mq-pub -q -p 0 t a b c
	mq-pub -q -p 1 t d e
	mq-group create --from-offset 0:1 t late
	mq-group create --from-start t all
	mq-group create t now
	run --separate-stderr mq-group info --json -t t late
	assert_success
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])[0]
got = [(p["head"], p["offset"], p["lag"], p["pending"]) for p in o["partitions"]]
assert got == [(3, 1, 2, 2), (2, 2, 0, 0)], got' "$output"
	assert_success
	run --separate-stderr mq-group info --json all
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])[0]
assert o["from_start"] is True and o["state"] == "ready", o
assert [p["offset"] for p in o["partitions"]] == [0, 0], o
assert o["total"]["pending"] == 5 and o["total"]["lag"] == 5, o' "$output"
	assert_success
	run --separate-stderr mq-group info --json now
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])[0]
assert [p["offset"] for p in o["partitions"]] == [3, 2], o
assert o["total"]["lag"] == 0, o' "$output"
	assert_success
}

@test "mq-group create --ordered: mode ordered, free ownership tokens, no owner" {
	mq-topic create --partitions 2 t
	run --separate-stderr mq-group create --ordered --session 20 t og
	assert_success
	local k
	for k in 0 1; do
		[[ -e $(group_dir t og $k)/own/-,l0 ]]
	done
	run grep -x 'mode=ordered' "$MQ_SPOOL/topics/t/groups/og.conf"
	assert_success
	run --separate-stderr mq-group info og
	assert_success
	assert_line 'mode: ordered'
	assert_line 'session: 20'
	assert_line --regexp '^PARTITION +HEAD +OFFSET +LAG +PENDING +IN-FLIGHT +DELAYED +DEAD +OWNER$'
	assert_line --regexp '^0( +0){7} +-$'
	assert_line --regexp '^MEMBER +DEADLINE +PARTITIONS$'
	run --separate-stderr mq-group info --json og
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])[0]
assert o["mode"] == "ordered" and o["session"] == 20, o
assert [p["owner"] for p in o["partitions"]] == [None, None], o
assert o["members"] == [], o' "$output"
	assert_success
	run --separate-stderr mq-group list
	assert_line --index 1 --regexp '^t +og +ordered '
}

@test "mq-group info: live members and the partitions they own" {
	mq-topic create --partitions 3 t
	mq-group create --ordered t og
	export MQ_NOW=1000
	local m=$MQ_SPOOL/topics/t/groups/og.members
	mkdir "$m"
	touch "$m/alice,l2000000" "$m/bob,l500000" "$m/carol,l3000000" "$m/junk"
	mv "$(group_dir t og 0)/own/-,l0" "$(group_dir t og 0)/own/alice,l2000000"
	mv "$(group_dir t og 1)/own/-,l0" "$(group_dir t og 1)/own/bob,l500000"
	mv "$(group_dir t og 2)/own/-,l0" "$(group_dir t og 2)/own/alice,l2000000"
	run --separate-stderr mq-group info --json og
	assert_success
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])[0]
got = [(p["owner"], p["owner_deadline_ms"]) for p in o["partitions"]]
assert got == [("alice", 2000000), (None, None), ("alice", 2000000)], got
assert o["members"] == [
    {"name": "alice", "deadline_ms": 2000000, "partitions": [0, 2]},
    {"name": "carol", "deadline_ms": 3000000, "partitions": []}], o["members"]' "$output"
	assert_success
	run --separate-stderr mq-group info og
	assert_success
	assert_line --regexp '^0( +0){7} +alice$'
	assert_line --regexp '^1( +0){7} +-$'
	assert_line --regexp '^alice +1970-01-01T00:33:20\.000Z +0,2$'
	assert_line --regexp '^carol +1970-01-01T00:50:00\.000Z +-$'
	refute_output --partial bob
	# Later, every deadline is past: no owner, no member.
	export MQ_NOW=5000
	run --separate-stderr mq-group info --json og
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])[0]
assert [p["owner"] for p in o["partitions"]] == [None] * 3, o
assert o["members"] == [], o' "$output"
	assert_success
}

@test "mq-group delete removes the group; a missing one is 66" {
	mq-group create t g
	mq-group create t keep
	run --separate-stderr mq-group delete t g
	assert_success
	assert_equal "$output" ""
	[[ ! -e $MQ_SPOOL/topics/t/groups/g.conf ]]
	[[ ! -e $(group_dir t g) ]]
	run --separate-stderr mq-group list
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp '^t +keep '
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-group delete t g
	assert_equal "$status" 66
	assert_one_line_error mq-group
	run --separate-stderr mq-group delete missing g
	assert_equal "$status" 66
	assert_one_line_error mq-group
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-group list and info do not create a spool (66)" {
	run --separate-stderr mq-group -s "$TD/none" list
	assert_equal "$status" 66
	assert_one_line_error mq-group
	[[ ! -e $TD/none ]]
	run --separate-stderr mq-group -s "$TD/none" info g
	assert_equal "$status" 66
	[[ ! -e $TD/none ]]
}

@test "mq-group create --exist-ok: 0 when the group exists with the same settings, 73 naming the setting that differs" {
	run --separate-stderr mq-group create --exist-ok --lease 10s --match 'k=a*' t g
	assert_success
	local snap
	snap=$(spool_snapshot)
	# The same settings (10s is 10), and start positions not compared.
	run --separate-stderr mq-group create --exist-ok --lease 10 --match 'k=a*' --from-start t g
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(spool_snapshot)" "$snap"
	local -A differs=([lease]="--match k=a*" [match]="--lease 10s"
	    [ordered]="--ordered --lease 10s --match k=a*"
	    [max-attempts]="--max-attempts 2 --lease 10s --match k=a*")
	local s
	for s in "${!differs[@]}"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-group create --exist-ok ${differs[$s]} t g
		assert_equal "$status" 73
		assert_equal "$stderr" "mq-group: group 'g' exists on topic 't' with another $s setting"
	done
	assert_equal "$(spool_snapshot)" "$snap"
	# Without --exist-ok an existing group is 73 as before.
	run --separate-stderr mq-group create --lease 10s --match 'k=a*' t g
	assert_equal "$status" 73
	assert_equal "$stderr" "mq-group: group 'g' already exists on topic 't'"
	# It goes with create only.
	run --separate-stderr mq-group list --exist-ok
	assert_equal "$status" 64
}
