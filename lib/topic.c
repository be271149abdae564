/*
 * topic.c: creating, opening, listing, describing and deleting topics.
 *
 * A topic is built complete under SPOOL/tmp/topic.<random>/ and renamed to
 * topics/<name>: the rename is the commit point, so a topic is either
 * absent or whole, and of two creators one wins and the other discards its
 * copy.  Deletion renames topics/<name> to SPOOL/tmp/trash.<random> (the
 * commit point) and then removes that tree; a crash leaves a trash tree
 * that the next create or delete removes.
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

#include "internal.h"

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
	};
}

static int
conf_check(const struct mq_topic_conf *c)
{
	if (c->partitions < 1 || c->partitions > MQ_PARTITIONS_MAX)
		return mq_err(EX_USAGE, "partitions must be 1 to %d",
		    MQ_PARTITIONS_MAX);
	if (c->max_message_size < 1 || c->max_message_size > MQ_MESSAGE_MAX_LIMIT)
		return mq_err(EX_USAGE, "max message size must be 1 to %d bytes",
		    MQ_MESSAGE_MAX_LIMIT);
	return 0;
}

int
mq_topic_conf_parse(const struct mq_conf *kv, struct mq_topic_conf *c)
{
	uint64_t parts, max;
	mq_topic_conf_default(c);
	if (mq_conf_get_u64(kv, "partitions", 1, &parts, "topic.conf") < 0 ||
	    mq_conf_get_u64(kv, "max-message-size", c->max_message_size, &max,
	    "topic.conf") < 0 ||
	    mq_conf_get_double(kv, "retention", c->retention, &c->retention,
	    "topic.conf") < 0 ||
	    mq_conf_get_double(kv, "ttl", 0, &c->ttl, "topic.conf") < 0 ||
	    mq_conf_get_double(kv, "dedup-window", c->dedup_window,
	    &c->dedup_window, "topic.conf") < 0)
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
	    max > MQ_MESSAGE_MAX_LIMIT)
		return mq_err(EX_CONFIG, "topic.conf: value out of range");
	c->partitions = (unsigned)parts;
	c->max_message_size = (size_t)max;
	return 0;
}

/* topic.conf of a new topic (its signers checked: bad ones are
 * EX_DATAERR). */
static int
conf_text(const struct mq_topic_conf *c, char **out)
{
	struct mq_conf kv = { 0 };
	int rc = mq_conf_addf(&kv, "partitions", "%u", c->partitions);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "max-message-size", "%zu",
		    c->max_message_size);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "retention", "%.0f", c->retention);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "ttl", "%.3f", c->ttl);
	if (rc == 0)
		rc = mq_conf_add(&kv, "expired", c->expired_drop ? "drop" : "dlq");
	if (rc == 0)
		rc = mq_conf_addf(&kv, "dedup-window", "%.0f", c->dedup_window);
	if (rc == 0 && c->signers)
		rc = mq_signers_add(&kv, c->signers);
	if (rc == 0)
		rc = mq_roles_conf_add(&kv, &c->roles);
	if (rc == 0)
		rc = mq_conf_render(&kv, out);
	mq_conf_free(&kv);
	return rc;
}

