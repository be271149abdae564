/*
 * group.c: subscriptions.
 *
 * A group exists when topics/<t>/groups/<g>.conf exists.  Subscribing
 * holds every partition's publish lock while it creates the group's
 * maildirs, records each partition's committed sequence as the group's
 * start, and links the conf into place (the commit point): a publisher
 * either finished before (its messages are older than start and never
 * reach the group) or starts after and sees the group.  Unsubscribing
 * unlinks the conf under the same locks (the commit point), then removes
 * the group's directories.
 *
 * --from-start backfills, after the commit, the log entries older than
 * start.  The conf says state=backfill until that is done; consumers finish
 * an interrupted backfill before they claim anything, so no message of the
 * group was consumed while a backfill links messages (links are
 * idempotent: EEXIST means already there).  The backfiller holds an OFD
 * lock on the conf it read and re-reads the state by path once it has the
 * lock, so two backfills never overlap.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

void
mq_group_conf_default(struct mq_group_conf *c)
{
	/* Every field, the filter and start positions too: callers pass
	 * uninitialised structs. */
	memset(c, 0, sizeof *c);
	c->from_start = 0;
	c->lease = MQ_LEASE_DEFAULT;
	c->max_attempts = MQ_MAX_ATTEMPTS_DEFAULT;
	c->session = MQ_SESSION_DEFAULT;
}

/* The settings consumers and receipts need, from a group's conf lines. */
int
mq_group_conf_parse(const struct mq_conf *kv, struct mq_group_conf *c)
{
	mq_group_conf_default(c);
	uint64_t max = c->max_attempts;
	int rc = mq_conf_get_double(kv, "lease", c->lease, &c->lease,
	    "group conf");
	if (rc == 0)
		rc = mq_conf_get_u64(kv, "max-attempts", c->max_attempts, &max,
		    "group conf");
	if (rc == 0 && max > 1000000)
		rc = mq_err(EX_CONFIG, "group conf: max-attempts out of range");
	c->max_attempts = (unsigned)max;
	const char *eo = mq_conf_get(kv, "exactly-once");
	c->exactly_once = eo && !strcmp(eo, "1");
	const char *fs = mq_conf_get(kv, "from-start");
	c->from_start = fs && !strcmp(fs, "1");
	/* A wildcard subscription passes it on to the groups it makes. */
	if (rc == 0)
		rc = mq_conf_get_double(kv, "from-time", 0, &c->from_time,
		    "group conf");
	const char *mode = mq_conf_get(kv, "mode");
	if (rc == 0 && mode && strcmp(mode, "ordered") && strcmp(mode, "shared"))
		rc = mq_err(EX_CONFIG, "group conf: mode must be shared or ordered");
	c->ordered = mode && !strcmp(mode, "ordered");
	if (rc == 0)
		rc = mq_conf_get_double(kv, "session", c->session, &c->session,
		    "group conf");
	if (rc == 0 && c->session <= 0)
		rc = mq_err(EX_CONFIG, "group conf: session must be more than 0");
	return rc;
}

int
mq_group_settings(const struct mq_topic *t, const char *group,
    struct mq_group_conf *c)
{
	struct mq_conf kv;
	mq_group_conf_default(c);
	if (mq_group_conf_read(t, group, &kv) < 0)
		return -1;
	int rc = mq_group_conf_parse(&kv, c);
	mq_conf_free(&kv);
	return rc;
}

static int
conf_path(const char *group, char *buf, size_t len)
{
	return mq_path(buf, len, "groups/%s.conf", group);
}

/* Checks both names, then opens the topic (a pattern is no topic). */
static int
open_for_group(mq_spool *sp, const char *topic, const char *group,
    struct mq_topic *t)
{
	if (mq_name_check("topic", topic) < 0 ||
	    mq_name_check("group", group) < 0)
		return -1;
	return mq_topic_open_as(sp, topic, MQ_FORMAT1 | MQ_FORMAT2, t);
}

int
mq_group_conf_read(const struct mq_topic *t, const char *group,
    struct mq_conf *kv)
{
	char p[MQ_NAME_MAX + 16];
	if (conf_path(group, p, sizeof p) < 0)
		return -1;
	if (mq_conf_read(t->fd, p, kv) < 0) {
		if (mq_errcode() == EX_NOINPUT)
			return mq_err(EX_NOINPUT, "no group '%s' on topic '%s'",
			    group, t->name);
		return -1;
	}
	return 0;
}

