/*
 * upgrade.c: a topic of format 1 converted into format 2 (mq-spool(5),
 * SEGMENTED STORAGE, Upgrade), by mq-topic upgrade.
 *
 * The switch of topic.conf to format=2 is the commit point of the whole
 * topic.  Before it, nothing that format 1 reads changes: the segments go
 * into log/ under names of 20 digits, which format 1 never takes for a
 * message (a KEY has its id after a dot), and each group gets a cursor
 * file, which format 1 never reads.  So a run that dies leaves a topic of
 * format 1 that works as it did, and the next run does the rest: it keeps
 * the segments that cover what they should, writes the ones missing, and
 * writes every cursor again.
 *
 * Every partition's head stays locked from the first segment to the
 * switch: no publisher, subscribe, unsubscribe or alter runs meanwhile,
 * so the log below each head's committed is what the segments hold, and
 * a group's cursor at committed leaves nothing of the log unnamed: what
 * a group has pending, in flight or delayed is its names, which stay
 * (with their bytes, the message file's: a consumer of format 2 reads a
 * name that is not empty as the message, mq_claim_read_at), and what it
 * acked has no name.  Consumers need no lock: the upgrade touches no
 * name of a group, so a claim, an ack, a nack or a dead letter made
 * meanwhile, by a consumer of either format, stays what it is.
 *
 * After the switch the log/ KEY names are no longer read by anyone and
 * are unlinked (a group's name or a dead letter holding the same file
 * keeps its bytes); a run that dies there is finished by the next, which
 * finds the topic of format 2 and unlinks what is left.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

/* A segment the upgrade writes holds at most a publish chunk's records,
 * and stops before this many bytes (a merge's bound: a reader loads a
 * segment whole), but for a record larger than that alone. */
#define UPGRADE_SEG_BYTES (4u << 20)

/* A segment already in log/: the range it covers. */
struct have {
	uint64_t first, count;
};

/* One partition's work, its directories open. */
struct part {
	const struct mq_topic *t;
	unsigned k;
	int logfd, tmpfd;
	uint64_t committed;
	struct mq_names keys;           /* log/ KEYs below committed, sorted */
	struct have *segs;              /* log/ segments, sorted by first */
	size_t nsegs;
	struct mq_seg_writer w;
	struct mq_upgrade_stats *st;
};

static bool
is_seg(const char *name)
{
	uint64_t first;
	return mq_seg_name(name, &first) == 0;
}

/* The spool replicates, or is a replica: its peers' copies of the topic
 * would stay of format 1, which a peer sends no segments to (mq-spool(5),
 * Replication, format 2), so an upgrade here alone would stop it.  A
 * spool that only has keys is not replicating. */
