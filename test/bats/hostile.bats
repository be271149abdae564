#!/usr/bin/env bats
# A hostile co-user of a shared spool, and damaged files (mq-spool(5)).
# Nothing is followed out of the spool, taken from a file for a path, or
# waited on, and the queue goes on.
load helper
load replicate_helper

# victim DIR: a directory outside the spool with marker files at two
# levels; survived DIR checks they are all still there.
victim() {
	mkdir -p "$1/sub"
	echo keep >"$1/marker"
	echo keep >"$1/sub/marker"
}
survived() {
	[[ -f $1/marker && -f $1/sub/marker ]] || fail "$1 was emptied: $(ls -la "$1" 2>&1)"
}

# old PATH: an hour and more old, as the sweep of tmp/ counts.
old() {
	touch -h -d '2 hours ago' "$1"
}

# set_id FILE ID: rewrites the Message-Id of a stored message (FILE from
# log_file) in place, in either format (rewrite_stored: format 1's other
# names see it too); the body, and so its checks, stay as they were.
set_id() {
	NEW_ID=$2 rewrite_stored "$1" "import os, re
d = re.sub(rb'(?m)^Message-Id: .*$', lambda m: b'Message-Id: ' + os.environb[b'NEW_ID'], d, count=1)"
}

# reasons TOPIC: the reasons of the topic's dead letters, sorted, one a line.
reasons() {
	mq-dlq list --json "$1" | "$PY" -c '
import json, sys
print("\n".join(sorted(d["reason"] for d in json.load(sys.stdin))))'
}

# A key whose sequence number is committed, with an id no message has.
fake_key() {
	printf '%020d.%s' "$1" "$2"
}

# --- 1. removals never follow a symbolic link -------------------------------

@test "the sweep of tmp/ unlinks the symbolic links it finds, at any level, and follows none" {
	mq-pub -q t x
	local out=$TD/outside tmp=$MQ_SPOOL/tmp
	victim "$out"
	# A deleted topic's tree whose partition links out (no claim there).
	mkdir -p "$tmp/trash.0123456789abcdef"
	ln -s "$out" "$tmp/trash.0123456789abcdef/p0"
	# Links deeper in a trash tree, in place of a group and of a file.
	mkdir -p "$tmp/trash.1111111111111111/p0/g" "$tmp/trash.1111111111111111/p1"
	ln -s "$out" "$tmp/trash.1111111111111111/p0/g/G"
	ln -s "$out/marker" "$tmp/trash.1111111111111111/p1/head"
	# A trash tree that is itself a link.
	ln -s "$out" "$tmp/trash.2222222222222222"
	# An abandoned staging tree, and some other old entry.
	mkdir -p "$tmp/topic.3333333333333333"
	ln -s "$out" "$tmp/topic.3333333333333333/p1"
	old "$tmp/topic.3333333333333333"
	mkdir -p "$tmp/dlq-import.4444444444444444"
	ln -s "$out" "$tmp/dlq-import.4444444444444444/t"
	old "$tmp/dlq-import.4444444444444444"
	# Every tool that sweeps: a publish to a new topic, create, delete.
	run --separate-stderr mq-pub -q new1 y
	assert_success
	survived "$out"
	[[ -z $(ls -A "$tmp") ]] || fail "left in tmp/: $(ls -A "$tmp")"
	local round
	for round in create delete; do
		mkdir -p "$tmp/trash.5555555555555555/p0/log"
		ln -s "$out" "$tmp/trash.5555555555555555/p0/log/x"
		ln -s "$out" "$tmp/trash.5555555555555555/p1"
		case $round in
		create) run --separate-stderr mq-topic create new2 ;;
		delete) run --separate-stderr mq-topic delete new2 ;;
		esac
		assert_success
		survived "$out"
		[[ ! -e $tmp/trash.5555555555555555 ]] || fail "$round: trash left"
	done
}

