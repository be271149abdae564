/*
 * journal.c: the spool's change journal, SPOOL/journal.
 *
 * Every change that replication must carry (publish, backfill link, ack,
 * dead letter, redrive, purge, topic configuration) is one line appended
 * with a single write(2) on an O_APPEND descriptor, so concurrent writers
 * on a local file system never interleave.  A line's own offset is its
 * sequence number for this spool as an origin; lines copied in from a
 * peer carry their origin and sequence ("@origin seq ...").  Each line
 * ends with an XXH32 of the rest, so a line torn by a power loss is seen
 * and skipped, at a cost linear in the line (resync).  A record is
 * printable ASCII and each of its names of its grammar (mq_jrec_parse,
 * mq_jargs_parse): what a peer sends is checked so before it is
 * journaled.  On a shared file system each host appends to its own
 * journals/<host> instead, merged into SPOOL/journal by jmerge.c.  See
 * mq-spool(5), CHANGE JOURNAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"

/* The journal this host appends to: SPOOL/journal, or on a shared file
 * system its own journals/<host>, which jmerge.c merges into it. */
static void
own_path(mq_spool *sp, char path[MQ_HOST_MAX + 16])
{
	char name[MQ_HOST_MAX];
	if (!sp->shared) {
		snprintf(path, MQ_HOST_MAX + 16, "journal");
		return;
	}
	mq_hostname(name);
	snprintf(path, MQ_HOST_MAX + 16, "journals/%s", name);
}

int
mq_journal_fd(mq_spool *sp)
{
	if (sp->jfd >= 0)
		return sp->jfd;
	if (mq_spool_writable(sp) < 0)
		return -1;
	char path[MQ_HOST_MAX + 16];
	own_path(sp, path);
	if (sp->shared && mq_mkdir(sp->fd, "journals") < 0)
		return -1;
	/* Read too: for the B record, and for a shared lock where flock is
	 * a byte-range lock (NFS). */
	struct stat st;
	int fd = mq_file_open(sp->fd, path, O_RDWR | O_APPEND | O_CREAT, 0666,
	    &st);
	if (fd < 0 && errno == EACCES)
		fd = mq_file_open(sp->fd, path, O_WRONLY | O_APPEND | O_CREAT,
		    0666, &st);
	if (fd < 0)
		return -1;
	if (mq_journal_start_file(sp, path, fd) < 0 ||
	    mq_jfile_base(fd, &sp->jbase) < 0) {
		close(fd);
		return -1;
	}
	sp->jino = st.st_ino;
	sp->jfd = fd;
	return fd;
}

/* Room for need bytes more. */
static int
room(struct mq_jbuf *b, size_t need)
{
	if (b->len + need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + need)
		cap *= 2;
	char *p = realloc(b->buf, cap);
	if (!p)
		return mq_err_sys("malloc");
	b->buf = p;
	b->cap = cap;
	return 0;
}

static int
vline(struct mq_jbuf *b, char type, const char *fmt, va_list ap)
{
	char head[40];
	int n = snprintf(head, sizeof head, "%c %" PRIu64 " ", type,
	    (uint64_t)(mq_now() * 1000));
	va_list again;
	va_copy(again, ap);
	int m = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	if (m < 0 || (size_t)(n + m) >= MQ_JLINE_MAX - 10)
		return mq_err(EX_SOFTWARE, "journal record too long");
	if (room(b, (size_t)(n + m) + 16) < 0)
		return -1;
	size_t start = b->len;
	memcpy(b->buf + b->len, head, (size_t)n);
	vsnprintf(b->buf + b->len + n, (size_t)m + 1, fmt, ap);
	b->len += (size_t)(n + m);
	return mq_jline_seal(b->buf, start, &b->len, b->cap);
}

int
mq_journal_line(struct mq_jbuf *b, char type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vline(b, type, fmt, ap);
	va_end(ap);
	return rc;
}

int
mq_journal_raw(struct mq_jbuf *b, const char *origin, uint64_t seq,
    const char *rec, size_t len)
{
	if (room(b, len + MQ_ID_LEN + 40) < 0)
		return -1;
	size_t start = b->len;
	b->len += (size_t)snprintf(b->buf + b->len, b->cap - b->len,
	    "@%s %" PRIu64 " %.*s", origin, seq, (int)len, rec);
	return mq_jline_seal(b->buf, start, &b->len, b->cap);
}

