/*
 * sign.c: signed messages (mq-spool(5), SIGNED MESSAGES).
 *
 * A publisher with a key writes two reserved headers into each message
 * file: Mq-Signer, its public key, and Mq-Signature, an Ed25519 signature
 * that covers the message's signed form.  The signed form is made from the
 * file as it is: the line "mq-signed 1"; every line of the header block,
 * byte for byte and in file order, but Partition and Seq (where the spool
 * put the message, which is not the publisher's to say) and the two
 * signature lines; then a line with the body's BLAKE2b-256.  A reader
 * needs to know no header's meaning to check it, and a change to any
 * other line or to the body breaks it.  Content-Hash (XXH3) proves a file
 * whole, not authentic (anyone can compute it for a body of their own),
 * which is why the body is covered by a cryptographic hash of its own.
 *
 * The signature comes in two forms.  The plain one ("ed25519:SIG") signs
 * the signed form itself: a chunk of one message is signed so, and so was
 * every message before chunk signatures.  A chunk of more is signed once:
 * its messages' signed forms are the leaves of a hash tree (signtree.c),
 * the publisher signs the tree's root and leaf count, and each message
 * carries that signature, its index, the count and its path to the root
 * ("ed25519-tree:SIG I/N H,H,...").  Both are the signer's word for the
 * same bytes; the tree only shares one Ed25519 operation among up to
 * MQ_TREE_MAX messages.
 *
 * A consumer checks before it delivers, once per delivery: a message that
 * carries a signature is delivered only if the signature verifies and the
 * message names the topic it is in; on a topic with signers only if it
 * carries one, by one of them.  Anything else never reaches a handler.  A
 * tree signature is verified over the root that the message's own leaf
 * and path lead to; the last ROOTS_KEPT that verified are kept per topic,
 * so the next message of the chunk costs its leaf and path hashes only.
 * Another message cannot use a kept root: its leaf would have to hash into
 * that root through a path, a BLAKE2b second preimage.
 */
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

#include "queue.h"

#define SIGNED_FORM "mq-signed 1\n"
#define BODY_LINE "Body: blake2b-256:"
#define SIG_PREFIX "ed25519:"
#define TREE_PREFIX "ed25519-tree:"
#define TREE_FORM "mq-tree 1\n"
#define TREE_MSG_MAX 160
/* The tree form's value at its longest: the prefix, the signature, the
 * index and count, MQ_TREE_DEPTH hashes and their commas. */
#define SIG_VALUE_MAX (sizeof TREE_PREFIX + 128 + 12 + \
	MQ_TREE_DEPTH * (2 * MQ_HASH_BYTES + 1))
#define ROOTS_KEPT 16

_Static_assert(MQ_TREE_MAX <= 1 << MQ_TREE_DEPTH, "a path fits the tree");
_Static_assert(sizeof "Mq-Signer: \nMq-Signature: \n" + MQ_PUBKEY_HEX +
    SIG_VALUE_MAX <= MQ_SIGN_LINES_MAX, "the lines fit");

/* The signed form of a header block and body, and where the block has
 * its signature lines. */
struct signed_form {
	char *buf;
	size_t len;
	const char *signer, *sig;       /* their values, or NULL */
	size_t signer_len, sig_len;
	unsigned lines;                 /* signature lines seen */
};

/* The value of header line (len bytes) if it is named name, else NULL. */
static const char *
value_of(const char *line, size_t len, const char *name, size_t *vlen)
{
	size_t n = strlen(name);
	if (len <= n || line[n] != ':' || strncasecmp(line, name, n))
		return NULL;
	const char *v = line + n + 1, *end = line + len;
	while (v < end && *v == ' ')
		v++;
	*vlen = (size_t)(end - v);
	return v;
}

/* The header lines of the signed form, copied to out when out is not NULL
 * (hlen bytes at most), and the signature lines found, into f: their
 * count. Lines end with '\n', or with the NUL mq_msg_parse put in its
 * place. */
static size_t
form_lines(const char *hdr, size_t hlen, char *out, struct signed_form *f)
{
	size_t o = 0, vlen;
	for (const char *p = hdr, *end = hdr + hlen; p < end;) {
		const char *e = p, *v;
		while (e < end && *e != '\n' && *e)
			e++;
		size_t len = (size_t)(e - p);
		if ((v = value_of(p, len, "Mq-Signer", &vlen))) {
			f->signer = v;
			f->signer_len = vlen;
			f->lines++;
		} else if ((v = value_of(p, len, "Mq-Signature", &vlen))) {
			f->sig = v;
			f->sig_len = vlen;
			f->lines++;
		} else if (out && !value_of(p, len, "Partition", &vlen) &&
		    !value_of(p, len, "Seq", &vlen)) {
			memcpy(out + o, p, len);
			o += len;
			out[o++] = '\n';
		}
		p = e + 1;
	}
	return o;
}

