/*
 * lat: publish-to-delivery latency, one message in flight at a time.
 *
 *   lat mq SPOOL MQ_SUB N WARMUP [SUB_SPOOL]
 *       Subscribes group "lat" to topic "lat" (libmq), starts
 *       `MQ_SUB -f -g lat -s SPOOL lat` with its stdout on a pipe, then
 *       WARMUP + N times: takes t0 = CLOCK_MONOTONIC, publishes one message
 *       whose body is t0 in decimal ns with mq_pub_send(..., MQ_SYNC_NONE)
 *       in this process, reads the line mq-sub prints (the body) and takes
 *       t2.  Latency = t2 - body.  The next message is published only after
 *       the previous one arrived, so the consumer is blocked in its wait
 *       (inotify) every time; the WARMUP messages make sure it got there
 *       and are not counted.  With SUB_SPOOL, mq-sub reads the spool
 *       there: the same spool through another mount (another host).
 *   lat inotify DIR N WARMUP
 *       The floor: a child blocked in inotify (IN_CREATE|IN_MOVED_TO) on
 *       DIR/new; the parent writes tmp/NAME (open O_CREAT|O_EXCL, write,
 *       close) and renames it to new/NAME; the child renames it to cur/,
 *       reads it and writes its body as a line to a pipe (it leaves the
 *       file in cur/: no ack).  Measured the same way.
 *
 * Prints one line, key=value, microseconds:
 *   count=N p50_us= p90_us= p99_us= max_us= mean_us= send_p50_us=
 * send_p50_us is the median time of the publish call alone (t1 - t0).
 * Built without libmq (-DLAT_NO_MQ) only the inotify mode exists.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef LAT_NO_MQ
#include "mq.h"
#endif

#include "bench.h"

#define LINE_TIMEOUT_MS 10000

/* A line reader on a pipe, with a timeout so a consumer that never
 * delivers fails the run instead of hanging it. */
struct reader {
	int fd;
	char buf[4096];
	size_t len;
};

static int
read_line(struct reader *r, char *out, size_t outsz)
{
	for (;;) {
		char *nl = memchr(r->buf, '\n', r->len);
		struct pollfd p = { .fd = r->fd, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - r->buf);

			if (l >= outsz)
				l = outsz - 1;
			memcpy(out, r->buf, l);
			out[l] = '\0';
			r->len -= (size_t)(nl - r->buf) + 1;
			memmove(r->buf, nl + 1, r->len);
			return 0;
		}
		if (r->len == sizeof r->buf) {
			fprintf(stderr, "lat: line too long\n");
			exit(1);
		}
		n = poll(&p, 1, LINE_TIMEOUT_MS);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("poll", NULL);
		}
		if (n == 0) {
			fprintf(stderr, "lat: nothing delivered in %d ms\n",
			    LINE_TIMEOUT_MS);
			return -1;
		}
		n = read(r->fd, r->buf + r->len, sizeof r->buf - r->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read", "pipe");
		}
		if (n == 0) {
			fprintf(stderr, "lat: consumer exited\n");
			return -1;
		}
		r->len += (size_t)n;
	}
}

