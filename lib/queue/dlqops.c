/*
 * dlqops.c: looking at dead letters, redriving and purging them.
 *
 * Redriving to the group is one rename, dlq/G/NAME to g/G/new/KEY (the
 * commit point; attempts start again): of two redrives at once, one
 * rename succeeds and the other finds nothing, so no message is redriven
 * twice.  Then the record goes.  Redriving to another topic first claims
 * the dead letter by renaming it to a dot name (the same rule decides who
 * redrives it), publishes a copy, then removes the dot name and the
 * record.  A crash in between leaves the dot name: any listing of the
 * group's dead letters an hour later renames it back, so a copy may be
 * published twice, but a dead letter is never lost.
 * Purging unlinks the dead letter (the commit point), then its record.
 * A record without its message, left by a crash in between, is removed
 * by any listing an hour later.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

static bool
is_dead(const char *name)
{
	struct mq_entry e;
	return mq_entry_parse(name, &e) == 0 && !e.claimed;
}

static void
record_parse(char *text, size_t len, struct mq_dead *d)
{
	char *body = strstr(text, "\n\n");
	size_t head = body ? (size_t)(body - text) + 1 : len;
	struct mq_conf kv;
	if (mq_conf_parse(text, head, "record", &kv) < 0)
		return;
	const char *v;
	d->reason = strdup((v = mq_conf_get(&kv, "reason")) ? v : "");
	d->detail = strdup((v = mq_conf_get(&kv, "detail")) ? v : "");
	d->time = strdup((v = mq_conf_get(&kv, "time")) ? v : "");
	d->status = (v = mq_conf_get(&kv, "status")) && *v ? atoi(v) : -1;
	struct timespec ts;
	if (d->time && mq_time_parse(d->time, &ts) == 0)
		d->when = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (body && (size_t)(body - text) + 2 < len) {
		d->tail_len = len - (size_t)(body - text) - 2;
		d->tail = malloc(d->tail_len + 1);
		if (d->tail) {
			memcpy(d->tail, body + 2, d->tail_len);
			d->tail[d->tail_len] = 0;
		}
	}
	mq_conf_free(&kv);
}

/* Crash leftovers, an hour old: a dead letter a redrive claimed and never
 * finished goes back to being a dead letter; a record whose message is
 * not there (dead-lettering failed, or a purge or redrive stopped half
 * way) is removed. */
static void
sweep_leftovers(int dfd)
{
	DIR *d = mq_dir_stream(dfd);
	if (!d)
		return;
	struct dirent *de;
	struct stat st;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);
		bool claim = !strncmp(n, ".redrive.", 9) && is_dead(n + 9);
		bool why = len > 4 && !strcmp(n + len - 4, ".why");
		if ((!claim && !why) ||
		    mq_fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    mq_now() - (double)st.st_ctime < MQ_STALE_TMP)
			continue;
		if (claim) {
			mq_renameat(dfd, n, dfd, n + 9);
		} else {
			char msg[MQ_KEY_LEN + 48];
			snprintf(msg, sizeof msg, "%.*s", (int)(len - 4), n);
			if (is_dead(msg) &&
			    mq_faccessat(dfd, msg, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
			    errno == ENOENT)
				mq_unlinkat(dfd, n, 0);
		}
	}
	closedir(d);
}

