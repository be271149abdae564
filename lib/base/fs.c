/*
 * fs.c: file operations relative to directory descriptors.
 *
 * Every file is opened with openat and O_NOFOLLOW, so a symlink planted in
 * the spool is refused rather than followed; a file that is read is also
 * opened with O_NONBLOCK and must be a regular file, so a FIFO or a device
 * put where a file belongs is an error, never a hang.  A path of several
 * names is walked one directory at a time where a link on the way would
 * do harm (removals).  Whole files are written to a
 * dot-prefixed temporary name in the target directory, synced if asked,
 * then linked (create-only) or renamed (replace) into place: readers see
 * the old file or the new one, never part of one.  Dot names are skipped by
 * every listing, so a temporary left by a crash is never mistaken for data.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

int
mq_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		return mq_err(EX_SOFTWARE, "path too long");
	return 0;
}

int
mq_dir_open(int dirfd, const char *path)
{
	int fd = mq_openat(dirfd, path,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return mq_err_sys("%s", path);
	return fd;
}

/* A partition directory may be a symlink to another filesystem: that is
 * how a topic spreads over disks (mq-spool(5)). */
int
mq_dir_open_partition(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return mq_err_sys("%s", path);
	return fd;
}

int
mq_mkdir(int dirfd, const char *path)
{
	/* In the spool, the parent is opened beneath dirfd first: mkdirat
	 * would follow a link on the way. */
	const char *name;
	int fd;
	int rc = mq_parent_open(dirfd, path, &name, &fd) < 0 ||
	    (mkdirat(fd, name, 0777) < 0 && errno != EEXIST) ?
	    mq_err_sys("mkdir %s", path) : 0;
	mq_parent_close(dirfd, fd);
	return rc;
}

int
mq_mkdirs(int dirfd, const char *path)
{
	char buf[4096];
	if (mq_path(buf, sizeof buf, "%s", path) < 0)
		return -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mq_mkdir(dirfd, buf) < 0)
			return -1;
		*p = '/';
	}
	return mq_mkdir(dirfd, buf);
}

int
mq_fsync_fd(int fd)
{
	if (fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		return mq_err_sys("fsync");
	return 0;
}

int
mq_fsync_at(int dirfd, const char *path)
{
	int fd = mq_dir_open(dirfd, path);
	if (fd < 0)
		return -1;
	int rc = mq_fsync_fd(fd);
	close(fd);
	return rc;
}

/* Opens each directory on the way with O_NOFOLLOW: openat's O_NOFOLLOW
 * only guards the last name. */
int
mq_dir_walk(int dirfd, const char *path, const char **last)
{
	char buf[4096];
	if (mq_path(buf, sizeof buf, "%s", path) < 0)
		return -1;
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return mq_err_sys("%s", path);
	char *name = buf, *slash;
	while ((slash = strchr(name, '/'))) {
		*slash = 0;
		if (*name) {
			int next = mq_openat(fd, name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (next < 0) {
				mq_err_sys("%s", path);
				int e = errno;
				close(fd);
				errno = e;
				return -1;
			}
			close(fd);
			fd = next;
		}
		name = slash + 1;
	}
	*last = path + (name - buf);
	return fd;
}

/* Removes name of parent: a directory with all it holds, anything else
 * as a name.  A symbolic link is a name: it is never followed. */
static int
rmtree_at(int parent, const char *name)
{
	int fd = mq_openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ENOTDIR || errno == ELOOP) {
			if (mq_unlinkat(parent, name, 0) < 0 && errno != ENOENT)
				return mq_err_sys("unlink %s", name);
			return 0;
		}
		return mq_err_sys("%s", name);
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return mq_err_sys("%s", name);
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
			if (rmtree_at(dirfd(d), de->d_name) < 0)
				rc = -1;
		} else if (mq_unlinkat(dirfd(d), de->d_name, 0) < 0 &&
		    errno != ENOENT) {
			rc = mq_err_sys("unlink %s", de->d_name);
		}
	}
	closedir(d);
	if (mq_unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return mq_err_sys("rmdir %s", name);
	return rc;
}

int
mq_remove_entry(int dirfd, const char *name)
{
	if (mq_unlinkat(dirfd, name, 0) == 0)
		return 0;
	return errno == EISDIR ? mq_rmtree(dirfd, name) : -1;
}

int
mq_rmtree(int dirfd, const char *path)
{
	const char *name;
	int parent = mq_dir_walk(dirfd, path, &name);
	if (parent < 0)
		return errno == ENOENT ? 0 : -1;
	int rc = rmtree_at(parent, name);
	close(parent);
	return rc;
}

