/*
 * topic.c: opening a topic, its configuration (topic.conf), listing
 * topics and their groups, and taking every partition's lock.  Making and
 * deleting topics is create.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

void
mq_topic_conf_default(struct mq_topic_conf *c)
{
	/* Every field: what is not named here is zero (no placement, no
	 * signers, the permissions as made). */
	*c = (struct mq_topic_conf){
		.partitions = 1,
		.max_message_size = MQ_MESSAGE_MAX_DEFAULT,
		.retention = 7 * 86400,
		.dedup_window = 3600,
		.format = 2,
	};
	/* New topics are of format 2 unless MQ_FORMAT says 1 (mq-topic(1),
	 * ENVIRONMENT): what a site that keeps to format 1 for now sets. */
	const char *f = getenv("MQ_FORMAT");
	if (f && !strcmp(f, "1"))
		c->format = 1;
	c->format_asked = f && (!strcmp(f, "1") || !strcmp(f, "2"));
}

int
mq_topic_conf_parse(const struct mq_conf *kv, struct mq_topic_conf *c)
{
	uint64_t parts, max, format;
	mq_topic_conf_default(c);
	if (mq_conf_get_u64(kv, "partitions", 1, &parts, "topic.conf") < 0 ||
	    mq_conf_get_u64(kv, "max-message-size", c->max_message_size, &max,
	    "topic.conf") < 0 ||
	    mq_conf_get_double(kv, "retention", c->retention, &c->retention,
	    "topic.conf") < 0 ||
	    mq_conf_get_double(kv, "ttl", 0, &c->ttl, "topic.conf") < 0 ||
	    mq_conf_get_double(kv, "dedup-window", c->dedup_window,
	    &c->dedup_window, "topic.conf") < 0 ||
	    mq_conf_get_u64(kv, "format", 1, &format, "topic.conf") < 0)
		return -1;
	const char *exp = mq_conf_get(kv, "expired");
	if (exp && strcmp(exp, "dlq") && strcmp(exp, "drop"))
		return mq_err(EX_CONFIG, "topic.conf: expired must be dlq or drop");
	c->expired_drop = exp && !strcmp(exp, "drop");
	for (size_t i = 0; i < kv->n; i++)
		c->nsigners += !strcmp(kv->keys[i], "signer");
	if (mq_roles_conf_get(kv, &c->roles) < 0)
		return -1;
	if (parts < 1 || parts > MQ_PARTITIONS_MAX || max < 1 ||
	    max > MQ_MESSAGE_MAX_LIMIT || format < 1 || format > 2)
		return mq_err(EX_CONFIG, "topic.conf: value out of range");
	c->format = (unsigned)format;
	c->partitions = (unsigned)parts;
	c->max_message_size = (size_t)max;
	return 0;
}

/* Builds partition k in tfd, or in place (then p<k> links there), with
 * the ACLs of the topic's roles; format 2 has tmp/ for the segments being
 * written, which publishers write as they write log/. */
int
mq_partition_build(int tfd, unsigned k, const char *place,
    const struct mq_roles *roles, unsigned format)
{
	char p[64];
	static const struct mq_dir_spec sub[] = {
		{ "log", MQ_DIR_LOG }, { "g", MQ_DIR_GROUPS_OF },
		{ "dlq", MQ_DIR_DLQ }, { "dedup", MQ_DIR_DEDUP },
		{ "tmp", MQ_DIR_LOG },
	};
	if (mq_path(p, sizeof p, "p%u", k) < 0 || (!place && mq_mkdir(tfd, p) < 0))
		return -1;
	int pfd = place ? mq_place_make(tfd, p, place) : mq_dir_open(tfd, p);
	if (pfd < 0)
		return -1;
	int rc = mq_perm_dir(pfd, p, roles, MQ_DIR_PARTITION);
	if (rc == 0)
		rc = mq_perm_mkdirs(pfd, NULL, sub, sizeof sub / sizeof *sub -
		    (format < 2), roles);
	if (rc == 0) {
		struct mq_head h = { 0, 0 };
		int hfd = mq_head_open(pfd, MQ_HEAD_CREATE);
		rc = hfd < 0 ? -1 : mq_head_write(hfd, &h, 1);
		if (hfd >= 0)
			close(hfd);
	}
	if (rc == 0 && place && syncfs(pfd) < 0)
		rc = mq_err_sys("sync %s", place);
	close(pfd);
	return rc;
}

