/*
 * logship.c: a partition's log of format 2 sent to a peer and received
 * from one (mq-spool(5), SEGMENTED STORAGE, Replication, format 2).
 *
 * The log is sent by position, not through the change journal: the
 * receiver says where its log ends, the sender builds a segment of the
 * records from there, each copied as it is (its frame and hash), and the
 * receiver links it at its head as a publish does.  Whatever the
 * segments' boundaries on either side (merges rewrite them), a record's
 * bytes are the same on both.  The receiver keeps every record it holds:
 * one with other bytes under its number is a conflict, counted for the
 * caller to quarantine, never written over.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

/* A segment sent holds at most this much (one larger record alone). */
#define SHIP_RECORDS 1024
#define SHIP_BYTES (4u << 20)

/* The first segment's start above seq, UINT64_MAX: none. */
static uint64_t
next_start(const struct mq_seglog *l, uint64_t seq)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->first[i] > seq)
			return l->first[i];
	return UINT64_MAX;
}

int
mq_log_export(const struct mq_topic *t, unsigned k, uint64_t *from,
    uint64_t end, unsigned max, struct mq_seg_writer *w)
{
	if (max < 1 || max > SHIP_RECORDS)
		max = SHIP_RECORDS;
	/* A smaller segment (a lossy link) holds as much less. */
	size_t bytes = (size_t)max * (SHIP_BYTES / SHIP_RECORDS);
	struct mq_seglog *l = mq_topic_seglog(t, k);
	if (!l)
		return -1;
	uint64_t seq = *from;
	int r = 0;
	/* Past what no segment holds (retention, numbers a head skipped). */
	while (seq < end && (r = mq_seglog_seek(l, seq)) == 0 &&
	    mq_seglog_gap(l, seq, &seq) >= 0)
		;
	if (r < 0)
		return -1;
	if (seq >= end) {
		*from = end;
		return 0;
	}
	*from = seq;
	if (mq_seg_restart(w, seq) < 0)
		return -1;
	while (seq < end && w->count < max) {
		uint64_t s = seq;
		struct mq_seg_rec rec;
		r = mq_seglog_next(l, &s, &rec);
		if (r == 0 && (r = mq_seglog_seek(l, seq)) == 1)
			continue;               /* the next segment */
		if (r <= 0 || s != seq)
			break;
		if (w->count && w->len + rec.hdr_len + rec.body_len > bytes)
			break;
		if (mq_seg_add_record(w, s, &rec) < 0)
			return -1;
		seq++;
	}
	if (w->count)
		return mq_seg_finish(w) < 0 ? -1 : 1;
	if (r < 0 && mq_errcode() == EX_DATAERR) {
		/* A frame that does not parse: the rest of its segment is
		 * unreadable here as it is to our groups; not sent. */
		*from = next_start(l, seq);
		if (*from > end)
			*from = end;
		return 2;
	}
	return r < 0 ? -1 : 0;
}

/* Whether the record we hold at seq is the one received (a gap here is
 * no conflict: retention removed it, or a head skipped it). */
static int
same_record(const struct mq_topic *t, unsigned k, uint64_t seq,
    const struct mq_seg_rec *in)
{
	struct mq_seglog *l = mq_topic_seglog(t, k);
	if (!l)
		return -1;
	int r = mq_seglog_seek(l, seq);
	if (r <= 0)
		return r < 0 ? -1 : 1;
	uint64_t s = seq;
	struct mq_seg_rec have;
	r = mq_seglog_next(l, &s, &have);
	if (r <= 0 || s != seq)
		return r < 0 ? -1 : 1;
	return have.hdr_len == in->hdr_len && have.body_len == in->body_len &&
	    !memcmp(have.hdr, in->hdr, in->hdr_len) &&
	    !memcmp(have.body, in->body, in->body_len);
}

/* A record's id, its header block's first line (mq_msg_header looks
 * past it): 1 with it in id, 0 when it has none readable. */
