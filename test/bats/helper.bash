# helper.bash: common setup for the mq bats tests.
#
# Every test gets its own spool under $BATS_TEST_TMPDIR (exported as
# MQ_SPOOL) and its own HOME, so no tool can reach the user's spool even if
# it ignored MQ_SPOOL.  The tools under test are the ones in ../../bin.
# Nothing here sleeps to wait for something: wait_for polls a condition with
# a bound.
#
# Note: bats' run (bats_version_lt) assigns a variable named i, which
# clobbers a caller's local i: the tests use other names for loop counters.

load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

bats_require_minimum_version 1.5.0

MQ_BIN_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/bin"
PY=/usr/bin/python3

setup() {
	export PATH="$MQ_BIN_DIR:$PATH"
	export MQ_SPOOL="$BATS_TEST_TMPDIR/spool"
	export HOME="$BATS_TEST_TMPDIR/home"
	unset XDG_STATE_HOME MQ_POLL MQ_NOW MQ_FORMAT
	# MQ_TEST_FORMAT=1 runs a file's tests on topics of format 1, what a
	# spool made before format 2 holds (check-all runs the plain suite so;
	# the default is 2).  A file whose topics are of one format by what it
	# tests (upgrade.bats: format 1, what an upgrade converts) sets
	# MQ_FILE_FORMAT at its top instead.
	if [[ -n ${MQ_FILE_FORMAT:-} ]]; then
		export MQ_FORMAT=$MQ_FILE_FORMAT
	elif [[ -n ${MQ_TEST_FORMAT:-} ]]; then
		export MQ_FORMAT=$MQ_TEST_FORMAT
	fi
	mkdir -p "$MQ_SPOOL" "$HOME"
	# Exported: handlers (mq-sub --exec) write their traces under it.
	export TD="$BATS_TEST_TMPDIR"
}

# Background processes started with spawn, and mounts made with mount_tmpfs,
# are cleaned up here whatever the test did.
teardown() {
	local pid m
	if [[ -f $TD/.pids ]]; then
		while read -r pid; do
			# Only a session spawn made and that still runs: never a
			# process that merely reused the pid.
			[[ $(proc_session "$pid") == "$pid" ]] || continue
			kill -9 -- "-$pid" 2>/dev/null || true
		done <"$TD/.pids"
	fi
	if [[ -f $TD/.mounts ]]; then
		while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done <"$TD/.mounts"
	fi
	return 0
}

# spawn OUT CMD...: run CMD in the background in its own session (so that
# kill -- -PID reaches its children too), stdout to OUT, stderr to OUT.err.
# Sets SPAWNED to its pid.  fd 3 is closed so bats does not wait for it.
# Returns once the child leads its session: a kill -- -PID sent before
# setsid(2) ran would find no group, and the command would live on.
spawn() {
	local out=$1
	shift
	setsid "$@" >"$out" 2>"$out.err" 3>&- </dev/null &
	SPAWNED=$!
	echo "$SPAWNED" >>"$TD/.pids"
	until leads_session "$SPAWNED"; do
		sleep 0.002
	done
}

# leads_session PID: true once PID leads its own session, or is gone (a
# command that failed at once).  Reads /proc without forking.
leads_session() {
	local s
	local -a a
	{ read -r s <"/proc/$1/stat"; } 2>/dev/null || return 0
	read -ra a <<<"${s##*) }"
	[[ ${a[3]} == "$1" || ${a[0]} == Z ]]
}

# wait_for [-t SECONDS] CMD...: run CMD every 0.05 s until it succeeds;
# fail (status 1, message on stderr) when SECONDS (default 10) have passed.
wait_for() {
	local timeout=10
	if [[ $1 == -t ]]; then
		timeout=$2
		shift 2
	fi
	local now=${EPOCHREALTIME/./}
	local deadline=$((now + timeout * 1000000))
	while :; do
		"$@" && return 0
		now=${EPOCHREALTIME/./}
		if ((now > deadline)); then
			echo "wait_for: not true after ${timeout}s: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# proc_state PID: the state letter of PID (R, S, D, Z, ...), empty if gone.
# (No failing command inside $(...): bats counts that as a test failure.)
proc_state() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null || true)
	s=${s##*) }
	echo "${s%% *}"
}

