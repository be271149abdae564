#!/usr/bin/env bats
# Ordered consumer groups: one owner per partition, strict sequence,
# takeover after the session timeout, offsets.

load helper

# owners TOPIC GROUP: the member holding each partition's token, one line
# per partition ("-" when free).
owners() {
	local d
	for d in "$MQ_SPOOL/topics/$1"/p*/g/"$2"/own; do
		ls "$d" | sed 's/,l[0-9]*$//'
	done
}

# distinct_owners TOPIC GROUP N: N different owners (or "-") hold the
# partitions.
distinct_owners() {
	[[ $(owners "$1" "$2" | sort -u | wc -l) == "$3" ]]
}

# split_evenly TOPIC GROUP: two members own two partitions each.
split_evenly() {
	[[ $(owners "$1" "$2" | sort | uniq -c | awk '$1 == 2 && $2 != "-"' | wc -l) == 2 ]]
}

# lines_at_least N FILE...: the files hold at least N lines together.
lines_at_least() {
	local n=$1
	shift
	(($(cat "$@" | wc -l) >= n))
}

# distinct_bodies N FILE...: N different third fields in the files.
distinct_bodies() {
	local n=$1
	shift
	[[ $(cat "$@" | awk '{print $3}' | sort -u | wc -l) == "$n" ]]
}

# ordered_check FILE: every partition's sequence numbers strictly increase
# through FILE (lines "PARTITION SEQ ..."), and no line repeats.
ordered_check() {
	awk '{ if (($1 in last) && $2 <= last[$1]) { print "partition " $1 ": " $2 " after " last[$1]; bad = 1 } last[$1] = $2 }
	     END { exit bad }' "$1"
	[[ $(sort "$1" | uniq -d | wc -l) == 0 ]] || fail "a message was delivered twice"
}

@test "ordered: per-key order, 4 producers and 3 consumers over 8 partitions, 20,000 messages, each once" {
	mq-topic create --partitions 8 t
	mkgroup t og --ordered
	local c p
	for c in 1 2 3; do
		spawn "$TD/c$c.out" sh -c "exec mq-sub -f -t 4 -g og -F '%p %o %k %s c$c\n' t >> '$TD/shared'"
	done
	for p in 1 2 3 4; do
		(
			for k in $(seq 0 49); do
				seq 1 100 | sed "s/^/P$p:k$k:/" | mq-pub -q -l -k "k$k" t
			done
		) &
	done
	wait
	wait_for -t 60 lines_at_least 20000 "$TD/shared"
	for c in 1 2 3; do
		wait_for -t 20 exited "$(sed -n ${c}p "$TD/.pids")"
	done
	assert_equal "$(wc -l < "$TD/shared")" 20000
	assert_equal "$(awk '{print $4}' "$TD/shared" | sort -u | wc -l)" 20000
	ordered_check "$TD/shared"
	# Per key and producer, the bodies come in the order they were sent.
	awk '{ split($4, f, ":"); n = f[3] + 0; id = f[1] ":" f[2];
	       if ((id in last) && n <= last[id]) { print id " " n " after " last[id]; bad = 1 } last[id] = n }
	     END { exit bad }' "$TD/shared"
	# More than one consumer did work, and all tokens are free again.
	assert [ "$(cat "$TD"/c?.out.err | wc -c)" -eq 0 ]
	(($(awk '{print $5}' "$TD/shared" | sort -u | wc -l) >= 2)) ||
	    fail "one consumer did all the work"
	run owners t og
	assert_equal "$(echo "$output" | sort -u)" "-"
}

@test "ordered: a killed member's partitions are taken over within the session; nothing lost" {
	mq-topic create --partitions 4 t
	mkgroup t og --ordered --session 2
	spawn "$TD/a.out" mq-sub -f -g og -F '%p %o %s\n' t
	local a=$SPAWNED
	wait_for distinct_owners t og 1
	[[ $(owners t og | sort -u) != - ]] || fail "no owner"
	spawn "$TD/b.out" mq-sub -f -g og -F '%p %o %s\n' t
	# Both members end up with two partitions each.
	wait_for split_evenly t og
	seq 1 400 | mq-pub -q -l t
	wait_for lines_at_least 400 "$TD/a.out" "$TD/b.out"
	kill -9 "$a"
	local killed; killed=$(now_ms)
	seq 401 800 | mq-pub -q -l t
	# b owns everything within the session (2 s) and a little.
	wait_for -t 6 distinct_owners t og 1
	local took=$(( $(now_ms) - killed ))
	((took < 3500)) || fail "takeover took $took ms"
	wait_for -t 10 distinct_bodies 800 "$TD/a.out" "$TD/b.out"
	cat "$TD/a.out" "$TD/b.out" > "$TD/all"
	# At most the messages a was holding come again.
	local dup; dup=$(( $(wc -l < "$TD/all") - 800 ))
	((dup <= 4)) || fail "$dup messages delivered twice"
	ordered_check "$TD/b.out"
}