static int
record_id(const struct mq_seg_rec *r, char id[MQ_ID_LEN + 1])
{
	static const char tag[] = "Message-Id: ";
	size_t tl = sizeof tag - 1;
	if (r->hdr_len < tl + MQ_ID_LEN + 1 || memcmp(r->hdr, tag, tl) ||
	    !mq_is_id(r->hdr + tl, MQ_ID_LEN) || r->hdr[tl + MQ_ID_LEN] != '\n')
		return 0;
	memcpy(id, r->hdr + tl, MQ_ID_LEN);
	id[MQ_ID_LEN] = 0;
	return 1;
}

/* The idempotency keys of the records linked count here as at the
 * origin: a retry of a publish on this spool, promoted, is recognised. */
static int
adopt_keys(const struct mq_topic *t, unsigned k, const struct mq_seg *seg)
{
	int dedupfd = -1, rc = 0;
	size_t off = mq_seg_start();
	uint64_t seq = 0;
	struct mq_seg_rec rec;
	while (rc == 0 && mq_seg_next(seg, &off, &seq, &rec) == 1) {
		size_t il;
		const char *ikey = mq_msg_header(rec.hdr, rec.hdr_len,
		    "Mq-Idempotency-Key", &il);
		char id[MQ_ID_LEN + 1], key[MQ_KEY_LEN + 1];
		if (!ikey || !record_id(&rec, id))
			continue;
		snprintf(key, sizeof key, "%020" PRIu64 ".%s", seq, id);
		rc = mq_dedup_dir(t->pfd[k], &dedupfd);
		if (rc == 0)
			rc = mq_dedup_adopt(dedupfd, ikey, il, key);
	}
	if (dedupfd >= 0)
		close(dedupfd);
	return rc;
}

/* A segment written into tmp/, to be linked at log/NAME once durable:
 * the records of piece i from first on, n of them. */
struct pending {
	size_t i;
	uint64_t first, n;
	char tmp[MQ_KEY_LEN + 1], name[MQ_SEQ_DIGITS + 1];
};

/* One call of mq_log_import_many, under the head's lock.  h.next is
 * where the pieces written and not yet linked end (h.committed when
 * there are none). */
struct import {
	const struct mq_topic *t;
	unsigned k;
	int hfd, tmpfd, logfd;
	bool sync, shared;
	struct mq_head h;
	struct mq_log_piece *v;
	struct mq_seg *segs;
	struct pending *pv;
	size_t np;
	int synced;                     /* flushes that linked something */
};

/* Writes into tmp/ what the log lacks of piece i (from h.next on; the
 * numbers between skipped when it starts past them), and marks in the
 * head where it ends, for the repair should we die before the link.
 * The bytes are synced with the others at the link, or here where hosts
 * share the partition (syncfs reaches no server). */
static int
write_piece(struct import *im, size_t i)
{
	const struct mq_seg *seg = &im->segs[i];
	struct mq_head *h = &im->h;
	struct mq_seg_writer w = { 0 };
	const char *buf = seg->data;
	size_t len = seg->len;
	uint64_t first = seg->first, c = h->next;
	int rc = 0;
	if (first < c) {
		/* The records from c on, as a segment of their own. */
		size_t off = mq_seg_start();
		uint64_t seq = 0;
		struct mq_seg_rec rec;
		rc = mq_seg_begin(&w, c);
		while (rc == 0 && mq_seg_next(seg, &off, &seq, &rec) == 1)
			if (seq >= c)
				rc = mq_seg_add_record(&w, seq, &rec);
		if (rc == 0)
			rc = mq_seg_finish(&w);
		buf = w.buf;
		len = w.len;
		first = c;
	}
	uint64_t n = seg->first + seg->count - first;
	if (rc == 0 && first > c) {
		/* The sender no longer holds what lies between: skipped, as
		 * numbers a head skipped are.  (Only with nothing pending:
		 * a piece that does not follow waits for those before.) */
		h->committed = h->next = first;
		rc = mq_head_write(im->hfd, h, im->sync);
	}
	struct mq_head at = *h;
	at.committed = h->next;
	if (rc == 0 && mq_head_room(&at) < n)
		rc = mq_err(EX_DATAERR, "topic %s partition %u is full: no "
		    "sequence number is left for %" PRIu64 " records",
		    im->t->name, im->k, n);
	/* next marks what a crash from here leaves for the repair. */
	if (rc == 0) {
		h->next = first + n;
		rc = mq_head_write(im->hfd, h, 0);
	}
	struct pending *p = &im->pv[im->np];
	char id[MQ_ID_LEN + 1];
	mq_id_new(id);
	snprintf(p->name, sizeof p->name, "%020" PRIu64, first);
	snprintf(p->tmp, sizeof p->tmp, "%s.%s", p->name, id);
	if (rc == 0)
		rc = mq_seg_write_tmp(im->tmpfd, p->tmp, buf, len,
		    im->sync && im->shared);
	mq_seg_writer_free(&w);
	if (rc < 0)
		return -1;
	p->i = i;
	p->first = first;
	p->n = n;
	im->np++;
	return 0;
}

