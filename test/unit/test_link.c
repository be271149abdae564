/*
 * test_link.c: the replication channel: the handshake accepts only
 * authorized keys held by their owners, frames arrive whole and in order,
 * a byte changed in transit ends the connection, and a handshake not over
 * by its deadline ends it too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"
#include "t.h"

static char root[] = "/tmp/mq-unit-link.XXXXXX";

static mq_spool *
spool(const char *name, struct mq_identity *id, char pub[MQ_PUBKEY_HEX + 1])
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", root, name);
	mq_spool *sp = mq_spool_open(p, MQ_CREATE);
	if (!sp || mq_keys_generate(sp, name, 0, pub) < 0 ||
	    mq_identity_load(sp, id) < 0) {
		fprintf(stderr, "setup: %s\n", mq_errmsg());
		exit(1);
	}
	return sp;
}

/* The responder's side, in a child: checks what arrives and echoes it;
 * exits with the error code of a failure, 0 after an orderly end. */
static void
respond(int fd, mq_spool *sp, const struct mq_identity *id)
{
	mq_link *l = mq_link_open(fd, fd, sp, id, 0, 0);
	if (!l)
		_exit(mq_errcode());
	const void *buf;
	size_t len;
	int rc;
	while ((rc = mq_link_recv(l, &buf, &len)) == 1)
		if (mq_link_send(l, buf, len) < 0)
			_exit(mq_errcode());
	_exit(rc < 0 ? mq_errcode() : 0);
}

/* Starts a responder for spool sp in a child; *fd gets our end. */
static pid_t
responder(mq_spool *sp, const struct mq_identity *id, int *fd)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		respond(sv[1], sp, id);
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

static int
child_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Copies from one descriptor to the other, changing byte flip (counted
 * from 0) if flip >= 0. */
