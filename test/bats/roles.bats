#!/usr/bin/env bats
# Roles on a topic with real Unix users (mq-spool(5), PERMISSIONS, Roles):
# mq-topic create --publishers PUB --consumers CON --admins ADM.  Users
# pub, con and adm are in those groups (and in the spool's group, which
# mq-spool(5) asks of every user of a spool); out is in none.  Every
# operation a role allows succeeds, and every one it does not fails with
# exit 77, one line, and changes nothing.  Everyone works under umask 077.
# mon is in the spool's group and in no role.
#
# Needs root (useradd); the users and groups are made here and removed in
# teardown_file.  The tools are copied where those users can run them.

load helper
load users

setup_file() {
	[[ $EUID == 0 ]] || skip "needs root to add users"
	export RT=mqr$$
	local g u
	for g in PUB CON ADM ALL; do
		groupadd "$RT$g"
	done
	for u in pub con adm; do
		useradd -M -N -g "$RT${u^^}" -G "${RT}ALL" -s /bin/sh "$RT$u"
	done
	useradd -M -N -s /bin/sh "${RT}out"
	# In the spool's group, with no role on the topic.
	useradd -M -N -g "${RT}ALL" -s /bin/sh "${RT}mon"
	export USERS_DIR
	USERS_DIR=$(users_dir mq-roles)
}

teardown_file() {
	[[ -n ${RT:-} ]] || return 0
	local u g
	for u in pub con adm out mon; do
		userdel "$RT$u" 2>/dev/null || true
	done
	for g in PUB CON ADM ALL; do
		groupdel "$RT$g" 2>/dev/null || true
	done
	rm -rf "${USERS_DIR:?}"
}

setup() {
	users_setup
}

# as USER CMD...: CMD as that user (with its groups), under umask 077.
as() {
	as_user "$RT$1" 077 "${@:2}"
}

# The spool shared by the role users' common group; topic t with the
# three roles, made by its administrator; group g subscribed by a
# consumer after the topic was made; three messages from a publisher.
# Arguments go to mq-topic create.
roles_topic() {
	mq-topic init --group "${RT}ALL" --mode 2775
	as adm mq-topic create --mode 2755 --publishers "${RT}PUB" \
	    --consumers "${RT}CON" --admins "${RT}ADM" "$@" t
	as con mq-group create t g
	as pub mq-pub -q t m1 m2 m3
}

# allowed USER CMD...: succeeds.
allowed() {
	run --separate-stderr as "$@"
	[[ $status == 0 ]] || fail "$1: ${*:2}: exit $status: $stderr"
}

# forbidden USER CMD...: exit 77, one line naming the tool, nothing
# changed.
forbidden() {
	refused_as "$RT$1" 077 "${@:2}"
}

# claim USER: a receipt for a message of g, claimed by USER.
claim() {
	as "$1" mq-sub --manual -n 1 -t 0 -F '%r' -g g t
}

# dead_letter: one message of g dead-lettered by a consumer.
dead_letter() {
	as con mq-ack --reject --reason test -g g t "$(claim con)"
}

# The operations of the matrix, by the user in $1, allowed ($2 = allowed)
# or forbidden.
matrix_row() {
	local u=$1 publish=$2 consume=$3 admin=$4 r
	$publish "$u" mq-pub -q t "from-$u"
	$consume "$u" mq-sub -g g -n 1 -t 0 t
	$consume "$u" mq-group create t "new$u"
	if [[ $consume == allowed ]]; then
		r=$(claim "$u")
	else
		r=$(claim con)
	fi
	$consume "$u" mq-ack --nack -g g t "$r"
	r=$(claim con)
	$consume "$u" mq-ack --reject --reason test -g g t "$r"
	$consume "$u" mq-dlq -g g redrive t
	allowed "$u" mq-stat
	allowed "$u" mq-topic info t
	allowed "$u" mq-dlq -g g list t
	$consume "$u" mq-group delete t g
	$admin "$u" mq-topic alter --partitions 2 t
	$admin "$u" mq-topic delete t
}

@test "roles: the publisher publishes, and nothing else" {
	roles_topic
	dead_letter
	matrix_row pub allowed forbidden forbidden
}

@test "roles: the consumer consumes, subscribes, settles, redrives; it cannot publish or administer" {
	roles_topic
	dead_letter
	matrix_row con forbidden allowed forbidden
}

@test "roles: the administrator does everything" {
	roles_topic
	dead_letter
	matrix_row adm allowed allowed allowed
	[[ ! -e $S/topics/t ]] || fail "topic t is still there"
}

