/*
 * wsroute.c: GET /v1/ws, one WebSocket connection that publishes,
 * subscribes to a group and settles (mq-http(1), WebSocket).
 *
 * After the upgrade the session runs in a thread of its own (over TLS
 * libmicrohttpd forwards the socket's bytes in the connection's thread,
 * which must be free to do it), with a spool handle of its own.  Every
 * frame from the client is a JSON text message with an "op"; each gets
 * one answer, which carries the client's "id" back.  Messages of the
 * subscription go out as {"op":"message", "message": ...} while the
 * client holds fewer than its credit unsettled (stream.c).  The
 * subscription's waits end when the client sends (the socket is their
 * wake fd), so its frames are answered at once; they end each second as
 * well, to see whether the server is stopping.
 *
 * The session holds the grant of the token it was opened with, and no
 * longer than that token: once its "exp" (and the leeway) has passed, the
 * session is closed with 1008 and the reason "token expired", when a
 * frame comes and, while it is idle, by its waits, which end then at the
 * latest.  Each request counts against the token's --rate as an HTTP
 * request does; one over it is answered 429 and not done.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/time.h>
#include <sysexits.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http.h"

/* The largest message either way: a session buffers one whole. */
#define WS_MESSAGE_MAX (1 << 20)

struct ws {
	struct mq_http_server *srv;
	struct MHD_UpgradeResponseHandle *urh;
	int fd, stop_fd;
	char *spool;
	mq_spool *sp;
	struct mq_http_grant *grant;
	char who[128];                  /* its subject, as its bucket's */
	double until;                   /* when the grant ends */
	struct mq_http_stream st;
	mq_pub *pub;                    /* the last topic published to */
	char pub_topic[MQ_NAME_MAX + 1];
	bool subscribed, closing;
	unsigned char *in;              /* read, not yet a whole frame */
	size_t inlen, max;
	char *msg;                      /* a text message in fragments */
	size_t msglen;
	bool in_msg;
};

static void
ws_free(struct ws *w)
{
	if (w->subscribed)
		mq_http_stream_close(&w->st);
	mq_pub_close(w->pub);
	mq_spool_close(w->sp);
	mq_http_grant_free(w->grant);
	free(w->spool);
	free(w->in);
	free(w->msg);
	free(w);
}

/* A frame in one write: its header and payload apart would wait for
 * each other under Nagle's algorithm. */
static int
send_frame(struct ws *w, int op, const void *data, size_t len)
{
	unsigned char h[10];
	struct iovec v[2] = { { h, mq_ws_header(h, op, len) },
	    { (void *)data, len } };
	return mq_write_all(w->fd, v, 2);
}

/* A close frame: its code and, if given, a reason (at most 123 bytes,
 * as a control frame's payload is at most 125). */
static int
send_close(struct ws *w, int code, const char *reason)
{
	unsigned char c[125] = { (unsigned char)(code >> 8),
	    (unsigned char)code };
	size_t n = reason ? strnlen(reason, sizeof c - 2) : 0;
	memcpy(c + 2, reason ? reason : "", n);
	w->closing = true;
	return send_frame(w, MQ_WS_CLOSE, c, 2 + n);
}

/* Whether the token has run out: the session is then closed. */
static bool
expired(struct ws *w)
{
	if (mq_now() < w->until)
		return false;
	send_close(w, 1008, "token expired");
	return true;
}

/* o as a text frame (o is taken). */
static int
send_json(struct ws *w, json_t *o)
{
	char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	int rc = t ? send_frame(w, MQ_WS_TEXT, t, strlen(t)) : -1;
	free(t);
	return rc;
}

/* The answer to a request: its op, its id echoed, and what more. */
static json_t *
answer(const char *op, json_t *id)
{
	json_t *o = json_pack("{s:s}", "op", op);
	if (o && id)
		json_object_set(o, "id", id);
	return o;
}

static int
send_error(struct ws *w, json_t *id, int status, const char *msg)
{
	json_t *o = answer("error", id);
	json_object_set_new(o, "status", json_integer(status));
	json_object_set_new(o, "error", json_string(msg));
	return send_json(w, o);
}

static int
send_failed(struct ws *w, json_t *id)
{
	return send_error(w, id, mq_http_status_of(mq_errcode()), mq_errmsg());
}

static int
forbidden(struct ws *w, json_t *id, const char *what, const char *topic)
{
	char msg[MQ_NAME_MAX * 2 + 64];
	snprintf(msg, sizeof msg, "the token does not allow %s on %s", what,
	    topic);
	return send_error(w, id, MHD_HTTP_FORBIDDEN, msg);
}

