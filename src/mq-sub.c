/*
 * mq-sub: receive a topic's messages as a member of a consumer group.
 * By default each message is acked once its output is written and
 * flushed; --manual leaves it claimed and --exec acks on the handler's
 * success.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "tool.h"

enum {
	OPT_EXEC = 256, OPT_FROM_START, OPT_JSON, OPT_LEASE, OPT_MANUAL,
	OPT_UNSUBSCRIBE, OPT_BACKOFF, OPT_HANDLER_TIMEOUT,
	OPT_MAX_ATTEMPTS, OPT_PUBLISH_TO, OPT_EXACTLY_ONCE, OPT_GRACE,
	OPT_FILTER, OPT_MATCH, OPT_GROUP_FILTER, OPT_GROUP_MATCH,
	OPT_ORDERED, OPT_SESSION, OPT_FROM_OFFSET, OPT_FROM_TIME,
	OPT_KEY, OPT_KEYGEN, OPT_PUBKEY, OPT_NO_CREATE, OPT_REPLY,
};

static struct {
	const char *group, *exec, *publish_to;
	double handler_timeout, backoff, backoff_max;
	unsigned long jobs;
	int reply;
} opt = { .backoff = 1, .backoff_max = 300, .jobs = 1 };

static pid_t *workers;                  /* -j: the other workers */
static unsigned long nworkers;

/* --filter and --match: messages that do not match are acked unseen. */
static struct {
	const char *expr, *group_expr;
	const char **match, **group_match;
	size_t nmatch, ngroup_match;
	mq_filter *f;
} flt;

static volatile int stopping;
static int wake_pipe[2] = { -1, -1 };

/* What goes wrong without ending the run: a note, or the error. */
static void
warn_of(const char *note, void *ctx)
{
	(void)ctx;
	if (note)
		warnx("%s", note);
	else
		tool_warn();
}

/* What the run does: -n, -t, -f, --manual, the output; the rest is
 * filled in when the subscription is open. */
static struct mq_consume run = { .stop = &stopping, .warn = warn_of };

/* Also ends a wait that the signal did not interrupt (it may arrive just
 * before the library starts waiting). */
static void
on_signal(int sig)
{
	int e = errno;
	stopping = 1;
	if (wake_pipe[1] >= 0)
		(void)!write(wake_pipe[1], "", 1);
	for (unsigned long i = 0; i < nworkers; i++)
		if (workers[i] > 0)
			kill(workers[i], sig);
	errno = e;
}

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-0fq] [-F FORMAT] -g GROUP [-n COUNT] [-s SPOOL] "
	    "[-t DURATION]\n              [--exec CMD [-j N] [--backoff BASE[:MAX]] "
	    "[--grace DURATION] "
	    "[--handler-timeout DURATION]\n              [--publish-to TOPIC] "
	    "[--reply]] "
	    "[--exactly-once] [--from-start] [--json]\n              "
	    "[--lease DURATION] [--manual] [--max-attempts N] [--no-create]\n"
	    "              [--filter EXPR] [--match NAME=GLOB] "
	    "[--group-filter EXPR]\n              [--group-match NAME=GLOB] "
	    "[--ordered] [--session DURATION]\n"
	    "              [--from-offset P:N]... [--from-time TIME] "
	    "[--key FILE] [--unsubscribe] TOPIC|PATTERN\n"
	    "       %s --keygen FILE | --pubkey FILE\n",
	    getprogname(), getprogname());
	exit(code);
}

/* --keygen FILE and --pubkey FILE: a consumer key pair for sealed
 * topics; prints the public key. */
