#!/usr/bin/env bats
# Wildcard subscriptions: a group on every topic a pattern matches.

load helper

@test "wildcard: a subscription made before the topics gets theirs, not others'" {
	mkgroup 'orders.*' w
	mq-pub -q orders.eu eu1
	mq-pub -q orders.us us1
	mq-pub -q orders.eu.paid deep
	mq-pub -q invoices.eu other
	run -0 mq-sub -g w -F '%t %s\n' 'orders.*'
	assert_equal "$(echo "$output" | sort)" $'orders.eu eu1\norders.us us1'
	# Publishing into a topic the pattern does not match costs nothing:
	# no group there.
	[[ ! -e $MQ_SPOOL/topics/orders.eu.paid/groups/w.conf ]]
	[[ ! -e $MQ_SPOOL/topics/invoices.eu/groups/w.conf ]]
	grep -qx 'pattern=orders.\*' "$MQ_SPOOL/topics/orders.eu/groups/w.conf"
}

@test "wildcard: made after the topics, it gets what is published from then on" {
	mq-pub -q orders.eu old
	mkgroup 'orders.>' w
	mq-pub -q orders.eu new
	mq-pub -q orders.eu.paid deep
	mq-pub -q orders other
	run -0 mq-sub -g w -F '%t %s\n' 'orders.>'
	assert_equal "$(echo "$output" | sort)" $'orders.eu new\norders.eu.paid deep'
}

@test "wildcard: a running consumer picks up a topic created later" {
	mkgroup 'logs.*' w
	spawn "$TD/out" mq-sub -f -g w -F '%t %s\n' 'logs.*'
	sleep 0.2
	mq-pub -q logs.a one
	mq-pub -q logs.b two
	wait_for -t 5 grep -qx 'logs.b two' "$TD/out"
	grep -qx 'logs.a one' "$TD/out"
}

@test "wildcard: receipts name the message's topic" {
	mkgroup 'a.*' w
	mq-pub -q a.x hello
	run -0 mq-sub -g w --manual -F '%t %r' 'a.*'
	local topic=${output%% *} receipt=${output#* }
	assert_equal "$topic" a.x
	run -0 mq-ack -g w "$topic" "$receipt"
	assert_equal "$(count_cur a.x w)" 0
}

@test "wildcard: an ordered wildcard group keeps each partition's order" {
	mkgroup 'o.*' w --ordered
	seq 1 50 | mq-pub -q -l o.a
	seq 1 50 | mq-pub -q -l o.b
	run -0 mq-sub -g w -F '%t %s\n' 'o.*'
	assert_equal "$(echo "$output" | grep -c .)" 100
	assert_equal "$(echo "$output" | awk '$1 == "o.a" {print $2}' | tr '\n' ' ')" "$(seq 1 50 | tr '\n' ' ')"
	assert_equal "$(echo "$output" | awk '$1 == "o.b" {print $2}' | tr '\n' ' ')" "$(seq 1 50 | tr '\n' ' ')"
}

@test "wildcard: unsubscribing removes the groups it made and only those" {
	mkgroup u.b w
	mkgroup 'u.*' w
	mq-pub -q u.a one
	grep -qx 'pattern=u.\*' "$MQ_SPOOL/topics/u.a/groups/w.conf"
	run -0 mq-sub -g w --unsubscribe 'u.*'
	[[ ! -e $MQ_SPOOL/topics/u.a/groups/w.conf ]]
	[[ -e $MQ_SPOOL/topics/u.b/groups/w.conf ]]
	[[ ! -e $MQ_SPOOL/wildcards/u.*/w.conf ]]
	mq-pub -q u.c later
	[[ ! -e $MQ_SPOOL/topics/u.c/groups/w.conf ]]
}

@test "wildcard: bad patterns are refused and change nothing" {
	mq-topic create x
	local before; before=$(spool_snapshot)
	for bad in 'a.*x' 'a.>.b' 'a..*' '.*' '*.' 'a.**' 'a/*' '>>'; do
		run --separate-stderr mq-sub -g w -t 0 "$bad"
		assert_equal "$status" 64
		assert_one_line_error mq-sub
	done
	assert_equal "$(spool_snapshot)" "$before"
}

@test "wildcard: 1,000 subscriptions on other patterns do not reach a topic" {
	mkgroup 'hot.*' w
	for n in $(seq 1 1000); do
		mkdir -p "$MQ_SPOOL/wildcards/other$n.*"
		: >"$MQ_SPOOL/wildcards/other$n.*/g.conf"
	done
	mq-pub -q hot.a x
	assert_equal "$(ls "$MQ_SPOOL/topics/hot.a/groups" | grep -c '\.conf$')" 1
}

@test "wildcard: --from-time starts every matching topic at that time" {
	mq-pub -q w.a old1
	mq-pub -q w.b old2
	sleep 0.05
	local t0=$EPOCHREALTIME
	sleep 0.05
	mq-pub -q w.a new1
	run -0 mq-sub -g g --from-time "@$t0" -F '%t %s\n' 'w.*'
	assert_output 'w.a new1'
	grep -q '^from-time=' "$MQ_SPOOL/topics/w.b/groups/g.conf"
}

@test "wildcard: mq-group create, list and delete take a pattern" {
	run -0 mq-group create --ordered 'm.*' g
	mq-pub -q m.a hi
	run -0 mq-group list
	assert_line --regexp '^m\.a +g +ordered +1 +0 +0 +0 +1 +m\.\*$'
	assert_line --regexp '^m\.\* +g +ordered( +-){5} +m\.\*$'
	run --separate-stderr mq-group create 'm.*' g
	assert_equal "$status" 73
	run --separate-stderr mq-group create --from-offset 0:1 'm.*' g2
	assert_equal "$status" 64
	assert_one_line_error mq-group
	run -0 mq-group delete 'm.*' g
	run -0 mq-group list
	assert_output ''
}
