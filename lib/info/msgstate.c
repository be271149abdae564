/*
 * msgstate.c: where a message is, group by group (mq-stat --message).
 *
 * Only names are read, plus a dead letter's record and the header block
 * of a pending or delayed message (for its Mq-Expires); nothing is locked
 * or changed.  A message is found by its id, the last 32 characters of
 * its KEY, in each partition's log/; its state in a group is the
 * directory of the group that holds a name with that KEY.  When the
 * log name's link count is 1 no group holds it, and no directory is
 * listed.  Retention removes log names that groups may still hold, so a
 * topic with a retention also has its groups' directories searched when
 * the log has no such name.
 *
 * A group that holds no name of the message was never given it, or had
 * it and settled it; which, is told from what never changes or only
 * grows: the group's configuration (its start positions and its filter,
 * fixed when it was subscribed, see mq-spool(5), START POSITIONS and
 * Filters), the message file itself (through the log name or a name
 * another group holds) and the journal, which keeps the A record of
 * every message that left a group as done.  In order:
 *  - below the group's start and outside its backfill: before-start;
 *  - its filter does not match the message: filtered (the backfill
 *    applies the same filter as the publisher);
 *  - within the backfill of a group whose backfill is unfinished:
 *    pending, yet to be linked (nothing is consumed before it is done);
 *  - in a topic that drops expired messages, past its Mq-Expires, with
 *    an A record at or after that time: expired (dropped when claimed,
 *    or, what no record tells apart, settled after it expired by a
 *    consumer that had claimed it before);
 *  - else acked.
 * A message file that cannot be read leaves the filter and expiry
 * unknown, and the message acked.
 *
 * Each directory is listed once and the listings are not atomic
 * together: a message given back (cur/ to new/) between the listing of
 * new/ and that of cur/ is in neither, and is reported acked.
 *
 * Format 2: a group's names are searched as in format 1; the log is
 * searched by id, record by record, only when no group holds a name of
 * it (there is no index of ids: O(messages) then).  A group that holds no
 * name of a record at or past its cursor has not been fed it: pending,
 * delayed, expired or filtered as a feed would make it; below its cursor
 * it is told from what never changes, as in format 1.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "info.h"

#define ID_AT (MQ_SEQ_DIGITS + 1)                /* in a KEY */
#define PATH_LEN (MQ_NAME_MAX + MQ_KEY_LEN + 96) /* dir/name under p<k> */

static const char *const states[] = {
	[MQ_MSG_PENDING] = "pending",
	[MQ_MSG_INFLIGHT] = "in-flight",
	[MQ_MSG_DELAYED] = "delayed",
	[MQ_MSG_DEAD] = "dead",
	[MQ_MSG_EXPIRED] = "expired",
	[MQ_MSG_ACKED] = "acked",
	[MQ_MSG_FILTERED] = "filtered",
	[MQ_MSG_BEFORE] = "before-start",
	[MQ_MSG_NOGROUP] = "no-group",
};

const char *
mq_msg_state_name(enum mq_msg_state s)
{
	return (size_t)s < sizeof states / sizeof states[0] ? states[s] : "?";
}

/* The first name in dir (a path under pfd, which may be missing) whose id,
 * at offset off, is id and that keep() accepts: 1 with it in out, 0 none. */