# proc_session PID: the session id of PID, empty if gone.
proc_session() {
	local s
	local -a a
	s=$(cat "/proc/$1/stat" 2>/dev/null || true)
	[[ -n $s ]] || return 0
	read -ra a <<<"${s##*) }"
	echo "${a[3]}"
}

# exited PID: true once PID is gone (or a zombie).
exited() {
	local st
	st=$(proc_state "$1")
	[[ -z $st || $st == Z ]]
}

# sleeping PID: true while PID is blocked (state S).
sleeping() {
	[[ $(proc_state "$1") == S ]]
}

# pgroup_gone PGID: no live process (zombies do not count) is in the group.
pgroup_gone() {
	local line
	local -a a
	while IFS= read -r line; do
		read -ra a <<<"${line##*) }"
		if [[ ${a[2]} == "$1" && ${a[0]} != Z ]]; then
			return 1
		fi
	done < <(cat /proc/[0-9]*/stat 2>/dev/null || true)
	return 0
}

# group_dir TOPIC GROUP [PARTITION]
group_dir() {
	echo "$MQ_SPOOL/topics/$1/p${3:-0}/g/$2"
}

# count_entries DIR: number of entries of DIR (0 if it does not exist).
count_entries() {
	[[ -d $1 ]] || {
		echo 0
		return
	}
	find "$1" -mindepth 1 -maxdepth 1 -printf x | wc -c
}

# is_format2 TOPIC: the topic keeps its log in segments (format 2).
is_format2() {
	grep -qx 'format=2' "$MQ_SPOOL/topics/$1/topic.conf"
}

