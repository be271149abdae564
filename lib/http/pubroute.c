/*
 * pubroute.c: POST /v1/topics/T/messages (mq-http(1), Publishing).
 *
 * The body is one message as it is, or, by its Content-Type, JSON: one
 * object or an array of them (application/json), or an object a line
 * (application/x-ndjson).  Every message of a request is checked before
 * any is published, and they go in one mq_pub_send, as mq-pub(1) sends
 * a batch: a request publishes all of its messages or none.  With
 * ?replicas=N the answer waits until N peers have them, as mq-pub
 * --replicas does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

#include <microhttpd.h>

#include "http.h"

#define BATCH_MAX 100000

/* The messages of a request: what mq_pub_send takes, and the JSON they
 * were read from, which holds their strings. */
struct batch {
	struct mq_pub_msg *m;
	struct mq_header *h;            /* all their headers, in one array */
	size_t n, nh;
	json_t **docs;                  /* NDJSON: a document a line */
	size_t ndocs;
	double now;
};

static void
batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->ndocs; i++)
		json_decref(b->docs[i]);
	free(b->docs);
	free(b->m);
	for (size_t i = 0; i < b->nh; i++) {
		free(b->h[i].name);
		free(b->h[i].value);
	}
	free(b->h);
}

static int
headers(json_t *o, struct batch *b, struct mq_pub_msg *m)
{
	const char *name;
	json_t *v;
	if (!o)
		return 0;
	if (!json_is_object(o))
		return mq_err(EX_DATAERR, "headers: an object of strings");
	size_t n = json_object_size(o);
	struct mq_header *h = reallocarray(b->h, b->nh + n, sizeof *h);
	if (!h)
		return mq_err_sys("malloc");
	b->h = h;
	m->nheaders = 0;
	json_object_foreach(o, name, v) {
		char line[MQ_NAME_MAX * 8];
		struct mq_header one;
		if (!json_is_string(v))
			return mq_err(EX_DATAERR, "headers: %s is not a string",
			    name);
		snprintf(line, sizeof line, "%s: %s", name, json_string_value(v));
		if (mq_header_parse(line, &one) < 0)
			return -1;
		b->h[b->nh++] = one;
		m->nheaders++;
	}
	/* Pointers into b->h are set when every message is read: it moves. */
	return 0;
}

/* One message from a JSON object. */
static int
from_object(json_t *o, struct batch *b, struct mq_pub_msg *m, size_t *first_h)
{
	json_t *body = json_object_get(o, "body"),
	    *b64 = json_object_get(o, "body_base64"),
	    *key = json_object_get(o, "key"),
	    *part = json_object_get(o, "partition"),
	    *ikey = json_object_get(o, "idempotency_key");
	double delay = 0, ttl = 0;
	if (!json_is_object(o))
		return mq_err(EX_DATAERR, "a message is a JSON object");
	*m = (struct mq_pub_msg){ .partition = -1 };
	if (b64)
		return mq_err(EX_DATAERR, "body_base64 is not taken yet: send "
		    "the body as it is, one message a request");
	if (!json_is_string(body))
		return mq_err(EX_DATAERR, "body: a string");
	m->body = json_string_value(body);
	m->len = json_string_length(body);
	if (key && (!json_is_string(key) ||
	    mq_key_check(json_string_value(key)) < 0))
		return mq_err(EX_DATAERR, "key: a string of at most %d bytes "
		    "without control characters", MQ_NAME_MAX);
	m->key = key ? json_string_value(key) : NULL;
	if (part && (!json_is_integer(part) || json_integer_value(part) < 0 ||
	    json_integer_value(part) > MQ_PARTITIONS_MAX))
		return mq_err(EX_DATAERR, "partition: a number from 0");
	m->partition = part ? (int)json_integer_value(part) : -1;
	if (ikey && (!json_is_string(ikey) || !*json_string_value(ikey)))
		return mq_err(EX_DATAERR, "idempotency_key: a string");
	m->idempotency_key = ikey ? json_string_value(ikey) : NULL;
	if (mq_http_seconds(o, "delay", &delay) < 0 ||
	    mq_http_seconds(o, "ttl", &ttl) < 0)
		return -1;
	if (ttl > 0 && delay >= ttl)
		return mq_err(EX_DATAERR, "ttl (%g s) ends before the delay "
		    "(%g s): it would never be delivered", ttl, delay);
	m->deliver_at = delay > 0 ? b->now + delay : 0;
	m->expires = ttl > 0 ? b->now + ttl : 0;
	*first_h = b->nh;
	return headers(json_object_get(o, "headers"), b, m);
}

