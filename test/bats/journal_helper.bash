# Helpers for the tests of the journal in segments (journal_segments.bats,
# test/slow/journal.bats).

# journal_bytes SPOOL: the bytes the journal holds, cut files included.
journal_bytes() {
	# A cut file may go while it is counted.
	find "$1/journal" "$1/journal.d" -maxdepth 1 -type f -printf '%s\n' \
	    2>/dev/null | awk '{ n += $1 } END { print n + 0 }'
}

# journal_end SPOOL: the offset after the journal's last byte: its B
# record's base, if it has one, and its size.
journal_end() {
	local base=0 line
	line=$(head -c 200 "$1/journal" | head -1)
	[[ $line == "B "* ]] && base=$(cut -d' ' -f3 <<<"$line")
	echo $((base + $(stat -c %s "$1/journal")))
}

# confirmed SPOOL: what its one peer has confirmed of its journal.
confirmed() {
	awk -F= '$1 == "confirmed" { print $2 }' "$1"/replicate/peers/* 2>/dev/null |
	    sort -n | head -1
}

# records SPOOL TYPE: how many records of TYPE the journal's files hold.
records() {
	cat "$1"/journal.d/* "$1"/journal 2>/dev/null | grep -c "^$2 " || true
}

# acked SPOOL: how many acks the journal's files hold: its A records
# (format 1), and the bits set in its K records, a record of a claim
# each (format 2).
acked() {
	cat "$1"/journal.d/* "$1"/journal 2>/dev/null | "$PY" -c '
import sys
n = 0
for line in sys.stdin:
    f = line.split(" ")
    if f[0] == "A":
        n += 1
    elif f[0] == "K":
        n += sum(bin(b).count("1") for b in bytes.fromhex(f[5].split(",")[1]))
print(n)'
}

# pair_t [SEGMENT]: spools A and B (pair), each with topic t and group g,
# the journal cut at SEGMENT bytes (4096 by default).
pair_t() {
	export MQ_JOURNAL_SEGMENT=${1:-4096}
	pair
	mq-group create t g
	mq-topic -s "$B" create t
	mq-group -s "$B" create t g
}

# hold_journal SPOOL: a peer of SPOOL that has confirmed nothing, so that
# it keeps every cut file.
hold_journal() {
	mkdir -p "$1/replicate/peers"
	printf 'name=hold\nconfirmed=0\ncontact=0\nstate=idle\n' \
	    >"$1/replicate/peers/0123456789abcdef0123456789abcdef"
}

# b_log, b_new: messages in B's log of topic t, and those its group g
# has not settled: pending, and in format 2 held in its claims (a
# replica's, of no lease, hold what the primary's consumers held).
b_log() {
	MQ_SPOOL=$B count_log t
}
b_new() {
	echo $(($(MQ_SPOOL=$B count_new t g) + $(MQ_SPOOL=$B count_cur t g)))
}

# continuous SPOOL: each cut file ends where the next file starts (its
# name, or the journal's B record).
continuous() {
	local f base size next prev_end=
	for f in "$1"/journal.d/*; do
		[[ -f $f ]] || continue
		base=$((10#$(basename "$f")))
		size=$(stat -c %s "$f")
		if [[ -n $prev_end && $prev_end != "$base" ]]; then
			echo "a cut file starts at $base, the one before ends at $prev_end" >&2
			return 1
		fi
		prev_end=$((base + size))
	done
	[[ -z $prev_end ]] && return 0
	next=$(head -1 "$1/journal" | cut -d' ' -f3)
	[[ $next == "$prev_end" ]] ||
	    { echo "the journal starts at $next, not $prev_end" >&2; return 1; }
}

# bounded_journal N: N messages published, in rounds of N/10, and acked
# by a consumer following, with a peer following them.  After each round
# the journal's files hold no more than the bound of mq-spool(5),
# Segments: what the peer has not confirmed, and the file appended to (up
# to one segment, 256 KiB here, and a publish chunk, at most 4,096
# records of about 85 bytes), a cut file the peer confirmed only part of,
# and up to a segment it confirmed since the sender last trimmed (two
# segments more).  The peer's confirmed offset is read before the
# files are counted, and the journal's end after: the bound so read can
# only be larger than the one of the moment they are counted.  Then no
# cut file once the peer has confirmed all.
bounded_journal() {
	local n=$1 round=$(($1 / 10)) max=0 now i c0 end lag
	local slack=$((3 * 262144 + 4096 * 90))
	pair_t 262144
	run -0 push_ab
	spawn "$TD/follow" mq-replicate -s "$A" push --follow --rsh env \
	    --remote-spool "$B"
	# Into a pipe: in format 2, where a publish writes no record, a claim
	# of one message each, and so a record per ack (K), as in format 1.
	spawn "$TD/sub" bash -c 'mq-sub -f -g g t -n "$1" -t 600 | cat' _ "$n"
	local sub=$SPAWNED
	for i in $(seq 1 10); do
		seq 1 "$round" | mq-pub -l t >/dev/null
		wait_for -t 120 eval "[[ \$(b_log) == $((i * round)) ]]"
		c0=$(confirmed "$A")
		now=$(journal_bytes "$A")
		end=$(journal_end "$A")
		lag=$((end - c0))
		((now <= lag + slack)) ||
		    fail "round $i: the journal holds $now bytes, $lag not confirmed"
		((now > max)) && max=$now
	done
	wait_for -t 300 exited "$sub"
	assert_equal "$(wc -l <"$TD/sub")" "$n"
	# B has every message and every ack.
	wait_for -t 120 eval '[[ $(b_new) == 0 ]]'
	c0=$(confirmed "$A")
	now=$(journal_bytes "$A")
	end=$(journal_end "$A")
	((now <= end - c0 + slack)) ||
	    fail "the journal holds $now bytes, $((end - c0)) not confirmed"
	((now > max)) && max=$now
	# It was cut, more than once: what it held was bounded by its cuts.
	(($(journal_end "$A") > 2 * 262144)) ||
	    fail "the journal ends at $(journal_end "$A"): never cut twice"
	echo "# $n messages: the journal held at most $max bytes" >&3
	# The receiver's journal (its @origin records) goes as its seen
	# covers it: after its last batch, at the sender's next PING (5 s).
	wait_for -t 15 eval '(($(journal_bytes "$B") <= 2 * 1024 * 1024))'
	echo "# the receiver's journal holds $(journal_bytes "$B") bytes" >&3
	# Once the peer has confirmed all, every cut file goes.
	wait_for -t 10 eval '[[ $(count_entries "$A/journal.d") == 0 ]]'
}
