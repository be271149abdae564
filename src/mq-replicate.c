/*
 * mq-replicate: replication between spools: keys, the daemon (serve),
 * push and pull over TCP or ssh, status, promote, demote and forget.  The protocol and
 * everything it changes on disk are in libmq (replsend.c, replrecv.c), so
 * are the transports and the daemon's loop (replrun.c); this file picks
 * them, retries, logs and prints.
 */
#include <err.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include "tool.h"

enum {
	OPT_FORCE = 256, OPT_NAME, OPT_LISTEN, OPT_STDIO, OPT_INETD,
	OPT_FOLLOW, OPT_RETRY, OPT_RSH, OPT_REMOTE_SPOOL, OPT_REMOTE_COMMAND,
	OPT_PROGRESS, OPT_NO_PROGRESS, OPT_SYSLOG, OPT_JSON, OPT_COMPARE,
	OPT_MAX_SESSIONS, OPT_HANDSHAKE_TIMEOUT,
};

#define MAX_SESSIONS 64
#define HANDSHAKE_TIMEOUT 10.0
#define RETRY_MAX 30.0

static struct {
	int force, stdio, inetd, follow, progress, verbose, use_syslog, json;
	int compare, demote;
	const char *name, *listen, *rsh, *remote_spool, *remote_command;
	double retry, handshake_timeout;
	unsigned long max_sessions;
} opt = { .progress = -1, .retry = 1, .remote_command = "mq-replicate" };

static volatile int stop;
static struct mq_demoted demoted;

static void
usage(int code)
{
	const char *p = getprogname();
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] serve [--listen ADDR:PORT | --stdio | --inetd] "
	    "[-v] [--syslog]\n"
	    "              [--max-sessions N] [--handshake-timeout DURATION]\n"
	    "       %s [-s SPOOL] push|pull [--follow] [--retry DURATION] "
	    "[--compare] [--progress | --no-progress]\n"
	    "              [-v] [--syslog] (ADDR:PORT | --rsh CMD "
	    "[--remote-spool DIR] [--remote-command PATH])\n"
	    "       %s [-s SPOOL] status [--json]\n"
	    "       %s [-s SPOOL] promote\n"
	    "       %s [-s SPOOL] demote [--progress | --no-progress] [-v] "
	    "(ADDR:PORT | --rsh CMD ...)\n"
	    "       %s [-s SPOOL] keygen [--force] [--name NAME]\n"
	    "       %s [-s SPOOL] pubkey\n"
	    "       %s [-s SPOOL] authorize PUBKEY [NAME]\n"
	    "       %s [-s SPOOL] revoke PUBKEY|NAME\n"
	    "       %s [-s SPOOL] forget PEER\n", p, p, p, p, p, p, p, p, p, p);
	exit(code);
}