@test "ordered: a message in flight holds back its partition" {
	mq-topic create t
	mkgroup t og --ordered
	seq 1 3 | mq-pub -q -l t
	run -0 mq-sub -g og --manual -n 1 -F '%s %r\n' t
	assert_equal "${output%% *}" 1
	local receipt=${output#* }
	# Shared groups would hand out 2 now; an ordered one waits.
	run mq-sub -g og -t 0.3 t
	assert_equal "$status" 1
	mq-ack -g og t "$receipt"
	run -0 mq-sub -g og t
	assert_output $'2\n3'
}

@test "ordered: a failing head is retried, dead-lettered, and the partition moves on" {
	mq-topic create t
	mkgroup t og --ordered --max-attempts 3
	printf '%s\n' a bad c | mq-pub -q -l t
	run mq-sub -g og --backoff 0.01 --exec 'body=$(cat); [ "$body" != bad ] && echo "$body $MQ_ATTEMPTS" >> '"$TD/log"'; [ "$body" != bad ]' -f -t 2 t
	assert_equal "$(cat "$TD/log")" $'a 1\nc 1'
	run -0 mq-dlq count -g og t
	assert_output 1
	run -0 mq-dlq list --json -g og t
	assert_output --partial '"attempts":3'
	assert_output --partial '"reason":"max-attempts"'
}

@test "ordered: a nack with a delay keeps the head waiting, then delivers it first" {
	mq-topic create t
	mkgroup t og --ordered
	seq 1 2 | mq-pub -q -l t
	run -0 mq-sub -g og --manual -n 1 -F '%r' t
	mq-ack -g og --nack --delay 0.5 t "$output"
	run mq-sub -g og -t 0.2 t
	assert_equal "$status" 1
	run -0 mq-sub -g og -n 1 -t 3 -F '%s %a\n' t
	assert_output '1 2'
	run -0 mq-sub -g og -F '%s %a\n' t
	assert_output '2 1'
}

@test "ordered: mq-sub --ordered groups refuse a bad session" {
	run --separate-stderr mq-sub -g og --ordered --session 0 t
	assert_equal "$status" 64
	assert_one_line_error mq-sub
}

@test "commit: acks everything below the offset, in one partition" {
	mq-topic create --partitions 2 t
	mkgroup t g
	seq 0 9 | mq-pub -q -l -p 0 t
	seq 0 4 | mq-pub -q -l -p 1 t
	# One in flight and one delayed below the offset go too.
	run -0 mq-sub -g g --manual -n 1 -F '%r' t
	run -0 mq-ack -g g --commit 0:4 t
	local n; n=$(count_new t g 0)
	assert_equal "$(( n + $(count_cur t g 0) ))" 6
	assert_equal "$(count_new t g 1)" 5
	run -0 mq-sub -g g -F '%p:%o\n' -n 1 -t 0 t
	[[ $output == 0:4 || $output == 1:0 ]] || fail "got $output"
	run -0 mq-ack -g g --commit 0:10 t
	assert_equal "$(( $(count_new t g 0) + $(count_cur t g 0) ))" 0
}

@test "commit: bad offsets are refused and change nothing" {
	mq-topic create t
	mkgroup t g
	seq 1 3 | mq-pub -q -l t
	local before; before=$(spool_snapshot)
	for bad in 0:4 1:0 x:1 0: :3 0:-1 0:1x; do
		run --separate-stderr mq-ack -g g --commit "$bad" t
		assert_equal "$status" 64
		assert_one_line_error mq-ack
	done
	run --separate-stderr mq-ack -g nosuch --commit 0:1 t
	assert_equal "$status" 66
	run --separate-stderr mq-ack -g g --commit 0:1 t RECEIPT
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot)" "$before"
}