/* Removes trash trees, and staging trees old enough to be abandoned. */
static void
sweep_spool_tmp(mq_spool *sp)
{
	int fd = mq_openat(sp->fd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return;
	struct mq_names l = { 0 };
	if (mq_names_read(fd, NULL, &l) == 0) {
		for (size_t i = 0; i < l.n; i++) {
			struct stat st;
			int old = mq_fstatat(fd, l.v[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    mq_now() - (double)st.st_mtime > MQ_STALE_TMP;
			if (!strncmp(l.v[i], "trash.", 6) ||
			    (old && !strncmp(l.v[i], "topic.", 6)))
				mq_topic_tree_remove(fd, l.v[i]);
			else if (old)
				mq_rmtree(fd, l.v[i]);
		}
	}
	mq_names_free(&l);
	close(fd);
}

/* Builds partition k in tfd, or in place (then p<k> links there), with
 * the ACLs of the topic's roles. */
int
mq_partition_build(int tfd, unsigned k, const char *place,
    const struct mq_roles *roles)
{
	char p[64];
	static const struct mq_dir_spec sub[] = {
		{ "log", MQ_DIR_LOG }, { "g", MQ_DIR_GROUPS_OF },
		{ "dlq", MQ_DIR_DLQ }, { "dedup", MQ_DIR_DEDUP },
	};
	if (mq_path(p, sizeof p, "p%u", k) < 0 || (!place && mq_mkdir(tfd, p) < 0))
		return -1;
	int pfd = place ? mq_place_make(tfd, p, place) : mq_dir_open(tfd, p);
	if (pfd < 0)
		return -1;
	int rc = mq_perm_dir(pfd, p, roles, MQ_DIR_PARTITION);
	if (rc == 0)
		rc = mq_perm_mkdirs(pfd, NULL, sub, sizeof sub / sizeof *sub,
		    roles);
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
mq_topic_create(mq_spool *sp, const char *name, const struct mq_topic_conf *c)
{
	struct mq_topic_conf dflt;
	if (!c) {
		mq_topic_conf_default(&dflt);
		c = &dflt;
	}
	if (mq_spool_writable(sp) < 0 || mq_name_check("topic", name) < 0 ||
	    conf_check(c) < 0)
		return -1;
	if (mq_faccessat(sp->topics, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	sweep_spool_tmp(sp);
	if (mq_places_check(c->place, 0, c->partitions) < 0)
		return -1;

	char stage[64], rnd[17], *text = NULL;
	if (conf_text(c, &text) < 0)
		return -1;
	mq_hex_random(rnd, 16);
	if (mq_path(stage, sizeof stage, "tmp/topic.%s", rnd) < 0 ||
	    mq_mkdir(sp->fd, stage) < 0) {
		free(text);
		return -1;
	}
	int tfd = mq_dir_open(sp->fd, stage);
	int rc = tfd < 0 ? -1 : mq_perm_topic(tfd, name, &c->perm, &c->roles);
	if (rc == 0)
		rc = mq_write_file(tfd, "topic.conf", text, strlen(text), 1, 0);
	free(text);
	if (rc == 0)
		rc = mq_perm_mkdir(tfd, "groups", &c->roles, MQ_DIR_GROUPS);
	/* Made later otherwise, but with roles it takes other rights than
	 * the topic directory gives what is made in it. */
	if (rc == 0 && mq_roles_any(&c->roles))
		rc = mq_perm_mkdir(tfd, "stats", &c->roles, MQ_DIR_STATS);
	for (unsigned k = 0; rc == 0 && k < c->partitions; k++)
		rc = mq_partition_build(tfd, k, c->place ? c->place[k] : NULL,
		    &c->roles);
	if (rc == 0 && syncfs(tfd) < 0)
		rc = mq_err_sys("sync");
	if (tfd >= 0)
		close(tfd);
	if (rc == 0) {
		char dst[MQ_NAME_MAX + 8];
		if (mq_path(dst, sizeof dst, "topics/%s", name) < 0)
			rc = -1;
		else if (mq_renameat(sp->fd, stage, sp->fd, dst) == 0)
			rc = mq_fsync_fd(sp->topics) < 0 ? -1 : 1;
		else if (mq_name_taken(sp->fd, dst, errno))
			rc = 0;
		else
			rc = mq_err_sys("create topic %s", name);
	}
	if (rc != 1)
		mq_topic_tree_remove(sp->fd, stage);
	else
		mq_journal_note(sp, 'T', "%s", name);
	/* In place: now it gets the groups of the wildcard subscriptions
	 * that match it (wildcard.c says why this order misses none). */
	if (rc == 1 && mq_wildcard_topic_created(sp, name) < 0)
		return -1;
	return rc;
}

int
mq_topic_open(mq_spool *sp, const char *name, int create, struct mq_topic *t)
{
	memset(t, 0, sizeof *t);
	t->fd = -1;
	if (mq_name_check("topic", name) < 0)
		return -1;
	t->sp = sp;
	for (int tries = 0; t->fd < 0; tries++) {
		t->fd = mq_openat(sp->topics, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (t->fd >= 0)
			break;
		if (errno != ENOENT || !create || tries > 3) {
			if (errno == ENOENT)
				return mq_err(EX_NOINPUT, "no topic '%s'", name);
			return mq_err_sys("topic %s", name);
		}
		if (mq_topic_create(sp, name, NULL) < 0)
			return -1;
	}
	struct mq_conf kv;
	if (mq_conf_read(t->fd, "topic.conf", &kv) < 0)
		goto fail;
	int rc = mq_topic_conf_parse(&kv, &t->conf);
	mq_conf_free(&kv);
	if (rc < 0)
		goto fail;
	t->name = strdup(name);
	t->pfd = malloc(t->conf.partitions * sizeof *t->pfd);
	if (!t->name || !t->pfd) {
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
	if (mq_topic_open(sp, name, 0, &t) < 0)
		return -1;
	*c = t.conf;
	mq_topic_close(&t);
	return 0;
}

int
mq_topic_delete(mq_spool *sp, const char *name)
{
	if (mq_name_check("topic", name) < 0)
		return -1;
	char src[MQ_NAME_MAX + 8], dst[64], rnd[17];
	mq_hex_random(rnd, 16);
	if (mq_path(src, sizeof src, "topics/%s", name) < 0 ||
	    mq_path(dst, sizeof dst, "tmp/trash.%s", rnd) < 0)
		return -1;
	if (mq_renameat(sp->fd, src, sp->fd, dst) < 0) {
		if (errno == ENOENT)
			return mq_err(EX_NOINPUT, "no topic '%s'", name);
		return mq_err_sys("delete topic %s", name);
	}
	mq_fsync_fd(sp->topics);
	sweep_spool_tmp(sp);
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

/* Counts the committed entries of a directory: seq below committed. */
static uint64_t
count_committed(int dirfd, const char *path, uint64_t committed)
{
	int fd = mq_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct mq_names l = { 0 };
	uint64_t n = 0, seq;
	if (mq_names_read(fd, NULL, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			if (mq_seq_of(l.v[i], &seq) == 0 && seq < committed)
				n++;
	mq_names_free(&l);
	close(fd);
	return n;
}

int
mq_topic_info(mq_spool *sp, const char *name, struct mq_topic_info *info)
{
	struct mq_topic t;
	memset(info, 0, sizeof *info);
	if (mq_topic_open(sp, name, 0, &t) < 0)
		return -1;
	struct mq_names groups = { 0 };
	unsigned np = t.conf.partitions;
	info->name = strdup(name);
	info->conf = t.conf;
	info->partitions = calloc(np, sizeof *info->partitions);
	if (!info->name || !info->partitions || mq_groups_read(&t, &groups) < 0)
		goto fail;
	info->groups = calloc(groups.n ? groups.n : 1, sizeof *info->groups);
	if (!info->groups)
		goto fail;
	for (unsigned k = 0; k < np; k++) {
		struct mq_head h;
		int hfd = mq_head_open(t.pfd[k], MQ_HEAD_READ);
		if (hfd < 0 || mq_head_read(hfd, &h) < 0) {
			if (hfd >= 0)
				close(hfd);
			goto fail;
		}
		close(hfd);
		info->partitions[k].committed = h.committed;
		char pk[32], target[4096];
		snprintf(pk, sizeof pk, "p%u", k);
		ssize_t tl = readlinkat(t.fd, pk, target, sizeof target - 1);
		if (tl > 0) {
			target[tl] = 0;
			if (!(info->partitions[k].place = strdup(target)))
				goto fail;
		}
		info->partitions[k].log_messages =
		    count_committed(t.pfd[k], "log", h.committed);
		info->partitions[k].log_bytes = mq_log_bytes(t.pfd[k],
		    h.committed);
		for (size_t i = 0; i < groups.n; i++) {
			char p[MQ_NAME_MAX + 16];
			snprintf(p, sizeof p, "g/%s/new", groups.v[i]);
			info->groups[i].pending +=
			    count_committed(t.pfd[k], p, h.committed);
			snprintf(p, sizeof p, "g/%s/cur", groups.v[i]);
			info->groups[i].inflight +=
			    count_committed(t.pfd[k], p, UINT64_MAX);
		}
	}
	for (size_t i = 0; i < groups.n; i++) {
		info->groups[i].name = groups.v[i];
		groups.v[i] = NULL;
	}
	info->ngroups = groups.n;
	for (size_t i = 0; i < groups.n; i++)
		if (mq_group_stat_fill(&t, &info->groups[i]) < 0)
			goto fail;
	mq_names_free(&groups);
	mq_topic_close(&t);
	return 0;
fail:
	mq_names_free(&groups);
	mq_topic_close(&t);
	mq_topic_info_free(info);
	return -1;
}

void
mq_topic_info_free(struct mq_topic_info *info)
{
	for (size_t i = 0; i < info->ngroups; i++)
		free(info->groups[i].name);
	free(info->groups);
	for (unsigned k = 0; info->partitions && k < info->conf.partitions; k++)
		free(info->partitions[k].place);
	free(info->partitions);
	free(info->name);
	memset(info, 0, sizeof *info);
}
