/*
 * signers.c: the publisher keys a topic takes (mq-spool(5), topic.conf).
 *
 * topic.conf names each with a line "signer=HEX [NAME]"; a topic with one
 * or more takes only messages signed by one of them (sign.c).  The set is
 * changed as the partition count is: under every partition's publish
 * lock, by replacing topic.conf (the commit point), so an alter of either
 * never loses the other's change.  Publishers and consumers keep the
 * parsed set with the identity of the topic.conf it was read from (device,
 * inode, modification time, size; a replaced file is a new inode) and
 * read it again only when that changes: one fstatat per message checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>

#include "queue.h"

#define SIGNERS_MAX 256
#define SIGNER_NAME_MAX 64

/* A signer's name: at most SIGNER_NAME_MAX bytes, no control character
 * but tab. */
static bool
name_ok(const char *name, size_t nlen)
{
	if (nlen > SIGNER_NAME_MAX)
		return false;
	for (size_t i = 0; i < nlen; i++)
		if ((unsigned char)name[i] < 0x20 && name[i] != '\t')
			return false;
	return true;
}

/* One "HEX [NAME]" (len bytes) as a conf value: 1 with the key, or 0 when
 * it is not one. */
static int
signer_value(const char *v, size_t len, unsigned char pk[MQ_PUBKEY_BYTES],
    size_t *nlen)
{
	const char *at = v, *name;
	return mq_keyline_next(&at, v + len, pk, &name, nlen) == 1 &&
	    at == v + len && name_ok(name, *nlen);
}

static int
set_parse(const struct mq_conf *kv, struct mq_signers *s)
{
	size_t nlen, n = 0;
	for (size_t i = 0; i < kv->n; i++)
		n += !strcmp(kv->keys[i], "signer");
	s->pk = NULL;
	s->n = 0;
	if (n && !(s->pk = reallocarray(NULL, n, sizeof *s->pk)))
		return mq_err_sys("malloc");
	for (size_t i = 0; i < kv->n; i++) {
		if (strcmp(kv->keys[i], "signer"))
			continue;
		if (!signer_value(kv->vals[i], strlen(kv->vals[i]), s->pk[s->n++],
		    &nlen))
			return mq_err(EX_CONFIG, "topic.conf: bad signer '%.70s'",
			    kv->vals[i]);
	}
	return 0;
}

int
mq_signers_now(struct mq_topic *t, const struct mq_signers **out)
{
	struct stat st;
	struct mq_signers *s = t->signers;
	if (!s && !(s = t->signers = calloc(1, sizeof *s)))
		return mq_err_sys("malloc");
	if (mq_fstatat(t->fd, "topic.conf", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return mq_err_sys("topic %s: topic.conf", t->name);
	if (!s->read || s->dev != st.st_dev || s->ino != st.st_ino ||
	    s->size != st.st_size || s->mtim.tv_sec != st.st_mtim.tv_sec ||
	    s->mtim.tv_nsec != st.st_mtim.tv_nsec) {
		/* Replaced after the stat: the next look reads it again. */
		struct mq_conf kv;
		struct mq_signers now = { 0 };
		if (mq_conf_read(t->fd, "topic.conf", &kv) < 0)
			return -1;
		int rc = set_parse(&kv, &now);
		mq_conf_free(&kv);
		if (rc < 0) {
			free(now.pk);
			return -1;
		}
		free(s->pk);
		*s = now;
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		s->size = st.st_size;
		s->mtim = st.st_mtim;
		s->read = true;
	}
	*out = s;
	return 0;
}

int
mq_signers_cached(struct mq_topic *t, const struct mq_signers **out)
{
	if (t->signers && t->signers->fresh) {
		*out = t->signers;
		return 0;
	}
	if (mq_signers_now(t, out) < 0)
		return -1;
	t->signers->fresh = true;
	return 0;
}

void
mq_signers_expire(struct mq_topic *t)
{
	if (t->signers)
		t->signers->fresh = false;
}

bool
mq_signers_has(const struct mq_signers *s, const unsigned char pk[MQ_PUBKEY_BYTES])
{
	for (size_t i = 0; i < s->n; i++)
		if (!memcmp(s->pk[i], pk, MQ_PUBKEY_BYTES))
			return true;
	return false;
}

void
mq_signers_free(struct mq_signers *s)
{
	if (s)
		free(s->pk);
	free(s);
}

int
mq_signers_add(struct mq_conf *kv, const char *text)
{
	const char *at = text, *end = text + strlen(text), *name;
	unsigned char pk[MQ_PUBKEY_BYTES];
	size_t nlen, n = 0;
	int rc;
	while ((rc = mq_keyline_next(&at, end, pk, &name, &nlen)) != 0) {
		if (rc < 0 || !name_ok(name, nlen)) {
			/* The line read last, the one before at. */
			unsigned line = 1;
			for (const char *c = text; c + 1 < at; c++)
				line += *c == '\n';
			return mq_err(EX_DATAERR, "signers, line %u: expected a "
			    "public key (64 hex digits) and a name of at most %d "
			    "characters", line, SIGNER_NAME_MAX);
		}
		if (++n > SIGNERS_MAX)
			return mq_err(EX_DATAERR, "signers: more than %d keys",
			    SIGNERS_MAX);
		char hex[MQ_PUBKEY_HEX + 1];
		mq_pubkey_hex(pk, hex);
		if (mq_conf_addf(kv, "signer", "%s%s%.*s", hex, nlen ? " " : "",
		    (int)nlen, name) < 0)
			return -1;
	}
	return n ? 0 : mq_err(EX_DATAERR, "signers: no public key");
}
