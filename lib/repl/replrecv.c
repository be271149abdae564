/*
 * replrecv.c: the receiving side of a replication session: applying a
 * peer's records to this spool.
 *
 * Applying is idempotent, so a batch that was not confirmed (a crash, a
 * cut connection, a damaged message) is simply applied again.  A
 * message is written to a group's tmp/ (where consumers never look),
 * linked into the other groups' tmp/, then linked to log/KEY (the commit
 * point).  A repeat finds log/KEY there and only finishes what is left
 * in tmp/; a name that arrives with other content is quarantined, never
 * written over.  Nothing a batch adds to a queue is visible before the
 * batch's records are in our journal: a local consumer could otherwise
 * ack a message, and journal the ack, before the message's own record,
 * and a peer we pass both to would see them the wrong way round.  So at
 * the end of a batch: everything is synced; the records go to the
 * journal, as the origin's; the staged links (publishes, backfills,
 * redrives) are renamed into new/ or delay/ and synced; the heads are
 * raised above the origin's sequence numbers (first, while applying, as
 * next, so that a crash leaves an unfinished publish that the next lock
 * holder repairs); then the batch is confirmed.
 *
 * A peer is not trusted with names or records: a batch is checked whole
 * before anything is touched (batch_check), every frame read by its
 * length, every name of its grammar, every record printable and of its
 * type, never of our origin, the peer's own at their offsets, sequence
 * numbers within MQ_SEQ_MAX, at most REPL_ORIGINS_MAX origins.  One bad
 * record refuses the batch and ends the session.  So does a batch whose
 * epoch is below this spool's, read again under replicate/lock-recv for
 * each batch, so that no batch is applied past a promote (fence.c).  See
 * mq-protocol(5), REPLICATION CHANNEL and Epochs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>
#include <xxhash.h>

#include "repl.h"

struct rgroup {
	char name[MQ_NAME_MAX + 1];
	int tmpfd, newfd, curfd, delayfd;
	int donefd;                     /* its ledger, opened on first use */
	struct mq_greplica *gr;         /* format 2, opened on first use */
};

struct rpart {
	int hfd, logfd;
	int dedupfd;                    /* opened on first use */
	int locked;
	struct mq_head h;
	struct rgroup **gv;             /* each its own: pointers stay valid */
	size_t ng;
};

struct rtopic {
	char *name;
	struct mq_topic t;
	struct rpart *pv;
};

/* A batch's first line: BATCH start end n [compare] [epoch=N]. */
struct bhead {
	uint64_t start, end;
	size_t n;                       /* records, at most REPL_BATCH_RECORDS */
	size_t len;                     /* of the line, its newline included */
	int compare;
	uint64_t epoch;                 /* the sender's; 0 when not said */
};

/* One record of a batch, where the frame has it, checked whole. */
struct brec {
	uint64_t at;
	const char *line, *data;        /* data: dlen bytes, then wlen more */
	size_t ll, dlen, wlen;
	char hash[33];                  /* "-" when there are no data */
	int known;                      /* a type of this version */
	char type;
	char topic[MQ_NAME_MAX + 1];    /* P, L, A, D, R, X: its partition */
	unsigned k;
};

/* A staged link to rename into its queue at the end of the batch. */
struct staged {
	struct rgroup *g;
	char key[MQ_KEY_LEN + 1];
	double due;
};

struct receiver {
	mq_spool *sp;
	mq_link *l;
	const struct mq_repl_opts *o;
	char me[MQ_ID_LEN + 1], peer[MQ_ID_LEN + 1], peer_name[128];
	struct repl_seen seen;
	struct rtopic *tv;
	size_t nt;
	struct mq_jbuf jb;
	int wrote;                      /* files to make durable */
	struct staged *sv;
	size_t ns, scap;
	int made_up;                    /* a batch of --compare */
	size_t pending;                 /* batches applied, not finished */
	struct brec *bv;                /* the batch's records */
	uint64_t records, messages, quarantined, dropped;
	uint64_t batches, groups;       /* applied, and finished together */
	uint64_t segments;              /* received */
	double trimmed;                 /* when the journal was last trimmed */
	char line[MQ_JLINE_MAX + MQ_ID_LEN + 32];
};

static void
group_close(struct rgroup *g)
{
	int *fds[] = { &g->tmpfd, &g->newfd, &g->curfd, &g->delayfd,
	    &g->donefd };
	for (size_t i = 0; i < 5; i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	if (g->gr)
		mq_greplica_close(g->gr);
	free(g->gr);
	g->gr = NULL;
}

static void
rtopic_close(struct rtopic *rt)
{
	for (unsigned k = 0; rt->pv && k < rt->t.conf.partitions; k++) {
		struct rpart *p = &rt->pv[k];
		if (p->locked)
			mq_head_unlock(p->hfd);
		if (p->hfd >= 0)
			close(p->hfd);
		if (p->logfd >= 0)
			close(p->logfd);
		if (p->dedupfd >= 0)
			close(p->dedupfd);
		for (size_t i = 0; i < p->ng; i++) {
			group_close(p->gv[i]);
			free(p->gv[i]);
		}
		free(p->gv);
	}
	free(rt->pv);
	mq_topic_close(&rt->t);
	free(rt->name);
}

static struct rtopic *
topic_of(struct receiver *r, const char *name)
{
	for (size_t i = 0; i < r->nt; i++)
		if (!strcmp(r->tv[i].name, name))
			return &r->tv[i];
	struct rtopic *v = reallocarray(r->tv, r->nt + 1, sizeof *v);
	if (!v) {
		mq_err_sys("malloc");
		return NULL;
	}
	r->tv = v;
	struct rtopic *rt = &v[r->nt];
	memset(rt, 0, sizeof *rt);
	if (mq_topic_open_as(r->sp, name, MQ_FORMAT_ANY, &rt->t) < 0)
		return NULL;
	rt->name = strdup(name);
	rt->pv = calloc(rt->t.conf.partitions, sizeof *rt->pv);
	if (!rt->name || !rt->pv) {
		free(rt->name);
		free(rt->pv);
		mq_topic_close(&rt->t);
		mq_err_sys("malloc");
		return NULL;
	}
	for (unsigned k = 0; k < rt->t.conf.partitions; k++)
		rt->pv[k].hfd = rt->pv[k].logfd = rt->pv[k].dedupfd = -1;
	r->nt++;
	return rt;
}

/* Forgets an open topic (its configuration changed). */
static void
topic_forget(struct receiver *r, const char *name)
{
	for (size_t i = 0; i < r->nt; i++)
		if (!strcmp(r->tv[i].name, name)) {
			rtopic_close(&r->tv[i]);
			r->tv[i] = r->tv[--r->nt];
			return;
		}
}

/* Partition k of a topic, locked for the rest of the batch (a dead
 * publisher's leftovers repaired first). */
static struct rpart *
part_of(struct receiver *r, struct rtopic *rt, unsigned k)
{
	if (k >= rt->t.conf.partitions) {
		mq_err(EX_PROTOCOL, "peer: topic %s has no partition %u here",
		    rt->name, k);
		return NULL;
	}
	struct rpart *p = &rt->pv[k];
	if (p->hfd < 0 &&
	    (p->hfd = mq_head_open(rt->t.pfd[k], MQ_HEAD_WRITE)) < 0)
		return NULL;
	if (p->logfd < 0 && (p->logfd = mq_dir_open(rt->t.pfd[k], "log")) < 0)
		return NULL;
	if (!p->locked) {
		if (mq_head_lock(p->hfd, 1) < 0)
			return NULL;
		p->locked = 1;
		if (mq_head_read(p->hfd, &p->h) < 0 ||
		    mq_partition_repair_locked(&rt->t, k, p->hfd, &p->h) < 0)
			return NULL;
	}
	(void)r;
	return p;
}

/* A group's directories in a partition; NULL (no error) if the group
 * does not exist here. */
/* A group's directories in a partition.  NULL with EX_NOINPUT when the
 * group is not here (remembered) or its name is not a group name; with
 * another error when they could not be opened now. */
static struct rgroup *
group_of(struct rtopic *rt, unsigned k, struct rpart *p, const char *name,
    size_t len)
{
	for (size_t i = 0; i < p->ng; i++)
		if (strlen(p->gv[i]->name) == len && !memcmp(p->gv[i]->name, name,
		    len)) {
			if (p->gv[i]->tmpfd >= 0)
				return p->gv[i];
			mq_err(EX_NOINPUT, "no group %s here", p->gv[i]->name);
			return NULL;
		}
	char gname[MQ_NAME_MAX + 1];
	snprintf(gname, sizeof gname, "%.*s", (int)len, name);
	if (len > MQ_NAME_MAX || mq_name_check("group", gname) < 0) {
		/* Never a path from a bad name. */
		mq_err(EX_NOINPUT, "bad group name from the peer");
		return NULL;
	}
	struct rgroup **v = reallocarray(p->gv, p->ng + 1, sizeof *v);
	struct rgroup *g = v ? malloc(sizeof *g) : NULL;
	if (v)
		p->gv = v;
	if (!g) {
		mq_err_sys("malloc");
		return NULL;
	}
	snprintf(g->name, sizeof g->name, "%s", gname);
	g->tmpfd = g->newfd = g->curfd = g->delayfd = g->donefd = -1;
	g->gr = NULL;
	char path[MQ_NAME_MAX + 16];
	static const char *const sub[] = { "tmp", "new", "cur", "delay" };
	int *fds[] = { &g->tmpfd, &g->newfd, &g->curfd, &g->delayfd };
	for (size_t i = 0; i < 4; i++) {
		if (mq_path(path, sizeof path, "g/%s/%s", g->name, sub[i]) < 0)
			break;
		if (i == 3)
			mq_mkdir(rt->t.pfd[k], path);
		*fds[i] = mq_openat(rt->t.pfd[k], path, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (*fds[i] >= 0)
			continue;
		int gone = errno == ENOENT;
		mq_err_sys("%s", path);
		group_close(g);
		g->tmpfd = g->newfd = g->curfd = g->delayfd = g->donefd = -1;
		if (!gone) {
			free(g);        /* try again next time */
			return NULL;
		}
		p->gv[p->ng++] = g;
		mq_err(EX_NOINPUT, "no group %s here", g->name);
		return NULL;
	}
	p->gv[p->ng++] = g;
	return g;
}

/* Mq-Deliver-At of a message file, 0 when it has none. */
static double
deliver_at(const char *data, size_t len)
{
	size_t n;
	const char *p = mq_msg_header(data, len, "Mq-Deliver-At", &n);
	char v[64];
	if (!p || n >= sizeof v)
		return 0;
	memcpy(v, p, n);
	v[n] = 0;
	struct timespec ts;
	if (mq_time_parse(v, &ts) < 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Moves a staged link of KEY into the group's queue: new/KEY, or
 * delay/<due>.KEY while it is not due. */
static int
unstage(struct rgroup *g, const char *key, double due)
{
	char dname[MQ_KEY_LEN + 32];
	int later = due > mq_now();
	if (later)
		snprintf(dname, sizeof dname, "%020" PRIu64 ".%s",
		    (uint64_t)ceil(due * 1000), key);
	if (mq_renameat(g->tmpfd, key, later ? g->delayfd : g->newfd,
	    later ? dname : key) < 0 && errno != ENOENT)
		return mq_err_sys("replicate %s", key);
	return 0;
}

static int
stage(struct receiver *r, struct rgroup *g, const char *key, double due)
{
	if (r->ns == r->scap) {
		size_t cap = r->scap ? 2 * r->scap : 256;
		struct staged *v = reallocarray(r->sv, cap, sizeof *v);
		if (!v)
			return mq_err_sys("malloc");
		r->sv = v;
		r->scap = cap;
	}
	struct staged *st = &r->sv[r->ns++];
	st->g = g;
	snprintf(st->key, sizeof st->key, "%s", key);
	st->due = due;
	return 0;
}

/* Messages at or above committed stay invisible until the end of the
 * batch raises the head; next says a crash must undo them. */
static int
raise_next(struct rpart *p, uint64_t seq)
{
	if (seq < p->h.committed || seq + 1 <= p->h.next)
		return 0;
	p->h.next = seq + 1;
	return mq_head_write(p->hfd, &p->h, 0);
}

static int
write_file(int dirfd, const char *name, const void *data, size_t len)
{
	int fd = mq_openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0666);
	if (fd < 0 && errno == EEXIST) {
		/* Left by an apply that did not finish. */
		mq_unlinkat(dirfd, name, 0);
		fd = mq_openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0666);
	}
	if (fd < 0)
		return mq_err_sys("replicate %s", name);
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			mq_unlinkat(dirfd, name, 0);
			errno = e;
			return mq_err_sys("replicate %s", name);
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) < 0)
		return mq_err_sys("replicate %s", name);
	return 0;
}

