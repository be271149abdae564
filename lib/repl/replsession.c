/*
 * replsession.c: the start of a replication session (the hello, which
 * settles who sends), then the side it gives this spool: the top of the
 * replication layer, above replsend.c and replrecv.c.
 *
 * A peer's name is the one its key has in authorized_peers, over TCP;
 * without one (over ssh, or a key authorized without a name) it has
 * none, and is shown by its spool id: the host name a hello carries is
 * no name, since two spools on one host, or two hosts that call
 * themselves alike, give the same.  A sending side holds the peer's
 * lock (repl_peer_hold) for the whole session, so that status sees it
 * live and forget leaves it alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include "repl.h"

static const char *
role_word(enum mq_repl_role r)
{
	return r == MQ_REPL_SEND ? "send" : "recv";
}

/* HELLO mq-replicate 1 <send|recv> <spool id> <host name> [words]: the
 * words follow, compare, demote, epoch=N and segments, in any order; an old
 * version's hello has no epoch (0), and a word we do not know is a later
 * version's, ignored as an old version ignores ours. */
struct hello {
	enum mq_repl_role role;
	char id[MQ_ID_LEN + 1];
	int follow, compare, demote, has_epoch, segments;
	uint64_t epoch;
};

static int
hello_parse(const char *rest, size_t len, struct hello *h)
{
	char line[512], r[8], i[MQ_ID_LEN + 2], nm[256] = "", f[5][24] = { "" };
	snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), rest);
	int n = sscanf(line, "mq-replicate 1 %7s %33s %255s %23s %23s %23s %23s "
	    "%23s", r, i, nm, f[0], f[1], f[2], f[3], f[4]);
	if (n < 2 || !mq_is_id(i, strlen(i)) ||
	    (strcmp(r, "send") && strcmp(r, "recv")))
		return mq_err(EX_PROTOCOL, "not an mq-replicate peer, or another "
		    "version");
	memset(h, 0, sizeof *h);
	for (size_t w = 0; w < 5; w++) {
		const char *e;
		h->segments |= !strcmp(f[w], "segments");
		h->follow |= !strcmp(f[w], "follow");
		h->compare |= !strcmp(f[w], "compare");
		h->demote |= !strcmp(f[w], "demote");
		if (strncmp(f[w], "epoch=", 6))
			continue;
		if (!(e = mq_decimal(f[w] + 6, MQ_EPOCH_MAX, &h->epoch)) || *e)
			return mq_err(EX_PROTOCOL, "peer: a bad epoch in its "
			    "hello (%s)", f[w]);
		h->has_epoch = 1;
	}
	h->role = !strcmp(r, "send") ? MQ_REPL_SEND : MQ_REPL_RECV;
	snprintf(h->id, sizeof h->id, "%.*s", MQ_ID_LEN, i);
	return 0;
}

/* A demote session's extra step, before SEEN: the sender sends its own
 * vector, then answers PROBE frames (format 2's logs); the receiver
 * quarantines what of its own the sender lacks. */
static int
demote_step(mq_spool *sp, mq_link *l, enum mq_repl_role role,
    const struct repl_epoch *ep, const struct mq_repl_opts *o)
{
	struct repl_seen seen = { 0 };
	uint64_t covered;
	const char *rest;
	size_t len;
	int rc;
	if (role == MQ_REPL_SEND) {
		char me[MQ_ID_LEN + 1];
		rc = repl_spool_id(sp, me) < 0 ||
		    repl_seen_load(sp, &seen, &covered) < 0 ||
		    repl_seen_put(&seen, me, mq_journal_size(sp)) < 0 ||
		    repl_seen_send(l, &seen) < 0 ||
		    (ep->segments && repl_demote_answer(sp, l) < 0) ? -1 : 0;
	} else {
		size_t n = 0;
		rc = repl_expect(l, "SEEN", &rest, &len) < 0 ||
		    repl_seen_parse(rest, len, &seen) < 0 ||
		    repl_demote(sp, l, &seen, ep->peer, ep->segments, o,
		    &n) < 0 ? -1 : 0;
		if (rc == 0 && o->demoted)
			*o->demoted = (struct mq_demoted){ 1, n, ep->peer };
	}
	repl_seen_free(&seen);
	return rc;
}