/* The pieces written, made durable at once, then linked (the commit
 * point of each), the directory synced, the head committed. */
static int
flush(struct import *im)
{
	if (!im->np)
		return 0;
	int rc = 0, lost = 0;
	if (im->sync && !im->shared && syncfs(im->tmpfd) < 0)
		rc = mq_err_sys("sync");
	size_t j = 0;
	for (; rc == 0 && j < im->np; j++) {
		struct pending *p = &im->pv[j];
		if ((lost = mq_seg_link_name(im->tmpfd, p->tmp, im->logfd,
		    p->name)) != 0)
			break;
		im->v[p->i].out.linked += (uint32_t)p->n;
	}
	if (lost < 0)
		rc = -1;
	/* A power loss before this sync may undo the links: no piece is
	 * answered before it. */
	if (rc == 0 && j && im->sync && mq_fsync_fd(im->logfd) < 0)
		rc = -1;
	for (size_t x = 0; x < im->np; x++)
		if (mq_unlinkat(im->tmpfd, im->pv[x].tmp, 0) < 0 &&
		    errno != ENOENT && rc == 0)
			rc = mq_err_sys("unlink tmp/%s", im->pv[x].tmp);
	size_t np = im->np;
	im->np = 0;
	if (rc < 0)
		return -1;
	if (lost) {
		/* A publisher that shared the lock linked first: its records
		 * are ours now, the peer's from there on a conflict. */
		for (size_t x = j; x < np; x++)
			im->v[im->pv[x].i].out.conflicts += (uint32_t)im->pv[x].n;
		return mq_seg_repair_locked(im->t, im->k, im->hfd, &im->h);
	}
	im->h.committed = im->h.next;
	im->synced += j > 0;
	rc = mq_head_write(im->hfd, &im->h, 0);
	for (size_t x = 0; rc == 0 && x < np; x++)
		rc = adopt_keys(im->t, im->k, &im->segs[im->pv[x].i]);
	return rc;
}

/* A piece's frames read whole (not the records' hashes: one that fails
 * here failed at the sender, and is dead-lettered as there). */
static int
check_piece(const struct mq_log_piece *pc, struct mq_seg *seg)
{
	if (mq_seg_open_bytes(pc->data, pc->len, NULL, seg) < 0)
		return -1;
	size_t off = mq_seg_start();
	uint64_t seq = 0;
	struct mq_seg_rec rec;
	int r;
	while ((r = mq_seg_next(seg, &off, &seq, &rec)) == 1)
		;
	return r;
}

/* Piece i, under the lock: what we hold of it already must be what we
 * were sent; what we lack is written. */
static int
import_piece(struct import *im, size_t i)
{
	const struct mq_seg *seg = &im->segs[i];
	int rc = 0, r;
	if (im->np && seg->first != im->h.next)
		rc = flush(im);
	size_t off = mq_seg_start();
	uint64_t seq = 0;
	struct mq_seg_rec rec;
	while (rc == 0 && (r = mq_seg_next(seg, &off, &seq, &rec)) == 1 &&
	    seq < im->h.committed) {
		int same = same_record(im->t, im->k, seq, &rec);
		if (same < 0)
			rc = -1;
		else if (!same)
			im->v[i].out.conflicts++;
	}
	if (rc == 0 && seg->first + seg->count > im->h.next)
		rc = write_piece(im, i);
	return rc;
}

