/*
 * segpub.c: a chunk published into a partition of format 2 (mq-spool(5),
 * SEGMENTED STORAGE, Publish, format 2): its messages as the records of
 * one segment, written in tmp/ and linked into log/ at the sequence
 * number it starts with.
 *
 * The link is the commit point, and it fails when the name exists: so a
 * sequence number is never handed out twice even when a shared file
 * system gave the head lock to two hosts at once, or a cache hid the
 * log's end from us; the chunk is then staged again past what the other
 * publisher linked.  Groups take nothing at publish: each reads the log
 * through its cursor.  The head is written after the link without a
 * sync: the log is the truth, and whoever comes next follows it
 * (seglog.c, segrepair.c).
 *
 * A message not yet due is in the log as any other, its Mq-Deliver-At
 * in its header block: the feed names it in delay/.  Not yet in format
 * 2: the change journal's records (replication refuses such topics).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sysexits.h>
#include <unistd.h>

#include "pub.h"

/* Tries before a publish that keeps losing its sequence number to
 * another host's gives up (EX_TEMPFAIL): each loss means that host
 * committed, so this is never reached but by a file system that serves
 * a stale log. */
#define LINK_TRIES 8

/* Adds a staged message as the segment's next record. */
static int
add_record(mq_pub *p, unsigned k, const struct pub_staged *st,
    const char *sig, size_t slen, void *ctx)
{
	(void)k;
	(void)ctx;
	struct iovec hv[3] = {
		{ st->hdr, st->sig_at }, { (char *)sig, slen },
		{ st->hdr + st->sig_at, st->hlen - st->sig_at },
	};
	return mq_seg_addv(&p->sw, hv, 3, st->body, st->blen);
}

/* The chunk's own messages, for the dedup entries that name them. */
struct own {
	const struct pub_staged *stg;
	size_t n;
};

static bool
ours(const char *key, void *ctx)
{
	const struct own *o = ctx;
	for (size_t i = 0; mq_is_key(key) && i < o->n; i++)
		if (!strcmp(key + MQ_SEQ_DIGITS + 1, o->stg[i].id))
			return true;
	return false;
}

/* A sealed topic takes no message while a group has a jq filter, which
 * could not read its body (as format 1 refuses it at publish, though
 * here the group's feed applies the filter). */
static int
no_jq_group(mq_pub *p)
{
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(&p->t, &groups);
	for (size_t i = 0; rc == 0 && i < groups.n; i++) {
		mq_filter *f;
		rc = mq_pub_group_filter(p, groups.v[i], i, &f);
		if (rc == 0 && f && mq_filter_has_jq(f))
			rc = mq_seal_jq_refused(p->t.name, groups.v[i]);
	}
	mq_names_free(&groups);
	return rc;
}

/* One try at the chunk: 1 when another publisher linked log/C first
 * (what we made is undone), 0 when committed, -1 on error (undone by the
 * repair of whoever holds the lock next, or by us at once). */
