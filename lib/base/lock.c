/*
 * lock.c: every lock wait of the library goes through mq_lock_take.
 *
 * A blocking F_OFD_SETLKW or flock(2) on a FUSE file system parks one of
 * the client's request threads until the lock is granted.  mfsmount has
 * ten: ten waiters and the mount is frozen for good, the holder's own
 * next request (a lookup, a write, the unlock) included.  So on a shared
 * file system (mq_fs_shared) nobody waits in the kernel: a waiter tries
 * without blocking and sleeps between tries, 0.5 ms doubling up to a cap
 * (LOCK_NAP_MAX), each nap drawn between half and all of its length so
 * that waiters let go together do not all try again together.  Each try
 * is one request that the client answers at once.
 *
 * A lock whose holder died is given up by the file system, after a time
 * only the file system knows (mq(7), Sharing a spool); a holder that is
 * stalled but connected keeps it.  So a wait longer than MQ_LOCK_WARN
 * (60 s) is said once on standard error, naming the file, and with
 * MQ_LOCK_TIMEOUT set, a wait that long fails with EX_TEMPFAIL instead of
 * going on.
 *
 * On a local file system a holder's death always releases its locks and
 * the kernel's wait queue is cheaper than naps (bench/shared.bash,
 * mq-spool(5) SHARED FILE SYSTEMS), so the wait blocks there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

#define LOCK_NAP_MIN 0.0005
#define LOCK_NAP_MAX 0.05

/* One try: 0 taken, -1 with errno (EAGAIN: held by another). */
static int
lock_try(int fd, enum mq_lock_kind kind, bool block)
{
	struct flock fl = { .l_whence = SEEK_SET };
	switch (kind) {
	case MQ_LOCK_WRITE:
	case MQ_LOCK_READ:
		fl.l_type = kind == MQ_LOCK_WRITE ? F_WRLCK : F_RDLCK;
		return fcntl(fd, block ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
	case MQ_LOCK_FLOCK_EX:
	case MQ_LOCK_FLOCK_SH:
		return flock(fd, (kind == MQ_LOCK_FLOCK_EX ? LOCK_EX : LOCK_SH) |
		    (block ? 0 : LOCK_NB));
	}
	errno = EINVAL;
	return -1;
}

static bool
busy(int e)
{
	return e == EAGAIN || e == EACCES || e == EWOULDBLOCK;
}

static void
nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The file the lock is on, for a person to find it: its path, or what
 * the caller calls it. */
static void
lock_name(int fd, const char *what, char *buf, size_t len)
{
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, buf, len - 1);
	if (n <= 0)
		snprintf(buf, len, "%s", what);
	else
		buf[n] = 0;
}

/* Waits by trying and napping: 1 taken, -1 an error of the file system
 * (errno kept, no message yet), -2 MQ_LOCK_TIMEOUT passed (message set). */
static int
lock_poll(int fd, enum mq_lock_kind kind, const char *what)
{
	double start = mq_mono(), d = LOCK_NAP_MIN;
	double warn = mq_env_duration("MQ_LOCK_WARN", 60);
	double limit = mq_env_duration("MQ_LOCK_TIMEOUT", 0);
	bool warned = false;
	for (;;) {
		if (lock_try(fd, kind, false) == 0)
			return 1;
		if (errno != EINTR && !busy(errno))
			return -1;
		double waited = mq_mono() - start;
		char name[1024];
		if (limit > 0 && waited >= limit) {
			lock_name(fd, what, name, sizeof name);
			mq_err(EX_TEMPFAIL, "%s: locked for %.0f s by another "
			    "process or host; gave up (MQ_LOCK_TIMEOUT); see "
			    "mq(7) Sharing a spool", name, waited);
			return -2;
		}
		if (!warned && waited >= warn) {
			lock_name(fd, what, name, sizeof name);
			fprintf(stderr, "%s: %s: locked for %.0f s by another "
			    "process or host; still waiting; see mq(7) Sharing "
			    "a spool\n", getprogname(), name, waited);
			warned = true;
		}
		nap(d / 2 + d / 2 * arc4random_uniform(1001) / 1000.0);
		d = d * 2 < LOCK_NAP_MAX ? d * 2 : LOCK_NAP_MAX;
	}
}

int
mq_lock_take(int fd, enum mq_lock_kind kind, int wait, const char *what)
{
	int rc;
	if (wait && mq_fs_shared(fd))
		rc = lock_poll(fd, kind, what);
	else {
		while ((rc = lock_try(fd, kind, wait)) < 0 && errno == EINTR)
			;
		if (rc == 0)
			return 1;
		if (!wait && busy(errno))
			return 0;
	}
	if (rc == 1)
		return 1;
	if (rc == -2) {
		errno = EAGAIN;
		return -1;
	}
	/* Callers test errno (a file system without locks says ENOLCK or
	 * EINVAL); the message must not change it. */
	int e = errno;
	mq_err_sys("lock %s", what);
	errno = e;
	return -1;
}

void
mq_lock_drop(int fd, enum mq_lock_kind kind)
{
	if (kind == MQ_LOCK_FLOCK_EX || kind == MQ_LOCK_FLOCK_SH) {
		flock(fd, LOCK_UN);
		return;
	}
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	fcntl(fd, F_OFD_SETLK, &fl);
}
