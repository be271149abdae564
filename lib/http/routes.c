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

enum op {
	HEALTHZ, METRICS, WEBSOCKET, TOPICS, TOPIC_GET, TOPIC_PUT, PUBLISH,
	MESSAGE, GROUPS, GROUP_GET, GROUP_PUT, RECEIVE, EVENTS, ACK, NACK,
	EXTEND, DEAD, DEAD_ONE, REDRIVE, PURGE,
};

/* A route: its method, and its path as segments, "{}" where a name goes
 * (args says which kind, in order). */
struct route {
	const char *method;
	const char *path[8];
	enum arg args[3];
	enum op op;
};

#define T "v1", "topics", "{}"
#define TG T, "groups", "{}"
static const struct route routes[] = {
	{ "GET", { "healthz" }, { NONE }, HEALTHZ },
	{ "GET", { "metrics" }, { NONE }, METRICS },
	{ "GET", { "v1", "ws" }, { NONE }, WEBSOCKET },
	{ "GET", { "v1", "topics" }, { NONE }, TOPICS },
	{ "GET", { T }, { TOPIC }, TOPIC_GET },
	{ "PUT", { T }, { TOPIC }, TOPIC_PUT },
	{ "POST", { T, "messages" }, { TOPIC }, PUBLISH },
	{ "GET", { T, "messages", "{}" }, { TOPIC, ID }, MESSAGE },
	{ "GET", { T, "groups" }, { TOPIC }, GROUPS },
	{ "GET", { TG }, { TOPIC, GROUP }, GROUP_GET },
	{ "PUT", { TG }, { TOPIC, GROUP }, GROUP_PUT },
	{ "GET", { TG, "messages" }, { TOPIC, GROUP }, RECEIVE },
	{ "GET", { TG, "events" }, { TOPIC, GROUP }, EVENTS },
	{ "POST", { TG, "ack" }, { TOPIC, GROUP }, ACK },
	{ "POST", { TG, "nack" }, { TOPIC, GROUP }, NACK },
	{ "POST", { TG, "extend" }, { TOPIC, GROUP }, EXTEND },
	{ "GET", { TG, "dead" }, { TOPIC, GROUP }, DEAD },
	{ "GET", { TG, "dead", "{}" }, { TOPIC, GROUP, ID }, DEAD_ONE },
	{ "POST", { TG, "dead", "redrive" }, { TOPIC, GROUP }, REDRIVE },
	{ "POST", { TG, "dead", "purge" }, { TOPIC, GROUP }, PURGE },
};
#undef TG
#undef T

static int
serve(struct mq_http_req *r, enum op op, const char *const a[3])
{
	switch (op) {
	case HEALTHZ: return mq_http_send(r, 200, "text/plain", "ok\n", 3);
	case METRICS: return mq_http_metrics(r);
	case WEBSOCKET: return mq_http_websocket(r);
	case TOPICS: return mq_http_topics(r);
	case TOPIC_GET: return mq_http_topic(r, a[0]);
	case TOPIC_PUT: return mq_http_topic_create(r, a[0]);
	case PUBLISH: return mq_http_publish(r, a[0]);
	case MESSAGE: return mq_http_message(r, a[0], a[1]);
	case GROUPS: return mq_http_groups(r, a[0]);
	case GROUP_GET: return mq_http_group(r, a[0], a[1]);
	case GROUP_PUT: return mq_http_group_create(r, a[0], a[1]);
	case RECEIVE: return mq_http_receive(r, a[0], a[1]);
	case EVENTS: return mq_http_events(r, a[0], a[1]);
	case ACK: return mq_http_settle(r, a[0], a[1], "ack");
	case NACK: return mq_http_settle(r, a[0], a[1], "nack");
	case EXTEND: return mq_http_settle(r, a[0], a[1], "extend");
	case DEAD: return mq_http_dead(r, a[0], a[1]);
	case DEAD_ONE: return mq_http_dead_one(r, a[0], a[1], a[2]);
	case REDRIVE: return mq_http_dead_act(r, a[0], a[1], "redrive");
	case PURGE: return mq_http_dead_act(r, a[0], a[1], "purge");
	}
	return mq_http_error(r, 500, "no such route");
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
    const char *args[3])
{
	size_t n = 0, a = 0;
	while (n < 8 && rt->path[n])
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
    const char *args[3])
{
	for (size_t i = 0; i < 3 && rt->args[i] != NONE; i++) {
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
	const char *args[3] = { NULL, NULL, NULL };
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
	return serve(r, hit->op, args);
}
