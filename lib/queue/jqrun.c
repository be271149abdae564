/*
 * jqrun.c: a compiled jq program run in a child process, bounded in time
 * and in memory.
 *
 * A group filter is code that anyone who may write the group's conf (a
 * co-user, a replication peer) gives to every publisher, which runs it
 * while it holds the partition lock.  libjq has no way to stop a program
 * that never ends (`def f: f; f`), one that allocates without end
 * (`[range(1e12)]`), or one that trips one of jq 1.6's assertions.  So the
 * program is compiled and run in a worker forked for it: one per
 * program, started when first needed, kept for the messages that follow
 * (a round trip on a socket per message, not a fork).  The worker has
 * MQ_FILTER_MEMORY of data (RLIMIT_DATA), its compile and each run
 * MQ_FILTER_TIMEOUT of wall-clock time; one that takes longer is killed,
 * one that dies is reaped, and the next run forks a new one.  A run that
 * breaks a bound is an error the caller turns into "no match" (mq-sub(1),
 * FILTERS).
 *
 * Nothing is compiled in the caller: jq reads the environment into $ENV
 * when it compiles, and a compile that loads modules opens files (a FIFO
 * would block it for good).  The worker has an empty environment, no
 * module search path, no input or debug callback, /dev/null for its
 * standard streams: a program sees its message and nothing of the
 * process (jqlex.c refuses the parts of jq that would look).
 *
 * The worker sees the body's bytes and answers with truthiness only: for
 * a single program, whether its first output is neither false nor null;
 * for a set of n programs run as one (filter.c), one such answer for each
 * element of the array it outputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <jq.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "queue.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#define WORKER_FD 3

double
mq_filter_timeout(void)
{
	return mq_env_duration("MQ_FILTER_TIMEOUT", 1.0);
}

#ifndef UNDER_ASAN
static double
filter_memory(void)
{
	double bytes;
	const char *e = getenv("MQ_FILTER_MEMORY");
	return e && *e && mq_size_parse(e, &bytes) == 0 && bytes >= 16 << 20 &&
	    bytes < 1e15 ? bytes : 256 << 20;
}
#endif

/* Keeps the first line of jq's first compile error. */
struct jq_errbuf {
	char msg[512];
	int have;
};

static void
on_error(void *data, jv msg)
{
	struct jq_errbuf *e = data;
	if (e && !e->have) {
		jv s = jv_get_kind(msg) == JV_KIND_STRING ? jv_copy(msg) :
		    jq_format_error(jv_copy(msg));
		if (jv_get_kind(s) == JV_KIND_STRING) {
			const char *t = jv_string_value(s);
			size_t l = strcspn(t, "\n");
			while (l > 0 && (t[l - 1] == ':' || t[l - 1] == ' '))
				l--;
			snprintf(e->msg, sizeof e->msg, "%.*s", (int)l, t);
			e->have = 1;
		}
		jv_free(s);
	}
	jv_free(msg);
}

/* In the worker: the program compiled, and 'c' sent; or 'e' and jq's
 * message, and the worker ends. */
static jq_state *
compile(const char *program)
{
	struct jq_errbuf e = { .have = 0 };
	jq_state *jq = jq_init();
	if (!jq)
		_exit(EX_OSERR);
	jq_set_error_cb(jq, on_error, &e);
	/* No modules: without a search path jq 1.6 asserts on import. */
	jq_set_attr(jq, jv_string("JQ_LIBRARY_PATH"), jv_array());
	bool ok = jq_compile(jq, program);
	char msg[1 + sizeof e.msg];
	int len = snprintf(msg, sizeof msg, "%c%s", ok ? 'c' : 'e', ok ? "" :
	    e.have ? e.msg : "jq cannot compile it");
	struct iovec a = { msg, len < (int)sizeof msg ? (size_t)len :
	    sizeof msg - 1 };
	if (mq_write_all(WORKER_FD, &a, 1) < 0 || !ok)
		_exit(0);
	jq_set_error_cb(jq, on_error, NULL);
	return jq;
}

static bool
truthy(jv r)
{
	jv_kind k = jv_get_kind(r);
	jv_free(r);
	return k != JV_KIND_INVALID && k != JV_KIND_NULL && k != JV_KIND_FALSE;
}

/* The answer to one body: 'n' (not one JSON value), 'x' (a set's output
 * is not its array: a filter halted it), or 'r' and a byte per answer. */
