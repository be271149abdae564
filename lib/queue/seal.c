/*
 * seal.c: sealed (encrypted) topics; mq-spool(5), SEALED BODIES.
 *
 * A topic whose directory holds a keys file (X25519 public keys, one per
 * line in hex) has every body published into it stored sealed: per chunk
 * the publisher draws a random data key and seals it with crypto_box_seal
 * to each key the file lists when the chunk takes the partition lock; per
 * message it encrypts the body with XChaCha20-Poly1305 under that key, a
 * random nonce and associated data that name the topic and the message
 * id, so a sealed body moved into another message does not open.  The
 * envelope (the sealed data keys, the nonce, the ciphertext) is the
 * stored body: Content-Length, Content-Hash and whatever signs the stored
 * bytes cover it, and the spool, its backups and replication peers hold no
 * plaintext.  An Mq-Sealed header marks the message and names the keys.
 *
 * The keys file is read under every partition's lock, so a chunk is
 * sealed to the set of one moment; sealkeys.c changes it.
 *
 * A consumer opens the envelope with its secret key; it keeps the last
 * data key it opened, so a chunk's messages cost one crypto_box_seal_open.
 * A key file is made as a publisher's key is (keys.c, mq_keyfile_create)
 * with its own magic line.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

#define SEAL_KEY_MAGIC "mq-seal-key 1"
#define KEYS_FILE "keys"
#define KEYS_FILE_MAX (MQ_SEAL_KEYS_MAX * (MQ_PUBKEY_HEX + 80) + 4096)

struct mq_seal_key {
	unsigned char pk[crypto_box_PUBLICKEYBYTES];
	unsigned char sk[crypto_box_SECRETKEYBYTES];
	unsigned char box[MQ_SEAL_BOX];         /* the last data key opened */
	unsigned char dk[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	bool have_dk;
	unsigned char ad[MQ_SEAL_AD_MAX];      /* a message's associated data */
};

/* A message's associated data: the envelope before the nonce, the topic,
 * a NUL and the message id.  ad holds the envelope's head (hlen bytes);
 * returns the length. */
static size_t
seal_ad(unsigned char ad[MQ_SEAL_AD_MAX], size_t hlen, const char *topic,
    const char *id)
{
	size_t tlen = strlen(topic) + 1;
	memcpy(ad + hlen, topic, tlen);
	memcpy(ad + hlen + tlen, id, MQ_ID_LEN);
	return hlen + tlen + MQ_ID_LEN;
}

/* Key files */

int
mq_seal_keygen(const char *path, char pub[MQ_PUBKEY_HEX + 1])
{
	return mq_keyfile_generate(path, SEAL_KEY_MAGIC, crypto_box_keypair,
	    crypto_box_SECRETKEYBYTES, pub);
}

mq_seal_key *
mq_seal_key_load(const char *path)
{
	char *buf;
	size_t len;
	if (mq_crypto_init() < 0 ||
	    mq_read_at(AT_FDCWD, path, 4096, &buf, &len) < 0)
		return NULL;
	mq_seal_key *k = sodium_malloc(sizeof *k);
	int rc = !k ? mq_err_sys("malloc") : mq_keytext_parse(buf, len,
	    SEAL_KEY_MAGIC, k->sk, sizeof k->sk) < 0 ? mq_err(EX_CONFIG,
	    "%s: not an mq key (mq-sub --keygen makes one)", path) : 0;
	sodium_memzero(buf, len);
	free(buf);
	if (rc < 0) {
		if (k)
			sodium_free(k);
		return NULL;
	}
	crypto_scalarmult_base(k->pk, k->sk);
	k->have_dk = false;
	return k;
}

void
mq_seal_key_pub(const mq_seal_key *k, char pub[MQ_PUBKEY_HEX + 1])
{
	mq_pubkey_hex(k->pk, pub);
}

void
mq_seal_key_free(mq_seal_key *k)
{
	if (k)
		sodium_free(k);         /* zeroes it */
}

/* The topic's keys file */

int
mq_seal_keys_parse(const char *topic, const char *buf, size_t len,
    unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES], size_t *n)
{
	const char *at = buf, *name;
	unsigned char k[MQ_PUBKEY_BYTES];
	size_t nlen;
	int rc;
	*n = 0;
	while ((rc = mq_keyline_next(&at, buf + len, k, &name, &nlen)) != 0) {
		if (rc < 0 || nlen)
			return mq_err(EX_DATAERR, "topic %s: keys: a line is not a "
			    "public key (64 hex digits)", topic);
		if (*n == MQ_SEAL_KEYS_MAX)
			return mq_err(EX_DATAERR, "topic %s: keys: more than %d "
			    "keys", topic, MQ_SEAL_KEYS_MAX);
		memcpy(pk[(*n)++], k, sizeof k);
	}
	return 0;
}