static int
link_over(int fromfd, const char *from, int tofd, const char *to)
{
	if (mq_linkat(fromfd, from, tofd, to, 0) == 0)
		return 0;
	if (errno == EEXIST && mq_unlinkat(tofd, to, 0) == 0 &&
	    mq_linkat(fromfd, from, tofd, to, 0) == 0)
		return 0;
	return mq_err_sys("replicate %s", to);
}

static int
same_content(int dirfd, const char *name, const char *data, size_t len)
{
	char *buf;
	size_t n;
	if (mq_read_at(dirfd, name, MQ_FRAME_MAX, &buf, &n) < 0)
		return -1;
	int same = n == len && !memcmp(buf, data, len);
	free(buf);
	return same;
}

/* A name that came with other content than ours: kept aside, reported. */
static int
quarantine(struct receiver *r, const char *topic, unsigned k, const char *key,
    const char *origin, const char *data, size_t len)
{
	int qfd = repl_dir(r->sp, "quarantine");
	if (qfd < 0)
		return -1;
	char name[MQ_NAME_MAX + MQ_KEY_LEN + MQ_ID_LEN + 32];
	int rc = repl_quarantine_name(name, sizeof name, topic, k, key, origin);
	if (rc == 0)
		rc = mq_write_file(qfd, name, data, len, 1, 1);
	close(qfd);
	r->quarantined++;
	repl_log(r->o, LOG_WARNING, "quarantined %s/%u/%s from %s: this spool "
	    "has other content under that name (kept in replicate/quarantine/"
	    "%s)", topic, k, key, origin, name);
	return rc < 0 ? -1 : 0;
}

