/*
 * head.c: a partition's commit record, p<k>/head.
 *
 * One fixed-width line, rewritten in place with pwrite:
 *   mq-head 1 next=<20 digits> committed=<20 digits> sum=<8 hex>\n
 * committed is the first sequence number not yet committed: consumers see
 * only messages below it, so raising it is the commit point of a publish.
 * next is above committed only while a publish is under way or after a
 * publisher died during one.  Sequence numbers end at MQ_SEQ_MAX, so next
 * never wraps: a partition whose committed is past it takes no more.
 * Readers take no lock and open it read-only; the checksum (XXH32 of
 * the bytes before " sum=") lets them detect a torn read and read again.
 * The file is also the partition's publish lock (an OFD write lock on it),
 * which a dying process releases with its descriptors, and which is
 * waited for as lock.c waits (never in the kernel on a shared file
 * system).
 *
 * On a file system shared between hosts (sharedfs.c) the descriptor held
 * for the lock is never read or written: each read goes through a fresh
 * O_DIRECT descriptor after the client's cache of the file was dropped,
 * and each write through a fresh descriptor that is synced before it is
 * closed, so the next lock holder on any host reads what we wrote.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <xxhash.h>

#include "base.h"

#define HEAD_BODY 66    /* "mq-head 1 next=" 20 " committed=" 20 */

int
mq_head_format(const struct mq_head *h, char buf[MQ_HEAD_SIZE + 1])
{
	int n = snprintf(buf, MQ_HEAD_SIZE + 1,
	    "mq-head 1 next=%020" PRIu64 " committed=%020" PRIu64, h->next,
	    h->committed);
	if (n != HEAD_BODY)
		return mq_err(EX_SOFTWARE, "head line has the wrong length");
	snprintf(buf + n, MQ_HEAD_SIZE + 1 - (size_t)n, " sum=%08x\n",
	    (unsigned)XXH32(buf, (size_t)n, 0));
	return 0;
}

uint64_t
mq_head_room(const struct mq_head *h)
{
	return h->committed > MQ_SEQ_MAX ? 0 : MQ_SEQ_MAX - h->committed + 1;
}

static int
head_parse(const char *buf, size_t len, struct mq_head *h)
{
	char expect[MQ_HEAD_SIZE + 1];
	if (len != MQ_HEAD_SIZE || buf[MQ_HEAD_SIZE - 1] != '\n')
		return -1;
	if (sscanf(buf, "mq-head 1 next=%20" SCNu64 " committed=%20" SCNu64,
	    &h->next, &h->committed) != 2)
		return -1;
	if (mq_head_format(h, expect) < 0 || memcmp(expect, buf, len))
		return -1;
	return 0;
}

/* A head opened to read only (MQ_HEAD_READ) is read afresh that way too:
 * a reader writes nothing, and a copy a second old decides no commit. */
static bool
read_only(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_ACCMODE) == O_RDONLY;
}

int
mq_head_read(int hfd, struct mq_head *h)
{
	/* O_DIRECT wants an aligned buffer and length. */
	char buf[4096 + 1] __attribute__((aligned(4096)));
	int fd = mq_fs_shared(hfd) ? mq_fresh_fd(hfd, read_only(hfd)) : hfd;
	if (fd < 0)
		return -1;
	int rc = 1;                     /* 1: not yet read whole */
	for (int tries = 0; rc == 1 && tries < 1000; tries++) {
		ssize_t r = pread(fd, buf, 4096, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = mq_err_sys("read head");
			break;
		}
		buf[r] = 0;             /* head_parse uses sscanf */
		if (head_parse(buf, (size_t)r, h) == 0)
			rc = 0;
		/* An empty head is one whose creator has not written it yet. */
		else if (r == 0) {
			h->next = h->committed = 0;
			rc = 0;
		}
	}
	if (fd != hfd)
		close(fd);
	return rc == 1 ? mq_err(EX_CONFIG, "partition head is corrupt") : rc;
}

int
mq_head_write(int hfd, const struct mq_head *h, int sync)
{
	char buf[MQ_HEAD_SIZE + 1];
	if (mq_head_format(h, buf) < 0)
		return -1;
	/* Synced whatever the mode where other hosts read it: closing is
	 * no flush on FUSE file systems that write behind. */
	bool shared = mq_fs_shared(hfd);
	int fd = shared ? mq_reopen(hfd, O_WRONLY) : hfd;
	if (fd < 0)
		return -1;
	int rc = 0;
	ssize_t w = pwrite(fd, buf, MQ_HEAD_SIZE, 0);
	if (w != MQ_HEAD_SIZE)
		rc = w < 0 ? mq_err_sys("write head") :
		    mq_err(EX_IOERR, "short write to head");
	else if ((sync || shared) && fdatasync(fd) < 0)
		rc = mq_err_sys("sync head");
	if (fd != hfd && close(fd) < 0 && rc == 0)
		rc = mq_err_sys("write head");
	return rc;
}

int
mq_file_lock(int fd, int wait, const char *what)
{
	return mq_lock_take(fd, MQ_LOCK_WRITE, wait, what);
}

int
mq_head_lock(int fd, int wait)
{
	return mq_file_lock(fd, wait, "head");
}

void
mq_head_unlock(int fd)
{
	mq_lock_drop(fd, MQ_LOCK_WRITE);
}

int
mq_head_open(int pfd, enum mq_head_how how)
{
	/* A write lock needs a descriptor open for writing; a reader's is
	 * opened to read, so read permission is enough and it can write
	 * nothing. */
	int flags = how == MQ_HEAD_READ ? O_RDONLY :
	    how == MQ_HEAD_CREATE ? O_RDWR | O_CREAT : O_RDWR;
	int fd = mq_file_open(pfd, "head", flags, 0666, NULL);
	/* A head that is no regular file is a damaged one. */
	return fd < 0 ? mq_err_recode(EX_DATAERR, EX_CONFIG) : fd;
}
