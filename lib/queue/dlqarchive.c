/*
 * dlqarchive.c: dead letters out of a spool and into one, as a tar archive.
 *
 * The archive is restricted pax (plain ustar, with a pax header only for a
 * name too long for ustar), written and read with libarchive:
 *   mq-dlq/VERSION                            "mq-dlq-archive 1\n", first
 *   mq-dlq/<topic>/<group>/p<k>/KEY,a<n>      the message file, as it is
 *   mq-dlq/<topic>/<group>/p<k>/KEY,a<n>.why  its record, as it is
 *   mq-dlq/END                                "<dead letters>\n", last
 * END is there because tar has no end a reader can rely on: libarchive
 * takes an archive cut at a block boundary for a whole one, so without
 * END a truncated archive could import as a smaller valid one.  After END
 * come the two zero blocks that end a tar archive, and then nothing but
 * zeros (libarchive stops at the first zero block: an archive with
 * another appended would import as the first alone).
 *
 * Import takes whatever it is given, so it trusts no part of it: every
 * return of libarchive is checked, and anything but ARCHIVE_OK is damage
 * (export never writes what libarchive warns about, and a header that
 * fails its checksum is ARCHIVE_RETRY, an entry libarchive skips).
 *
 * Export only reads the spool.  It reads each record, then its message; a
 * dead letter redriven or purged in the meantime is left out.  A message
 * that does not pass the checks import makes (an "unreadable" dead letter)
 * fails the export, so that what export writes always imports.  The
 * archive goes to a temporary file beside its path, renamed into place
 * once complete: a failed export leaves no file.  On standard output a
 * failed export stops without END, which import refuses.
 *
 * Import changes nothing until the whole archive has been read and checked
 * (names, every message with its record and every record with its message,
 * every message whole and the one its name and place say, END), with the
 * files staged in SPOOL/tmp/dlq-import.<random>/, and until every partition
 * it needs is known to exist.  Then it creates missing topics (defaults)
 * and subscribes missing groups; raises each partition's head above the
 * imported sequence numbers, under the publish lock (consumers claim only
 * below committed, so a redriven import would otherwise wait for later
 * publishes; the gap left in the numbers is harmless); and puts each dead
 * letter in place as dlq.c does: the record first (renamed, replacing a
 * record left without its message), then the message, linked so that it
 * never replaces a name already there: that link is the commit point.  A
 * dead letter whose name is already there is skipped, so importing twice
 * changes nothing the second time.  Where p<k> is on another filesystem
 * both files are written there through temporary dot names instead.
 *
 * A crash while staging leaves only the staging directory, which the sweep
 * of SPOOL/tmp removes an hour later; a crash while putting dead letters in
 * place leaves some imported and maybe one record without its message
 * (ignored by readers): importing the archive again finishes the job.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

static const char version_line[] = "mq-dlq-archive 1\n";
#define PREFIX "mq-dlq/"
#define ENTRY_MAX ((size_t)MQ_MESSAGE_MAX_LIMIT + MQ_HEADER_BLOCK_MAX)
#define RECORD_MAX ((size_t)1 << 20)    /* what mq_dlq_list reads */
#define SMALL_MAX 64                    /* VERSION and END */

/* Puts context in front of the error already set, keeping its code unless
 * code is not 0. */
static int
err_ctx(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
err_ctx(int code, const char *fmt, ...)
{
	char ctx[512], msg[1024];
	snprintf(msg, sizeof msg, "%s", mq_errmsg());
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof ctx, fmt, ap);
	va_end(ap);
	return mq_err(code ? code : mq_errcode(), "%s: %s", ctx, msg);
}

/* An error of libarchive: a system error keeps its code; anything about
 * the archive's contents is EX_DATAERR, and before VERSION was seen it
 * means the input is not one of ours. */
static int
err_archive(struct archive *a, const char *what, int ours)
{
	int e = archive_errno(a);
	const char *s = archive_error_string(a);
	if (!s)
		s = "archive error";
	/* libarchive reports a bad format as EILSEQ, misuse as EINVAL. */
	if (e > 0 && e != EILSEQ && e != EINVAL) {
		errno = e;
		return mq_err_sys("%s", what);
	}
	if (!ours)
		return mq_err(EX_DATAERR, "%s: not an mq-dlq archive (%s)", what,
		    s);
	return mq_err(EX_DATAERR, "%s: damaged archive (%s)", what, s);
}

/* Whether a message file is whole and is the message its place names.
 * buf (NUL at len) is changed.  Export and import make the same checks. */