@test "a p<k> link in a removed tree is followed only to a directory claimed by the link's owner" {
	require_root
	mq-pub -q t x
	local tmp=$MQ_SPOOL/tmp
	# Claimed (log/ there) but by root, linked to by nobody.
	victim "$TD/a"
	mkdir "$TD/a/log"
	mkdir -p "$tmp/trash.0123456789abcdef"
	ln -s "$TD/a" "$tmp/trash.0123456789abcdef/p0"
	chown -h nobody "$tmp/trash.0123456789abcdef/p0"
	# A directory anyone may write (root's), where nobody made log/:
	# only nobody's own entries may go, never root's.
	victim "$TD/b"
	chmod 1777 "$TD/b"
	mkdir "$TD/b/log" "$TD/b/g"
	chown nobody "$TD/b/log" "$TD/b/g"
	ln -s "$TD/b" "$tmp/trash.0123456789abcdef/p1"
	chown -h nobody "$tmp/trash.0123456789abcdef/p1"
	run --separate-stderr mq-topic delete t
	assert_success
	survived "$TD/a"
	survived "$TD/b"
	[[ -d $TD/a/log && ! -e $TD/b/log && ! -e $TD/b/g ]] ||
	    fail "$(ls -la "$TD/a" "$TD/b")"
	[[ -z $(ls -A "$tmp") ]] || fail "left in tmp/: $(ls -A "$tmp")"
}

@test "removing a group's directories, or an alter's leftovers, never follows a link on the way" {
	mkgroup t G
	mq-pub -q t x
	local p0=$MQ_SPOOL/topics/t/p0
	# The group's dead letters' parent replaced by a link out.
	victim "$TD/out/G"
	rmdir "$p0/dlq"
	ln -s "$TD/out" "$p0/dlq"
	run --separate-stderr mq-sub --unsubscribe -g G t
	assert_equal "$status" 66
	assert_one_line_error mq-sub
	[[ $stderr == *"dlq/G: Not a directory"* ]] || fail "$stderr"
	survived "$TD/out/G"
	# A leftover partition of an unfinished alter, linking out.
	victim "$TD/v"
	ln -s "$TD/v" "$MQ_SPOOL/topics/t/p1"
	run --separate-stderr mq-topic alter --partitions 2 t
	assert_success
	survived "$TD/v"
	[[ -d $MQ_SPOOL/topics/t/p1 && ! -L $MQ_SPOOL/topics/t/p1 ]]
}

# --- 2. a value read from a file is never a path ----------------------------

@test "a Message-Id other than its file name's id is unreadable: dead-lettered, never a path (new/)" {
	# Format 1, whose names carry the id a record is checked against (a
	# claim of format 2 names no id: F2BUGS.md).
	mq-topic create --format 1 t
	mkgroup t G --exactly-once
	local a b c d
	a=$(mq-pub t one)
	b=$(mq-pub t two)
	c=$(mq-pub t three)
	d=$(mq-pub t four)
	# 32 characters that climb from done/ to $TD.
	set_id "$(log_file t "00000000000000000000.$a")" '../../../../../../../escaped-xyz'
	# Well formed, but another message's id; and upper case.
	set_id "$(log_file t "00000000000000000002.$c")" "$b"
	set_id "$(log_file t "00000000000000000003.$d")" "${d^^}"
	run --separate-stderr timeout 10 mq-sub -g G t
	assert_success
	assert_output two
	[[ ! -e $TD/escaped-xyz ]] || fail "a Message-Id made $TD/escaped-xyz"
	assert_equal "$(find "$MQ_SPOOL" -name 'escaped*' | wc -l)" 0
	assert_equal "$(reasons t)" $'unreadable\nunreadable\nunreadable'
	assert_equal "$(ls "$(group_dir t G)/done")" "$b"
	run mq-sub -g G t
	assert_equal "$status" 1
}

@test "a Message-Id other than its file name's id is unreadable: dead-lettered, never a path (log/, backfill)" {
	local a
	a=$(mq-pub t '{"n":1}')
	mq-pub -q t '{"n":2}'
	set_id "$(log_file t "00000000000000000000.$a")" \
	    '../../../../../../../escaped-xyz'
	run --separate-stderr timeout 10 mq-sub --from-start --exactly-once -g G t
	assert_success
	assert_output '{"n":2}'
	[[ ! -e $TD/escaped-xyz ]] || fail "a Message-Id made $TD/escaped-xyz"
	assert_equal "$(reasons t)" unreadable
	# With a filter the backfill reads it, and links it to be dead-lettered.
	run --separate-stderr timeout 10 mq-sub --from-start --group-filter true -g F t
	assert_success
	assert_output '{"n":2}'
	assert_equal "$(reasons t)" $'unreadable\nunreadable'
}

