/*
 * statout.c: the figures of mq_stat_read as mq-stat(1) prints them, a
 * table for people or one JSON object, and the writing of a whole file
 * of them for a collector (-o).  The Prometheus exposition is in
 * prometheus.c.
 *
 * A file is written whole or not at all: the text is made in memory,
 * written to a temporary dot file beside the path (which a collector
 * such as node_exporter's textfile one ignores), synced, given mode 0644
 * whatever the umask (the collector runs as another user), renamed over
 * the path, and the directory synced.  A failure removes the temporary
 * file; a crash leaves the old file or the new one, and maybe a
 * temporary file beside it, which nothing removes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "out.h"

const char *
mq_peer_label(const struct mq_peer_status *p)
{
	return p->name[0] ? p->name : p->id;
}

int
mq_peer_label_width(const struct mq_peer_status *v, size_t n, int least)
{
	int w = least;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(mq_peer_label(&v[i]));
		if (l > (size_t)w)
			w = (int)(l < 128 ? l : 128);
	}
	return w;
}

/* Seconds with so many decimals, "-" for none (< 0). */
static const char *
seconds_text(double s, int decimals, char *buf, size_t len)
{
	if (s < 0)
		return "-";
	snprintf(buf, len, "%.*f", decimals, s);
	return buf;
}

/* Publishes per topic, then consumers, acks and latencies per group. */
static void
traffic_table(const struct mq_stat *st, FILE *f)
{
	fprintf(f, "\n%-16s %12s %9s %9s %9s\n", "TOPIC", "PUBLISHED",
	    "PUB/S-1M", "PUB/S-5M", "PUB/S-15M");
	for (size_t i = 0; i < st->ntopics; i++) {
		const struct mq_stat_rates *r = &st->topics[i].published;
		fprintf(f, "%-16s %12" PRIu64 " %9.2f %9.2f %9.2f\n",
		    st->topics[i].topic, r->total, r->rate[0], r->rate[1],
		    r->rate[2]);
	}
	fprintf(f, "\n%-16s %-16s %9s %12s %9s %9s %9s %9s %9s %9s %9s\n",
	    "TOPIC", "GROUP", "CONSUMERS", "ACKED", "ACK/S-1M", "ACK/S-5M",
	    "ACK/S-15M", "P50", "P90", "P99", "MAX");
	for (size_t i = 0; i < st->ngroups; i++) {
		const struct mq_stat_group *g = &st->groups[i];
		char l[4][32];
		fprintf(f, "%-16s %-16s %9" PRIu64 " %12" PRIu64
		    " %9.2f %9.2f %9.2f %9s %9s %9s %9s\n", g->topic, g->group,
		    g->consumers, g->acked.total, g->acked.rate[0],
		    g->acked.rate[1], g->acked.rate[2],
		    seconds_text(g->latency[0], 3, l[0], sizeof l[0]),
		    seconds_text(g->latency[1], 3, l[1], sizeof l[1]),
		    seconds_text(g->latency[2], 3, l[2], sizeof l[2]),
		    seconds_text(g->latency[3], 3, l[3], sizeof l[3]));
	}
}

int
mq_stat_write_table(const struct mq_stat *st, FILE *f)
{
	char a[32], b[32];
	fprintf(f, "%-16s %-16s %9s %9s %9s %9s %11s %9s\n", "TOPIC", "GROUP",
	    "PENDING", "IN-FLIGHT", "DELAYED", "DEAD", "PENDING-AGE",
	    "LEASE-AGE");
	for (size_t i = 0; i < st->ngroups; i++) {
		const struct mq_stat_group *g = &st->groups[i];
		fprintf(f, "%-16s %-16s %9" PRIu64 " %9" PRIu64 " %9" PRIu64
		    " %9" PRIu64 " %11s %9s\n", g->topic, g->group, g->pending,
		    g->inflight, g->delayed, g->dead,
		    seconds_text(g->pending_age, 0, a, sizeof a),
		    seconds_text(g->lease_age, 0, b, sizeof b));
	}
	traffic_table(st, f);
	fprintf(f, "\nstale temporary files: %" PRIu64 "\n\n", st->stale_tmp);
	fprintf(f, "%-40s %20s %12s\n", "FILESYSTEM", "FREE-BYTES",
	    "FREE-INODES");
	for (size_t i = 0; i < st->nfs; i++)
		fprintf(f, "%-40s %20" PRIu64 " %12" PRIu64 "\n",
		    st->fs[i].path, st->fs[i].free_bytes, st->fs[i].free_inodes);
	if (st->replication) {
		int w = mq_peer_label_width(st->peers, st->npeers, 24);
		fprintf(f, "\n%-*s %-10s %12s %12s\n", w, "PEER", "STATE",
		    "LAG-RECORDS", "LAG-SECONDS");
		for (size_t i = 0; i < st->npeers; i++) {
			const struct mq_peer_status *p = &st->peers[i];
			fprintf(f, "%-*s %-10s %12" PRIu64 " %12.0f\n", w,
			    mq_peer_label(p),
			    p->connected ? "connected" : "idle", p->records,
			    p->lag);
		}
	}
	return mq_out_status(f);
}