static const char *
str(json_t *o, const char *name)
{
	return json_string_value(json_object_get(o, name));
}

static int
op_publish(struct ws *w, json_t *req, json_t *id)
{
	const char *topic = str(req, "topic");
	json_t *doc = json_object_get(req, "messages"), *ids = NULL;
	if (!doc)
		doc = json_object_get(req, "message");
	if (!topic || mq_name_check("topic", topic) < 0 || !doc)
		return send_error(w, id, MHD_HTTP_BAD_REQUEST, "publish takes a "
		    "\"topic\" and a \"message\" or \"messages\"");
	const char *sy = str(req, "sync");
	enum mq_sync sync = MQ_SYNC_BATCH;
	if (sy && mq_sync_parse(sy, &sync) < 0)
		return send_error(w, id, MHD_HTTP_BAD_REQUEST, "sync: each, batch "
		    "or none");
	if (!mq_http_allowed(w->grant, MQ_HTTP_PUBLISH, topic, NULL))
		return forbidden(w, id, "publish", topic);
	/* A session publishes to one topic mostly: its publisher is kept. */
	if (!w->pub || strcmp(w->pub_topic, topic)) {
		mq_pub_close(w->pub);
		snprintf(w->pub_topic, sizeof w->pub_topic, "%s", topic);
		w->pub = mq_pub_open(w->sp, topic, 0);
	}
	if (!w->pub || mq_http_publish_doc(w->pub, doc, sync, &ids) < 0)
		return send_failed(w, id);
	json_t *o = answer("published", id);
	json_object_set_new(o, "ids", ids);
	return send_json(w, o);
}

static int
op_subscribe(struct ws *w, json_t *req, json_t *id)
{
	const char *topic = str(req, "topic"), *group = str(req, "group");
	json_t *cr = json_object_get(req, "credit");
	double lease = 0;
	if (w->subscribed)
		return send_error(w, id, MHD_HTTP_CONFLICT, "one subscription a "
		    "connection");
	if (!topic || !group || mq_name_check("topic", topic) < 0 ||
	    mq_name_check("group", group) < 0)
		return send_error(w, id, MHD_HTTP_BAD_REQUEST, "subscribe takes "
		    "a \"topic\" and a \"group\"");
	if (cr && !json_is_integer(cr))
		return send_error(w, id, MHD_HTTP_BAD_REQUEST, "credit: a number");
	if (!mq_http_allowed(w->grant, MQ_HTTP_CONSUME, topic, group))
		return forbidden(w, id, "consume", topic);
	json_int_t credit = cr ? json_integer_value(cr) : 10;
	if (mq_http_seconds(req, "lease", &lease) < 0 || credit < 1 ||
	    credit > 1000 || mq_http_stream_open(&w->st, w->sp, topic, group,
	    (unsigned)credit, lease, w->fd) < 0)
		return credit < 1 || credit > 1000 ? send_error(w, id,
		    MHD_HTTP_BAD_REQUEST, "credit: a number from 1 to 1000") :
		    send_failed(w, id);
	w->subscribed = true;
	return send_json(w, answer("subscribed", id));
}

/* ack, nack and extend: the receipt names its topic and group. */
static int
op_settle(struct ws *w, const char *op, json_t *req, json_t *id)
{
	const char *rc = str(req, "receipt");
	char topic[MQ_NAME_MAX + 1], group[MQ_NAME_MAX + 1];
	double secs = 0;
	if (!rc || sscanf(rc, "%200[^/]/%200[^/]/", topic, group) != 2)
		return send_error(w, id, MHD_HTTP_BAD_REQUEST, "a \"receipt\" as "
		    "a message carries it");
	if (!mq_http_allowed(w->grant, MQ_HTTP_CONSUME, topic, group))
		return forbidden(w, id, "consume", topic);
	if (mq_http_seconds(req, strcmp(op, "extend") ? "delay" : "lease",
	    &secs) < 0 || mq_http_settle_one(w->sp, topic, group, op, rc,
	    secs) < 0)
		return send_failed(w, id);
	if (w->subscribed && strcmp(op, "extend"))
		mq_http_stream_settled(&w->st, rc);
	json_t *o = answer(!strcmp(op, "ack") ? "acked" : !strcmp(op, "nack") ?
	    "nacked" : "extended", id);
	json_object_set_new(o, "receipt", json_string(rc));
	return send_json(w, o);
}

