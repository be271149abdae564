/*
 * head.c: a partition's commit record, p<k>/head.
 *
 * One fixed-width line, rewritten in place with pwrite:
 *   mq-head 1 next=<20 digits> committed=<20 digits> sum=<8 hex>\n
 * committed is the first sequence number not yet committed: consumers see
 * only messages below it, so raising it is the commit point of a publish.
 * next is above committed only while a publish is under way or after a
 * publisher died during one.  Readers take no lock; the checksum (XXH32 of
 * the bytes before " sum=") lets them detect a torn read and read again.
 * The file is also the partition's publish lock (an OFD write lock on it),
 * which a dying process releases with its descriptors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <xxhash.h>

#include "internal.h"

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

int
mq_head_read(int fd, struct mq_head *h)
{
	char buf[MQ_HEAD_SIZE + 1];
	for (int tries = 0; tries < 1000; tries++) {
		ssize_t r = pread(fd, buf, MQ_HEAD_SIZE, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return mq_err_sys("read head");
		}
		buf[r] = 0;             /* head_parse uses sscanf */
		if (head_parse(buf, (size_t)r, h) == 0)
			return 0;
		/* An empty head is one whose creator has not written it yet. */
		if (r == 0) {
			h->next = h->committed = 0;
			return 0;
		}
	}
	return mq_err(EX_CONFIG, "partition head is corrupt");
}

int
mq_head_write(int fd, const struct mq_head *h, int sync)
{
	char buf[MQ_HEAD_SIZE + 1];
	if (mq_head_format(h, buf) < 0)
		return -1;
	ssize_t w = pwrite(fd, buf, MQ_HEAD_SIZE, 0);
	if (w != MQ_HEAD_SIZE)
		return w < 0 ? mq_err_sys("write head") :
		    mq_err(EX_IOERR, "short write to head");
	if (sync && fdatasync(fd) < 0)
		return mq_err_sys("sync head");
	return 0;
}

int
mq_head_lock(int fd, int wait)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	for (;;) {
		if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0)
			return 1;
		if (errno == EINTR)
			continue;
		if (!wait && (errno == EAGAIN || errno == EACCES))
			return 0;
		return mq_err_sys("lock head");
	}
}

void
mq_head_unlock(int fd)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	fcntl(fd, F_OFD_SETLK, &fl);
}

int
mq_head_open(int pfd, int create)
{
	int fd = openat(pfd, "head", O_RDWR | O_NOFOLLOW | O_CLOEXEC |
	    (create ? O_CREAT : 0), 0666);
	if (fd < 0)
		return mq_err_sys("head");
	return fd;
}