static void
stop(pid_t pid)
{
	int i, status;

	kill(pid, SIGTERM);
	for (i = 0; i < 200; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* Nearest-rank percentile of a sorted array of ns, in µs. */
static double
pct_us(const int64_t *v, size_t n, double p)
{
	return (double)pct(v, n, p) / 1000.0;
}

static void
report(int64_t *lat, int64_t *send, size_t n)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += (double)lat[i];
	qsort(lat, n, sizeof *lat, cmp64);
	qsort(send, n, sizeof *send, cmp64);
	printf("count=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f "
	    "mean_us=%.1f send_p50_us=%.1f\n", n, pct_us(lat, n, 50),
	    pct_us(lat, n, 90), pct_us(lat, n, 99), pct_us(lat, n, 100),
	    sum / (double)n / 1000.0, pct_us(send, n, 50));
}

/* The publish step of a mode: send the body, return 0 or -1. */
typedef int (*send_fn)(void *ctx, const char *body, size_t len);

static int
measure(send_fn send, void *ctx, struct reader *r, size_t n, size_t warmup)
{
	int64_t *lat, *snd;
	char line[256], body[64];
	size_t i;

	lat = calloc(n ? n : 1, sizeof *lat);
	snd = calloc(n ? n : 1, sizeof *snd);
	if (lat == NULL || snd == NULL)
		die("calloc", NULL);
	for (i = 0; i < warmup + n; i++) {
		int64_t t0, t1, t2, sent;
		char *end;
		int len;

		t0 = now_ns();
		len = snprintf(body, sizeof body, "%" PRId64, t0);
		if (send(ctx, body, (size_t)len) < 0)
			return -1;
		t1 = now_ns();
		if (read_line(r, line, sizeof line) < 0)
			return -1;
		t2 = now_ns();
		errno = 0;
		sent = strtoll(line, &end, 10);
		if (errno || end == line || *end || sent != t0) {
			fprintf(stderr, "lat: unexpected line \"%s\" (expected "
			    "%s)\n", line, body);
			return -1;
		}
		if (i >= warmup) {
			lat[i - warmup] = t2 - sent;
			snd[i - warmup] = t1 - t0;
		}
	}
	report(lat, snd, n);
	free(lat);
	free(snd);
	return 0;
}

/* ---- inotify floor ---- */

struct ino_ctx {
	int tmp, new;
	uint64_t seq;
};

static int
ino_send(void *vctx, const char *body, size_t len)
{
	struct ino_ctx *c = vctx;
	char name[64];
	int fd;

	snprintf(name, sizeof name, "%020" PRIu64 ".%032x", c->seq++, 0u);
	fd = openat(c->tmp, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
	    0644);
	if (fd < 0)
		die("create tmp/", name);
	if (write(fd, body, len) != (ssize_t)len)
		die("write tmp/", name);
	if (close(fd) < 0)
		die("close tmp/", name);
	if (renameat(c->tmp, name, c->new, name) < 0)
		die("rename to new/", name);
	return 0;
}

static void
ino_child(int dfd, const char *newpath, int out)
{
	union {
		char b[65536];
		struct inotify_event align;
	} ev;
	char body[4096];
	int ifd, new, cur;

	new = openat(dfd, "new", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cur = openat(dfd, "cur", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (new < 0 || cur < 0)
		die("open", "new/ or cur/");
	if ((ifd = inotify_init1(IN_CLOEXEC)) < 0)
		die("inotify_init1", NULL);
	if (inotify_add_watch(ifd, newpath, IN_CREATE | IN_MOVED_TO) < 0)
		die("inotify_add_watch", newpath);
	if (write(out, "ready\n", 6) != 6)
		die("write", "pipe");
	for (;;) {
		ssize_t n = read(ifd, ev.b, sizeof ev.b);
		char *p;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read", "inotify");
		}
		for (p = ev.b; p < ev.b + n;) {
			struct inotify_event *e = (struct inotify_event *)p;
			ssize_t r;
			int fd;

			p += sizeof *e + e->len;
			if (e->len == 0 || e->name[0] == '.')
				continue;
			if (renameat(new, e->name, cur, e->name) < 0) {
				if (errno == ENOENT)
					continue;
				die("rename to cur/", e->name);
			}
			if ((fd = openat(cur, e->name, O_RDONLY | O_CLOEXEC)) < 0)
				die("open cur/", e->name);
			r = read(fd, body, sizeof body - 1);
			if (r < 0)
				die("read cur/", e->name);
			close(fd);
			body[r] = '\n';
			if (write(out, body, (size_t)r + 1) != r + 1)
				die("write", "pipe");
			/* No ack (unlink): the floor does the least work, and
			 * freeing a file's blocks can cost a synchronous
			 * discard (ext4 without a journal, mounted with
			 * -o discard) that mq's ack, which drops one of two
			 * links, never pays. */
		}
	}
}

static int
lat_inotify(const char *dir, size_t n, size_t warmup)
{
	struct ino_ctx c = { 0 };
	struct reader r = { 0 };
	char path[4096], line[64];
	int dfd, p[2], rc;
	pid_t pid;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("mkdir", dir);
	for (int i = 0; i < 3; i++) {
		static const char *sub[] = { "tmp", "new", "cur" };

		snprintf(path, sizeof path, "%s/%s", dir, sub[i]);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			die("mkdir", path);
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		die("open", dir);
	c.tmp = openat(dfd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	c.new = openat(dfd, "new", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.tmp < 0 || c.new < 0)
		die("open", "tmp/ or new/");
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe", NULL);
	if ((pid = fork()) < 0)
		die("fork", NULL);
	if (pid == 0) {
		close(p[0]);
		snprintf(path, sizeof path, "%s/new", dir);
		ino_child(dfd, path, p[1]);
		_exit(0);
	}
	close(p[1]);
	r.fd = p[0];
	if (read_line(&r, line, sizeof line) < 0 || strcmp(line, "ready"))
		rc = -1;
	else
		rc = measure(ino_send, &c, &r, n, warmup);
	stop(pid);
	return rc < 0 ? 1 : 0;
}

/* ---- mq ---- */

#ifndef LAT_NO_MQ
static pid_t
spawn(char *const argv[], int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe", NULL);
	if ((pid = fork()) < 0)
		die("fork", NULL);
	if (pid == 0) {
		if (dup2(p[1], 1) < 0)
			_exit(127);
		execv(argv[0], argv);
		fprintf(stderr, "lat: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

static int
mq_send(void *ctx, const char *body, size_t len)
{
	struct mq_pub_msg m = { .key = NULL, .partition = -1, .body = body,
	    .len = len, .headers = NULL, .nheaders = 0 };
	char ids[1][MQ_ID_LEN + 1];

	if (mq_pub_send(ctx, &m, 1, MQ_SYNC_NONE, ids) != 1) {
		fprintf(stderr, "lat: mq_pub_send: %s\n", mq_errmsg());
		return -1;
	}
	return 0;
}

static int
lat_mq(const char *spooldir, const char *mqsub, size_t n, size_t warmup,
    const char *subspool)
{
	struct mq_group_conf gc;
	struct reader r = { 0 };
	mq_spool *sp;
	mq_pub *pub;
	pid_t pid;
	int rc;
	char *argv[] = { (char *)mqsub, "-f", "-g", "lat", "-s",
	    (char *)(subspool ? subspool : spooldir), "lat", NULL };

	if ((sp = mq_spool_open(spooldir, MQ_CREATE)) == NULL) {
		fprintf(stderr, "lat: %s: %s\n", spooldir, mq_errmsg());
		return 1;
	}
	mq_group_conf_default(&gc);
	if (mq_group_subscribe(sp, "lat", "lat", &gc) < 0) {
		fprintf(stderr, "lat: subscribe: %s\n", mq_errmsg());
		return 1;
	}
	if ((pub = mq_pub_open(sp, "lat", MQ_CREATE)) == NULL) {
		fprintf(stderr, "lat: mq_pub_open: %s\n", mq_errmsg());
		return 1;
	}
	pid = spawn(argv, &r.fd);
	rc = measure(mq_send, pub, &r, n, warmup);
	stop(pid);
	mq_pub_close(pub);
	mq_spool_close(sp);
	return rc < 0 ? 1 : 0;
}
#endif

static size_t
count(const char *s)
{
	return count_arg(s, 1);
}

int
main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "inotify") == 0 && count(argv[3]))
		return lat_inotify(argv[2], count(argv[3]), count(argv[4]));
#ifndef LAT_NO_MQ
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "mq") == 0 &&
	    count(argv[4]))
		return lat_mq(argv[2], argv[3], count(argv[4]),
		    count(argv[5]), argc == 7 ? argv[6] : NULL);
#endif
	fprintf(stderr, "usage: lat mq SPOOL MQ_SUB N WARMUP [SUB_SPOOL]\n"
	    "       lat inotify DIR N WARMUP\n");
	return 64;
}
