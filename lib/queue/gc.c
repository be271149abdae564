/*
 * gc.c: retention.
 *
 * A log/ name older than the topic's retention is unlinked.  The age comes
 * from the message id (its first 13 hex digits are the publish time in
 * microseconds), so no file is opened or stat()ed.  Groups that have not
 * consumed the message still hold links to it: retention removes the
 * log's name only, never a group's pending message.  In a topic with roles
 * the log name of a message still held (a link count above one) stays
 * too: consumers there deliver only what log/ names.  Unlinking is the
 * whole operation, so a crash leaves nothing to repair.  Idempotency
 * keys older than the topic's dedup window are dropped from the index,
 * and so are the ledger entries of exactly-once groups.  Dot-named
 * temporary files older than an hour (left by a crash while writing a
 * conf) are removed on the way.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "queue.h"


/* A temporary file is stale when its modification time is more than
 * MQ_STALE_TMP seconds before now: no writer takes that long. */
bool
mq_tmp_stale(int dirfd, const char *name, double now)
{
	struct stat st;
	return mq_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    now - (double)st.st_mtime > MQ_STALE_TMP;
}

/* Calls f for each stale temporary file of dirfd: a dot file ".tmp.*",
 * or, with any_name, any entry (in a tmp/ directory). */
static uint64_t
each_stale(int dirfd, bool any_name, double now,
    void (*f)(int dirfd, const char *name))
{
	int fd = mq_openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	struct dirent *de;
	uint64_t n = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((any_name || !strncmp(de->d_name, ".tmp.", 5)) &&
		    mq_tmp_stale(dirfd, de->d_name, now)) {
			n++;
			if (f)
				f(dirfd, de->d_name);
		}
	}
	closedir(d);
	return n;
}

static void
unlink_file(int dirfd, const char *name)
{
	mq_unlinkat(dirfd, name, 0);
}

static void
sweep_temporaries(int dirfd, double now)
{
	each_stale(dirfd, false, now, unlink_file);
}

uint64_t
mq_tmp_count_stale(int dirfd, bool any_name, double now)
{
	return each_stale(dirfd, any_name, now, NULL);
}

/* Idempotency keys older than the dedup window no longer count. */
struct age {
	double now, window;
};

static bool
too_old(const char *key, void *ctx)
{
	const struct age *a = ctx;
	return a->now - mq_key_time(key) > a->window;
}

/* A group's housekeeping in partition pfd: entries of an exactly-once
 * ledger last as long as the dedup window (a redelivery later than that
 * is no longer recognised); a dead letter's copy that a crash left in
 * cur/ (msgread.c) is removed once stale. */
