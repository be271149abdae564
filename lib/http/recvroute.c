/*
 * recvroute.c: receiving from a group and settling by receipt
 * (mq-http(1), Consuming).
 *
 * GET .../groups/G/messages claims up to ?max messages, waiting up to
 * ?wait for the first (a long poll), each under the group's lease or
 * ?lease; the client settles them by receipt, from any connection, as
 * mq-ack(1) does.  A response that did not reach its client (it went
 * away during the wait or the write) gives its messages back at once
 * (mq_http_release), rather than when their leases end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <microhttpd.h>

#include "http.h"

#define RECEIVE_MAX 1000

/* What a response delivered: given back if it never arrived. */
struct delivered {
	char topic[MQ_NAME_MAX + 1], group[MQ_NAME_MAX + 1];
	char **receipts;
	size_t n;
};

static void
delivered_free(struct delivered *d)
{
	for (size_t i = 0; d && i < d->n; i++)
		free(d->receipts[i]);
	if (d)
		free(d->receipts);
	free(d);
}

void
mq_http_release(struct mq_http_req *r, bool arrived)
{
	struct delivered *d = r->delivered;
	for (size_t i = 0; d && !arrived && i < d->n; i++)
		mq_http_give_back(r->sp, d->topic, d->group, d->receipts[i]);
	delivered_free(d);
	r->delivered = NULL;
}

/* Waits up to wait for a message, in slices, so that a client gone
 * meanwhile is noticed before a message is claimed for it: 1 with *m,
 * 0 when none came (or the client or the server went), -1. */
static int
wait_one(struct mq_http_req *r, mq_sub *sub, double wait, struct mq_msg **m)
{
	double until = mq_mono() + wait, left;
	int rc;
	do {
		left = until - mq_mono();
		left = left < 0 ? 0 : left < MQ_HTTP_SLICE ? left : MQ_HTTP_SLICE;
		rc = mq_sub_receive(sub, left, m);
	} while (rc == 0 && mq_mono() < until &&
	    !mq_http_client_gone(r->conn) && !mq_http_stopped(r->stop_fd));
	return rc;
}

/* Claims up to max, the first waited for, into a JSON array on fp. */
static int
claim(struct mq_http_req *r, mq_sub *sub, double wait, unsigned long max,
    struct delivered *d, FILE *fp)
{
	struct mq_msg *m;
	int rc = 0;
	mq_sub_prefetch(sub, max > 4096 ? 4096 : (unsigned)max);
	fputc('[', fp);
	while (d->n < max && (rc = d->n ? mq_sub_receive(sub, 0, &m) :
	    wait_one(r, sub, wait, &m)) == 1) {
		char **v = reallocarray(d->receipts, d->n + 1, sizeof *v);
		char *copy = strdup(m->receipt);
		if (!v || !copy) {
			free(copy);
			if (v)
				d->receipts = v;
			mq_sub_nack(sub, m, &(struct mq_nack){ .deferred = 1,
			    .status = -1 });
			mq_msg_free(m);
			return mq_err_sys("malloc");
		}
		d->receipts = v;
		d->receipts[d->n] = copy;
		if (d->n++)
			fputc(',', fp);
		rc = mq_msg_write_json(m, fp);
		mq_msg_free(m);
		if (rc < 0)
			return -1;
	}
	fputs("]\n", fp);
	return rc < 0 ? -1 : 0;
}

struct recv_ctx {
	const char *topic, *group;
	double wait, lease;
	unsigned long max;
};

static int
receive(struct mq_http_req *r, FILE *fp, void *arg)
{
	struct recv_ctx *c = arg;
	struct mq_sub_opts so;
	mq_sub_opts_default(&so);
	so.lease = c->lease;
	so.wake_fd = r->stop_fd;
	so.create = 0;          /* a missing group is 404 (EX_NOINPUT) */
	struct delivered *d = calloc(1, sizeof *d);
	if (!d)
		return mq_err_sys("malloc");
	snprintf(d->topic, sizeof d->topic, "%s", c->topic);
	snprintf(d->group, sizeof d->group, "%s", c->group);
	r->delivered = d;
	mq_sub *sub = mq_sub_open(r->sp, c->topic, c->group, &so);
	int rc = sub ? claim(r, sub, c->wait, c->max, d, fp) : -1;
	mq_sub_close(sub);
	/* Gone while they were claimed: they would go nowhere. */
	if (rc == 0 && d->n && mq_http_client_gone(r->conn))
		rc = mq_err(EX_IOERR, "the client went away");
	if (rc < 0)
		mq_http_release(r, false);
	return rc;
}

