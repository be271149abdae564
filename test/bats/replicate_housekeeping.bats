#!/usr/bin/env bats
# mq-replicate housekeeping: forget a peer, revoke a key, a session's
# liveness as status and mq-stat see it, and peers without a name shown by
# their spool ids.  Over ssh (--rsh env) between spools of this host; the
# revocation of a running session over TCP is in replicate_net.bats.

load helper
load replicate_helper

# two_peers: A has pushed to B and to C (--rsh env: no keys, no names),
# then published 3 more messages, so both lag 3 records.  IDB, IDC: their
# spool ids.
two_peers() {
	pair
	C=$TD/c
	mq-group create t g
	seq 1 5 | mq-pub -l t >/dev/null
	run -0 push_ab
	run -0 mq-replicate -s "$A" push --rsh env --remote-spool "$C"
	seq 1 3 | mq-pub -l t >/dev/null
	IDB=$(cat "$B/ID") IDC=$(cat "$C/ID")
}

# peer_ids: the ids status --json shows, sorted, on one line.
peer_ids() {
	mq-replicate -s "$A" status --json | jq -r '[.peers[].id] | sort | join(" ")'
}

# state_of ID: the state status --json shows for that peer.
state_of() {
	mq-replicate -s "$A" status --json | jq -r --arg id "$1" \
	    '.peers[] | select(.id == $id) | .state'
}

idle() {
	[[ $(state_of "$1") == idle ]]
}

connected() {
	[[ $(state_of "$1") == connected ]]
}

# follow_b: `push --follow` from A to B in the background; FOLLOWER is
# its pid, and the function returns once status shows B connected.
follow_b() {
	spawn "$TD/follow" mq-replicate -s "$A" push --follow --no-progress \
	    --rsh env --remote-spool "$B"
	FOLLOWER=$SPAWNED
	wait_for connected "$IDB"
}

@test "peers reached over ssh without keys have no name and are shown by their spool ids, each its own" {
	two_peers
	# Both spools are on this host: the host name would name both.
	[[ $IDB != "$IDC" ]] || fail "one id"
	run -0 mq-replicate -s "$A" status --json
	assert_equal "$(jq -c '[.peers[] | [.id, .name]] | sort' <<<"$output")" \
	    "$(jq -cn --arg b "$IDB" --arg c "$IDC" '[[$b, ""], [$c, ""]] | sort')"
	run -0 mq-replicate -s "$A" status
	assert_line --index 0 --regexp '^PEER {29}STATE +CONTACT'
	assert_line --regexp "^$IDB idle +[0-9]+s ago +[0-9]+ +3 "
	assert_line --regexp "^$IDC idle +[0-9]+s ago +[0-9]+ +3 "
	grep -qx 'name=' "$A/replicate/peers/$IDB" || fail "$(cat "$A/replicate/peers/$IDB")"
	# mq-stat names them so in each of its outputs.
	run -0 mq-stat
	assert_line --regexp "^$IDB +idle +3 "
	assert_line --regexp "^$IDC +idle +3 "
	run -0 mq-stat --json
	assert_equal "$(jq -r '[.replication[].peer] | sort | join(" ")' <<<"$output")" \
	    "$(printf '%s\n' "$IDB" "$IDC" | sort | tr '\n' ' ' | sed 's/ $//')"
	run -1 mq-stat --check --warn 'lag>2'
	assert_output --partial "peer $IDB lag=3"
	assert_output --partial "peer $IDC lag=3"
}

@test "forget removes the peer from status, mq-stat --json and --check's lag alerts; the other stays" {
	two_peers
	run -1 mq-stat --check --warn 'lag>2'
	assert_output --partial "peer $IDB lag=3"
	[[ -f $A/replicate/peers/$IDB.live ]] || fail "no lock file"
	run --separate-stderr mq-replicate -s "$A" forget "$IDB"
	assert_success
	assert_output ''
	assert_equal "$stderr" ''
	[[ ! -e $A/replicate/peers/$IDB ]] || fail "state left"
	[[ ! -e $A/replicate/peers/$IDB.live ]] || fail "lock file left"
	assert_equal "$(peer_ids)" "$IDC"
	run -0 mq-stat --json
	assert_equal "$(jq -c '[.replication[].id]' <<<"$output")" "[\"$IDC\"]"
	run -1 mq-stat --check --warn 'lag>2'
	refute_output --partial "$IDB"
	assert_output --partial "peer $IDC lag=3"
	# The other by its first 8 digits, in upper case: nothing is left to
	# check.
	run -0 mq-replicate -s "$A" forget "$(tr a-f A-F <<<"${IDC:0:8}")"
	assert_equal "$(peer_ids)" ''
	run -0 mq-stat --check --warn 'lag>2'
	assert_output 'MQ OK - 0 figures within thresholds'
	# B and C keep what they had.
	assert_equal "$(MQ_SPOOL=$B count_log t)" 5
}

