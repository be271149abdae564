/*
 * demotelog.c: demote's part for the partitions of format 2
 * (mq-replicate(1) demote; mq-protocol(5), Epochs).
 *
 * A publish there writes no journal record: what an old primary took
 * after the split is the end of its partitions' logs, past where they
 * part from the new primary's.  The demoted spool finds that place by
 * asking the new primary the ids of its records (PROBE frames, a
 * bisection of every partition at once), keeps each record past it in
 * replicate/quarantine/ as a message file, synced, then cuts the log
 * and the groups back to it (queue/logcut.c).  A crash anywhere leaves
 * the records in quarantine or still in the log, or both, and the cut
 * where it was or further: demote run again finds the same place (the
 * records still past it are still not the new primary's) and does each
 * step again, or finds it done.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include "repl.h"

/* Rounds of PROBE at most: a bisection of 64-bit numbers, and the
 * first asks. */
#define PROBE_ROUNDS 72

/* A partition being compared: lo is a place where the logs agree, hi
 * one where they do not (top + 1 while not known). */
struct probe {
	char topic[MQ_NAME_MAX + 1];
	unsigned k;
	uint64_t end;                   /* our log's */
	uint64_t top;                   /* the lower end; UINT64_MAX: not
					 * known yet */
	uint64_t lo, hi;
	uint64_t q;                     /* asked: the record before q */
};

/* The id of the record before q in topic's partition k here: 1 with it,
 * 0 none (a gap, no such partition). */
static int
id_before(mq_spool *sp, const char *topic, unsigned k, uint64_t q,
    char id[MQ_ID_LEN + 1], uint64_t *end)
{
	struct mq_topic t;
	*end = 0;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	int got = 0;
	if (t.conf.format == 2 && k < t.conf.partitions)
		got = mq_log_end(&t, k, end) < 0 ? -1 :
		    q && q <= *end ? mq_log_tail_id(&t, k, q, id) : 0;
	mq_topic_close(&t);
	return got;
}

/* The line at *p (before e) into line, *p past it; -1 when it does not
 * fit, or nothing is left. */
static int
next_line(const char **p, const char *e, char *line, size_t cap)
{
	if (*p >= e)
		return -1;
	const char *nl = memchr(*p, '\n', (size_t)(e - *p));
	size_t ll = nl ? (size_t)(nl - *p) : (size_t)(e - *p);
	if (ll >= cap)
		return -1;
	memcpy(line, *p, ll);
	line[ll] = 0;
	*p += ll + (nl != NULL);
	return 0;
}

/* The new primary's side: each PROBE answered, "topic k seq end id" a
 * line, until an empty one. */
int
repl_demote_answer(mq_spool *sp, mq_link *l)
{
	for (int round = 0; round <= PROBE_ROUNDS; round++) {
		const char *p, *e;
		size_t len;
		if (repl_expect(l, "PROBE", &p, &len) < 0)
			return -1;
		if (!len)
			return 0;
		char *buf = NULL;
		size_t blen = 0;
		FILE *f = open_memstream(&buf, &blen);
		if (!f)
			return mq_err_sys("open_memstream");
		int rc = fputs("PROBE\n", f) < 0 ? -1 : 0;
		for (e = p + len; rc == 0 && p < e;) {
			char line[MQ_NAME_MAX + 64], topic[MQ_NAME_MAX + 1];
			char id[MQ_ID_LEN + 1] = "";
			unsigned k;
			uint64_t seq, end;
			if (next_line(&p, e, line, sizeof line) < 0 ||
			    sscanf(line, "%200s %u %" SCNu64, topic, &k, &seq) != 3 ||
			    mq_name_check("topic", topic) < 0 || seq >= MQ_SEQ_MAX) {
				rc = mq_err(EX_PROTOCOL, "peer: bad PROBE line");
				break;
			}
			int got = id_before(sp, topic, k, seq + 1, id, &end);
			if (got < 0)
				rc = -1;
			else
				fprintf(f, "%s %u %" PRIu64 " %" PRIu64 " %s\n", topic,
				    k, seq, end, got ? id : "-");
		}
		if (fclose(f) != 0 && rc == 0)
			rc = mq_err_sys("open_memstream");
		if (rc == 0)
			rc = mq_link_send(l, buf, blen);
		free(buf);
		if (rc < 0)
			return -1;
	}
	return mq_err(EX_PROTOCOL, "peer: PROBE without end");
}

