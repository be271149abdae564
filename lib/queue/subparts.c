/*
 * subparts.c: which partitions a subscription reads.
 *
 * A subscription reads every partition of its topic, or of every topic
 * its wildcard pattern matches.  Both sets grow while it runs: a topic
 * grows partitions (mq-topic alter replaces topic.conf), a topic that
 * matches the pattern is created.  Inotify on topics/ and on each topic's
 * directory says when to look again, and a consumer looks once a second
 * anyway (polling, or a change inotify cannot see).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sysexits.h>
#include <unistd.h>

#include "sub.h"

/* Opens what the consumer needs of partition p->k of p->t. */
static int
open_part(mq_sub *s, struct part *p)
{
	const struct mq_topic *t = p->t;
	unsigned k = p->k;
	p->scan_new = p->scan_cur = p->scan_delay = true;
	/* A consumer watches delay/, so it makes it. */
	if (mq_gdirs_open(t, k, s->group, &p->d) < 0 ||
	    mq_gdirs_delay(t, k, s->group, &p->d) < 0 ||
	    (p->hfd = mq_head_open(t->pfd[k], MQ_HEAD_WRITE)) < 0 ||
	    !(p->newdir = mq_dir_stream(p->d.newfd)) ||
	    !(p->curdir = mq_dir_stream(p->d.curfd)) ||
	    !(p->delaydir = mq_dir_stream(p->d.delayfd)))
		return -1;
	char path[MQ_NAME_MAX + 16];
	if (s->gc.exactly_once && mq_ledger_dir(t->pfd[k], s->group,
	    &p->donefd) < 0)
		return -1;
	/* Format 2: the group's cursor, which its feeds raise, and its
	 * filter, which they apply (feed.c). */
	if (t->conf.format == 2) {
		struct mq_conf kv;
		if ((p->cursorfd = mq_cursor_open(t, k, s->group, O_RDWR |
		    O_CREAT)) < 0 ||
		    mq_group_conf_read(t, s->group, &kv) < 0)
			return -1;
		int rc = mq_filter_from_conf(&kv, s->group, &p->filter);
		mq_conf_free(&kv);
		if (rc < 0)
			return -1;
		p->feed = true;
		/* A group that is not ordered takes the log as claims
		 * (claims.c); an ordered one names one message at a time, and
		 * so does every group on a shared file system, where a
		 * listing of claims/ may be served stale. */
		if (!s->gc.ordered && !mq_fs_shared(p->d.newfd) &&
		    ((p->claimsfd = mq_claims_open(t, k,
		    s->group, 1)) < 0 || !(p->taken = calloc(1,
		    sizeof *p->taken))))
			return p->claimsfd < 0 ? -1 : mq_err_sys("malloc");
	}
	/* Roles: each claim is checked against log/ (mq_claim_published);
	 * format 2 reads each from log/. */
	if (mq_roles_any(&t->conf.roles) && t->conf.format != 2 &&
	    (p->logfd = mq_dir_open(t->pfd[k], "log")) < 0)
		return -1;
	if (s->gc.ordered) {
		/* A group made before a partition existed has no token. */
		if (mq_owner_init(t, k, s->group) < 0 ||
		    mq_path(path, sizeof path, "g/%s/own", s->group) < 0 ||
		    (p->ownfd = mq_dir_open(t->pfd[k], path)) < 0)
			return -1;
	}
	uint32_t arrive = IN_MOVED_TO | IN_CREATE | IN_ONLYDIR;
	/* An ordered group waits for the claim ahead of it to go. */
	uint32_t leave = s->gc.ordered ? IN_DELETE | IN_MOVED_FROM : 0;
	if (s->ifd >= 0 &&
	    ((p->wd_new = mq_watch(s->ifd, p->d.newfd, arrive)) < 0 ||
	    (p->wd_cur = mq_watch(s->ifd, p->d.curfd, arrive | leave)) < 0 ||
	    (p->wd_delay = mq_watch(s->ifd, p->d.delayfd, arrive)) < 0 ||
	    (p->wd_head = mq_watch(s->ifd, p->hfd, IN_MODIFY)) < 0 ||
	    (p->cursorfd >= 0 &&
	    (p->wd_cursor = mq_watch(s->ifd, p->cursorfd, IN_MODIFY)) < 0) ||
	    (s->gc.ordered &&
	    (p->wd_own = mq_watch(s->ifd, p->ownfd, arrive)) < 0)))
		return -1;
	return mq_partition_repair_try(t, k);
}

static void
close_part(struct part *p)
{
	mq_gdirs_close(&p->d);
	if (p->hfd >= 0)
		close(p->hfd);
	if (p->donefd >= 0)
		close(p->donefd);
	if (p->logfd >= 0)
		close(p->logfd);
	if (p->ownfd >= 0)
		close(p->ownfd);
	if (p->cursorfd >= 0)
		close(p->cursorfd);
	if (p->claimsfd >= 0)
		close(p->claimsfd);
	if (p->taken)
		mq_taken_clear(p->taken);
	free(p->taken);
	mq_filter_free(p->filter);
	if (p->newdir)
		closedir(p->newdir);
	if (p->curdir)
		closedir(p->curdir);
	if (p->delaydir)
		closedir(p->delaydir);
	mq_names_free(&p->cand);
}