int
mq_http_receive(struct mq_http_req *r, const char *topic, const char *group)
{
	struct recv_ctx c = { topic, group, 0, 0, 1 };
	const char *max = mq_http_arg(r, "max");
	if (!mq_http_permit(r, MQ_HTTP_CONSUME, topic, group) ||
	    !mq_http_duration_arg(r, "wait", r->max_wait, &c.wait) ||
	    !mq_http_duration_arg(r, "lease", 12 * 3600, &c.lease))
		return 0;
	/* A long poll ends with its token, as a stream does. */
	double left = r->grant ? mq_http_grant_until(r->grant) - mq_now() :
	    c.wait;
	if (c.wait > left)
		c.wait = left > 0 ? left : 0;
	if (max) {
		char *e;
		c.max = strtoul(max, &e, 10);
		if (!*max || *e || c.max < 1 || c.max > RECEIVE_MAX)
			return mq_http_error(r, MHD_HTTP_BAD_REQUEST, "max: a "
			    "number from 1 to %d", RECEIVE_MAX);
	}
	return mq_http_stream_json(r, receive, &c);
}

/* The receipts of a settle body: {"receipt": R} or {"receipts": [R...]}
 * (borrowed from doc). */
static int
receipts_of(json_t *doc, const char ***out, size_t *n)
{
	json_t *one = json_object_get(doc, "receipt"),
	    *many = json_object_get(doc, "receipts");
	*n = one ? 1 : json_array_size(many);
	if ((one && many) || (!one && !json_is_array(many)) || *n == 0 ||
	    *n > RECEIVE_MAX)
		return mq_err(EX_DATAERR, "give \"receipt\": R, or \"receipts\": "
		    "[R, ...] (at most %d)", RECEIVE_MAX);
	if (!(*out = calloc(*n, sizeof **out)))
		return mq_err_sys("malloc");
	for (size_t i = 0; i < *n; i++) {
		json_t *v = one ? one : json_array_get(many, i);
		if (!json_is_string(v))
			return mq_err(EX_DATAERR, "a receipt is a string");
		(*out)[i] = json_string_value(v);
	}
	return 0;
}

int
mq_http_settle_one(mq_spool *sp, const char *topic, const char *group,
    const char *how, const char *receipt, double secs)
{
	if (!strcmp(how, "ack"))
		return mq_receipt_ack(sp, topic, group, receipt);
	if (!strcmp(how, "extend"))
		return mq_receipt_extend(sp, topic, group, receipt,
		    secs > 0 ? secs : 30);
	if (!strcmp(how, "nack"))
		return mq_receipt_nack(sp, topic, group, receipt,
		    &(struct mq_nack){ .delay = secs, .status = -1 }) < 0 ? -1 : 0;
	return mq_err(EX_DATAERR, "no way to settle '%.20s'", how);
}

int
mq_http_settle(struct mq_http_req *r, const char *topic, const char *group,
    const char *how)
{
	if (!mq_http_permit(r, MQ_HTTP_CONSUME, topic, group))
		return 0;
	json_error_t e;
	json_t *doc = json_loadb(r->body ? r->body : "", r->len, 0, &e);
	const char **rv = NULL;
	size_t n = 0, ok = 0;
	double secs = 0;
	if (!doc || !json_is_object(doc)) {
		json_decref(doc);
		return mq_http_error(r, MHD_HTTP_BAD_REQUEST, "the body is a JSON "
		    "object: {\"receipt\": R} or {\"receipts\": [R, ...]}");
	}
	if (receipts_of(doc, &rv, &n) < 0 || mq_http_seconds(doc,
	    !strcmp(how, "extend") ? "lease" : "delay", &secs) < 0) {
		free(rv);
		json_decref(doc);
		return mq_http_failed(r);
	}
	json_t *res = json_array();
	int first_code = 0;
	for (size_t i = 0; i < n; i++) {
		int rc = mq_http_settle_one(r->sp, topic, group, how, rv[i],
		    secs);
		if (rc == 0)
			ok++;
		else if (!first_code)
			first_code = mq_errcode();
		json_array_append_new(res, rc == 0 ? json_pack("{s:s,s:b}",
		    "receipt", rv[i], "ok", 1) : json_pack("{s:s,s:b,s:s}",
		    "receipt", rv[i], "ok", 0, "error", mq_errmsg()));
	}
	free(rv);
	json_decref(doc);
	/* One receipt: its own status; several: 200 and a result each. */
	int status = n == 1 && first_code ? mq_http_status_of(first_code) :
	    MHD_HTTP_OK;
	return mq_http_object(r, status, json_pack("{s:i,s:o}", "settled",
	    (json_int_t)ok, "results", res));
}