static void
log_line(int prio, const char *msg, void *ctx)
{
	(void)ctx;
	if (opt.use_syslog) {
		syslog(prio, "%s", msg);
		return;
	}
	if (prio > LOG_WARNING && !opt.verbose)
		return;
	if (opt.progress > 0)
		fputc('\n', stderr);
	fprintf(stderr, "%s: %s\n", getprogname(), msg);
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* A sender (push) and the daemon's listener end cleanly on SIGTERM or
 * SIGINT: after the batch in hand, or at the next accept.  Whatever
 * receives is simply killed by them: everything it did is crash-safe, and
 * what it had not confirmed is sent again. */
static void
signals(int clean_stop)
{
	struct sigaction sa = { .sa_handler = clean_stop ? on_signal : SIG_DFL };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static struct mq_repl_opts
repl_opts(int follow)
{
	struct mq_repl_opts o = { .follow = follow, .log = log_line,
	    .stop = &stop, .compare = opt.compare, .demote = opt.demote,
	    .demoted = &demoted };
	o.progress = opt.progress > 0;
	return o;
}

/* The daemon, or with --stdio or --inetd one connection on standard
 * input and output, secure unless over ssh. */
static int
serve(mq_spool *sp)
{
	struct mq_repl_opts o = repl_opts(0);
	if (!opt.stdio && !opt.inetd)
		return mq_repl_serve(sp, opt.listen ? opt.listen :
		    "127.0.0.1:7468", opt.max_sessions, opt.handshake_timeout,
		    &o);
	int told = 0;
	o.hello_done = &told;
	int rc = mq_repl_serve_one(sp, 0, 1, opt.inetd, opt.handshake_timeout,
	    &o);
	/* Over ssh our standard error is the initiator's terminal, and it
	 * reports what went wrong once it has talked to us. */
	if (rc < 0 && told && !opt.inetd) {
		int code = mq_errcode();
		if (opt.use_syslog)
			syslog(LOG_ERR, "%s", mq_errmsg());
		mq_spool_close(sp);
		exit(code);
	}
	return rc;
}

/* With --follow, the delay before the next session grows with the
 * sessions in a row that failed without moving anything on (failed):
 * one that did, on a link that cuts every session, starts it again. */
static int
push_pull(mq_spool *sp, const char *dest, enum mq_repl_role role)
{
	struct mq_repl_peer peer = { .address = dest, .rsh = opt.rsh,
	    .command = opt.remote_command, .spool = opt.remote_spool };
	struct mq_repl_opts o = repl_opts(opt.follow);
	unsigned failed = 0;
	for (;;) {
		int advanced = 0;
		o.advanced = &advanced;
		int rc = mq_repl_connect(sp, &peer, role, &o);
		if (rc < 0 && (!opt.follow || stop)) {
			if (opt.use_syslog)
				syslog(LOG_ERR, "%s", mq_errmsg());
			errx(mq_errcode(), "%s", mq_errmsg());
		}
		if (!opt.follow || stop)
			return rc;
		if (rc < 0) {
			/* A refused key or a misconfiguration will not mend by
			 * itself, but a daemon keeps trying: log and wait. */
			char msg[1200];
			snprintf(msg, sizeof msg, "%s: %s", dest ? dest : opt.rsh,
			    mq_errmsg());
			log_line(LOG_ERR, msg, NULL);
		}
		failed = rc < 0 && !advanced ? failed + 1 : 0;
		double delay = failed ? mq_backoff(opt.retry, RETRY_MAX, failed) :
		    opt.retry;
		for (double t = 0; t < delay && !stop; t += 0.1)
			usleep(100000);
	}
}

static int
status(mq_spool *sp)
{
	struct mq_peer_status *v;
	struct mq_repl_self q;
	size_t n;
	if (mq_repl_status(sp, &v, &n, &q) < 0 || (opt.json ?
	    mq_repl_status_write_json(v, n, &q, stdout) :
	    mq_repl_status_write_table(sp, v, n, &q, stdout)) < 0)
		return -1;
	free(v);
	if (fflush(stdout) == EOF)
		err(EX_IOERR, "stdout");
	return 0;
}

static int
keys(mq_spool *sp, const char *cmd, int argc, char **argv)
{
	char hex[MQ_PUBKEY_HEX + 1];
	if (!strcmp(cmd, "authorize")) {
		int rc = mq_peer_authorize(sp, argv[1], argc > 2 ? argv[2] : NULL);
		if (rc == 0)
			warnx("peer %s was authorized already", argv[1]);
		return rc < 0 ? -1 : 0;
	}
	if (!strcmp(cmd, "revoke"))
		return mq_peer_revoke(sp, argv[1], hex);
	if ((!strcmp(cmd, "keygen") ? mq_keys_generate(sp, opt.name,
	    opt.force, hex) : mq_keys_public(sp, hex)) < 0)
		return -1;
	printf("%s\n", hex);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "inetd", no_argument, NULL, OPT_INETD },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "retry", required_argument, NULL, OPT_RETRY },
		{ "rsh", required_argument, NULL, OPT_RSH },
		{ "remote-spool", required_argument, NULL, OPT_REMOTE_SPOOL },
		{ "remote-command", required_argument, NULL, OPT_REMOTE_COMMAND },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "syslog", no_argument, NULL, OPT_SYSLOG },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "compare", no_argument, NULL, OPT_COMPARE },
		{ "max-sessions", required_argument, NULL, OPT_MAX_SESSIONS },
		{ "handshake-timeout", required_argument, NULL,
		    OPT_HANDSHAKE_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL;
	int c;
	while ((c = tool_getopt(&argc, &argv, "s:v", longopts, usage)) != -1) {
		switch (c) {
		case 's': spool = optarg; break;
		case 'v': opt.verbose = 1; break;
		case OPT_FORCE: opt.force = 1; break;
		case OPT_NAME: opt.name = optarg; break;
		case OPT_LISTEN: opt.listen = optarg; break;
		case OPT_STDIO: opt.stdio = 1; break;
		case OPT_INETD: opt.inetd = 1; break;
		case OPT_FOLLOW: opt.follow = 1; break;
		case OPT_RETRY:
			opt.retry = tool_duration_positive("--retry", optarg);
			break;
		case OPT_RSH: opt.rsh = optarg; break;
		case OPT_REMOTE_SPOOL: opt.remote_spool = optarg; break;
		case OPT_REMOTE_COMMAND: opt.remote_command = optarg; break;
		case OPT_PROGRESS: opt.progress = 1; break;
		case OPT_NO_PROGRESS: opt.progress = 0; break;
		case OPT_SYSLOG: opt.use_syslog = 1; break;
		case OPT_JSON: opt.json = 1; break;
		case OPT_COMPARE: opt.compare = 1; break;
		case OPT_MAX_SESSIONS:
			opt.max_sessions = tool_number("--max-sessions", optarg, 1,
			    100000);
			break;
		case OPT_HANDSHAKE_TIMEOUT:
			opt.handshake_timeout = tool_duration("--handshake-timeout",
			    optarg);
			if (opt.handshake_timeout <= 0)
				errx(EX_USAGE, "--handshake-timeout: must be more "
				    "than 0");
			break;
		}
	}
	if (argc < 1)
		tool_usage(usage, "a command is required");
	const char *cmd = argv[0];
	int one = tool_command(cmd, (const char *const[]){ "serve", "push",
	    "pull", "demote", "status", "promote", "keygen", "pubkey",
	    "authorize", "revoke", "forget", NULL }) >= 9;
	int is_keygen = !strcmp(cmd, "keygen"), is_auth = !strcmp(cmd, "authorize");
	int is_serve = !strcmp(cmd, "serve"), is_push = !strcmp(cmd, "push"),
	    is_pull = !strcmp(cmd, "pull");
	opt.demote = !strcmp(cmd, "demote");
	int transfer = is_push || is_pull || opt.demote;
	if (opt.demote && (opt.follow || opt.compare))
		errx(EX_USAGE, "--follow and --compare go with push and pull");
	/* Which options go with which command. */
	if ((opt.force || opt.name) && !is_keygen)
		errx(EX_USAGE, "--force and --name go with keygen");
	if ((opt.listen || opt.stdio || opt.inetd) && !is_serve)
		errx(EX_USAGE, "--listen, --stdio and --inetd go with serve");
	if ((opt.listen != NULL) + opt.stdio + opt.inetd > 1 && is_serve)
		errx(EX_USAGE, "choose one of --listen, --stdio and --inetd");
	if (opt.max_sessions && (!is_serve || opt.stdio || opt.inetd))
		errx(EX_USAGE, "--max-sessions goes with serve --listen");
	if (opt.handshake_timeout > 0 && (!is_serve || opt.stdio))
		errx(EX_USAGE, "--handshake-timeout goes with serve --listen "
		    "or --inetd");
	if (!opt.max_sessions)
		opt.max_sessions = MAX_SESSIONS;
	if (!opt.handshake_timeout)
		opt.handshake_timeout = HANDSHAKE_TIMEOUT;
	if ((opt.follow || opt.rsh || opt.remote_spool || opt.progress >= 0 ||
	    opt.retry != 1 || opt.compare) && !transfer)
		errx(EX_USAGE, "--follow, --retry, --rsh, --remote-spool, "
		    "--compare and --progress go with push, pull and demote");
	if ((opt.remote_spool || strcmp(opt.remote_command, "mq-replicate")) &&
	    !opt.rsh)
		errx(EX_USAGE, "--remote-spool and --remote-command go with --rsh");
	if (opt.json && strcmp(cmd, "status"))
		errx(EX_USAGE, "--json goes with status");
	if (is_auth ? argc < 2 || argc > 3 : transfer ? argc != (opt.rsh ? 1 : 2) :
	    argc != 1 + one) {
		if (transfer)
			errx(EX_USAGE, opt.rsh ? "%s: no ADDR:PORT with --rsh" :
			    "%s: give ADDR:PORT, or --rsh CMD", cmd);
		usage(EX_USAGE);
	}
	if (opt.use_syslog)
		openlog("mq-replicate", LOG_PID, LOG_DAEMON);
	if (opt.progress < 0)
		opt.progress = isatty(2) && !opt.use_syslog && !opt.follow;
	mq_spool *sp = tool_spool(spool, is_keygen || is_auth || is_serve ||
	    transfer ? MQ_CREATE : !strcmp(cmd, "status") ? MQ_READONLY : 0);
	signals(is_push || (is_serve && !opt.stdio && !opt.inetd));
	int rc;
	if (is_serve)
		rc = serve(sp);
	else if (transfer) {
		rc = push_pull(sp, argc > 1 ? argv[1] : NULL, is_push ?
		    MQ_REPL_SEND : MQ_REPL_RECV);
		if (rc == 0 && demoted.done)
			printf("demoted %s: a replica at epoch %" PRIu64 "; %zu "
			    "message(s) published here that the new primary "
			    "lacks are in replicate/quarantine/\n",
			    mq_spool_path(sp), demoted.epoch, demoted.quarantined);
	}
	else if (!strcmp(cmd, "status"))
		rc = status(sp);
	else if (!strcmp(cmd, "promote")) {
		size_t n;
		uint64_t epoch;
		rc = mq_repl_promote(sp, &n, &epoch);
		if (rc == 0)
			printf("promoted %s to epoch %" PRIu64 ": %zu link(s) left "
			    "staged by an interrupted receive finished\n",
			    mq_spool_path(sp), epoch, n);
	} else if (!strcmp(cmd, "forget"))
		rc = mq_repl_forget(sp, argv[1], NULL);
	else
		rc = keys(sp, cmd, argc, argv);
	if (rc < 0) {
		if (opt.use_syslog)
			syslog(LOG_ERR, "%s", mq_errmsg());
		tool_fail();
	}
	mq_spool_close(sp);
	return 0;
}