int
mq_topic_open(mq_spool *sp, const char *name, struct mq_topic *t)
{
	return mq_topic_open_as(sp, name, MQ_FORMAT1, t);
}

int
mq_topic_open_as(mq_spool *sp, const char *name, int formats,
    struct mq_topic *t)
{
	memset(t, 0, sizeof *t);
	t->fd = -1;
	if (mq_name_check("topic", name) < 0)
		return -1;
	t->sp = sp;
	t->fd = mq_openat(sp->topics, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (t->fd < 0) {
		if (errno == ENOENT)
			return mq_err(EX_NOINPUT, "no topic '%s'", name);
		return mq_err_sys("topic %s", name);
	}
	/* Before the read: a conf replaced in between is read again by
	 * mq_topic_format_now, never missed. */
	struct stat st;
	if (mq_fstatat(t->fd, "topic.conf", &st, AT_SYMLINK_NOFOLLOW) == 0)
		t->conf_ino = st.st_ino;
	struct mq_conf kv;
	if (mq_conf_read(t->fd, "topic.conf", &kv) < 0)
		goto fail;
	int rc = mq_topic_conf_parse(&kv, &t->conf);
	mq_conf_free(&kv);
	if (rc < 0)
		goto fail;
	if (!(formats & (t->conf.format == 2 ? MQ_FORMAT2 : MQ_FORMAT1))) {
		mq_err(EX_UNAVAILABLE, "topic %s is of format 2 (segments), "
		    "which this operation does not read yet (mq-spool(5), "
		    "SEGMENTED STORAGE)", name);
		goto fail;
	}
	t->name = strdup(name);
	t->pfd = malloc(t->conf.partitions * sizeof *t->pfd);
	if (t->conf.format == 2 &&
	    (t->seglog = calloc(t->conf.partitions, sizeof *t->seglog)))
		for (unsigned k = 0; k < t->conf.partitions; k++)
			t->seglog[k].logfd = -1;
	if (!t->name || !t->pfd || (t->conf.format == 2 && !t->seglog)) {
		mq_err_sys("malloc");
		goto fail;
	}
	for (unsigned k = 0; k < t->conf.partitions; k++)
		t->pfd[k] = -1;
	for (unsigned k = 0; k < t->conf.partitions; k++) {
		char p[32];
		snprintf(p, sizeof p, "p%u", k);
		if ((t->pfd[k] = mq_dir_open_partition(t->fd, p)) < 0) {
			if (errno == EMFILE)
				mq_err(EX_OSERR, "topic %s: its %u partitions need more "
				    "open files than the limit allows (ulimit -n)",
				    name, t->conf.partitions);
			goto fail;
		}
	}
	return 0;
fail:
	mq_topic_close(t);
	return -1;
}

void
mq_topic_close(struct mq_topic *t)
{
	if (t->pfd)
		for (unsigned k = 0; k < t->conf.partitions; k++)
			if (t->pfd[k] >= 0)
				close(t->pfd[k]);
	if (t->fd >= 0)
		close(t->fd);
	for (unsigned k = 0; t->seglog && k < t->conf.partitions; k++) {
		if (t->seglog[k].logfd >= 0)
			close(t->seglog[k].logfd);
		mq_seglog_free(&t->seglog[k]);
	}
	free(t->seglog);
	free(t->pfd);
	free(t->name);
	mq_signers_free(t->signers);
	mq_roots_free(t->roots);
	memset(t, 0, sizeof *t);
	t->fd = -1;
}

int
mq_topic_conf_read(mq_spool *sp, const char *name, struct mq_topic_conf *c)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, name, MQ_FORMAT1 | MQ_FORMAT2, &t) < 0)
		return -1;
	*c = t.conf;
	mq_topic_close(&t);
	return 0;
}

int
mq_topic_list(mq_spool *sp, char ***names, size_t *n)
{
	struct mq_names l = { 0 };
	*names = NULL;
	*n = 0;
	if (mq_names_read(sp->topics, mq_name_ok, &l) < 0)
		return -1;
	*names = l.v;
	*n = l.n;
	return 0;
}

