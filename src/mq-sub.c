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
#include <getopt.h>
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
	OPT_UNSUBSCRIBE, OPT_HELP,
};

static struct {
	const char *group, *format, *exec;
	int follow, json, manual, nul, quiet;
	unsigned long count;
	double timeout;
} opt;

static volatile sig_atomic_t stopping;
static int wake_pipe[2] = { -1, -1 };

/* Also ends a wait that the signal did not interrupt (it may arrive just
 * before the library starts waiting). */
static void
on_signal(int sig)
{
	(void)sig;
	stopping = 1;
	if (wake_pipe[1] >= 0) {
		int e = errno;
		(void)!write(wake_pipe[1], "", 1);
		errno = e;
	}
}

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-0fq] [-F FORMAT] -g GROUP [-n COUNT] [-s SPOOL] "
	    "[-t SECONDS]\n              [--exec CMD] [--from-start] [--json] "
	    "[--lease SECONDS] [--manual]\n              [--unsubscribe] TOPIC\n",
	    getprogname());
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
setenv_u(const char *name, unsigned long long v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", v);
	setenv(name, buf, 1);
}

/* Runs the handler with the body on its standard input; returns its exit
 * status (128 + signal if it was killed). */
static int
run_handler(const struct mq_msg *m)
{
	int fds[2];
	if (pipe(fds) < 0)
		err(EX_OSERR, "pipe");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		err(EX_OSERR, "fork");
	if (pid == 0) {
		close(fds[1]);
		if (dup2(fds[0], 0) < 0)
			_exit(EX_OSERR);
		close(fds[0]);
		setenv("MQ_ID", m->id, 1);
		setenv("MQ_TOPIC", m->topic ? m->topic : "", 1);
		setenv("MQ_GROUP", opt.group, 1);
		setenv("MQ_KEY", m->key ? m->key : "", 1);
		setenv("MQ_RECEIPT", m->receipt, 1);
		setenv_u("MQ_PARTITION", m->partition);
		setenv_u("MQ_SEQ", m->seq);
		setenv_u("MQ_ATTEMPTS", m->attempts);
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", opt.exec, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	const unsigned char *p = m->body;
	size_t left = m->len;
	while (left) {
		ssize_t w = write(fds[1], p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;          /* the handler need not read it all */
		p += w;
		left -= (size_t)w;
	}
	close(fds[1]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			err(EX_OSERR, "waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	    128 + WTERMSIG(status);
}

static void
settle(mq_sub *sub, struct mq_msg *m, int ok)
{
	if ((ok ? mq_sub_ack(sub, m) : mq_sub_nack(sub, m)) < 0)
		warnx("%s", mq_errmsg());
}

/* Without -f a run gives each message one chance: a message its handler
 * refused stays claimed until the run ends, then goes back, so a cron job
 * neither spins on it nor counts a delivery that did not happen. */
static struct {
	struct mq_msg **m;
	size_t n, cap;
} refused;

static void
refuse_later(struct mq_msg *m)
{
	if (refused.n == refused.cap) {
		refused.cap = refused.cap ? refused.cap * 2 : 16;
		refused.m = reallocarray(refused.m, refused.cap, sizeof *refused.m);
		if (!refused.m)
			err(EX_OSERR, "malloc");
	}
	refused.m[refused.n++] = m;
}

static void
give_back_refused(mq_sub *sub)
{
	for (size_t i = 0; i < refused.n; i++) {
		/* If its lease ran out meanwhile, it is back already. */
		mq_sub_nack(sub, refused.m[i]);
		mq_msg_free(refused.m[i]);
	}
	free(refused.m);
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
			give_back_refused(sub);
			tool_fail();
		}
		if (rc == 0)
			break;
		n++;
	}
	return n;
}

static int handler_failed;

static unsigned long
consume(mq_sub *sub)
{
	struct mq_msg *batch[BATCH];
	unsigned long delivered = 0;
	while (!stopping && (!opt.count || delivered < opt.count)) {
		double timeout = opt.follow ? (opt.timeout > 0 ? opt.timeout : -1) :
		    delivered ? 0 : opt.timeout;
		size_t max = opt.exec ? 1 : BATCH;
		if (opt.count && opt.count - delivered < max)
			max = opt.count - delivered;
		size_t n = receive(sub, timeout, batch, max);
		if (n == 0)
			break;
		int out_ok = 1;
		for (size_t i = 0; i < n; i++) {
			if (opt.exec) {
				int ok = run_handler(batch[i]) == 0;
				if (!ok)
					handler_failed = 1;
				if (!ok && !opt.follow) {
					refuse_later(batch[i]);
					batch[i] = NULL;
				} else {
					settle(sub, batch[i], ok);
				}
			} else if (print(batch[i]) < 0) {
				out_ok = 0;
			}
		}
		if (!opt.exec && fflush(stdout) == EOF)
			out_ok = 0;
		for (size_t i = 0; i < n; i++) {
			if (!opt.exec && !opt.manual)
				settle(sub, batch[i], out_ok);
			mq_msg_free(batch[i]);
		}
		if (!out_ok)
			err(EX_IOERR, "stdout");
		delivered += n;
	}
	give_back_refused(sub);
	return delivered;
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
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct mq_sub_opts so;
	mq_sub_opts_default(&so);
	const char *spool = NULL, *e;
	int c, unsubscribe = 0;
	while ((c = getopt_long(argc, argv, "0F:fg:n:qs:t:", longopts, NULL)) != -1) {
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
		case OPT_UNSUBSCRIBE: unsubscribe = 1; break;
		case OPT_HELP: usage(0); break;
		default: usage(EX_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 1 || !opt.group)
		usage(EX_USAGE);
	if (opt.exec && (opt.manual || opt.json || opt.format || opt.nul ||
	    opt.quiet))
		errx(EX_USAGE, "--exec cannot be combined with --manual, --json, "
		    "-F, -0 or -q");
	if ((opt.json != 0) + (opt.format != NULL) + opt.nul > 1)
		errx(EX_USAGE, "choose one of --json, -F and -0");
	tool_name("topic", argv[0]);
	tool_name("group", opt.group);
	if ((e = getenv("MQ_POLL")) && *e)
		so.poll = tool_duration("MQ_POLL", e);

	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		err(EX_OSERR, "pipe");
	so.wake_fd = wake_pipe[0];
	mq_spool *sp = tool_spool(spool, MQ_CREATE);
	if (unsubscribe) {
		if (mq_group_unsubscribe(sp, argv[0], opt.group) < 0)
			tool_fail();
		mq_spool_close(sp);
		return 0;
	}
	mq_sub *sub = mq_sub_open(sp, argv[0], opt.group, &so);
	if (!sub)
		tool_fail();
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A batch is flushed whole before it is acked; one write suits it. */
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	unsigned long delivered = consume(sub);
	mq_sub_close(sub);
	mq_spool_close(sp);
	if (!delivered)
		return MQ_EX_EMPTY;
	return handler_failed ? EX_TEMPFAIL : 0;
}