/* P topic k KEY groups */
static int
apply_publish(struct receiver *r, struct rtopic *rt, unsigned k,
    const char *key, const char *groups, const char *origin,
    const char *data, size_t len)
{
	struct rpart *p = part_of(r, rt, k);
	uint64_t seq;
	if (!p)
		return -1;
	if (mq_seq_of(key, &seq) < 0)
		return mq_err(EX_PROTOCOL, "peer: bad message name %s", key);
	double due = deliver_at(data, len);
	/* The groups it went to at the origin that exist here. */
	struct rgroup **gp = NULL;
	size_t ng = 0;
	const char *g = groups, *name;
	size_t n;
	int rc = 0;
	while (rc == 0 && repl_next_group(&g, &name, &n)) {
		struct rgroup *rg = group_of(rt, k, p, name, n), **v;
		if (!rg)
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
		else if (!(v = reallocarray(gp, ng + 1, sizeof *v)))
			rc = mq_err_sys("malloc");
		else
			(gp = v)[ng++] = rg;
	}
	if (rc < 0)
		goto out;
	int have = mq_faccessat(p->logfd, key, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	if (len == 0) {
		/* A relay's record without its message (every message file
		 * has a header): finish what is here, else a hole. */
		for (size_t i = 0; have && rc == 0 && i < ng; i++)
			rc = stage(r, gp[i], key, due);
		rc = rc < 0 ? -1 : have ? 0 : 2;
		goto out;
	}
	if (have) {
		/* Applied before: finish it, or quarantine other content. */
		int same = same_content(p->logfd, key, data, len);
		if (same < 0)
			rc = -1;
		else if (!same)
			rc = quarantine(r, rt->name, k, key, origin, data, len);
		for (size_t i = 0; rc == 0 && same && i < ng; i++)
			rc = stage(r, gp[i], key, due);
		goto out;
	}
	if ((rc = raise_next(p, seq)) < 0)
		goto out;
	r->wrote = 1;
	if (ng == 0) {
		char tmp[MQ_KEY_LEN + 8];
		snprintf(tmp, sizeof tmp, ".r.%.*s", MQ_KEY_LEN, key);
		rc = write_file(p->logfd, tmp, data, len);
		if (rc == 0)
			rc = link_over(p->logfd, tmp, p->logfd, key);
		mq_unlinkat(p->logfd, tmp, 0);
		goto out;
	}
	rc = write_file(gp[0]->tmpfd, key, data, len);
	for (size_t i = 1; rc == 0 && i < ng; i++)
		rc = link_over(gp[0]->tmpfd, key, gp[i]->tmpfd, key);
	/* The commit point. */
	if (rc == 0 && mq_linkat(gp[0]->tmpfd, key, p->logfd, key, 0) < 0)
		rc = mq_err_sys("replicate %s", key);
	for (size_t i = 0; rc == 0 && i < ng; i++)
		rc = stage(r, gp[i], key, due);
out:
	free(gp);
	/* Its idempotency key counts here as at the origin: a retry of
	 * the publish on this spool, promoted, is recognised. */
	size_t ilen;
	const char *ikey = rc == 0 && len ? mq_msg_header(data, len,
	    "Mq-Idempotency-Key", &ilen) : NULL;
	if (ikey && (rc = mq_dedup_dir(rt->t.pfd[k], &p->dedupfd) < 0 ? -1 :
	    mq_dedup_adopt(p->dedupfd, ikey, ilen, key)) == 0)
		r->wrote = 1;
	if (rc == 0 && len)
		r->messages++;
	return rc;
}

/* Whether the record before end here is the one a K or C record names
 * (id; "": the primary could not tell): one that is not, or one past
 * this log's end, was settled on a log that has gone apart from this one
 * since (a demoted spool's own, before its cut), and settles nothing
 * here.  A record below the end that this log does not hold (retention,
 * a gap) is taken as the same: nothing is there to settle. */
static bool
same_record(struct receiver *r, struct rtopic *rt, unsigned k, uint64_t end,
    const char *id)
{
	char here[MQ_ID_LEN + 1];
	uint64_t logend;
	if (!id[0])
		return true;
	int got = mq_log_tail_id(&rt->t, k, end, here);
	if ((got == 1 && !strcmp(here, id)) || (got == 0 &&
	    mq_log_end(&rt->t, k, &logend) == 0 && end <= logend))
		return true;
	repl_log(r->o, LOG_WARNING, "topic %s partition %u: a group's record "
	    "names %s before %" PRIu64 ", which this log does not hold there: "
	    "not applied", rt->name, k, id, end);
	return false;
}

/* Format 2: A, K, C and L change a group of a replica as its primary's
 * consumers changed theirs (grouprepl.c): name is a KEY (A, L), a
 * claim's bits (K) or an offset (C), all checked by mq_jargs_parse. */
static int
apply_group2(struct receiver *r, struct rtopic *rt, unsigned k,
    struct rpart *p, struct rgroup *g, char type, const char *name)
{
	if (!g->gr) {
		struct mq_gdirs d = { g->newfd, g->curfd, g->delayfd, g->name };
		if (!(g->gr = malloc(sizeof *g->gr)))
			return mq_err_sys("malloc");
		if (mq_greplica_open(g->gr, &rt->t, k, g->name, p->hfd, &d) < 0) {
			free(g->gr);
			g->gr = NULL;
			return -1;
		}
	}
	r->wrote = 1;
	uint64_t seqs[MQ_CLAIM_MAX], first, offset;
	unsigned n;
	unsigned char bits[MQ_CLAIM_MAX / 8];
	size_t ns = 0;
	char head[64 + MQ_CLAIM_MAX / 4], id[MQ_ID_LEN + 1];
	size_t hl = 0;
	if ((type == 'K' || type == 'C') && (mq_jarg_id(name, &hl, id) < 0 ||
	    hl >= sizeof head))
		return mq_err(EX_PROTOCOL, "peer: bad record %c %s", type, name);
	memcpy(head, name, hl);
	head[hl] = 0;
	switch (type) {
	case 'L':
		return mq_greplica_name(g->gr, name);
	case 'C':
		mq_decimal(head, MQ_SEQ_MAX, &offset);
		if (!same_record(r, rt, k, offset, id))
			return 0;
		return mq_greplica_commit(g->gr, offset);
	case 'K':
		if (mq_claim_bits_parse(head, &first, &n, bits) < 0)
			return mq_err(EX_PROTOCOL, "peer: bad claim %s", name);
		if (!same_record(r, rt, k, first + n, id))
			return 0;
		for (unsigned i = 0; i < n; i++)
			if (bits[i / 8] >> (i % 8) & 1)
				seqs[ns++] = first + i;
		break;
	default:
		return mq_greplica_settle_key(g->gr, name);
	}
	return mq_greplica_settle(g->gr, seqs, ns);
}

/* Finds the group's link to KEY under whatever name it has now (new/,
 * cur/ or delay/): its directory and name in *fd and name. */
static int
find_entry(struct rgroup *g, const char *key, int *fd, char *name, size_t len)
{
	if (mq_faccessat(g->newfd, key, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		*fd = g->newfd;
		snprintf(name, len, "%s", key);
		return 1;
	}
	if (mq_faccessat(g->tmpfd, key, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		*fd = g->tmpfd;         /* staged by this batch */
		snprintf(name, len, "%s", key);
		return 1;
	}
	int dirs[] = { g->newfd, g->curfd, g->delayfd };
	for (size_t d = 0; d < 3; d++) {
		struct mq_names l = { 0 };
		if (mq_names_read(dirs[d], NULL, &l) < 0)
			return -1;
		size_t skip = d == 2 ? MQ_SEQ_DIGITS + 1 : 0;
		int found = 0;
		for (size_t i = 0; !found && i < l.n; i++)
			if (strlen(l.v[i]) >= skip + MQ_KEY_LEN &&
			    !memcmp(l.v[i] + skip, key, MQ_KEY_LEN)) {
				*fd = dirs[d];
				snprintf(name, len, "%s", l.v[i]);
				found = 1;
			}
		mq_names_free(&l);
		if (found)
			return 1;
	}
	return 0;
}

/* A, L, E, D, R, X: a change to one message of a group. */
static int
apply_change(struct receiver *r, struct rtopic *rt, unsigned k, char type,
    const char *group, const char *name, const char *data, size_t dlen,
    const char *why, size_t wlen)
{
	struct rpart *p = part_of(r, rt, k);
	if (!p)
		return -1;
	struct rgroup *g = group_of(rt, k, p, group, strlen(group));
	if (!g)                         /* no such group here, or an error */
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	bool f2 = rt->t.conf.format == 2;
	if (f2 && strchr("AKCL", type))
		return apply_group2(r, rt, k, p, g, type, name);
	if (type == 'K' || type == 'C')
		return 0;               /* of a topic that is of format 1 here */
	char key[MQ_KEY_LEN + 1], found[MQ_KEY_LEN + 64];
	uint64_t seq;
	snprintf(key, sizeof key, "%s", name);
	if (mq_seq_of(key, &seq) < 0 || (!strchr("ALE", type) &&
	    !mq_is_entry(name)))
		return mq_err(EX_PROTOCOL, "peer: bad message name %s", name);
	int fd, rc = 0;
	switch (type) {
	case 'A':
		r->wrote = 1;
		/* A local consumer may rename it between the look and the
		 * unlink: look again. */
		for (int tries = 0; tries < 5; tries++) {
			rc = find_entry(g, key, &fd, found, sizeof found);
			if (rc != 1 || mq_unlinkat(fd, found, 0) == 0)
				break;
			if (errno != ENOENT)
				return mq_err_sys("replicate ack of %s", key);
		}
		return rc < 0 ? -1 : 0;
	case 'E':
		/* Made durable with the batch (sync_all). */
		r->wrote = 1;
		if (mq_ledger_dir(rt->t.pfd[k], g->name, &g->donefd) < 0)
			return -1;
		return mq_ledger_add(g->donefd, key + MQ_SEQ_DIGITS + 1, 0);
	case 'L':
		if (mq_linkat(p->logfd, key, g->tmpfd, key, 0) < 0 &&
		    errno != EEXIST)
			return errno == ENOENT ? 0 : mq_err_sys("replicate %s",
			    key);
		r->wrote = 1;
		if (raise_next(p, seq) < 0)
			return -1;
		return stage(r, g, key, 0);
	default:
		break;
	}
	/* Format 2: the log decides the head, never a record. */
	if (!f2 && raise_next(p, seq) < 0)
		return -1;
	char dir[MQ_NAME_MAX + 16], wname[MQ_KEY_LEN + 72];
	if (mq_path(dir, sizeof dir, "dlq/%s", group) < 0 ||
	    mq_path(wname, sizeof wname, "%s.why", name) < 0)
		return -1;
	if (type == 'D' && mq_mkdirs(rt->t.pfd[k], dir) < 0)
		return -1;
	int dfd = mq_openat(rt->t.pfd[k], dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", dir);
	r->wrote = 1;
	if (type == 'R') {
		/* Staged like a publish; a repeat finds it staged already. */
		if (mq_renameat(dfd, name, g->tmpfd, key) < 0 && (errno != ENOENT ||
		    mq_faccessat(g->tmpfd, key, F_OK, AT_SYMLINK_NOFOLLOW) < 0)) {
			if (errno != ENOENT)
				rc = mq_err_sys("replicate redrive of %s", name);
		} else {
			rc = stage(r, g, key, 0);
		}
		mq_unlinkat(dfd, wname, 0);
	} else if (type == 'X') {
		if (mq_unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
			rc = mq_err_sys("replicate purge of %s", name);
		mq_unlinkat(dfd, wname, 0);
	} else if (mq_faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		/* D: the record first, as mq_dlq_put does; then the
		 * message, from the queue, the log, or as sent. */
		rc = mq_write_file(dfd, wname, why, wlen, 0, 1) < 0 ? -1 : 0;
		/* Format 2: a name holds no bytes, and log/ no KEY; the dead
		 * letter is the copy sent. */
		int f = rc < 0 ? -1 : f2 ? 0 : find_entry(g, key, &fd, found,
		    sizeof found);
		if (f < 0)
			rc = -1;
		else if (f == 1 && mq_renameat(fd, found, dfd, name) == 0)
			;
		else if (!f2 && mq_linkat(p->logfd, key, dfd, name, 0) == 0)
			;
		else if (dlen) {
			char tmp[MQ_KEY_LEN + 72];
			snprintf(tmp, sizeof tmp, ".r.%s", name);
			rc = write_file(dfd, tmp, data, dlen);
			if (rc == 0)
				rc = link_over(dfd, tmp, dfd, name);
			mq_unlinkat(dfd, tmp, 0);
		}
	}
	close(dfd);
	/* Format 2: a dead letter has left its group's queue. */
	if (rc == 0 && f2 && type == 'D')
		rc = apply_group2(r, rt, k, p, g, 'A', key);
	return rc;
}

/* The current error, the peer's doing: EX_PROTOCOL, saying so. */
static int
peer_fault(void)
{
	char why[1024];
	snprintf(why, sizeof why, "%s", mq_errmsg());
	return mq_err(EX_PROTOCOL, "peer: %s", why);
}

/* CONF <topic>: creates what is missing here, grows the topic, and makes
 * its settings, signers and the keys of a sealed topic the peer's; a
 * group's settings are those it was created with. */
static int
apply_conf(struct receiver *r, const char *buf, size_t len)
{
	const char *end = buf + len, *nl = memchr(buf, '\n', len);
	char topic[MQ_NAME_MAX + 1];
	if (!nl || nl - buf < 6 || (size_t)(nl - buf - 5) > MQ_NAME_MAX)
		return mq_err(EX_PROTOCOL, "peer: bad CONF");
	snprintf(topic, sizeof topic, "%.*s", (int)(nl - buf - 5), buf + 5);
	if (mq_name_check("topic", topic) < 0)
		return mq_err(EX_PROTOCOL, "peer: bad topic name in CONF");
	const char *p = nl + 1;
	int rc = 0;
	while (rc == 0 && p < end) {
		char what[16], name[MQ_NAME_MAX + 1] = "";
		size_t flen;
		nl = memchr(p, '\n', (size_t)(end - p));
		char line[MQ_NAME_MAX + 64];
		if (!nl || (size_t)(nl - p) >= sizeof line)
			return mq_err(EX_PROTOCOL, "peer: bad CONF");
		snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
		int ok = sscanf(line, "topic.conf %zu", &flen) == 1 ?
		    (snprintf(what, sizeof what, "topic"), 1) :
		    sscanf(line, "keys %zu", &flen) == 1 ?
		    (snprintf(what, sizeof what, "keys"), 1) :
		    sscanf(line, "group %200s %zu", name, &flen) == 2 ?
		    (snprintf(what, sizeof what, "group"), 1) : 0;
		p = nl + 1;
		if (!ok || flen > (size_t)(end - p))
			return mq_err(EX_PROTOCOL, "peer: bad CONF");
		if (!strcmp(what, "topic")) {
			struct mq_conf kv;
			struct mq_topic_conf c;
			struct mq_topic_conf now;
			rc = mq_conf_parse(p, flen, "topic.conf", &kv);
			if (rc == 0)
				rc = mq_topic_conf_parse(&kv, &c);
			bool create = rc == 0 &&
			    mq_topic_conf_read(r->sp, topic, &now) < 0;
			/* The signers come along: created with them, or made
			 * the peer's when they differ. */
			int changed = 0;
			if (rc == 0) {
				c.place = NULL;
				rc = changed = mq_signers_adopt(r->sp, topic, &kv,
				    create, &c);
				if (rc < 0 && mq_errcode() == EX_DATAERR)
					rc = mq_err_recode(EX_DATAERR, EX_PROTOCOL);
			}
			if (rc >= 0 && !create && now.partitions < c.partitions) {
				rc = mq_topic_alter(r->sp, topic, c.partitions);
				changed = 1;
			}
			if (rc >= 0 && !create)
				rc = mq_topic_settings_adopt(r->sp, topic, &kv);
			if (rc > 0)
				changed = 1;
			rc = rc < 0 ? -1 : 0;
			mq_conf_free(&kv);
			if (changed)
				topic_forget(r, topic);
		} else if (!strcmp(what, "keys")) {
			/* After topic.conf: the topic is here. */
			rc = mq_topic_keys_adopt(r->sp, topic, p, flen);
			if (rc < 0 && (mq_errcode() == EX_DATAERR ||
			    mq_errcode() == EX_CONFIG))
				rc = peer_fault();
			rc = rc < 0 ? -1 : 0;
		} else if (mq_name_check("group", name) < 0) {
			rc = mq_err(EX_PROTOCOL, "peer: bad group name in CONF");
		} else if (mq_group_exists(r->sp, topic, name) == 0) {
			rc = mq_group_adopt(r->sp, topic, name, p, flen);
			/* A configuration no tool writes: the peer's fault. */
			if (rc < 0 && (mq_errcode() == EX_DATAERR ||
			    mq_errcode() == EX_CONFIG))
				rc = peer_fault();
			topic_forget(r, topic);
		}
		p += flen;
	}
	return rc;
}

/* The end of a batch: files durable, heads committed, records journaled
 * and durable, the vector saved. */
/* syncfs of the spool's file system and of every partition touched
 * (placed partitions may be on others). */
static int
sync_all(struct receiver *r)
{
	if (syncfs(r->sp->fd) < 0)
		return mq_err_sys("sync");
	for (size_t i = 0; i < r->nt; i++)
		for (unsigned k = 0; k < r->tv[i].t.conf.partitions; k++) {
			struct rpart *p = &r->tv[i].pv[k];
			if (p->locked && p->logfd >= 0 && syncfs(p->logfd) < 0)
				return mq_err_sys("sync");
		}
	return 0;
}

/* The end of a batch, in this order: what was written made durable; the
 * heads raised (committed = next) and durable, so that no repair can take
 * back a message whose record is about to be journaled; the records
 * journaled, as the origin's, and durable; only then the staged links
 * renamed into their queues and that made durable; the vector saved.
 * Nothing the batch adds to a queue is visible before its record is in
 * the journal (see the top). */
static int
finish(struct receiver *r)
{
	int rc = 0;
	if (r->wrote)
		rc = sync_all(r);
	for (size_t i = 0; i < r->nt; i++) {
		struct rtopic *rt = &r->tv[i];
		for (unsigned k = 0; k < rt->t.conf.partitions; k++) {
			struct rpart *p = &rt->pv[k];
			if (!p->locked)
				continue;
			if (rc == 0 && p->h.next > p->h.committed) {
				p->h.committed = p->h.next;
				rc = mq_head_write(p->hfd, &p->h, 1);
			}
		}
	}
	if (rc == 0 && r->jb.len)
		rc = mq_journal_write_main(r->sp, &r->jb);
	for (size_t i = 0; rc == 0 && i < r->ns; i++)
		rc = unstage(r->sv[i].g, r->sv[i].key, r->sv[i].due);
	if (rc == 0 && r->ns)
		rc = sync_all(r);
	for (size_t i = 0; i < r->nt; i++)
		for (unsigned k = 0; k < r->tv[i].t.conf.partitions; k++) {
			struct rpart *p = &r->tv[i].pv[k];
			if (p->locked)
				mq_head_unlock(p->hfd);
			p->locked = 0;
		}
	r->jb.len = 0;
	r->wrote = 0;
	r->ns = 0;
	size_t done = r->pending;
	r->batches += r->pending;
	r->groups += r->pending > 0;
	r->pending = 0;
	if (rc == 0)
		rc = repl_seen_save(r->sp, &r->seen);
	if (rc == 0 && done && r->o->advanced)
		*r->o->advanced = 1;
	/* What seen covers now, and every peer confirmed, may go. */
	if (rc == 0)
		repl_trim_every(r->sp, r->o, &r->trimmed, false);
	return rc;
}

/* U, W and Z change which topics and groups there are (replsend.c
 * sends each alone in its batch). */
static bool
structural(char type)
{
	return type == 'U' || type == 'W' || type == 'Z';
}

/* U, W, Z: made by the functions a tool calls, with no partition locked
 * (the record is alone in its batch), and durable when they return;
 * what was opened here of the topics is forgotten.  One that is made
 * already (a batch sent again) changes nothing. */
static int
apply_structure(struct receiver *r, char type, const struct mq_jargs *ja,
    const char *data, size_t len)
{
	int rc;
	r->sp->replaying = true;
	if (type == 'Z')
		rc = mq_topic_delete(r->sp, ja->topic);
	else if (type == 'U')
		rc = mq_group_unsubscribe(r->sp, ja->topic, ja->a);
	else
		rc = mq_wildcard_adopt(r->sp, ja->topic, ja->a, data, len);
	r->sp->replaying = false;
	while (r->nt)
		topic_forget(r, r->tv[0].name);
	if (rc < 0 && mq_errcode() == EX_NOINPUT)
		rc = 0;
	else if (rc < 0 && (mq_errcode() == EX_DATAERR ||
	    mq_errcode() == EX_CONFIG))
		rc = peer_fault();
	return rc < 0 ? -1 : 0;
}

/* One record of a batch, checked (batch_check): its line, split into
 * rec; b, where the frame has it. */
static int
apply_record(struct receiver *r, const struct mq_jrec *rec,
    const struct brec *b)
{
	const char *origin = rec->origin;
	uint64_t seq = rec->seq;
	if (!r->made_up && seq < repl_seen_get(&r->seen, origin))
		return 0;               /* had already */
	r->records++;
	/* A record of a later version is neither applied nor journaled:
	 * nothing of this version could read it back but as a record of
	 * its own.  It counts as seen. */
	if (!b->known) {
		r->dropped++;
		return r->made_up ? 0 : repl_seen_put(&r->seen, origin, seq + 1);
	}
	int rc = 0, hole = 0;
	struct mq_jargs ja;
	struct rtopic *rt = NULL;
	if (structural(rec->type) && mq_jargs_parse(rec->type, rec->args,
	    &ja) == 0)
		rc = apply_structure(r, rec->type, &ja, b->data, b->dlen);
	else if (rec->type != 'T' && mq_jargs_parse(rec->type, rec->args,
	    &ja) == 0 && !(rt = topic_of(r, ja.topic))) {
		if (mq_errcode() != EX_NOINPUT)
			return -1;
		repl_log(r->o, LOG_WARNING, "record for topic %s, which is not "
		    "here: skipped", ja.topic);
	}
	if (rt && rec->type == 'P') {
		rc = apply_publish(r, rt, ja.k, ja.a, ja.b, origin, b->data,
		    b->dlen);
		/* A hole, or one filled at last. */
		if (rc >= 0 && !r->made_up &&
		    repl_seen_hole(&r->seen, origin, seq, rc == 2) < 0)
			rc = -1;
		if (rc == 2) {
			rc = 0;
			hole = 1;
		}
	} else if (rt && rec->type != 'S') {
		/* S only marks how far the logs went, which came before. */
		rc = apply_change(r, rt, ja.k, rec->type, ja.a, ja.b, b->data,
		    b->dlen, b->data + b->dlen, b->wlen);
	}
	/* Made-up records (--compare) are no one's history; a hole is
	 * journaled (a peer fed from here has the same hole) but does not
	 * move the vector past it. */
	if (rc == 0 && !r->made_up)
		rc = mq_journal_raw(&r->jb, origin, seq, rec->text, rec->len);
	if (rc == 0 && !r->made_up && !hole)
		rc = repl_seen_put(&r->seen, origin, seq + 1);
	return rc;
}

static int
cmp_brec_part(const void *a, const void *b)
{
	const struct brec *x = *(const struct brec *const *)a,
	    *y = *(const struct brec *const *)b;
	int c = strcmp(x->topic, y->topic);
	return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* Takes the head locks of every partition the batch's records touch, in
 * the order of topic and partition, as mq_lock_all does, so that a local
 * subscribe or alter waiting for some of them cannot wait for us while
 * we wait for it. */
static int
lock_in_order(struct receiver *r, size_t n)
{
	const struct brec **v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return mq_err_sys("malloc");
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (r->bv[i].topic[0])
			v[m++] = &r->bv[i];
	qsort(v, m, sizeof *v, cmp_brec_part);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < m; i++) {
		if (i && !cmp_brec_part(&v[i - 1], &v[i]))
			continue;
		struct rtopic *rt = topic_of(r, v[i]->topic);
		if (!rt)
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
		else if (v[i]->k < rt->t.conf.partitions &&
		    !part_of(r, rt, v[i]->k))
			rc = -1;
	}
	free(v);
	return rc;
}

/* The peer sent what no sender of this version sends: the batch is
 * refused whole, and the session ends with this error, which names the
 * peer (logged where session errors are, and sent to the peer). */
static int
refuse(const struct receiver *r, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "name (id)", or the id of a peer without a name (which the session
 * names by its id). */
static const char *
who(const struct receiver *r, char buf[200])
{
	if (!strcmp(r->peer_name, r->peer))
		return r->peer;
	snprintf(buf, 200, "%s (%s)", r->peer_name, r->peer);
	return buf;
}

static int
refuse(const struct receiver *r, uint64_t at, const char *fmt, ...)
{
	char why[512], w[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return mq_err(EX_PROTOCOL, "peer: %s sent a bad record at %" PRIu64
	    " of its journal, so its batch is refused: %s", who(r, w), at, why);
}

static int
batch_head(const struct receiver *r, const char *f, size_t len,
    struct bhead *h)
{
	char l[128], w[200];
	const char *p;
	uint64_t n;
	if (repl_line(f, len, l, sizeof l, &h->len) < 0 ||
	    strncmp(l, "BATCH ", 6) ||
	    !(p = mq_decimal(l + 6, UINT64_MAX, &h->start)) || *p != ' ' ||
	    !(p = mq_decimal(p + 1, UINT64_MAX, &h->end)) || *p != ' ' ||
	    !(p = mq_decimal(p + 1, REPL_BATCH_RECORDS, &n)) ||
	    h->start > h->end)
		p = NULL;
	h->compare = p && !strncmp(p, " compare", 8);
	if (h->compare)
		p += 8;
	h->epoch = 0;
	if (p && !strncmp(p, " epoch=", 7))
		p = mq_decimal(p + 7, MQ_EPOCH_MAX, &h->epoch);
	if (!p || *p)
		return mq_err(EX_PROTOCOL, "peer: %s sent a bad BATCH line "
		    "(at most %d records, start <= end)", who(r, w),
		    REPL_BATCH_RECORDS);
	h->n = (size_t)n;
	return 0;
}

/* A record's header, "at len dlen wlen hash", from the frame at p (left
 * bytes); *used: its length with the newline. */
static int
brec_head(const char *p, size_t left, struct brec *b, size_t *used)
{
	char l[128];
	const char *q;
	uint64_t at, ll, dlen, wlen;
	if (repl_line(p, left, l, sizeof l, used) < 0 ||
	    !(q = mq_decimal(l, UINT64_MAX, &at)) || *q != ' ' ||
	    !(q = mq_decimal(q + 1, SIZE_MAX, &ll)) || *q != ' ' ||
	    !(q = mq_decimal(q + 1, SIZE_MAX, &dlen)) || *q != ' ' ||
	    !(q = mq_decimal(q + 1, SIZE_MAX, &wlen)) || *q != ' ')
		return -1;
	q++;
	if (strcmp(q, "-") && !mq_is_id(q, strlen(q)))
		return -1;
	b->at = at;
	b->ll = (size_t)ll;
	b->dlen = (size_t)dlen;
	b->wlen = (size_t)wlen;
	snprintf(b->hash, sizeof b->hash, "%s", q);
	return 0;
}

/* Whether record i of the batch is the first of its origin that the
 * vector does not have yet. */
static bool
new_origin(const struct receiver *r, size_t i, const char *origin)
{
	if (repl_seen_has(&r->seen, origin))
		return false;
	for (size_t j = 0; j < i; j++)
		if (!memcmp(r->bv[j].line + 1, origin, MQ_ID_LEN))
			return false;
	return true;
}

/* One record: its line (split into rec, in r->line), its origin and its
 * place in the sender's journal, its type and arguments, its data. */
static int
brec_check(struct receiver *r, const struct bhead *h, size_t i,
    struct mq_jrec *rec)
{
	struct brec *b = &r->bv[i];
	memcpy(r->line, b->line, b->ll);
	if (mq_jrec_parse(r->line, b->ll, rec) < 0 || !rec->origin[0])
		return refuse(r, b->at, "not a record line (@origin seq T ms "
		    "args, printable ASCII)");
	int own = !strcmp(rec->origin, r->peer);
	if (!strcmp(rec->origin, r->me))
		return refuse(r, b->at, "a record of this spool's own");
	/* The peer's own records are at their offsets, in the batch, in
	 * order; made-up records (compare) are the peer's. */
	if (h->compare && !own)
		return refuse(r, b->at, "a made-up record of origin %s",
		    rec->origin);
	if (!h->compare && (b->at < h->start || b->at >= h->end ||
	    (i && b->at <= r->bv[i - 1].at)))
		return refuse(r, b->at, "not in order inside its batch [%"
		    PRIu64 ", %" PRIu64 ")", h->start, h->end);
	if (!h->compare && own && rec->seq != b->at)
		return refuse(r, b->at, "a record of its own at sequence %" PRIu64,
		    rec->seq);
	struct mq_jargs ja;
	b->known = strchr(MQ_JTYPES, rec->type) != NULL;
	b->type = rec->type;
	if (b->known && mq_jargs_parse(rec->type, rec->args, &ja) < 0)
		return refuse(r, b->at, "bad arguments for a %c record: a name "
		    "that is not of its grammar, or extra words", rec->type);
	if (rec->type == 'M')
		return refuse(r, b->at, "an M record, which is never replicated");
	if (b->known && structural(rec->type) && h->n != 1)
		return refuse(r, b->at, "a %c record that is not alone in its "
		    "batch", rec->type);
	if ((b->dlen && !strchr("PDW", rec->type)) ||
	    (b->wlen && rec->type != 'D') ||
	    (!strcmp(b->hash, "-")) != !(b->dlen + b->wlen))
		return refuse(r, b->at, "data that a %c record does not carry",
		    rec->type);
	b->topic[0] = 0;
	if (b->known && rec->type != 'T' && !structural(rec->type)) {
		memcpy(b->topic, ja.topic, sizeof b->topic);
		b->k = ja.k;
	}
	return 0;
}

/* Every record of the batch after its first line (from p to lim),
 * checked before anything is touched; the batch is refused whole if one
 * of them is bad, so nothing a peer sends reaches a path, the journal or
 * the vector without passing the grammar of mq-spool(5). */
static int
batch_check(struct receiver *r, const struct bhead *h, const char *p,
    const char *lim)
{
	size_t fresh = 0;
	struct mq_jrec rec;
	for (size_t i = 0; i < h->n; i++) {
		struct brec *b = &r->bv[i];
		size_t used, left = (size_t)(lim - p);
		if (brec_head(p, left, b, &used) < 0)
			return refuse(r, h->start, "the header of record %zu of "
			    "the batch that starts there is not \"at len dlen "
			    "wlen hash\"", i + 1);
		p += used;
		left -= used;
		if (b->ll > left || b->ll >= sizeof r->line ||
		    b->dlen > left - b->ll || b->wlen > left - b->ll - b->dlen)
			return refuse(r, b->at, "longer than what is left of the "
			    "frame, or than a record");
		b->line = p;
		b->data = p + b->ll;
		p += b->ll + b->dlen + b->wlen;
		if (brec_check(r, h, i, &rec) < 0)
			return -1;
		fresh += !h->compare && new_origin(r, i, rec.origin);
	}
	if (p != lim)
		return refuse(r, h->end, "more bytes than its %zu records", h->n);
	if (h->compare)
		return 0;               /* made-up records: not in the vector */
	/* The peer itself comes into the vector at the end of the batch,
	 * and ours is in what SEEN says. */
	fresh += new_origin(r, h->n, r->peer) + !repl_seen_has(&r->seen, r->me);
	if (r->seen.n + fresh > REPL_ORIGINS_MAX)
		return refuse(r, h->end, "more than %d origins (a vector holds "
		    "at most that many)", REPL_ORIGINS_MAX);
	return 0;
}

/* Whether a batch can join those applied and not finished yet: all the
 * partitions it touches are locked already, and it has no U, W or Z
 * (which take the locks of a topic's partitions themselves).  Taking
 * another lock now could break the order of lock_in_order. */
static bool
joins_group(struct receiver *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct brec *b = &r->bv[i];
		struct rtopic *rt;
		if (b->known && structural(b->type))
			return false;
		if (!b->topic[0])
			continue;
		if (!(rt = topic_of(r, b->topic)) || b->k >= rt->t.conf.partitions ||
		    !rt->pv[b->k].locked)
			return false;
	}
	return true;
}

/* A batch: its first line h, its records after it.  Returns 0 (applied:
 * finished, or pending when more is 1), or 1 with *bad: a message was
 * damaged in transit (what came before it is finished).  Batches that
 * come one right after another are applied together and finished once:
 * one sync for all of them. */
static int
apply_batch(struct receiver *r, const struct bhead *h, const char *buf,
    size_t len, uint64_t *bad, bool more)
{
	const char *lim = buf + len;
	if (batch_check(r, h, buf + h->len, lim) < 0) {
		/* Nothing of it touched; those before it are finished. */
		if (r->pending)
			finish(r);
		return -1;
	}
	/* The lock order starts again after the batches before it. */
	if (r->pending && (h->compare != r->made_up || !joins_group(r, h->n)) &&
	    finish(r) < 0)
		return -1;
	r->made_up = h->compare;
	int rc = lock_in_order(r, h->n);
	for (size_t i = 0; rc == 0 && i < h->n; i++) {
		const struct brec *b = &r->bv[i];
		if (b->dlen + b->wlen) {
			char want[33];
			repl_hash_hex(b->data, b->dlen + b->wlen, want);
			if (strcmp(want, b->hash) && r->made_up) {
				finish(r);
				return mq_err(EX_PROTOCOL, "peer: a message "
				    "failed its hash (changed in transit?)");
			}
			if (strcmp(want, b->hash)) {
				repl_log(r->o, LOG_WARNING, "a message from %s "
				    "failed its hash: asking for it again",
				    r->peer_name);
				*bad = b->at;
				rc = finish(r);
				return rc < 0 ? -1 : 1;
			}
		}
		/* The line is not NUL-terminated in the frame, and the
		 * message follows it: a copy, checked already. */
		struct mq_jrec rec;
		memcpy(r->line, b->line, b->ll);
		rc = mq_jrec_parse(r->line, b->ll, &rec) < 0 ?
		    mq_err(EX_SOFTWARE, "record checked, then not read") :
		    apply_record(r, &rec, b);
	}
	if (rc == 0 && !r->made_up)
		rc = repl_seen_settle(&r->seen, r->peer, h->end);
	r->pending++;
	if (rc == 0 && more)
		return 0;
	int frc = finish(r);
	return rc < 0 || frc < 0 ? -1 : 0;
}

/* The "Q group KEY" lines of a WANT: for each group of the topic here,
 * the KEYs of the peer's log (have, sorted) it holds in partition k, so
 * that the peer can settle those its own group no longer holds. */
static int
queued_lines(struct rtopic *rt, unsigned k, const struct mq_names *have,
    FILE *o)
{
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(&rt->t, &groups);
	for (size_t g = 0; rc == 0 && g < groups.n; g++) {
		struct mq_names held = { 0 };
		rc = mq_group_held(rt->t.pfd[k], groups.v[g], &held);
		for (size_t i = 0; rc == 0 && i < held.n; i++)
			if (mq_names_has(have, held.v[i]))
				fprintf(o, "Q %s %s\n", groups.v[g], held.v[i]);
		mq_names_free(&held);
	}
	mq_names_free(&groups);
	return rc;
}

/* HAVE <topic> <k>, then "KEY hash" lines (--compare): answers WANT
 * <topic> <k>, the KEYs that log/ lacks or holds with other content
 * (those are quarantined when they come), then the Q lines of what this
 * spool's groups hold of the others (queued_lines). */
static int
answer_have(struct receiver *r, const char *f, size_t len)
{
	char topic[MQ_NAME_MAX + 1];
	unsigned k;
	const char *end = f + len, *p = memchr(f, '\n', len);
	char head[MQ_NAME_MAX + 32];
	snprintf(head, sizeof head, "%.*s", p ? (int)(p - f) : 0, f);
	if (!p || sscanf(head, "HAVE %200s %u", topic, &k) != 2)
		return mq_err(EX_PROTOCOL, "peer: bad HAVE");
	struct rtopic *rt = topic_of(r, topic);
	if (!rt || k >= rt->t.conf.partitions)
		return mq_err(EX_PROTOCOL, "peer: HAVE of %s/%u, not here",
		    topic, k);
	int lfd = mq_dir_open(rt->t.pfd[k], "log");
	if (lfd < 0)
		return -1;
	char *out = NULL;
	size_t olen = 0;
	FILE *o = open_memstream(&out, &olen);
	if (!o) {
		close(lfd);
		return mq_err_sys("malloc");
	}
	fprintf(o, "WANT %s %u\n", topic, k);
	struct mq_names have = { 0 };
	int rc = 0;
	for (p++; rc == 0 && p < end; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char key[MQ_KEY_LEN + 1], hash[33];
		if (ll != MQ_KEY_LEN + 33 || p[MQ_KEY_LEN] != ' ') {
			rc = mq_err(EX_PROTOCOL, "peer: bad HAVE line");
			break;
		}
		memcpy(key, p, MQ_KEY_LEN);
		key[MQ_KEY_LEN] = 0;
		memcpy(hash, p + MQ_KEY_LEN + 1, 32);
		hash[32] = 0;
		p += ll + 1;
		char *buf;
		size_t blen;
		int want = !mq_is_key(key);
		if (!want && mq_read_at(lfd, key, MQ_FRAME_MAX, &buf, &blen) == 0) {
			char mine[33];
			repl_hash_hex(buf, blen, mine);
			want = strcmp(mine, hash) != 0;
			free(buf);
		} else if (!want) {
			want = 1;       /* not here */
		}
		if (want && mq_is_key(key))
			fprintf(o, "%s\n", key);
		else if (!want)
			rc = mq_names_push(&have, key, MQ_KEY_LEN);
	}
	close(lfd);
	mq_names_sort(&have);
	if (rc == 0)
		rc = queued_lines(rt, k, &have, o);
	mq_names_free(&have);
	if (fclose(o) != 0 && rc == 0)
		rc = mq_err_sys("malloc");
	if (rc == 0)
		rc = mq_link_send(r->l, out, olen);
	free(out);
	return rc;
}

/* A batch cut short after its records were journaled (the journal goes
 * on past what replicate/seen covers) left its staged links in tmp/; its
 * records count as seen, so no resend finishes them: this does, from
 * those records. */
static int
finish_cut(struct receiver *r, uint64_t covered)
{
	if (mq_journal_size(r->sp) <= covered)
		return 0;
	struct mq_jreader jr;
	struct mq_jrec rec;
	int rc = mq_jreader_open(r->sp, &jr, covered), got = 0;
	size_t n = 0;
	while (rc == 0 && (got = mq_jreader_next(&jr, &rec)) == 1) {
		struct mq_jargs ja;
		if (!rec.origin[0] || !strchr("PLR", rec.type) ||
		    mq_jargs_parse(rec.type, rec.args, &ja) < 0)
			continue;
		/* P topic k KEY groups; L and R topic k group KEY-or-name */
		unsigned k = ja.k;
		const char *key = rec.type == 'P' ? ja.a : ja.b;
		const char *groups = rec.type == 'P' ? ja.b : ja.a;
		struct rtopic *rt = topic_of(r, ja.topic);
		if (!rt || k >= rt->t.conf.partitions || mq_seq_of(key,
		    &(uint64_t){ 0 }) < 0)
			continue;
		char kbuf[MQ_KEY_LEN + 1];
		snprintf(kbuf, sizeof kbuf, "%.*s", MQ_KEY_LEN, key);
		double due = 0;
		char path[MQ_KEY_LEN + 8], *buf;
		size_t len;
		snprintf(path, sizeof path, "log/%s", kbuf);
		if (mq_read_at(rt->t.pfd[k], path, MQ_FRAME_MAX, &buf, &len) == 0) {
			due = deliver_at(buf, len);
			free(buf);
		}
		const char *g = groups, *name;
		size_t gl;
		while (rc == 0 && repl_next_group(&g, &name, &gl)) {
			struct rgroup *rg = group_of(rt, k, &rt->pv[k], name, gl);
			if (!rg && mq_errcode() != EX_NOINPUT)
				rc = -1;
			if (rg && mq_faccessat(rg->tmpfd, kbuf, F_OK,
			    AT_SYMLINK_NOFOLLOW) == 0) {
				/* Rare: a sync for each (placed partitions
				 * may be on other file systems). */
				rc = unstage(rg, kbuf, due);
				if (rc == 0 && syncfs(rg->newfd) < 0)
					rc = mq_err_sys("sync");
				n++;
			}
		}
	}
	if (got < 0)
		rc = -1;
	mq_jreader_close(&jr);
	if (rc == 0 && n)
		repl_log(r->o, LOG_INFO, "finished %zu link(s) a cut batch left "
		    "staged", n);
	return rc;
}

/* Batches are applied one at a time into a spool, whichever session
 * they come from: replicate/lock-recv, held from the first record to
 * the confirmation.  So several peers may send to one spool at once. */
static int
lock_open(mq_spool *sp)
{
	int dfd = repl_dir(sp, ".");
	if (dfd < 0)
		return -1;
	int fd = mq_file_open(dfd, "lock-recv", O_RDWR | O_CREAT, 0666, NULL);
	close(dfd);
	return fd;
}

static int
lock_set(int fd, short type)
{
	if (type == F_UNLCK) {
		mq_lock_drop(fd, MQ_LOCK_WRITE);
		return 0;
	}
	return mq_lock_take(fd, MQ_LOCK_WRITE, 1, "replicate/lock-recv") < 0 ?
	    -1 : 0;
}

/* A line of ENDS: where partition k of t ends here, and its record's
 * id before that. */
static int
end_line(const struct mq_topic *t, unsigned k, void *f)
{
	uint64_t end;
	char id[MQ_ID_LEN + 1];
	int got = mq_log_end(t, k, &end) < 0 ? -1 :
	    mq_log_tail_id(t, k, end, id);
	return got < 0 ? -1 : repl_ends_line(f, t->name, k, end,
	    got ? id : NULL);
}

/* ENDS: where the log of each partition of format 2 ends here, and the
 * id of its record before that (mq-protocol(5), Format 2 partitions). */
static int
send_ends(struct receiver *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = f ? 0 : mq_err_sys("open_memstream");
	if (rc == 0)
		fputs("ENDS\n", f);
	if (rc == 0)
		rc = mq_partitions2_each(r->sp, end_line, f);
	if (f && fclose(f) != 0 && rc == 0)
		rc = mq_err_sys("open_memstream");
	if (rc == 0)
		rc = mq_link_send(r->l, buf, len);
	free(buf);
	return rc;
}

/* A SEG frame: where its segment goes, and a copy of it (the link's
 * buffer holds the next frame). */
struct segin {
	size_t ti;                      /* its topic, in r->tv */
	unsigned k;
	uint64_t first, epoch;
	char *data;
};

/* Frames read ahead while segments come faster than they are synced. */
#define SEG_GROUP_BYTES (16u << 20)

/* SEG topic k first count hash [epoch=N], then a segment, parsed and its
 * hash checked into s. */
static int
seg_frame(struct receiver *r, const char *f, size_t len, struct segin *s,
    struct mq_log_piece *pc)
{
	const char *nl = memchr(f, '\n', len);
	char line[MQ_NAME_MAX + 160], topic[MQ_NAME_MAX + 1], hash[40];
	char ep[32] = "";
	unsigned k;
	uint64_t first, count, epoch = 0;
	if (!nl || (size_t)(nl - f) >= sizeof line)
		return mq_err(EX_PROTOCOL, "peer: bad SEG frame");
	memcpy(line, f, (size_t)(nl - f));
	line[nl - f] = 0;
	int n = sscanf(line, "SEG %200s %u %" SCNu64 " %" SCNu64 " %39s %31s",
	    topic, &k, &first, &count, hash, ep);
	const char *e = NULL;
	if (n < 5 || mq_name_check("topic", topic) < 0 ||
	    strlen(hash) != 32 || (n == 6 && (strncmp(ep, "epoch=", 6) ||
	    !(e = mq_decimal(ep + 6, MQ_EPOCH_MAX, &epoch)) || *e)))
		return mq_err(EX_PROTOCOL, "peer: bad SEG frame");
	const char *data = nl + 1;
	size_t dlen = len - (size_t)(data - f);
	char got[33];
	repl_hash_hex(data, dlen, got);
	if (strcmp(got, hash))
		return mq_err(EX_PROTOCOL, "peer: segment %s/%u/%" PRIu64
		    " damaged on its way", topic, k, first);
	struct rtopic *rt = topic_of(r, topic);
	if (!rt)
		return -1;
	if (rt->t.conf.format != 2 || k >= rt->t.conf.partitions)
		return mq_err(EX_PROTOCOL, "peer: a segment for %s/%u, which is "
		    "not a partition of format 2 here", topic, k);
	if (!(s->data = malloc(dlen ? dlen : 1)))
		return mq_err_sys("malloc");
	memcpy(s->data, data, dlen);
	s->ti = (size_t)(rt - r->tv);
	s->k = k;
	s->first = first;
	s->epoch = epoch;
	*pc = (struct mq_log_piece){ .data = s->data, .len = dlen };
	return 0;
}

/* The segments of v, linked at our logs' ends (logship.c): those of one
 * partition that came one after another made durable together.  Under
 * replicate/lock-recv, with the epoch checked, as a batch is. */
static int
link_segments(struct receiver *r, int lfd, const struct segin *v,
    struct mq_log_piece *pc, size_t n)
{
	int rc = lock_set(lfd, F_WRLCK);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (i == 0 || v[i].epoch != v[i - 1].epoch)
			rc = repl_epoch_batch(r->sp, v[i].epoch, r->peer,
			    r->peer_name);
	for (size_t i = 0, j; rc == 0 && i < n; i = j) {
		for (j = i + 1; j < n && v[j].ti == v[i].ti && v[j].k == v[i].k;
		    j++)
			;
		int synced = mq_log_import_many(&r->tv[v[i].ti].t, v[i].k,
		    &pc[i], j - i, true);
		if (synced < 0)
			rc = mq_errcode() == EX_DATAERR ? peer_fault() : -1;
		else
			r->groups += (uint64_t)synced;
	}
	lock_set(lfd, F_UNLCK);
	return rc;
}

/* SEG frames, as many as have come (REPL_GROUP at most), linked, then
 * each answered with SEGOK and the log's end now; what we hold of one
 * with other bytes is kept, the peer's copy quarantined.  The first is
 * in *buf; a frame read after them that is not one is left there for
 * the caller (*held). */
static int
apply_segments(struct receiver *r, int lfd, const void **buf, size_t *len,
    int *held)
{
	struct segin v[REPL_GROUP];
	struct mq_log_piece pc[REPL_GROUP];
	size_t n = 0, bytes = 0;
	int rc = seg_frame(r, *buf, *len, &v[0], &pc[0]), cut = 0;
	if (rc < 0)
		return -1;
	for (bytes = pc[n++].len; n < REPL_GROUP && bytes < SEG_GROUP_BYTES &&
	    mq_link_waiting(r->l); bytes += pc[n++].len) {
		int got = mq_link_recv(r->l, buf, len);
		if (got <= 0) {
			/* What came whole is still linked. */
			cut = got < 0 ? -1 : mq_err(EX_PROTOCOL, "peer: ended "
			    "without END");
			break;
		}
		/* Any other frame, or one that fails, is the caller's. */
		if (*len < 4 || memcmp(*buf, "SEG ", 4) ||
		    seg_frame(r, *buf, *len, &v[n], &pc[n]) < 0) {
			*held = 1;
			break;
		}
	}
	rc = link_segments(r, lfd, v, pc, n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct rtopic *rt = &r->tv[v[i].ti];
		if (pc[i].out.conflicts) {
			char key[MQ_KEY_LEN + 1];
			snprintf(key, sizeof key, "%020" PRIu64 ".segment",
			    v[i].first);
			rc = quarantine(r, rt->name, v[i].k, key, r->peer,
			    pc[i].data, pc[i].len);
		}
		r->messages += pc[i].out.linked;
		r->segments++;
		if (pc[i].out.linked && r->o->advanced)
			*r->o->advanced = 1;
		if (rc == 0 && cut == 0)
			rc = repl_send_text(r->l, "SEGOK %s %u %" PRIu64,
			    rt->name, v[i].k, pc[i].out.end);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].data);
	return rc < 0 ? -1 : cut;
}

int
repl_recv(mq_spool *sp, mq_link *l, const char *peer, const char *peer_name,
    const struct repl_epoch *ep, const struct mq_repl_opts *o)
{
	struct receiver r = { .sp = sp, .l = l, .o = o };
	snprintf(r.peer, sizeof r.peer, "%s", peer);
	snprintf(r.peer_name, sizeof r.peer_name, "%s", peer_name);
	r.bv = calloc(REPL_BATCH_RECORDS, sizeof *r.bv);
	int lfd = r.bv ? lock_open(sp) : mq_err_sys("malloc");
	int rc = lfd < 0 ? -1 : repl_spool_id(sp, r.me);
	uint64_t covered;
	if (rc == 0 && (rc = lock_set(lfd, F_WRLCK)) == 0) {
		rc = repl_seen_load(sp, &r.seen, &covered);
		if (rc == 0)
			rc = finish_cut(&r, covered);
		lock_set(lfd, F_UNLCK);
	}
	/* What we have of our own: the whole journal. */
	if (rc == 0)
		rc = repl_seen_put(&r.seen, r.me, mq_journal_size(sp));
	if (rc == 0)
		rc = repl_seen_send(l, &r.seen);
	if (rc == 0 && ep->segments)
		rc = send_ends(&r);
	int skipping = 0, held = 0;
	uint64_t resend = 0;
	const void *buf;
	size_t len;
	while (rc == 0) {
		/* A frame read while batches were grouped comes first. */
		int got = held ? 1 : mq_link_recv(l, &buf, &len);
		held = 0;
		if (got <= 0) {
			rc = got < 0 ? -1 : mq_err(EX_PROTOCOL, "peer: ended "
			    "without END");
			break;
		}
		char *f = (char *)buf;
		if (len >= 3 && !memcmp(f, "END", 3)) {
			/* Read the peer's final frame, so that it is not
			 * writing it into a closed connection. */
			mq_link_recv(l, &buf, &len);
			break;
		}
		/* Idle: what the last batches left of the journal may go. */
		if (len >= 4 && !memcmp(f, "PING", 4)) {
			repl_trim_every(sp, o, &r.trimmed, false);
			continue;
		}
		if (len >= 5 && !memcmp(f, "CONF ", 5)) {
			rc = apply_conf(&r, f, len);
			continue;
		}
		if (len >= 5 && !memcmp(f, "HAVE ", 5)) {
			rc = answer_have(&r, f, len);
			continue;
		}
		if (len >= 4 && !memcmp(f, "SEG ", 4)) {
			rc = apply_segments(&r, lfd, &buf, &len, &held);
			continue;
		}
		if (len >= 6 && !memcmp(f, "ERROR ", 6)) {
			rc = repl_error_frame(f, len);
			break;
		}
		if (len < 6 || memcmp(f, "BATCH ", 6)) {
			rc = mq_err(EX_PROTOCOL, "peer: unexpected frame");
			break;
		}
		struct bhead h;
		uint64_t bad = 0;
		if ((rc = batch_head(&r, f, len, &h)) < 0)
			break;
		if (skipping && h.start != resend) {
			rc = repl_send_text(l, "SKIP");
			continue;
		}
		skipping = 0;
		/* Another session may have applied records meanwhile. */
		repl_seen_free(&r.seen);
		int ab = lock_set(lfd, F_WRLCK) < 0 ||
		    repl_epoch_batch(sp, h.epoch, peer, peer_name) < 0 ||
		    repl_seen_load(sp, &r.seen, &covered) < 0 ||
		    finish_cut(&r, covered) < 0 ? -1 : 0;
		/* Batches already on their way are applied with this one and
		 * made durable once; their OKs go after that (REPL_GROUP). */
		uint64_t ok[REPL_GROUP];
		size_t nok = 0;
		while (ab == 0) {
			bool more = nok + 1 < REPL_GROUP && mq_link_waiting(l);
			if ((ab = apply_batch(&r, &h, f, len, &bad, more)) != 0)
				break;
			ok[nok++] = h.end;
			if (!more)
				break;
			got = mq_link_recv(l, &buf, &len);
			f = (char *)buf;
			if (got == 1 && len >= 6 && !memcmp(f, "BATCH ", 6) &&
			    batch_head(&r, f, len, &h) == 0 &&
			    (ab = repl_epoch_batch(sp, h.epoch, peer,
			    peer_name)) == 0)
				continue;
			if (ab < 0) {
				finish(&r);
				break;
			}
			/* Not a batch: it waits for those to be finished. */
			held = got == 1;
			ab = finish(&r) < 0 || got < 0 ? -1 : 0;
			if (got == 0)
				rc = mq_err(EX_PROTOCOL, "peer: ended without END");
			break;
		}
		lock_set(lfd, F_UNLCK);
		for (size_t i = 0; rc == 0 && i < nok && ab >= 0; i++)
			rc = repl_send_text(l, "OK %" PRIu64, ok[i]);
		if (ab < 0)
			rc = -1;
		else if (rc == 0 && ab == 1) {
			skipping = 1;
			resend = bad;
			rc = repl_send_text(l, "RESEND %" PRIu64, bad);
		}
	}
	if (rc == 0) {
		repl_trim_every(sp, o, &r.trimmed, true);
		repl_log(o, LOG_INFO, "from %s: applied %" PRIu64 " records (%"
		    PRIu64 " messages) in %" PRIu64 " batches and %" PRIu64
		    " segments, made durable %" PRIu64 " times%s", peer_name,
		    r.records - r.dropped, r.messages, r.batches, r.segments,
		    r.groups,
		    r.quarantined ? ", some quarantined" : "");
	}
	if (r.dropped)
		repl_log(o, LOG_WARNING, "from %s: dropped %" PRIu64 " records of "
		    "types this version does not know", peer_name, r.dropped);
	for (size_t i = 0; i < r.nt; i++)
		rtopic_close(&r.tv[i]);
	free(r.tv);
	mq_jbuf_free(&r.jb);
	free(r.sv);
	free(r.bv);
	repl_seen_free(&r.seen);
	if (lfd >= 0)
		close(lfd);
	return rc;
}

/* Staged links an interrupted receive left in g/<G>/tmp/: into the queue
 * if the message reached log/, else away. */
static int
unstage_all(mq_spool *sp, const char *topic, size_t *n)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	struct mq_names groups = { 0 };
	/* Format 2 stages nothing: a segment is linked whole. */
	int rc = t.conf.format == 2 ? 0 : mq_groups_read(&t, &groups);
	for (unsigned k = 0; rc == 0 && t.conf.format == 1 &&
	    k < t.conf.partitions; k++) {
		if (mq_partition_repair_try(&t, k) < 0) {
			rc = -1;
			break;
		}
		int lfd = mq_dir_open(t.pfd[k], "log");
		for (size_t i = 0; lfd >= 0 && rc == 0 && i < groups.n; i++) {
			struct rpart p = { .logfd = lfd, .dedupfd = -1 };
			struct rtopic rt = { .t = t };
			struct rgroup *g = group_of(&rt, k, &p, groups.v[i],
			    strlen(groups.v[i]));
			struct mq_names l = { 0 };
			if ((!g && mq_errcode() != EX_NOINPUT) ||
			    (g && mq_names_read(g->tmpfd, NULL, &l) < 0))
				rc = -1;
			for (size_t j = 0; rc == 0 && j < l.n; j++) {
				if (!mq_is_key(l.v[j]))
					continue;
				if (mq_faccessat(lfd, l.v[j], F_OK,
				    AT_SYMLINK_NOFOLLOW) < 0) {
					mq_unlinkat(g->tmpfd, l.v[j], 0);
					continue;
				}
				char *buf;
				size_t len;
				double due = 0;
				if (mq_read_at(g->tmpfd, l.v[j], MQ_FRAME_MAX, &buf,
				    &len) == 0) {
					due = deliver_at(buf, len);
					free(buf);
				}
				rc = unstage(g, l.v[j], due);
				(*n)++;
			}
			if (rc == 0 && l.n && syncfs(g->newfd) < 0)
				rc = mq_err_sys("sync");
			mq_names_free(&l);
			for (size_t j = 0; j < p.ng; j++) {
				group_close(p.gv[j]);
				free(p.gv[j]);
			}
			free(p.gv);
		}
		if (lfd >= 0)
			close(lfd);
		else
			rc = -1;
	}
	mq_names_free(&groups);
	mq_topic_close(&t);
	return rc;
}

int
mq_repl_promote(mq_spool *sp, size_t *repaired, uint64_t *epoch)
{
	*repaired = 0;
	int lfd = lock_open(sp);
	if (lfd < 0 || lock_set(lfd, F_WRLCK) < 0) {
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	char **names;
	size_t n;
	int rc = mq_topic_list(sp, &names, &n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = unstage_all(sp, names[i], repaired);
	mq_strv_free(names, n);
	/* A new term, past every one this spool knows, before the role:
	 * under lock-recv, so that a batch from the old primary that waits
	 * for the lock reads it and is refused (fence.c). */
	if (rc == 0)
		rc = repl_epoch_known(sp, epoch);
	if (rc == 0 && *epoch >= MQ_EPOCH_MAX)
		rc = mq_err(EX_DATAERR, "epoch %" PRIu64 " is the last one",
		    *epoch);
	if (rc == 0)
		rc = repl_epoch_set(sp, ++*epoch);
	if (rc == 0)
		rc = repl_role_set(sp, "primary");
	if (rc == 0)
		rc = repl_fence_clear(sp);
	close(lfd);
	return rc;
}