@test "journal records whose arguments are not names are skipped: mq-replicate push reads nothing out of the spool" {
	pair
	mq-group create t g
	mq-pub -q t x
	# A secret beside the spool, and records that would have the sender
	# read it as a dead letter or its record, or as a published message.
	mkdir "$TD/victim"
	echo SECRET-4242 >"$TD/victim/secret"
	echo SECRET-4242 >"$TD/victim/secret.why"
	local key
	key=$(ls "$A/topics/t/p0/log")
	"$PY" - "$A/journal" "$key" <<'PY'
import sys, time, xxhash
path, key = sys.argv[1], sys.argv[2]
ms = int(time.time() * 1000)
with open(path, 'a') as f:
    for t in ('D %d t 0 ../../../../../victim secret' % ms,
              'D %d t 0 g ../../../../../victim/secret' % ms,
              'P %d t 0 %s/../../../../../victim/secret -' % (ms, key)):
        f.write('%s %s\n' % (t, xxhash.xxh32(t.encode()).hexdigest()))
PY
	# What goes to the peer is kept, to look for the secret in it.
	printf '#!/bin/sh\ntee -a "%s/sent" | "$@"\n' "$TD" >"$TD/rsh"
	chmod +x "$TD/rsh"
	run --separate-stderr timeout 60 mq-replicate -s "$A" push \
	    --rsh "$TD/rsh" --remote-spool "$B"
	assert_success
	[[ -s $TD/sent ]]
	! grep -q SECRET "$TD/sent" || fail "the secret was sent to the peer"
	same_spools
}

# --- 3. non-regular files where files are expected --------------------------

@test "a FIFO in new/ does not hang mq-sub: dead-lettered as unreadable, the queue goes on" {
	mkgroup t g
	mq-pub -q t one two three
	mkfifo "$(group_dir t g)/new/$(fake_key 1 0123456789abcdef0123456789abcdef)"
	run --separate-stderr timeout 10 mq-sub -g g t
	assert_success
	assert_output $'one\ntwo\nthree'
	assert_equal "$(reasons t)" unreadable
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
	run --separate-stderr timeout 10 mq-dlq purge --all t
	assert_success
}

@test "a symbolic link, a directory and a socket in new/ are dead-lettered as unreadable, the queue goes on" {
	mkgroup t g
	local a
	a=$(mq-pub t one)
	mq-pub -q t two three four
	local new
	new=$(group_dir t g)/new
	ln -s "../../../log/00000000000000000000.$a" \
	    "$new/$(fake_key 0 0123456789abcdef0123456789abcdef)"
	mkdir "$new/$(fake_key 1 0123456789abcdef0123456789abcdef)"
	# Bound from inside new/: a socket's path is short.
	(cd "$new" && "$PY" -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
	    "$(fake_key 2 0123456789abcdef0123456789abcdef)")
	run --separate-stderr timeout 10 mq-sub -g g t
	assert_success
	assert_output $'one\ntwo\nthree\nfour'
	assert_equal "$(reasons t)" $'unreadable\nunreadable\nunreadable'
	assert_equal "$(count_new t g)" 0
	assert_equal "$(count_cur t g)" 0
	# The same in an ordered group, where the next claim waits for this one.
	mkgroup t o --ordered
	mq-pub -q t five
	ln -s /dev/null "$(group_dir t o)/new/$(fake_key 4 0123456789abcdef0123456789abcdef)"
	mq-pub -q t six
	run --separate-stderr timeout 10 mq-sub -g o t
	assert_success
	assert_output $'five\nsix'
	# Dead letters of every kind can be purged.
	run --separate-stderr timeout 10 mq-dlq purge --all t
	assert_success
	assert_equal "$(mq-dlq count t)" 0
}

@test "a directory in log/ is no message: a backfill passes it by, retention removes it and follows no link in it" {
	# Format 1's names in log/ (format 2's, segments: format2.bats).
	mq-topic create --format 1 t
	mq-pub -q t one two
	victim "$TD/out"
	# Named as a message published in 1970: long past retention.
	local dir
	dir=$MQ_SPOOL/topics/t/p0/log/$(fake_key 1 0123456789abcdef0123456789abcdef)
	mkdir -p "$dir/sub"
	ln -s "$TD/out" "$dir/sub/link"
	run --separate-stderr timeout 10 mq-sub --from-start -g G t
	assert_success
	assert_output $'one\ntwo'
	run --separate-stderr timeout 10 mq-topic gc t
	assert_success
	[[ ! -e $dir ]] || fail "left: $dir"
	survived "$TD/out"
	assert_equal "$(count_log t)" 2
}

