/*
 * prometheus.c: the figures of mq_stat_read in the Prometheus text
 * exposition format (mq-stat --prometheus), for node_exporter's textfile
 * collector or any scraper.
 *
 * The output is the table below, in its order: each row is one metric,
 * its HELP and TYPE lines and then one sample per object of its scope
 * (each group, the spool, each file system, each peer), the figure read
 * at the row's offset in the object's struct.  Adding a metric is adding
 * a row.  A row without a type continues the family above (with one HELP
 * and TYPE, as the format requires): more samples told apart by the
 * row's fixed label (quantile="0.99", window="5m"), or a summary's _sum
 * and _count.  Peer metrics are left out, HELP
 * and TYPE too, when the spool has no peers; other families are always
 * there, if need be without samples.  Names follow the Prometheus
 * conventions (the mq_ prefix, base units, _total for counters): the
 * tests pass the output through `promtool check metrics`.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "out.h"

enum scope { TOPIC, GROUP, SPOOL, FS, PEER };
enum kind {
	COUNT,                          /* uint64_t */
	DOUBLE,                         /* double */
	AGE,                            /* double, < 0 (none) shown as 0 */
	SINCE,                          /* double, a time: now less it, 0 if
					   none or in the future */
	QUANTILE,                       /* double, < 0 (none) shown as NaN */
};

static const struct metric {
	const char *name, *type, *help;
	enum scope scope;
	size_t off;                     /* of the figure in its struct */
	enum kind kind;
	const char *label;              /* fixed, escaped: NAME="VALUE" */
} metrics[] = {
	{ "mq_pending_messages", "gauge", "Messages pending for the group.",
	  GROUP, offsetof(struct mq_stat_group, pending), COUNT, NULL },
	{ "mq_inflight_messages", "gauge", "Messages claimed under a lease.",
	  GROUP, offsetof(struct mq_stat_group, inflight), COUNT, NULL },
	{ "mq_delayed_messages", "gauge",
	  "Messages waiting in delay/ until due.",
	  GROUP, offsetof(struct mq_stat_group, delayed), COUNT, NULL },
	{ "mq_dead_letter_messages", "gauge", "Dead letters of the group.",
	  GROUP, offsetof(struct mq_stat_group, dead), COUNT, NULL },
	{ "mq_oldest_pending_age_seconds", "gauge",
	  "Age of the oldest pending message (0: none pending).",
	  GROUP, offsetof(struct mq_stat_group, pending_age), AGE, NULL },
	{ "mq_oldest_lease_age_seconds", "gauge",
	  "Time since the oldest claim began (0: none in flight).",
	  GROUP, offsetof(struct mq_stat_group, lease_age), AGE, NULL },
	{ "mq_consumers", "gauge",
	  "Consumers alive in the group (their membership not expired).",
	  GROUP, offsetof(struct mq_stat_group, consumers), COUNT, NULL },
	{ "mq_acked_messages_total", "counter",
	  "Messages acknowledged in the group, on every host.",
	  GROUP, offsetof(struct mq_stat_group, acked.total), COUNT, NULL },
	{ "mq_ack_rate_messages_per_second", "gauge",
	  "Acknowledgements per second over the window.",
	  GROUP, offsetof(struct mq_stat_group, acked.rate[0]), DOUBLE,
	  "window=\"1m\"" },
	{ "mq_ack_rate_messages_per_second", NULL, NULL,
	  GROUP, offsetof(struct mq_stat_group, acked.rate[1]), DOUBLE,
	  "window=\"5m\"" },
	{ "mq_ack_rate_messages_per_second", NULL, NULL,
	  GROUP, offsetof(struct mq_stat_group, acked.rate[2]), DOUBLE,
	  "window=\"15m\"" },
	{ "mq_ack_latency_seconds", "summary",
	  "Publish-to-ack latency; quantiles of the last 5 to 6 minutes "
	  "(1: the maximum), NaN without acks.",
	  GROUP, offsetof(struct mq_stat_group, latency[0]), QUANTILE,
	  "quantile=\"0.5\"" },
	{ "mq_ack_latency_seconds", NULL, NULL,
	  GROUP, offsetof(struct mq_stat_group, latency[1]), QUANTILE,
	  "quantile=\"0.9\"" },
	{ "mq_ack_latency_seconds", NULL, NULL,
	  GROUP, offsetof(struct mq_stat_group, latency[2]), QUANTILE,
	  "quantile=\"0.99\"" },
	{ "mq_ack_latency_seconds", NULL, NULL,
	  GROUP, offsetof(struct mq_stat_group, latency[3]), QUANTILE,
	  "quantile=\"1\"" },
	{ "mq_ack_latency_seconds_sum", NULL, NULL,
	  GROUP, offsetof(struct mq_stat_group, latency_sum), DOUBLE, NULL },
	{ "mq_ack_latency_seconds_count", NULL, NULL,
	  GROUP, offsetof(struct mq_stat_group, acked.total), COUNT, NULL },
	{ "mq_published_messages_total", "counter",
	  "Messages published to the topic, on every host.",
	  TOPIC, offsetof(struct mq_stat_topic, published.total), COUNT,
	  NULL },
	{ "mq_publish_rate_messages_per_second", "gauge",
	  "Publishes per second over the window.",
	  TOPIC, offsetof(struct mq_stat_topic, published.rate[0]), DOUBLE,
	  "window=\"1m\"" },
	{ "mq_publish_rate_messages_per_second", NULL, NULL,
	  TOPIC, offsetof(struct mq_stat_topic, published.rate[1]), DOUBLE,
	  "window=\"5m\"" },
	{ "mq_publish_rate_messages_per_second", NULL, NULL,
	  TOPIC, offsetof(struct mq_stat_topic, published.rate[2]), DOUBLE,
	  "window=\"15m\"" },
	{ "mq_stale_tmp_files", "gauge", "Temporary files older than an hour.",
	  SPOOL, offsetof(struct mq_stat, stale_tmp), COUNT, NULL },
	{ "mq_fs_free_bytes", "gauge",
	  "Bytes free for unprivileged users on a spool file system.",
	  FS, offsetof(struct mq_stat_fs, free_bytes), COUNT, NULL },
	{ "mq_fs_free_inodes", "gauge",
	  "Inodes free for unprivileged users on a spool file system.",
	  FS, offsetof(struct mq_stat_fs, free_inodes), COUNT, NULL },
	{ "mq_replication_lag_records", "gauge",
	  "Journal records the peer has not confirmed.",
	  PEER, offsetof(struct mq_peer_status, records), COUNT, NULL },
	{ "mq_replication_lag_seconds", "gauge",
	  "Age of the oldest record the peer has not confirmed.",
	  PEER, offsetof(struct mq_peer_status, lag), DOUBLE, NULL },
	{ "mq_replication_contact_age_seconds", "gauge",
	  "Time since the peer last confirmed or answered a ping.",
	  PEER, offsetof(struct mq_peer_status, contact), SINCE, NULL },
};