static int
message_check(char *buf, size_t len, const char *topic, unsigned k,
    const struct mq_entry *e)
{
	struct mq_msg *m = calloc(1, sizeof *m);
	if (!m)
		return mq_err_sys("malloc");
	uint64_t seq = 0;
	mq_seq_of(e->key, &seq);
	int rc = mq_msg_parse(buf, len, m);
	if (rc == 0 && (mq_msg_check_name(m, e->key) < 0 ||
	    m->seq != seq || m->partition != k || !m->topic ||
	    strcmp(m->topic, topic)))
		rc = mq_err(EX_DATAERR, "its headers do not match its name");
	mq_msg_free(m);
	return rc;
}

/* A file of the spool, whole: 1 when it is not there. */
static int
slurp(int dfd, const char *name, size_t max, char **bufp, size_t *lenp,
    struct stat *st)
{
	if (mq_read_at_st(dfd, name, max, bufp, lenp, st) == 0)
		return 0;
	return mq_errcode() == EX_NOINPUT && errno == ENOENT ? 1 : -1;
}

static int
put_entry(struct archive *a, const char *what, const char *path,
    const void *data, size_t len, time_t mtime, long nsec, mode_t mode)
{
	struct archive_entry *en = archive_entry_new();
	if (!en)
		return mq_err_sys("malloc");
	archive_entry_set_pathname(en, path);
	archive_entry_set_filetype(en, AE_IFREG);
	archive_entry_set_perm(en, mode & 07777);
	archive_entry_set_size(en, (la_int64_t)len);
	archive_entry_set_mtime(en, mtime, nsec);
	int rc = 0;
	if (archive_write_header(a, en) < ARCHIVE_OK ||
	    (len && archive_write_data(a, data, len) != (la_ssize_t)len))
		rc = err_archive(a, what, 1);
	archive_entry_free(en);
	return rc;
}

/* Writes one dead letter; returns 1 when it went meanwhile. */
static int
export_one(struct archive *a, const char *what, const struct mq_topic *t,
    const struct mq_dead *d, int dfd)
{
	char why[MQ_KEY_LEN + 48], path[3 * MQ_NAME_MAX + 128];
	char *rec = NULL, *msg = NULL;
	size_t rlen = 0, mlen = 0;
	struct stat rst, mst;
	struct mq_entry e;
	if (mq_path(why, sizeof why, "%s.why", d->name) < 0)
		return -1;
	if (mq_dead_parse(d->name, &e) < 0)
		return mq_err(EX_DATAERR, "bad dead letter name %s", d->name);
	int rc = slurp(dfd, why, RECORD_MAX, &rec, &rlen, &rst);
	int no_record = rc == 1;
	/* A message without its record is not something dlq.c leaves: keep
	 * the message, with an empty record. */
	if (no_record)
		rc = 0;
	if (rc == 0)
		rc = slurp(dfd, d->name, ENTRY_MAX, &msg, &mlen, &mst);
	if (rc == 0 && no_record) {
		rst.st_mode = mst.st_mode;
		rst.st_mtim = mst.st_mtim;
	}
	if (rc == 0)
		rc = mq_path(path, sizeof path, PREFIX "%s/%s/p%u/%s", t->name,
		    d->group, d->partition, d->name);
	if (rc == 0)
		rc = put_entry(a, what, path, msg, mlen, mst.st_mtim.tv_sec,
		    mst.st_mtim.tv_nsec, mst.st_mode);
	if (rc == 0)
		rc = mq_path(path, sizeof path, PREFIX "%s/%s/p%u/%s", t->name,
		    d->group, d->partition, why);
	if (rc == 0)
		rc = put_entry(a, what, path, rec, rlen, rst.st_mtim.tv_sec,
		    rst.st_mtim.tv_nsec, rst.st_mode);
	if (rc == 0 && message_check(msg, mlen, t->name, d->partition, &e) < 0) {
		char why_not[512];
		snprintf(why_not, sizeof why_not, "%s", mq_errmsg());
		rc = mq_err(EX_DATAERR, "dead letter %s (group %s, partition %u): "
		    "%s, so it could not be imported (purge it, or export the "
		    "other groups)", d->id, d->group, d->partition, why_not);
	}
	free(rec);
	free(msg);
	return rc;
}

static int
export_all(struct archive *a, const char *what, const struct mq_topic *t,
    const struct mq_dead *v, size_t n, size_t *count)
{
	char text[32];
	double now = mq_now();
	int dfd = -1, rc = put_entry(a, what, PREFIX "VERSION", version_line,
	    sizeof version_line - 1, (time_t)now, 0, 0644);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (i == 0 || v[i].partition != v[i - 1].partition ||
		    strcmp(v[i].group, v[i - 1].group)) {
			char dir[MQ_NAME_MAX + 16];
			if (dfd >= 0)
				close(dfd);
			dfd = -1;
			if (v[i].partition >= t->conf.partitions ||
			    mq_path(dir, sizeof dir, "dlq/%s", v[i].group) < 0 ||
			    (dfd = mq_dir_open(t->pfd[v[i].partition], dir)) < 0)
				rc = -1;
		}
		if (rc == 0)
			rc = export_one(a, what, t, &v[i], dfd);
		if (rc == 1)
			rc = 0;
		else if (rc == 0)
			(*count)++;
	}
	if (dfd >= 0)
		close(dfd);
	if (rc == 0) {
		int len = snprintf(text, sizeof text, "%zu\n", *count);
		rc = put_entry(a, what, PREFIX "END", text, (size_t)len,
		    (time_t)now, 0, 0644);
	}
	return rc;
}

