/*
 * wildcard.c: subscriptions to every topic a pattern matches.
 *
 * Topic names are dot-separated levels.  In a pattern, "*" stands for one
 * level and ">" (last only) for one or more: "orders.*" matches
 * "orders.eu" but not "orders.eu.paid", "orders.>" matches both.
 *
 * A wildcard subscription is SPOOL/wildcards/<pattern>/<group>.conf (the
 * commit point) plus, in each matching topic, an ordinary group that
 * names the pattern: publishing never looks at patterns, so it costs what
 * the matching groups cost, whatever the number of subscriptions.  The
 * subscriber writes the conf, then joins every matching topic; a topic
 * creator, once its topic is in place, joins it to every matching
 * subscription.  Whichever of the two runs last sees the other's work, so
 * no topic is missed; a topic joined after it was created gets its whole
 * log (from-start), so nothing published in between is missed either.
 * Consumers of the pattern join any matching topic still without the
 * group, for the same reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

static int
conf_path(const char *pattern, const char *group, char *buf, size_t len)
{
	return mq_path(buf, len, "wildcards/%s/%s.conf", pattern, group);
}

/* Checks both names, then makes the conf's path. */
static int
checked_conf_path(const char *pattern, const char *group, char *buf,
    size_t len)
{
	if (mq_pattern_check(pattern) < 0 || mq_name_check("group", group) < 0)
		return -1;
	return conf_path(pattern, group, buf, len);
}

/* A subscription's conf lines, read: its filter and header conditions
 * point into *kv and *match (free both; *kv is freed on failure). */
static int
parse_conf(struct mq_conf *kv, struct mq_group_conf *c, char **filter,
    const char ***match)
{
	*filter = NULL;
	*match = NULL;
	if (mq_group_conf_parse(kv, c) < 0)
		goto fail;
	const char *f = mq_conf_get(kv, "filter");
	if (f && !(*filter = mq_conf_unescape(f)))
		goto fail;
	c->filter = *filter;
	size_t n = 0;
	for (size_t i = 0; i < kv->n; i++)
		n += !strcmp(kv->keys[i], "match");
	if (n && !(*match = calloc(n, sizeof **match))) {
		mq_err_sys("malloc");
		goto fail;
	}
	for (size_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->keys[i], "match"))
			(*match)[c->nmatch++] = kv->vals[i];
	c->match = *match;
	return 0;
fail:
	free(*filter);
	mq_conf_free(kv);
	return -1;
}

/* Reads a subscription's conf (parse_conf). */
static int
read_conf(mq_spool *sp, const char *pattern, const char *group,
    struct mq_conf *kv, struct mq_group_conf *c, char **filter,
    const char ***match)
{
	char p[2 * MQ_NAME_MAX + 32];
	if (conf_path(pattern, group, p, sizeof p) < 0)
		return -1;
	if (mq_conf_read(sp->fd, p, kv) < 0) {
		if (mq_errcode() == EX_NOINPUT)
			return mq_err(EX_NOINPUT, "no group '%s' on pattern '%s'",
			    group, pattern);
		return -1;
	}
	return parse_conf(kv, c, filter, match);
}

/* Gives topic the group of the subscription, if it lacks it. */
static int
join(mq_spool *sp, const char *pattern, const char *group, const char *topic,
    int from_start)
{
	struct mq_conf kv;
	struct mq_group_conf c;
	char *filter;
	const char **match;
	if (mq_group_topic_exists(sp, topic, group) == 1)
		return 0;
	if (read_conf(sp, pattern, group, &kv, &c, &filter, &match) < 0)
		return -1;
	if (from_start)
		c.from_start = 1;
	int rc = mq_group_subscribe_as(sp, topic, group, &c, pattern);
	free(filter);
	free(match);
	mq_conf_free(&kv);
	return rc < 0 ? -1 : 0;
}

int
mq_wildcard_join(mq_spool *sp, const char *pattern, const char *group,
    const char *topic)
{
	return join(sp, pattern, group, topic, 1);
}

/* Puts the subscription's conf (text) in place, the commit point, then
 * joins every matching topic: 1 made, 0 there already. */
static int
subscribe_text(mq_spool *sp, const char *pattern, const char *group,
    const char *text)
{
	char p[2 * MQ_NAME_MAX + 32];
	if (mq_mkdir(sp->fd, "wildcards") < 0 ||
	    mq_path(p, sizeof p, "wildcards/%s", pattern) < 0 ||
	    mq_mkdir(sp->fd, p) < 0 || conf_path(pattern, group, p, sizeof p) < 0)
		return -1;
	int rc = mq_write_file(sp->fd, p, text, strlen(text), 1, 0);
	if (rc < 0)
		return -1;
	int created = rc == 0;
	if (created)
		mq_journal_note(sp, 'W', "%s %s", pattern, group);
	char **names;
	size_t n;
	if (mq_topic_list(sp, &names, &n) < 0)
		return -1;
	rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (mq_pattern_match(pattern, names[i]) &&
		    join(sp, pattern, group, names[i], 0) < 0 &&
		    mq_errcode() != EX_NOINPUT)
			rc = -1;
	mq_strv_free(names, n);
	return rc < 0 ? -1 : created;
}