# log_end TOPIC [PARTITION]: format 2: the first sequence number past the
# segments in log/ (each says its first and count on its first line), or
# the head's committed when that is past them (numbers a head skipped:
# dead letters imported).
log_end() {
	local f line first count end
	end=$(head_field "$1" committed "${2:-0}")
	for f in "$MQ_SPOOL/topics/$1/p${2:-0}"/log/*; do
		[[ -f $f ]] || continue
		IFS= read -r line <"$f"
		[[ $line =~ first=([0-9]{20})\ count=([0-9]{10}) ]] || continue
		first=$((10#${BASH_REMATCH[1]})) count=$((10#${BASH_REMATCH[2]}))
		((first + count > end)) && end=$((first + count))
	done
	echo "$end"
}

# cursor_of TOPIC GROUP [PARTITION]: format 2: the group's cursor, or the
# start its conf gives while none was written.
cursor_of() {
	local line
	line=$(cat "$(group_dir "$@")/cursor" 2>/dev/null || true)
	if [[ $line =~ next=([0-9]{20}) ]]; then
		echo $((10#${BASH_REMATCH[1]}))
	else
		line=$(grep -E "^(from|start)\.p${3:-0}=" \
		    "$MQ_SPOOL/topics/$1/groups/$2.conf" | sort | head -1 || true)
		# A partition added later starts at 0.
		line=${line#*=}
		echo "${line:-0}"
	fi
}

# next_of TOPIC GROUP [PARTITION]: format 2: the group's next record, the
# larger of its cursor and the end of its last claim.
next_of() {
	local next c n
	next=$(cursor_of "$@")
	for c in "$(group_dir "$@")"/claims/*+*; do
		[[ $c =~ /([0-9]{20})\+([0-9]+),r[0-9a-f]{8}$ ]] || continue
		n=$((10#${BASH_REMATCH[1]} + BASH_REMATCH[2]))
		((n > next)) && next=$n
	done
	echo "$next"
}

# claimed TOPIC GROUP [PARTITION]: format 2: the records the group's
# claims hold and have not settled (a claim being made counts whole).
claimed() {
	"$PY" - "$(group_dir "$@")/claims" <<'PYEOF'
import os, re, sys
d, n = sys.argv[1], 0
for name in os.listdir(d) if os.path.isdir(d) else []:
    m = re.fullmatch(r"\d{20}\+(\d+),r[0-9a-f]{8}", name)
    if not m:
        continue
    count = int(m.group(1))
    line = open(os.path.join(d, name)).read()
    bits = re.search(r"settled=([0-9a-f]{128})", line)
    if not bits:
        n += count
        continue
    b = bytes.fromhex(bits.group(1))
    n += sum(1 for i in range(count) if not b[i // 8] >> (i % 8) & 1)
print(n)
PYEOF
}

# lease_now TOPIC GROUP: the lease deadline (ms) of the group's one claim
# in partition 0: its cur/ name's, or in format 2 its claim file's.
lease_now() {
	local f line
	for f in "$(group_dir "$1" "$2")"/cur/* "$(group_dir "$1" "$2")"/claims/*; do
		[[ -e $f ]] || continue
		if [[ $f =~ ,l([0-9]+),r[0-9a-f]{8}:2,$ ]]; then
			echo "${BASH_REMATCH[1]}"
			return
		fi
		line=$(cat "$f")
		if [[ $line =~ deadline=([0-9]{20}) ]]; then
			echo $((10#${BASH_REMATCH[1]}))
			return
		fi
	done
	return 1
}

# receipt_deadline RECEIPT: the lease deadline (ms) a receipt was given:
# written in it, or in format 2 in the claim it names.
receipt_deadline() {
	if [[ $1 =~ ,l([0-9]+),r[0-9a-f]{8}$ ]]; then
		echo "${BASH_REMATCH[1]}"
		return
	fi
	local IFS=/ line
	local -a f
	read -ra f <<<"$1"
	line=$(cat "$(group_dir "${f[0]}" "${f[1]}" "${f[2]}")/claims/${f[3]}")
	[[ $line =~ deadline=([0-9]{20}) ]] || return 1
	echo $((10#${BASH_REMATCH[1]}))
}

# is_receipt_of RECEIPT TOPIC GROUP PARTITION KEY ATTEMPT: RECEIPT is one
# of KEY's claim at that attempt: its cur/ name's (format 1, and format 2
# for a record that left the happy path); in format 2 a claim's that holds
# KEY's record, and its sequence number (attempt 1).
is_receipt_of() {
	local r=$1 pre=$2/$3/$4/ key=$5 seq
	if [[ $r =~ ^"$pre$key",a$6,l[0-9]+,r[0-9a-f]{8}$ ]]; then
		return 0
	fi
	seq=$((10#${key%%.*}))
	if is_format2 "$2" && (($6 == 1)) &&
		[[ $r =~ ^"$pre"([0-9]{20})\+([0-9]+),r[0-9a-f]{8}/(0|[1-9][0-9]*)$ ]] &&
		((BASH_REMATCH[3] == seq && 10#${BASH_REMATCH[1]} <= seq &&
		    seq < 10#${BASH_REMATCH[1]} + BASH_REMATCH[2])); then
		return 0
	fi
	echo "is_receipt_of: $r is not a receipt of $key at attempt $6" >&2
	return 1
}

# count_new / count_cur / count_delay TOPIC GROUP [PARTITION]; in format 2
# what the log holds past the group's next record is pending too, as
# mq-stat counts it (its filter not yet applied), and what its claims
# hold unsettled is in flight.
count_new() {
	local n
	n=$(count_entries "$(group_dir "$@")/new")
	if is_format2 "$1"; then
		n=$((n + $(log_end "$1" "${3:-0}") - $(next_of "$@")))
	fi
	echo "$n"
}
count_cur() {
	local n
	n=$(count_entries "$(group_dir "$@")/cur")
	if is_format2 "$1"; then
		n=$((n + $(claimed "$@")))
	fi
	echo "$n"
}
count_delay() {
	count_entries "$(group_dir "$@")/delay"
}
# count_log TOPIC [PARTITION]: the messages the partition's log holds.
count_log() {
	count_log_dir "$1" "$MQ_SPOOL/topics/$1/p${2:-0}/log"
}

# count_log_dir TOPIC DIR: the messages DIR, a log/ of TOPIC, holds (a
# placed partition's by its own path): its entries in format 1, the counts
# of its segments in format 2.
count_log_dir() {
	local f line n=0
	if ! is_format2 "$1"; then
		count_entries "$2"
		return
	fi
	for f in "$2"/*; do
		[[ -f $f ]] || continue
		IFS= read -r line <"$f"
		[[ $line =~ count=([0-9]{10}) ]] && n=$((n + 10#${BASH_REMATCH[1]}))
	done
	echo "$n"
}

# log_records TOPIC PARTITION [KEY]: format 2: each record of the
# partition's segments (or only KEY's: its sequence number and id) copied
# into a file of its own, named by its KEY, under $TD/records/TOPIC/p<k>/:
# the bytes format 1 keeps in log/KEY; prints their paths in sequence
# order.  A segment that does not read is passed by.
log_records() {
	"$PY" - "$MQ_SPOOL/topics/$1/p$2/log" "$TD/records/$1/p$2" "${3:-}" <<'PYEOF'
import os, re, sys
log, out, want = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
for name in sorted(os.listdir(log)) if os.path.isdir(log) else []:
    path = os.path.join(log, name)
    if not re.fullmatch(r"\d{20}", name) or not os.path.isfile(path):
        continue
    data = open(path, "rb").read()
    m = re.match(rb"mq-segment 2 first=\d{20} count=(\d{10}) size=\d{20}\n", data)
    if not m:
        continue
    pos = m.end()
    frame = re.compile(rb"mq-record (\d{20}) (\d{10}) (\d{10}) [0-9a-f]{16}\n")
    for _ in range(int(m.group(1))):
        r = frame.match(data, pos)
        if not r:
            break
        start = r.end()
        end = start + int(r.group(2)) + int(r.group(3))
        msg, pos = data[start:end], end + 1
        mid = re.search(rb"^Message-Id: ([0-9a-f]{32})$", msg.split(b"\n\n", 1)[0], re.M)
        key = r.group(1).decode() + "." + (mid.group(1).decode() if mid else "")
        if want and key != want:
            continue
        f = os.path.join(out, key)
        with open(f, "wb") as o:
            o.write(msg)
        print(f)
PYEOF
}

# log_files TOPIC [PARTITION]: a file with the stored bytes of each message
# of the partition, in sequence order, one path a line: its log/KEY in
# format 1, a copy of its record in format 2 (log_records).
log_files() {
	local f
	if is_format2 "$1"; then
		log_records "$1" "${2:-0}"
		return
	fi
	for f in "$MQ_SPOOL/topics/$1/p${2:-0}"/log/*; do
		[[ -f $f ]] && echo "$f"
	done
	return 0
}

# log_file TOPIC KEY [PARTITION]: the stored bytes of message KEY as a file
# (as log_files); fails when the partition does not hold it.
log_file() {
	local f
	if is_format2 "$1"; then
		f=$(log_records "$1" "${3:-0}" "$2")
	else
		f=$MQ_SPOOL/topics/$1/p${3:-0}/log/$2
	fi
	[[ -f $f ]] || {
		echo "log_file: $1 p${3:-0} does not hold $2" >&2
		return 1
	}
	echo "$f"
}

# log_grep TOPIC REGEX [PARTITION]: some stored message of the partition
# has a line matching REGEX (grep); false when none is stored.
log_grep() {
	local -a f
	mapfile -t f < <(log_files "$1" "${3:-0}")
	((${#f[@]})) && grep -q -- "$2" "${f[@]}"
}

# name_again TOPIC GROUP KEY [PARTITION]: give the group a name of message
# KEY in new/ by hand, as a feed or a publish that died would leave it: a
# link to log/KEY (format 1), an empty file (format 2, read from the log).
name_again() {
	local d
	d=$(group_dir "$1" "$2" "${4:-0}")/new
	if is_format2 "$1"; then
		: >"$d/$3"
	else
		ln "$MQ_SPOOL/topics/$1/p${4:-0}/log/$3" "$d/$3"
	fi
}

# rewrite_stored FILE PYTHON: runs PYTHON with d the bytes of FILE, the
# stored bytes of a message as log_file or log_files gave them, and stores
# d in their place as a hand with write access to the spool would: in
# format 1 into the log/ file, in place (the group's names see it too); in
# format 2 into the message's record in its segment, in place, framed and
# hashed anew (the segment's size line too) and its modification time kept,
# and into the copy FILE.
rewrite_stored() {
	"$PY" - "$1" "$2" "$MQ_SPOOL" "$TD" <<'PYEOF'
import os, re, sys, xxhash
path, code, spool, td = sys.argv[1:5]
env = {"d": open(path, "rb").read()}
exec(code, env)
new = env["d"]
with open(path, "r+b") as f:
    f.write(new)
    f.truncate()
recs = os.path.join(td, "records") + os.sep
if not path.startswith(recs):
    sys.exit(0)
topic, part, key = path[len(recs):].split(os.sep)
seq = int(key.split(".")[0])
log = os.path.join(spool, "topics", topic, part, "log")
line = re.compile(rb"mq-segment 2 first=(\d{20}) count=(\d{10}) size=\d{20}\n")
frame = re.compile(rb"mq-record (\d{20}) (\d{10}) (\d{10}) [0-9a-f]{16}\n")
for name in sorted(os.listdir(log)):
    seg = os.path.join(log, name)
    data = open(seg, "rb").read()
    m = line.match(data)
    if not m or not int(m.group(1)) <= seq < int(m.group(1)) + int(m.group(2)):
        continue
    first, count, pos, out = int(m.group(1)), int(m.group(2)), m.end(), []
    for _ in range(count):
        r = frame.match(data, pos)
        start = r.end()
        end = start + int(r.group(2)) + int(r.group(3))
        n, msg, pos = int(r.group(1)), data[start:end], end + 1
        if n == seq:
            msg = new
        head, _, body = msg.partition(b"\n\n")
        head += b"\n\n"
        h = xxhash.xxh3_64_hexdigest(head + body).encode()
        out.append(b"mq-record %020d %010d %010d %s\n" % (n, len(head), len(body), h)
                   + head + body + b"\n")
    recs = b"".join(out)
    size = len(b"mq-segment 2 first=%020d count=%010d size=%020d\n" % (0, 0, 0)) + len(recs)
    st = os.stat(seg)
    with open(seg, "r+b") as f:
        f.write(b"mq-segment 2 first=%020d count=%010d size=%020d\n" % (first, count, size) + recs)
        f.truncate()
    os.utime(seg, ns=(st.st_atime_ns, st.st_mtime_ns))
    sys.exit(0)
sys.exit("rewrite_stored: no segment of %s holds %d" % (log, seq))
PYEOF
}

# rekey_stored TOPIC KEY NEWKEY [PARTITION]: after rewrite_stored gave
# message KEY another id, its names follow, as that hand would move them:
# log/KEY (format 1; in format 2 the record is its own name) and the
# groups' names in new/ become NEWKEY.
rekey_stored() {
	local p=$MQ_SPOOL/topics/$1/p${4:-0} n
	is_format2 "$1" || mv "$p/log/$2" "$p/log/$3"
	for n in "$p"/g/*/new/"$2"; do
		[[ -e $n ]] && mv "$n" "${n%/*}/$3"
	done
	return 0
}

