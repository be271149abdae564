/*
 * replrun.c: replication sessions over their transports (mq-replicate(1)
 * push, pull and serve): the initiator's one session over TCP or a remote
 * command, one connection served, and the daemon that serves each
 * connection it accepts in a child process of its own.
 *
 * The daemon keeps no state of its own: what a session changes on disk is
 * crash-safe (replrecv.c), so a child killed mid-session loses nothing
 * that the next session does not send again.  Over its limit of sessions
 * it closes a new connection at once, since a peer that never finishes
 * its handshake holds a process until the handshake's deadline.  It
 * catches SIGCHLD while it runs, so that a wait in accept() ends and the
 * children are reaped.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include "run.h"

static void __attribute__((format(printf, 3, 4)))
say(const struct mq_repl_opts *o, int prio, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	if (!o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	o->log(prio, msg, o->ctx);
}

static bool
stopped(const struct mq_repl_opts *o)
{
	return o->stop && *o->stop;
}

int
mq_repl_serve_one(mq_spool *sp, int in, int out, int secure, double timeout,
    const struct mq_repl_opts *opts)
{
	struct mq_identity id;
	if (secure && mq_identity_load(sp, &id) < 0)
		return -1;
	mq_link *l = mq_link_open(in, out, sp, secure ? &id : NULL, 0, timeout);
	if (secure)
		mq_identity_forget(&id);
	if (!l)
		return -1;
	struct mq_repl_opts o = *opts;
	char addr[256];
	o.follow = 0;
	o.progress = 0;
	o.address = mq_net_peer(in, addr, sizeof addr);
	int rc = mq_repl_session(sp, l, MQ_REPL_ANY, 0, &o);
	mq_link_close(l);
	return rc;
}

static void
on_child(int sig)
{
	(void)sig;                      /* accept() returns: reap then */
}

/* Sessions (children) still running, once those that ended are reaped. */
static unsigned long
sessions(unsigned long live)
{
	int st;
	while (live && waitpid(-1, &st, WNOHANG) > 0)
		live--;
	return live;
}

/* Serves connection fd in a child; returns whether one was started. */
static int
session_child(mq_spool *sp, int lfd, int fd, double timeout,
    const struct mq_repl_opts *o)
{
	char addr[256];
	const char *peer = mq_net_peer(fd, addr, sizeof addr);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_IGN);
		close(lfd);
		int rc = mq_repl_serve_one(sp, fd, fd, 1, timeout, o);
		if (rc < 0)
			say(o, LOG_ERR, "connection from %s: %s", peer, mq_errmsg());
		_exit(rc < 0 ? mq_errcode() : 0);
	}
	if (pid < 0)
		say(o, LOG_ERR, "fork: %s", strerror(errno));
	return pid > 0;
}

int
mq_repl_serve(mq_spool *sp, const char *addr, unsigned long max,
    double timeout, const struct mq_repl_opts *o)
{
	/* The key is checked now rather than at the first connection. */
	struct mq_identity id;
	if (mq_identity_load(sp, &id) < 0)
		return -1;
	mq_identity_forget(&id);
	int lfd = mq_net_listen(addr);
	if (lfd < 0)
		return -1;
	struct sigaction sa = { .sa_handler = on_child }, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, &old);
	say(o, LOG_INFO, "listening on %s", addr);
	unsigned long live = 0;
	while (!stopped(o)) {
		int fd = mq_net_accept(lfd);
		live = sessions(live);
		if (fd < 0) {
			if (mq_errcode() != EX_TEMPFAIL)
				say(o, LOG_ERR, "accept: %s", mq_errmsg());
			continue;
		}
		char peer[256];
		if (live >= max)
			say(o, LOG_WARNING, "connection from %s refused: %lu "
			    "sessions already (--max-sessions)",
			    mq_net_peer(fd, peer, sizeof peer), live);
		else
			live += (unsigned long)session_child(sp, lfd, fd, timeout,
			    o);
		close(fd);
	}
	close(lfd);
	sigaction(SIGCHLD, &old, NULL);
	return 0;
}

/* The initiator's ends of the channel: a remote command's pipes (plain),
 * or a TCP connection with this spool's key (secure). */
static int
reach(mq_spool *sp, const struct mq_repl_peer *peer, int *in, int *out,
    pid_t *pid, struct mq_identity *id)
{
	if (peer->rsh)
		return mq_rsh_spawn(peer->rsh, peer->command, peer->spool, in,
		    out, pid);
	/* The address first: a bad one is a usage error, key or not. */
	if ((*in = mq_net_connect(peer->address)) < 0)
		return -1;
	if (mq_identity_load(sp, id) < 0) {
		close(*in);
		return -1;
	}
	*out = *in;
	return 0;
}

int
mq_repl_connect(mq_spool *sp, const struct mq_repl_peer *peer,
    enum mq_repl_role role, const struct mq_repl_opts *opts)
{
	int in, out, secure = !peer->rsh;
	pid_t pid = -1;
	struct mq_identity id;
	if (reach(sp, peer, &in, &out, &pid, &id) < 0)
		return -1;
	mq_link *l = mq_link_open(in, out, sp, secure ? &id : NULL, 1, 0);
	if (secure)
		mq_identity_forget(&id);
	struct mq_repl_opts o = *opts;
	o.address = peer->rsh ? peer->rsh : peer->address;
	int rc = l ? mq_repl_session(sp, l, role, 1, &o) : -1;
	/* The session's error outlives the closing. */
	int code = mq_errcode();
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", mq_errmsg());
	if (l)
		mq_link_close(l);
	close(in);
	if (out != in)
		close(out);
	if (pid > 0) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		/* The remote command failed before any protocol. */
		if (rc < 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
			return mq_err(EX_UNAVAILABLE, "--rsh: could not run "
			    "'%s %s'", peer->rsh, peer->command);
	}
	return rc < 0 ? mq_err(code, "%s", msg) : rc;
}
