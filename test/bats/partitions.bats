#!/usr/bin/env bats
# Partitions: key hashing, -p, spreading, per-key order; mq-topic alter
# (growing a topic); partitions placed on other file systems (--place).

load helper

# xxh3_mod N KEY...: "PARTITION KEY" per key, computed independently of mq
# with python3-xxhash: XXH3_64 (seed 0) of the key's bytes modulo N.
xxh3_mod() {
	"$PY" - "$@" <<'PYEOF'
import sys, xxhash
n = int(sys.argv[1])
for k in sys.argv[2:]:
    print(xxhash.xxh3_64_intdigest(k.encode(), seed=0) % n, k)
PYEOF
}

# consume_all TOPIC GROUP FORMAT: everything pending, one line per message.
consume_all() {
	mq-sub -g "$2" -F "$3" "$1"
}

@test "the XXH3-64 helper gives the published test vector" {
	# XXH3_64bits("") is 0x2D06800538D394C2: the reference used below is
	# the real hash, not a look-alike.
	run "$PY" -c 'import xxhash; print(hex(xxhash.xxh3_64_intdigest(b"")))'
	assert_success
	assert_output 0x2d06800538d394c2
}

@test "a key's partition is XXH3-64 of the key modulo the partition count" {
	local n key keys=() exp got
	for n in 4 7; do
		mq-topic create --partitions "$n" "t$n"
		mkgroup "t$n" g
		keys=()
		for key in user-{1..40} "" é ∑x 'a b' 'x=y'; do
			[[ -n $key ]] || continue
			keys+=("$key")
			mq-pub -q -k "$key" "t$n" "$key"
		done
		exp=$(xxh3_mod "$n" "${keys[@]}" | LC_ALL=C sort)
		got=$(consume_all "t$n" g '%p %s\n' | LC_ALL=C sort)
		assert_equal "$got" "$exp"
		# Every partition got at least one key: the test means something.
		assert_equal "$(cut -d' ' -f1 <<<"$got" | sort -u | wc -l)" "$n"
	done
}

@test "a key goes to the same partition in every process and publish" {
	mq-topic create --partitions 5 t
	mkgroup t g
	local r
	for r in 1 2 3 4 5 6; do
		mq-pub -q -k order-4711 t "m$r"
	done
	mq-pub -q -l -k order-4711 t < <(seq 7 20 | sed 's/^/m/')
	local exp
	exp=$(xxh3_mod 5 order-4711 | cut -d' ' -f1)
	run consume_all t g '%p\n'
	assert_success
	assert_equal "${#lines[@]}" 20
	assert_equal "$(sort -u <<<"$output")" "$exp"
	assert_equal "$(count_log t "$exp")" 20
}

@test "-p N picks the partition, whatever the key" {
	mq-topic create --partitions 3 t
	mkgroup t g
	local k
	for k in 0 1 2; do
		mq-pub -q -p "$k" t "a$k" "b$k"
		mq-pub -q -p "$k" -k some-key t "c$k"
	done
	for k in 0 1 2; do
		assert_equal "$(count_log t "$k")" 3
	done
	run consume_all t g '%p %s\n'
	assert_success
	assert_equal "$(LC_ALL=C sort <<<"$output" | tr '\n' ' ')" \
	    "0 a0 0 b0 0 c0 1 a1 1 b1 1 c1 2 a2 2 b2 2 c2 "
}

@test "-p out of range is refused with one line (64) and stores nothing" {
	mq-topic create --partitions 3 t
	local before
	before=$(spool_snapshot)
	run --separate-stderr mq-pub -p 3 t x
	assert_equal "$status" 64
	assert_one_line_error mq-pub
	assert_equal "$(spool_snapshot)" "$before"
}

