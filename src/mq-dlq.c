/*
 * mq-dlq: list, show, count, redrive and purge a topic's dead letters;
 * export them to a tar archive and import them from one.
 * Made for cron: a run with nothing to do prints nothing and exits 0; two
 * runs at once never redrive or purge a message twice.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "tool.h"

enum {
	OPT_JSON = 256, OPT_OLDER, OPT_MAX, OPT_RATE, OPT_TO, OPT_ALL,
};

static struct {
	const char *group, *to;
	int json, all, quiet;
	double older, rate;
	unsigned long max;
	int have_older;
} opt;

static void
usage(int code)
{
	const char *p = getprogname();
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] [-g GROUP] list [--json] TOPIC\n"
	    "       %s [-s SPOOL] [-g GROUP] count TOPIC\n"
	    "       %s [-s SPOOL] [-g GROUP] show TOPIC ID\n"
	    "       %s [-s SPOOL] [-g GROUP] redrive [-q] [--older-than AGE] "
	    "[--max N] [--rate N]\n                 [--to TOPIC] TOPIC [ID...]\n"
	    "       %s [-s SPOOL] [-g GROUP] purge [-q] [--all | --older-than "
	    "AGE] [--max N]\n                 TOPIC [ID...]\n"
	    "       %s [-s SPOOL] [-g GROUP] export TOPIC FILE\n"
	    "       %s [-s SPOOL] import FILE\n", p, p, p, p, p, p, p);
	exit(code);
}

/* Whether a dead letter is one the command line chose. */
static int
chosen(const struct mq_dead *d, char **ids, int nids)
{
	if (opt.have_older && mq_now() - d->when < opt.older)
		return 0;
	if (nids == 0)
		return 1;
	for (int i = 0; i < nids; i++)
		if (!strcmp(ids[i], d->id))
			return 1;
	return 0;
}

static void
list(const struct mq_dead *v, size_t n)
{
	if ((opt.json ? mq_dead_write_json : mq_dead_write_table)(v, n,
	    stdout) < 0)
		tool_fail();
}

static int
show(mq_spool *sp, struct mq_dead *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i].id, id))
			continue;
		/* An unreadable message still shows its record. */
		struct mq_msg *m;
		if (mq_dead_write_record(&v[i], stdout) < 0)
			tool_fail();
		fflush(stdout);
		if (mq_dlq_read(sp, &v[i], &m) < 0)
			tool_fail();
		fwrite(m->body, 1, m->len, stdout);
		mq_msg_free(m);
		return 0;
	}
	errx(EX_NOINPUT, "no dead letter %s", id);
}

/* Redrives or purges what was chosen, and says how many unless -q (and
 * nothing when there were none, for cron); returns the worst exit code. */
static int
act(mq_spool *sp, const char *topic, struct mq_dead *v, size_t n,
    char **ids, int nids, int redrive)
{
	int worst = 0;
	unsigned long done = 0;
	for (size_t i = 0; i < n && (!opt.max || done < opt.max); i++) {
		if (!chosen(&v[i], ids, nids))
			continue;
		if (done && opt.rate > 0) {
			struct timespec ts = { (time_t)(1 / opt.rate),
			    (long)((1 / opt.rate - (double)(time_t)(1 / opt.rate)) *
			    1e9) };
			nanosleep(&ts, NULL);
		}
		int rc = redrive ? mq_dlq_redrive(sp, &v[i], opt.to) :
		    mq_dlq_purge(sp, &v[i]);
		if (rc < 0) {
			warnx("%s: %s", v[i].id, mq_errmsg());
			if (mq_errcode() > worst)
				worst = mq_errcode();
		} else if (rc == 0) {
			done++;
		}
	}
	if (done && !opt.quiet)
		printf("%s %lu dead letter%s of topic %s%s%s%s%s\n", redrive ?
		    "redrove" : "purged", done, done == 1 ? "" : "s", topic,
		    opt.group ? ", group " : "", opt.group ? opt.group : "",
		    redrive ? " to topic " : "", !redrive ? "" : opt.to ?
		    opt.to : topic);
	/* An id asked for by name that is not there is worth saying. */
	for (int j = 0; j < nids; j++) {
		size_t i;
		for (i = 0; i < n && strcmp(v[i].id, ids[j]); i++)
			;
		if (i == n) {
			warnx("no dead letter %s", ids[j]);
			if (EX_NOINPUT > worst)
				worst = EX_NOINPUT;
		}
	}
	return worst;
}

