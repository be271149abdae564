#!/usr/bin/env bats
# mq-dlq export and import: dead letters through a tar archive.

load helper

# dlq_files SPOOL: every file under the dead-letter directories of SPOOL,
# relative to it, sorted.
dlq_files() {
	(cd "$1" && find . -path '*/dlq/*' -type f | LC_ALL=C sort)
}

# same_dead_letters A B: A and B hold the same dead-letter files, byte for
# byte.
same_dead_letters() {
	local f
	assert_equal "$(dlq_files "$2")" "$(dlq_files "$1")"
	while read -r f; do
		cmp "$1/$f" "$2/$f" || fail "$f differs"
	done < <(dlq_files "$1")
}

@test "mq-dlq export and import: usage errors are 64" {
	local -a bad=(
		"export"
		"export t"
		"export t a b"
		"import"
		"import a b"
		"-g g import a"
		"export --json t a"
		"import --all a"
	)
	local b
	for b in "${bad[@]}"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-dlq $b
		assert_equal "$status" 64
	done
	run --separate-stderr mq-dlq export nosuch "$TD/a.tar"
	assert_equal "$status" 66
	assert_one_line_error mq-dlq
	[[ ! -e $TD/a.tar ]]
	run --separate-stderr mq-dlq import "$TD/nosuch.tar"
	assert_equal "$status" 66
	assert_one_line_error mq-dlq
}

@test "mq-dlq export then import into another spool round-trips every dead letter byte for byte" {
	kill_two t g
	kill_two t h
	kill_two u g
	local before
	before=$(spool_snapshot)
	run --separate-stderr mq-dlq export t "$TD/t.tar"
	assert_success
	assert_output ""
	# Export takes nothing away.
	assert_equal "$(spool_snapshot)" "$before"
	run tar tf "$TD/t.tar"
	assert_success
	assert_line --index 0 mq-dlq/VERSION
	assert_equal "${lines[-1]}" mq-dlq/END
	assert_equal "${#lines[@]}" $((2 + 4 * 2))
	# Into a spool that does not exist yet: topic and groups are made.
	run --separate-stderr mq-dlq -s "$TD/other" import "$TD/t.tar"
	assert_success
	assert_output ""
	same_dead_letters "$MQ_SPOOL/topics/t" "$TD/other/topics/t"
	[[ ! -e $TD/other/topics/u ]]
	assert_equal "$(mq-dlq -s "$TD/other" list --json t)" "$(mq-dlq list --json t)"
	assert_equal "$(count_entries "$TD/other/tmp")" 0
	# One group, and through a pipe.
	mq-dlq -g g export u - | mq-dlq -s "$TD/other" import -
	same_dead_letters "$MQ_SPOOL/topics/u" "$TD/other/topics/u"
	assert_equal "$(mq-dlq -s "$TD/other" list --json u)" "$(mq-dlq list --json u)"
}

@test "mq-dlq import: a second import of the same archive changes nothing" {
	kill_two t g
	mq-dlq export t "$TD/t.tar"
	mq-dlq -s "$TD/other" import "$TD/t.tar"
	local once
	once=$(spool_snapshot "$TD/other")
	run --separate-stderr mq-dlq -s "$TD/other" import "$TD/t.tar"
	assert_success
	assert_output ""
	assert_equal "$(spool_snapshot "$TD/other")" "$once"
	# Into the spool it came from, too: everything is already there.
	once=$(spool_snapshot)
	run --separate-stderr mq-dlq import "$TD/t.tar"
	assert_success
	assert_equal "$(spool_snapshot)" "$once"
}

