/*
 * subloop.c: mq-sub(1)'s run over an open subscription: messages are
 * received in batches and written out (msgout.c), or handed one at a
 * time to a handler (--exec, mq_sub_handle), until a count, a timeout or
 * a stop; and the worker processes of -j, which each run it too.
 *
 * A written batch is acked only once it is flushed (unless manual): a
 * crash before that leaves its messages claimed, to come again when
 * their leases end, never lost.  Into a pipe a message goes alone, and
 * is acked once its reader has read it (pipeout.c): a reader that goes
 * away (head -n 1) takes exactly what it read.  Output that could not be
 * written, or was left unread, is no fault of the messages: they are
 * given back as deferred, not failed, and the run ends.  Messages the filter refuses are acked unseen.
 * Without follow a run gives each message one chance: one its handler
 * refused stays claimed (held) until the run ends.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "run.h"

#define BATCH 64

/* The warnings of a run go to c->warn: a note, or (NULL) the error. */
static void
tell(const struct mq_consume *c, const char *note)
{
	if (c->warn)
		c->warn(note, c->ctx);
}

static void
tell_dead(const struct mq_consume *c, const char *id, unsigned attempts)
{
	char note[128];
	snprintf(note, sizeof note, "message %s dead-lettered after %u "
	    "deliveries", id, attempts);
	tell(c, note);
}

static bool
stopped(const struct mq_consume *c)
{
	return c->stop && *c->stop;
}

static void
give_back(const struct mq_consume *c, mq_sub *sub, struct mq_msg *m,
    const struct mq_nack *how)
{
	int rc = mq_sub_nack(sub, m, how);
	if (rc < 0)
		tell(c, NULL);
	else if (rc == 1)
		tell_dead(c, m->id, m->attempts);
}

/* Runs the handler for m (which it takes); returns whether it failed in
 * a way that is tried again later (held, or stopped at the grace). */
static int
handle(const struct mq_consume *c, mq_sub *sub, struct mq_msg *m)
{
	struct mq_handled h;
	char id[MQ_ID_LEN + 1];
	unsigned attempts = m->attempts;
	snprintf(id, sizeof id, "%s", m->id);
	int rc = mq_sub_handle(sub, m, c->exec, &h);
	if (h.note[0])
		tell(c, h.note);
	else if (rc < 0)
		tell(c, NULL);
	if (rc == MQ_HANDLED_DEAD)
		tell_dead(c, id, attempts);
	return rc == MQ_HANDLED_HELD || rc == MQ_HANDLED_STOPPED;
}

static void
release_held(const struct mq_consume *c, mq_sub *sub)
{
	size_t dead;
	char note[128];
	if (mq_sub_release_held(sub, &dead) < 0)
		tell(c, NULL);
	snprintf(note, sizeof note, "%zu message%s dead-lettered after their "
	    "last delivery", dead, dead == 1 ? "" : "s");
	if (dead)
		tell(c, note);
}

/* Acks the messages the filter refuses, and keeps the others in
 * batch[0..*n); -1 if the filter failed (the batch freed, unsettled). */
static int
skip_unmatched(const struct mq_consume *c, mq_sub *sub,
    struct mq_msg **batch, size_t *n)
{
	struct mq_msg *skip[BATCH];
	bool match[BATCH];
	size_t keep = 0, ns = 0;
	if (mq_filter_match_many(c->filter, batch, *n, match) < 0) {
		for (size_t i = 0; i < *n; i++)
			mq_msg_free(batch[i]);
		return -1;
	}
	for (size_t i = 0; i < *n; i++) {
		if (match[i])
			batch[keep++] = batch[i];
		else
			skip[ns++] = batch[i];
	}
	if (ns && mq_sub_ack_batch(sub, skip, ns) < 0)
		tell(c, NULL);
	for (size_t i = 0; i < ns; i++)
		mq_msg_free(skip[i]);
	*n = keep;
	return 0;
}

/* Receives up to max messages: waits up to timeout for the first, then
 * takes what is already pending.  On an error what it took goes back,
 * the held ones too, and it returns -1 with the last error. */
static int
receive(const struct mq_consume *c, mq_sub *sub, double timeout,
    struct mq_msg **batch, size_t max, size_t *got)
{
	size_t n = 0;
	mq_sub_prefetch(sub, (unsigned)max);
	while (n < max && !stopped(c)) {
		int rc = mq_sub_receive(sub, n ? 0 : timeout, &batch[n]);
		if (rc < 0) {
			for (size_t i = 0; i < n; i++) {
				if (mq_sub_nack(sub, batch[i], NULL) < 0)
					tell(c, NULL);
				mq_msg_free(batch[i]);
			}
			release_held(c, sub);
			return -1;
		}
		if (rc == 0)
			break;
		n++;
	}
	*got = n;
	return 0;
}

/* Messages a pipe's reader has read, acked together (ack_read): before
 * a wait, when BATCH are read, and at the end. */
struct read_acks {
	struct mq_msg *m[BATCH];
	size_t n;
};

static void
ack_read(const struct mq_consume *c, mq_sub *sub, struct read_acks *a)
{
	if (a->n && mq_sub_ack_batch(sub, a->m, a->n) < 0)
		tell(c, NULL);
	for (size_t i = 0; i < a->n; i++)
		mq_msg_free(a->m[i]);
	a->n = 0;
}

