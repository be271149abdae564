/*
 * scale: the helpers of section 16 (bench/scale.bash), the soak.
 *
 *   scale pace RATE SECS LEN
 *       A paced publisher's input: RATE lines a second for SECS seconds,
 *       each LEN - 1 characters and a newline (mq-pub -l strips it), to
 *       standard output, a tick's lines in one write(2) every 10 ms (the
 *       lines due by then: a tick that comes late writes more).  Each
 *       line starts with CLOCK_MONOTONIC in decimal nanoseconds, taken
 *       when its tick is written, then a space and 'x's.  Prints
 *       "count= seconds= rate=" to standard error at the end.
 *   scale lat WINDOW OUT NAME
 *       Reads lines as `mq-sub -f` prints them (the bodies above) from
 *       standard input; each line's latency is the monotonic time it is
 *       read less the time it starts with.  Every WINDOW seconds from its
 *       start (and at the end of its input) it appends one line to OUT,
 *         name=NAME t=<s since start> count= p50_us= p99_us= max_us=
 *       (p50_us= and the others "-" when nothing came in the window), with
 *       O_APPEND: several readers can share OUT.
 *   scale heads MS OUT HEAD...
 *       Until killed, every MS milliseconds, reads each HEAD (a partition's
 *       head line, mq-spool(5)) and appends "<CLOCK_REALTIME ns> <the sum
 *       of their committed=>" to OUT (the clock of date +%s%N).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <unistd.h>

#include "bench.h"

static int
pace(long rate, long secs, long len)
{
	long total = rate * secs, sent = 0, due, i, n;
	int64_t t0 = now_ns(), t;
	size_t cap = 0, off;
	char *buf = NULL;
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	if (rate <= 0 || secs <= 0 || len < 22)
		return 64;
	while (sent < total) {
		t = now_ns();
		due = (long)((double)(t - t0) / 1e9 * (double)rate) + 1;
		if (due > total)
			due = total;
		n = due - sent;
		if (n > 0) {
			if ((size_t)(n * len) > cap) {
				cap = (size_t)(n * len);
				if ((buf = realloc(buf, cap)) == NULL)
					die("realloc", NULL);
			}
			for (i = 0, off = 0; i < n; i++) {
				int w = snprintf(buf + off, (size_t)len, "%" PRId64 " ", now_ns());
				memset(buf + off + w, 'x', (size_t)(len - 1 - w));
				buf[off + (size_t)len - 1] = '\n';
				off += (size_t)len;
			}
			for (size_t done = 0; done < off;) {
				ssize_t r = write(1, buf + done, off - done);
				if (r < 0) {
					if (errno == EINTR)
						continue;
					die("write", NULL);
				}
				done += (size_t)r;
			}
			sent = due;
		}
		nanosleep(&tick, NULL);
	}
	t = now_ns();
	fprintf(stderr, "count=%ld seconds=%.6f rate=%.1f\n", sent,
	    (double)(t - t0) / 1e9, (double)sent / ((double)(t - t0) / 1e9));
	free(buf);
	return 0;
}

struct win {
	int64_t *v;
	size_t n, cap;
};

static void
flush(struct win *w, int fd, const char *name, double t)
{
	char line[256];
	int len;

	if (w->n == 0) {
		len = snprintf(line, sizeof line,
		    "name=%s t=%.1f count=0 p50_us=- p99_us=- max_us=-\n", name, t);
	} else {
		qsort(w->v, w->n, sizeof *w->v, cmp64);
		len = snprintf(line, sizeof line,
		    "name=%s t=%.1f count=%zu p50_us=%.0f p99_us=%.0f max_us=%.0f\n",
		    name, t, w->n, (double)pct(w->v, w->n, 50) / 1e3,
		    (double)pct(w->v, w->n, 99) / 1e3,
		    (double)w->v[w->n - 1] / 1e3);
	}
	if (write(fd, line, (size_t)len) != len)
		die("write", NULL);
	w->n = 0;
}

static int
lat(double window, const char *out, const char *name)
{
	struct win w = { 0 };
	char buf[65536], *p, *nl;
	size_t have = 0;
	int64_t t0 = now_ns(), next = t0 + (int64_t)(window * 1e9);
	int fd;

	if (window <= 0)
		return 64;
	if ((fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644)) < 0)
		die("open", out);
	for (;;) {
		struct pollfd pf = { .fd = 0, .events = POLLIN };
		int64_t t = now_ns();
		ssize_t r;

		while (t >= next) {
			flush(&w, fd, name, (double)(next - t0) / 1e9);
			next += (int64_t)(window * 1e9);
		}
		if (poll(&pf, 1, (int)((next - t) / 1000000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll", NULL);
		}
		if (pf.revents == 0)
			continue;
		r = read(0, buf + have, sizeof buf - have);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("read", NULL);
		}
		if (r == 0)
			break;
		have += (size_t)r;
		t = now_ns();
		for (p = buf; (nl = memchr(p, '\n', have - (size_t)(p - buf))) != NULL;
		    p = nl + 1) {
			int64_t s = strtoll(p, NULL, 10);
			if (w.n == w.cap) {
				w.cap = w.cap ? 2 * w.cap : 4096;
				if ((w.v = realloc(w.v, w.cap * sizeof *w.v)) == NULL)
					die("realloc", NULL);
			}
			w.v[w.n++] = t - s;
		}
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
		if (have == sizeof buf)
			have = 0;         /* a line longer than the buffer: dropped */
	}
	flush(&w, fd, name, (double)(now_ns() - t0) / 1e9);
	close(fd);
	free(w.v);
	return 0;
}

static int
heads(long ms, const char *out, char **head, int n)
{
	struct timespec tick = { ms / 1000, (ms % 1000) * 1000000 }, ts;
	char buf[256], line[64];
	FILE *f;

	if (ms <= 0 || (f = fopen(out, "a")) == NULL)
		return 64;
	for (;;) {
		unsigned long long sum = 0;

		for (int i = 0; i < n; i++) {
			int fd = open(head[i], O_RDONLY);
			ssize_t r = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
			char *c;

			if (fd >= 0)
				close(fd);
			if (r <= 0)
				continue;
			buf[r] = '\0';
			if ((c = strstr(buf, "committed=")) != NULL)
				sum += strtoull(c + 10, NULL, 10);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(line, sizeof line, "%lld %llu\n",
		    (long long)ts.tv_sec * 1000000000 + ts.tv_nsec, sum);
		fputs(line, f);
		fflush(f);
		nanosleep(&tick, NULL);
	}
}

int
main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "pace") == 0)
		return pace(atol(argv[2]), atol(argv[3]), atol(argv[4]));
	if (argc == 5 && strcmp(argv[1], "lat") == 0)
		return lat(atof(argv[2]), argv[3], argv[4]);
	if (argc >= 5 && strcmp(argv[1], "heads") == 0)
		return heads(atol(argv[2]), argv[3], argv + 4, argc - 4);
	fprintf(stderr, "usage: scale pace RATE SECS LEN | scale lat WINDOW OUT NAME | "
	    "scale heads MS OUT HEAD...\n");
	return 64;
}
