/*
 * peerends.c: where each partition's log of format 2 ends at a peer
 * (mq-protocol(5), Format 2 partitions; REPLICATION STATE).
 *
 * The same lines serve the wire and the disk: a receiver's ENDS frame,
 * and replicate/peers/<id>.ends, where a sender keeps what the peer last
 * said (its ENDS, then each SEGOK).  Status reads that file for the lag
 * of what the journal does not carry: the records of a log past the
 * peer's end.  The file is only a figure, rewritten whole and not
 * synced: one lost in a crash, or never written, shows more lag, never
 * less, until the next session's ENDS.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "repl.h"

/* Lines a file of a peer's ends may hold: more than partitions a spool
 * has, well within what is read. */
#define ENDS_FILE_MAX (8u << 20)

int
repl_ends_line(FILE *f, const char *topic, unsigned k, uint64_t end,
    const char *id)
{
	return fprintf(f, "%s %u %" PRIu64 " %s\n", topic, k, end,
	    id && *id ? id : "-") < 0 ? mq_err_sys("write") : 0;
}

int
repl_ends_parse(const char *p, size_t len, struct repl_end **v, size_t *n)
{
	const char *end = p + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[MQ_NAME_MAX + 96], id[MQ_ID_LEN + 2];
		struct repl_end e = { 0 };
		if (ll >= sizeof line)
			return mq_err(EX_PROTOCOL, "bad ENDS line");
		memcpy(line, p, ll);
		line[ll] = 0;
		p += ll + (nl != NULL);
		if (!ll)
			continue;
		if (sscanf(line, "%200s %u %" SCNu64 " %33s", e.topic, &e.k,
		    &e.end, id) != 4 || mq_name_check("topic", e.topic) < 0 ||
		    e.end > MQ_SEQ_MAX || (strcmp(id, "-") &&
		    !mq_is_id(id, strlen(id))))
			return mq_err(EX_PROTOCOL, "bad ENDS line");
		/* 32 hexadecimal digits, checked above, or none. */
		if (strcmp(id, "-"))
			memcpy(e.id, id, sizeof e.id);
		struct repl_end *w = reallocarray(*v, *n + 1, sizeof *w);
		if (!w)
			return mq_err_sys("malloc");
		*v = w;
		w[(*n)++] = e;
	}
	return 0;
}

struct repl_end *
repl_end_find(struct repl_end *v, size_t n, const char *topic, unsigned k)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].k == k && !strcmp(v[i].topic, topic))
			return &v[i];
	return NULL;
}

static void
ends_name(char name[MQ_ID_LEN + 8], const char *peer_id)
{
	snprintf(name, MQ_ID_LEN + 8, "%s.ends", peer_id);
}

int
repl_peer_ends_save(int dfd, const char *peer_id, const struct repl_end *v,
    size_t n)
{
	char name[MQ_ID_LEN + 8], *buf = NULL;
	size_t len = 0;
	ends_name(name, peer_id);
	FILE *f = open_memstream(&buf, &len);
	int rc = f ? 0 : mq_err_sys("open_memstream");
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = repl_ends_line(f, v[i].topic, v[i].k, v[i].end, v[i].id);
	if (f && fclose(f) != 0 && rc == 0)
		rc = mq_err_sys("open_memstream");
	if (rc == 0)
		rc = mq_write_file(dfd, name, buf, len, 0, 1);
	free(buf);
	return rc < 0 ? -1 : 0;
}

int
repl_peer_ends_load(int dfd, const char *peer_id, struct repl_end **v,
    size_t *n)
{
	char name[MQ_ID_LEN + 8], *buf;
	size_t len;
	*v = NULL;
	*n = 0;
	ends_name(name, peer_id);
	if (mq_read_at(dfd, name, ENDS_FILE_MAX, &buf, &len) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	int rc = repl_ends_parse(buf, len, v, n);
	free(buf);
	if (rc < 0) {
		free(*v);
		*v = NULL;
		*n = 0;
		return mq_err(EX_DATAERR, "replicate/peers/%s: %s", name,
		    mq_errmsg());
	}
	return 0;
}

int
repl_peer_ends_remove(int dfd, const char *peer_id)
{
	char name[MQ_ID_LEN + 8];
	ends_name(name, peer_id);
	return mq_unlinkat(dfd, name, 0) < 0 && errno != ENOENT ?
	    mq_err_sys("remove replicate/peers/%s", name) : 0;
}

struct lagwalk {
	struct mq_peer_status *v;
	size_t n;
	struct repl_end **ends;
	size_t *nends;
	double *oldest;
};

/* Partition k of t past each peer's end: its records and bytes added to
 * the peer's lag, and the time of the first of them into oldest[i]. */
static int
partition_lag(const struct mq_topic *t, unsigned k, void *ctx)
{
	struct lagwalk *w = ctx;
	uint64_t end;
	struct mq_seglog *l = mq_topic_seglog(t, k);
	if (!l || mq_log_end(t, k, &end) < 0)
		return -1;
	for (size_t i = 0; i < w->n; i++) {
		struct repl_end *e = repl_end_find(w->ends[i], w->nends[i],
		    t->name, k);
		uint64_t records, bytes, low;
		if (mq_seglog_totals(l->logfd, e ? e->end : 0, end, &records,
		    &bytes, &low) < 0)
			return -1;
		w->v[i].records += records;
		w->v[i].lag_bytes += bytes;
		struct mq_msg *m;
		if (records && mq_record_read(t, k, low, NULL, &m) == 0) {
			double at = mq_id_time(m->id);
			if (at > 0 && (!w->oldest[i] || at < w->oldest[i]))
				w->oldest[i] = at;
			mq_msg_free(m);
		}
	}
	return 0;
}

int
repl_log_lag(mq_spool *sp, int dfd, struct mq_peer_status *v, size_t n,
    double *oldest)
{
	struct lagwalk w = { v, n, calloc(n ? n : 1, sizeof *w.ends),
	    calloc(n ? n : 1, sizeof *w.nends), oldest };
	int rc = w.ends && w.nends ? 0 : mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = repl_peer_ends_load(dfd, v[i].id, &w.ends[i], &w.nends[i]);
	if (rc == 0 && n)
		rc = mq_partitions2_each(sp, partition_lag, &w);
	for (size_t i = 0; w.ends && i < n; i++)
		free(w.ends[i]);
	free(w.ends);
	free(w.nends);
	return rc;
}

int
repl_peer_has_logs(mq_spool *sp, int dfd, const char *peer_id, uint64_t from,
    uint64_t end)
{
	struct repl_end *v;
	size_t n;
	if (repl_peer_ends_load(dfd, peer_id, &v, &n) < 0)
		return -1;
	struct mq_jreader r;
	struct mq_jrec rec;
	int has = 0, got = 0;
	if (n && mq_jreader_open(sp, &r, from) == 0) {
		has = !r.gap;
		while (has && (got = mq_jreader_next(&r, &rec)) == 1 &&
		    rec.at < end) {
			struct mq_jargs ja;
			uint64_t e;
			if (rec.origin[0] || rec.type != 'S' ||
			    mq_jargs_parse('S', rec.args, &ja) < 0 ||
			    !mq_decimal(ja.b, MQ_SEQ_MAX, &e))
				continue;
			struct repl_end *p = repl_end_find(v, n, ja.topic, ja.k);
			has = p && p->end >= e;
		}
		/* The records read to end, or the journal gave out first. */
		has = has && (got == 1 || r.pos >= end);
		mq_jreader_close(&r);
	}
	free(v);
	return has;
}
