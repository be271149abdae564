#!/usr/bin/env bats
# mq-topic: create, list, info, delete.

load helper

HEAD_RE='^mq-head 1 next=([0-9]{20}) committed=([0-9]{20}) sum=[0-9a-f]{8}$'

@test "mq-topic --help prints usage and exits 0" {
	run --separate-stderr mq-topic --help
	assert_success
	assert_usage_output mq-topic
}

@test "mq-topic without a command, or with an unknown one, is a usage error (64)" {
	run --separate-stderr mq-topic
	assert_equal "$status" 64
	[[ -n $stderr ]]
	run --separate-stderr mq-topic frobnicate t
	assert_equal "$status" 64
	[[ -n $stderr ]]
	run --separate-stderr mq-topic create
	assert_equal "$status" 64
	[[ -n $stderr ]]
	run --separate-stderr mq-topic create --bogus t
	assert_equal "$status" 64
	[[ ! -e $MQ_SPOOL/topics/t ]]
}

@test "mq-topic create makes topic.conf, the partitions and their heads" {
	run --separate-stderr mq-topic create t
	assert_success
	assert_equal "$stderr" ""
	local d=$MQ_SPOOL/topics/t
	run grep -x 'partitions=1' "$d/topic.conf"
	assert_success
	run grep -x 'max-message-size=1048576' "$d/topic.conf"
	assert_success
	run grep -x 'retention=604800' "$d/topic.conf"
	assert_success
	[[ -d $d/p0/log ]]
	[[ ! -e $d/p1 ]]
	[[ $(cat "$d/p0/head") =~ $HEAD_RE ]]
	assert_equal "${BASH_REMATCH[1]}" 00000000000000000000
	assert_equal "${BASH_REMATCH[2]}" 00000000000000000000
	# Topics are built in tmp/ and renamed into place: nothing stays there.
	assert_equal "$(count_entries "$MQ_SPOOL/tmp")" 0
}

@test "mq-topic create --partitions --max-message-size --retention" {
	run --separate-stderr mq-topic create --partitions 3 --max-message-size 2048 --retention 3600 t
	assert_success
	local d=$MQ_SPOOL/topics/t k
	run grep -x 'partitions=3' "$d/topic.conf"
	assert_success
	run grep -x 'max-message-size=2048' "$d/topic.conf"
	assert_success
	run grep -x 'retention=3600' "$d/topic.conf"
	assert_success
	for k in 0 1 2; do
		[[ -d $d/p$k/log ]]
		[[ $(cat "$d/p$k/head") =~ $HEAD_RE ]]
	done
	[[ ! -e $d/p3 ]]
	# A group gets a queue in every partition.
	mkgroup t g
	for k in 0 1 2; do
		[[ -d $(group_dir t g $k)/new && -d $(group_dir t g $k)/cur ]]
	done
	run grep -x 'start.p2=0' "$d/groups/g.conf"
	assert_success
}

@test "mq-topic create --retention 0 means forever; durations take units" {
	run mq-topic create --retention 0 t
	assert_success
	run grep -x 'retention=0' "$MQ_SPOOL/topics/t/topic.conf"
	assert_success
	run mq-topic create --retention 1d u
	assert_success
	run grep -x 'retention=86400' "$MQ_SPOOL/topics/u/topic.conf"
	assert_success
}

@test "mq-topic create with bad settings is a usage error (64), creates nothing" {
	mq-topic create keep
	local snap opt
	snap=$(spool_snapshot)
	for opt in '--partitions 0' '--partitions 1025' '--partitions abc' \
	    '--max-message-size 0' '--max-message-size 268435457' '--max-message-size x' \
	    '--retention abc' '--retention -1'; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-topic create $opt t
		assert_equal "$status" 64
		[[ -n $stderr ]]
		assert_equal "$(spool_snapshot)" "$snap"
	done
	# The limits themselves are fine.
	run mq-topic create --partitions 1024 --max-message-size 268435456 big
	assert_success
	[[ -d $MQ_SPOOL/topics/big/p1023 ]]
}

@test "mq-topic create of an existing topic is 73 and leaves it alone" {
	mq-topic create --partitions 2 t
	mq-pub -q t hello
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-topic create t
	assert_equal "$status" 73
	assert_equal "$output" ""
	assert_one_line_error mq-topic
	[[ $stderr == *exists* ]]
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-topic list prints one name per line, sorted; nothing for an empty spool" {
	# A directory that is no spool yet stays that way: list only reads.
	run --separate-stderr mq-topic list
	assert_equal "$status" 66
	assert_one_line_error mq-topic
	assert_equal "$stderr" "mq-topic: no spool at $MQ_SPOOL"
	assert_equal "$(count_entries "$MQ_SPOOL")" 0
	mq-topic create b
	mq-topic delete b
	run --separate-stderr mq-topic list
	assert_success
	assert_equal "$output" ""
	mq-topic create b
	mq-topic create --partitions 2 a
	mq-pub -q c hello
	run --separate-stderr mq-topic list
	assert_success
	assert_output $'a\nb\nc'
	assert_equal "$(count_entries "$MQ_SPOOL/tmp")" 0
}

