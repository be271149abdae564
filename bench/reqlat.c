/*
 * reqlat: request/reply round trips, one at a time, against a server
 * that already waits (mq-sub -f --exec CMD --reply TOPIC).
 *
 *   reqlat lib SPOOL TOPIC N WARMUP
 *       In this process, WARMUP + N times: open a reply box, publish a
 *       request with Reply-To and Correlation-Id (mq_pub_send,
 *       MQ_SYNC_NONE), wait for the reply, close the box.
 *   reqlat cli SPOOL TOPIC MQ_REQ N WARMUP
 *       WARMUP + N times: run `MQ_REQ -q -s SPOOL TOPIC x` (posix_spawn)
 *       and wait for it; it must exit 0.
 *
 * Each round trip is timed from its start to the reply (or the exit of
 * mq-req); the WARMUP ones are not counted.  Prints one line, key=value,
 * microseconds: count=N p50_us= p90_us= p99_us= max_us= mean_us=
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mq.h"

#include "bench.h"

extern char **environ;

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void
report(int64_t *v, size_t n)
{
	int64_t sum = 0;
	qsort(v, n, sizeof *v, cmp_i64);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	printf("count=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f "
	    "mean_us=%.1f\n", n, v[n / 2] / 1e3, v[n * 9 / 10] / 1e3,
	    v[n * 99 / 100] / 1e3, v[n - 1] / 1e3, (double)sum / (double)n / 1e3);
}

static int64_t
lib_call(mq_spool *sp, const char *topic, mq_pub *p)
{
	int64_t t0 = now_ns();
	struct mq_reply_box box;
	char id[1][MQ_ID_LEN + 1], *buf;
	size_t len;
	if (mq_reply_box_open(sp, topic, 10, &box) < 0)
		goto fail;
	struct mq_header h[2] = { { "Reply-To", box.name },
	    { "Correlation-Id", box.correlation } };
	struct mq_pub_msg m = { .partition = -1, .body = "x", .len = 1,
	    .headers = h, .nheaders = 2 };
	if (mq_pub_send(p, &m, 1, MQ_SYNC_NONE, id) != 1 ||
	    mq_reply_wait(&box, 10, &buf, &len) != 1)
		goto fail;
	free(buf);
	mq_reply_box_close(&box);
	return now_ns() - t0;
fail:
	fprintf(stderr, "reqlat: %s\n", mq_errmsg());
	exit(1);
}

static int64_t
cli_call(char *const argv[])
{
	int64_t t0 = now_ns();
	pid_t pid;
	int st;
	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
	    waitpid(pid, &st, 0) != pid)
		die("spawn", argv[0]);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "reqlat: %s exited %d\n", argv[0],
		    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		exit(1);
	}
	return now_ns() - t0;
}

int
main(int argc, char **argv)
{
	int cli = argc == 7 && !strcmp(argv[1], "cli");
	if (!cli && !(argc == 6 && !strcmp(argv[1], "lib"))) {
		fprintf(stderr, "usage: reqlat lib SPOOL TOPIC N WARMUP\n"
		    "       reqlat cli SPOOL TOPIC MQ_REQ N WARMUP\n");
		return 64;
	}
	size_t n = count_arg(argv[cli ? 5 : 4], 0);
	size_t warm = count_arg(argv[cli ? 6 : 5], 1);
	int64_t *v = calloc(n, sizeof *v);
	if (!v)
		die("malloc", NULL);
	char *cmd[] = { argv[4], "-q", "-s", argv[2], argv[3], "x", NULL };
	mq_spool *sp = cli ? NULL : mq_spool_open(argv[2], 0);
	mq_pub *p = sp ? mq_pub_open(sp, argv[3], 0) : NULL;
	if (!cli && !p) {
		fprintf(stderr, "reqlat: %s\n", mq_errmsg());
		return 1;
	}
	for (size_t i = 0; i < warm + n; i++) {
		int64_t t = cli ? cli_call(cmd) : lib_call(sp, argv[3], p);
		if (i >= warm)
			v[i - warm] = t;
	}
	report(v, n);
	if (p)
		mq_pub_close(p);
	if (sp)
		mq_spool_close(sp);
	free(v);
	return 0;
}