/* Writes a batch, flushed, and acks it (unless manual): 0.  Into a pipe
 * (read not NULL) it waits for the reader, and leaves the ack to
 * ack_read.  Output that fails, or that the reader left unread, gives it
 * all back and ends the run (-1, its errno kept); so does a stop while
 * the reader has not read it (1). */
static int
write_batch(const struct mq_consume *c, mq_sub *sub, struct mq_msg **batch,
    size_t n, struct read_acks *read, struct mq_consumed *r)
{
	int ok = 1;
	for (size_t i = 0; ok && i < n; i++)
		if (mq_msg_write(batch[i], &c->output, c->out) < 0) {
			ok = 0;
			r->out_errno = errno;
		}
	if (ok && fflush(c->out) == EOF) {
		ok = 0;
		r->out_errno = errno;
	}
	int drained = ok && read ? mq_pipe_drained(fileno(c->out), c->stop) : 1;
	if (drained == 0)
		r->out_errno = EPIPE;
	ok = ok && drained == 1;
	for (size_t i = 0; !ok && i < n; i++)
		give_back(c, sub, batch[i], &(struct mq_nack){ .deferred = 1,
		    .status = -1 });
	if (ok && read) {
		if (read->n + n > BATCH)
			ack_read(c, sub, read);
		for (size_t i = 0; i < n; i++)
			read->m[read->n++] = batch[i];
		return 0;
	}
	if (ok && !c->manual && mq_sub_ack_batch(sub, batch, n) < 0)
		tell(c, NULL);
	for (size_t i = 0; i < n; i++)
		mq_msg_free(batch[i]);
	return ok ? 0 : drained < 0 ? 1 : -1;
}

int
mq_sub_consume(mq_sub *sub, const struct mq_consume *c,
    struct mq_consumed *r)
{
	struct mq_msg *batch[BATCH];
	double deadline = mq_mono() + c->timeout;
	/* What a pipe's reader did not read comes back: one at a time. */
	struct read_acks acks = { .n = 0 }, *read = !c->exec && !c->manual &&
	    mq_fd_is_pipe(fileno(c->out)) ? &acks : NULL;
	int w = 0;
	memset(r, 0, sizeof *r);
	while (!stopped(c) && (!c->count || r->delivered < c->count)) {
		double timeout = c->follow ? (c->timeout > 0 ? c->timeout : -1) :
		    r->delivered ? 0 : c->timeout;
		/* The timeout bounds the wait for a first message that
		 * matches. */
		if (c->filter && !c->follow && !r->delivered)
			timeout = fmax(0, deadline - mq_mono());
		size_t max = c->exec || read ? 1 : BATCH, n;
		if (c->count && c->count - r->delivered < max)
			max = c->count - r->delivered;
		if (mq_sub_keep_held(sub) < 0)
			tell(c, NULL);
		if (read && timeout != 0)
			ack_read(c, sub, read);
		if ((w = receive(c, sub, timeout, batch, max, &n)) < 0) {
			/* A file system too full for the next claim: the
			 * acks the reader has earned free one (claims.c's
			 * spares); then once more. */
			if (read && read->n && mq_errcode() == EX_TEMPFAIL) {
				ack_read(c, sub, read);
				w = 0;
				continue;
			}
			break;
		}
		/* What was read but not acked may hold the next one back (an
		 * ordered group's partition): ack it, and look again. */
		if (n == 0 && read && read->n) {
			ack_read(c, sub, read);
			continue;
		}
		if (n == 0)
			break;
		if (c->filter && (w = skip_unmatched(c, sub, batch, &n)) < 0)
			break;
		if (n == 0)
			continue;
		if (!c->exec && (w = write_batch(c, sub, batch, n, read, r)))
			break;
		for (size_t i = 0; c->exec && i < n; i++)
			r->held |= handle(c, sub, batch[i]);
		r->delivered += n;
	}
	if (read)
		ack_read(c, sub, read);
	if (w >= 0)
		release_held(c, sub);
	return w < 0 ? -1 : 0;
}

int
mq_sub_workers_start(pid_t *pids, unsigned long n, unsigned long *started)
{
	fflush(NULL);
	for (unsigned long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return mq_err(EX_OSERR, "fork: %s", strerror(errno));
		if (pid == 0) {
			*started = 0;           /* a worker has none of its own */
			return 0;
		}
		pids[(*started)++] = pid;
	}
	return 1;
}

int
mq_sub_workers_join(int rc, const pid_t *pids, unsigned long n)
{
	int all[2] = { rc, 0 };
	for (unsigned long i = 0; i < n; i++) {
		int st;
		while (waitpid(pids[i], &st, 0) < 0)
			if (errno != EINTR)
				return mq_err(EX_OSERR, "waitpid: %s",
				    strerror(errno));
		all[1] = WIFEXITED(st) ? WEXITSTATUS(st) : EX_SOFTWARE;
		if (all[1] > 1 && all[1] != EX_TEMPFAIL)
			all[0] = all[0] > 1 && all[0] != EX_TEMPFAIL ?
			    all[0] : all[1];
		else if (all[0] <= 1 && (all[1] == EX_TEMPFAIL ||
		    (all[1] == 0 && all[0] == MQ_EX_EMPTY)))
			all[0] = all[1];
	}
	return all[0];
}