/* Import creates the spool, as it creates topics and groups. */
static int
import_file(const char *spool, const char *path)
{
	mq_spool *sp = tool_spool(spool, MQ_CREATE);
	size_t count;
	if (mq_dlq_import(sp, path, &count) < 0)
		tool_fail();
	mq_spool_close(sp);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "older-than", required_argument, NULL, OPT_OLDER },
		{ "max", required_argument, NULL, OPT_MAX },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "to", required_argument, NULL, OPT_TO },
		{ "all", no_argument, NULL, OPT_ALL },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL;
	int c;
	while ((c = tool_getopt(&argc, &argv, "g:qs:", longopts, usage)) !=
	    -1) {
		switch (c) {
		case 'g': opt.group = optarg; break;
		case 'q': opt.quiet = 1; break;
		case 's': spool = optarg; break;
		case OPT_JSON: opt.json = 1; break;
		case OPT_OLDER:
			opt.older = tool_duration("--older-than", optarg);
			opt.have_older = 1;
			break;
		case OPT_MAX: opt.max = tool_number("--max", optarg, 1, ~0UL); break;
		case OPT_RATE: {
			/* "10" and "10/s" both mean ten a second. */
			char n[32];
			snprintf(n, sizeof n, "%s", optarg);
			size_t l = strlen(n);
			if (l > 2 && !strcmp(n + l - 2, "/s"))
				n[l - 2] = 0;
			opt.rate = (double)tool_number("--rate", n, 1, 1000000);
			break;
		}
		case OPT_TO: opt.to = optarg; break;
		case OPT_ALL: opt.all = 1; break;
		}
	}
	if (argc < 1)
		tool_usage(usage, "a command is required");
	if (argc < 2)
		tool_usage(usage, "%s: a %s is required", argv[0],
		    strcmp(argv[0], "import") ? "TOPIC" : "FILE");
	const char *cmd = argv[0], *topic = argv[1];
	int redrive = !strcmp(cmd, "redrive"), purge = !strcmp(cmd, "purge");
	int export = !strcmp(cmd, "export"), import = !strcmp(cmd, "import");
	tool_command(cmd, (const char *const[]){ "list", "count", "show",
	    "redrive", "purge", "export", "import", NULL });
	if ((!strcmp(cmd, "show") && argc != 3) ||
	    ((!strcmp(cmd, "list") || !strcmp(cmd, "count")) && argc != 2) ||
	    (export && argc != 3) || (import && argc != 2))
		tool_usage(usage, "%s takes %s", cmd, !strcmp(cmd, "show") ?
		    "a TOPIC and an ID" : export ? "a TOPIC and a FILE" :
		    import ? "one FILE" : "one TOPIC");
	if (import && opt.group)
		errx(EX_USAGE, "-g does not go with import");
	if (opt.json && strcmp(cmd, "list"))
		errx(EX_USAGE, "--json goes with list");
	if ((opt.have_older || opt.max) && !redrive && !purge)
		errx(EX_USAGE, "--older-than and --max go with redrive and purge");
	if ((opt.rate > 0 || opt.to) && !redrive)
		errx(EX_USAGE, "--rate and --to go with redrive");
	if (opt.quiet && !redrive && !purge)
		errx(EX_USAGE, "-q goes with redrive and purge");
	if (opt.all && !purge)
		errx(EX_USAGE, "--all goes with purge");
	if (purge && !opt.all && !opt.have_older && argc == 2)
		errx(EX_USAGE, "purge needs --all, --older-than or ids");
	if (import)
		return import_file(spool, argv[1]);
	tool_name("topic", topic);
	if (opt.group)
		tool_name("group", opt.group);
	if (opt.to)
		tool_name("topic", opt.to);
	tool_place(topic, opt.group);

	mq_spool *sp = tool_spool(spool, redrive || purge ? 0 : MQ_READONLY);
	size_t count;
	if (export) {
		if (mq_dlq_export(sp, topic, opt.group, argv[2], &count) < 0)
			tool_fail();
		mq_spool_close(sp);
		return 0;
	}
	struct mq_dead *v;
	size_t n;
	if (mq_dlq_list(sp, topic, opt.group, &v, &n) < 0)
		tool_fail();
	int rc = 0;
	if (!strcmp(cmd, "list"))
		list(v, n);
	else if (!strcmp(cmd, "count"))
		printf("%zu\n", n);
	else if (!strcmp(cmd, "show"))
		rc = show(sp, v, n, argv[2]);
	else
		rc = act(sp, topic, v, n, argv + 2, argc - 2, redrive);
	mq_dead_free(v, n);
	mq_spool_close(sp);
	return rc;
}
