#!/usr/bin/env bats
# What others can damage under the tools: a dead-letter archive, counters files.

load helper

# damaged_archives TAR DIR: variants of TAR in DIR: one byte changed in the
# header of each entry (name, mode, size, checksum, type, magic); the
# same with the checksum made right again where the change matters (name,
# size; a directory or a link for a file); a byte in the end-of-archive
# blocks; cut at every 512-byte boundary and in the middle of a block; data
# after the end; an empty file.
damaged_archives() {
	"$PY" - "$1" "$2" <<'EOF'
import os, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
data = open(src, 'rb').read()
def put(name, b):
    open(os.path.join(out, name), 'wb').write(b)
heads = [m.offset for m in tarfile.open(src)]
end = max(m.offset_data + ((m.size + 511) // 512) * 512
          for m in tarfile.open(src))
def checksum(b, h):
    b[h + 148:h + 156] = b' ' * 8
    b[h + 148:h + 156] = b'%06o\0 ' % sum(b[h:h + 512])
for n, h in enumerate(heads):
    # name (start, middle), mode, size, checksum, typeflag, magic
    for field in (0, 20, 100, 124, 130, 148, 156, 257):
        b = bytearray(data)
        b[h + field] ^= 0x55
        put('header-%d-%d' % (n, field), bytes(b))
        if field in (0, 124, 130):
            checksum(b, h)
            put('resummed-%d-%d' % (n, field), bytes(b))
    for t in b'125':
        b = bytearray(data)
        b[h + 156] = t
        checksum(b, h)
        put('type-%d-%c' % (n, t), bytes(b))
b = bytearray(data)
b[end] = 0x41
put('endblock', bytes(b))
for cut in range(512, len(data), 512):
    put('cut-%d' % cut, data[:cut])
put('cut-mid', data[:heads[-1] + 700])
put('garbage', data + b'garbage\n')
put('another', data + data)
put('zeros-then-garbage', data + bytes(10240) + b'x')
put('empty', b'')
EOF
}

@test "mq-dlq import of a damaged archive (a header byte, cut short, data after its end, empty): 65, one line, nothing changed" {
	kill_two t g
	mq-dlq export t "$TD/t.tar"
	MQ_SPOOL=$TD/other kill_two t g
	mkdir "$TD/bad"
	damaged_archives "$TD/t.tar" "$TD/bad"
	local before f n=0
	before=$(spool_snapshot "$TD/other")
	for f in "$TD/bad"/*; do
		run --separate-stderr mq-dlq -s "$TD/other" import "$f"
		[[ $status == 65 ]] || fail "${f##*/}: exit $status: $stderr"
		assert_one_line_error mq-dlq
		assert_output ""
		[[ $(spool_snapshot "$TD/other") == "$before" ]] ||
		    fail "${f##*/} changed the spool"
		n=$((n + 1))
	done
	((n > 50)) || fail "only $n damaged archives"
	# Through a pipe as well.
	run --separate-stderr bash -c 'mq-dlq -s "$1" import - <"$2"' _ \
	    "$TD/other" "$TD/bad/header-1-0"
	assert_equal "$status" 65
	assert_one_line_error mq-dlq
	assert_equal "$(spool_snapshot "$TD/other")" "$before"
	# A whole archive, with the end-of-archive blocks padded with zeros
	# as tar does, still goes in.
	cat "$TD/t.tar" <(head -c 10240 /dev/zero) >"$TD/padded.tar"
	run --separate-stderr mq-dlq -s "$TD/other" import "$TD/padded.tar"
	assert_success
	assert_equal "$(mq-dlq -s "$TD/other" count t)" 4
}

# lines_at_least FILE N
lines_at_least() {
	(($(wc -l <"$1") >= $2))
}

# stats_files: this host's counters files of topic t and its group g.
stats_files() {
	echo "$MQ_SPOOL/topics/t/stats/$MQ_HOST"
	echo "$MQ_SPOOL/topics/t/groups/g.stats/$MQ_HOST"
}

@test "counters files truncated under a streaming mq-pub -l and an mq-sub -f: both go on, warn once, every message delivered" {
	export MQ_HOST=here
	mq-topic create t
	mkgroup t g
	mkfifo "$TD/fifo"
	spawn "$TD/sub" mq-sub -f -n 200 -g g t
	local sub=$SPAWNED
	spawn "$TD/pub" bash -c 'exec mq-pub -l t <"$1"' _ "$TD/fifo"
	local pub=$SPAWNED w f
	exec {w}>"$TD/fifo"
	seq 1 100 >&"$w"
	wait_for -t 20 lines_at_least "$TD/sub" 100
	for f in $(stats_files); do
		[[ -s $f ]] || fail "no counters file $f"
		truncate -s 0 "$f"
	done
	seq 101 200 >&"$w"
	exec {w}>&-
	wait "$pub" || fail "mq-pub exited $?: $(cat "$TD/pub.err")"
	wait "$sub" || fail "mq-sub exited $?: $(cat "$TD/sub.err")"
	assert_equal "$(cat "$TD/sub")" "$(seq 1 200)"
	assert_equal "$(count_log t)" 200
	group_empty t g
	local msg="not counted for mq-stat: the counters file was truncated"
	run cat "$TD/pub.err"
	assert_output "mq-pub: $msg"
	run cat "$TD/sub.err"
	assert_output "mq-sub: $msg"
	# mq-stat reads what is left; a new publisher makes the file again.
	run --separate-stderr mq-stat t
	assert_success
	mq-pub -q t again
	[[ $(stat -c %s "$(stats_files | head -1)") -gt 0 ]] || fail "not made again"
	run --separate-stderr mq-stat --json t
	assert_success
	assert_equal "$stderr" ""
}
