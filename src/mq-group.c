/*
 * mq-group: list, describe, create and delete consumer groups.
 */
#include <err.h>
#include <stdlib.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "tool.h"

enum {
	OPT_JSON = 256, OPT_ORDERED, OPT_SESSION, OPT_LEASE, OPT_MAX_ATTEMPTS,
	OPT_EXACTLY_ONCE, OPT_FILTER, OPT_MATCH, OPT_FROM_START,
	OPT_FROM_OFFSET, OPT_FROM_TIME,
};

#define NOPT_MAX 1024

static void
usage(int code)
{
	const char *p = getprogname();
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] list [--json] [TOPIC-GLOB]\n"
	    "       %s [-s SPOOL] info [--json] [-t TOPIC] GROUP\n"
	    "       %s [-s SPOOL] create [--ordered] [--session SECONDS] "
	    "[--lease SECONDS]\n"
	    "                [--max-attempts N] [--exactly-once] [--filter EXPR] "
	    "[--match NAME=GLOB]...\n"
	    "                [--from-start | --from-offset P:N... "
	    "[--from-time TIME]] TOPIC GROUP\n"
	    "       %s [-s SPOOL] delete TOPIC GROUP\n", p, p, p, p);
	exit(code);
}

static void
print_json(json_t *j)
{
	if (!j || json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
		errx(EX_SOFTWARE, "cannot write JSON");
	putchar('\n');
	json_decref(j);
}

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* A time in seconds since the epoch as RFC 3339 UTC, to the millisecond. */
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

static json_t *
figures_json(const struct mq_partition_group *p)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
	    "head", (json_int_t)p->head, "lag", (json_int_t)p->lag,
	    "pending", (json_int_t)p->pending, "inflight",
	    (json_int_t)p->inflight, "delayed", (json_int_t)p->delayed,
	    "dead", (json_int_t)p->dead);
}

static json_t *
info_json(const struct mq_group_info *g)
{
	json_t *parts = json_array(), *members = json_array(),
	    *match = json_array();
	for (unsigned k = 0; k < g->npartitions; k++) {
		const struct mq_partition_group *p = &g->partitions[k];
		json_t *o = json_pack("{s:i, s:I}", "partition", (int)k,
		    "offset", (json_int_t)p->offset), *f = figures_json(p);
		json_object_update(o, f);
		json_decref(f);
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
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:f, s:i, s:b, s:b, s:s, "
	    "s:f, s:o, s:o, s:o, s:o, s:o, s:o}",
	    "topic", g->topic, "group", g->group,
	    "mode", g->ordered ? "ordered" : "shared",
	    "session", json_real(g->session),
	    "lease", g->lease, "max_attempts", (int)g->max_attempts,
	    "exactly_once", g->exactly_once, "from_start", g->from_start,
	    "state", g->state, "created", g->created,
	    "filter", str_or_null(g->filter), "match", match,
	    "pattern", str_or_null(g->pattern), "partitions", parts,
	    "total", figures_json(&g->total), "members", members);
	return o;
}

#define ROW "%-10s %10s %10s %10s %10s %10s %10s %10s"

