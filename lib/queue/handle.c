/*
 * handle.c: running a handler for a message and settling the message by
 * how the handler ended (mq-sub --exec).
 *
 * Exit 0 acks, after publishing the handler's output lines when asked
 * (mq_pub_outputs).  With reply, a request's handler output goes back to
 * its caller then (reply.c), whatever the exit status: a failure is told
 * to the caller at once, and the message settled as below; an
 * exactly-once group keeps a successful reply to a request with an
 * idempotency key as its ledger entry, for a repeat of the request.  Exit 75 gives the message back as a deferral, which
 * counts as an attempt but not as a failure; so does a handler stopped at
 * the end of the grace period, which is no fault of the message.  Any
 * other status, or outliving the handler timeout, is a failure: the
 * message comes back after its backoff, or goes to the dead letters at
 * the group's last attempt.  With hold, a failure stays claimed, its
 * lease kept (mq_sub_keep_held), until mq_sub_release_held gives it back:
 * a run that does not follow gives each message one chance, and neither
 * spins on it nor counts a delivery that did not happen.  Closing a
 * subscription (mq_sub_close) gives back what it still holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "sub.h"

/* Publishes each line of out as a message with the idempotency key
 * "<id>.<n>": a redelivered input whose handler runs again yields the
 * same outputs, which the topic's dedup index drops. */
int
mq_pub_outputs(mq_pub *p, const char *id, const char *out, size_t len)
{
	size_t n = 0, cap = 0;
	struct mq_pub_msg *v = NULL;
	char (*keys)[MQ_ID_LEN + 24] = NULL;
	int rc = 0;
	for (const char *q = out, *end = out + len; rc == 0 && q < end;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		size_t l = nl ? (size_t)(nl - q) : (size_t)(end - q);
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct mq_pub_msg *nv = reallocarray(v, cap, sizeof *v);
			if (nv)
				v = nv;
			char (*nk)[MQ_ID_LEN + 24] = reallocarray(keys, cap,
			    sizeof *keys);
			if (nk)
				keys = nk;
			if (!nv || !nk) {
				rc = mq_err_sys("malloc");
				break;
			}
		}
		snprintf(keys[n], sizeof *keys, "%s.%zu", id, n + 1);
		v[n] = (struct mq_pub_msg){ .partition = -1, .body = q, .len = l,
		    .idempotency_key = keys[n] };
		n++;
		q += l + 1;
	}
	char (*ids)[MQ_ID_LEN + 1] = rc ? NULL :
	    reallocarray(NULL, n ? n : 1, sizeof *ids);
	if (rc == 0 && !ids)
		rc = mq_err_sys("malloc");
	if (rc == 0 && mq_pub_send(p, v, n, MQ_SYNC_BATCH, ids) != n)
		rc = -1;
	free(ids);
	free(keys);
	free(v);
	return rc;
}

/* Keeps the first thing worth telling the user. */
static void
note(struct mq_handled *h, const char *prefix)
{
	if (!h->note[0])
		snprintf(h->note, sizeof h->note, "%s%s", prefix, mq_errmsg());
}

/* Gives a message back; notes a failure, and a dead letter. */
static int
give_back(mq_sub *s, struct mq_msg *m, const struct mq_nack *how,
    struct mq_handled *h)
{
	int rc = mq_sub_nack(s, m, how);
	if (rc < 0) {
		note(h, "");
		return -1;
	}
	return rc == 1 ? MQ_HANDLED_DEAD : MQ_HANDLED_RETRY;
}

static int
hold(mq_sub *s, struct mq_held *f)
{
	if (s->nheld == s->capheld) {
		size_t cap = s->capheld ? s->capheld * 2 : 16;
		struct mq_held *v = reallocarray(s->held, cap, sizeof *v);
		if (!v)
			return mq_err_sys("malloc");
		s->held = v;
		s->capheld = cap;
	}
	s->held[s->nheld++] = *f;
	return MQ_HANDLED_HELD;
}

/* The handler's output as the reply to m, if m is a request, unless the
 * handler asked for another try (exit 75) or was stopped: then the
 * caller waits on.  1 when the request is answered (or its caller is
 * gone); a reply that cannot be sent is said, and the caller times out. */
static int
reply(mq_sub *s, const struct mq_msg *m, const struct mq_handler_result *r,
    struct mq_handled *h)
{
	const char *box = mq_msg_header_value(m, "Reply-To");
	if (!box || r->stopped || (r->status == EX_TEMPFAIL && !r->timed_out))
		return 0;
	struct mq_reply rp = { .correlation = mq_msg_header_value(m,
	    "Correlation-Id"), .request = m->id, .status = r->status < 0 ?
	    EX_SOFTWARE : r->timed_out && !r->status ? EX_TEMPFAIL : r->status,
	    .body = r->out, .len = r->out_len };
	/* Kept first: a crash after it settles the request when it comes
	 * again, and its caller's retry finds the reply. */
	if (rp.status == 0 && s->gc.exactly_once && m->idempotency_key &&
	    mq_reply_keep(mq_sub_ledger_fd(s, m), &rp) < 0)
		note(h, "--reply: keeping the reply: ");
	int rc = mq_reply_send(s->sp, box, s->group, &rp);
	if (rc < 0)
		note(h, "--reply: ");
	else if (rc == 2 && !h->note[0])
		snprintf(h->note, sizeof h->note, "--reply: the caller of "
		    "request %s is gone: its reply is late, dropped", m->id);
	return rc < 0 ? 0 : 1;
}

