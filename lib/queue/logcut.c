/*
 * logcut.c: a partition of format 2 cut back to a sequence number, its
 * log and then its groups (mq-replicate(1) demote; mq-protocol(5),
 * Epochs): what an old primary published after the split leaves its log
 * once demote has kept it aside, so that the new primary's records take
 * those numbers.  Each step can be done again: a demote run again after
 * a crash cuts at the same place and finds what was done.
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

/* Segment log/NAME, from first below at to past it, replaced by its
 * records below at: written into tmp/ under a KEY's name (what a crash
 * leaves there the next repair removes), synced, renamed onto it. */
static int
keep_prefix(int pfd, int logfd, const char *name, uint64_t first,
    uint64_t at)
{
	char *buf;
	size_t len;
	if (mq_read_at(logfd, name, MQ_SEG_MAX_BYTES, &buf, &len) < 0)
		return -1;
	struct mq_seg seg;
	struct mq_seg_writer w = { 0 };
	int rc = mq_seg_open_bytes(buf, len, name, &seg) < 0 ||
	    mq_seg_begin(&w, first) < 0 ? -1 : 0;
	size_t off = mq_seg_start();
	uint64_t seq = 0;
	struct mq_seg_rec rec;
	int r = 0;
	while (rc == 0 && (r = mq_seg_next(&seg, &off, &seq, &rec)) == 1 &&
	    seq < at)
		rc = mq_seg_add_record(&w, seq, &rec);
	/* A frame that does not parse: what reads before it is kept, as
	 * readers see it; nothing at all: the segment stays. */
	if (rc == 0 && r < 0 && !w.count)
		rc = -1;
	if (rc == 0)
		rc = mq_seg_finish(&w);
	char id[MQ_ID_LEN + 1], tmp[MQ_KEY_LEN + 1];
	mq_id_new(id);
	snprintf(tmp, sizeof tmp, "%s.%s", name, id);
	int tmpfd = rc < 0 ? -1 : mq_dir_open(pfd, "tmp");
	if (tmpfd < 0)
		rc = -1;
	if (rc == 0)
		rc = mq_seg_write_tmp(tmpfd, tmp, w.buf, w.len, true);
	if (rc == 0 && renameat(tmpfd, tmp, logfd, name) < 0)
		rc = mq_err_sys("rename tmp/%s", tmp);
	if (tmpfd >= 0)
		close(tmpfd);
	mq_seg_writer_free(&w);
	free(buf);
	return rc;
}

/* The segments of log/ from at on (*past) and those that go past it
 * from below (*across), each sorted. */
static int
cut_lists(int logfd, uint64_t at, struct mq_names *past,
    struct mq_names *across)
{
	struct mq_names names = { 0 };
	if (mq_names_read(logfd, NULL, &names) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < names.n; i++) {
		uint64_t first;
		struct mq_seg sg;
		if (mq_seg_name(names.v[i], &first) < 0)
			continue;
		if (first >= at)
			rc = mq_names_push(past, names.v[i], strlen(names.v[i]));
		else if (mq_seglog_line(logfd, names.v[i], first, &sg, NULL) == 0 &&
		    sg.count > at - first)
			rc = mq_names_push(across, names.v[i], strlen(names.v[i]));
	}
	mq_names_free(&names);
	return rc;
}

/* Under the head's lock, h read: the cut itself. */
static int
cut_locked(const struct mq_topic *t, unsigned k, int hfd, struct mq_head *h,
    uint64_t at, uint64_t upto)
{
	int pfd = t->pfd[k];
	int logfd = mq_dir_open(pfd, "log");
	if (logfd < 0)
		return -1;
	struct mq_names past = { 0 }, across = { 0 };
	uint64_t end = h->committed;
	int rc = mq_seglog_end(logfd, &end);
	if (rc == 0 && end > upto)
		rc = mq_err(EX_TEMPFAIL, "topic %s partition %u: its log grew "
		    "during the demote (to %" PRIu64 ", past %" PRIu64 ")",
		    t->name, k, end, upto);
	if (rc == 0)
		rc = cut_lists(logfd, at, &past, &across);
	if (rc == 0 && (past.n || across.n || end > at)) {
		/* The head first: readers stop at the cut from now on, and
		 * next above it has the repair remove what a publish of those
		 * numbers left (its dedup entries). */
		if (h->next < end)
			h->next = end;
		if (h->committed > at)
			h->committed = at;
		rc = mq_head_write(hfd, h, 1);
		/* From the last: the log stays a run of segments. */
		for (size_t i = past.n; rc == 0 && i-- > 0;)
			if (mq_unlinkat(logfd, past.v[i], 0) < 0 && errno != ENOENT)
				rc = mq_err_sys("unlink log/%s", past.v[i]);
		for (size_t i = 0; rc == 0 && i < across.n; i++) {
			uint64_t first;
			rc = mq_seg_name(across.v[i], &first) < 0 ? -1 :
			    keep_prefix(pfd, logfd, across.v[i], first, at);
		}
		if (rc == 0)
			rc = mq_fsync_fd(logfd);
		if (rc == 0) {
			h->committed = at;
			rc = mq_seg_repair_locked(t, k, hfd, h);
		}
	}
	mq_names_free(&past);
	mq_names_free(&across);
	close(logfd);
	return rc;
}