@test "forget refuses while a session sends to the peer (75, nothing changed), and works once it is gone" {
	two_peers
	follow_b
	# The names only: the session rewrites B's file at each PING.
	local before
	before=$(find "$A/replicate" -printf '%p %y %m\n' | sort)
	run --separate-stderr mq-replicate -s "$A" forget "$IDB"
	assert_equal "$status" 75
	assert_one_line_error mq-replicate
	[[ $stderr == *"session with it is live"* ]] || fail "$stderr"
	assert_equal "$(find "$A/replicate" -printf '%p %y %m\n' | sort)" "$before"
	grep -qx "confirmed=[1-9][0-9]*" "$A/replicate/peers/$IDB" || fail "state lost"
	connected "$IDB"
	kill -9 "$FOLLOWER"
	wait_for -t 1 idle "$IDB"
	run -0 mq-replicate -s "$A" forget "$IDB"
	assert_equal "$(peer_ids)" "$IDC"
}

@test "status shows a push --follow killed with SIGKILL as idle within a second, as mq-stat does" {
	two_peers
	follow_b
	run -0 mq-stat --json
	assert_equal "$(jq -r --arg id "$IDB" '.replication[] | select(.id == $id) | .state' <<<"$output")" connected
	# The session writes its state at a confirmation or a PING (format 2:
	# the 3 messages went as a segment, no batch confirmed).
	wait_for -t 10 grep -qx 'state=connected' "$A/replicate/peers/$IDB"
	kill -9 "$FOLLOWER"
	local t0=${EPOCHREALTIME/./}
	wait_for -t 1 idle "$IDB"
	# The file still says connected, with a recent contact: the lock is
	# what tells.
	grep -qx 'state=connected' "$A/replicate/peers/$IDB" || fail "rewritten"
	echo "# idle after $(( (${EPOCHREALTIME/./} - t0) / 1000 )) ms" >&3
	run -0 mq-stat --json
	assert_equal "$(jq -r --arg id "$IDB" '.replication[] | select(.id == $id) | .state' <<<"$output")" idle
	run -0 mq-replicate -s "$A" status
	assert_line --regexp "^$IDB +idle +[0-9]+s ago"
}

@test "forget: a peer unknown is 66, an ambiguous one 64 naming each, a short prefix 64; none changes anything" {
	two_peers
	# A third peer whose id starts as B's, and a fourth named as a fifth.
	local twin=${IDB:0:12}00000000000000000000
	sed 's/^name=.*/name=/' "$A/replicate/peers/$IDB" >"$A/replicate/peers/$twin"
	sed 's/^name=.*/name=dup/' "$A/replicate/peers/$IDC" >"$A/replicate/peers/cccccccccccccccccccccccccccccccc"
	sed 's/^name=.*/name=dup/' "$A/replicate/peers/$IDC" >"$A/replicate/peers/dddddddddddddddddddddddddddddddd"
	local before arg
	before=$(spool_snapshot "$A")
	run --separate-stderr mq-replicate -s "$A" forget "${IDB:0:10}"
	assert_equal "$status" 64
	assert_one_line_error mq-replicate
	[[ $stderr == *"ambiguous"*"$IDB"*"$twin"* || $stderr == *"ambiguous"*"$twin"*"$IDB"* ]] ||
	    fail "$stderr"
	run --separate-stderr mq-replicate -s "$A" forget dup
	assert_equal "$status" 64
	[[ $stderr == *"cccccccccccccccccccccccccccccccc (dup)"*"dddddddddddddddddddddddddddddddd (dup)"* ]] ||
	    fail "$stderr"
	run --separate-stderr mq-replicate -s "$A" forget "${IDB:0:7}"
	assert_equal "$status" 64
	[[ $stderr == *"at least 8"* ]] || fail "$stderr"
	for arg in nobody 0123456789abcdef 0123456789abcdef0123456789abcdef "$IDB/../x"; do
		run --separate-stderr mq-replicate -s "$A" forget "$arg"
		assert_equal "$status" 66
		assert_one_line_error mq-replicate
	done
	run --separate-stderr mq-replicate -s "$A" forget ''
	assert_equal "$status" 64
	run --separate-stderr mq-replicate -s "$A" forget "$IDB" "$IDC"
	assert_equal "$status" 64
	run --separate-stderr mq-replicate -s "$A" forget
	assert_equal "$status" 64
	run --separate-stderr mq-replicate -s "$A" forget --json "$IDB"
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot "$A")" "$before"
	# A spool that never sent knows no peer, and a missing spool is 66.
	run --separate-stderr mq-replicate -s "$B" forget "$IDC"
	assert_equal "$status" 66
	run --separate-stderr mq-replicate -s "$TD/none" forget "$IDC"
	assert_equal "$status" 66
	[[ ! -e $TD/none ]] || fail "spool made"
	# The full id names its peer even beside its twin.
	run -0 mq-replicate -s "$A" forget "$IDB"
	[[ -f $A/replicate/peers/$twin ]] || fail "twin forgotten"
}