static int
form_make(const char *hdr, size_t hlen, const void *body, size_t blen,
    struct signed_form *f)
{
	size_t cap = sizeof SIGNED_FORM + hlen + sizeof BODY_LINE + 66;
	memset(f, 0, sizeof *f);
	if (!(f->buf = malloc(cap)))
		return mq_err_sys("malloc");
	memcpy(f->buf, SIGNED_FORM, sizeof SIGNED_FORM - 1);
	size_t o = sizeof SIGNED_FORM - 1;
	o += form_lines(hdr, hlen, f->buf + o, f);
	unsigned char h[32];
	crypto_generichash(h, sizeof h, body, blen, NULL, 0);
	memcpy(f->buf + o, BODY_LINE, sizeof BODY_LINE - 1);
	o += sizeof BODY_LINE - 1;
	sodium_bin2hex(f->buf + o, 65, h, sizeof h);
	o += 64;
	f->buf[o++] = '\n';
	f->len = o;
	return 0;
}


/* Whether s (len bytes) is lowercase hex, 2 digits a byte: then decoded
 * into out.  Anything else (capitals, spaces, an odd digit) is not. */
static bool
hex_lower(const char *s, size_t len, unsigned char *out, size_t outlen)
{
	if (len != 2 * outlen)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	size_t got;
	return sodium_hex2bin(out, outlen, s, len, NULL, &got, NULL) == 0 &&
	    got == outlen;
}

int
mq_sign_leaf(const char *hdr, size_t hlen, const void *body, size_t blen,
    unsigned char leaf[MQ_HASH_BYTES])
{
	struct signed_form f;
	if (form_make(hdr, hlen, body, blen, &f) < 0)
		return -1;
	mq_tree_leaf(f.buf, f.len, leaf);
	free(f.buf);
	return 0;
}

/* What a chunk signature signs: its own first line, so that it is never
 * taken for the signature of a signed form ("mq-signed 1"), nor the
 * reverse; the leaf count, which fixes the tree's shape and so what each
 * index means; the root. */
static size_t
tree_message(size_t n, const unsigned char root[MQ_HASH_BYTES],
    char out[TREE_MSG_MAX])
{
	char hex[2 * MQ_HASH_BYTES + 1];
	sodium_bin2hex(hex, sizeof hex, root, MQ_HASH_BYTES);
	return (size_t)snprintf(out, TREE_MSG_MAX, TREE_FORM "leaves %zu\n"
	    "root blake2b-256:%s\n", n, hex);
}

int
mq_chunk_sign(struct mq_chunk_sig *c, const struct mq_identity *key,
    const unsigned char (*leaf)[MQ_HASH_BYTES], size_t n)
{
	char msg[TREE_MSG_MAX];
	c->n = n;
	/* A chunk of one is signed in the plain form, by its lines. */
	if (n < 2)
		return 0;
	if (mq_tree_build(&c->tree, leaf, n) < 0)
		return -1;
	size_t len = tree_message(n, c->tree.h[c->tree.root], msg);
	crypto_sign_detached(c->sig, NULL, (const unsigned char *)msg, len,
	    key->sk);
	return 0;
}

/* The plain form: an Ed25519 signature of the message's signed form. */
static int
plain_sig(const struct mq_identity *key, const char *hdr, size_t hlen,
    const void *body, size_t blen, char *out, size_t cap)
{
	struct signed_form f;
	unsigned char sig[crypto_sign_BYTES];
	if (form_make(hdr, hlen, body, blen, &f) < 0)
		return -1;
	crypto_sign_detached(sig, NULL, (const unsigned char *)f.buf, f.len,
	    key->sk);
	free(f.buf);
	memcpy(out, SIG_PREFIX, sizeof SIG_PREFIX - 1);
	sodium_bin2hex(out + sizeof SIG_PREFIX - 1, cap - sizeof SIG_PREFIX + 1,
	    sig, sizeof sig);
	return 0;
}

/* The tree form: "ed25519-tree:SIG I/N H,H,...", H the path of leaf i. */
static void
tree_sig(const struct mq_chunk_sig *c, size_t i, char *out, size_t cap)
{
	unsigned char path[MQ_TREE_DEPTH][MQ_HASH_BYTES];
	size_t len = mq_tree_path(&c->tree, i, path);
	size_t o = sizeof TREE_PREFIX - 1;
	memcpy(out, TREE_PREFIX, o);
	sodium_bin2hex(out + o, cap - o, c->sig, sizeof c->sig);
	o += 2 * sizeof c->sig;
	o += (size_t)snprintf(out + o, cap - o, " %zu/%zu ", i, c->n);
	for (size_t k = 0; k < len; k++) {
		sodium_bin2hex(out + o, cap - o, path[k], MQ_HASH_BYTES);
		o += 2 * MQ_HASH_BYTES;
		out[o++] = k + 1 < len ? ',' : 0;
	}
}