# replace_stored TOPIC KEY FILE [PARTITION]: message KEY's stored bytes
# replaced by FILE's, a message of another id, under the same sequence
# number, its names following (rewrite_stored, rekey_stored).
replace_stored() {
	local f id
	f=$(log_file "$1" "$2" "${4:-0}") || return 1
	id=$(header_of "$3" Message-Id) || return 1
	rewrite_stored "$f" "d = open('$3', 'rb').read()"
	rekey_stored "$1" "$2" "${2%%.*}.$id" "${4:-0}"
}

# log_keys TOPIC [PARTITION]: the KEYs of the messages the partition holds,
# in sequence order.
log_keys() {
	local f
	while IFS= read -r f; do
		echo "${f##*/}"
	done < <(log_files "$@")
}

# fresh_in TOPIC: where mq-stat --message says a message lies that a group
# has not taken yet: its name in new/ (format 1), only its record in the
# log (format 2, past the group's cursor).
fresh_in() {
	if is_format2 "$1"; then
		echo log
	else
		echo new
	fi
}

# count_claims DIR: the claims in a group's claims/ (format 2), without
# the spares a taker writes a claim into when the file system is full.
count_claims() {
	local n
	n=$(find "$1" -mindepth 1 -maxdepth 1 ! -name '.*' -printf x 2>/dev/null | wc -c)
	echo "$n"
}

