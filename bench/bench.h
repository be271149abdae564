/* bench.h: what the benchmark helpers share (each is one C file, built
 * by run.sh; include this after the system headers, with _GNU_SOURCE). */
#ifndef MQ_BENCH_H
#define MQ_BENCH_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static inline void
die(const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s%s%s: %s\n", program_invocation_short_name, what,
	    arg ? " " : "", arg ? arg : "", strerror(errno));
	exit(1);
}

/* Monotonic seconds. */
static inline double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Monotonic nanoseconds. */
static inline int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A count argument; exits 64 on anything but a whole number (0 too
 * unless zero_ok). */
static inline size_t
count_arg(const char *s, int zero_ok)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || (v == 0 && !zero_ok)) {
		fprintf(stderr, "%s: bad count: %s\n",
		    program_invocation_short_name, s);
		exit(64);
	}
	return (size_t)v;
}

static inline int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile p of a sorted array (0 when it is empty). */
static inline int64_t
pct(const int64_t *v, size_t n, double p)
{
	size_t k = (size_t)((p / 100.0) * (double)n + 0.999999);

	if (n == 0)
		return 0;
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static inline double
tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

#endif
