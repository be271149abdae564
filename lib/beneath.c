/*
 * beneath.c: opening a file under a directory of the spool, and only
 * there.  O_NOFOLLOW covers the last component of a path alone: with
 * "g/G/new/KEY", a symbolic link planted at g/G (by another user of a
 * shared spool, or received) would take the open anywhere.  openat2(2)
 * with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS refuses, at every
 * component, a symbolic link (ELOOP) and a way out of the directory,
 * ".." or an absolute path (EXDEV).  Placed partitions, the one place
 * where the spool follows a link by design, are opened by
 * mq_dir_open_partition, not here (mq-spool(5), Placement).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

int
mq_openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	/* O_TMPFILE holds O_DIRECTORY: all its bits, or it is not there. */
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	/* Kernels before 5.6 have no openat2: the last component is all
	 * that can be checked there.  A path relative to the working
	 * directory is the user's (mq-stat -o FILE), and may go anywhere. */
	static int missing;
	if (!missing && dirfd != AT_FDCWD) {
		struct open_how how = {
			.flags = (uint64_t)(unsigned)flags,
			.mode = mode,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			    RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
		if (fd >= 0 || errno != ENOSYS)
			return (int)fd;
		missing = 1;
	}
	return openat(dirfd, path, flags | O_NOFOLLOW, mode);
}
