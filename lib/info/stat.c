/*
 * stat.c: the figures mq-stat(1) shows and checks.
 *
 * Everything here only reads, takes no lock and opens every file relative
 * to the spool's descriptors without following links, so it never blocks
 * a publisher or a consumer; what it returns is a snapshot, as with
 * mq_group_info (groupinfo.c), which does the counting.  A topic or group
 * removed while the spool is read is left out; one named by the caller
 * that does not exist is an error (EX_NOINPUT).
 *
 * Ages come from names, never from file contents: the publish time of a
 * pending message is in its id (mq_key_time), and a claim's start is its
 * lease deadline (in its cur/ name) less the group's lease.  Stale
 * temporary files are those mq-topic gc would call stale (gc.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sysexits.h>
#include <unistd.h>

#include "info.h"

static int
dir_at(int dirfd, const char *path)
{
	return mq_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/* Stale files of a directory that may be missing. */
static uint64_t
stale_in(int dirfd, const char *path, bool any_name, double now)
{
	int fd = dir_at(dirfd, path);
	if (fd < 0)
		return 0;
	uint64_t n = mq_tmp_count_stale(fd, any_name, now);
	close(fd);
	return n;
}

/* Every subdirectory of path/ (a group's in g/ or dlq/), then sub. */
static uint64_t
stale_each(int pfd, const char *path, const char *sub, bool any_name,
    double now)
{
	struct mq_names l = { 0 };
	uint64_t n = 0;
	int fd = dir_at(pfd, path);
	if (fd < 0)
		return 0;
	if (mq_names_read(fd, NULL, &l) == 0)
		for (size_t i = 0; i < l.n; i++) {
			char p[MQ_NAME_MAX + 16];
			if (mq_path(p, sizeof p, "%s%s", l.v[i], sub) == 0)
				n += stale_in(fd, p, any_name, now);
		}
	mq_names_free(&l);
	close(fd);
	return n;
}

/* Adds the file system of fd, unless one seen has its device. */
static int
fs_add(struct mq_stat *st, dev_t **devs, int fd, const char *path)
{
	struct stat sb;
	struct statvfs vfs;
	if (fstat(fd, &sb) < 0 || fstatvfs(fd, &vfs) < 0)
		return mq_err_sys("%s", path);
	for (size_t i = 0; i < st->nfs; i++)
		if ((*devs)[i] == sb.st_dev)
			return 0;
	dev_t *nd = reallocarray(*devs, st->nfs + 1, sizeof *nd);
	if (!nd)
		return mq_err_sys("malloc");
	*devs = nd;
	struct mq_stat_fs *nf = reallocarray(st->fs, st->nfs + 1, sizeof *nf);
	if (!nf)
		return mq_err_sys("malloc");
	st->fs = nf;
	struct mq_stat_fs *f = &nf[st->nfs];
	if (!(f->path = strdup(path)))
		return mq_err_sys("malloc");
	f->free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	f->free_inodes = (uint64_t)vfs.f_favail;
	nd[st->nfs++] = sb.st_dev;
	return 0;
}

/* A clock a little behind another host's is no negative age. */
static double
age(double now, double since)
{
	return now > since ? now - since : 0;
}

/* Consumers of a wildcard subscription are members of the subscription
 * (SPOOL/wildcards/<pattern>/<group>.members/), not of each topic's
 * group: each subscription's are counted once, and added to every group
 * its pattern and name match. */
struct wild {
	char *pattern, *group;
	unsigned alive;
};
struct wilds {
	struct wild *v;
	size_t n;
};

static int
wild_add(struct wilds *w, int wfd, const char *pattern, const char *group,
    double now)
{
	char path[2 * MQ_NAME_MAX + 16];
	unsigned alive;
	if (mq_path(path, sizeof path, "%s/%s.members", pattern, group) < 0 ||
	    mq_members_alive(wfd, path, (uint64_t)(now * 1000), &alive) < 0)
		return -1;
	struct wild *nv = reallocarray(w->v, w->n + 1, sizeof *nv);
	if (!nv)
		return mq_err_sys("malloc");
	w->v = nv;
	nv[w->n].alive = alive;
	if (!(nv[w->n].pattern = strdup(pattern)) ||
	    !(nv[w->n].group = strdup(group))) {
		free(nv[w->n].pattern);
		return mq_err_sys("malloc");
	}
	w->n++;
	return 0;
}

