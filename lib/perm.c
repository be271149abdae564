/*
 * perm.c: the permissions of a spool or a topic (mq-spool(5),
 * PERMISSIONS).
 *
 * Every file mq makes is created 0666 and every directory 0777, less
 * what the directory it is made in allows: not the maker's umask.  That
 * needs a default ACL on the directory (POSIX.1e; with one, the kernel
 * ignores the umask and takes the create mode less the default ACL), so
 * `mq-topic init` and `mq-topic create` with --mode give the spool's or
 * the topic's directory one equal to its mode, which every directory
 * made below inherits; with --group they give it that group and the
 * setgid bit, so what is made below belongs to that group whoever makes
 * it.  Files that must stay private (the replication key, 0600) are made
 * with a narrower mode and stay so.
 *
 * Where the file system has no ACLs (sshfs, some NFS servers) the mode
 * and the group still apply to the directory, and what is made below
 * follows each maker's umask: the tool says so once.
 */
#include <acl/libacl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "internal.h"

int
mq_perm_parse(const char *group, const char *mode, struct mq_perm *out)
{
	*out = (struct mq_perm){ 0 };
	if (group) {
		struct group *g = getgrnam(group);
		char *end;
		unsigned long n = g ? 0 : strtoul(group, &end, 10);
		if (g)
			out->gid = g->gr_gid;
		else if (*group && !*end && group[0] != '-' && n < (gid_t)-1)
			out->gid = (gid_t)n;
		else
			return mq_err(EX_NOUSER, "no group '%.64s'", group);
		out->has_group = true;
	}
	if (mode) {
		char *end;
		unsigned long m = strtoul(mode, &end, 8);
		/* rwx for the owner: a spool or topic its owner cannot use
		 * is a mistake; no sticky bit, no setuid. */
		if (!*mode || *end || *mode == '-' || m > 02777 ||
		    (m & 0700) != 0700)
			return mq_err(EX_USAGE, "bad mode '%.32s': expected an octal "
			    "mode such as 770 or 2750, with rwx for the owner",
			    mode);
		out->mode = (mode_t)m;
	}
	if (out->has_group)
		out->mode = (out->mode ? out->mode : 0770) | S_ISGID;
	return 0;
}

/* A default ACL equal to mode: what is made below gets the create mode
 * less it.  0, or -1 with errno (EOPNOTSUPP: no ACLs here). */
static int
default_acl(int dfd, mode_t mode)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", dfd);
	acl_t acl = acl_from_mode(mode & 0777);
	if (!acl)
		return -1;
	int rc = acl_set_file(path, ACL_TYPE_DEFAULT, acl);
	int e = errno;
	acl_free(acl);
	errno = e;
	return rc;
}

int
mq_perm_apply(int dfd, const char *what, const struct mq_perm *p)
{
	if (p->has_group && fchown(dfd, (uid_t)-1, p->gid) < 0)
		return mq_err_sys("%s: chgrp", what);
	if (!p->mode)
		return 0;
	if (fchmod(dfd, p->mode) < 0)
		return mq_err_sys("%s: chmod", what);
	if (default_acl(dfd, p->mode) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOTSUP)
		return mq_err_sys("%s: default ACL", what);
	static bool said;
	if (!said)
		fprintf(stderr, "%s: %s: this file system has no ACLs: what is "
		    "made below follows each maker's umask\n",
		    program_invocation_short_name, what);
	said = true;
	return 0;
}

/* What is already in a directory gets the permissions too: directories
 * as the top, files its mode less x, but the replication key stays
 * private; no link is followed. */
static int
apply_below(int dfd, const char *what, bool keys, const struct mq_perm *p)
{
	DIR *d = fdopendir(dup(dfd));
	if (!d)
		return mq_err_sys("%s", what);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		int fd = mq_openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd < 0) {
			/* A link (a placed partition) is left as it is. */
			if (errno != ELOOP && errno != ENXIO)
				rc = mq_err_sys("%s/%s", what, e->d_name);
			continue;
		}
		char sub[4096];
		snprintf(sub, sizeof sub, "%s/%s", what, e->d_name);
		bool private = keys && !strcmp(e->d_name, "key");
		if (fstat(fd, &st) < 0)
			rc = mq_err_sys("%s", sub);
		else if (S_ISDIR(st.st_mode))
			rc = mq_perm_apply(fd, sub, p) < 0 ? -1 : apply_below(fd,
			    sub, !strcmp(e->d_name, "replicate"), p);
		else if (S_ISREG(st.st_mode) && ((p->has_group &&
		    fchown(fd, (uid_t)-1, p->gid) < 0) || (p->mode && !private &&
		    fchmod(fd, p->mode & 0666) < 0)))
			rc = mq_err_sys("%s", sub);
		close(fd);
	}
	closedir(d);
	return rc;
}

int
mq_perm_apply_tree(int dfd, const char *what, const struct mq_perm *p)
{
	if (mq_perm_apply(dfd, what, p) < 0)
		return -1;
	return p->has_group || p->mode ?
	    apply_below(dfd, what, false, p) : 0;
}