static int
key_file(const char *path, int pubkey, int argc)
{
	char pub[MQ_PUBKEY_HEX + 1];
	if (argc != 0)
		tool_usage(usage, "--keygen and --pubkey take no TOPIC");
	mq_seal_key *k = pubkey ? mq_seal_key_load(path) : NULL;
	if (pubkey ? !k : mq_seal_keygen(path, pub) < 0)
		tool_fail();
	if (k)
		mq_seal_key_pub(k, pub);
	mq_seal_key_free(k);
	printf("%s\n", pub);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "exec", required_argument, NULL, OPT_EXEC },
		{ "from-start", no_argument, NULL, OPT_FROM_START },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "lease", required_argument, NULL, OPT_LEASE },
		{ "manual", no_argument, NULL, OPT_MANUAL },
		{ "unsubscribe", no_argument, NULL, OPT_UNSUBSCRIBE },
		{ "backoff", required_argument, NULL, OPT_BACKOFF },
		{ "handler-timeout", required_argument, NULL, OPT_HANDLER_TIMEOUT },
		{ "max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS },
		{ "publish-to", required_argument, NULL, OPT_PUBLISH_TO },
		{ "exactly-once", no_argument, NULL, OPT_EXACTLY_ONCE },
		{ "grace", required_argument, NULL, OPT_GRACE },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "match", required_argument, NULL, OPT_MATCH },
		{ "group-filter", required_argument, NULL, OPT_GROUP_FILTER },
		{ "group-match", required_argument, NULL, OPT_GROUP_MATCH },
		{ "ordered", no_argument, NULL, OPT_ORDERED },
		{ "session", required_argument, NULL, OPT_SESSION },
		{ "from-offset", required_argument, NULL, OPT_FROM_OFFSET },
		{ "from-time", required_argument, NULL, OPT_FROM_TIME },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "keygen", required_argument, NULL, OPT_KEYGEN },
		{ "pubkey", required_argument, NULL, OPT_PUBKEY },
		{ "no-create", no_argument, NULL, OPT_NO_CREATE },
		{ "reply", no_argument, NULL, OPT_REPLY },
		{ NULL, 0, NULL, 0 },
	};
	struct mq_sub_opts so;
	mq_sub_opts_default(&so);
	const char *spool = NULL, *e, *keyfile = NULL, *keygen = NULL;
	int c, pubkey = 0, unsubscribe = 0, from_time = 0, no_create = 0;
	struct mq_offset *from = NULL;
	while ((c = tool_getopt(&argc, &argv, "0F:fg:j:n:qs:t:", longopts,
	    usage)) != -1) {
		switch (c) {
		case '0': run.output.nul = 1; break;
		case 'F':
			if (mq_format_check(optarg) < 0)
				errx(mq_errcode(), "-F: %s", mq_errmsg());
			run.output.format = optarg;
			break;
		case 'f': run.follow = 1; break;
		case 'g': opt.group = optarg; break;
		case 'n': run.count = tool_number("-n", optarg, 1, ~0UL); break;
		case 'q': run.output.quiet = 1; break;
		case 's': spool = optarg; break;
		case 't': run.timeout = tool_duration("-t", optarg); break;
		case OPT_EXEC: opt.exec = optarg; break;
		case OPT_FROM_START: so.group.from_start = 1; break;
		case OPT_JSON: run.output.json = 1; break;
		case OPT_LEASE:
			so.group.lease = so.lease = tool_duration_positive(
			    "--lease", optarg);
			break;
		case OPT_MANUAL: run.manual = 1; break;
		case OPT_BACKOFF:
			tool_backoff(optarg, &opt.backoff, &opt.backoff_max);
			break;
		case OPT_HANDLER_TIMEOUT:
			opt.handler_timeout = tool_duration("--handler-timeout",
			    optarg);
			break;
		case OPT_PUBLISH_TO: opt.publish_to = optarg; break;
		case OPT_EXACTLY_ONCE: so.group.exactly_once = 1; break;
		case OPT_GRACE: so.grace = tool_duration("--grace", optarg); break;
		case 'j': opt.jobs = tool_number("-j", optarg, 1, 1024); break;
		case OPT_MAX_ATTEMPTS:
			so.group.max_attempts = (unsigned)tool_number(
			    "--max-attempts", optarg, 0, 1000000);
			break;
		case OPT_UNSUBSCRIBE: unsubscribe = 1; break;
		case OPT_NO_CREATE: no_create = 1; break;
		case OPT_FILTER: flt.expr = optarg; break;
		case OPT_MATCH:
			flt.match = tool_grow(flt.match, flt.nmatch, sizeof optarg);
			flt.match[flt.nmatch++] = optarg;
			break;
		case OPT_GROUP_FILTER: flt.group_expr = optarg; break;
		case OPT_GROUP_MATCH:
			flt.group_match = tool_grow(flt.group_match,
			    flt.ngroup_match, sizeof optarg);
			flt.group_match[flt.ngroup_match++] = optarg;
			break;
		case OPT_ORDERED: so.group.ordered = 1; break;
		case OPT_SESSION:
			so.group.session = tool_duration_positive("--session",
			    optarg);
			break;
		case OPT_FROM_OFFSET:
			from = tool_grow(from, so.group.nfrom_offset, sizeof *from);
			if (mq_offset_parse(optarg,
			    &from[so.group.nfrom_offset++]) < 0)
				errx(mq_errcode(), "--from-offset: %s", mq_errmsg());
			so.group.from_offset = from;
			break;
		case OPT_FROM_TIME:
			if (mq_time_arg_parse(optarg, &so.group.from_time) < 0)
				errx(mq_errcode(), "--from-time: %s", mq_errmsg());
			from_time = 1;
			break;
		case OPT_KEY: keyfile = optarg; break;
		case OPT_KEYGEN: keygen = optarg; break;
		case OPT_PUBKEY: keygen = optarg; pubkey = 1; break;
		case OPT_REPLY: opt.reply = 1; break;
		}
	}
	if (keygen)
		return key_file(keygen, pubkey, argc);
	if (argc != 1)
		tool_usage(usage, "%s", argc ? "only one TOPIC or PATTERN" :
		    "a TOPIC or PATTERN is required");
	if (!opt.group)
		tool_usage(usage, "-g GROUP is required");
	if (opt.exec && (run.manual || run.output.json || run.output.format ||
	    run.output.nul || run.output.quiet))
		errx(EX_USAGE, "--exec cannot be combined with --manual, --json, "
		    "-F, -0 or -q");
	if (run.output.json + (run.output.format != NULL) + run.output.nul > 1)
		errx(EX_USAGE, "choose one of --json, -F and -0");
	if ((opt.publish_to || opt.handler_timeout > 0 || opt.jobs > 1 ||
	    opt.reply) && !opt.exec)
		errx(EX_USAGE, "-j, --publish-to, --reply and --handler-timeout "
		    "go with --exec");
	if (opt.jobs > 1 && run.count)
		errx(EX_USAGE, "-j and -n cannot be combined");
	if (opt.publish_to)
		tool_name("topic", opt.publish_to);
	if (so.group.from_start + (so.group.nfrom_offset > 0) + from_time > 1)
		errx(EX_USAGE, "choose one of --from-start, --from-offset and "
		    "--from-time");
	tool_topic_or_pattern(argv[0]);
	tool_name("group", opt.group);
	tool_place(argv[0], opt.group);
	if (!keyfile && (e = getenv("MQ_SUB_KEY")) && *e)
		keyfile = e;
	if (keyfile && !(so.key = mq_seal_key_load(keyfile)))
		tool_fail();
	if ((e = getenv("MQ_POLL")) && *e)
		so.poll = tool_duration("MQ_POLL", e);
	/* Both filters are checked before anything is made. */
	so.group.filter = flt.group_expr;
	so.group.match = flt.group_match;
	so.group.nmatch = flt.ngroup_match;
	if (((flt.expr || flt.nmatch) && !(flt.f = mq_filter_compile(flt.expr,
	    flt.match, flt.nmatch))) || mq_filter_check(&so.group) < 0)
		tool_fail();

	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		err(EX_OSERR, "pipe");
	so.wake_fd = wake_pipe[0];
	mq_spool *sp = tool_spool(spool, MQ_CREATE);
	tool_fence_warn(sp);
	tool_strict_topic(sp, argv[0], no_create);
	if (unsubscribe) {
		if (mq_group_unsubscribe(sp, argv[0], opt.group) < 0)
			tool_fail();
		mq_spool_close(sp);
		free(from);
		return 0;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* The group exists before the workers race to create it. */
	if (mq_group_exists(sp, argv[0], opt.group) != 1 &&
	    mq_group_subscribe(sp, argv[0], opt.group, &so.group) < 0)
		tool_fail();
	if (opt.jobs > 1) {
		if (!(workers = calloc(opt.jobs - 1, sizeof *workers)))
			err(EX_OSERR, "malloc");
		if (mq_sub_workers_start(workers, opt.jobs - 1, &nworkers) < 0)
			errx(mq_errcode(), "%s", mq_errmsg());
	}
	mq_sub *sub = mq_sub_open(sp, argv[0], opt.group, &so);
	if (!sub)
		tool_fail();
	struct mq_handling handling = { .cmd = opt.exec,
	    .timeout = opt.handler_timeout, .backoff = opt.backoff,
	    .backoff_max = opt.backoff_max, .hold = !run.follow,
	    .reply = opt.reply };
	if (opt.publish_to && !(handling.publish_to = mq_pub_open(sp,
	    opt.publish_to, MQ_CREATE)))
		tool_fail();
	/* A batch is flushed whole before it is acked; one write suits it. */
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	run.filter = flt.f;
	run.exec = opt.exec ? &handling : NULL;
	run.out = stdout;
	struct mq_consumed r;
	if (mq_sub_consume(sub, &run, &r) < 0) {
		errno = r.out_errno;
		if (errno == EPIPE)     /* the reader went away: as any filter */
			tool_sigpipe();
		if (r.out_errno)
			err(EX_IOERR, "stdout");
		tool_fail();
	}
	mq_pub_close(handling.publish_to);
	mq_filter_free(flt.f);
	mq_sub_close(sub);
	mq_seal_key_free(so.key);
	mq_spool_close(sp);
	free(from);
	int rc = !r.delivered ? MQ_EX_EMPTY : r.held ? EX_TEMPFAIL : 0;
	if (nworkers && (rc = mq_sub_workers_join(rc, workers, nworkers)) < 0)
		errx(mq_errcode(), "%s", mq_errmsg());
	return rc;
}