@test "start positions: --from-offset and --from-time" {
	mq-topic create --partitions 2 t
	seq 0 9 | mq-pub -q -l -p 0 t
	seq 0 9 | mq-pub -q -l -p 1 t
	run -0 mq-sub -g g1 --from-offset 0:7 -F '%p:%s\n' t
	assert_output $'0:7\n0:8\n0:9'
	run -0 mq-sub -g g2 --from-offset 0:8 --from-offset 1:9 -F '%p:%s\n' t
	assert_equal "$(echo "$output" | sort)" $'0:8\n0:9\n1:9'
	mq-sub -q -g g3 --ordered -t 0 t || true
	mq-sub -g g3 --unsubscribe t
	sleep 0.05
	local t0=$EPOCHREALTIME
	sleep 0.05
	printf '%s\n' x y | mq-pub -q -l -p 1 t
	run -0 mq-sub -g g3 --from-time "@$t0" -F '%p:%s\n' t
	assert_output $'1:x\n1:y'
	# New messages reach all of them.
	mq-pub -q -p 0 t z
	run -0 mq-sub -g g3 -F '%s\n' t
	assert_output z
	for g in g1 g2; do
		run -0 mq-sub -g $g -F '%s\n' t
		assert_equal "$(echo "$output" | sort | tr '\n' ' ')" "x y z "
	done
}

@test "start positions: bad or conflicting ones are refused" {
	mq-topic create t
	local before; before=$(spool_snapshot)
	run --separate-stderr mq-sub -g g --from-offset 3:0 t
	assert_equal "$status" 64
	assert_one_line_error mq-sub
	run --separate-stderr mq-sub -g g --from-offset 0:0 --from-start t
	assert_equal "$status" 64
	run --separate-stderr mq-sub -g g --from-time yesterday t
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot)" "$before"
}

@test "partitions: a running consumer picks up partitions added by alter" {
	mq-topic create --partitions 1 t
	mkgroup t g
	spawn "$TD/out" mq-sub -f -g g -F '%p:%s\n' t
	sleep 0.2
	mq-topic alter --partitions 3 t
	echo two | mq-pub -q -p 2 t
	wait_for -t 5 grep -qx 2:two "$TD/out"
}