@test "roles: a user in no role only looks (the topic's mode gives others r-x)" {
	roles_topic
	dead_letter
	matrix_row out forbidden forbidden forbidden
}

@test "roles: a group a consumer makes later and a partition the administrator adds work for publisher and consumer" {
	roles_topic
	as con mq-group create t late
	as adm mq-topic alter --partitions 3 t
	run --separate-stderr as pub mq-pub -q -k key1 t a
	assert_success
	local n
	for n in 1 2 3 4 5 6 7 8 9; do
		as pub mq-pub -q -k "key$n" t "k$n"
	done
	run --separate-stderr as con mq-sub -g late -n 10 -t 0 t
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "a k1 k2 k3 k4 k5 k6 k7 k8 k9 "
	# Every partition has messages, and what pub and con made in the
	# new ones carries the roles' entries.
	for n in 0 1 2; do
		[[ -n $(ls "$S/topics/t/p$n/log") ]] || fail "p$n is empty"
	done
	run getfacl -cp "$S/topics/t/p2/g/late/new" "$S/topics/t/p2/log"
	assert_line "group:${RT}PUB:rwx"
	assert_line "group:${RT}CON:r-x"
	assert_line "group:${RT}CON:rwx"
	# A group that starts before now: made by the administrator; a
	# consumer could not link the log's messages into it.
	forbidden con mq-group create --from-start t back
	allowed adm mq-group create --from-start t back
	run --separate-stderr as con mq-sub -g back -n 10 -t 0 t
	assert_success
	assert_equal "${#lines[@]}" 10
	# mq-topic init again, on the spool: the topic keeps its roles.
	mq-topic init --group "${RT}ALL" --mode 2775
	run --separate-stderr as pub mq-pub -q t after-init
	assert_success
	run getfacl -cp "$S/topics/t/p0/log"
	assert_line "default:group:${RT}PUB:rwx"
	# The consumer cannot write a message file; the publisher can read
	# its own topic.conf but not change it.
	local f
	f=$(find "$S/topics/t/p2/log" -type f | head -1)
	run --separate-stderr as con sh -c "echo x >>'$f'"
	assert_failure
	run --separate-stderr as pub sh -c "echo x >>'$S/topics/t/topic.conf'"
	assert_failure
	local gid
	gid=$(getent group "${RT}PUB" | cut -d: -f3)
	grep -qx "publishers=$gid ${RT}PUB" "$S/topics/t/topic.conf"
	run --separate-stderr as out mq-topic info t
	assert_success
	assert_line "publishers: ${RT}PUB ($gid)"
	run --separate-stderr as out mq-topic info --json t
	assert_success
	run "$PY" -c 'import json, sys; o = json.loads(sys.argv[1])["roles"]
assert sorted(o) == ["admins", "consumers", "publishers"], o
assert o["publishers"] == {"gid": int(sys.argv[2]), "group": sys.argv[3]}, o
' "$output" "$gid" "${RT}PUB"
	assert_success
}

@test "roles: an unknown group is refused (67) before anything is made; the roles go with create only" {
	mq-topic init
	local opt
	for opt in --publishers --consumers --admins; do
		run --separate-stderr mq-topic create "$opt" no-such-group-here t
		assert_equal "$status" 67
		assert_one_line_error mq-topic
	done
	[[ ! -e $S/topics/t ]] || fail "made topic t"
	assert_equal "$(ls "$S/tmp")" ""
	mq-topic create t
	run --separate-stderr mq-topic alter --partitions 2 --admins "${RT}ADM" t
	assert_equal "$status" 64
}

@test "roles: where the file system has no ACLs, a topic with roles is refused and nothing is left" {
	require_root
	mkdir -p "$TD/ramfs"
	mount -t ramfs ramfs "$TD/ramfs" || skip "cannot mount ramfs"
	echo "$TD/ramfs" >>"$TD/.mounts"
	export MQ_SPOOL=$TD/ramfs/spool
	mq-topic init 2>/dev/null
	run --separate-stderr mq-topic create --publishers "${RT}PUB" t
	assert_equal "$status" 69
	assert_one_line_error mq-topic
	assert_output ""
	[[ ! -e $MQ_SPOOL/topics/t ]] || fail "made topic t"
	assert_equal "$(ls "$MQ_SPOOL/tmp")" ""
	# A partition placed there: the same.
	export MQ_SPOOL=$S
	run --separate-stderr mq-topic create --place "0=$TD/ramfs/p0" \
	    --consumers "${RT}CON" t
	assert_equal "$status" 69
	[[ ! -e $S/topics/t && ! -e $TD/ramfs/p0 ]] || fail "left a partition"
}

