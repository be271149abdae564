#!/usr/bin/env bats
# The manual: every page is well-formed mdoc (mandoc's lint, warnings and
# worse), every section a page refers to exists, every page is installed,
# every tool has a page, and every long option a tool's usage names is
# documented on its page.

load helper

ROOT=$BATS_TEST_DIRNAME/../..
MAN=$ROOT/man

# The headings (.Sh, .Ss) of every page of directory $1, one per line as
# "page.N<TAB>heading".
headings() {
	local f
	for f in "$1"/*.[157]; do
		mandoc -Ttree "$f" | awk -v p="${f##*/}" '
		    /^ *S[hs] \(head\)/ {
			getline
			sub(/^ +/, ""); sub(/ \(text\) .*$/, "")
			print p "\t" $0
		    }'
	done
}

# Prints "page:line: Sx NAME" for each .Sx of page $1 that names a heading
# neither of the page itself nor of a page that an .Xr names in the same
# paragraph (from one .Pp, .Sh, .Ss, .It, .Bl, .El, .Bd or .Ed to the
# next), as in ".Pq Xr mq-spool 5 , Sx Repair".  $2: the headings file.
bad_section_refs() {
	mandoc -Ttree "$1" | awk -v page="${1##*/}" -v src="$1" -v heads="$2" '
	function text(s) { sub(/^ +/, "", s); sub(/ \(text\) .*$/, "", s); return s }
	function line(s) { sub(/^.* \(text\) \*?/, "", s); sub(/:.*$/, "", s); return s + 0 }
	BEGIN {
		FS = "\t"
		while ((getline < heads) > 0)
			has[$1, $2] = 1
		FS = " "
	}
	/^ *Sx \(elem\)/ { getline; n++; sx[n] = text($0); at[n] = line($0); next }
	/^ *Xr \(elem\)/ {
		getline; name = text($0); l = line($0); getline
		xr[l] = xr[l] " " name "." text($0)
		next
	}
	END {
		while ((getline s < src) > 0) {
			ln++
			if (s ~ /^\.(Pp|Sh|Ss|It|Bl|El|Bd|Ed)( |$)/)
				para++
			of[ln] = para
			if (ln in xr)
				pages[para] = pages[para] xr[ln]
		}
		for (i = 1; i <= n; i++) {
			ok = (page, sx[i]) in has
			m = split(pages[of[at[i]]], v, " ")
			for (j = 1; j <= m && !ok; j++)
				ok = (v[j], sx[i]) in has
			if (!ok)
				printf "%s:%d: Sx %s\n", page, at[i], sx[i]
		}
	}'
}

@test "every manual page passes mandoc -Tlint -Wwarning" {
	local f
	for f in "$MAN"/*.[157]; do
		run mandoc -Tlint -Wwarning "$f"
		assert_success
		assert_output ''
	done
}

# mandoc takes a macro that lost its line break (".Pa .why ..It Pa X")
# as text, and lint says nothing: the page shows ".It" in its prose.
@test "no macro of a list or a section is run into the line before it" {
	run grep -nE '^.+[^\\]\.(It|Sh|Ss|Bl|El|Pp)( |$)' "$MAN"/*.[157]
	assert_failure 1
	assert_output ''
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

@test "every section a page refers to is in that page, or in the page named beside it" {
	local f
	headings "$MAN" >"$TD/headings"
	for f in "$MAN"/*.[157]; do
		run bad_section_refs "$f" "$TD/headings"
		assert_success
		assert_output ''
	done
}

@test "a reference to a section of no page is found" {
	mkdir "$TD/man"
	cat >"$TD/man/a.5" <<-'EOF'
	.Dd December 1, 2026
	.Dt A 5
	.Os
	.Sh NAME
	.Nm a
	.Nd a page
	.Sh DESCRIPTION
	See
	.Sx DESCRIPTION ,
	.Sx Moved
	in
	.Xr b 5 ,
	and
	.Sx Moved .
	.Pp
	Not here:
	.Pq Xr b 5 , Sx Gone .
	.Sh SEE ALSO
	.Xr b 5
	EOF
	cat >"$TD/man/b.5" <<-'EOF'
	.Dd December 1, 2026
	.Dt B 5
	.Os
	.Sh NAME
	.Nm b
	.Nd another page
	.Sh DESCRIPTION
	.Ss Moved
	Here.
	EOF
	headings "$TD/man" >"$TD/headings"
	run bad_section_refs "$TD/man/a.5" "$TD/headings"
	assert_success
	assert_output 'a.5:17: Sx Gone'
}

@test "make install installs every page in its section" {
	local f sec
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" -o all \
	    install DESTDIR="$TD/inst" PREFIX=/usr >/dev/null
	for f in "$MAN"/*.[157]; do
		sec=${f##*.}
		cmp "$f" "$TD/inst/usr/share/man/man$sec/${f##*/}" ||
		    fail "${f##*/} is not installed in man$sec"
	done
}

@test "mq-spool(5) and mq-protocol(5) name each other" {
	run grep -c '^\.Xr mq-protocol 5' "$MAN/mq-spool.5"
	assert_success
	refute_output 0
	run grep -c '^\.Xr mq-spool 5' "$MAN/mq-protocol.5"
	assert_success
	refute_output 0
	run sed -n '/^\.Sh SEE ALSO/,$p' "$MAN/mq-spool.5"
	assert_line '.Xr mq-protocol 5 ,'
	run sed -n '/^\.Sh SEE ALSO/,$p' "$MAN/mq-protocol.5"
	assert_line '.Xr mq-spool 5 ,'
}
