#!/usr/bin/env bats
# Delivery guarantees: max-attempts and dead letters, backoff, delays,
# deferral (exit 75), lease extension and heartbeats, rejecting.

load helper

dlq_dir() {
	echo "$MQ_SPOOL/topics/$1/p0/dlq/$2"
}

# count_dead TOPIC GROUP: dead messages (not their .why records).
count_dead() {
	local d n=0 f
	d=$(dlq_dir "$1" "$2")
	[[ -d $d ]] || {
		echo 0
		return
	}
	for f in "$d"/*; do
		[[ -e $f && $f != *.why ]] && n=$((n + 1))
	done
	echo "$n"
}

# dead_is TOPIC GROUP N: for wait_for (which runs its command each time).
dead_is() {
	[[ $(count_dead "$1" "$2") == "$3" ]]
}

# consume_then_dead_is TOPIC GROUP N: one consumer run (which returns
# expired leases), then the dead-letter count.
consume_then_dead_is() {
	mq-sub -g "$2" "$1" >/dev/null 2>&1 || true
	dead_is "$@"
}

count_delay() {
	count_entries "$(group_dir "$1" "$2")/delay"
}

@test "a poison message is tried exactly max-attempts times, with growing delays, then dead-lettered with its record; others keep flowing" {
	mkgroup t g --max-attempts 3
	grep -qx 'max-attempts=3' "$MQ_SPOOL/topics/t/groups/g.conf"
	mq-pub -q t good1 poison good2
	export LOG=$TD/tries
	spawn "$TD/out" mq-sub -f --backoff 0.4:10 --exec '
		body=$(cat)
		echo "$body $MQ_ATTEMPTS $(date +%s.%N)" >>"$LOG"
		if [ "$body" = poison ]; then echo "cannot parse $body" >&2; exit 3; fi' \
	    -g g t
	local pid=$SPAWNED
	wait_for -t 20 dead_is t g 1
	kill "$pid"
	wait_for exited "$pid"
	# The good ones went through once each, and before the poison was done.
	run grep -c '^good' "$LOG"
	assert_output 2
	run grep '^poison' "$LOG"
	assert_equal "${#lines[@]}" 3
	local -a t1 t2 t3
	read -ra t1 <<<"${lines[0]}"
	read -ra t2 <<<"${lines[1]}"
	read -ra t3 <<<"${lines[2]}"
	assert_equal "${t1[1]} ${t2[1]} ${t3[1]}" "1 2 3"
	# Backoff 0.4 s then 0.8 s, each with jitter between half and all.
	local g1 g2
	g1=$(awk -v a="${t1[2]}" -v b="${t2[2]}" 'BEGIN { print b - a }')
	g2=$(awk -v a="${t2[2]}" -v b="${t3[2]}" 'BEGIN { print b - a }')
	awk -v x="$g1" 'BEGIN { exit !(x >= 0.2) }' || fail "first gap $g1"
	awk -v x="$g2" 'BEGIN { exit !(x >= 0.4) }' || fail "second gap $g2"
	# Nothing is left in the queue; the record says why.
	group_empty t g
	assert_equal "$(count_delay t g)" 0
	local why
	why=$(ls "$(dlq_dir t g)"/*.why)
	[[ $why == */00000000000000000001.*,a3.why ]] || fail "record name $why"
	run cat "$why"
	assert_line 'reason=max-attempts'
	assert_line 'attempts=3'
	assert_line 'status=3'
	assert_line 'group=g'
	assert_line 'topic=t'
	assert_line 'cannot parse poison'
}

@test "exit 75 asks for the message again later without counting as a failure" {
	mkgroup t g --max-attempts 2
	mq-pub -q t later
	# Three deferrals, then success: max-attempts 2 is never reached.
	run --separate-stderr mq-sub -f -n 4 --backoff 0 \
	    --exec 'echo "$MQ_ATTEMPTS"; [ "$MQ_ATTEMPTS" -ge 4 ] || exit 75' -g g t
	assert_success
	assert_output $'1\n2\n3\n4'
	group_empty t g
	assert_equal "$(count_dead t g)" 0
}

