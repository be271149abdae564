#!/usr/bin/env bats
# Signed messages: publisher keys, topics that take only messages signed by
# their signers, and consumers that dead-letter (reason "signature") what
# is not signed as it must be, never delivering it.  See mq-spool(5),
# SIGNED MESSAGES.

load helper
load replicate_helper

# keys: publisher keys alice and bob in $TD.
keys() {
	mq-pub --keygen "$TD/alice" >/dev/null
	mq-pub --keygen "$TD/bob" >/dev/null
}

# signed_topic TOPIC GROUP KEY...: a topic whose signers are the public
# keys of the key files KEY..., and a group on it.
signed_topic() {
	local t=$1 g=$2 k
	shift 2
	for k in "$@"; do
		echo "$(mq-pub --pubkey "$k") ${k##*/}"
	done >"$TD/signers"
	run -0 mq-topic create --signers "$TD/signers" "$t"
	mkgroup "$t" "$g"
}

# logname SEQ ID: the name of a message in log/ and in the queues.
logname() {
	printf '%020d.%s' "$1" "$2"
}

# rewrite FILE PYTHON: runs PYTHON with d the stored bytes of a message
# (FILE from file_of or log_file) and stores d in their place, in either
# format (rewrite_stored).
rewrite() {
	rewrite_stored "$@"
}

# content_hash BODY: the Content-Hash line mq writes for BODY (published
# to a scratch topic: anyone can compute it).
content_hash() {
	local id
	id=$(mq-pub scratch "$1")
	echo "Content-Hash: $(header_of "$(file_of scratch "$id")" Content-Hash)"
}

# assert_signature_letter TOPIC ID DETAIL: message ID is a dead letter
# with reason "signature" whose detail has DETAIL.
assert_signature_letter() {
	run -0 mq-dlq list --json "$1"
	local d
	d=$(jq -c --arg id "$2" '.[] | select(.id == $id)' <<<"$output")
	[[ -n $d ]] || fail "$2 is not a dead letter: $output"
	assert_equal "$(jq -r .reason <<<"$d")" signature
	[[ $(jq -r .detail <<<"$d") == *"$3"* ]] || fail "detail: $d"
}

# assert_dead_signature TOPIC GROUP ID DETAIL: the consumer delivers
# nothing, and message ID is a dead letter with reason "signature" whose
# detail has DETAIL.
assert_dead_signature() {
	run --separate-stderr mq-sub -t 0 -g "$2" "$1"
	assert_equal "$status" 1
	assert_output ''
	group_empty "$1" "$2"
	assert_signature_letter "$1" "$3" "$4"
}

@test "--keygen makes a key file of mode 0600, --pubkey prints its public key; a key is never replaced" {
	run --separate-stderr mq-pub --keygen "$TD/k"
	assert_success
	[[ $output =~ ^[0-9a-f]{64}$ ]] || fail "not a key: $output"
	local pub=$output
	assert_equal "$(stat -c %a "$TD/k")" 600
	assert_equal "$(head -1 "$TD/k")" "mq-publisher-key 1"
	run -0 mq-pub --pubkey "$TD/k"
	assert_output "$pub"
	local before; before=$(sha256sum "$TD/k")
	run --separate-stderr mq-pub --keygen "$TD/k"
	assert_equal "$status" 73
	assert_one_line_error mq-pub
	assert_equal "$(sha256sum "$TD/k")" "$before"
	# Another key each time.
	run -0 mq-pub --keygen "$TD/k2"
	[[ $output != "$pub" ]] || fail "the same key twice"
	# A replication key is no publisher key, nor is anything else.
	run -0 mq-replicate keygen
	run --separate-stderr mq-pub --pubkey "$MQ_SPOOL/replicate/key"
	assert_equal "$status" 65
	assert_one_line_error mq-pub
	run --separate-stderr mq-pub --pubkey "$TD/none"
	assert_equal "$status" 66
	assert_one_line_error mq-pub
	# No stray temporary file.
	assert_equal "$(ls "$TD" | grep -c tmp)" 0
}

