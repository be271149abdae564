/*
 * replout.c: the replication peers (mq_repl_status) as mq-replicate
 * status prints them, a table for people or one JSON object.  The last
 * contact is told as an age before mq_now() in the table, and as seconds
 * since the epoch in JSON.  A peer without a name is shown by its whole
 * spool id (mq_peer_label), which the first column widens to hold.
 */
#include <jansson.h>
#include <stdio.h>

#include "out.h"

/* How long ago t was, roughly: "42s ago", "5m ago", "3h ago". */
static const char *
ago(double t, char *buf, size_t len)
{
	if (t <= 0)
		return "never";
	double d = mq_now() - t;
	if (d < 0)
		d = 0;
	if (d < 120)
		snprintf(buf, len, "%.0fs ago", d);
	else if (d < 7200)
		snprintf(buf, len, "%.0fm ago", d / 60);
	else
		snprintf(buf, len, "%.0fh ago", d / 3600);
	return buf;
}

static const char *
state(const struct mq_peer_status *p)
{
	return p->connected ? "connected" : "idle";
}

int
mq_repl_status_write_table(const mq_spool *sp,
    const struct mq_peer_status *v, size_t n, const struct mq_repl_self *self,
    FILE *f)
{
	int w = mq_peer_label_width(v, n, 20);
	fprintf(f, "%-*s %-13s %-12s %12s %10s %9s\n", w, "PEER", "STATE",
	    "CONTACT", "LAG BYTES", "RECORDS", "LAG S");
	for (size_t i = 0; i < n; i++) {
		char when[32];
		fprintf(f, "%-*s %-13s %-12s %12llu %10llu %9.3f\n", w,
		    mq_peer_label(&v[i]), state(&v[i]),
		    ago(v[i].contact, when, sizeof when),
		    (unsigned long long)v[i].lag_bytes,
		    (unsigned long long)v[i].records, v[i].lag);
	}
	if (self->quarantined)
		fprintf(f, "%zu quarantined file(s) in %s/replicate/quarantine\n",
		    self->quarantined, mq_spool_path(sp));
	if (self->epoch)
		fprintf(f, "epoch %llu\n", (unsigned long long)self->epoch);
	if (self->fenced) {
		char when[64];
		mq_time_rfc3339(self->fence.at, when, sizeof when);
		fprintf(f, "FENCED: spool %s%s%s%s is at epoch %llu (learned %s): "
		    "this spool takes no publish; run 'mq-replicate demote'\n",
		    self->fence.peer, *self->fence.name ? " (" : "",
		    self->fence.name, *self->fence.name ? ")" : "",
		    (unsigned long long)self->fence.epoch, when);
	}
	return mq_out_status(f);
}

int
mq_repl_status_write_json(const struct mq_peer_status *v, size_t n,
    const struct mq_repl_self *self, FILE *f)
{
	json_t *peers = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(peers, json_pack("{s:s, s:s, s:s, s:s, "
		    "s:f, s:I, s:I, s:I, s:I, s:f}", "id", v[i].id, "name",
		    v[i].name, "address", v[i].address, "state", state(&v[i]),
		    "contact", v[i].contact, "confirmed",
		    (json_int_t)v[i].confirmed, "journal",
		    (json_int_t)v[i].journal, "lag_bytes",
		    (json_int_t)v[i].lag_bytes, "lag_records",
		    (json_int_t)v[i].records, "lag_seconds", v[i].lag));
	const struct mq_fence *fc = &self->fence;
	json_t *fenced = self->fenced ? json_pack("{s:I, s:s, s:s, s:f}",
	    "epoch", (json_int_t)fc->epoch, "peer", fc->peer, "name", fc->name,
	    "at", fc->at) : json_null();
	return mq_json_put(json_pack("{s:o, s:I, s:I, s:o}", "peers", peers,
	    "quarantined", (json_int_t)self->quarantined, "epoch",
	    (json_int_t)self->epoch, "fenced", fenced), f);
}
