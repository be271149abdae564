/*
 * feed.c: a group of format 2 takes the next records of its partition's
 * log into its queue (mq-spool(5), SEGMENTED STORAGE, Feed).
 *
 * Format 2 links nothing at publish: a group's cursor says how far it has
 * taken the log, and a consumer that finds its queue used up feeds it,
 * under the cursor's lock: reads up to FEED_MAX records from the cursor
 * on, applies the group's filter, makes for each record that passes an
 * empty file named by its KEY in new/ (or delay/<due>.KEY for a message
 * not yet due), syncs the directories, and raises the cursor past them
 * (the commit point).  Consumers claim only names below the cursor, as
 * format 1's claim only names below the head's committed, so a feed that
 * died halfway left names nobody claims; the next feed makes them again
 * (EEXIST: already there).  From there on a message is a name as in
 * format 1 (claimed, acked, given back, dead-lettered); its bytes stay in
 * the log, and a consumer reads them from there (msgread.c).  A record
 * that cannot be read gets a name with no id, which its consumer
 * dead-letters as unreadable.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

/* Records a feed takes at most: a consumer's batch, not the backlog. */
#define FEED_MAX 512

static const char no_id[MQ_ID_LEN + 1] = "00000000000000000000000000000000";

/* The first record from *next on published at or after from_time (as
 * an offset would: ids carry the publisher's clock), below end. */
static int
skip_older(const struct mq_topic *t, unsigned k, double from_time,
    uint64_t end, uint64_t *next)
{
	for (;; (*next)++) {
		struct mq_msg *m;
		int r = mq_record_next(t, k, next, end, &m);
		if (r <= 0)
			return r;
		if (!m)
			continue;
		double published = mq_id_time(m->id);
		mq_msg_free(m);
		if (published >= from_time)
			break;
	}
	return 0;
}

/* Where the group starts in partition k when its cursor was never
 * written: its conf's from.p<k>, else its start.p<k>; with a from-time,
 * the first record from there published at or after it. */
static int
group_start(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t end, uint64_t *next)
{
	struct mq_conf kv;
	char key[32], what[MQ_NAME_MAX + 16];
	uint64_t start;
	double from_time;
	if (mq_group_conf_read(t, group, &kv) < 0)
		return -1;
	snprintf(what, sizeof what, "groups/%s.conf", group);
	snprintf(key, sizeof key, "start.p%u", k);
	int rc = mq_conf_get_u64(&kv, key, 0, &start, what);
	snprintf(key, sizeof key, "from.p%u", k);
	if (rc == 0)
		rc = mq_conf_get_u64(&kv, key, start, next, what);
	if (rc == 0)
		rc = mq_conf_get_double(&kv, "from-time", 0, &from_time, what);
	mq_conf_free(&kv);
	if (rc == 0 && from_time > 0)
		rc = skip_older(t, k, from_time, start < end ? start : end, next);
	return rc;
}

/* Under the cursor's lock (held by the caller): the cursor's next (one
 * never written: where the group starts; *unset says so) and the log's
 * end, from the head's hint.  A cursor past the end is one a file system
 * served the log stale to: the cursor decides. */
static int
cursor_and_end(const struct mq_topic *t, unsigned k, const char *group,
    int hfd, int cursorfd, int claimsfd, uint64_t *next, uint64_t *end,
    bool *unset)
{
	struct mq_head h;
	int rc = mq_cursor_read(cursorfd, next);
	*unset = rc == 1;
	if (rc < 0 || mq_head_read(hfd, &h) < 0 ||
	    mq_topic_log_end(t, k, h.committed, end) < 0)
		return -1;
	if (*unset && group_start(t, k, group, *end, next) < 0)
		return -1;
	/* Where the group starts is found once: written, it is also the
	 * cursor's block, taken while there is room (a claim, a feed on a
	 * full file system rewrite it in place). */
	if (*unset && mq_cursor_write(cursorfd, *next, 0) < 0)
		return -1;
	/* The cursor is raised lazily past claims (claims.c); a feed also
	 * passes those a consumer took where claims are taken. */
	if ((claimsfd >= 0 ? mq_claims_end(claimsfd, 1, next) :
	    mq_claims_group_end(t, k, group, 1, next)) < 0)
		return -1;
	if (*next > *end)
		*end = *next;
	return 0;
}