static int
scan(int pfd, const char *dir, const char *id, size_t off,
    bool (*keep)(const char *), char *out, size_t len)
{
	int fd = mq_openat(pfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", dir);
	DIR *d = mq_dir_stream(fd);
	if (!d) {
		close(fd);
		return mq_err_sys("%s", dir);
	}
	struct dirent *de;
	int found = 0;
	while (!found && (de = readdir(d)))
		if (strlen(de->d_name) >= off + MQ_ID_LEN &&
		    !memcmp(de->d_name + off, id, MQ_ID_LEN) &&
		    keep(de->d_name) &&
		    mq_path(out, len, "%s", de->d_name) == 0)
			found = 1;
	closedir(d);
	return found;
}

static bool
is_waiting(const char *name)                    /* new/ and dlq/ */
{
	struct mq_entry e;
	return mq_entry_parse(name, &e) == 0 && !e.claimed;
}

static bool
is_claim(const char *name)
{
	struct mq_entry e;
	return mq_entry_parse(name, &e) == 0 && e.claimed;
}

static bool
is_delayed(const char *name)
{
	struct mq_entry e;
	uint64_t due;
	return mq_delay_parse(name, &due, &e) == 0;
}

static double
parse_time(const char *s)
{
	struct timespec ts;
	return s && mq_time_parse(s, &ts) == 0 ?
	    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 : 0;
}

/* The Mq-Expires of a message file, 0 if it has none or cannot be read. */
static double
expires_of(int dirfd, const char *name)
{
	int fd = mq_file_open(dirfd, name, O_RDONLY, 0, NULL);
	if (fd < 0)
		return 0;
	char *buf = malloc(MQ_HEADER_BLOCK_MAX + 1);
	ssize_t n = buf ? pread(fd, buf, MQ_HEADER_BLOCK_MAX, 0) : -1;
	close(fd);
	double t = 0;
	if (n > 0) {
		buf[n] = 0;
		char *end = strstr(buf, "\n\n");
		if (end)
			end[1] = 0;
		for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 :
		    NULL)
			if (!strncasecmp(l, "Mq-Expires:", 11)) {
				char v[64];
				const char *p = l + 11;
				while (*p == ' ' || *p == '\t')
					p++;
				size_t vl = strcspn(p, "\n");
				if (vl < sizeof v) {
					memcpy(v, p, vl);
					v[vl] = 0;
					t = parse_time(v);
				}
				break;
			}
	}
	free(buf);
	return t;
}

/* The reason, detail and time of a dead letter's record. */
static int
record_read(int dfd, const char *name, struct mq_msg_where *w)
{
	char path[MQ_KEY_LEN + 48], *text;
	size_t len;
	struct mq_conf kv;
	if (mq_path(path, sizeof path, "%s.why", name) < 0)
		return -1;
	if (mq_read_at(dfd, path, 1 << 20, &text, &len) == 0) {
		char *body = strstr(text, "\n\n");
		if (mq_conf_parse(text, body ? (size_t)(body - text) + 1 : len,
		    "record", &kv) == 0) {
			const char *v;
			if ((v = mq_conf_get(&kv, "reason")))
				w->reason = strdup(v);
			if ((v = mq_conf_get(&kv, "detail")))
				w->detail = strdup(v);
			w->died = parse_time(mq_conf_get(&kv, "time"));
			mq_conf_free(&kv);
		}
		free(text);
	}
	if (!w->reason)
		w->reason = strdup("");
	if (!w->detail)
		w->detail = strdup("");
	return w->reason && w->detail ? 0 : mq_err_sys("malloc");
}

/* The state of the message in one group of partition k: 1 found (key
 * set from its name, path to the name), 0 not there, -1 error. */
static int
group_state(const struct mq_topic *t, unsigned k, const char *group,
    const char *id, struct mq_msg_where *w, char key[MQ_KEY_LEN + 1],
    char path[PATH_LEN])
{
	static const struct {
		const char *dir, *in;
		size_t off;
		bool (*keep)(const char *);
		enum mq_msg_state state;
	} where[] = {
		{ "g/%s/new", "new", ID_AT, is_waiting, MQ_MSG_PENDING },
		{ "g/%s/cur", "cur", ID_AT, is_claim, MQ_MSG_INFLIGHT },
		{ "g/%s/delay", "delay", MQ_SEQ_DIGITS + 1 + ID_AT, is_delayed,
		  MQ_MSG_DELAYED },
		{ "dlq/%s", "dlq", ID_AT, is_waiting, MQ_MSG_DEAD },
	};
	int pfd = t->pfd[k];
	for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
		char dir[MQ_NAME_MAX + 16], name[MQ_KEY_LEN + 64];
		if (mq_path(dir, sizeof dir, where[i].dir, group) < 0)
			return -1;
		int rc = scan(pfd, dir, id, where[i].off, where[i].keep, name,
		    sizeof name);
		if (rc <= 0) {
			if (rc < 0)
				return -1;
			continue;
		}
		struct mq_entry e;
		uint64_t due = 0;
		const char *entry = name;
		if (where[i].state == MQ_MSG_DELAYED) {
			mq_delay_parse(name, &due, &e);
			entry = name + MQ_SEQ_DIGITS + 1;
		} else {
			mq_entry_parse(name, &e);
		}
		memcpy(key, entry, MQ_KEY_LEN);
		key[MQ_KEY_LEN] = 0;
		if (mq_path(path, PATH_LEN, "%s/%s", dir, name) < 0)
			return -1;
		w->state = where[i].state;
		w->in = where[i].in;
		w->attempts = e.attempts;
		w->lease_deadline = (double)e.deadline_ms / 1000;
		w->due = (double)due / 1000;
		/* Format 2's names are empty: its record tells (name_expiry). */
		if (t->conf.format != 2 && (w->state == MQ_MSG_PENDING ||
		    w->state == MQ_MSG_DELAYED)) {
			w->expires = expires_of(pfd, path);
			if (w->expires > 0 && w->expires <= mq_now())
				w->state = MQ_MSG_EXPIRED;
		}
		if (w->state == MQ_MSG_DEAD) {
			int dfd = mq_openat(pfd, dir, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (dfd < 0)
				return mq_err_sys("%s", dir);
			rc = record_read(dfd, name, w);
			close(dfd);
			if (rc < 0)
				return -1;
			if (!strcmp(w->reason, "expired"))
				w->state = MQ_MSG_EXPIRED;
		}
		return 1;
	}
	return 0;
}

