/*
 * error.c: one error per thread, as a message and a sysexits.h code.
 * Library functions set it and return -1 or NULL; tools print it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sysexits.h>

#include "base.h"

static _Thread_local char errbuf[1024];
static _Thread_local int errcode = EX_SOFTWARE;

const char *
mq_errmsg(void)
{
	return errbuf[0] ? errbuf : "unknown error";
}

int
mq_errcode(void)
{
	return errcode;
}

int
mq_errno_code(int e)
{
	switch (e) {
	case ENOSPC: case EDQUOT: case EAGAIN: case EINTR: case ENOLCK:
		return EX_TEMPFAIL;
	case EACCES: case EPERM: case EROFS:
		return EX_NOPERM;
	case ENOENT: case ENOTDIR:
		return EX_NOINPUT;
	case EIO: case EFBIG:
		return EX_IOERR;
	case EEXIST: case ENAMETOOLONG:
		return EX_CANTCREAT;
	case ENOMEM: case EMFILE: case ENFILE:
		return EX_OSERR;
	default:
		return EX_OSERR;
	}
}

static void
vset(int code, const char *fmt, va_list ap, const char *suffix)
{
	int n = vsnprintf(errbuf, sizeof errbuf, fmt, ap);
	if (suffix && n >= 0 && (size_t)n < sizeof errbuf)
		snprintf(errbuf + n, sizeof errbuf - n, ": %s", suffix);
	errcode = code;
}

int
mq_err(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(code, fmt, ap, NULL);
	va_end(ap);
	return -1;
}

/* The spool's directory, asked when a write fails with ENOSPC: the
 * kernel says the same for a file system out of blocks and one out of
 * inodes, which want different remedies.  A thread's own, as its errors
 * are (mq-http opens a spool per connection thread). */
static _Thread_local int space_fd = -1;

void
mq_err_space_fd(int fd)
{
	space_fd = fd;
}

static const char *
no_space(int e)
{
	struct statvfs v;
	if (e == EDQUOT)
		return "disk quota exceeded (try again later)";
	if (space_fd >= 0 && fstatvfs(space_fd, &v) == 0 && v.f_files > 0 &&
	    v.f_favail == 0 && v.f_bavail > 0)
		return "no free inodes (try again later)";
	return "disk full (try again later)";
}

/* Like mq_err, with the errno text appended and the code chosen from errno.
 * A full disk gets its own words, since "try again later" is the point. */
int
mq_err_sys(const char *fmt, ...)
{
	int e = errno;
	const char *why = strerror(e);
	if (e == ENOSPC || e == EDQUOT)
		why = no_space(e);
	va_list ap;
	va_start(ap, fmt);
	vset(mq_errno_code(e), fmt, ap, why);
	va_end(ap);
	errno = e;
	return -1;
}

int
mq_err_recode(int from, int to)
{
	if (errcode == from)
		errcode = to;
	return -1;
}
