/*
 * spool.c: finding, creating and opening a spool.
 *
 * A spool is recognised by SPOOL/VERSION ("mq-spool 1").  Creating one
 * writes ID and VERSION through temporary files, VERSION last and by link:
 * it is the commit point, so a spool whose creation was interrupted is an
 * empty-looking directory that the next tool finishes, and two tools
 * creating it at once agree on one VERSION.
 *
 * Only a writer creates a spool (MQ_CREATE).  A handle opened MQ_READONLY
 * is a monitor's: it never finishes an interrupted creation either, and
 * the library's writers refuse it (mq_spool_writable), so a read command
 * given a mistyped path fails instead of leaving a spool there.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

static const char version_line[] = "mq-spool 1\n";

char *
mq_spool_locate(const char *dir)
{
	char *p = NULL;
	const char *e;
	if (dir && *dir)
		p = strdup(dir);
	else if ((e = getenv("MQ_SPOOL")) && *e)
		p = strdup(e);
	else if ((e = getenv("XDG_STATE_HOME")) && *e)
		asprintf(&p, "%s/mq", e) < 0 ? (void)(p = NULL) : (void)0;
	else if ((e = getenv("HOME")) && *e)
		asprintf(&p, "%s/.local/state/mq", e) < 0 ? (void)(p = NULL) :
		    (void)0;
	else {
		mq_err(EX_USAGE, "no spool: set MQ_SPOOL or HOME, or use -s");
		return NULL;
	}
	if (!p)
		mq_err_sys("malloc");
	return p;
}

/* What an interrupted creation may have left before VERSION. */
static bool
not_ours(const char *name)
{
	return strcmp(name, "tmp") && strcmp(name, "topics") &&
	    strcmp(name, "ID");
}

static int
spool_init(int fd)
{
	if (mq_dir_count(fd, not_ours) != 0)
		return mq_err(EX_CONFIG, "not an mq spool (no VERSION file, "
		    "and the directory is not empty)");
	char id[33];
	mq_hex_random(id, 32);
	id[32] = '\n';
	if (mq_mkdir(fd, "tmp") < 0 || mq_mkdir(fd, "topics") < 0 ||
	    mq_write_file(fd, "ID", id, 33, 1, 0) < 0 ||
	    mq_write_file(fd, "VERSION", version_line, sizeof version_line - 1,
	    1, 0) < 0)
		return -1;
	return mq_fsync_fd(fd);
}

static int
spool_check(int fd)
{
	char *buf;
	size_t len;
	if (mq_read_at(fd, "VERSION", 4096, &buf, &len) < 0)
		return -1;
	int ok = len == sizeof version_line - 1 && !memcmp(buf, version_line, len);
	if (!ok) {
		buf[strcspn(buf, "\n")] = 0;
		mq_err(EX_CONFIG, "unknown spool version '%.40s' (this mq "
		    "knows '%.*s')", buf, (int)sizeof version_line - 2,
		    version_line);
	}
	free(buf);
	return ok ? 0 : -1;
}

mq_spool *
mq_spool_open(const char *dir, int flags)
{
	char *path = mq_spool_locate(dir);
	if (!path)
		return NULL;
	mq_spool *sp = calloc(1, sizeof *sp);
	if (!sp) {
		mq_err_sys("malloc");
		free(path);
		return NULL;
	}
	sp->path = path;
	sp->fd = sp->topics = sp->jfd = -1;
	sp->readonly = flags & MQ_READONLY;
	if ((flags & MQ_CREATE) && sp->readonly) {
		mq_err(EX_SOFTWARE, "MQ_CREATE and MQ_READONLY together");
		goto fail;
	}
	if ((flags & MQ_CREATE) && mq_mkdirs(AT_FDCWD, path) < 0)
		goto fail;
	sp->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sp->fd < 0) {
		if (errno == ENOENT)
			mq_err(EX_NOINPUT, "no spool at %s", path);
		else
			mq_err_sys("spool %s", path);
		goto fail;
	}
	mq_err_space_fd(sp->fd);
	if (mq_faccessat(sp->fd, "VERSION", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT) {
			mq_err_sys("spool %s", path);
			goto fail;
		}
		if (!(flags & MQ_CREATE)) {
			mq_err(EX_NOINPUT, "no spool at %s", path);
			goto fail;
		}
		if (spool_init(sp->fd) < 0)
			goto fail;
	}
	if (spool_check(sp->fd) < 0)
		goto fail;
	sp->shared = mq_fs_shared(sp->fd);
	sp->topics = mq_dir_open(sp->fd, "topics");
	if (sp->topics < 0)
		goto fail;
	return sp;