/* Where the archive goes.  Once the export has failed it swallows what
 * libarchive still flushes, the end of archive included, so the output
 * stops short and libarchive can still close and free everything. */
struct sink {
	int fd;
	int failed;
};

static la_ssize_t
sink_write(struct archive *a, void *p, const void *buf, size_t len)
{
	struct sink *s = p;
	const char *q = buf;
	size_t left = len;
	while (!s->failed && left) {
		ssize_t w = write(s->fd, q, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			archive_set_error(a, errno, "%s", strerror(errno));
			return -1;
		}
		q += w;
		left -= (size_t)w;
	}
	return (la_ssize_t)len;
}

int
mq_dlq_export(mq_spool *sp, const char *topic, const char *group,
    const char *path, size_t *count)
{
	struct mq_dead *v;
	size_t n;
	struct mq_topic t;
	*count = 0;
	if (mq_dlq_list(sp, topic, group, &v, &n) < 0)
		return -1;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0) {
		mq_dead_free(v, n);
		return -1;
	}
	int to_stdout = !strcmp(path, "-"), rc = 0;
	const char *what = to_stdout ? "standard output" : path;
	struct sink out = { STDOUT_FILENO, 0 };
	char tmp[4096], rnd[17];
	if (!to_stdout) {
		mq_hex_random(rnd, 16);
		rc = mq_path(tmp, sizeof tmp, "%s.tmp.%s", path, rnd);
		if (rc == 0 && (out.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0666)) < 0)
			rc = mq_err_sys("%s", path);
	}
	struct archive *a = rc == 0 ? archive_write_new() : NULL;
	if (rc == 0 && !a)
		rc = mq_err_sys("malloc");
	if (rc == 0 && (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open2(a, &out, NULL, sink_write, NULL, NULL) !=
	    ARCHIVE_OK))
		rc = err_archive(a, what, 1);
	if (rc == 0)
		rc = export_all(a, what, &t, v, n, count);
	out.failed = rc < 0;
	if (a && archive_write_close(a) != ARCHIVE_OK && rc == 0)
		rc = err_archive(a, what, 1);
	if (a)
		archive_write_free(a);
	if (!to_stdout && out.fd >= 0) {
		if (rc == 0 && mq_fsync_fd(out.fd) < 0)
			rc = -1;
		if (close(out.fd) < 0 && rc == 0)
			rc = mq_err_sys("write %s", path);
		if (rc == 0 && rename(tmp, path) < 0)
			rc = mq_err_sys("%s", path);
		if (rc < 0)
			unlink(tmp);
	}
	mq_topic_close(&t);
	mq_dead_free(v, n);
	return rc;
}

/* One file of a dead letter, read from an archive and staged. */
struct file {
	char *topic, *group;
	unsigned k;
	int why;                         /* the record, not the message */
	char name[MQ_KEY_LEN + 32];      /* the dead letter's */
	uint64_t seq;
	size_t size;
	size_t idx;                      /* staged as <idx> */
};

struct import {
	mq_spool *sp;
	const char *what;                /* the archive, for messages */
	int stagefd;
	char stage[64];
	struct file *f;
	size_t n, cap;
};

static int
cmp_files(const void *pa, const void *pb)
{
	const struct file *a = pa, *b = pb;
	int c = strcmp(a->topic, b->topic);
	if (!c)
		c = strcmp(a->group, b->group);
	if (!c)
		c = a->k < b->k ? -1 : a->k > b->k;
	if (!c)
		c = strcmp(a->name, b->name);
	return c ? c : a->why - b->why;
}

static bool
same_letter(const struct file *a, const struct file *b)
{
	return !strcmp(a->topic, b->topic) && !strcmp(a->group, b->group) &&
	    a->k == b->k && !strcmp(a->name, b->name);
}

