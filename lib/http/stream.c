/*
 * stream.c: a group's messages as a stream to one client, for Server-Sent
 * Events and WebSocket (mq-http(1), Streaming).
 *
 * The stream holds at most `credit` messages its client has not settled:
 * past that it delivers nothing until one is (by its receipt, through
 * this connection or any other; mq_receipt_held tells).  When the client
 * goes, what it still holds is given back at once (deferred: no failure
 * counted), not left to its leases.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "http.h"

#define CREDIT_MAX 1000

int
mq_http_stream_open(struct mq_http_stream *st, mq_spool *sp,
    const char *topic, const char *group, unsigned credit, double lease,
    int wake_fd)
{
	struct mq_sub_opts so;
	memset(st, 0, sizeof *st);
	if (credit < 1 || credit > CREDIT_MAX)
		return mq_err(EX_DATAERR, "credit: a number from 1 to %d",
		    CREDIT_MAX);
	if (!(st->held = calloc(credit, sizeof *st->held)))
		return mq_err_sys("malloc");
	mq_sub_opts_default(&so);
	so.lease = lease;
	so.wake_fd = wake_fd;
	/* A consumer makes its group with PUT: a missing one is 404 here
	 * (EX_NOINPUT, "no group"), not made. */
	so.create = 0;
	st->sp = sp;
	st->credit = credit;
	snprintf(st->topic, sizeof st->topic, "%s", topic);
	snprintf(st->group, sizeof st->group, "%s", group);
	if (!(st->sub = mq_sub_open(sp, topic, group, &so))) {
		free(st->held);
		st->held = NULL;
		return -1;
	}
	return 0;
}

/* Forgets the receipts no longer held. */
static void
prune(struct mq_http_stream *st)
{
	size_t keep = 0;
	for (size_t i = 0; i < st->nheld; i++) {
		if (mq_receipt_held(st->sp, st->topic, st->group,
		    st->held[i]) == 1)
			st->held[keep++] = st->held[i];
		else
			free(st->held[i]);
	}
	st->nheld = keep;
}

int
mq_http_stream_next(struct mq_http_stream *st, double timeout,
    struct mq_msg **m)
{
	if (st->nheld == st->credit)
		prune(st);
	if (st->nheld == st->credit) {
		/* Full: look again soon; an ack may come any time. */
		poll(NULL, 0, timeout < 0.05 ? (int)(timeout * 1000) : 50);
		return 0;
	}
	int rc = mq_sub_receive(st->sub, timeout, m);
	if (rc != 1)
		return rc;
	if (!(st->held[st->nheld] = strdup((*m)->receipt))) {
		mq_sub_nack(st->sub, *m, &(struct mq_nack){ .deferred = 1,
		    .status = -1 });
		mq_msg_free(*m);
		return mq_err_sys("malloc");
	}
	st->nheld++;
	return 1;
}

void
mq_http_stream_settled(struct mq_http_stream *st, const char *receipt)
{
	for (size_t i = 0; i < st->nheld; i++)
		if (!strcmp(st->held[i], receipt)) {
			free(st->held[i]);
			st->held[i] = st->held[--st->nheld];
			return;
		}
}

void
mq_http_give_back(mq_spool *sp, const char *topic, const char *group,
    const char *receipt)
{
	/* Settled meanwhile is no error: there is nothing to give back. */
	mq_receipt_nack(sp, topic, group, receipt, &(struct mq_nack){
	    .deferred = 1, .status = -1, .detail = "its HTTP client went away" });
}

void
mq_http_stream_close(struct mq_http_stream *st)
{
	for (size_t i = 0; i < st->nheld; i++) {
		mq_http_give_back(st->sp, st->topic, st->group, st->held[i]);
		free(st->held[i]);
	}
	free(st->held);
	mq_sub_close(st->sub);
	memset(st, 0, sizeof *st);
}
