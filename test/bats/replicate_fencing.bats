#!/usr/bin/env bats
# mq-replicate: epochs and fencing (mq-protocol(5), Epochs): after a
# promote, the old primary can no longer send, publish, or take records
# from the new one until demote has quarantined what it took alone.

load helper
load replicate_helper

# push_to FROM TO, pull_to INTO FROM: one session over env (serve --stdio).
push_to() {
	mq-replicate -s "$1" push --rsh env --remote-spool "$2"
}

# new_is SPOOL N: t/g has N messages to hand out (count_queued).
new_is() {
	[[ $(MQ_SPOOL=$1 count_queued t g) == "$2" ]]
}

# queued_in SPOOL: how many t/g has to hand out.
queued_in() {
	MQ_SPOOL=$1 count_queued t g
}

# logged SPOOL [TOPIC]: the messages the log of t (or TOPIC) holds.
logged() {
	MQ_SPOOL=$1 count_log "${2:-t}"
}

# records SPOOL: the stored bytes of t's messages, in sequence order.
records() {
	local -a f
	mapfile -t f < <(MQ_SPOOL=$1 TD=$TD/rec.${1##*/} log_files t)
	((${#f[@]} == 0)) || cat "${f[@]}"
}

# same_state: A holds what B holds: in format 1 the same names and files
# (same_spools); in format 2, where a log's segments may be cut
# elsewhere, t's records byte for byte and every name of the queues and
# dead letters with its bytes.
same_state() {
	if ! MQ_SPOOL=$A is_format2 t; then
		same_spools
		return
	fi
	local bytes; bytes=$(records "$A" | wc -c)
	((bytes > 0)) || { echo "same_state: no record read in $A" >&2; return 1; }
	cmp <(records "$A") <(records "$B") &&
	    diff <(queue_sums "$A" | grep -v '/log/') \
		<(queue_sums "$B" | grep -v '/log/')
}

# set_head SPOOL NEXT COMMITTED: t's p0/head as a writer killed there
# left it.
set_head() {
	local line
	line=$(printf 'mq-head 1 next=%020d committed=%020d' "$2" "$3")
	printf '%s sum=%s\n' "$line" "$("$PY" -c 'import sys, xxhash
print("%08x" % xxhash.xxh32(sys.argv[1].encode()).intdigest())' "$line")" \
	    >"$1/topics/t/p0/head"
}

# A primary A with 3 messages in t/g, copied to B and to C; B promoted.
split() {
	pair
	C=$TD/c
	mq-topic create t
	mq-group create t g
	seq 1 3 | mq-pub -l t >/dev/null
	push_to "$A" "$B"
	push_to "$A" "$C"
	run -0 mq-replicate -s "$B" promote
	assert_output --regexp "^promoted $B to epoch 1: 0 link"
}

@test "after promote the old primary's push is refused, changes nothing there, and fences it" {
	split
	assert_equal "$(cat "$B/replicate/epoch")" 1
	assert_equal "$(cut -d' ' -f1 "$B/replicate/role")" primary
	[[ ! -e $A/replicate/epoch ]] || fail "A has an epoch"
	seq 4 5 | mq-pub -l t >/dev/null
	local before; before=$(queue_sums "$B")
	run --separate-stderr push_to "$A" "$B"
	assert_equal "$status" 78
	assert_one_line_error mq-replicate
	[[ $stderr == *"refused: the peer "*" is at epoch 1, this spool at epoch 0"* ]] || fail "$stderr"
	[[ $stderr == *"mq-replicate -s $A demote"* ]] || fail "$stderr"
	assert_equal "$(queue_sums "$B")" "$before"
	assert_equal "$(queued_in "$B")" 3
	# A recorded it, and takes no more messages.
	local id; id=$(cat "$B/ID")
	assert_equal "$(sed -n 1,3p "$A/replicate/fenced")" "epoch=1
peer=$id
name="
	run --separate-stderr mq-pub t six
	assert_equal "$status" 77
	assert_one_line_error mq-pub
	[[ $stderr == "mq-pub: this spool was fenced: spool $id was promoted to epoch 1 "*"run 'mq-replicate demote' or remove $A/replicate/fenced" ]] || fail "$stderr"
	assert_equal "$(logged "$A")" 5
	# Nor through mq-sub --publish-to.
	mq-topic create out
	mq-group create out o
	run --separate-stderr mq-sub -g g t -n 1 --exec cat --publish-to out
	assert_equal "$status" 75                # the message is retried later
	[[ $stderr == *"--publish-to: this spool was fenced"* ]] || fail "$stderr"
	assert_equal "$(logged "$A" out)" 0
	# It sends to no one else either, the replica C included.
	run --separate-stderr push_to "$A" "$C"
	assert_equal "$status" 78
	[[ $stderr == *"this spool was fenced"* ]] || fail "$stderr"
	assert_equal "$(queued_in "$C")" 3
	# status says so, and B's says its epoch.
	run -0 mq-replicate -s "$A" status
	assert_line --regexp "^FENCED: spool $id is at epoch 1 \(learned .*\): this spool takes no publish; run 'mq-replicate demote'\$"
	run -0 mq-replicate -s "$A" status --json
	assert_equal "$(jq -c '[.epoch, .fenced.epoch, .fenced.peer]' <<<"$output")" "[0,1,\"$id\"]"
	run -0 mq-replicate -s "$B" status
	assert_line "epoch 1"
	refute_line --partial FENCED
	assert_equal "$(mq-replicate -s "$B" status --json | jq -c '[.epoch, .fenced]')" "[1,null]"
}

@test "the receiver refuses an older sender, naming both epochs, and the sender is fenced" {
	split
	# B pulls from A: A sends, at epoch 0, to B at epoch 1.
	run --separate-stderr mq-replicate -s "$B" pull --rsh env --remote-spool "$A"
	assert_equal "$status" 78
	assert_one_line_error mq-replicate
	local a; a=$(cat "$A/ID")
	[[ $stderr == "mq-replicate: refused: this spool is at epoch 1 (since "*"), the sender $a is at epoch 0: it is a fenced old primary; run 'mq-replicate -s SPOOL demote' there" ]] || fail "$stderr"
	assert_equal "$(head -1 "$A/replicate/fenced")" epoch=1
}

@test "a primary at an older epoch is fenced when the new primary sends to it" {
	split
	local before; before=$(queue_sums "$A")
	run --separate-stderr push_to "$B" "$A"
	assert_equal "$status" 78
	[[ -e $A/replicate/fenced ]] || fail "A is not fenced"
	[[ ! -e $A/replicate/epoch ]] || fail "A took the epoch"
	assert_equal "$(queue_sums "$A")" "$before"
}

@test "demote quarantines exactly the divergent messages, then A follows B" {
	split
	seq 4 5 | mq-pub -l t >/dev/null          # on A only
	mq-pub -s "$B" -l t <<<"b1" >/dev/null       # on B only
	run -78 push_to "$A" "$B"
	local b_before; b_before=$(queue_sums "$B")
	run --separate-stderr mq-replicate -s "$A" demote --rsh env --remote-spool "$B"
	assert_success
	assert_output "demoted $A: a replica at epoch 1; 2 message(s) published here that the new primary lacks are in replicate/quarantine/"
	[[ $(grep -c "quarantined t/0/" <<<"$stderr") == 2 ]] || fail "$stderr"
	# The two quarantined are A's 4 and 5, whole.
	assert_equal "$(count_entries "$A/replicate/quarantine")" 2
	local f bodies=""
	for f in "$A"/replicate/quarantine/t.0.*; do
		bodies+=$(sed '1,/^$/d' "$f")
	done
	assert_equal "$bodies" 45
	assert_equal "$(cat "$A/replicate/epoch")" 1
	assert_equal "$(cut -d' ' -f1 "$A/replicate/role")" replica
	[[ ! -e $A/replicate/fenced ]] || fail "still fenced"
	# B kept everything; A has what B has (demote pulled), and nothing more.
	assert_equal "$(queue_sums "$B")" "$b_before"
	assert_equal "$(queued_in "$A")" 4
	assert_equal "$(logged "$A")" 4
	same_state
	# B goes on; A receives and publishes nothing of its own.
	seq 6 7 | mq-pub -s "$B" -l t >/dev/null
	run -0 push_to "$B" "$A"
	assert_equal "$(queued_in "$A")" 6
	assert_equal "$(queued_in "$B")" 6
	same_state
	# Run again: nothing more to quarantine, the same count.
	run --separate-stderr mq-replicate -s "$A" demote --rsh env --remote-spool "$B"
	assert_success
	assert_output --partial "; 2 message(s)"
	assert_equal "$(count_entries "$A/replicate/quarantine")" 2
	assert_equal "$(queued_in "$A")" 6
	same_state
	# A's group drains B's messages, exactly.
	run -0 mq-sub -F '%s\n' -g g t
	assert_output "$(printf '%s\n' 1 2 3 b1 6 7)"
}

@test "a demote cut after the quarantine is finished by the next one" {
	split
	seq 4 5 | mq-pub -l t >/dev/null
	run -78 push_to "$A" "$B"
	local key id; id=$(cat "$A/ID")
	mkdir -p "$A/replicate/quarantine"
	if MQ_SPOOL=$A is_format2 t; then
		# As if the first demote died in the cut of the log, its head
		# written at the cut: the first of the two was written into
		# quarantine, the segment that holds both is still there.
		key=$(MQ_SPOOL=$A log_keys t | sed -n 4p)
		cp "$(MQ_SPOOL=$A log_file t "$key")" \
		    "$A/replicate/quarantine/t.0.$key.$id"
		set_head "$A" 5 3
	else
		# As if the first demote died after one message was linked into
		# quarantine and its queue link was removed, before log/.
		key=$(ls "$A/topics/t/p0/log" | sed -n 4p)
		ln "$A/topics/t/p0/log/$key" "$A/replicate/quarantine/t.0.$key.$id"
		rm "$A/topics/t/p0/g/g/new/$key"
	fi
	run -0 mq-replicate -s "$A" demote --rsh env --remote-spool "$B"
	assert_output --partial "; 2 message(s)"
	assert_equal "$(count_entries "$A/replicate/quarantine")" 2
	local f bodies=""
	for f in "$A"/replicate/quarantine/t.0.*; do
		bodies+=$(sed '1,/^$/d' "$f")
	done
	assert_equal "$bodies" 45
	assert_equal "$(logged "$A")" 3
	same_state
	run -0 mq-sub -F '%s\n' -g g t
	assert_output "$(printf '%s\n' 1 2 3)"
}

@test "format 2: a demote cut after the log is finished by the next one" {
	export MQ_FORMAT=2                        # whatever MQ_TEST_FORMAT says
	split
	seq 4 6 | mq-pub -l t >/dev/null         # one segment: 3, 4, 5
	mq-pub -s "$B" -l t <<<"b1" >/dev/null
	run -78 push_to "$A" "$B"
	# As if the first demote died after its log's cut: the three in
	# quarantine, the segment gone, the head at the cut, the group's
	# cursor (a consumer took all six) still past it.
	run -0 mq-sub -g g t -n 6
	local key id; id=$(cat "$A/ID")
	mkdir -p "$A/replicate/quarantine"
	for key in $(MQ_SPOOL=$A log_keys t | sed -n '4,$p'); do
		cp "$(MQ_SPOOL=$A log_file t "$key")" \
		    "$A/replicate/quarantine/t.0.$key.$id"
	done
	rm "$A/topics/t/p0/log/00000000000000000003"
	set_head "$A" 6 3
	assert_equal "$(MQ_SPOOL=$A cursor_of t g)" 6
	run --separate-stderr mq-replicate -s "$A" demote --rsh env --remote-spool "$B"
	assert_success
	assert_output --partial "; 3 message(s)"
	[[ $stderr != *quarantined* ]] || fail "$stderr"
	assert_equal "$(count_entries "$A/replicate/quarantine")" 3
	same_state
	# The group took 1 to 3 and goes on with b1, which took number 3.
	run -0 mq-sub -F '%o %s\n' -g g t
	assert_output "3 b1"
}

# merge_log SPOOL: format 2: t's p0 segments made one, at the first's
# name, as a merge would make them (mq-spool(5), Merge).
merge_log() {
	"$PY" - "$1/topics/t/p0" <<'PYEOF'
import os, re, sys
p = sys.argv[1]
log = os.path.join(p, "log")
names = sorted(n for n in os.listdir(log) if re.fullmatch(r"\d{20}", n))
line = re.compile(rb"mq-segment 2 first=(\d{20}) count=(\d{10}) size=\d{20}\n")
recs, count = b"", 0
for n in names:
    data = open(os.path.join(log, n), "rb").read()
    m = line.match(data)
    recs += data[m.end():]
    count += int(m.group(2))
head = b"mq-segment 2 first=%020d count=%010d size=%020d\n"
size = len(head % (0, 0, 0)) + len(recs)
tmp = os.path.join(p, "tmp", "merge." + names[0])
with open(tmp, "wb") as f:
    f.write(head % (int(names[0]), count, size) + recs)
os.rename(tmp, os.path.join(log, names[0]))
for n in names[1:]:
    os.unlink(os.path.join(log, n))
PYEOF
}

@test "format 2: demote cuts a segment that goes past the split, keeping what is below it" {
	export MQ_FORMAT=2                        # whatever MQ_TEST_FORMAT says
	split
	seq 4 5 | mq-pub -l t >/dev/null          # on A only
	merge_log "$A"
	assert_equal "$(ls "$A/topics/t/p0/log")" 00000000000000000000
	mq-pub -s "$B" -l t <<<"b1" >/dev/null
	run -78 push_to "$A" "$B"
	run -0 mq-replicate -s "$A" demote --rsh env --remote-spool "$B"
	assert_output --partial "; 2 message(s)"
	local f bodies=""
	for f in "$A"/replicate/quarantine/t.0.*; do
		bodies+=$(sed '1,/^$/d' "$f")
	done
	assert_equal "$bodies" 45
	# The segment holds 1 to 3 now, and b1 came after it.
	[[ $(head -1 "$A/topics/t/p0/log/00000000000000000000") == *" count=0000000003 "* ]] ||
	    fail "$(head -1 "$A/topics/t/p0/log/00000000000000000000")"
	assert_equal "$(logged "$A")" 4
	same_state
	assert_equal "$(ls "$A/topics/t/p0/tmp")" ""          # what the cut wrote there
	run -0 mq-sub -F '%s\n' -g g t
	assert_output "$(printf '%s\n' 1 2 3 b1)"
}

@test "format 2: acks a demoted spool took on its own records settle nothing where other records stand: promoted again, it sends them to a new replica in vain" {
	export MQ_FORMAT=2                        # whatever MQ_TEST_FORMAT says
	split
	mq-sub -g g t -n 3 >/dev/null             # 1 to 3, one claim: a K
	seq 4 5 | mq-pub -l t >/dev/null          # on A only
	mq-sub -g g t -n 2 >/dev/null             # 4 and 5, another K
	mq-pub -s "$B" -l t <<<"b1" >/dev/null
	run -0 mq-replicate -s "$A" demote --rsh env --remote-spool "$B"
	assert_output --partial "; 2 message(s)"
	# A follows B: 1 to 3 acked, b1 to hand out.
	assert_equal "$(queued_in "$A")" 1
	grep -q '^K .* t 0 g 3+2,' "$A/journal" || fail "no K of 4 and 5"
	# A promoted again, then pushed to a new replica D from the start
	# of its journal: the K of 4 and 5 names records D does not have.
	run -0 mq-replicate -s "$A" promote
	D=$TD/d
	run --separate-stderr push_to "$A" "$D"
	assert_success
	[[ $stderr == *"topic t partition 0: a group's record names "*" before 5, which this log does not hold there: not applied"* ]] ||
	    fail "$stderr"
	assert_equal "$(logged "$D")" 4
	assert_equal "$(queued_in "$D")" 1
	run -0 mq-replicate -s "$D" promote
	run -0 env MQ_SPOOL="$D" mq-sub -F '%s\n' -g g t
	assert_output b1
}

@test "demote takes the old primary's own messages out of its groups, held ones too: they drain exactly the new primary's" {
	split
	seq 4 5 | mq-pub -l t >/dev/null          # on A only
	# A consumer holds all five (one batch: its output is a file), and
	# acknowledges 1 and 2.
	local -a r
	mq-sub --manual --lease 1h -F '%r\n' -g g t -n 5 >"$TD/receipts"
	mapfile -t r <"$TD/receipts"
	assert_equal "${#r[@]}" 5
	mq-ack -g g t "${r[0]}" "${r[1]}"
	seq 6 7 | sed s/^/b/ | mq-pub -s "$B" -l t >/dev/null
	run -78 push_to "$A" "$B"
	run -0 mq-replicate -s "$A" demote --rsh env --remote-spool "$B"
	assert_output --partial "; 2 message(s)"
	# The same log (the queues differ: A's consumer took 1 to 3).
	cmp <(records "$A") <(records "$B")
	# B's come at once, first deliveries; 3 is still held; 4 and 5 are
	# gone.
	run -0 mq-sub -F '%s %a\n' -g g t
	assert_output "$(printf '%s\n' "b6 1" "b7 1")"
	# 3 comes back once its lease is over, and nothing else.
	MQ_NOW=$(($(date +%s) + 7200)) run -0 mq-sub -F '%s %a\n' -g g t
	assert_output "3 2"
	run -1 mq-sub -g g t
	# B's group has every one of its own.
	run -0 mq-sub -s "$B" -F '%s\n' -g g t
	assert_output "$(printf '%s\n' 1 2 3 b6 b7)"
}

@test "a replica at epoch 0 learns the new primary's epoch; promote goes past every epoch known" {
	split
	seq 6 7 | mq-pub -s "$B" -l t >/dev/null
	run -0 push_to "$B" "$C"
	assert_equal "$(cat "$C/replicate/epoch")" 1
	assert_equal "$(queued_in "$C")" 5
	[[ ! -e $C/replicate/fenced ]] || fail "C fenced"
	# Promoted in turn, C is at 2, and B, sending to it now, is fenced.
	run -0 mq-replicate -s "$C" promote
	assert_output --regexp "to epoch 2:"
	run -78 push_to "$B" "$C"
	assert_equal "$(head -1 "$B/replicate/fenced")" epoch=2
	# A promote of the fenced B goes past the epoch it learned: 3.
	run -0 mq-replicate -s "$B" promote
	assert_output --regexp "to epoch 3:"
	[[ ! -e $B/replicate/fenced ]] || fail "B still fenced"
}

@test "demote toward an older epoch is refused" {
	split
	run -78 push_to "$A" "$B"
	run --separate-stderr mq-replicate -s "$B" demote --rsh env --remote-spool "$A"
	assert_equal "$status" 78
	[[ $stderr == *"is at epoch 0, older than this spool's 1"* ]] || fail "$stderr"
	assert_equal "$(cat "$B/replicate/epoch")" 1
	run --separate-stderr mq-replicate -s "$A" demote --follow --rsh env --remote-spool "$B"
	assert_equal "$status" 64
}

@test "a promote during a session refuses the sender's next batch" {
	split
	run -0 mq-replicate -s "$C" promote          # C at 1: B, at 1, sends
	spawn "$TD/push.out" mq-replicate -s "$B" push --follow --rsh env --remote-spool "$C"
	echo one | mq-pub -s "$B" t >/dev/null
	wait_for new_is "$C" 4
	run -0 mq-replicate -s "$C" promote
	assert_output --regexp "to epoch 2:"
	echo two | mq-pub -s "$B" t >/dev/null
	wait_for test -e "$B/replicate/fenced"
	assert_equal "$(head -1 "$B/replicate/fenced")" epoch=2
	assert_equal "$(queued_in "$C")" 4
}

@test "a damaged epoch or fenced file is an error that names it" {
	split
	for bad in "01" "-1" "+1" "1 " "" "4294967296" "1
2" "x"; do
		printf '%s\n' "$bad" >"$B/replicate/epoch"
		run --separate-stderr push_to "$A" "$B"
		assert_equal "$status" 65
		[[ $stderr == *"$B/replicate/epoch is damaged"* ]] || fail "$bad: $stderr"
		run --separate-stderr mq-replicate -s "$B" promote
		assert_equal "$status" 65
		assert_one_line_error mq-replicate
	done
	printf 1 >"$B/replicate/epoch"          # no newline
	run -65 mq-replicate -s "$B" promote
	echo 4294967295 >"$B/replicate/epoch"
	run -0 push_to "$B" "$C"
	printf 'epoch=x\n' >"$A/replicate/fenced"
	run --separate-stderr mq-pub t x
	assert_equal "$status" 77
	[[ $stderr == *"$A/replicate/fenced is damaged"* ]] || fail "$stderr"
}

@test "acks on a fenced spool go on, with a warning" {
	split
	run -78 push_to "$A" "$B"
	run --separate-stderr mq-sub -g g t -n 1
	assert_success
	[[ $stderr == *"this spool was fenced"* ]] || fail "$stderr"
	assert_equal "$(queued_in "$A")" 2
}

@test "completion and usage: demote is a command, with the options of a pull" {
	run -0 completions _mq_replicate mq-replicate ""
	assert_line demote
	run -0 completions _mq_replicate mq-replicate demote --re
	assert_output "--remote-spool
--remote-command"
	run -0 mq-replicate --help
	assert_output --partial "demote [--progress | --no-progress] [-v] (ADDR:PORT | --rsh CMD ...)"
	run --separate-stderr mq-replicate demote
	assert_equal "$status" 64
	run --separate-stderr mq-replicate demote --compare --rsh env
	assert_equal "$status" 64
}