static int
replicated(mq_spool *sp)
{
	static const char *const state[] = {
		"replicate/seen", "replicate/role", "replicate/authorized_peers",
	};
	struct stat st;
	for (size_t i = 0; i < sizeof state / sizeof *state; i++) {
		if (mq_fstatat(sp->fd, state[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_size > 0)
			return mq_err(EX_UNAVAILABLE, "the spool replicates (it has "
			    "%s): its peers' copies would stay of format 1, which "
			    "take no segments: nothing changed", state[i]);
		if (errno != ENOENT && errno != ENOTDIR)
			return mq_err_sys("%s", state[i]);
	}
	struct mq_names peers = { 0 };
	int fd = mq_openat(sp->fd, "replicate/peers", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 :
		    mq_err_sys("replicate/peers");
	int rc = mq_names_read(fd, NULL, &peers);
	close(fd);
	if (rc == 0 && peers.n)
		rc = mq_err(EX_UNAVAILABLE, "the spool replicates to peers "
		    "(replicate/peers/%s): their copies would stay of format "
		    "1, which take no segments: nothing changed", peers.v[0]);
	mq_names_free(&peers);
	return rc;
}

/* What the upgrade writes must be writable, checked before anything is:
 * a read-only spool is refused with nothing changed. */
static int
writable(const struct mq_topic *t, const struct mq_names *groups)
{
	char p[MQ_NAME_MAX + 16];
	if (mq_faccessat(t->fd, ".", W_OK, AT_EACCESS) < 0)
		return mq_err(mq_errno_code(errno),
		    "cannot write the topic's directory: %s: nothing changed",
		    strerror(errno));
	for (unsigned k = 0; k < t->conf.partitions; k++) {
		static const char *const dirs[] = { ".", "log" };
		for (size_t i = 0; i < 2 + groups->n; i++) {
			const char *d = i < 2 ? dirs[i] : p;
			if (i >= 2 && mq_path(p, sizeof p, "g/%s",
			    groups->v[i - 2]) < 0)
				return -1;
			if (mq_faccessat(t->pfd[k], d, W_OK, AT_EACCESS) < 0)
				return mq_err(mq_errno_code(errno), "cannot write "
				    "p%u/%s: %s: nothing changed", k, d, strerror(errno));
		}
	}
	return 0;
}

static int
have_cmp(const void *a, const void *b)
{
	const struct have *x = a, *y = b;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The segments in log/ (an earlier run's), by first line; one that does
 * not read is unlinked: it was this upgrade's, never read by anyone. */
static int
list_segments(struct part *pp)
{
	struct mq_names l = { 0 };
	if (mq_names_read(pp->logfd, is_seg, &l) < 0)
		return -1;
	pp->segs = calloc(l.n ? l.n : 1, sizeof *pp->segs);
	int rc = pp->segs ? 0 : mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		struct mq_seg sg;
		uint64_t first;
		mq_seg_name(l.v[i], &first);
		if (mq_seglog_line(pp->logfd, l.v[i], first, &sg, NULL) == 0)
			pp->segs[pp->nsegs++] = (struct have){ first, sg.count };
		else if (errno == ENOENT || mq_errcode() == EX_DATAERR)
			rc = mq_unlinkat(pp->logfd, l.v[i], 0) < 0 &&
			    errno != ENOENT ? mq_err_sys("unlink log/%s", l.v[i]) : 0;
		else
			rc = -1;
	}
	mq_names_free(&l);
	if (rc == 0)
		qsort(pp->segs, pp->nsegs, sizeof *pp->segs, have_cmp);
	return rc;
}

/* Adds message log/KEY to the segment being built: 1 when added, 0 when
 * it does not read as the message its name says (left out: the groups'
 * names of it hold the same bytes, and their consumers dead-letter it as
 * unreadable, as in format 1), -1 on error.  *mtime is raised to its
 * publish time. */
static int
add_message(struct part *pp, const char *key, double *mtime)
{
	size_t limit = pp->t->conf.max_message_size + MQ_HEADER_BLOCK_MAX +
	    MQ_SEAL_OVERHEAD(MQ_SEAL_KEYS_MAX);
	char *buf = NULL, *copy = NULL;
	size_t len;
	struct mq_msg *m = NULL;
	if (mq_read_at_st(pp->logfd, key, limit, &buf, &len, NULL) < 0)
		return mq_errcode() == EX_DATAERR ? 0 : -1;
	/* Parsing cuts the copy into strings; the record is the file. */
	int rc = (copy = malloc(len + 1)) && (m = calloc(1, sizeof *m)) ? 0 :
	    mq_err_sys("malloc");
	if (rc == 0) {
		memcpy(copy, buf, len);
		copy[len] = 0;
		rc = mq_msg_parse(copy, len, m) < 0 ||
		    mq_msg_check_name(m, key) < 0 ? 0 : 1;
	}
	if (rc == 1) {
		size_t hlen = (size_t)((const char *)m->body - copy);
		rc = mq_seg_add(&pp->w, buf, hlen, buf + hlen, len - hlen) < 0 ?
		    -1 : 1;
	}
	double when = mq_key_time(key);
	if (rc == 1 && when > *mtime)
		*mtime = when;
	mq_msg_free(m);
	free(copy);
	free(buf);
	return rc;
}

/* Writes the segment built as log/<first> (through tmp/<first>, which
 * the next run removes when this one dies), its modification time the
 * last publish it holds: retention of format 2 goes by it, as format 1's
 * goes by each message's. */
static int
link_segment(struct part *pp, double mtime)
{
	char name[MQ_SEQ_DIGITS + 1];
	if (mq_seg_finish(&pp->w) < 0)
		return -1;
	snprintf(name, sizeof name, "%020" PRIu64, pp->w.first);
	struct timespec ts[2] = { { 0, UTIME_OMIT },
	    { (time_t)mtime, (long)((mtime - (double)(time_t)mtime) * 1e9) } };
	struct iovec iov = { pp->w.buf, pp->w.len };
	int fd = mq_openat(pp->tmpfd, name, O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, 0666);
	int rc = fd < 0 || mq_write_all(fd, &iov, 1) < 0 ||
	    (mtime > 0 && futimens(fd, ts) < 0) || fdatasync(fd) < 0 ? -1 : 0;
	if (fd >= 0 && close(fd) < 0)
		rc = -1;
	if (rc < 0)
		return mq_err_sys("write tmp/%s", name);
	/* Replaces only a name that did not read (list_segments). */
	if (mq_renameat(pp->tmpfd, name, pp->logfd, name) < 0)
		return mq_err_sys("rename tmp/%s into log/", name);
	pp->st->segments++;
	pp->st->records += pp->w.count;
	return 0;
}

/* Writes the segments that the KEYs from *i on need, up to the next gap,
 * the next segment already there, or a segment's bound. */
static int
write_run(struct part *pp, size_t *i, uint64_t until)
{
	uint64_t seq;
	double mtime = 0;
	mq_seq_of(pp->keys.v[*i], &seq);
	if (mq_seg_restart(&pp->w, seq) < 0)
		return -1;
	for (uint64_t want = seq; *i < pp->keys.n; want++) {
		mq_seq_of(pp->keys.v[*i], &seq);
		if (seq != want || seq >= until || pp->w.count >= MQ_CHUNK_MAX ||
		    (pp->w.count && pp->w.len >= UPGRADE_SEG_BYTES))
			break;
		int r = add_message(pp, pp->keys.v[*i], &mtime);
		if (r < 0)
			return -1;
		(*i)++;
		if (r == 0)
			break;          /* a gap in the segments */
	}
	return pp->w.count ? link_segment(pp, mtime) : 0;
}

/* Partition k's log as segments, under its head's lock. */
static int
partition_segments(struct part *pp)
{
	size_t s = 0;
	for (size_t i = 0; i < pp->keys.n;) {
		uint64_t seq;
		mq_seq_of(pp->keys.v[i], &seq);
		while (s < pp->nsegs &&
		    pp->segs[s].first + pp->segs[s].count <= seq)
			s++;
		if (s < pp->nsegs && pp->segs[s].first <= seq) {
			i++;            /* an earlier run's segment has it */
			continue;
		}
		uint64_t until = s < pp->nsegs ? pp->segs[s].first : UINT64_MAX;
		if (write_run(pp, &i, until) < 0)
			return -1;
	}
	return mq_fsync_fd(pp->logfd);
}

/* Below committed: the messages of the log (a publish that died above it
 * was undone by mq_lock_all's repair). */
static int
read_keys(struct part *pp)
{
	if (mq_names_read(pp->logfd, mq_is_key, &pp->keys) < 0)
		return -1;
	mq_names_sort(&pp->keys);
	size_t n = 0;
	for (size_t i = 0; i < pp->keys.n; i++) {
		uint64_t seq;
		if (mq_seq_of(pp->keys.v[i], &seq) == 0 && seq < pp->committed)
			pp->keys.v[n++] = pp->keys.v[i];
		else
			free(pp->keys.v[i]);
	}
	pp->keys.n = n;
	return 0;
}

/* Empties tmp/: in a partition of format 1 it holds nothing but what an
 * upgrade that died left there. */
static int
clear_tmp(int tmpfd)
{
	struct mq_names l = { 0 };
	int rc = mq_names_read(tmpfd, NULL, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (mq_unlinkat(tmpfd, l.v[i], 0) < 0 && errno != ENOENT)
			rc = mq_err_sys("unlink tmp/%s", l.v[i]);
	mq_names_free(&l);
	return rc;
}

static int
upgrade_partition(const struct mq_topic *t, unsigned k, int hfd,
    struct mq_upgrade_stats *st)
{
	static const struct mq_dir_spec tmp = { "tmp", MQ_DIR_LOG };
	struct mq_head h;
	struct part pp = { .t = t, .k = k, .logfd = -1, .tmpfd = -1, .st = st };
	int rc = mq_head_read(hfd, &h);
	pp.committed = h.committed;
	if (rc == 0)
		rc = mq_perm_mkdirs(t->pfd[k], NULL, &tmp, 1, &t->conf.roles);
	if (rc == 0 && ((pp.tmpfd = mq_dir_open(t->pfd[k], "tmp")) < 0 ||
	    (pp.logfd = mq_dir_open(t->pfd[k], "log")) < 0))
		rc = -1;
	if (rc == 0)
		rc = clear_tmp(pp.tmpfd);
	if (rc == 0)
		rc = mq_seg_begin(&pp.w, 0);
	if (rc == 0)
		rc = read_keys(&pp);
	if (rc == 0)
		rc = list_segments(&pp);
	if (rc == 0)
		rc = partition_segments(&pp);
	mq_seg_writer_free(&pp.w);
	mq_names_free(&pp.keys);
	free(pp.segs);
	if (pp.tmpfd >= 0)
		close(pp.tmpfd);
	if (pp.logfd >= 0)
		close(pp.logfd);
	return rc;
}

/* Each group's cursor in partition k at the head's committed: what is
 * below it is the group's names or settled. */
static int
set_cursors(const struct mq_topic *t, unsigned k, int hfd,
    const struct mq_names *groups)
{
	struct mq_head h;
	int rc = mq_head_read(hfd, &h);
	for (size_t i = 0; rc == 0 && i < groups->n; i++) {
		char path[MQ_NAME_MAX + 16];
		int fd = mq_cursor_open(t, k, groups->v[i], O_RDWR | O_CREAT);
		rc = fd < 0 ? -1 : mq_cursor_write(fd, h.committed, 1);
		if (fd >= 0)
			close(fd);
		if (rc == 0)
			rc = mq_path(path, sizeof path, "g/%s", groups->v[i]);
		if (rc == 0) {
			int dfd = mq_dir_open(t->pfd[k], path);
			rc = dfd < 0 ? -1 : mq_fsync_fd(dfd);
			if (dfd >= 0)
				close(dfd);
		}
	}
	return rc;
}

static int
format2(struct mq_conf *kv, const void *ctx)
{
	(void)ctx;
	mq_conf_del(kv, "format");
	return mq_conf_add(kv, "format", "2");
}

/* After the switch: the log/ KEYs, read by no one now. */
static int
drop_keys(const struct mq_topic *t, struct mq_upgrade_stats *st)
{
	int rc = 0;
	for (unsigned k = 0; rc == 0 && k < t->conf.partitions; k++) {
		struct mq_names l = { 0 };
		int lfd = mq_dir_open(t->pfd[k], "log");
		rc = lfd < 0 ? -1 : mq_names_read(lfd, mq_is_key, &l);
		for (size_t i = 0; rc == 0 && i < l.n; i++) {
			if (mq_unlinkat(lfd, l.v[i], 0) == 0)
				st->dropped++;
			else if (errno != ENOENT)
				rc = mq_err_sys("unlink log/%s", l.v[i]);
		}
		mq_names_free(&l);
		if (lfd >= 0)
			close(lfd);
	}
	return rc;
}

/* Under every head's lock: the segments, the cursors, the switch.  1
 * when another upgrade switched the topic first. */
static int
upgrade_locked(struct mq_topic *t, const int *hfds, struct mq_names *groups,
    struct mq_upgrade_stats *st)
{
	/* What an alter or another upgrade did before the locks. */
	struct mq_topic_conf now;
	int rc = mq_topic_conf_now(t, &now);
	if (rc == 0 && now.format == 2)
		return 1;
	if (rc == 0 && now.partitions != t->conf.partitions)
		rc = mq_err(EX_TEMPFAIL, "topic %s changed while the upgrade "
		    "started: nothing changed, run it again", t->name);
	if (rc == 0) {
		mq_names_free(groups);
		rc = mq_groups_read(t, groups);
	}
	for (unsigned k = 0; rc == 0 && k < t->conf.partitions; k++)
		rc = upgrade_partition(t, k, hfds[k], st);
	for (unsigned k = 0; rc == 0 && k < t->conf.partitions; k++)
		rc = set_cursors(t, k, hfds[k], groups);
	st->partitions = t->conf.partitions;
	st->groups = groups->n;
	/* The commit point. */
	return rc == 0 ? mq_topic_conf_edit(t, format2, NULL) : -1;
}

int
mq_topic_upgrade(mq_spool *sp, const char *topic,
    struct mq_upgrade_stats *st)
{
	struct mq_topic t;
	*st = (struct mq_upgrade_stats){ 0 };
	if (sp->readonly)
		return mq_err(EX_NOPERM, "the spool is open read-only");
	if (replicated(sp) < 0 || mq_fence_check(sp) < 0 ||
	    mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	struct mq_names groups = { 0 };
	int *hfds = NULL;
	/* Format 2: done, or switched by a run that died before its end. */
	int rc = t.conf.format == 2 ? 1 : 0;
	/* As a topic made there (create.c): format 1 where locks stay
	 * within one mount. */
	if (rc == 0)
		rc = mq_format2_refused(t.fd, topic);
	if (rc == 0 && !(hfds = calloc(t.conf.partitions, sizeof *hfds)))
		rc = mq_err_sys("malloc");
	if (rc == 0)
		rc = mq_groups_read(&t, &groups);
	if (rc == 0)
		rc = writable(&t, &groups);
	if (rc == 0 && (rc = mq_lock_all(&t, hfds)) == 0) {
		rc = upgrade_locked(&t, hfds, &groups, st);
		mq_unlock_all(&t, hfds);
	}
	if (rc >= 0 && drop_keys(&t, st) < 0)
		rc = -1;
	free(hfds);
	mq_names_free(&groups);
	mq_topic_close(&t);
	return rc;
}
