/*
 * replsend.c: the sending side of a replication session.
 *
 * The peer says what it has seen from each origin; we read our journal
 * from the point the peer last confirmed and send, in journal order,
 * every record it has not seen, with the message file for a publish (once,
 * however many groups it went to) and for a dead letter.  Batches are
 * confirmed only once the peer has them durably, and the confirmed
 * offset is recorded in replicate/peers/<peer>, where mq-pub --replicas
 * looks.  Nothing lists the spool: a reconnect costs what changed.
 *
 * A batch is confirmed whole or not at all, so on a link that damages
 * frames (each one cuts the session) a batch larger than what gets
 * through between two damaged bytes never does.  The size of a batch
 * toward a peer is therefore kept with it in peers/<peer>: a session cut
 * with batches unconfirmed (or a RESEND) halves it for what follows, or
 * quarters it when the session had nothing confirmed at all, down to one
 * record; REPL_BATCH_GROW full batches confirmed in a row double it, up
 * to REPL_BATCH_RECORDS.  What the peer confirmed stays confirmed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>
#include <xxhash.h>

#include "repl.h"
#include "sub.h"

struct stopic {
	char *name;
	struct mq_topic t;              /* t.fd < 0: could not be opened */
	int *logfd, *hfd;
	uint64_t *committed;
	struct mq_names groups;         /* as in the last CONF sent */
	int sent;                       /* a CONF was sent */
	struct spart *seg;              /* format 2: each partition's log */
};

/* Format 2: how far a partition's log went to the peer. */
struct spart {
	uint64_t sent;                  /* sent up to here */
	char tail[MQ_ID_LEN + 1];       /* the peer's record before its end
					 * (ENDS), "" when it has none */
	int state;                      /* 0 not checked, 1 sending, 2 apart */
	bool watched;                   /* its log/ wakes a --follow */
};



struct sender {
	mq_spool *sp;
	mq_link *l;
	const struct mq_repl_opts *o;
	const struct repl_epoch *ep;    /* in each batch, if the peer has */
	char me[MQ_ID_LEN + 1], peer[MQ_ID_LEN + 1], peer_name[128];
	struct repl_seen seen;          /* the peer's */
	struct mq_jreader r;
	struct stopic *tv;
	size_t nt;
	char *buf;                      /* the batch being built */
	size_t len, cap, nrec;
	uint64_t start, pos;            /* the batch's range in our journal */
	unsigned out;                   /* batches not yet answered */
	uint32_t full;                  /* which of them were full (bit 0:
					 * the oldest) */
	unsigned batch;                 /* records a batch holds at most */
	unsigned grown;                 /* full batches confirmed since */
	uint64_t confirmed;
	int advanced;                   /* the peer confirmed more of it */
	int blocked;                    /* a publish not yet committed */
	int drained;                    /* every whole line of the journal
					 * is in a batch sent */
	struct mq_jargs ra;             /* the record being added */
	int comparing;                  /* --compare: records made up */
	uint64_t records, messages, bytes;
	double began, shown;
	double trimmed;                 /* when the journal was last trimmed */
	uint64_t trim_at;               /* confirmed offset of the next trim */
	struct repl_end *ends;          /* the peer's ENDS */
	size_t nends;
	struct repl_end *acked;         /* its ends since, as it confirmed
					 * them (peers/<id>.ends) */
	size_t nacked;
	unsigned segs_out;              /* segments not yet answered */
	uint32_t segs_full;             /* which of them held s->batch
					 * records (bit 0: the oldest) */
	struct mq_seg_writer w;         /* the segment being sent */
	int ifd;                        /* --follow's inotify, or -1 */
	uint64_t apart;                 /* partitions whose logs went apart */
};

/* Drops the journal's cut files every peer has confirmed: at once each
 * time this peer has confirmed another segment's worth (a cut file may
 * have gone whole), so that no more than a segment confirmed stays; and
 * every REPL_TRIM_EVERY for the other peers' progress. */
static void
trim(struct sender *s, bool now)
{
	bool passed = s->confirmed >= s->trim_at;
	if (passed)
		s->trim_at = s->confirmed + mq_journal_segment_max();
	repl_trim_every(s->sp, s->o, &s->trimmed, now || passed);
}

/* The batch being built holds what a batch toward this peer may. */
static bool
batch_full(const struct sender *s)
{
	return s->nrec >= s->batch || s->len >= (size_t)s->batch *
	    (REPL_BATCH_BYTES / REPL_BATCH_RECORDS);
}

/* A batch did not come through: smaller ones from now on. */
static void
shrink(struct sender *s)
{
	unsigned was = s->batch;
	s->batch = s->batch / (s->advanced ? 2 : 4);
	if (s->batch < 1)
		s->batch = 1;
	s->grown = 0;
	if (s->batch != was)
		repl_log(s->o, LOG_INFO, "peer %s: a batch did not come "
		    "through: batches of at most %u records", s->peer_name,
		    s->batch);
}

/* A full batch came through. */
static void
grow(struct sender *s)
{
	if (++s->grown < REPL_BATCH_GROW || s->batch >= REPL_BATCH_RECORDS)
		return;
	s->grown = 0;
	s->batch = s->batch * 2 > REPL_BATCH_RECORDS ? REPL_BATCH_RECORDS :
	    s->batch * 2;
}