static void
info_text(const struct mq_group_info *g)
{
	char b[64];
	printf("topic: %s\ngroup: %s\nmode: %s\n", g->topic, g->group,
	    g->ordered ? "ordered" : "shared");
	printf("session: %g\n", g->session);
	printf("lease: %g\nmax-attempts: %u\nexactly-once: %d\nfrom-start: %d\n"
	    "state: %s\ncreated: %s\n", g->lease, g->max_attempts,
	    g->exactly_once, g->from_start, g->state, when(g->created, b,
	    sizeof b));
	if (g->filter)
		printf("filter: %s\n", g->filter);
	for (size_t i = 0; i < g->nmatch; i++)
		printf("match: %s\n", g->match[i]);
	if (g->pattern)
		printf("pattern: %s\n", g->pattern);
	printf(ROW "%s\n", "PARTITION", "HEAD", "OFFSET", "LAG", "PENDING",
	    "IN-FLIGHT", "DELAYED", "DEAD", g->ordered ? "  OWNER" : "");
	for (unsigned k = 0; k <= g->npartitions; k++) {
		const struct mq_partition_group *p = k < g->npartitions ?
		    &g->partitions[k] : &g->total;
		char f[8][24];
		snprintf(f[0], sizeof f[0], "%u", k);
		snprintf(f[1], sizeof f[1], "%" PRIu64, p->head);
		snprintf(f[2], sizeof f[2], "%" PRIu64, p->offset);
		snprintf(f[3], sizeof f[3], "%" PRIu64, p->lag);
		snprintf(f[4], sizeof f[4], "%" PRIu64, p->pending);
		snprintf(f[5], sizeof f[5], "%" PRIu64, p->inflight);
		snprintf(f[6], sizeof f[6], "%" PRIu64, p->delayed);
		snprintf(f[7], sizeof f[7], "%" PRIu64, p->dead);
		if (k == g->npartitions)
			printf(ROW "\n", "total", f[1], "-", f[3], f[4], f[5],
			    f[6], f[7]);
		else
			printf(ROW "%s%s\n", f[0], f[1], f[2], f[3], f[4], f[5],
			    f[6], f[7], g->ordered ? "  " : "", !g->ordered ? "" :
			    p->owner ? p->owner : "-");
	}
	if (!g->ordered)
		return;
	printf("%-24s %-24s %s\n", "MEMBER", "DEADLINE", "PARTITIONS");
	for (size_t i = 0; i < g->nmembers; i++) {
		const struct mq_group_member *m = &g->members[i];
		printf("%-24s %-24s ", m->name, when((double)m->deadline_ms / 1000,
		    b, sizeof b));
		for (size_t j = 0; j < m->npartitions; j++)
			printf("%s%u", j ? "," : "", m->partitions[j]);
		printf("%s\n", m->npartitions ? "" : "-");
	}
}

static int
cmd_info(mq_spool *sp, const char *topic, const char *group, int json)
{
	struct mq_group_ref *refs = NULL;
	size_t n = 0, shown = 0;
	if (!topic && mq_group_list(sp, NULL, &refs, &n) < 0)
		tool_fail();
	json_t *arr = json_array();
	for (size_t i = 0; i < (topic ? 1 : n); i++) {
		struct mq_group_info g;
		if (!topic && (refs[i].wildcard || strcmp(refs[i].group, group)))
			continue;
		if (mq_group_info(sp, topic ? topic : refs[i].topic, group,
		    &g) < 0) {
			if (topic || mq_errcode() != EX_NOINPUT)
				tool_fail();
			continue;               /* unsubscribed meanwhile */
		}
		if (json) {
			json_array_append_new(arr, info_json(&g));
		} else {
			if (shown)
				putchar('\n');
			info_text(&g);
		}
		shown++;
		mq_group_info_free(&g);
	}
	mq_group_ref_free(refs, n);
	if (!shown)
		errx(EX_NOINPUT, "no group '%s'", group);
	if (json)
		print_json(arr);
	else
		json_decref(arr);
	return 0;
}