/* Adds partitions [from, t->conf.partitions) of topic t. */
static int
add_parts(mq_sub *s, struct mq_topic *t, unsigned from)
{
	unsigned n = t->conf.partitions - from;
	struct part *ps = reallocarray(s->ps, s->np + n, sizeof *ps);
	if (!ps)
		return mq_err_sys("malloc");
	s->ps = ps;
	for (unsigned i = 0; i < n; i++) {
		struct part *p = &s->ps[s->np];
		memset(p, 0, sizeof *p);
		p->t = t;
		p->k = from + i;
		p->d.newfd = p->d.curfd = p->d.delayfd = -1;
		p->hfd = p->donefd = p->logfd = p->ownfd = p->cursorfd = -1;
		p->claimsfd = -1;
		p->wd_new = p->wd_cur = p->wd_head = p->wd_delay = p->wd_own = -1;
		p->wd_cursor = -1;
		p->earliest = p->due = INFINITY;
		s->np++;
		if (open_part(s, p) < 0)
			return -1;
	}
	return 0;
}

static int
add_topic(mq_sub *s, const char *name, int create)
{
	struct mq_topic *t = calloc(1, sizeof *t);
	struct mq_topic **v = reallocarray(s->topics, s->ntopics + 1,
	    sizeof *v);
	int *w = reallocarray(s->wd_topic, s->ntopics + 1, sizeof *w);
	if (v)
		s->topics = v;
	if (w)
		s->wd_topic = w;
	if (!t || !v || !w) {
		free(t);
		return mq_err_sys("malloc");
	}
	if (mq_topic_open_or_create(s->sp, name, create | MQ_FORMAT1 |
	    MQ_FORMAT2, t) < 0) {
		free(t);
		return -1;
	}
	s->topics[s->ntopics] = t;
	s->wd_topic[s->ntopics++] = -1;
	if (s->ifd >= 0 && (s->wd_topic[s->ntopics - 1] = mq_watch(s->ifd,
	    t->fd, IN_MOVED_TO | IN_CREATE)) < 0)
		return -1;
	return add_parts(s, t, 0);
}

static bool
have_topic(const mq_sub *s, const char *name)
{
	for (size_t i = 0; i < s->ntopics; i++)
		if (!strcmp(s->topics[i]->name, name))
			return true;
	return false;
}

/* Adds the topics the pattern matches that we do not read yet, joining
 * the group to any that lacks it. */
static int
add_matching(mq_sub *s)
{
	char **names;
	size_t n;
	if (mq_topic_list(s->sp, &names, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (!mq_pattern_match(s->name, names[i]) ||
		    have_topic(s, names[i]))
			continue;
		rc = mq_wildcard_join(s->sp, s->name, s->group, names[i]);
		if (rc == 0)
			rc = add_topic(s, names[i], 0);
		/* A topic deleted meanwhile is not an error. */
		if (rc < 0 && mq_errcode() == EX_NOINPUT)
			rc = 0;
	}
	mq_strv_free(names, n);
	return rc;
}

int
mq_sub_parts_open(mq_sub *s)
{
	if (s->wildcard) {
		if (s->ifd >= 0 && (s->wd_topics = mq_watch(s->ifd, s->sp->topics,
		    IN_MOVED_TO | IN_CREATE | IN_ONLYDIR)) < 0)
			return -1;
		return add_matching(s);
	}
	return add_topic(s, s->name, s->opts.create);
}

/* Re-reads topic.conf; opens the partitions it grew by. */
static int
grow_topic(mq_sub *s, struct mq_topic *t)
{
	struct mq_topic_conf c;
	int rc = mq_topic_conf_now(t, &c);
	if (rc < 0 || c.partitions <= t->conf.partitions)
		return rc;
	int *pfd = reallocarray(t->pfd, c.partitions, sizeof *pfd);
	if (!pfd)
		return mq_err_sys("malloc");
	t->pfd = pfd;
	unsigned from = t->conf.partitions;
	for (unsigned k = from; k < c.partitions; k++)
		pfd[k] = -1;
	if (t->seglog) {
		struct mq_seglog *l = reallocarray(t->seglog, c.partitions,
		    sizeof *l);
		if (!l)
			return mq_err_sys("malloc");
		t->seglog = l;
		for (unsigned k = from; k < c.partitions; k++)
			mq_seglog_init(&l[k], -1);
	}
	t->conf = c;
	for (unsigned k = from; k < c.partitions; k++) {
		char p[32];
		snprintf(p, sizeof p, "p%u", k);
		if ((pfd[k] = mq_dir_open_partition(t->fd, p)) < 0)
			return -1;
	}
	s->rebalance = true;
	return add_parts(s, t, from);
}

int
mq_sub_parts_refresh(mq_sub *s)
{
	s->refresh = false;
	s->last_refresh = mq_mono();
	size_t n = s->ntopics;
	if (s->wildcard && add_matching(s) < 0)
		return -1;
	if (s->ntopics != n)
		s->rebalance = true;
	for (size_t i = 0; i < s->ntopics; i++)
		if (grow_topic(s, s->topics[i]) < 0)
			return -1;
	return 0;
}

void
mq_sub_parts_close(mq_sub *s)
{
	for (size_t i = 0; i < s->np; i++)
		close_part(&s->ps[i]);
	free(s->ps);
	for (size_t i = 0; i < s->ntopics; i++) {
		mq_topic_close(s->topics[i]);
		free(s->topics[i]);
	}
	free(s->topics);
	free(s->wd_topic);
}