/* Splits mq-dlq/<topic>/<group>/p<k>/<name>[.why] into f. */
static int
parse_path(const struct import *im, const char *path, struct file *f)
{
	char b[128], *sep[3];
	const char *p = path + sizeof PREFIX - 1;
	struct mq_entry e;
	if (strncmp(path, PREFIX, sizeof PREFIX - 1))
		goto bad;
	for (int i = 0; i < 3; i++) {
		if (!(sep[i] = strchr(p, '/')))
			goto bad;
		p = sep[i] + 1;
	}
	if (strchr(p, '/'))
		goto bad;
	p = path + sizeof PREFIX - 1;
	f->topic = strndup(p, (size_t)(sep[0] - p));
	f->group = strndup(sep[0] + 1, (size_t)(sep[1] - sep[0] - 1));
	if (!f->topic || !f->group)
		return mq_err_sys("malloc");
	if (mq_name_check("topic", f->topic) < 0 ||
	    mq_name_check("group", f->group) < 0)
		return err_ctx(EX_DATAERR, "%s: entry '%s'", im->what,
		    mq_shown(path, b, sizeof b));
	const char *d = sep[1] + 1;
	if (*d++ != 'p' || *d < '0' || *d > '9' || (*d == '0' && d[1] != '/'))
		goto bad;
	unsigned long k = strtoul(d, sep + 2, 10);
	if (sep[2] != strchr(d, '/') || k >= MQ_PARTITIONS_MAX)
		goto bad;
	f->k = (unsigned)k;
	p = strrchr(path, '/') + 1;
	size_t len = strlen(p);
	f->why = len > 4 && !strcmp(p + len - 4, ".why");
	if (f->why)
		len -= 4;
	if (len >= sizeof f->name)
		goto bad;
	memcpy(f->name, p, len);
	f->name[len] = 0;
	if (mq_dead_parse(f->name, &e) < 0 || mq_seq_of(e.key, &f->seq) < 0)
		goto bad;
	return 0;
bad:
	return mq_err(EX_DATAERR, "%s: unexpected entry '%s' (not mq-dlq/"
	    "TOPIC/GROUP/pK/DEAD-LETTER[.why])", im->what,
	    mq_shown(path, b, sizeof b));
}

/* Reads the data of the current entry, path (at most max bytes,
 * NUL-terminated). */
static int
entry_data(const struct import *im, struct archive *a,
    struct archive_entry *en, const char *path, size_t max, char **bufp,
    size_t *lenp)
{
	char b[128];
	if (archive_entry_filetype(en) != AE_IFREG || archive_entry_hardlink(en))
		return mq_err(EX_DATAERR, "%s: entry '%s' is not a regular file",
		    im->what, mq_shown(path, b, sizeof b));
	la_int64_t size = archive_entry_size(en);
	if (!archive_entry_size_is_set(en) || size < 0 || (uint64_t)size > max)
		return mq_err(EX_DATAERR, "%s: entry '%s' is too large (at most "
		    "%zu bytes)", im->what, mq_shown(path, b, sizeof b), max);
	/* One byte more than the header says, to see a longer entry. */
	size_t want = (size_t)size + 1, len = 0;
	char *buf = malloc(want);
	if (!buf)
		return mq_err_sys("malloc");
	for (;;) {
		/* Any of ARCHIVE_RETRY, _WARN, _FAILED or _FATAL: damaged. */
		la_ssize_t r = archive_read_data(a, buf + len, want - len);
		if (r < 0) {
			free(buf);
			return err_archive(a, im->what, 1);
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == want) {
			free(buf);
			return mq_err(EX_DATAERR, "%s: entry '%s' is longer than "
			    "its header says", im->what, mq_shown(path, b, sizeof b));
		}
	}
	if (len != (size_t)size) {
		free(buf);
		return mq_err(EX_DATAERR, "%s: truncated archive", im->what);
	}
	buf[len] = 0;
	*bufp = buf;
	*lenp = len;
	return 0;
}

/* Reads, checks and stages one file of a dead letter. */
static int
stage_file(struct import *im, struct archive *a, struct archive_entry *en,
    const char *path)
{
	char b[128], name[32];
	if (im->n == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 64;
		struct file *nf = reallocarray(im->f, cap, sizeof *nf);
		if (!nf)
			return mq_err_sys("malloc");
		im->f = nf;
		im->cap = cap;
	}
	struct file *f = &im->f[im->n++];
	memset(f, 0, sizeof *f);
	f->idx = im->n - 1;
	char *buf;
	struct mq_entry e;
	if (parse_path(im, path, f) < 0 || entry_data(im, a, en, path, f->why ?
	    RECORD_MAX : ENTRY_MAX, &buf, &f->size) < 0)
		return -1;
	snprintf(name, sizeof name, "%zu", f->idx);
	int rc = mq_write_file(im->stagefd, name, buf, f->size, 0, 0);
	if (rc == 1)
		rc = mq_err(EX_SOFTWARE, "staged %s twice", name);
	if (rc == 0) {
		/* The mtime goes with the file; not setting it harms nothing. */
		struct timespec ts[2] = { { 0, UTIME_OMIT },
		    { archive_entry_mtime(en), archive_entry_mtime_nsec(en) } };
		utimensat(im->stagefd, name, ts, AT_SYMLINK_NOFOLLOW);
	}
	if (rc == 0 && !f->why && (mq_dead_parse(f->name, &e) < 0 ||
	    message_check(buf, f->size, f->topic, f->k, &e) < 0))
		rc = err_ctx(EX_DATAERR, "%s: entry '%s'", im->what,
		    mq_shown(path, b, sizeof b));
	free(buf);
	return rc;
}

