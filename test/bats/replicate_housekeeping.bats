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
	refute_output --partial "$(hostname)"
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

@test "status shows a push --follow killed with SIGKILL as idle within a second, as mq-stat does" {
	two_peers
	follow_b
	run -0 mq-stat --json
	assert_equal "$(jq -r --arg id "$IDB" '.replication[] | select(.id == $id) | .state' <<<"$output")" connected
	grep -qx 'state=connected' "$A/replicate/peers/$IDB" || fail "not connected"
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