/* A file another host replaced may come back from a mount's cache as the
 * one it replaced, which the server then answers with ESTALE: it is
 * looked up again once the cache lets go of it (a FUSE mount's entry
 * timeout, a second by default), waiting 5 ms, then twice as long each
 * time, about 1.6 s in all. */
#define STALE_TRIES 10

static void
stale_nap(int tries)
{
	long ms = 5L << (tries < 6 ? tries : 6);
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000 }, NULL);
}

int
mq_file_open(int dirfd, const char *path, int flags, mode_t mode,
    struct stat *st)
{
	struct stat own;
	if (!st)
		st = &own;
	int fd;
	for (int tries = 0;; tries++) {
		fd = mq_openat(dirfd, path, flags | O_NONBLOCK | O_NOFOLLOW |
		    O_CLOEXEC, mode);
		if (fd >= 0 && fstat(fd, st) == 0)
			break;
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		if (e == ESTALE && tries < STALE_TRIES) {
			stale_nap(tries);
			continue;
		}
		/* A link (ELOOP), a FIFO without a peer or a socket (ENXIO),
		 * a directory opened to write (EISDIR). */
		if (fd < 0 && (e == ELOOP || e == ENXIO || e == EISDIR))
			return mq_err(EX_DATAERR, "%s: not a regular file", path);
		return mq_err_sys("%s", path);
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return mq_err(EX_DATAERR, "%s: not a regular file", path);
	}
	return fd;
}

void
mq_iov_advance(struct iovec **iov, int *n, size_t done)
{
	while (*n > 0 && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*n)--;
	}
	if (*n > 0) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
}

int
mq_write_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		mq_iov_advance(&iov, &n, (size_t)w);
	}
	return 0;
}

ssize_t
mq_read_full(int fd, char *buf, size_t size)
{
	size_t len = 0;
	while (len < size) {
		ssize_t r = read(fd, buf + len, size - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		len += (size_t)r;
	}
	return (ssize_t)len;
}

int
mq_read_at_st(int dirfd, const char *path, size_t max, char **bufp,
    size_t *lenp, struct stat *stp)
{
	struct stat st;
	int fd = mq_file_open(dirfd, path, O_RDONLY, 0, &st);
	if (fd < 0)
		return -1;
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return mq_err(EX_DATAERR, "%s: file too large (%lld bytes)",
		    path, (long long)st.st_size);
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return mq_err_sys("malloc");
	}
	ssize_t len = mq_read_full(fd, buf, (size_t)st.st_size);
	if (len < 0) {
		mq_err_sys("read %s", path);
		free(buf);
		close(fd);
		return -1;
	}
	close(fd);
	buf[len] = 0;
	*bufp = buf;
	*lenp = (size_t)len;
	if (stp)
		*stp = st;
	return 0;
}

int
mq_read_at(int dirfd, const char *path, size_t max, char **bufp, size_t *lenp)
{
	return mq_read_at_st(dirfd, path, max, bufp, lenp, NULL);
}

/* Writes a whole file under a temporary dot name beside path, then puts it
 * in place: with link when replace is 0 (returns 1, writing nothing, if
 * path already exists), with rename when replace is 1, and when it is
 * SWAP by exchanging the two names (path must be there: ENOENT else) and
 * unlinking what then has the temporary name.  A mode other than
 * 0 is set before that, whatever the umask.  The directory is resolved
 * beneath dirfd once; the steps name entries in it. */
#define SWAP 2

static int
write_whole(int dirfd, const char *path, const void *data, size_t len,
    int sync, int replace, mode_t mode)
{
	char tmp[4096], rnd[17];
	const char *name;
	int dfd, fd = -1;
	if (mq_parent_open(dirfd, path, &name, &dfd) < 0)
		return mq_err_sys("create %s", path);
	/* name keeps its directory where the user's own path is not split
	 * (relative to the working directory, or absolute). */
	const char *slash = strrchr(name, '/');
	int dirlen = slash ? (int)(slash - name) + 1 : 0;
	mq_hex_random(rnd, 16);
	if (mq_path(tmp, sizeof tmp, "%.*s.tmp.%s", dirlen, name, rnd) < 0) {
		mq_parent_close(dirfd, dfd);
		return -1;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0666);
	if (fd < 0) {
		mq_err_sys("create %s", path);
		mq_parent_close(dirfd, dfd);
		return -1;
	}
	if (mode && fchmod(fd, mode) < 0)
		goto fail;
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += w;
		left -= (size_t)w;
	}
	if (sync && fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	int rc = 0;
	if (replace == SWAP) {
		if (renameat2(dfd, tmp, dfd, name, RENAME_EXCHANGE) < 0)
			goto fail;
		unlinkat(dfd, tmp, 0);
	} else if (replace) {
		if (renameat(dfd, tmp, dfd, name) < 0)
			goto fail;
	} else {
		if (linkat(dfd, tmp, dfd, name, 0) < 0) {
			if (!mq_name_taken(dfd, name, errno))
				goto fail;
			rc = 1;
		}
		unlinkat(dfd, tmp, 0);
	}
	mq_parent_close(dirfd, dfd);
	return rc;
fail:
	mq_err_sys("write %s", path);
	int e = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	mq_parent_close(dirfd, dfd);
	errno = e;
	return -1;
}

