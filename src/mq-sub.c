/*
 * mq-sub: receive a topic's messages as a member of a consumer group.
 * By default each message is acked once its output is written and
 * flushed; --manual leaves it claimed and --exec acks on the handler's
 * success.
 */
#include <err.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "tool.h"

#define BATCH 64

enum {
	OPT_EXEC = 256, OPT_FROM_START, OPT_JSON, OPT_LEASE, OPT_MANUAL,
	OPT_UNSUBSCRIBE, OPT_BACKOFF, OPT_HANDLER_TIMEOUT,
	OPT_MAX_ATTEMPTS, OPT_PUBLISH_TO, OPT_EXACTLY_ONCE, OPT_GRACE,
	OPT_FILTER, OPT_MATCH, OPT_GROUP_FILTER, OPT_GROUP_MATCH,
	OPT_ORDERED, OPT_SESSION, OPT_FROM_OFFSET, OPT_FROM_TIME,
	OPT_KEY, OPT_KEYGEN, OPT_PUBKEY,
};

static struct {
	const char *group, *format, *exec, *publish_to;
	int follow, json, manual, nul, quiet;
	unsigned long count;
	double timeout, handler_timeout;
	double backoff, backoff_max;
	unsigned long jobs;
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

static int handler_failed;
static struct mq_handling handling;     /* --exec */

static volatile sig_atomic_t stopping;
static int wake_pipe[2] = { -1, -1 };

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
	    "[-t SECONDS]\n              [--exec CMD [-j N] [--backoff BASE[:MAX]] "
	    "[--grace SECONDS] "
	    "[--handler-timeout SECONDS]\n              [--publish-to TOPIC]] "
	    "[--exactly-once] [--from-start] [--json]\n              "
	    "[--lease SECONDS] [--manual] [--max-attempts N]\n"
	    "              [--filter EXPR] [--match NAME=GLOB] "
	    "[--group-filter EXPR]\n              [--group-match NAME=GLOB] "
	    "[--ordered] [--session SECONDS]\n"
	    "              [--from-offset P:N]... [--from-time TIME] "
	    "[--key FILE] [--unsubscribe] TOPIC|PATTERN\n"
	    "       %s --keygen FILE | --pubkey FILE\n",
	    getprogname(), getprogname());
	exit(code);
}

static int
print(const struct mq_msg *m)
{
	if (opt.quiet)
		return 0;
	if (opt.json)
		return mq_msg_write_json(m, stdout);
	if (opt.format)
		return mq_msg_write_format(m, opt.format, stdout);
	fwrite(m->body, 1, m->len, stdout);
	putchar(opt.nul ? '\0' : '\n');
	return ferror(stdout) ? -1 : 0;
}

static void
settle(mq_sub *sub, struct mq_msg *m, int ok)
{
	if ((ok ? mq_sub_ack(sub, m) : mq_sub_nack(sub, m, NULL)) < 0)
		tool_warn();
}

static void
give_back(mq_sub *sub, struct mq_msg *m, const struct mq_nack *how)
{
	int rc = mq_sub_nack(sub, m, how);
	if (rc < 0)
		tool_warn();
	else if (rc == 1)
		warnx("message %s dead-lettered after %u deliveries", m->id,
		    m->attempts);
}

/* Without -f a run gives each message one chance: a message its handler
 * refused stays claimed (held) until the run ends. */
static void
handle(mq_sub *sub, struct mq_msg *m)
{
	struct mq_handled h;
	char id[MQ_ID_LEN + 1];
	unsigned attempts = m->attempts;
	snprintf(id, sizeof id, "%s", m->id);
	int rc = mq_sub_handle(sub, m, &handling, &h);
	if (h.note[0])
		warnx("%s", h.note);
	else if (rc < 0)
		tool_warn();
	if (rc == MQ_HANDLED_DEAD)
		warnx("message %s dead-lettered after %u deliveries", id,
		    attempts);
	if (rc == MQ_HANDLED_HELD || rc == MQ_HANDLED_STOPPED)
		handler_failed = 1;
}

