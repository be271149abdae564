#!/usr/bin/env bats
# The journal stays bounded over a long run (issue 16): 200,000 messages
# published and acknowledged with a peer following.  About three minutes,
# so run once by make check-slow (in check-all), not again under the
# sanitizers; test/bats/journal_segments.bats does the same with 20,000.

load ../bats/helper
load ../bats/replicate_helper
load ../bats/journal_helper

@test "200,000 messages published and acked with a peer following: the journal never holds more than 4 MiB" {
	# Rounds of 20,000: the acks of a round (1.7 MB) may all be
	# unconfirmed when the round's last message reaches the peer.
	bounded_journal 200000 $((4 * 1024 * 1024))
}