@test "a FIFO as a dead letter's record: mq-dlq list and export fail with one line, never hang" {
	kill_two t g
	local why
	why=$(find "$MQ_SPOOL/topics/t/p0/dlq/g" -name '*.why' | head -n 1)
	rm "$why"
	mkfifo "$why"
	run --separate-stderr timeout 10 mq-dlq list t
	assert_equal "$status" 65
	assert_one_line_error mq-dlq
	[[ $stderr == *"not a regular file"* ]] || fail "$stderr"
	run --separate-stderr timeout 10 mq-dlq export t "$TD/out.tar"
	assert_equal "$status" 65
	assert_one_line_error mq-dlq
	[[ ! -e $TD/out.tar ]]
}

@test "a FIFO as topic.conf or a group's conf: the tools fail with one line (78), never hang" {
	mkgroup t g
	mq-pub -q t one
	local conf=$MQ_SPOOL/topics/t/topic.conf
	mv "$conf" "$TD/topic.conf"
	mkfifo "$conf"
	run --separate-stderr timeout 10 mq-pub t two
	assert_equal "$status" 78
	assert_one_line_error mq-pub
	[[ $stderr == *"topic.conf: not a regular file"* ]] || fail "$stderr"
	run --separate-stderr timeout 10 mq-sub -g g t
	assert_equal "$status" 78
	assert_one_line_error mq-sub
	rm "$conf"
	mv "$TD/topic.conf" "$conf"
	conf=$MQ_SPOOL/topics/t/groups/g.conf
	rm "$conf"
	mkfifo "$conf"
	run --separate-stderr timeout 10 mq-sub -g g t
	assert_equal "$status" 78
	assert_one_line_error mq-sub
}

@test "a symbolic link at any level under a partition is not followed: mq-sub and mq-ack --reject refuse (71) and touch nothing outside" {
	mq-sub -g g -t 0 t || [[ $? == 1 ]]
	echo inside | mq-pub -q t
	local p0=$MQ_SPOOL/topics/t/p0 out=$TD/outside
	mkdir "$out"
	# The group's directory moved out, a link left in its place.
	mv "$p0/g/g" "$out/g"
	ln -s "$out/g" "$p0/g/g"
	local before; before=$(cd "$out" && find . | LC_ALL=C sort)
	run --separate-stderr mq-sub -g g t
	assert_equal "$status" 71
	assert_one_line_error mq-sub
	assert_output ''
	assert_equal "$(cd "$out" && find . | LC_ALL=C sort)" "$before"
	rm "$p0/g/g"
	mv "$out/g" "$p0/g/g"
	# The dead letters' directory a link: a reject writes nothing there.
	local receipt; receipt=$(mq-sub --manual -g g -F '%r' t)
	rm -r "$p0/dlq"
	mkdir "$out/dlq"
	ln -s "$out/dlq" "$p0/dlq"
	run --separate-stderr mq-ack --reject -g g t "$receipt"
	assert_equal "$status" 71
	assert_one_line_error mq-ack
	assert_equal "$(find "$out/dlq" | wc -l)" 1
	# The claim is still there, to be acked or given back.
	assert_equal "$(count_entries "$p0/g/g/cur")" 1
}

@test "renames, links, unlinks and stats follow no link on the way either: an unsubscribe with groups/ a link removes nothing outside (71)" {
	mq-sub -g g -t 0 t || [[ $? == 1 ]]
	local topic=$MQ_SPOOL/topics/t out=$TD/outside
	mkdir "$out"
	mv "$topic/groups" "$out/groups"
	ln -s "$out/groups" "$topic/groups"
	local before; before=$(cd "$out" && find . | LC_ALL=C sort)
	run --separate-stderr mq-sub --unsubscribe -g g t
	assert_equal "$status" 71
	assert_one_line_error mq-sub
	assert_equal "$(cd "$out" && find . | LC_ALL=C sort)" "$before"
	[[ -f $out/groups/g.conf ]] || fail "g.conf outside the spool was removed"
}
