/*
 * dlqroute.c: a group's dead letters over HTTP (mq-http(1), Dead
 * letters): list and show for its consumers and the topic's admins,
 * redrive and purge for the admins, each as mq-dlq(1) does it.  A
 * redrive into another topic (to_topic) publishes there, to every group
 * of it: it takes the right to publish to that topic as well, which
 * admin of the first does not give (nor does admin of the second: an
 * admin makes topics and handles their dead letters, it does not
 * publish).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <microhttpd.h>

#include "http.h"

#define DLQ_IDS_MAX 10000

struct dlq_ctx {
	const char *topic, *group, *id;
};

static int
write_list(struct mq_http_req *r, FILE *fp, void *arg)
{
	struct dlq_ctx *c = arg;
	struct mq_dead *v;
	size_t n;
	if (mq_dlq_list(r->sp, c->topic, c->group, &v, &n) < 0)
		return -1;
	int rc = mq_dead_write_json(v, n, fp);
	mq_dead_free(v, n);
	return rc;
}

/* {"dead": [its record], "message": the message as mq-sub --json}. */
static int
write_one(struct mq_http_req *r, FILE *fp, void *arg)
{
	struct dlq_ctx *c = arg;
	struct mq_dead *v;
	struct mq_msg *m = NULL;
	size_t n, i;
	if (mq_dlq_list(r->sp, c->topic, c->group, &v, &n) < 0)
		return -1;
	for (i = 0; i < n && strcmp(v[i].id, c->id); i++)
		;
	int rc = i == n ? mq_err(EX_NOINPUT, "no dead letter %s", c->id) :
	    mq_dlq_read(r->sp, &v[i], &m);
	if (rc == 0) {
		fputs("{\"dead\":", fp);
		rc = mq_dead_write_json(&v[i], 1, fp);
		fputs(",\"message\":", fp);
		if (rc == 0)
			rc = mq_msg_write_json(m, fp);
		fputs("}\n", fp);
	}
	mq_msg_free(m);
	mq_dead_free(v, n);
	return rc;
}

int
mq_http_dead(struct mq_http_req *r, const char *topic, const char *group)
{
	struct dlq_ctx c = { topic, group, NULL };
	if (!mq_http_permit_group(r, topic, group))
		return 0;
	return mq_http_stream_json(r, write_list, &c);
}

int
mq_http_dead_one(struct mq_http_req *r, const char *topic,
    const char *group, const char *id)
{
	struct dlq_ctx c = { topic, group, id };
	if (!mq_http_permit_group(r, topic, group))
		return 0;
	return mq_http_stream_json(r, write_one, &c);
}

/* What a redrive or purge body chooses: "ids", "older_than", "max". */
struct choice {
	json_t *ids;
	double older;
	unsigned long max;
	const char *to;
};

static int
choice_read(json_t *doc, bool redrive, struct choice *ch)
{
	json_t *max = json_object_get(doc, "max"),
	    *to = json_object_get(doc, "to_topic"),
	    *all = json_object_get(doc, "all");
	ch->ids = json_object_get(doc, "ids");
	ch->older = -1;
	if (ch->ids && (!json_is_array(ch->ids) ||
	    json_array_size(ch->ids) > DLQ_IDS_MAX))
		return mq_err(EX_DATAERR, "ids: an array of message ids");
	if (max && (!json_is_integer(max) || json_integer_value(max) < 1))
		return mq_err(EX_DATAERR, "max: a number from 1");
	ch->max = max ? (unsigned long)json_integer_value(max) : 0;
	if (mq_http_seconds(doc, "older_than", &ch->older) < 0)
		return -1;
	if (to && (!redrive || !json_is_string(to) ||
	    mq_name_check("topic", json_string_value(to)) < 0))
		return mq_err(EX_DATAERR, "to_topic: a topic, for a redrive");
	ch->to = to ? json_string_value(to) : NULL;
	/* A purge of everything is asked for by name, as mq-dlq --all. */
	if (!redrive && !ch->ids && ch->older < 0 && !json_is_true(all))
		return mq_err(EX_USAGE, "purge what? give ids, older_than, or "
		    "\"all\": true");
	return 0;
}

static bool
chosen(const struct choice *ch, const struct mq_dead *d)
{
	if (ch->older >= 0 && mq_now() - d->when < ch->older)
		return false;
	if (!ch->ids)
		return true;
	for (size_t i = 0; i < json_array_size(ch->ids); i++)
		if (json_is_string(json_array_get(ch->ids, i)) &&
		    !strcmp(json_string_value(json_array_get(ch->ids, i)), d->id))
			return true;
	return false;
}

int
mq_http_dead_act(struct mq_http_req *r, const char *topic, const char *group,
    const char *how)
{
	bool redrive = !strcmp(how, "redrive");
	struct choice ch;
	struct mq_dead *v = NULL;
	size_t n = 0;
	unsigned long done = 0;
	if (!mq_http_permit(r, MQ_HTTP_ADMIN, topic, NULL))
		return 0;
	json_error_t e;
	json_t *doc = r->len ? json_loadb(r->body, r->len, 0, &e) :
	    json_object();
	int rc = !doc || !json_is_object(doc) ? mq_err(EX_DATAERR, "the body is "
	    "a JSON object: ids, older_than, max, to_topic, all") :
	    choice_read(doc, redrive, &ch);
	if (rc == 0 && ch.to && !mq_http_permit(r, MQ_HTTP_PUBLISH, ch.to,
	    NULL)) {
		json_decref(doc);
		return 0;
	}
	if (rc == 0)
		rc = mq_dlq_list(r->sp, topic, group, &v, &n);
	for (size_t i = 0; rc == 0 && i < n && (!ch.max || done < ch.max); i++) {
		if (!chosen(&ch, &v[i]))
			continue;
		int one = redrive ? mq_dlq_redrive(r->sp, &v[i], ch.to) :
		    mq_dlq_purge(r->sp, &v[i]);
		if (one == 0)
			done++;
		else if (one < 0)
			rc = -1;
	}
	mq_dead_free(v, n);
	json_decref(doc);
	if (rc < 0)
		return mq_http_failed(r);
	char text[64];
	int len = snprintf(text, sizeof text, "{\"%s\":%lu}", redrive ?
	    "redriven" : "purged", done);
	return mq_http_json(r, MHD_HTTP_OK, text, (size_t)len);
}
