# users.bash: for the tests that run the tools as other Unix users
# (permissions.bats, roles.bats, readonly.bats; root only).  Load after helper.  A test
# file sets USERS_DIR (made by users_dir), and its setup sets S, the
# spool of the test, under it.

# users_dir PREFIX: a new directory the users can reach, its path on
# stdout, with the tools copied into its bin/ (the checkout may be in a
# directory they cannot enter).
users_dir() {
	local d
	d=$(mktemp -d "/tmp/$1.XXXXXX") || return 1
	chmod 755 "$d"
	mkdir "$d/bin"
	install -m 755 "$MQ_BIN_DIR"/mq-* "$d/bin/"
	echo "$d"
}

# users_setup: the spool of this test, $S, under USERS_DIR, and the copied
# tools first on PATH.
users_setup() {
	[[ $EUID == 0 ]] || skip "needs root to add users"
	export PATH="$USERS_DIR/bin:$PATH"
	TD=$BATS_TEST_TMPDIR
	S=$USERS_DIR/spool.$BATS_TEST_NUMBER
	rm -rf "$S"
	export MQ_SPOOL=$S
	if [[ -n ${MQ_FILE_FORMAT:-} ]]; then
		export MQ_FORMAT=$MQ_FILE_FORMAT
	elif [[ -n ${MQ_TEST_FORMAT:-} ]]; then
		export MQ_FORMAT=$MQ_TEST_FORMAT
	fi
}

# as_user USER UMASK CMD...: CMD as USER (with its groups) under UMASK, on
# the spool $S with the copied tools.
as_user() {
	local user=$1 mask=$2
	shift 2
	runuser -u "$user" -- env PATH="$USERS_DIR/bin:/usr/bin:/bin" \
	    MQ_SPOOL="$S" HOME=/nonexistent sh -c 'umask "$0"; exec "$@"' \
	    "$mask" "$@"
}

# snapshot [DIR]: every name below DIR (the spool $S) with its type,
# mode, owner, group, size, link count and modification time, then a
# checksum of every regular file: what reads, or is refused, rewrites
# nothing, not even with the same bytes.
snapshot() {
	(
		cd "${1:-$S}" || exit 1
		find . -printf '%p %y %m %U:%G %s %n %T@\n' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	)
}

# refused_as USER UMASK CMD...: exit 77, one line naming the tool, and the
# spool as it was.
refused_as() {
	local before
	before=$(snapshot)
	run --separate-stderr as_user "$@"
	[[ $status == 77 ]] || fail "$1: ${*:3}: exit $status, not 77: $stderr"
	assert_one_line_error "$3"
	assert_equal "$(snapshot)" "$before"
}