static int
grow(struct batch *b, size_t n)
{
	if (n > BATCH_MAX)
		return mq_err(EX_DATAERR, "more than %d messages in a request",
		    BATCH_MAX);
	struct mq_pub_msg *m = reallocarray(b->m, n ? n : 1, sizeof *m);
	if (!m)
		return mq_err_sys("malloc");
	b->m = m;
	return 0;
}

/* The messages of a JSON document: an object or an array of them. */
static int
from_json(json_t *doc, struct batch *b, size_t **first_h)
{
	size_t n = json_is_array(doc) ? json_array_size(doc) : 1, at = b->n;
	if (grow(b, at + n) < 0)
		return -1;
	size_t *fh = reallocarray(*first_h, at + n, sizeof *fh);
	if (!fh)
		return mq_err_sys("malloc");
	*first_h = fh;
	for (size_t i = 0; i < n; i++)
		if (from_object(json_is_array(doc) ? json_array_get(doc, i) : doc,
		    b, &b->m[at + i], &fh[at + i]) < 0)
			return mq_err(mq_errcode(), "message %zu: %s", at + i + 1,
			    mq_errmsg());
	b->n = at + n;
	return 0;
}

/* Each message's headers, once b->h has stopped moving. */
static void
link_headers(struct batch *b, const size_t *first_h)
{
	for (size_t i = 0; i < b->n; i++)
		b->m[i].headers = b->m[i].nheaders ? &b->h[first_h[i]] : NULL;
}

static json_t *
parse(const char *text, size_t len)
{
	json_error_t e;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
	if (!doc)
		mq_err(EX_DATAERR, "bad JSON at line %d: %s", e.line, e.text);
	return doc;
}

/* The body as JSON (ndjson: a document a line). */
static int
read_json(struct mq_http_req *r, struct batch *b, bool ndjson)
{
	size_t *first_h = NULL;
	int rc = 0;
	for (const char *p = r->body, *end = r->body + r->len; rc == 0 &&
	    p < end;) {
		const char *nl = ndjson ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (l == 0 || strspn(p, " \t\r") >= l) {
			p += l + 1;
			continue;
		}
		json_t **d = reallocarray(b->docs, b->ndocs + 1, sizeof *d);
		if (!d) {
			rc = mq_err_sys("malloc");
			break;
		}
		b->docs = d;
		if (!(d[b->ndocs] = parse(p, l)))
			rc = -1;
		else
			rc = from_json(d[b->ndocs++], b, &first_h);
		p += l + 1;
	}
	if (rc == 0 && b->n == 0)
		rc = mq_err(EX_DATAERR, "no message in the body");
	if (rc == 0)
		link_headers(b, first_h);
	free(first_h);
	return rc;
}

/* The body as it is: one message, its settings in the query. */
static int
read_raw(struct mq_http_req *r, struct batch *b)
{
	const char *key = mq_http_arg(r, "key"), *part = mq_http_arg(r,
	    "partition"), *ikey = mq_http_arg(r, "idempotency_key");
	json_t *o = json_object(), **d = malloc(sizeof *d);
	if (!o || !d) {
		json_decref(o);
		free(d);
		return mq_err_sys("malloc");
	}
	b->docs = d;
	d[b->ndocs++] = o;
	json_object_set_new(o, "body", json_stringn_nocheck(r->body ? r->body :
	    "", r->len));
	if (key)
		json_object_set_new(o, "key", json_string(key));
	if (ikey)
		json_object_set_new(o, "idempotency_key", json_string(ikey));
	if (part) {
		char *e;
		long k = strtol(part, &e, 10);
		json_object_set_new(o, "partition", *part && !*e ?
		    json_integer(k) : json_string(part));
	}
	for (const char *const *f = (const char *const[]){ "delay", "ttl",
	    NULL }; *f; f++)
		if (mq_http_arg(r, *f))
			json_object_set_new(o, *f, json_string(mq_http_arg(r, *f)));
	size_t *first_h = NULL;
	int rc = from_json(o, b, &first_h);
	if (rc == 0)
		link_headers(b, first_h);
	free(first_h);
	return rc;
}

