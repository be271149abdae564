/*
 * repair.c: undoing a publish that died before its commit point.
 *
 * A head with next > committed, found by whoever holds the partition's
 * lock, means the last holder died between allocating sequence numbers and
 * committing them (a live publisher would still hold the lock).  Every
 * name with a sequence number in [committed, next) is then invisible
 * garbage: it is removed from log/, from every group's new/ and delay/
 * (consumers never claim or promote such names, so cur/ holds none) and
 * from the dedup index, and next is set back to committed.  This scans log/ once per crash, never in normal operation.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "queue.h"

static int
sweep(int dirfd, const char *path, uint64_t from, uint64_t to)
{
	int fd = mq_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", path);
	struct mq_names l = { 0 };
	int rc = mq_names_read(fd, NULL, &l);
	uint64_t seq, due;
	struct mq_entry e;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		/* delay/ names carry the KEY after the due time. */
		if (mq_seq_of(l.v[i], &seq) < 0 &&
		    (mq_delay_parse(l.v[i], &due, &e) < 0 ||
		    mq_seq_of(e.key, &seq) < 0))
			continue;
		if (seq >= from && seq < to && mq_unlinkat(fd, l.v[i], 0) < 0 &&
		    errno != ENOENT)
			rc = mq_err_sys("unlink %s/%s", path, l.v[i]);
	}
	mq_names_free(&l);
	if (rc == 0)
		rc = mq_fsync_fd(fd);
	close(fd);
	return rc;
}

/* Dedup entries of the range being undone. */
static bool
in_range(const char *key, void *ctx)
{
	const uint64_t *range = ctx;
	uint64_t seq;
	return mq_seq_of(key, &seq) == 0 && seq >= range[0] && seq < range[1];
}

int
mq_partition_repair_locked(const struct mq_topic *t, unsigned k, int hfd,
    struct mq_head *h)
{
	if (t->conf.format == 2)
		return mq_seg_repair_locked(t, k, hfd, h);
	if (h->next <= h->committed)
		return 0;
	int pfd = t->pfd[k];
	struct mq_names groups = { 0 };
	int gfd = mq_dir_open(pfd, "g");
	if (gfd < 0)
		return -1;
	int rc = mq_names_read(gfd, NULL, &groups);
	close(gfd);
	for (size_t i = 0; rc == 0 && i < groups.n; i++) {
		char p[MQ_NAME_MAX + 16];
		rc = mq_path(p, sizeof p, "g/%s/new", groups.v[i]);
		if (rc == 0)
			rc = sweep(pfd, p, h->committed, h->next);
		if (rc == 0)
			rc = mq_path(p, sizeof p, "g/%s/delay", groups.v[i]);
		if (rc == 0)
			rc = sweep(pfd, p, h->committed, h->next);
	}
	mq_names_free(&groups);
	uint64_t range[2] = { h->committed, h->next };
	if (rc == 0)
		rc = mq_dedup_sweep(pfd, in_range, range);
	/* log/ last: it is how a later repair would find the range again. */
	if (rc == 0)
		rc = sweep(pfd, "log", h->committed, h->next);
	if (rc == 0) {
		h->next = h->committed;
		rc = mq_head_write(hfd, h, 1);
	}
	return rc;
}

int
mq_partition_repair_try(const struct mq_topic *t, unsigned k)
{
	/* Where locks do not reach other hosts (sshfs) a free lock proves
	 * nothing: the publisher may be alive on another host.  Only the
	 * next publisher repairs there (mq-spool(5), SHARED FILE SYSTEMS). */
	if (mq_fs_locks_local(t->pfd[k]))
		return 0;
	struct mq_head h;
	int hfd = mq_head_open(t->pfd[k], MQ_HEAD_WRITE);
	if (hfd < 0)
		return -1;
	int rc = mq_head_read(hfd, &h);
	if (rc == 0 && h.next > h.committed) {
		/* A free lock with next > committed means a dead publisher. */
		rc = mq_head_lock(hfd, 0);
		if (rc == 1) {
			rc = mq_head_read(hfd, &h);
			if (rc == 0)
				rc = mq_partition_repair_locked(t, k, hfd, &h);
			mq_head_unlock(hfd);
		}
	}
	close(hfd);
	return rc < 0 ? -1 : 0;
}
