/*
 * respond.c: what every route uses: the request's arguments and headers,
 * answers (JSON, errors, the library's error as an HTTP status), the
 * token's permission and rate, CORS headers, whether the client or the
 * server is going.  Below the routes; server.c, which calls the routes,
 * is above them.
 */
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sysexits.h>

#include <microhttpd.h>

#include "http.h"

const char *
mq_http_arg(const struct mq_http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
	    name);
}

const char *
mq_http_header(const struct mq_http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

bool
mq_http_client_gone(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
	    MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p = { .fd = ci ? ci->connect_fd : -1,
	    .events = POLLRDHUP };
	return p.fd >= 0 && poll(&p, 1, 0) > 0 &&
	    (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool
mq_http_stopped(int stop_fd)
{
	struct pollfd p = { .fd = stop_fd, .events = POLLIN };
	return poll(&p, 1, 0) > 0;
}

size_t
mq_http_max_body(const struct mq_http_server *srv)
{
	return srv->max_body;
}

void
mq_http_session_start(struct mq_http_server *srv)
{
	atomic_fetch_add(&srv->active, 1);
}

void
mq_http_session_end(struct mq_http_server *srv)
{
	atomic_fetch_sub(&srv->active, 1);
}

int
mq_http_status_of(int code)
{
	switch (code) {
	case EX_USAGE: case EX_DATAERR: case EX_PROTOCOL:
		return MHD_HTTP_BAD_REQUEST;
	case EX_NOINPUT: case EX_NOUSER:
		return MHD_HTTP_NOT_FOUND;
	case EX_CANTCREAT:
		return MHD_HTTP_CONFLICT;
	case EX_NOPERM:
		return MHD_HTTP_FORBIDDEN;
	case EX_TEMPFAIL: case EX_UNAVAILABLE:
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

const char *
mq_http_origin(const struct mq_http_req *r)
{
	const char *o = mq_http_header(r, "Origin");
	const struct mq_http_conf *c = r->srv->conf;
	for (size_t i = 0; o && i < c->norigins; i++)
		if (!strcmp(c->origins[i], "*") || !strcmp(c->origins[i], o))
			return o;
	return NULL;
}

void
mq_http_cors(const struct mq_http_req *r, struct MHD_Response *resp)
{
	const char *o = mq_http_origin(r);
	if (r->srv->conf->norigins)
		MHD_add_response_header(resp, "Vary", "Origin");
	if (!o)
		return;
	MHD_add_response_header(resp, "Access-Control-Allow-Origin", o);
	MHD_add_response_header(resp, "Access-Control-Expose-Headers",
	    "Retry-After, WWW-Authenticate");
}

int
mq_http_send(struct mq_http_req *r, int status, const char *type,
    const void *data, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len,
	    (void *)data, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return -1;
	mq_http_cors(r, resp);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		    "Bearer realm=\"mq\"");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE ||
	    status == MHD_HTTP_TOO_MANY_REQUESTS)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	r->status = status;
	enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ok == MHD_YES ? 0 : -1;
}

int
mq_http_json(struct mq_http_req *r, int status, const char *json, size_t len)
{
	return mq_http_send(r, status, "application/json", json, len);
}

int
mq_http_object(struct mq_http_req *r, int status, json_t *o)
{
	static const char nomem[] = "{\"error\":\"out of memory\"}";
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	int rc = text ? mq_http_json(r, status, text, strlen(text)) :
	    mq_http_json(r, 500, nomem, sizeof nomem - 1);
	free(text);
	return rc;
}

int
mq_http_error(struct mq_http_req *r, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return mq_http_object(r, status, json_pack("{s:s}", "error", msg));
}

int
mq_http_failed(struct mq_http_req *r)
{
	return mq_http_error(r, mq_http_status_of(mq_errcode()), "%s",
	    mq_errmsg());
}

bool
mq_http_permit(struct mq_http_req *r, int perm, const char *topic,
    const char *group)
{
	if (mq_http_allowed(r->grant, perm, topic, group))
		return true;
	mq_http_error(r, MHD_HTTP_FORBIDDEN, "the token does not allow %s on "
	    "%s%s%s", perm == MQ_HTTP_PUBLISH ? "publish" : perm ==
	    MQ_HTTP_CONSUME ? "consume" : "admin", topic ? topic : "the spool",
	    group ? "/" : "", group ? group : "");
	return false;
}

bool
mq_http_permit_group(struct mq_http_req *r, const char *topic,
    const char *group)
{
	return mq_http_allowed_group(r->grant, topic, group) ||
	    mq_http_permit(r, MQ_HTTP_CONSUME, topic, group);
}

int
mq_http_rate_take(struct mq_http_server *srv, const char *who)
{
	double rate = srv->conf->rate, now = mq_mono();
	if (rate <= 0)
		return 0;
	pthread_mutex_lock(&srv->lock);
	struct mq_http_bucket *b = NULL;
	for (size_t i = 0; i < srv->nb && !b; i++)
		if (!strcmp(srv->b[i].who, who))
			b = &srv->b[i];
	if (!b) {
		/* The bucket of the longest idle token makes room. */
		if (srv->nb == 1024) {
			b = &srv->b[0];
			for (size_t i = 1; i < srv->nb; i++)
				if (srv->b[i].at < b->at)
					b = &srv->b[i];
		} else {
			b = &srv->b[srv->nb++];
		}
		snprintf(b->who, sizeof b->who, "%s", who);
		b->level = rate;
		b->at = now;
	}
	b->level = fmin(rate, b->level + (now - b->at) * rate);
	b->at = now;
	bool ok = b->level >= 1;
	if (ok)
		b->level -= 1;
	pthread_mutex_unlock(&srv->lock);
	return ok ? 0 : mq_err(EX_TEMPFAIL, "more than %g requests a second",
	    rate);
}

int
mq_http_stream_json(struct mq_http_req *r,
    int (*fn)(struct mq_http_req *, FILE *, void *), void *ctx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	if (!fp) {
		mq_err_sys("open_memstream");
		return mq_http_failed(r);
	}
	int rc = fn(r, fp, ctx);
	if (fclose(fp) != 0 && rc == 0)
		rc = mq_err_sys("memory stream");
	rc = rc < 0 ? mq_http_failed(r) : mq_http_json(r, 200, buf, len);
	free(buf);
	return rc;
}

bool
mq_http_duration_arg(struct mq_http_req *r, const char *name, double max,
    double *out)
{
	const char *v = mq_http_arg(r, name);
	double d;
	if (!v)
		return true;
	if (mq_duration_parse(v, &d) < 0) {
		mq_http_error(r, MHD_HTTP_BAD_REQUEST, "%s: %s", name,
		    mq_errmsg());
		return false;
	}
	if (max > 0 && d > max) {
		mq_http_error(r, MHD_HTTP_BAD_REQUEST, "%s: at most %g s", name,
		    max);
		return false;
	}
	*out = d;
	return true;
}

int
mq_http_seconds(json_t *obj, const char *name, double *out)
{
	json_t *v = json_object_get(obj, name);
	if (!v)
		return 0;
	if (json_is_number(v) && json_number_value(v) >= 0) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_string(v) && mq_duration_parse(json_string_value(v),
	    out) == 0)
		return 0;
	return mq_err(EX_DATAERR, "%s: a duration (\"30s\") or a number of "
	    "seconds", name);
}