/* What is known of the message in one partition, to tell why a group
 * does not hold it; each part read when first needed, once. */
struct found {
	const struct mq_topic *t;
	unsigned k;
	char key[MQ_KEY_LEN + 1];
	uint64_t seq;
	char path[PATH_LEN];            /* a name of its file, under pfd */
	int read;                       /* 1 m read, -1 it cannot be */
	struct mq_msg *m;
	bool listed;
	struct mq_names log;            /* for a backfill from a time */
	bool scanned;
	struct ack {                    /* its A records in the journal */
		char group[MQ_NAME_MAX + 1];
		uint64_t ms;
	} *acks;
	size_t nacks;
	uint64_t end;                   /* format 2: the log's end, or 0 */
};

/* Format 2: the partition's log end, from its head (read once). */
static int
found_end(struct found *fo, uint64_t *end)
{
	if (!fo->end) {
		struct mq_head h;
		int hfd = mq_head_open(fo->t->pfd[fo->k], MQ_HEAD_READ);
		int rc = hfd < 0 || mq_head_read(hfd, &h) < 0 ||
		    mq_topic_log_end(fo->t, fo->k, h.committed, &fo->end) < 0;
		if (hfd >= 0)
			close(hfd);
		if (rc)
			return -1;
	}
	*end = fo->end;
	return 0;
}

static void
found_clear(struct found *fo)
{
	mq_msg_free(fo->m);
	mq_names_free(&fo->log);
	free(fo->acks);
}

/* The message, or NULL when it cannot be read (not an error here: what
 * it would have told stays unknown). */
static const struct mq_msg *
found_msg(struct found *fo)
{
	if (!fo->read)
		fo->read = (fo->t->conf.format == 2 ?
		    mq_record_read(fo->t, fo->k, fo->seq, fo->key, &fo->m) :
		    mq_claim_read(fo->t, fo->t->pfd[fo->k], fo->path, NULL,
		    &fo->m)) == 0 ? 1 : -1;
	return fo->read > 0 ? fo->m : NULL;
}

/* Whether a backfill of the range [from, the group's start) from the
 * time from_time links the message: one at or after that time does, and
 * so does every one after the first that is (backfill_partition in
 * group.c).  Retention removes log names by their id time, oldest first,
 * so none after the message that could decide is gone while it is
 * there. */
static int
backfill_links(struct found *fo, uint64_t from, double from_time)
{
	if (fo->seq < from)
		return 0;
	if (from_time <= 0 || mq_key_time(fo->key) >= from_time)
		return 1;
	if (!fo->listed) {
		int lfd = mq_dir_open(fo->t->pfd[fo->k], "log");
		if (lfd < 0 || mq_names_read(lfd, mq_is_key, &fo->log) < 0) {
			if (lfd >= 0)
				close(lfd);
			return -1;
		}
		close(lfd);
		fo->listed = true;
	}
	for (size_t i = 0; i < fo->log.n; i++) {
		uint64_t seq;
		if (mq_seq_of(fo->log.v[i], &seq) < 0 || seq < from)
			continue;
		if (seq >= fo->seq)
			break;
		if (mq_key_time(fo->log.v[i]) >= from_time)
			return 1;
	}
	return 0;
}

