#!/usr/bin/env bats
# mq-stat: publish and ack rates, publish-to-ack latency percentiles and
# consumers alive, from the counters publishers and consumers keep
# (mq-spool(5), COUNTERS; Members), with times injected through MQ_NOW.

load helper

# key_time KEY: the publish time in a KEY, in microseconds (its id's
# first 13 hex digits).
key_time_us() {
	echo $((16#${1:21:13}))
}

# stat_json [ARGS...]: mq-stat --json at $READ into $TD/stat.json.
stat_json() {
	MQ_NOW=$READ mq-stat --json "$@" >"$TD/stat.json"
}

# expect PYTHON...: runs the assertions against $TD/stat.json as `s`,
# with `group(topic, group)`, `topic(name)` and `pct(latencies_us, q)`,
# the percentile as mq-spool(5) defines it (the largest latency of the
# bucket that holds it, no more than the maximum).
expect() {
	"$PY" - "$TD/stat.json" "$@" <<'EOF'
import json, math, sys
s = json.load(open(sys.argv[1]))
def group(t, g):
    return next(x for x in s["groups"] if x["topic"] == t and x["group"] == g)
def topic(t):
    return next(x for x in s["topics"] if x["topic"] == t)
def bucket(v):
    if v < 8:
        return v
    e = v.bit_length() - 1
    return min(8 * (e - 2) + ((v >> (e - 3)) & 7), 335)
def bucket_last(b):
    if b < 8:
        return b
    return ((9 + b % 8) << (b // 8 - 1)) - 1
def pct(lat, q):
    lat = sorted(lat)
    v = lat[max(math.ceil(q * len(lat)), 1) - 1]
    return min(bucket_last(bucket(v)), lat[-1]) / 1e6
def near(a, b, eps=1e-6):
    return abs(a - b) <= eps
for check in sys.argv[2:]:
    assert eval(check), check + " | " + json.dumps(s)
EOF
}

@test "rates over 1, 5 and 15 minutes and latency percentiles, from known times" {
	mkgroup t g
	# A: a minute's 10th second, ahead of the clock (ids keep the real
	# publish time, so every latency is A + 5i less that).
	local A=$(((EPOCHSECONDS / 60 + 2) * 60 + 10)) i keys lat=()
	MQ_NOW=$((A - 120)) mq-pub -q t p0 p1 p2 p3
	MQ_NOW=$A mq-pub -q t p4 p5
	keys=($(queued t g))
	assert_equal "${#keys[@]}" 6
	# Three acked by mq-sub, three by mq-ack with their receipts.
	for i in 0 1 2 3 4 5; do
		if ((i < 3)); then
			MQ_NOW=$((A + 5 * i)) mq-sub -g g -n 1 t >/dev/null
		else
			local r
			r=$(MQ_NOW=$((A + 5 * i)) mq-sub --manual -n 1 -F '%r' -g g t)
			MQ_NOW=$((A + 5 * i)) mq-ack -g g t "$r"
		fi
		lat+=($(((A + 5 * i) * 1000000 - $(key_time_us "${keys[$i]}"))))
	done
	local L="[${lat[*]}]"
	L=${L// /, }
	READ=$((A + 30))
	stat_json
	# At A + 30, 2/3 into minute A: publishes 2 in minute A, 4 in A - 2.
	expect 'topic("t")["published"]["total"] == 6' \
	    'near(topic("t")["published"]["rate_1m"], 2 / 60)' \
	    'near(topic("t")["published"]["rate_5m"], 6 / 300)' \
	    'near(topic("t")["published"]["rate_15m"], 6 / 900)' \
	    'group("t", "g")["acked"]["total"] == 6' \
	    'near(group("t", "g")["acked"]["rate_1m"], 6 / 60)' \
	    'near(group("t", "g")["acked"]["rate_5m"], 6 / 300)' \
	    'near(group("t", "g")["acked"]["rate_15m"], 6 / 900)' \
	    "near(group('t', 'g')['latency']['p50'], pct($L, 0.5))" \
	    "near(group('t', 'g')['latency']['p90'], pct($L, 0.9))" \
	    "near(group('t', 'g')['latency']['p99'], pct($L, 0.99))" \
	    "near(group('t', 'g')['latency']['max'], max($L) / 1e6)" \
	    "near(group('t', 'g')['latency_sum'], sum($L) / 1e6, 1e-4)" \
	    'group("t", "g")["pending"] == 0'
	# The table: publishes per topic, then consumers, acks and latencies.
	run --separate-stderr env MQ_NOW=$READ mq-stat
	assert_success
	assert_line --regexp '^TOPIC +PUBLISHED +PUB/S-1M +PUB/S-5M +PUB/S-15M$'
	assert_line --regexp '^t +6 +0\.03 +0\.02 +0\.01$'
	assert_line --regexp '^TOPIC +GROUP +CONSUMERS +ACKED +ACK/S-1M +ACK/S-5M +ACK/S-15M +P50 +P90 +P99 +MAX$'
	local sec='[0-9]+\.[0-9]{3}'
	assert_line --regexp "^t +g +0 +6 +0\.10 +0\.02 +0\.01 +$sec +$sec +$sec +$sec\$"
	# A minute and a half later: minute A is half out of the last 60 s.
	READ=$((A + 80))
	stat_json
	expect 'near(topic("t")["published"]["rate_1m"], 2 * (1 - 30 / 60) / 60)' \
	    'near(group("t", "g")["acked"]["rate_1m"], 6 * 0.5 / 60)' \
	    'near(group("t", "g")["acked"]["rate_15m"], 6 / 900)' \
	    'group("t", "g")["latency"]["max"] > 0'
	# Seven minutes later: no ack within the latency window (the
	# current minute and the 5 before), the totals stay.
	READ=$((A + 7 * 60))
	stat_json
	expect 'group("t", "g")["latency"] is None' \
	    'group("t", "g")["acked"]["total"] == 6' \
	    'group("t", "g")["acked"]["rate_1m"] == 0' \
	    'near(group("t", "g")["acked"]["rate_15m"], 6 / 900)'
	# Twenty minutes later: the rates are 0, the totals stay.
	READ=$((A + 20 * 60))
	stat_json
	expect 'topic("t")["published"]["rate_15m"] == 0' \
	    'topic("t")["published"]["total"] == 6' \
	    'group("t", "g")["acked"]["rate_15m"] == 0'
}

@test "a group that nothing acked: zero rates, no latency; offsets commits count as acks" {
	mkgroup t g
	mkgroup t h
	MQ_NOW=1800000010 mq-pub -q t a b c
	READ=1800000020
	stat_json
	expect 'group("t", "h")["acked"]["total"] == 0' \
	    'group("t", "h")["latency"] is None' \
	    'group("t", "h")["acked"]["rate_1m"] == 0' \
	    'group("t", "h")["consumers"] == 0'
	# mq-ack --commit acks what is below an offset.
	run --separate-stderr env MQ_NOW=1800000015 mq-ack -g h --commit 0:2 t
	assert_success
	stat_json
	expect 'group("t", "h")["acked"]["total"] == 2' \
	    'group("t", "g")["acked"]["total"] == 0' \
	    'group("t", "h")["pending"] == 1'
}

@test "exact counts with 4 producers and 2 consumers at once" {
	mkgroup t g
	local p
	for p in 1 2 3 4; do
		spawn "$TD/pub$p" bash -c 'for i in $(seq 1 50); do
			mq-pub -q t "a$i" "b$i" "c$i" "d$i" "e$i" || exit 1
		done'
	done
	spawn "$TD/c1" mq-sub -f -g g t
	spawn "$TD/c2" mq-sub -f -g g t
	acked_all() {
		local n
		n=$(mq-stat --json t g | jq '.groups[0].acked.total')
		[[ $n == 1000 ]]
	}
	wait_for -t 60 acked_all
	run --separate-stderr mq-stat --json t g
	assert_success
	assert_equal "$(jq '.topics[0].published.total' <<<"$output")" 1000
	assert_equal "$(jq '.groups[0].acked.total' <<<"$output")" 1000
	assert_equal "$(jq '.groups[0].pending + .groups[0].inflight' <<<"$output")" 0
	assert_equal "$(cat "$TD"/c1 "$TD"/c2 | wc -l)" 1000
}

# consumers T G: the consumers alive of group G of topic T.
consumers() {
	mq-stat --json "$1" "$2" | jq '.groups[0].consumers'
}
consumers_are() {
	[[ $(consumers "$1" "$2") == "$3" ]]
}

@test "consumers alive: shared, ordered and wildcard groups; a killed one drops out after its session" {
	mq-topic create t
	mq-topic create orders.eu
	run --separate-stderr mq-group create --session 1 t g
	assert_success
	run --separate-stderr mq-group create --ordered --session 1 t og
	assert_success
	run --separate-stderr mq-group create --session 1 'orders.*' w
	assert_success
	assert_equal "$(consumers t g)" 0
	spawn "$TD/a" mq-sub -f -g g t
	local a=$SPAWNED
	spawn "$TD/b" mq-sub -f -g g t
	local b=$SPAWNED
	spawn "$TD/o" mq-sub -f -g og t
	spawn "$TD/w" mq-sub -f -g w 'orders.*'
	wait_for consumers_are t g 2
	wait_for consumers_are t og 1
	wait_for consumers_are orders.eu w 1
	# Alive for longer than a session: their heartbeats keep them.
	sleep 2.5
	assert_equal "$(consumers t g)" 2
	assert_equal "$(consumers orders.eu w)" 1
	# kill -9: it counts until its session runs out (1 s).
	kill -9 "$a"
	wait_for -t 5 consumers_are t g 1
	# A clean stop leaves at once.
	kill -TERM "$b"
	wait_for -t 5 consumers_are t g 0
	run --separate-stderr mq-stat --check --crit 't/g:consumers<1' \
	    --crit 't/og:consumers<1'
	assert_equal "$status" 2
	assert_output "MQ CRITICAL - t/g consumers=0 (<1) | 't/g consumers'=0;;1:;0 't/og consumers'=1;;1:;0"
}

@test "--check: rates, latencies and consumers as thresholds" {
	mkgroup t g
	local k
	mq-pub -q t a b c
	k=$(queued t g | sed -n 1p)
	# Acked 90 s after it was published: a latency of about 90 s.
	local at=$(($(key_time_us "$k") / 1000000 + 90))
	MQ_NOW=$at mq-sub -g g -n 1 t >/dev/null
	READ=$((at + 1))
	run --separate-stderr env MQ_NOW=$READ mq-stat --check \
	    --warn 'latency-p99>60s' --crit 'latency-max>10m'
	assert_equal "$status" 1
	# (89 to 90 s: the publish time has microseconds.)
	local l='(89(\.[0-9]+)?|90)s'
	assert_output --regexp "^MQ WARNING - t/g latency-p99=$l \\(>60s\\) \\| 't/g latency-p99'=$l;60;;0 't/g latency-max'=$l;;600;0\$"
	# publish-rate is a topic's: scoped by topic; ack-rate over 5 min.
	run --separate-stderr env MQ_NOW=$READ mq-stat --check \
	    --warn 't:publish-rate<1' --crit 'ack-rate>100'
	assert_equal "$status" 1
	assert_output --regexp "^MQ WARNING - t publish-rate=0\\.[0-9]+ \\(<1\\) \\| 't publish-rate'=0\\.[0-9]+;1:;;0 't/g ack-rate'=0\\.[0-9]+;;100;0\$"
	run --separate-stderr mq-stat --check --warn 't/g:publish-rate>1'
	assert_equal "$status" 3
	assert_output --partial "publish-rate is a figure of a topic"
	run --separate-stderr mq-stat --check --warn 'nope:publish-rate>1'
	assert_equal "$status" 3
	assert_output "MQ UNKNOWN - $MQ_SPOOL: no topic nope to check"
}

@test "MQ_STATS=off counts nothing; a spool the user cannot write still publishes" {
	mkgroup t g
	MQ_STATS=off mq-pub -q t a
	MQ_STATS=off mq-sub -g g -n 1 t >/dev/null
	[[ ! -e $MQ_SPOOL/topics/t/stats ]] || fail "stats/ made with MQ_STATS=off"
	[[ ! -e $MQ_SPOOL/topics/t/groups/g.stats ]] || fail "g.stats/ made"
	run --separate-stderr mq-stat --json t g
	assert_equal "$(jq '.topics[0].published.total' <<<"$output")" 0
	assert_equal "$(jq '.groups[0].acked.total' <<<"$output")" 0
	# A counter file that cannot be made does not fail a publish.
	mkdir -p "$MQ_SPOOL/topics/t/stats"
	chmod 0555 "$MQ_SPOOL/topics/t/stats"
	if [[ $(id -u) == 0 ]]; then
		# root writes anyway: replace the directory with a file.
		chmod 0755 "$MQ_SPOOL/topics/t/stats"
		rmdir "$MQ_SPOOL/topics/t/stats"
		echo x >"$MQ_SPOOL/topics/t/stats"
	fi
	run --separate-stderr mq-pub -q t b
	assert_success
	assert_equal "$stderr" ''
	assert_equal "$(count_new t g)" 1
}

@test "a consumer of a shared group that cannot record its membership consumes all the same" {
	mkgroup t g
	mq-pub -q t a
	# Something that is not a directory where the members go.
	rm -rf "$MQ_SPOOL/topics/t/groups/g.members"
	echo x >"$MQ_SPOOL/topics/t/groups/g.members"
	run --separate-stderr mq-sub -g g -n 1 t
	assert_success
	assert_output a
	assert_equal "$stderr" ''
	# An ordered group needs its membership: that is an error there.
	mkgroup t og --ordered
	rm -rf "$MQ_SPOOL/topics/t/groups/og.members"
	echo x >"$MQ_SPOOL/topics/t/groups/og.members"
	run --separate-stderr mq-sub -g og -n 1 -t 0 t
	assert_failure
	assert_one_line_error mq-sub
}

@test "what replication brings is not counted on the replica; a dropped expired message is no ack" {
	export MQ_SPOOL=$TD/a
	local B=$TD/b
	mkgroup t g
	mq-pub -q t a b c
	mq-sub -g g -n 1 t >/dev/null
	run --separate-stderr mq-replicate push --rsh env --remote-spool "$B"
	assert_success
	run --separate-stderr mq-stat --json t g
	assert_equal "$(jq -c '[.topics[0].published.total, .groups[0].acked.total]' <<<"$output")" '[3,1]'
	run --separate-stderr mq-stat -s "$B" --json t g
	assert_success
	assert_equal "$(jq -c '[.topics[0].published.total, .groups[0].acked.total, .groups[0].pending]' <<<"$output")" '[0,0,2]'
	# Expired and dropped by the consumer that claims it: not acked.
	mq-topic create --ttl 1 --expired drop d
	mkgroup d g
	mq-pub -q d gone
	MQ_NOW=$(($(date +%s) + 5)) run --separate-stderr mq-sub -g g d
	assert_equal "$status" 1
	run --separate-stderr mq-stat --json d g
	assert_equal "$(jq -c '[.topics[0].published.total, .groups[0].acked.total, .groups[0].pending]' <<<"$output")" '[1,0,0]'
}
