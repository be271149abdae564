/*
 * segrepair.c: the repair of a partition of format 2 (mq-spool(5),
 * SEGMENTED STORAGE, Publish, format 2), by whoever holds its lock next.
 *
 * A publish writes next = C + n into the head before it writes anything
 * else, links its segment at log/C (the commit point), then writes
 * committed = next = the log's end.  So a head with next > committed, or
 * a log that goes on past committed, is a publish that died: before its
 * link, its dedup entries (sequence numbers from the log's end) and its
 * segment in tmp/ are garbage; after it, only the head and the tmp/ name
 * are behind.  The repair follows the log, removes the garbage and
 * writes the head.  It costs one lookup when nothing died.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "queue.h"

/* Dedup entries of sequence numbers from the log's end on. */
static bool
from_end(const char *key, void *ctx)
{
	uint64_t seq;
	return mq_seq_of(key, &seq) == 0 && seq >= *(const uint64_t *)ctx;
}

/* The tmp/ names of publishes, KEYs: every one is garbage under the
 * lock (a merge's names are not KEYs, and it removes its own). */
static int
sweep_tmp(int pfd)
{
	struct mq_names l = { 0 };
	int fd = mq_dir_open(pfd, "tmp");
	if (fd < 0)
		return -1;
	int rc = mq_names_read(fd, NULL, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (mq_is_key(l.v[i]) && mq_unlinkat(fd, l.v[i], 0) < 0 &&
		    errno != ENOENT)
			rc = mq_err_sys("unlink tmp/%s", l.v[i]);
	mq_names_free(&l);
	close(fd);
	return rc;
}

int
mq_seg_repair_locked(const struct mq_topic *t, unsigned k, int hfd,
    struct mq_head *h)
{
	int pfd = t->pfd[k];
	int logfd = mq_dir_open(pfd, "log");
	if (logfd < 0)
		return -1;
	uint64_t end = h->committed;
	int rc = mq_seglog_end(logfd, &end);
	close(logfd);
	if (rc < 0 || (end == h->committed && h->next <= h->committed))
		return rc;
	if (h->next > end)
		rc = mq_dedup_sweep(pfd, from_end, &end);
	if (rc == 0)
		rc = sweep_tmp(pfd);
	if (rc == 0) {
		h->committed = h->next = end;
		rc = mq_head_write(hfd, h, 1);
	}
	return rc;
}
