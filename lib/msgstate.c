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
 * Each directory is listed once and the listings are not atomic
 * together: a message given back (cur/ to new/) between the listing of
 * new/ and that of cur/ is in neither, and is reported acked.
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

#include "internal.h"

#define ID_AT (MQ_SEQ_DIGITS + 1)                /* in a KEY */

static const char *const states[] = {
	[MQ_MSG_PENDING] = "pending",
	[MQ_MSG_INFLIGHT] = "in-flight",
	[MQ_MSG_DELAYED] = "delayed",
	[MQ_MSG_DEAD] = "dead",
	[MQ_MSG_EXPIRED] = "expired",
	[MQ_MSG_ACKED] = "acked",
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
	int fd = openat(pfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
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
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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
 * set from its name), 0 not there (acked), -1 error. */
static int
group_state(const struct mq_topic *t, unsigned k, const char *group,
    const char *id, struct mq_msg_where *w, char key[MQ_KEY_LEN + 1])
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
		w->state = where[i].state;
		w->in = where[i].in;
		w->attempts = e.attempts;
		w->lease_deadline = (double)e.deadline_ms / 1000;
		w->due = (double)due / 1000;
		if (w->state == MQ_MSG_PENDING || w->state == MQ_MSG_DELAYED) {
			char p[MQ_NAME_MAX + MQ_KEY_LEN + 96];
			if (mq_path(p, sizeof p, "%s/%s", dir, name) == 0)
				w->expires = expires_of(pfd, p);
			if (w->expires > 0 && w->expires <= mq_now())
				w->state = MQ_MSG_EXPIRED;
		}
		if (w->state == MQ_MSG_DEAD) {
			int dfd = openat(pfd, dir, O_RDONLY | O_DIRECTORY |
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
	w->state = MQ_MSG_ACKED;
	return 0;
}

static void
where_clear(struct mq_msg_where *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].topic);
		free(v[i].group);
		free(v[i].reason);
		free(v[i].detail);
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
	w->group = strdup(group);
	w->partition = k;
	nv[(*n)++] = *w;
	return w->topic && w->group ? 0 : mq_err_sys("malloc");
}

static int
in_topic(mq_spool *sp, const char *topic, int named, const char *id,
    struct mq_msg_where **v, size_t *n)
{
	struct mq_topic t;
	if (mq_topic_open(sp, topic, 0, &t) < 0)
		return !named && mq_errcode() == EX_NOINPUT ? 0 : -1;
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(&t, &groups);
	for (unsigned k = 0; rc == 0 && k < t.conf.partitions; k++) {
		char key[MQ_KEY_LEN + 1] = "";
		int inlog = scan(t.pfd[k], "log", id, ID_AT, mq_is_key, key,
		    sizeof key);
		if (inlog < 0) {
			rc = -1;
			break;
		}
		if (!inlog && t.conf.retention <= 0)
			continue;
		/* Only the log's link left: no group holds it. */
		bool held = true;
		struct stat st;
		char p[MQ_KEY_LEN + 8];
		if (inlog && mq_path(p, sizeof p, "log/%s", key) == 0 &&
		    fstatat(t.pfd[k], p, &st, AT_SYMLINK_NOFOLLOW) == 0)
			held = st.st_nlink > 1;
		size_t first = *n;
		bool found = inlog;
		for (size_t g = 0; rc == 0 && g < groups.n; g++) {
			struct mq_msg_where w;
			memset(&w, 0, sizeof w);
			w.state = MQ_MSG_ACKED;
			char gkey[MQ_KEY_LEN + 1];
			int r = held ? group_state(&t, k, groups.v[g], id, &w,
			    gkey) : 0;
			if (r < 0) {
				rc = -1;
				break;
			}
			if (r > 0 && !*key)
				memcpy(key, gkey, sizeof key);
			found |= r > 0;
			rc = push(v, n, &t, k, groups.v[g], &w);
		}
		if (rc == 0 && !found) {
			/* Neither in the log nor in a group: not here. */
			where_clear(*v + first, *n - first);
			*n = first;
			continue;
		}
		uint64_t seq = 0;
		if (*key)
			mq_seq_of(key, &seq);
		for (size_t i = first; i < *n; i++)
			(*v)[i].seq = seq;
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
