/*
 * counters: what counting costs a publisher and a consumer, per message,
 * beside the cheapest system call their work makes per message.
 *
 *   counters SPOOL COUNT
 *
 * Makes SPOOL with topic t, then times COUNT calls of each:
 *   published   mq_count_published(t, 1): a publisher counts once per
 *               chunk (up to MQ_CHUNK_MAX messages); this is one per message
 *   acked       mq_count_acked(t, g): one per acknowledgement, with its
 *               latency into the histogram
 *   rename      rename(2) of a file back and forth in one directory: a
 *               claim is one, an ack one unlink(2)
 * and prints one line per figure: name=NAME ns=NANOSECONDS_PER_CALL.
 * The counters are in the page cache (a shared mapping); the minute's
 * slot is zeroed once, at the first call, as in any minute.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "base.h"
#include "bench.h"

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: counters SPOOL COUNT\n");
		return 64;
	}
	size_t n = count_arg(argv[2], 0);
	mq_spool *sp = mq_spool_open(argv[1], MQ_CREATE);
	if (!sp || mq_topic_create(sp, "t", NULL) < 0) {
		fprintf(stderr, "counters: %s\n", mq_errmsg());
		return 1;
	}
	double t = mq_now();
	mq_count_published(sp, "t", 1, t);     /* opened, slot zeroed */
	mq_count_acked(sp, "t", "g", t, t - 0.01);
	int64_t t0 = now_ns();
	for (size_t i = 0; i < n; i++)
		mq_count_published(sp, "t", 1, mq_now());
	int64_t t1 = now_ns();
	for (size_t i = 0; i < n; i++) {
		double at = mq_now();
		mq_count_acked(sp, "t", "g", at, at - (double)(i % 1000) / 1e4);
	}
	int64_t t2 = now_ns();
	char a[4096], b[4096];
	snprintf(a, sizeof a, "%s/a", argv[1]);
	snprintf(b, sizeof b, "%s/b", argv[1]);
	int fd = open(a, O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		die("create", a);
	close(fd);
	int64_t t3 = now_ns();
	for (size_t i = 0; i < n; i++)
		if (rename(i % 2 ? b : a, i % 2 ? a : b) < 0)
			die("rename", a);
	int64_t t4 = now_ns();
	printf("name=published ns=%.1f\n", (double)(t1 - t0) / (double)n);
	printf("name=acked ns=%.1f\n", (double)(t2 - t1) / (double)n);
	printf("name=rename ns=%.1f\n", (double)(t4 - t3) / (double)n);
	mq_spool_close(sp);
	return 0;
}
