/*
 * replag: steady-state replication lag, publish to durable on the peer.
 *
 *   replag SPOOL TOPIC RATE SECONDS
 *       SPOOL must already send to exactly one peer (a file
 *       SPOOL/replicate/peers/<32 hex peer id>, written by a running
 *       `mq-replicate push --follow`).  Publishes RATE * SECONDS messages of
 *       1,024 bytes to TOPIC (created if missing), one per
 *       mq_pub_send(..., MQ_SYNC_BATCH) call, message i due at start +
 *       i / RATE on CLOCK_MONOTONIC (a send that falls behind is made at
 *       once, the schedule is not shifted).  For each message it records t0
 *       (just before the call), t1 (just after) and mq_pub_replica_goal(): the
 *       offset in the spool's journal after the message's records.
 *       A second thread watches SPOOL/replicate/peers/ with inotify
 *       (IN_MOVED_TO: the file is replaced by a rename) and a 1 ms poll
 *       timeout as a fallback, reads the peer file's confirmed= each time,
 *       and takes t2 for every message whose end offset is <= confirmed:
 *       the message is applied and durable on the peer.  It waits at most
 *       CONFIRM_TIMEOUT_MS after the last send for the last message.
 *
 * Prints one line, key=value, milliseconds:
 *   count=N missing=M seconds= rate= late= p50_ms= p90_ms= p99_ms=
 *   max_ms= mean_ms= send_p50_ms= send_p90_ms= send_p99_ms= send_max_ms=
 * p*_ms: publish to durable on the peer (t2 - t0), over the messages
 * confirmed (missing: not confirmed in time; the percentiles then leave
 * them out); send_*: the publish call alone (t1 - t0), local durability.
 * seconds and rate: the publishing loop's wall time and its rate; late:
 * sends that started more than 1 ms after they were due.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "mq.h"

#include "bench.h"

#define SIZE 1024
#define CONFIRM_TIMEOUT_MS 30000

struct shared {
	size_t n;
	int64_t *t0, *t1, *t2;           /* t2 == 0: not confirmed yet */
	uint64_t *end;
	atomic_size_t published;         /* t0[i], end[i] set for i below */
	atomic_int_least64_t done_ns;    /* the last send's end, 0 before */
	int peers;                       /* SPOOL/replicate/peers */
	char peer[64];
};

/* The peer file's confirmed= value; 0 if it cannot be read (it is
 * replaced by a rename, so a reader sees the old or the new one). */
