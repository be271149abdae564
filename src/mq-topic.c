/*
 * mq-topic: create, grow, list, describe, delete and upgrade topics.
 */
#include <err.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "tool.h"

enum {
	OPT_JSON = 256, OPT_PARTITIONS, OPT_MAX_SIZE, OPT_RETENTION,
	OPT_TTL, OPT_EXPIRED, OPT_PLACE, OPT_GROUP, OPT_MODE, OPT_SIGNERS,
	OPT_NO_SIGNERS, OPT_PUBLISHERS, OPT_CONSUMERS, OPT_ADMINS, OPT_FORMAT,
};

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] init [--group GROUP] [--mode MODE]\n"
	    "       %s [-s SPOOL] create [--partitions N] [--max-message-size "
	    "BYTES]\n                [--retention DURATION] [--ttl DURATION] "
	    "[--expired dlq|drop]\n                [--format 1|2] [--signers FILE] "
	    "[--group GROUP] [--mode MODE]\n"
	    "                [--publishers GROUP] [--consumers GROUP] "
	    "[--admins GROUP]\n"
	    "                [--place K=DIR]... TOPIC\n"
	    "       %s [-s SPOOL] alter --partitions N [--place K=DIR]... "
	    "TOPIC\n"
	    "       %s [-s SPOOL] alter --signers FILE | --no-signers TOPIC\n"
	    "       %s [-s SPOOL] list [--json] [GLOB]\n"
	    "       %s [-s SPOOL] info [--json] TOPIC\n"
	    "       %s [-s SPOOL] delete TOPIC\n"
	    "       %s [-s SPOOL] gc [TOPIC]\n"
	    "       %s [-s SPOOL] upgrade TOPIC\n"
	    "       %s [-s SPOOL] key add|list|remove TOPIC [PUBKEY...]\n",
	    getprogname(), getprogname(), getprogname(), getprogname(),
	    getprogname(), getprogname(), getprogname(), getprogname(),
	    getprogname(), getprogname());
	exit(code);
}

static int
cmd_create(mq_spool *sp, const char *topic, const struct mq_topic_conf *c)
{
	int rc = mq_topic_create(sp, topic, c);
	if (rc < 0)
		tool_fail();
	if (rc == 0)
		errx(EX_CANTCREAT, "topic '%s' already exists", topic);
	return 0;
}

static int
cmd_alter(mq_spool *sp, const char *topic, unsigned partitions,
    const char **place, const char *signers, int signopt)
{
	if (signopt ? mq_topic_alter_signers(sp, topic, signers) < 0 :
	    mq_topic_alter_placed(sp, topic, partitions, place) < 0)
		tool_fail();
	return 0;
}

/* list: the names, or JSON with the partitions too; a topic whose
 * configuration cannot be read is warned of and left out. */
static int
cmd_list(mq_spool *sp, const char *glob, int json)
{
	size_t n;
	char **names;
	if (mq_topic_list(sp, &names, &n) < 0)
		tool_fail();
	struct mq_topic_conf *confs = calloc(n ? n : 1, sizeof *confs);
	if (!confs)
		err(EX_OSERR, "calloc");
	for (size_t i = 0; i < n; i++) {
		if (glob && fnmatch(glob, names[i], 0))
			continue;
		if (mq_topic_conf_read(sp, names[i], &confs[i]) < 0) {
			tool_warn();
			confs[i].partitions = 0;
		} else if (!json) {
			printf("%s\n", names[i]);
		}
	}
	if (json && mq_topic_list_write_json((const char *const *)names, confs,
	    n, stdout) < 0)
		tool_fail();
	free(confs);
	mq_strv_free(names, n);
	return 0;
}

/* Applies retention to one topic, or to all when topic is NULL. */
static int
cmd_gc(mq_spool *sp, const char *topic)
{
	char **names = NULL;
	size_t n = 1;
	uint64_t removed;
	if (!topic && mq_topic_list(sp, &names, &n) < 0)
		tool_fail();
	int worst = 0;
	for (size_t i = 0; i < n; i++) {
		if (mq_topic_gc(sp, topic ? topic : names[i], &removed) < 0) {
			tool_warn();
			if (mq_errcode() > worst)
				worst = mq_errcode();
		}
	}
	mq_strv_free(names, topic ? 0 : n);
	return worst;
}

static int
cmd_info(mq_spool *sp, const char *topic, int json)
{
	struct mq_topic_info in;
	if (mq_topic_info(sp, topic, &in) < 0 || (json ?
	    mq_topic_info_write_json(&in, stdout) :
	    mq_topic_info_write_text(&in, stdout)) < 0)
		tool_fail();
	mq_topic_info_free(&in);
	return 0;
}