static json_t *
ids_json(char (*ids)[MQ_ID_LEN + 1], size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(ids[i]));
	return a;
}

static int
answer(struct mq_http_req *r, char (*ids)[MQ_ID_LEN + 1], size_t n,
    unsigned replicas, unsigned got)
{
	json_t *o = json_pack("{s:o}", "ids", ids_json(ids, n));
	if (o && replicas)
		json_object_set_new(o, "replicas", json_integer(got));
	return mq_http_object(r, MHD_HTTP_OK, o);
}

/* Publishes the batch with p, all or nothing: 0 with the ids in *ids. */
static int
send_batch(mq_pub *p, struct batch *b, enum mq_sync sync,
    char (**ids)[MQ_ID_LEN + 1])
{
	if (!(*ids = calloc(b->n, sizeof **ids)))
		return mq_err_sys("malloc");
	return mq_pub_send(p, b->m, b->n, sync, *ids) == b->n ? 0 : -1;
}

int
mq_http_publish_doc(mq_pub *p, json_t *doc, enum mq_sync sync,
    json_t **ids_out)
{
	struct batch b = { .now = mq_now() };
	size_t *first_h = NULL;
	char (*ids)[MQ_ID_LEN + 1] = NULL;
	int rc = from_json(doc, &b, &first_h);
	if (rc == 0)
		link_headers(&b, first_h);
	free(first_h);
	if (rc == 0)
		rc = send_batch(p, &b, sync, &ids);
	if (rc == 0 && !(*ids_out = ids_json(ids, b.n)))
		rc = mq_err_sys("malloc");
	free(ids);
	batch_free(&b);
	return rc;
}

int
mq_http_publish(struct mq_http_req *r, const char *topic)
{
	if (!mq_http_permit(r, MQ_HTTP_PUBLISH, topic, NULL))
		return 0;
	const char *type = mq_http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	size_t tl = type ? strcspn(type, "; ") : 0;
	bool json = type && tl == 16 && !strncasecmp(type, "application/json",
	    16), ndjson = type && tl == 20 && !strncasecmp(type,
	    "application/x-ndjson", 20);
	double timeout = 10;
	const char *rs = mq_http_arg(r, "replicas");
	unsigned replicas = rs ? (unsigned)strtoul(rs, NULL, 10) : 0, got = 0;
	if (rs && (replicas < 1 || replicas > 64))
		return mq_http_error(r, MHD_HTTP_BAD_REQUEST, "replicas: a "
		    "number from 1 to 64");
	if (!mq_http_duration_arg(r, "replica_timeout", 600, &timeout))
		return 0;
	const char *sy = mq_http_arg(r, "sync");
	enum mq_sync sync = MQ_SYNC_BATCH;
	if (sy && mq_sync_parse(sy, &sync) < 0)
		return mq_http_error(r, MHD_HTTP_BAD_REQUEST, "sync: each, batch "
		    "or none");
	struct batch b = { .now = mq_now() };
	char (*ids)[MQ_ID_LEN + 1] = NULL;
	int rc = json || ndjson ? read_json(r, &b, ndjson) : read_raw(r, &b);
	/* A topic is made by an admin (PUT), not by a publish. */
	mq_pub *p = rc < 0 ? NULL : mq_pub_open(r->sp, topic, 0);
	if (!p || send_batch(p, &b, sync, &ids) < 0) {
		rc = strstr(mq_errmsg(), "larger than the topic's limit") ?
		    mq_http_error(r,
		    MHD_HTTP_CONTENT_TOO_LARGE, "%s", mq_errmsg()) :
		    mq_http_failed(r);
		goto out;
	}
	struct mq_replica_goal goal;
	if (replicas && (mq_pub_replica_goal(p, &goal) < 0 ||
	    mq_replicas_wait(r->sp, &goal, replicas, timeout, &got) < 0)) {
		rc = mq_http_failed(r);
		goto out;
	}
	rc = replicas && got < replicas ? mq_http_error(r,
	    MHD_HTTP_GATEWAY_TIMEOUT, "published, but only %u of %u replicas "
	    "have it after %g s", got, replicas, timeout) :
	    answer(r, ids, b.n, replicas, got);
out:
	mq_pub_close(p);
	free(ids);
	batch_free(&b);
	return rc;
}
