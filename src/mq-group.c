/*
 * mq-group: list, describe, create and delete consumer groups.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "tool.h"

enum {
	OPT_JSON = 256, OPT_ORDERED, OPT_SESSION, OPT_LEASE, OPT_MAX_ATTEMPTS,
	OPT_EXACTLY_ONCE, OPT_FILTER, OPT_MATCH, OPT_FROM_START,
	OPT_FROM_OFFSET, OPT_FROM_TIME, OPT_EXIST_OK,
};

#define NOPT_MAX 1024

static void
usage(int code)
{
	const char *p = getprogname();
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] list [--json] [TOPIC-GLOB]\n"
	    "       %s [-s SPOOL] info [--json] [-t TOPIC] GROUP\n"
	    "       %s [-s SPOOL] create [--exist-ok] [--ordered] "
	    "[--session DURATION] "
	    "[--lease DURATION]\n"
	    "                [--max-attempts N] [--exactly-once] [--filter EXPR] "
	    "[--match NAME=GLOB]...\n"
	    "                [--from-start | --from-offset P:N... "
	    "| --from-time TIME] TOPIC GROUP\n"
	    "       %s [-s SPOOL] delete TOPIC GROUP\n", p, p, p, p);
	exit(code);
}

/* info: the group on one topic (-t), or on every topic that has it. */
static int
cmd_info(mq_spool *sp, const char *topic, const char *group, int json)
{
	struct mq_group_ref *refs = NULL;
	size_t n = 0, shown = 0;
	if (!topic && mq_group_list(sp, NULL, &refs, &n) < 0)
		tool_fail();
	struct mq_group_info *infos = calloc(topic ? 1 : n, sizeof *infos);
	if (!infos && (topic || n))
		err(EX_OSERR, "calloc");
	for (size_t i = 0; i < (topic ? 1 : n); i++) {
		struct mq_group_info *g = &infos[shown];
		if (!topic && (refs[i].wildcard || strcmp(refs[i].group, group)))
			continue;
		if (mq_group_info(sp, topic ? topic : refs[i].topic, group,
		    g) < 0) {
			if (topic || mq_errcode() != EX_NOINPUT)
				tool_fail();
			continue;               /* unsubscribed meanwhile */
		}
		/* Text goes out as it is read, JSON as one array at the end. */
		if (!json && shown)
			putchar('\n');
		if (!json && mq_group_info_write_text(g, stdout) < 0)
			tool_fail();
		shown++;
	}
	mq_group_ref_free(refs, n);
	if (!shown)
		errx(EX_NOINPUT, "no group '%s'", group);
	if (json && mq_group_info_write_json(infos, shown, stdout) < 0)
		tool_fail();
	for (size_t i = 0; i < shown; i++)
		mq_group_info_free(&infos[i]);
	free(infos);
	return 0;
}

/* list: a row per group; one that cannot be read is warned of and left
 * out (its info zeroed), one unsubscribed meanwhile only left out. */
