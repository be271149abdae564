# bench/roles.bash: section 14 of bench/run.sh (sourced by it), the cost of
# two checks of issue 26's hardening, each beside the same work without it,
# in the same run, alternated (plain first, then the other, then the other
# way round):
#   - a topic with roles (mq-topic create --consumers root): a consumer
#     delivers a claim only when log/KEY names the file it read, one
#     fstatat(2) more per delivery (mq-spool(5), Claim step 5).  ROLE_N
#     messages of SIZE bytes, published with mq-pub -l, drained by mq-sub.
#   - a group filter, compiled in the publisher's bounded worker (a fork
#     with a clean environment, jqrun.c) before the first message: paid once
#     per process, so measured with one mq-pub call per message (FILT_N
#     calls) into a topic whose group has a filter, beside one whose group
#     has none, and beside a bare process spawn (floor spawn).
# Uses run, med, kv, us_rows, us_per_msg, step, subscribe, left and the variables of
# run.sh.

ROLE_N=$((N / 5))
FILT_N=$((N / 500))

# roles_one KIND RUN: publish then drain a fresh topic of KIND (plain or
# roles), timed into res/role.{pub,drain}.KIND.RUN.
roles_one() {
	local t="role.$1.$2"
	if [ "$1" = roles ]; then
		"$BIN/mq-topic" -s "$SP" create --consumers root "$t" ||
		    die "mq-topic create --consumers $t failed"
	fi
	subscribe "$t"
	run "role.pub.$1.$2" "$ROLE_N" "$BIN/mq-pub" -s "$SP" -q -l "$t" \
	    < "$W/role.lines"
	sync
	run "role.drain.$1.$2" "$ROLE_N" "$BIN/mq-sub" -s "$SP" -g bench "$t" \
	    > /dev/null
	[ "$(left "$t" bench)" = 0 ] || die "$t: not drained"
}

# filter_one KIND RUN: FILT_N single mq-pub calls into a fresh topic whose
# group has a filter (filtered) or none (plain), timed into
# res/filt.pub.KIND.RUN.
filter_one() {
	local t="filt.$1.$2"
	if [ "$1" = filtered ]; then
		subscribe "$t" bench --group-filter '.a == 1'
	else
		subscribe "$t"
	fi
	run "filt.pub.$1.$2" "$FILT_N" sh -c 'i=0; while [ $i -lt "$1" ]; do
	    "$2" -s "$3" -q "$4" '"'"'{"a":1}'"'"' || exit 1; i=$((i + 1)); done' sh \
	    "$FILT_N" "$BIN/mq-pub" "$SP" "$t"
	[ "$(left "$t" bench)" = "$FILT_N" ] || die "$t: not every message entered"
}

roles_measure() {
	local r a b
	"$FLOOR" lines "$ROLE_N" $((SIZE + 1)) > "$W/role.lines"
	for r in $(seq "$REPEAT"); do
		a=plain b=roles
		[ $((r % 2)) = 1 ] || a=roles b=plain
		step "roles: run $r/$REPEAT, $ROLE_N messages, $a then $b"
		roles_one "$a" "$r"
		roles_one "$b" "$r"
		a=plain b=filtered
		[ $((r % 2)) = 1 ] || a=filtered b=plain
		step "roles: run $r/$REPEAT, $FILT_N single publishes, $a then $b"
		filter_one "$a" "$r"
		filter_one "$b" "$r"
	done
	run "filt.spawn" "$FILT_N" "$FLOOR" spawn "$FILT_N"
}

roles_table() {
	local pp pr dp dr fp ff sp="$W/res/filt.spawn"
	pp=$(med role.pub.plain) pr=$(med role.pub.roles)
	dp=$(med role.drain.plain) dr=$(med role.drain.roles)
	fp=$(med filt.pub.plain) ff=$(med filt.pub.filtered)
	echo "14. roles and filters: $ROLE_N messages of $SIZE bytes (mq-pub -l, then mq-sub); $FILT_N single mq-pub calls"
	us_rows "publish, plain topic:$pp" "publish, topic with roles:$pr" \
	    "drain, plain topic:$dp" "drain, topic with roles:$dr" \
	    "1 mq-pub per message, group unfiltered:$fp" \
	    "1 mq-pub per message, group filtered:$ff" \
	    "floor, a process spawn (fork, exec sh):$sp"
	awk -v dp="$(us_per_msg "$dp")" -v dr="$(us_per_msg "$dr")" \
	    -v fp="$(us_per_msg "$fp")" -v ff="$(us_per_msg "$ff")" 'BEGIN {
	    printf "  %-42s %9.1f   µs/msg (roles less plain, %+.0f%%)\n",
		"published check added, drain", dr - dp, (dr - dp) / dp * 100
	    printf "  %-42s %9.1f   µs per mq-pub call (filtered less unfiltered)\n",
		"worker and filter compile added", ff - fp }'
}