/* A request whose caller gave up is not run: acked (it takes m), and
 * counted late: 1, or -1 when the ack failed.  0: run it.  One whose
 * reply an exactly-once group keeps is run: a retry may come for it. */
static int
expired(mq_sub *s, struct mq_msg *m, struct mq_handled *h)
{
	const char *box = mq_msg_header_value(m, "Reply-To");
	if (!box || (s->gc.exactly_once && m->idempotency_key) ||
	    mq_reply_expired(s->sp, box, s->group, m->id) != 1)
		return 0;
	snprintf(h->note, sizeof h->note, "--reply: the caller of request %s "
	    "is done or gave up: not run, counted late", m->id);
	int rc = mq_sub_ack(s, m) < 0 ? -1 : 1;
	mq_msg_free(m);
	return rc;
}

int
mq_sub_handle(mq_sub *s, struct mq_msg *m, const struct mq_handling *o,
    struct mq_handled *h)
{
	struct mq_held f = { .m = m };
	memset(h, 0, sizeof *h);
	int late = o->reply ? expired(s, m, h) : 0;
	if (late)
		return late < 0 ? -1 : MQ_HANDLED_ACKED;
	if (mq_sub_run(s, m, o->cmd, o->timeout, o->publish_to != NULL ||
	    o->reply, &f.r) < 0)
		note(h, "");
	/* An output that can never be published (too large, say) fails the
	 * input; one that cannot be published now defers it.  The reply
	 * comes after: it tells how the request ended. */
	if (f.r.status == 0 && o->publish_to &&
	    mq_pub_outputs(o->publish_to, m->id, f.r.out, f.r.out_len) < 0) {
		note(h, "--publish-to: ");
		f.r.status = mq_errcode() == EX_DATAERR ? EX_DATAERR : EX_TEMPFAIL;
	}
	int replied = o->reply && reply(s, m, &f.r, h);
	free(f.r.out);
	f.r.out = NULL;
	h->status = f.r.status;
	int rc;
	/* A handler stopped after its timeout failed, whatever it exited
	 * with then. */
	if (f.r.status == 0 && !f.r.timed_out) {
		rc = MQ_HANDLED_ACKED;
		if (mq_sub_ack(s, m) < 0) {
			note(h, "");
			rc = -1;
		}
		mq_msg_free(m);
		return rc;
	}
	f.how.status = f.r.status;
	f.how.deferred = !f.r.timed_out &&
	    (f.r.status == EX_TEMPFAIL || f.r.stopped);
	f.how.detail = f.r.timed_out ? "handler timed out" : NULL;
	f.how.tail_len = f.r.tail_len;
	if (!f.r.stopped)
		f.how.delay = mq_backoff(o->backoff, o->backoff_max, m->attempts);
	/* A request answered with its failure is not run again: its
	 * caller has its answer. */
	if (replied) {
		f.how.tail = f.r.tail;
		if (!f.how.detail)
			f.how.detail = "its caller was replied the failure";
		rc = mq_sub_reject(s, m, &f.how) < 0 ? -1 : MQ_HANDLED_DEAD;
		if (rc < 0)
			note(h, "");
		mq_msg_free(m);
		return rc;
	}
	if (f.r.stopped || !o->hold) {
		f.how.tail = f.r.tail;
		rc = give_back(s, m, &f.how, h);
		mq_msg_free(m);
		return rc < 0 ? rc : f.r.stopped ? MQ_HANDLED_STOPPED : rc;
	}
	if ((rc = hold(s, &f)) < 0) {
		note(h, "");
		f.how.tail = f.r.tail;
		give_back(s, m, &f.how, h);
		mq_msg_free(m);
	}
	return rc;
}

int
mq_sub_keep_held(mq_sub *s)
{
	double now = mq_now();
	int rc = 0;
	for (size_t i = 0; i < s->nheld; i++)
		if (s->held[i].m->lease_deadline - now < s->lease / 3 &&
		    mq_sub_extend(s, s->held[i].m, s->lease) < 0)
			rc = -1;
	return rc;
}

int
mq_sub_release_held(mq_sub *s, size_t *dead)
{
	int rc = 0;
	struct mq_handled h = { 0 };
	if (dead)
		*dead = 0;
	for (size_t i = 0; i < s->nheld; i++) {
		struct mq_held *f = &s->held[i];
		f->how.tail = f->r.tail;
		int r = give_back(s, f->m, &f->how, &h);
		if (r < 0)
			rc = -1;
		else if (r == MQ_HANDLED_DEAD && dead)
			(*dead)++;
		mq_msg_free(f->m);
	}
	free(s->held);
	s->held = NULL;
	s->nheld = s->capheld = 0;
	return rc;
}

/* Closing gives back what is held first: the top of a subscription's
 * life, above claiming (consume.c) and holding. */
void
mq_sub_close(mq_sub *s)
{
	if (s && s->nheld)
		mq_sub_release_held(s, NULL);
	mq_sub_free(s);
}