int
mq_repl_session(mq_spool *sp, mq_link *l, enum mq_repl_role role,
    int initiator, const struct mq_repl_opts *o)
{
	char me[MQ_ID_LEN + 1], name[256], host[256];
	struct hello h = { .role = MQ_REPL_ANY };
	struct mq_repl_opts mine = *o;
	struct repl_epoch ep = { 0 };
	const char *rest;
	size_t len;
	if (repl_spool_id(sp, me) < 0)
		return -1;
	/* A damaged epoch is said to the peer after the hellos, as any
	 * error of the session; the hello meanwhile says none (0). */
	int bad_epoch = mq_epoch_read(sp, &ep.mine) < 0 ? mq_errcode() : 0;
	char why[1024];
	snprintf(why, sizeof why, "%s", bad_epoch ? mq_errmsg() : "");
	if (gethostname(host, sizeof host) < 0)
		snprintf(host, sizeof host, "unknown");
	host[sizeof host - 1] = 0;
	for (char *p = host; *p; p++)
		if (*p == ' ' || *p == '\n')
			*p = '_';
	/* The initiator says whether the session goes on for good: a
	 * sender started by it (serve --stdio) follows too.  Its epoch
	 * comes after follow and compare, which an old version reads as
	 * the two words after the host name. */
	if (initiator && repl_send_text(l, "HELLO mq-replicate 1 %s %s %s%s%s "
	    "epoch=%" PRIu64 "%s segments", role_word(role), me, host,
	    o->follow ? " follow" : "", o->compare ? " compare" : "", ep.mine,
	    o->demote ? " demote" : "") < 0)
		return -1;
	if (repl_expect(l, "HELLO", &rest, &len) < 0 ||
	    hello_parse(rest, len, &h) < 0)
		return -1;
	const char *peer = h.id;
	snprintf(name, sizeof name, "%s", peer);
	ep.peer = h.epoch;
	ep.peer_has = h.has_epoch;
	ep.segments = h.segments;
	if (!initiator && h.follow)
		mine.follow = 1;
	if (!initiator && h.compare)
		mine.compare = 1;
	if (o->hello_done)
		*o->hello_done = 1;
	if (!initiator) {
		if (role == MQ_REPL_ANY)
			role = h.role == MQ_REPL_SEND ? MQ_REPL_RECV :
			    MQ_REPL_SEND;
		if (repl_send_text(l, "HELLO mq-replicate 1 %s %s %s epoch=%"
		    PRIu64 " segments", role_word(role), me, host, ep.mine) < 0)
			return -1;
	}
	int rc = 0, hold = -1;
	if (bad_epoch)
		rc = mq_err(bad_epoch, "%s", why);
	else if (h.role == role)
		rc = mq_err(EX_USAGE, "both ends want to %s",
		    role == MQ_REPL_SEND ? "send" : "receive");
	else if (!strcmp(me, peer))
		rc = mq_err(EX_USAGE, "a spool cannot replicate to itself "
		    "(both ends are spool %s)", me);
	else if (role == MQ_REPL_SEND && !h.segments &&
	    mq_topics_format1(sp, "replication") < 0)
		rc = mq_err(EX_UNAVAILABLE, "peer %s does not replicate topics "
		    "of format 2 (an earlier version): %s", peer, mq_errmsg());
	if (rc < 0 && !bad_epoch)
		return rc;
	/* The name it was authorized under, else its id. */
	const char *kname = NULL;
	if (mq_link_peer(l, &kname) && kname && *kname)
		snprintf(name, sizeof name, "%s", kname);
	/* A demote is the initiator's, receiving; the sender helps.  A peer
	 * never makes a responder quarantine anything. */
	int demote = initiator ? o->demote && role == MQ_REPL_RECV :
	    h.demote && role == MQ_REPL_SEND;
	repl_log(o, LOG_INFO, "%s %s%s%s%s", role == MQ_REPL_SEND ?
	    "sending to" : "receiving from", name, strcmp(name, peer) ? " (" :
	    "", strcmp(name, peer) ? peer : "", strcmp(name, peer) ? ")" : "");
	uint64_t at_start = ep.mine;
	if (rc < 0)
		;
	else if (repl_epoch_hello(sp, role, &ep, demote && role == MQ_REPL_RECV,
	    peer, name, o) < 0)
		rc = -1;
	else if (demote && demote_step(sp, l, role, &ep, o) < 0)
		rc = -1;
	else if (role == MQ_REPL_SEND && (hold = repl_peer_hold(sp, peer)) < 0)
		rc = -1;
	else
		rc = role == MQ_REPL_SEND ? repl_send(sp, l, peer, name, &ep,
		    &mine) : repl_recv(sp, l, peer, name, &ep, &mine);
	if (hold >= 0)
		close(hold);
	if (rc < 0 && role == MQ_REPL_SEND && !bad_epoch)
		repl_fence_learn(sp, at_start, peer, name);
	if (rc < 0) {
		/* Tell the peer why, if it still listens. */
		int code = mq_errcode();
		char keep[1024];
		snprintf(keep, sizeof keep, "%s", mq_errmsg());
		repl_send_text(l, "ERROR %d %.900s", code, keep);
		mq_err(code, "%s", keep);
	}
	return rc;
}
