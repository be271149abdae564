/*
 * handler.c: running a command for a message (mq-sub --exec).
 *
 * The command runs under /bin/sh with the body on its standard input and
 * the message in its environment.  While it runs, the lease is extended
 * every third of its length (a heartbeat), so a slow handler that is alive
 * never sees its message delivered to someone else; a handler that dies
 * with its consumer stops the heartbeat and the lease runs out.  Its
 * standard error passes through, and its last bytes are kept for the
 * dead-letter record; its standard output passes through too, or is
 * collected when the caller publishes it (mq-sub --publish-to).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

extern char **environ;

/* The handler's environment: ours, less any MQ_* variable we set (and
 * any MQ_HEADER_*, so that a handler sees only its message's headers),
 * plus the message's: its MQ_* variables, then its headers (mq-sub(1),
 * --exec).  A header is MQ_HEADER_ and its name upper-
 * cased, each character not A-Z or 0-9 made '_'; the first header to
 * take a variable keeps it, so the standard headers, first in the file,
 * cannot be shadowed.  Control characters but tab in a value (a file
 * not written by mq-pub may hold them) are dropped.  The header variables
 * take HEADER_ENV_MAX bytes at most; a header past it is left out. */
#define HEADER_PREFIX "MQ_HEADER_"
#define HEADER_ENV_MAX (128 * 1024)

/* The strings of the environment we add, NUL-terminated one after the
 * other in buf; headers counts the bytes the header variables take. */
struct envbuf {
	char *buf;
	size_t len, cap, n, headers, hstart;
};

static int
env_room(struct envbuf *e, size_t need)
{
	if (e->len + need <= e->cap)
		return 0;
	size_t cap = e->cap ? e->cap : 1024;
	while (cap < e->len + need)
		cap *= 2;
	char *b = realloc(e->buf, cap);
	if (!b)
		return mq_err_sys("malloc");
	e->buf = b;
	e->cap = cap;
	return 0;
}

static int __attribute__((format(printf, 2, 3)))
env_add(struct envbuf *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || env_room(e, (size_t)n + 1) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->buf + e->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	e->len += (size_t)n + 1;
	e->n++;
	return 0;
}

/* Whether a header variable named var (len bytes, '=' after) is set. */
static bool
env_has(const struct envbuf *e, const char *var, size_t len)
{
	for (size_t o = e->hstart; o < e->len; o += strlen(e->buf + o) + 1)
		if (!strncmp(e->buf + o, var, len) && e->buf[o + len] == '=')
			return true;
	return false;
}

static int
env_header(void *arg, const char *name, const char *value)
{
	struct envbuf *e = arg;
	size_t nlen = strlen(name), pre = sizeof HEADER_PREFIX - 1;
	size_t need = pre + nlen + strlen(value) + 2;
	if (!nlen || e->headers + need > HEADER_ENV_MAX)
		return 0;
	if (env_room(e, need) < 0)
		return -1;
	char *var = e->buf + e->len, *p = var + pre;
	memcpy(var, HEADER_PREFIX, pre);
	for (size_t i = 0; i < nlen; i++) {
		unsigned char c = (unsigned char)toupper((unsigned char)name[i]);
		p[i] = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ?
		    (char)c : '_';
	}
	if (env_has(e, var, pre + nlen))
		return 0;
	p += nlen;
	*p++ = '=';
	for (const unsigned char *v = (const unsigned char *)value; *v; v++)
		if ((*v >= 0x20 && *v != 0x7f) || *v == '\t')
			*p++ = (char)*v;
	*p++ = 0;
	e->headers += (size_t)(p - var);
	e->len += (size_t)(p - var);
	e->n++;
	return 0;
}

