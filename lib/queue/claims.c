/*
 * claims.c: a group's claims in a partition of format 2 (mq-spool(5),
 * SEGMENTED STORAGE, Claims).
 *
 * A consumer of a group that is not ordered takes records from the log
 * as a claim (feed.c, mq_claims_take): one file in claims/ per batch,
 * made under the cursor's lock, which is its commit point.  Settling a
 * record sets its bit, under the same lock; a record that leaves the
 * happy path (a nack, a rejection, a lease that expired, a dead letter)
 * is detached first: it gets a name of format 1 in new/ or cur/, synced,
 * and then its bit.
 *
 * The cursor file is raised lazily: a group's next record is the larger
 * of the cursor and the end of its last claim, and the cursor is raised
 * only to the first record that no claim has settled (or past all when
 * none is left), once a claim is settled whole.  So whatever a crash of
 * the host keeps of these writes, every record the cursor passed is
 * settled or a synced name: a claim that a crash lost is a range past
 * the cursor, taken again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

static const char no_id[MQ_ID_LEN + 1] = "00000000000000000000000000000000";

/* The spares: two files the size of a claim's line, not named as
 * claims (no reader of claims/ sees them), that a taker writes a claim
 * into and renames to its name when the file system has no inode, or no
 * block, for a new one; so consumers go on draining a full file system
 * (two: a consumer may take the next claim before it acks the last).  A
 * claim settled whole is renamed onto the first instead of unlinked,
 * which keeps one there; both are made where claims/ is opened to take
 * claims, when missing. */
static const char *const spares[] = { ".spare0", ".spare1" };

static void
spares_make(int claimsfd)
{
	const struct mq_claim_state none = { 0 };
	for (size_t i = 0; i < 2; i++) {
		int fd = mq_openat(claimsfd, spares[i], O_WRONLY | O_CREAT |
		    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0)
			continue;
		if (mq_claim_state_write(fd, &none, 0) < 0)
			mq_unlinkat(claimsfd, spares[i], 0);
		close(fd);
	}
}

/* A claim written into a spare, then renamed to name (the commit point,
 * as the create is for a new file): 0, or -1 with errno as it was. */
static int
claim_from_spare(int claimsfd, const char *name,
    const struct mq_claim_state *st)
{
	int was = errno;
	for (size_t i = 0; i < 2; i++) {
		int fd = mq_file_open(claimsfd, spares[i], O_WRONLY, 0, NULL);
		if (fd < 0)
			continue;
		int rc = mq_claim_state_write(fd, st, 0);
		if (close(fd) == 0 && rc == 0 && renameat2(claimsfd, spares[i],
		    claimsfd, name, RENAME_NOREPLACE) == 0)
			return 0;
	}
	errno = was;
	return -1;
}

/* A claim done with: kept as the first spare. */
static int
claim_remove(int claimsfd, const char *name)
{
	if (mq_renameat(claimsfd, name, claimsfd, spares[0]) < 0 &&
	    errno != ENOENT)
		return mq_err_sys("unlink claim %s", name);
	return 0;
}

int
mq_cursor_open(const struct mq_topic *t, unsigned k, const char *group,
    int flags)
{
	char path[MQ_NAME_MAX + 16];
	if (mq_path(path, sizeof path, "g/%s/cursor", group) < 0)
		return -1;
	return mq_file_open(t->pfd[k], path, flags, 0666, NULL);
}

