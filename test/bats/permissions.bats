#!/usr/bin/env bats
# Permissions with real Unix users (mq-spool(5), PERMISSIONS): what mq
# makes gets its mode and group from the spool's or the topic's directory,
# not from the umask of whoever made it first; a user the modes leave out
# is refused with exit 77 and changes nothing.
#
# Needs root (useradd); the users and groups are made here and removed in
# teardown_file.  The tools are copied where those users can run them.

load helper
load users

setup_file() {
	[[ $EUID == 0 ]] || skip "needs root to add users"
	local tag=$$
	export PT=mqp$tag
	groupadd "${PT}team"
	groupadd "${PT}priv"
	useradd -M -N -g "${PT}team" -s /bin/sh "${PT}alice"
	usermod -a -G "${PT}priv" "${PT}alice"
	useradd -M -N -g "${PT}team" -s /bin/sh "${PT}bob"
	useradd -M -N -s /bin/sh "${PT}eve"
	# Where the users can reach: the tools and the spools.
	export USERS_DIR
	USERS_DIR=$(users_dir mq-perm)
}

teardown_file() {
	[[ -n ${PT:-} ]] || return 0
	local u
	for u in alice bob eve; do
		userdel "${PT}$u" 2>/dev/null || true
	done
	groupdel "${PT}team" 2>/dev/null || true
	groupdel "${PT}priv" 2>/dev/null || true
	rm -rf "${USERS_DIR:?}"
}

setup() {
	users_setup
}

# as USER UMASK CMD...: CMD as that user (with its groups) and umask.
as() {
	as_user "$PT$1" "${@:2}"
}

# refused USER UMASK CMD...: exit 77, one line, nothing changed.
refused() {
	refused_as "$PT$1" "${@:2}"
}

@test "a group-shared spool made by hand (chgrp, chmod 2775, umask 002): the second user publishes into the journal the first made" {
	mkdir "$S"
	chgrp "${PT}team" "$S"
	chmod 2775 "$S"
	run --separate-stderr as alice 002 mq-pub -q t one
	assert_success
	run --separate-stderr as bob 002 mq-pub -q t two
	assert_success
	assert_equal "$(stat -c '%a %G' "$S/journal")" "664 ${PT}team"
	run --separate-stderr as bob 002 mq-sub -g g --from-start -n 2 -t 0 t
	assert_success
	assert_output $'one\ntwo'
}

@test "mq-topic init --group --mode: what two users make under umask 077 takes the spool's mode and group" {
	mq-topic init --group "${PT}team" --mode 2770
	assert_equal "$(stat -c '%a %G' "$S")" "2770 ${PT}team"
	as alice 077 mq-topic create t
	as alice 077 mq-pub -q t from-alice
	as bob 077 mq-pub -q t from-bob
	run --separate-stderr as bob 077 mq-sub -g g --from-start -n 2 -t 0 t
	assert_success
	assert_output $'from-alice\nfrom-bob'
	run --separate-stderr as alice 077 mq-stat
	assert_success
	# Every directory 2770, every file 660, all of the team's group.
	run find "$S" \( -type d ! -perm 2770 \) -o \( -type f ! -perm 660 \) -o \
	    ! -group "${PT}team"
	assert_output ""
	local f
	for f in journal topics/t/p0/head topics/t/groups/g.conf \
	    topics/t/groups/g.stats/vm; do
		[[ -f $S/$f ]] || fail "no $f"
	done
	assert_equal "$(find "$S/topics/t/p0/log" -type f | wc -l)" 2
}

@test "a user outside the spool's group is refused with exit 77 and one line, and changes nothing" {
	mq-topic init --group "${PT}team" --mode 2770
	as alice 002 mq-pub -q t secret-body
	refused eve 000 mq-pub -q t forged
	refused eve 000 mq-sub -g g --from-start -n 1 -t 0 t
	refused eve 000 mq-topic create other
	run --separate-stderr as eve 000 sh -c "cat '$S'/topics/t/p0/log/*"
	assert_failure
	refute_output --partial secret-body
}