/* Reads the small VERSION or END entry and checks it. */
static int
read_mark(struct import *im, struct archive *a, struct archive_entry *en,
    const char *path, int is_end, size_t *end)
{
	char *buf, *stop;
	size_t len;
	if (entry_data(im, a, en, path, SMALL_MAX, &buf, &len) < 0)
		return -1;
	int rc = 0;
	if (!is_end) {
		if (len != sizeof version_line - 1 ||
		    memcmp(buf, version_line, len))
			rc = mq_err(EX_DATAERR, "%s: unknown mq-dlq archive version "
			    "'%.*s' (this mq knows '%.*s')", im->what,
			    (int)strcspn(buf, "\n"), buf,
			    (int)sizeof version_line - 2, version_line);
	} else {
		errno = 0;
		unsigned long long c = strtoull(buf, &stop, 10);
		if (buf[0] < '0' || buf[0] > '9' || errno || strcmp(stop, "\n"))
			rc = mq_err(EX_DATAERR, "%s: bad " PREFIX "END", im->what);
		*end = (size_t)c;
	}
	free(buf);
	return rc;
}

/* The next entry and its name: 1, or 0 at the end of the archive.  Our
 * archives have no entry libarchive warns about or must skip (RETRY:
 * a header that fails its checksum), so anything but OK is damage. */
static int
next_entry(const struct import *im, struct archive *a, int ours,
    struct archive_entry **en, const char **path)
{
	switch (archive_read_next_header(a, en)) {
	case ARCHIVE_OK:
		break;
	case ARCHIVE_EOF:
		return 0;
	case ARCHIVE_RETRY:
	case ARCHIVE_WARN:
	case ARCHIVE_FAILED:
	case ARCHIVE_FATAL:
	default:
		return err_archive(a, im->what, ours);
	}
	if (!(*path = archive_entry_pathname(*en)))
		return mq_err(EX_DATAERR, "%s: %s archive (an entry without a "
		    "name)", im->what, ours ? "damaged" : "not an mq-dlq");
	return 1;
}

/* Reads and checks the whole archive, staging its files; *end gets the
 * count END gives. */
static int
read_archive(struct import *im, struct archive *a, size_t *end)
{
	struct archive_entry *en;
	const char *path = NULL;
	int seen_version = 0, seen_end = 0, r;
	char b[128];
	while ((r = next_entry(im, a, seen_version, &en, &path)) == 1) {
		int is_version = !strcmp(path, PREFIX "VERSION");
		int is_end = !strcmp(path, PREFIX "END");
		if (!seen_version && !is_version)
			return mq_err(EX_DATAERR, "%s: not an mq-dlq archive "
			    "(it starts with '%s', not " PREFIX "VERSION)",
			    im->what, mq_shown(path, b, sizeof b));
		if (seen_end || (seen_version && is_version))
			return mq_err(EX_DATAERR, "%s: unexpected entry '%s' "
			    "after " PREFIX "%s", im->what, mq_shown(path, b,
			    sizeof b), seen_end ? "END" : "VERSION");
		int rc = is_version || is_end ? read_mark(im, a, en, path,
		    is_end, end) : stage_file(im, a, en, path);
		if (rc < 0)
			return -1;
		seen_version = 1;
		seen_end = is_end;
	}
	if (r < 0)
		return -1;
	if (!seen_version)
		return mq_err(EX_DATAERR, "%s: not an mq-dlq archive (empty)",
		    im->what);
	if (!seen_end)
		return mq_err(EX_DATAERR, "%s: truncated archive (no " PREFIX
		    "END)", im->what);
	return 0;
}

/* Pairs every message with its record (sorted: message, then .why). */
static int
pair_files(struct import *im, size_t end)
{
	qsort(im->f, im->n, sizeof *im->f, cmp_files);
	for (size_t i = 1; i < im->n; i++) {
		const struct file *f = &im->f[i];
		if (!cmp_files(f - 1, f))
			return mq_err(EX_DATAERR, "%s: %s/%s/p%u/%s%s twice",
			    im->what, f->topic, f->group, f->k, f->name,
			    f->why ? ".why" : "");
	}
	for (size_t i = 0; i < im->n; i += 2) {
		const struct file *f = &im->f[i];
		if (f->why || i + 1 == im->n || !same_letter(f, f + 1))
			return mq_err(EX_DATAERR, "%s: dead letter %s/%s/p%u/%s "
			    "without its %s", im->what, f->topic, f->group, f->k,
			    f->name, f->why ? "message" : "record");
	}
	if (im->n / 2 != end)
		return mq_err(EX_DATAERR, "%s: %zu dead letters, but " PREFIX "END "
		    "says %zu", im->what, im->n / 2, end);
	return 0;
}

