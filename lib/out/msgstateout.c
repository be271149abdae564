/*
 * msgstateout.c: where a message is (mq_msg_locate), as mq-stat --message
 * prints it: a line per group, or one JSON object.  Times are RFC 3339 in
 * UTC, to the millisecond; what does not apply to a state is left out of
 * a line and null in JSON.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "out.h"

/* A time as RFC 3339 in UTC, to the millisecond. */
static const char *
rfc3339(double t, char *buf, size_t len)
{
	time_t sec = (time_t)t;
	int ms = (int)((t - (double)sec) * 1000 + 0.5);
	if (ms > 999) {
		sec++;
		ms -= 1000;
	}
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03dZ", ms);
	return buf;
}

static json_t *
time_json(double t)
{
	char b[64];
	return t > 0 ? json_string(rfc3339(t, b, sizeof b)) : json_null();
}

/* A name in delay/, or in format 2 a record past the group's cursor not
 * yet due: its due time is known. */
static bool
shows_due(const struct mq_msg_where *w)
{
	return w->in && (!strcmp(w->in, "delay") ||
	    (!strcmp(w->in, "log") && w->state == MQ_MSG_DELAYED));
}

int
mq_msg_where_write_text(const struct mq_msg_where *w, size_t n, FILE *f)
{
	char b[64];
	for (size_t i = 0; i < n; i++, w++) {
		if (!w->group) {
			fprintf(f, "%s partition %u: no group subscribes\n",
			    w->topic, w->partition);
			continue;
		}
		fprintf(f, "%s/%s %s", w->topic, w->group,
		    mq_msg_state_name(w->state));
		if (w->in)
			fprintf(f, " attempts=%u", w->attempts);
		if (w->state == MQ_MSG_INFLIGHT)
			fprintf(f, " lease-deadline=%s",
			    rfc3339(w->lease_deadline, b, sizeof b));
		if (shows_due(w))
			fprintf(f, " due=%s", rfc3339(w->due, b, sizeof b));
		if (w->expires > 0)
			fprintf(f, " expires=%s", rfc3339(w->expires, b,
			    sizeof b));
		if (w->state == MQ_MSG_EXPIRED && w->in)
			fprintf(f, " in=%s", w->in);
		if (w->reason)
			fprintf(f, " reason=%s", *w->reason ? w->reason : "-");
		if (w->died > 0)
			fprintf(f, " time=%s", rfc3339(w->died, b, sizeof b));
		if (w->detail && *w->detail)
			fprintf(f, " detail=%s", w->detail);
		fputc('\n', f);
	}
	return mq_out_status(f);
}

/* The message's topic, partition and sequence number, then its state in
 * each group: none in a topic without groups. */
int
mq_msg_where_write_json(const char *id, const struct mq_msg_where *w,
    size_t n, FILE *f)
{
	const struct mq_msg_where *at = n ? w : NULL;
	json_t *groups = json_array();
	for (size_t i = 0; i < n; i++, w++) {
		if (!w->group)
			continue;
		json_t *g = json_pack("{s:s, s:s, s:I, s:I, s:s, s:o, s:I}",
		    "topic", w->topic, "group", w->group,
		    "partition", (json_int_t)w->partition,
		    "seq", (json_int_t)w->seq,
		    "state", mq_msg_state_name(w->state),
		    "in", w->in ? json_string(w->in) : json_null(),
		    "attempts", (json_int_t)w->attempts);
		json_object_set_new(g, "lease_deadline",
		    time_json(w->state == MQ_MSG_INFLIGHT ? w->lease_deadline :
		    0));
		json_object_set_new(g, "due", time_json(shows_due(w) ? w->due :
		    0));
		json_object_set_new(g, "expires", time_json(w->expires));
		json_object_set_new(g, "reason", w->reason ?
		    json_string(w->reason) : json_null());
		json_object_set_new(g, "detail", w->detail ?
		    json_string(w->detail) : json_null());
		json_object_set_new(g, "time", time_json(w->died));
		json_array_append_new(groups, g);
	}
	return mq_json_put(json_pack("{s:s, s:o, s:o, s:o, s:o}", "id", id,
	    "topic", at ? json_string(at->topic) : json_null(),
	    "partition", at ? json_integer(at->partition) : json_null(),
	    "seq", at ? json_integer((json_int_t)at->seq) : json_null(),
	    "groups", groups), f);
}
