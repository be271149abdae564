/*
 * mq-stat: the figures of a spool, a topic or a group, as a table, JSON or
 * Prometheus text, or checked against thresholds as a Nagios plugin; see
 * mq-stat(1).  The library reads (stat.c), checks (statcheck.c) and
 * writes them (statout.c, prometheus.c, nagios.c, msgstateout.c).
 */
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

enum {
	OPT_JSON = 256, OPT_PROMETHEUS, OPT_WATCH, OPT_CHECK,
	OPT_WARN, OPT_CRIT, OPT_MESSAGE, OPT_PEEK,
};
enum format { TABLE, JSON, PROMETHEUS };
static int (*const writers[])(const struct mq_stat *, FILE *) = {
	[TABLE] = mq_stat_write_table,
	[JSON] = mq_stat_write_json,
	[PROMETHEUS] = mq_stat_write_prometheus,
};

/* --check: every failure is "MQ UNKNOWN - why" on stdout and exit 3, as
 * a Nagios plugin must. */
enum { CHECK_OK, CHECK_WARNING, CHECK_CRITICAL, CHECK_UNKNOWN };
static int check_mode;

static void __attribute__((noreturn, format(printf, 2, 3)))
die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (!check_mode)
		verrx(code, fmt, ap);
	fputs("MQ UNKNOWN - ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	exit(CHECK_UNKNOWN);
}

static void __attribute__((noreturn))
fail(void)
{
	char buf[2048];
	die(mq_errcode(), "%s", tool_errmsg(buf, sizeof buf));
}

static void __attribute__((noreturn))
usage(int code)
{
	if (code && check_mode)
		die(code, "usage: %s --check [-s SPOOL] [--warn EXPR]... "
		    "[--crit EXPR]... [TOPIC [GROUP]]", getprogname());
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] [--json | --prometheus] [-o FILE] "
	    "[--watch DURATION]\n"
	    "               [TOPIC [GROUP]]\n"
	    "       %s --check [-s SPOOL] [--warn EXPR]... [--crit EXPR]... "
	    "[TOPIC [GROUP]]\n"
	    "       %s --message ID [-s SPOOL] [--json] [TOPIC]\n"
	    "       %s --peek [-0] [-F FORMAT | --json] [-n COUNT] [-s SPOOL] "
	    "TOPIC GROUP\n"
	    "       %s --peek --message ID [-0] [-F FORMAT | --json] [-s SPOOL]\n"
	    "               [TOPIC [GROUP]]\n",
	    getprogname(), getprogname(), getprogname(), getprogname(),
	    getprogname());
	exit(code);
}

static char **args;

/* What tool_getopt calls for --help and a bad option: with --check, a
 * bad option is said the plugin's way. */
static void
option_usage(int code)
{
	if (code && check_mode && optopt > 0 && optopt < 128)
		die(EX_USAGE, "bad option -%c, or no argument", optopt);
	if (code && check_mode)
		die(EX_USAGE, "bad option %s, or no argument", args[optind - 1]);
	usage(code);
}

static int
check(mq_spool *sp, const char *topic, const char *group,
    const struct mq_threshold *th, size_t nth)
{
	struct mq_stat st;
	struct mq_check c;
	if (mq_stat_read(sp, topic, group, &st) < 0 ||
	    mq_stat_check(&st, th, nth, &c) < 0)
		fail();
	if (mq_check_write(&c, stdout) < 0)
		fail();
	int state = c.state;
	mq_check_free(&c);
	mq_stat_free(&st);
	if (fflush(stdout) == EOF || ferror(stdout))
		exit(CHECK_UNKNOWN);
	return state;
}

static void
message(mq_spool *sp, const char *topic, const char *id, enum format fmt)
{
	struct mq_msg_where *w;
	size_t n;
	if (mq_msg_locate(sp, topic, id, &w, &n) < 0)
		fail();
	if ((fmt == JSON ? mq_msg_where_write_json(id, w, n, stdout) :
	    mq_msg_where_write_text(w, n, stdout)) < 0)
		fail();
	mq_msg_where_free(w, n);
}

static int
peek_one(void *arg, const struct mq_msg *m)
{
	return mq_msg_write(m, arg, stdout);
}

/* --peek: the message id, or the next count of the group; 1 when there
 * was none pending (as mq-sub). */
