/*
 * fixline.c: a file of one fixed-width line, rewritten in place with
 * pwrite and read without a lock: a partition's head (head.c), a group's
 * cursor (format 2).
 *
 * A reader that races a writer may see a torn line; the line's checksum
 * (the caller's parse checks it) tells, and it reads again.  On a file
 * system shared between hosts (sharedfs.c) the descriptor given, which
 * may hold the file's lock, is never read or written: each read goes
 * through a fresh O_DIRECT descriptor after the client's cache of the
 * file was dropped, and each write through a fresh descriptor that is
 * synced before it is closed, so the next lock holder on any host reads
 * what we wrote.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sysexits.h>
#include <unistd.h>
#include <xxhash.h>

#include "base.h"

int
mq_line_seal(char *buf, size_t size, int n, int body, const char *what)
{
	if (n != body)
		return mq_err(EX_SOFTWARE, "%s line has the wrong length", what);
	snprintf(buf + n, size - (size_t)n, " sum=%08x\n",
	    (unsigned)XXH32(buf, (size_t)n, 0));
	return 0;
}

/* A file opened to read only is read afresh that way too: a reader
 * writes nothing, and a copy a second old decides no commit. */
static bool
read_only(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_ACCMODE) == O_RDONLY;
}

int
mq_line_read(int lfd, int (*parse)(const char *, size_t, void *), void *ctx,
    const char *what)
{
	/* O_DIRECT wants an aligned buffer and length. */
	char buf[4096 + 1] __attribute__((aligned(4096)));
	int fd = mq_fs_shared(lfd) ? mq_fresh_fd(lfd, read_only(lfd)) : lfd;
	if (fd < 0)
		return -1;
	int rc = 2;                     /* 2: not yet read whole */
	for (int tries = 0; rc == 2 && tries < 1000; tries++) {
		ssize_t r = pread(fd, buf, 4096, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = mq_err_sys("read %s", what);
			break;
		}
		buf[r] = 0;             /* parsers may use sscanf */
		if (r == 0)
			rc = 1;
		else if (parse(buf, (size_t)r, ctx) == 0)
			rc = 0;
	}
	if (fd != lfd)
		close(fd);
	return rc == 2 ? mq_err(EX_CONFIG, "%s is corrupt", what) : rc;
}

int
mq_line_write(int lfd, const char *buf, size_t len, int sync,
    const char *what)
{
	/* Synced whatever the mode where other hosts read it: closing is
	 * no flush on FUSE file systems that write behind. */
	bool shared = mq_fs_shared(lfd);
	int fd = shared ? mq_reopen(lfd, O_WRONLY) : lfd;
	if (fd < 0)
		return -1;
	int rc = 0;
	ssize_t w = pwrite(fd, buf, len, 0);
	if (w < 0 || (size_t)w != len)
		rc = w < 0 ? mq_err_sys("write %s", what) :
		    mq_err(EX_IOERR, "short write to %s", what);
	else if ((sync || shared) && fdatasync(fd) < 0)
		rc = mq_err_sys("sync %s", what);
	if (fd != lfd && close(fd) < 0 && rc == 0)
		rc = mq_err_sys("write %s", what);
	return rc;
}