static int
list_one(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_dead **v, size_t *n, size_t *cap)
{
	char dir[MQ_NAME_MAX + 16];
	if (mq_path(dir, sizeof dir, "dlq/%s", group) < 0)
		return -1;
	int dfd = mq_openat(t->pfd[k], dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", dir);
	/* A read-only listing shows leftovers as they are. */
	if (!t->sp->readonly)
		sweep_leftovers(dfd);
	struct mq_names l = { 0 };
	int rc = mq_names_read(dfd, is_dead, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 32;
			struct mq_dead *nv = reallocarray(*v, *cap, sizeof **v);
			if (!nv) {
				rc = mq_err_sys("malloc");
				break;
			}
			*v = nv;
		}
		struct mq_dead *d = &(*v)[(*n)++];
		struct mq_entry e;
		memset(d, 0, sizeof *d);
		mq_entry_parse(l.v[i], &e);
		d->topic = strdup(t->name);
		d->group = strdup(group);
		d->name = strdup(l.v[i]);
		d->partition = k;
		d->status = -1;
		d->attempts = e.attempts;
		mq_seq_of(e.key, &d->seq);
		memcpy(d->id, e.key + MQ_SEQ_DIGITS + 1, MQ_ID_LEN);
		d->id[MQ_ID_LEN] = 0;
		char why[MQ_KEY_LEN + 48], *text;
		size_t len;
		/* A record may be missing (see dlq.c); one that cannot be
		 * read is an error. */
		if (mq_path(why, sizeof why, "%s.why", l.v[i]) == 0 &&
		    mq_read_at(dfd, why, 1 << 20, &text, &len) == 0) {
			record_parse(text, len, d);
			free(text);
		} else if (mq_errcode() != EX_NOINPUT) {
			rc = -1;
			break;
		}
		/* No record (or one without a time): the name's change time
		 * is when it became a dead letter. */
		struct stat st;
		if (d->when == 0 && mq_fstatat(dfd, l.v[i], &st,
		    AT_SYMLINK_NOFOLLOW) == 0)
			d->when = (double)st.st_ctim.tv_sec +
			    (double)st.st_ctim.tv_nsec / 1e9;
		if (!d->reason)
			d->reason = strdup("");
		if (!d->detail)
			d->detail = strdup("");
		if (!d->time)
			d->time = strdup("");
		if (!d->topic || !d->group || !d->name || !d->reason ||
		    !d->detail || !d->time)
			rc = mq_err_sys("malloc");
	}
	mq_names_free(&l);
	close(dfd);
	return rc;
}

int
mq_dlq_list(mq_spool *sp, const char *topic, const char *group,
    struct mq_dead **out, size_t *n)
{
	struct mq_topic t;
	struct mq_names groups = { 0 };
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (group && mq_name_check("group", group) < 0)
		return -1;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int rc = 0;
	if (group) {
		rc = mq_group_exists(sp, topic, group);
		if (rc == 0)
			rc = mq_err(EX_NOINPUT, "no group '%s' on topic '%s'",
			    group, topic);
		rc = rc < 0 ? -1 : mq_names_push(&groups, group, strlen(group));
	} else {
		rc = mq_groups_read(&t, &groups);
	}
	for (size_t g = 0; rc == 0 && g < groups.n; g++)
		for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++)
			rc = list_one(&t, k, groups.v[g], out, n, &cap);
	mq_names_free(&groups);
	mq_topic_close(&t);
	if (rc < 0) {
		mq_dead_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void
mq_dead_free(struct mq_dead *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].topic);
		free(v[i].group);
		free(v[i].name);
		free(v[i].reason);
		free(v[i].detail);
		free(v[i].time);
		free(v[i].tail);
	}
	free(v);
}

static int
dlq_dir(const struct mq_topic *t, const struct mq_dead *d)
{
	char dir[MQ_NAME_MAX + 16];
	if (mq_path(dir, sizeof dir, "dlq/%s", d->group) < 0)
		return -1;
	return mq_dir_open(t->pfd[d->partition], dir);
}

static void
drop_record(int dfd, const char *name)
{
	char why[MQ_KEY_LEN + 48];
	if (mq_path(why, sizeof why, "%s.why", name) == 0)
		mq_unlinkat(dfd, why, 0);
}

int
mq_dlq_read(mq_spool *sp, const struct mq_dead *d, struct mq_msg **out)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, d->topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int dfd = d->partition < t.conf.partitions ? dlq_dir(&t, d) :
	    mq_err(EX_NOINPUT, "no partition %u", d->partition);
	int rc = dfd < 0 ? -1 : mq_claim_read(&t, dfd, d->name, NULL, out);
	if (rc == 0)
		(*out)->attempts = d->attempts;
	if (dfd >= 0)
		close(dfd);
	mq_topic_close(&t);
	return rc;
}

/* Copies a dead letter's message to another topic, as a new message with
 * the same body, key and user headers. */
