# torture.bash: the crash test of guarantees.bats, for either storage
# format (format2.bats runs it with MQ_FORMAT=2): publishers (one message
# per mq-pub, and batches through mq-pub -l) and consumers of two groups
# killed with SIGKILL at random, CRASH_ROUNDS times; then every group
# drained, and checked: nothing that a publisher was told was stored is
# lost, nothing half written or never committed is delivered, the head is
# repaired, the log holds exactly the committed sequence numbers, and no
# temporary or queued name is left over.

crash_torture() {
	local rounds=${CRASH_ROUNDS:-30}
	mkgroup t g1
	mkgroup t g2

	# Payloads check themselves: "<n>:<k>:<n repeated k times>:<n>".
	cat >"$TD/single.sh" <<'EOF'
# single.sh TAG ACKED: one message per mq-pub; recorded once mq-pub exited 0.
tag=$1 acked=$2 i=0
while :; do
	i=$((i + 1))
	n=$tag.$i
	k=$((8 + i % 40))
	rep=$(printf "%0${k}d" 0)
	rep=${rep//0/$n}
	p="$n:$k:$rep:$n"
	if mq-pub -q t "$p"; then
		printf '%s\n' "$p" >>"$acked"
	fi
done
EOF
	cat >"$TD/batch.sh" <<'EOF'
# batch.sh TAG IDS: batches of 300 lines through mq-pub -l; ids recorded as
# mq-pub prints them (it prints an id only once the message is durable).
tag=$1 ids=$2 b=0
while :; do
	b=$((b + 1))
	awk -v t="$tag.$b" 'BEGIN {
		for (j = 1; j <= 300; j++) {
			n = t "." j; k = 8 + j % 40; r = ""
			for (x = 0; x < k; x++) r = r n
			print n ":" k ":" r ":" n
		}
	}' | mq-pub -l t >>"$ids"
done
EOF
	local r pid
	local -a pids
	for ((r = 1; r <= rounds; r++)); do
		pids=()
		spawn "$TD/log.$r.s1" bash "$TD/single.sh" "r$r-s1" "$TD/acked.$r.s1"
		pids+=("$SPAWNED")
		spawn "$TD/log.$r.s2" bash "$TD/single.sh" "r$r-s2" "$TD/acked.$r.s2"
		pids+=("$SPAWNED")
		spawn "$TD/log.$r.b" bash "$TD/batch.sh" "r$r-b" "$TD/ids.$r"
		pids+=("$SPAWNED")
		spawn "$TD/deliv.$r.g1.1" mq-sub -f --lease 1 -F '%i %s\n' -g g1 t
		pids+=("$SPAWNED")
		spawn "$TD/deliv.$r.g1.2" mq-sub -f --lease 1 -F '%i %s\n' -g g1 t
		pids+=("$SPAWNED")
		# A handler per message: kills often land while a message is
		# claimed, so it must come back after the lease.
		spawn "$TD/deliv.$r.g2.1" mq-sub -f --lease 1 \
		    --exec 'printf "%s %s\n" "$MQ_ID" "$(cat)"' -g g2 t
		pids+=("$SPAWNED")
		# The random sleeps only choose the moment of each kill.
		for pid in $(printf '%s\n' "${pids[@]}" | shuf); do
			sleep "0.$(printf '%03d' $((RANDOM % 120)))"
			kill -9 -- "-$pid" 2>/dev/null || true
		done
		for pid in "${pids[@]}"; do
			wait_for -t 30 pgroup_gone "$pid"
			wait "$pid" 2>/dev/null || true
		done
	done

	# Drain every group: a final consumer run, repeated until the leases
	# of the killed consumers have expired and nothing is left.
	drain() {
		mq-sub -F '%i %s\n' -g "$1" t >>"$TD/drain.$1"
		group_empty t "$1"
	}
	wait_for -t 20 drain g1
	wait_for -t 20 drain g2

	run "$PY" - "$TD" "$MQ_SPOOL" <<'EOF'
import glob, os, re, sys
td, spool = sys.argv[1:3]
ID = re.compile(r'[0-9a-f]{32}')

def lines(path):
    # A process killed while writing may leave a last line without its
    # newline: only complete lines count.
    if not os.path.exists(path):
        return []
    return open(path, 'rb').read().decode('utf-8', 'replace').split('\n')[:-1]

def valid(p):
    parts = p.split(':')
    if len(parts) != 4:
        return False
    n, k, rep, n2 = parts
    return n == n2 and k.isdigit() and rep == n * int(k)

errors = []
acked = [l for f in glob.glob(td + '/acked.*') for l in lines(f)]
for p in acked:
    if not valid(p):
        errors.append('acked file has a bad line %r' % p[:80])
ids = {l for f in glob.glob(td + '/ids.*') for l in lines(f) if ID.fullmatch(l)}

part = spool + '/topics/t/p0'
head = open(part + '/head').read()
m = re.fullmatch(r'mq-head 1 next=(\d{20}) committed=(\d{20}) sum=[0-9a-f]{8}\n', head)
if not m:
    errors.append('bad head %r' % head)
    nxt = committed = -1
else:
    nxt, committed = int(m.group(1)), int(m.group(2))
if nxt != committed:
    errors.append('head not repaired: next=%d committed=%d' % (nxt, committed))
log = {}
fmt2 = 'format=2' in open(spool + '/topics/t/topic.conf').read().split('\n')

def records(path):
    # A segment (format 2): its first line, then frames of
    # "mq-record SEQ HLEN BLEN HASH", the header block, the body, "\n".
    data = open(path, 'rb').read()
    m = re.match(rb'mq-segment 2 first=(\d{20}) count=(\d{10}) size=(\d{20})\n', data)
    if not m or int(m.group(3)) != len(data):
        errors.append('%s: not a whole segment' % path)
        return
    at, want = m.end(), int(m.group(1))
    for _ in range(int(m.group(2))):
        f = re.match(rb'mq-record (\d{20}) (\d{10}) (\d{10}) [0-9a-f]{16}\n', data[at:])
        if not f or int(f.group(1)) != want:
            errors.append('%s: bad record frame at %d' % (path, at))
            return
        hdr = data[at + f.end():at + f.end() + int(f.group(2))]
        mid = re.search(rb'^Message-Id: ([0-9a-f]{32})$', hdr, re.M)
        yield want, mid.group(1).decode() if mid else None
        at += f.end() + int(f.group(2)) + int(f.group(3)) + 1
        want += 1
    if at != len(data):
        errors.append('%s: bytes past its last record' % path)

for name in os.listdir(part + '/log'):
    if fmt2:
        for seq, mid in records(part + '/log/' + name):
            log[mid] = seq
        continue
    seq, _, mid = name.partition('.')
    log[mid] = int(seq)
if sorted(log.values()) != list(range(committed)):
    errors.append('log/ does not hold exactly seq 0..%d (%d files)' % (committed - 1, len(log)))
for d in [spool + '/tmp'] + glob.glob(part + '/g/*/tmp') + glob.glob(part + '/g/*/new') + glob.glob(part + '/g/*/cur') + glob.glob(part + '/tmp'):
    left = [x for x in os.listdir(d) if x != '.merge']
    if left:
        errors.append('%s not empty: %s' % (d, left[:5]))

print('acked singles: %d, printed batch ids: %d, committed: %d' % (len(acked), len(ids), committed))
for g in ('g1', 'g2'):
    dids, dpay, n = set(), set(), 0
    for f in glob.glob(td + '/deliv.*.%s.*' % g) + [td + '/drain.' + g]:
        if f.endswith('.err'):
            continue
        for l in lines(f):
            n += 1
            mid, _, p = l.partition(' ')
            if not ID.fullmatch(mid) or not valid(p):
                errors.append('%s: delivered a bad message %r' % (g, l[:80]))
                continue
            if mid not in log:
                errors.append('%s: delivered %s, which was never committed' % (g, mid))
            dids.add(mid)
            dpay.add(p)
    lost = [p for p in acked if p not in dpay]
    lost_ids = ids - dids
    print('%s: %d deliveries, %d distinct; lost acked: %d, lost ids: %d' % (g, n, len(dids), len(lost), len(lost_ids)))
    if lost:
        errors.append('%s: %d acked messages never delivered, e.g. %r' % (g, len(lost), lost[0][:60]))
    if lost_ids:
        errors.append('%s: %d printed ids never delivered, e.g. %s' % (g, len(lost_ids), sorted(lost_ids)[0]))
for e in errors[:20]:
    print('ERROR', e)
sys.exit(1 if errors else 0)
EOF
	echo "$output"
	assert_success
	# The test must have exercised something.
	[[ $(cat "$TD"/acked.* 2>/dev/null | wc -l) -gt 0 ]]
	[[ $(cat "$TD"/ids.* 2>/dev/null | wc -l) -gt 0 ]]
}
