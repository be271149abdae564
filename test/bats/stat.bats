#!/usr/bin/env bats
# mq-stat: every figure against a spool in a known state, with the clock
# injected through MQ_NOW; the three outputs; -o and --watch.

load helper

# id_time ID: the publish time in a message id (its first 13 hex digits
# are microseconds), as seconds with six decimals.
id_time() {
	local us=$((16#${1:0:13}))
	printf '%d.%06d\n' $((us / 1000000)) $((us % 1000000))
}

# key_time KEY: the publish time in a KEY, its id's (id_time).
key_time() {
	id_time "${1:21}"
}

# known: topic t, group g (lease 60 s, max-attempts 1) with 1 dead letter,
# 1 delayed, 1 in flight (claimed at T0) and 2 pending (b, c), and a group
# h with the 2 pending and the claimed one pending.  Sets PA and PB (publish
# times of a, the oldest pending of h, and of b, the oldest pending of g)
# and T0 = PB + 1000.
known() {
	mkgroup t g --max-attempts 1 --lease 60
	mkgroup t h
	mq-pub -q t dead
	run --separate-stderr mq-sub --backoff 0 --exec 'exit 4' -g g t
	assert_equal "$status" 75
	mq-pub -q --delay 1h t later
	# h takes dead and finds later not due: in delay/ in both formats
	# (format 2 names it only once a consumer takes it from the log).
	assert_equal "$(mq-sub -g h -n 2 t)" dead
	local a b
	a=$(mq-pub t a)
	b=$(mq-pub t b c)
	b=${b%%$'\n'*}
	PA=$(id_time "$a")
	PB=$(id_time "$b")
	T0=$(echo "$PB + 1000" | bc)
	MQ_NOW=$T0 mq-sub -g g --manual -n 1 t >/dev/null
	assert_equal "$(count_cur t g)" 1
}

@test "the table: per group pending, in flight, delayed, dead and ages" {
	known
	local pa=$PA
	run --separate-stderr env MQ_NOW="$(echo "$T0 + 40" | bc)" mq-stat
	assert_success
	assert_line --index 0 --regexp '^TOPIC +GROUP +PENDING +IN-FLIGHT +DELAYED +DEAD +PENDING-AGE +LEASE-AGE$'
	assert_line --index 1 --regexp '^t +g +2 +1 +1 +1 +1040 +40$'
	# h: a (published before b), b and c pending; nothing in flight.
	local ha
	ha=$(echo "$T0 + 40 - $pa" | bc | xargs printf '%.0f')
	assert_line --index 2 --regexp "^t +h +3 +0 +1 +0 +$ha +-\$"
	assert_line 'stale temporary files: 0'
	assert_line --regexp '^FILESYSTEM +FREE-BYTES +FREE-INODES$'
	assert_line --regexp "^$MQ_SPOOL +[0-9]+ +[0-9]+\$"
	refute_line --regexp '^PEER'
	# One topic, one group.
	run --separate-stderr env MQ_NOW="$T0" mq-stat t g
	assert_success
	assert_line --index 1 --regexp '^t +g +2 +1 +1 +1 +1000 +0$'
	refute_line --regexp '^t +h '
	mq-topic create other
	mkgroup other x
	run --separate-stderr mq-stat t
	assert_success
	refute_line --regexp '^other '
	run --separate-stderr mq-stat
	assert_line --regexp '^other +x +0 +0 +0 +0 +- +-$'
}

@test "--json: the same figures, ages in seconds, null when none" {
	known
	run --separate-stderr env MQ_NOW="$(echo "$T0 + 40" | bc)" mq-stat --json t
	assert_success
	run "$PY" - "$output" "$MQ_SPOOL" "$T0" <<'PY'
import json, os, sys
o = json.loads(sys.argv[1])
t0 = float(sys.argv[3])
assert abs(o["time"] - (t0 + 40)) < 1e-3, o["time"]
g, h = o["groups"]
assert (g["topic"], g["group"], g["pending"], g["inflight"], g["delayed"],
        g["dead"], g["lease"]) == ("t", "g", 2, 1, 1, 1, 60.0), g
assert abs(g["oldest_pending_age"] - 1040) < 1e-3, g
assert abs(g["oldest_lease_age"] - 40) < 2e-3, g
assert abs(g["lease_soonest"] - (t0 + 60)) < 2e-3, g
assert h["group"] == "h" and h["inflight"] == 0, h
assert h["oldest_lease_age"] is None and h["lease_soonest"] is None, h
assert o["stale_tmp"] == 0 and o["replication"] is None, o
fs, = o["filesystems"]
v = os.statvfs(sys.argv[2])
assert fs["path"] == sys.argv[2], fs
assert abs(fs["free_bytes"] - v.f_bavail * v.f_frsize) < 256 << 20, fs
assert abs(fs["free_inodes"] - v.f_favail) < 10000, fs
PY
	assert_success
}

@test "stale temporary files: older than an hour, where mq-topic gc looks and in tmp/ directories" {
	mkgroup t g
	local now=2000000000 old=$((2000000000 - 3700)) fresh=$((2000000000 - 3500))
	local p=$MQ_SPOOL/topics/t
	mkdir -p "$MQ_SPOOL/tmp" "$p/p0/dlq/g"
	touch -d "@$old" "$MQ_SPOOL/tmp/topic.0123" "$MQ_SPOOL/.tmp.1" \
	    "$p/groups/.tmp.2" "$p/p0/g/g/tmp/own.3" "$p/p0/dlq/g/.tmp.4" \
	    "$p/.tmp.5"
	touch -d "@$fresh" "$MQ_SPOOL/tmp/topic.4567" "$p/groups/.tmp.6" \
	    "$p/p0/g/g/tmp/own.7"
	# Not temporary: a dot file of another name.
	touch -d "@$old" "$p/p0/dlq/g/.other"
	run --separate-stderr env MQ_NOW=$now mq-stat
	assert_success
	assert_line 'stale temporary files: 6'
	run --separate-stderr env MQ_NOW=$now mq-stat --prometheus
	assert_line 'mq_stale_tmp_files 6'
	# 200 s later the fresh ones are stale too.
	run --separate-stderr env MQ_NOW=$((now + 200)) mq-stat --json
	assert_equal "$(jq .stale_tmp <<<"$output")" 9
	# gc removes the stale dot files of groups/, by the same rule.
	MQ_NOW=$now mq-topic gc t
	[[ ! -e $p/groups/.tmp.2 && -e $p/groups/.tmp.6 ]]
}

@test "a placed partition's file system is shown by where it is" {
	require_root
	mount_tmpfs "$TD/disk2" size=8m,nr_inodes=1000
	mq-topic create --partitions 2 --place 1="$TD/disk2/t.p1" t
	run --separate-stderr mq-stat --json
	assert_success
	run "$PY" - "$output" "$MQ_SPOOL" "$TD/disk2/t.p1" <<'PY'
import json, sys
fs = json.loads(sys.argv[1])["filesystems"]
assert [f["path"] for f in fs] == sys.argv[2:], fs
assert 0 < fs[1]["free_bytes"] <= 8 << 20 and 0 < fs[1]["free_inodes"] <= 1000, fs
PY
	assert_success
}

# lagging_peer: spool A (MQ_SPOOL) replicated once to spool B, then 5
# more messages: B is 5 records behind.
lagging_peer() {
	A=$TD/a B=$TD/b
	export MQ_SPOOL=$A
	mq-group create t g
	seq 1 10 | mq-pub -l t >/dev/null
	run -0 mq-replicate -s "$A" push --rsh env --remote-spool "$B"
	seq 1 5 | mq-pub -l t >/dev/null
}

@test "replication peers: lag in records and seconds, state" {
	lagging_peer
	run --separate-stderr mq-stat
	assert_success
	assert_line --regexp '^PEER +STATE +LAG-RECORDS +LAG-SECONDS$'
	assert_line --regexp '^[^ ]+ +idle +5 +[0-9]+$'
	run --separate-stderr mq-stat --json
	assert_equal "$(jq -c '.replication[0] | [.id, .state, .lag_records, .lag_seconds >= 0]' <<<"$output")" \
	    "[\"$(cat "$B/ID")\",\"idle\",5,true]"
	run --separate-stderr mq-stat --prometheus
	assert_line --regexp '^mq_replication_lag_records\{peer="[^"]+"\} 5$'
	# A spool that never replicated has no peer section.
	run --separate-stderr mq-stat -s "$B"
	assert_success
	refute_line --regexp '^PEER'
}

# prom_check: $output is valid text exposition: every sample line matches
# the grammar, every metric has HELP and TYPE before its samples and no
# samples after another metric's (a summary's _sum and _count are its
# own), names are mq_ with a unit suffix or _total.
prom_check() {
	"$PY" - "$output" <<'PY'
import re, sys
name = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
label = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
sample = re.compile(r'^(%s)(?:\{(?:%s(?:,%s)*)?\})? (\S+)$' % (name, label, label))
units = ('_messages', '_seconds', '_bytes', '_inodes', '_files', '_records',
         '_consumers', '_per_second', '_total')
help_, type_, done, cur = set(), {}, set(), None
for line in sys.argv[1].split('\n'):
    m = re.match(r'^# (HELP|TYPE) (%s) (.*)$' % name, line)
    if m:
        kind, n, rest = m.groups()
        assert re.match(r'^mq_[a-z_]+$', n) and n.endswith(units), n
        if kind == 'HELP':
            assert n not in help_, 'second HELP ' + n
            help_.add(n)
        else:
            assert n in help_ and n not in type_, 'TYPE order ' + n
            assert rest in ('gauge', 'counter', 'summary', 'untyped'), rest
            assert (rest == 'counter') == n.endswith('_total'), n
            type_[n] = rest
        if cur != n:
            assert n not in done, 'metric split ' + n
            if cur:
                done.add(cur)
            cur = n
        continue
    assert not line.startswith('#'), line
    m = sample.match(line)
    assert m, 'bad sample: ' + repr(line)
    n, v = m.group(1), m.group(2)
    if type_.get(cur) == 'summary' and n in (cur + '_sum', cur + '_count'):
        n = cur
    else:
        assert 'quantile=' not in line or type_.get(cur) == 'summary', \
            'quantile outside a summary: ' + line
    assert n == cur and n in type_, 'sample before HELP/TYPE: ' + line
    float(v)
print(len(type_))
PY
}

@test "--prometheus: the exposition format, mq_ names with units, escaped labels" {
	known
	run --separate-stderr env MQ_NOW="$(echo "$T0 + 40" | bc)" mq-stat --prometheus
	assert_success
	local text=$output
	assert_line 'mq_pending_messages{topic="t",group="g"} 2'
	assert_line 'mq_inflight_messages{topic="t",group="g"} 1'
	assert_line 'mq_delayed_messages{topic="t",group="g"} 1'
	assert_line 'mq_dead_letter_messages{topic="t",group="g"} 1'
	assert_line --regexp '^mq_oldest_pending_age_seconds\{topic="t",group="g"\} 1040(\.0*[0-9]*)?$'
	# Within 2 ms, as --json: format 2 has the claim's start from its
	# deadline in ms.
	assert_line --regexp '^mq_oldest_lease_age_seconds\{topic="t",group="g"\} (40(\.00[0-9]*)?|39\.99[89][0-9]*)$'
	assert_line 'mq_oldest_lease_age_seconds{topic="t",group="h"} 0'
	assert_line --regexp "^mq_fs_free_bytes\\{path=\"$MQ_SPOOL\"\\} [0-9]+\$"
	assert_line --regexp "^mq_fs_free_inodes\\{path=\"$MQ_SPOOL\"\\} [0-9]+\$"
	assert_line '# TYPE mq_pending_messages gauge'
	# Counters: 5 published to t; h acked one (mq-sub -n 1), g none
	# (its one settled message was dead-lettered): no latency, NaN.
	assert_line 'mq_published_messages_total{topic="t"} 5'
	assert_line 'mq_acked_messages_total{topic="t",group="h"} 1'
	assert_line 'mq_acked_messages_total{topic="t",group="g"} 0'
	assert_line 'mq_ack_latency_seconds_count{topic="t",group="h"} 1'
	assert_line 'mq_ack_latency_seconds{topic="t",group="g",quantile="0.99"} NaN'
	assert_line '# TYPE mq_ack_latency_seconds summary'
	assert_line 'mq_consumers{topic="t",group="g"} 0'
	run prom_check
	assert_success
	assert_output 15
	# A spool path with a quote and a backslash: escaped in the label.
	local odd=$TD/sp\"o\\ol
	mq-topic -s "$odd" create x
	run --separate-stderr mq-stat -s "$odd" --prometheus
	assert_success
	assert_line --regexp '^mq_fs_free_bytes\{path=".*/sp\\"o\\\\ol"\} [0-9]+$'
	run prom_check
	assert_success
	# The checker itself rejects what is wrong.
	output=$'# HELP mq_x_messages h\nmq_x_messages 1\n'
	run prom_check
	assert_failure
	output=$'# HELP mq_pending h\n# TYPE mq_pending gauge\nmq_pending 1\n'
	run prom_check
	assert_failure
	output=$'# HELP mq_a_messages h\n# TYPE mq_a_messages gauge\nmq_a_messages{x="a"b"} 1\n'
	run prom_check
	assert_failure
}

@test "--prometheus: promtool check metrics has nothing to say" {
	command -v promtool >/dev/null || skip "no promtool (Debian: prometheus)"
	# Topics and groups in every state, a spool path that needs escaping
	# and a replication peer 5 records behind.
	export MQ_SPOOL=$TD/sp\"o\\ol
	mq-topic create --partitions 3 u
	mkgroup t g --lease 60
	mkgroup t h
	mkgroup u x
	kill_two v d
	mq-pub -q --delay 1h t later
	mq-pub -q u a b c
	mq-sub -g x --manual -n 1 u >/dev/null
	run -0 mq-replicate push --rsh env --remote-spool "$TD/b"
	seq 1 5 | mq-pub -l t >/dev/null
	run --separate-stderr mq-stat --prometheus
	assert_success
	local text=$output
	assert_line 'mq_pending_messages{topic="u",group="x"} 2'
	assert_line 'mq_dead_letter_messages{topic="v",group="d"} 2'
	assert_line --regexp '^mq_replication_lag_records\{peer="[^"]+"\} 5$'
	assert_line --regexp '^mq_fs_free_bytes\{path=".*/sp\\"o\\\\ol"\} [0-9]+$'
	run promtool check metrics <<<"$text"
	assert_success
	assert_output ''
	# Our own checker agrees.
	output=$text
	run prom_check
	assert_success
	assert_output 18
	# promtool does speak up when something is wrong.
	run promtool check metrics <<<$'# HELP mq_x_messages h\n# TYPE mq_x_messages counter\nmq_x_messages 1'
	assert_failure
	assert_output --partial '_total'
}

@test "-o FILE is replaced whole, readable, with nothing left beside it" {
	known
	mkdir "$TD/prom"
	echo old >"$TD/prom/mq.prom"
	run --separate-stderr mq-stat --prometheus -o "$TD/prom/mq.prom"
	assert_success
	assert_output ''
	assert_equal "$(ls -A "$TD/prom")" mq.prom
	assert_equal "$(stat -c %a "$TD/prom/mq.prom")" 644
	grep -qx 'mq_pending_messages{topic="t",group="g"} 2' "$TD/prom/mq.prom"
	run --separate-stderr mq-stat --json -o "$TD/prom/mq.json"
	assert_success
	assert_equal "$(jq '.groups | length' "$TD/prom/mq.json")" 2
	run --separate-stderr mq-stat -o "$TD/nodir/x.prom"
	assert_equal "$status" 73
	assert_one_line_error mq-stat
}

@test "--watch redraws until interrupted; -o with --watch rewrites the file" {
	mkgroup t g
	spawn "$TD/w" mq-stat --watch 0.1 t
	local pid=$SPAWNED
	wait_for grep -q '^t  *g  *0 ' "$TD/w"
	mq-pub -q t a
	wait_for grep -q '^t  *g  *1 ' "$TD/w"
	kill -TERM "$pid"
	wait_for exited "$pid"
	spawn "$TD/w2" mq-stat --watch 0.1 --prometheus -o "$TD/out.prom"
	wait_for grep -q 'mq_pending_messages{topic="t",group="g"} 1' "$TD/out.prom"
	mq-pub -q t b
	wait_for grep -q 'mq_pending_messages{topic="t",group="g"} 2' "$TD/out.prom"
	kill -TERM "$SPAWNED"
}

@test "errors: one line and a sysexits status" {
	mkgroup t g
	run --separate-stderr mq-stat nope
	assert_equal "$status" 66
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat t nope
	assert_equal "$status" 66
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat -s "$TD/missing"
	assert_equal "$status" 66
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat 'bad/name'
	assert_equal "$status" 64
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat --json --prometheus
	assert_equal "$status" 64
	run --separate-stderr mq-stat --watch 0
	assert_equal "$status" 64
	run --separate-stderr mq-stat a b c
	assert_equal "$status" 64
	run -0 mq-stat --help
	assert_usage_output mq-stat
}

# --check: a Nagios/Icinga plugin.  The known spool at T0 + 40: g has 2
# pending (the oldest 1040 s old), 1 in flight (for 40 s), 1 delayed and 1
# dead; h has 3 pending, 1 delayed, nothing in flight.
check_at() {
	run --separate-stderr env MQ_NOW="$(echo "$T0 + 40" | bc)" \
	    mq-stat --check "$@"
}

@test "--check OK: exit 0, one status line with performance data" {
	known
	check_at --warn 'pending>5' --crit 'dlq>1' --crit 't/g:age>1h'
	assert_equal "$status" 0
	assert_equal "$stderr" ''
	assert_equal "${#lines[@]}" 1
	assert_output "MQ OK - 5 figures within thresholds | 't/g pending'=2;5;;0 't/h pending'=3;5;;0 't/g dlq'=1;;1;0 't/h dlq'=0;;1;0 't/g age'=1040s;;3600;0"
}

@test "--check WARNING: exit 1, what crossed and the threshold" {
	known
	check_at --warn 'pending>2' --crit 'dlq>1'
	assert_equal "$status" 1
	assert_output "MQ WARNING - t/h pending=3 (>2) | 't/g pending'=2;2;;0 't/h pending'=3;2;;0 't/g dlq'=1;;1;0 't/h dlq'=0;;1;0"
	# Ages in seconds, with a duration: lease-age 40 s >= 30 s; nothing
	# in flight is 0.
	# (Within 2 ms: format 2 has a claim's start from its deadline in ms.)
	check_at --warn 'lease-age>=30s' t
	assert_equal "$status" 1
	local age='(40(\.00[0-9])?|39\.99[89])'
	assert_output --regexp "^MQ WARNING - t/g lease-age=${age}s \\(>=30s\\) \\| 't/g lease-age'=${age}s;@30:;;0 't/h lease-age'=0s;@30:;;0\$"
}

@test "--check CRITICAL: exit 2, the critical first, then the warnings" {
	known
	check_at --crit 'dlq>0' --crit 't/g:age>15m' --warn 'pending>=3' \
	    --warn 't/h:delayed=1' --warn 'inflight<=0'
	assert_equal "$status" 2
	assert_output "MQ CRITICAL - t/g dlq=1 (>0), t/g age=1040s (>900s); WARNING: t/h pending=3 (>=3), t/h delayed=1 (=1), t/h inflight=0 (<=0) | 't/g dlq'=1;;0;0 't/h dlq'=0;;0;0 't/g age'=1040s;;900;0 't/g pending'=2;@3:;;0 't/h pending'=3;@3:;;0 't/h delayed'=1;@1:1;;0 't/g inflight'=1;@~:0;;0 't/h inflight'=0;@~:0;;0"
	# A figure over both thresholds is critical, once.
	check_at --warn 't/g:pending>0' --crit 't/g:pending>1'
	assert_equal "$status" 2
	assert_output "MQ CRITICAL - t/g pending=2 (>1) | 't/g pending'=2;0;1;0"
}

@test "--check: scopes, a topic and a group, and the TOPIC GROUP arguments" {
	known
	mkgroup u x
	mq-pub -q u m1 m2 m3 m4
	# Unscoped: every group of every topic.
	check_at --warn 'pending>3'
	assert_equal "$status" 1
	assert_output --partial "MQ WARNING - u/x pending=4 (>3) | "
	# Scoped to topic t: u's groups are not checked.
	check_at --warn 't:pending>3'
	assert_equal "$status" 0
	assert_output "MQ OK - 2 figures within thresholds | 't/g pending'=2;3;;0 't/h pending'=3;3;;0"
	# Scoped to a group.
	check_at --crit 't/h:pending>2'
	assert_equal "$status" 2
	assert_output "MQ CRITICAL - t/h pending=3 (>2) | 't/h pending'=3;;2;0"
	# The arguments restrict what is read, as in the other modes.
	check_at --warn 'pending>3' t g
	assert_equal "$status" 0
	assert_output "MQ OK - 1 figure within thresholds | 't/g pending'=2;3;;0"
	# A scope outside them, or naming no group, is unknown, not OK.
	check_at --warn 'u:pending>3' t
	assert_equal "$status" 3
	assert_output "MQ UNKNOWN - $MQ_SPOOL: topic t: no group u to check"
	check_at --warn 't/nope:pending>3'
	assert_equal "$status" 3
	assert_output "MQ UNKNOWN - $MQ_SPOOL: no group t/nope to check"
}

@test "--check: spool figures, per file system and for the spool" {
	known
	check_at --warn 'free-bytes<1K' --warn 'free-inodes<=0' --crit 'stale-tmp>0'
	assert_equal "$status" 0
	assert_output --regexp "^MQ OK - 3 figures within thresholds \\| '$MQ_SPOOL free-bytes'=[0-9]+B;1024:;;0 '$MQ_SPOOL free-inodes'=[0-9]+;@~:0;;0 'stale-tmp'=0;;0;0\$"
	check_at --crit 'free-bytes<1000T'
	assert_equal "$status" 2
	assert_output --regexp "^MQ CRITICAL - $MQ_SPOOL free-bytes=[0-9]+B \\(<1099511627776000B\\) \\| "
	# No peers: nothing to check for lag.
	check_at --crit 'lag>0' --crit 'lag-seconds>0'
	assert_equal "$status" 0
	assert_output 'MQ OK - 0 figures within thresholds'
}

@test "--check: replication lag per peer" {
	lagging_peer
	run --separate-stderr mq-stat --check --warn 'lag>4' --crit 'lag>10'
	assert_equal "$status" 1
	assert_output --regexp "^MQ WARNING - peer [^ ]+ lag=5 \\(>4\\) \\| 'peer [^ ]+ lag'=5;4;10;0\$"
}

@test "--check UNKNOWN: exit 3 and one line for every failure" {
	mkgroup t g
	# A missing spool.
	run --separate-stderr mq-stat -s "$TD/missing" --check --crit 'dlq>0'
	assert_equal "$status" 3
	assert_output "MQ UNKNOWN - no spool at $TD/missing"
	assert_equal "$stderr" ''
	# Bad expressions.
	local e
	for e in 'dlq' 'dlq>' 'dlq>x' 'nope>1' 'age>5y' 'pending>1K' \
	    'bad/na/me:dlq>0' 't:free-bytes<1' 'dlq=>1' 'free-bytes<1Q'; do
		run --separate-stderr mq-stat --check --crit "$e"
		assert_equal "$status" 3
		assert_equal "${#lines[@]}" 1
		assert_output --regexp '^MQ UNKNOWN - '
		assert_equal "$stderr" ''
	done
	run --separate-stderr mq-stat --check --crit 'nope>1'
	assert_output --partial "MQ UNKNOWN - bad threshold 'nope>1': unknown figure 'nope'"
	# No threshold, a bad option, a missing topic, other modes.
	run --separate-stderr mq-stat --check
	assert_equal "$status" 3
	assert_output 'MQ UNKNOWN - --check: no threshold (--warn or --crit)'
	run --separate-stderr mq-stat --crit 'dlq>0' --bogus --check
	assert_equal "$status" 3
	assert_output 'MQ UNKNOWN - bad option --bogus, or no argument'
	run --separate-stderr mq-stat --check --crit 'dlq>0' nope
	assert_equal "$status" 3
	assert_output --regexp '^MQ UNKNOWN - .*nope'
	run --separate-stderr mq-stat --check --crit 'dlq>0' --json
	assert_equal "$status" 3
	run --separate-stderr mq-stat --check --crit 'dlq>0' t g extra
	assert_equal "$status" 3
	assert_output --regexp '^MQ UNKNOWN - usage: '
	# Outside --check the usual statuses hold.
	run --separate-stderr mq-stat --crit 'dlq>0'
	assert_equal "$status" 64
	assert_one_line_error mq-stat
}

# states: one message M (ttl 1 h) in topic t, and a group in each state:
# p pending, f in flight at its second delivery, d given back with a delay
# of 1 h, x dead (max-attempts 1, a handler that fails), e dead because it
# expired (claimed 2 h later), a acked.  Sets M, and LATER (2 h on).
states() {
	local g r
	for g in p f d e a; do
		mkgroup t "$g"
	done
	mkgroup t x --max-attempts 1
	M=$(mq-pub --ttl 1h t m)
	run -0 mq-sub -g a -n 1 t
	r=$(mq-sub -g f --manual -n 1 -F '%r' t)
	mq-ack -g f --nack t "$r"
	mq-sub -g f --manual -n 1 -F '%r' t >/dev/null
	r=$(mq-sub -g d --manual -n 1 -F '%r' t)
	mq-ack -g d --nack --delay 1h t "$r"
	run --separate-stderr mq-sub -g x --backoff 0 --exec 'echo no >&2; exit 4' t
	assert_equal "$status" 75
	LATER=$(($(date +%s) + 7200))
	run -1 env MQ_NOW=$LATER mq-sub -g e -t 0 t
	# Another message, so that M is not the only one.
	mq-pub -q t other
}

rfc3339_re='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'

@test "--message: the state in each group, one line per group" {
	states
	run --separate-stderr mq-stat --message "$M"
	assert_success
	assert_equal "${#lines[@]}" 6
	local r=$rfc3339_re
	assert_line --index 0 't/a acked'
	assert_line --index 1 --regexp "^t/d delayed attempts=1 due=$r expires=$r\$"
	assert_line --index 2 --regexp "^t/e expired attempts=1 in=dlq reason=expired time=$r\$"
	assert_line --index 3 --regexp "^t/f in-flight attempts=2 lease-deadline=$r\$"
	assert_line --index 4 --regexp "^t/p pending attempts=0 expires=$r\$"
	assert_line --index 5 --regexp "^t/x dead attempts=1 reason=max-attempts time=$r\$"
	# The lease deadline is the one of its claim (its cur/ name's).
	local ms
	ms=$(lease_now t f)
	assert_line --index 3 "t/f in-flight attempts=2 lease-deadline=$(date -u -d "@$((ms / 1000))" +%FT%T).$(printf %03d $((ms % 1000)))Z"
	# Upper case and a TOPIC argument.
	run --separate-stderr mq-stat --message "${M^^}" t
	assert_success
	assert_equal "${#lines[@]}" 6
	# Past its Mq-Expires, a pending or delayed message is expired.
	run --separate-stderr env MQ_NOW=$LATER mq-stat --message "$M" t
	assert_success
	assert_line --index 1 --regexp "^t/d expired attempts=1 due=$r expires=$r in=delay\$"
	assert_line --index 3 --regexp "^t/f in-flight attempts=2 "
	assert_line --index 4 --regexp "^t/p expired attempts=0 expires=$r in=$(fresh_in t)\$"
}

@test "--message --json: the same, with partition, seq and times" {
	states
	run --separate-stderr mq-stat --json --message "$M"
	assert_success
	run "$PY" - "$output" "$M" "$(fresh_in t)" <<'PY'
import json, sys
o = json.loads(sys.argv[1])
assert o["id"] == sys.argv[2], o
g = {x["group"]: x for x in o["groups"]}
assert sorted(g) == ["a", "d", "e", "f", "p", "x"], g
for x in g.values():
    assert x["topic"] == "t" and x["partition"] == 0 and x["seq"] == 0, x
assert g["a"]["state"] == "acked" and g["a"]["in"] is None, g["a"]
assert g["p"]["state"] == "pending" and g["p"]["in"] == sys.argv[3], g["p"]
assert g["p"]["expires"].endswith("Z"), g["p"]
assert g["f"]["state"] == "in-flight" and g["f"]["attempts"] == 2, g["f"]
assert g["f"]["lease_deadline"].endswith("Z"), g["f"]
assert g["d"]["state"] == "delayed" and g["d"]["due"].endswith("Z"), g["d"]
assert g["x"]["state"] == "dead" and g["x"]["reason"] == "max-attempts", g["x"]
assert g["x"]["detail"] == "" and g["x"]["time"].endswith("Z"), g["x"]
assert g["e"]["state"] == "expired" and g["e"]["in"] == "dlq", g["e"]
assert g["e"]["reason"] == "expired", g["e"]
PY
	assert_success
}

@test "--message: found in the groups after retention removed the log name" {
	# Format 1: format 2 keeps a segment a group still needs.
	mq-topic create --format 1 --retention 60 t
	mkgroup t g
	mkgroup t h
	local m
	m=$(mq-pub t m)
	run -0 mq-sub -g h -n 1 t
	MQ_NOW=$(($(date +%s) + 3600)) mq-topic gc t
	assert_equal "$(count_log t)" 0
	run --separate-stderr mq-stat --message "$m"
	assert_success
	assert_output "t/g pending attempts=0
t/h acked"
}

@test "--message: a missing id is 66, a bad one 64, one line" {
	mkgroup t g
	mq-pub -q t a
	run --separate-stderr mq-stat --message 0123456789abcdef0123456789abcdef
	assert_equal "$status" 66
	assert_output ''
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat --message 0123456789abcdef0123456789abcdef t
	assert_equal "$status" 66
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat --message nothex
	assert_equal "$status" 64
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat --message 0123456789abcdef0123456789abcdef nope
	assert_equal "$status" 66
	assert_one_line_error mq-stat
	run --separate-stderr mq-stat --message 0123456789abcdef0123456789abcdef --prometheus
	assert_equal "$status" 64
	run --separate-stderr mq-stat --message 0123456789abcdef0123456789abcdef t g
	assert_equal "$status" 64
}

@test "bash completion: options, topics, then the topic's groups" {
	mkgroup t g
	mkgroup u h
	complete_words() { completions _mq_stat "$@"; }
	assert_equal "$(complete_words mq-stat --p | tr '\n' ' ')" "--prometheus --peek "
	assert_equal "$(complete_words mq-stat --peek -F '%s' -n 2 t '')" g
	assert_equal "$(complete_words mq-stat --json '' | tr '\n' ' ')" "t u "
	assert_equal "$(complete_words mq-stat --watch 2 t '')" g
	assert_equal "$(complete_words mq-stat -s "$MQ_SPOOL" u '')" h
	assert_equal "$(complete_words mq-stat --check --crit d | tr '\n' ' ')" "delayed dlq "
	assert_equal "$(complete_words mq-stat --check --warn t/g:le)" t/g:lease-age
	assert_equal "$(complete_words mq-stat --check --warn t/g:latency-p | tr '\n' ' ')" "t/g:latency-p50 t/g:latency-p90 t/g:latency-p99 "
	# publish-rate is a topic's: offered with a topic scope, not a group's.
	assert_equal "$(complete_words mq-stat --check --warn t:pu)" t:publish-rate
	assert_equal "$(complete_words mq-stat --check --warn t/g:pu)" ''
	assert_equal "$(complete_words mq-stat --check --crit co)" consumers
	assert_equal "$(complete_words mq-stat --ch)" --check
	assert_equal "$(complete_words mq-stat --mes)" --message
	assert_equal "$(complete_words mq-stat --check --warn 'dlq>0' '')" "$(printf 't\nu')"
}

# rfc3339 SECONDS: a whole second as mq-stat --message shows it.
rfc3339() {
	date -u -d "@$1" +%FT%T.000Z
}

@test "--message: filtered, where the group's filter does not match" {
	mq-group create --filter '.region == "eu"' t eu
	mq-group create --match 'Region=eu-*' t hdr
	mq-group create t all
	local us eu
	us=$(mq-pub -H 'Region: us-1' t '{"region": "us"}')
	eu=$(mq-pub -H 'Region: eu-1' t '{"region": "eu"}')
	run --separate-stderr mq-stat --message "$us"
	assert_success
	assert_output "t/all pending attempts=0
t/eu filtered
t/hdr filtered"
	run --separate-stderr mq-stat --json --message "$us" t
	assert_success
	assert_equal "$(jq -c '.groups[] | [.group, .state, .in, .attempts]' <<<"$output")" \
	    '["all","pending","'"$(fresh_in t)"'",0]
["eu","filtered",null,0]
["hdr","filtered",null,0]'
	# What matched entered the queue; once consumed it is acked.
	run --separate-stderr mq-stat --message "$eu"
	assert_output "t/all pending attempts=0
t/eu pending attempts=0
t/hdr pending attempts=0"
	run -0 mq-sub -g eu -n 1 t
	run --separate-stderr mq-stat --message "$eu"
	assert_line --index 1 't/eu acked'
	# Held by no group at all: only the log's link is left.
	mq-group create --filter '.region == "eu"' u eu
	us=$(mq-pub u '{"region": "us"}')
	assert_equal "$(stat -c %h "$MQ_SPOOL/topics/u/p0/log/"*)" 1
	run --separate-stderr mq-stat --message "$us"
	assert_success
	assert_output 'u/eu filtered'
	# Retention removed the log name: the filter reads the file through
	# the name another group holds (format 1: format 2 keeps a segment a
	# group still needs).
	mq-topic create --format 1 --retention 60 w
	mq-group create --filter '.region == "eu"' w eu
	mq-group create w all
	us=$(mq-pub w '{"region": "us"}')
	MQ_NOW=$(($(date +%s) + 3600)) mq-topic gc w
	assert_equal "$(count_log w)" 0
	run --separate-stderr mq-stat --message "$us"
	assert_success
	assert_output "w/all pending attempts=0
w/eu filtered"
}

@test "--message: before-start, published before the group's start and not backfilled" {
	mq-group create t early
	local m0 m1 k1
	m0=$(mq-pub t zero)
	m1=$(mq-pub t one)
	k1=$(log_keys t | sed -n 2p)
	mq-group create t late
	mq-group create --from-start t all
	mq-group create --from-offset 0:1 t off
	mq-group create --from-time "@$(key_time "$k1")" t time
	run --separate-stderr mq-stat --message "$m0"
	assert_success
	assert_output "t/all pending attempts=0
t/early pending attempts=0
t/late before-start
t/off before-start
t/time before-start"
	run --separate-stderr mq-stat --message "$m1"
	assert_success
	assert_output "t/all pending attempts=0
t/early pending attempts=0
t/late before-start
t/off pending attempts=0
t/time pending attempts=0"
	run --separate-stderr mq-stat --json --message "$m0"
	assert_equal "$(jq -c '.groups[] | select(.group == "late") | [.state, .in]' <<<"$output")" \
	    '["before-start",null]'
	# A backfill cut short: what it has yet to link is pending, nowhere
	# (format 1: in format 2 a group starts at its cursor, with nothing
	# to link).
	is_format2 t && return
	local conf=$MQ_SPOOL/topics/t/groups/all.conf
	sed -i 's/^state=ready$/state=backfill/' "$conf"
	rm "$(group_dir t all)/new/$k1"
	run --separate-stderr mq-stat --message "$m1"
	assert_line --index 0 't/all pending'
	run --separate-stderr mq-stat --json --message "$m1"
	assert_equal "$(jq -c '.groups[0] | [.state, .in]' <<<"$output")" \
	    '["pending",null]'
}

@test "--message: expired, dropped by a consumer past its Mq-Expires" {
	# Format 1: the drop is told by the group's journal record, which
	# format 2 does not write yet (mq-spool(5), Stages).
	mq-topic create --format 1 --expired drop t
	mq-group create t a
	mq-group create t e
	mq-group create t p
	local t0 m
	t0=$(date +%s)
	m=$(MQ_NOW=$t0 mq-pub --ttl 1h t m)
	# a acknowledges it before it expires; e claims it 2 h later and
	# drops it; p leaves it pending.
	run -0 mq-sub -g a -n 1 t
	run -1 env MQ_NOW=$((t0 + 7200)) mq-sub -g e -t 0 t
	assert_output ''
	run --separate-stderr env MQ_NOW=$((t0 + 7300)) mq-stat --message "$m"
	assert_success
	assert_output "t/a acked
t/e expired expires=$(rfc3339 $((t0 + 3600))) time=$(rfc3339 $((t0 + 7200)))
t/p expired attempts=0 expires=$(rfc3339 $((t0 + 3600))) in=new"
	run --separate-stderr env MQ_NOW=$((t0 + 7300)) mq-stat --json --message "$m"
	assert_equal "$(jq -c '.groups[1] | [.group, .state, .in, .expires, .time]' <<<"$output")" \
	    "[\"e\",\"expired\",null,\"$(rfc3339 $((t0 + 3600)))\",\"$(rfc3339 $((t0 + 7200)))\"]"
	# Where expired messages are dead-lettered instead, a message that
	# left the queue was acknowledged.
	mq-group create u a
	m=$(MQ_NOW=$t0 mq-pub --ttl 1h u m)
	run -0 mq-sub -g a -n 1 u
	run --separate-stderr env MQ_NOW=$((t0 + 7300)) mq-stat --message "$m"
	assert_output 'u/a acked'
}

@test "--message: a topic without groups has the message, in its partition" {
	mq-topic create --partitions 2 t
	local m
	m=$(mq-pub -p 1 t m)
	run --separate-stderr mq-stat --message "$m"
	assert_success
	assert_output 't partition 1: no group subscribes'
	run --separate-stderr mq-stat --message "$m" t
	assert_success
	assert_output 't partition 1: no group subscribes'
	run --separate-stderr mq-stat --json --message "$m"
	assert_success
	assert_output "{\"id\":\"$m\",\"topic\":\"t\",\"partition\":1,\"seq\":0,\"groups\":[]}"
	# With groups, the message's place is in the object too.
	mq-group create t g
	m=$(mq-pub -p 0 t n)
	run --separate-stderr mq-stat --json --message "$m"
	assert_equal "$(jq -c '[.topic, .partition, .seq, (.groups | length)]' <<<"$output")" \
	    '["t",0,0,1]'
	# An id in no topic is still not found.
	run --separate-stderr mq-stat --message 0123456789abcdef0123456789abcdef
	assert_equal "$status" 66
	assert_one_line_error mq-stat
}

@test "--peek: the next 2 of 5 pending, read-only; a consumer then gets all 5 in order" {
	mkgroup t g
	local n
	for n in 1 2 3 4 5; do mq-pub -q -H "X-N: $n" t "m$n"; done
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-stat --peek -n 2 t g
	assert_success
	assert_equal "$output" $'m1\nm2'
	run --separate-stderr mq-stat --peek -F '%o:%{X-N}h:%a:%r|' t g
	assert_success
	assert_equal "$output" "0:1:0:|1:2:0:|2:3:0:|3:4:0:|4:5:0:|"
	run --separate-stderr mq-stat --peek --json -n 1 t g
	assert_success
	assert_equal "$(jq -c '[.body, .headers, .attempts, .seq]' <<<"$output")" '["m1",{"X-N":"1"},0,0]'
	mq-stat --peek -0 -n 2 t g | od -An -c >"$TD/od"
	assert_equal "$(echo $(cat "$TD/od"))" 'm 1 \0 m 2 \0'
	# Nothing moved, renamed, written or touched: new/ byte for byte.
	assert_equal "$(spool_snapshot)" "$snap"
	assert_equal "$(count_new t g)" 5
	run --separate-stderr mq-sub -g g t
	assert_success
	assert_equal "$output" $'m1\nm2\nm3\nm4\nm5'
	# Nothing pending: 1, as mq-sub.
	run --separate-stderr mq-stat --peek t g
	assert_equal "$status" 1
	assert_equal "$output" ""
}

@test "--peek: partitions in turn, as one consumer takes them; a claimed message is not shown" {
	mq-topic create --partitions 2 t
	mkgroup t g
	mq-pub -q -k a t a1 a2
	mq-pub -q -k b t b1 b2
	mq-sub -g g --manual -n 1 t >/dev/null
	run --separate-stderr mq-stat --peek -F '%s ' t g
	assert_success
	local want=$output
	run --separate-stderr mq-sub -g g -F '%s ' t
	assert_equal "$output" "$want"
	assert_equal "$(wc -w <<<"$want")" 3
}

@test "--peek --message: a waiting message by id; an acked one is 66, one line" {
	mkgroup t g
	local id1 id2
	id1=$(mq-pub -H 'Reply-To: r' t one)
	id2=$(mq-pub t two)
	run --separate-stderr mq-stat --peek --message "$id2" -F '%i %s %{Reply-To}h|\n'
	assert_success
	assert_equal "$output" "$id2 two |"
	mq-sub -g g -n 1 t >/dev/null
	run --separate-stderr mq-stat --peek --message "$id1" t g
	assert_equal "$status" 66
	assert_equal "$output" ""
	assert_one_line_error mq-stat
	[[ $stderr == *"message $id1 waits in no group g: t/g acked" ]] || fail "$stderr"
	# In flight: shown, with its deliveries so far.
	mq-sub -g g --manual -n 1 t >/dev/null
	run --separate-stderr mq-stat --peek --message "$id2" -F '%a %s'
	assert_success
	assert_equal "$output" "1 two"
	run --separate-stderr mq-stat --peek t
	assert_equal "$status" 64
	run --separate-stderr mq-stat --peek -n 2 --message "$id2"
	assert_equal "$status" 64
	run --separate-stderr mq-stat -F '%s' t g
	assert_equal "$status" 64
	run --separate-stderr mq-stat --peek t nosuch
	assert_equal "$status" 66
	assert_one_line_error mq-stat
}