@test "a signed topic delivers its signers' messages, with the signer in -F %P and --json" {
	keys
	signed_topic t g "$TD/alice" "$TD/bob"
	local a b id1 id2
	a=$(mq-pub --pubkey "$TD/alice")
	b=$(mq-pub --pubkey "$TD/bob")
	id1=$(mq-pub --sign "$TD/alice" -k K -H 'X-A: 1' t one)
	id2=$(MQ_SIGN_KEY=$TD/bob mq-pub t two)
	local f
	f=$(log_file t "$(logname 0 "$id1")")
	assert_equal "$(header_of "$f" Mq-Signer)" "$a"
	[[ $(header_of "$f" Mq-Signature) =~ ^ed25519:[0-9a-f]{128}$ ]] ||
	    fail "no signature in $f"
	run -0 mq-sub -n 1 -g g -F '%i %P %s\n' t
	assert_output "$id1 $a one"
	run -0 mq-sub -n 1 -g g --json t
	assert_equal "$(jq -r .signer <<<"$output")" "$b"
	assert_equal "$(jq -r .id <<<"$output")" "$id2"
	group_empty t g
	# A topic without signers: signer null and %P empty when unsigned; a
	# signed message there still shows its (verified) signer.
	mkgroup u g
	mq-pub -q u plain
	mq-pub -q --sign "$TD/alice" u signed
	run -0 mq-sub -n 2 -g g --json u
	assert_equal "$(jq -sc '[.[] | .signer]' <<<"$output")" "[null,\"$a\"]"
	mq-pub -q u plain
	run -0 mq-sub -n 1 -g g -F '[%P]\n' u
	assert_output '[]'
}

@test "on a signed topic a publisher without a key, or with another key, is refused with 77 and writes nothing" {
	keys
	mq-pub --keygen "$TD/eve" >/dev/null
	signed_topic t g "$TD/alice"
	local before; before=$(spool_snapshot)
	run --separate-stderr mq-pub t hello
	assert_equal "$status" 77
	assert_one_line_error mq-pub
	[[ $stderr == *"takes only signed messages"* ]] || fail "$stderr"
	run --separate-stderr mq-pub --sign "$TD/eve" t hello
	assert_equal "$status" 77
	assert_one_line_error mq-pub
	[[ $stderr == *"is not one of its signers"* ]] || fail "$stderr"
	# From standard input too.
	run --separate-stderr bash -c "seq 3 | MQ_SIGN_KEY=$TD/eve mq-pub -l t"
	assert_equal "$status" 77
	# A key file that is no key: 65.
	echo junk >"$TD/junk"
	run --separate-stderr mq-pub --sign "$TD/junk" t hello
	assert_equal "$status" 65
	assert_one_line_error mq-pub
	assert_equal "$(spool_snapshot)" "$before"
	run -0 mq-pub -q --sign "$TD/alice" t hello
	assert_equal "$(count_new t g)" 1
}

@test "a running consumer checks each batch against the signers as they are when it claims it: one added is trusted, one removed is not" {
	keys
	signed_topic t g "$TD/alice"
	spawn "$TD/sub" mq-sub -f -g g -F '%s\n' t
	local pid=$SPAWNED id
	mq-pub -q --sign "$TD/alice" t one
	wait_for grep -qx one "$TD/sub"
	# bob becomes a signer while it runs: his message is delivered.
	{
		echo "$(mq-pub --pubkey "$TD/alice") alice"
		echo "$(mq-pub --pubkey "$TD/bob") bob"
	} >"$TD/both"
	run -0 mq-topic alter --signers "$TD/both" t
	mq-pub -q --sign "$TD/bob" t two
	wait_for grep -qx two "$TD/sub"
	# alice's message is published while she is a signer, and claimed
	# once she is not: it is dead-lettered, never delivered.
	kill -STOP "$pid"
	id=$(mq-pub --sign "$TD/alice" t three)
	echo "$(mq-pub --pubkey "$TD/bob") bob" >"$TD/bob-only"
	run -0 mq-topic alter --signers "$TD/bob-only" t
	kill -CONT "$pid"
	mq-pub -q --sign "$TD/bob" t four
	wait_for grep -qx four "$TD/sub"
	run -0 grep -c . "$TD/sub"
	assert_output 3
	assert_signature_letter t "$id" "not one of"
}