static void
release_held(mq_sub *sub)
{
	size_t dead;
	if (mq_sub_release_held(sub, &dead) < 0)
		tool_warn();
	if (dead)
		warnx("%zu message%s dead-lettered after their last delivery",
		    dead, dead == 1 ? "" : "s");
}

/* --match and --group-match: appends a condition. */
static void
push_match(const char ***v, size_t *n, const char *arg)
{
	if (!(*v = reallocarray(*v, *n + 1, sizeof **v)))
		err(EX_OSERR, "malloc");
	(*v)[(*n)++] = arg;
}

/* --filter: acks the messages that do not match, without output or
 * handler, and keeps the others in batch[0..): returns how many. */
static size_t
skip_unmatched(mq_sub *sub, struct mq_msg **batch, size_t n)
{
	struct mq_msg *skip[BATCH];
	bool match[BATCH];
	size_t keep = 0, ns = 0;
	if (mq_filter_match_many(flt.f, batch, n, match) < 0)
		tool_fail();
	for (size_t i = 0; i < n; i++) {
		if (match[i])
			batch[keep++] = batch[i];
		else
			skip[ns++] = batch[i];
	}
	if (ns && mq_sub_ack_batch(sub, skip, ns) < 0)
		tool_warn();
	for (size_t i = 0; i < ns; i++)
		mq_msg_free(skip[i]);
	return keep;
}

/* Receives up to max messages: waits up to timeout for the first, then
 * takes what is already pending. */
static size_t
receive(mq_sub *sub, double timeout, struct mq_msg **batch, size_t max)
{
	size_t n = 0;
	while (n < max && !stopping) {
		int rc = mq_sub_receive(sub, n ? 0 : timeout, &batch[n]);
		if (rc < 0) {
			for (size_t i = 0; i < n; i++) {
				settle(sub, batch[i], 0);
				mq_msg_free(batch[i]);
			}
			release_held(sub);
			tool_fail();
		}
		if (rc == 0)
			break;
		n++;
	}
	return n;
}

static unsigned long
consume(mq_sub *sub)
{
	struct mq_msg *batch[BATCH];
	unsigned long delivered = 0;
	double deadline = mq_mono() + opt.timeout;
	while (!stopping && (!opt.count || delivered < opt.count)) {
		double timeout = opt.follow ? (opt.timeout > 0 ? opt.timeout : -1) :
		    delivered ? 0 : opt.timeout;
		/* -t bounds the wait for a first message that matches. */
		if (flt.f && !opt.follow && !delivered)
			timeout = fmax(0, deadline - mq_mono());
		size_t max = opt.exec ? 1 : BATCH;
		if (opt.count && opt.count - delivered < max)
			max = opt.count - delivered;
		if (mq_sub_keep_held(sub) < 0)
			tool_warn();
		size_t n = receive(sub, timeout, batch, max);
		if (n == 0)
			break;
		if (flt.f && (n = skip_unmatched(sub, batch, n)) == 0)
			continue;
		int out_ok = 1, out_errno = 0;
		for (size_t i = 0; i < n; i++) {
			if (opt.exec) {
				handle(sub, batch[i]);
				batch[i] = NULL;
			} else if (out_ok && print(batch[i]) < 0) {
				out_ok = 0;
				out_errno = errno;
			}
		}
		if (!opt.exec && out_ok && fflush(stdout) == EOF) {
			out_ok = 0;
			out_errno = errno;
		}
		/* Output that could not be written is no fault of the
		 * messages: they come back as deferred, not failed. */
		for (size_t i = 0; !opt.exec && !out_ok && i < n; i++)
			give_back(sub, batch[i], &(struct mq_nack){
			    .deferred = 1, .status = -1 });
		if (!opt.exec && !opt.manual && out_ok &&
		    mq_sub_ack_batch(sub, batch, n) < 0)
			tool_warn();
		for (size_t i = 0; i < n; i++)
			mq_msg_free(batch[i]);
		if (!out_ok) {
			errno = out_errno;
			err(EX_IOERR, "stdout");
		}
		delivered += n;
	}
	release_held(sub);
	return delivered;
}

/* --keygen FILE and --pubkey FILE: a consumer key pair for sealed
 * topics; prints the public key. */