/* The place to ask next; 0 once the bisection is over (lo the place). */
static uint64_t
next_q(const struct probe *p)
{
	if (p->top == UINT64_MAX)
		return p->end;
	if (p->hi - p->lo <= 1)
		return 0;
	return p->hi == p->top + 1 ? p->top : p->lo + (p->hi - p->lo) / 2;
}

/* What the new primary said of the record before p->q: its log's end,
 * and that record's id ("" none).  A record one side does not hold
 * (retention, a gap) is taken as agreed. */
static int
learn(mq_spool *sp, struct probe *p, uint64_t end, const char *theirs)
{
	if (p->top == UINT64_MAX) {
		p->top = end < p->end ? end : p->end;
		p->lo = 0;
		p->hi = p->top + 1;
	}
	if (p->q > p->top)
		return 0;
	char mine[MQ_ID_LEN + 1] = "";
	uint64_t e;
	int got = id_before(sp, p->topic, p->k, p->q, mine, &e);
	if (got < 0)
		return -1;
	if (!got || !*theirs || !strcmp(mine, theirs))
		p->lo = p->q;
	else
		p->hi = p->q;
	return 0;
}

/* One round: a PROBE of every partition not settled, and its answer;
 * 1 when none was left to ask. */
static int
probe_round(mq_spool *sp, mq_link *l, struct probe *v, size_t n)
{
	char *buf = NULL;
	size_t blen = 0, asked = 0;
	FILE *f = open_memstream(&buf, &blen);
	if (!f)
		return mq_err_sys("open_memstream");
	fputs("PROBE\n", f);
	for (size_t i = 0; i < n; i++)
		if ((v[i].q = next_q(&v[i])) != 0) {
			fprintf(f, "%s %u %" PRIu64 "\n", v[i].topic, v[i].k,
			    v[i].q - 1);
			asked++;
		}
	int rc = fclose(f) != 0 ? mq_err_sys("open_memstream") : 0;
	if (rc == 0)
		rc = mq_link_send(l, buf, asked ? blen : 5);
	free(buf);
	if (rc < 0 || !asked)
		return rc < 0 ? -1 : 1;
	const char *p, *e;
	size_t len;
	if (repl_expect(l, "PROBE", &p, &len) < 0)
		return -1;
	e = p + len;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (!v[i].q)
			continue;
		char line[MQ_NAME_MAX + 96], topic[MQ_NAME_MAX + 1], id[40];
		unsigned k;
		uint64_t seq, end;
		if (next_line(&p, e, line, sizeof line) < 0 ||
		    sscanf(line, "%200s %u %" SCNu64 " %" SCNu64 " %39s", topic,
		    &k, &seq, &end, id) != 5 || strcmp(topic, v[i].topic) ||
		    k != v[i].k || seq != v[i].q - 1 || end > MQ_SEQ_MAX ||
		    (strcmp(id, "-") && !mq_is_id(id, strlen(id))))
			return mq_err(EX_PROTOCOL, "peer: bad PROBE answer");
		rc = learn(sp, &v[i], end, strcmp(id, "-") ? id : "");
	}
	return rc;
}

struct probes {
	struct probe *v;
	size_t n;
};

