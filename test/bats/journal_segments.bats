#!/usr/bin/env bats
# The journal in segments (mq-spool(5), CHANGE JOURNAL, Segments): cut at
# MQ_JOURNAL_SEGMENT bytes, the cut files dropped once every peer has
# confirmed them, offsets unchanged, nothing lost by a cut made while
# many processes append, and a peer behind a dropped file brought level.

load helper
load replicate_helper
load journal_helper

@test "a spool with no peer cuts its journal at MQ_JOURNAL_SEGMENT and keeps no cut file" {
	export MQ_JOURNAL_SEGMENT=4096
	mq-group create t g
	seq 1 500 | mq-pub -l t >/dev/null
	# Into a pipe: in format 2, where a publish writes no record, a claim
	# of one message each, and so a record per ack (K), as in format 1.
	run -0 bash -c 'set -o pipefail; mq-sub -g g t -n 500 | wc -l'
	assert_output 500
	assert_equal "$(count_entries "$MQ_SPOOL/journal.d")" 0
	# The journal goes on from where the cut files ended.
	run head -c 2 "$MQ_SPOOL/journal"
	assert_output 'B '
	local size
	size=$(stat -c %s "$MQ_SPOOL/journal")
	((size < 4096 + 200)) || fail "journal of $size bytes"
}

@test "cuts while 4 publishers and 2 consumers append lose no record and keep the offsets continuous" {
	pair_t
	hold_journal "$A"
	local p
	for p in 1 2 3 4; do
		(for _ in $(seq 1 20); do seq 1 50 | mq-pub -l t >/dev/null; done) &
	done
	# Into a pipe: in format 2, where the publishers write no record, a
	# claim of one message each, and a record per ack (K), as in format 1.
	mq-sub -f -g g t -n 1500 -t 60 | cat >"$TD/c1" &
	mq-sub -f -g g t -n 2500 -t 60 | cat >"$TD/c2" &
	wait
	(($(count_entries "$A/journal.d") > 20)) || fail "too few cuts"
	continuous "$A"
	local published=4000
	is_format2 t && published=0
	assert_equal "$(records "$A" P)" $published
	assert_equal "$(acked "$A")" $(($(wc -l <"$TD/c1") + $(wc -l <"$TD/c2")))
	assert_equal "$(($(wc -l <"$TD/c1") + $(wc -l <"$TD/c2")))" 4000
	# A new peer reads it all, across the cut files.
	run -0 push_ab
	assert_equal "$(b_log)" 4000
	assert_equal "$(b_new)" 0
	same_spools
}

@test "20,000 messages published and acked with a peer following: the journal holds what the peer has not confirmed, and a segment or two" {
	# test/slow/journal.bats does the same with 200,000.
	bounded_journal 20000
}

@test "a peer given up and offline while the journal is cut is brought level by hash on reconnect" {
	pair_t
	seq 1 100 | mq-pub -l t >/dev/null
	run -0 push_ab
	# B goes away; A goes on, and keeps what B has not confirmed.
	seq 101 400 | mq-pub -l t >/dev/null
	# Into a pipe: in format 2, where a publish writes no record, a claim
	# of one message each, and so a record per ack (K), as in format 1.
	mq-sub -g g t -n 150 | cat >/dev/null
	(($(count_entries "$A/journal.d") > 0)) || fail "nothing kept for B"
	# B is given up: what only it held goes at once.
	run -0 mq-replicate -s "$A" forget "$(cat "$B/ID")"
	assert_equal "$(count_entries "$A/journal.d")" 0
	run --separate-stderr push_ab -v
	assert_success
	[[ $stderr == *"no longer holds its place"*"comparing by hash"* ]] ||
	    fail "$stderr"
	assert_equal "$(b_log)" 400
	assert_equal "$(b_new)" 250
	same_spools
	# And then follows the journal again.
	seq 401 410 | mq-pub -l t >/dev/null
	run --separate-stderr push_ab -v
	assert_success
	[[ $stderr != *"comparing by hash"* ]] || fail "$stderr"
	assert_equal "$(b_new)" 260
}

@test "a sender that lost its record of a peer goes on from where the peer says it is, without comparing" {
	pair_t
	seq 1 300 | mq-pub -l t >/dev/null
	run -0 push_ab
	rm -r "$A/replicate/peers"
	seq 301 310 | mq-pub -l t >/dev/null
	run --separate-stderr push_ab -v
	assert_success
	[[ $stderr != *"comparing by hash"* ]] || fail "$stderr"
	assert_equal "$(b_new)" 310
	same_spools
}