int
mq_wildcard_subscribe(mq_spool *sp, const char *pattern, const char *group,
    const struct mq_group_conf *c)
{
	char *text = NULL;
	if (mq_pattern_check(pattern) < 0 || mq_name_check("group", group) < 0 ||
	    mq_group_conf_render(NULL, c, NULL, pattern, &text) < 0)
		return -1;
	int rc = subscribe_text(sp, pattern, group, text);
	free(text);
	return rc;
}

int
mq_wildcard_adopt(mq_spool *sp, const char *pattern, const char *group,
    const char *text, size_t len)
{
	struct mq_conf kv;
	struct mq_group_conf c;
	char p[2 * MQ_NAME_MAX + 32], where[MQ_NAME_MAX + 16];
	snprintf(where, sizeof where, "pattern %s", pattern);
	if (checked_conf_path(pattern, group, p, sizeof p) < 0 ||
	    mq_group_conf_adoptable(text, len, p, where, &kv, &c) < 0)
		return -1;
	/* The peer's lines as they are (its creation time with them). */
	char *out = NULL;
	int rc = mq_conf_render(&kv, &out);
	if (rc == 0)
		rc = subscribe_text(sp, pattern, group, out);
	free(out);
	mq_conf_free(&kv);
	return rc < 0 ? -1 : 0;
}

int
mq_wildcard_unsubscribe(mq_spool *sp, const char *pattern, const char *group)
{
	char p[2 * MQ_NAME_MAX + 32];
	if (checked_conf_path(pattern, group, p, sizeof p) < 0)
		return -1;
	if (mq_unlinkat(sp->fd, p, 0) < 0)
		return errno == ENOENT ? mq_err(EX_NOINPUT, "no group '%s' on "
		    "pattern '%s'", group, pattern) :
		    mq_err_sys("unsubscribe %s", group);
	mq_journal_note(sp, 'U', "%s %s", pattern, group);
	if (mq_path(p, sizeof p, "wildcards/%s/%s.members", pattern, group) == 0)
		mq_rmtree(sp->fd, p);
	/* The groups it made go too; a group of the same name that was
	 * subscribed to a topic directly stays. */
	char **names;
	size_t n;
	if (mq_topic_list(sp, &names, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct mq_topic t;
		struct mq_conf kv;
		if (!mq_pattern_match(pattern, names[i]) ||
		    mq_topic_open_as(sp, names[i], MQ_FORMAT_ANY, &t) < 0)
			continue;
		if (mq_group_conf_read(&t, group, &kv) == 0) {
			const char *from = mq_conf_get(&kv, "pattern");
			bool ours = from && !strcmp(from, pattern);
			mq_conf_free(&kv);
			mq_topic_close(&t);
			if (ours && mq_group_topic_unsubscribe(sp, names[i], group) < 0 &&
			    mq_errcode() != EX_NOINPUT)
				rc = -1;
		} else {
			mq_topic_close(&t);
		}
	}
	mq_strv_free(names, n);
	return rc;
}

int
mq_wildcard_settings(mq_spool *sp, const char *pattern, const char *group,
    const struct mq_group_conf *create, struct mq_group_conf *out)
{
	struct mq_conf kv;
	char *filter;
	const char **match;
	if (create && mq_wildcard_subscribe(sp, pattern, group, create) < 0)
		return -1;
	if (read_conf(sp, pattern, group, &kv, out, &filter, &match) < 0)
		return -1;
	/* The caller keeps the settings, not the strings. */
	out->filter = NULL;
	out->match = NULL;
	out->nmatch = 0;
	free(filter);
	free(match);
	mq_conf_free(&kv);
	return 0;
}

int
mq_wildcard_exists(mq_spool *sp, const char *pattern, const char *group)
{
	char p[2 * MQ_NAME_MAX + 32];
	if (checked_conf_path(pattern, group, p, sizeof p) < 0)
		return -1;
	return mq_faccessat(sp->fd, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Joins a new topic to every subscription whose pattern matches it. */
int
mq_wildcard_topic_created(mq_spool *sp, const char *topic)
{
	int wfd = mq_openat(sp->fd, "wildcards", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (wfd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("wildcards");
	struct mq_names pats = { 0 };
	int rc = mq_names_read(wfd, NULL, &pats);
	for (size_t i = 0; rc == 0 && i < pats.n; i++) {
		if (mq_pattern_check(pats.v[i]) < 0 ||
		    !mq_pattern_match(pats.v[i], topic))
			continue;
		struct mq_names groups = { 0 };
		int pfd = mq_dir_open(wfd, pats.v[i]);
		rc = pfd < 0 ? -1 : mq_group_names_read(pfd, &groups);
		for (size_t j = 0; rc == 0 && j < groups.n; j++) {
			if (join(sp, pats.v[i], groups.v[j], topic, 1) < 0 &&
			    mq_errcode() != EX_NOINPUT)
				rc = -1;
		}
		mq_names_free(&groups);
		if (pfd >= 0)
			close(pfd);
	}
	mq_names_free(&pats);
	close(wfd);
	return rc;
}