fail:;
	/* Keep the error of the step that failed, and say which spool. */
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", mq_errmsg());
	int code = mq_errcode();
	mq_spool_close(sp);
	mq_err(code, "%s", msg);
	return NULL;
}

int
mq_spool_init(const char *dir, const struct mq_perm *perm)
{
	char *path = mq_spool_locate(dir);
	if (!path)
		return -1;
	int fd = -1, rc = mq_mkdirs(AT_FDCWD, path);
	if (rc == 0 && (fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		rc = mq_err_sys("spool %s", path);
	/* The directory first: what the spool's creation makes inherits. */
	if (rc == 0)
		rc = mq_perm_apply_tree(fd, path, perm);
	if (fd >= 0)
		close(fd);
	mq_spool *sp = rc == 0 ? mq_spool_open(path, MQ_CREATE) : NULL;
	mq_spool_close(sp);
	free(path);
	return sp ? 0 : -1;
}

void
mq_spool_close(mq_spool *sp)
{
	if (!sp)
		return;
	mq_counters_close(sp);
	if (sp->topics >= 0)
		close(sp->topics);
	if (sp->jfd >= 0)
		close(sp->jfd);
	if (sp->fd >= 0) {
		mq_err_space_fd(-1);
		close(sp->fd);
	}
	free(sp->path);
	free(sp);
}

const char *
mq_spool_path(const mq_spool *sp)
{
	return sp->path;
}

int
mq_spool_writable(const mq_spool *sp)
{
	return sp->readonly ? mq_err(EX_SOFTWARE, "%s: spool opened read-only",
	    sp->path) : 0;
}

double
mq_now(void)
{
	static int checked;
	static double fixed = -1;
	if (!checked) {
		const char *e = getenv("MQ_NOW");
		char *end;
		if (e && *e) {
			double x = strtod(e, &end);
			if (!*end && isfinite(x) && x >= 0)
				fixed = x;
		}
		checked = 1;
	}
	if (fixed >= 0)
		return fixed;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A plain number, or a size with K, M, G or T (powers of 1024). */
int
mq_size_parse(const char *s, double *out)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end == s || errno || !isfinite(x) || x < 0 || !isdigit(
	    (unsigned char)*s))
		return -1;
	static const char units[] = "KMGT";
	const char *u = *end ? strchr(units, toupper((unsigned char)*end)) :
	    NULL;
	if (*end && (!u || end[1]))
		return -1;
	for (const char *p = units; u && p <= u; p++)
		x *= 1024;
	*out = x;
	return 0;
}

/* Accepts "@<seconds since the epoch>" or an RFC 3339 time,
 * "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)". */
int
mq_time_arg_parse(const char *s, double *out)
{
	char *end;
	if (s[0] == '@') {
		errno = 0;
		double x = strtod(s + 1, &end);
		if (end == s + 1 || *end || errno || !isfinite(x) || x < 0)
			return mq_err(EX_USAGE, "bad time '%s'", s);
		*out = x;
		return 0;
	}
	struct tm tm = { 0 };
	int n = 0;
	if (sscanf(s, "%4d-%2d-%2d%*1[Tt]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
	    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 ||
	    n != 19 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return mq_err(EX_USAGE, "bad time '%s' (use RFC 3339, as in "
		    "2026-11-29T14:20:00Z, or @SECONDS)", s);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	double frac = 0;
	const char *p = s + n;
	if (*p == '.') {
		double scale = 0.1;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += (*p - '0') * scale;
	}
	long off = 0;
	if ((*p == 'Z' || *p == 'z') && !p[1]) {
		off = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':' &&
	    isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
	    isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
		    ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		if (*p == '-')
			off = -off;
	} else {
		return mq_err(EX_USAGE, "bad time '%s' (use RFC 3339, as in "
		    "2026-11-29T14:20:00Z, or @SECONDS)", s);
	}
	*out = (double)timegm(&tm) - (double)off + frac;
	return 0;
}