int
mq_chunk_sign_lines(const struct mq_chunk_sig *c,
    const struct mq_identity *key, size_t i, const char *hdr, size_t hlen,
    const void *body, size_t blen, char out[MQ_SIGN_LINES_MAX], size_t *olen)
{
	char pk[MQ_PUBKEY_HEX + 1], sig[SIG_VALUE_MAX];
	if (c->n < 2) {
		if (plain_sig(key, hdr, hlen, body, blen, sig, sizeof sig) < 0)
			return -1;
	} else
		tree_sig(c, i, sig, sizeof sig);
	mq_pubkey_hex(key->pk, pk);
	*olen = (size_t)snprintf(out, MQ_SIGN_LINES_MAX, "Mq-Signer: %s\n"
	    "Mq-Signature: %s\n", pk, sig);
	return 0;
}

void
mq_chunk_sig_free(struct mq_chunk_sig *c)
{
	mq_tree_free(&c->tree);
}

/* A tree-form Mq-Signature value, parsed. */
struct tree_value {
	unsigned char sig[crypto_sign_BYTES];
	size_t i, n;
	unsigned char path[MQ_TREE_DEPTH][MQ_HASH_BYTES];
};

/* Parses v (len bytes, after the prefix) strictly: the signature; an
 * index below a leaf count of 2 to MQ_TREE_MAX, in decimal without a
 * leading zero; exactly as many hashes, comma-separated, as the path of
 * that leaf has; nothing more.  The value is ended by a NUL or a newline,
 * where the decimal reads stop. */
static bool
tree_parse(const char *v, size_t len, struct tree_value *tv)
{
	const char *p = v, *end = v + len;
	uint64_t i, n;
	size_t sl = 2 * sizeof tv->sig, hl = 2 * MQ_HASH_BYTES;
	if (len < sl + 1 || !hex_lower(p, sl, tv->sig, sizeof tv->sig) ||
	    p[sl] != ' ')
		return false;
	p += sl + 1;
	if (!(p = mq_decimal(p, MQ_TREE_MAX - 1, &i)) || p >= end || *p++ != '/' ||
	    !(p = mq_decimal(p, MQ_TREE_MAX, &n)) || p >= end || *p++ != ' ' ||
	    n < 2 || i >= n)
		return false;
	tv->i = (size_t)i;
	tv->n = (size_t)n;
	size_t plen = mq_tree_path_len(tv->i, tv->n);
	for (size_t k = 0; k < plen; k++) {
		if ((size_t)(end - p) < hl || !hex_lower(p, hl, tv->path[k],
		    MQ_HASH_BYTES))
			return false;
		p += hl;
		if (k + 1 < plen && (p == end || *p++ != ','))
			return false;
	}
	return p == end;
}

/* The chunk signatures a consumer verified, per topic: the last few, so
 * that a chunk's messages, delivered in order, cost one verification. */
struct mq_roots {
	struct {
		unsigned char pk[MQ_PUBKEY_BYTES], root[MQ_HASH_BYTES];
		unsigned char sig[crypto_sign_BYTES];
		size_t n;
	} v[ROOTS_KEPT];
	unsigned used, next;
};

/* Whether key pk's signature sig of the tree (n, root) was verified.  The
 * signature is part of what is compared: a message whose own header holds
 * another signature is checked on its own, never let through by the root
 * its path leads to. */
static bool
roots_have(const struct mq_roots *r, const unsigned char *pk, size_t n,
    const unsigned char *root, const unsigned char *sig)
{
	for (unsigned k = 0; r && k < r->used; k++)
		if (r->v[k].n == n && !memcmp(r->v[k].root, root, MQ_HASH_BYTES) &&
		    !memcmp(r->v[k].pk, pk, MQ_PUBKEY_BYTES) &&
		    !memcmp(r->v[k].sig, sig, crypto_sign_BYTES))
			return true;
	return false;
}

/* Only a signature that verified comes here (oldest replaced first); a
 * cache that cannot be made is no error: the next message verifies too. */
static void
roots_keep(struct mq_topic *t, const unsigned char *pk, size_t n,
    const unsigned char *root, const unsigned char *sig)
{
	struct mq_roots *r = t->roots;
	if (!r && !(r = t->roots = calloc(1, sizeof *r)))
		return;
	unsigned k = r->next;
	r->next = (r->next + 1) % ROOTS_KEPT;
	if (r->used < ROOTS_KEPT)
		r->used++;
	memcpy(r->v[k].pk, pk, MQ_PUBKEY_BYTES);
	memcpy(r->v[k].root, root, MQ_HASH_BYTES);
	memcpy(r->v[k].sig, sig, crypto_sign_BYTES);
	r->v[k].n = n;
}

