/*
 * inforoute.c: what mq-http(1) tells and makes besides messages: topics
 * and groups (list, info, create), where a message is, and /metrics.
 * Each answer is what the tool would print with --json (or mq-stat
 * --prometheus), written by the same out/ function.  A token sees the
 * topics it has a scope on; creating a topic is an admin's, creating a
 * group its consumer's (as mq-sub does), /metrics the spool admin's.
 *
 * A group's settings (its filter and match conditions, lease, ...) and
 * where a message is in it are its consumers' and the topic's admins'
 * to see: a filter may say what a consumer looks for.  The list of a
 * topic's groups holds those the token may see; any other group is 403,
 * there or not; a message's place lists those groups only.  The topic's
 * information still names every group with its counts, as mq-topic info
 * does.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <microhttpd.h>

#include "http.h"

static int
visible(struct mq_http_req *r, const char *topic)
{
	if (mq_http_allowed_any(r->grant, topic))
		return 1;
	mq_http_error(r, MHD_HTTP_FORBIDDEN, "the token allows nothing on "
	    "topic '%s'", topic);
	return 0;
}

static int
write_topics(struct mq_http_req *r, FILE *fp, void *arg)
{
	char **names;
	size_t n, shown = 0;
	(void)arg;
	if (mq_topic_list(r->sp, &names, &n) < 0)
		return -1;
	struct mq_topic_conf *confs = calloc(n ? n : 1, sizeof *confs);
	const char **keep = calloc(n ? n : 1, sizeof *keep);
	int rc = confs && keep ? 0 : mq_err_sys("calloc");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (!mq_http_allowed_any(r->grant, names[i]) ||
		    mq_topic_conf_read(r->sp, names[i], &confs[shown]) < 0)
			continue;       /* not the token's, or gone meanwhile */
		keep[shown++] = names[i];
	}
	if (rc == 0)
		rc = mq_topic_list_write_json(keep, confs, shown, fp);
	free(keep);
	free(confs);
	mq_strv_free(names, n);
	return rc;
}

int
mq_http_topics(struct mq_http_req *r)
{
	return mq_http_stream_json(r, write_topics, NULL);
}

static int
write_topic(struct mq_http_req *r, FILE *fp, void *arg)
{
	struct mq_topic_info in;
	if (mq_topic_info(r->sp, arg, &in) < 0)
		return -1;
	int rc = mq_topic_info_write_json(&in, fp);
	mq_topic_info_free(&in);
	return rc;
}

int
mq_http_topic(struct mq_http_req *r, const char *topic)
{
	if (!visible(r, topic))
		return 0;
	return mq_http_stream_json(r, write_topic, (void *)topic);
}

/* The body of a PUT: a JSON object, or nothing ({}). */
static json_t *
put_body(struct mq_http_req *r)
{
	json_error_t e;
	json_t *doc = r->len ? json_loadb(r->body, r->len, 0, &e) :
	    json_object();
	if (!doc || !json_is_object(doc)) {
		json_decref(doc);
		mq_http_error(r, MHD_HTTP_BAD_REQUEST, "the body is a JSON object "
		    "of settings, or empty");
		return NULL;
	}
	return doc;
}

static int
count_of(json_t *doc, const char *name, unsigned long max, unsigned long *out)
{
	json_t *v = json_object_get(doc, name);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    (unsigned long)json_integer_value(v) > max)
		return mq_err(EX_DATAERR, "%s: a number from 1 to %lu", name, max);
	*out = (unsigned long)json_integer_value(v);
	return 0;
}

static int
created(struct mq_http_req *r, int made)
{
	const char *text = made ? "{\"created\":true}" : "{\"created\":false}";
	return mq_http_json(r, made ? MHD_HTTP_CREATED : MHD_HTTP_OK, text,
	    strlen(text));
}