@test "a handler killed with its consumer: redelivered after the lease with attempts + 1; a live slow handler keeps its lease" {
	mkgroup t g
	mq-pub -q t slow
	export MARK=$TD/started
	# A live handler that outlasts three leases is not redelivered.
	spawn "$TD/a" mq-sub -n 1 --lease 1 --exec 'touch "$MARK"; sleep 3; echo "done $MQ_ATTEMPTS"' -g g t
	local pid=$SPAWNED
	wait_for test -e "$MARK"
	run --separate-stderr mq-sub -t 2.5 -g g t
	assert_equal "$status" 1
	wait_for -t 10 exited "$pid"
	assert_equal "$(cat "$TD/a")" "done 1"
	group_empty t g
	# Now kill the consumer (and its handler) while the handler runs.
	rm -f "$MARK"
	mq-pub -q t crash
	spawn "$TD/b" mq-sub -n 1 --lease 1 --exec 'touch "$MARK"; sleep 30' -g g t
	pid=$SPAWNED
	wait_for test -e "$MARK"
	kill -9 -- "-$pid"
	wait_for -t 30 pgroup_gone "$pid"
	assert_equal "$(count_cur t g)" 1
	run --separate-stderr mq-sub -t 5 -F '%s %a\n' -g g t
	assert_success
	assert_output 'crash 2'
}