static void
relay(int from, int to, long flip)
{
	unsigned char buf[4096];
	long at = 0;
	ssize_t r;
	while ((r = read(from, buf, sizeof buf)) > 0) {
		if (flip >= at && flip < at + r)
			buf[flip - at] ^= 0x20;
		at += r;
		if (write(to, buf, (size_t)r) != r)
			break;
	}
	_exit(0);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(root))
		return 1;
	struct mq_identity ia, ib, ic;
	char pa[MQ_PUBKEY_HEX + 1], pb[MQ_PUBKEY_HEX + 1], pc[MQ_PUBKEY_HEX + 1];
	mq_spool *a = spool("a", &ia, pa), *b = spool("b", &ib, pb);
	mq_spool *c = spool("c", &ic, pc);
	ok(mq_keys_generate(a, "a", 0, pc) < 0 && mq_errcode() == EX_CANTCREAT,
	    "keygen refuses to replace a key");
	ok(mq_peer_authorize(a, pb, "bee") == 1 &&
	    mq_peer_authorize(b, pa, NULL) == 1, "peers authorized");
	ok(mq_peer_authorize(a, pb, "bee") == 0, "authorizing twice adds nothing");
	ok(mq_peer_authorize(a, "xyz", NULL) < 0 && mq_errcode() == EX_DATAERR,
	    "a bad public key is refused");

	/* 1. Both authorized: frames go both ways, whole and in order. */
	int sv[2];
	pid_t pid = responder(b, &ib, &sv[0]);
	mq_link *l = mq_link_open(sv[0], sv[0], a, &ia, 1, 0);
	ok(l != NULL, "handshake between authorized peers");
	const char *name = NULL;
	ok(l && mq_link_peer(l, &name) && !strcmp(name, "bee"),
	    "the peer's name comes from authorized_peers");
	size_t big = 1 << 20;
	unsigned char *data = malloc(big);
	for (size_t i = 0; i < big; i++)
		data[i] = (unsigned char)(i * 7);
	int good = l != NULL;
	for (int i = 0; good && i < 20; i++) {
		const void *buf;
		size_t len, want = i % 2 ? big : (size_t)i;
		int s1 = mq_link_send(l, data, want), r1 = -9;
		len = 0;
		if (s1 == 0)
			r1 = mq_link_recv(l, &buf, &len);
		good = s1 == 0 && r1 == 1 && len == want &&
		    !memcmp(buf, data, want);
		if (!good)
			printf("# frame %d: send %d recv %d len %zu: %s\n", i, s1,
			    r1, len, mq_errmsg());
	}
	ok(good, "20 frames (empty to 1 MiB) echoed whole and in order");
	ok(l && mq_link_end(l) == 0, "the final frame sent");
	mq_link_close(l);
	close(sv[0]);
	ok(child_status(pid) == 0, "the responder saw an orderly end");

	/* 1b. A connection cut without the final frame is no orderly end. */
	pid = responder(b, &ib, &sv[0]);
	l = mq_link_open(sv[0], sv[0], a, &ia, 1, 0);
	const void *echo;
	size_t elen;
	ok(l && mq_link_send(l, "x", 1) == 0 &&
	    mq_link_recv(l, &echo, &elen) == 1, "a frame, then the cut");
	mq_link_close(l);
	close(sv[0]);
	ok(child_status(pid) == EX_PROTOCOL, "the responder saw the cut");

	/* 2. c is not in b's authorized_peers: refused by b, before any
	 * frame. */
	mq_peer_authorize(c, pb, NULL);
	pid = responder(b, &ib, &sv[0]);
	l = mq_link_open(sv[0], sv[0], c, &ic, 1, 0);
	ok(!l && mq_errcode() == EX_NOPERM, "an unknown key is refused: %s",
	    mq_errmsg());
	close(sv[0]);
	ok(child_status(pid) == EX_NOPERM, "the responder refused it");

	/* 3. An impostor shows a's public key without a's secret key. */
	struct mq_identity fake = ic;
	memcpy(fake.pk, ia.pk, sizeof fake.pk);
	pid = responder(b, &ib, &sv[0]);
	mq_peer_authorize(c, pb, NULL);
	l = mq_link_open(sv[0], sv[0], c, &fake, 1, 0);
	close(sv[0]);
	mq_link_close(l);
	ok(child_status(pid) == EX_NOPERM, "a key shown by someone else fails "
	    "the signature check");

	/* 4. A byte changed in transit, after the handshake. */
	int up[2], down[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, up);
	socketpair(AF_UNIX, SOCK_STREAM, 0, down);
	if ((pid = fork()) == 0) {
		close(up[0]);
		close(up[1]);
		close(down[0]);
		respond(down[1], b, &ib);
	}
	close(down[1]);
	pid_t r1 = fork();
	if (r1 == 0) {
		close(up[0]);
		relay(up[1], down[0], 4 + 83 + 4 + 64 + 4 + 24 + 4 + 10);
	}
	pid_t r2 = fork();
	if (r2 == 0) {
		close(up[0]);
		relay(down[0], up[1], -1);
	}
	close(up[1]);
	close(down[0]);
	l = mq_link_open(up[0], up[0], a, &ia, 1, 0);
	ok(l != NULL, "handshake through the relay");
	const void *buf;
	size_t len;
	ok(l && mq_link_send(l, data, 1000) == 0, "a frame sent");
	shutdown(up[0], SHUT_WR);
	ok(child_status(pid) == EX_PROTOCOL, "the receiver detected the change");
	ok(l && mq_link_recv(l, &buf, &len) <= 0, "nothing came back");
	mq_link_close(l);
	close(up[0]);
	child_status(r1);
	child_status(r2);

	/* 5. Plain frames (over ssh), and a frame header that lies. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	mq_link *x = mq_link_open(sv[0], sv[0], NULL, NULL, 1, 0);
	mq_link *y = mq_link_open(sv[1], sv[1], NULL, NULL, 0, 0);
	ok(x && y && mq_link_send(x, "abc", 3) == 0 &&
	    mq_link_recv(y, &buf, &len) == 1 && len == 3 &&
	    !memcmp(buf, "abc", 3), "plain frames");
	unsigned char lie[4] = { 0xff, 0xff, 0xff, 0xff };
	ok(write(sv[0], lie, 4) == 4 && mq_link_recv(y, &buf, &len) < 0 &&
	    mq_errcode() == EX_PROTOCOL, "a frame larger than the limit is "
	    "refused");
	mq_link_close(x);
	mq_link_close(y);
	close(sv[0]);
	close(sv[1]);

	/* 6. The handshake deadline: one for the whole handshake, which a
	 * peer sending a byte now and then does not move; none after it. */
	for (int trickle = 0; trickle < 2; trickle++) {
		socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
		if ((pid = fork()) == 0) {
			close(sv[1]);
			if (write(sv[0], "\0\0\0", 3) != 3)
				_exit(1);
			for (int i = 0; trickle && i < 30; i++) {
				usleep(50000);
				if (write(sv[0], i ? "x" : "\x40", 1) != 1)
					_exit(0);
			}
			pause();
			_exit(0);
		}
		close(sv[0]);
		double t0 = mq_mono();
		l = mq_link_open(sv[1], sv[1], b, &ib, 0, 0.3);
		double took = mq_mono() - t0;
		ok(!l && mq_errcode() == EX_PROTOCOL && took >= 0.3 && took < 1,
		    "%s: dropped at the deadline (%.2f s): %s", trickle ?
		    "a frame trickled" : "3 bytes of a length", took, mq_errmsg());
		kill(pid, SIGKILL);
		child_status(pid);
		close(sv[1]);
	}
	pid = responder(b, &ib, &sv[0]);
	l = mq_link_open(sv[0], sv[0], a, &ia, 1, 0.3);
	usleep(500000);
	ok(l && mq_link_send(l, "x", 1) == 0 && mq_link_recv(l, &buf, &len) == 1,
	    "after the handshake the deadline is gone");
	mq_link_end(l);
	mq_link_close(l);
	close(sv[0]);
	child_status(pid);

	free(data);
	mq_identity_forget(&ia);
	mq_spool_close(a);
	mq_spool_close(b);
	mq_spool_close(c);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