int
mq_seal_keys_read(const struct mq_topic *t,
    unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES], size_t *n)
{
	char *buf;
	size_t len;
	*n = 0;
	if (mq_read_at(t->fd, KEYS_FILE, KEYS_FILE_MAX, &buf, &len) < 0)
		return mq_errcode() == EX_NOINPUT && errno == ENOENT ? 0 :
		    mq_err(mq_errcode(), "topic %s: %s", t->name, mq_errmsg());
	int rc = mq_seal_keys_parse(t->name, buf, len, pk, n);
	free(buf);
	return rc;
}

int
mq_seal_keys_write(const struct mq_topic *t,
    const unsigned char pk[][MQ_PUBKEY_BYTES], size_t n)
{
	char text[MQ_SEAL_KEYS_MAX * (MQ_PUBKEY_HEX + 1)];
	for (size_t i = 0; i < n; i++) {
		mq_pubkey_hex(pk[i], text + i * (MQ_PUBKEY_HEX + 1));
		text[i * (MQ_PUBKEY_HEX + 1) + MQ_PUBKEY_HEX] = '\n';
	}
	if (mq_write_file(t->fd, KEYS_FILE, text, n * (MQ_PUBKEY_HEX + 1),
	    1, 1) < 0)
		return mq_err(mq_errcode(), "topic %s: %s", t->name, mq_errmsg());
	return mq_fsync_fd(t->fd);
}

int
mq_seal_jq_refused(const char *topic, const char *group)
{
	return mq_err(EX_CONFIG, "topic %s is sealed: group %s: a jq filter "
	    "needs the plaintext (header conditions still work)", topic, group);
}

int
mq_seal_filter_check(const struct mq_topic *t, const char *group,
    const struct mq_group_conf *c)
{
	unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES];
	size_t n;
	if (!c->filter)
		return 0;
	if (mq_seal_keys_read(t, pk, &n) < 0)
		return -1;
	return n ? mq_seal_jq_refused(t->name, group) : 0;
}

/* Publishing */