@test "keyless messages are spread evenly: 800 over 4 partitions, 200 each" {
	mq-topic create --partitions 4 t
	mkgroup t g
	seq 800 | mq-pub -q -l t
	local k
	for k in 0 1 2 3; do
		assert_equal "$(count_log t "$k")" 200
		assert_equal "$(count_new t g "$k")" 200
	done
	# Arguments too, and a second process starting elsewhere: 3 + 3 + 2 + 2
	# in some order, never 4 on one partition.
	mq-topic create --partitions 4 u
	mq-pub -q u a b c d e f g h i j
	local counts
	counts=$(for k in 0 1 2 3; do count_log u "$k"; done | sort | tr '\n' ' ')
	assert_equal "$counts" "2 2 3 3 "
}

@test "messages of one key keep their publish order within their partition" {
	mq-topic create --partitions 4 t
	mkgroup t g
	local r key
	# Interleaved keys, in several processes and in batches.
	for r in 1 2 3 4 5; do
		for key in alpha beta gamma delta; do
			mq-pub -q -k "$key" t "$key $((r * 2 - 1))" "$key $((r * 2))"
		done
	done
	for key in alpha beta gamma delta; do
		seq 11 30 | sed "s/^/$key /" | mq-pub -q -l -k "$key" t
	done
	run consume_all t g '%p %o %k %s\n'
	assert_success
	assert_equal "${#lines[@]}" 120
	# Per key: one partition, the expected one, and in that partition the
	# sequence numbers rise with the publish order.
	for key in alpha beta gamma delta; do
		local exp parts order
		exp=$(xxh3_mod 4 "$key" | cut -d' ' -f1)
		parts=$(grep " $key $key " <<<"$output" | cut -d' ' -f1 | sort -u)
		assert_equal "$parts" "$exp"
		order=$(grep " $key $key " <<<"$output" | sort -n -k2,2 |
		    cut -d' ' -f5 | tr '\n' ' ')
		assert_equal "$order" "$(seq 1 30 | tr '\n' ' ')"
	done
	# The Seq headers in the log say the same.
	local f seqs=() bodies=()
	for f in $(log_files t "$(xxh3_mod 4 alpha | cut -d' ' -f1)"); do
		[[ $(header_of "$f" Key) == alpha ]] || continue
		seqs+=("$(header_of "$f" Seq)")
	done
	assert_equal "${#seqs[@]}" 30
	local prev=-1 s
	for s in "${seqs[@]}"; do
		((s > prev)) || fail "Seq not increasing: $s after $prev"
		prev=$s
	done
}

@test "the example in mq-spool(5): alpha goes to 2 and beta to 1 of 4" {
	mq-topic create --partitions 4 t
	mq-pub -q -k alpha t x
	mq-pub -q -k beta t y
	assert_equal "$(count_log t 2)" 1
	assert_equal "$(count_log t 1)" 1
	assert_equal "$(xxh3_mod 4 alpha beta | tr '\n' ' ')" "2 alpha 1 beta "
}

# --- mq-topic alter ---------------------------------------------------------

# partition_complete DIR: a partition's directories and a zero head.
partition_complete() {
	[[ -d $1/log && -d $1/g && -d $1/dlq && -d $1/dedup && -f $1/head ]]
}

@test "mq-topic alter grows a topic: new partitions complete, groups in them, conf rewritten" {
	mq-topic create --partitions 2 --retention 3600 t
	mkgroup t g
	mq-pub -q t before1 before2
	local conf=$MQ_SPOOL/topics/t/topic.conf
	local old
	old=$(grep -v '^partitions=' "$conf")
	run --separate-stderr mq-topic alter --partitions 4 t
	assert_success
	assert_equal "$output" ""
	assert_equal "$stderr" ""
	run grep -x 'partitions=4' "$conf"
	assert_success
	# Every other line is kept as it was.
	assert_equal "$(grep -v '^partitions=' "$conf")" "$old"
	local k sub
	for k in 2 3; do
		partition_complete "$MQ_SPOOL/topics/t/p$k"
		assert_equal "$(head_field t committed "$k")" 0
		for sub in tmp new cur delay; do
			[[ -d $(group_dir t g "$k")/$sub ]] || fail "no $sub in p$k"
		done
	done
	[[ ! -e $MQ_SPOOL/topics/t/p4 ]]
	# No temporary file is left beside topic.conf (stats/: the publish
	# counters, mq-spool(5) COUNTERS).
	assert_equal "$(ls -A "$MQ_SPOOL/topics/t" | tr '\n' ' ')" "groups p0 p1 p2 p3 stats topic.conf "
	# Keyless messages now spread over 4 partitions; the group gets all.
	seq 400 | mq-pub -q -l t
	for k in 0 1 2 3; do
		assert_equal "$(count_new t g "$k")" \
		    "$((100 + (k < 2 ? 1 : 0)))"
	done
	run consume_all t g '%s\n'
	assert_success
	assert_equal "${#lines[@]}" 402
	run mq-topic info --json t
	assert_success
	"$PY" -c '
import json, sys
v = json.loads(sys.argv[1])
assert v["partitions"] == 4, v
assert [h["partition"] for h in v["heads"]] == [0, 1, 2, 3], v
assert sum(h["committed"] for h in v["heads"]) == 402, v
' "$output"
}