@test "a message forged into the spool by hand is dead-lettered with reason signature, never delivered" {
	keys
	signed_topic t g "$TD/alice"
	local real id=0123456789abcdef0123456789abcdef hash
	# The forger takes over a committed sequence number (0): the real
	# message's names go, a file of the forger's comes in their place,
	# written as mq-spool(5) says, whole, with a right Content-Hash.
	real=$(mq-pub --sign "$TD/alice" t real)
	hash=$(content_hash forged)
	printf 'Message-Id: %s\nTopic: t\nPartition: 0\nSeq: 0\nPublished: 2026-01-01T00:00:00.000000Z\nContent-Length: 6\n%s\n\nforged' \
	    "$id" "$hash" >"$TD/forged"
	replace_stored t "$(logname 0 "$real")" "$TD/forged"
	# A copy of the spool whose topic has no signers delivers it: only
	# the signers make the difference.
	mkdir "$TD/copy" && cp -a "$MQ_SPOOL/." "$TD/copy"
	run -0 mq-topic -s "$TD/copy" alter --no-signers t
	run -0 mq-sub -s "$TD/copy" -n 1 -g g -F '%i %s\n' t
	assert_output "$id forged"
	assert_dead_signature t g "$id" "not signed"
}

@test "a changed body, a swapped body, a changed id, header or key: dead-lettered with reason signature" {
	keys
	signed_topic t g "$TD/alice"
	local y case id n f h nid
	y=$(mq-pub --sign "$TD/alice" t 'pay 99 to eve')
	mq-sub -n 1 -g g t >/dev/null
	local fy
	fy=$(log_file t "$(logname 0 "$y")")
	for case in none body swap id header key; do
		n=$(head_field t committed)
		id=$(mq-pub --sign "$TD/alice" -k K -H 'X-Who: alice' t 'pay 10 to bob')
		f=$(log_file t "$(logname "$n" "$id")")
		case $case in
		none)	# Untouched, it is delivered: the checks can fail.
			run -0 mq-sub -n 1 -g g -F '%i %s\n' t
			assert_output "$id pay 10 to bob"
			continue ;;
		body)	# Content-Hash made right for the new body: only the
			# signature can tell.
			h=$(content_hash 'pay 90 to bob')
			rewrite "$f" "import re
d = d.replace(b'pay 10', b'pay 90')
d = re.sub(rb'(?m)^Content-Hash: .*$', b'$h', d)" ;;
		swap)	# y's body, Content-Length and Content-Hash under this
			# message's other headers and signature.
			rewrite "$f" "import re
yh, yb = open('$fy', 'rb').read().split(b'\n\n', 1)
h, b = d.split(b'\n\n', 1)
for n in (b'Content-Length', b'Content-Hash'):
    pat = rb'(?m)^' + n + rb': .*$'
    h = re.sub(pat, re.search(pat, yh).group(0), h)
d = h + b'\n\n' + yb" ;;
		id)	# Another id, in the header and in its names.
			nid=${id:0:31}f
			[[ $nid != "$id" ]] || nid=${id:0:31}e
			rewrite "$f" "d = d.replace(b'$id', b'$nid')"
			rekey_stored t "$(logname "$n" "$id")" "$(logname "$n" "$nid")"
			id=$nid ;;
		header)	rewrite "$f" "d = d.replace(b'X-Who: alice', b'X-Who: admin')" ;;
		key)	rewrite "$f" "d = d.replace(b'Key: K', b'Key: L')" ;;
		esac
		assert_dead_signature t g "$id" "does not match"
	done
	run -0 mq-dlq count t
	assert_output 5
}

