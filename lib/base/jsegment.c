/*
 * jsegment.c: the change journal in segments, so that what every reader
 * has confirmed can be dropped (mq-spool(5), CHANGE JOURNAL, Segments).
 *
 * A record's offset is the sequence number peers remember, so offsets
 * never change: the journal is one stream of bytes, cut into files.  The
 * file appended to keeps its name, SPOOL/journal; a file cut off is
 * SPOOL/journal.d/<base>, base the offset of its first byte in 20 digits.
 * A file that does not start at offset 0 starts with a B record, "B ms
 * base sum", whose own offset is base; readers skip it.
 *
 * Cutting: an appender takes a shared flock(2) on its file for each
 * write, and first checks that the file is still SPOOL/journal.  The
 * cutter takes the lock exclusive, so every write on the file has ended
 * and no other starts, links the file as journal.d/<base>, and renames a
 * new file holding only the B record of base + size over SPOOL/journal
 * (the commit point).  An appender that gets its lock after that finds
 * the name moved on and opens the new file.  A reader goes from a file
 * to the next at its end, where the next file's base is.
 *
 * Dropping: a cut file all of whose records every reader that needs them
 * has confirmed is unlinked; the replication layer says up to where
 * (mq_journal_drop).  A reader asked for an offset in a dropped file
 * starts at the oldest kept, told so (gap).
 *
 * Where hosts share the spool, each host cuts its own journals/<host>
 * so (its appenders are all on that host), a merge drops what it took
 * (jmerge.c), and SPOOL/journal, which every writer writes under
 * journals/.lock, is cut under that lock; sizes are the server's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"

#define BASE_DIGITS 20

uint64_t
mq_journal_segment_max(void)
{
	/* Asked at every write: the environment is read once. */
	static uint64_t max;
	if (!max) {
		double v = mq_env_duration("MQ_JOURNAL_SEGMENT", 64 << 20);
		max = v < 4096 ? 4096 : (uint64_t)v;
	}
	return max;
}

/* "<path>.d/<base>": "journal.d/<base>", or a host's "journals/h.d/...";
 * with base UINT64_MAX, the directory. */
static int
seg_path(const char *path, uint64_t base, char *buf, size_t len)
{
	if (base == UINT64_MAX)
		return mq_path(buf, len, "%s.d", path);
	return mq_path(buf, len, "%s.d/%0*" PRIu64, path, BASE_DIGITS, base);
}

int
mq_jfile_base(int fd, uint64_t *base)
{
	char line[96];
	*base = 0;
	ssize_t n = pread(fd, line, sizeof line - 1, 0);
	if (n < 0)
		return mq_err_sys("journal");
	line[n] = 0;
	char *nl = strchr(line, '\n');
	if (n < 2 || line[0] != 'B' || line[1] != ' ' || !nl)
		return 0;
	/* "B ms base sum". */
	size_t len = (size_t)(nl - line);
	uint64_t ms;
	const char *p = mq_jline_sealed(line, len) ?
	    mq_decimal(line + 2, UINT64_MAX, &ms) : NULL;
	if (p && *p == ' ')
		p = mq_decimal(p + 1, MQ_SEQ_MAX, base);
	if (!p || p != line + len - 9) {
		*base = 0;
		return mq_err(EX_DATAERR, "journal: a damaged first record");
	}
	return 0;
}

