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

/* HELLO mq-replicate 1 <send|recv> <spool id> <host name> */
static int
hello_parse(const char *rest, size_t len, enum mq_repl_role *role,
    char id[MQ_ID_LEN + 1], char *name, size_t nlen, int *follow,
    int *compare)
{
	char line[512], r[8], i[MQ_ID_LEN + 2], nm[256] = "", f1[8] = "",
	    f2[8] = "";
	snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), rest);
	int n = sscanf(line, "mq-replicate 1 %7s %33s %255s %7s %7s", r, i, nm,
	    f1, f2);
	*follow = !strcmp(f1, "follow") || !strcmp(f2, "follow");
	*compare = !strcmp(f1, "compare") || !strcmp(f2, "compare");
	if (n < 2 || !mq_is_id(i, strlen(i)) ||
	    (strcmp(r, "send") && strcmp(r, "recv")))
		return mq_err(EX_PROTOCOL, "not an mq-replicate peer, or another "
		    "version");
	*role = !strcmp(r, "send") ? MQ_REPL_SEND : MQ_REPL_RECV;
	snprintf(id, MQ_ID_LEN + 1, "%.*s", MQ_ID_LEN, i);
	snprintf(name, nlen, "%s", i);
	return 0;
}

int
mq_repl_session(mq_spool *sp, mq_link *l, enum mq_repl_role role,
    int initiator, const struct mq_repl_opts *o)
{
	char me[MQ_ID_LEN + 1], peer[MQ_ID_LEN + 1], name[256], host[256];
	enum mq_repl_role theirs = MQ_REPL_ANY;
	struct mq_repl_opts mine = *o;
	int follow = 0, compare = 0;
	const char *rest;
	size_t len;
	if (repl_spool_id(sp, me) < 0)
		return -1;
	if (gethostname(host, sizeof host) < 0)
		snprintf(host, sizeof host, "unknown");
	host[sizeof host - 1] = 0;
	for (char *p = host; *p; p++)
		if (*p == ' ' || *p == '\n')
			*p = '_';
	/* The initiator says whether the session goes on for good: a
	 * sender started by it (serve --stdio) follows too. */
	if (initiator && repl_send_text(l, "HELLO mq-replicate 1 %s %s %s%s%s",
	    role_word(role), me, host, o->follow ? " follow" : "",
	    o->compare ? " compare" : "") < 0)
		return -1;
	if (repl_expect(l, "HELLO", &rest, &len) < 0 ||
	    hello_parse(rest, len, &theirs, peer, name, sizeof name, &follow,
	    &compare) < 0)
		return -1;
	if (!initiator && follow)
		mine.follow = 1;
	if (!initiator && compare)
		mine.compare = 1;
	if (o->hello_done)
		*o->hello_done = 1;
	if (!initiator) {
		if (role == MQ_REPL_ANY)
			role = theirs == MQ_REPL_SEND ? MQ_REPL_RECV : MQ_REPL_SEND;
		if (repl_send_text(l, "HELLO mq-replicate 1 %s %s %s",
		    role_word(role), me, host) < 0)
			return -1;
	}
	if (theirs == role)
		return mq_err(EX_USAGE, "both ends want to %s",
		    role == MQ_REPL_SEND ? "send" : "receive");
	if (!strcmp(me, peer))
		return mq_err(EX_USAGE, "a spool cannot replicate to itself "
		    "(both ends are spool %s)", me);
	int rc, hold = -1;
	/* The name it was authorized under, else its id. */
	const char *kname = NULL;
	if (mq_link_peer(l, &kname) && kname && *kname)
		snprintf(name, sizeof name, "%s", kname);
	repl_log(o, LOG_INFO, "%s %s%s%s%s", role == MQ_REPL_SEND ?
	    "sending to" : "receiving from", name, strcmp(name, peer) ? " (" :
	    "", strcmp(name, peer) ? peer : "", strcmp(name, peer) ? ")" : "");
	if (role == MQ_REPL_SEND && (hold = repl_peer_hold(sp, peer)) < 0)
		rc = -1;
	else
		rc = role == MQ_REPL_SEND ? repl_send(sp, l, peer, name,
		    &mine) : repl_recv(sp, l, peer, name, &mine);
	if (hold >= 0)
		close(hold);
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
