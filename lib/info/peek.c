/*
 * peek.c: pending messages read without claiming them (mq-stat --peek).
 *
 * A peek is a reader's: it opens directories, the head and message files
 * to read (a message O_NOATIME where it may), renames nothing and takes
 * no lock, so read permission is enough and a consumer never waits for
 * it.  What it shows may be claimed the moment after; a name claimed
 * while it looks is passed over.  A group's next messages are taken as
 * one consumer alone would take them (consume.c): in each partition the
 * sorted names of new/ below the head's committed, the partitions in
 * turn.  What a consumer would settle unseen (expired, unreadable) is
 * passed over too.
 *
 * Format 2: a partition's names in new/ below the group's cursor, then
 * the log's records from the cursor on, as a feed would take them (the
 * group's filter applied, a record not yet due passed over: it would wait
 * in delay/).  The cursor is read without its lock: a feed may move it
 * the moment after, as a consumer may claim a name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "info.h"

/* Reads path under partition k of t as the message of KEY seq.id (in
 * format 2 its record). */
static int
peek_read(const struct mq_topic *t, unsigned k, const char *path,
    uint64_t seq, const char *id, unsigned attempts, struct mq_msg **out)
{
	char key[MQ_KEY_LEN + 1];
	snprintf(key, sizeof key, "%0*llu.%.*s", MQ_SEQ_DIGITS,
	    (unsigned long long)seq, MQ_ID_LEN, id);
	/* Format 2: the record, whether a name stands for it (in new/, cur/
	 * or delay/, where it starts with its due time) or it is past the
	 * group's cursor. */
	int rc = t->conf.format == 2 ? mq_record_read(t, k, seq, key, out) : -1;
	/* A name that an upgrade left from format 1 holds its message's
	 * bytes, the only ones when retention removed its file before the
	 * upgrade (mq-spool(5), Upgrade). */
	if (t->conf.format != 2 || (rc < 0 && path &&
	    mq_errcode() == EX_DATAERR))
		rc = mq_claim_read(t, t->pfd[k], path, key, out);
	if (rc < 0)
		return -1;
	(*out)->attempts = attempts;
	return 0;
}

static bool
is_pending(const char *name)
{
	struct mq_entry e;
	return mq_entry_parse(name, &e) == 0 && !e.claimed;
}

/* A partition's pending names, those below committed (format 2: the
 * cursor), and in format 2 the records from there to the log's end. */
struct plist {
	struct mq_names names;
	size_t pos;
	uint64_t committed;
	uint64_t end;
};

static int
plist_read(const struct mq_topic *t, unsigned k, const char *group,
    struct plist *pl)
{
	char dir[MQ_NAME_MAX + 16];
	struct mq_head h;
	int hfd = mq_head_open(t->pfd[k], MQ_HEAD_READ);
	int rc = hfd < 0 ? -1 : mq_head_read(hfd, &h);
	if (hfd >= 0)
		close(hfd);
	if (rc < 0 || mq_path(dir, sizeof dir, "g/%s/new", group) < 0)
		return -1;
	pl->committed = pl->end = h.committed;
	if (t->conf.format == 2 &&
	    (mq_topic_log_end(t, k, h.committed, &pl->end) < 0 ||
	    mq_feed_cursor(t, k, group, pl->end, &pl->committed) < 0))
		return -1;
	return mq_names_read_at(t->pfd[k], dir, is_pending, &pl->names);
}

/* Format 2: the next record past the cursor that a feed would name in
 * new/: 1 with *out, 0 none left. */
static int
plist_next_record(const struct mq_topic *t, unsigned k, mq_filter *f,
    struct plist *pl, struct mq_msg **out)
{
	for (;; pl->committed++) {
		int r = mq_record_next(t, k, &pl->committed, pl->end, out);
		if (r <= 0)
			return r;
		if (!*out)
			continue;
		int fate = mq_feed_fate(f, *out, mq_now());
		if (fate == MQ_FATE_NEW) {
			pl->committed++;
			return 1;
		}
		mq_msg_free(*out);
		if (fate < 0)
			return -1;
	}
}