static int
peek(mq_spool *sp, const char *topic, const char *group, const char *id,
    unsigned long count, struct mq_msg_output *how)
{
	struct mq_msg *m;
	int n = 1;
	if (id && (mq_peek_id(sp, topic, group, id, &m) < 0 ||
	    peek_one(how, m) < 0))
		fail();
	if (id)
		mq_msg_free(m);
	else if ((n = mq_peek_group(sp, topic, group, count, peek_one, how)) < 0)
		fail();
	return n > 0 ? 0 : 1;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
		{ "watch", required_argument, NULL, OPT_WATCH },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "warn", required_argument, NULL, OPT_WARN },
		{ "crit", required_argument, NULL, OPT_CRIT },
		{ "message", required_argument, NULL, OPT_MESSAGE },
		{ "peek", no_argument, NULL, OPT_PEEK },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL, *out = NULL, *id = NULL;
	struct mq_msg_output how = { 0 };
	unsigned long count = 0;
	int peeking = 0;
	enum format fmt = TABLE;
	double watch = 0;
	struct mq_threshold *th = NULL;
	size_t nth = 0;
	int c;
	/* Known before any other option is looked at, so that every error
	 * is reported the plugin's way. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--check"))
			check_mode = 1;
	if (check_mode)
		opterr = 0;
	args = argv;
	while ((c = tool_getopt(&argc, &argv, "0F:n:o:s:", longopts,
	    option_usage)) != -1) {
		switch (c) {
		case OPT_CHECK:
			break;
		case OPT_MESSAGE:
			id = optarg;
			break;
		case OPT_PEEK:
			peeking = 1;
			break;
		case '0':
			how.nul = 1;
			break;
		case 'F':
			if (mq_format_check(optarg) < 0)
				fail();
			how.format = optarg;
			break;
		case 'n':
			count = tool_number("-n", optarg, 1, ~0UL);
			break;
		case OPT_WARN:
		case OPT_CRIT:
			if (!(th = reallocarray(th, nth + 1, sizeof *th)))
				die(EX_OSERR, "malloc: %s", strerror(errno));
			if (mq_threshold_parse(optarg, c == OPT_WARN ? 1 : 2,
			    &th[nth++]) < 0)
				fail();
			break;
		case 'o':
			out = optarg;
			break;
		case 's':
			spool = optarg;
			break;
		case OPT_JSON:
		case OPT_PROMETHEUS:
			if (fmt != TABLE)
				die(EX_USAGE, "--json and --prometheus "
				    "exclude each other");
			fmt = c == OPT_JSON ? JSON : PROMETHEUS;
			break;
		case OPT_WATCH:
			if (mq_duration_parse(optarg, &watch) < 0)
				die(EX_USAGE, "--watch: %s", mq_errmsg());
			if (watch <= 0)
				die(EX_USAGE, "--watch: expected more than "
				    "0 seconds, not '%s'", optarg);
			break;
		}
	}
	if (argc > 2)
		usage(EX_USAGE);
	if (check_mode && (fmt != TABLE || out || watch > 0))
		die(EX_USAGE, "--check takes no --json, --prometheus, -o or "
		    "--watch");
	if (check_mode && nth == 0)
		die(EX_USAGE, "--check: no threshold (--warn or --crit)");
	if (!check_mode && nth > 0)
		die(EX_USAGE, "--warn and --crit go with --check");
	how.json = fmt == JSON;
	if ((how.nul || how.format || count) && !peeking)
		die(EX_USAGE, "-0, -F and -n go with --peek");
	if (peeking && (check_mode || fmt == PROMETHEUS || out || watch > 0 ||
	    (how.json && how.format) || (id && count) || (!id && argc != 2)))
		die(EX_USAGE, "--peek takes TOPIC and GROUP, or --message ID; "
		    "-F or --json; no -n with --message, no --check, "
		    "--prometheus, -o or --watch");
	if (id && !peeking && (check_mode || fmt == PROMETHEUS || out ||
	    watch > 0 || argc > 1))
		die(EX_USAGE, "--message takes no --check, --prometheus, -o, "
		    "--watch or GROUP");
	const char *topic = argc > 0 ? argv[0] : NULL;
	const char *group = argc > 1 ? argv[1] : NULL;
	tool_place(topic, group);
	if ((topic && mq_name_check("topic", topic) < 0) ||
	    (group && mq_name_check("group", group) < 0))
		fail();
	mq_spool *sp = tool_spool_try(spool, MQ_READONLY);
	if (!sp)
		fail();
	if (peeking) {
		int rc = peek(sp, topic, group, id, count, &how);
		mq_spool_close(sp);
		if (fflush(stdout) == EOF || ferror(stdout))
			err(EX_IOERR, "stdout");
		return rc;
	}
	if (id) {
		message(sp, topic, id, fmt);
		mq_spool_close(sp);
		if (fflush(stdout) == EOF || ferror(stdout))
			err(EX_IOERR, "stdout");
		return 0;
	}
	if (check_mode) {
		int state = check(sp, topic, group, th, nth);
		mq_spool_close(sp);
		free(th);
		return state;
	}
	int clear = watch > 0 && !out && fmt == TABLE && isatty(STDOUT_FILENO);
	for (;;) {
		struct mq_stat st;
		if (mq_stat_read(sp, topic, group, &st) < 0)
			fail();
		if (out) {
			if (mq_stat_write_file(&st, writers[fmt], out) < 0)
				fail();
		} else {
			if (clear)
				fputs("\033[H\033[2J", stdout);
			if (writers[fmt](&st, stdout) < 0)
				fail();
			if (fflush(stdout) == EOF)
				err(EX_IOERR, "stdout");
		}
		mq_stat_free(&st);
		if (watch <= 0)
			break;
		struct timespec ts = { (time_t)watch,
		    (long)((watch - (double)(time_t)watch) * 1e9) };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		if (!clear && fmt == TABLE && !out)
			fputc('\n', stdout);
	}
	mq_spool_close(sp);
	if (fflush(stdout) == EOF || ferror(stdout))
		err(EX_IOERR, "stdout");
	return 0;
}