/* The file a feed's names share (an inode per batch, not per name: an
 * inode allocation is what a name costs, ext4's allocator walking its
 * recently freed inodes on a busy queue), and where it is. */
struct feedfile {
	int dirfd;
	char name[MQ_KEY_LEN + 32];
	bool linked;               /* names share it: not on a shared fs */
};

/* Makes dirfd/NAME: a link to the batch's file, or the batch's file (an
 * empty one this feed created: never a name it found, which a consumer
 * with write access may have made, of any type).  A name already there
 * is no error (a feed that died made it). */
static int
make_name(int dirfd, const char *name, struct feedfile *ff)
{
	if (ff->dirfd >= 0) {
		if (mq_linkat(ff->dirfd, ff->name, dirfd, name, 0) == 0 ||
		    errno == EEXIST)
			return 0;
		/* Full, or promoted out of delay/ meanwhile: a new one. */
		if (errno != EMLINK && errno != ENOENT)
			return mq_err_sys("feed %s", name);
	}
	int fd = mq_openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return errno == EEXIST ? 0 : mq_err_sys("feed %s", name);
	if (close(fd) < 0)
		return mq_err_sys("feed %s", name);
	if (ff->linked)
		ff->dirfd = dirfd;
	snprintf(ff->name, sizeof ff->name, "%s", name);
	return 0;
}

/* The batch read: each record's sequence number and message, NULL when
 * it cannot be read; past the last, where the cursor goes. */
struct batch {
	uint64_t seq[FEED_MAX];
	struct mq_msg *m[FEED_MAX];
	bool match[FEED_MAX];
	size_t n;
	uint64_t upto;
};

static void
batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		mq_msg_free(b->m[i]);
	b->n = 0;
}

/* Reads up to max records from next on into b, each checked by its
 * frame and hash, and applies the filter f (NULL: none) to them.  A gap
 * in the log (what retention removed, numbers a head skipped) is passed
 * over, at the start only when contiguous (a claim is a range); a record
 * there that does not read is taken all the same, to be dead-lettered. */
static int
read_batch(const struct mq_topic *t, unsigned k, mq_filter *f,
    uint64_t next, uint64_t end, size_t max, bool contiguous,
    struct batch *b)
{
	int rc = 0;
	b->upto = next;
	while (b->n < max) {
		struct mq_msg *m;
		uint64_t at = b->upto;
		int r = mq_record_next(t, k, &b->upto, end, &m);
		if (r <= 0) {
			rc = r;
			break;
		}
		if (contiguous && b->n && b->upto != at) {
			mq_msg_free(m);
			b->upto = at;
			break;
		}
		b->seq[b->n] = b->upto++;
		b->match[b->n] = true;
		b->m[b->n++] = m;
	}
	struct mq_msg *ok[FEED_MAX];
	bool okmatch[FEED_MAX];
	size_t nok = 0;
	for (size_t i = 0; f && rc == 0 && i < b->n; i++)
		if (b->m[i])
			ok[nok++] = b->m[i];
	if (nok && mq_filter_match_many(f, ok, nok, okmatch) < 0)
		rc = -1;
	for (size_t i = 0, j = 0; nok && rc == 0 && i < b->n; i++)
		if (b->m[i])
			b->match[i] = okmatch[j++];
	return rc;
}

/* Names the batch's records in the group's queue (only_delayed: those
 * not due yet, a claim's exceptions). */