/* Partition k of t, if its log holds something here. */
static int
probe_add(const struct mq_topic *t, unsigned k, void *ctx)
{
	struct probes *p = ctx;
	uint64_t end;
	if (mq_log_end(t, k, &end) < 0)
		return -1;
	if (!end)
		return 0;
	struct probe *v = reallocarray(p->v, p->n + 1, sizeof *v);
	if (!v)
		return mq_err_sys("malloc");
	p->v = v;
	v[p->n] = (struct probe){ .k = k, .end = end, .top = UINT64_MAX };
	snprintf(v[p->n].topic, sizeof v[p->n].topic, "%s", t->name);
	p->n++;
	return 0;
}

/* Every partition of format 2 whose log holds something here. */
static int
probes_list(mq_spool *sp, struct probe **out, size_t *np)
{
	struct probes p = { NULL, 0 };
	int rc = mq_partitions2_each(sp, probe_add, &p);
	*out = p.v;
	*np = p.n;
	return rc;
}

/* Record r, number seq, kept as a message file in quarantine. */
static int
keep_record(int qfd, const char *me, const struct probe *p, uint64_t seq,
    const struct mq_seg_rec *r, const struct mq_repl_opts *o)
{
	static const char tag[] = "Message-Id: ";
	size_t tl = sizeof tag - 1;
	char key[MQ_KEY_LEN + 1], id[MQ_ID_LEN + 1];
	char qname[MQ_NAME_MAX + MQ_KEY_LEN + MQ_ID_LEN + 32];
	/* Its id is the header block's first line (as a name's is read);
	 * one without a readable id is named by 32 zeros. */
	memset(id, '0', MQ_ID_LEN);
	id[MQ_ID_LEN] = 0;
	if (r->hdr_len > tl + MQ_ID_LEN && !memcmp(r->hdr, tag, tl) &&
	    mq_is_id(r->hdr + tl, MQ_ID_LEN) && r->hdr[tl + MQ_ID_LEN] == '\n')
		memcpy(id, r->hdr + tl, MQ_ID_LEN);
	snprintf(key, sizeof key, "%020" PRIu64 ".%s", seq, id);
	if (repl_quarantine_name(qname, sizeof qname, p->topic, p->k, key,
	    me) < 0)
		return -1;
	char *buf = malloc(r->hdr_len + r->body_len + 1);
	if (!buf)
		return mq_err_sys("malloc");
	memcpy(buf, r->hdr, r->hdr_len);
	memcpy(buf + r->hdr_len, r->body, r->body_len);
	int rc = mq_write_file(qfd, qname, buf, r->hdr_len + r->body_len, 1, 1);
	free(buf);
	if (rc == 0)
		repl_log(o, LOG_WARNING, "quarantined %s/%u/%s, published here "
		    "after the new primary's log of this partition parted from "
		    "this one (replicate/quarantine/%s)", p->topic, p->k, key,
		    qname);
	return rc;
}

/* The records of p's partition from p->lo to its end into quarantine,
 * and the directory synced. */
static int
keep_past(const struct mq_topic *t, int qfd, const char *me,
    const struct probe *p, const struct mq_repl_opts *o)
{
	struct mq_seglog *l = mq_topic_seglog(t, p->k);
	if (!l)
		return -1;
	for (uint64_t seq = p->lo; seq < p->end; seq++) {
		int r = mq_seglog_seek(l, seq);
		uint64_t s = seq, next;
		struct mq_seg_rec rec;
		if (r == 0) {
			/* Numbers no segment holds: retention, a head that
			 * skipped them. */
			if (mq_seglog_gap(l, seq, &next) < 0)
				return -1;
			if (next > seq + 1)
				seq = next - 1;
			continue;
		}
		if (r == 1)
			r = mq_seglog_next(l, &s, &rec);
		if (r == 1 && s == seq) {
			if (keep_record(qfd, me, p, seq, &rec, o) < 0)
				return -1;
		} else if (r < 0 && mq_errcode() != EX_DATAERR) {
			return -1;
		} else {
			/* Not readable here, as to our consumers: not kept. */
			repl_log(o, LOG_WARNING, "topic %s partition %u: record %"
			    PRIu64 " does not read: not quarantined", p->topic,
			    p->k, seq);
		}
	}
	return mq_fsync_fd(qfd) < 0 ? -1 : 0;
}