@test "mq-dlq import refuses what is not an mq-dlq archive, or not all of one (65), and changes nothing" {
	kill_two t g
	mq-dlq export t "$TD/t.tar"
	# The target spool has dead letters of its own.
	MQ_SPOOL=$TD/other kill_two t g
	local before size at
	before=$(spool_snapshot "$TD/other")
	# Random bytes; a tar of other files; half of a real export; a real
	# export cut just before its END entry (at an entry boundary, where
	# tar itself sees no damage); an empty file.
	head -c 20000 /dev/urandom >"$TD/random"
	mkdir "$TD/junk" && echo hello >"$TD/junk/file"
	tar -C "$TD" -cf "$TD/foreign.tar" junk
	size=$(stat -c %s "$TD/t.tar")
	head -c $((size / 2)) "$TD/t.tar" >"$TD/half.tar"
	at=$("$PY" -c 'import sys, tarfile
print([m.offset for m in tarfile.open(sys.argv[1]) if m.name == "mq-dlq/END"][0])' "$TD/t.tar")
	head -c "$at" "$TD/t.tar" >"$TD/cut.tar"
	: >"$TD/empty"
	# A message whose body no longer matches its Content-Hash.
	"$PY" - "$TD/t.tar" "$TD/flipped.tar" <<'EOF'
import io, sys, tarfile
src = tarfile.open(sys.argv[1])
out = tarfile.open(sys.argv[2], 'w', format=tarfile.PAX_FORMAT)
for m in src.getmembers():
    data = src.extractfile(m).read()
    if m.name.endswith(',a1'):
        data = data[:-1] + b'X'
    out.addfile(m, io.BytesIO(data))
out.close()
EOF
	local f
	for f in random foreign.tar half.tar cut.tar empty flipped.tar; do
		run --separate-stderr mq-dlq -s "$TD/other" import "$TD/$f"
		assert_equal "$status" 65
		assert_one_line_error mq-dlq
		assert_equal "$(spool_snapshot "$TD/other")" "$before"
	done
	run --separate-stderr mq-dlq -s "$TD/other" import "$TD/cut.tar"
	assert_output ""
	[[ $stderr == *"truncated archive"* ]] || fail "cut.tar: $stderr"
	# The same archive whole goes in.
	run --separate-stderr mq-dlq -s "$TD/other" import "$TD/t.tar"
	assert_success
	assert_equal "$(mq-dlq -s "$TD/other" count t)" 4
}

@test "mq-dlq import checks every partition exists before it changes anything" {
	mq-topic create --partitions 2 t
	mkgroup t g --max-attempts 1
	mq-pub -q -l t <<<$'a\nb\nc\nd'
	run --separate-stderr mq-sub --backoff 0 --exec 'cat >/dev/null; exit 4' -g g t
	assert_equal "$(mq-dlq count t)" 4
	[[ $(count_entries "$MQ_SPOOL/topics/t/p1/dlq/g") -gt 0 ]] || fail "no dead letter in p1"
	mq-dlq export t "$TD/t.tar"
	mq-topic -s "$TD/other" create t
	local before
	before=$(spool_snapshot "$TD/other")
	run --separate-stderr mq-dlq -s "$TD/other" import "$TD/t.tar"
	assert_equal "$status" 65
	assert_one_line_error mq-dlq
	assert_equal "$(spool_snapshot "$TD/other")" "$before"
	# With the partitions there, it goes in.
	run --separate-stderr mq-dlq -s "$TD/third" import "$TD/t.tar"
	assert_equal "$status" 65
	mq-topic -s "$TD/third" create --partitions 2 t
	run --separate-stderr mq-dlq -s "$TD/third" import "$TD/t.tar"
	assert_success
	same_dead_letters "$MQ_SPOOL/topics/t" "$TD/third/topics/t"
}

@test "mq-dlq redrive after import delivers the messages" {
	kill_two t g
	mq-dlq export t "$TD/t.tar"
	export MQ_SPOOL=$TD/other
	mq-dlq import "$TD/t.tar"
	assert_equal "$(mq-dlq count t)" 2
	run --separate-stderr mq-dlq -g g redrive t
	assert_success
	assert_output "redrove 2 dead letters of topic t, group g to topic t"
	assert_equal "$(mq-dlq count t)" 0
	run --separate-stderr mq-sub --exec 'echo "$(cat) $MQ_ATTEMPTS"' -g g t
	assert_success
	assert_output $'b 1\nd 1'
	group_empty t g
	# What is published afterwards comes after them.
	mq-pub -q t e
	run mq-sub -g g t
	assert_output e
}