static int
name_batch(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_gdirs *d, const struct batch *b, bool only_delayed,
    bool *delayed)
{
	double now = mq_now();
	/* A dead letter's copy swaps its name for a file of its own
	 * (msgread.c), which a shared file system may not do: names of
	 * their own there. */
	struct feedfile ff = { .dirfd = -1, .linked = !mq_fs_shared(d->newfd) };
	for (size_t i = 0; i < b->n; i++) {
		const struct mq_msg *m = b->m[i];
		char key[MQ_KEY_LEN + 1], name[MQ_KEY_LEN + 32];
		if ((m && !b->match[i]) || (only_delayed &&
		    !(m && m->deliver_at > now)))
			continue;
		snprintf(key, sizeof key, "%020" PRIu64 ".%s", b->seq[i],
		    m ? m->id : no_id);
		int dirfd = d->newfd;
		if (m && m->deliver_at > now) {
			snprintf(name, sizeof name, "%020" PRIu64 ".%s",
			    (uint64_t)ceil(m->deliver_at * 1000), key);
			if (mq_gdirs_delay(t, k, group, d) < 0)
				return -1;
			dirfd = d->delayfd;
			*delayed = true;
		} else {
			snprintf(name, sizeof name, "%s", key);
		}
		if (make_name(dirfd, name, &ff) < 0)
			return -1;
	}
	return 0;
}

int
mq_feed(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_gdirs *d, int hfd, int cursorfd, mq_filter *f,
    uint64_t *cursor)
{
	if (mq_file_lock(cursorfd, 1, "cursor") < 0)
		return -1;
	uint64_t next = 0, end = 0;
	bool unset = false;
	struct batch *b = calloc(1, sizeof *b);
	int rc = b ? cursor_and_end(t, k, group, hfd, cursorfd, -1, &next, &end,
	    &unset) : mq_err_sys("malloc");
	if (rc == 0)
		rc = read_batch(t, k, f, next, end, FEED_MAX, false, b);
	bool delayed = false;
	if (rc == 0 && b->n)
		rc = name_batch(t, k, group, d, b, false, &delayed);
	/* The names are there for good before the cursor says so. */
	if (rc == 0 && b->n && mq_fsync_fd(d->newfd) < 0)
		rc = -1;
	if (rc == 0 && delayed && mq_fsync_fd(d->delayfd) < 0)
		rc = -1;
	/* Not synced: lost in a crash, it is an older cursor, and the next
	 * feed names again what this one named (those already acked come
	 * again, as an ack that was not synced does); the names, synced
	 * first, are never behind it. */
	if (rc == 0 && (b->upto > next || unset))
		rc = mq_cursor_write(cursorfd, b->upto, 0);
	if (rc == 0)
		*cursor = b->upto;
	int fed = rc == 0 ? (int)b->n : -1;
	if (b)
		batch_free(b);
	free(b);
	mq_lock_drop(cursorfd, MQ_LOCK_WRITE);
	return fed;
}

