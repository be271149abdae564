/*
 * sseroute.c: GET .../groups/G/events, a group as Server-Sent Events
 * (mq-http(1), Streaming).
 *
 * Each message is an event "message" whose id is its receipt and whose
 * data is the message as mq-sub --json prints it; the client acks or
 * nacks by POSTing the receipt.  A comment goes out every 15 s without
 * a message, so that a client that went away is noticed (the write
 * fails) and what it held is given back.  The body is written by
 * libmicrohttpd's content callback, called in the connection's thread,
 * where it may block; it has a spool handle of its own, since it
 * outlives the request's.
 *
 * A stream lasts no longer than its token: once the token's "exp" (and
 * the leeway) has passed, it ends with an event "error" saying "token
 * expired", looked at between the slices of its waits and before each
 * message goes out (one claimed as the token ran out is given back).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <microhttpd.h>

#include "http.h"

#define KEEPALIVE 15.0

struct sse {
	struct mq_http_stream st;
	mq_spool *sp;
	struct MHD_Connection *conn;
	int stop_fd;
	double until;                   /* when its token ends */
	char *out;                      /* what is to be written, from pos */
	size_t len, pos;
	bool ended;
};

static void
sse_free(void *arg)
{
	struct sse *e = arg;
	mq_http_stream_close(&e->st);
	mq_spool_close(e->sp);
	free(e->out);
	free(e);
}

/* Whether the token has run out: the error then says so. */
static bool
expired(const struct sse *e)
{
	return mq_now() >= e->until && mq_err(EX_NOPERM, "token expired") < 0;
}

/* The next thing to write: an event, a comment, or the end. */
static int
next_chunk(struct sse *e)
{
	double until = mq_mono() + KEEPALIVE;
	struct mq_msg *m = NULL;
	int rc = 0;
	/* In slices: a client gone is noticed before anything is claimed
	 * for it, and a slice ends when the token does. */
	while (rc == 0 && mq_mono() < until) {
		if (mq_http_stopped(e->stop_fd) || mq_http_client_gone(e->conn))
			return -1;
		if (expired(e)) {
			rc = -1;
			break;
		}
		rc = mq_http_stream_next(&e->st, fmax(0, fmin(MQ_HTTP_SLICE,
		    e->until - mq_now())), &m);
	}
	if (rc == 1 && expired(e)) {
		mq_msg_free(m);         /* held: given back when it closes */
		rc = -1;
	}
	free(e->out);
	e->out = NULL;
	e->pos = 0;
	FILE *fp = open_memstream(&e->out, &e->len);
	if (!fp)
		return -1;
	if (rc == 1) {
		fprintf(fp, "id: %s\nevent: message\ndata: ", m->receipt);
		mq_msg_write_json(m, fp);       /* one line, ending with \n */
		fputc('\n', fp);
		mq_msg_free(m);
	} else if (rc == 0) {
		fputs(": keepalive\n\n", fp);
	} else {
		json_t *o = json_pack("{s:s}", "error", mq_errmsg());
		char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
		fprintf(fp, "event: error\ndata: %s\n\n", t ? t : "{}");
		free(t);
		json_decref(o);
		e->ended = true;
	}
	return fclose(fp) == 0 ? 0 : -1;
}

static ssize_t
sse_read(void *arg, uint64_t at, char *buf, size_t max)
{
	struct sse *e = arg;
	(void)at;
	if (e->pos == e->len && (e->ended || next_chunk(e) < 0))
		return MHD_CONTENT_READER_END_OF_STREAM;
	size_t n = e->len - e->pos < max ? e->len - e->pos : max;
	memcpy(buf, e->out + e->pos, n);
	e->pos += n;
	return (ssize_t)n;
}

int
mq_http_events(struct mq_http_req *r, const char *topic, const char *group)
{
	const char *cr = mq_http_arg(r, "credit");
	double lease = 0;
	unsigned long credit = cr ? strtoul(cr, NULL, 10) : 10;
	if (!mq_http_permit(r, MQ_HTTP_CONSUME, topic, group) ||
	    !mq_http_duration_arg(r, "lease", 12 * 3600, &lease))
		return 0;
	struct sse *e = calloc(1, sizeof *e);
	if (!e)
		return mq_http_error(r, 500, "out of memory");
	e->stop_fd = r->stop_fd;
	e->until = mq_http_grant_until(r->grant);
	e->conn = r->conn;
	/* A first comment: the client sees the stream open at once, and
	 * reconnects a second after it ends. */
	if (!(e->out = strdup("retry: 1000\n: mq\n\n")) ||
	    !(e->sp = mq_spool_open(mq_spool_path(r->sp), 0)) ||
	    mq_http_stream_open(&e->st, e->sp, topic, group, (unsigned)credit,
	    lease, r->stop_fd) < 0) {
		int rc = mq_http_failed(r);
		mq_spool_close(e->sp);
		free(e->out);
		free(e);
		return rc;
	}
	e->len = strlen(e->out);
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, 16 * 1024, sse_read, e, sse_free);
	if (!resp) {
		sse_free(e);
		return mq_http_error(r, 500, "out of memory");
	}
	mq_http_cors(r, resp);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	r->status = MHD_HTTP_OK;
	enum MHD_Result ok = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ok == MHD_YES ? 0 : -1;
}
