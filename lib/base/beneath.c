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
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base.h"

static int
open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
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
	/* On a FUSE file system O_CREAT without O_EXCL is a lookup, then a
	 * create: a name another host made between the two fails the
	 * create with EEXIST (MooseFS), where a local one opens it.  The
	 * name is there now, so a second try opens it. */
	int fd, tries = 0;
	while ((fd = open_beneath(dirfd, path, flags, mode)) < 0 &&
	    errno == EEXIST && (flags & (O_CREAT | O_EXCL)) == O_CREAT &&
	    ++tries < 8)
		;
	return fd;
}

/* The directory that holds path's last component, opened beneath dirfd
 * (dirfd itself for a name without '/', and for the user's own paths,
 * relative to the working directory or absolute); *name: that component.
 * The calls below use it so that a link on the way stops them as it
 * stops mq_openat. */
int
mq_parent_open(int dirfd, const char *path, const char **name, int *fd)
{
	const char *slash = strrchr(path, '/');
	*name = path;
	*fd = dirfd;                    /* AT_FDCWD is negative too */
	if (!slash || dirfd == AT_FDCWD || path[0] == '/')
		return 0;
	char dir[4096];
	size_t len = (size_t)(slash - path);
	if (len >= sizeof dir) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, len);
	dir[len] = 0;
	*name = slash + 1;
	*fd = mq_openat(dirfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return *fd < 0 ? -1 : 0;
}

void
mq_parent_close(int dirfd, int fd)
{
	if (fd != dirfd && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
}

enum op { UNLINK, FSTAT, FACCESS, RENAME, LINK };

/* One call of op on path (and path2) beneath their directories. */
static int
beneath(enum op op, int dir, const char *path, int dir2, const char *path2,
    struct stat *st, int arg, int flags)
{
	const char *name, *name2 = NULL;
	int fd, fd2 = -1, rc = -1;
	if (mq_parent_open(dir, path, &name, &fd) == 0 && (op < RENAME ||
	    mq_parent_open(dir2, path2, &name2, &fd2) == 0)) {
		switch (op) {
		case UNLINK: rc = unlinkat(fd, name, flags); break;
		case FSTAT: rc = fstatat(fd, name, st, flags); break;
		case FACCESS: rc = faccessat(fd, name, arg, flags); break;
		case RENAME: rc = renameat(fd, name, fd2, name2); break;
		case LINK: rc = linkat(fd, name, fd2, name2, flags); break;
		}
	}
	mq_parent_close(dir, fd);
	if (op >= RENAME)
		mq_parent_close(dir2, fd2);
	return rc;
}

int
mq_unlinkat(int dirfd, const char *path, int flags)
{
	return beneath(UNLINK, dirfd, path, -1, NULL, NULL, 0, flags);
}

int
mq_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return beneath(FSTAT, dirfd, path, -1, NULL, st, 0, flags);
}

int
mq_faccessat(int dirfd, const char *path, int mode, int flags)
{
	return beneath(FACCESS, dirfd, path, -1, NULL, NULL, mode, flags);
}

int
mq_renameat(int olddir, const char *oldpath, int newdir, const char *newpath)
{
	return beneath(RENAME, olddir, oldpath, newdir, newpath, NULL, 0, 0);
}

int
mq_linkat(int olddir, const char *oldpath, int newdir, const char *newpath,
    int flags)
{
	return beneath(LINK, olddir, oldpath, newdir, newpath, NULL, 0, flags);
}