@test "roles: --help and the completions know --publishers, --consumers and --admins" {
	run --separate-stderr mq-topic --help
	assert_success
	assert_output --partial "[--publishers GROUP] [--consumers GROUP] [--admins GROUP]"
	complete_words() { completions _mq_topic "$@"; }
	assert_equal "$(complete_words mq-topic create --pub)" --publishers
	assert_equal "$(complete_words mq-topic create --con)" --consumers
	assert_equal "$(complete_words mq-topic create --adm)" --admins
	assert_equal "$(complete_words mq-topic create --admins "${RT}AD")" "${RT}ADM"
	run grep -c -e --publishers -e --consumers -e --admins \
	    "$BATS_TEST_DIRNAME/../../completions/_mq"
	[[ $output -ge 3 ]] || fail "zsh completion: $output"
}

# forge USER GROUP SEQ BODY: USER writes a well-formed message file of
# topic t, partition 0, under sequence number SEQ (a fresh id), in its own
# group g's tmp/, and links it into GROUP's new/; its id on stdout.
forge() {
	local p=$S/topics/t/p0 id hash name
	id=$(printf '%013x%019x' "$(date +%s%6N)" "$RANDOM")
	hash=$("$PY" -c 'import sys, xxhash; print(xxhash.xxh3_128(sys.argv[1].encode()).hexdigest())' "$4")
	name=$(printf '%020d.%s' "$3" "$id")
	as "$1" sh -c "printf 'Message-Id: %s\nTopic: t\nPartition: 0\nSeq: %s\nPublished: 2026-01-01T00:00:00.000000Z\nContent-Length: %s\nContent-Hash: xxh3-128:%s\n\n%s' \
	    '$id' '$3' '${#4}' '$hash' '$4' >'$p/g/g/tmp/forged' &&
	    ln '$p/g/g/tmp/forged' '$p/g/$2/new/$name' && rm '$p/g/g/tmp/forged'" ||
	    return 1
	echo "$id"
}

@test "roles: a consumer that links a message file of its own into another group's queue does not get it delivered: it is dead-lettered as unpublished" {
	roles_topic
	as con mq-group create t other
	forbidden con mq-pub -q t direct
	local id
	id=$(forge con other 1 forged) || fail "could not place the file"
	# The placing worked (consumers write every group's new/), yet the
	# group gets only what was published.
	as pub mq-pub -q t real
	run --separate-stderr as con mq-sub -g other -n 10 -t 0 t
	assert_success
	assert_output real
	run --separate-stderr as con mq-dlq -g other list --json t
	assert_success
	assert_equal "$(jq -r '.[] | .id + " " + .reason' <<<"$output")" \
	    "$id unpublished"
	# The dead letter keeps the file the consumer placed, not the bytes
	# of the message published under that sequence number.
	run --separate-stderr as con mq-dlq -g other show t "$id"
	assert_success
	assert_equal "${lines[-1]}" forged
	# Redriven, it is refused again, never delivered.
	as con mq-dlq -g other redrive t
	run --separate-stderr as con mq-sub -g other -n 10 -t 0 t
	assert_equal "$status" 1
	assert_output ""
	# The published ones still go to g, which a plain message reached.
	run --separate-stderr as con mq-sub -g g -n 10 -t 0 t
	assert_success
	assert_equal "$(tr '\n' ' ' <<<"$output")" "m1 m2 m3 real "
}

@test "roles: retention keeps the log name of a message a group still holds, so it is still delivered; gc removes the rest" {
	mq-topic init --group "${RT}ALL" --mode 2775
	as adm mq-topic create --mode 2755 --retention 1s --publishers "${RT}PUB" \
	    --consumers "${RT}CON" --admins "${RT}ADM" t
	as con mq-group create t g
	# Two publishes: in format 2 each is a segment of its own, which
	# retention removes whole.
	as pub mq-pub -q t a
	as pub mq-pub -q t b
	local b_at b
	b_at=$(now_ms)
	assert_equal "$(count_log t)" 2
	b=$(log_keys t | sed -n 2p)
	run --separate-stderr as con mq-sub -g g -n 1 -t 0 t
	assert_output a
	# Once both are past the retention, gc removes a's log name, whose
	# message no group holds; b's stays while g holds it.
	wait_for -t 5 past_ms $((b_at + 1000))
	as adm mq-topic gc t
	assert_equal "$(count_log t)" 1
	assert_equal "$(log_keys t)" "$b"
	run --separate-stderr as con mq-sub -g g -n 1 -t 0 t
	assert_success
	assert_output b
	# Settled, b goes at the next gc.
	as adm mq-topic gc t
	assert_equal "$(count_log t)" 0
}

