/*
 * seglink.c: a segment written in a partition's tmp/ and linked into its
 * log/ (mq-spool(5), SEGMENTED STORAGE, Publish, format 2): what a
 * publish and a segment received from a peer both do under the head's
 * lock.
 *
 * The link is the commit point, and it fails when the name exists: a
 * sequence number is never given out twice, even by a file system that
 * handed the lock to two holders.  A tmp/ name is a KEY, so that the
 * repair of whoever holds the lock next removes one a crash left.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "queue.h"

int
mq_seg_write_tmp(int tmpfd, const char *tmp, const void *buf, size_t len,
    bool sync)
{
	int fd = mq_openat(tmpfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return mq_err_sys("create tmp/%s", tmp);
	struct iovec iov = { (void *)buf, len };
	int rc = mq_write_all(fd, &iov, 1);
	if (rc == 0 && sync)
		rc = fdatasync(fd);
	if (close(fd) < 0)
		rc = -1;
	if (rc < 0) {
		int saved = errno;
		mq_unlinkat(tmpfd, tmp, 0);
		errno = saved;
		return mq_err_sys("write tmp/%s", tmp);
	}
	return 0;
}

int
mq_seg_link_name(int tmpfd, const char *tmp, int logfd, const char *name)
{
	if (mq_linkat(tmpfd, tmp, logfd, name, 0) == 0)
		return 0;
	if (errno != EEXIST)
		return mq_err_sys("link log/%s", name);
	mq_unlinkat(tmpfd, tmp, 0);
	return 1;
}

int
mq_seg_link(int tmpfd, const char *tmp, int logfd, const char *name,
    bool sync)
{
	int r = mq_seg_link_name(tmpfd, tmp, logfd, name);
	if (r != 0)
		return r;
	/* A power loss before the directory's sync may undo the link:
	 * the caller had not returned. */
	if (sync && mq_fsync_fd(logfd) < 0)
		return -1;
	if (mq_unlinkat(tmpfd, tmp, 0) < 0 && errno != ENOENT)
		return mq_err_sys("unlink tmp/%s", tmp);
	return 0;
}