/* One text message from the client: a request. */
static int
request(struct ws *w, const char *text, size_t len)
{
	json_error_t e;
	json_t *req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
	json_t *id = json_object_get(req, "id");
	const char *op = str(req, "op");
	/* Every message counts against the rate, a bad one too. */
	int rc = mq_http_rate_take(w->srv, w->who) < 0 ? send_error(w, id,
	    MHD_HTTP_TOO_MANY_REQUESTS, mq_errmsg()) :
	    !json_is_object(req) ? send_error(w, NULL, MHD_HTTP_BAD_REQUEST,
	    "a request is a JSON object with an \"op\"") :
	    !op ? send_error(w, id, MHD_HTTP_BAD_REQUEST, "no \"op\"") :
	    !strcmp(op, "publish") ? op_publish(w, req, id) :
	    !strcmp(op, "subscribe") ? op_subscribe(w, req, id) :
	    !strcmp(op, "ack") || !strcmp(op, "nack") || !strcmp(op, "extend") ?
	    op_settle(w, op, req, id) : send_error(w, id, MHD_HTTP_BAD_REQUEST,
	    "unknown op");
	json_decref(req);
	return rc;
}

/* A frame from the client: 0 to go on, -1 to end the session. */
static int
frame(struct ws *w, const struct mq_ws_frame *f)
{
	switch (f->opcode) {
	case MQ_WS_PING:
		return send_frame(w, MQ_WS_PONG, f->payload, f->len);
	case MQ_WS_PONG:
		return 0;
	case MQ_WS_CLOSE:
		if (!w->closing)
			send_frame(w, MQ_WS_CLOSE, f->payload, f->len < 2 ? f->len :
			    2);
		return -1;
	case MQ_WS_BINARY:
		send_close(w, 1003, NULL);      /* the requests are text */
		return -1;
	}
	if ((f->opcode == MQ_WS_CONT) != w->in_msg || w->msglen + f->len >
	    w->max) {
		send_close(w, w->msglen + f->len > w->max ? 1009 : 1002, NULL);
		return -1;
	}
	char *m = realloc(w->msg, w->msglen + f->len + 1);
	if (!m)
		return -1;
	memcpy(m + w->msglen, f->payload, f->len);
	w->msg = m;
	w->msglen += f->len;
	w->in_msg = !f->fin;
	if (w->in_msg)
		return 0;
	int rc = request(w, w->msg, w->msglen);
	w->msglen = 0;
	return rc;
}

/* Reads what the client sent and answers its whole frames: -1 when the
 * session ends (the client closed, or broke the protocol). */
static int
read_frames(struct ws *w)
{
	size_t cap = w->max + 14;
	ssize_t n = recv(w->fd, w->in + w->inlen, cap - w->inlen, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n > 0)
		w->inlen += (size_t)n;
	for (;;) {
		struct mq_ws_frame f;
		int close_code;
		ssize_t took = mq_ws_parse(w->in, w->inlen, w->max, &f,
		    &close_code);
		if (took < 0) {
			send_close(w, close_code, NULL);
			return -1;
		}
		if (took == 0)
			return 0;
		int rc = expired(w) ? -1 : frame(w, &f);
		memmove(w->in, w->in + took, w->inlen - (size_t)took);
		w->inlen -= (size_t)took;
		if (rc < 0)
			return -1;
	}
}

static int
deliver(struct ws *w, struct mq_msg *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	int rc = fp ? 0 : -1;
	if (fp) {
		fputs("{\"op\":\"message\",\"message\":", fp);
		rc = mq_msg_write_json(m, fp);
		fputc('}', fp);
		if (fclose(fp) != 0)
			rc = -1;
	}
	mq_msg_free(m);
	if (rc == 0)
		rc = send_frame(w, MQ_WS_TEXT, buf, len);
	free(buf);
	return rc;
}