static int
room(struct sender *s, size_t more)
{
	if (s->len + more <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 1 << 16;
	while (cap < s->len + more)
		cap *= 2;
	char *p = realloc(s->buf, cap);
	if (!p)
		return mq_err_sys("malloc");
	s->buf = p;
	s->cap = cap;
	return 0;
}

static void
stopic_close(struct stopic *st)
{
	if (st->t.fd >= 0) {
		for (unsigned k = 0; k < st->t.conf.partitions; k++) {
			if (st->logfd[k] >= 0)
				close(st->logfd[k]);
			if (st->hfd[k] >= 0)
				close(st->hfd[k]);
		}
		mq_topic_close(&st->t);
	}
	free(st->logfd);
	free(st->hfd);
	free(st->committed);
	free(st->seg);
	mq_names_free(&st->groups);
	free(st->name);
}

/* The topic, opened once per session.  NULL with EX_NOINPUT when it is
 * gone (that is remembered), with another error when it could not be
 * opened now (too many files, ...: not remembered, the session fails). */
static struct stopic *
topic_of(struct sender *s, const char *name)
{
	for (size_t i = 0; i < s->nt; i++)
		if (!strcmp(s->tv[i].name, name)) {
			if (s->tv[i].t.fd >= 0)
				return &s->tv[i];
			mq_err(EX_NOINPUT, "topic %s is gone", name);
			return NULL;
		}
	struct stopic *v = reallocarray(s->tv, s->nt + 1, sizeof *v);
	if (!v) {
		mq_err_sys("malloc");
		return NULL;
	}
	s->tv = v;
	struct stopic *st = &v[s->nt];
	memset(st, 0, sizeof *st);
	st->t.fd = -1;
	if (!(st->name = strdup(name))) {
		mq_err_sys("malloc");
		return NULL;
	}
	if (mq_topic_open_as(s->sp, name, MQ_FORMAT_ANY, &st->t) < 0) {
		st->t.fd = -1;
		if (mq_errcode() == EX_NOINPUT)
			s->nt++;
		else
			free(st->name);
		return NULL;
	}
	s->nt++;
	unsigned np = st->t.conf.partitions;
	st->logfd = malloc(np * sizeof *st->logfd);
	st->hfd = malloc(np * sizeof *st->hfd);
	st->committed = calloc(np, sizeof *st->committed);
	if (!st->logfd || !st->hfd || !st->committed) {
		mq_err_sys("malloc");
		mq_topic_close(&st->t);
		free(st->logfd);
		free(st->hfd);
		free(st->committed);
		free(st->name);
		s->nt--;
		return NULL;
	}
	for (unsigned k = 0; k < np; k++)
		st->logfd[k] = st->hfd[k] = -1;
	/* Format 2: from where the peer's log ends. */
	if (st->t.conf.format == 2 && !(st->seg = calloc(np, sizeof *st->seg))) {
		mq_err_sys("malloc");
		return NULL;
	}
	for (size_t i = 0; st->seg && i < s->nends; i++)
		if (!strcmp(s->ends[i].topic, name) && s->ends[i].k < np) {
			st->seg[s->ends[i].k].sent = s->ends[i].end;
			st->seg[s->ends[i].k].state = s->ends[i].state;
			memcpy(st->seg[s->ends[i].k].tail, s->ends[i].id,
			    sizeof s->ends[i].id);
		}
	return st;
}

/* What of a topic's logs went to the peer, kept in s->ends when the
 * topic is opened again. */
static void
keep_sent(struct sender *s, const struct stopic *st)
{
	for (unsigned k = 0; st->seg && k < st->t.conf.partitions; k++) {
		struct repl_end *e = NULL;
		for (size_t i = 0; !e && i < s->nends; i++)
			if (!strcmp(s->ends[i].topic, st->name) &&
			    s->ends[i].k == k)
				e = &s->ends[i];
		if (!e) {
			struct repl_end *v = reallocarray(s->ends, s->nends + 1,
			    sizeof *v);
			if (!v)
				continue;       /* sent again: the peer compares */
			s->ends = v;
			e = &v[s->nends++];
			*e = (struct repl_end){ .k = k };
			snprintf(e->topic, sizeof e->topic, "%s", st->name);
		}
		e->end = st->seg[k].sent;
		e->state = st->seg[k].state;
		memcpy(e->id, st->seg[k].tail, sizeof e->id);
	}
}

/* Forgets what was opened of a topic (grown, made again, or deleted). */
static void
topic_drop(struct sender *s, const char *name)
{
	for (size_t i = 0; i < s->nt; i++)
		if (!strcmp(s->tv[i].name, name)) {
			keep_sent(s, &s->tv[i]);
			stopic_close(&s->tv[i]);
			s->tv[i] = s->tv[--s->nt];
			return;
		}
}

/* A topic grown since we opened it: open it again. */
static struct stopic *
topic_with(struct sender *s, const char *name, unsigned k)
{
	struct stopic *st = topic_of(s, name);
	if (!st || k < st->t.conf.partitions)
		return st;
	unsigned now;
	if (mq_topic_partitions_now(&st->t, &now) < 0)
		return NULL;
	if (k >= now) {
		mq_err(EX_NOINPUT, "topic %s has no partition %u", name, k);
		return NULL;
	}
	topic_drop(s, name);
	return topic_of(s, name);
}

/* CONF <topic>: topic.conf and every group's conf, as they are now. */
static int
send_conf(struct sender *s, const char *name)
{
	struct stopic *st = topic_of(s, name);
	if (!st)                        /* deleted: nothing to say */
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	if (!f)
		return mq_err_sys("malloc");
	char *buf;
	size_t len;
	int rc = mq_read_at(st->t.fd, "topic.conf", 65536, &buf, &len);
	if (rc == 0) {
		fprintf(f, "CONF %s\ntopic.conf %zu\n", name, len);
		fwrite(buf, 1, len, f);
		free(buf);
	}
	/* A sealed topic's keys: a replica's publishers seal as ours do. */
	if (rc == 0 && mq_read_at(st->t.fd, "keys", 65536, &buf, &len) == 0) {
		fprintf(f, "keys %zu\n", len);
		fwrite(buf, 1, len, f);
		free(buf);
	} else if (rc == 0 && mq_errcode() != EX_NOINPUT) {
		rc = -1;
	}
	mq_names_free(&st->groups);
	st->sent = 1;
	if (rc == 0)
		rc = mq_groups_read(&st->t, &st->groups);
	for (size_t i = 0; rc == 0 && i < st->groups.n; i++) {
		char p[MQ_NAME_MAX + 16];
		if (mq_path(p, sizeof p, "groups/%s.conf", st->groups.v[i]) < 0)
			rc = -1;
		else if (mq_read_at(st->t.fd, p, 65536, &buf, &len) < 0)
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1; /* unsubscribed */
		else {
			fprintf(f, "group %s %zu\n", st->groups.v[i], len);
			fwrite(buf, 1, len, f);
			free(buf);
		}
	}
	if (fclose(f) != 0 && rc == 0)
		rc = mq_err_sys("malloc");
	if (rc == 0)
		rc = mq_link_send(s->l, text, tlen);
	free(text);
	return rc;
}

static int
send_conf_all(struct sender *s)
{
	char **names;
	size_t n;
	if (mq_topic_list(s->sp, &names, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = send_conf(s, names[i]);
	mq_strv_free(names, n);
	return rc;
}

static bool
has_group(const struct stopic *st, const char *g, size_t len)
{
	for (size_t i = 0; i < st->groups.n; i++)
		if (strlen(st->groups.v[i]) == len && !memcmp(st->groups.v[i], g,
		    len))
			return true;
	return false;
}

/* Before a record naming groups of a topic: a snapshot of its
 * configuration if the peer may not know them yet. */
static int
conf_for(struct sender *s, const char *topic, const char *groups)
{
	struct stopic *st = topic_of(s, topic);
	if (!st)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	bool fresh = st->sent;
	const char *g = groups, *name;
	size_t len;
	while (fresh && repl_next_group(&g, &name, &len))
		fresh = has_group(st, name, len);
	return fresh ? 0 : send_conf(s, topic);
}

/* Appends a file's bytes to the batch; 1 when it is not there, 3 when
 * it would make the frame too long: the batch goes first. */
static int
add_file(struct sender *s, int dirfd, const char *name, size_t *len)
{
	/* What is not a regular file is no message: sent as one gone. */
	struct stat st;
	int fd = mq_file_open(dirfd, name, O_RDONLY, 0, &st);
	if (fd < 0)
		return errno == ENOENT || mq_errcode() == EX_DATAERR ? 1 : -1;
	int rc = 0;
	/* The largest message file (a 64 KiB header block, the largest
	 * body) fits in a frame with its record. */
	if ((uint64_t)st.st_size > MQ_FRAME_MAX - 65536)
		rc = mq_err(EX_DATAERR, "%s: too large to replicate", name);
	else if (s->nrec > 0 &&
	    s->len + (uint64_t)st.st_size > MQ_FRAME_MAX - 65536)
		rc = 3;
	size_t want = rc == 0 ? (size_t)st.st_size : 0, got = 0;
	if (rc == 0)
		rc = room(s, want);
	while (rc == 0 && got < want) {
		ssize_t n = pread(fd, s->buf + s->len + got, want - got,
		    (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? mq_err_sys("%s", name) : 1;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	if (rc == 0)
		*len = got;
	return rc;
}


/* The message of a P record: 0 appended, 1 skip (gone: undone by a
 * repair or removed by retention), 2 not yet committed: wait. */
static int
add_message(struct sender *s, const struct mq_jargs *ra, size_t *len)
{
	struct stopic *st = topic_with(s, ra->topic, ra->k);
	uint64_t seq;
	if (!st)
		return mq_errcode() == EX_NOINPUT ? 1 : -1;
	if (mq_seq_of(ra->a, &seq) < 0)
		return 1;
	unsigned k = ra->k;
	if (st->logfd[k] < 0 &&
	    (st->logfd[k] = mq_dir_open(st->t.pfd[k], "log")) < 0)
		return -1;
	if (seq >= st->committed[k]) {
		struct mq_head h;
		if (st->hfd[k] < 0 &&
		    (st->hfd[k] = mq_head_open(st->t.pfd[k], MQ_HEAD_WRITE)) < 0)
			return -1;
		if (mq_head_read(st->hfd[k], &h) < 0)
			return -1;
		st->committed[k] = h.committed;
		if (seq >= h.committed) {
			/* A dead publisher's: repair it if no one holds the
			 * lock; a live one's: wait for its commit. */
			if (h.next > h.committed &&
			    mq_partition_repair_try(&st->t, k) < 0)
				return -1;
			if (mq_faccessat(st->logfd[k], ra->a, F_OK,
			    AT_SYMLINK_NOFOLLOW) < 0)
				return 1;
			if (mq_head_read(st->hfd[k], &h) < 0)
				return -1;
			st->committed[k] = h.committed;
			if (seq >= h.committed)
				return h.next > h.committed ? 2 : 1;
		}
	}
	int rc = add_file(s, st->logfd[k], ra->a, len);
	/* Retention took the log/ name of a message that groups still
	 * hold: their link is the same file. */
	const char *g = ra->b, *name;
	size_t n;
	while (rc == 1 && repl_next_group(&g, &name, &n)) {
		char path[MQ_NAME_MAX + MQ_KEY_LEN + 16];
		if (snprintf(path, sizeof path, "g/%.*s/new/%s", (int)n, name,
		    ra->a) < (int)sizeof path)
			rc = add_file(s, st->t.pfd[k], path, len);
	}
	return rc;
}

/* A dead letter and its record; 1 when it is gone already. */
static int
add_dead(struct sender *s, const struct mq_jargs *ra, size_t *len,
    size_t *wlen)
{
	struct stopic *st = topic_with(s, ra->topic, ra->k);
	if (!st)
		return mq_errcode() == EX_NOINPUT ? 1 : -1;
	char dir[MQ_NAME_MAX + 16], why[MQ_NAME_MAX + 16];
	if (mq_path(dir, sizeof dir, "dlq/%s", ra->a) < 0 ||
	    mq_path(why, sizeof why, "%s.why", ra->b) < 0)
		return -1;
	int dfd = mq_openat(st->t.pfd[ra->k], dir, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 1 : mq_err_sys("%s", dir);
	int rc = add_file(s, dfd, ra->b, len);
	if (rc == 0) {
		s->len += *len;
		rc = add_file(s, dfd, why, wlen);
		s->len -= *len;
		if (rc == 1) {
			rc = 0;
			*wlen = 0;
		}
	}
	close(dfd);
	return rc;
}

/* The conf of a wildcard subscription, for its W record; 1 when it is
 * gone (unsubscribed since: a U record follows). */
static int
add_wildcard(struct sender *s, const struct mq_jargs *ra, size_t *len)
{
	char p[2 * MQ_NAME_MAX + 32];
	if (mq_path(p, sizeof p, "wildcards/%s/%s.conf", ra->topic, ra->a) < 0)
		return -1;
	return add_file(s, s->sp->fd, p, len);
}

/* U, W and Z change which topics and groups there are: each goes in a
 * batch of its own, which the receiver applies holding no partition's
 * lock (mq-protocol(5), Applying records). */
static bool
structural(char type)
{
	return type == 'U' || type == 'W' || type == 'Z';
}

/* Adds one record to the batch: 0 added or skipped, 2 blocked, 3 the
 * batch is full for it (or it goes alone: 4 once it is added). */
static int
add_record(struct sender *s, struct mq_jrec *rec)
{
	const char *origin = rec->origin[0] ? rec->origin : s->me;
	if (!s->comparing && (!strcmp(origin, s->peer) ||
	    rec->seq < repl_seen_get(&s->seen, origin)))
		return 0;
	struct mq_jargs *ra = &s->ra;
	int rc = 0;
	if (mq_jargs_parse(rec->type, rec->args, ra) < 0)
		return 0;               /* a record of a later version */
	if (structural(rec->type) && s->nrec > 0)
		return 3;
	/* Format 2: a partition whose logs went apart gets none of the
	 * changes of its records either (they name other records there). */
	struct stopic *apart = rec->type == 'T' || structural(rec->type) ? NULL :
	    topic_of(s, ra->topic);
	if (apart && apart->seg && ra->k < apart->t.conf.partitions &&
	    apart->seg[ra->k].state == 2)
		return 0;
	/* What was opened of the topic may be gone, or made again. */
	if (rec->type == 'T' || rec->type == 'Z')
		topic_drop(s, ra->topic);
	if (rec->type == 'T')
		rc = send_conf(s, ra->topic);
	else if (structural(rec->type))
		rc = 0;
	else if (rec->type == 'P')
		rc = conf_for(s, ra->topic, ra->b);
	else if (rec->type == 'S')
		rc = conf_for(s, ra->topic, "-");
	else
		rc = conf_for(s, ra->topic, ra->a);
	/* Header: at, length of the line, of the data, of the record, hash;
	 * the data go after the line. */
	char head[128], line[MQ_JLINE_MAX + 64];
	int ll = snprintf(line, sizeof line, "@%s %" PRIu64 " %.*s", origin,
	    rec->seq, (int)rec->len, rec->text);
	size_t hmax = sizeof head, dlen = 0, wlen = 0;
	size_t mark = s->len;
	if (rc == 0)
		rc = room(s, hmax + (size_t)ll);
	size_t hat = s->len;
	if (rc == 0) {
		s->len += hmax;                 /* the header, filled below */
		memcpy(s->buf + s->len, line, (size_t)ll);
		s->len += (size_t)ll;
		if (rec->type == 'P')
			rc = add_message(s, ra, &dlen);
		else if (rec->type == 'D')
			rc = add_dead(s, ra, &dlen, &wlen);
		else if (rec->type == 'W')
			rc = add_wildcard(s, ra, &dlen);
	}
	if (rc == 2 || rc == 3 || rc < 0) {
		s->len = mark;
		return rc;
	}
	/* Our own message that is gone was never committed, or retention
	 * took it: nothing to send.  Another origin's: the record goes
	 * without it, so that the peer knows it has a hole there (and the
	 * origin, or another relay, sends it again; see repl_seen). */
	if (rc == 1 && ((rec->type == 'P' && !rec->origin[0]) ||
	    rec->type == 'W')) {
		s->len = mark;
		return 0;
	}
	dlen = rc == 1 ? 0 : dlen;
	wlen = rc == 1 ? 0 : wlen;
	char hash[33] = "-";
	if (dlen)
		repl_hash_hex(s->buf + s->len, dlen + wlen, hash);
	int hl = snprintf(head, sizeof head, "%" PRIu64 " %d %zu %zu %s\n",
	    rec->at, ll, dlen, wlen, hash);
	/* Close the gap left for the header. */
	memmove(s->buf + hat + (size_t)hl, s->buf + hat + hmax,
	    (size_t)ll + dlen + wlen);
	memcpy(s->buf + hat, head, (size_t)hl);
	s->len = hat + (size_t)hl + (size_t)ll + dlen + wlen;
	s->nrec++;
	s->records++;
	if (rec->type == 'P') {
		s->messages++;
		s->bytes += dlen;
	}
	return structural(rec->type) ? 4 : 0;
}

static void
progress(struct sender *s, int last)
{
	if (!s->o->progress)
		return;
	double now = mq_mono();
	if (!last && now - s->shown < 0.2)
		return;
	s->shown = now;
	uint64_t size = mq_journal_size(s->sp);
	double secs = now - s->began;
	fprintf(stderr, "\r%" PRIu64 " records, %" PRIu64 " messages, %.1f MB, "
	    "%.0f msg/s, %.1f MB of journal left   %s", s->records, s->messages,
	    (double)s->bytes / 1e6, secs > 0 ? (double)s->messages / secs : 0,
	    size > s->confirmed ? (double)(size - s->confirmed) / 1e6 : 0,
	    last ? "\n" : "");
	fflush(stderr);
}

/* Sends the batch built after the 128 bytes kept for its first line. */
static int
ship(struct sender *s, const char *tag)
{
	char first[128], epoch[32] = "";
	if (s->ep->peer_has)
		snprintf(epoch, sizeof epoch, " epoch=%" PRIu64, s->ep->mine);
	int fl = snprintf(first, sizeof first, "BATCH %" PRIu64 " %" PRIu64
	    " %zu%s%s\n", s->start, s->pos, s->nrec, tag, epoch);
	memcpy(s->buf + 128 - fl, first, (size_t)fl);
	return mq_link_send(s->l, s->buf + 128 - fl, s->len - 128 + (size_t)fl);
}

/* Adds the journal's records to the batch: 1 when it reached the end of
 * what is there whole, 0 when the batch is full or waits for a publish
 * to commit, -1. */
static int
fill(struct sender *s)
{
	struct mq_jrec rec;
	int rc = 1;                     /* full before it read anything */
	while (!batch_full(s)) {
		if ((rc = mq_jreader_next(&s->r, &rec)) != 1)
			break;
		rc = add_record(s, &rec);
		if (rc == 4) {                  /* alone in its batch */
			s->pos = rec.end;
			return 0;
		}
		if (rc == 2 || rc == 3) {
			/* Read it again once its publish has committed, or in
			 * the next batch. */
			mq_jreader_seek(&s->r, rec.at);
			s->blocked = rc == 2;
			return 0;
		}
		if (rc < 0)
			return -1;
		s->pos = rec.end;
	}
	if (rc < 0)
		return -1;
	/* At the end of the whole lines, the batch covers the damaged lines
	 * the reader skipped there; a line still without its newline (being
	 * written, or torn by a full disk or a crash) is not there yet. */
	bool eof = rc == 0;
	if (eof && s->r.pos > s->pos)
		s->pos = s->r.pos;
	s->drained = eof;
	return eof;
}

/* What the peer said of its logs, for status (peerends.c). */
static int
ends_save(struct sender *s)
{
	int dfd = repl_dir(s->sp, "peers");
	if (dfd < 0)
		return -1;
	int rc = repl_peer_ends_save(dfd, s->peer, s->acked, s->nacked);
	close(dfd);
	return rc;
}

/* Format 2 (mq-protocol(5), Format 2 partitions): ENDS, where each
 * partition's log ends at the peer, and the id of its record before;
 * kept for status as what the peer has. */
static int
ends_heard(struct sender *s, const char *p, size_t len)
{
	if (repl_ends_parse(p, len, &s->ends, &s->nends) < 0)
		return mq_err(EX_PROTOCOL, "peer: %s", mq_errmsg());
	if (s->nends && !(s->acked = malloc(s->nends * sizeof *s->acked)))
		return mq_err_sys("malloc");
	if (s->nends)
		memcpy(s->acked, s->ends, s->nends * sizeof *s->acked);
	s->nacked = s->nends;
	return ends_save(s);
}

/* Whether the peer's log is ours up to where it ends: the record before
 * its end has the id the peer said. */
static int
same_log(struct sender *s, struct stopic *st, unsigned k)
{
	struct spart *sp = &st->seg[k];
	char id[MQ_ID_LEN + 1] = "";
	if (sp->sent == 0)
		return 1;
	int got = mq_log_tail_id(&st->t, k, sp->sent, id);
	if (got < 0)
		return -1;
	/* A record we no longer hold (retention) cannot be compared. */
	if (got == 0 || !strcmp(id, sp->tail))
		return 1;
	s->apart++;
	repl_log(s->o, LOG_ERR, "topic %s partition %u has other records on "
	    "peer %s than here before %" PRIu64 ": not sent (both spools "
	    "published there; see mq-protocol(5), Format 2 partitions)",
	    st->name, k, s->peer_name, sp->sent);
	return 0;
}

static int answer(struct sender *s);

/* The segments of every partition of format 2 past what was sent, up to
 * its log's end now.  wait: answers may be read (no batch is being
 * built), so that at most SEG_WINDOW go unanswered; else it stops there
 * and returns 1: segments are left. */
#define SEG_WINDOW 8
static int
ship_segments(struct sender *s, bool wait)
{
	for (size_t i = 0; i < s->nt; i++) {
		struct stopic *st = &s->tv[i];
		for (unsigned k = 0; st->t.fd >= 0 && st->seg &&
		    k < st->t.conf.partitions; k++) {
			struct spart *sp = &st->seg[k];
			if (!sp->watched && s->ifd >= 0) {
				int lfd = mq_dir_open(st->t.pfd[k], "log");
				if (lfd >= 0) {
					mq_watch(s->ifd, lfd, IN_CREATE |
					    IN_MOVED_TO);
					close(lfd);
				}
				sp->watched = true;
			}
			uint64_t end;
			if (sp->state == 2 || mq_log_end(&st->t, k, &end) < 0)
				continue;
			/* Also when it has as much as we do: both may have
			 * published there. */
			if (sp->state == 0) {
				int same = same_log(s, st, k);
				if (same < 0)
					return -1;
				sp->state = same ? 1 : 2;
				if (!same)
					continue;
			}
			while (sp->sent < end) {
				while (s->segs_out >= SEG_WINDOW)
					if (!wait || answer(s) < 0)
						return wait ? -1 : 1;
				uint64_t from = sp->sent;
				/* As many records as a batch toward this
				 * peer: a lossy link gets smaller ones. */
				int got = mq_log_export(&st->t, k, &from, end,
				    s->batch, &s->w);
				if (got < 0)
					return -1;
				if (got != 1) {
					if (got == 2)
						repl_log(s->o, LOG_WARNING, "topic %s "
						    "partition %u: a segment does "
						    "not read here: records %" PRIu64
						    " to %" PRIu64 " not sent",
						    st->name, k, sp->sent, from);
					sp->sent = from;
					continue;
				}
				char head[MQ_NAME_MAX + 160], hash[33], epoch[32] = "";
				repl_hash_hex(s->w.buf, s->w.len, hash);
				if (s->ep->peer_has)
					snprintf(epoch, sizeof epoch, " epoch=%" PRIu64,
					    s->ep->mine);
				int hl = snprintf(head, sizeof head, "SEG %s %u %"
				    PRIu64 " %u %s%s\n", st->name, k, s->w.first,
				    s->w.count, hash, epoch);
				char *frame = malloc((size_t)hl + s->w.len);
				if (!frame)
					return mq_err_sys("malloc");
				memcpy(frame, head, (size_t)hl);
				memcpy(frame + hl, s->w.buf, s->w.len);
				int rc = mq_link_send(s->l, frame, (size_t)hl +
				    s->w.len);
				free(frame);
				if (rc < 0)
					return -1;
				s->segs_full |= (uint32_t)(s->w.count >=
				    s->batch) << s->segs_out;
				s->segs_out++;
				s->messages += s->w.count;
				s->bytes += s->w.len;
				sp->sent = s->w.first + s->w.count;
			}
		}
	}
	return 0;
}

/* SEGOK topic k end: a segment is the peer's. */
static int
segok(struct sender *s, const char *f, size_t len)
{
	char line[MQ_NAME_MAX + 64], topic[MQ_NAME_MAX + 1];
	unsigned k;
	uint64_t end;
	if (len >= sizeof line || !s->segs_out)
		return mq_err(EX_PROTOCOL, "peer: bad answer");
	memcpy(line, f, len);
	line[len] = 0;
	if (sscanf(line, "SEGOK %200s %u %" SCNu64, topic, &k, &end) != 3 ||
	    mq_name_check("topic", topic) < 0 || end > MQ_SEQ_MAX)
		return mq_err(EX_PROTOCOL, "peer: bad answer");
	s->segs_out--;
	/* It came through: the peer has more, and a full one counts
	 * toward larger batches as a full batch does. */
	s->advanced = 1;
	bool full = s->segs_full & 1;
	s->segs_full >>= 1;
	if (full)
		grow(s);
	struct repl_end *e = repl_end_find(s->acked, s->nacked, topic, k);
	if (!e) {
		struct repl_end *v = reallocarray(s->acked, s->nacked + 1,
		    sizeof *v);
		if (!v)
			return mq_err_sys("malloc");
		s->acked = v;
		e = &v[s->nacked++];
		*e = (struct repl_end){ .k = k };
		snprintf(e->topic, sizeof e->topic, "%s", topic);
	}
	/* Its id is for the check at the start of a session, not kept. */
	e->id[0] = 0;
	e->end = end;
	return ends_save(s);
}

/* Fills a batch from the journal and sends it; 1 if there was nothing
 * to send. */
static int
send_batch(struct sender *s)
{
	s->len = s->nrec = 0;
	s->start = s->pos;
	s->blocked = s->drained = 0;
	int rc = room(s, 128);
	if (rc < 0)
		return -1;
	s->len = 128;                   /* room for the frame's first line */
	/* At the end: what the hosts' journals have that is old enough
	 * goes into ours, and on into this batch. */
	uint64_t size, held;
	/* Format 2: the logs first, then the journal's records, then the
	 * logs again to their ends now: a record a change names was
	 * committed before the change, so the peer has it first. */
	if (ship_segments(s, true) < 0)
		return -1;
	if ((rc = fill(s)) == 1 && (rc = mq_journal_merge(s->sp,
	    mq_journal_merge_upto(), &size, &held)) >= 0)
		rc = fill(s);
	if (rc < 0)
		return -1;
	int left = ship_segments(s, false);
	if (left < 0)
		return -1;
	if (left) {
		/* Too many segments on their way for this batch: read again
		 * once they are answered. */
		mq_jreader_seek(&s->r, s->start);
		s->pos = s->start;
		s->len = 0;
		s->nrec = 0;
		s->drained = s->blocked = 0;
		return 0;
	}
	if (s->pos == s->start) {
		s->len = 0;
		return 1;
	}
	/* Out from now: one cut while it goes is unconfirmed too. */
	s->full |= (uint32_t)batch_full(s) << s->out;
	s->out++;
	if (ship(s, "") < 0)
		return -1;
	progress(s, 0);
	return 0;
}

/* An answer frame of len bytes: word (OK, RESEND or SKIP), and for OK
 * and RESEND an offset in our journal, at most max (what was sent). */
static int
answer_parse(const char *f, size_t len, uint64_t max, char word[8],
    uint64_t *v)
{
	char l[64];
	const char *p;
	if (len >= sizeof l || memchr(f, 0, len))
		return -1;
	memcpy(l, f, len);
	l[len] = 0;
	if (!strcmp(l, "SKIP")) {
		strcpy(word, l);
		return 0;
	}
	size_t wl = strcspn(l, " ");
	if ((wl == 2 && !memcmp(l, "OK", 2)) ||
	    (wl == 6 && !memcmp(l, "RESEND", 6))) {
		memcpy(word, l, wl);
		word[wl] = 0;
		return l[wl] == ' ' && (p = mq_decimal(l + wl + 1, max, v)) &&
		    !*p ? 0 : -1;
	}
	return -1;
}

/* One answer: OK <end>, RESEND <pos> (a message arrived damaged: send
 * again from pos), or SKIP (a batch after a RESEND). */
static int
answer(struct sender *s)
{
	const void *buf;
	size_t len;
	int rc = mq_link_recv(s->l, &buf, &len);
	if (rc <= 0)
		return rc < 0 ? -1 : mq_err(EX_PROTOCOL, "peer: connection "
		    "ended before it confirmed what was sent");
	if (len > 6 && !memcmp(buf, "ERROR ", 6))
		return repl_error_frame(buf, len);
	if (len > 6 && !memcmp(buf, "SEGOK ", 6))
		return segok(s, buf, len);
	char word[8];
	uint64_t v = 0;
	if (answer_parse(buf, len, s->pos, word, &v) < 0)
		return mq_err(EX_PROTOCOL, "peer: bad answer");
	s->out--;
	bool full = s->full & 1;
	s->full >>= 1;
	if (!strcmp(word, "OK")) {
		if (v > s->confirmed)
			s->advanced = 1;
		s->confirmed = v;
		if (full)
			grow(s);
		if (repl_peer_save(s->sp, s->peer, s->peer_name,
		    s->o->address, v, s->batch, 1) < 0)
			return -1;
		trim(s, false);
		return 0;
	}
	if (!strcmp(word, "SKIP"))
		return 0;
	/* RESEND */
	repl_log(s->o, LOG_WARNING, "peer %s: a message arrived damaged; "
	    "sending again from %" PRIu64, s->peer_name, v);
	while (s->out > 0)
		if (answer(s) < 0)
			return -1;
	if (v > s->confirmed)
		s->advanced = 1;        /* what came before it is applied */
	shrink(s);
	s->confirmed = v;
	s->pos = v;
	mq_jreader_seek(&s->r, v);
	return 0;
}

/* --compare: the fallback for what the journal does not cover (messages
 * from before the journal, a peer restored from an old backup): for each
 * partition, the names and hashes of every message in log/ go to the
 * peer, which answers with the names it lacks or has with other content;
 * those go as made-up publish records naming the groups that hold the
 * message now, and every dead letter as a dead letter record (the peer
 * ignores those it has).  Made-up records are neither journaled by the
 * peer nor counted in its vector. */

/* Sends the batch being built as made-up records, and waits for it. */
static int
ship_compare(struct sender *s)
{
	if (s->nrec == 0)
		return 0;
	s->start = s->pos = s->confirmed;
	const void *buf;
	size_t len;
	int rc = ship(s, " compare");
	if (rc == 0)
		rc = mq_link_recv(s->l, &buf, &len) == 1 ? 0 :
		    mq_err(EX_PROTOCOL, "peer: connection ended");
	if (rc == 0 && len > 6 && !memcmp(buf, "ERROR ", 6))
		rc = repl_error_frame(buf, len);
	else if (rc == 0 && (len < 2 || memcmp(buf, "OK", 2)))
		rc = mq_err(EX_PROTOCOL, "peer: bad answer");
	s->len = 128;
	s->nrec = 0;
	return rc;
}

static int
add_made_up(struct sender *s, char type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int
add_made_up(struct sender *s, char type, const char *fmt, ...)
{
	char text[MQ_JLINE_MAX];
	int n = snprintf(text, sizeof text, "%c %" PRIu64 " ", type,
	    (uint64_t)(mq_now() * 1000));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text + n, sizeof text - (size_t)n, fmt, ap);
	va_end(ap);
	struct mq_jrec rec = { .type = type, .text = text, .len = strlen(text),
	    .args = text + n, .at = s->confirmed, .end = s->confirmed };
	int rc = add_record(s, &rec);
	if (rc == 3 && (rc = ship_compare(s)) == 0)
		rc = add_record(s, &rec);
	if (rc == 2)
		rc = 0;                 /* not committed yet: the journal has it */
	if (rc == 0 && batch_full(s))
		rc = ship_compare(s);
	return rc;
}

/* A dead letter's name, as a peer takes it in a D record. */
static bool
is_dead_name(const char *name)
{
	struct mq_entry e;
	return mq_dead_parse(name, &e) == 0;
}

/* "group KEY" of a Q line: an A record when our group holds no KEY. */
static int
settle_queued(struct sender *s, struct stopic *st, unsigned k,
    const struct mq_names *groups, const struct mq_names *hv, const char *q)
{
	const char *sp = strchr(q, ' ');
	if (!sp || !mq_is_key(sp + 1))
		return 0;
	for (size_t g = 0; g < groups->n; g++)
		if (strlen(groups->v[g]) == (size_t)(sp - q) &&
		    !memcmp(groups->v[g], q, (size_t)(sp - q)))
			return mq_names_has(&hv[g], sp + 1) ? 0 :
			    add_made_up(s, 'A', "%s %u %s %s", st->name, k,
			    groups->v[g], sp + 1);
	return 0;               /* a group of the peer's own */
}

/* Every dead letter of the group; the peer keeps those it has. */
static int
dead_letters(struct sender *s, struct stopic *st, unsigned k,
    const char *group)
{
	char p[MQ_NAME_MAX + 16];
	struct mq_names dl = { 0 };
	if (mq_path(p, sizeof p, "dlq/%s", group) < 0)
		return -1;
	int dfd = mq_openat(st->t.pfd[k], p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd < 0)
		return 0;
	int rc = mq_names_read(dfd, is_dead_name, &dl);
	close(dfd);
	for (size_t i = 0; rc == 0 && i < dl.n; i++)
		rc = add_made_up(s, 'D', "%s %u %s %s", st->name, k, group,
		    dl.v[i]);
	mq_names_free(&dl);
	return rc;
}

static int
compare_partition(struct sender *s, struct stopic *st, unsigned k)
{
	int pfd = st->t.pfd[k];
	struct mq_names log = { 0 }, groups = { 0 };
	char *list = NULL;
	size_t llen = 0;
	int lfd = mq_dir_open(pfd, "log");
	int rc = lfd < 0 ? -1 : mq_names_read(lfd, mq_is_key, &log);
	FILE *f = rc == 0 ? open_memstream(&list, &llen) : NULL;
	if (rc == 0 && !f)
		rc = mq_err_sys("malloc");
	if (f)
		fprintf(f, "HAVE %s %u\n", st->name, k);
	/* Hashes of the committed messages. */
	for (size_t i = 0; rc == 0 && i < log.n; i++) {
		char *buf;
		size_t len;
		if (mq_read_at(lfd, log.v[i], MQ_FRAME_MAX, &buf, &len) < 0) {
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
			continue;
		}
		char hash[33];
		repl_hash_hex(buf, len, hash);
		free(buf);
		fprintf(f, "%s %s\n", log.v[i], hash);
	}
	if (f && fclose(f) != 0 && rc == 0)
		rc = mq_err_sys("malloc");
	const void *ans = NULL;
	size_t alen = 0;
	if (rc == 0)
		rc = mq_link_send(s->l, list, llen);
	free(list);
	const char *rest = NULL;
	if (rc == 0)
		rc = repl_expect(s->l, "WANT", &rest, &alen);
	ans = rest;
	/* The KEYs the peer wants, with the groups that hold each now. */
	size_t ng = 0;
	struct mq_names *hv = NULL;
	if (rc == 0 && (rc = mq_groups_read(&st->t, &groups)) == 0) {
		ng = groups.n;
		hv = calloc(ng ? ng : 1, sizeof *hv);
		if (!hv)
			rc = mq_err_sys("malloc");
	}
	for (size_t g = 0; rc == 0 && g < ng; g++)
		rc = mq_group_held(pfd, groups.v[g], &hv[g]);
	/* A copy: the answer's buffer goes with the next frame. */
	char *want = rc == 0 ? strndup(ans, alen) : NULL;
	if (rc == 0 && !want)
		rc = mq_err_sys("malloc");
	s->len = 128;
	s->nrec = 0;
	for (char *line = want, *save = NULL; rc == 0 &&
	    (line = strtok_r(line == want ? want : NULL, "\n", &save));
	    line = NULL) {
		/* Q group KEY: the peer's group holds a message ours no
		 * longer does (acknowledged, or dead: its D comes below). */
		if (!strncmp(line, "Q ", 2)) {
			rc = settle_queued(s, st, k, &groups, hv, line + 2);
			continue;
		}
		if (!strncmp(line, "WANT", 4) || !mq_is_key(line))
			continue;
		char *gl = NULL;
		size_t gll = 0;
		FILE *gf = open_memstream(&gl, &gll);
		const char *sep = "";
		for (size_t g = 0; gf && g < ng; g++)
			if (mq_names_has(&hv[g], line)) {
				fprintf(gf, "%s%s", sep, groups.v[g]);
				sep = ",";
			}
		if (!gf || fclose(gf) != 0)
			rc = mq_err_sys("malloc");
		if (rc == 0)
			rc = add_made_up(s, 'P', "%s %u %s %s", st->name, k, line,
			    *sep ? gl : "-");
		free(gl);
	}
	free(want);
	for (size_t g = 0; rc == 0 && g < ng; g++)
		rc = dead_letters(s, st, k, groups.v[g]);
	if (rc == 0)
		rc = ship_compare(s);
	for (size_t g = 0; g < ng; g++)
		mq_names_free(&hv[g]);
	free(hv);
	mq_names_free(&groups);
	mq_names_free(&log);
	if (lfd >= 0)
		close(lfd);
	return rc;
}

/* Format 2 (mq-protocol(5), Format 2 partitions): a log goes by
 * position whatever the journal holds; what the journal may not cover
 * is its groups' changes (cut off with it, or from before it).  So each
 * group's state goes as made-up records that bring the peer's group to
 * ours (mq_greplica_state: C, K, L), with D for every dead letter: what
 * the peer settled and we did not stays settled there, as an
 * acknowledgement is never undone.  Not for logs that went apart. */
struct made_up2 {
	struct sender *s;
	struct stopic *st;
	unsigned k;
	const char *group;
};

static int
add_group_rec(char type, const char *arg, void *ctx)
{
	const struct made_up2 *m = ctx;
	return add_made_up(m->s, type, "%s %u %s %s", m->st->name, m->k,
	    m->group, arg);
}

static int
compare_groups2(struct sender *s, struct stopic *st, unsigned k)
{
	struct spart *sp = &st->seg[k];
	/* The log went as far as ours already: not looked at yet. */
	if (sp->state == 0) {
		int same = same_log(s, st, k);
		if (same < 0)
			return -1;
		sp->state = same ? 1 : 2;
	}
	if (sp->state == 2)
		return 0;
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(&st->t, &groups);
	s->len = 128;                   /* room for the frame's first line */
	s->nrec = 0;
	for (size_t g = 0; rc == 0 && g < groups.n; g++) {
		struct made_up2 m = { s, st, k, groups.v[g] };
		rc = mq_greplica_state(&st->t, k, groups.v[g], sp->sent,
		    add_group_rec, &m);
		if (rc == 0)
			rc = dead_letters(s, st, k, groups.v[g]);
	}
	if (rc == 0)
		rc = ship_compare(s);
	mq_names_free(&groups);
	return rc;
}

/* The logs of format 2 first, confirmed: the records the groups' changes
 * name are the peer's before them. */
static int
compare_topic2(struct sender *s, struct stopic *st)
{
	int rc = ship_segments(s, true);
	while (rc == 0 && s->segs_out > 0)
		rc = answer(s);
	for (unsigned k = 0; rc == 0 && k < st->t.conf.partitions; k++)
		rc = compare_groups2(s, st, k);
	return rc;
}

static int
compare_all(struct sender *s)
{
	char **names;
	size_t n;
	if (mq_topic_list(s->sp, &names, &n) < 0)
		return -1;
	int rc = 0;
	uint64_t logs = 0, groups2 = 0, was;
	bool any2 = false;
	s->comparing = 1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct stopic *st = topic_of(s, names[i]);
		if (!st && mq_errcode() != EX_NOINPUT)
			rc = -1;
		if (st && st->t.conf.format == 2) {
			any2 = true;
			was = s->messages;
			uint64_t records = s->records;
			rc = compare_topic2(s, st);
			logs += s->messages - was;
			groups2 += s->records - records;
		}
		for (unsigned k = 0; st && st->t.conf.format == 1 && rc == 0 &&
		    k < st->t.conf.partitions; k++)
			rc = compare_partition(s, st, k);
	}
	s->comparing = 0;
	mq_strv_free(names, n);
	char more[96] = "";
	if (any2)
		snprintf(more, sizeof more, "; the groups of format 2 as %"
		    PRIu64 " records", groups2);
	repl_log(s->o, LOG_INFO, "peer %s: compared by hash: %" PRIu64
	    " messages sent%s", s->peer_name, s->messages - logs, more);
	return rc;
}

/* Waits for the journal to grow: inotify where it works, else a tick. */
static void
wait_change(int ifd, double seconds)
{
	struct pollfd p = { ifd, POLLIN, 0 };
	if (poll(&p, ifd >= 0 ? 1 : 0, (int)(seconds * 1000)) > 0) {
		char buf[4096];
		while (read(ifd, buf, sizeof buf) > 0)
			;
	}
}

/* *watched: whether the journal was there to watch. */
static int
watch_journal(mq_spool *sp, int *watched)
{
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	*watched = 0;
	if (ifd < 0)
		return -1;
	/* The journal may not exist yet: its creation wakes us too. */
	mq_watch(ifd, sp->fd, IN_CREATE | IN_MOVED_TO);
	int jfd = mq_file_open(sp->fd, "journal", O_RDONLY, 0, NULL);
	if (jfd >= 0) {
		*watched = mq_watch(ifd, jfd, IN_MODIFY) >= 0;
		close(jfd);
	}
	return ifd;
}

int
repl_send(mq_spool *sp, mq_link *l, const char *peer, const char *peer_name,
    const struct repl_epoch *ep, const struct mq_repl_opts *o)
{
	struct sender s = { .sp = sp, .l = l, .o = o, .ep = ep,
	    .batch = REPL_BATCH_RECORDS, .ifd = -1 };
	s.r.fd = -1;
	snprintf(s.peer, sizeof s.peer, "%s", peer);
	snprintf(s.peer_name, sizeof s.peer_name, "%s", peer_name);
	const char *rest;
	size_t len;
	int rc = repl_spool_id(sp, s.me);
	if (rc == 0)
		rc = repl_expect(l, "SEEN", &rest, &len);
	if (rc == 0)
		rc = repl_seen_parse(rest, len, &s.seen);
	if (rc == 0 && ep->segments && (rc = repl_expect(l, "ENDS", &rest,
	    &len)) == 0)
		rc = ends_heard(&s, rest, len);
	uint64_t from = 0;
	if (rc == 0)
		rc = repl_peer_confirmed(sp, peer, &from, &s.batch);
	/* A peer that has less of ours than it confirmed lost its state
	 * (restored from a backup): start again, sending what it lacks. */
	uint64_t has = repl_seen_get(&s.seen, s.me);
	if (has < from)
		from = 0;
	/* What the hosts' journals hold from before now is ours to send. */
	uint64_t goal = 0;
	if (rc == 0)
		rc = mq_journal_merge_now(sp, &goal);
	/* A peer that has seen more of our journal than there is: ours was
	 * put back from a backup, and our new records would take sequence
	 * numbers the peer takes for ones it has. */
	if (rc == 0 && has > goal)
		rc = mq_err(EX_DATAERR, "peer %s has seen %" PRIu64 " bytes of "
		    "this spool's journal, which holds %" PRIu64 ": was the "
		    "spool restored from a backup? (see mq-replicate(1), "
		    "CAVEATS)", peer_name, has, goal);
	if (rc == 0)
		rc = mq_jreader_open(sp, &s.r, from);
	/* Its place was dropped from the journal (jsegment.c), but it has
	 * told us where it is: from there. */
	if (rc == 0 && s.r.gap && has >= s.r.pos && has <= goal) {
		s.r.gap = false;
		from = has;
		mq_jreader_seek(&s.r, from);
	}
	/* Else what it lacks is found by comparing hashes, and the journal
	 * goes on from the oldest record it still holds. */
	bool behind = rc == 0 && s.r.gap;
	if (behind) {
		repl_log(o, LOG_NOTICE, "peer %s: the journal no longer holds "
		    "its place (%" PRIu64 "): comparing by hash, then on from %"
		    PRIu64, s.peer_name, from, s.r.pos);
		from = s.r.pos;
		s.r.gap = false;
	}
	s.pos = s.confirmed = from;
	if (rc == 0)
		rc = send_conf_all(&s);
	/* The segment writer first: format 2's compare sends segments. */
	if (rc == 0)
		rc = mq_seg_begin(&s.w, 0);
	if (rc == 0 && (o->compare || behind))
		rc = compare_all(&s);
	int watched = 0;
	int ifd = o->follow ? watch_journal(sp, &watched) : -1;
	double poll_every = mq_env_duration("MQ_POLL", 0), idle = mq_mono();
	if (poll_every > 0) {
		if (ifd >= 0)
			close(ifd);
		ifd = -1;
	} else {
		poll_every = 1.0;
	}
	s.ifd = ifd;
	s.began = mq_mono();
	while (rc == 0 && !(o->stop && *o->stop)) {
		int sent = s.out < REPL_WINDOW ? send_batch(&s) : 1;
		if (sent < 0) {
			rc = -1;
			break;
		}
		if (sent == 0) {
			idle = mq_mono();
			continue;
		}
		if (s.out > 0 || s.segs_out > 0) {
			rc = answer(&s);
			continue;
		}
		/* Everything whole is confirmed: a one-shot push is done,
		 * goal reached or what is left before it a torn line. */
		if (!o->follow && !s.blocked && (s.pos >= goal || s.drained))
			break;
		if (s.blocked) {
			usleep(5000);
			continue;
		}
		if (mq_mono() - idle >= REPL_PING) {
			rc = repl_send_text(l, "PING");
			if (rc == 0)
				rc = repl_peer_save(sp, s.peer, s.peer_name,
				    o->address, s.confirmed, s.batch, 1);
			if (rc == 0)
				trim(&s, false);
			idle = mq_mono();
			continue;
		}
		/* The journal was created since we watched. */
		if (ifd >= 0 && !watched && s.r.fd >= 0) {
			close(ifd);
			s.ifd = ifd = watch_journal(sp, &watched);
			for (size_t i = 0; i < s.nt; i++)
				for (unsigned k = 0; s.tv[i].seg &&
				    k < s.tv[i].t.conf.partitions; k++)
					s.tv[i].seg[k].watched = false;
		}
		wait_change(ifd, poll_every);
	}
	while (rc == 0 && (s.out > 0 || s.segs_out > 0))
		rc = answer(&s);
	/* A one-shot push stopped by a signal did not do its job. */
	if (rc == 0 && !o->follow && s.pos < goal && !s.drained)
		rc = mq_err(EX_TEMPFAIL, "stopped before everything was sent "
		    "(%" PRIu64 " bytes of journal left)", goal - s.pos);
	if (rc == 0) {
		progress(&s, 1);
		/* Everything is confirmed: the end is a courtesy. */
		if (repl_send_text(l, "END") == 0)
			mq_link_end(l);
		repl_log(o, LOG_INFO, "peer %s: sent %" PRIu64 " records (%" PRIu64
		    " messages, %" PRIu64 " bytes)", s.peer_name, s.records,
		    s.messages, s.bytes);
	}
	/* Cut with batches unconfirmed: smaller ones next time. */
	if (rc < 0 && (s.out > 0 || s.segs_out > 0))
		shrink(&s);
	if (s.advanced && o->advanced)
		*o->advanced = 1;
	/* Not connected any more, whatever the reason. */
	repl_peer_save(sp, s.peer, s.peer_name, o->address, s.confirmed,
	    s.batch, 0);
	if (rc == 0)
		trim(&s, true);
	if (ifd >= 0)
		close(ifd);
	mq_jreader_close(&s.r);
	for (size_t i = 0; i < s.nt; i++)
		stopic_close(&s.tv[i]);
	free(s.tv);
	free(s.buf);
	free(s.ends);
	free(s.acked);
	mq_seg_writer_free(&s.w);
	repl_seen_free(&s.seen);
	return rc;
}