/* Checks that the topic of files[from, to) can take them: partitions that
 * exist, messages no larger than it allows.  A missing topic would be
 * created with the defaults. */
static int
check_topic(const struct import *im, const struct mq_topic_conf *c,
    int missing, size_t from, size_t to)
{
	const char *topic = im->f[from].topic;
	unsigned top = 0;
	for (size_t i = from; i < to; i++) {
		const struct file *f = &im->f[i];
		if (f->k > top)
			top = f->k;
		if (!f->why && f->size > c->max_message_size +
		    MQ_HEADER_BLOCK_MAX + MQ_SEAL_OVERHEAD(MQ_SEAL_KEYS_MAX))
			return mq_err(EX_DATAERR, "%s: dead letter %s/%s/p%u/%s is "
			    "larger than topic '%s' allows", im->what, topic,
			    f->group, f->k, f->name, topic);
	}
	if (top >= c->partitions)
		return mq_err(EX_DATAERR, "%s: topic '%s' %s %u partition%s, the "
		    "archive has dead letters of partition %u: create the topic "
		    "with %u partitions or more first", im->what, topic,
		    missing ? "would be created with" : "has", c->partitions,
		    c->partitions == 1 ? "" : "s", top, top + 1);
	return 0;
}

static size_t
topic_end(const struct import *im, size_t from)
{
	size_t to = from;
	while (to < im->n && !strcmp(im->f[to].topic, im->f[from].topic))
		to++;
	return to;
}

/* A topic with roles takes imported messages into log/ (place_letters),
 * which its publishers and administrators alone may write: others are
 * refused before anything changes. */