@test "a lease that runs out counts as a failure: the last one dead-letters" {
	mkgroup t g --max-attempts 1
	mq-pub -q t once
	run --separate-stderr mq-sub --manual --lease 0.3 -g g t
	assert_success
	wait_for -t 5 consume_then_dead_is t g 1
	run cat "$(dlq_dir t g)"/*.why
	assert_line 'reason=max-attempts'
	assert_line 'detail=lease expired'
	group_empty t g
}

@test "mq-ack --nack --delay keeps the message out of the queue until it is due" {
	mkgroup t g
	mq-pub -q t wait
	local r
	r=$(mq-sub --manual -F '%r' -g g t)
	run --separate-stderr mq-ack --nack --delay 1.5 -g g t "$r"
	assert_success
	assert_equal "$(count_delay t g)" 1
	assert_equal "$(count_new t g)" 0
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 1
	# A waiting consumer wakes when it is due, with no publish to wake it.
	run --separate-stderr mq-sub -t 5 -F '%s %a\n' -g g t
	assert_success
	assert_output 'wait 2'
	assert_equal "$(count_delay t g)" 0
}

@test "mq-ack --reject dead-letters at once, with the reason given" {
	mkgroup t g
	mq-pub -q t bad
	local r
	r=$(mq-sub --manual -F '%r' -g g t)
	run --separate-stderr mq-ack --reject --reason 'schema v1 only' -g g t "$r"
	assert_success
	assert_equal "$(count_dead t g)" 1
	group_empty t g
	run cat "$(dlq_dir t g)"/*.why
	assert_line 'reason=rejected'
	assert_line 'detail=schema v1 only'
	assert_line 'attempts=1'
	# The receipt is spent.
	run --separate-stderr mq-ack -g g t "$r"
	assert_equal "$status" 66
}

@test "mq-ack --extend moves the deadline; the same receipt acks after the old deadline" {
	mkgroup t g
	mq-pub -q t long
	local r deadline
	r=$(mq-sub --manual --lease 1 -F '%r' -g g t)
	deadline=$(receipt_deadline "$r")
	run --separate-stderr mq-ack --extend 30 -g g t "$r"
	assert_success
	assert_output ""
	(($(lease_now t g) > deadline + 20000)) || fail "deadline not moved"
	wait_for past_ms "$((deadline + 200))"
	# Past the first deadline, still claimed and not returned.
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 1
	run --separate-stderr mq-ack -g g t "$r"
	assert_success
	group_empty t g
}

@test "mq-ack: --delay without --nack, --reason without --reject, two actions, bad durations are usage errors (64)" {
	mkgroup t g
	mq-pub -q t x
	local r before
	r=$(mq-sub --manual -F '%r' -g g t)
	before=$(spool_snapshot)
	local -a bad=(
		"--delay 1"
		"--reason x"
		"--nack --reject"
		"--nack --extend 5"
		"--nack --delay soon"
		"--extend 0"
		"--extend -1"
	)
	local b
	for b in "${bad[@]}"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-ack $b -g g t "$r"
		assert_equal "$status" 64
		assert_one_line_error mq-ack
	done
	assert_equal "$(spool_snapshot)" "$before"
}

@test "mq-sub --exec --handler-timeout: a hung handler is stopped and counts as a failure" {
	mkgroup t g --max-attempts 1
	mq-pub -q t hang
	# exec: the stopped handler is the sleep itself, so nothing it
	# started keeps our output open (mq-sub(1), CAVEATS).
	run --separate-stderr mq-sub --handler-timeout 0.5 --exec 'exec sleep 20' -g g t
	assert_equal "$status" 75
	assert_equal "$(count_dead t g)" 1
	run cat "$(dlq_dir t g)"/*.why
	assert_line 'detail=handler timed out'
	assert_line 'status=143'
}

@test "mq-pub --delay and --at: the message is pending only once it is due" {
	mkgroup t g
	mq-pub -q --delay 1.5 t later
	assert_equal "$(count_queued t g)" 0
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 1
	# (Format 2 names it in delay/ once a consumer takes it from the log.)
	assert_equal "$(count_delay t g)" 1
	assert_equal "$(count_new t g)" 0
	log_grep t '^Mq-Deliver-At: 20'
	# A waiting consumer wakes when it is due.
	run --separate-stderr mq-sub -t 5 -F '%s %a\n' -g g t
	assert_success
	assert_output 'later 1'
	local at=$(($(date +%s) + 2))
	mq-pub -q --at "@$at" t at
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 1
	run --separate-stderr mq-sub -t 5 -g g t
	assert_success
	assert_output at
	# RFC 3339 in the past: due at once.
	mq-pub -q --at 2020-01-01T00:00:00Z t past
	run --separate-stderr mq-sub -g g t
	assert_output past
}

@test "mq-pub --delay/--at/--ttl refuse bad values (64), nothing stored" {
	mkgroup t g
	local before
	before=$(spool_snapshot)
	local -a bad=(
		"--delay soon"
		"--at tomorrow"
		"--at 2026-13-01T00:00:00Z"
		"--at @x"
		"--delay 1 --at @1"
		"--ttl 0"
	)
	local b
	for b in "${bad[@]}"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-pub $b t x
		assert_equal "$status" 64
		assert_one_line_error mq-pub
	done
	assert_equal "$(spool_snapshot)" "$before"
}

@test "mq-pub: a --ttl that ends before --delay or --at makes it due is refused (64), nothing stored" {
	mkgroup t g
	local before far
	before=$(spool_snapshot)
	far=$(($(now_ms) / 1000 + 3600))
	local -a bad=("--delay 3s --ttl 1s" "--delay 2s --ttl 2s"
	    "--at @$far --ttl 1m")
	local b
	for b in "${bad[@]}"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-pub $b t x
		assert_equal "$status" 64
		assert_one_line_error mq-pub
	done
	assert_equal "${stderr_lines[0]}" "mq-pub: --ttl 60s ends before --at: the message could never be delivered"
	run --separate-stderr mq-pub --delay 3s --ttl 1s t x
	assert_equal "$stderr" "mq-pub: --ttl 1s ends before --delay: the message could never be delivered"
	assert_equal "$(spool_snapshot)" "$before"
	# A delay shorter than the ttl, or a time in the past, is taken.
	run --separate-stderr mq-pub -q --delay 1s --ttl 1h t x
	assert_success
	run --separate-stderr mq-pub -q --at @0 --ttl 1s t x
	assert_success
	assert_equal "$(count_log t)" 2
}

@test "mq-pub --ttl: an expired message is never delivered; it is dead-lettered, or dropped when the topic says so" {
	mkgroup t g
	mq-pub -q --ttl 0.2 t stale
	mq-pub -q t fresh
	grep -q '^Mq-Expires: 20' "$(log_files t | sed -n 1p)"
	MQ_NOW=$(($(date +%s) + 5)) run --separate-stderr mq-sub -g g t
	assert_success
	assert_output fresh
	assert_equal "$(count_dead t g)" 1
	run cat "$(dlq_dir t g)"/*.why
	assert_line 'reason=expired'
	# A topic default: ttl 1 s, expired messages dropped.
	mq-topic create --ttl 1 --expired drop d
	mkgroup d g
	mq-pub -q d gone
	MQ_NOW=$(($(date +%s) + 5)) run --separate-stderr mq-sub -g g d
	assert_equal "$status" 1
	group_empty d g
	assert_equal "$(count_dead d g)" 0
}

# head_committed_in TOPIC FILE: records the head's committed value in FILE
# until FILE.stop exists.
watch_committed() {
	while [[ ! -e $2.stop ]]; do
		head_field "$1" committed >>"$2" 2>/dev/null || true
	done
}

@test "mq-pub --atomic: consumers see all of a batch or none of it" {
	mkgroup t g
	seq 20000 >"$TD/in"
	watch_committed t "$TD/seen" &
	local w=$!
	run --separate-stderr mq-pub -q -l --atomic t <"$TD/in"
	assert_success
	touch "$TD/seen.stop"
	wait "$w"
	# The commit record went from 0 to 20000 in one step.
	run sort -un "$TD/seen"
	assert_output --regexp '^(0
)?20000$'
	assert_equal "$(count_new t g)" 20000
	# Several partitions and no key: refused, nothing stored.
	mq-topic create --partitions 3 multi
	run --separate-stderr mq-pub --atomic multi a b c
	assert_equal "$status" 64
	assert_one_line_error mq-pub
	run mq-topic info --json multi
	assert_output --partial '"committed":0'
	run --separate-stderr mq-pub -q --atomic -k same multi a b c
	assert_success
}

@test "idempotent publish: 4 processes publishing the same 1,000 ids at once make 1,000 messages" {
	mkgroup t g
	local j
	local -a pids=()
	for j in 1 2 3 4; do
		seq 1000 | mq-pub -l -i batch t >"$TD/ids.$j" &
		pids+=($!)
	done
	for j in "${pids[@]}"; do
		wait "$j"
	done
	assert_equal "$(count_new t g)" 1000
	assert_equal "$(head_field t committed)" 1000
	# Every process was told the same id for the same message.
	for j in 2 3 4; do
		cmp "$TD/ids.1" "$TD/ids.$j"
	done
	assert_equal "$(sort -u "$TD/ids.1" | wc -l)" 1000
	run mq-sub -g g t
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -n | uniq | wc -l)" 1000
}

@test "idempotent publish: a repeat with other content is still not stored, exits 0 and warns once; the same content says nothing" {
	mkgroup t g
	local a
	a=$(mq-pub -i order-7 t first)
	run --separate-stderr mq-pub -i order-7 t first
	assert_success
	assert_output "$a"
	assert_equal "$stderr" ""
	run --separate-stderr mq-pub -i order-7 t second
	assert_success
	assert_output "$a"
	assert_equal "$stderr" "mq-pub: warning: idempotency key order-7 was used by message $a with other content; not stored"
	# In a batch, per message: only the second of three differs.
	printf 'x\ny\nz\n' | mq-pub -q -l -i b t
	run --separate-stderr mq-pub -l -i b t <<<$'x\nY\nz'
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "${stderr_lines[0]}" "mq-pub: warning: idempotency key b.2 was used by message ${lines[1]} with other content; not stored"
	# -q silences the ids, not the warning.
	run --separate-stderr mq-pub -q -i order-7 t third
	assert_success
	assert_output ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "$(count_new t g)" 4
}

@test "idempotent publish: a repeat returns the first id and exit 0; the window ends it; --dedup=content" {
	mkgroup t g
	local a b c
	a=$(mq-pub -i order-7 t first)
	b=$(mq-pub -i order-7 t second)
	assert_equal "$b" "$a"
	run mq-sub -g g t
	assert_output first
	log_grep t '^Mq-Idempotency-Key: order-7$'
	# After the window (an hour by default) the id is new again.
	c=$(MQ_NOW=$(($(date +%s) + 3601)) mq-pub -i order-7 t third)
	[[ $c != "$a" ]] || fail "same id after the window"
	a=$(mq-pub --dedup=content t same)
	b=$(mq-pub --dedup=content t same)
	c=$(mq-pub --dedup=content t other)
	assert_equal "$b" "$a"
	[[ $c != "$a" ]] || fail "different content, same id"
	run --separate-stderr mq-pub -i x --dedup=content t y
	assert_equal "$status" 64
	run --separate-stderr mq-pub --dedup=body t y
	assert_equal "$status" 64
	# gc drops keys older than the window.
	# order-7 (its second life) and two contents.
	assert_equal "$(count_entries "$MQ_SPOOL/topics/t/p0/dedup")" 3
	MQ_NOW=$(($(date +%s) + 7200)) mq-topic gc t
	assert_equal "$(count_entries "$MQ_SPOOL/topics/t/p0/dedup")" 0
}

# pipeline_done: the input group is empty after one more pipeline run.
pipeline_done() {
	mq-sub --backoff 0 --exec 'read x; echo "out-$x"; echo "also-$x"' \
	    --publish-to out -g p in >/dev/null 2>&1 || true
	group_empty in p
}

@test "exactly-once pipeline: kill -9 at random over 50 rounds; every output exists exactly once" {
	mkgroup out o
	# Attempts without end: a message killed in its handler five times
	# (slow under the sanitizers) would be dead-lettered, its outputs
	# made, its ledger entry never.
	mkgroup in p --exactly-once --max-attempts 100000
	grep -qx 'exactly-once=1' "$MQ_SPOOL/topics/in/groups/p.conf"
	seq 300 | mq-pub -q -l in
	local r pid
	for ((r = 1; r <= ${PIPELINE_ROUNDS:-50}; r++)); do
		spawn "$TD/pipe.$r" mq-sub -f --lease 0.5 --backoff 0 \
		    --exec 'read x; echo "out-$x"; echo "also-$x"' \
		    --publish-to out -g p in
		pid=$SPAWNED
		# The random sleep only chooses the moment of the kill.
		sleep "0.$(printf '%03d' $((RANDOM % 150)))"
		kill -9 -- "-$pid" 2>/dev/null || true
		wait_for -t 30 pgroup_gone "$pid"
	done
	# Finish: leases of killed runs expire, the rest is processed.
	wait_for -t 30 pipeline_done
	run mq-sub -g o out
	assert_success
	{ seq 300 | sed 's/^/out-/'; seq 300 | sed 's/^/also-/'; } | sort >"$TD/want"
	printf '%s\n' "${lines[@]}" | sort >"$TD/got"
	cmp "$TD/want" "$TD/got"
	# The ledger holds every input that was processed; none is dead.
	assert_equal "$(mq-dlq count in)" 0
	assert_equal "$(count_entries "$(group_dir in p)/done")" 300
}

@test "mq-sub --exec -j N runs N handlers at once, each message once" {
	mkgroup t g
	seq 40 | mq-pub -q -l t
	export RUN=$TD/running
	mkdir "$RUN"
	# Each handler notes how many run beside it.
	run --separate-stderr mq-sub -j 4 --exec '
		x=$(cat); touch "$RUN/$x"; sleep 0.2
		echo "$x $(ls "$RUN" | wc -l)"; rm "$RUN/$x"' -g g t
	assert_success
	assert_equal "${#lines[@]}" 40
	printf '%s\n' "${lines[@]}" | awk '{ print $1 }' | sort -n | uniq >"$TD/seen"
	cmp "$TD/seen" <(seq 40)
	# At some moment more than one handler ran.
	printf '%s\n' "${lines[@]}" | awk '$2 > 1 { found = 1 } END { exit !found }'
	group_empty t g
	run --separate-stderr mq-sub -j 2 -n 1 --exec true -g g t
	assert_equal "$status" 64
	run --separate-stderr mq-sub -j 2 -g g t
	assert_equal "$status" 64
}

@test "SIGTERM: mq-sub --exec stops claiming, lets the running handler finish within --grace, gives back what it stopped" {
	mkgroup t g
	mq-pub -q t quick slow
	export MARK=$TD/started
	# A handler that finishes within the grace period is acked.
	spawn "$TD/a" mq-sub -f --grace 5 --exec 'touch "$MARK"; sleep 0.5; cat' -g g t
	local pid=$SPAWNED
	wait_for test -e "$MARK"
	kill -TERM "$pid"
	wait_for -t 10 exited "$pid"
	assert_equal "$(cat "$TD/a")" quick
	# The other one was never claimed.
	assert_equal "$(count_new t g)" 1
	assert_equal "$(count_cur t g)" 0
	# One that outlives the grace period is stopped and given back at
	# once, not counted as a failure; the run exits 75.
	rm -f "$MARK"
	spawn "$TD/b" mq-sub -f --grace 0.3 --exec 'touch "$MARK"; sleep 30' -g g t
	pid=$SPAWNED
	wait_for test -e "$MARK"
	kill -TERM "$pid"
	wait_for -t 10 exited "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 75
	run ls "$(group_dir t g)/new"
	assert_output --regexp ',a1,d1$'
	run --separate-stderr mq-sub -F '%s %a\n' -g g t
	assert_output 'slow 2'
}

@test "handlers: one that closes its stderr does not make mq-sub spin; one that extends its own lease is still acked" {
	mkgroup t g
	mq-pub -q t quiet
	TIMEFORMAT='%U %S'
	{ time mq-sub --exec 'exec 2>&-; sleep 1' -g g t >/dev/null; } 2>"$TD/cpu"
	awk '{ exit !($1 + $2 < 0.5) }' "$TD/cpu" || fail "CPU time: $(cat "$TD/cpu")"
	group_empty t g
	mq-pub -q t extend
	run --separate-stderr mq-sub --lease 5 --exec 'mq-ack --extend 60 -g g t "$MQ_RECEIPT" && cat' -g g t
	assert_success
	assert_output extend
	group_empty t g
}

@test "handlers: after --handler-timeout the message failed, whatever the stopped handler exits with" {
	mkgroup t g --max-attempts 1
	mq-pub -q t stubborn
	run --separate-stderr mq-sub --handler-timeout 0.3 --exec 'trap "kill \$!; exit 0" TERM; sleep 10 >/dev/null 2>&1 & wait' -g g t
	assert_equal "$status" 75
	assert_equal "$(count_dead t g)" 1
}

@test "exactly-once groups: mq-ack records the ledger too; a message in the ledger is settled unseen" {
	mkgroup t g --exactly-once
	local id r
	id=$(mq-pub t once)
	r=$(mq-sub --manual -F '%r' -g g t)
	run --separate-stderr mq-ack -g g t "$r"
	assert_success
	[[ -e $(group_dir t g)/done/$id ]] || fail "no ledger entry for $id"
	# The same message delivered again (as after a lost ack) is not seen.
	name_again t g "00000000000000000000.$id"
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 1
	group_empty t g
}
