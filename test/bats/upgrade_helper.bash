# Helpers of the upgrade's tests (test/bats/upgrade.bats and
# test/slow/upgrade.bats).

# figures TOPIC: each group's pending, in flight, delayed and dead, one
# line per group, as mq-stat --json gives them.
figures() {
	mq-stat --json "$1" | "$PY" -c 'import json, sys
for g in json.load(sys.stdin)["groups"]:
    print(g["group"], g["pending"], g["inflight"], g["delayed"], g["dead"])'
}

# bodies FILE: the lines of FILE sorted, for comparing sets.
sorted_lines() {
	LC_ALL=C sort "$1"
}

# segments_tile TOPIC PARTITION: the segments of the partition follow each
# other without overlap, each named by its first; prints the records.
segments_tile() {
	local f line first count want=-1 n=0
	for f in "$MQ_SPOOL/topics/$1/p$2"/log/*; do
		[[ ${f##*/} =~ ^[0-9]{20}$ ]] || fail "$f: not a segment name"
		IFS= read -r line <"$f"
		[[ $line =~ ^mq-segment\ 2\ first=([0-9]{20})\ count=([0-9]{10}) ]] ||
			fail "$f: no segment line: $line"
		[[ ${f##*/} == "${BASH_REMATCH[1]}" ]] || fail "$f is not named by its first"
		first=$((10#${BASH_REMATCH[1]})) count=$((10#${BASH_REMATCH[2]}))
		((first >= want)) || fail "$f overlaps the segment before it"
		want=$((first + count)) n=$((n + count))
	done
	echo "$n"
}