int
mq_log_cut(const struct mq_topic *t, unsigned k, uint64_t at, uint64_t upto)
{
	int hfd = mq_head_open(t->pfd[k], MQ_HEAD_WRITE);
	if (hfd < 0)
		return -1;
	struct mq_head h;
	int rc = mq_head_lock(hfd, 1) < 0 ? -1 : 0;
	if (rc == 0) {
		rc = mq_head_read(hfd, &h) < 0 ? -1 :
		    cut_locked(t, k, hfd, &h, at, upto);
		mq_head_unlock(hfd);
	}
	close(hfd);
	return rc;
}

/* A group's names of records from at on: in new/, cur/, tmp/ (KEY
 * first) and delay/ (its due time, a dot, then KEY). */
static int
cut_names(int pfd, const char *group, uint64_t at)
{
	static const char *const sub[] = { "new", "cur", "tmp", "delay" };
	int rc = 0;
	for (size_t d = 0; rc == 0 && d < 4; d++) {
		char p[MQ_NAME_MAX + 16];
		struct mq_names l = { 0 };
		size_t skip = d == 3 ? MQ_SEQ_DIGITS + 1 : 0;
		rc = mq_path(p, sizeof p, "g/%s/%s", group, sub[d]);
		int dfd = rc < 0 ? -1 : mq_dir_open(pfd, p);
		if (dfd < 0) {
			rc = rc < 0 || errno != ENOENT ? -1 : 0;
			continue;
		}
		int gone = 0;
		rc = mq_names_read(dfd, NULL, &l);
		for (size_t i = 0; rc == 0 && i < l.n; i++) {
			uint64_t seq;
			if (strlen(l.v[i]) <= skip ||
			    mq_seq_of(l.v[i] + skip, &seq) < 0 || seq < at)
				continue;
			if (mq_unlinkat(dfd, l.v[i], 0) < 0 && errno != ENOENT)
				rc = mq_err_sys("unlink %s/%s", p, l.v[i]);
			gone = 1;
		}
		if (rc == 0 && gone)
			rc = mq_fsync_fd(dfd);
		mq_names_free(&l);
		close(dfd);
	}
	return rc;
}

/* A claim that goes past at replaced by one of the same token that ends
 * there, its bits kept: made (or found made) and synced before the old
 * one goes, so a crash leaves one of the two, or both, never neither. */
static int
shorten_claim(int claimsfd, const char *name, const struct mq_claim_name *c,
    uint64_t at)
{
	struct mq_claim_state st = { 0 };
	struct mq_claim_name s = *c;
	char to[64];
	s.n = (unsigned)(at - c->first);
	int fd = openat(claimsfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("open claims/%s", name);
	int rc = mq_claim_state_read(fd, &st) < 0 ? -1 : 0;
	close(fd);
	for (unsigned i = s.n; i < MQ_CLAIM_MAX; i++)
		st.settled[i / 8] &= (unsigned char)~(1u << (i % 8));
	if (rc == 0)
		rc = mq_claim_name_make(&s, to, sizeof to);
	fd = rc < 0 ? -1 : openat(claimsfd, to, O_WRONLY | O_CREAT | O_CLOEXEC,
	    0666);
	if (rc == 0 && fd < 0)
		rc = mq_err_sys("create claims/%s", to);
	if (rc == 0)
		rc = mq_claim_state_write(fd, &st, 1);
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		rc = mq_fsync_fd(claimsfd);
	if (rc == 0 && mq_unlinkat(claimsfd, name, 0) < 0 && errno != ENOENT)
		rc = mq_err_sys("unlink claims/%s", name);
	return rc;
}

/* The group's claims of records from at on: gone, or shortened. */
static int
cut_claims(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t at)
{
	int cfd = mq_claims_open(t, k, group, 0);
	if (cfd == -2)
		return 0;
	if (cfd < 0)
		return -1;
	struct mq_names l = { 0 };
	int rc = mq_names_read(cfd, NULL, &l), gone = 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		struct mq_claim_name c;
		if (mq_claim_name_parse(l.v[i], &c) < 0 ||
		    c.first + c.n <= at)
			continue;
		if (c.first < at)
			rc = shorten_claim(cfd, l.v[i], &c, at);
		else if (mq_unlinkat(cfd, l.v[i], 0) < 0 && errno != ENOENT)
			rc = mq_err_sys("unlink claims/%s", l.v[i]);
		gone = 1;
	}
	if (rc == 0 && gone)
		rc = mq_fsync_fd(cfd);
	mq_names_free(&l);
	close(cfd);
	return rc;
}

int
mq_group_cut(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t at)
{
	int fd = mq_cursor_open(t, k, group, O_RDWR | O_CREAT);
	if (fd < 0)
		return -1;
	uint64_t next;
	int rc = mq_file_lock(fd, 1, "cursor") < 0 ||
	    cut_names(t->pfd[k], group, at) < 0 ||
	    cut_claims(t, k, group, at) < 0 ||
	    mq_feed_cursor(t, k, group, at, &next) < 0 ? -1 : 0;
	/* The cursor last, once nothing of the group is past the cut:
	 * the new primary's records come at those numbers. */
	if (rc == 0 && next > at)
		rc = mq_cursor_write(fd, at, 1);
	close(fd);
	return rc;
}