int
mq_claims_open(const struct mq_topic *t, unsigned k, const char *group,
    int create)
{
	char path[MQ_NAME_MAX + 16];
	if (mq_path(path, sizeof path, "g/%s/claims", group) < 0)
		return -1;
	if (!create && mq_faccessat(t->pfd[k], path, F_OK,
	    AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return -2;
	if (create && mq_mkdir(t->pfd[k], path) < 0)
		return -1;
	int fd = mq_dir_open(t->pfd[k], path);
	if (fd >= 0 && create)
		spares_make(fd);
	return fd;
}

static bool
is_claim(const char *name)
{
	struct mq_claim_name c;
	return mq_claim_name_parse(name, &c) == 0;
}

int
mq_claims_end(int claimsfd, int repair, uint64_t *end)
{
	struct mq_names l = { 0 };
	int rc = mq_names_read(claimsfd, is_claim, &l);
	/* Claims never overlap, so the last name ends the last range.  An
	 * empty one is a taker's that died before writing it, and only the
	 * last can be: the next taker (repair, under the lock) removes it,
	 * its range never handed out. */
	size_t n = l.n;
	struct stat st;
	while (rc == 0 && repair && n && mq_fstatat(claimsfd, l.v[n - 1], &st,
	    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
		if (mq_unlinkat(claimsfd, l.v[n - 1], 0) < 0 && errno != ENOENT)
			rc = mq_err_sys("unlink claim %s", l.v[n - 1]);
		n--;
	}
	struct mq_claim_name c;
	if (rc == 0 && n && mq_claim_name_parse(l.v[n - 1], &c) == 0 &&
	    c.first + c.n > *end)
		*end = c.first + c.n;
	mq_names_free(&l);
	return rc;
}

int
mq_claims_group_end(const struct mq_topic *t, unsigned k, const char *group,
    int repair, uint64_t *end)
{
	int dfd = mq_claims_open(t, k, group, 0);
	if (dfd == -2)
		return 0;
	if (dfd < 0)
		return -1;
	int rc = mq_claims_end(dfd, repair, end);
	close(dfd);
	return rc;
}

/* A claim's state, read: 0, or 1 when it is empty (a taker that died
 * before it wrote it; nothing of it was handed out).  A line that does
 * not check (torn by a loss of power) is read as nothing settled, its
 * lease over: the records are delivered again rather than lost. */
static int
state_read(int fd, struct mq_claim_state *st)
{
	int rc = mq_claim_state_read(fd, st);
	if (rc < 0 && mq_errcode() == EX_CONFIG) {
		memset(st, 0, sizeof *st);
		return 0;
	}
	return rc;
}

/* One claim as read. */
struct seen {
	struct mq_claim_name c;
	struct mq_claim_state st;
	unsigned left;                  /* records not settled */
	uint64_t low;                   /* the first of them */
	bool empty;                     /* not written: its taker died, or
					   is making it (read-only readers) */
	bool gone;                      /* unlinked since it was listed */
};

/* Lists and reads the claims of claimsfd, in order: *v (free it) and l
 * its names. */
static int
read_claims(int claimsfd, struct mq_names *l, struct seen **out)
{
	*out = NULL;
	int rc = mq_names_read(claimsfd, is_claim, l);
	struct seen *v = rc == 0 && l->n ? calloc(l->n, sizeof *v) : NULL;
	if (rc == 0 && l->n && !v)
		rc = mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < l->n; i++) {
		mq_claim_name_parse(l->v[i], &v[i].c);
		int fd = mq_file_open(claimsfd, l->v[i], O_RDONLY, 0, NULL);
		if (fd < 0) {
			v[i].gone = true;
			rc = errno == ENOENT ? 0 : -1;
			continue;
		}
		int r = state_read(fd, &v[i].st);
		close(fd);
		if (r < 0) {
			rc = -1;
			break;
		}
		v[i].empty = r == 1;
		v[i].left = mq_claim_unsettled(&v[i].st, v[i].c.n);
		for (unsigned j = 0; v[i].left && j < v[i].c.n; j++)
			if (!mq_claim_settled(&v[i].st, j)) {
				v[i].low = v[i].c.first + j;
				break;
			}
	}
	if (rc < 0) {
		free(v);
		mq_names_free(l);
		return -1;
	}
	*out = v;
	return 0;
}

/* Under the lock: raises the cursor to the first record no claim has
 * settled (past every claim when none is left), then unlinks the claims
 * settled whole but the last when others are left (it says where the
 * group's next record is), and those its taker died making. */
static int
finish(int cursorfd, int claimsfd)
{
	struct mq_names l = { 0 };
	struct seen *v;
	uint64_t cursor = 0, end = 0, low = UINT64_MAX;
	int crc = mq_cursor_read(cursorfd, &cursor);
	if (crc < 0 || read_claims(claimsfd, &l, &v) < 0)
		return -1;
	size_t last = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (v[i].gone || v[i].empty)
			continue;
		if (v[i].left && v[i].low < low)
			low = v[i].low;
		if (v[i].c.first + v[i].c.n > end) {
			end = v[i].c.first + v[i].c.n;
			last = i;
		}
	}
	uint64_t to = low < end ? low : end;
	int rc = 0;
	/* Nothing to say when no claim was made (an unset cursor is where
	 * the group's conf starts it). */
	if (end && (crc == 1 || to > cursor))
		rc = mq_cursor_write(cursorfd, to > cursor ? to : cursor, 0);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (!v[i].gone && (v[i].empty || (!v[i].left &&
		    (low == UINT64_MAX || i != last))))
			rc = claim_remove(claimsfd, l.v[i]);
	free(v);
	mq_names_free(&l);
	return rc;
}

int
mq_claims_create(int cursorfd, int claimsfd, const struct mq_claim_name *c,
    const struct mq_claim_state *st)
{
	char name[64];
	if (mq_claim_name_make(c, name, sizeof name) < 0)
		return -1;
	int fd = mq_openat(claimsfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0666);
	int rc = fd < 0 ? mq_err_sys("claim %s", name) :
	    mq_claim_state_write(fd, st, 0);
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = mq_err_sys("claim %s", name);
	if (fd >= 0 && rc < 0) {
		int saved = errno;
		mq_unlinkat(claimsfd, name, 0);
		errno = saved;
	}
	/* A full file system, of inodes or of blocks: a spare, which has
	 * both; without one, no claim (the caller names what it took,
	 * which needs no data block). */
	if (rc < 0 && (errno == ENOSPC || errno == EDQUOT) &&
	    claim_from_spare(claimsfd, name, st) == 0)
		rc = 0;
	if (rc < 0)
		return -1;
	/* Settled whole at once (filtered out, delayed): passed. */
	if (rc == 0 && !mq_claim_unsettled(st, c->n))
		rc = finish(cursorfd, claimsfd);
	return rc;
}

/* A claim opened and read under the lock, or EX_NOINPUT when it is gone
 * (settled, or taken back when its lease expired). */
static int
claim_load(int claimsfd, const char *name, struct mq_claim_name *c,
    struct mq_claim_state *st)
{
	if (mq_claim_name_parse(name, c) < 0)
		return mq_err(EX_DATAERR, "bad claim name %s", name);
	int fd = mq_file_open(claimsfd, name, O_RDWR, 0, NULL);
	if (fd < 0 && errno == ENOENT)
		return mq_err(EX_NOINPUT, "claim %s is gone (settled, or its "
		    "lease expired)", name);
	if (fd < 0)
		return -1;
	int r = state_read(fd, st);
	if (r == 1)
		r = mq_err(EX_NOINPUT, "claim %s was never made", name);
	if (r < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Writes a claim back, or finishes it once it is settled whole. */
static int
claim_store(int fd, int cursorfd, int claimsfd, const struct mq_claim_name *c,
    const struct mq_claim_state *st)
{
	int rc = mq_claim_state_write(fd, st, 0);
	if (rc == 0 && !mq_claim_unsettled(st, c->n))
		rc = finish(cursorfd, claimsfd);
	return rc;
}

static int
lock(int cursorfd)
{
	return mq_file_lock(cursorfd, 1, "cursor") < 0 ? -1 : 0;
}

static void
unlock(int cursorfd)
{
	mq_lock_drop(cursorfd, MQ_LOCK_WRITE);
}

int
mq_claims_settle(int cursorfd, int claimsfd, const char *name,
    const uint64_t *seqs, size_t n, int refuse_expired)
{
	if (lock(cursorfd) < 0)
		return -1;
	struct mq_claim_name c;
	struct mq_claim_state st;
	int fd = claim_load(claimsfd, name, &c, &st), rc = fd < 0 ? -1 : 0;
	if (rc == 0 && refuse_expired && (double)st.deadline_ms / 1000 < mq_now())
		rc = mq_err(EX_NOINPUT, "lease of claim %s has expired", name);
	int done = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (seqs[i] < c.first || seqs[i] - c.first >= c.n)
			rc = mq_err(EX_DATAERR, "record %" PRIu64 " is not in "
			    "claim %s", seqs[i], name);
		else if (mq_claim_settled(&st, (unsigned)(seqs[i] - c.first)))
			rc = n == 1 ? mq_err(EX_NOINPUT, "record %" PRIu64 " of "
			    "claim %s is settled already", seqs[i], name) : 0;
		else {
			mq_claim_settle(&st, (unsigned)(seqs[i] - c.first));
			done++;
		}
	}
	if (rc == 0 && done)
		rc = claim_store(fd, cursorfd, claimsfd, &c, &st);
	if (fd >= 0)
		close(fd);
	unlock(cursorfd);
	return rc < 0 ? -1 : done;
}

int
mq_claims_held(int cursorfd, int claimsfd, const char *name, uint64_t seq)
{
	if (lock(cursorfd) < 0)
		return -1;
	struct mq_claim_name c;
	struct mq_claim_state st;
	int fd = claim_load(claimsfd, name, &c, &st), rc = fd < 0 ? -1 : 0;
	if (rc == 0 && (double)st.deadline_ms / 1000 < mq_now())
		rc = mq_err(EX_NOINPUT, "lease of claim %s has expired", name);
	else if (rc == 0 && (seq < c.first || seq - c.first >= c.n))
		rc = mq_err(EX_DATAERR, "record %" PRIu64 " is not in claim %s",
		    seq, name);
	else if (rc == 0 && mq_claim_settled(&st, (unsigned)(seq - c.first)))
		rc = mq_err(EX_NOINPUT, "record %" PRIu64 " of claim %s is "
		    "settled already", seq, name);
	if (fd >= 0)
		close(fd);
	unlock(cursorfd);
	return rc;
}

int
mq_claims_extend(int cursorfd, int claimsfd, const char *name,
    uint64_t deadline_ms)
{
	if (lock(cursorfd) < 0)
		return -1;
	struct mq_claim_name c;
	struct mq_claim_state st;
	int fd = claim_load(claimsfd, name, &c, &st), rc = fd < 0 ? -1 : 0;
	if (rc == 0) {
		st.deadline_ms = deadline_ms;
		rc = mq_claim_state_write(fd, &st, 0);
	}
	if (fd >= 0)
		close(fd);
	unlock(cursorfd);
	return rc;
}

/* The name record seq of claim c gets when it is detached: new/KEY
 * (attempt 0: never handed out) or the claim's cur/ name of attempt 1,
 * its lease and token the claim's. */
static int
detached_name(const struct mq_topic *t, unsigned k, uint64_t seq,
    const char *id, const struct mq_claim_name *c, uint64_t deadline_ms,
    int attempt, char *out, size_t len)
{
	struct mq_entry e = { .attempts = (unsigned)attempt,
	    .claimed = attempt, .deadline_ms = deadline_ms };
	struct mq_msg *m = NULL;
	if (!id) {
		if (mq_record_read(t, k, seq, NULL, &m) < 0 &&
		    mq_errcode() != EX_DATAERR)
			return -1;
		id = m ? m->id : no_id;
	}
	snprintf(e.key, sizeof e.key, "%020" PRIu64 ".%s", seq, id);
	mq_msg_free(m);
	memcpy(e.token, c->token, sizeof e.token);
	return attempt ? mq_entry_cur_name(&e, out, len) :
	    mq_entry_new_name(&e, out, len);
}

int
mq_claims_detach(const struct mq_topic *t, unsigned k,
    const struct mq_gdirs *d, int cursorfd, int claimsfd, const char *name,
    const uint64_t *seqs, const char (*ids)[MQ_ID_LEN + 1], size_t n,
    int attempt, double expired_by, char (*out)[MQ_KEY_LEN + 64])
{
	if (lock(cursorfd) < 0)
		return -1;
	struct mq_claim_name c;
	struct mq_claim_state st;
	int fd = claim_load(claimsfd, name, &c, &st), rc = fd < 0 ? -1 : 0;
	int dirfd = attempt ? d->curfd : d->newfd, made = 0;
	struct mq_jbuf jb = { 0 };
	/* Taken back for its lease only when it is still over: its holder
	 * may have extended it meanwhile. */
	if (rc == 0 && expired_by > 0 &&
	    (double)st.deadline_ms / 1000 > expired_by)
		n = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		unsigned j = (unsigned)(seqs[i] - c.first);
		char buf[MQ_KEY_LEN + 64], *o = out ? out[i] : buf;
		o[0] = 0;
		if (seqs[i] < c.first || seqs[i] - c.first >= c.n)
			rc = mq_err(EX_DATAERR, "record %" PRIu64 " is not in "
			    "claim %s", seqs[i], name);
		else if (mq_claim_settled(&st, j))
			continue;
		else if ((rc = detached_name(t, k, seqs[i], ids ? ids[i] : NULL,
		    &c, st.deadline_ms, attempt, o, sizeof buf)) == 0) {
			int nfd = mq_openat(dirfd, o, O_WRONLY | O_CREAT |
			    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
			if (nfd < 0 && errno != EEXIST)
				rc = mq_err_sys("detach %s", o);
			else if (nfd >= 0)
				close(nfd);
			mq_claim_settle(&st, j);
			made++;
			/* A replica names it too (mq-spool(5), Replication,
			 * format 2): before the bit, so that what reads the
			 * bit finds the record first. */
			if (rc == 0 && d->group)
				mq_journal_change_add(&jb, t->name, 'L', k,
				    d->group, o);
		}
	}
	/* The names are there for good before the bits say so. */
	if (rc == 0 && made && (rc = mq_fsync_fd(dirfd)) == 0) {
		if (jb.len)
			mq_journal_write(t->sp, &jb, NULL);
		rc = claim_store(fd, cursorfd, claimsfd, &c, &st);
	}
	mq_jbuf_free(&jb);
	if (fd >= 0)
		close(fd);
	unlock(cursorfd);
	return rc < 0 ? -1 : made;
}

/* Each record of the claim not settled, into seqs: how many. */
static size_t
unsettled_of(const struct mq_claim_name *c, const struct mq_claim_state *st,
    uint64_t *seqs)
{
	size_t n = 0;
	for (unsigned j = 0; j < c->n; j++)
		if (!mq_claim_settled(st, j))
			seqs[n++] = c->first + j;
	return n;
}

int
mq_claims_expire(const struct mq_topic *t, unsigned k,
    const struct mq_gdirs *d, int cursorfd, int claimsfd, double now,
    double *earliest)
{
	struct mq_names l = { 0 };
	struct seen *v;
	if (read_claims(claimsfd, &l, &v) < 0)
		return -1;
	uint64_t seqs[MQ_CLAIM_MAX];
	int rc = 0, detached = 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		double deadline = (double)v[i].st.deadline_ms / 1000;
		if (v[i].gone || v[i].empty || !v[i].left)
			continue;
		if (deadline > now) {
			*earliest = fmin(*earliest, deadline);
			continue;
		}
		size_t n = unsettled_of(&v[i].c, &v[i].st, seqs);
		int m = mq_claims_detach(t, k, d, cursorfd, claimsfd, l.v[i], seqs,
		    NULL, n, 1, now, NULL);
		if (m < 0 && mq_errcode() != EX_NOINPUT)
			rc = -1;
		detached += m > 0 ? m : 0;
	}
	free(v);
	mq_names_free(&l);
	return rc < 0 ? -1 : detached;
}

/* Under the lock: every record of the claims that `take` says, settled,
 * listed into *seqs (free it). */
static int
settle_where(int cursorfd, int claimsfd,
    bool (*take)(uint64_t seq, const void *ctx), const void *ctx,
    uint64_t **seqs, size_t *n)
{
	*seqs = NULL;
	*n = 0;
	if (lock(cursorfd) < 0)
		return -1;
	struct mq_names l = { 0 };
	int rc = mq_names_read(claimsfd, is_claim, &l);
	uint64_t *v = rc == 0 ? malloc((l.n ? l.n : 1) * MQ_CLAIM_MAX *
	    sizeof *v) : NULL;
	if (rc == 0 && !v)
		rc = mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		struct mq_claim_name c;
		struct mq_claim_state st;
		int fd = claim_load(claimsfd, l.v[i], &c, &st);
		if (fd < 0) {
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
			continue;
		}
		bool changed = false;
		for (unsigned j = 0; j < c.n; j++)
			if (!mq_claim_settled(&st, j) && take(c.first + j, ctx)) {
				mq_claim_settle(&st, j);
				v[(*n)++] = c.first + j;
				changed = true;
			}
		if (changed)
			rc = mq_claim_state_write(fd, &st, 0);
		close(fd);
	}
	if (rc == 0 && *n)
		rc = finish(cursorfd, claimsfd);
	mq_names_free(&l);
	unlock(cursorfd);
	if (rc < 0) {
		free(v);
		*n = 0;
		return -1;
	}
	*seqs = v;
	return 0;
}