# chunk TOPIC KEY N PREFIX: publishes N messages PREFIX1..PREFIXN as one
# batch (one chunk) signed with KEY; prints their ids.
chunk() {
	local i
	for i in $(seq "$3"); do echo "$4$i"; done >"$TD/lines"
	mq-pub -l --sign "$2" "$1" <"$TD/lines"
}

# file_of TOPIC ID: a file with the stored bytes of message ID (partition
# 0): its log/ file in format 1 (log_files).
file_of() {
	local f
	f=$(log_files "$1" | grep -F ".$2")
	[[ -f $f ]] || fail "no message $2 in $1"
	echo "$f"
}

# tree_sig FILE: the chunk signature (hex) in FILE's Mq-Signature.
tree_sig() {
	header_of "$1" Mq-Signature | sed -E 's/^ed25519-tree:([0-9a-f]{128}) .*/\1/'
}

# assert_dead_among TOPIC GROUP ID DETAIL N: a consumer delivers the N
# other pending messages and not ID, which is a dead letter with reason
# "signature" whose detail has DETAIL.
assert_dead_among() {
	run --separate-stderr mq-sub -t 0 -g "$2" -F '%i\n' "$1"
	[[ $output != *"$3"* ]] || fail "$3 was delivered"
	assert_equal "$(grep -c . <<<"$output")" "$5"
	group_empty "$1" "$2"
	assert_signature_letter "$1" "$3" "$4"
}

@test "a batch is signed once, over a hash tree: each message carries the chunk's signature, its index and path, and each verifies" {
	keys
	signed_topic t g "$TD/alice"
	local a ids id i=0 f v sig=
	a=$(mq-pub --pubkey "$TD/alice")
	# 40 leaves: levels of 40, 20, 10, 5, 3, 2, so some hashes are
	# promoted, and paths are of 4 to 6 hashes.
	ids=$(chunk t "$TD/alice" 40 m)
	for id in $ids; do
		f=$(file_of t "$id")
		v=$(header_of "$f" Mq-Signature)
		[[ $v =~ ^ed25519-tree:([0-9a-f]{128})\ $i/40\ [0-9a-f]{64}(,[0-9a-f]{64}){3,5}$ ]] ||
		    fail "message $i: $v"
		[[ -z $sig || ${BASH_REMATCH[1]} == "$sig" ]] || fail "two signatures"
		sig=${BASH_REMATCH[1]}
		assert_equal "$(header_of "$f" Mq-Signer)" "$a"
		i=$((i + 1))
	done
	assert_equal "$i" 40
	# A message published alone keeps the plain form.
	id=$(mq-pub --sign "$TD/alice" t alone)
	[[ $(header_of "$(file_of t "$id")" Mq-Signature) =~ ^ed25519:[0-9a-f]{128}$ ]] ||
	    fail "not the plain form"
	run -0 mq-sub -t 0 -g g -F '%P %s\n' t
	assert_output "$(for i in $(seq 40); do echo "$a m$i"; done; echo "$a alone")"
	run -0 mq-dlq count t
	assert_output 0
}