static size_t
answer(jq_state *jq, size_t n, const char *body, size_t len, char *out)
{
	jv v = len > 0 && len <= INT_MAX ? jv_parse_sized(body, (int)len) :
	    jv_invalid();
	if (!jv_is_valid(v)) {
		jv_free(v);
		out[0] = 'n';
		return 1;
	}
	jq_start(jq, v, 0);
	jv r = jq_next(jq);
	out[0] = 'r';
	if (n == 0) {
		out[1] = truthy(r);
		return 2;
	}
	if (jv_get_kind(r) != JV_KIND_ARRAY ||
	    jv_array_length(jv_copy(r)) != (int)n) {
		jv_free(r);
		out[0] = 'x';
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		out[1 + i] = truthy(jv_array_get(jv_copy(r), (int)i));
	jv_free(r);
	return 1 + n;
}

/* The worker: the program compiled, then a body in (its length first),
 * an answer out, until EOF. */
static _Noreturn void
worker(const char *program, size_t n)
{
	jq_state *jq = compile(program);
	char *buf = NULL, *out = malloc(n + 2);
	size_t cap = 0;
	for (;;) {
		uint64_t len;
		if (!out || mq_read_full(WORKER_FD, (char *)&len, sizeof len) !=
		    (ssize_t)sizeof len)
			_exit(0);
		if (len > cap) {
			free(buf);
			if (len > SIZE_MAX / 2 || !(buf = malloc(len)))
				_exit(EX_OSERR);
			cap = len;
		}
		if (mq_read_full(WORKER_FD, buf, len) != (ssize_t)len)
			_exit(0);
		struct iovec a = { out, answer(jq, n, buf, len, out) };
		if (mq_write_all(WORKER_FD, &a, 1) < 0)
			_exit(0);
	}
}

/* In the child: nothing of the parent's but the socket, no terminal, no
 * environment, the memory bound; dies with its parent. */
static void
worker_setup(int fd, pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(fd, WORKER_FD) < 0)
		_exit(EX_OSERR);
	for (int i = 0; i < 3; i++)
		dup2(null, i);
	if (close_range(WORKER_FD + 1, ~0U, 0) < 0)
		_exit(EX_OSERR);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	/* Not NULL, as clearenv leaves it: jq 1.6's env walks environ
	 * without looking.  tzset: the zone (localtime) is the system's,
	 * not one the parent may have read from its TZ. */
	static char *none[] = { NULL };
	clearenv();
	environ = none;
	tzset();
#ifndef UNDER_ASAN
	/* ASan reserves terabytes of shadow memory: there, time is the
	 * only bound. */
	rlim_t mem = (rlim_t)filter_memory();
	struct rlimit rl = { mem, mem };
	if (setrlimit(RLIMIT_DATA, &rl) < 0)
		_exit(EX_OSERR);
#endif
}

static int
spawn(struct mq_jqrun *w)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return mq_err_sys("%s: filter: socketpair", w->what);
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		errno = e;
		return mq_err_sys("%s: filter: fork", w->what);
	}
	if (pid == 0) {
		worker_setup(sv[1], parent);
		worker(w->program, w->n);
	}
	close(sv[1]);
	w->pid = pid;
	w->fd = sv[0];
	return 0;
}

/* Kills and reaps the worker: its wait status. */
static int
reap(struct mq_jqrun *w)
{
	int status = 0;
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		close(w->fd);
		while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	w->pid = 0;
	w->fd = -1;
	return status;
}

/* A run (or compile) that broke a bound or a worker that died:
 * MQ_JQ_BROKE, and the error says which. */
static int
failed(struct mq_jqrun *w, bool timed_out)
{
	int status = reap(w);
	if (timed_out)
		mq_err(EX_UNAVAILABLE, "%s: filter: ran past its %g s "
		    "(MQ_FILTER_TIMEOUT)", w->what, mq_filter_timeout());
	else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		mq_err(EX_UNAVAILABLE, "%s: filter: jq died of %s (out of its "
		    "MQ_FILTER_MEMORY, or an assertion in jq)", w->what,
		    strsignal(WTERMSIG(status)));
	else
		mq_err(EX_UNAVAILABLE, "%s: filter: its worker stopped",
		    w->what);
	return MQ_JQ_BROKE;
}

/* The milliseconds until deadline (a mq_mono time), -1 once it passed. */
static int
ms_until(double deadline)
{
	double left = deadline - mq_mono();
	if (left <= 0)
		return -1;
	return left * 1000 < INT_MAX ? (int)(left * 1000) + 1 : INT_MAX;
}

