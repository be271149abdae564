/*
 * grouprepl.c: a group of format 2 on a replica, changed as the primary's
 * journal says (mq-spool(5), SEGMENTED STORAGE, Replication, format 2).
 *
 * The primary's consumers took records as claims, settled them (K),
 * gave some names of their own (L), settled those (A, D) or committed an
 * offset (C).  A replica applies each to the record it names: it takes
 * its group through that record first, as its own consumers would (as
 * claims of no lease, so that a record held at the primary when it
 * failed is delivered again here; as names for an ordered group and on
 * a shared file system), then settles or names it.  Every step is one
 * of the local operations (claims.c, feed.c), each with its crash
 * statement, and finds itself done when a batch is applied again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "queue.h"

int
mq_greplica_open(struct mq_greplica *g, const struct mq_topic *t,
    unsigned k, const char *group, int hfd, const struct mq_gdirs *d)
{
	*g = (struct mq_greplica){ .t = t, .k = k, .group = group, .hfd = hfd,
	    .d = *d, .cursorfd = -1, .claimsfd = -1 };
	g->d.group = group;
	struct mq_group_conf gc;
	struct mq_conf kv;
	if (mq_group_settings(t, group, &gc) < 0 ||
	    mq_group_conf_read(t, group, &kv) < 0)
		return -1;
	int rc = mq_filter_from_conf(&kv, group, &g->filter);
	mq_conf_free(&kv);
	if (rc == 0 && (g->cursorfd = mq_cursor_open(t, k, group, O_RDWR |
	    O_CREAT)) < 0)
		rc = -1;
	/* As its consumers would take them (subparts.c). */
	g->names = gc.ordered || mq_fs_shared(d->newfd);
	if (rc == 0 && !g->names &&
	    (g->claimsfd = mq_claims_open(t, k, group, 1)) < 0)
		rc = -1;
	if (rc < 0)
		mq_greplica_close(g);
	return rc;
}

void
mq_greplica_close(struct mq_greplica *g)
{
	if (g->cursorfd >= 0)
		close(g->cursorfd);
	if (g->claimsfd >= 0)
		close(g->claimsfd);
	mq_filter_free(g->filter);
	g->cursorfd = g->claimsfd = -1;
	g->filter = NULL;
}

int
mq_greplica_take(struct mq_greplica *g, uint64_t to)
{
	if (!g->names)
		return mq_claims_fill(g->t, g->k, g->group, g->hfd, g->cursorfd,
		    g->claimsfd, to);
	/* Fed as a consumer feeds, a batch at a time, while the log has
	 * records below `to` past the cursor. */
	uint64_t cursor = 0;
	int fed;
	do
		fed = mq_feed(g->t, g->k, g->group, &g->d, g->hfd, g->cursorfd,
		    g->filter, &cursor);
	while (fed > 0 && cursor < to);
	return fed < 0 ? -1 : 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Calls fn for each name of the group's queues with its record's
 * number (new/ and cur/ names start with their KEY, delay/ ones with
 * their due time and a dot) until it returns other than 0. */
static int
each_name(struct mq_greplica *g,
    int (*fn)(int dirfd, const char *name, uint64_t seq, void *ctx),
    void *ctx)
{
	int dirs[] = { g->d.newfd, g->d.curfd, g->d.delayfd };
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < 3; i++) {
		struct mq_names l = { 0 };
		if (dirs[i] < 0)
			continue;
		if (mq_names_read(dirs[i], NULL, &l) < 0)
			return -1;
		size_t skip = i == 2 ? MQ_SEQ_DIGITS + 1 : 0;
		for (size_t j = 0; rc == 0 && j < l.n; j++) {
			uint64_t seq;
			if (strlen(l.v[j]) > skip &&
			    mq_seq_of(l.v[j] + skip, &seq) == 0)
				rc = fn(dirs[i], l.v[j], seq, ctx);
		}
		mq_names_free(&l);
	}
	return rc;
}

struct unlinking {
	const uint64_t *sorted;         /* NULL: every name below `below` */
	size_t n;
	uint64_t below;
};

/* A local consumer may have moved it meanwhile: its claim of it then
 * fails as no longer held. */
