/*
 * groupout.c: consumer groups as mq-group(1) prints them: the table or
 * JSON of list, and the text or JSON of info.  It only formats what
 * mq_group_list and mq_group_info read; times are RFC 3339 in UTC,
 * truncated to the millisecond, "-" for none.  JSON keys come in the
 * order they are made (jansson keeps it), which scripts may rely on.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <time.h>

#include "out.h"

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static const char *
when(double t, char *buf, size_t len)
{
	time_t s = (time_t)t;
	struct tm tm;
	char day[32];
	if (t <= 0 || !gmtime_r(&s, &tm))
		return "-";
	strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", day, (int)((t - (double)s) * 1000));
	return buf;
}

static const char *
mode(int ordered)
{
	return ordered ? "ordered" : "shared";
}

static json_t *
figures_json(const struct mq_partition_group *p)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
	    "head", (json_int_t)p->head, "lag", (json_int_t)p->lag,
	    "pending", (json_int_t)p->pending, "inflight",
	    (json_int_t)p->inflight, "delayed", (json_int_t)p->delayed,
	    "dead", (json_int_t)p->dead);
}

#define LIST_ROW "%-24s %-24s %-8s %10s %10s %10s %10s %10s  %s\n"

int
mq_group_list_write_table(const struct mq_group_ref *refs,
    const struct mq_group_info *infos, size_t n, FILE *f)
{
	if (n)
		fprintf(f, LIST_ROW, "TOPIC", "GROUP", "MODE", "PENDING",
		    "IN-FLIGHT", "DELAYED", "DEAD", "LAG", "PATTERN");
	for (size_t i = 0; i < n; i++) {
		const struct mq_group_ref *r = &refs[i];
		const struct mq_group_info *g = &infos[i];
		if (r->wildcard)
			fprintf(f, LIST_ROW, r->topic, r->group, mode(r->ordered),
			    "-", "-", "-", "-", "-", r->topic);
		else if (g->topic)
			fprintf(f, "%-24s %-24s %-8s %10" PRIu64 " %10" PRIu64
			    " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "  %s\n",
			    r->topic, r->group, mode(g->ordered), g->total.pending,
			    g->total.inflight, g->total.delayed, g->total.dead,
			    g->total.lag, g->pattern ? g->pattern : "-");
	}
	return mq_out_status(f);
}

int
mq_group_list_write_json(const struct mq_group_ref *refs,
    const struct mq_group_info *infos, size_t n, FILE *f)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct mq_group_ref *r = &refs[i];
		const struct mq_group_info *g = &infos[i];
		if (!r->wildcard && !g->topic)
			continue;
		json_t *o = r->wildcard ? json_pack("{s:n, s:n, s:n, s:n, s:n}",
		    "pending", "inflight", "delayed", "dead", "lag") :
		    figures_json(&g->total);
		json_object_del(o, "head");
		json_t *row = json_pack("{s:s, s:s, s:b, s:s, s:o}", "topic",
		    r->topic, "group", r->group, "wildcard", r->wildcard, "mode",
		    mode(r->wildcard ? r->ordered : g->ordered), "pattern",
		    str_or_null(r->wildcard ? r->topic : g->pattern));
		json_object_update(row, o);
		json_decref(o);
		json_array_append_new(arr, row);
	}
	return mq_json_put(arr, f);
}

static json_t *
info_json(const struct mq_group_info *g)
{
	json_t *parts = json_array(), *members = json_array(),
	    *match = json_array();
	for (unsigned k = 0; k < g->npartitions; k++) {
		const struct mq_partition_group *p = &g->partitions[k];
		json_t *o = json_pack("{s:i, s:I}", "partition", (int)k,
		    "offset", (json_int_t)p->offset), *fig = figures_json(p);
		json_object_update(o, fig);
		json_decref(fig);
		json_object_set_new(o, "owner", str_or_null(p->owner));
		json_object_set_new(o, "owner_deadline_ms", p->owner ?
		    json_integer((json_int_t)p->owner_deadline_ms) : json_null());
		json_array_append_new(parts, o);
	}
	for (size_t i = 0; i < g->nmembers; i++) {
		json_t *own = json_array();
		for (size_t j = 0; j < g->members[i].npartitions; j++)
			json_array_append_new(own,
			    json_integer(g->members[i].partitions[j]));
		json_array_append_new(members, json_pack("{s:s, s:I, s:o}",
		    "name", g->members[i].name, "deadline_ms",
		    (json_int_t)g->members[i].deadline_ms, "partitions", own));
	}
	for (size_t i = 0; i < g->nmatch; i++)
		json_array_append_new(match, json_string(g->match[i]));
	return json_pack("{s:s, s:s, s:s, s:o, s:f, s:i, s:b, s:b, s:s, "
	    "s:f, s:o, s:o, s:o, s:o, s:o, s:o}",
	    "topic", g->topic, "group", g->group, "mode", mode(g->ordered),
	    "session", json_real(g->session),
	    "lease", g->lease, "max_attempts", (int)g->max_attempts,
	    "exactly_once", g->exactly_once, "from_start", g->from_start,
	    "state", g->state, "created", g->created,
	    "filter", str_or_null(g->filter), "match", match,
	    "pattern", str_or_null(g->pattern), "partitions", parts,
	    "total", figures_json(&g->total), "members", members);
}

int
mq_group_info_write_json(const struct mq_group_info *infos, size_t n,
    FILE *f)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, info_json(&infos[i]));
	return mq_json_put(arr, f);
}

#define ROW "%-10s %10s %10s %10s %10s %10s %10s %10s"

/* A row of the partitions' table: partition k's, or the total's. */
static void
partition_row(const struct mq_group_info *g, unsigned k, FILE *f)
{
	const struct mq_partition_group *p = k < g->npartitions ?
	    &g->partitions[k] : &g->total;
	char c[8][24];
	snprintf(c[0], sizeof c[0], "%u", k);
	snprintf(c[1], sizeof c[1], "%" PRIu64, p->head);
	snprintf(c[2], sizeof c[2], "%" PRIu64, p->offset);
	snprintf(c[3], sizeof c[3], "%" PRIu64, p->lag);
	snprintf(c[4], sizeof c[4], "%" PRIu64, p->pending);
	snprintf(c[5], sizeof c[5], "%" PRIu64, p->inflight);
	snprintf(c[6], sizeof c[6], "%" PRIu64, p->delayed);
	snprintf(c[7], sizeof c[7], "%" PRIu64, p->dead);
	if (k == g->npartitions)
		fprintf(f, ROW "\n", "total", c[1], "-", c[3], c[4], c[5], c[6],
		    c[7]);
	else
		fprintf(f, ROW "%s%s\n", c[0], c[1], c[2], c[3], c[4], c[5],
		    c[6], c[7], g->ordered ? "  " : "", !g->ordered ? "" :
		    p->owner ? p->owner : "-");
}