/* Checks what a subscription asks for against the topic. */
static int
conf_check(const struct mq_topic *t, const struct mq_group_conf *c)
{
	if (!t && c->nfrom_offset)
		return mq_err(EX_USAGE, "a wildcard subscription cannot start at "
		    "an offset");
	if (c->session <= 0)
		return mq_err(EX_USAGE, "the session timeout must be more than 0");
	for (size_t i = 0; i < c->nfrom_offset; i++)
		if (t && c->from_offset[i].partition >= t->conf.partitions)
			return mq_err(EX_USAGE, "topic '%s' has no partition %u "
			    "(it has %u)", t->name, c->from_offset[i].partition,
			    t->conf.partitions);
	for (size_t i = 0; i < c->nmatch; i++)
		if (strchr(c->match[i], '\n'))
			return mq_err(EX_USAGE, "a header condition is one line");
	return 0;
}

static bool
backfills(const struct mq_group_conf *c)
{
	return c->from_start || c->nfrom_offset || c->from_time > 0;
}

/* The conf's lines; see mq-spool(5), GROUPS.  from.p<k> is where the
 * backfill of partition k starts (start.p<k>: nothing to backfill).  A
 * wildcard subscription's conf has no topic (t NULL) and no positions; a
 * group it made in a topic names it (pattern). */
int
mq_group_conf_render(const struct mq_topic *t, const struct mq_group_conf *c,
    const uint64_t *start, const char *pattern, char **out)
{
	struct mq_conf kv = { 0 };
	if (conf_check(t, c) < 0)
		return -1;
	int rc = mq_conf_addf(&kv, "created", "%.3f", mq_now());
	if (rc == 0 && pattern)
		rc = mq_conf_add(&kv, "pattern", pattern);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "mode", "%s", c->ordered ? "ordered" :
		    "shared");
	if (rc == 0 && (c->ordered || c->session != MQ_SESSION_DEFAULT))
		rc = mq_conf_addf(&kv, "session", "%g", c->session);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "from-start", "%d", c->from_start ? 1 : 0);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "lease", "%g", c->lease);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "max-attempts", "%u", c->max_attempts);
	if (rc == 0)
		rc = mq_conf_addf(&kv, "exactly-once", "%d",
		    c->exactly_once ? 1 : 0);
	if (rc == 0 && c->filter) {
		char *esc = mq_conf_escape(c->filter);
		rc = esc ? mq_conf_add(&kv, "filter", esc) : -1;
		free(esc);
	}
	for (size_t i = 0; rc == 0 && i < c->nmatch; i++)
		rc = mq_conf_add(&kv, "match", c->match[i]);
	if (rc == 0 && c->from_time > 0)
		rc = mq_conf_addf(&kv, "from-time", "%.6f", c->from_time);
	if (rc == 0 && t)
		rc = mq_conf_add(&kv, "state", backfills(c) ? "backfill" :
		    "ready");
	for (unsigned k = 0; rc == 0 && t && k < t->conf.partitions; k++) {
		char key[32];
		uint64_t from = c->from_start || c->from_time > 0 ? 0 : start[k];
		for (size_t i = 0; i < c->nfrom_offset; i++)
			if (c->from_offset[i].partition == k)
				from = c->from_offset[i].offset < start[k] ?
				    c->from_offset[i].offset : start[k];
		snprintf(key, sizeof key, "start.p%u", k);
		rc = mq_conf_addf(&kv, key, "%" PRIu64, start[k]);
		snprintf(key, sizeof key, "from.p%u", k);
		if (rc == 0 && from < start[k])
			rc = mq_conf_addf(&kv, key, "%" PRIu64, from);
	}
	if (rc == 0)
		rc = mq_conf_render(&kv, out);
	mq_conf_free(&kv);
	return rc;
}

/* Makes the group's directories in partition k, with the ACLs of the
 * topic's roles; an ordered group also gets its ownership token, free
 * (see ordered.c). */
