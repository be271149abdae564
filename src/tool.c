/* tool.c: helpers shared by the tools' main()s. */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sysexits.h>

#include "tool.h"

void
tool_fail(void)
{
	errx(mq_errcode(), "%s", mq_errmsg());
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
tool_spool(const char *dir, int flags)
{
	tool_open_files();
	mq_spool *sp = mq_spool_open(dir, flags);
	if (!sp)
		tool_fail();
	return sp;
}

double
tool_duration(const char *opt, const char *arg)
{
	double d;
	if (mq_duration_parse(arg, &d) < 0)
		errx(EX_USAGE, "%s: %s", opt, mq_errmsg());
	return d;
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