int
mq_journal_text(struct mq_jbuf *b, const char *text, size_t len)
{
	if (room(b, len + 16) < 0)
		return -1;
	size_t start = b->len;
	memcpy(b->buf + b->len, text, len);
	b->len += len;
	return mq_jline_seal(b->buf, start, &b->len, b->cap);
}

/* One write at the end of fd: where O_APPEND puts it, or on a shared
 * file system (the caller holding journals/.lock) where the server's end
 * is, not where this client believes it is.  *end: the offset after it
 * (in SPOOL/journal only once merged, for a host's journal). */
static int
append(int fd, bool fresh, const char *buf, size_t len, uint64_t *end)
{
	uint64_t at = 0;
	if (fresh && mq_fresh_size(fd, false, &at) < 0)
		return -1;
	ssize_t w = fresh ? pwrite(fd, buf, len, (off_t)at) :
	    write(fd, buf, len);
	if (w < 0)
		return mq_err_sys("journal");
	if ((size_t)w != len)
		return mq_err(EX_IOERR, "journal: short write");
	if (end && fresh) {
		*end = at + len;
	} else if (end) {
		off_t o = lseek(fd, 0, SEEK_CUR);
		*end = o < 0 ? 0 : (uint64_t)o;
	}
	return 0;
}

/* journals/.lock, made if missing and locked: who appends to SPOOL/journal
 * or merges into it on a shared file system holds it (jmerge.c). */