int
mq_group_dirs_make(const struct mq_topic *t, unsigned k, const char *group,
    int ordered)
{
	static const struct mq_dir_spec sub[] = {
		{ "", MQ_DIR_GROUP }, { "tmp", MQ_DIR_GROUP },
		{ "new", MQ_DIR_QUEUE }, { "cur", MQ_DIR_GROUP },
		{ "delay", MQ_DIR_QUEUE }, { "claims", MQ_DIR_GROUP },
	};
	/* Claims are format 2's, for groups that are not ordered. */
	size_t nsub = sizeof sub / sizeof *sub - (t->conf.format != 2 || ordered);
	char p[MQ_NAME_MAX + 16];
	/* Trees without a conf are leftovers of an unfinished unsubscribe:
	 * a new group of the same name starts empty. */
	if (mq_path(p, sizeof p, "dlq/%s", group) < 0 ||
	    mq_rmtree(t->pfd[k], p) < 0 ||
	    mq_path(p, sizeof p, "g/%s", group) < 0 ||
	    mq_rmtree(t->pfd[k], p) < 0 || mq_perm_mkdirs(t->pfd[k], p, sub,
	    nsub, &t->conf.roles) < 0)
		return -1;
	if (ordered && mq_owner_init(t, k, group) < 0)
		return -1;
	/* Format 2: the cursor, unset (so that a consumer needs no inode
	 * to start), and claims/ its spares (claims.c). */
	int fd = t->conf.format == 2 ? mq_cursor_open(t, k, group, O_RDWR |
	    O_CREAT) : -2;
	if (fd >= 0)
		close(fd);
	if (fd != -1 && nsub == sizeof sub / sizeof *sub)
		fd = mq_claims_open(t, k, group, 1);
	if (fd == -1)
		return -1;
	if (fd >= 0)
		close(fd);
	return mq_fsync_at(t->pfd[k], "g");
}