int
mq_write_file(int dirfd, const char *path, const void *data, size_t len,
    int sync, int replace)
{
	return write_whole(dirfd, path, data, len, sync, replace, 0);
}

int
mq_write_file_swap(int dirfd, const char *path, const void *data,
    size_t len)
{
	return write_whole(dirfd, path, data, len, 1, SWAP, 0);
}

int
mq_write_file_mode(int dirfd, const char *path, const void *data, size_t len,
    int sync, mode_t mode)
{
	return write_whole(dirfd, path, data, len, sync, 1, mode);
}

int
mq_names_push(struct mq_names *l, const char *name, size_t len)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **v = reallocarray(l->v, cap, sizeof *v);
		if (!v)
			return mq_err_sys("malloc");
		l->v = v;
		l->cap = cap;
	}
	char *s = strndup(name, len);
	if (!s)
		return mq_err_sys("malloc");
	l->v[l->n++] = s;
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
mq_names_sort(struct mq_names *l)
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof *l->v, cmp_names);
}

bool
mq_names_has(const struct mq_names *l, const char *name)
{
	return l->n && bsearch(&name, l->v, l->n, sizeof *l->v, cmp_names);
}

void
mq_names_free(struct mq_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* Reads with a private descriptor so that the caller's stays usable. */
static DIR *
open_listing(int dirfd)
{
	int fd = mq_openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

static int names_list(DIR *, bool (*keep)(const char *), struct mq_names *);

int
mq_names_read_at(int dirfd, const char *path, bool (*keep)(const char *),
    struct mq_names *l)
{
	int fd = mq_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", path);
	int rc = mq_names_read(fd, keep, l);
	close(fd);
	return rc;
}

int
mq_names_read(int dirfd, bool (*keep)(const char *), struct mq_names *l)
{
	DIR *d = open_listing(dirfd);
	if (!d)
		return mq_err_sys("opendir");
	int rc = names_list(d, keep, l);
	closedir(d);
	return rc;
}

/* Lists an open directory again from its start: a consumer keeps its
 * DIR streams, sparing an open and a close per listing.  Not on a file
 * system shared between hosts, where a rewound stream may list nothing
 * new (FUSE): there the listing is a fresh open's. */
int
mq_names_reread(DIR *d, bool (*keep)(const char *), struct mq_names *l)
{
	if (mq_fs_shared(dirfd(d)))
		return mq_names_read(dirfd(d), keep, l);
	rewinddir(d);
	return names_list(d, keep, l);
}

static int
names_list(DIR *d, bool (*keep)(const char *), struct mq_names *l)
{
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (keep && !keep(de->d_name)))
			continue;
		if (mq_names_push(l, de->d_name, strlen(de->d_name)) < 0)
			return -1;
	}
	if (errno)
		return mq_err_sys("readdir");
	mq_names_sort(l);
	return 0;
}

DIR *
mq_dir_stream(int dirfd)
{
	DIR *d = open_listing(dirfd);
	if (!d)
		mq_err_sys("opendir");
	return d;
}

uint64_t
mq_dir_count(int dirfd, bool (*keep)(const char *))
{
	DIR *d = open_listing(dirfd);
	if (!d)
		return 0;
	uint64_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && (!keep || keep(de->d_name)))
			n++;
	closedir(d);
	return n;
}

/* An inotify watch on what fd is open on (the path may have moved). */
int
mq_watch(int ifd, int fd, uint32_t mask)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int wd = inotify_add_watch(ifd, path, mask);
	if (wd < 0)
		return mq_err_sys("inotify");
	return wd;
}