@test "mq-topic alter to the same count is a successful no-op" {
	mq-topic create --partitions 3 t
	mkgroup t g
	local before
	before=$(spool_snapshot)
	run --separate-stderr mq-topic alter --partitions 3 t
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(spool_snapshot)" "$before"
}

@test "mq-topic alter refuses to shrink (64, one line) and changes nothing" {
	mq-topic create --partitions 3 t
	mkgroup t g
	mq-pub -q t a b c
	local before
	before=$(spool_snapshot)
	run --separate-stderr mq-topic alter --partitions 2 t
	assert_equal "$status" 64
	assert_one_line_error mq-topic
	[[ $stderr == *"3 partitions"*shrink* ]] || fail "unclear: $stderr"
	assert_equal "$(spool_snapshot)" "$before"
}

@test "mq-topic alter: usage errors (64) and a missing topic (66) change nothing" {
	mq-topic create --partitions 2 t
	local before
	before=$(spool_snapshot)
	local -a bad=(
		"alter t"
		"alter --partitions 0 t"
		"alter --partitions 1025 t"
		"alter --partitions x t"
		"alter --partitions 3 --retention 10 t"
		"alter --partitions 3"
		"info --partitions 3 t"
		"delete --place 1=/x t"
	)
	local args
	for args in "${bad[@]}"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-topic $args
		assert_equal "$status" 64
		assert_equal "$output" ""
		[[ -n $stderr ]] || fail "no message for: $args"
		assert_equal "$(spool_snapshot)" "$before"
	done
	run --separate-stderr mq-topic alter --partitions 3 nosuch
	assert_equal "$status" 66
	assert_one_line_error mq-topic
	assert_equal "$(spool_snapshot)" "$before"
}

@test "mq-topic alter: a key may move to another partition; its partition follows the new count" {
	mq-topic create --partitions 2 t
	mkgroup t g
	local keys=(k1 k2 k3 k4 k5 k6 k7 k8 k9 k10 k11 k12)
	local key
	for key in "${keys[@]}"; do mq-pub -q -k "$key" t "$key"; done
	assert_equal "$(consume_all t g '%p %s\n' | sort)" \
	    "$(xxh3_mod 2 "${keys[@]}" | sort)"
	mq-topic alter --partitions 5 t
	for key in "${keys[@]}"; do mq-pub -q -k "$key" t "$key"; done
	assert_equal "$(consume_all t g '%p %s\n' | sort)" \
	    "$(xxh3_mod 5 "${keys[@]}" | sort)"
	# Some key did move (else this test would prove nothing).
	[[ $(xxh3_mod 2 "${keys[@]}") != "$(xxh3_mod 5 "${keys[@]}")" ]]
}