static int
key_file(const char *path, int pubkey, int argc)
{
	char pub[MQ_PUBKEY_HEX + 1];
	if (argc != 0)
		usage(EX_USAGE);
	if (pubkey) {
		mq_seal_key *k = mq_seal_key_load(path);
		if (!k)
			tool_fail();
		mq_seal_key_pub(k, pub);
		mq_seal_key_free(k);
	} else if (mq_seal_keygen(path, pub) < 0) {
		tool_fail();
	}
	printf("%s\n", pub);
	return 0;
}

/* -j N: N - 1 more processes, each a consumer of the group like this one
 * (a worker runs one handler at a time). */
static void
start_workers(unsigned long n)
{
	if (!(workers = calloc(n, sizeof *workers)))
		err(EX_OSERR, "malloc");
	fflush(NULL);
	for (unsigned long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			err(EX_OSERR, "fork");
		if (pid == 0) {
			nworkers = 0;           /* a worker has none of its own */
			return;
		}
		workers[nworkers++] = pid;
	}
}

/* The run's status from every worker's: an error first, then 75 (some
 * message given back), then 0 (something delivered), else 1. */
static int
join_workers(int rc)
{
	int all[2] = { rc, 0 };
	for (unsigned long i = 0; i < nworkers; i++) {
		int st;
		while (waitpid(workers[i], &st, 0) < 0)
			if (errno != EINTR)
				err(EX_OSERR, "waitpid");
		all[1] = WIFEXITED(st) ? WEXITSTATUS(st) : EX_SOFTWARE;
		if (all[1] > 1 && all[1] != EX_TEMPFAIL)
			all[0] = all[0] > 1 && all[0] != EX_TEMPFAIL ?
			    all[0] : all[1];
		else if (all[0] <= 1 && (all[1] == EX_TEMPFAIL ||
		    (all[1] == 0 && all[0] == MQ_EX_EMPTY)))
			all[0] = all[1];
	}
	return all[0];
}