static json_t *
age_json(double age)
{
	return age < 0 ? json_null() : json_real(age);
}

static json_t *
rates_json(const struct mq_stat_rates *r)
{
	return json_pack("{s:I, s:f, s:f, s:f}", "total", (json_int_t)r->total,
	    "rate_1m", r->rate[0], "rate_5m", r->rate[1], "rate_15m",
	    r->rate[2]);
}

static json_t *
latency_json(const double l[4])
{
	if (l[0] < 0)
		return json_null();
	return json_pack("{s:f, s:f, s:f, s:f}", "p50", l[0], "p90", l[1],
	    "p99", l[2], "max", l[3]);
}

int
mq_stat_write_json(const struct mq_stat *st, FILE *f)
{
	json_t *topics = json_array(), *groups = json_array(),
	    *fs = json_array();
	for (size_t i = 0; i < st->ntopics; i++)
		json_array_append_new(topics, json_pack("{s:s, s:o}", "topic",
		    st->topics[i].topic, "published",
		    rates_json(&st->topics[i].published)));
	json_t *peers = st->replication ? json_array() : json_null();
	for (size_t i = 0; i < st->ngroups; i++) {
		const struct mq_stat_group *g = &st->groups[i];
		json_array_append_new(groups, json_pack("{s:s, s:s, s:I, s:I, "
		    "s:I, s:I, s:f, s:o, s:o, s:o, s:I, s:o, s:o, s:f}",
		    "topic", g->topic,
		    "group", g->group, "pending", (json_int_t)g->pending,
		    "inflight", (json_int_t)g->inflight,
		    "delayed", (json_int_t)g->delayed,
		    "dead", (json_int_t)g->dead, "lease", g->lease,
		    "oldest_pending_age", age_json(g->pending_age),
		    "oldest_lease_age", age_json(g->lease_age),
		    "lease_soonest", g->lease_soonest > 0 ?
		    json_real(g->lease_soonest) : json_null(),
		    "consumers", (json_int_t)g->consumers,
		    "acked", rates_json(&g->acked),
		    "latency", latency_json(g->latency),
		    "latency_sum", g->latency_sum));
	}
	for (size_t i = 0; i < st->nfs; i++)
		json_array_append_new(fs, json_pack("{s:s, s:I, s:I}",
		    "path", st->fs[i].path,
		    "free_bytes", (json_int_t)st->fs[i].free_bytes,
		    "free_inodes", (json_int_t)st->fs[i].free_inodes));
	for (size_t i = 0; i < st->npeers; i++) {
		const struct mq_peer_status *p = &st->peers[i];
		json_array_append_new(peers, json_pack("{s:s, s:s, s:s, s:I, "
		    "s:f, s:f}", "peer", mq_peer_label(p), "id", p->id,
		    "state", p->connected ? "connected" : "idle",
		    "lag_records", (json_int_t)p->records,
		    "lag_seconds", p->lag, "contact", p->contact));
	}
	json_t *o = json_pack("{s:f, s:o, s:o, s:I, s:o, s:o}", "time",
	    st->now, "topics", topics, "groups", groups, "stale_tmp", (json_int_t)st->stale_tmp,
	    "filesystems", fs, "replication", peers);
	return mq_json_put(o, f);
}

int
mq_json_put(json_t *o, FILE *f)
{
	int rc = 0;
	if (!o || json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
		rc = mq_err(EX_SOFTWARE, "cannot write JSON");
	if (rc == 0 && fputc('\n', f) == EOF)
		rc = mq_out_status(f);
	json_decref(o);
	return rc;
}

int
mq_out_status(FILE *f)
{
	return ferror(f) ? mq_err(EX_IOERR, "write error") : 0;
}

int
mq_stat_write_file(const struct mq_stat *st,
    int (*put)(const struct mq_stat *, FILE *), const char *path)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return mq_err_sys("memory stream");
	int rc = put(st, f);
	if (fclose(f) == EOF && rc == 0)
		rc = mq_err_sys("memory stream");
	if (rc == 0 &&
	    mq_write_file_mode(AT_FDCWD, path, text, len, 1, 0644) < 0) {
		/* What could not be made is the output (EX_CANTCREAT), unless
		 * the disk failed. */
		char why[512];
		snprintf(why, sizeof why, "%s", mq_errmsg());
		rc = mq_err(mq_errcode() == EX_IOERR ? EX_IOERR : EX_CANTCREAT,
		    "%s", why);
	}
	free(text);
	if (rc < 0)
		return -1;
	/* The rename made durable, as far as the directory can be synced
	 * (it may be reached through a symbolic link). */
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (mq_path(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
	    slash ? path : ".") < 0)
		return 0;
	int dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}