@test "a consumer started after mq-topic alter receives from the new partitions" {
	mq-topic create --partitions 1 t
	mkgroup t g
	mkgroup t late --from-start
	mq-pub -q t old
	mq-topic alter --partitions 3 t
	mq-pub -q -p 1 t new1a new1b
	mq-pub -q -p 2 t new2
	run --separate-stderr mq-sub -g g -F '%p:%s\n' t
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "0:old 1:new1a 1:new1b 2:new2 "
	group_empty t g
	# A group subscribed after the alter has a start in every partition
	# and gets what comes next there.
	mkgroup t after
	local k
	for k in 0 1 2; do
		run grep -x "start.p$k=$((k == 0 ? 1 : k == 1 ? 2 : 1))" \
		    "$MQ_SPOOL/topics/t/groups/after.conf"
		assert_success
	done
	mq-pub -q -p 2 t x2
	run --separate-stderr mq-sub -g after -F '%p:%s\n' t
	assert_success
	assert_output "2:x2"
	run --separate-stderr mq-sub -g late -F '%p:%s\n' t
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "0:old 1:new1a 1:new1b 2:new2 2:x2 "
}

@test "mq-topic alter removes the leftovers of an interrupted alter; before that they are invisible" {
	mq-topic create --partitions 2 t
	mkgroup t g
	# An alter that died before its commit: p2 half built, p3 with junk.
	local d=$MQ_SPOOL/topics/t
	mkdir -p "$d/p2/log" "$d/p3/g/g/new"
	echo junk >"$d/p3/g/g/new/junk"
	echo junk >"$d/p2/log/junk"
	# Nothing uses them: keyless messages go to p0 and p1 only.
	mq-pub -q t a b c d
	assert_equal "$(count_log t 0)" 2
	assert_equal "$(count_log t 1)" 2
	run consume_all t g '%p\n'
	assert_equal "${#lines[@]}" 4
	mq-topic alter --partitions 3 t
	partition_complete "$d/p2"
	assert_equal "$(count_log t 2)" 0
	[[ ! -e $d/p3 ]] || fail "leftover p3 not removed"
	assert_equal "$(count_new t g 2)" 0
	mq-pub -q -p 2 t e
	run consume_all t g '%p:%s\n'
	assert_output "2:e"
}

@test "subscribes racing with alters: every group ends with its directories in every partition" {
	mq-topic create --partitions 1 t
	local n
	for n in 1 2 3 4 5 6; do
		spawn "$TD/sub$n" mq-sub -g "g$n" -t 0 t
	done
	mq-topic alter --partitions 4 t
	mq-topic alter --partitions 8 t
	for n in 1 2 3 4 5 6; do
		wait_for exited "$(sed -n "${n}p" "$TD/.pids")"
	done
	local k
	for n in 1 2 3 4 5 6; do
		[[ -f $MQ_SPOOL/topics/t/groups/g$n.conf ]]
		for k in 0 1 2 3 4 5 6 7; do
			[[ -d $(group_dir t "g$n" "$k")/new ]] ||
			    fail "group g$n has no directory in p$k"
		done
	done
	seq 80 | mq-pub -q -l t
	for n in 1 2 3 4 5 6; do
		run consume_all t "g$n" '%s\n'
		assert_equal "${#lines[@]}" 80
	done
}

# --- partitions on other file systems (--place) -----------------------------

# tmpfs_or_skip DIR: a fresh tmpfs at DIR, unmounted at teardown.
tmpfs_or_skip() {
	require_root
	mount_tmpfs "$1" size=64m || skip "cannot mount a tmpfs at $1"
}

# keys_for N K COUNT: COUNT keys (k0, k1, ...) that hash to partition K of N.
keys_for() {
	"$PY" - "$@" <<'PYEOF'
import sys, xxhash
n, k, count = map(int, sys.argv[1:])
i = 0
while count:
    key = "k%d" % i
    if xxhash.xxh3_64_intdigest(key.encode()) % n == k:
        print(key)
        count -= 1
    i += 1
PYEOF
}