static int
wilds_read(mq_spool *sp, double now, struct wilds *w)
{
	int wfd = dir_at(sp->fd, "wildcards");
	if (wfd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("wildcards");
	struct mq_names pats = { 0 };
	int rc = mq_names_read(wfd, NULL, &pats);
	for (size_t i = 0; rc == 0 && i < pats.n; i++) {
		struct mq_names groups = { 0 };
		int pfd = dir_at(wfd, pats.v[i]);
		if (pfd < 0)
			continue;               /* unsubscribed meanwhile */
		rc = mq_group_names_read(pfd, &groups);
		close(pfd);
		for (size_t j = 0; rc == 0 && j < groups.n; j++)
			rc = wild_add(w, wfd, pats.v[i], groups.v[j], now);
		mq_names_free(&groups);
	}
	mq_names_free(&pats);
	close(wfd);
	return rc;
}

static void
wilds_free(struct wilds *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->v[i].pattern);
		free(w->v[i].group);
	}
	free(w->v);
}

static void
rates_set(struct mq_stat_rates *r, const struct mq_counts *c)
{
	r->total = c->total;
	memcpy(r->rate, c->rate, sizeof r->rate);
}

static int
group_add(struct mq_stat *st, const struct wilds *w, const struct mq_topic *t,
    const char *group)
{
	struct mq_group_info gi;
	if (mq_group_info_at(t, group, &gi) < 0)
		return -1;
	struct mq_stat_group *ng = reallocarray(st->groups, st->ngroups + 1,
	    sizeof *ng);
	if (!ng) {
		mq_group_info_free(&gi);
		return mq_err_sys("malloc");
	}
	st->groups = ng;
	struct mq_stat_group *g = &ng[st->ngroups];
	memset(g, 0, sizeof *g);
	g->topic = strdup(t->name);
	g->group = strdup(group);
	if (!g->topic || !g->group) {
		free(g->topic);
		free(g->group);
		mq_group_info_free(&gi);
		return mq_err_sys("malloc");
	}
	st->ngroups++;
	const struct mq_partition_group *tot = &gi.total;
	g->pending = tot->pending;
	g->inflight = tot->inflight;
	g->delayed = tot->delayed;
	g->dead = tot->dead;
	g->lease = gi.lease;
	g->lease_soonest = (double)tot->lease_soonest_ms / 1000;
	g->pending_age = tot->oldest_pending > 0 ?
	    age(st->now, tot->oldest_pending) : -1;
	g->lease_age = tot->lease_soonest_ms ?
	    age(st->now, g->lease_soonest - gi.lease) : -1;
	g->consumers = gi.nmembers;
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->v[i].group, group) &&
		    mq_pattern_match(w->v[i].pattern, t->name))
			g->consumers += w->v[i].alive;
	mq_group_info_free(&gi);
	char path[MQ_NAME_MAX + 16];
	struct mq_counts c;
	if (mq_path(path, sizeof path, "groups/%s.stats", group) < 0 ||
	    mq_counts_read(t->fd, path, true, st->now, &c) < 0)
		return -1;
	rates_set(&g->acked, &c);
	memcpy(g->latency, c.latency, sizeof g->latency);
	g->latency_sum = c.sum;
	return 0;
}

static int
topic_rates_add(struct mq_stat *st, const struct mq_topic *t)
{
	struct mq_counts c;
	if (mq_counts_read(t->fd, "stats", false, st->now, &c) < 0)
		return -1;
	struct mq_stat_topic *nt = reallocarray(st->topics, st->ntopics + 1,
	    sizeof *nt);
	if (!nt)
		return mq_err_sys("malloc");
	st->topics = nt;
	if (!(nt[st->ntopics].topic = strdup(t->name)))
		return mq_err_sys("malloc");
	rates_set(&nt[st->ntopics++].published, &c);
	return 0;
}