int
mq_jfile_open(int dirfd, const char *path, uint64_t *base, struct stat *st)
{
	/* No journal yet is no error, and sets none. */
	if (mq_faccessat(dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno == ENOENT)
		return -1;
	int fd = mq_file_open(dirfd, path, O_RDONLY, 0, st);
	if (fd >= 0 && mq_jfile_base(fd, base) < 0) {
		close(fd);
		errno = EIO;
		return -1;
	}
	return fd;
}

void
mq_jsegs_free(struct mq_jsegs *s)
{
	free(s->base);
	s->base = NULL;
	s->n = 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A cut file's name: exactly BASE_DIGITS digits. */
static bool
seg_name(const char *name, uint64_t *base)
{
	if (strlen(name) != BASE_DIGITS ||
	    strspn(name, "0123456789") != BASE_DIGITS)
		return false;
	*base = strtoull(name, NULL, 10);
	return *base <= MQ_SEQ_MAX;
}

int
mq_jsegs_read(int dirfd, const char *path, struct mq_jsegs *s)
{
	char dir[MQ_HOST_MAX + 32];
	struct mq_names l = { 0 };
	memset(s, 0, sizeof *s);
	if (seg_path(path, UINT64_MAX, dir, sizeof dir) < 0 ||
	    mq_names_read_at(dirfd, dir, NULL, &l) < 0)
		return -1;
	s->base = malloc((l.n + 1) * sizeof *s->base);
	if (!s->base) {
		mq_names_free(&l);
		return mq_err_sys("malloc");
	}
	for (size_t i = 0; i < l.n; i++)
		if (seg_name(l.v[i], &s->base[s->n]))
			s->n++;
	mq_names_free(&l);
	qsort(s->base, s->n, sizeof *s->base, cmp_u64);
	return 0;
}

int
mq_jseg_open(int dirfd, const char *path, uint64_t pos, struct mq_jfile *f)
{
	struct mq_jsegs s;
	char name[MQ_HOST_MAX + 64];
	struct stat st;
	uint64_t base = 0;
	memset(f, 0, sizeof *f);
	f->fd = -1;
	f->end = UINT64_MAX;
	int fd = mq_jfile_open(dirfd, path, &base, &st);
	if (fd < 0 && errno != ENOENT)
		return -1;
	if (fd >= 0 && pos >= base) {
		f->fd = fd;
		f->base = base;
		f->ino = st.st_ino;
		return 0;
	}
	/* In a cut file: the last whose base is not past pos, which ends
	 * where the next begins. */
	if (mq_jsegs_read(dirfd, path, &s) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t i = s.n;
	while (i > 0 && s.base[i - 1] > pos)
		i--;
	if (i == 0 && s.n > 0) {
		f->gap = true;          /* dropped: the oldest kept instead */
		i = 1;
	}
	int rc = 0;
	if (i > 0) {
		uint64_t next = i < s.n ? s.base[i] : fd >= 0 ? base : UINT64_MAX;
		rc = seg_path(path, s.base[i - 1], name, sizeof name);
		if (rc == 0 && (f->fd = mq_file_open(dirfd, name, O_RDONLY, 0,
		    &st)) < 0)
			rc = -1;
		f->base = s.base[i - 1];
		f->end = next;
		f->ino = rc == 0 ? st.st_ino : 0;
	} else if (fd >= 0) {
		/* Before the file's base and nothing cut: the rest is gone
		 * (a journal.d/ removed by hand). */
		f->gap = true;
		f->fd = fd;
		f->base = base;
		f->ino = st.st_ino;
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	mq_jsegs_free(&s);
	return rc;
}

/* The first offset of path's journal file: UINT64_MAX when there is
 * none. */
static int
active_base(int dirfd, const char *path, uint64_t *base)
{
	int fd = mq_jfile_open(dirfd, path, base, NULL);
	if (fd < 0) {
		*base = UINT64_MAX;
		return errno == ENOENT ? 0 : -1;
	}
	close(fd);
	return 0;
}

int
mq_journal_next_base(int dirfd, const char *path, uint64_t after,
    uint64_t *next)
{
	struct mq_jsegs s;
	if (mq_jsegs_read(dirfd, path, &s) < 0)
		return -1;
	*next = UINT64_MAX;
	for (size_t i = 0; i < s.n && *next == UINT64_MAX; i++)
		if (s.base[i] > after)
			*next = s.base[i];
	mq_jsegs_free(&s);
	uint64_t b;
	if (*next != UINT64_MAX || active_base(dirfd, path, &b) < 0)
		return *next != UINT64_MAX ? 0 : -1;
	if (b != UINT64_MAX && b > after)
		*next = b;
	return 0;
}

/* The B record of base. */
static int
b_record(uint64_t base, char *buf, size_t cap, size_t *len)
{
	int n = snprintf(buf, cap, "B %" PRIu64 " %" PRIu64,
	    (uint64_t)(mq_now() * 1000), base);
	if (n < 0 || (size_t)n >= cap)
		return mq_err(EX_SOFTWARE, "B record");
	*len = (size_t)n;
	return mq_jline_seal(buf, 0, len, cap);
}

int
mq_journal_start_file(mq_spool *sp, const char *path, int fd)
{
	struct stat st;
	struct mq_jsegs s;
	if (fstat(fd, &st) < 0)
		return mq_err_sys("journal");
	if (st.st_size > 0 || mq_jsegs_read(sp->fd, path, &s) < 0)
		return st.st_size > 0 ? 0 : -1;
	int rc = 0;
	if (s.n > 0) {
		/* journal.d/ holds cut files and the journal is new: it goes
		 * on where the last cut file ends. */
		char name[MQ_HOST_MAX + 64], line[96];
		size_t len;
		rc = seg_path(path, s.base[s.n - 1], name, sizeof name);
		if (rc == 0 && mq_fstatat(sp->fd, name, &st,
		    AT_SYMLINK_NOFOLLOW) < 0)
			rc = mq_err_sys("%s", name);
		if (rc == 0)
			rc = b_record(s.base[s.n - 1] + (uint64_t)st.st_size, line,
			    sizeof line, &len);
		if (rc == 0 && write(fd, line, len) != (ssize_t)len)
			rc = mq_err_sys("journal");
	}
	mq_jsegs_free(&s);
	return rc;
}

bool
mq_journal_needed(mq_spool *sp)
{
	return mq_faccessat(sp->fd, "replicate/peers", F_OK,
	    AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT ||
	    mq_faccessat(sp->fd, "replicate/seen", F_OK,
	    AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

int
mq_journal_cut(mq_spool *sp, const char *path, int fd, uint64_t base,
    uint64_t min)
{
	char dir[MQ_HOST_MAX + 32], name[MQ_HOST_MAX + 64], line[96];
	struct stat st, now;
	size_t len;
	uint64_t size = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return 0;               /* writing: a later write cuts */
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = mq_err_sys("journal");
	/* Where hosts share the file system, its size as the server has
	 * it: the next file's base is read from it. */
	else if (!sp->shared)
		size = (uint64_t)st.st_size;
	else if (mq_fresh_size(fd, false, &size) < 0)
		rc = -1;
	/* Cut by another since we looked, or not full after all. */
	if (rc == 0 && (mq_fstatat(sp->fd, path, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
	    now.st_ino != st.st_ino || now.st_dev != st.st_dev || size < min))
		goto done;
	if (rc == 0)
		rc = seg_path(path, UINT64_MAX, dir, sizeof dir);
	if (rc == 0)
		rc = mq_mkdir(sp->fd, dir);
	if (rc == 0)
		rc = seg_path(path, base, name, sizeof name);
	/* A cut that crashed after its link left it made: the same file. */
	if (rc == 0 && mq_linkat(sp->fd, path, sp->fd, name, 0) < 0 &&
	    !(errno == EEXIST && mq_fstatat(sp->fd, name, &now,
	    AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino))
		rc = mq_err_sys("%s", name);
	if (rc == 0)
		rc = mq_fsync_at(sp->fd, dir);
	/* An empty journal cut goes on at 1: a reader from 0 then finds
	 * what came before it gone. */
	if (rc == 0)
		rc = b_record(base + size ? base + size : 1, line, sizeof line,
		    &len);
	/* The commit point: the new file in the journal's name. */
	if (rc == 0 && mq_write_file(sp->fd, path, line, len, 1, 1) < 0)
		rc = -1;
	if (rc == 0)
		rc = mq_fsync_fd(sp->fd);
	/* A spool that has no peers and receives from none needs none of
	 * it; else the replication layer says what goes (repl_journal_trim). */
	if (rc == 0 && !mq_journal_needed(sp) &&
	    mq_journal_drop(sp, path, UINT64_MAX) < 0)
		rc = -1;
	flock(fd, LOCK_UN);
	return rc < 0 ? -1 : 1;
done:
	flock(fd, LOCK_UN);
	return rc;
}

int
mq_journal_drop(mq_spool *sp, const char *path, uint64_t upto)
{
	struct mq_jsegs s;
	char name[MQ_HOST_MAX + 64];
	uint64_t active;
	if (mq_jsegs_read(sp->fd, path, &s) < 0)
		return -1;
	int rc = s.n ? active_base(sp->fd, path, &active) : 0, dropped = 0;
	/* A cut file ends where the next one (or the journal) starts; one
	 * of the journal's base is the journal itself (a cut that crashed
	 * after its link). */
	for (size_t i = 0; rc == 0 && i < s.n; i++) {
		uint64_t end = i + 1 < s.n ? s.base[i + 1] : active;
		if (end > upto || s.base[i] >= active)
			break;
		rc = seg_path(path, s.base[i], name, sizeof name);
		if (rc == 0 && mq_unlinkat(sp->fd, name, 0) < 0 && errno != ENOENT)
			rc = mq_err_sys("%s", name);
		dropped += rc == 0;
	}
	mq_jsegs_free(&s);
	return rc < 0 ? -1 : dropped;
}

uint64_t
mq_journal_start(mq_spool *sp)
{
	struct mq_jfile f;
	if (mq_jseg_open(sp->fd, "journal", 0, &f) < 0 || f.fd < 0)
		return 0;
	close(f.fd);
	return f.base;
}
