#!/usr/bin/env bats
# The manual: every page is well-formed mdoc (mandoc's lint, warnings and
# worse), every tool has a page, and every long option a tool's usage
# names is documented on its page.

load helper

MAN=$BATS_TEST_DIRNAME/../../man

@test "every manual page passes mandoc -Tlint -Wwarning" {
	local f
	for f in "$MAN"/*.[157]; do
		run mandoc -Tlint -Wwarning "$f"
		assert_success
		assert_output ''
	done
}

@test "every tool has a page, and its page every long option of its usage" {
	local tool opt page
	for tool in mq-pub mq-sub mq-ack mq-dlq mq-topic mq-group mq-stat mq-replicate; do
		page=$MAN/$tool.1
		[[ -f $page ]] || fail "no page for $tool"
		run --separate-stderr "$tool" --help
		assert_success
		for opt in $(grep -oE -- '--[a-z][a-z-]+' <<<"$output" | sort -u); do
			grep -qE -- "Fl \\\\-${opt#--}( |$)" "$page" ||
			    fail "$tool: $opt is in its usage, not in $page"
		done
	done
}