static int
may_write_logs(const struct import *im, size_t from, size_t to)
{
	struct mq_topic t;
	if (mq_topic_open_as(im->sp, im->f[from].topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int rc = 0;
	for (size_t i = from; rc == 0 && i < to; i++) {
		if (i > from && im->f[i].k == im->f[i - 1].k)
			continue;       /* sorted: once a partition of a group */
		char path[32];
		snprintf(path, sizeof path, "p%u/log", im->f[i].k);
		if (faccessat(t.fd, path, W_OK, AT_EACCESS) < 0)
			rc = mq_err(errno == EACCES ? EX_NOPERM : EX_IOERR,
			    "%s: topic '%s': %s: %s (importing into a topic "
			    "with roles publishes)", im->what, t.name, path,
			    strerror(errno));
	}
	mq_topic_close(&t);
	return rc;
}

/* Before anything changes: every topic can take its dead letters. */
static int
check_topics(const struct import *im)
{
	for (size_t from = 0, to; from < im->n; from = to) {
		to = topic_end(im, from);
		struct mq_topic_conf c;
		int missing = 0;
		if (mq_topic_conf_read(im->sp, im->f[from].topic, &c) < 0) {
			if (mq_errcode() != EX_NOINPUT)
				return -1;
			mq_topic_conf_default(&c);
			missing = 1;
		}
		if (check_topic(im, &c, missing, from, to) < 0 ||
		    (!missing && mq_roles_any(&c.roles) &&
		    may_write_logs(im, from, to) < 0))
			return -1;
	}
	return 0;
}

/* Raises the head of partition k above seq, under its publish lock. */
static int
raise_head(const struct mq_topic *t, unsigned k, uint64_t seq)
{
	struct mq_head h;
	int hfd = mq_head_open(t->pfd[k], MQ_HEAD_WRITE);
	if (hfd < 0)
		return -1;
	int rc = mq_head_lock(hfd, 1) < 0 ? -1 : 0;
	if (rc == 0) {
		rc = mq_head_read(hfd, &h);
		if (rc == 0)
			rc = mq_partition_repair_locked(t, k, hfd, &h);
		if (rc == 0 && h.committed <= seq) {
			h.next = h.committed = seq + 1;
			rc = mq_head_write(hfd, &h, 1);
		}
		mq_head_unlock(hfd);
	}
	close(hfd);
	return rc;
}

/* Puts one staged file in dfd as name: with rename (replace) or link
 * (returns 1 if name is there), or by writing a copy where the two are on
 * different filesystems. */
static int
place(const struct import *im, const struct file *f, int dfd,
    const char *name, int replace)
{
	char src[32];
	snprintf(src, sizeof src, "%zu", f->idx);
	if (replace ? mq_renameat(im->stagefd, src, dfd, name) == 0 :
	    mq_linkat(im->stagefd, src, dfd, name, 0) == 0)
		return 0;
	if (!replace && errno == EEXIST)
		return 1;
	if (errno != EXDEV)
		return mq_err_sys("import %s", name);
	char *buf;
	size_t len;
	struct stat st;
	int rc = slurp(im->stagefd, src, ENTRY_MAX, &buf, &len, &st);
	if (rc == 1)
		rc = mq_err(EX_SOFTWARE, "staged %s is gone", src);
	if (rc < 0)
		return -1;
	rc = mq_write_file(dfd, name, buf, len, 1, replace);
	free(buf);
	if (rc == 0) {
		struct timespec ts[2] = { { 0, UTIME_OMIT }, st.st_mtim };
		utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
	}
	return rc;
}

/* Puts the dead letters of files[from, to), one group of one partition of
 * topic t, in place. */
static int
place_letters(const struct import *im, const struct mq_topic *t, size_t from,
    size_t to, size_t *count)
{
	const struct file *f0 = &im->f[from];
	char dir[MQ_NAME_MAX + 16], why[MQ_KEY_LEN + 48];
	if (mq_path(dir, sizeof dir, "dlq/%s", f0->group) < 0 ||
	    mq_mkdirs(t->pfd[f0->k], dir) < 0)
		return -1;
	int dfd = mq_dir_open(t->pfd[f0->k], dir);
	if (dfd < 0)
		return -1;
	/* With roles, consumers deliver only what log/ names (msgread.c):
	 * the message goes there first, and the dead letter is linked from
	 * it (the log's file, when the KEY was published here already). */
	int logfd = mq_roles_any(&t->conf.roles) ?
	    mq_dir_open(t->pfd[f0->k], "log") : -2;
	int rc = logfd == -1 ? -1 : 0;
	for (size_t i = from; rc == 0 && i < to; i += 2) {
		const struct file *m = &im->f[i], *r = m + 1;
		if (mq_faccessat(dfd, m->name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		char key[MQ_KEY_LEN + 1];
		snprintf(key, sizeof key, "%.*s", MQ_KEY_LEN, m->name);
		rc = mq_path(why, sizeof why, "%s.why", m->name);
		if (rc == 0 && logfd >= 0 && place(im, m, logfd, key, 0) < 0)
			rc = -1;
		if (rc == 0)
			rc = place(im, r, dfd, why, 1);
		if (rc == 0 && logfd >= 0) {
			rc = mq_linkat(logfd, key, dfd, m->name, 0) == 0 ? 0 :
			    errno == EEXIST ? 1 : mq_err_sys("import %s", m->name);
		} else if (rc == 0)
			rc = place(im, m, dfd, m->name, 0);
		if (rc == 0) {
			(*count)++;
			mq_journal_change(t->sp, t->name, 'D', f0->k,
			    f0->group, m->name);
		}
		else if (rc == 1)
			rc = 0;
	}
	if (rc == 0 && logfd >= 0)
		rc = mq_fsync_fd(logfd);
	if (rc == 0)
		rc = mq_fsync_fd(dfd);
	if (logfd >= 0)
		close(logfd);
	close(dfd);
	return rc;
}

/* Creates the topic of files[from, to) and its groups where missing, and
 * puts its dead letters in place. */
static int
import_topic(const struct import *im, size_t from, size_t to, size_t *count)
{
	const char *topic = im->f[from].topic;
	struct mq_topic t;
	if (mq_topic_create(im->sp, topic, NULL) < 0 ||
	    mq_topic_open_as(im->sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	/* Checked already, unless the topic was created meanwhile. */
	int rc = check_topic(im, &t.conf, 0, from, to);
	for (size_t i = from; rc == 0 && i < to; i += 2) {
		const struct file *f = &im->f[i];
		if (i > from && !strcmp(f->group, f[-2].group))
			continue;
		rc = mq_group_exists(im->sp, topic, f->group);
		if (rc == 0)
			rc = mq_group_subscribe(im->sp, topic, f->group, NULL);
		rc = rc < 0 ? -1 : 0;
	}
	/* The highest sequence number of each partition, plus one. */
	uint64_t *top = rc == 0 ? calloc(t.conf.partitions, sizeof *top) : NULL;
	if (rc == 0 && !top)
		rc = mq_err_sys("malloc");
	for (size_t i = from; rc == 0 && i < to; i++)
		if (im->f[i].seq >= top[im->f[i].k])
			top[im->f[i].k] = im->f[i].seq + 1;
	for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++)
		if (top[k])
			rc = raise_head(&t, k, top[k] - 1);
	free(top);
	for (size_t i = from, j; rc == 0 && i < to; i = j) {
		for (j = i; j < to && im->f[j].k == im->f[i].k &&
		    !strcmp(im->f[j].group, im->f[i].group); j++)
			;
		rc = place_letters(im, &t, i, j, count);
	}
	mq_topic_close(&t);
	return rc;
}

/* Where the archive comes from.  It notes where the last byte that is not
 * zero was, to see what follows the end of the archive. */
struct source {
	int fd;
	uint64_t total;                 /* bytes read */
	uint64_t data_end;              /* just after the last non-zero one */
	char buf[65536];
};

static la_ssize_t
source_read(struct archive *a, void *p, const void **buf)
{
	struct source *s = p;
	ssize_t r;
	while ((r = read(s->fd, s->buf, sizeof s->buf)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		archive_set_error(a, errno, "%s", strerror(errno));
		return -1;
	}
	for (ssize_t i = r; i > 0; i--)
		if (s->buf[i - 1]) {
			s->data_end = s->total + (uint64_t)i;
			break;
		}
	s->total += (uint64_t)r;
	*buf = s->buf;
	return r;
}

/* After the last entry: the end-of-archive mark (two blocks of zeros)
 * and nothing but zeros (the padding of a tar blocking factor).  A tar
 * reader stops at the first zero block, or at any 512-byte boundary:
 * an archive cut short there, or two archives end to end, would
 * otherwise pass for the first part alone. */
static int
check_end(const struct import *im, struct archive *a, struct source *src)
{
	/* The offset of the header read last: the one that was the end. */
	la_int64_t end = archive_read_header_position(a);
	const void *buf;
	la_ssize_t r = 0;
	if (end < 0)
		return err_archive(a, im->what, 1);
	while (src->data_end <= (uint64_t)end &&
	    (r = source_read(a, src, &buf)) > 0)
		;
	if (r < 0)
		return err_archive(a, im->what, 1);
	if (src->data_end > (uint64_t)end)
		return mq_err(EX_DATAERR, "%s: damaged archive (data after its "
		    "end)", im->what);
	if (src->total < (uint64_t)end + 1024)
		return mq_err(EX_DATAERR, "%s: truncated archive (no "
		    "end-of-archive blocks)", im->what);
	return 0;
}

/* Reads, checks and stages the whole archive at path ("-": standard
 * input); *end gets the count END gives. */
static int
read_input(struct import *im, const char *path, size_t *end)
{
	int from_stdin = !strcmp(path, "-");
	struct source *src = malloc(sizeof *src);
	struct archive *a = archive_read_new();
	int rc = 0;
	if (!src || !a)
		rc = mq_err_sys("malloc");
	else if ((src->fd = from_stdin ? STDIN_FILENO : open(path, O_RDONLY |
	    O_CLOEXEC)) < 0)
		rc = mq_err_sys("%s", path);
	if (rc == 0) {
		src->total = src->data_end = 0;
		if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
		    archive_read_open(a, src, NULL, source_read, NULL) !=
		    ARCHIVE_OK)
			rc = err_archive(a, im->what, 0);
		if (rc == 0)
			rc = read_archive(im, a, end);
		if (rc == 0)
			rc = check_end(im, a, src);
		if (archive_read_close(a) != ARCHIVE_OK && rc == 0)
			rc = err_archive(a, im->what, 1);
		if (!from_stdin)
			close(src->fd);
	}
	if (a)
		archive_read_free(a);
	free(src);
	return rc;
}

int
mq_dlq_import(mq_spool *sp, const char *path, size_t *count)
{
	struct import im = { .sp = sp, .stagefd = -1 };
	char rnd[17];
	size_t end = 0;
	*count = 0;
	im.what = strcmp(path, "-") ? path : "standard input";
	mq_hex_random(rnd, 16);
	int rc = mq_path(im.stage, sizeof im.stage, "tmp/dlq-import.%s", rnd);
	if (rc == 0 && (mq_mkdir(sp->fd, im.stage) < 0 ||
	    (im.stagefd = mq_dir_open(sp->fd, im.stage)) < 0))
		rc = -1;
	if (rc == 0)
		rc = read_input(&im, path, &end);
	if (rc == 0)
		rc = pair_files(&im, end);
	if (rc == 0)
		rc = check_topics(&im);
	if (rc == 0 && syncfs(im.stagefd) < 0)
		rc = mq_err_sys("sync");
	for (size_t from = 0, to; rc == 0 && from < im.n; from = to) {
		to = topic_end(&im, from);
		rc = import_topic(&im, from, to, count);
	}
	if (im.stagefd >= 0) {
		/* What is left is removed now, or by the sweep of tmp/ later;
		 * the error worth reporting is the one before. */
		char msg[1024];
		int code = mq_errcode();
		snprintf(msg, sizeof msg, "%s", mq_errmsg());
		close(im.stagefd);
		mq_rmtree(sp->fd, im.stage);
		if (rc < 0)
			mq_err(code, "%s", msg);
	}
	for (size_t i = 0; i < im.n; i++) {
		free(im.f[i].topic);
		free(im.f[i].group);
	}
	free(im.f);
	return rc;
}
