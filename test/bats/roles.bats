#!/usr/bin/env bats
# Roles on a topic with real Unix users (mq-spool(5), PERMISSIONS, Roles):
# mq-topic create --publishers PUB --consumers CON --admins ADM.  Users
# pub, con and adm are in those groups (and in the spool's group, which
# mq-spool(5) asks of every user of a spool); out is in none.  Every
# operation a role allows succeeds, and every one it does not fails with
# exit 77, one line, and changes nothing.  Everyone works under umask 077.
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
	export USERS_DIR
	USERS_DIR=$(users_dir mq-roles)
}

teardown_file() {
	[[ -n ${RT:-} ]] || return 0
	local u g
	for u in pub con adm out; do
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
roles_topic() {
	mq-topic init --group "${RT}ALL" --mode 2775
	as adm mq-topic create --mode 2755 --publishers "${RT}PUB" \
	    --consumers "${RT}CON" --admins "${RT}ADM" t
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