@test "lag: head minus committed offset, exact per partition, after commits and acks" {
	mq-topic create --partitions 2 t
	mkgroup t g --ordered
	seq 0 9 | mq-pub -q -l -p 0 t
	seq 0 4 | mq-pub -q -l -p 1 t
	mq-ack -g g --commit 0:4 t
	# One claimed and not yet acked still counts as lag.
	run -0 mq-sub -g g --manual -n 1 -F '%p:%o' t
	local got=$output
	run -0 mq-group info --json g
	local lags
	lags=$(echo "$output" | "$PY" -c 'import json,sys
d = json.load(sys.stdin)[0]
print(" ".join("%d:%d:%d:%d" % (p["partition"], p["offset"], p["lag"], p["inflight"]) for p in d["partitions"]), d["total"]["lag"])')
	if [[ $got == 0:4 ]]; then
		assert_equal "$lags" "0:4:6:1 1:0:5:0 11"
	else
		assert_equal "$got" 1:0
		assert_equal "$lags" "0:4:6:0 1:0:5:1 11"
	fi
	# Acking everything leaves no lag.
	mq-ack -g g --commit 0:10 --commit 1:5 t
	run -0 mq-group info --json g
	assert_equal "$(echo "$output" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["total"]["lag"])')" 0
}

# in_order FILE: in FILE (lines "PARTITION SEQ"), each partition's sequence
# numbers never go down: a redelivery repeats the last one, nothing newer
# ran before an older one, and no two owners interleaved.
in_order() {
	awk '{ if (($1 in last) && $2 < last[$1]) { print "partition " $1 ": " $2 " after " last[$1]; bad = 1 } last[$1] = $2 }
	     END { exit bad }' "$1"
}

# uniq_lines N FILE: FILE holds N different lines.
uniq_lines() {
	[[ $(sort -u "$2" | wc -l) == "$1" ]]
}

@test "ordered: kill -9 members at random while they work; order holds, nothing lost, repeats only in place" {
	mq-topic create --partitions 4 t
	mkgroup t og --ordered --session 1 --lease 1.5 --max-attempts 0
	seq 1 400 | mq-pub -q -l t
	local h='echo "$MQ_PARTITION $MQ_SEQ" >> '"$TD/log"'; sleep 0.005'
	local -a pids
	local c round victim
	for c in 0 1 2; do
		spawn "$TD/c$c" mq-sub -f -g og --exec "$h" t
		pids[c]=$SPAWNED
	done
	for round in $(seq 1 12); do
		sleep "0.$((RANDOM % 4 + 2))"
		victim=$((RANDOM % 3))
		# The whole process group: a crash takes the handler too.
		kill -9 -- "-${pids[victim]}" 2>/dev/null || true
		spawn "$TD/c$victim.$round" mq-sub -f -g og --exec "$h" t
		pids[victim]=$SPAWNED
	done
	wait_for -t 60 uniq_lines 400 "$TD/log"
	in_order "$TD/log"
	for p in 0 1 2 3; do
		assert_equal "$(awk -v p=$p '$1 == p {print $2}' "$TD/log" | sort -nu | tr '\n' ' ')" \
		    "$(seq 0 99 | tr '\n' ' ')"
	done
	# Each crash repeats at most what was in flight then: one message per
	# partition the victim owned.
	local repeats=$(( $(wc -l < "$TD/log") - 400 ))
	((repeats <= 12 * 4)) || fail "$repeats repeats"
}

@test "ordered: the same with polling (MQ_POLL), no inotify" {
	export MQ_POLL=0.05
	mq-topic create --partitions 2 t
	mkgroup t og --ordered --session 1
	spawn "$TD/a" mq-sub -f -g og -F '%p %o\n' t
	spawn "$TD/b" mq-sub -f -g og -F '%p %o\n' t
	seq 1 200 | mq-pub -q -l t
	wait_for -t 20 lines_at_least 200 "$TD/a" "$TD/b"
	cat "$TD/a" "$TD/b" | sort -u > "$TD/all"
	assert_equal "$(wc -l < "$TD/all")" 200
	in_order "$TD/a"
	in_order "$TD/b"
}

@test "ordered: polling members go on claiming messages that arrive one by one (no spin on partitions owned by the other)" {
	# A member that polls used to spin, never sleeping, on a partition
	# whose listing it had not used up because another member owned it,
	# and so never learned of new messages in its own: it stalled with
	# most of them pending, in about half the runs; three rounds.
	export MQ_POLL=0.2
	local round t h r k
	for round in 1 2 3; do
		t=t$round
		mq-topic create --partitions 4 "$t"
		mkgroup "$t" og --ordered --session 4
		h="echo \"\$MQ_KEY \$(cat)\" >> $TD/log.$round"
		spawn "$TD/a.$round" mq-sub -f -g og --exec "$h" "$t"
		spawn "$TD/b.$round" mq-sub -f -g og --exec "$h" "$t"
		two_members() { (($(ls "$MQ_SPOOL/topics/$t/groups/og.members" | wc -l) == 2)); }
		wait_for -t 10 two_members
		for r in $(seq 1 12); do
			for k in $(seq 1 8); do
				mq-pub -q -k "key$k" "$t" "$r"
			done
		done
		wait_for -t 20 lines_at_least 96 "$TD/log.$round"
		assert_equal "$(sort -u "$TD/log.$round" | wc -l)" 96
		for k in $(seq 1 8); do
			assert_equal "$(awk -v k="key$k" '$1 == k { print $2 }' "$TD/log.$round" | tr '\n' ' ')" \
			    "$(seq 1 12 | tr '\n' ' ')"
		done
	done
}

@test "ordered: a delayed message joins the order when due; a redriven one comes next" {
	mq-topic create t
	mkgroup t og --ordered --max-attempts 1
	mq-pub -q --delay 0.6 t late
	mq-pub -q t now
	run -0 mq-sub -g og -F '%s\n' t
	assert_output now
	run -0 mq-sub -g og -t 3 -n 1 -F '%s\n' t
	assert_output late
	# Dead-letter one, publish behind it, redrive it: it is delivered
	# before what was published after it.
	printf '%s\n' bad next | mq-pub -q -l t
	run mq-sub -g og -n 1 --exec 'exit 1' t
	assert_equal "$(mq-dlq count -g og t)" 1
	run -0 mq-dlq -g og redrive t
	run -0 mq-sub -g og -F '%s\n' t
	assert_output $'bad\nnext'
}