@test "mq-topic list --json is an array of {name, partitions}" {
	mq-topic create b
	mq-topic delete b
	run --separate-stderr mq-topic list --json
	assert_success
	run "$PY" -c 'import json, sys; assert json.loads(sys.argv[1]) == [], sys.argv[1]' "$output"
	assert_success
	mq-topic create b
	mq-topic create --partitions 2 a
	run --separate-stderr mq-topic list --json
	assert_success
	run "$PY" -c '
import json, sys
got = json.loads(sys.argv[1])
assert got == [{"name": "a", "partitions": 2}, {"name": "b", "partitions": 1}], got' "$output"
	assert_success
}

@test "mq-topic info --json: settings, heads, groups with pending and in-flight counts" {
	mq-topic create --partitions 2 --max-message-size 4096 --retention 60 t
	mkgroup t g1
	mq-pub -q -p 0 t a b c
	mq-pub -q -p 1 t d
	mkgroup t g2
	mq-sub --manual -n 1 -g g1 t >/dev/null
	run --separate-stderr mq-topic info --json t
	assert_success
	run "$PY" -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["name"] == "t" and o["partitions"] == 2, o
assert o["max_message_size"] == 4096 and o["retention"] == 60, o
pick = lambda d, ks: {k: d[k] for k in ks}
heads = sorted(o["heads"], key=lambda h: h["partition"])
heads = [pick(h, ("partition", "committed", "messages")) for h in heads]
assert heads == [{"partition": 0, "committed": 3, "messages": 3},
                 {"partition": 1, "committed": 1, "messages": 1}], heads
groups = sorted(o["groups"], key=lambda g: g["name"])
groups = [pick(g, ("name", "pending", "inflight")) for g in groups]
assert groups == [{"name": "g1", "pending": 3, "inflight": 1},
                  {"name": "g2", "pending": 0, "inflight": 0}], groups' "$output"
	assert_success
}

@test "mq-topic info prints the settings and the groups" {
	mq-topic create --partitions 2 t
	mkgroup t workers
	mq-pub -q t a
	run --separate-stderr mq-topic info t
	assert_success
	assert_output --partial workers
	assert_output --partial 2
	[[ ${#lines[@]} -ge 3 ]]
}

@test "mq-topic info of a missing topic is 66" {
	run --separate-stderr mq-topic info nope
	assert_equal "$status" 66
	assert_equal "$output" ""
	assert_one_line_error mq-topic
	[[ ! -e $MQ_SPOOL/topics/nope ]]
}

@test "mq-topic delete removes the topic, its groups and queues" {
	mq-topic create t
	mkgroup t g
	mq-pub -q t hello
	mq-sub --manual -g g t >/dev/null
	mq-pub -q keep hi
	run --separate-stderr mq-topic delete t
	assert_success
	assert_equal "$output" ""
	[[ ! -e $MQ_SPOOL/topics/t ]]
	[[ -d $MQ_SPOOL/topics/keep ]]
	assert_equal "$(count_entries "$MQ_SPOOL/tmp")" 0
	run mq-topic list
	assert_output keep
	# It can be created again, empty.
	run --separate-stderr mq-pub t again
	assert_success
	log_file t "00000000000000000000.$output" >/dev/null
}

@test "mq-topic delete of a missing topic is 66" {
	mq-topic create keep
	local snap
	snap=$(spool_snapshot)
	run --separate-stderr mq-topic delete nope
	assert_equal "$status" 66
	assert_one_line_error mq-topic
	assert_equal "$(spool_snapshot)" "$snap"
}

@test "mq-topic refuses invalid topic names (64)" {
	mq-topic create keep
	local snap cmd
	snap=$(spool_snapshot)
	for cmd in create info delete; do
		run --separate-stderr mq-topic "$cmd" ../keep
		assert_equal "$status" 64
		assert_one_line_error mq-topic
		assert_equal "$(spool_snapshot)" "$snap"
	done
}

@test "mq-topic -s SPOOL wins over MQ_SPOOL" {
	run mq-topic -s "$TD/other" create t
	assert_success
	[[ -f $TD/other/topics/t/topic.conf ]]
	run mq-topic -s "$TD/other" list
	assert_output t
	assert_equal "$(count_entries "$MQ_SPOOL")" 0
}

@test "mq-topic gc unlinks log names past retention, groups keep their messages" {
	# Format 1: format 2 keeps a segment a group still needs (format2.bats).
	mq-topic create --format 1 --retention 60 old
	mq-sub -g keep -t 0 old || true
	mq-pub -q old one two
	mq-topic create fresh
	mq-pub -q fresh three
	assert_equal "$(count_log old)" 2
	# Before the retention has passed nothing goes.
	run mq-topic gc old
	assert_success
	assert_output ""
	assert_equal "$(count_log old)" 2
	# 61 s later (injected clock) the log names go, for every topic with
	# no topic named; the 7-day default of "fresh" keeps its message.
	MQ_NOW=$(($(date +%s) + 61)) run mq-topic gc
	assert_success
	assert_equal "$(count_log old)" 0
	assert_equal "$(count_log fresh)" 1
	assert_equal "$(head_field old committed)" 2
	run mq-sub -g keep old
	assert_success
	assert_output $'one\ntwo'
}

@test "mq-topic gc of a missing topic is 66; retention 0 keeps everything" {
	run --separate-stderr mq-topic gc nosuch
	assert_equal "$status" 66
	assert_one_line_error mq-topic
	mq-topic create --retention 0 forever
	mq-pub -q forever x
	MQ_NOW=$(($(date +%s) + 10 * 365 * 86400)) run mq-topic gc forever
	assert_success
	assert_equal "$(count_log forever)" 1
}
