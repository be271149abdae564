/*
 * create.c: creating and deleting topics.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

static int
conf_check(const struct mq_topic_conf *c)
{
	if (c->partitions < 1 || c->partitions > MQ_PARTITIONS_MAX)
		return mq_err(EX_USAGE, "partitions must be 1 to %d",
		    MQ_PARTITIONS_MAX);
	if (c->format > 2)
		return mq_err(EX_USAGE, "format must be 1 or 2");
	if (c->max_message_size < 1 || c->max_message_size > MQ_MESSAGE_MAX_LIMIT)
		return mq_err(EX_USAGE, "max message size must be 1 to %d bytes",
		    MQ_MESSAGE_MAX_LIMIT);
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
	/* Absent, it is 1: a spool written before format 2 reads the same. */
	if (rc == 0 && c->format == 2)
		rc = mq_conf_add(&kv, "format", "2");
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
	/* Where locks stay within one mount (sshfs), a group's feed of
	 * format 2, taken under its cursor's lock, could be taken by two
	 * hosts at once: format 1 there, whose claims are renames. */
	struct mq_topic_conf one;
	if (c->format == 2 && mq_format2_refused(sp->topics, name) < 0) {
		if (c->format_asked)
			return -1;
		one = *c;
		one.format = 1;
		c = &one;
	}
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
		    &c->roles, c->format);
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
	mq_journal_note(sp, 'Z', "%s", name);
	sweep_spool_tmp(sp);
	return 0;
}

int
mq_format2_refused(int fd, const char *topic)
{
	if (!mq_fs_locks_local(fd))
		return 0;
	return mq_err(EX_UNAVAILABLE, "topic %s: format 2 is not made where "
	    "locks stay within one mount (sshfs): its groups' consumers would "
	    "take messages twice from two hosts; use format 1", topic);
}

int
mq_topic_open_or_create(mq_spool *sp, const char *name, int create,
    struct mq_topic *t)
{
	/* Another process may delete it between the create and the open. */
	int formats = create & (MQ_FORMAT1 | MQ_FORMAT2);
	create &= MQ_CREATE;
	for (int tries = 0;; tries++) {
		if (mq_topic_open_as(sp, name, formats ? formats : MQ_FORMAT1,
		    t) == 0)
			return 0;
		if (!create || mq_errcode() != EX_NOINPUT || tries > 3 ||
		    mq_topic_create(sp, name, NULL) < 0)
			return -1;
	}
}