/* Forks the worker and waits for its compile: 0; MQ_JQ_BROKE when the
 * compile broke a bound (the error says which); -1 when there is no
 * worker, or the program does not compile (EX_USAGE, jq's message). */
static int
start(struct mq_jqrun *w)
{
	if (spawn(w) < 0)
		return -1;
	char msg[1 + sizeof ((struct jq_errbuf *)0)->msg + 1];
	size_t got = 0;
	double deadline = mq_mono() + mq_filter_timeout();
	for (;;) {
		struct pollfd p = { w->fd, POLLIN, 0 };
		int ms = ms_until(deadline);
		if (ms < 0)
			return failed(w, true);
		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			return failed(w, false);
		if (!p.revents)
			continue;
		ssize_t r = recv(w->fd, msg + got, sizeof msg - 1 - got,
		    MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r > 0 && msg[0] == 'c')
			return 0;
		if (r > 0 && (got += (size_t)r) < sizeof msg - 1)
			continue;
		if (got == 0 || msg[0] != 'e')
			return failed(w, false);
		reap(w);
		msg[got] = 0;
		return mq_err(EX_USAGE, "bad filter: %s", msg + 1);
	}
}

int
mq_jqrun_start(struct mq_jqrun *w)
{
	return w->pid > 0 ? 0 : start(w);
}

/* One run of the worker over bodies [*done, n): sends them ahead,
 * reads the answers as they come, each within MQ_FILTER_TIMEOUT of the
 * one before.  A break marks the body in hand MQ_JQ_BROKE and stops. */
static int
exchange(struct mq_jqrun *w, const struct iovec *body, size_t n, size_t *done,
    bool *out, int *st)
{
	size_t k = w->n ? w->n : 1, sent = *done, got = 0;
	double timeout = mq_filter_timeout(), deadline = mq_mono() + timeout;
	/* The body being sent, its length first: what is left of it. */
	uint64_t hdr = 0;
	struct iovec v[2], *left_v = v;
	int left_n = 0;
	while (*done < n) {
		struct pollfd p = { w->fd, POLLIN | (sent < n ? POLLOUT : 0), 0 };
		int ms = ms_until(deadline);
		if (ms < 0)
			break;
		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			break;
		if (p.revents & POLLOUT) {
			if (!left_n) {
				hdr = body[sent].iov_len;
				v[0] = (struct iovec){ &hdr, sizeof hdr };
				v[1] = body[sent];
				left_v = v;
				left_n = 2;
			}
			struct msghdr mh = { .msg_iov = left_v,
			    .msg_iovlen = (size_t)left_n };
			ssize_t r = sendmsg(w->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				break;
			if (r > 0)
				mq_iov_advance(&left_v, &left_n, (size_t)r);
			if (!left_n)
				sent++;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		/* An answer: a status byte, and k more after 'r'. */
		size_t want = got && w->reply[0] == 'r' ? 1 + k : 1;
		ssize_t r = recv(w->fd, w->reply + got, want - got, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			break;
		if (r < 0)
			continue;
		got += (size_t)r;
		if (got == 1 && w->reply[0] == 'r')
			continue;
		if (w->reply[0] != 'r' && w->reply[0] != 'n' &&
		    w->reply[0] != 'x')
			break;
		st[*done] = w->reply[0] == 'r' ? MQ_JQ_OK : w->reply[0] == 'n' ?
		    MQ_JQ_NOT_JSON : MQ_JQ_NOT_ARRAY;
		for (size_t i = 0; w->reply[0] == 'r' && i < k; i++)
			out[*done * k + i] = w->reply[1 + i];
		(*done)++;
		got = 0;
		deadline = mq_mono() + timeout;
	}
	if (*done == n)
		return 0;
	st[(*done)++] = failed(w, mq_mono() >= deadline);
	return -1;
}

int
mq_jqrun_eval(struct mq_jqrun *w, const struct iovec *body, size_t n,
    bool *out, int *st)
{
	if (!w->reply && !(w->reply = malloc(1 + (w->n ? w->n : 1))))
		return mq_err_sys("malloc");
	for (size_t done = 0; done < n; ) {
		int rc = mq_jqrun_start(w);
		if (rc < 0)
			return -1;
		/* A compile that broke a bound would break it again. */
		while (rc == MQ_JQ_BROKE && done < n)
			st[done++] = MQ_JQ_BROKE;
		if (done < n)
			exchange(w, body, n, &done, out, st);
	}
	return 0;
}

void
mq_jqrun_stop(struct mq_jqrun *w)
{
	reap(w);
	free(w->reply);
	w->reply = NULL;
}
