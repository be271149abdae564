# Helpers for the tests that replicate between two spools on this host
# (replicate.bats, hostjournal.bats).

pair() {
	A=$TD/a B=$TD/b
	export MQ_SPOOL=$A
}

# push_ab [OPTIONS]: one push from A to B.
push_ab() {
	mq-replicate -s "$A" push --rsh env --remote-spool "$B" "$@"
}

# queue_names SPOOL: every message name a consumer could see, with where
# it is: log/, each group's new/ and delay/, dead letters and their records.
queue_names() {
	(cd "$1/topics" && find . \( -path '*/log/*' -o -path '*/g/*/new/*' \
	    -o -path '*/g/*/delay/*' -o -path '*/dlq/*/*' \) -type f |
	    LC_ALL=C sort)
}

# queue_sums SPOOL: queue_names with a checksum of each file.
queue_sums() {
	(cd "$1/topics" && find . \( -path '*/log/*' -o -path '*/g/*/new/*' \
	    -o -path '*/g/*/delay/*' -o -path '*/dlq/*/*' \) -type f -print0 |
	    LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

# same_spools: the same names in the same places, and every message file
# and dead letter record byte for byte the same; in topics of format 2,
# whose names are not the replica's (a log's segments, a group's names
# and claims), the same records, queues and dead letters (stored_view).
same_spools() {
	diff <(queue_names "$A" | format1_only "$A") \
	    <(queue_names "$B" | format1_only "$B") &&
	    diff <(queue_sums "$A" | format1_only "$A") \
	    <(queue_sums "$B" | format1_only "$B") &&
	    diff <(stored_view "$A") <(stored_view "$B")
}

# format1_only SPOOL: the lines of queue_names or queue_sums (on stdin)
# of SPOOL's topics of format 1.
format1_only() {
	local c t=
	for c in "$1"/topics/*/topic.conf; do
		[[ -f $c ]] && grep -qx 'format=2' "$c" && t+=" ${c%/topic.conf}"
	done
	awk -v f2="$t" 'BEGIN { n = split(f2, v, " ")
	    for (i = 1; i <= n; i++) { sub(".*/", "", v[i]); skip["./" v[i]] = 1 } }
	    { split($NF, p, "/"); if (!((p[1] "/" p[2]) in skip)) print }'
}
