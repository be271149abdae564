#!/usr/bin/env bats
# The journal stays bounded over a long run (issue 16): 200,000 messages
# published and acknowledged with a peer following.  About three minutes,
# so run once by make check-slow (in check-all), not again under the
# sanitizers; test/bats/journal_segments.bats does the same with 20,000.

load ../bats/helper
load ../bats/replicate_helper
load ../bats/journal_helper
# Topics of format 1, whose publishes journal a record per message: the
# journal's heaviest load (format 2 journals only acks, a record per
# claim).  test/bats/journal_segments.bats runs the same with 20,000 in
# either format.
MQ_FILE_FORMAT=1

@test "200,000 messages published and acked with a peer following: the journal holds what the peer has not confirmed, and a segment or two" {
	bounded_journal 200000
}
