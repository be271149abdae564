#!/usr/bin/env bats
# mq-topic list GLOB, and what mq-topic info says about sizes and groups.

load helper

# log_bytes TOPIC K: the sizes of the files in p<K>/log/, summed.
log_bytes() {
	local f n=0
	for f in "$MQ_SPOOL/topics/$1/p$2/log"/*; do
		[[ -f $f ]] && n=$((n + $(stat -c %s "$f")))
	done
	echo "$n"
}

@test "mq-topic list GLOB: shell-style patterns on topic names" {
	mq-topic create orders.eu
	mq-topic create orders.eu.created
	mq-topic create --partitions 2 orders.us
	mq-topic create logs
	run --separate-stderr mq-topic list 'orders.*'
	assert_success
	assert_output $'orders.eu\norders.eu.created\norders.us'
	run --separate-stderr mq-topic list '*.us'
	assert_success
	assert_output 'orders.us'
	run --separate-stderr mq-topic list 'nomatch'
	assert_success
	assert_output ''
	run --separate-stderr mq-topic list --json 'orders.?s'
	assert_success
	run "$PY" -c '
import json, sys
assert json.loads(sys.argv[1]) == [{"name": "orders.us", "partitions": 2}]' "$output"
	assert_success
	run --separate-stderr mq-topic list a b
	assert_equal "$status" 64
}

@test "mq-topic info: log messages and bytes per partition" {
	mq-topic create --partitions 3 t
	mq-pub -q -p 0 t a bb ccc
	mq-pub -q -p 1 t "$(printf '%01000d' 0)"
	run --separate-stderr mq-topic info --json t
	assert_success
	local b0 b1
	b0=$(log_bytes t 0)
	b1=$(log_bytes t 1)
	((b0 > 0 && b1 > 1000))
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])
got = [(h["partition"], h["committed"], h["messages"], h["bytes"]) for h in o["heads"]]
want = [(0, 3, 3, int(sys.argv[2])), (1, 1, 1, int(sys.argv[3])), (2, 0, 0, 0)]
assert got == want, (got, want)' "$output" "$b0" "$b1"
	assert_success
	run --separate-stderr mq-topic info t
	assert_success
	assert_line --regexp '^PARTITION +COMMITTED +MESSAGES +BYTES$'
	assert_line --regexp "^0 +3 +3 +$b0\$"
	assert_line --regexp "^1 +1 +1 +$b1\$"
	assert_line --regexp '^2 +0 +0 +0$'
	# A message not yet committed has no size.
	cp "$(one_file "$MQ_SPOOL/topics/t/p1/log")" \
	    "$MQ_SPOOL/topics/t/p2/log/00000000000000000000.00000000000000000000000000000000"
	run --separate-stderr mq-topic info t
	assert_line --regexp '^2 +0 +0 +0$'
}

@test "mq-topic info: each group's mode, pending, in flight, delayed, dead and lag" {
	mq-topic create --partitions 2 t
	mq-group create t g
	mq-group create --ordered t og
	mq-pub -q -p 0 t a b c
	mq-pub -q -p 1 t d
	mq-sub --manual -n 4 -g g -F '%p %o %r\n' t >"$TD/r"
	# receipt PARTITION SEQ: the receipt of that message (of either format).
	receipt() { awk -v p="$1" -v o="$2" '$1 == p && $2 == o { print $3 }' "$TD/r"; }
	mq-ack -g g --nack --delay 60 t "$(receipt 0 0)"
	mq-ack -g g --reject t "$(receipt 0 1)"
	mq-ack -g g --nack t "$(receipt 1 0)"
	# g: p0 seq 0 delayed, 1 dead, 2 in flight (lag 3); p1 seq 0 pending (lag 1).
	run --separate-stderr mq-topic info --json t
	assert_success
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["groups"] == [
    {"name": "g", "mode": "shared", "pending": 1, "inflight": 1,
     "delayed": 1, "dead": 1, "lag": 4},
    {"name": "og", "mode": "ordered", "pending": 4, "inflight": 0,
     "delayed": 0, "dead": 0, "lag": 4}], o["groups"]
assert o["retention"] == 604800, o' "$output"
	assert_success
	run --separate-stderr mq-topic info t
	assert_success
	assert_line 'retention: 604800'
	assert_line --regexp '^GROUP +MODE +PENDING +IN-FLIGHT +DELAYED +DEAD +LAG$'
	assert_line --regexp '^g +shared +1 +1 +1 +1 +4$'
	assert_line --regexp '^og +ordered +4 +0 +0 +0 +4$'
}
