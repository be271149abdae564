/*
 * routes.c: which route a request takes (mq-http(1), ROUTES).  A path is
 * cut at '/' into at most 8 segments; a segment that names a topic or a
 * group is checked as the tools check a name (mq_name_check) before any
 * route sees it, so no route builds a path from an unchecked one.
 */
#include <string.h>
#include <sysexits.h>

#include <microhttpd.h>

#include "http.h"

enum arg { NONE, TOPIC, GROUP, ID };

/* A route: its method, and its path as segments, "{}" where a name goes
 * (the args say which kinds, in order). */
struct route {
	const char *method;
	const char *path[7];
	enum arg args[2];
	int (*fn)(struct mq_http_req *, const char *, const char *);
	const char *how;                /* mq_http_settle's */
};

static int
topics(struct mq_http_req *r, const char *a, const char *b)
{
	(void)a;
	(void)b;
	return mq_http_topics(r);
}

static int
metrics(struct mq_http_req *r, const char *a, const char *b)
{
	(void)a;
	(void)b;
	return mq_http_metrics(r);
}

static int
healthz(struct mq_http_req *r, const char *a, const char *b)
{
	(void)a;
	(void)b;
	return mq_http_send(r, MHD_HTTP_OK, "text/plain", "ok\n", 3);
}

static int
websocket(struct mq_http_req *r, const char *a, const char *b)
{
	(void)a;
	(void)b;
	return mq_http_websocket(r);
}

static int
topic(struct mq_http_req *r, const char *t, const char *b)
{
	(void)b;
	return mq_http_topic(r, t);
}

static int
topic_create(struct mq_http_req *r, const char *t, const char *b)
{
	(void)b;
	return mq_http_topic_create(r, t);
}

static int
publish(struct mq_http_req *r, const char *t, const char *b)
{
	(void)b;
	return mq_http_publish(r, t);
}

static int
groups(struct mq_http_req *r, const char *t, const char *b)
{
	(void)b;
	return mq_http_groups(r, t);
}

static int settle(struct mq_http_req *, const char *, const char *);

static const struct route routes[] = {
	{ "GET", { "healthz" }, { NONE }, healthz, NULL },
	{ "GET", { "metrics" }, { NONE }, metrics, NULL },
	{ "GET", { "v1", "topics" }, { NONE }, topics, NULL },
	{ "GET", { "v1", "topics", "{}" }, { TOPIC }, topic, NULL },
	{ "PUT", { "v1", "topics", "{}" }, { TOPIC }, topic_create, NULL },
	{ "POST", { "v1", "topics", "{}", "messages" }, { TOPIC }, publish,
	    NULL },
	{ "GET", { "v1", "topics", "{}", "groups" }, { TOPIC }, groups, NULL },
	{ "GET", { "v1", "topics", "{}", "groups", "{}" }, { TOPIC, GROUP },
	    mq_http_group, NULL },
	{ "PUT", { "v1", "topics", "{}", "groups", "{}" }, { TOPIC, GROUP },
	    mq_http_group_create, NULL },
	{ "GET", { "v1", "topics", "{}", "groups", "{}", "messages" },
	    { TOPIC, GROUP }, mq_http_receive, NULL },
	{ "GET", { "v1", "topics", "{}", "groups", "{}", "events" },
	    { TOPIC, GROUP }, mq_http_events, NULL },
	{ "GET", { "v1", "ws" }, { NONE }, websocket, NULL },
	{ "POST", { "v1", "topics", "{}", "groups", "{}", "ack" },
	    { TOPIC, GROUP }, settle, "ack" },
	{ "POST", { "v1", "topics", "{}", "groups", "{}", "nack" },
	    { TOPIC, GROUP }, settle, "nack" },
	{ "POST", { "v1", "topics", "{}", "groups", "{}", "extend" },
	    { TOPIC, GROUP }, settle, "extend" },
	{ "GET", { "v1", "topics", "{}", "messages", "{}" }, { TOPIC, ID },
	    mq_http_message, NULL },
};

/* The route being served: settle needs its how. */
static _Thread_local const struct route *current;

static int
settle(struct mq_http_req *r, const char *t, const char *g)
{
	return mq_http_settle(r, t, g, current->how);
}

static void
cut(struct mq_http_req *r)
{
	char *save = NULL;
	r->nseg = 0;
	for (char *s = strtok_r(r->cut, "/", &save); s;
	    s = strtok_r(NULL, "/", &save)) {
		if (r->nseg == sizeof r->seg / sizeof *r->seg) {
			r->nseg = 0;    /* too deep: no route has it */
			return;
		}
		r->seg[r->nseg++] = s;
	}
}

/* Whether the path's segments fit the route's, the names in args[]. */
static bool
fits(const struct mq_http_req *r, const struct route *rt,
    const char *args[2])
{
	size_t n = 0, a = 0;
	while (n < 7 && rt->path[n])
		n++;
	if (n != r->nseg)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(rt->path[i], "{}"))
			args[a++] = r->seg[i];
		else if (strcmp(rt->path[i], r->seg[i]))
			return false;
	}
	return true;
}

/* A name in the path that is no name: 400, or 404 for an id. */
static int
check_args(struct mq_http_req *r, const struct route *rt,
    const char *args[2])
{
	for (size_t i = 0; i < 2 && rt->args[i] != NONE; i++) {
		if (rt->args[i] == ID ? !mq_is_id(args[i], strlen(args[i])) :
		    mq_name_check(rt->args[i] == TOPIC ? "topic" : "group",
		    args[i]) < 0)
			return rt->args[i] == ID ? mq_http_error(r,
			    MHD_HTTP_NOT_FOUND, "no message id '%.40s'", args[i]) :
			    mq_http_error(r, MHD_HTTP_BAD_REQUEST, "%s",
			    mq_errmsg());
	}
	return 1;
}

int
mq_http_route(struct mq_http_req *r)
{
	const char *args[2] = { NULL, NULL };
	const struct route *hit = NULL;
	bool path_known = false;
	if (!(r->cut = strdup(r->path)))
		return mq_http_error(r, 500, "out of memory");
	cut(r);
	for (size_t i = 0; i < sizeof routes / sizeof *routes && !hit; i++) {
		if (!fits(r, &routes[i], args))
			continue;
		path_known = true;
		if (!strcmp(routes[i].method, r->method) ||
		    (!strcmp(r->method, "HEAD") &&
		    !strcmp(routes[i].method, "GET")))
			hit = &routes[i];
	}
	if (!hit)
		return path_known ? mq_http_error(r,
		    MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not served at %s",
		    r->method, r->path) : mq_http_error(r, MHD_HTTP_NOT_FOUND,
		    "no route %s", r->path);
	int rc = check_args(r, hit, args);
	if (rc != 1)
		return rc;
	current = hit;
	return hit->fn(r, args[0], args[1]);
}