# queued TOPIC GROUP [PARTITION]: the KEYs of what the group's queue holds
# to hand out in a partition, its filter applied, in sequence order: its
# names in new/ (format 1, where the publisher applies the filter); in
# format 2 also the records past its cursor that its next feed would take
# (the feed applies the filter: as mq-stat --peek shows them).
queued() {
	local p o id
	if ! is_format2 "$1"; then
		ls "$(group_dir "$@")/new"
		return
	fi
	while read -r p o id; do
		[[ $p == "${3:-0}" ]] && printf '%020d.%s\n' "$o" "$id"
	done < <(mq-stat --peek -F '%p %o %i\n' "$1" "$2")
	return 0
}

# count_queued TOPIC GROUP [PARTITION]: how many (queued).
count_queued() {
	local n
	n=$(queued "$@" | wc -l)
	echo "$n"
}

# group_empty TOPIC GROUP: nothing pending or in flight.
group_empty() {
	[[ $(count_new "$1" "$2") == 0 && $(count_cur "$1" "$2") == 0 ]]
}

# head_field TOPIC FIELD [PARTITION]: next or committed from p<k>/head, as a
# plain decimal number.
head_field() {
	local line v
	line=$(cat "$MQ_SPOOL/topics/$1/p${3:-0}/head")
	[[ $line =~ $2=([0-9]{20}) ]] || return 1
	v=${BASH_REMATCH[1]}
	echo $((10#$v))
}

# now_ms: wall clock in milliseconds since the epoch.
now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

# now_us: wall clock in microseconds since the epoch.
now_us() {
	echo "${EPOCHREALTIME/./}"
}

# past_ms MS: true once the clock is past MS (ms since the epoch).
past_ms() {
	(($(now_ms) > $1))
}

# spool_snapshot [DIR]: every name with its type, size, mode and link
# count, and a checksum of every regular file: equal snapshots mean nothing
# on disk changed.
spool_snapshot() {
	local d=${1:-$MQ_SPOOL}
	(
		cd "$d" || exit 1
		find . -printf '%p %y %s %m %n\n' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	)
}

# assert_one_line_error PROG: $stderr (from run --separate-stderr) is
# exactly one line, and it starts with "PROG: ".
assert_one_line_error() {
	if [[ ${#stderr_lines[@]} -ne 1 ]]; then
		fail "expected exactly one line on stderr, got ${#stderr_lines[@]}: $stderr"
	fi
	if [[ ${stderr_lines[0]} != "$1: "?* ]]; then
		fail "expected stderr to start with '$1: ', got: $stderr"
	fi
}

# assert_usage PROG: --help output ($output) is a usage message naming PROG.
assert_usage_output() {
	local lc=${output,,}
	[[ $lc == *usage* ]] || fail "no 'usage' in --help output: $output"
	[[ $output == *"$1"* ]] || fail "'$1' not named in --help output: $output"
}

# mkgroup TOPIC GROUP [OPTIONS...]: subscribe GROUP (mq-sub with nothing
# pending exits 1); TOPIC may be a wildcard pattern.
mkgroup() {
	local t=$1 g=$2 conf
	shift 2
	run mq-sub -g "$g" "$@" "$t"
	assert_equal "$status" 1
	assert_equal "$output" ""
	conf=$MQ_SPOOL/topics/$t/groups/$g.conf
	[[ $t == *[*\>]* ]] && conf=$MQ_SPOOL/wildcards/$t/$g.conf
	[[ -f $conf ]] || fail "group $g not created"
}

# body_of FILE: the body of a message file (everything after the first
# empty line).
body_of() {
	"$PY" - "$1" <<'EOF'
import sys
data = open(sys.argv[1], 'rb').read()
sys.stdout.buffer.write(data.split(b'\n\n', 1)[1])
EOF
}

# header_of FILE NAME: value of header NAME of a message file.
header_of() {
	"$PY" - "$1" "$2" <<'EOF'
import sys
data = open(sys.argv[1], 'rb').read()
head = data.split(b'\n\n', 1)[0].decode()
for line in head.split('\n'):
    n, _, v = line.partition(': ')
    if n == sys.argv[2]:
        print(v)
        sys.exit(0)
sys.exit(1)
EOF
}

# one_file DIR: the single entry of DIR (fails unless there is exactly one).
one_file() {
	local -a f
	f=("$1"/*)
	[[ ${#f[@]} -eq 1 && -e ${f[0]} ]] || {
		echo "expected one entry in $1, found: ${f[*]}" >&2
		return 1
	}
	echo "${f[0]}"
}

# mount_tmpfs DIR OPTIONS: mount a tmpfs (root only), unmounted at teardown.
mount_tmpfs() {
	mkdir -p "$1"
	mount -t tmpfs -o "$2" tmpfs "$1" || return 1
	echo "$1" >>"$TD/.mounts"
}

require_root() {
	[[ $(id -u) == 0 ]] || skip "needs root (mount)"
}

# kill_two TOPIC GROUP: publishes a b c d and dead-letters b and d
# (max-attempts 1, a handler that refuses them), leaving a and c acked.
kill_two() {
	mkgroup "$1" "$2" --max-attempts 1
	mq-pub -q "$1" a b c d
	run --separate-stderr mq-sub --backoff 0 --exec '
		x=$(cat); case $x in b|d) echo "refusing $x" >&2; exit 4;; esac' \
	    -g "$2" "$1"
	assert_equal "$status" 75
}

# completions FUNC WORD...: what the bash completion function FUNC of
# completions/mq.bash offers for the command line WORD... (the last word
# is the one being completed), one per line.
completions() {
	local fn=$1
	shift
	# shellcheck source=/dev/null
	source "$BATS_TEST_DIRNAME/../../completions/mq.bash"
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$fn"
	printf '%s\n' "${COMPREPLY[@]}"
}

# stored_view SPOOL: what SPOOL's topics of format 2 hold for consumers,
# to compare with a replica's (same_spools): each record of each
# partition's log (its sequence number, id and the sha256 of its bytes:
# the segments' names and cuts may differ), each group's queue in
# sequence order as mq-stat --peek gives it, its figures of
# mq-topic info (pending and in flight together: a record held at a
# primary is in a claim of no lease on its replica), and each dead
# letter and its record byte for byte.  Topics of format 1 are left out.
stored_view() {
	"$PY" - "$1" <<'PYEOF'
import hashlib, json, os, re, subprocess, sys
spool = sys.argv[1]
env = dict(os.environ, MQ_SPOOL=spool)
tdir = os.path.join(spool, "topics")
head = re.compile(rb"mq-segment 2 first=\d{20} count=(\d{10}) size=\d{20}\n")
frame = re.compile(rb"mq-record (\d{20}) (\d{10}) (\d{10}) [0-9a-f]{16}\n")
for t in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
    try:
        conf = open(os.path.join(tdir, t, "topic.conf")).read()
    except OSError:
        continue
    if "format=2\n" not in conf:
        continue
    for p in sorted(d for d in os.listdir(os.path.join(tdir, t)) if re.fullmatch(r"p\d+", d)):
        log, seen = os.path.join(tdir, t, p, "log"), {}
        for name in sorted(os.listdir(log)) if os.path.isdir(log) else []:
            if not re.fullmatch(r"\d{20}", name):
                continue
            data = open(os.path.join(log, name), "rb").read()
            m = head.match(data)
            pos = m.end() if m else len(data)
            for _ in range(int(m.group(1)) if m else 0):
                r = frame.match(data, pos)
                if not r:
                    break
                end = r.end() + int(r.group(2)) + int(r.group(3))
                msg, pos = data[r.end():end], end + 1
                mid = re.search(rb"^Message-Id: ([0-9a-f]{32})$", msg.split(b"\n\n", 1)[0], re.M)
                seen.setdefault(int(r.group(1)), "%s %s" % (
                    mid.group(1).decode() if mid else "-", hashlib.sha256(msg).hexdigest()))
        for seq in sorted(seen):
            print("log %s %s %d %s" % (t, p, seq, seen[seq]))
        dlq = os.path.join(tdir, t, p, "dlq")
        for g in sorted(os.listdir(dlq)) if os.path.isdir(dlq) else []:
            for f in sorted(os.listdir(os.path.join(dlq, g))):
                b = open(os.path.join(dlq, g, f), "rb").read()
                print("dlq %s %s %s %s %s" % (t, p, g, f, hashlib.sha256(b).hexdigest()))
    info = json.loads(subprocess.run(["mq-topic", "info", "--json", t], env=env,
        check=True, capture_output=True, text=True).stdout)
    for g in sorted(info["groups"], key=lambda g: g["name"]):
        print("group %s %s %d %d %d" % (t, g["name"], g["pending"] + g["inflight"],
            g["delayed"], g["dead"]))
        peek = subprocess.run(["mq-stat", "--peek", "-F", "%p %o %i\\n", t, g["name"]],
            env=env, capture_output=True, text=True)
        # 1: nothing pending.
        if peek.returncode not in (0, 1):
            sys.exit("stored_view: mq-stat --peek: " + peek.stderr)
        for line in peek.stdout.splitlines():
            print("queued %s %s %s" % (t, g["name"], line))
PYEOF
}