static bool
below(uint64_t seq, const void *ctx)
{
	return seq < *(const uint64_t *)ctx;
}

int
mq_claims_settle_below(int cursorfd, int claimsfd, uint64_t offset,
    uint64_t **seqs, size_t *n)
{
	return settle_where(cursorfd, claimsfd, below, &offset, seqs, n);
}

struct seqset {
	const uint64_t *v;              /* sorted */
	size_t n;
};

static bool
in_set(uint64_t seq, const void *ctx)
{
	const struct seqset *ss = ctx;
	size_t lo = 0, hi = ss->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ss->v[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ss->n && ss->v[lo] == seq;
}

int
mq_claims_settle_set(int cursorfd, int claimsfd, const uint64_t *sorted,
    size_t n)
{
	struct seqset ss = { sorted, n };
	uint64_t *done;
	size_t nd;
	int rc = settle_where(cursorfd, claimsfd, in_set, &ss, &done, &nd);
	free(done);
	return rc < 0 ? -1 : (int)nd;
}

void
mq_claims_journal(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t first, unsigned n, const unsigned char *bits)
{
	char text[64 + MQ_CLAIM_MAX / 4 + MQ_ID_LEN + 2];
	bool any = false;
	for (unsigned i = 0; i < (n + 7) / 8; i++)
		any |= bits[i] != 0;
	if (!any || mq_claim_bits_format(first, n, bits, text, sizeof text) < 0)
		return;
	mq_log_id_append(t, k, first + n, text, sizeof text);
	mq_journal_change(t->sp, t->name, 'K', k, group, text);
}

void
mq_claims_journal_seqs(const struct mq_topic *t, unsigned k,
    const char *group, const char *claim, const uint64_t *seqs, size_t n)
{
	struct mq_claim_name c;
	struct mq_claim_state st = { 0 };
	if (mq_claim_name_parse(claim, &c) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (seqs[i] >= c.first && seqs[i] - c.first < c.n)
			mq_claim_settle(&st, (unsigned)(seqs[i] - c.first));
	mq_claims_journal(t, k, group, c.first, c.n, st.settled);
}

/* The claims of a group, read without the lock (read-only tools): 0, or
 * 1 when the group has none. */
static int
read_group(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_names *l, struct seen **v)
{
	int dfd = mq_claims_open(t, k, group, 0);
	if (dfd == -2)
		return 1;
	int rc = dfd < 0 ? -1 : read_claims(dfd, l, v);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

int
mq_claims_count(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_claims_count *cc)
{
	memset(cc, 0, sizeof *cc);
	cc->low = UINT64_MAX;
	cc->earliest = INFINITY;
	struct mq_names l = { 0 };
	struct seen *v;
	int rc = read_group(t, k, group, &l, &v);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	for (size_t i = 0; i < l.n; i++) {
		/* One being made reads empty: all of it in flight. */
		if (v[i].gone)
			continue;
		if (v[i].c.first + v[i].c.n > cc->end)
			cc->end = v[i].c.first + v[i].c.n;
		cc->n++;
		cc->inflight += v[i].left;
		if (v[i].left && v[i].low < cc->low)
			cc->low = v[i].low;
		if (v[i].left && v[i].st.deadline_ms)
			cc->earliest = fmin(cc->earliest,
			    (double)v[i].st.deadline_ms / 1000);
	}
	free(v);
	mq_names_free(&l);
	return 0;
}

int
mq_claims_in(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t seq, int *state, double *deadline)
{
	*state = 0;
	*deadline = 0;
	struct mq_names l = { 0 };
	struct seen *v;
	int rc = read_group(t, k, group, &l, &v);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	for (size_t i = 0; i < l.n; i++)
		if (!v[i].gone && seq >= v[i].c.first &&
		    seq - v[i].c.first < v[i].c.n) {
			*state = mq_claim_settled(&v[i].st,
			    (unsigned)(seq - v[i].c.first)) ? 2 : 1;
			*deadline = (double)v[i].st.deadline_ms / 1000;
		}
	free(v);
	mq_names_free(&l);
	return 0;
}

int
mq_claims_each(const struct mq_topic *t, unsigned k, const char *group,
    int (*fn)(const struct mq_claim_name *, const struct mq_claim_state *,
    void *), void *ctx)
{
	struct mq_names l = { 0 };
	struct seen *v;
	int rc = read_group(t, k, group, &l, &v);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	/* One being made (empty) has nothing settled yet. */
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (!v[i].gone && !v[i].empty)
			rc = fn(&v[i].c, &v[i].st, ctx);
	free(v);
	mq_names_free(&l);
	return rc;
}
