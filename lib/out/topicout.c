/*
 * topicout.c: a topic (mq_topic_info) as mq-topic info prints it, as
 * text or one JSON object, and mq-topic list --json.  A role is shown by
 * its gid and, when the system knows one, its group's name.
 */
#include <grp.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>

#include "out.h"

/* A role's group name, NULL if the gid has none. */
static const char *
group_name(gid_t gid)
{
	struct group *g = getgrgid(gid);
	return g ? g->gr_name : NULL;
}

static const char *
mode(int ordered)
{
	return ordered ? "ordered" : "shared";
}

int
mq_topic_info_write_json(const struct mq_topic_info *in, FILE *f)
{
	json_t *heads = json_array(), *groups = json_array();
	for (unsigned k = 0; k < in->conf.partitions; k++) {
		const struct mq_partition_stat *p = &in->partitions[k];
		json_t *h = json_pack("{s:i, s:I, s:I, s:I}", "partition", (int)k,
		    "committed", (json_int_t)p->committed,
		    "messages", (json_int_t)p->log_messages,
		    "bytes", (json_int_t)p->log_bytes);
		if (p->place)
			json_object_set_new(h, "place", json_string(p->place));
		json_array_append_new(heads, h);
	}
	for (size_t i = 0; i < in->ngroups; i++) {
		const struct mq_group_stat *g = &in->groups[i];
		json_array_append_new(groups, json_pack("{s:s, s:s, s:I, s:I, "
		    "s:I, s:I, s:I}", "name", g->name, "mode", mode(g->ordered),
		    "pending", (json_int_t)g->pending,
		    "inflight", (json_int_t)g->inflight,
		    "delayed", (json_int_t)g->delayed,
		    "dead", (json_int_t)g->dead, "lag", (json_int_t)g->lag));
	}
	const struct mq_topic_conf *c = &in->conf;
	json_t *roles = json_object();
	for (int r = 0; r < MQ_ROLES; r++)
		if (c->roles.has[r])
			json_object_set_new(roles, mq_role_name(r),
			    json_pack("{s:I, s:s?}", "gid",
			    (json_int_t)c->roles.gid[r], "group",
			    group_name(c->roles.gid[r])));
	return mq_json_put(json_pack("{s:s, s:i, s:i, s:I, s:I, s:f, s:s, "
	    "s:I, s:i, s:o, s:o, s:o}", "name", in->name, "format",
	    c->format == 2 ? 2 : 1, "partitions",
	    (int)c->partitions, "max_message_size",
	    (json_int_t)c->max_message_size, "retention",
	    (json_int_t)c->retention, "ttl", c->ttl, "expired",
	    c->expired_drop ? "drop" : "dlq", "dedup_window",
	    (json_int_t)c->dedup_window, "signers", (int)c->nsigners,
	    "roles", roles, "heads", heads, "groups", groups), f);
}

int
mq_topic_info_write_text(const struct mq_topic_info *in, FILE *f)
{
	const struct mq_topic_conf *c = &in->conf;
	fprintf(f, "topic: %s\nformat: %u\npartitions: %u\n"
	    "max-message-size: %zu\nretention: %.0f\nttl: %g\nexpired: %s\n"
	    "signers: %u\n", in->name, c->format == 2 ? 2 : 1, c->partitions,
	    c->max_message_size, c->retention, c->ttl,
	    c->expired_drop ? "drop" : "dlq", c->nsigners);
	for (int r = 0; r < MQ_ROLES; r++) {
		if (!c->roles.has[r])
			continue;
		const char *name = group_name(c->roles.gid[r]);
		fprintf(f, "%s: %s (%lu)\n", mq_role_name(r), name ? name : "?",
		    (unsigned long)c->roles.gid[r]);
	}
	fprintf(f, "%-10s %12s %12s %12s\n", "PARTITION", "COMMITTED",
	    "MESSAGES", "BYTES");
	for (unsigned k = 0; k < c->partitions; k++) {
		const struct mq_partition_stat *p = &in->partitions[k];
		fprintf(f, "%-10u %12" PRIu64 " %12" PRIu64 " %12" PRIu64
		    "%s%s\n", k, p->committed, p->log_messages, p->log_bytes,
		    p->place ? "  placed in " : "", p->place ? p->place : "");
	}
	fprintf(f, "%-24s %-8s %12s %12s %12s %12s %12s\n", "GROUP", "MODE",
	    "PENDING", "IN-FLIGHT", "DELAYED", "DEAD", "LAG");
	for (size_t i = 0; i < in->ngroups; i++) {
		const struct mq_group_stat *g = &in->groups[i];
		fprintf(f, "%-24s %-8s %12" PRIu64 " %12" PRIu64 " %12" PRIu64
		    " %12" PRIu64 " %12" PRIu64 "\n", g->name, mode(g->ordered),
		    g->pending, g->inflight, g->delayed, g->dead, g->lag);
	}
	return mq_out_status(f);
}

int
mq_topic_list_write_json(const char *const *names,
    const struct mq_topic_conf *confs, size_t n, FILE *f)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		if (confs[i].partitions)
			json_array_append_new(arr, json_pack("{s:s, s:i}", "name",
			    names[i], "partitions", (int)confs[i].partitions));
	return mq_json_put(arr, f);
}
