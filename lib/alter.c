/*
 * alter.c: growing a topic, and partitions placed on other file systems.
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
 *
 * Alter grows a topic under every existing partition's publish lock (which
 * subscribe and unsubscribe take too, so the group list cannot change
 * meanwhile): it removes what an earlier, interrupted alter left (p<k> for
 * k at or above the current count), builds each new partition complete,
 * with each group's directories, syncs, and replaces topic.conf with the
 * new count (the commit point).  Before that, the new partitions are
 * invisible: every reader uses topic.conf's count.  See mq-spool(5),
 * Topic alter.
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

#include "internal.h"

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

/* The topic's configuration as topic.conf says now (an alter may have
 * replaced it since the topic was opened). */
int
mq_topic_conf_now(const struct mq_topic *t, struct mq_topic_conf *c)
{
	struct mq_conf kv;
	if (mq_conf_read(t->fd, "topic.conf", &kv) < 0)
		return -1;
	int rc = mq_topic_conf_parse(&kv, c);
	mq_conf_free(&kv);
	return rc;
}

int
mq_topic_partitions_now(const struct mq_topic *t, unsigned *n)
{
	struct mq_topic_conf c;
	if (mq_topic_conf_now(t, &c) < 0)
		return -1;
	*n = c.partitions;
	return 0;
}

/* Removes p<k> for k >= from: an interrupted alter's leftovers. */
static int
remove_leftovers(const struct mq_topic *t, unsigned from)
{
	struct mq_names l = { 0 };
	int rc = mq_names_read(t->fd, is_partition_name, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (strtoul(l.v[i] + 1, NULL, 10) >= from)
			rc = mq_partition_remove(t->fd, l.v[i]);
	mq_names_free(&l);
	return rc;
}

int
mq_topic_conf_edit(const struct mq_topic *t,
    int (*edit)(struct mq_conf *, const void *), const void *ctx)
{
	struct mq_conf kv;
	char *text = NULL;
	if (mq_conf_read(t->fd, "topic.conf", &kv) < 0)
		return -1;
	int rc = edit(&kv, ctx);
	if (rc == 0)
		rc = mq_conf_render(&kv, &text);
	if (rc == 0)
		rc = mq_write_file(t->fd, "topic.conf", text, strlen(text), 1, 1);
	if (rc == 0)
		rc = mq_fsync_fd(t->fd);
	free(text);
	mq_conf_free(&kv);
	return rc;
}

static int
set_count(struct mq_conf *kv, const void *ctx)
{
	char num[16];
	snprintf(num, sizeof num, "%u", *(const unsigned *)ctx);
	return mq_conf_get(kv, "partitions") ? mq_conf_set(kv, "partitions", num) :
	    mq_conf_add(kv, "partitions", num);
}

static int
alter_locked(const struct mq_topic *t, unsigned n, const char *const *place)
{
	unsigned old = t->conf.partitions;
	if (remove_leftovers(t, old) < 0 || mq_places_check(place, old, n) < 0)
		return -1;
	/* A view of the topic with the new partitions, for group.c. */
	struct mq_topic nt = *t;
	nt.conf.partitions = n;
	nt.pfd = malloc(n * sizeof *nt.pfd);
	if (!nt.pfd)
		return mq_err_sys("malloc");
	for (unsigned k = 0; k < n; k++)
		nt.pfd[k] = k < old ? t->pfd[k] : -1;
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(t, &groups);
	for (unsigned k = old; rc == 0 && k < n; k++) {
		const char *dir = place ? place[k] : NULL;
		char p[32];
		snprintf(p, sizeof p, "p%u", k);
		rc = mq_partition_build(t->fd, k, dir, &t->conf.roles);
		if (rc == 0 && (nt.pfd[k] = mq_dir_open_partition(t->fd, p)) < 0)
			rc = -1;
		for (size_t i = 0; rc == 0 && i < groups.n; i++) {
			struct mq_group_conf gc;
			rc = mq_group_settings(t, groups.v[i], &gc);
			if (rc == 0)
				rc = mq_group_dirs_make(&nt, k, groups.v[i],
				    gc.ordered);
		}
		if (rc == 0 && dir && syncfs(nt.pfd[k]) < 0)
			rc = mq_err_sys("sync %s", dir);
	}
	if (rc == 0 && syncfs(t->fd) < 0)
		rc = mq_err_sys("sync");
	/* The commit point: topic.conf, whatever else it says, with the
	 * count. */
	if (rc == 0)
		rc = mq_topic_conf_edit(t, set_count, &n);
	for (unsigned k = old; k < n; k++)
		if (nt.pfd[k] >= 0)
			close(nt.pfd[k]);
	free(nt.pfd);
	mq_names_free(&groups);
	return rc;
}

/* Returns 1 when grown, 0 when the count was already n, 2 when another
 * alter changed the count meanwhile (try again), -1 on error. */
static int
alter_open(const struct mq_topic *t, unsigned n, const char *const *place)
{
	unsigned old = t->conf.partitions, now;
	if (n < old)
		return mq_err(EX_USAGE, "topic '%s' has %u partitions: a topic "
		    "can grow, not shrink", t->name, old);
	for (unsigned k = 0; place && k < old; k++)
		if (place[k])
			return mq_err(EX_USAGE, "partition %u exists already: only "
			    "new partitions can be placed", k);
	if (n == old)
		return 0;
	/* The placements are checked under the locks, once an earlier
	 * alter's leftovers (maybe in these very directories) are gone. */
	int *hfds = calloc(old, sizeof *hfds);
	if (!hfds)
		return mq_err_sys("malloc");
	int rc = mq_lock_all(t, hfds);
	if (rc == 0) {
		rc = mq_topic_partitions_now(t, &now);
		if (rc == 0)
			rc = now != old ? 2 : alter_locked(t, n, place) < 0 ? -1 : 1;
		mq_unlock_all(t, hfds);
	}
	free(hfds);
	return rc;
}

int
mq_topic_alter_placed(mq_spool *sp, const char *topic, unsigned partitions,
    const char *const *place)
{
	if (mq_name_check("topic", topic) < 0)
		return -1;
	if (partitions < 1 || partitions > MQ_PARTITIONS_MAX)
		return mq_err(EX_USAGE, "partitions must be 1 to %d",
		    MQ_PARTITIONS_MAX);
	for (;;) {
		struct mq_topic t;
		if (mq_topic_open(sp, topic, 0, &t) < 0)
			return -1;
		unsigned before = t.conf.partitions;
		int rc = alter_open(&t, partitions, place);
		if (rc >= 0 && partitions != before)
			mq_journal_note(sp, 'T', "%s", topic);
		mq_topic_close(&t);
		if (rc != 2)
			return rc;
	}
}

int
mq_topic_alter(mq_spool *sp, const char *topic, unsigned partitions)
{
	return mq_topic_alter_placed(sp, topic, partitions, NULL);
}