@test "mq-topic create --group --mode: a topic of its own group, closed to the spool's other users" {
	mq-topic init --group "${PT}team" --mode 2775
	mq-topic create --group "${PT}priv" --mode 2770 private
	assert_equal "$(stat -c '%a %G' "$S/topics/private")" "2770 ${PT}priv"
	run --separate-stderr as alice 022 mq-pub -q private payroll
	assert_success
	assert_equal "$(stat -c '%a %G' "$S"/topics/private/p0/log/*)" \
	    "660 ${PT}priv"
	refused bob 022 mq-pub -q private forged
	refused bob 022 mq-sub -g g --from-start -n 1 -t 0 private
	# The spool's other topics stay open to bob.
	run --separate-stderr as bob 022 mq-pub -q open hello
	assert_success
	run --separate-stderr as alice 022 mq-sub -g g --from-start -n 1 -t 0 private
	assert_success
	assert_output payroll
}

@test "mq-topic init on a spool made under umask 077 gives all it holds the mode and group; the replication key stays private" {
	(umask 077 && mq-pub -q t one && mq-replicate keygen >/dev/null)
	assert_equal "$(stat -c '%a' "$S/journal")" 600
	mq-topic init --group "${PT}team" --mode 2770
	assert_equal "$(stat -c '%a' "$S/replicate/key")" 600
	run find "$S" ! -path "$S/replicate/key" \( \( -type d ! -perm 2770 \) -o \
	    \( -type f ! -perm 660 \) -o ! -group "${PT}team" \)
	assert_output ""
	run --separate-stderr as bob 077 mq-sub -g g --from-start -n 1 -t 0 t
	assert_success
	assert_output one
}

@test "bad --group and --mode are refused before anything is made" {
	run --separate-stderr mq-topic init --group no-such-group-here
	assert_equal "$status" 67
	assert_one_line_error mq-topic
	[[ ! -e $S ]] || fail "made $S"
	local m
	for m in abc 600 4770 17770 -770 ''; do
		run --separate-stderr mq-topic init --mode "$m"
		assert_equal "$status" 64
		assert_one_line_error mq-topic
	done
	[[ ! -e $S ]] || fail "made $S"
	mq-topic init
	run --separate-stderr mq-topic create --mode 770x t
	assert_equal "$status" 64
	[[ ! -e $S/topics/t ]] || fail "made topic t"
	run --separate-stderr mq-topic list --mode 770
	assert_equal "$status" 64
}

@test "mq-topic --help and the bash completion know init, --group and --mode" {
	run --separate-stderr mq-topic --help
	assert_success
	assert_line --regexp '^usage: mq-topic \[-s SPOOL\] init \[--group GROUP\] \[--mode MODE\]$'
	complete_words() { completions _mq_topic "$@"; }
	assert_equal "$(complete_words mq-topic in | sort | tr "\n" " ")" "info init "
	assert_equal "$(complete_words mq-topic init -- | sort | tr '\n' ' ')" "--group --mode "
	assert_equal "$(complete_words mq-topic create --gr)" --group
	assert_equal "$(complete_words mq-topic init --group "${PT}te")" "${PT}team"
}

@test "a refusal names the spool, the topic, the group and the file" {
	mq-topic init --group "${PT}team" --mode 2775
	mq-pub -q t one
	mq-group create t g
	run --separate-stderr as eve 022 mq-pub -q t two
	assert_equal "$status" 77
	assert_equal "$stderr" "mq-pub: $S: topic t: head: Permission denied"
	run --separate-stderr as eve 022 mq-sub -g g -n 1 -t 0 t
	assert_equal "$status" 77
	assert_one_line_error mq-sub
	[[ $stderr == "mq-sub: $S: topic t: group g: "*": Permission denied" ]] ||
	    fail "$stderr"
	run --separate-stderr as eve 022 mq-topic delete t
	assert_equal "$status" 77
	[[ $stderr == "mq-topic: $S: "*"topic t"*": Permission denied" ]] ||
	    fail "$stderr"
	# Without search permission on the spool, the spool is the place.
	chmod 2770 "$S"
	run --separate-stderr as eve 022 mq-pub -q t two
	assert_equal "$status" 77
	assert_equal "$stderr" "mq-pub: spool $S: Permission denied"
}