/* The caller frees env and buf. */
static int
handler_env(const struct mq_msg *m, const char *group, char ***envp,
    char **bufp)
{
	static const char *const ours[] = { "MQ_ID=", "MQ_TOPIC=", "MQ_GROUP=",
	    "MQ_KEY=", "MQ_RECEIPT=", "MQ_PARTITION=", "MQ_SEQ=",
	    "MQ_ATTEMPTS=", HEADER_PREFIX };
	struct envbuf e = { 0 };
	if (env_add(&e, "MQ_ID=%s", m->id) < 0 ||
	    env_add(&e, "MQ_TOPIC=%s", m->topic ? m->topic : "") < 0 ||
	    env_add(&e, "MQ_GROUP=%s", group) < 0 ||
	    env_add(&e, "MQ_KEY=%s", m->key ? m->key : "") < 0 ||
	    env_add(&e, "MQ_RECEIPT=%s", m->receipt ? m->receipt : "") < 0 ||
	    env_add(&e, "MQ_PARTITION=%u", m->partition) < 0 ||
	    env_add(&e, "MQ_SEQ=%llu", (unsigned long long)m->seq) < 0 ||
	    env_add(&e, "MQ_ATTEMPTS=%u", m->attempts) < 0 ||
	    (e.hstart = e.len, mq_msg_headers_each(m, env_header, &e)) < 0) {
		free(e.buf);
		return -1;
	}
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + e.n + 1, sizeof *env);
	if (!env) {
		free(e.buf);
		return mq_err_sys("malloc");
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		bool mine = false;
		for (size_t j = 0; j < sizeof ours / sizeof *ours && !mine; j++)
			mine = !strncmp(environ[i], ours[j], strlen(ours[j]));
		if (!mine)
			env[o++] = environ[i];
	}
	for (size_t off = 0; off < e.len; off += strlen(e.buf + off) + 1)
		env[o++] = e.buf + off;
	env[o] = NULL;
	*envp = env;
	*bufp = e.buf;
	return 0;
}

/* Starts sh -c cmd with posix_spawn, which does not copy our address
 * space as fork would: a handler per message costs what sh costs. */
static pid_t
spawn_handler(const struct mq_msg *m, const char *group, const char *cmd,
    int in, int out, int errw)
{
	char **env = NULL, *buf = NULL;
	if (handler_env(m, group, &env, &buf) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t dflt;
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	sigaddset(&dflt, SIGINT);
	sigaddset(&dflt, SIGTERM);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigdefault(&at, &dflt);
	/* The handler stays in our process group: whoever kills the group
	 * kills both, and a handler never outlives a killed consumer by
	 * much.  The price: a timeout stops the shell, not what it started
	 * (mq-sub(1), CAVEATS). */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	if (out >= 0)
		posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, errw, 2);
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	pid_t pid;
	int e = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(env);
	free(buf);
	if (e) {
		errno = e;
		return mq_err_sys("start handler");
	}
	return pid;
}

/* Keeps the last bytes of what the handler wrote to stderr. */
static void
keep_tail(struct mq_handler_result *r, const char *p, size_t n)
{
	size_t cap = sizeof r->tail;
	if (n >= cap) {
		memcpy(r->tail, p + n - cap, cap);
		r->tail_len = cap;
		return;
	}
	if (r->tail_len + n > cap) {
		size_t drop = r->tail_len + n - cap;
		memmove(r->tail, r->tail + drop, r->tail_len - drop);
		r->tail_len -= drop;
	}
	memcpy(r->tail + r->tail_len, p, n);
	r->tail_len += n;
}

/* Passes on what is there; returns 0 at end of file, 1 otherwise. */
static int
pass_stderr(int fd, struct mq_handler_result *r)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		(void)!write(2, buf, (size_t)n);
		keep_tail(r, buf, (size_t)n);
	}
	return n == 0 ? 0 : 1;
}

/* Collects the handler's stdout, bounded: an output is a message.
 * Returns 0 at end of file, 1 while more may come, -1 on error. */
static int
capture_out(int fd, struct mq_handler_result *r, size_t *cap)
{
	for (;;) {
		if (r->out_len == *cap) {
			if (*cap >= MQ_MESSAGE_MAX_LIMIT)
				return mq_err(EX_DATAERR, "handler output too large");
			*cap = *cap ? *cap * 2 : 65536;
			char *o = realloc(r->out, *cap);
			if (!o)
				return mq_err_sys("malloc");
			r->out = o;
		}
		ssize_t n = read(fd, r->out + r->out_len, *cap - r->out_len);
		if (n == 0)
			return 0;               /* end of file */
		if (n < 0)
			return 1;
		r->out_len += (size_t)n;
	}
}