void
mq_roots_free(struct mq_roots *r)
{
	free(r);
}

static int
mismatch(const struct signed_form *f)
{
	return mq_err(EX_DATAERR, "the signature of %.16s... does not match "
	    "the message", f->signer);
}

/* The tree form: the root recomputed from the message's own leaf and the
 * path it carries, and the signature checked over it unless the very same
 * one was checked before. */
static int
tree_check(struct mq_topic *t, const struct signed_form *f,
    const unsigned char pk[MQ_PUBKEY_BYTES], const char *v, size_t len)
{
	struct tree_value tv;
	unsigned char leaf[MQ_HASH_BYTES], root[MQ_HASH_BYTES];
	char msg[TREE_MSG_MAX];
	if (!tree_parse(v, len, &tv))
		return mq_err(EX_DATAERR, "bad Mq-Signature");
	mq_tree_leaf(f->buf, f->len, leaf);
	mq_tree_root_of(leaf, tv.i, tv.n, tv.path, root);
	if (roots_have(t->roots, pk, tv.n, root, tv.sig))
		return 0;
	size_t mlen = tree_message(tv.n, root, msg);
	if (crypto_sign_verify_detached(tv.sig, (const unsigned char *)msg,
	    mlen, pk) < 0)
		return mismatch(f);
	roots_keep(t, pk, tv.n, root, tv.sig);
	return 0;
}

/* Whether the signature lines of f are one of each, well formed, and the
 * signature one of the key they name over f, in either form: 0, or -1
 * saying why. */
static int
form_check(struct mq_topic *t, const struct signed_form *f,
    unsigned char pk[MQ_PUBKEY_BYTES])
{
	unsigned char sig[crypto_sign_BYTES];
	size_t pl = sizeof SIG_PREFIX - 1, tl = sizeof TREE_PREFIX - 1;
	if (!f->signer || !f->sig || f->lines != 2)
		return mq_err(EX_DATAERR, "Mq-Signer and Mq-Signature must be "
		    "there once each");
	if (!hex_lower(f->signer, f->signer_len, pk, MQ_PUBKEY_BYTES))
		return mq_err(EX_DATAERR, "bad Mq-Signer");
	if (f->sig_len > tl && !strncmp(f->sig, TREE_PREFIX, tl))
		return tree_check(t, f, pk, f->sig + tl, f->sig_len - tl);
	if (f->sig_len < pl || strncmp(f->sig, SIG_PREFIX, pl) ||
	    !hex_lower(f->sig + pl, f->sig_len - pl, sig, sizeof sig))
		return mq_err(EX_DATAERR, "bad Mq-Signature");
	if (crypto_sign_verify_detached(sig, (const unsigned char *)f->buf,
	    f->len, pk) < 0)
		return mismatch(f);
	return 0;
}

/* Why a message may not be delivered, as an error: 0 when it may. */
static int
admit(struct mq_topic *t, const struct mq_signers *set,
    const struct signed_form *f, const struct mq_msg *m)
{
	unsigned char pk[MQ_PUBKEY_BYTES];
	if (f->lines == 0)
		return set->n == 0 ? 0 : mq_err(EX_DATAERR, "not signed, and "
		    "topic %s takes only signed messages", t->name);
	if (form_check(t, f, pk) < 0)
		return -1;
	if (!m->topic || strcmp(m->topic, t->name))
		return mq_err(EX_DATAERR, "signed for topic %s, found in %s",
		    m->topic ? m->topic : "(none)", t->name);
	if (set->n > 0 && !mq_signers_has(set, pk))
		return mq_err(EX_DATAERR, "signer %.*s is not one of topic %s's",
		    (int)f->signer_len, f->signer, t->name);
	return 0;
}

int
mq_msg_verify(struct mq_topic *t, const char *hdr, struct mq_msg *m)
{
	const struct mq_signers *set;
	struct signed_form f;
	size_t hlen = (size_t)((const char *)m->body - hdr) - 1;
	if (mq_signers_cached(t, &set) < 0)
		return -1;
	/* A message without signature lines needs no signed form (nor its
	 * body hashed): most messages, on most topics. */
	memset(&f, 0, sizeof f);
	form_lines(hdr, hlen, NULL, &f);
	if (f.lines > 0 && form_make(hdr, hlen, m->body, m->len, &f) < 0)
		return -1;
	int ok = admit(t, set, &f, m) == 0;
	/* In the parsed file a NUL ends the line: the value is a string. */
	if (ok && f.lines > 0)
		m->signer = f.signer;
	free(f.buf);
	return ok;
}
