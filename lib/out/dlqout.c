/*
 * dlqout.c: dead letters (mq_dlq_list) as mq-dlq(1) prints them: the
 * table or JSON of list, and the record that show prints before the
 * message.  What a record lacks is empty, and a status of -1 (no handler
 * exit) is null in JSON and empty in text.  The table's DETAIL of a
 * handler failure, whose record has no detail, is its exit status and the
 * first line of the stderr it kept: "exit 3: no such customer".
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "out.h"

static const char *
or_empty(const char *s)
{
	return s ? s : "";
}

static const char *
detail_of(const struct mq_dead *d, char *buf, size_t len)
{
	if ((d->detail && *d->detail) || (d->status < 0 && !d->tail_len))
		return or_empty(d->detail);
	const char *t = d->tail;
	size_t tl = d->tail_len;
	const char *nl = tl ? memchr(t, '\n', tl) : NULL;
	int l = (int)(nl ? (size_t)(nl - t) : tl);
	if (d->status >= 0)
		snprintf(buf, len, "exit %d%s%.*s", d->status, l ? ": " : "",
		    l, t);
	else
		snprintf(buf, len, "%.*s", l, t);
	/* One line in a table: no control character. */
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = '?';
	return buf;
}

int
mq_dead_write_table(const struct mq_dead *v, size_t n, FILE *f)
{
	char buf[256];
	if (n)
		fprintf(f, "%-32s %-16s %4s %8s %8s %-12s %-27s %s\n", "ID",
		    "GROUP", "PART", "SEQ", "ATTEMPTS", "REASON", "TIME",
		    "DETAIL");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%-32s %-16s %4u %8" PRIu64 " %8u %-12s %-27s %s\n",
		    v[i].id, v[i].group, v[i].partition, v[i].seq, v[i].attempts,
		    or_empty(v[i].reason), or_empty(v[i].time),
		    detail_of(&v[i], buf, sizeof buf));
	return mq_out_status(f);
}

int
mq_dead_write_json(const struct mq_dead *v, size_t n, FILE *f)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:s, s:s, "
		    "s:s}", "id", v[i].id, "topic", v[i].topic, "group",
		    v[i].group, "partition", (int)v[i].partition, "seq",
		    (json_int_t)v[i].seq, "attempts", (int)v[i].attempts,
		    "reason", or_empty(v[i].reason), "time", or_empty(v[i].time),
		    "detail", or_empty(v[i].detail));
		json_object_set_new(o, "status", v[i].status >= 0 ?
		    json_integer(v[i].status) : json_null());
		json_array_append_new(a, o);
	}
	return mq_json_put(a, f);
}

int
mq_dead_write_record(const struct mq_dead *d, FILE *f)
{
	fprintf(f, "Id: %s\nGroup: %s\nPartition: %u\nSeq: %" PRIu64 "\n"
	    "Attempts: %u\nReason: %s\nTime: %s\nStatus: ", d->id, d->group,
	    d->partition, d->seq, d->attempts, d->reason, d->time);
	if (d->status >= 0)
		fprintf(f, "%d", d->status);
	fprintf(f, "\nDetail: %s\n", d->detail);
	if (d->tail_len) {
		fputs("Stderr:\n", f);
		fwrite(d->tail, 1, d->tail_len, f);
		if (d->tail[d->tail_len - 1] != '\n')
			putc('\n', f);
	}
	putc('\n', f);
	return mq_out_status(f);
}