static uint64_t
confirmed(struct shared *s)
{
	char buf[1024], *p;
	ssize_t n;
	int fd;

	if ((fd = openat(s->peers, s->peer, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (p = buf; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, "confirmed=", 10) == 0)
			return strtoull(p + 10, NULL, 10);
	}
	return 0;
}

/* The only 32-hex name in peers/. */
static void
find_peer(struct shared *s, const char *path)
{
	struct dirent *e;
	DIR *d;
	int found = 0;

	if ((d = fdopendir(dup(s->peers))) == NULL)
		die("opendir", path);
	while ((e = readdir(d)) != NULL) {
		size_t i;

		for (i = 0; e->d_name[i] && isxdigit((unsigned char)e->d_name[i]);
		    i++)
			;
		if (i != 32 || e->d_name[i])
			continue;
		memcpy(s->peer, e->d_name, 33);
		found++;
	}
	closedir(d);
	if (found != 1) {
		fprintf(stderr, "replag: %s: %d peers, expected one\n", path,
		    found);
		exit(1);
	}
}

static void *
watch(void *arg)
{
	union {
		char b[4096];
		struct inotify_event align;
	} ev;
	struct shared *s = arg;
	struct pollfd p;
	size_t next = 0;
	char path[64];
	int ifd;

	if ((ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0)
		die("inotify_init1", NULL);
	snprintf(path, sizeof path, "/proc/self/fd/%d", s->peers);
	if (inotify_add_watch(ifd, path, IN_MOVED_TO) < 0)
		die("inotify_add_watch", "replicate/peers");
	p.fd = ifd;
	p.events = POLLIN;
	while (next < s->n) {
		size_t pub;
		int64_t t, done;
		uint64_t c;

		if (poll(&p, 1, 1) < 0 && errno != EINTR)
			die("poll", NULL);
		while (read(ifd, ev.b, sizeof ev.b) > 0)
			;
		pub = atomic_load_explicit(&s->published, memory_order_acquire);
		c = confirmed(s);
		t = now_ns();
		for (; next < pub && s->end[next] <= c; next++)
			s->t2[next] = t;
		done = atomic_load(&s->done_ns);
		if (done && t - done > (int64_t)CONFIRM_TIMEOUT_MS * 1000000)
			break;
	}
	close(ifd);
	return NULL;
}

/* Nearest-rank percentile of a sorted array of ns, in ms. */
static double
pct_ms(const int64_t *v, size_t n, double p)
{
	return (double)pct(v, n, p) / 1e6;
}

static size_t
count(const char *s)
{
	return count_arg(s, 0);
}

int
main(int argc, char **argv)
{
	static char body[SIZE];
	struct mq_pub_msg m = { .key = NULL, .partition = -1, .body = body,
	    .len = SIZE, .headers = NULL, .nheaders = 0 };
	char ids[1][MQ_ID_LEN + 1], path[4096];
	struct shared s = { 0 };
	int64_t start, *lat, *snd;
	size_t rate, i, nl = 0, late = 0;
	double secs, sum = 0;
	pthread_t th;
	mq_spool *sp;
	mq_pub *pub;

	if (argc != 5) {
		fprintf(stderr, "usage: replag SPOOL TOPIC RATE SECONDS\n");
		return 64;
	}
	rate = count(argv[3]);
	s.n = rate * count(argv[4]);
	s.t0 = calloc(s.n, sizeof *s.t0);
	s.t1 = calloc(s.n, sizeof *s.t1);
	s.t2 = calloc(s.n, sizeof *s.t2);
	s.end = calloc(s.n, sizeof *s.end);
	lat = calloc(s.n, sizeof *lat);
	snd = calloc(s.n, sizeof *snd);
	if (!s.t0 || !s.t1 || !s.t2 || !s.end || !lat || !snd)
		die("calloc", NULL);
	memset(body, 'x', sizeof body);

	if ((sp = mq_spool_open(argv[1], 0)) == NULL) {
		fprintf(stderr, "replag: %s: %s\n", argv[1], mq_errmsg());
		return 1;
	}
	if ((pub = mq_pub_open(sp, argv[2], MQ_CREATE)) == NULL) {
		fprintf(stderr, "replag: mq_pub_open: %s\n", mq_errmsg());
		return 1;
	}
	snprintf(path, sizeof path, "%s/replicate/peers", argv[1]);
	if ((s.peers = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		die("open", path);
	find_peer(&s, path);
	if (pthread_create(&th, NULL, watch, &s) != 0) {
		fprintf(stderr, "replag: pthread_create failed\n");
		return 1;
	}

	start = now_ns();
	for (i = 0; i < s.n; i++) {
		int64_t due = start + (int64_t)(i * 1000000000 / rate);
		struct timespec ts = { .tv_sec = due / 1000000000,
		    .tv_nsec = due % 1000000000 };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
		    NULL) == EINTR)
			;
		snprintf(body, sizeof body, "%zu ", i);
		s.t0[i] = now_ns();
		if (s.t0[i] - due > 1000000)
			late++;
		if (mq_pub_send(pub, &m, 1, MQ_SYNC_BATCH, ids) != 1) {
			fprintf(stderr, "replag: mq_pub_send: %s\n",
			    mq_errmsg());
			return 1;
		}
		s.t1[i] = now_ns();
		struct mq_replica_goal goal;
		s.end[i] = mq_pub_replica_goal(pub, &goal) < 0 ? 0 : goal.end;
		atomic_store_explicit(&s.published, i + 1,
		    memory_order_release);
	}
	atomic_store(&s.done_ns, now_ns());
	secs = (double)(atomic_load(&s.done_ns) - start) / 1e9;
	pthread_join(th, NULL);
	mq_pub_close(pub);
	mq_spool_close(sp);

	for (i = 0; i < s.n; i++) {
		snd[i] = s.t1[i] - s.t0[i];
		if (s.t2[i]) {
			lat[nl] = s.t2[i] - s.t0[i];
			sum += (double)lat[nl++];
		}
	}
	qsort(lat, nl, sizeof *lat, cmp64);
	qsort(snd, s.n, sizeof *snd, cmp64);
	printf("count=%zu missing=%zu seconds=%.3f rate=%.1f late=%zu "
	    "p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f mean_ms=%.2f "
	    "send_p50_ms=%.2f send_p90_ms=%.2f send_p99_ms=%.2f "
	    "send_max_ms=%.2f\n", s.n, s.n - nl, secs, (double)s.n / secs,
	    late, pct_ms(lat, nl, 50), pct_ms(lat, nl, 90),
	    pct_ms(lat, nl, 99), pct_ms(lat, nl, 100),
	    nl ? sum / (double)nl / 1e6 : 0.0, pct_ms(snd, s.n, 50),
	    pct_ms(snd, s.n, 90), pct_ms(snd, s.n, 99),
	    pct_ms(snd, s.n, 100));
	return 0;
}