/* The next message of the partition: 1 with *out, 0 none left. */
static int
plist_next(const struct mq_topic *t, unsigned k, const char *group,
    mq_filter *f, struct plist *pl, struct mq_msg **out)
{
	while (pl->pos < pl->names.n) {
		const char *name = pl->names.v[pl->pos++];
		struct mq_entry e;
		uint64_t seq;
		char path[MQ_NAME_MAX + MQ_KEY_LEN + 64];
		if (mq_entry_parse(name, &e) < 0 || mq_seq_of(name, &seq) < 0)
			continue;
		if (seq >= pl->committed) {
			/* A publish (format 2: a feed) in progress. */
			pl->pos = pl->names.n;
			break;
		}
		if (mq_path(path, sizeof path, "g/%s/new/%s", group, name) < 0)
			return -1;
		if (peek_read(t, k, path, seq, e.key + MQ_SEQ_DIGITS + 1,
		    e.attempts, out) < 0) {
			/* Claimed meanwhile, or what a consumer would
			 * dead-letter unseen. */
			if (errno == ENOENT || mq_errcode() == EX_DATAERR)
				continue;
			return -1;
		}
		if ((*out)->expires > 0 && mq_now() > (*out)->expires) {
			mq_msg_free(*out);
			continue;
		}
		return 1;
	}
	return t->conf.format == 2 ? plist_next_record(t, k, f, pl, out) : 0;
}

int
mq_peek_group(mq_spool *sp, const char *topic, const char *group,
    size_t max, int (*fn)(void *, const struct mq_msg *), void *arg)
{
	struct mq_topic t;
	struct mq_conf kv;
	mq_filter *f = NULL;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT1 | MQ_FORMAT2, &t) < 0)
		return -1;
	if (mq_group_conf_read(&t, group, &kv) < 0) {
		mq_topic_close(&t);
		return -1;
	}
	int rc = t.conf.format == 2 ? mq_filter_from_conf(&kv, group, &f) : 0;
	mq_conf_free(&kv);
	unsigned np = t.conf.partitions;
	struct plist *pl = rc < 0 ? NULL : calloc(np, sizeof *pl);
	if (rc == 0 && !pl)
		rc = mq_err_sys("malloc");
	for (unsigned k = 0; rc == 0 && k < np; k++)
		rc = plist_read(&t, k, group, &pl[k]);
	size_t given = 0;
	for (bool more = true; rc == 0 && more && (!max || given < max);) {
		more = false;
		for (unsigned k = 0; rc == 0 && k < np && (!max ||
		    given < max); k++) {
			struct mq_msg *m;
			int r = plist_next(&t, k, group, f, &pl[k], &m);
			if (r <= 0) {
				rc = r;
				continue;
			}
			more = true;
			given++;
			rc = fn(arg, m);
			mq_msg_free(m);
		}
	}
	for (unsigned k = 0; pl && k < np; k++)
		mq_names_free(&pl[k].names);
	free(pl);
	mq_filter_free(f);
	mq_topic_close(&t);
	return rc < 0 ? -1 : rc > 0 ? rc : (int)given;
}

/* Held by a group to be settled: by a name, or in format 2 in the log
 * past its cursor or in a claim. */
static bool
waits(const struct mq_msg_where *w, const char *group)
{
	return (w->state == MQ_MSG_PENDING || w->state == MQ_MSG_INFLIGHT ||
	    w->state == MQ_MSG_DELAYED) &&
	    (w->path || (w->in && (!strcmp(w->in, "log") ||
	    !strcmp(w->in, "claims")))) &&
	    (!group || (w->group && !strcmp(w->group, group)));
}

int
mq_peek_id(mq_spool *sp, const char *topic, const char *group,
    const char *id, struct mq_msg **out)
{
	struct mq_msg_where *w;
	size_t n, i;
	if (mq_msg_locate(sp, topic, id, &w, &n) < 0)
		return -1;
	for (i = 0; i < n && !waits(&w[i], group); i++)
		;
	int rc;
	if (i == n) {
		for (i = 0; i < n - 1 && group && (!w[i].group ||
		    strcmp(w[i].group, group)); i++)
			;
		rc = mq_err(EX_NOINPUT, "message %.*s waits in no group%s%s: "
		    "%s%s%s %s", MQ_ID_LEN, id, group ? " " : "",
		    group ? group : "", w[i].topic, w[i].group ? "/" : "",
		    w[i].group ? w[i].group : "", mq_msg_state_name(w[i].state));
	} else {
		struct mq_topic t;
		rc = mq_topic_open_as(sp, w[i].topic, MQ_FORMAT1 | MQ_FORMAT2,
		    &t);
		if (rc == 0) {
			rc = peek_read(&t, w[i].partition, w[i].path, w[i].seq,
			    id, w[i].attempts, out);
			if (rc < 0 && errno == ENOENT)
				rc = mq_err(EX_NOINPUT, "message %.*s was settled "
				    "while it was read", MQ_ID_LEN, id);
			mq_topic_close(&t);
		}
	}
	mq_msg_where_free(w, n);
	return rc;
}