@test "real users, a signed topic: a member of the spool's group forges a message by hand; the consumer dead-letters it, never delivers it" {
	mq-topic init --group "${PT}team" --mode 2770
	mq-pub --keygen "$USERS_DIR/alice.key" >/dev/null
	chown "${PT}alice" "$USERS_DIR/alice.key"
	echo "$(mq-pub --pubkey "$USERS_DIR/alice.key") alice" >"$TD/signers"
	mq-topic create --signers "$TD/signers" t
	mq-group create t g
	local real id=0123456789abcdef0123456789abcdef hash
	real=$(as alice 077 mq-pub --sign "$USERS_DIR/alice.key" t real)
	# bob may write the spool but holds no signer's key: mq-pub refuses
	# him, so he writes the message himself, whole, with a right
	# Content-Hash, in place of the real one, in the topic's format
	# (replace_stored, run as bob).
	run --separate-stderr as bob 077 mq-pub -q t forged
	assert_equal "$status" 77
	local bt=$USERS_DIR/bob.$BATS_TEST_NUMBER
	mkdir -m 1777 "$bt"
	hash=$("$PY" -c 'import xxhash; print(xxhash.xxh3_128(b"forged").hexdigest())')
	printf 'Message-Id: %s\nTopic: t\nPartition: 0\nSeq: 0\nPublished: 2026-01-01T00:00:00.000000Z\nContent-Length: 6\nContent-Hash: xxh3-128:%s\n\nforged' \
	    "$id" "$hash" >"$bt/forged"
	chmod 644 "$bt/forged"
	as bob 077 bash -c "$(declare -f replace_stored log_file is_format2 \
	    log_records header_of rewrite_stored rekey_stored)
	    PY=$PY MQ_SPOOL=$S TD=$bt
	    replace_stored t $(printf '%020d.%s' 0 "$real") $bt/forged"
	log_grep t "^Message-Id: $id\$" || fail "the forged message is not stored"
	run --separate-stderr as alice 077 mq-sub -g g -n 1 -t 0 t
	assert_equal "$status" 1
	assert_output ""
	run --separate-stderr as alice 077 mq-dlq list --json t
	assert_success
	assert_equal "$(jq -r '.[0].id + " " + .[0].reason' <<<"$output")" \
	    "$id signature"
}

@test "real users, a sealed topic: the spool holds no plaintext; a member without the key cannot read it and it stays; with the key it is read" {
	mq-topic init --group "${PT}team" --mode 2770
	local pub
	pub=$(mq-sub --keygen "$USERS_DIR/bob.key")
	chown "${PT}bob" "$USERS_DIR/bob.key"
	mq-topic create t
	mq-group create t g
	mq-topic key add t "$pub"
	as alice 077 mq-pub -q t "the secret plan"
	run grep -r "secret plan" "$S"
	assert_failure
	run --separate-stderr as alice 077 mq-sub -g g -n 1 -t 0 t
	assert_equal "$status" 77
	assert_one_line_error mq-sub
	refute_output --partial "secret plan"
	run --separate-stderr as bob 077 mq-sub -g g -n 1 -t 0 --key "$USERS_DIR/bob.key" t
	assert_success
	assert_output "the secret plan"
	# alice cannot read bob's key either: it is his, 0600.
	run --separate-stderr as alice 077 mq-sub -g g -n 1 -t 0 --key "$USERS_DIR/bob.key" t
	assert_failure
}

@test "mq-topic init where the file system has no ACLs (ramfs): the mode and group apply to the directory, and the tool says the rest follows the umask" {
	mkdir -p "$TD/ramfs"
	mount -t ramfs ramfs "$TD/ramfs" || fail "cannot mount ramfs"
	echo "$TD/ramfs" >>"$TD/.mounts"
	run --separate-stderr mq-topic -s "$TD/ramfs/s" init --group "${PT}team" --mode 2770
	assert_success
	assert_equal "$stderr" "mq-topic: $TD/ramfs/s: this file system has no ACLs: what is made below follows each maker's umask"
	assert_equal "$(stat -c '%a %G' "$TD/ramfs/s")" "2770 ${PT}team"
	[[ -f $TD/ramfs/s/VERSION ]] || fail "no spool made"
}

@test "mq-topic init leaves a placed partition, a link to another directory, as it is" {
	mkdir -m 700 "$TD/disk"
	mq-topic create --partitions 2 --place "1=$TD/disk/p1" t
	local before
	before=$(stat -c '%a %G' "$TD/disk/p1")
	mq-topic init --group "${PT}team" --mode 2770
	assert_equal "$(stat -c '%a %G' "$TD/disk/p1")" "$before"
	[[ -L $S/topics/t/p1 ]] || fail "p1 is no longer a link"
	assert_equal "$(stat -c '%a %G' "$S/topics/t/p0")" "2770 ${PT}team"
}