int
mq_journal_lock(mq_spool *sp)
{
	if (mq_mkdir(sp->fd, "journals") < 0)
		return -1;
	int fd = mq_file_open(sp->fd, "journals/.lock", O_RDWR | O_CREAT, 0666,
	    NULL);
	if (fd >= 0 && mq_file_lock(fd, 1, "journals/.lock") < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A cut of a host's journal on a shared file system, no peer needing
 * it, dropped records no merge took: SPOOL/journal is cut too, whatever
 * its size, and so starts past where a peer that comes later would read
 * from: it finds the gap, and is brought level by comparing
 * (mq-protocol(5), Session). */
static int
gap_main(mq_spool *sp)
{
	int lfd = mq_journal_lock(sp);
	if (lfd < 0)
		return -1;
	uint64_t base = 0;
	int fd = mq_file_open(sp->fd, "journal", O_RDWR | O_CREAT, 0666, NULL);
	int rc = fd < 0 || mq_jfile_base(fd, &base) < 0 ? -1 :
	    mq_journal_cut(sp, "journal", fd, base, 0);
	if (fd >= 0)
		close(fd);
	close(lfd);
	return rc < 0 ? -1 : 0;
}

/* An append to the journal this host appends to: the write holds a
 * shared flock on a file that is still the journal, so that a cut
 * (jsegment.c) happens between writes and none lands in a file cut off.
 * Every appender of SPOOL/journal on a local file system, and of a
 * host's journal on a shared one, goes through it.  *end: the offset
 * after the write. */
static int
append_local(mq_spool *sp, const char *buf, size_t len, uint64_t *end)
{
	char path[MQ_HOST_MAX + 16];
	own_path(sp, path);
	for (int tries = 0;; tries++) {
		int fd = mq_journal_fd(sp);
		if (fd < 0)
			return -1;
		/* A shared file system without locks: no cut there, and
		 * so none to keep out. */
		bool locked = mq_lock_take(fd, MQ_LOCK_FLOCK_SH, 1, path) == 1;
		if (!locked && (!sp->shared || (errno != ENOLCK &&
		    errno != EOPNOTSUPP && errno != ENOSYS)))
			return -1;
		struct stat st;
		if (mq_fstatat(sp->fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_ino != sp->jino) {
			/* Cut since we opened it (or removed): the new one. */
			mq_lock_drop(fd, MQ_LOCK_FLOCK_SH);
			close(fd);
			sp->jfd = -1;
			if (tries < 16)
				continue;
			return mq_err(EX_TEMPFAIL, "journal: replaced while "
			    "written, again and again");
		}
		uint64_t pos;
		int rc = append(fd, false, buf, len, &pos);
		mq_lock_drop(fd, MQ_LOCK_FLOCK_SH);
		if (rc < 0)
			return -1;
		*end = sp->jbase + pos;
		/* Best effort: a cut that fails leaves a longer file. */
		if (locked && pos >= mq_journal_segment_max() &&
		    mq_journal_cut(sp, path, fd, sp->jbase,
		    mq_journal_segment_max()) == 1 && sp->shared &&
		    !mq_journal_needed(sp))
			(void)gap_main(sp);
		return 0;
	}
}

int
mq_journal_write(mq_spool *sp, struct mq_jbuf *b, uint64_t *end)
{
	if (b->len == 0)
		return 0;
	uint64_t at = 0;
	if (append_local(sp, b->buf, b->len, &at) < 0)
		return -1;
	if (end)
		*end = at;
	b->len = 0;
	return 0;
}

int
mq_journal_write_main(mq_spool *sp, struct mq_jbuf *b)
{
	if (b->len == 0)
		return 0;
	int lfd = sp->shared ? mq_journal_lock(sp) : 0;
	if (lfd < 0)
		return -1;
	int rc = mq_journal_append_main(sp, b->buf, b->len, NULL);
	if (sp->shared)
		close(lfd);
	b->len = 0;
	return rc;
}

int
mq_journal_append_main(mq_spool *sp, const char *buf, size_t len,
    uint64_t *end)
{
	uint64_t at;
	if (!sp->shared) {
		if (append_local(sp, buf, len, &at) < 0)
			return -1;
		/* The file written to, even when that write cut it. */
		if (fdatasync(sp->jfd) < 0)
			return mq_err_sys("sync journal");
		if (end)
			*end = at;
		return 0;
	}
	int fd = mq_file_open(sp->fd, "journal", O_RDWR | O_CREAT, 0666, NULL);
	if (fd < 0)
		return -1;
	uint64_t base = 0, pos;
	int rc = mq_jfile_base(fd, &base);
	if (rc == 0)
		rc = append(fd, true, buf, len, &pos);
	if (rc == 0 && fdatasync(fd) < 0)
		rc = mq_err_sys("sync journal");
	if (rc == 0 && end)
		*end = base + pos;
	/* Cut under journals/.lock, which every appender here holds. */
	if (rc == 0 && pos >= mq_journal_segment_max())
		(void)mq_journal_cut(sp, "journal", fd, base,
		    mq_journal_segment_max());
	close(fd);
	return rc;
}

void
mq_jbuf_free(struct mq_jbuf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = 0;
}

int
mq_journal_note(mq_spool *sp, char type, const char *fmt, ...)
{
	if (sp->replaying)
		return 0;
	struct mq_jbuf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	int rc = vline(&b, type, fmt, ap);
	va_end(ap);
	if (rc == 0)
		rc = mq_journal_write(sp, &b, NULL);
	mq_jbuf_free(&b);
	return rc;
}

/* A P record's groups: "-", or names separated by single commas. */
static bool
groups_ok(const char *g)
{
	if (!strcmp(g, "-"))
		return true;
	for (;;) {
		size_t n = strcspn(g, ",");
		if (!mq_is_name(g, n))
			return false;
		if (!g[n])
			return true;
		g += n + 1;
	}
}

int
mq_jargs_parse(char type, const char *args, struct mq_jargs *ja)
{
	if (!type || !strchr(MQ_JTYPES, type))
		return -1;
	const char *p = args;
	size_t n = strcspn(p, " ");
	/* U and W may name a pattern (with a '*' or a '>'), W only one. */
	bool wild = (type == 'U' || type == 'W') && mq_is_pattern_name(p, n) &&
	    strcspn(p, "*>") < n;
	if (type == 'W' ? !wild : !wild && !mq_is_name(p, n))
		return -1;
	memcpy(ja->topic, p, n);
	ja->topic[n] = 0;
	p += n;
	ja->k = 0;
	ja->b = "";
	if (type == 'T' || type == 'Z')
		return *p ? -1 : 0;
	if (type == 'U' || type == 'W') {
		n = *p == ' ' ? strlen(p + 1) : 0;
		if (!mq_is_name(p + 1, n))
			return -1;
		memcpy(ja->a, p + 1, n);
		ja->a[n] = 0;
		return 0;
	}
	uint64_t k;
	if (*p != ' ' || !(p = mq_decimal(p + 1, MQ_PARTITIONS_MAX - 1, &k)) ||
	    *p != ' ')
		return -1;
	ja->k = (unsigned)k;
	p++;
	/* S topic k end: no group. */
	if (type == 'S') {
		uint64_t end;
		ja->a[0] = 0;
		ja->b = p;
		p = mq_decimal(p, MQ_SEQ_MAX + 1, &end);
		return p && !*p ? 0 : -1;
	}
	n = strcspn(p, " ");
	if (n > MQ_NAME_MAX || p[n] != ' ' || strchr(p + n + 1, ' '))
		return -1;
	memcpy(ja->a, p, n);
	ja->a[n] = 0;
	ja->b = p + n + 1;
	/* Each name has its grammar: nothing else may reach a path. */
	struct mq_entry e;
	if (type == 'P')
		return mq_is_key(ja->a) && groups_ok(ja->b) ? 0 : -1;
	if (!mq_is_name(ja->a, n))
		return -1;
	if (type == 'A' || type == 'L' || type == 'E')
		return mq_is_key(ja->b) ? 0 : -1;
	char head[64 + MQ_CLAIM_MAX / 4], id[MQ_ID_LEN + 1];
	size_t hl;
	if ((type == 'K' || type == 'C') && (mq_jarg_id(ja->b, &hl, id) < 0 ||
	    hl >= sizeof head))
		return -1;
	if (type == 'K' || type == 'C') {
		memcpy(head, ja->b, hl);
		head[hl] = 0;
	}
	if (type == 'K') {
		uint64_t first;
		unsigned count;
		unsigned char bits[MQ_CLAIM_MAX / 8];
		return mq_claim_bits_parse(head, &first, &count, bits);
	}
	if (type == 'C') {
		uint64_t offset;
		p = mq_decimal(head, MQ_SEQ_MAX, &offset);
		return p && !*p ? 0 : -1;
	}
	return mq_dead_parse(ja->b, &e);
}

int
mq_jarg_id(const char *b, size_t *head, char id[MQ_ID_LEN + 1])
{
	const char *c = strrchr(b, ',');
	if (!c)
		return -1;
	*head = (size_t)(c - b);
	id[0] = 0;
	if (!strcmp(c + 1, "-"))
		return 0;
	if (!mq_is_id(c + 1, strlen(c + 1)))
		return -1;
	memcpy(id, c + 1, MQ_ID_LEN + 1);
	return 0;
}

/* Printable ASCII only: no newline can forge a record, no control
 * character reach a log. */
static bool
printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static int
jrec_split(char *line, struct mq_jrec *rec)
{
	rec->origin[0] = 0;
	rec->seq = 0;
	char *p = line;
	if (*p == '@') {
		if (!mq_is_id(p + 1, strcspn(p + 1, " ")) ||
		    p[1 + MQ_ID_LEN] != ' ')
			return -1;
		memcpy(rec->origin, p + 1, MQ_ID_LEN);
		rec->origin[MQ_ID_LEN] = 0;
		p = (char *)mq_decimal(p + MQ_ID_LEN + 2, MQ_SEQ_MAX, &rec->seq);
		if (!p || *p++ != ' ')
			return -1;
	}
	/* T ms args */
	if (*p < 'A' || *p > 'Z' || p[1] != ' ')
		return -1;
	rec->type = p[0];
	rec->text = p;
	rec->len = strlen(p);
	char *args = (char *)mq_decimal(p + 2, UINT64_MAX, &rec->ms);
	if (!args || *args != ' ' || !args[1])
		return -1;
	rec->args = args + 1;
	return 0;
}

int
mq_jrec_parse(char *line, size_t len, struct mq_jrec *rec)
{
	if (!printable(line, len))
		return -1;
	/* The byte after it is put back if it is no record (resync tries
	 * other starts in the same line). */
	char after = line[len];
	line[len] = 0;
	if (jrec_split(line, rec) == 0)
		return 0;
	line[len] = after;
	return -1;
}

/* Reading.  The reader keeps a window of the file; a line is complete
 * when its newline is there. */
int
mq_jreader_open(mq_spool *sp, struct mq_jreader *r, uint64_t from)
{
	return mq_jreader_open_at(sp, r, "journal", from);
}

/* On a shared file system what another host appended is read through a
 * fresh descriptor, opened again at each end of the file. */
static int
jopen(struct mq_jreader *r)
{
	struct mq_jfile f;
	if (mq_jseg_open(r->dirfd, r->path, r->pos + (r->fill - r->off),
	    &f) < 0)
		return -1;
	if (f.fd < 0)
		return 0;
	if (f.gap) {
		/* Dropped: on from the oldest offset kept. */
		r->gap = true;
		r->pos = f.base;
		r->fill = r->off = 0;
	}
	r->fd = f.fd;
	r->base = f.base;
	r->end = f.end;
	r->ino = f.ino;
	if (r->fresh) {
		int fd = mq_fresh_fd(r->fd, r->readonly);
		close(r->fd);
		r->fd = fd;
		if (fd < 0)
			return -1;
	}
	return 0;
}

int
mq_jreader_open_at(mq_spool *sp, struct mq_jreader *r, const char *path,
    uint64_t from)
{
	memset(r, 0, sizeof *r);
	r->dirfd = sp->fd;
	r->fd = -1;
	snprintf(r->path, sizeof r->path, "%s", path);
	r->fresh = sp->shared;
	r->readonly = sp->readonly;
	r->pos = from;
	if (jopen(r) < 0)
		return -1;
	r->cap = 1 << 20;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		if (r->fd >= 0)
			close(r->fd);
		r->fd = -1;
		return mq_err_sys("malloc");
	}
	return 0;
}

void
mq_jreader_seek(struct mq_jreader *r, uint64_t pos)
{
	r->pos = pos;
	r->fill = r->off = 0;
	/* In another file: opened at the next read. */
	if (r->fd >= 0 && (pos < r->base || pos >= r->end)) {
		close(r->fd);
		r->fd = -1;
	}
}

void
mq_jreader_close(struct mq_jreader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	r->buf = NULL;
}

uint64_t
mq_journal_size(mq_spool *sp)
{
	/* The end of the file appended to, past its first offset; on a
	 * shared file system another host's merge may have grown it. */
	struct stat st;
	uint64_t base = 0, size = 0;
	int fd = mq_jfile_open(sp->fd, "journal", &base, &st);
	if (fd < 0)
		return 0;
	if (!sp->shared)
		size = (uint64_t)st.st_size;
	else if (mq_fresh_size(fd, sp->readonly, &size) < 0)
		base = size = 0;
	close(fd);
	return base + size;
}

/* Checks a sealed line's sum (line without its newline) and splits
 * it, in place. */
static int
parse_line(char *line, size_t len, struct mq_jrec *rec)
{
	return mq_jline_sealed(line, len) ? mq_jrec_parse(line, len - 9, rec) :
	    -1;
}

/* The most spaces a record of this version has before its sum: "@origin
 * seq P ms topic k KEY groups". */
#define JREC_SPACES 7

/* A line that fails its sum may be a record cut by a crash with the
 * next writer's record after it: find where a whole record starts.  A
 * record ends the line, so only the last JREC_SPACES spaces can lie
 * inside it, and it starts with '@' and the 32 digits of an origin, or
 * with a type and a space: one candidate per space at most.  So at most
 * 2 * JREC_SPACES + 1 candidates, each hashed once: linear in the line,
 * however it was damaged. */
static size_t
resync(char *line, size_t len, struct mq_jrec *rec)
{
	if (len < 10)
		return 0;
	size_t body = len - 9, lo = 1;
	if (body > MQ_JLINE_MAX + 64)
		lo = body - MQ_JLINE_MAX - 64;
	unsigned spaces = 0;
	for (size_t i = body; i-- > lo; ) {
		if (line[i] == ' ' && ++spaces > JREC_SPACES)
			break;
		bool start = line[i] == '@' ? i + MQ_ID_LEN + 1 < body &&
		    line[i + MQ_ID_LEN + 1] == ' ' : line[i] && line[i + 1] == ' ' &&
		    strchr(MQ_JTYPES "M", line[i]);
		if (start && parse_line(line + i, len - i, rec) == 0)
			return i;
	}
	return 0;
}

/* 1 when the file r reads is no longer the journal's name: r->end is
 * then where it ends, the next file's first offset. */
static int
cut_off(struct mq_jreader *r)
{
	struct stat st;
	uint64_t next;
	if (mq_fstatat(r->dirfd, r->path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    st.st_ino == r->ino)
		return 0;
	if (mq_journal_next_base(r->dirfd, r->path, r->base, &next) < 0)
		return -1;
	if (next == UINT64_MAX)
		return 0;
	r->end = next;
	return 1;
}

int
mq_jreader_next(struct mq_jreader *r, struct mq_jrec *rec)
{
	for (;;) {
		char *nl = memchr(r->buf + r->off, '\n', r->fill - r->off);
		if (!nl && r->fd < 0) {
			/* No journal yet: there may be one now. */
			if (jopen(r) < 0)
				return -1;
			if (r->fd < 0)
				return 0;
		}
		if (!nl) {
			/* Slide the partial line to the front and read more. */
			size_t part = r->fill - r->off;
			memmove(r->buf, r->buf + r->off, part);
			r->fill = part;
			r->off = 0;
			if (r->fill == r->cap) {
				/* A line longer than any writer writes: skip
				 * what there is of it. */
				r->pos += r->fill;
				r->fill = 0;
				r->skipped++;
			}
			uint64_t at = r->pos + r->fill;
			ssize_t n = r->fresh ? mq_fresh_pread(r->fd, r->buf +
			    r->fill, r->cap - r->fill, at - r->base) :
			    pread(r->fd, r->buf + r->fill, r->cap - r->fill,
			    (off_t)(at - r->base));
			if (n < 0)
				return mq_err_sys("%s", r->path);
			if (n == 0 && r->end == UINT64_MAX && !r->fresh) {
				/* Cut since we opened it: its last writes may
				 * have come after this read. */
				int moved = cut_off(r);
				if (moved < 0)
					return -1;
				if (moved)
					continue;
			}
			if (n == 0 && r->end != UINT64_MAX && at >= r->end) {
				/* The end of a cut file, where the next one
				 * starts; a line cut there never ends. */
				if (r->fill) {
					r->pos += r->fill;
					r->fill = 0;
					r->skipped++;
				}
				close(r->fd);
				r->fd = -1;
				if (jopen(r) < 0)
					return -1;
				if (r->fd < 0)
					return 0;
				continue;
			}
			if (n == 0) {
				/* At the end: read afresh the next time. */
				if (r->fresh) {
					close(r->fd);
					r->fd = -1;
				}
				return 0;
			}
			r->fill += (size_t)n;
			continue;
		}
		size_t len = (size_t)(nl - (r->buf + r->off));
		char *line = r->buf + r->off;
		uint64_t at = r->pos;
		r->off += len + 1;
		r->pos += len + 1;
		size_t skip = 0;
		if (parse_line(line, len, rec) < 0) {
			/* Damaged: counted, and what follows a cut kept. */
			r->skipped++;
			if ((skip = resync(line, len, rec)) == 0)
				continue;
		}
		/* A file's first offset: no change. */
		if (rec->type == 'B' && !rec->origin[0])
			continue;
		rec->at = at + skip;
		rec->end = r->pos;
		if (!rec->origin[0])
			rec->seq = rec->at;
		return 1;
	}
}

/* A change to one message of a group: A and L name its KEY, D, R and X
 * its dead letter.  Best effort: the change is made already, and a
 * record that cannot be written is lost as one cut by a crash would be
 * (after a failover, the message may be delivered again). */
int
mq_journal_change_add(struct mq_jbuf *b, const char *topic, char type,
    unsigned k, const char *group, const char *name)
{
	int len = type == 'A' || type == 'L' || type == 'E' ? MQ_KEY_LEN :
	    (int)strlen(name);
	return mq_journal_line(b, type, "%s %u %s %.*s", topic, k, group, len,
	    name);
}

void
mq_journal_change(mq_spool *sp, const char *topic, char type, unsigned k,
    const char *group, const char *name)
{
	struct mq_jbuf b = { 0 };
	if (mq_journal_change_add(&b, topic, type, k, group, name) == 0)
		mq_journal_write(sp, &b, NULL);
	mq_jbuf_free(&b);
}