@test "an atomic batch of more than 4096 is signed in trees of 4096 in turn; a message left over is signed plain" {
	keys
	signed_topic t g "$TD/alice"
	local ids first last
	seq 4097 >"$TD/lines"
	ids=$(mq-pub -l --atomic --sign "$TD/alice" t <"$TD/lines")
	first=$(head -1 <<<"$ids")
	last=$(tail -1 <<<"$ids")
	[[ $(header_of "$(file_of t "$first")" Mq-Signature) =~ ^ed25519-tree:[0-9a-f]{128}\ 0/4096\  ]] ||
	    fail "the first is not of a tree of 4096"
	[[ $(header_of "$(file_of t "$last")" Mq-Signature) =~ ^ed25519:[0-9a-f]{128}$ ]] ||
	    fail "the last is not signed plain"
	run -0 mq-sub -t 0 -g g -F '%s\n' t
	assert_equal "$(grep -c . <<<"$output")" 4097
	assert_equal "$(tail -1 <<<"$output")" 4097
	run -0 mq-dlq count t
	assert_output 0
}

@test "a message of a signed chunk with its path, index or signature changed, moved into another chunk, or forged under a real header: dead-lettered" {
	keys
	signed_topic t g "$TD/alice"
	local case x y f nf xs ys sl hash fid=00000000000000000000000000000001
	for case in none path index othersig moved forged; do
		# Two chunks of 8 (every path 3 hashes), the first delivered;
		# the target is the fourth of the second, so the consumer has
		# verified that chunk's signature (and keeps it) when it gets
		# there.
		x=($(chunk t "$TD/alice" 8 x))
		y=($(chunk t "$TD/alice" 8 y))
		run -0 mq-sub -n 8 -g g t
		f=$(file_of t "${y[3]}")
		cp "$f" "$TD/before"
		xs=$(tree_sig "$(file_of t "${x[0]}")")
		ys=$(tree_sig "$f")
		[[ $xs =~ ^[0-9a-f]{128}$ && $xs != "$ys" ]] ||
		    fail "signatures: $xs $ys"
		local target=${y[3]}
		case $case in
		none)	# Untouched, all of it is delivered: the checks can fail.
			run -0 mq-sub -t 0 -g g -F '%s\n' t
			assert_output "$(printf 'y%s\n' 1 2 3 4 5 6 7 8)"
			continue ;;
		path)	# One digit of its first sibling hash.
			rewrite "$f" "import re
d = re.sub(rb'( 3/8 [0-9a-f]{10})([0-9a-f])', lambda m: m.group(1) + (b'0' if m.group(2) != b'0' else b'1'), d)" ;;
		index)	# Another leaf's place, with a path of the same length.
			rewrite "$f" "d = d.replace(b' 3/8 ', b' 2/8 ')" ;;
		othersig)	# The other chunk's signature.
			rewrite "$f" "d = d.replace(b'$ys', b'$xs')" ;;
		moved)	# x's fourth message, its index and path kept, put in
			# place of y's fourth under y's signature: its path
			# leads to x's root, not to the one just verified.
			target=${x[3]}
			nf=$TD/moved
			cp "$(file_of t "$target")" "$nf"
			"$PY" -c "import sys; p = sys.argv[1]; d = open(p, 'rb').read(); open(p, 'wb').write(d.replace(b'$xs', b'$ys'))" "$nf"
			replace_stored t "$(basename "$f")" "$nf" ;;
		forged)	# A body of the forger's with y's fourth message's
			# signature lines, in its place.
			target=$fid
			sl=$(basename "$f")
			sl=${sl%%.*}
			hash=$(content_hash forged)
			printf 'Message-Id: %s\nTopic: t\nPartition: 0\nSeq: %d\nPublished: 2026-01-01T00:00:00.000000Z\nContent-Length: 6\n%s\nMq-Signer: %s\nMq-Signature: %s\n\nforged' \
			    "$fid" "$((10#$sl))" "$hash" "$(header_of "$f" Mq-Signer)" \
			    "$(header_of "$f" Mq-Signature)" >"$TD/forged"
			replace_stored t "$(basename "$f")" "$TD/forged" ;;
		esac
		[[ $case == moved || $case == forged ]] ||
		    ! cmp -s "$f" "$TD/before" || fail "$case: nothing changed"
		assert_dead_among t g "$target" "does not match" 7
	done
	run -0 mq-dlq count t
	assert_output 5
}

