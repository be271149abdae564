/*
 * place.c: partitions placed on other file systems, and removing a
 * topic's tree (which follows its placed partitions and nothing else).
 *
 * Placement: partition k of a topic may live in a directory DIR of the
 * administrator's choice (another disk, another NFS server).  DIR is made
 * by mq (or is an empty directory), the partition is built in it, and
 * topics/<t>/p<k> is a symbolic link to DIR.  Everything a message ever
 * becomes stays inside its partition directory, so no rename or link
 * crosses a file system.  The claim on DIR is making DIR/log/ (the first
 * name of every partition) with mkdir: of two processes placing into one
 * directory, one gets EEXIST and gives up.  The link is made after the
 * claim, so a tree that is removed (a trash tree, an abandoned staging
 * tree, an alter's leftover) only ever links to directories it built, and
 * removing it removes them too: the removers follow a symbolic link named
 * p<k> at the top of such a tree, and no other, and only to a directory
 * whose log/ has the link's owner: another user who may write in the
 * spool can plant a link there, but can neither own it under our name nor
 * make log/ in a directory of ours.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

/* "p<k>": p and a decimal number without leading zeros. */
static bool
is_partition_name(const char *name)
{
	if (name[0] != 'p' || name[1] < '0' || name[1] > '9' ||
	    (name[1] == '0' && name[2]))
		return false;
	for (const char *s = name + 1; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return strlen(name) <= 8;
}

/* 1 if the directory is empty, 0 if not, -1 on error. */
static int
dir_empty(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct dirent *de;
	int empty = 1;
	while (empty && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

/* Checks one placement: an absolute path to an empty directory, or to
 * nothing inside an existing directory. */
static int
place_check(unsigned k, const char *dir)
{
	if (dir[0] != '/')
		return mq_err(EX_USAGE, "partition %u: '%s' is not an absolute "
		    "path", k, dir);
	if (strlen(dir) >= 4000 || !strcmp(dir, "/"))
		return mq_err(EX_USAGE, "partition %u: '%s' cannot hold a "
		    "partition", k, dir);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		int e = dir_empty(fd);
		close(fd);
		if (e < 0)
			return mq_err_sys("%s", dir);
		if (!e)
			return mq_err(EX_CANTCREAT, "partition %u: directory %s "
			    "is not empty", k, dir);
		return 0;
	}
	if (errno != ENOENT)
		return mq_err(EX_CANTCREAT, "partition %u: %s: %s", k, dir,
		    strerror(errno));
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", dir);
	char *slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	struct stat st;
	if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
		return mq_err(EX_CANTCREAT, "partition %u: cannot make %s: %s "
		    "is not a directory", k, dir, parent);
	return 0;
}

int
mq_places_check(const char *const *place, unsigned from, unsigned n)
{
	if (!place)
		return 0;
	for (unsigned k = 0; k < from; k++)
		if (place[k])
			return mq_err(EX_USAGE, "partition %u exists already: only "
			    "new partitions can be placed", k);
	for (unsigned k = from; k < n; k++) {
		if (!place[k])
			continue;
		for (unsigned j = from; j < k; j++)
			if (place[j] && !strcmp(place[j], place[k]))
				return mq_err(EX_USAGE, "partitions %u and %u are "
				    "both placed in %s", j, k, place[k]);
		if (place_check(k, place[k]) < 0)
			return -1;
	}
	return 0;
}

/* Claims dir for a partition (see the top), then links name in tfd to it.
 * Returns the directory's descriptor. */
int
mq_place_make(int tfd, const char *name, const char *dir)
{
	int made = mkdir(dir, 0777) == 0;
	if (!made && errno != EEXIST)
		return mq_err(EX_CANTCREAT, "mkdir %s: %s", dir, strerror(errno));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		mq_err(EX_CANTCREAT, "%s: %s", dir, strerror(errno));
		goto undo;
	}
	int e = dir_empty(dfd);
	if (e != 1 || mkdirat(dfd, "log", 0777) < 0) {
		mq_err(EX_CANTCREAT, "directory %s is not empty", dir);
		goto undo;
	}
	if (symlinkat(dir, tfd, name) < 0) {
		mq_err_sys("symlink %s", name);
		mq_unlinkat(dfd, "log", AT_REMOVEDIR);
		goto undo;
	}
	return dfd;
undo:
	if (dfd >= 0)
		close(dfd);
	if (made)
		rmdir(dir);
	return -1;
}

/* Empties the directory dfd that a link owned by owner points to, and
 * says whether to remove it too, if the link may be followed at all: only
 * when it holds the claim, log/, made by the link's owner (see the top),
 * since anyone who may write in the spool can plant a link.  Of a
 * directory that is not the owner's (a mount point, or an empty directory
 * another user made) only the owner's entries go. */
static int
placed_empty(int dfd, uid_t owner, bool *remove)
{
	struct stat dst, lst;
	*remove = false;
	if (fstat(dfd, &dst) < 0)
		return mq_err_sys("placed partition");
	if (mq_fstatat(dfd, "log", &lst, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(lst.st_mode) || lst.st_uid != owner)
		return 0;
	bool all = dst.st_uid == owner;
	struct mq_names l = { 0 };
	int rc = 0;
	/* mq_names_read skips dot names: remove those too. */
	DIR *d = mq_dir_stream(dfd);
	struct dirent *de;
	struct stat st;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    (all || (mq_fstatat(dfd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == owner)) &&
		    mq_names_push(&l, de->d_name, strlen(de->d_name)) < 0)
			rc = -1;
	if (d)
		closedir(d);
	for (size_t i = 0; i < l.n; i++)
		if (mq_rmtree(dfd, l.v[i]) < 0)
			rc = -1;
	mq_names_free(&l);
	*remove = all && rc == 0;
	return rc;
}

/* Removes partition directory name of tfd; when it is a symbolic link to
 * a directory it built, the directory is emptied and removed first (a
 * mount point is only emptied), then the link. */
int
mq_partition_remove(int tfd, const char *name)
{
	struct stat st;
	if (mq_fstatat(tfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", name);
	if (!S_ISLNK(st.st_mode))
		return mq_rmtree(tfd, name);
	char target[4096];
	ssize_t len = readlinkat(tfd, name, target, sizeof target - 1);
	if (len < 0)
		return mq_err_sys("readlink %s", name);
	target[len] = 0;
	int rc = 0;
	bool remove;
	int dfd = openat(tfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		rc = placed_empty(dfd, st.st_uid, &remove);
		close(dfd);
		if (remove && mq_unlinkat(tfd, target, AT_REMOVEDIR) < 0 &&
		    errno != ENOENT && errno != EBUSY)
			rc = mq_err_sys("rmdir %s", target);
	} else if (errno != ENOENT && errno != ENOTDIR) {
		rc = mq_err_sys("%s", target);
	}
	if (rc == 0 && mq_unlinkat(tfd, name, 0) < 0 && errno != ENOENT)
		rc = mq_err_sys("unlink %s", name);
	return rc;
}

int
mq_topic_tree_remove(int dirfd, const char *path)
{
	const char *name;
	int parent = mq_dir_walk(dirfd, path, &name);
	if (parent < 0)
		return errno == ENOENT ? 0 : -1;
	int fd = mq_openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	int rc = 0;
	if (fd >= 0) {
		struct mq_names l = { 0 };
		rc = mq_names_read(fd, is_partition_name, &l);
		for (size_t i = 0; rc == 0 && i < l.n; i++)
			rc = mq_partition_remove(fd, l.v[i]);
		mq_names_free(&l);
		close(fd);
	}
	if (rc == 0)
		rc = mq_rmtree(parent, name);
	close(parent);
	return rc;
}

/* Removes p<k> for k >= from: an interrupted alter's leftovers. */
int
mq_partitions_remove_from(int tfd, unsigned from)
{
	struct mq_names l = { 0 };
	int rc = mq_names_read(tfd, is_partition_name, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (strtoul(l.v[i] + 1, NULL, 10) >= from)
			rc = mq_partition_remove(tfd, l.v[i]);
	mq_names_free(&l);
	return rc;
}