int
mq_http_topic_create(struct mq_http_req *r, const char *topic)
{
	if (!mq_http_permit(r, MQ_HTTP_ADMIN, topic, NULL))
		return 0;
	json_t *doc = put_body(r);
	if (!doc)
		return 0;
	struct mq_topic_conf c;
	mq_topic_conf_default(&c);
	unsigned long parts = c.partitions, size = c.max_message_size;
	int rc = count_of(doc, "partitions", MQ_PARTITIONS_MAX, &parts) < 0 ||
	    count_of(doc, "max_message_size", MQ_MESSAGE_MAX_LIMIT, &size) < 0 ||
	    mq_http_seconds(doc, "retention", &c.retention) < 0 ||
	    mq_http_seconds(doc, "ttl", &c.ttl) < 0 ||
	    mq_http_seconds(doc, "dedup_window", &c.dedup_window) < 0 ? -1 : 0;
	json_decref(doc);
	c.partitions = (unsigned)parts;
	c.max_message_size = size;
	if (rc == 0)
		rc = mq_topic_create(r->sp, topic, &c);
	return rc < 0 ? mq_http_failed(r) : created(r, rc);
}

struct groups_ctx {
	const char *topic, *group;      /* group NULL: all of topic's */
};

static int
write_groups(struct mq_http_req *r, FILE *fp, void *arg)
{
	struct groups_ctx *c = arg;
	struct mq_group_ref *refs;
	size_t n, shown = 0;
	struct mq_topic_conf tc;
	if (mq_topic_conf_read(r->sp, c->topic, &tc) < 0 ||
	    mq_group_list(r->sp, c->topic, &refs, &n) < 0)
		return -1;
	struct mq_group_info *infos = calloc(n ? n : 1, sizeof *infos);
	int rc = infos ? 0 : mq_err_sys("calloc");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (refs[i].wildcard || strcmp(refs[i].topic, c->topic) ||
		    (c->group && strcmp(refs[i].group, c->group)) ||
		    !mq_http_allowed_group(r->grant, c->topic, refs[i].group))
			continue;
		if (mq_group_info(r->sp, c->topic, refs[i].group,
		    &infos[shown]) == 0)
			shown++;
		else if (mq_errcode() != EX_NOINPUT)
			rc = -1;        /* (gone meanwhile: left out) */
	}
	if (rc == 0 && c->group && !shown)
		rc = mq_err(EX_NOINPUT, "no group '%s' on topic '%s'", c->group,
		    c->topic);
	if (rc == 0)
		rc = mq_group_info_write_json(infos, shown, fp);
	for (size_t i = 0; i < shown; i++)
		mq_group_info_free(&infos[i]);
	free(infos);
	mq_group_ref_free(refs, n);
	return rc;
}

int
mq_http_groups(struct mq_http_req *r, const char *topic)
{
	struct groups_ctx c = { topic, NULL };
	if (!visible(r, topic))
		return 0;
	return mq_http_stream_json(r, write_groups, &c);
}

int
mq_http_group(struct mq_http_req *r, const char *topic, const char *group)
{
	struct groups_ctx c = { topic, group };
	if (!mq_http_permit_group(r, topic, group))
		return 0;
	return mq_http_stream_json(r, write_groups, &c);
}

/* A group's settings from a PUT body (strings borrowed from doc). */
static int
group_conf(json_t *doc, struct mq_group_conf *g)
{
	json_t *eo = json_object_get(doc, "exactly_once"),
	    *ord = json_object_get(doc, "ordered"),
	    *fs = json_object_get(doc, "from_start"),
	    *flt = json_object_get(doc, "filter");
	unsigned long attempts = g->max_attempts;
	if ((eo && !json_is_boolean(eo)) || (ord && !json_is_boolean(ord)) ||
	    (fs && !json_is_boolean(fs)) || (flt && !json_is_string(flt)))
		return mq_err(EX_DATAERR, "exactly_once, ordered and from_start "
		    "are true or false, filter a string");
	g->exactly_once = json_is_true(eo);
	g->ordered = json_is_true(ord);
	g->from_start = json_is_true(fs);
	g->filter = flt ? json_string_value(flt) : NULL;
	if (count_of(doc, "max_attempts", 1000000, &attempts) < 0 ||
	    mq_http_seconds(doc, "lease", &g->lease) < 0 ||
	    mq_http_seconds(doc, "session", &g->session) < 0)
		return -1;
	g->max_attempts = (unsigned)attempts;
	return 0;
}