int
mq_claims_take(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_gdirs *d, int hfd, int cursorfd, int claimsfd, mq_filter *f,
    unsigned max, double lease, struct mq_taken *tk)
{
	if (mq_file_lock(cursorfd, 1, "cursor") < 0)
		return -1;
	uint64_t next = 0, end = 0;
	bool unset = false, delayed = false;
	struct batch *b = calloc(1, sizeof *b);
	int rc = b ? cursor_and_end(t, k, group, hfd, cursorfd, claimsfd,
	    &next, &end, &unset) : mq_err_sys("malloc");
	if (max > MQ_CLAIM_MAX)
		max = MQ_CLAIM_MAX;
	if (rc == 0)
		rc = read_batch(t, k, f, next, end, max ? max : 1, true, b);
	/* Nothing but numbers no segment holds up to the log's end (a head
	 * set past them, as by dead letters imported): passed, as a feed of
	 * names passes them, when no claim is ahead of the cursor (the
	 * cursor never passes a claim's records). */
	uint64_t cur;
	if (rc == 0 && b->n == 0 && b->upto > next &&
	    mq_cursor_read(cursorfd, &cur) == 0 && cur == next)
		rc = mq_cursor_write(cursorfd, b->upto, 0);
	/* What is not due yet waits in delay/ as in format 1, named (and
	 * synced) before the claim settles it. */
	if (rc == 0 && b->n)
		rc = name_batch(t, k, group, d, b, true, &delayed);
	if (rc == 0 && delayed && mq_fsync_fd(d->delayfd) < 0)
		rc = -1;
	double now = mq_now();
	memset(&tk->st, 0, sizeof tk->st);
	tk->pos = 0;
	tk->c.n = 0;
	/* A replica settles the filtered ones (a K record) and names the
	 * delayed ones (L), as this claim does. */
	struct mq_claim_state filtered = { 0 };
	struct mq_jbuf jb = { 0 };
	for (size_t i = 0; rc == 0 && i < b->n; i++) {
		struct mq_msg *m = b->m[i];
		b->m[i] = NULL;
		if (m && (!b->match[i] || m->deliver_at > now)) {
			mq_claim_settle(&tk->st, (unsigned)i);
			if (!b->match[i])
				mq_claim_settle(&filtered, (unsigned)i);
			else {
				char key[MQ_KEY_LEN + 1];
				snprintf(key, sizeof key, "%020" PRIu64 ".%s",
				    b->seq[i], m->id);
				mq_journal_change_add(&jb, t->name, 'L', k, group,
				    key);
			}
			mq_msg_free(m);
			m = NULL;
		}
		tk->m[i] = m;
	}
	/* The commit point: the claim's file. */
	if (rc == 0 && b->n) {
		tk->c.first = b->seq[0];
		tk->c.n = (unsigned)b->n;
		mq_hex_random(tk->c.token, 8);
		tk->st.deadline_ms = (uint64_t)ceil((now + lease) * 1000);
		rc = mq_claim_name_make(&tk->c, tk->name, sizeof tk->name);
		if (rc == 0 && jb.len)
			mq_journal_write(t->sp, &jb, NULL);
		if (rc == 0)
			rc = mq_claims_create(cursorfd, claimsfd, &tk->c, &tk->st);
		if (rc == 0)
			mq_claims_journal(t, k, group, tk->c.first, tk->c.n,
			    filtered.settled);
	}
	mq_jbuf_free(&jb);
	int took = rc == 0 ? (int)b->n : -1, saved = errno;
	if (rc < 0)
		mq_taken_clear(tk);
	if (b)
		batch_free(b);
	free(b);
	mq_lock_drop(cursorfd, MQ_LOCK_WRITE);
	errno = saved;                  /* ENOSPC: the caller feeds names */
	return took;
}

void
mq_taken_clear(struct mq_taken *tk)
{
	for (unsigned i = 0; i < tk->c.n; i++) {
		mq_msg_free(tk->m[i]);
		tk->m[i] = NULL;
	}
	tk->c.n = tk->pos = 0;
}

int
mq_feed_fate(mq_filter *f, const struct mq_msg *m, double now)
{
	int match = f ? mq_filter_match(f, m) : 1;
	if (match <= 0)
		return match < 0 ? -1 : MQ_FATE_FILTERED;
	if (m->expires > 0 && now > m->expires)
		return MQ_FATE_EXPIRED;
	return m->deliver_at > now ? MQ_FATE_DELAYED : MQ_FATE_NEW;
}

int
mq_feed_skip(const struct mq_topic *t, unsigned k, const char *group,
    int hfd, uint64_t to, uint64_t *skipped)
{
	uint64_t next, end;
	bool unset;
	*skipped = 0;
	int fd = mq_cursor_open(t, k, group, O_RDWR | O_CREAT);
	if (fd < 0)
		return -1;
	int rc = mq_file_lock(fd, 1, "cursor") < 0 ||
	    cursor_and_end(t, k, group, hfd, fd, -1, &next, &end, &unset) < 0 ?
	    -1 : 0;
	if (rc == 0 && to > next) {
		rc = mq_cursor_write(fd, to, 1);
		*skipped = to - next;
	}
	close(fd);
	return rc;
}