@test "--place: a partition on another file system works end to end" {
	local mnt=$TD/disk2
	tmpfs_or_skip "$mnt"
	run --separate-stderr mq-topic create --partitions 2 --place "1=$mnt/t-p1" t
	assert_success
	assert_equal "$stderr" ""
	local d=$MQ_SPOOL/topics/t
	[[ -L $d/p1 ]]
	assert_equal "$(readlink "$d/p1")" "$mnt/t-p1"
	[[ -d $d/p0 && ! -L $d/p0 ]]
	partition_complete "$mnt/t-p1"
	# Really on the other file system.
	[[ $(stat -c %d "$mnt/t-p1/log") != $(stat -c %d "$d/p0/log") ]]
	assert_equal "$(stat -c %d "$mnt/t-p1/log")" "$(stat -c %d "$mnt")"
	# Staged in tmp/ and renamed: nothing left there.
	assert_equal "$(count_entries "$MQ_SPOOL/tmp")" 0
	mkgroup t g --max-attempts 1
	local -a k0 k1
	mapfile -t k0 < <(keys_for 2 0 3)
	mapfile -t k1 < <(keys_for 2 1 3)
	local key n
	for key in "${k0[@]}" "${k1[@]}"; do
		for n in 1 2 3 4 5; do
			mq-pub -q -k "$key" t "$key-$n"
		done
	done
	assert_equal "$(count_log t 0)" 15
	assert_equal "$(count_log t 1)" 15
	assert_equal "$(count_log_dir t "$mnt/t-p1/log")" 15
	# (The queue through the placed link p1, checked above.)
	assert_equal "$(count_new t g 1)" 15
	# Consume all but one (acked on exit 0); the handler refuses k1[0]-3,
	# which is dead-lettered (max-attempts 1) inside the placed partition.
	run --separate-stderr mq-sub --backoff 0 -g g \
	    --exec "x=\$(cat); [ \"\$x\" != ${k1[0]}-3 ] || exit 4; echo \"\$MQ_PARTITION \$x\"" t
	assert_equal "$status" 75
	assert_equal "${#lines[@]}" 29
	assert_equal "$(grep -c '^1 ' <<<"$output")" 14
	assert_equal "$(grep -c '^0 ' <<<"$output")" 15
	group_empty t g
	assert_equal "$(mq-dlq count t)" 1
	[[ $(count_entries "$mnt/t-p1/dlq/g") -ge 1 ]]
	run --separate-stderr mq-dlq -g g list --json t
	assert_success
	"$PY" -c '
import json, sys
v = json.loads(sys.argv[1])
assert len(v) == 1 and v[0]["partition"] == 1 and v[0]["seq"] == 2, v
' "$output"
	# Redrive: back in the placed partition's queue, consumed once.
	run --separate-stderr mq-dlq -g g redrive t
	assert_success
	assert_equal "$(mq-dlq count t)" 0
	assert_equal "$(count_new t g 1)" 1
	run --separate-stderr mq-sub -g g -F '%p %s\n' t
	assert_success
	assert_output "1 ${k1[0]}-3"
	group_empty t g
	run --separate-stderr mq-topic info t
	assert_success
	assert_line --regexp "^1 +15 +15 +[0-9]+  placed in $mnt/t-p1\$"
	assert_line --regexp '^0 +15 +15 +[0-9]+$'
	run --separate-stderr mq-topic info --json t
	assert_success
	"$PY" -c '
import json, sys
v = json.loads(sys.argv[1])
assert "place" not in v["heads"][0], v
assert v["heads"][1]["place"] == sys.argv[2], v
' "$output" "$mnt/t-p1"
	# Grow with a new placed partition on the same disk.
	run --separate-stderr mq-topic alter --partitions 3 --place "2=$mnt/t-p2" t
	assert_success
	[[ -L $d/p2 ]]
	partition_complete "$mnt/t-p2"
	[[ -d $mnt/t-p2/g/g/new ]]
	mq-pub -q -p 2 t on-p2
	assert_equal "$(count_log_dir t "$mnt/t-p2/log")" 1
	run --separate-stderr mq-sub -g g -F '%p %s\n' t
	assert_success
	assert_output "2 on-p2"
	# Delete removes the placed partitions too, and only them.
	touch "$mnt/other"
	run --separate-stderr mq-topic delete t
	assert_success
	[[ ! -e $d ]]
	[[ ! -e $mnt/t-p1 && ! -e $mnt/t-p2 ]] || fail "placed partitions left: $(ls "$mnt")"
	[[ -f $mnt/other ]]
	assert_equal "$(count_entries "$MQ_SPOOL/tmp")" 0
}