int
mq_sub_run(mq_sub *s, struct mq_msg *m, const char *cmd, double timeout,
    int capture, struct mq_handler_result *r)
{
	double lease = mq_sub_lease(s), every = mq_sub_beat_every(s);
	int in[2], errp[2], outp[2] = { -1, -1 };
	size_t outcap = 0;
	memset(r, 0, sizeof *r);
	r->status = -1;
	if (pipe2(in, O_CLOEXEC) < 0)
		return mq_err_sys("pipe");
	if (pipe2(errp, O_CLOEXEC) < 0 || (capture && pipe2(outp, O_CLOEXEC) < 0)) {
		close(in[0]);
		close(in[1]);
		return mq_err_sys("pipe");
	}
	fflush(NULL);
	pid_t pid = spawn_handler(m, mq_sub_group(s), cmd, in[0],
	    capture ? outp[1] : -1, errp[1]);
	if (pid < 0) {
		close(in[0]); close(in[1]); close(errp[0]); close(errp[1]);
		if (capture) {
			close(outp[0]);
			close(outp[1]);
		}
		return -1;
	}
	close(in[0]);
	close(errp[1]);
	if (capture) {
		close(outp[1]);
		fcntl(outp[0], F_SETFL, O_NONBLOCK);
	}
	int pfd = pidfd_open(pid, 0);
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	const unsigned char *body = m->body;
	size_t left = m->len;
	if (!left) {
		close(in[1]);
		in[1] = -1;
	}
	/* The handler is stopped when it outlives its timeout, or the grace
	 * period after the consumer was asked to stop (its wake fd). */
	double start = mq_mono(), beat = start + every, killed = 0;
	double stop_at = timeout > 0 ? start + timeout : INFINITY;
	int status = -1, wake = mq_sub_wake_fd(s);
	for (;;) {
		struct pollfd p[5] = {
			{ .fd = pfd, .events = POLLIN },
			{ .fd = errp[0], .events = POLLIN },
			{ .fd = in[1], .events = POLLOUT },
			{ .fd = outp[0], .events = POLLIN },
			{ .fd = wake, .events = POLLIN },
		};
		double now = mq_mono(), next = fmin(beat, killed ? killed + 5 : stop_at);
		int ms = next <= now ? 0 : (int)fmin(ceil((next - now) * 1000), 3.6e6);
		if (pfd < 0)
			ms = ms > 50 ? 50 : ms;     /* no pidfd: look now and then */
		if (poll(p, 5, ms) < 0 && errno != EINTR)
			break;
		if (p[4].revents) {
			wake = -1;
			if (mq_mono() + mq_sub_grace(s) < stop_at) {
				stop_at = mq_mono() + mq_sub_grace(s);
				r->stopped = 1;
				r->timed_out = 0;
			}
		}
		/* A pipe at its end is closed, or poll would report it
		 * again and again. */
		if (p[1].revents && pass_stderr(errp[0], r) == 0) {
			close(errp[0]);
			errp[0] = -1;
		}
		if (p[3].revents) {
			int c = capture_out(outp[0], r, &outcap);
			if (c < 0)
				kill(pid, SIGKILL);
			if (c <= 0) {
				close(outp[0]);
				outp[0] = -1;
			}
		}
		if (p[2].revents && in[1] >= 0) {
			ssize_t w = write(in[1], body, left);
			if (w > 0) {
				body += w;
				left -= (size_t)w;
			}
			/* A handler need not read all of its input. */
			if (left == 0 || (w < 0 && errno != EAGAIN)) {
				close(in[1]);
				in[1] = -1;
			}
		}
		int ws;
		if (waitpid(pid, &ws, WNOHANG) == pid) {
			status = WIFEXITED(ws) ? WEXITSTATUS(ws) :
			    128 + WTERMSIG(ws);
			break;
		}
		now = mq_mono();
		if (now >= beat) {
			/* The heartbeat: a claim that is gone cannot be kept. */
			mq_sub_extend(s, m, lease);
			beat = now + every;
		}
		if (now >= stop_at) {
			if (!killed) {
				kill(pid, SIGTERM);
				killed = now;
				if (!r->stopped)
					r->timed_out = 1;
			} else if (now >= killed + 5) {
				kill(pid, SIGKILL);
			}
		}
	}
	if (errp[0] >= 0) {
		pass_stderr(errp[0], r);
		close(errp[0]);
	}
	if (outp[0] >= 0) {
		capture_out(outp[0], r, &outcap);
		close(outp[0]);
	}
	if (in[1] >= 0)
		close(in[1]);
	if (pfd >= 0)
		close(pfd);
	r->status = status;
	return status < 0 ? mq_err_sys("waiting for the handler") : 0;
}

double
mq_backoff(double base, double max, unsigned n)
{
	if (base <= 0 || n == 0)
		return 0;
	double d = base * pow(2, n > 60 ? 60 : n - 1);
	if (d > max)
		d = max;
	/* Equal jitter: half fixed, half random, so retries of messages that
	 * failed together spread out. */
	return d / 2 + d / 2 * ((double)arc4random() / 4294967296.0);
}