@test "a tree signature that is not exactly of its form is a bad signature, never a crash" {
	keys
	signed_topic t g "$TD/alice"
	local case f ids n=0
	for case in upper index-at-n index-leading-zero n-too-big n-of-one \
	    sibling-more sibling-less trailing-comma space-after no-path \
	    short-sig; do
		ids=($(chunk t "$TD/alice" 3 m))
		# Message 0 of 3: a path of 2 hashes.
		f=$(file_of t "${ids[0]}")
		cp "$f" "$TD/before"
		case $case in
		upper)	rewrite "$f" "import re
d = re.sub(rb'( 0/3 )([0-9a-f]{64})', lambda m: m.group(1) + m.group(2).upper(), d)" ;;
		index-at-n)	rewrite "$f" "d = d.replace(b' 0/3 ', b' 3/3 ')" ;;
		index-leading-zero)	rewrite "$f" "d = d.replace(b' 0/3 ', b' 00/3 ')" ;;
		n-too-big)	rewrite "$f" "d = d.replace(b' 0/3 ', b' 0/4097 ')" ;;
		n-of-one)	rewrite "$f" "import re
d = re.sub(rb' 0/3 [0-9a-f,]*', b' 0/1 ', d)" ;;
		sibling-more)	rewrite "$f" "import re
d = re.sub(rb'( 0/3 [0-9a-f,]*)', lambda m: m.group(1) + b',' + b'0' * 64, d)" ;;
		sibling-less)	rewrite "$f" "import re
d = re.sub(rb'( 0/3 [0-9a-f]{64}),[0-9a-f]{64}', lambda m: m.group(1), d)" ;;
		trailing-comma)	rewrite "$f" "import re
d = re.sub(rb'( 0/3 [0-9a-f,]*)', lambda m: m.group(1) + b',', d)" ;;
		space-after)	rewrite "$f" "import re
d = re.sub(rb'( 0/3 [0-9a-f,]*)', lambda m: m.group(1) + b' ', d)" ;;
		no-path)	rewrite "$f" "import re
d = re.sub(rb' 0/3 [0-9a-f,]*', b' 0/3', d)" ;;
		short-sig)	rewrite "$f" "import re
d = re.sub(rb'ed25519-tree:[0-9a-f]', b'ed25519-tree:', d)" ;;
		esac
		! cmp -s "$f" "$TD/before" || fail "$case: nothing changed"
		assert_dead_among t g "${ids[0]}" "bad Mq-Signature" 2
		n=$((n + 1))
	done
	run -0 mq-dlq count t
	assert_output "$n"
}

@test "a signed message copied into another topic is dead-lettered" {
	keys
	signed_topic t g "$TD/alice"
	signed_topic s g "$TD/alice"
	local sid tid
	sid=$(mq-pub --sign "$TD/alice" s 'for s')
	# It takes the place of t's committed message 0, under its own id.
	tid=$(mq-pub --sign "$TD/alice" t 'for t')
	replace_stored t "$(logname 0 "$tid")" "$(log_file s "$(logname 0 "$sid")")"
	assert_dead_signature t g "$sid" "signed for topic s"
	run -0 mq-sub -n 1 -g g -F '%s\n' s
	assert_output 'for s'
}

