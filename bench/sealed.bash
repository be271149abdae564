# bench/sealed.bash: section 11 of bench/run.sh (sourced by it), the cost
# of a sealed topic (mq-topic(1), Sealed topics): publish and drain of
# SEAL_N messages of SIZE bytes into a plain topic and into a topic sealed
# to one consumer key, in the same run, alternated (plain, sealed, sealed,
# plain, ...), each run on fresh topics.  The drain opens the sealed bodies
# with mq-sub --key.  Uses run, med, kv, us_rows, us_per_msg, step, subscribe, left and the
# variables of run.sh.

SEAL_N=$((N / 5))

# sealed_one KIND RUN: publish then drain one topic of KIND (plain or
# sealed), timed into res/seal.{pub,drain}.KIND.RUN.
sealed_one() {
	local t="seal.$1.$2" n
	subscribe "$t"
	if [ "$1" = sealed ]; then
		"$BIN/mq-topic" -s "$SP" key add "$t" "$(cat "$W/seal.pub")" ||
		    die "mq-topic key add $t failed"
	fi
	run "seal.pub.$1.$2" "$SEAL_N" "$BIN/mq-pub" -s "$SP" -q -l "$t" \
	    < "$W/seal.lines"
	sync
	run "seal.drain.$1.$2" "$SEAL_N" "$BIN/mq-sub" -s "$SP" -g bench \
	    --key "$W/seal.key" "$t" > /dev/null
	n=$(left "$t" bench)
	[ "$n" = 0 ] || die "$t: $n messages left after the drain"
}

sealed_measure() {
	local r
	# Lines of SIZE characters: mq-pub -l strips the newline.
	"$FLOOR" lines "$SEAL_N" $((SIZE + 1)) > "$W/seal.lines"
	"$BIN/mq-sub" --keygen "$W/seal.key" > "$W/seal.pub" ||
	    die "mq-sub --keygen failed"
	for r in $(seq "$REPEAT"); do
		step "sealed: run $r/$REPEAT, $SEAL_N messages"
		if [ $((r % 2)) = 1 ]; then
			sealed_one plain "$r"
			sealed_one sealed "$r"
		else
			sealed_one sealed "$r"
			sealed_one plain "$r"
		fi
	done
}

sealed_table() {
	local pp ps dp ds
	pair_medians seal sealed
	echo "11. sealed topic: $SEAL_N messages of $SIZE bytes, publish (mq-pub -l) then drain (mq-sub --key)"
	us_rows "publish, plain topic:$pp" "publish, sealed topic (1 key):$ps" \
	    "drain, plain topic:$dp" "drain, sealed topic (1 key):$ds"
	awk -v pp="$(us_per_msg "$pp")" -v ps="$(us_per_msg "$ps")" \
	    -v dp="$(us_per_msg "$dp")" -v ds="$(us_per_msg "$ds")" 'BEGIN {
	    printf "  %-42s %9.1f   µs/msg (sealed less plain)\n",
		"sealing added, publish", ps - pp
	    printf "  %-42s %9.1f   µs/msg (sealed less plain)\n",
		"opening added, drain", ds - dp
	    printf "  %-42s %9.1f   µs/msg: %.1f plain, %.1f sealed (%+.0f%%)\n",
		"publish + drain, added", ps + ds - pp - dp, pp + dp, ps + ds,
		(ps + ds - pp - dp) / (pp + dp) * 100 }'
}