static int
cmd_list(mq_spool *sp, const char *glob, int json)
{
	struct mq_group_ref *refs;
	size_t n;
	int worst = 0;
	if (mq_group_list(sp, glob, &refs, &n) < 0)
		tool_fail();
	json_t *arr = json_array();
	if (!json && n)
		printf("%-24s %-24s %-8s %10s %10s %10s %10s %10s  %s\n", "TOPIC",
		    "GROUP", "MODE", "PENDING", "IN-FLIGHT", "DELAYED", "DEAD",
		    "LAG", "PATTERN");
	for (size_t i = 0; i < n; i++) {
		struct mq_group_ref *r = &refs[i];
		struct mq_group_info g;
		memset(&g, 0, sizeof g);
		if (r->wildcard) {
			g.ordered = r->ordered;
			g.pattern = r->topic;
		} else if (mq_group_info(sp, r->topic, r->group, &g) < 0) {
			if (mq_errcode() != EX_NOINPUT) {
				tool_warn();
				worst = mq_errcode() > worst ? mq_errcode() : worst;
			}
			continue;
		}
		const char *mode = g.ordered ? "ordered" : "shared";
		if (json) {
			json_t *o = r->wildcard ? json_pack("{s:n, s:n, s:n, s:n, "
			    "s:n}", "pending", "inflight", "delayed", "dead",
			    "lag") : figures_json(&g.total);
			json_object_del(o, "head");
			json_t *head = json_pack("{s:s, s:s, s:b, s:s, s:o}",
			    "topic", r->topic, "group", r->group, "wildcard",
			    r->wildcard, "mode", mode, "pattern",
			    str_or_null(g.pattern));
			json_object_update(head, o);
			json_decref(o);
			json_array_append_new(arr, head);
		} else if (r->wildcard) {
			printf("%-24s %-24s %-8s %10s %10s %10s %10s %10s  %s\n",
			    r->topic, r->group, mode, "-", "-", "-", "-", "-",
			    r->topic);
		} else {
			printf("%-24s %-24s %-8s %10" PRIu64 " %10" PRIu64 " %10"
			    PRIu64 " %10" PRIu64 " %10" PRIu64 "  %s\n", r->topic,
			    r->group, mode, g.total.pending, g.total.inflight,
			    g.total.delayed, g.total.dead, g.total.lag,
			    g.pattern ? g.pattern : "-");
		}
		if (!r->wildcard)
			mq_group_info_free(&g);
	}
	if (json)
		print_json(arr);
	else
		json_decref(arr);
	mq_group_ref_free(refs, n);
	return worst;
}

static void
offset_arg(const char *arg, struct mq_offset *o)
{
	char *end;
	unsigned long long p = strtoull(arg, &end, 10), seq;
	if (end == arg || *arg == '-' || *end != ':' || p >= MQ_PARTITIONS_MAX)
		errx(EX_USAGE, "--from-offset: expected PARTITION:SEQ, not '%s'",
		    arg);
	const char *s = end + 1;
	seq = strtoull(s, &end, 10);
	if (end == s || *s == '-' || *end || seq == ~0ULL)
		errx(EX_USAGE, "--from-offset: expected PARTITION:SEQ, not '%s'",
		    arg);
	o->partition = (unsigned)p;
	o->offset = seq;
}