static void
groups_housekeeping(int pfd, double now, double window)
{
	struct mq_names groups = { 0 };
	int gfd = mq_openat(pfd, "g", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (gfd < 0 || mq_names_read(gfd, NULL, &groups) < 0)
		goto out;
	for (size_t i = 0; i < groups.n; i++) {
		char path[MQ_NAME_MAX + 8];
		snprintf(path, sizeof path, "%s/cur", groups.v[i]);
		int cfd = mq_openat(gfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (cfd >= 0) {
			sweep_temporaries(cfd, now);
			close(cfd);
		}
		snprintf(path, sizeof path, "%s/done", groups.v[i]);
		int dfd = mq_openat(gfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		struct mq_names l = { 0 };
		if (dfd < 0 || mq_names_read(dfd, NULL, &l) < 0) {
			if (dfd >= 0)
				close(dfd);
			continue;
		}
		struct stat st;
		for (size_t j = 0; j < l.n; j++)
			if (mq_fstatat(dfd, l.v[j], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    now - (double)st.st_mtime > window)
				mq_unlinkat(dfd, l.v[j], 0);
		mq_names_free(&l);
		close(dfd);
	}
out:
	mq_names_free(&groups);
	if (gfd >= 0)
		close(gfd);
}

/* Whether a group or a dead letter still links to log/KEY: in a topic with
 * roles its consumers check each claim against that name (msgread.c), so
 * it stays until the last of them is settled. */
static bool
still_held(int lfd, const char *key)
{
	struct stat st;
	return mq_fstatat(lfd, key, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_nlink > 1;
}

/* Format 2: a segment goes when it is older than the retention (its
 * mtime: it is written once, by one publish) and every group is past its
 * last record; *removed counts its records.  One unlink per segment. */
static int
segments_gc(const struct mq_topic *t, unsigned k, int lfd, uint64_t hint,
    double now, double keep, uint64_t *removed)
{
	struct mq_names groups = { 0 }, l = { 0 };
	uint64_t end = hint, low;
	int rc = mq_seglog_end(lfd, &end);
	low = end;
	if (rc == 0)
		rc = mq_groups_read(t, &groups);
	for (size_t i = 0; rc == 0 && i < groups.n; i++)
		rc = mq_feed_low(t, k, groups.v[i], end, &low);
	if (rc == 0)
		rc = mq_names_read(lfd, NULL, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		uint64_t first;
		struct stat st;
		struct mq_seg sg;
		if (mq_seg_name(l.v[i], &first) < 0 || first >= low ||
		    mq_seglog_line(lfd, l.v[i], first, &sg, &st) < 0 ||
		    sg.first + sg.count > low ||
		    now - (double)st.st_mtime <= keep)
			continue;
		if (mq_unlinkat(lfd, l.v[i], 0) == 0)
			*removed += sg.count;
		else if (errno != ENOENT)
			rc = mq_err_sys("unlink log/%s", l.v[i]);
	}
	mq_names_free(&l);
	mq_names_free(&groups);
	return rc;
}

int
mq_topic_gc(mq_spool *sp, const char *topic, uint64_t *removed)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	double now = mq_now(), keep = t.conf.retention;
	bool roles = mq_roles_any(&t.conf.roles);
	int rc = 0;
	*removed = 0;
	int gfd = mq_dir_open(t.fd, "groups");
	if (gfd >= 0) {
		sweep_temporaries(gfd, now);
		close(gfd);
	}
	for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++) {
		struct mq_head h;
		int hfd = mq_head_open(t.pfd[k], MQ_HEAD_WRITE);
		int lfd = hfd < 0 ? -1 : mq_dir_open(t.pfd[k], "log");
		if (lfd < 0 || mq_head_read(hfd, &h) < 0)
			rc = -1;
		struct mq_names l = { 0 };
		if (rc == 0 && keep > 0 && t.conf.format == 2)
			rc = segments_gc(&t, k, lfd, h.committed, now, keep, removed);
		/* Format 2 with roles: dead letters imported have log/KEY
		 * names beside the segments (dlqarchive.c), kept the same. */
		if (rc == 0 && keep > 0 && (t.conf.format != 2 || roles))
			rc = mq_names_read(lfd, mq_is_key, &l);
		uint64_t seq;
		for (size_t i = 0; rc == 0 && i < l.n; i++) {
			if (mq_seq_of(l.v[i], &seq) < 0 || seq >= h.committed ||
			    now - mq_key_time(l.v[i]) <= keep ||
			    (roles && still_held(lfd, l.v[i])))
				continue;
			if (mq_remove_entry(lfd, l.v[i]) == 0)
				(*removed)++;
			else if (errno != ENOENT)
				rc = mq_err_sys("unlink log/%s", l.v[i]);
		}
		mq_names_free(&l);
		/* Under the publish lock: a publisher may be replacing an
		 * expired entry with a fresh one. */
		struct age age = { now, t.conf.dedup_window };
		if (rc == 0 && (rc = mq_head_lock(hfd, 1)) >= 0) {
			rc = mq_dedup_sweep(t.pfd[k], too_old, &age);
			mq_head_unlock(hfd);
		}
		if (rc == 0)
			groups_housekeeping(t.pfd[k], now, t.conf.dedup_window);
		if (lfd >= 0)
			close(lfd);
		if (hfd >= 0)
			close(hfd);
	}
	mq_topic_close(&t);
	return rc;
}