@test "roles: importing dead letters into a topic with roles publishes them: a consumer is refused, an administrator's import is delivered after a redrive" {
	roles_topic
	dead_letter
	local a=$USERS_DIR/dead.$BATS_TEST_NUMBER
	mkdir -m 1777 "$a"
	as con mq-dlq export t "$a/dead.tar"
	chmod 644 "$a/dead.tar"
	as con mq-dlq -g g purge --all t
	# Refused before anything is placed (only its staging in SPOOL/tmp,
	# removed, was made).
	run --separate-stderr as con mq-dlq import "$a/dead.tar"
	assert_equal "$status" 77
	assert_one_line_error mq-dlq
	assert_equal "$(ls "$S/topics/t/p0/dlq/g")" ""
	allowed adm mq-dlq import "$a/dead.tar"
	as con mq-dlq -g g redrive t
	run --separate-stderr as con mq-sub -g g -n 10 -t 0 t
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "m1 m2 m3 "
}

@test "roles: a crash of dlq import between its log/ link and its dead letter leaves a published message that a backfill delivers; importing again links the dead letter from it" {
	roles_topic
	dead_letter
	local a=$USERS_DIR/dead.$BATS_TEST_NUMBER
	mkdir -m 1777 "$a"
	as con mq-dlq export t "$a/dead.tar"
	chmod 644 "$a/dead.tar"
	# Into another spool with the same roles, where the message was never
	# published: its log/ name is new there.
	S=$USERS_DIR/spool2.$BATS_TEST_NUMBER MQ_SPOOL=$USERS_DIR/spool2.$BATS_TEST_NUMBER
	roles_topic --retention 1s
	# Killed at its 4th linkat: two for staging, one into log/, then the
	# dead letter's from it.
	run --separate-stderr as adm strace -o /dev/null -f \
	    -e inject=linkat:signal=KILL:when=4 mq-dlq import "$a/dead.tar"
	assert_equal "$status" 137
	local key
	key=$(ls "$S/topics/t/p0/dlq/g" | sed -n 's/^\([^,]*\),.*\.why$/\1/p')
	[[ -n $key ]] || fail "no .why placed: $(ls "$S/topics/t/p0/dlq/g")"
	[[ -f $S/topics/t/p0/log/$key ]] || fail "no log/ name: $(ls "$S/topics/t/p0/log")"
	assert_equal "$(ls "$S/topics/t/p0/dlq/g" | grep -vc '\.why$')" 0
	# The published message: a backfill delivers it (the head was raised
	# above it before anything was placed; a group that starts before now
	# is an administrator's to make).
	run --separate-stderr as adm mq-sub --from-start -g late -n 10 -t 0 t
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "m1 m1 m2 m3 "
	# Importing again links the dead letter from that name.
	allowed adm mq-dlq import "$a/dead.tar"
	local dl
	dl=$(ls "$S/topics/t/p0/dlq/g" | grep -v '\.why$')
	assert_equal "$(stat -c %i "$S/topics/t/p0/dlq/g/$dl")" \
	    "$(stat -c %i "$S/topics/t/p0/log/$key")"
	# Past the retention (its id's time), gc keeps that name while the
	# dead letter holds it (in format 2 too, where it lies beside the
	# segments) ...
	wait_for -t 5 past_ms $((16#${key:21:13} / 1000 + 1000))
	as adm mq-topic gc t
	[[ -f $S/topics/t/p0/log/$key ]] || fail "gc removed log/$key, still held"
	as con mq-dlq -g g redrive t
	run --separate-stderr as con mq-sub -g g -n 10 -t 0 t
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "m1 m1 m2 m3 "
	# ... and removes it once the last holder settled it: the crashed
	# import's staging links it too, until the sweep of SPOOL/tmp takes
	# it an hour later (done here as that sweep does).
	[[ $(stat -c %h "$S/topics/t/p0/log/$key") == 2 ]] ||
	    fail "log/$key: links: $(stat -c %h "$S/topics/t/p0/log/$key")"
	as adm mq-topic gc t
	[[ -f $S/topics/t/p0/log/$key ]] || fail "gc removed log/$key, staged"
	rm -r "$S"/tmp/dlq-import.*
	as adm mq-topic gc t
	[[ ! -e $S/topics/t/p0/log/$key ]] || fail "log/$key stayed past gc"
}

@test "roles: a user of the spool with no role cannot answer another user's mq-req; a reply with another Correlation-Id is refused and counted; the consumer's reply is printed" {
	mq-topic init --group "${RT}ALL" --mode 2775
	as adm mq-topic create --mode 2755 --publishers "${RT}PUB" \
	    --consumers "${RT}CON" --admins "${RT}ADM" t
	as con mq-group create t srv
	as pub mq-req -t 60 t hello >"$TD/out" 2>"$TD/err" &
	local caller=$! f n box corr
	for n in $(seq 200); do
		f=$(find "$S/topics/t/p0/log" -type f | head -1)
		[[ -n $f ]] && break
		sleep 0.05
	done
	[[ -n $f ]] || fail "no request"
	# mon, in the spool's group, reads the request as anyone may ...
	box=$(as mon sed -n 's/^Reply-To: //p' "$f")
	corr=$(as mon sed -n 's/^Correlation-Id: //p' "$f")
	[[ -n $box && -n $corr ]] || fail "request without Reply-To: $(cat "$f")"
	# ... but may not write the caller's box.
	run --separate-stderr as mon sh -c "printf 'Correlation-Id: %s\nIn-Reply-To: x\nMq-Reply-Status: 0\n\nforged' '$corr' >'$S/replies/$box/reply'"
	assert_failure
	[[ ! -e $S/replies/$box/reply ]] || fail "mon wrote a reply"
	# A consumer's reply that names another call is refused, removed
	# and counted, and the caller goes on waiting.
	as con sh -c "printf 'Correlation-Id: %032d\nIn-Reply-To: x\nMq-Reply-Status: 0\n\nwrong' 0 >'$S/replies/$box/.t' && mv '$S/replies/$box/.t' '$S/replies/$box/reply' && echo >'$S/replies/$box/wake'"
	for n in $(seq 200); do
		[[ -s $S/replies/.refused ]] && break
		sleep 0.05
	done
	assert_equal "$(wc -l <"$S/replies/.refused")" 1
	grep -q " $box\$" "$S/replies/.refused"
	run --separate-stderr as con mq-sub -g srv -n 1 -t 10 --exec 'echo real' --reply t
	assert_success
	wait "$caller" || fail "mq-req: exit $?: $(cat "$TD/err")"
	assert_equal "$(cat "$TD/out")" real
	grep -q "refused a reply" "$TD/err"
	refute grep -q forged "$TD/out"
}

@test "mq-req where the file system has no ACLs: the box is the caller's and the spool group's by its mode alone; a user outside the group cannot answer, a consumer in it can" {
	require_root
	local m=$USERS_DIR/ramfs.$BATS_TEST_NUMBER
	mkdir -p "$m"
	mount -t ramfs -o mode=755 ramfs "$m" || skip "cannot mount ramfs"
	echo "$m" >>"$TD/.mounts"
	S=$m/spool MQ_SPOOL=$m/spool
	(umask 007 && mq-topic init --group "${RT}ALL" --mode 2775 2>/dev/null)
	! setfacl -m "u:${RT}out:rwx" "$S" 2>/dev/null || fail "ramfs took an ACL"
	# Without ACLs each maker's umask decides: the group's 007.
	as_user "${RT}adm" 007 mq-topic create t 2>/dev/null
	as_user "${RT}con" 007 mq-group create t srv 2>/dev/null
	as_user "${RT}pub" 007 mq-req -t 60 t hello >"$TD/out" 2>"$TD/err" &
	local caller=$! n box
	for n in $(seq 400); do
		box=$(find "$S/replies" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | head -1)
		[[ -n $box && -p $S/replies/$box/wake ]] && break
		sleep 0.05
	done
	[[ -n $box ]] || fail "no reply box: $(cat "$TD/err")"
	# The caller's, writable by the spool's group (the writers of
	# p0/g), by no one else.
	assert_equal "$(stat -c '%U %G %A' "$S/replies/$box")" \
	    "${RT}pub ${RT}ALL drwxrwx---"
	# Its FIFO too, or a server cannot wake the caller, who then sleeps
	# until its timeout.
	assert_equal "$(stat -c '%U %G %A' "$S/replies/$box/wake")" \
	    "${RT}pub ${RT}ALL prw--w----"
	run --separate-stderr as out sh -c "echo forged >'$S/replies/$box/reply'"
	assert_failure
	[[ ! -e $S/replies/$box/reply ]] || fail "out wrote a reply"
	# A server under umask 077 still makes a reply the caller reads.
	run --separate-stderr as con mq-sub -g srv -n 1 -t 10 --exec 'echo real' --reply t
	assert_success
	wait "$caller" || fail "mq-req: exit $?: $(cat "$TD/err")"
	assert_equal "$(cat "$TD/out")" real
}