/* p's partition: what is past the place kept, then the log and every
 * group cut back to it. */
static int
cut_partition(mq_spool *sp, int qfd, const char *me, const struct probe *p,
    const struct mq_repl_opts *o)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, p->topic, MQ_FORMAT2, &t) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	struct mq_names groups = { 0 };
	int rc = p->lo < p->end ? keep_past(&t, qfd, me, p, o) : 0;
	if (rc == 0)
		rc = mq_log_cut(&t, p->k, p->lo, p->end);
	if (rc == 0)
		rc = mq_groups_read(&t, &groups);
	for (size_t g = 0; rc == 0 && g < groups.n; g++)
		rc = mq_group_cut(&t, p->k, groups.v[g], p->lo);
	mq_names_free(&groups);
	mq_topic_close(&t);
	return rc;
}

/* The messages of ours in quarantine from partitions of format 2
 * (topic.k.KEY.me) whose numbers the log holds no more with their id:
 * what demote took out, counted again by every demote. */
static int
count_kept(mq_spool *sp, int qfd, const char *me, size_t *n)
{
	struct mq_names l = { 0 };
	if (mq_names_read(qfd, NULL, &l) < 0)
		return -1;
	int rc = 0;
	size_t tail = MQ_KEY_LEN + MQ_ID_LEN + 2;   /* .KEY.me */
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		const char *s = l.v[i];
		size_t len = strlen(s);
		if (len < tail + 3 || strcmp(s + len - MQ_ID_LEN, me) ||
		    s[len - tail] != '.' || s[len - MQ_ID_LEN - 1] != '.')
			continue;
		char key[MQ_KEY_LEN + 1], topic[MQ_NAME_MAX + 1];
		memcpy(key, s + len - tail + 1, MQ_KEY_LEN);
		key[MQ_KEY_LEN] = 0;
		const char *dot = s + len - tail;
		const char *kb = dot;
		while (kb > s && kb[-1] >= '0' && kb[-1] <= '9')
			kb--;
		uint64_t seq;
		unsigned long k;
		if (!mq_is_key(key) || kb == dot || kb - s < 2 || kb[-1] != '.' ||
		    (size_t)(kb - 1 - s) > MQ_NAME_MAX || mq_seq_of(key, &seq) < 0)
			continue;
		snprintf(topic, sizeof topic, "%.*s", (int)(kb - 1 - s), s);
		k = strtoul(kb, NULL, 10);
		struct mq_topic t;
		if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0) {
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
			continue;
		}
		if (t.conf.format == 2 && k < t.conf.partitions) {
			char id[MQ_ID_LEN + 1];
			int got = mq_log_tail_id(&t, (unsigned)k, seq + 1, id);
			if (got < 0)
				rc = -1;
			else if (!got || strcmp(id, key + MQ_SEQ_DIGITS + 1))
				(*n)++;
		}
		mq_topic_close(&t);
	}
	mq_names_free(&l);
	return rc;
}

int
repl_demote_logs(mq_spool *sp, mq_link *l, int qfd, const char *me,
    const struct mq_repl_opts *o, size_t *n)
{
	struct probe *v;
	size_t np;
	if (probes_list(sp, &v, &np) < 0)
		return -1;
	int rc = 0, round = 0;
	while ((rc = probe_round(sp, l, v, np)) == 0)
		if (++round > PROBE_ROUNDS) {
			rc = mq_err(EX_PROTOCOL, "peer: its answers to PROBE do "
			    "not settle");
			break;
		}
	rc = rc < 0 ? -1 : 0;
	for (size_t i = 0; rc == 0 && i < np; i++)
		rc = cut_partition(sp, qfd, me, &v[i], o);
	free(v);
	if (rc == 0)
		rc = count_kept(sp, qfd, me, n);
	return rc;
}