static int
try_chunk(mq_pub *p, unsigned k, const struct mq_pub_msg *msgs,
    const size_t *idx, size_t n, enum mq_sync sync,
    char (*ids)[MQ_ID_LEN + 1], uint64_t *stored, uint64_t *end)
{
	int hfd = p->hfd[k];
	struct mq_head h;
	int rc = mq_head_read(hfd, &h);
	if (rc == 0)
		rc = mq_seg_repair_locked(&p->t, k, hfd, &h);
	if (rc == 0)
		rc = mq_seal_chunk(&p->seal, &p->t, NULL, NULL, 0);
	if (rc == 0 && p->seal.n)
		rc = no_jq_group(p);
	if (rc < 0)
		return -1;
	if (mq_head_room(&h) < n)
		return mq_err(EX_DATAERR, "topic %s partition %u is full: no "
		    "sequence number is left for %zu message%s", p->t.name, k, n,
		    n == 1 ? "" : "s");
	/* next marks what a crash from here leaves for the repair. */
	uint64_t c = h.committed;
	h.next = c + n;
	size_t ns = 0;
	rc = mq_head_write(hfd, &h, 0);
	if (rc == 0)
		rc = mq_pub_stage(p, k, msgs, idx, n, c, 0, ids, &ns);
	if (rc == 0 && ns)
		rc = mq_seg_restart(&p->sw, c);
	if (rc == 0 && ns)
		rc = mq_pub_write_signed(p, k, ns, add_record, NULL);
	if (rc == 0 && ns)
		rc = mq_seg_finish(&p->sw);
	char tmp[MQ_KEY_LEN + 1], name[MQ_SEQ_DIGITS + 1];
	snprintf(name, sizeof name, "%020" PRIu64, c);
	snprintf(tmp, sizeof tmp, "%s.%s", name, ns ? p->stg[0].id : "");
	/* On a shared file system another host reads what reached the
	 * server: closing does not flush a client that writes behind. */
	if (rc == 0 && ns)
		rc = mq_seg_write_tmp(p->tmpfd[k], tmp, p->sw.buf, p->sw.len,
		    sync != MQ_SYNC_NONE || p->shared[k]);
	if (rc == 0 && p->dedupfd[k] >= 0 && (sync == MQ_SYNC_EACH ||
	    (sync == MQ_SYNC_BATCH && p->shared[k])))
		rc = mq_fsync_fd(p->dedupfd[k]);
	int lost = 0;
	if (rc == 0 && ns && (lost = mq_seg_link(p->tmpfd[k], tmp,
	    p->logfd[k], name, sync != MQ_SYNC_NONE)) < 0)
		rc = -1;
	if (lost == 1) {
		/* Ours alone: under a lock that two holders share, the
		 * other's entries are in the same range. */
		struct own o = { p->stg, ns };
		if (p->dedupfd[k] >= 0)
			mq_dedup_sweep(p->t.pfd[k], ours, &o);
	}
	mq_pub_staged_free(p, ns);
	if (rc < 0) {
		/* Keep the first error; the undo is best effort, and the
		 * next lock holder's repair finishes it if it fails too. */
		char msg[1024];
		int code = mq_errcode();
		snprintf(msg, sizeof msg, "%s", mq_errmsg());
		if (mq_head_read(hfd, &h) == 0)
			mq_seg_repair_locked(&p->t, k, hfd, &h);
		return mq_err(code, "%s", msg);
	}
	if (lost)
		return 1;
	struct mq_head done = { c + ns, c + ns };
	*stored = ns;
	*end = c + ns;
	return mq_head_write(hfd, &done, 0);
}

int
mq_pub_chunk_segment(mq_pub *p, unsigned k, const struct mq_pub_msg *msgs,
    const size_t *idx, size_t n, enum mq_sync sync,
    char (*ids)[MQ_ID_LEN + 1])
{
	if (mq_pub_fds(p, k) < 0)
		return -1;
	if (p->tmpfd[k] < 0 &&
	    (p->tmpfd[k] = mq_dir_open(p->t.pfd[k], "tmp")) < 0)
		return -1;
	int hfd = p->hfd[k];
	if (mq_head_lock(hfd, 1) < 0)
		return -1;
	uint64_t stored = 0, end = 0;
	int rc = 1;
	for (int tries = 0; rc == 1 && tries < LINK_TRIES; tries++)
		rc = try_chunk(p, k, msgs, idx, n, sync, ids, &stored, &end);
	mq_head_unlock(hfd);
	/* Best effort: a merge that fails leaves the log as it was. */
	if (rc == 0 && stored && p->sw.len < (256u << 10))
		mq_seg_merge(&p->t, k, end);
	if (rc == 1)
		rc = mq_err(EX_TEMPFAIL, "topic %s partition %u: another "
		    "publisher took each sequence number tried", p->t.name, k);
	if (rc < 0) {
		for (size_t i = 0; i < n; i++)
			ids[idx[i]][0] = 0;
		return -1;
	}
	mq_count_published(p->t.sp, p->t.name, stored, mq_now());
	return 0;
}