/* Made (1), or there with the same settings (0); other settings are a
 * conflict (EX_CANTCREAT). */
static int
subscribe(mq_spool *sp, const char *topic, const char *group,
    const struct mq_group_conf *g)
{
	struct mq_topic_conf tc;
	struct mq_group_info in;
	if (mq_topic_conf_read(sp, topic, &tc) < 0)
		return -1;
	if (mq_group_exists(sp, topic, group) != 1)
		return mq_group_subscribe(sp, topic, group, g);
	if (mq_group_info(sp, topic, group, &in) < 0)
		return -1;
	const char *d = mq_group_conf_differs(&in, g);
	mq_group_info_free(&in);
	return d ? mq_err(EX_CANTCREAT, "group '%s' exists with another %s",
	    group, d) : 0;
}

int
mq_http_group_create(struct mq_http_req *r, const char *topic,
    const char *group)
{
	if (!mq_http_permit(r, MQ_HTTP_CONSUME, topic, group))
		return 0;
	json_t *doc = put_body(r);
	if (!doc)
		return 0;
	struct mq_group_conf g;
	mq_group_conf_default(&g);
	int rc = group_conf(doc, &g);
	if (rc == 0)
		rc = subscribe(r->sp, topic, group, &g);
	json_decref(doc);
	return rc < 0 ? mq_http_failed(r) : created(r, rc);
}

struct where_ctx {
	const char *topic, *id;
};

static int
write_where(struct mq_http_req *r, FILE *fp, void *arg)
{
	struct where_ctx *c = arg;
	struct mq_msg_where *w;
	size_t n, shown = 1;
	if (mq_msg_locate(r->sp, c->topic, c->id, &w, &n) < 0)
		return -1;
	/* The groups the token may see, after the first place without its
	 * group: where the message is in the topic. */
	struct mq_msg_where *keep = calloc(n + 1, sizeof *keep);
	int rc = keep ? 0 : mq_err_sys("calloc");
	if (keep && n) {
		keep[0] = w[0];
		keep[0].group = NULL;
	}
	for (size_t i = 0; keep && i < n; i++)
		if (w[i].group && mq_http_allowed_group(r->grant, c->topic,
		    w[i].group))
			keep[shown++] = w[i];
	if (rc == 0)
		rc = mq_msg_where_write_json(c->id, keep, n ? shown : 0, fp);
	free(keep);
	mq_msg_where_free(w, n);
	return rc;
}

int
mq_http_message(struct mq_http_req *r, const char *topic, const char *id)
{
	struct where_ctx c = { topic, id };
	if (!visible(r, topic))
		return 0;
	return mq_http_stream_json(r, write_where, &c);
}

int
mq_http_metrics(struct mq_http_req *r)
{
	struct mq_stat st;
	char *buf = NULL;
	size_t len = 0;
	if (!mq_http_permit(r, MQ_HTTP_ADMIN, NULL, NULL))
		return 0;
	if (mq_stat_read(r->sp, NULL, NULL, &st) < 0)
		return mq_http_failed(r);
	FILE *fp = open_memstream(&buf, &len);
	int rc = fp ? mq_stat_write_prometheus(&st, fp) : mq_err_sys("memory");
	if (fp && fclose(fp) != 0 && rc == 0)
		rc = mq_err_sys("memory stream");
	mq_stat_free(&st);
	rc = rc < 0 ? mq_http_failed(r) : mq_http_send(r, MHD_HTTP_OK,
	    "text/plain; version=0.0.4", buf, len);
	free(buf);
	return rc;
}