static int
subscribe_locked(const struct mq_topic *t, const char *group,
    const struct mq_group_conf *c, const char *pattern, int *hfds)
{
	char p[MQ_NAME_MAX + 16];
	if (conf_path(group, p, sizeof p) < 0)
		return -1;
	if (mq_faccessat(t->fd, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (conf_check(t, c) < 0)
		return -1;
	unsigned np = t->conf.partitions;
	uint64_t *start = calloc(np, sizeof *start);
	if (!start)
		return mq_err_sys("malloc");
	int rc = 0;
	for (unsigned k = 0; rc == 0 && k < np; k++) {
		struct mq_head h;
		rc = mq_head_read(hfds[k], &h);
		start[k] = h.committed;
		/* Format 2: the head is a hint; the log's end is the start
		 * (the group's cursor starts there, feed.c). */
		if (t->conf.format == 2 && rc == 0)
			rc = mq_topic_log_end(t, k, h.committed, &start[k]);
		if (rc == 0)
			rc = mq_group_dirs_make(t, k, group, c->ordered);
	}
	char *text = NULL;
	if (rc == 0)
		rc = mq_group_conf_render(t, c, start, pattern, &text);
	if (rc == 0) {
		rc = mq_write_file(t->fd, p, text, strlen(text), 1, 0);
		rc = rc < 0 ? -1 : rc == 1 ? 0 : 1;
	}
	if (rc == 1 && mq_fsync_at(t->fd, "groups") < 0)
		rc = -1;
	free(text);
	free(start);
	return rc;
}

/* Subscribes; a group made for a wildcard subscription names it. */
int
mq_group_subscribe_as(mq_spool *sp, const char *topic, const char *group,
    const struct mq_group_conf *c, const char *pattern)
{
	struct mq_topic t;
	unsigned now;
again:
	if (open_for_group(sp, topic, group, &t) < 0)
		return -1;
	/* A backfill links the log's messages, which the kernel allows
	 * only to those who may write them (fs.protected_hardlinks): with
	 * roles, administrators and publishers, not consumers.  Refused
	 * before the group is made, rather than left half filled. */
	if (backfills(c) && mq_roles_any(&t.conf.roles) &&
	    mq_faccessat(t.pfd[0], "log", W_OK, AT_EACCESS) < 0) {
		mq_topic_close(&t);
		return mq_err(EX_NOPERM, "a group that starts before now is "
		    "made by an administrator of the topic: a consumer may not "
		    "link its messages");
	}
	int *hfds = calloc(t.conf.partitions, sizeof *hfds);
	int rc = hfds ? mq_lock_all(&t, hfds) : mq_err_sys("malloc");
	/* An alter that committed before we had the locks: the group needs
	 * directories in the new partitions too (see alter.c). */
	if (rc == 0 && (rc = mq_topic_partitions_now(&t, &now)) == 0 &&
	    now != t.conf.partitions) {
		mq_unlock_all(&t, hfds);
		free(hfds);
		mq_topic_close(&t);
		goto again;
	}
	/* Under the locks a key is added under (sealkeys.c). */
	if (rc == 0)
		rc = mq_seal_filter_check(&t, group, c);
	if (rc == 0) {
		rc = subscribe_locked(&t, group, c, pattern, hfds);
		mq_unlock_all(&t, hfds);
	} else if (hfds) {
		mq_unlock_all(&t, hfds);
	}
	if (rc == 1)
		mq_journal_note(sp, 'T', "%s", t.name);
	if (rc == 1 && backfills(c) && mq_group_backfill(&t, group) < 0)
		rc = -1;
	free(hfds);
	mq_topic_close(&t);
	return rc;
}

/* Links every committed log entry older than the group's start into its
 * new/.  See the comment at the top for why this cannot re-deliver. */
static int
backfill_partition(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t from, uint64_t start, double from_time, mq_filter *f)
{
	char p[MQ_NAME_MAX + 16];
	if (mq_path(p, sizeof p, "g/%s/new", group) < 0)
		return -1;
	int nfd = mq_dir_open(t->pfd[k], p);
	int lfd = nfd < 0 ? -1 : mq_dir_open(t->pfd[k], "log");
	struct mq_names l = { 0 };
	struct mq_jbuf jb = { 0 };
	int rc = lfd < 0 ? -1 : mq_names_read(lfd, mq_is_key, &l);
	uint64_t seq;
	bool reached = from_time <= 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		if (mq_seq_of(l.v[i], &seq) < 0 || seq < from || seq >= start)
			continue;
		/* From the first message published at or after from_time on,
		 * as an offset would: ids carry the publisher's clock. */
		if (!reached && mq_key_time(l.v[i]) < from_time)
			continue;
		reached = true;
		/* A filtered group gets what the publisher would have given
		 * it; a message that cannot be read is linked (its consumer
		 * dead-letters it as unreadable). */
		struct mq_msg *m;
		if (f && mq_claim_read(t, lfd, l.v[i], NULL, &m) == 0) {
			int match = mq_filter_match(f, m);
			mq_msg_free(m);
			if (match < 0)
				rc = -1;
			if (match <= 0)
				continue;
		}
		/* A link made by a run cut short is journaled again.  A
		 * directory, which cannot be linked (EPERM), is no message. */
		struct stat st;
		if (mq_linkat(lfd, l.v[i], nfd, l.v[i], 0) == 0 ||
		    mq_name_taken(nfd, l.v[i], errno))
			mq_journal_change_add(&jb, t->name, 'L', k, group, l.v[i]);
		else if (errno != ENOENT && !(errno == EPERM &&
		    mq_fstatat(lfd, l.v[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)))
			rc = mq_err_sys("backfill %s", l.v[i]);
	}
	if (rc == 0 && syncfs(nfd) < 0)
		rc = mq_err_sys("sync");
	/* After the links are durable, all at once (best effort, as every
	 * change record). */
	if (rc == 0)
		mq_journal_write(t->sp, &jb, NULL);
	mq_jbuf_free(&jb);
	mq_names_free(&l);
	if (lfd >= 0)
		close(lfd);
	if (nfd >= 0)
		close(nfd);
	return rc;
}

int
mq_group_backfill(const struct mq_topic *t, const char *group)
{
	char p[MQ_NAME_MAX + 16];
	if (conf_path(group, p, sizeof p) < 0)
		return -1;
	int fd = mq_file_open(t->fd, p, O_RDWR, 0, NULL);
	if (fd < 0)
		return mq_errcode() == EX_DATAERR ? -1 :
		    mq_err_sys("group %s", group);
	int rc = mq_lock_take(fd, MQ_LOCK_WRITE, 1, p) < 0 ? -1 : 0;
	struct mq_conf kv = { 0 };
	if (rc == 0)
		rc = mq_group_conf_read(t, group, &kv);
	const char *state = rc == 0 ? mq_conf_get(&kv, "state") : NULL;
	mq_filter *f = NULL;
	if (rc == 0 && state && !strcmp(state, "backfill"))
		rc = mq_filter_from_conf(&kv, p, &f);
	if (rc == 0 && state && !strcmp(state, "backfill")) {
		for (unsigned k = 0; rc == 0 && k < t->conf.partitions; k++) {
			char key[32];
			uint64_t start, from;
			double from_time;
			snprintf(key, sizeof key, "start.p%u", k);
			rc = mq_conf_get_u64(&kv, key, 0, &start, p);
			snprintf(key, sizeof key, "from.p%u", k);
			if (rc == 0)
				rc = mq_conf_get_u64(&kv, key, start, &from, p);
			if (rc == 0)
				rc = mq_conf_get_double(&kv, "from-time", 0,
				    &from_time, p);
			if (rc == 0)
				rc = backfill_partition(t, k, group, from, start,
				    from_time, f);
		}
		char *text = NULL;
		if (rc == 0)
			rc = mq_conf_set(&kv, "state", "ready");
		if (rc == 0)
			rc = mq_conf_render(&kv, &text);
		if (rc == 0)
			rc = mq_write_file(t->fd, p, text, strlen(text), 1, 1);
		free(text);
	}
	mq_filter_free(f);
	mq_conf_free(&kv);
	close(fd);
	return rc;
}

int
mq_group_topic_unsubscribe(mq_spool *sp, const char *topic, const char *group)
{
	struct mq_topic t;
	if (open_for_group(sp, topic, group, &t) < 0)
		return -1;
	char p[MQ_NAME_MAX + 16];
	int *hfds = calloc(t.conf.partitions, sizeof *hfds);
	int rc = hfds ? mq_lock_all(&t, hfds) : mq_err_sys("malloc");
	if (rc == 0) {
		rc = conf_path(group, p, sizeof p);
		if (rc == 0 && mq_unlinkat(t.fd, p, 0) < 0)
			rc = errno == ENOENT ? mq_err(EX_NOINPUT,
			    "no group '%s' on topic '%s'", group, topic) :
			    mq_err_sys("unsubscribe %s", group);
		if (rc == 0)
			rc = mq_fsync_at(t.fd, "groups");
		mq_unlock_all(&t, hfds);
	}
	if (rc == 0)
		mq_journal_note(sp, 'U', "%s %s", t.name, group);
	if (rc == 0 && mq_path(p, sizeof p, "groups/%s.members", group) == 0)
		mq_rmtree(t.fd, p);
	if (rc == 0 && mq_path(p, sizeof p, "groups/%s.stats", group) == 0)
		mq_rmtree(t.fd, p);
	for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++) {
		if (mq_path(p, sizeof p, "g/%s", group) < 0 ||
		    mq_rmtree(t.pfd[k], p) < 0 ||
		    mq_path(p, sizeof p, "dlq/%s", group) < 0 ||
		    mq_rmtree(t.pfd[k], p) < 0)
			rc = -1;
	}
	free(hfds);
	mq_topic_close(&t);
	return rc;
}

int
mq_group_topic_exists(mq_spool *sp, const char *topic, const char *group)
{
	struct mq_topic t;
	if (open_for_group(sp, topic, group, &t) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	char p[MQ_NAME_MAX + 16];
	int rc = conf_path(group, p, sizeof p);
	if (rc == 0)
		rc = mq_faccessat(t.fd, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	mq_topic_close(&t);
	return rc;
}

int
mq_group_conf_adoptable(const char *text, size_t len, const char *path,
    const char *where, struct mq_conf *kv, struct mq_group_conf *c)
{
	if (mq_conf_parse(text, len, path, kv) < 0)
		return -1;
	int rc = mq_group_conf_parse(kv, c);
	/* A filter that does not compile would stop every publish into
	 * the topics the group is in (78): not adopted. */
	if (rc == 0 && mq_filter_conf_check(kv, path) < 0) {
		char why[1024];
		snprintf(why, sizeof why, "%s", mq_errmsg());
		rc = mq_err(EX_DATAERR, "%s: %s", where, why);
	}
	if (rc < 0)
		mq_conf_free(kv);
	return rc;
}

/* A group as a replication peer has it (replrecv.c): its directories in
 * every partition and its configuration as sent, but ready: the peer's
 * backfill arrives as its own records.  Nothing is journaled here. */
int
mq_group_adopt(mq_spool *sp, const char *topic, const char *group,
    const char *text, size_t len)
{
	struct mq_conf kv;
	struct mq_group_conf c;
	char path[MQ_NAME_MAX + 16], where[MQ_NAME_MAX + 8], *out = NULL;
	snprintf(where, sizeof where, "topic %s", topic);
	if (conf_path(group, path, sizeof path) < 0 ||
	    mq_group_conf_adoptable(text, len, path, where, &kv, &c) < 0)
		return -1;
	int rc = mq_conf_get(&kv, "state") ? mq_conf_set(&kv, "state",
	    "ready") : 0;
	if (rc == 0)
		rc = mq_conf_render(&kv, &out);
	mq_conf_free(&kv);
	struct mq_topic t;
	if (rc < 0 || open_for_group(sp, topic, group, &t) < 0) {
		free(out);
		return -1;
	}
	int *hfds = calloc(t.conf.partitions, sizeof *hfds);
	rc = hfds ? mq_lock_all(&t, hfds) : mq_err_sys("malloc");
	if (rc == 0 && mq_faccessat(t.fd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++)
			rc = mq_group_dirs_make(&t, k, group, c.ordered);
		if (rc == 0)
			rc = mq_write_file(t.fd, path, out, strlen(out), 1, 0) < 0 ?
			    -1 : 0;
		if (rc == 0)
			rc = mq_fsync_at(t.fd, "groups");
	}
	if (hfds)
		mq_unlock_all(&t, hfds);
	free(hfds);
	free(out);
	mq_topic_close(&t);
	return rc;
}