static int
unlink_one(int dirfd, const char *name, uint64_t seq, void *ctx)
{
	const struct unlinking *u = ctx;
	bool hit = u->sorted ? bsearch(&seq, u->sorted, u->n, sizeof seq,
	    cmp_u64) != NULL : seq < u->below;
	if (hit && mq_unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return mq_err_sys("replicate ack of %s", name);
	return 0;
}

static int
unlink_names(struct mq_greplica *g, const uint64_t *sorted, size_t n,
    uint64_t below)
{
	struct unlinking u = { sorted, n, below };
	return each_name(g, unlink_one, &u);
}

int
mq_greplica_settle(struct mq_greplica *g, uint64_t *seqs, size_t n)
{
	if (n == 0)
		return 0;
	qsort(seqs, n, sizeof *seqs, cmp_u64);
	if (mq_greplica_take(g, seqs[n - 1] + 1) < 0 ||
	    unlink_names(g, seqs, n, 0) < 0)
		return -1;
	/* The others are in a claim, or settled already. */
	return g->names ? 0 :
	    mq_claims_settle_set(g->cursorfd, g->claimsfd, seqs, n) < 0 ? -1 : 0;
}

int
mq_greplica_settle_key(struct mq_greplica *g, const char *key)
{
	uint64_t seq;
	if (mq_seq_of(key, &seq) < 0 || mq_greplica_take(g, seq + 1) < 0)
		return -1;
	/* A replica's names are new/KEY (no consumer took them): one
	 * unlink, not a listing of its queues, per record. */
	if (mq_unlinkat(g->d.newfd, key, 0) == 0)
		return 0;
	if (errno != ENOENT)
		return mq_err_sys("replicate ack of %s", key);
	return mq_greplica_settle(g, &seq, 1);
}

int
mq_greplica_commit(struct mq_greplica *g, uint64_t offset)
{
	uint64_t *seqs = NULL, skipped = 0;
	size_t n = 0;
	if (mq_greplica_take(g, offset) < 0)
		return -1;
	int rc = g->names ? 0 :
	    mq_claims_settle_below(g->cursorfd, g->claimsfd, offset, &seqs, &n);
	free(seqs);
	if (rc == 0)
		rc = mq_feed_skip(g->t, g->k, g->group, g->hfd, offset, &skipped);
	return rc < 0 ? -1 : unlink_names(g, NULL, 0, offset);
}

static int
is_seq(int dirfd, const char *name, uint64_t seq, void *ctx)
{
	(void)dirfd;
	(void)name;
	return seq == *(const uint64_t *)ctx;
}

int
mq_greplica_name(struct mq_greplica *g, const char *key)
{
	uint64_t seq;
	if (mq_seq_of(key, &seq) < 0 || mq_greplica_take(g, seq + 1) < 0)
		return -1;
	/* Named already, in any of its queues?  new/KEY first, the name a
	 * replica's records mostly have. */
	int have = mq_faccessat(g->d.newfd, key, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ?
	    1 : each_name(g, is_seq, &seq);
	if (have != 0)
		return have < 0 ? -1 : 0;
	/* Not due yet: in delay/, as the primary has it. */
	struct mq_msg *m = NULL;
	if (mq_record_read(g->t, g->k, seq, NULL, &m) < 0)
		return -1;
	char name[MQ_KEY_LEN + 32];
	int dirfd = g->d.newfd;
	if (m->deliver_at > mq_now()) {
		if (mq_gdirs_delay(g->t, g->k, g->group, &g->d) < 0) {
			mq_msg_free(m);
			return -1;
		}
		snprintf(name, sizeof name, "%020" PRIu64 ".%s",
		    (uint64_t)ceil(m->deliver_at * 1000), key);
		dirfd = g->d.delayfd;
	} else {
		snprintf(name, sizeof name, "%s", key);
	}
	mq_msg_free(m);
	int fd = mq_openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0 && errno != EEXIST)
		return mq_err_sys("replicate %s", name);
	if (fd >= 0)
		close(fd);
	/* A claim of no lease may hold it: the name now says it. */
	if (!g->names && mq_claims_settle_set(g->cursorfd, g->claimsfd, &seq,
	    1) < 0)
		return -1;
	return 0;
}

struct staterec {
	int (*fn)(char type, const char *arg, void *ctx);
	void *ctx;
	uint64_t upto;
	const struct mq_topic *t;
	unsigned k;
};

/* K of what a claim settled below upto. */
static int
claim_rec(const struct mq_claim_name *c, const struct mq_claim_state *st,
    void *ctx)
{
	const struct staterec *sr = ctx;
	struct mq_claim_state below = { 0 };
	bool any = false;
	for (unsigned i = 0; i < c->n && c->first + i < sr->upto; i++)
		if (mq_claim_settled(st, i)) {
			mq_claim_settle(&below, i);
			any = true;
		}
	char text[64 + MQ_CLAIM_MAX / 4 + MQ_ID_LEN + 2];
	if (!any)
		return 0;
	if (mq_claim_bits_format(c->first, c->n, below.settled, text,
	    sizeof text) < 0)
		return -1;
	mq_log_id_append(sr->t, sr->k, c->first + c->n, text, sizeof text);
	return sr->fn('K', text, sr->ctx);
}

int
mq_greplica_state(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t upto, int (*fn)(char type, const char *arg, void *ctx),
    void *ctx)
{
	struct staterec sr = { fn, ctx, upto, t, k };
	uint64_t end, cursor, seq;
	char arg[32 + MQ_ID_LEN + 2];
	struct mq_names held = { 0 };
	if (mq_log_end(t, k, &end) < 0 ||
	    mq_feed_written(t, k, group, end, &cursor) < 0)
		return -1;
	if (cursor > upto)
		cursor = upto;
	snprintf(arg, sizeof arg, "%" PRIu64, cursor);
	mq_log_id_append(t, k, cursor, arg, sizeof arg);
	int rc = cursor ? fn('C', arg, ctx) : 0;
	if (rc == 0)
		rc = mq_claims_each(t, k, group, claim_rec, &sr);
	if (rc == 0)
		rc = mq_group_held(t->pfd[k], group, &held);
	for (size_t i = 0; rc == 0 && i < held.n; i++)
		if (mq_seq_of(held.v[i], &seq) == 0 && seq < upto)
			rc = fn('L', held.v[i], ctx);
	mq_names_free(&held);
	return rc;
}