static void *
session(void *arg)
{
	struct ws *w = arg;
	struct timeval tv = { 30, 0 };
	/* A client that stops reading holds the session 30 s at most. */
	setsockopt(w->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	/* (Over TLS the socket is a socketpair, where this does nothing.) */
	setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) & ~O_NONBLOCK);
	if (!(w->sp = mq_spool_open(w->spool, 0)))
		send_close(w, 1011, NULL);
	while (w->sp && !w->closing) {
		if (mq_http_stopped(w->stop_fd)) {
			send_close(w, 1001, NULL);
			break;
		}
		if (expired(w))
			break;
		if (w->inlen && read_frames(w) < 0)   /* what came with the upgrade */
			break;
		struct mq_msg *m;
		struct pollfd p[2] = { { .fd = w->fd, .events = POLLIN },
		    { .fd = w->stop_fd, .events = POLLIN } };
		/* A second, or until the token ends if that is sooner. */
		double wait = fmax(0, fmin(1.0, w->until - mq_now()));
		int got = 0;
		if (w->subscribed)
			got = mq_http_stream_next(&w->st, wait, &m);
		else
			poll(p, 2, (int)ceil(wait * 1000));
		/* One claimed as the token ran out is given back, not sent. */
		if (got == 1 && expired(w)) {
			mq_msg_free(m);
			break;
		}
		if (got == 1 && deliver(w, m) < 0)
			break;
		if (got < 0 && send_failed(w, NULL) < 0)
			break;
		if (poll(p, 1, 0) > 0 && read_frames(w) < 0)
			break;
	}
	MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
	struct mq_http_server *srv = w->srv;
	ws_free(w);
	mq_http_session_end(srv);
	return NULL;
}

static void
on_upgrade(void *cls, struct MHD_Connection *conn, void *req,
    const char *extra, size_t extra_len, MHD_socket sock,
    struct MHD_UpgradeResponseHandle *urh)
{
	struct ws *w = cls;
	pthread_t t;
	pthread_attr_t a;
	(void)conn;
	(void)req;
	w->fd = sock;
	w->urh = urh;
	if (extra_len > w->max + 14)
		extra_len = 0;          /* more than a frame: a broken client */
	memcpy(w->in, extra, extra_len);
	w->inlen = extra_len;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	mq_http_session_start(w->srv);
	if (pthread_create(&t, &a, session, w) != 0) {
		struct mq_http_server *srv = w->srv;
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		ws_free(w);
		mq_http_session_end(srv);
	}
	pthread_attr_destroy(&a);
}

/* Whether header name holds token among its comma-separated values. */
static bool
has_token(struct mq_http_req *r, const char *name, const char *token)
{
	const char *v = mq_http_header(r, name);
	size_t tl = strlen(token);
	for (const char *p = v; p && *p; p += strcspn(p, ",")) {
		p += strspn(p, ", \t");
		size_t l = strcspn(p, ", \t");
		if (l == tl && !strncasecmp(p, token, tl))
			return true;
	}
	return false;
}

int
mq_http_websocket(struct mq_http_req *r)
{
	const char *key = mq_http_header(r, "Sec-WebSocket-Key"),
	    *ver = mq_http_header(r, "Sec-WebSocket-Version");
	char accept[29];
	if (!has_token(r, MHD_HTTP_HEADER_UPGRADE, "websocket") ||
	    !has_token(r, MHD_HTTP_HEADER_CONNECTION, "upgrade"))
		return mq_http_error(r, MHD_HTTP_UPGRADE_REQUIRED, "a WebSocket "
		    "upgrade is expected here");
	if (!ver || strcmp(ver, "13"))
		return mq_http_error(r, MHD_HTTP_UPGRADE_REQUIRED, "WebSocket "
		    "version 13 only");
	if (!key || mq_ws_accept_key(key, accept) < 0)
		return mq_http_error(r, MHD_HTTP_BAD_REQUEST, "a bad "
		    "Sec-WebSocket-Key");
	struct ws *w = calloc(1, sizeof *w);
	size_t max = mq_http_max_body(r->srv) < WS_MESSAGE_MAX ?
	    mq_http_max_body(r->srv) : WS_MESSAGE_MAX;
	if (!w || !(w->spool = strdup(mq_spool_path(r->sp))) ||
	    !(w->in = malloc(max + 14))) {
		if (w)
			free(w->spool);
		free(w);
		return mq_http_error(r, 500, "out of memory");
	}
	w->srv = r->srv;
	w->max = max;
	w->stop_fd = r->stop_fd;
	w->fd = -1;
	w->grant = r->grant;            /* the session's from now on */
	w->until = mq_http_grant_until(r->grant);
	r->grant = NULL;
	snprintf(w->who, sizeof w->who, "%s", r->who);
	struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade,
	    w);
	if (!resp) {
		ws_free(w);
		return mq_http_error(r, 500, "out of memory");
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	r->status = MHD_HTTP_SWITCHING_PROTOCOLS;
	enum MHD_Result ok = MHD_queue_response(r->conn,
	    MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	return ok == MHD_YES ? 0 : -1;
}