void
mq_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool
is_group_conf(const char *name)
{
	size_t len = strlen(name);
	if (len <= 5 || strcmp(name + len - 5, ".conf"))
		return false;
	char stem[MQ_NAME_MAX + 1];
	if (len - 5 > MQ_NAME_MAX)
		return false;
	memcpy(stem, name, len - 5);
	stem[len - 5] = 0;
	return mq_name_ok(stem);
}

/* The groups whose <group>.conf is in a directory (a topic's groups/,
 * or a wildcard subscription's pattern directory), by name. */
int
mq_group_names_read(int dirfd, struct mq_names *l)
{
	int rc = mq_names_read(dirfd, is_group_conf, l);
	for (size_t i = 0; rc == 0 && i < l->n; i++)
		l->v[i][strlen(l->v[i]) - 5] = 0;
	return rc;
}

int
mq_groups_read(const struct mq_topic *t, struct mq_names *l)
{
	int gfd = mq_dir_open(t->fd, "groups");
	if (gfd < 0)
		return -1;
	int rc = mq_group_names_read(gfd, l);
	close(gfd);
	return rc;
}

/* Locks every partition's head in partition order (so two lockers of all
 * partitions never deadlock), repairing any that a dead publisher left. */
int
mq_lock_all(const struct mq_topic *t, int *fds)
{
	for (unsigned k = 0; k < t->conf.partitions; k++)
		fds[k] = -1;
	for (unsigned k = 0; k < t->conf.partitions; k++) {
		struct mq_head h;
		fds[k] = mq_head_open(t->pfd[k], MQ_HEAD_WRITE);
		if (fds[k] < 0 || mq_head_lock(fds[k], 1) < 0 ||
		    mq_head_read(fds[k], &h) < 0 ||
		    mq_partition_repair_locked(t, k, fds[k], &h) < 0) {
			mq_unlock_all(t, fds);
			return -1;
		}
	}
	return 0;
}

void
mq_unlock_all(const struct mq_topic *t, int *fds)
{
	for (unsigned k = 0; k < t->conf.partitions; k++) {
		if (fds[k] < 0)
			continue;
		mq_head_unlock(fds[k]);
		close(fds[k]);
		fds[k] = -1;
	}
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
mq_topic_format_now(struct mq_topic *t)
{
	struct stat st;
	struct mq_topic_conf c;
	if (mq_fstatat(t->fd, "topic.conf", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return mq_err_sys("topic %s: topic.conf", t->name);
	if (st.st_ino == t->conf_ino)
		return 0;
	if (mq_topic_conf_now(t, &c) < 0)
		return -1;
	if (c.format != t->conf.format)
		return mq_err(EX_TEMPFAIL, "topic %s was upgraded to format %u "
		    "since it was opened: try again", t->name, c.format);
	t->conf_ino = st.st_ino;
	return 0;
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

int
mq_partitions2_each(mq_spool *sp, int (*fn)(const struct mq_topic *,
    unsigned k, void *ctx), void *ctx)
{
	char **names;
	size_t n;
	if (mq_topic_list(sp, &names, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct mq_topic t;
		if (mq_topic_open_as(sp, names[i], MQ_FORMAT_ANY, &t) < 0) {
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
			continue;
		}
		for (unsigned k = 0; rc == 0 && t.conf.format == 2 &&
		    k < t.conf.partitions; k++)
			rc = fn(&t, k, ctx);
		mq_topic_close(&t);
	}
	mq_strv_free(names, n);
	return rc;
}

int
mq_topics_format1(mq_spool *sp, const char *what)
{
	char **names;
	size_t n;
	if (mq_topic_list(sp, &names, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct mq_topic_conf c;
		if (mq_topic_conf_read(sp, names[i], &c) < 0)
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
		else if (c.format == 2)
			rc = mq_err(EX_UNAVAILABLE, "topic %s is of format 2 "
			    "(segments), which %s does not handle yet (mq-spool(5), "
			    "SEGMENTED STORAGE)", names[i], what);
	}
	mq_strv_free(names, n);
	return rc;
}
