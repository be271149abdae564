#!/usr/bin/env bash
# bench/contend.sh: publishers contending for one partition's lock.
#
#   bench/contend.sh DIR [N]...      (MQ_BIN: the tools, default bin/)
#
# For each N (default 1 and 8): N `mq-pub -q -l` at once, each fed
# CONTEND_M lines (default 2000) one write(2) a line by a shell loop, so
# that each publishes many small chunks and takes the partition's lock
# for each, into partition 0 of one topic of a fresh spool under DIR.
# Prints N, messages, seconds and messages per second of them all, after
# checking that the offsets are 0 .. N*M-1, each once.  Run it on a local
# disk and on a shared mount (GlusterFS) to compare the kernel's lock
# wait with lock.c's naps (mq-spool(5), SHARED FILE SYSTEMS).
set -eu
DIR=$1
shift
BIN=${MQ_BIN:-$(dirname "$0")/../bin}
M=${CONTEND_M:-2000}
feed() {
	local k
	for ((k = 0; k < M; k++)); do
		echo "m$1-$k"
	done
}
for n in "${@:-1 8}"; do
	for n1 in $n; do
		sp=$DIR/contend.$$.$n1
		rm -rf "$sp"
		"$BIN/mq-topic" -s "$sp" create --partitions 1 t >/dev/null
		t0=${EPOCHREALTIME/./}
		for ((i = 0; i < n1; i++)); do
			feed "$i" | "$BIN/mq-pub" -s "$sp" -q -l -p 0 t &
		done
		wait
		t1=${EPOCHREALTIME/./}
		head=$(cat "$sp/topics/t/p0/head")
		got=$(sed -E 's/.*committed=0*([0-9]+).*/\1/' <<<"$head")
		got=${got:-0}
		((got == n1 * M)) || { echo "contend: committed $got, want $((n1 * M))" >&2; exit 1; }
		us=$((t1 - t0))
		awk -v n="$n1" -v m="$got" -v us="$us" 'BEGIN {
		    printf "%d publishers  %d messages  %.2f s  %.0f/s\n", n, m, us / 1e6, m / (us / 1e6) }'
		rm -rf "$sp"
	done
done
