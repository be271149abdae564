/*
 * sign.c: signed messages (mq-spool(5), SIGNED MESSAGES).
 *
 * A publisher with a key writes two reserved headers into each message
 * file: Mq-Signer, its public key, and Mq-Signature, an Ed25519 signature
 * of the message's signed form.  The signed form is made from the file as
 * it is: the line "mq-signed 1"; every line of the header block, byte for
 * byte and in file order, but Partition and Seq (where the spool put the
 * message, which is not the publisher's to say) and the two signature
 * lines; then a line with the body's BLAKE2b-256.  A reader needs to know
 * no header's meaning to check it, and a change to any other line or to
 * the body breaks it.  Content-Hash (XXH3) proves a file whole, not
 * authentic (anyone can compute it for a body of their own), which is why
 * the body is covered by a cryptographic hash of its own.
 *
 * A consumer checks before it delivers, once per delivery: a message that
 * carries a signature is delivered only if the signature verifies and the
 * message names the topic it is in; on a topic with signers only if it
 * carries one, by one of them.  Anything else never reaches a handler.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

#include "internal.h"

#define SIGNED_FORM "mq-signed 1\n"
#define BODY_LINE "Body: blake2b-256:"
#define SIG_PREFIX "ed25519:"

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

/* Lines end with '\n', or with the NUL mq_msg_parse put in its place. */
static int
form_make(const char *hdr, size_t hlen, const void *body, size_t blen,
    struct signed_form *f)
{
	size_t cap = sizeof SIGNED_FORM + hlen + sizeof BODY_LINE + 66;
	memset(f, 0, sizeof *f);
	if (!(f->buf = malloc(cap)))
		return mq_err_sys("malloc");
	memcpy(f->buf, SIGNED_FORM, sizeof SIGNED_FORM - 1);
	size_t o = sizeof SIGNED_FORM - 1, vlen;
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
		} else if (!value_of(p, len, "Partition", &vlen) &&
		    !value_of(p, len, "Seq", &vlen)) {
			memcpy(f->buf + o, p, len);
			o += len;
			f->buf[o++] = '\n';
		}
		p = e + 1;
	}
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

int
mq_sign_lines(const struct mq_identity *key, const char *hdr, size_t hlen,
    const void *body, size_t blen, char out[MQ_SIGN_LINES_MAX], size_t *olen)
{
	struct signed_form f;
	unsigned char sig[crypto_sign_BYTES];
	char pk[MQ_PUBKEY_HEX + 1], sighex[2 * sizeof sig + 1];
	if (form_make(hdr, hlen, body, blen, &f) < 0)
		return -1;
	crypto_sign_detached(sig, NULL, (const unsigned char *)f.buf, f.len,
	    key->sk);
	free(f.buf);
	mq_pubkey_hex(key->pk, pk);
	sodium_bin2hex(sighex, sizeof sighex, sig, sizeof sig);
	*olen = (size_t)snprintf(out, MQ_SIGN_LINES_MAX, "Mq-Signer: %s\n"
	    "Mq-Signature: " SIG_PREFIX "%s\n", pk, sighex);
	return 0;
}

/* Whether the signature lines of f are one of each, well formed, and the
 * signature one of the key they name over f: 0, or -1 saying why. */
static int
form_check(const struct signed_form *f, unsigned char pk[MQ_PUBKEY_BYTES])
{
	unsigned char sig[crypto_sign_BYTES];
	size_t pl = sizeof SIG_PREFIX - 1, got;
	const char *end;
	if (!f->signer || !f->sig || f->lines != 2)
		return mq_err(EX_DATAERR, "Mq-Signer and Mq-Signature must be "
		    "there once each");
	if (f->signer_len != MQ_PUBKEY_HEX || sodium_hex2bin(pk,
	    MQ_PUBKEY_BYTES, f->signer, f->signer_len, NULL, &got, &end) < 0 ||
	    got != MQ_PUBKEY_BYTES)
		return mq_err(EX_DATAERR, "bad Mq-Signer");
	if (f->sig_len != pl + 2 * sizeof sig || strncmp(f->sig, SIG_PREFIX, pl) ||
	    sodium_hex2bin(sig, sizeof sig, f->sig + pl, f->sig_len - pl, NULL,
	    &got, &end) < 0 || got != sizeof sig)
		return mq_err(EX_DATAERR, "bad Mq-Signature");
	if (crypto_sign_verify_detached(sig, (const unsigned char *)f->buf,
	    f->len, pk) < 0)
		return mq_err(EX_DATAERR, "the signature of %.16s... does not match "
		    "the message", f->signer);
	return 0;
}

/* Why a message may not be delivered, as an error: 0 when it may. */
static int
admit(const struct mq_topic *t, const struct mq_signers *set,
    const struct signed_form *f, const struct mq_msg *m)
{
	unsigned char pk[MQ_PUBKEY_BYTES];
	if (f->lines == 0)
		return set->n == 0 ? 0 : mq_err(EX_DATAERR, "not signed, and "
		    "topic %s takes only signed messages", t->name);
	if (form_check(f, pk) < 0)
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
	if (mq_signers_now(t, &set) < 0 ||
	    form_make(hdr, hlen, m->body, m->len, &f) < 0)
		return -1;
	int ok = admit(t, set, &f, m) == 0;
	/* In the parsed file a NUL ends the line: the value is a string. */
	if (ok && f.lines > 0)
		m->signer = f.signer;
	free(f.buf);
	return ok;
}