/* The A records of the message in one journal of the spool. */
static int
scan_acks(struct found *fo, const char *path)
{
	struct mq_jreader r;
	struct mq_jrec rec;
	struct mq_jargs ja;
	if (mq_jreader_open_at(fo->t->sp, &r, path, 0) < 0)
		return -1;
	int rc;
	while ((rc = mq_jreader_next(&r, &rec)) == 1) {
		if (rec.type != 'A' || mq_jargs_parse('A', rec.args, &ja) < 0 ||
		    ja.k != fo->k || strcmp(ja.b, fo->key) ||
		    strcmp(ja.topic, fo->t->name))
			continue;
		struct ack *na = reallocarray(fo->acks, fo->nacks + 1, sizeof *na);
		if (!na) {
			rc = mq_err_sys("malloc");
			break;
		}
		fo->acks = na;
		memcpy(na[fo->nacks].group, ja.a, sizeof ja.a);
		na[fo->nacks++].ms = rec.ms;
	}
	mq_jreader_close(&r);
	return rc < 0 ? -1 : 0;
}

/* The time of the group's A record of the message, in ms; 0 if none. */
static int
acked_at(struct found *fo, const char *group, uint64_t *ms)
{
	if (!fo->scanned) {
		/* Every journal: a host's records may not be merged yet
		 * (those that are count twice, with the same time). */
		struct mq_names paths;
		int rc = mq_journal_list(fo->t->sp, &paths);
		for (size_t j = 0; rc == 0 && j < paths.n; j++)
			rc = scan_acks(fo, paths.v[j]);
		mq_names_free(&paths);
		if (rc < 0)
			return -1;
		fo->scanned = true;
	}
	*ms = 0;
	for (size_t i = 0; i < fo->nacks; i++)
		if (!strcmp(fo->acks[i].group, group))
			*ms = fo->acks[i].ms;
	return 0;
}

/* Why a group holds no name of the message: w->state from acked to what
 * its configuration kv, the message and the journal tell (see the top of
 * the file). */
static int
why_not_held(struct found *fo, const char *group, const struct mq_conf *kv,
    struct mq_msg_where *w)
{
	char what[MQ_NAME_MAX + 32], sk[32], fk[32];
	uint64_t start, from;
	double from_time;
	snprintf(what, sizeof what, "group %s", group);
	snprintf(sk, sizeof sk, "start.p%u", fo->k);
	snprintf(fk, sizeof fk, "from.p%u", fo->k);
	if (mq_conf_get_u64(kv, sk, 0, &start, what) < 0 ||
	    mq_conf_get_u64(kv, fk, start, &from, what) < 0 ||
	    mq_conf_get_double(kv, "from-time", 0, &from_time, what) < 0)
		return -1;
	/* Below start, only the backfill gave it to the group. */
	bool backfill = fo->seq < start;
	if (backfill) {
		int linked = backfill_links(fo, from, from_time);
		if (linked == 0)
			w->state = MQ_MSG_BEFORE;
		if (linked <= 0)
			return linked;
	}
	mq_filter *f;
	if (mq_filter_from_conf(kv, what, &f) < 0)
		return -1;
	const struct mq_msg *m = found_msg(fo);
	int match = f && m ? mq_filter_match(f, m) : 1;
	mq_filter_free(f);
	if (match == 0)
		w->state = MQ_MSG_FILTERED;
	if (match <= 0)
		return match;
	const char *state = mq_conf_get(kv, "state");
	if (backfill && state && !strcmp(state, "backfill")) {
		w->state = MQ_MSG_PENDING;
		return 0;
	}
	uint64_t ms;
	if (!m || !fo->t->conf.expired_drop || m->expires <= 0 ||
	    m->expires > mq_now())
		return 0;
	if (acked_at(fo, group, &ms) < 0)
		return -1;
	if (ms >= (uint64_t)(m->expires * 1000)) {
		w->state = MQ_MSG_EXPIRED;
		w->expires = m->expires;
		w->died = (double)ms / 1000;
	}
	return 0;
}

/* Format 2: what a feed would make of a record the group has not been
 * fed: pending, delayed, expired (its Mq-Expires passed) or filtered. */
