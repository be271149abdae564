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
# and dead letter record byte for byte the same.
same_spools() {
	diff <(queue_names "$A") <(queue_names "$B") &&
	    diff <(queue_sums "$A") <(queue_sums "$B")
}
