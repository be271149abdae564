#!/usr/bin/env bats
# What every tool does with its options before it looks at a spool (one
# helper, tool_getopt in src/tool.c, serves them all): --help is the
# usage on standard output and 0; an unknown option, or one without its
# argument, is getopt's message and the usage on standard error and 64
# (EX_USAGE), with nothing on standard output and no spool made.

load helper

TOOLS="mq-pub mq-sub mq-ack mq-dlq mq-topic mq-group mq-stat mq-replicate mq-req mq-http"

@test "every tool: --help is its usage on stdout, nothing on stderr, 0" {
	local tool
	for tool in $TOOLS; do
		run --separate-stderr "$tool" --help
		assert_success
		assert_usage_output "$tool"
		[[ $output == "usage: $tool "* ]] || fail "$tool: $output"
		assert_equal "$stderr" ""
	done
}

@test "every tool: --help wins over the options and arguments around it" {
	local tool
	for tool in $TOOLS; do
		run --separate-stderr "$tool" -s "$TD/none" --help a b c
		assert_success
		[[ $output == "usage: $tool "* ]] || fail "$tool: $output"
		[[ ! -e $TD/none ]] || fail "$tool --help made a spool"
	done
}

@test "every tool: an unknown long option is 64, its name and the usage on stderr" {
	local tool
	for tool in $TOOLS; do
		run --separate-stderr "$tool" --no-such-option
		assert_equal "$status" 64
		assert_equal "$output" ""
		[[ $stderr == *"$tool: unrecognized option '--no-such-option'"* ]] ||
		    fail "$tool: $stderr"
		[[ $stderr == *"usage: $tool "* ]] || fail "$tool: $stderr"
	done
}

@test "every tool: an unknown letter, or -s without its argument, is 64" {
	local tool
	for tool in $TOOLS; do
		run --separate-stderr "$tool" -Z
		assert_equal "$status" 64
		assert_equal "$output" ""
		[[ $stderr == *"$tool: invalid option -- 'Z'"* ]] || fail "$tool: $stderr"
		[[ $stderr == *"usage: $tool "* ]] || fail "$tool: $stderr"
		run --separate-stderr "$tool" -s
		assert_equal "$status" 64
		[[ $stderr == *"$tool: option requires an argument -- 's'"* ]] ||
		    fail "$tool: $stderr"
	done
	[[ ! -e $MQ_SPOOL/VERSION ]] || fail "a usage error made a spool"
}

@test "an abbreviated long option is taken; an ambiguous one is 64" {
	run --separate-stderr mq-topic --he
	assert_success
	assert_usage_output mq-topic
	run --separate-stderr mq-sub --h
	assert_equal "$status" 64
	[[ $stderr == *"option '--h' is ambiguous"* ]] || fail "$stderr"
}

@test "mq-stat --check: a bad option is the plugin's UNKNOWN, not usage" {
	run --separate-stderr mq-stat --check -Z
	assert_equal "$status" 3
	assert_output 'MQ UNKNOWN - bad option -Z, or no argument'
	run --separate-stderr mq-stat --check --warn
	assert_equal "$status" 3
	assert_output 'MQ UNKNOWN - bad option --warn, or no argument'
	run --separate-stderr mq-stat --check --help
	assert_success
	[[ $output == "usage: mq-stat "* ]] || fail "$output"
}

@test "a missing required option, command or operand is named on one line before the usage (64)" {
	local -a cases=(
		"mq-sub t|mq-sub: -g GROUP is required"
		"mq-sub -g g|mq-sub: a TOPIC or PATTERN is required"
		"mq-sub -g g a b|mq-sub: only one TOPIC or PATTERN"
		"mq-ack t|mq-ack: -g GROUP is required"
		"mq-ack -g g|mq-ack: a TOPIC is required"
		"mq-pub|mq-pub: a TOPIC is required"
		"mq-group|mq-group: a command is required"
		"mq-group create t|mq-group: create takes a TOPIC and a GROUP"
		"mq-dlq|mq-dlq: a command is required"
		"mq-dlq list|mq-dlq: list: a TOPIC is required"
		"mq-dlq show t|mq-dlq: show takes a TOPIC and an ID"
		"mq-topic|mq-topic: a command is required"
		"mq-topic info|mq-topic: info takes one TOPIC"
		"mq-replicate|mq-replicate: a command is required"
	)
	local c cmd
	for c in "${cases[@]}"; do
		cmd=${c%%|*}
		# shellcheck disable=SC2086
		run --separate-stderr $cmd
		assert_equal "$status" 64
		assert_equal "$output" ""
		assert_equal "${stderr_lines[0]}" "${c#*|}"
		[[ ${stderr_lines[1]} == "usage: ${cmd%% *} "* ]] || fail "$c: $stderr"
	done
	[[ ! -e $MQ_SPOOL/VERSION ]] || fail "a usage error made a spool"
}

@test "usages: durations are DURATION, and no option follows the operands" {
	local tool
	for tool in $TOOLS; do
		run --separate-stderr "$tool" --help
		assert_success
		[[ $output != *SECONDS* ]] || fail "$tool: $output"
	done
	run --separate-stderr mq-pub --help
	assert_line --index 3 --regexp ' TOPIC \[MESSAGE\.\.\.\]$'
	assert_line --index 4 '       mq-pub --keygen KEYFILE | --pubkey KEYFILE'
}

@test "--from-start, --from-offset and --from-time exclude each other, @0 too (64), nothing made" {
	local args
	for args in "--from-offset 0:1 --from-time @0" "--from-start --from-time @0"; do
		# shellcheck disable=SC2086
		run --separate-stderr mq-group create $args t g
		assert_equal "$status" 64
		assert_equal "$stderr" "mq-group: choose one of --from-start, --from-offset and --from-time"
		# shellcheck disable=SC2086
		run --separate-stderr mq-sub -g g $args t
		assert_equal "$status" 64
		assert_equal "$stderr" "mq-sub: choose one of --from-start, --from-offset and --from-time"
	done
	[[ ! -e $MQ_SPOOL/topics/t ]]
}