static int
cmd_list(mq_spool *sp, const char *glob, int json)
{
	struct mq_group_ref *refs;
	size_t n;
	int worst = 0;
	if (mq_group_list(sp, glob, &refs, &n) < 0)
		tool_fail();
	struct mq_group_info *infos = calloc(n ? n : 1, sizeof *infos);
	if (!infos)
		err(EX_OSERR, "calloc");
	for (size_t i = 0; i < n; i++) {
		if (refs[i].wildcard || mq_group_info(sp, refs[i].topic,
		    refs[i].group, &infos[i]) == 0)
			continue;
		memset(&infos[i], 0, sizeof infos[i]);
		if (mq_errcode() != EX_NOINPUT) {
			tool_warn();
			worst = mq_errcode() > worst ? mq_errcode() : worst;
		}
	}
	if ((json ? mq_group_list_write_json : mq_group_list_write_table)(refs,
	    infos, n, stdout) < 0)
		tool_fail();
	for (size_t i = 0; i < n; i++)
		if (infos[i].topic)
			mq_group_info_free(&infos[i]);
	free(infos);
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
    const struct mq_group_conf *c, int exist_ok)
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
	/* --exist-ok: the same settings are a success (a pattern's are not
	 * compared). */
	struct mq_group_info gi;
	const char *d = NULL;
	if (rc == 0 && exist_ok && !mq_is_pattern(topic)) {
		if (mq_group_info(sp, topic, group, &gi) < 0)
			tool_fail();
		d = mq_group_conf_differs(&gi, c);
		mq_group_info_free(&gi);
	}
	if (rc == 0 && exist_ok && d)
		errx(EX_CANTCREAT, "group '%s' exists on topic '%s' with another "
		    "%s setting", group, topic, d);
	if (rc == 0 && !exist_ok)
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
		{ "exist-ok", no_argument, NULL, OPT_EXIST_OK },
		{ NULL, 0, NULL, 0 },
	};
	static const char *match[NOPT_MAX];
	static struct mq_offset offsets[NOPT_MAX];
	struct mq_group_conf gc;
	mq_group_conf_default(&gc);
	gc.match = match;
	gc.from_offset = offsets;
	const char *spool = NULL, *topic = NULL;
	int c, json = 0, createopts = 0, from_time = 0, exist_ok = 0;
	/* Options may come before or after the command. */
	while ((c = tool_getopt(&argc, &argv, "s:t:", longopts, usage)) != -1) {
		createopts += c >= OPT_ORDERED && c <= OPT_FROM_TIME;
		switch (c) {
		case 's': spool = optarg; break;
		case 't': topic = optarg; break;
		case OPT_JSON: json = 1; break;
		case OPT_ORDERED: gc.ordered = 1; break;
		case OPT_SESSION:
			gc.session = tool_duration_positive("--session", optarg);
			break;
		case OPT_LEASE:
			gc.lease = tool_duration_positive("--lease", optarg);
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
		case OPT_EXIST_OK: exist_ok = 1; createopts++; break;
		case OPT_FROM_OFFSET:
			if (gc.nfrom_offset == NOPT_MAX)
				errx(EX_USAGE, "--from-offset: at most %d", NOPT_MAX);
			offset_arg(optarg, &offsets[gc.nfrom_offset++]);
			break;
		case OPT_FROM_TIME:
			if (mq_time_arg_parse(optarg, &gc.from_time) < 0)
				errx(EX_USAGE, "--from-time: %s", mq_errmsg());
			from_time = 1;
			break;
		}
	}
	if (argc < 1)
		tool_usage(usage, "a command is required");
	const char *cmd = argv[0];
	int list = !strcmp(cmd, "list"), info = !strcmp(cmd, "info"),
	    create = !strcmp(cmd, "create"), delete = !strcmp(cmd, "delete");
	tool_command(cmd, (const char *const[]){ "list", "info", "create",
	    "delete", NULL });
	if ((list && argc > 2) || (info && argc != 2) ||
	    ((create || delete) && argc != 3))
		tool_usage(usage, "%s takes %s", cmd, list ? "at most a "
		    "TOPIC-GLOB" : info ? "a GROUP" : "a TOPIC and a GROUP");
	if (createopts && !create)
		errx(EX_USAGE, "the group settings go with create");
	if (json && !list && !info)
		errx(EX_USAGE, "--json goes with list and info");
	if (topic && !info)
		errx(EX_USAGE, "-t goes with info");
	/* The backfill would filter by time the partitions given an offset
	 * too: mq-sub refuses the same. */
	if (gc.from_start + (gc.nfrom_offset > 0) + from_time > 1)
		errx(EX_USAGE, "choose one of --from-start, --from-offset and "
		    "--from-time");
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
		rc = cmd_create(sp, argv[1], argv[2], &gc, exist_ok);
	else if (mq_group_unsubscribe(sp, argv[1], argv[2]) < 0)
		tool_fail();
	mq_spool_close(sp);
	return rc;
}
