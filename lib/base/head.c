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
 * Read and written as fixline.c reads and writes its files: afresh, on a
 * file system shared between hosts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"

#define HEAD_BODY 66    /* "mq-head 1 next=" 20 " committed=" 20 */

int
mq_head_format(const struct mq_head *h, char buf[MQ_HEAD_SIZE + 1])
{
	int n = snprintf(buf, MQ_HEAD_SIZE + 1,
	    "mq-head 1 next=%020" PRIu64 " committed=%020" PRIu64, h->next,
	    h->committed);
	return mq_line_seal(buf, MQ_HEAD_SIZE + 1, n, HEAD_BODY, "head");
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

static int
parse_cb(const char *buf, size_t len, void *ctx)
{
	return head_parse(buf, len, ctx);
}

int
mq_head_read(int hfd, struct mq_head *h)
{
	int rc = mq_line_read(hfd, parse_cb, h, "partition head");
	/* An empty head is one whose creator has not written it yet. */
	if (rc == 1)
		h->next = h->committed = 0;
	return rc < 0 ? -1 : 0;
}

int
mq_head_write(int hfd, const struct mq_head *h, int sync)
{
	char buf[MQ_HEAD_SIZE + 1];
	if (mq_head_format(h, buf) < 0)
		return -1;
	return mq_line_write(hfd, buf, MQ_HEAD_SIZE, sync, "head");
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