/* --backoff BASE[:MAX] */
static void
backoff(const char *arg)
{
	char *copy = strdup(arg), *colon;
	if (!copy)
		err(EX_OSERR, "malloc");
	if ((colon = strchr(copy, ':')))
		*colon = 0;
	opt.backoff = tool_duration("--backoff", copy);
	opt.backoff_max = colon ? tool_duration("--backoff", colon + 1) :
	    fmax(opt.backoff, 300);
	if (opt.backoff_max < opt.backoff)
		errx(EX_USAGE, "--backoff: MAX is smaller than BASE");
	free(copy);
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
		{ NULL, 0, NULL, 0 },
	};
	struct mq_sub_opts so;
	mq_sub_opts_default(&so);
	const char *spool = NULL, *e, *keyfile = NULL, *keygen = NULL;
	int pubkey = 0;
	int c, unsubscribe = 0;
	struct mq_offset *from = NULL;
	while ((c = tool_getopt(&argc, &argv, "0F:fg:j:n:qs:t:", longopts,
	    usage)) != -1) {
		switch (c) {
		case '0': opt.nul = 1; break;
		case 'F':
			if (mq_format_check(optarg) < 0)
				errx(mq_errcode(), "-F: %s", mq_errmsg());
			opt.format = optarg;
			break;
		case 'f': opt.follow = 1; break;
		case 'g': opt.group = optarg; break;
		case 'n': opt.count = tool_number("-n", optarg, 1, ~0UL); break;
		case 'q': opt.quiet = 1; break;
		case 's': spool = optarg; break;
		case 't': opt.timeout = tool_duration("-t", optarg); break;
		case OPT_EXEC: opt.exec = optarg; break;
		case OPT_FROM_START: so.group.from_start = 1; break;
		case OPT_JSON: opt.json = 1; break;
		case OPT_LEASE:
			so.lease = tool_duration("--lease", optarg);
			if (so.lease <= 0)
				errx(EX_USAGE, "--lease: must be more than 0");
			so.group.lease = so.lease;
			break;
		case OPT_MANUAL: opt.manual = 1; break;
		case OPT_BACKOFF: backoff(optarg); break;
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
		case OPT_FILTER: flt.expr = optarg; break;
		case OPT_MATCH: push_match(&flt.match, &flt.nmatch, optarg); break;
		case OPT_GROUP_FILTER: flt.group_expr = optarg; break;
		case OPT_GROUP_MATCH:
			push_match(&flt.group_match, &flt.ngroup_match, optarg);
			break;
		case OPT_ORDERED: so.group.ordered = 1; break;
		case OPT_SESSION:
			so.group.session = tool_duration("--session", optarg);
			if (so.group.session <= 0)
				errx(EX_USAGE, "--session: must be more than 0");
			break;
		case OPT_FROM_OFFSET:
			from = reallocarray(from, so.group.nfrom_offset + 1,
			    sizeof *from);
			if (!from)
				err(EX_OSERR, "malloc");
			if (mq_offset_parse(optarg,
			    &from[so.group.nfrom_offset++]) < 0)
				errx(mq_errcode(), "--from-offset: %s", mq_errmsg());
			so.group.from_offset = from;
			break;
		case OPT_FROM_TIME:
			if (mq_time_arg_parse(optarg, &so.group.from_time) < 0)
				errx(mq_errcode(), "--from-time: %s", mq_errmsg());
			break;
		case OPT_KEY: keyfile = optarg; break;
		case OPT_KEYGEN: keygen = optarg; break;
		case OPT_PUBKEY: keygen = optarg; pubkey = 1; break;
		}
	}
	if (keygen)
		return key_file(keygen, pubkey, argc);
	if (argc != 1 || !opt.group)
		usage(EX_USAGE);
	if (opt.exec && (opt.manual || opt.json || opt.format || opt.nul ||
	    opt.quiet))
		errx(EX_USAGE, "--exec cannot be combined with --manual, --json, "
		    "-F, -0 or -q");
	if ((opt.json != 0) + (opt.format != NULL) + opt.nul > 1)
		errx(EX_USAGE, "choose one of --json, -F and -0");
	if ((opt.publish_to || opt.handler_timeout > 0 || opt.jobs > 1) &&
	    !opt.exec)
		errx(EX_USAGE, "-j, --publish-to and --handler-timeout go with "
		    "--exec");
	if (opt.jobs > 1 && opt.count)
		errx(EX_USAGE, "-j and -n cannot be combined");
	if (opt.publish_to)
		tool_name("topic", opt.publish_to);
	if (so.group.from_start + (so.group.nfrom_offset > 0) +
	    (so.group.from_time > 0) > 1)
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
	if ((flt.expr || flt.nmatch) && !(flt.f = mq_filter_compile(flt.expr,
	    flt.match, flt.nmatch)))
		tool_fail();
	if (flt.group_expr || flt.ngroup_match) {
		mq_filter *g = mq_filter_compile(flt.group_expr, flt.group_match,
		    flt.ngroup_match);
		if (!g)
			tool_fail();
		mq_filter_free(g);
		so.group.filter = flt.group_expr;
		so.group.match = flt.group_match;
		so.group.nmatch = flt.ngroup_match;
	}

	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		err(EX_OSERR, "pipe");
	so.wake_fd = wake_pipe[0];
	mq_spool *sp = tool_spool(spool, MQ_CREATE);
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
	if (opt.jobs > 1)
		start_workers(opt.jobs - 1);
	mq_sub *sub = mq_sub_open(sp, argv[0], opt.group, &so);
	if (!sub)
		tool_fail();
	handling = (struct mq_handling){ .cmd = opt.exec,
	    .timeout = opt.handler_timeout, .backoff = opt.backoff,
	    .backoff_max = opt.backoff_max, .hold = !opt.follow };
	if (opt.publish_to && !(handling.publish_to = mq_pub_open(sp,
	    opt.publish_to, MQ_CREATE)))
		tool_fail();
	/* A batch is flushed whole before it is acked; one write suits it. */
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	unsigned long delivered = consume(sub);
	mq_pub_close(handling.publish_to);
	mq_filter_free(flt.f);
	mq_sub_close(sub);
	mq_seal_key_free(so.key);
	mq_spool_close(sp);
	free(from);
	int rc = !delivered ? MQ_EX_EMPTY : handler_failed ? EX_TEMPFAIL : 0;
	return nworkers ? join_workers(rc) : rc;
}