static int
not_fed(struct found *fo, const char *group, const struct mq_conf *kv,
    struct mq_msg_where *w)
{
	const struct mq_msg *m = found_msg(fo);
	mq_filter *f;
	if (!m)
		return 0;               /* to be dead-lettered: unknown here */
	if (mq_filter_from_conf(kv, group, &f) < 0)
		return -1;
	int fate = mq_feed_fate(f, m, mq_now());
	mq_filter_free(f);
	if (fate < 0)
		return -1;
	static const enum mq_msg_state as[] = {
		[MQ_FATE_FILTERED] = MQ_MSG_FILTERED,
		[MQ_FATE_NEW] = MQ_MSG_PENDING,
		[MQ_FATE_DELAYED] = MQ_MSG_DELAYED,
		[MQ_FATE_EXPIRED] = MQ_MSG_EXPIRED,
	};
	w->state = as[fate];
	if (fate == MQ_FATE_FILTERED)
		return 0;
	w->in = "log";
	w->due = fate == MQ_FATE_DELAYED ? m->deliver_at : 0;
	w->expires = m->expires;
	return 0;
}

static int
gone_why(struct found *fo, const char *group, struct mq_msg_where *w)
{
	struct mq_conf kv;
	uint64_t next = 0, end = 0;
	if (mq_group_conf_read(fo->t, group, &kv) < 0)
		/* Unsubscribed meanwhile: nothing more to tell. */
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	int rc = 0;
	bool fed = true;
	if (fo->t->conf.format == 2) {
		rc = found_end(fo, &end) < 0 ||
		    mq_feed_cursor(fo->t, fo->k, group, end, &next) < 0 ? -1 : 0;
		fed = fo->seq < next;
		/* Handed out in a claim, not settled: in flight. */
		int held = 0;
		double deadline;
		if (rc == 0 && fed && mq_claims_in(fo->t, fo->k, group, fo->seq,
		    &held, &deadline) < 0)
			rc = -1;
		if (rc == 0 && held == 1) {
			mq_conf_free(&kv);
			w->state = MQ_MSG_INFLIGHT;
			w->in = "claims";
			w->attempts = 1;
			w->lease_deadline = deadline;
			return 0;
		}
	}
	if (rc == 0)
		rc = fed ? why_not_held(fo, group, &kv, w) :
		    not_fed(fo, group, &kv, w);
	mq_conf_free(&kv);
	return rc;
}

static void
where_clear(struct mq_msg_where *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].topic);
		free(v[i].group);
		free(v[i].reason);
		free(v[i].detail);
		free(v[i].path);
	}
}

static int
push(struct mq_msg_where **v, size_t *n, const struct mq_topic *t,
    unsigned k, const char *group, struct mq_msg_where *w)
{
	struct mq_msg_where *nv = reallocarray(*v, *n + 1, sizeof *nv);
	if (!nv)
		return mq_err_sys("malloc");
	*v = nv;
	w->topic = strdup(t->name);
	w->group = group ? strdup(group) : NULL;
	w->partition = k;
	nv[(*n)++] = *w;
	return w->topic && (w->group || !group) ? 0 : mq_err_sys("malloc");
}

/* Format 2: the record of id in partition k's log, into fo's key and
 * seq: 1 found, 0 not. */
static int
find_record(const struct mq_topic *t, unsigned k, const char *id,
    struct found *fo)
{
	uint64_t end;
	struct mq_seglog *l = mq_topic_seglog(t, k);
	int rc = !l || found_end(fo, &end) < 0 ? -1 :
	    mq_seglog_find_id(l, end, id, &fo->seq);
	if (rc > 0)
		snprintf(fo->key, sizeof fo->key, "%0*llu.%s", MQ_SEQ_DIGITS,
		    (unsigned long long)fo->seq, id);
	return rc;
}

/* A pending or delayed name of format 2: expired when its record's
 * Mq-Expires has passed. */
static void
name_expiry(struct found *fo, struct mq_msg_where *w)
{
	const struct mq_msg *m = found_msg(fo);
	if (!m || m->expires <= 0)
		return;
	w->expires = m->expires;
	if (m->expires <= mq_now())
		w->state = MQ_MSG_EXPIRED;
}