@test "a forgotten peer that connects again is a new peer, sent the journal from its start" {
	two_peers
	run -0 mq-replicate -s "$A" forget "$IDB"
	run --separate-stderr push_ab -v
	assert_success
	run -0 mq-replicate -s "$A" status --json
	assert_equal "$(jq -c --arg id "$IDB" '.peers[] | select(.id == $id) | [.state, .confirmed == .journal, .lag_records]' <<<"$output")" \
	    '["idle",true,0]'
	same_spools
}

@test "revoke removes a key's line, by key or by name, and leaves every other line as it was" {
	local k1 k2 k3
	k1=$(printf '1%.0s' {1..64}) k2=$(printf 'a%.0s' {1..64}) k3=$(printf 'B%.0s' {1..64})
	run -0 mq-replicate authorize "$k1" one
	run -0 mq-replicate authorize "$k2" "two words"
	printf '# a comment\n%s\tthree\n' "$k3" >>"$MQ_SPOOL/replicate/authorized_peers"
	run -0 mq-replicate authorize "$(printf 'c%.0s' {1..64})"
	run --separate-stderr mq-replicate revoke "two words"
	assert_success
	assert_output ''
	assert_equal "$stderr" ''
	assert_equal "$(cat "$MQ_SPOOL/replicate/authorized_peers")" \
	    "$k1 one
# a comment
$k3	three
$(printf 'c%.0s' {1..64})"
	assert_equal "$(stat -c %a "$MQ_SPOOL/replicate/authorized_peers")" 644
	# By key, in either case.
	run -0 mq-replicate revoke "$(tr A-Z a-z <<<"$k3")"
	run -0 mq-replicate revoke "$(printf 'C%.0s' {1..64})"
	assert_equal "$(cat "$MQ_SPOOL/replicate/authorized_peers")" "$k1 one
# a comment"
	# authorize is its counterpart.
	run -0 mq-replicate authorize "$k2" back
	assert_equal "$(tail -1 "$MQ_SPOOL/replicate/authorized_peers")" "$k2 back"
}

@test "revoke: an unknown key or name is 66, a name of two keys 64; none changes anything" {
	local k1 k2 before arg
	k1=$(printf '1%.0s' {1..64}) k2=$(printf '2%.0s' {1..64})
	# No authorized_peers yet.
	mkdir -p "$MQ_SPOOL"
	run -0 mq-topic create t
	run --separate-stderr mq-replicate revoke "$k1"
	assert_equal "$status" 66
	assert_one_line_error mq-replicate
	[[ ! -e $MQ_SPOOL/replicate ]] || fail "replicate/ made"
	run -0 mq-replicate authorize "$k1" same
	run -0 mq-replicate authorize "$k2" same
	before=$(spool_snapshot)
	run --separate-stderr mq-replicate revoke same
	assert_equal "$status" 64
	assert_one_line_error mq-replicate
	[[ $stderr == *"$k1"*"$k2"* ]] || fail "$stderr"
	for arg in other "$(printf '3%.0s' {1..64})" "${k1:0:63}" sam; do
		run --separate-stderr mq-replicate revoke "$arg"
		assert_equal "$status" 66
		assert_one_line_error mq-replicate
	done
	run --separate-stderr mq-replicate revoke ''
	assert_equal "$status" 64
	run --separate-stderr mq-replicate revoke "$k1" extra
	assert_equal "$status" 64
	run --separate-stderr mq-replicate revoke
	assert_equal "$status" 64
	run --separate-stderr mq-replicate revoke --force "$k1"
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot)" "$before"
	run --separate-stderr mq-replicate -s "$TD/none" revoke "$k1"
	assert_equal "$status" 66
	[[ ! -e $TD/none ]] || fail "spool made"
}

@test "authorize and revoke at once lose nothing: they take turns" {
	local n k
	run -0 mq-replicate authorize "$(printf 'f%.0s' {1..64})" keep
	for n in $(seq 10 29); do
		k=$(printf "%064d" "$n")
		mq-replicate authorize "$k" "p$n" &
		mq-replicate revoke keep >/dev/null 2>&1 &
	done
	wait
	for n in $(seq 10 29); do
		grep -qx "$(printf "%064d" "$n") p$n" "$MQ_SPOOL/replicate/authorized_peers" ||
		    fail "p$n lost"
	done
	run ! grep -q keep "$MQ_SPOOL/replicate/authorized_peers"
}

@test "completion: forget offers the peers' ids and names, revoke the keys and names" {
	two_peers
	sed -i 's/^name=.*/name=bee/' "$A/replicate/peers/$IDB"
	run -0 mq-replicate -s "$A" authorize "$(printf 'a%.0s' {1..64})" alpha
	run -0 completions _mq_replicate mq-replicate -s "$A" ""
	assert_line forget
	assert_line revoke
	run -0 completions _mq_replicate mq-replicate -s "$A" forget ""
	assert_line "$IDB"
	assert_line "$IDC"
	assert_line bee
	run -0 completions _mq_replicate mq-replicate -s "$A" revoke al
	assert_output alpha
}
