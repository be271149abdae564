/*
 * fenced.c: reading the two files of SPOOL/replicate/ that say which
 * term of replication a spool is in (mq-protocol(5), REPLICATION STATE):
 * replicate/epoch, the spool's epoch, and replicate/fenced, written when
 * the spool learned that another was promoted past it.  Writers read
 * fenced (mq_fence_check) before they write, so it is here, below the
 * queue; replication writes both files (repl/fence.c).
 *
 * Neither is trusted: epoch is one line, a decimal number without sign
 * or leading zero, at most MQ_EPOCH_MAX; fenced is key=value lines with
 * every key of its grammar.  Anything else is damaged, an error naming
 * the file, never read as 0 or as "not fenced".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"

int
mq_epoch_parse(const char *text, size_t len, uint64_t *epoch)
{
	char buf[32];
	const char *end;
	if (len == 0 || len >= sizeof buf || memchr(text, 0, len))
		return -1;
	memcpy(buf, text, len);
	buf[len] = 0;
	uint64_t e;
	end = mq_decimal(buf, MQ_EPOCH_MAX, &e);
	if (!end || end != buf + len - 1 || *end != '\n')
		return -1;
	*epoch = e;
	return 0;
}

/* A small file of replicate/: 1 with its bytes, or with *buf NULL when
 * it is damaged (longer than max, or not a regular file); 0 when it is
 * missing; -1. */
static int
read_state(mq_spool *sp, const char *path, size_t max, char **buf,
    size_t *len)
{
	if (mq_read_at(sp->fd, path, max, buf, len) == 0)
		return 1;
	if (errno == ENOENT && mq_errcode() == EX_NOINPUT)
		return 0;
	if (mq_errcode() != EX_DATAERR)
		return -1;
	*buf = NULL;
	*len = 0;
	return 1;
}

int
mq_epoch_read(mq_spool *sp, uint64_t *epoch)
{
	char *buf;
	size_t len;
	*epoch = 0;
	int got = read_state(sp, "replicate/epoch", 64, &buf, &len);
	if (got <= 0)
		return got;
	int rc = buf ? mq_epoch_parse(buf, len, epoch) : -1;
	free(buf);
	if (rc < 0)
		return mq_err(EX_DATAERR, "%s/replicate/epoch is damaged: not one "
		    "line with a number of at most %llu digits without sign or "
		    "leading zero (write the epoch this spool is in there, or "
		    "the highest one its peers have)", sp->path,
		    (unsigned long long)MQ_EPOCH_DIGITS);
	return 0;
}

int
mq_fence_parse(const char *text, size_t len, struct mq_fence *f)
{
	struct mq_conf c;
	memset(f, 0, sizeof *f);
	if (mq_conf_parse(text, len, "replicate/fenced", &c) < 0)
		return -1;
	const char *peer = mq_conf_get(&c, "peer"),
	    *name = mq_conf_get(&c, "name"), *at = mq_conf_get(&c, "at"),
	    *ep = mq_conf_get(&c, "epoch");
	uint64_t e = 0;
	const char *end = ep ? mq_decimal(ep, MQ_EPOCH_MAX, &e) : NULL;
	char *stop = NULL;
	double t = at ? strtod(at, &stop) : -1;
	int ok = c.n == 4 && end && !*end && e > 0 && peer &&
	    mq_is_id(peer, strlen(peer)) && name && strlen(name) < sizeof f->name &&
	    stop && stop != at && !*stop && t >= 0 && t < 1e11;
	for (const char *p = name; ok && *p; p++)
		ok = *p >= 0x20 && *p != 0x7f;
	if (ok) {
		f->epoch = e;
		snprintf(f->peer, sizeof f->peer, "%s", peer);
		snprintf(f->name, sizeof f->name, "%s", name);
		f->at = t;
	}
	mq_conf_free(&c);
	return ok ? 0 : -1;
}

int
mq_fence_read(mq_spool *sp, struct mq_fence *f)
{
	char *buf;
	size_t len;
	memset(f, 0, sizeof *f);
	int got = read_state(sp, "replicate/fenced", 4096, &buf, &len);
	if (got <= 0)
		return got;
	int rc = buf ? mq_fence_parse(buf, len, f) : -1;
	free(buf);
	if (rc < 0)
		return mq_err(EX_DATAERR, "%s/replicate/fenced is damaged (lines "
		    "epoch=, peer=, name= and at=): the spool was fenced all the "
		    "same; run 'mq-replicate demote', or remove the file",
		    sp->path);
	return 1;
}

int
mq_fence_say(mq_spool *sp, const struct mq_fence *f)
{
	char when[64];
	mq_time_rfc3339(f->at, when, sizeof when);
	return mq_err(EX_NOPERM, "this spool was fenced: spool %s%s%s%s was "
	    "promoted to epoch %llu (learned %s); run 'mq-replicate demote' or "
	    "remove %s/replicate/fenced", f->peer, *f->name ? " (" : "",
	    f->name, *f->name ? ")" : "", (unsigned long long)f->epoch, when,
	    sp->path);
}

int
mq_fence_check(mq_spool *sp)
{
	struct mq_fence f;
	int rc = mq_fence_read(sp, &f);
	if (rc == 0)
		return 0;
	if (rc < 0 && mq_errcode() != EX_DATAERR)
		return -1;
	if (rc < 0)
		return mq_err_recode(EX_DATAERR, EX_NOPERM);
	return mq_fence_say(sp, &f);
}