static int
in_topic(mq_spool *sp, const char *topic, int named, const char *id,
    struct mq_msg_where **v, size_t *n)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT1 | MQ_FORMAT2, &t) < 0)
		return !named && mq_errcode() == EX_NOINPUT ? 0 : -1;
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(&t, &groups);
	bool f2 = t.conf.format == 2;
	for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++) {
		struct found fo = { .t = &t, .k = k };
		int inlog = f2 ? 0 : scan(t.pfd[k], "log", id, ID_AT, mq_is_key,
		    fo.key, sizeof fo.key);
		if (inlog < 0) {
			rc = -1;
			break;
		}
		if (!inlog && !f2 && t.conf.retention <= 0)
			continue;
		if (inlog)
			snprintf(fo.path, sizeof fo.path, "log/%s", fo.key);
		/* Only the log's link left: no group holds it. */
		bool held = true;
		struct stat st;
		/* sshfs says 1 link whatever the server has. */
		if (inlog && !mq_fs_shared(t.pfd[k]) && mq_fstatat(t.pfd[k],
		    fo.path, &st, AT_SYMLINK_NOFOLLOW) == 0)
			held = st.st_nlink > 1;
		size_t first = *n;
		bool found = inlog;
		for (size_t g = 0; rc == 0 && g < groups.n; g++) {
			struct mq_msg_where w;
			memset(&w, 0, sizeof w);
			w.state = MQ_MSG_ACKED;
			char gkey[MQ_KEY_LEN + 1], gpath[PATH_LEN];
			int r = held ? group_state(&t, k, groups.v[g], id, &w,
			    gkey, gpath) : 0;
			if (r < 0) {
				rc = -1;
				break;
			}
			if (r > 0 && !(w.path = strdup(gpath))) {
				where_clear(&w, 1);
				rc = mq_err_sys("malloc");
				break;
			}
			if (r > 0 && !*fo.key) {
				memcpy(fo.key, gkey, sizeof fo.key);
				memcpy(fo.path, gpath, sizeof fo.path);
			}
			found |= r > 0;
			rc = push(v, n, &t, k, groups.v[g], &w);
		}
		if (rc == 0 && !found && f2) {
			int r = find_record(&t, k, id, &fo);
			if (r < 0)
				rc = -1;
			found = r > 0;
		}
		if (rc == 0 && !found) {
			/* Neither in the log nor in a group: not here. */
			where_clear(*v + first, *n - first);
			*n = first;
			continue;
		}
		if (rc == 0 && groups.n == 0) {
			struct mq_msg_where w = { .state = MQ_MSG_NOGROUP };
			rc = push(v, n, &t, k, NULL, &w);
		}
		mq_seq_of(fo.key, &fo.seq);
		for (size_t i = first; i < *n; i++) {
			struct mq_msg_where *w = &(*v)[i];
			w->seq = fo.seq;
			if (rc == 0 && w->state == MQ_MSG_ACKED)
				rc = gone_why(&fo, w->group, w);
			else if (rc == 0 && f2 && (w->state == MQ_MSG_PENDING ||
			    w->state == MQ_MSG_DELAYED))
				name_expiry(&fo, w);
		}
		found_clear(&fo);
	}
	mq_names_free(&groups);
	mq_topic_close(&t);
	return rc;
}

int
mq_msg_locate(mq_spool *sp, const char *topic, const char *id,
    struct mq_msg_where **out, size_t *n)
{
	char b[64], lid[MQ_ID_LEN + 1];
	*out = NULL;
	*n = 0;
	size_t len = strlen(id), m = len < MQ_ID_LEN ? len : MQ_ID_LEN;
	for (size_t i = 0; i < m; i++)
		lid[i] = (char)tolower((unsigned char)id[i]);
	lid[m] = 0;
	if (len != MQ_ID_LEN || strspn(lid, "0123456789abcdef") < MQ_ID_LEN)
		return mq_err(EX_USAGE, "invalid message id '%s': expected %d "
		    "hexadecimal digits", mq_shown(id, b, sizeof b), MQ_ID_LEN);
	int rc = 0;
	if (topic) {
		rc = mq_name_check("topic", topic) < 0 ? -1 :
		    in_topic(sp, topic, 1, lid, out, n);
	} else {
		char **topics;
		size_t nt;
		if ((rc = mq_topic_list(sp, &topics, &nt)) == 0) {
			for (size_t i = 0; rc == 0 && i < nt; i++)
				rc = in_topic(sp, topics[i], 0, lid, out, n);
			mq_strv_free(topics, nt);
		}
	}
	if (rc == 0 && *n == 0)
		rc = mq_err(EX_NOINPUT, "no message %s in %s%s", lid,
		    topic ? "topic " : "any topic", topic ? topic : "");
	if (rc < 0) {
		mq_msg_where_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void
mq_msg_where_free(struct mq_msg_where *v, size_t n)
{
	where_clear(v, n);
	free(v);
}