/* The least sequence number among the names of dir (delay/ names start
 * with their due time: skip 21), lowered into *low. */
static int
names_low(int pfd, const char *path, size_t skip, uint64_t *low)
{
	struct mq_names l = { 0 };
	if (mq_names_read_at(pfd, path, NULL, &l) < 0)
		return -1;
	for (size_t i = 0; i < l.n; i++) {
		uint64_t seq;
		if (strlen(l.v[i]) > skip && mq_seq_of(l.v[i] + skip, &seq) == 0 &&
		    seq < *low)
			*low = seq;
	}
	mq_names_free(&l);
	return 0;
}

/* Below the cursor every record is settled or named (claims.c). */
int
mq_feed_written(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t end, uint64_t *next)
{
	int fd = mq_cursor_open(t, k, group, O_RDONLY);
	int rc = fd < 0 ? (errno == ENOENT ? 1 : -1) :
	    mq_cursor_read(fd, next);
	if (fd >= 0)
		close(fd);
	if (rc == 1)
		rc = group_start(t, k, group, end, next);
	return rc;
}

int
mq_feed_cursor(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t end, uint64_t *next)
{
	if (mq_feed_written(t, k, group, end, next) < 0)
		return -1;
	return mq_claims_group_end(t, k, group, 0, next);
}

int
mq_feed_low(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t end, uint64_t *low)
{
	char path[MQ_NAME_MAX + 16];
	uint64_t g;
	/* The cursor as written, not the group's next record: a claim's
	 * records past it have no name, and may be taken back. */
	int rc = mq_feed_written(t, k, group, end, &g);
	static const char *const q[] = { "new", "cur", "delay" };
	for (size_t i = 0; rc == 0 && i < 3; i++) {
		if (mq_path(path, sizeof path, "g/%s/%s", group, q[i]) < 0)
			return -1;
		rc = names_low(t->pfd[k], path, i == 2 ? MQ_SEQ_DIGITS + 1 : 0,
		    &g);
	}
	/* Lowered, never raised: the least of every group's. */
	if (rc == 0 && g < *low)
		*low = g;
	return rc;
}

int
mq_claims_fill(const struct mq_topic *t, unsigned k, const char *group,
    int hfd, int cursorfd, int claimsfd, uint64_t to)
{
	if (mq_file_lock(cursorfd, 1, "cursor") < 0)
		return -1;
	uint64_t next = 0, end = 0;
	bool unset = false;
	int rc = cursor_and_end(t, k, group, hfd, cursorfd, claimsfd, &next, &end,
	    &unset);
	struct mq_seglog *l = rc == 0 ? mq_topic_seglog(t, k) : NULL;
	if (rc == 0 && !l)
		rc = -1;
	if (to > end)
		to = end;
	while (rc == 0 && next < to) {
		/* What no segment holds is no one's to take: passed over. */
		int r = mq_seglog_seek(l, next);
		if (r == 0 && (r = mq_seglog_gap(l, next, &next)) >= 0)
			continue;
		if (r < 0) {
			rc = -1;
			break;
		}
		/* A claim holds records, not the numbers of a gap: it ends
		 * where the segment does at the latest. */
		uint64_t n = to - next, left = l->seg.first + l->seg.count - next;
		if (n > left)
			n = left;
		if (n > MQ_CLAIM_MAX)
			n = MQ_CLAIM_MAX;
		struct mq_claim_name c = { .first = next, .n = (unsigned)n };
		struct mq_claim_state st = { 0 };
		mq_hex_random(c.token, 8);
		rc = mq_claims_create(cursorfd, claimsfd, &c, &st);
		next += n;
	}
	mq_lock_drop(cursorfd, MQ_LOCK_WRITE);
	return rc;
}
