/* tool.c: helpers shared by the tools' main()s. */
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sysexits.h>

#include "tool.h"

/* getopt_long's value for --help: past any character and any tool's
 * OPT_ enum, which start at 256. */
#define OPT_HELP 0x10000

int
tool_getopt(int *argc, char ***argv, const char *shortopts,
    const struct option *longopts, void (*usage)(int))
{
	static struct option *all;
	static const struct option *of;
	if (of != longopts) {
		size_t n = 0;
		while (longopts[n].name)
			n++;
		free(all);
		if (!(all = calloc(n + 2, sizeof *all)))
			err(EX_OSERR, "calloc");
		memcpy(all, longopts, n * sizeof *all);
		all[n] = (struct option){ "help", no_argument, NULL, OPT_HELP };
		of = longopts;
	}
	int c = getopt_long(*argc, *argv, shortopts, all, NULL);
	if (c == OPT_HELP || c == '?' || c == ':') {
		usage(c == OPT_HELP ? 0 : EX_USAGE);
		exit(c == OPT_HELP ? 0 : EX_USAGE);
	}
	if (c == -1) {
		*argc -= optind;
		*argv += optind;
		free(all);
		all = NULL;
		of = NULL;
	}
	return c;
}

void
tool_usage(void (*usage)(int), const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarnx(fmt, ap);
	va_end(ap);
	usage(EX_USAGE);
	exit(EX_USAGE);
}

/* Where the tool works: the spool, and the topic and group of its
 * arguments. */
static char *place_spool;
static const char *place_topic, *place_group;

void
tool_place(const char *topic, const char *group)
{
	place_topic = topic;
	place_group = group;
}

/* Whether msg names "KIND NAME" or "KIND 'NAME'" already. */
static bool
names(const char *msg, const char *kind, const char *name)
{
	char a[256], b[256];
	snprintf(a, sizeof a, "%s %s", kind, name);
	snprintf(b, sizeof b, "%s '%s'", kind, name);
	return strstr(msg, a) || strstr(msg, b);
}

static void
append(char *buf, size_t len, const char *fmt, const char *arg)
{
	size_t at = strlen(buf);
	snprintf(buf + at, len - at, fmt, arg);
}

/* The error, with the place it happened in before it when it is about a
 * file (a permission, a missing file, a failed system call): "SPOOL:
 * topic T: group G: what", less what the message says already; one about
 * the spool itself gets nothing. */
const char *
tool_errmsg(char *buf, size_t len)
{
	const char *msg = mq_errmsg();
	int code = mq_errcode();
	if ((code != EX_NOPERM && code != EX_NOINPUT && code != EX_CANTCREAT &&
	    code != EX_IOERR && code != EX_OSERR && code != EX_TEMPFAIL) ||
	    (place_spool && strstr(msg, place_spool)))
		return msg;
	buf[0] = 0;
	if (place_spool)
		append(buf, len, "%s: ", place_spool);
	if (place_topic && !names(msg, "topic", place_topic))
		append(buf, len, "topic %s: ", place_topic);
	if (place_group && !names(msg, "group", place_group))
		append(buf, len, "group %s: ", place_group);
	append(buf, len, "%s", msg);
	return buf;
}

void
tool_fail(void)
{
	char buf[2048];
	errx(mq_errcode(), "%s", tool_errmsg(buf, sizeof buf));
}

void
tool_warn(void)
{
	char buf[2048];
	warnx("%s", tool_errmsg(buf, sizeof buf));
}

void
tool_name(const char *kind, const char *name)
{
	if (mq_name_check(kind, name) < 0)
		tool_fail();
}

void
tool_topic_or_pattern(const char *name)
{
	if ((mq_is_pattern(name) ? mq_pattern_check(name) :
	    mq_name_check("topic", name)) < 0)
		tool_fail();
}

int
tool_command(const char *cmd, const char *const *names)
{
	char list[256] = "";
	size_t n = 0;
	for (; names[n]; n++)
		if (!strcmp(cmd, names[n]))
			return (int)n;
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
		    i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
	errx(EX_USAGE, "unknown command '%s' (%s)", cmd, list);
}

/* A topic holds a descriptor per partition, and may have up to
 * MQ_PARTITIONS_MAX (a peer may make one that large): the soft limit on
 * open files, often 1024, goes up to the hard one.  The tools use poll
 * and inotify, never select, so a descriptor above 1023 is no harm. */
void
tool_open_files(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

mq_spool *
tool_spool_try(const char *dir, int flags)
{
	tool_open_files();
	free(place_spool);
	place_spool = mq_spool_locate(dir);
	return mq_spool_open(dir, flags);
}

mq_spool *
tool_spool(const char *dir, int flags)
{
	mq_spool *sp = tool_spool_try(dir, flags);
	if (!sp)
		tool_fail();
	return sp;
}

void
tool_fence_warn(mq_spool *sp)
{
	struct mq_fence f;
	if (mq_fence_read(sp, &f) != 0)
		warnx("warning: this spool was fenced: spool %s was promoted to "
		    "epoch %llu; what is acknowledged here does not reach it, "
		    "whose consumers get those messages again (mq-replicate "
		    "demote)", f.peer[0] ? f.peer : "?",
		    (unsigned long long)f.epoch);
}

void *
tool_grow(void *v, size_t n, size_t size)
{
	if (!(v = reallocarray(v, n + 1, size)))
		err(EX_OSERR, "malloc");
	return v;
}

void
tool_strict_topic(mq_spool *sp, const char *topic, int no_create)
{
	const char *e = getenv("MQ_STRICT");
	struct mq_topic_conf conf;
	if ((!no_create && (!e || !*e || !strcmp(e, "0"))) ||
	    mq_is_pattern(topic) || mq_topic_conf_read(sp, topic, &conf) == 0)
		return;
	if (mq_errcode() != EX_NOINPUT)
		tool_fail();
	errx(EX_NOINPUT, "no topic '%s' (%s: create it with mq-topic create)",
	    topic, no_create ? "--no-create" : "MQ_STRICT");
}

double
tool_duration(const char *opt, const char *arg)
{
	double d;
	if (mq_duration_parse(arg, &d) < 0)
		errx(EX_USAGE, "%s: %s", opt, mq_errmsg());
	return d;
}

double
tool_duration_positive(const char *opt, const char *arg)
{
	double d = tool_duration(opt, arg);
	if (d <= 0)
		errx(EX_USAGE, "%s: must be more than 0", opt);
	return d;
}

void
tool_backoff(const char *arg, double *base, double *max)
{
	const char *colon = strchr(arg, ':');
	char *first = strndup(arg, colon ? (size_t)(colon - arg) : strlen(arg));
	if (!first)
		err(EX_OSERR, "malloc");
	*base = tool_duration("--backoff", first);
	free(first);
	*max = colon ? tool_duration("--backoff", colon + 1) :
	    (*base > 300 ? *base : 300);
	if (*max < *base)
		errx(EX_USAGE, "--backoff: MAX is smaller than BASE");
}

void
tool_sigpipe(void)
{
	fflush(NULL);
	signal(SIGPIPE, SIG_DFL);
	raise(SIGPIPE);
	exit(EX_IOERR);
}

unsigned long
tool_number(const char *opt, const char *arg, unsigned long min,
    unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || *arg == '-' || n < min || n > max)
		errx(EX_USAGE, "%s: expected a number from %lu to %lu, not '%s'",
		    opt, min, max, arg);
	return n;
}
