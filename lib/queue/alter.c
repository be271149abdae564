/*
 * alter.c: growing a topic, changing its signers, and taking a
 * replication peer's settings.
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

#include "queue.h"

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
	if (mq_partitions_remove_from(t->fd, old) < 0 ||
	    mq_places_check(place, old, n) < 0)
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
		rc = mq_partition_build(t->fd, k, dir, &t->conf.roles,
		    t->conf.format);
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
		if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
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

static int
set_signers(struct mq_conf *kv, const void *text)
{
	mq_conf_del(kv, "signer");
	return text ? mq_signers_add(kv, text) : 0;
}

int
mq_topic_alter_signers(mq_spool *sp, const char *topic, const char *text)
{
	struct mq_conf check = { 0 };
	struct mq_topic t;
	if (mq_name_check("topic", topic) < 0)
		return -1;
	/* Bad input changes nothing: checked before the topic is touched. */
	int rc = text ? mq_signers_add(&check, text) : 0;
	mq_conf_free(&check);
	if (rc < 0 || mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int *hfds = calloc(t.conf.partitions, sizeof *hfds);
	rc = hfds ? mq_lock_all(&t, hfds) : mq_err_sys("malloc");
	if (rc == 0) {
		rc = mq_topic_conf_edit(&t, set_signers, text);
		mq_unlock_all(&t, hfds);
	}
	if (rc == 0)
		mq_journal_note(sp, 'T', "%s", topic);
	free(hfds);
	mq_topic_close(&t);
	return rc;
}

/* The signer lines of kv as mq_signers_add takes them (NULL: none). */
static int
signers_text(const struct mq_conf *kv, char **out)
{
	size_t len = 1;
	*out = NULL;
	for (size_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->keys[i], "signer"))
			len += strlen(kv->vals[i]) + 1;
	if (len == 1)
		return 0;
	char *text = malloc(len), *o = text;
	if (!text)
		return mq_err_sys("malloc");
	for (size_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->keys[i], "signer"))
			o += sprintf(o, "%s\n", kv->vals[i]);
	*out = text;
	return 0;
}

int
mq_signers_adopt(mq_spool *sp, const char *topic, const struct mq_conf *kv,
    bool create, const struct mq_topic_conf *c)
{
	char *want, *have = NULL;
	struct mq_conf now;
	if (signers_text(kv, &want) < 0)
		return -1;
	int rc = 0;
	if (create) {
		struct mq_topic_conf nc = *c;
		nc.signers = want;
		rc = mq_topic_create(sp, topic, &nc) < 0 ? -1 : 1;
	} else {
		struct mq_topic t;
		rc = mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t);
		if (rc == 0) {
			rc = mq_conf_read(t.fd, "topic.conf", &now);
			mq_topic_close(&t);
		}
		if (rc == 0) {
			rc = signers_text(&now, &have);
			mq_conf_free(&now);
		}
		if (rc == 0 && (!want != !have || (want && strcmp(want, have))))
			rc = mq_topic_alter_signers(sp, topic, want) < 0 ? -1 : 1;
	}
	free(want);
	free(have);
	return rc;
}

/* What a replica takes of its peer's topic.conf whenever it differs; the
 * partitions grow by alter and the signers come by mq_signers_adopt,
 * while the roles and placements are this host's own. */
static const char *const peer_settings[] = { "max-message-size",
    "retention", "ttl", "expired", "dedup-window" };

static bool
settings_differ(const struct mq_conf *a, const struct mq_conf *b)
{
	for (size_t i = 0; i < sizeof peer_settings / sizeof *peer_settings;
	    i++) {
		const char *x = mq_conf_get(a, peer_settings[i]),
		    *y = mq_conf_get(b, peer_settings[i]);
		if (!x != !y || (x && strcmp(x, y)))
			return true;
	}
	return false;
}

static int
set_settings(struct mq_conf *kv, const void *ctx)
{
	const struct mq_conf *peer = ctx;
	int rc = 0;
	for (size_t i = 0; rc == 0 &&
	    i < sizeof peer_settings / sizeof *peer_settings; i++) {
		const char *k = peer_settings[i], *v = mq_conf_get(peer, k);
		if (!v)
			mq_conf_del(kv, k);
		else
			rc = mq_conf_get(kv, k) ? mq_conf_set(kv, k, v) :
			    mq_conf_add(kv, k, v);
	}
	return rc;
}

int
mq_topic_settings_adopt(mq_spool *sp, const char *topic,
    const struct mq_conf *kv)
{
	struct mq_topic t;
	struct mq_conf now;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int rc = mq_conf_read(t.fd, "topic.conf", &now);
	bool differ = rc == 0 && settings_differ(&now, kv);
	if (rc == 0)
		mq_conf_free(&now);
	/* Under the locks alter and subscribe take: no edit of topic.conf
	 * is lost to another. */
	int *hfds = differ ? calloc(t.conf.partitions, sizeof *hfds) : NULL;
	if (differ && !hfds)
		rc = mq_err_sys("malloc");
	else if (differ && (rc = mq_lock_all(&t, hfds)) == 0) {
		rc = mq_topic_conf_edit(&t, set_settings, kv);
		mq_unlock_all(&t, hfds);
	}
	free(hfds);
	mq_topic_close(&t);
	return rc < 0 ? -1 : differ;
}