/* The group named (an error if it does not exist), or every group. */
static int
groups_add(mq_spool *sp, struct mq_stat *st, const struct wilds *w,
    const struct mq_topic *t, const char *group)
{
	int rc;
	if (group) {
		if ((rc = mq_name_check("group", group)) == 0 &&
		    (rc = mq_group_exists(sp, t->name, group)) == 0)
			rc = mq_err(EX_NOINPUT, "no group '%s' in topic '%s'",
			    group, t->name);
		return rc == 1 ? group_add(st, w, t, group) : rc;
	}
	struct mq_names l = { 0 };
	rc = mq_groups_read(t, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if ((rc = group_add(st, w, t, l.v[i])) < 0 &&
		    mq_errcode() == EX_NOINPUT)
			rc = 0;                 /* unsubscribed meanwhile */
	mq_names_free(&l);
	return rc;
}

static int
topic_add(mq_spool *sp, struct mq_stat *st, const struct wilds *w,
    dev_t **devs, const char *topic, const char *group, int named)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return !named && mq_errcode() == EX_NOINPUT ? 0 : -1;
	int rc = topic_rates_add(st, &t);
	if (rc == 0)
		rc = groups_add(sp, st, w, &t, group);
	double now = st->now;
	st->stale_tmp += mq_tmp_count_stale(t.fd, false, now) +
	    stale_in(t.fd, "groups", false, now);
	for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++) {
		char p[PATH_MAX], link[PATH_MAX];
		st->stale_tmp += stale_each(t.pfd[k], "g", "/tmp", true, now) +
		    stale_each(t.pfd[k], "dlq", "", false, now);
		/* A placed partition is named by where it is. */
		char name[16];
		snprintf(name, sizeof name, "p%u", k);
		ssize_t n = readlinkat(t.fd, name, link, sizeof link - 1);
		if (n > 0) {
			link[n] = 0;
			rc = fs_add(st, devs, t.pfd[k], link);
		} else if (mq_path(p, sizeof p, "%s/topics/%s/%s",
		    mq_spool_path(sp), topic, name) == 0) {
			rc = fs_add(st, devs, t.pfd[k], p);
		}
	}
	mq_topic_close(&t);
	return rc;
}

int
mq_stat_read(mq_spool *sp, const char *topic, const char *group,
    struct mq_stat *st)
{
	memset(st, 0, sizeof *st);
	st->now = mq_now();
	dev_t *devs = NULL;
	struct wilds w = { 0 };
	int rc = wilds_read(sp, st->now, &w);
	if (rc == 0)
		rc = fs_add(st, &devs, sp->fd, mq_spool_path(sp));
	if (rc == 0)
		st->stale_tmp = mq_tmp_count_stale(sp->fd, false, st->now) +
		    stale_in(sp->fd, "tmp", true, st->now);
	if (rc == 0 && topic) {
		rc = topic_add(sp, st, &w, &devs, topic, group, 1);
	} else if (rc == 0) {
		char **topics;
		size_t n;
		if ((rc = mq_topic_list(sp, &topics, &n)) == 0) {
			for (size_t i = 0; rc == 0 && i < n; i++)
				rc = topic_add(sp, st, &w, &devs, topics[i],
				    NULL, 0);
			mq_strv_free(topics, n);
		}
	}
	free(devs);
	wilds_free(&w);
	struct stat sb;
	if (rc == 0 && mq_fstatat(sp->fd, "replicate/peers", &sb,
	    AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode)) {
		st->replication = 1;
		rc = mq_repl_status(sp, &st->peers, &st->npeers, NULL);
	}
	if (rc < 0)
		mq_stat_free(st);
	return rc;
}

void
mq_stat_free(struct mq_stat *st)
{
	for (size_t i = 0; i < st->ngroups; i++) {
		free(st->groups[i].topic);
		free(st->groups[i].group);
	}
	for (size_t i = 0; i < st->nfs; i++)
		free(st->fs[i].path);
	for (size_t i = 0; i < st->ntopics; i++)
		free(st->topics[i].topic);
	free(st->topics);
	free(st->groups);
	free(st->fs);
	free(st->peers);
	memset(st, 0, sizeof *st);
}
