/*
 * duration.c: durations, as the tools' options and the environment give
 * them, and the monotonic clock timeouts are measured on.  A file of its
 * own, below everything that waits (lock.c, spool.c), calling nothing but
 * error.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "base.h"

/* Seconds on a clock no one sets: timeouts must not depend on MQ_NOW or
 * on the wall clock jumping. */
double
mq_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
mq_duration_parse(const char *s, double *out)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end == s || errno || !isfinite(x) || x < 0 || *s == '-' ||
	    *s == '+' || *s == ' ')
		return mq_err(EX_USAGE, "bad duration '%s'", s);
	double unit = 1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		unit = 1;
	else if (!strcmp(end, "ms"))
		unit = 0.001;
	else if (!strcmp(end, "m"))
		unit = 60;
	else if (!strcmp(end, "h"))
		unit = 3600;
	else if (!strcmp(end, "d"))
		unit = 86400;
	else
		return mq_err(EX_USAGE, "bad duration '%s' (use a number of "
		    "seconds, or a suffix ms, s, m, h, d)", s);
	if (x * unit > 1e9)
		return mq_err(EX_USAGE, "duration '%s' is too long", s);
	*out = x * unit;
	return 0;
}

/* A duration from the environment: dflt when it is unset, empty or not a
 * duration. */
double
mq_env_duration(const char *name, double dflt)
{
	double d;
	const char *e = getenv(name);
	return e && *e && mq_duration_parse(e, &d) == 0 ? d : dflt;
}