static int
copy_to(mq_spool *sp, const struct mq_topic *t, int dfd, const char *name,
    const char *key, const char *to)
{
	struct mq_msg *m;
	if (mq_claim_read(t, dfd, name, key, &m) < 0)
		return -1;
	/* A sealed body opens only in its own message (seal.c). */
	mq_pub *p = m->sealed ? NULL : mq_pub_open(sp, to, MQ_CREATE);
	int rc = p ? 0 : m->sealed ? mq_err(EX_DATAERR, "message %s of topic "
	    "%s is sealed: it can be redriven in place, not copied to %s",
	    m->id, t->name, to) : -1;
	if (rc == 0) {
		struct mq_pub_msg pm = { .key = m->key, .partition = -1,
		    .body = m->body, .len = m->len, .headers = m->headers,
		    .nheaders = m->nheaders };
		char id[1][MQ_ID_LEN + 1];
		rc = mq_pub_send(p, &pm, 1, MQ_SYNC_BATCH, id) == 1 ? 0 : -1;
		mq_pub_close(p);
	}
	mq_msg_free(m);
	return rc;
}

int
mq_dlq_redrive(mq_spool *sp, const struct mq_dead *d, const char *to_topic)
{
	struct mq_topic t;
	if (to_topic && mq_name_check("topic", to_topic) < 0)
		return -1;
	if (mq_topic_open_as(sp, d->topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	struct mq_gdirs g = { -1, -1, -1 };
	int dfd = -1, rc = 0;
	if (d->partition >= t.conf.partitions ||
	    (dfd = dlq_dir(&t, d)) < 0 ||
	    mq_gdirs_open(&t, d->partition, d->group, &g) < 0)
		rc = -1;
	struct mq_entry e;
	if (rc == 0 && mq_entry_parse(d->name, &e) < 0)
		rc = mq_err(EX_DATAERR, "bad dead letter name %s", d->name);
	if (rc == 0 && !to_topic) {
		/* Attempts start again: the name in new/ is the bare KEY. */
		if (mq_renameat(dfd, d->name, g.newfd, e.key) < 0)
			rc = errno == ENOENT ? 1 : mq_err_sys("redrive %s", d->id);
		else
			mq_journal_change(t.sp, t.name, 'R', d->partition, d->group,
			    d->name);
	} else if (rc == 0) {
		char claim[MQ_KEY_LEN + 48];
		snprintf(claim, sizeof claim, ".redrive.%s", d->name);
		if (mq_renameat(dfd, d->name, dfd, claim) < 0)
			rc = errno == ENOENT ? 1 : mq_err_sys("redrive %s", d->id);
		if (rc == 0 && copy_to(sp, &t, dfd, claim, d->name, to_topic) < 0) {
			/* Not copied: it stays a dead letter. */
			int code = mq_errcode();
			char msg[1024];
			snprintf(msg, sizeof msg, "%s", mq_errmsg());
			mq_renameat(dfd, claim, dfd, d->name);
			rc = mq_err(code, "%s", msg);
		}
		if (rc == 0) {
			mq_unlinkat(dfd, claim, 0);
			mq_journal_change(t.sp, t.name, 'X', d->partition, d->group,
			    d->name);
		}
	}
	if (rc == 0)
		drop_record(dfd, d->name);
	if (dfd >= 0)
		close(dfd);
	mq_gdirs_close(&g);
	mq_topic_close(&t);
	return rc;
}

int
mq_dlq_purge(mq_spool *sp, const struct mq_dead *d)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, d->topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int dfd = d->partition < t.conf.partitions ? dlq_dir(&t, d) : -1;
	int rc = dfd < 0 ? -1 : 0;
	if (rc == 0 && mq_remove_entry(dfd, d->name) < 0)
		rc = errno == ENOENT ? 1 : mq_err_sys("purge %s", d->id);
	if (rc == 0) {
		mq_journal_change(t.sp, t.name, 'X', d->partition, d->group,
		    d->name);
		drop_record(dfd, d->name);
	}
	if (dfd >= 0)
		close(dfd);
	mq_topic_close(&t);
	return rc;
}
