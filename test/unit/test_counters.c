/*
 * test_counters.c: publish and ack counters (counters.c): rates over 1,
 * 5 and 15 minutes from one-minute slots, a slot reused for a later
 * minute starts from zero, a clock set back counts only in the totals,
 * latency percentiles of the last minutes within a bucket's width, every
 * host's file added up, a file truncated under a publisher (no SIGBUS,
 * no longer counted, left out by readers), and MQ_STATS=off counting
 * nothing.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "queue.h"
#include "t.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static char root[] = "/tmp/mq-unit-counters.XXXXXX";
static const double M = 29833333;       /* a minute, since the epoch */


static void
publish(mq_spool *sp, double minute, uint64_t n)
{
	mq_count_published(sp, "t", n, minute * 60 + 1);
}

static bool
near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

/* v is the true value: a percentile may be up to 1/8 above it. */
static bool
within_bucket(double got, double v)
{
	return got >= v - 1e-9 && got <= v * 1.125 + 1e-9;
}

static int
copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT |
	    O_TRUNC, 0666);
	ssize_t n;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	close(out);
	return in >= 0 && out >= 0 ? 0 : -1;
}

int
main(void)
{
	if (!mkdtemp(root))
		return 1;
	char p[256], q[256];
	snprintf(p, sizeof p, "%s/s", root);
	mq_spool *sp = mq_spool_open(p, MQ_CREATE);
	if (!sp || mq_topic_create(sp, "t", NULL) < 0)
		return 1;
	struct mq_topic t;
	if (mq_topic_open_as(sp, "t", MQ_FORMAT_ANY, &t) < 0)
		return 1;
	struct mq_counts c;

	ok(mq_counts_read(t.fd, "stats", false, M * 60, &c) == 0 &&
	    c.total == 0 && c.hosts == 0 && c.rate[0] == 0 &&
	    c.latency[0] == -1, "nothing counted yet: zeros, no latency");

	/* Minute M - 20 shares its slot with M - 4, which comes later. */
	publish(sp, M - 20, 60);
	publish(sp, M - 10, 120);
	publish(sp, M - 4, 5);
	publish(sp, M - 3, 60);
	publish(sp, M, 30);
	publish(sp, M - 36, 7);         /* a clock set back: totals only */
	ok(mq_counts_read(t.fd, "stats", false, M * 60 + 30, &c) == 0,
	    "read at half past minute M");
	ok(c.total == 60 + 120 + 5 + 60 + 30 + 7 && c.hosts == 1,
	    "total: every publish, one host");
	ok(near(c.rate[0], 30 / 60.0), "1 min: the minute so far");
	ok(near(c.rate[1], (30 + 60 + 5) / 300.0),
	    "5 min: the reused slot counts minute M-4 only");
	ok(near(c.rate[2], (30 + 60 + 5 + 120) / 900.0), "15 min");
	ok(mq_counts_read(t.fd, "stats", false, M * 60 + 75, &c) == 0 &&
	    near(c.rate[0], (0 + 0.75 * 30) / 60.0),
	    "a minute later: 3/4 of minute M is still within the last 60 s");

	/* Latencies: 100 acks of 1..100 ms in minute M, one of 10 s in
	 * minute M - 7 (in the rates, not the percentiles). */
	mq_count_acked(sp, "t", "g", M * 60 - 7 * 60, M * 60 - 7 * 60 - 10);
	for (int i = 1; i <= 100; i++)
		mq_count_acked(sp, "t", "g", M * 60 + 10, M * 60 + 10 -
		    i / 1000.0);
	ok(mq_counts_read(t.fd, "groups/g.stats", true, M * 60 + 20, &c) == 0,
	    "read the group's");
	ok(c.total == 101 && c.window_count == 100, "101 acks, 100 in window");
	ok(fabs(c.sum - (10 + 5.050)) < 1e-3, "sum of latencies");
	ok(within_bucket(c.latency[0], 0.050), "p50 of 1..100 ms");
	ok(within_bucket(c.latency[1], 0.090), "p90");
	ok(c.latency[2] >= 0.099 - 1e-9 && c.latency[2] <= 0.100 + 1e-9,
	    "p99, no more than the max");
	ok(near(c.latency[3], 0.100), "max: exact");
	ok(near(c.rate[2], (100 + 1) / 900.0), "acks per second over 15 min");
	ok(mq_counts_read(t.fd, "groups/g.stats", true, M * 60 + 7 * 60,
	    &c) == 0 && c.latency[0] == -1 && c.window_count == 0,
	    "7 minutes later: no latency in the window");
	mq_count_acked(sp, "t", "g", M * 60 + 20, M * 60 + 20 + 5);
	ok(mq_counts_read(t.fd, "groups/g.stats", true, M * 60 + 21, &c) == 0 &&
	    c.total == 102 && near(c.latency[3], 0.100),
	    "a publisher's clock ahead: latency 0, not negative");

	/* A second host's file adds up; a foreign file is skipped. */
	char host[MQ_HOST_MAX];
	mq_hostname(host);
	snprintf(p, sizeof p, "%s/s/topics/t/stats/%s", root, host);
	snprintf(q, sizeof q, "%s/s/topics/t/stats/other-host", root);
	ok(copy_file(p, q) == 0, "copy as another host's");
	snprintf(q, sizeof q, "%s/s/topics/t/stats/short", root);
	int fd = open(q, O_WRONLY | O_CREAT, 0666);
	ok(fd >= 0 && write(fd, "mqcount1", 8) == 8 && close(fd) == 0,
	    "a short file");
	ok(mq_counts_read(t.fd, "stats", false, M * 60 + 30, &c) == 0 &&
	    c.hosts == 2 && c.total == 2 * 282 &&
	    near(c.rate[0], 2 * 30 / 60.0), "two hosts added, short skipped");

	/* Truncated under a publisher: no SIGBUS, it counts no more; a
	 * reader leaves the file out. */
	snprintf(p, sizeof p, "%s/s/topics/t/stats/%s", root, host);
	ok(truncate(p, 0) == 0, "truncate this host's file");
	publish(sp, M, 1);
	publish(sp, M, 1);
	struct stat sb;
	ok(stat(p, &sb) == 0 && sb.st_size == 0, "counted no more, no SIGBUS");
	ok(mq_counts_read(t.fd, "stats", false, M * 60 + 30, &c) == 0 &&
	    c.hosts == 1 && c.total == 282, "the truncated file left out");

	/* A SIGBUS outside the counters goes where it went before them:
	 * a fault on another mapping, or one sent, kills as it did. */
	for (int sent = 0; sent < 2; sent++) {
		pid_t pid = fork();
		if (pid == 0) {
			snprintf(q, sizeof q, "%s/other-map", root);
			int mfd = open(q, O_RDWR | O_CREAT, 0666);
			char *m = mfd < 0 || ftruncate(mfd, 4096) < 0 ? NULL :
			    mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, 0);
			if (!m || m == MAP_FAILED || ftruncate(mfd, 0) < 0)
				_exit(1);
			if (sent)
				kill(getpid(), SIGBUS);
			else
				_exit(m[0]);
			_exit(2);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		/* Under AddressSanitizer the handler before ours is its own,
		 * which reports the signal and exits with 1. */
		bool killed = (WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS) ||
		    (SANITIZED && WIFEXITED(st) && WEXITSTATUS(st) == 1);
		ok(killed,
		    "a SIGBUS %s outside the counters still kills",
		    sent ? "sent" : "from a fault");
	}

	/* Off: no file made. */
	setenv("MQ_STATS", "off", 1);
	snprintf(p, sizeof p, "%s/s", root);
	mq_spool *sp2 = mq_spool_open(p, 0);
	mq_count_acked(sp2, "t", "h", M * 60, M * 60 - 1);
	snprintf(q, sizeof q, "%s/s/topics/t/groups/h.stats", root);
	ok(sp2 && stat(q, &sb) < 0, "MQ_STATS=off: nothing made");
	mq_spool_close(sp2);

	mq_topic_close(&t);
	mq_spool_close(sp);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	return (getenv("KEEP") || system(cmd) == 0) ? t_done() : 1;
}
