/*
 * sharedfs.c: what a spool on a file system shared between hosts needs.
 *
 * On NFS, GlusterFS, CephFS and other network or FUSE file systems a
 * descriptor held open may go on returning what was true before another
 * host's write, even after a lock is taken: the client keeps pages,
 * attributes and (GlusterFS's quick-read) whole small files, and
 * revalidates them on open at best.  A rewound directory stream may list
 * nothing new, and inotify sees no other host.  So on such a file system
 * whatever decides a commit is read through a descriptor opened afresh
 * with O_DIRECT, after a request that every client must send to the
 * server and that drops what it cached of the file (an fallocate that
 * keeps the size: GlusterFS's quick-read serves even O_DIRECT reads from
 * the copy it took at lookup, for up to a second, until the file is
 * written, truncated or allocated); directories are listed through a
 * fresh open.  sshfs adds two quirks: its locks stay within one mount,
 * and it answers a create onto an existing name with EPERM.  See
 * mq-spool(5), SHARED FILE SYSTEMS, for what each file system was shown
 * to need.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base.h"

bool
mq_fs_shared(int fd)
{
	static const unsigned long magic[] = {
		0x6969,         /* NFS */
		0x517b,         /* SMB */
		0xff534d42,     /* CIFS */
		0xfe534d42,     /* SMB2 */
		0x65735546,     /* FUSE: GlusterFS, MooseFS's mfsmount, sshfs, ceph-fuse */
		0x01021997,     /* 9P */
		0x00c36400,     /* Ceph */
		0x5346414f,     /* AFS */
		0x6b414653,     /* kAFS */
		0x01161970,     /* GFS2 */
		0x7461636f,     /* OCFS2 */
		0x47504653,     /* GPFS */
		0x0bd00bd0,     /* Lustre */
	};
	/* The suite runs the shared code paths on local disks too. */
	const char *force = getenv("MQ_SHARED_FS");
	if (force && !strcmp(force, "1"))
		return true;
	struct statfs st;
	if (fstatfs(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < sizeof magic / sizeof *magic; i++)
		if ((unsigned long)st.f_type == magic[i])
			return true;
	return false;
}

int
mq_reopen(int fd, int flags)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int nfd = open(path, flags | O_CLOEXEC);
	/* A file system without O_DIRECT (tmpfs on older kernels) is no
	 * network file system: its page cache is the file. */
	if (nfd < 0 && errno == EINVAL && (flags & O_DIRECT))
		nfd = open(path, (flags & ~O_DIRECT) | O_CLOEXEC);
	if (nfd < 0)
		return mq_err_sys("reopen");
	return nfd;
}

int
mq_fresh_fd(int fd, bool readonly)
{
	if (readonly)
		return mq_reopen(fd, O_RDONLY | O_DIRECT);
	int nfd = mq_reopen(fd, O_RDWR | O_DIRECT);
	/* A reader without write permission (a consumer of a spool whose
	 * heads only publishers may write) reads what the server has, and at
	 * worst quick-read's second-old copy: never a commit decision. */
	if (nfd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM))
		return mq_reopen(fd, O_RDONLY | O_DIRECT);
	if (nfd < 0)
		return -1;
	/* Where there is no fallocate (NFSv3, sshfs) there is no cache that
	 * O_DIRECT does not pass by either. */
	if (fallocate(nfd, FALLOC_FL_KEEP_SIZE, 0, 1) < 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL) {
		int e = errno;
		close(nfd);
		errno = e;
		return mq_err_sys("fallocate");
	}
	return nfd;
}

ssize_t
mq_fresh_pread(int fd, void *buf, size_t len, uint64_t off)
{
	/* O_DIRECT wants the buffer, the offset and the length aligned. */
	enum { A = 4096 };
	uint64_t at = off & ~(uint64_t)(A - 1);
	size_t lead = (size_t)(off - at), want = (lead + len + A - 1) & ~(size_t)(A - 1);
	char *tmp;
	if (posix_memalign((void **)&tmp, A, want) != 0)
		return mq_err_sys("malloc");
	size_t got = 0;
	while (got < want) {
		ssize_t n = pread(fd, tmp + got, want - got, (off_t)(at + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(tmp);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if ((size_t)n % A)
			break;          /* the end of the file */
	}
	size_t out = got > lead ? got - lead : 0;
	if (out > len)
		out = len;
	memcpy(buf, tmp + lead, out);
	free(tmp);
	return (ssize_t)out;
}

int
mq_fresh_size(int fd, bool readonly, uint64_t *size)
{
	int ffd = mq_fresh_fd(fd, readonly);
	if (ffd < 0)
		return -1;
	/* FORCE_SYNC: attributes from the server, not the client's cache. */
	struct statx st;
	int rc = statx(ffd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_SIZE,
	    &st) < 0 ? mq_err_sys("stat") : 0;
	/* And whatever was appended that the size did not show yet. */
	uint64_t end = rc == 0 ? st.stx_size : 0;
	char probe[4096];
	ssize_t n = 0;
	while (rc == 0 && (n = mq_fresh_pread(ffd, probe, sizeof probe, end)) > 0)
		end += (uint64_t)n;
	if (rc == 0 && n < 0)
		rc = mq_err_sys("read");
	close(ffd);
	if (rc == 0)
		*size = end;
	return rc;
}

bool
mq_name_taken(int dirfd, const char *path, int err)
{
	if (err == EEXIST || err == ENOTEMPTY)
		return true;
	/* sshfs answers a link, a rename or an exclusive create onto a name
	 * that exists with EPERM (the sftp server's "failure"). */
	if (err != EPERM)
		return false;
	/* The look must not stand for the error: a caller that reports
	 * err, or tests errno, sees the EPERM of a real refusal. */
	int e = errno;
	bool taken = mq_faccessat(dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	errno = e;
	return taken;
}

/* The type of the mount fd is on, as /proc/self/mountinfo names it. */
static bool
mount_type(int fd, char *type, size_t len)
{
	char path[64], line[4096];
	int mnt = -1;
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "mnt_id: %d", &mnt) == 1)
			break;
	fclose(f);
	if (mnt < 0 || !(f = fopen("/proc/self/mountinfo", "re")))
		return false;
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		char *sep = strstr(line, " - ");
		int id;
		if (sscanf(line, "%d", &id) != 1 || id != mnt || !sep)
			continue;
		size_t n = strcspn(sep + 3, " \n");
		if (n < len) {
			memcpy(type, sep + 3, n);
			type[n] = 0;
			found = true;
		}
	}
	fclose(f);
	return found;
}

bool
mq_fs_locks_local(int fd)
{
	char type[64];
	return mount_type(fd, type, sizeof type) && !strcmp(type, "fuse.sshfs");
}
