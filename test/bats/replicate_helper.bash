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

# f2_topics SPOOL: the topics of format 2 of SPOOL, one a line.
f2_topics() {
	local c t
	for c in "$1"/topics/*/topic.conf; do
		[[ -f $c ]] && grep -qx 'format=2' "$c" || continue
		t=${c%/topic.conf}
		echo "${t##*/}"
	done
}

# f1_only SPOOL: the lines of queue_names or queue_sums SPOOL (stdin)
# but those of the log/ of a topic of format 2: two spools cut such a
# log into segments each its own way (merges); record_sums compares
# what they hold.
f1_only() {
	awk -v f2="$(f2_topics "$1" | tr '\n' '/')" '
	BEGIN { n = split(f2, v, "/"); for (i = 1; i <= n; i++) skip[v[i]] = 1 }
	match($0, /\.\/[^\/]+\/p[0-9]+\/log\//) {
		t = substr($0, RSTART + 2)
		if (substr(t, 1, index(t, "/") - 1) in skip)
			next
	}
	{ print }'
}

# record_sums SPOOL: each record of the topics of format 2, in order:
# topic, partition, KEY and the SHA-256 of its bytes (what format 1 keeps
# in log/KEY).
record_sums() {
	"$PY" - "$1/topics" <<'PYEOF'
import hashlib, os, re, sys
top = sys.argv[1]
line = re.compile(rb"mq-segment 2 first=\d{20} count=(\d{10}) size=\d{20}\n")
frame = re.compile(rb"mq-record (\d{20}) (\d{10}) (\d{10}) [0-9a-f]{16}\n")
for t in sorted(os.listdir(top)):
    conf = os.path.join(top, t, "topic.conf")
    if not os.path.isfile(conf) or "format=2\n" not in open(conf).read():
        continue
    for p in sorted(d for d in os.listdir(os.path.join(top, t)) if re.fullmatch(r"p\d+", d)):
        log = os.path.join(top, t, p, "log")
        for name in sorted(os.listdir(log)) if os.path.isdir(log) else []:
            if not re.fullmatch(r"\d{20}", name):
                continue
            data = open(os.path.join(log, name), "rb").read()
            m = line.match(data)
            pos = m.end() if m else len(data)
            for _ in range(int(m.group(1)) if m else 0):
                r = frame.match(data, pos)
                if not r:
                    break
                end = r.end() + int(r.group(2)) + int(r.group(3))
                msg, pos = data[r.end():end], end + 1
                mid = re.search(rb"^Message-Id: ([0-9a-f]{32})$", msg.split(b"\n\n", 1)[0], re.M)
                print(t, p, r.group(1).decode() + "." + (mid.group(1).decode() if mid else ""),
                      hashlib.sha256(msg).hexdigest())
PYEOF
}

# group_counts SPOOL: for the topics of format 2, each group's records
# pending or in flight, delayed and dead (a record held at the primary is
# in a claim of no lease on its replica: in flight there, or pending).
group_counts() {
	local t
	while IFS= read -r t; do
		echo "$t $(MQ_SPOOL=$1 mq-topic info --json "$t" |
		    jq -c '[.groups[] | [.name, .pending + .inflight, .delayed, .dead]]')"
	done < <(f2_topics "$1")
}

# same_spools: the same names in the same places, and every message file
# and dead letter record byte for byte the same; in a topic of format 2
# the same records in the same numbers, and its groups' counts the same.
same_spools() {
	diff <(queue_names "$A" | f1_only "$A") <(queue_names "$B" | f1_only "$B") &&
	    diff <(queue_sums "$A" | f1_only "$A") <(queue_sums "$B" | f1_only "$B") &&
	    diff <(record_sums "$A") <(record_sums "$B") &&
	    diff <(group_counts "$A") <(group_counts "$B")
}