static int
cmd_create(mq_spool *sp, const char *topic, const char *group,
    const struct mq_group_conf *c)
{
	/* Checked before anything is made, the topic included. */
	struct mq_topic_conf tc;
	if (mq_is_pattern(topic))
		mq_topic_conf_default(&tc);     /* the library refuses offsets */
	else if (mq_topic_conf_read(sp, topic, &tc) < 0) {
		if (mq_errcode() != EX_NOINPUT)
			tool_fail();
		mq_topic_conf_default(&tc);
	}
	for (size_t i = 0; i < c->nfrom_offset; i++)
		if (c->from_offset[i].partition >= tc.partitions)
			errx(EX_USAGE, "topic '%s' has no partition %u (it has %u)",
			    topic, c->from_offset[i].partition, tc.partitions);
	int rc = mq_group_subscribe(sp, topic, group, c);
	if (rc < 0)
		tool_fail();
	if (rc == 0)
		errx(EX_CANTCREAT, "group '%s' already exists on topic '%s'",
		    group, topic);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "ordered", no_argument, NULL, OPT_ORDERED },
		{ "session", required_argument, NULL, OPT_SESSION },
		{ "lease", required_argument, NULL, OPT_LEASE },
		{ "max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS },
		{ "exactly-once", no_argument, NULL, OPT_EXACTLY_ONCE },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "match", required_argument, NULL, OPT_MATCH },
		{ "from-start", no_argument, NULL, OPT_FROM_START },
		{ "from-offset", required_argument, NULL, OPT_FROM_OFFSET },
		{ "from-time", required_argument, NULL, OPT_FROM_TIME },
		{ NULL, 0, NULL, 0 },
	};
	static const char *match[NOPT_MAX];
	static struct mq_offset offsets[NOPT_MAX];
	struct mq_group_conf gc;
	mq_group_conf_default(&gc);
	gc.match = match;
	gc.from_offset = offsets;
	const char *spool = NULL, *topic = NULL;
	int c, json = 0, createopts = 0;
	/* Options may come before or after the command. */
	while ((c = tool_getopt(&argc, &argv, "s:t:", longopts, usage)) != -1) {
		createopts += c >= OPT_ORDERED && c <= OPT_FROM_TIME;
		switch (c) {
		case 's': spool = optarg; break;
		case 't': topic = optarg; break;
		case OPT_JSON: json = 1; break;
		case OPT_ORDERED: gc.ordered = 1; break;
		case OPT_SESSION:
			gc.session = tool_duration("--session", optarg);
			if (gc.session <= 0)
				errx(EX_USAGE, "--session: must be more than 0");
			break;
		case OPT_LEASE:
			gc.lease = tool_duration("--lease", optarg);
			if (gc.lease <= 0)
				errx(EX_USAGE, "--lease: must be more than 0");
			break;
		case OPT_MAX_ATTEMPTS:
			gc.max_attempts = (unsigned)tool_number("--max-attempts",
			    optarg, 0, 1000000);
			break;
		case OPT_EXACTLY_ONCE: gc.exactly_once = 1; break;
		case OPT_FILTER: gc.filter = optarg; break;
		case OPT_MATCH:
			if (!strchr(optarg, '=') || *optarg == '=')
				errx(EX_USAGE, "--match: expected NAME=GLOB, not "
				    "'%s'", optarg);
			if (gc.nmatch == NOPT_MAX)
				errx(EX_USAGE, "--match: at most %d", NOPT_MAX);
			match[gc.nmatch++] = optarg;
			break;
		case OPT_FROM_START: gc.from_start = 1; break;
		case OPT_FROM_OFFSET:
			if (gc.nfrom_offset == NOPT_MAX)
				errx(EX_USAGE, "--from-offset: at most %d", NOPT_MAX);
			offset_arg(optarg, &offsets[gc.nfrom_offset++]);
			break;
		case OPT_FROM_TIME:
			if (mq_time_arg_parse(optarg, &gc.from_time) < 0)
				errx(EX_USAGE, "--from-time: %s", mq_errmsg());
			break;
		}
	}
	if (argc < 1)
		usage(EX_USAGE);
	const char *cmd = argv[0];
	int list = !strcmp(cmd, "list"), info = !strcmp(cmd, "info"),
	    create = !strcmp(cmd, "create"), delete = !strcmp(cmd, "delete");
	tool_command(cmd, (const char *const[]){ "list", "info", "create",
	    "delete", NULL });
	if ((list && argc > 2) || (info && argc != 2) ||
	    ((create || delete) && argc != 3))
		usage(EX_USAGE);
	if (createopts && !create)
		errx(EX_USAGE, "the group settings go with create");
	if (json && !list && !info)
		errx(EX_USAGE, "--json goes with list and info");
	if (topic && !info)
		errx(EX_USAGE, "-t goes with info");
	if (gc.from_start && (gc.nfrom_offset || gc.from_time > 0))
		errx(EX_USAGE, "--from-start goes with neither --from-offset "
		    "nor --from-time");
	if (topic)
		tool_name("topic", topic);
	if (info)
		tool_name("group", argv[1]);
	if (create || delete) {
		tool_topic_or_pattern(argv[1]);
		tool_name("group", argv[2]);
		tool_place(argv[1], argv[2]);
	} else {
		tool_place(topic, info ? argv[1] : NULL);
	}

	mq_spool *sp = tool_spool(spool, create ? MQ_CREATE : list || info ?
	    MQ_READONLY : 0);
	int rc = 0;
	if (list)
		rc = cmd_list(sp, argc > 1 ? argv[1] : NULL, json);
	else if (info)
		rc = cmd_info(sp, topic, argv[1], json);
	else if (create)
		rc = cmd_create(sp, argv[1], argv[2], &gc);
	else if (mq_group_unsubscribe(sp, argv[1], argv[2]) < 0)
		tool_fail();
	mq_spool_close(sp);
	return rc;
}