@test "--place into an existing empty directory, and onto a mount point (delete empties it)" {
	local mnt=$TD/disk2
	tmpfs_or_skip "$mnt"
	mkdir "$TD/empty"
	run --separate-stderr mq-topic create --partitions 2 --place "0=$TD/empty" --place "1=$mnt" t
	assert_success
	partition_complete "$TD/empty"
	partition_complete "$mnt"
	mq-pub -q -p 1 t x
	assert_equal "$(count_entries "$mnt/log")" 1
	mq-topic delete t
	[[ ! -e $TD/empty ]]
	# A mount point cannot be removed: it is left empty.
	assert_equal "$(count_entries "$mnt")" 0
	mountpoint -q "$mnt"
}

@test "--place: bad input is refused with one line and changes nothing" {
	local W=$TD/w
	mkdir -p "$W/full" "$W/free"
	touch "$W/full/x" "$W/file"
	mq-topic create --partitions 2 existing
	local before before_td
	before=$(spool_snapshot)
	before_td=$(spool_snapshot "$W/free"; ls -A "$W")
	local -a cases=(
		"64 create --partitions 2 --place 1 t"
		"64 create --partitions 2 --place =$W/free/a t"
		"64 create --partitions 2 --place x=$W/free/a t"
		"64 create --partitions 2 --place 1= t"
		"64 create --partitions 2 --place -1=$W/free/a t"
		"64 create --partitions 2 --place 1=relative/dir t"
		"64 create --partitions 2 --place 2=$W/free/a t"
		"64 create --place 1=$W/free/a t"
		"64 create --partitions 2 --place 1=$W/free/a --place 1=$W/free/b t"
		"64 create --partitions 2 --place 0=$W/free/a --place 1=$W/free/a t"
		"73 create --partitions 2 --place 1=$W/full t"
		"73 create --partitions 2 --place 1=$W/file t"
		"73 create --partitions 2 --place 1=$W/nodir/a t"
		"73 create --partitions 2 --place 0=$W/free/ok --place 1=$W/full t"
		"64 alter --partitions 3 --place 1=$W/free/a existing"
		"64 alter --partitions 3 --place 3=$W/free/a existing"
		"64 alter --partitions 3 --place 2=rel existing"
		"73 alter --partitions 3 --place 2=$W/full existing"
		"64 alter --partitions 2 --place 1=$W/free/a existing"
		"64 list --place 1=$W/free/a"
	)
	local c code args
	for c in "${cases[@]}"; do
		code=${c%% *}
		args=${c#* }
		# shellcheck disable=SC2086
		run --separate-stderr mq-topic $args
		[[ $status == "$code" ]] || fail "mq-topic $args: exit $status, not $code ($stderr)"
		assert_one_line_error mq-topic
		assert_equal "$output" ""
		assert_equal "$(spool_snapshot)" "$before"
		assert_equal "$(spool_snapshot "$W/free"; ls -A "$W")" "$before_td"
		[[ -f $W/full/x ]]
	done
}

@test "--place: an abandoned staging tree and an unfinished delete take their placed directories with them" {
	mkdir -p "$TD/disk"
	# A creator that died before its commit point, an hour ago.
	local stage=$MQ_SPOOL/tmp/topic.0123456789abcdef
	mkdir -p "$stage/groups" "$TD/disk/staged/log"
	ln -s "$TD/disk/staged" "$stage/p0"
	touch -d '2 hours ago' "$stage"
	# A delete that died after its commit point (the rename to trash).
	mq-topic create --partitions 2 --place "1=$TD/disk/deleted" gone
	mv "$MQ_SPOOL/topics/gone" "$MQ_SPOOL/tmp/trash.0123456789abcdef"
	# Something else's link in a trash tree is not followed.
	mkdir "$TD/keep"
	touch "$TD/keep/precious"
	ln -s "$TD/keep" "$MQ_SPOOL/tmp/trash.0123456789abcdef/groups/link"
	ln -s "$TD/keep" "$MQ_SPOOL/tmp/trash.0123456789abcdef/px"
	# The next create cleans up.
	mq-topic create other
	assert_equal "$(count_entries "$MQ_SPOOL/tmp")" 0
	[[ ! -e $TD/disk/staged && ! -e $TD/disk/deleted ]] || fail "left: $(ls "$TD/disk")"
	[[ -f $TD/keep/precious ]]
}

@test "--place: alter removes an interrupted alter's placed leftover, and can reuse its directory" {
	mq-topic create --partitions 1 t
	mkgroup t g
	mkdir -p "$TD/disk/p1/log" "$TD/disk/p1/g/g/new"
	echo junk >"$TD/disk/p1/g/g/new/junk"
	ln -s "$TD/disk/p1" "$MQ_SPOOL/topics/t/p1"
	run --separate-stderr mq-topic alter --partitions 2 --place "1=$TD/disk/p1" t
	assert_success
	partition_complete "$TD/disk/p1"
	assert_equal "$(count_entries "$TD/disk/p1/g/g/new")" 0
	mq-pub -q -p 1 t y
	run --separate-stderr mq-sub -g g -F '%p %s\n' t
	assert_output "1 y"
}

@test "bash completion knows alter and --place" {
	mq-topic create t
	mkdir -p "$TD/disk/sub"
	complete_words() { completions _mq_topic "$@"; }
	assert_equal "$(complete_words mq-topic al)" alter
	assert_equal "$(complete_words mq-topic alter --p | sort | tr '\n' ' ')" "--partitions --place "
	assert_equal "$(complete_words mq-topic create --pl)" --place
	assert_equal "$(complete_words mq-topic alter --partitions 3 '')" t
	assert_equal "$(complete_words mq-topic alter --place "1=$TD/disk/s")" "1=$TD/disk/sub"
	# Where '=' breaks words (bash's default COMP_WORDBREAKS).
	assert_equal "$(complete_words mq-topic alter --place 1 = "$TD/disk/s")" "$TD/disk/sub"
}

@test "mq-topic --help shows alter and --place" {
	run --separate-stderr mq-topic --help
	assert_success
	assert_usage_output mq-topic
	assert_line --regexp '^ +mq-topic \[-s SPOOL\] alter --partitions N \[--place K=DIR\]\.\.\. TOPIC$'
	assert_line --regexp '^ +\[--place K=DIR\]\.\.\. TOPIC$'
}

@test "a topic of the most partitions works under a soft limit of 1024 open files; where the hard limit is too low, a clear error" {
	local hard; hard=$(ulimit -Hn)
	[[ $hard == unlimited ]] || ((hard >= 4096)) ||
	    fail "this test needs a hard limit on open files of 4096 or more, not $hard"
	mq-topic create --partitions 1024 t
	mq-sub -g g -t 0 t || [[ $? == 1 ]]
	# The tools raise their soft limit to the hard one.
	run --separate-stderr bash -c 'ulimit -Sn 1024 &&
	    printf "a\nb\n" | mq-pub -q -p 1023 -l t && mq-sub -g g -n 2 t &&
	    mq-stat t > /dev/null && mq-stat t g > /dev/null'
	assert_success
	assert_output $'a\nb'
	# Below what the topic needs, whatever the soft one: one line, 71.
	local before; before=$(spool_snapshot)
	run --separate-stderr bash -c 'ulimit -n 1024 && echo c | mq-pub t'
	assert_equal "$status" 71
	assert_one_line_error mq-pub
	[[ $stderr == *"1024 partitions need more open files"* ]] || fail "$stderr"
	assert_equal "$(spool_snapshot)" "$before"
}