int
mq_log_import_many(const struct mq_topic *t, unsigned k,
    struct mq_log_piece *v, size_t n, bool sync)
{
	struct import im = { .t = t, .k = k, .hfd = -1, .tmpfd = -1,
	    .logfd = -1, .sync = sync, .v = v };
	im.segs = calloc(n ? n : 1, sizeof *im.segs);
	im.pv = calloc(n ? n : 1, sizeof *im.pv);
	int rc = im.segs && im.pv ? 0 : mq_err_sys("malloc");
	for (size_t i = 0; i < n; i++)
		v[i].out = (struct mq_log_import){ 0 };
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = check_piece(&v[i], &im.segs[i]);
	if (rc == 0 && (im.hfd = mq_head_open(t->pfd[k], MQ_HEAD_WRITE)) < 0)
		rc = -1;
	if (rc == 0 && mq_head_lock(im.hfd, 1) < 0) {
		close(im.hfd);
		im.hfd = rc = -1;
	}
	if (im.hfd >= 0) {
		rc = mq_head_read(im.hfd, &im.h);
		if (rc == 0)
			rc = mq_seg_repair_locked(t, k, im.hfd, &im.h);
		if (rc == 0 && ((im.tmpfd = mq_dir_open(t->pfd[k], "tmp")) < 0 ||
		    (im.logfd = mq_dir_open(t->pfd[k], "log")) < 0))
			rc = -1;
		im.shared = rc == 0 && mq_fs_shared(im.logfd);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = import_piece(&im, i);
		if (rc == 0)
			rc = flush(&im);
		/* What a failure left written is the repair's: the head says
		 * where it would have ended. */
		for (size_t x = 0; x < im.np; x++)
			mq_unlinkat(im.tmpfd, im.pv[x].tmp, 0);
		for (size_t i = 0; i < n; i++)
			v[i].out.end = im.h.committed;
		mq_head_unlock(im.hfd);
		close(im.hfd);
	}
	if (im.tmpfd >= 0)
		close(im.tmpfd);
	if (im.logfd >= 0)
		close(im.logfd);
	/* Best effort, as after a publish: the log is as it was if not. */
	bool linked = false;
	for (size_t i = 0; i < n; i++)
		linked |= v[i].out.linked > 0;
	if (rc == 0 && linked && v[n - 1].len < (256u << 10))
		mq_seg_merge(t, k, im.h.committed);
	free(im.segs);
	free(im.pv);
	return rc < 0 ? -1 : im.synced;
}

int
mq_log_import(const struct mq_topic *t, unsigned k, const char *data,
    size_t len, bool sync, struct mq_log_import *out)
{
	struct mq_log_piece pc = { .data = data, .len = len };
	int rc = mq_log_import_many(t, k, &pc, 1, sync);
	*out = pc.out;
	return rc < 0 ? -1 : 0;
}

int
mq_log_tail_id(const struct mq_topic *t, unsigned k, uint64_t end,
    char id[MQ_ID_LEN + 1])
{
	struct mq_seglog *l = mq_topic_seglog(t, k);
	if (!l)
		return -1;
	if (end == 0)
		return 0;
	uint64_t seq = end - 1;
	int r = mq_seglog_seek(l, seq);
	struct mq_seg_rec rec;
	if (r == 1)
		r = mq_seglog_next(l, &seq, &rec);
	if (r <= 0)
		return r;
	return record_id(&rec, id);
}

void
mq_log_id_append(const struct mq_topic *t, unsigned k, uint64_t end,
    char *buf, size_t len)
{
	char id[MQ_ID_LEN + 1];
	size_t used = strlen(buf);
	if (mq_log_tail_id(t, k, end, id) != 1)
		snprintf(id, sizeof id, "-");
	snprintf(buf + used, len > used ? len - used : 0, ",%s", id);
}

int
mq_log_end(const struct mq_topic *t, unsigned k, uint64_t *end)
{
	int hfd = mq_head_open(t->pfd[k], MQ_HEAD_READ);
	struct mq_head h;
	int rc = hfd < 0 ? -1 : mq_head_read(hfd, &h);
	if (hfd >= 0)
		close(hfd);
	return rc < 0 ? -1 : mq_topic_log_end(t, k, h.committed, end);
}