@test "alter --signers changes who may publish, --no-signers lifts it; bad lists change nothing" {
	keys
	signed_topic t g "$TD/alice"
	run --separate-stderr mq-pub -q --sign "$TD/bob" t early
	assert_equal "$status" 77
	mq-pub --pubkey "$TD/bob" >"$TD/bobs"
	# Pending when the signers change: alice's message is signed by a
	# key that is no longer one of them.
	local old
	old=$(mq-pub --sign "$TD/alice" t from-alice)
	run -0 mq-topic alter --signers "$TD/bobs" t
	run --separate-stderr mq-pub --sign "$TD/alice" t again
	assert_equal "$status" 77
	assert_dead_signature t g "$old" "is not one of topic t's"
	run -0 mq-pub -q --sign "$TD/bob" t from-bob
	run -0 mq-topic info --json t
	assert_equal "$(jq .signers <<<"$output")" 1
	local before; before=$(spool_snapshot)
	printf '# comment\nnot-a-key\n' >"$TD/bad"
	run --separate-stderr mq-topic alter --signers "$TD/bad" t
	assert_equal "$status" 65
	assert_one_line_error mq-topic
	: >"$TD/empty"
	run --separate-stderr mq-topic alter --signers "$TD/empty" t
	assert_equal "$status" 65
	assert_one_line_error mq-topic
	run --separate-stderr mq-topic create --signers "$TD/bad" t2
	assert_equal "$status" 65
	run --separate-stderr mq-topic alter --partitions 2 --signers "$TD/bobs" t
	assert_equal "$status" 64
	run --separate-stderr mq-topic create --no-signers t3
	assert_equal "$status" 64
	assert_equal "$(spool_snapshot)" "$before"
	run -0 mq-topic alter --no-signers t
	run -0 mq-pub -q t unsigned
	run -0 mq-sub -n 2 -g g -F '%s\n' t
	assert_output $'from-bob\nunsigned'
}

@test "a consumer running across an alter checks against the signers of now" {
	keys
	signed_topic t g "$TD/alice"
	mq-pub -q --sign "$TD/alice" t one
	mq-pub --pubkey "$TD/bob" >"$TD/bobs"
	# One consumer for both: it caches the set, and sees the new
	# topic.conf.  Its handler, for the first, publishes the second and
	# changes the signers.
	run mq-sub -g g -t 1 --exec "
		cat >>'$TD/handled'
		mq-pub -q --sign '$TD/alice' t two
		mq-topic alter --signers '$TD/bobs' t" t
	assert_equal "$(cat "$TD/handled")" one
	run -0 mq-dlq list --json t
	assert_equal "$(jq -r '.[0].reason' <<<"$output")" signature
	assert_equal "$(jq length <<<"$output")" 1
	group_empty t g
}

@test "a signed message replicated to another spool still verifies there, and the signers come along" {
	keys
	pair
	signed_topic t g "$TD/alice"
	local id a
	a=$(mq-pub --pubkey "$TD/alice")
	id=$(mq-pub --sign "$TD/alice" t 'across')
	run -0 push_ab
	same_spools
	run -0 env MQ_SPOOL="$B" mq-sub -n 1 -g g -F '%i %P %s\n' t
	assert_output "$id $a across"
	grep -q "^signer=$a alice$" "$B/topics/t/topic.conf" ||
	    fail "signers not replicated: $(cat "$B/topics/t/topic.conf")"
	run --separate-stderr env MQ_SPOOL="$B" mq-pub t unsigned
	assert_equal "$status" 77
	# A change of signers comes along too.
	run -0 mq-topic alter --no-signers t
	run -0 push_ab
	run -0 env MQ_SPOOL="$B" mq-pub -q t unsigned
}

@test "user headers cannot set the signature headers" {
	run --separate-stderr mq-pub -H 'Mq-Signer: x' t a
	assert_equal "$status" 65
	assert_one_line_error mq-pub
	run --separate-stderr mq-pub -H 'mq-signature: ed25519:00' t a
	assert_equal "$status" 65
	assert_one_line_error mq-pub
}

@test "completions offer the signing options" {
	run -0 completions _mq_pub mq-pub --si
	assert_output --sign
	run -0 completions _mq_pub mq-pub --ke
	assert_output --keygen
	run -0 completions _mq_topic mq-topic alter --no
	assert_output --no-signers
	run -0 completions _mq_topic mq-topic create --sig
	assert_output --signers
}