/* upgrade: quiet when it converted; a note when there was nothing to. */
static int
cmd_upgrade(mq_spool *sp, const char *topic)
{
	struct mq_upgrade_stats st;
	int rc = mq_topic_upgrade(sp, topic, &st);
	if (rc < 0)
		tool_fail();
	if (rc == 1)
		fprintf(stderr, "%s: topic '%s' is already of format 2\n",
		    getprogname(), topic);
	return 0;
}

/* key add TOPIC PUBKEY..., key list TOPIC, key remove TOPIC PUBKEY */
static int
cmd_key(const char *spool, int argc, char **argv)
{
	if (argc < 2)
		tool_usage(usage, "key takes add, list or remove, and a TOPIC");
	int sub = tool_command(argv[0], (const char *const[]){ "add", "list",
	    "remove", NULL });
	if ((sub == 0 && argc < 3) || (sub == 1 && argc != 2) ||
	    (sub == 2 && argc != 3))
		usage(EX_USAGE);
	tool_name("topic", argv[1]);
	tool_place(argv[1], NULL);
	mq_spool *sp = tool_spool(spool, sub == 1 ? MQ_READONLY : 0);
	char **keys;
	size_t n;
	if (sub == 0 && mq_topic_key_add(sp, argv[1],
	    (const char *const *)argv + 2, (size_t)argc - 2) < 0)
		tool_fail();
	if (sub == 1) {
		if (mq_topic_keys(sp, argv[1], &keys, &n) < 0)
			tool_fail();
		for (size_t i = 0; i < n; i++)
			printf("%s\n", keys[i]);
		mq_strv_free(keys, n);
	}
	if (sub == 2 && mq_topic_key_remove(sp, argv[1], argv[2]) < 0)
		tool_fail();
	mq_spool_close(sp);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "partitions", required_argument, NULL, OPT_PARTITIONS },
		{ "max-message-size", required_argument, NULL, OPT_MAX_SIZE },
		{ "retention", required_argument, NULL, OPT_RETENTION },
		{ "ttl", required_argument, NULL, OPT_TTL },
		{ "expired", required_argument, NULL, OPT_EXPIRED },
		{ "place", required_argument, NULL, OPT_PLACE },
		{ "group", required_argument, NULL, OPT_GROUP },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "signers", required_argument, NULL, OPT_SIGNERS },
		{ "no-signers", no_argument, NULL, OPT_NO_SIGNERS },
		{ "publishers", required_argument, NULL, OPT_PUBLISHERS },
		{ "consumers", required_argument, NULL, OPT_CONSUMERS },
		{ "admins", required_argument, NULL, OPT_ADMINS },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ NULL, 0, NULL, 0 },
	};
	struct mq_topic_conf conf;
	mq_topic_conf_default(&conf);
	const char *spool = NULL, *group = NULL, *mode = NULL, *signfile = NULL;
	const char *roles[MQ_ROLES] = { NULL };
	bool roleopt = false;
	int c, json = 0, confopts = 0, partopt = 0, signopt = 0;
	char **placeargs = calloc((size_t)argc + 1, sizeof *placeargs);
	size_t nplace = 0;
	if (!placeargs)
		err(EX_OSERR, "calloc");
	/* Options may come before or after the subcommand. */
	while ((c = tool_getopt(&argc, &argv, "s:", longopts, usage)) != -1) {
		switch (c) {
		case 's': spool = optarg; break;
		case OPT_JSON: json = 1; break;
		case OPT_PARTITIONS:
			conf.partitions = (unsigned)tool_number("--partitions",
			    optarg, 1, MQ_PARTITIONS_MAX);
			partopt = 1;
			break;
		case OPT_PLACE:
			placeargs[nplace++] = optarg;
			break;
		case OPT_GROUP: group = optarg; break;
		case OPT_MODE: mode = optarg; break;
		case OPT_PUBLISHERS:
		case OPT_CONSUMERS:
		case OPT_ADMINS:
			roles[c - OPT_PUBLISHERS] = optarg;
			roleopt = true;
			break;
		case OPT_MAX_SIZE:
			conf.max_message_size = tool_number("--max-message-size",
			    optarg, 1, MQ_MESSAGE_MAX_LIMIT);
			confopts = 1;
			break;
		case OPT_RETENTION:
			conf.retention = tool_duration("--retention", optarg);
			confopts = 1;
			break;
		case OPT_TTL:
			conf.ttl = tool_duration("--ttl", optarg);
			confopts = 1;
			break;
		case OPT_FORMAT:
			conf.format = (unsigned)tool_number("--format", optarg, 1,
			    2);
			conf.format_asked = true;
			confopts = 1;
			break;
		case OPT_EXPIRED:
			if (strcmp(optarg, "dlq") && strcmp(optarg, "drop"))
				errx(EX_USAGE, "--expired: dlq or drop, not '%s'",
				    optarg);
			conf.expired_drop = !strcmp(optarg, "drop");
			confopts = 1;
			break;
		case OPT_SIGNERS:
		case OPT_NO_SIGNERS:
			if (signopt)
				errx(EX_USAGE, "give one --signers or --no-signers");
			signopt = c;
			signfile = c == OPT_SIGNERS ? optarg : NULL;
			break;
		}
	}
	if (argc < 1)
		tool_usage(usage, "a command is required");
	const char *cmd = argv[0];
	int want = !strcmp(cmd, "list") || !strcmp(cmd, "init") ? 1 : 2;
	tool_command(cmd, (const char *const[]){ "init", "create", "alter",
	    "list", "info", "delete", "gc", "upgrade", "key", NULL });
	if (!strcmp(cmd, "key")) {
		if (json || confopts || partopt || nplace || group || mode ||
		    roleopt)
			errx(EX_USAGE, "key takes no options but -s");
		free(placeargs);
		return cmd_key(spool, argc - 1, argv + 1);
	}
	if ((!strcmp(cmd, "gc") || !strcmp(cmd, "list")) && argc <= 2)
		want = argc;
	if (argc != want)
		tool_usage(usage, "%s takes %s", cmd, !strcmp(cmd, "init") ?
		    "no operand" : !strcmp(cmd, "gc") || !strcmp(cmd, "list") ?
		    "at most one operand" : "one TOPIC");
	if (confopts && strcmp(cmd, "create"))
		errx(EX_USAGE, "--max-message-size, --retention, --ttl, "
		    "--expired and --format go with create");
	if ((partopt || nplace) && strcmp(cmd, "create") && strcmp(cmd, "alter"))
		errx(EX_USAGE, "--partitions and --place go with create and alter");
	if (signopt && strcmp(cmd, "alter") &&
	    (signopt == OPT_NO_SIGNERS || strcmp(cmd, "create")))
		errx(EX_USAGE, "--signers goes with create and alter, "
		    "--no-signers with alter");
	if (!partopt && !signopt && !strcmp(cmd, "alter"))
		errx(EX_USAGE, "alter: --partitions N or --signers FILE is "
		    "required");
	if (partopt && signopt && !strcmp(cmd, "alter"))
		errx(EX_USAGE, "alter: one change at a time: --partitions, or "
		    "the signers");
	if (nplace && !partopt && !strcmp(cmd, "alter"))
		errx(EX_USAGE, "alter: --place goes with --partitions");
	char *signers = NULL;
	const char **place;
	if ((signfile && !(signers = mq_topic_signers_read(signfile))) ||
	    mq_topic_place_parse((const char *const *)placeargs, nplace,
	    conf.partitions, &place) < 0)
		tool_fail();
	conf.signers = signers;
	conf.place = place;
	if (json && strcmp(cmd, "list") && strcmp(cmd, "info"))
		errx(EX_USAGE, "--json goes with list and info");
	if ((group || mode) && strcmp(cmd, "init") && strcmp(cmd, "create"))
		errx(EX_USAGE, "--group and --mode go with init and create");
	if (roleopt && strcmp(cmd, "create"))
		errx(EX_USAGE, "--publishers, --consumers and --admins go with "
		    "create");
	if (mq_perm_parse(group, mode, &conf.perm) < 0 ||
	    mq_roles_parse(roles, &conf.roles) < 0)
		tool_fail();
	if (!strcmp(cmd, "init") && mq_spool_init(spool, &conf.perm) < 0)
		tool_fail();
	if (want == 2 && strcmp(cmd, "list")) {
		tool_name("topic", argv[1]);
		tool_place(argv[1], NULL);
	}

	/* Only a writing command makes the spool: a read of a mistyped
	 * path fails instead. */
	int looks = !strcmp(cmd, "list") || !strcmp(cmd, "info");
	mq_spool *sp = tool_spool(spool, looks ? MQ_READONLY :
	    !strcmp(cmd, "upgrade") ? 0 : MQ_CREATE);
	int rc = 0;
	if (!strcmp(cmd, "init"))
		;                       /* done above, before the spool opened */
	else if (!strcmp(cmd, "create"))
		rc = cmd_create(sp, argv[1], &conf);
	else if (!strcmp(cmd, "alter"))
		rc = cmd_alter(sp, argv[1], partopt ? conf.partitions : 0, place,
		    signers, signopt);
	else if (!strcmp(cmd, "list"))
		rc = cmd_list(sp, argc > 1 ? argv[1] : NULL, json);
	else if (!strcmp(cmd, "info"))
		rc = cmd_info(sp, argv[1], json);
	else if (!strcmp(cmd, "gc"))
		rc = cmd_gc(sp, argc > 1 ? argv[1] : NULL);
	else if (!strcmp(cmd, "upgrade"))
		rc = cmd_upgrade(sp, argv[1]);
	else if (mq_topic_delete(sp, argv[1]) < 0)
		tool_fail();
	mq_spool_close(sp);
	free(place);
	free(placeargs);
	free(signers);
	return rc;
}