int
mq_group_info_write_text(const struct mq_group_info *g, FILE *f)
{
	char b[64];
	fprintf(f, "topic: %s\ngroup: %s\nmode: %s\n", g->topic, g->group,
	    mode(g->ordered));
	fprintf(f, "session: %g\n", g->session);
	fprintf(f, "lease: %g\nmax-attempts: %u\nexactly-once: %d\n"
	    "from-start: %d\nstate: %s\ncreated: %s\n", g->lease,
	    g->max_attempts, g->exactly_once, g->from_start, g->state,
	    when(g->created, b, sizeof b));
	if (g->filter)
		fprintf(f, "filter: %s\n", g->filter);
	for (size_t i = 0; i < g->nmatch; i++)
		fprintf(f, "match: %s\n", g->match[i]);
	if (g->pattern)
		fprintf(f, "pattern: %s\n", g->pattern);
	fprintf(f, ROW "%s\n", "PARTITION", "HEAD", "OFFSET", "LAG", "PENDING",
	    "IN-FLIGHT", "DELAYED", "DEAD", g->ordered ? "  OWNER" : "");
	for (unsigned k = 0; k <= g->npartitions; k++)
		partition_row(g, k, f);
	if (!g->ordered)
		return mq_out_status(f);
	fprintf(f, "%-24s %-24s %s\n", "MEMBER", "DEADLINE", "PARTITIONS");
	for (size_t i = 0; i < g->nmembers; i++) {
		const struct mq_group_member *m = &g->members[i];
		fprintf(f, "%-24s %-24s ", m->name,
		    when((double)m->deadline_ms / 1000, b, sizeof b));
		for (size_t j = 0; j < m->npartitions; j++)
			fprintf(f, "%s%u", j ? "," : "", m->partitions[j]);
		fprintf(f, "%s\n", m->npartitions ? "" : "-");
	}
	return mq_out_status(f);
}
