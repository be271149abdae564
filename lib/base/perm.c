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
 *
 * A topic with roles (publishers, consumers, admins: Unix groups) has a
 * named entry per role in the access and default ACL of each of its
 * directories, by the directory's kind, from the one table below; there
 * no ACLs is an error, since nothing else could keep the roles apart.
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

#include "base.h"

/* A gid in decimal at s (not (gid_t)-1, which means none); the position
 * after it, or NULL. */
static const char *
gid_number(const char *s, gid_t *gid)
{
	uint64_t n;
	const char *end = mq_decimal(s, (gid_t)-1 - 1, &n);
	if (end)
		*gid = (gid_t)n;
	return end;
}

/* A group's gid from its name or number: EX_NOUSER if there is none. */
static int
group_lookup(const char *group, gid_t *gid)
{
	struct group *g = getgrnam(group);
	const char *end;
	if (g)
		*gid = g->gr_gid;
	else if (!(end = gid_number(group, gid)) || *end)
		return mq_err(EX_NOUSER, "no group '%.64s'", group);
	return 0;
}

int
mq_perm_parse(const char *group, const char *mode, struct mq_perm *out)
{
	*out = (struct mq_perm){ 0 };
	if (group) {
		if (group_lookup(group, &out->gid) < 0)
			return -1;
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

static int
chgrp_chmod(int dfd, const char *what, const struct mq_perm *p)
{
	if (p->has_group && fchown(dfd, (uid_t)-1, p->gid) < 0)
		return mq_err_sys("%s: chgrp", what);
	if (p->mode && fchmod(dfd, p->mode) < 0)
		return mq_err_sys("%s: chmod", what);
	return 0;
}

int
mq_perm_apply(int dfd, const char *what, const struct mq_perm *p)
{
	if (chgrp_chmod(dfd, what, p) < 0)
		return -1;
	if (!p->mode)
		return 0;
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

/* Whether directory fd's ACL names groups: a topic with roles, whose
 * ACLs the spool's permissions must not replace. */
static bool
has_roles(int fd)
{
	acl_t acl = acl_get_fd(fd);
	acl_entry_t e;
	acl_tag_t tag;
	bool named = false;
	for (int w = ACL_FIRST_ENTRY; acl && !named &&
	    acl_get_entry(acl, w, &e) == 1; w = ACL_NEXT_ENTRY)
		named = acl_get_tag_type(e, &tag) == 0 && tag == ACL_GROUP;
	acl_free(acl);
	return named;
}

/* What is already in a directory gets the permissions too: directories
 * as the top, files its mode less x, but the replication key stays
 * private and a topic with roles keeps its own; no link is followed. */
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
		else if (S_ISDIR(st.st_mode) && has_roles(fd))
			;
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

/*
 * Roles.  The mode bits have one group: publishers and consumers both
 * write a group's new/, and consumers must not write log/, so each role
 * is a named group entry in the ACL of every directory of the topic, as
 * the table below says, in the access ACL (what the role may do there)
 * and in the default ACL (what is made there inherits: files take it
 * less x).  The directories made later (a group's, a partition's) get
 * theirs from the same table when they are made; those mq makes without
 * naming a kind (cur/, done/, a group's dlq/G, its .stats and .members)
 * inherit their parent's default.
 */
enum { RX = 5, RWX = 7 };
static const unsigned char rights[MQ_DIR_KINDS][2][MQ_ROLES] = {
	/*                     access:           default:
	 *                     pub  con  admin   pub  con  admin */
	[MQ_DIR_TOPIC] =     { { RX,  RX,  RWX }, { RX,  RX,  RWX } },
	[MQ_DIR_STATS] =     { { RWX, RWX, RWX }, { RWX, RWX, RWX } },
	[MQ_DIR_GROUPS] =    { { RX,  RWX, RWX }, { RX,  RWX, RWX } },
	/* The head, made here, is locked for writing by all three. */
	[MQ_DIR_PARTITION] = { { RX,  RX,  RWX }, { RWX, RWX, RWX } },
	[MQ_DIR_LOG] =       { { RWX, RX,  RWX }, { RWX, RX,  RWX } },
	[MQ_DIR_DEDUP] =     { { RWX, RX,  RWX }, { RWX, RX,  RWX } },
	[MQ_DIR_GROUPS_OF] = { { RX,  RWX, RWX }, { RX,  RWX, RWX } },
	[MQ_DIR_GROUP] =     { { RX,  RWX, RWX }, { RX,  RWX, RWX } },
	[MQ_DIR_QUEUE] =     { { RWX, RWX, RWX }, { RWX, RWX, RWX } },
	[MQ_DIR_DLQ] =       { { RX,  RWX, RWX }, { RX,  RWX, RWX } },
};

static const char *const role_names[MQ_ROLES] = {
	"publishers", "consumers", "admins"
};

const char *
mq_role_name(enum mq_role role)
{
	return role_names[role];
}

bool
mq_roles_any(const struct mq_roles *r)
{
	for (int i = 0; i < MQ_ROLES; i++)
		if (r->has[i])
			return true;
	return false;
}

int
mq_roles_parse(const char *const names[MQ_ROLES], struct mq_roles *r)
{
	*r = (struct mq_roles){ 0 };
	for (int i = 0; i < MQ_ROLES; i++) {
		if (!names[i])
			continue;
		if (group_lookup(names[i], &r->gid[i]) < 0)
			return -1;
		r->has[i] = true;
	}
	return 0;
}

/* "publishers=GID NAME": the gid decides (a renamed group keeps its
 * role); the name, as it was at create, is for people. */
int
mq_roles_conf_add(struct mq_conf *kv, const struct mq_roles *r)
{
	for (int i = 0; i < MQ_ROLES; i++) {
		if (!r->has[i])
			continue;
		struct group *g = getgrgid(r->gid[i]);
		if (mq_conf_addf(kv, role_names[i], "%lu%s%s",
		    (unsigned long)r->gid[i], g ? " " : "",
		    g ? g->gr_name : "") < 0)
			return -1;
	}
	return 0;
}

int
mq_roles_conf_get(const struct mq_conf *kv, struct mq_roles *r)
{
	*r = (struct mq_roles){ 0 };
	for (int i = 0; i < MQ_ROLES; i++) {
		const char *v = mq_conf_get(kv, role_names[i]), *end;
		if (!v)
			continue;
		if (!(end = gid_number(v, &r->gid[i])) || (*end && *end != ' '))
			return mq_err(EX_CONFIG, "topic.conf: %s must be a group "
			    "number", role_names[i]);
		r->has[i] = true;
	}
	return 0;
}

/* Gives acl a named entry for each role with the rights in bits (roles
 * of one group get the union), and the mask that lets them through. */
static int
acl_add_roles(acl_t *acl, const struct mq_roles *r, const unsigned char *bits)
{
	for (int i = 0; i < MQ_ROLES; i++) {
		if (!r->has[i])
			continue;
		unsigned want = 0;
		for (int j = 0; j < MQ_ROLES; j++)
			if (r->has[j] && r->gid[j] == r->gid[i])
				want |= bits[j];
		acl_entry_t e;
		acl_tag_t tag;
		bool found = false;
		for (int w = ACL_FIRST_ENTRY; !found &&
		    acl_get_entry(*acl, w, &e) == 1; w = ACL_NEXT_ENTRY) {
			gid_t *q;
			if (acl_get_tag_type(e, &tag) < 0 || tag != ACL_GROUP)
				continue;
			if ((q = acl_get_qualifier(e))) {
				found = *q == r->gid[i];
				acl_free(q);
			}
		}
		acl_permset_t ps;
		if ((!found && (acl_create_entry(acl, &e) < 0 ||
		    acl_set_tag_type(e, ACL_GROUP) < 0 ||
		    acl_set_qualifier(e, &r->gid[i]) < 0)) ||
		    acl_get_permset(e, &ps) < 0 || acl_clear_perms(ps) < 0 ||
		    ((want & 4) && acl_add_perm(ps, ACL_READ) < 0) ||
		    ((want & 2) && acl_add_perm(ps, ACL_WRITE) < 0) ||
		    ((want & 1) && acl_add_perm(ps, ACL_EXECUTE) < 0))
			return -1;
	}
	return acl_calc_mask(acl);
}

/* The ACL of a directory of kind kind: its access ACL with the roles,
 * and its default ACL (from base when not 0, else the one it has, else
 * its mode) with them.  Each is set only if it changes: a directory made
 * in one of the same kind's rights has inherited the default already,
 * and setting the access ACL clears the setgid bit when the caller is
 * not in the directory's group. */
static int
roles_set(int dfd, const char *what, const struct mq_roles *r,
    enum mq_dir_kind kind, mode_t base)
{
	if (!mq_roles_any(r))
		return 0;
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/self/fd/%d", dfd);
	acl_t now = acl_get_fd(dfd), acc = now ? acl_dup(now) : NULL;
	/* had: the default it has, if any and base does not replace it. */
	acl_t had = base ? NULL : acl_get_file(path, ACL_TYPE_DEFAULT), dfl;
	if (base || (had && acl_entries(had) == 0 && fstat(dfd, &st) == 0)) {
		acl_free(had);
		had = NULL;
		dfl = acl_from_mode((base ? base : st.st_mode) & 0777);
	} else {
		dfl = had ? acl_dup(had) : NULL;
	}
	int rc = now && acc && dfl &&
	    acl_add_roles(&acc, r, rights[kind][0]) == 0 &&
	    acl_add_roles(&dfl, r, rights[kind][1]) == 0 ? 0 : -1;
	if (rc == 0 && acl_cmp(now, acc) != 0)
		rc = acl_set_fd(dfd, acc);
	if (rc == 0 && (!had || acl_cmp(had, dfl) != 0))
		rc = acl_set_file(path, ACL_TYPE_DEFAULT, dfl);
	int e = errno;
	acl_free(now);
	acl_free(acc);
	acl_free(had);
	acl_free(dfl);
	if (rc == 0)
		return 0;
	if (e == EOPNOTSUPP || e == ENOTSUP)
		return mq_err(EX_UNAVAILABLE, "%s: this file system has no ACLs, "
		    "which a topic's roles need", what);
	errno = e;
	return mq_err_sys("%s: ACL", what);
}

int
mq_perm_dir(int dfd, const char *what, const struct mq_roles *r,
    enum mq_dir_kind kind)
{
	return roles_set(dfd, what, r, kind, 0);
}

int
mq_perm_mkdir(int dirfd, const char *path, const struct mq_roles *r,
    enum mq_dir_kind kind)
{
	if (mq_mkdir(dirfd, path) < 0)
		return -1;
	if (!mq_roles_any(r))
		return 0;
	int fd = mq_dir_open(dirfd, path);
	int rc = fd < 0 ? -1 : mq_perm_dir(fd, path, r, kind);
	if (fd >= 0)
		close(fd);
	return rc;
}

int
mq_perm_mkdirs(int dirfd, const char *dir, const struct mq_dir_spec *v,
    size_t n, const struct mq_roles *r)
{
	char p[4096];
	for (size_t i = 0; i < n; i++)
		if (mq_path(p, sizeof p, "%s%s%s", dir ? dir : "",
		    dir && *v[i].name ? "/" : "", v[i].name) < 0 ||
		    mq_perm_mkdir(dirfd, p, r, v[i].kind) < 0)
			return -1;
	return 0;
}

int
mq_perm_topic(int dfd, const char *what, const struct mq_perm *p,
    const struct mq_roles *r)
{
	if (!mq_roles_any(r))
		return mq_perm_apply(dfd, what, p);
	return chgrp_chmod(dfd, what, p) < 0 ? -1 :
	    roles_set(dfd, what, r, MQ_DIR_TOPIC, p->mode);
}

/* Appends "tag:id:rwx," for each named entry of fromfd's ACL that may
 * write (its rights within the mask): the writers of that directory;
 * *group says whether its owning group may (with an ACL the mode's group
 * bits are the mask, not the owning group's rights). */
static int
named_writers(int fromfd, char *buf, size_t len, size_t *at, bool *group)
{
	acl_t acl = acl_get_fd(fromfd);
	if (!acl)
		return errno == EOPNOTSUPP || errno == ENOTSUP ? 0 : -1;
	acl_entry_t e;
	acl_tag_t tag;
	acl_permset_t ps;
	int mask_w = 1;
	for (int w = ACL_FIRST_ENTRY; acl_get_entry(acl, w, &e) == 1;
	    w = ACL_NEXT_ENTRY)
		if (acl_get_tag_type(e, &tag) == 0 && tag == ACL_MASK &&
		    acl_get_permset(e, &ps) == 0)
			mask_w = acl_get_perm(ps, ACL_WRITE) == 1;
	for (int w = ACL_FIRST_ENTRY; acl_get_entry(acl, w, &e) == 1;
	    w = ACL_NEXT_ENTRY)
		if (acl_get_tag_type(e, &tag) == 0 && tag == ACL_GROUP_OBJ &&
		    acl_get_permset(e, &ps) == 0)
			*group = mask_w && acl_get_perm(ps, ACL_WRITE) == 1;
	int rc = 0;
	for (int w = ACL_FIRST_ENTRY; rc == 0 && mask_w &&
	    acl_get_entry(acl, w, &e) == 1; w = ACL_NEXT_ENTRY) {
		if (acl_get_tag_type(e, &tag) < 0 || (tag != ACL_USER &&
		    tag != ACL_GROUP) || acl_get_permset(e, &ps) < 0 ||
		    acl_get_perm(ps, ACL_WRITE) != 1)
			continue;
		void *q = acl_get_qualifier(e);
		unsigned long id = !q ? 0 : tag == ACL_USER ?
		    (unsigned long)*(uid_t *)q : (unsigned long)*(gid_t *)q;
		int n = q ? snprintf(buf + *at, len - *at, "%s:%lu:rwx,",
		    tag == ACL_USER ? "u" : "g", id) : -1;
		acl_free(q);
		if (n < 0 || (size_t)n >= len - *at)
			rc = mq_err(EX_SOFTWARE, "too many ACL entries");
		else
			*at += (size_t)n;
	}
	acl_free(acl);
	return rc;
}

int
mq_perm_writers(int dfd, int fromfd, const char *what)
{
	struct stat from, self;
	if (fstat(fromfd, &from) < 0 || fstat(dfd, &self) < 0)
		return mq_err_sys("%s", what);
	/* The group and others get all or nothing: whoever may write
	 * fromfd, or no one (not even to read what comes in). */
	char named[2048] = "";
	size_t at = 0;
	bool gw = from.st_mode & S_IWGRP;
	if (named_writers(fromfd, named, sizeof named, &at, &gw) < 0)
		return mq_err_sys("%s", what);
	mode_t g = gw ? 7 : 0, o = from.st_mode & S_IWOTH ? 7 : 0;
	if (g && from.st_gid != self.st_gid &&
	    fchown(dfd, (uid_t)-1, from.st_gid) < 0)
		g = 0;
	if (fchmod(dfd, 0700 | g << 3 | o) < 0)
		return mq_err_sys("%s: chmod", what);
	/* What is made inside (the reply, the FIFO) is theirs to read and
	 * write too, and the maker's, whoever made it. */
	char access[2200], dflt[2300];
	const char *gs = g ? "rwx" : "---", *os = o ? "rwx" : "---";
	snprintf(access, sizeof access, "u::rwx,%sg::%s,m::rwx,o::%s", named,
	    gs, os);
	snprintf(dflt, sizeof dflt, "u::rwx,u:%lu:rwx,%sg::%s,m::rwx,o::%s",
	    (unsigned long)self.st_uid, named, gs, os);
	acl_t a = acl_from_text(access), d = acl_from_text(dflt);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", dfd);
	int rc = !a || !d ? -1 : acl_set_fd(dfd, a) < 0 ? -1 :
	    acl_set_file(path, ACL_TYPE_DEFAULT, d);
	int e = errno;
	acl_free(a);
	acl_free(d);
	if (rc < 0 && e != EOPNOTSUPP && e != ENOTSUP) {
		errno = e;
		return mq_err_sys("%s: ACL", what);
	}
	return 0;
}