/* A label of the text exposition format, its value escaped (\, " and
 * newline). */
static void
put_label(FILE *f, const char *name, const char *v, int first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

/* The objects of a scope: how many, the first and the size of each. */
static size_t
objects(const struct mq_stat *st, enum scope s, const char **first,
    size_t *size)
{
	switch (s) {
	case TOPIC:
		*first = (const char *)st->topics;
		*size = sizeof *st->topics;
		return st->ntopics;
	case GROUP:
		*first = (const char *)st->groups;
		*size = sizeof *st->groups;
		return st->ngroups;
	case FS:
		*first = (const char *)st->fs;
		*size = sizeof *st->fs;
		return st->nfs;
	case PEER:
		*first = (const char *)st->peers;
		*size = sizeof *st->peers;
		return st->replication ? st->npeers : 0;
	default:
		*first = (const char *)st;
		*size = sizeof *st;
		return 1;
	}
}

/* The labels of an object (name, value, name, value): how many pairs. */
static int
labels(enum scope s, const void *obj, const char *lv[4])
{
	switch (s) {
	case TOPIC:
		lv[0] = "topic";
		lv[1] = ((const struct mq_stat_topic *)obj)->topic;
		return 1;
	case GROUP: {
		const struct mq_stat_group *g = obj;
		lv[0] = "topic";
		lv[1] = g->topic;
		lv[2] = "group";
		lv[3] = g->group;
		return 2;
	}
	case FS:
		lv[0] = "path";
		lv[1] = ((const struct mq_stat_fs *)obj)->path;
		return 1;
	case PEER:
		lv[0] = "peer";
		lv[1] = mq_peer_label(obj);
		return 1;
	default:
		return 0;
	}
}

static void
put_value(FILE *f, const struct metric *m, const char *p, double now)
{
	uint64_t u;
	double d;
	if (m->kind == COUNT) {
		memcpy(&u, p + m->off, sizeof u);
		fprintf(f, " %" PRIu64 "\n", u);
		return;
	}
	memcpy(&d, p + m->off, sizeof d);
	if (m->kind == QUANTILE && d < 0) {
		fputs(" NaN\n", f);
		return;
	}
	if (m->kind == AGE && d < 0)
		d = 0;
	else if (m->kind == SINCE)
		d = d > 0 && now > d ? now - d : 0;
	fprintf(f, " %.17g\n", d);
}

int
mq_stat_write_prometheus(const struct mq_stat *st, FILE *f)
{
	size_t nm = sizeof metrics / sizeof metrics[0];
	for (size_t i = 0; i < nm; i++) {
		const struct metric *m = &metrics[i];
		if (m->scope == PEER && !st->replication)
			continue;
		if (m->type)
			fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name,
			    m->help, m->name, m->type);
		const char *p;
		size_t size, n = objects(st, m->scope, &p, &size);
		for (size_t j = 0; j < n; j++, p += size) {
			const char *lv[4];
			int nl = labels(m->scope, p, lv);
			fputs(m->name, f);
			if (nl || m->label) {
				fputc('{', f);
				for (int l = 0; l < nl; l++)
					put_label(f, lv[2 * l], lv[2 * l + 1],
					    l == 0);
				if (m->label)
					fprintf(f, "%s%s", nl ? "," : "",
					    m->label);
				fputc('}', f);
			}
			put_value(f, m, p, st->now);
		}
	}
	return mq_out_status(f);
}