int
mq_seal_chunk(struct mq_sealer *s, const struct mq_topic *t,
    mq_filter *const *gflt, char *const *groups, size_t ng)
{
	struct stat st;
	if (mq_fstatat(t->fd, KEYS_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return mq_err_sys("topic %s: %s", t->name, KEYS_FILE);
		s->n = 0;
		return 0;
	}
	if (!s->cached || s->ino != st.st_ino ||
	    s->mtim.tv_sec != st.st_mtim.tv_sec ||
	    s->mtim.tv_nsec != st.st_mtim.tv_nsec) {
		if (mq_crypto_init() < 0)
			return -1;
		if (!s->pk && !(s->pk = malloc(MQ_SEAL_KEYS_MAX * sizeof *s->pk)))
			return mq_err_sys("malloc");
		s->cached = false;
		if (mq_seal_keys_read(t, s->pk, &s->n) < 0)
			return -1;
		s->cached = true;
		s->ino = st.st_ino;
		s->mtim = st.st_mtim;
		for (size_t i = 0; i < s->n; i++) {
			char hex[MQ_PUBKEY_HEX + 1];
			mq_pubkey_hex(s->pk[i], hex);
			memcpy(s->ids + i * 17, hex, 16);
			s->ids[i * 17 + 16] = ' ';
		}
		if (s->n)
			s->ids[s->n * 17 - 1] = 0;
	}
	for (size_t g = 0; s->n && g < ng; g++)
		if (gflt[g] && mq_filter_has_jq(gflt[g]))
			return mq_seal_jq_refused(t->name, groups[g]);
	if (!s->n)
		return 0;
	/* The envelope's head: magic, count, then a public key and its
	 * sealed data key per recipient. */
	unsigned char *h = s->ad;
	crypto_aead_xchacha20poly1305_ietf_keygen(s->dk);
	memcpy(h, MQ_SEAL_MAGIC, 4);
	h[4] = (unsigned char)(s->n >> 8);
	h[5] = (unsigned char)s->n;
	for (size_t i = 0; i < s->n; i++) {
		unsigned char *e = h + 6 + i * (MQ_PUBKEY_BYTES + MQ_SEAL_BOX);
		memcpy(e, s->pk[i], MQ_PUBKEY_BYTES);
		if (crypto_box_seal(e + MQ_PUBKEY_BYTES, s->dk, sizeof s->dk,
		    s->pk[i]) < 0)
			return mq_err(EX_DATAERR, "topic %s: keys: key %zu is not "
			    "a usable public key", t->name, i + 1);
	}
	s->hlen = 6 + s->n * (MQ_PUBKEY_BYTES + MQ_SEAL_BOX);
	s->adlen = 0;
	return 0;
}

int
mq_seal_msg(struct mq_sealer *s, const struct mq_topic *t, const char *id,
    const struct mq_pub_msg *in, struct mq_sealbuf *sb, struct mq_pub_msg *out)
{
	size_t nonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	size_t len = s->hlen + nonce + in->len +
	    crypto_aead_xchacha20poly1305_ietf_ABYTES;
	if (len > sb->cap) {
		unsigned char *b = realloc(sb->buf, len);
		if (!b)
			return mq_err_sys("malloc");
		sb->buf = b;
		sb->cap = len;
	}
	if (in->nheaders + 1 > s->hcap) {
		struct mq_header *hv = reallocarray(s->hdrs, in->nheaders + 1,
		    sizeof *hv);
		if (!hv)
			return mq_err_sys("malloc");
		s->hdrs = hv;
		s->hcap = in->nheaders + 1;
	}
	/* The topic goes in once a chunk, the id per message. */
	if (!s->adlen)
		s->adlen = seal_ad(s->ad, s->hlen, t->name, id);
	else
		memcpy(s->ad + s->adlen - MQ_ID_LEN, id, MQ_ID_LEN);
	unsigned char *buf = sb->buf;
	memcpy(buf, s->ad, s->hlen);
	randombytes_buf(buf + s->hlen, nonce);
	unsigned long long clen;
	crypto_aead_xchacha20poly1305_ietf_encrypt(buf + s->hlen + nonce,
	    &clen, in->body, in->len, s->ad, s->adlen, NULL, buf + s->hlen,
	    s->dk);
	if (in->nheaders)               /* none: headers may be NULL */
		memcpy(s->hdrs, in->headers, in->nheaders * sizeof *s->hdrs);
	s->hdrs[in->nheaders] = (struct mq_header){ .name = (char *)"Mq-Sealed",
	    .value = s->ids };
	*out = *in;
	out->body = buf;
	out->len = len;
	out->headers = s->hdrs;
	out->nheaders = in->nheaders + 1;
	return 0;
}

void
mq_sealer_free(struct mq_sealer *s)
{
	sodium_memzero(s->dk, sizeof s->dk);
	free(s->pk);
	free(s->hdrs);
}

/* Consuming */

int
mq_seal_open(mq_seal_key *k, const struct mq_topic *t, struct mq_msg *m)
{
	if (!m->sealed)
		return 0;
	if (!k)
		return mq_err(EX_NOPERM, "topic %s: message %s is sealed (to %s): "
		    "give the consumer its key (--key or MQ_SUB_KEY)", t->name,
		    m->id, m->sealed);
	unsigned char *b = (unsigned char *)m->body;
	size_t nonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	size_t n = m->len >= 6 ? (size_t)b[4] << 8 | b[5] : 0;
	size_t hlen = 6 + n * (MQ_PUBKEY_BYTES + MQ_SEAL_BOX);
	if (m->len < 6 || memcmp(b, MQ_SEAL_MAGIC, 4) || n == 0 ||
	    n > MQ_SEAL_KEYS_MAX ||
	    m->len < hlen + nonce + crypto_aead_xchacha20poly1305_ietf_ABYTES)
		return mq_err(EX_DATAERR, "topic %s: message %s: the sealed body "
		    "is damaged", t->name, m->id);
	const unsigned char *box = NULL;
	for (size_t i = 0; !box && i < n; i++) {
		const unsigned char *e = b + 6 + i * (MQ_PUBKEY_BYTES + MQ_SEAL_BOX);
		if (!sodium_memcmp(e, k->pk, MQ_PUBKEY_BYTES))
			box = e + MQ_PUBKEY_BYTES;
	}
	if (!box) {
		char pub[MQ_PUBKEY_HEX + 1];
		mq_pubkey_hex(k->pk, pub);
		return mq_err(EX_NOPERM, "topic %s: message %s is sealed to %s, "
		    "not to this consumer's key %.16s", t->name, m->id, m->sealed,
		    pub);
	}
	if (!k->have_dk || memcmp(box, k->box, MQ_SEAL_BOX)) {
		k->have_dk = false;
		if (crypto_box_seal_open(k->dk, box, MQ_SEAL_BOX, k->pk, k->sk) < 0)
			return mq_err(EX_DATAERR, "topic %s: message %s: its data "
			    "key does not open with this consumer's key (damaged)",
			    t->name, m->id);
		memcpy(k->box, box, MQ_SEAL_BOX);
		k->have_dk = true;
	}
	memcpy(k->ad, b, hlen);
	size_t adlen = seal_ad(k->ad, hlen, t->name, m->id);
	/* The plaintext replaces the envelope in the message's buffer. */
	size_t clen = m->len - hlen - nonce;
	unsigned char npub[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	memcpy(npub, b + hlen, nonce);
	memmove(b, b + hlen + nonce, clen);
	unsigned long long plen;
	int rc = crypto_aead_xchacha20poly1305_ietf_decrypt(b, &plen, NULL, b,
	    clen, k->ad, adlen, npub, k->dk);
	if (rc < 0) {
		m->len = 0;
		return mq_err(EX_DATAERR, "topic %s: message %s: the sealed body "
		    "does not authenticate (damaged, or not this message's)",
		    t->name, m->id);
	}
	m->len = (size_t)plen;
	b[plen] = 0;
	return 0;
}
