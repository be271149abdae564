/*
 * statcheck.c: thresholds over the figures of mq_stat_read, for
 * mq-stat --check (a Nagios/Icinga plugin).
 *
 * A threshold is "[SCOPE:]FIGURE OP N".  It applies to every object of
 * its figure's kind in the snapshot (every group, file system or peer),
 * or to the groups its scope names; a scope that names no group shown is
 * an error rather than a silent OK, so that a misspelt topic is noticed.
 * Evaluating only reads the snapshot.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "info.h"

static const char *const figures[] = {
	[MQ_FIG_PENDING] = "pending",
	[MQ_FIG_INFLIGHT] = "inflight",
	[MQ_FIG_DELAYED] = "delayed",
	[MQ_FIG_DLQ] = "dlq",
	[MQ_FIG_AGE] = "age",
	[MQ_FIG_LEASE_AGE] = "lease-age",
	[MQ_FIG_CONSUMERS] = "consumers",
	[MQ_FIG_ACK_RATE] = "ack-rate",
	[MQ_FIG_LATENCY_P50] = "latency-p50",
	[MQ_FIG_LATENCY_P90] = "latency-p90",
	[MQ_FIG_LATENCY_P99] = "latency-p99",
	[MQ_FIG_LATENCY_MAX] = "latency-max",
	[MQ_FIG_PUBLISH_RATE] = "publish-rate",
	[MQ_FIG_STALE_TMP] = "stale-tmp",
	[MQ_FIG_FREE_BYTES] = "free-bytes",
	[MQ_FIG_FREE_INODES] = "free-inodes",
	[MQ_FIG_LAG] = "lag",
	[MQ_FIG_LAG_SECONDS] = "lag-seconds",
};
#define NFIGURES (sizeof figures / sizeof figures[0])

static const char *const cmps[] = {
	[MQ_CMP_GT] = ">", [MQ_CMP_GE] = ">=", [MQ_CMP_LT] = "<",
	[MQ_CMP_LE] = "<=", [MQ_CMP_EQ] = "=",
};

const char *
mq_figure_name(enum mq_figure f)
{
	return (size_t)f < NFIGURES ? figures[f] : "?";
}

const char *
mq_cmp_name(enum mq_cmp c)
{
	return (size_t)c < sizeof cmps / sizeof cmps[0] ? cmps[c] : "?";
}

const char *
mq_figure_unit(enum mq_figure f)
{
	switch (f) {
	case MQ_FIG_AGE:
	case MQ_FIG_LEASE_AGE:
	case MQ_FIG_LATENCY_P50:
	case MQ_FIG_LATENCY_P90:
	case MQ_FIG_LATENCY_P99:
	case MQ_FIG_LATENCY_MAX:
	case MQ_FIG_LAG_SECONDS:
		return "s";
	case MQ_FIG_FREE_BYTES:
		return "B";
	default:
		return "";
	}
}

static bool
group_figure(enum mq_figure f)
{
	return f <= MQ_FIG_LATENCY_MAX;
}

/* Figures that take a scope: of groups, and publish-rate of topics. */
static bool
scoped_figure(enum mq_figure f)
{
	return group_figure(f) || f == MQ_FIG_PUBLISH_RATE;
}

int
mq_threshold_parse(const char *s, int level, struct mq_threshold *out)
{
	char b[64];
	memset(out, 0, sizeof *out);
	out->level = level;
	const char *op = strpbrk(s, "<>=");
	if (!op)
		return mq_err(EX_USAGE, "bad threshold '%s': expected "
		    "[SCOPE:]FIGURE OP N, OP one of > >= < <= =",
		    mq_shown(s, b, sizeof b));
	/* The figure, and the scope before it. */
	const char *fig = s, *colon = memchr(s, ':', (size_t)(op - s));
	if (colon) {
		const char *slash = memchr(s, '/', (size_t)(colon - s));
		size_t tl = (size_t)((slash ? slash : colon) - s);
		if (tl > MQ_NAME_MAX || (slash && (size_t)(colon - slash - 1) >
		    MQ_NAME_MAX))
			return mq_err(EX_USAGE, "bad threshold '%s': scope too "
			    "long", mq_shown(s, b, sizeof b));
		memcpy(out->topic, s, tl);
		if (slash)
			memcpy(out->group, slash + 1, (size_t)(colon - slash - 1));
		if (mq_name_check("topic", out->topic) < 0 ||
		    (slash && mq_name_check("group", out->group) < 0))
			return -1;
		fig = colon + 1;
	}
	while (*fig == ' ')
		fig++;
	size_t fl = (size_t)(op - fig);
	while (fl > 0 && fig[fl - 1] == ' ')
		fl--;
	size_t f = 0;
	while (f < NFIGURES && (strlen(figures[f]) != fl ||
	    strncmp(figures[f], fig, fl)))
		f++;
	if (f == NFIGURES) {
		char known[512] = "";
		for (size_t i = 0; i < NFIGURES; i++)
			snprintf(known + strlen(known), sizeof known -
			    strlen(known), "%s%s", i ? ", " : "", figures[i]);
		return mq_err(EX_USAGE, "bad threshold '%s': unknown figure "
		    "'%.*s' (%s)", mq_shown(s, b, sizeof b), (int)fl, fig,
		    known);
	}
	out->figure = (enum mq_figure)f;
	if (colon && !scoped_figure(out->figure))
		return mq_err(EX_USAGE, "bad threshold '%s': %s is a figure of "
		    "the spool, it takes no scope", mq_shown(s, b, sizeof b),
		    figures[f]);
	if (*out->group && !group_figure(out->figure))
		return mq_err(EX_USAGE, "bad threshold '%s': %s is a figure of "
		    "a topic: its scope is TOPIC", mq_shown(s, b, sizeof b),
		    figures[f]);
	/* The operator and the number. */
	const char *n = op + 1;
	if (op[0] == '=')
		out->cmp = MQ_CMP_EQ;
	else if (op[1] == '=')
		out->cmp = op[0] == '>' ? MQ_CMP_GE : MQ_CMP_LE, n++;
	else
		out->cmp = op[0] == '>' ? MQ_CMP_GT : MQ_CMP_LT;
	while (*n == ' ')
		n++;
	int rc;
	const char *u = mq_figure_unit(out->figure);
	if (!strcmp(u, "s"))
		rc = mq_duration_parse(n, &out->n);
	else if (!strcmp(u, "B"))
		rc = mq_size_parse(n, &out->n);
	else
		rc = mq_size_parse(n, &out->n) < 0 || strpbrk(n, "KMGTkmgt") ?
		    -1 : 0;
	if (rc < 0)
		return mq_err(EX_USAGE, "bad threshold '%s': expected a %s "
		    "after '%s'", mq_shown(s, b, sizeof b),
		    !strcmp(u, "s") ? "duration (seconds, or with ms s m h d)" :
		    !strcmp(u, "B") ? "size (bytes, or with K M G T)" :
		    "number", cmps[out->cmp]);
	return 0;
}

static bool
crosses(double v, const struct mq_threshold *t)
{
	switch (t->cmp) {
	case MQ_CMP_GT: return v > t->n;
	case MQ_CMP_GE: return v >= t->n;
	case MQ_CMP_LT: return v < t->n;
	case MQ_CMP_LE: return v <= t->n;
	default: return v == t->n;
	}
}

static double
nonneg(double age)
{
	return age < 0 ? 0 : age;
}

/* The value for label, added if it is not there yet. */
static struct mq_check_value *
value_at(struct mq_check *c, const char *label, enum mq_figure f, double v)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].figure == f && !strcmp(c->v[i].label, label))
			return &c->v[i];
	struct mq_check_value *nv = reallocarray(c->v, c->n + 1, sizeof *nv);
	if (!nv) {
		mq_err_sys("malloc");
		return NULL;
	}
	c->v = nv;
	struct mq_check_value *x = &nv[c->n];
	memset(x, 0, sizeof *x);
	if (!(x->label = strdup(label))) {
		mq_err_sys("malloc");
		return NULL;
	}
	x->figure = f;
	x->value = v;
	c->n++;
	return x;
}

static int
apply(struct mq_check *c, const char *label, double v,
    const struct mq_threshold *t)
{
	char l[2 * MQ_NAME_MAX + 4200];
	if (mq_path(l, sizeof l, "%s%s%s", label, *label ? " " : "",
	    figures[t->figure]) < 0)
		return -1;
	struct mq_check_value *x = value_at(c, l, t->figure, v);
	if (!x)
		return -1;
	if (t->level == 2 && !x->crit)
		x->crit = t;
	if (t->level == 1 && !x->warn)
		x->warn = t;
	if (crosses(v, t) && t->level > x->state) {
		x->state = t->level;
		x->crossed = t;
	}
	if (x->state > c->state)
		c->state = x->state;
	return 0;
}

static double
group_value(const struct mq_stat_group *g, enum mq_figure f)
{
	switch (f) {
	case MQ_FIG_PENDING: return (double)g->pending;
	case MQ_FIG_INFLIGHT: return (double)g->inflight;
	case MQ_FIG_DELAYED: return (double)g->delayed;
	case MQ_FIG_DLQ: return (double)g->dead;
	case MQ_FIG_AGE: return nonneg(g->pending_age);
	case MQ_FIG_LEASE_AGE: return nonneg(g->lease_age);
	case MQ_FIG_CONSUMERS: return g->consumers;
	case MQ_FIG_ACK_RATE: return g->acked.rate[1];
	default: return nonneg(g->latency[f - MQ_FIG_LATENCY_P50]);
	}
}

static int
check_one(const struct mq_stat *st, const struct mq_threshold *t,
    struct mq_check *c)
{
	char l[4200];
	int rc = 0;
	if (group_figure(t->figure)) {
		size_t seen = 0;
		for (size_t i = 0; rc == 0 && i < st->ngroups; i++) {
			const struct mq_stat_group *g = &st->groups[i];
			if ((*t->topic && strcmp(t->topic, g->topic)) ||
			    (*t->group && strcmp(t->group, g->group)))
				continue;
			seen++;
			if ((rc = mq_path(l, sizeof l, "%s/%s", g->topic,
			    g->group)) == 0)
				rc = apply(c, l, group_value(g, t->figure), t);
		}
		if (rc == 0 && *t->topic && seen == 0)
			rc = mq_err(EX_NOINPUT, "no group %s%s%s to check",
			    t->topic, *t->group ? "/" : "", t->group);
		return rc;
	}
	switch (t->figure) {
	case MQ_FIG_PUBLISH_RATE: {
		size_t seen = 0;
		for (size_t i = 0; rc == 0 && i < st->ntopics; i++)
			if (!*t->topic || !strcmp(t->topic, st->topics[i].topic)) {
				seen++;
				rc = apply(c, st->topics[i].topic,
				    st->topics[i].published.rate[1], t);
			}
		if (rc == 0 && *t->topic && seen == 0)
			rc = mq_err(EX_NOINPUT, "no topic %s to check", t->topic);
		return rc;
	}
	case MQ_FIG_STALE_TMP:
		return apply(c, "", (double)st->stale_tmp, t);
	case MQ_FIG_FREE_BYTES:
	case MQ_FIG_FREE_INODES:
		for (size_t i = 0; rc == 0 && i < st->nfs; i++)
			rc = apply(c, st->fs[i].path,
			    (double)(t->figure == MQ_FIG_FREE_BYTES ?
			    st->fs[i].free_bytes : st->fs[i].free_inodes), t);
		return rc;
	default:
		for (size_t i = 0; rc == 0 && i < st->npeers; i++) {
			const struct mq_peer_status *p = &st->peers[i];
			if ((rc = mq_path(l, sizeof l, "peer %s", p->name[0] ?
			    p->name : p->id)) == 0)
				rc = apply(c, l, t->figure == MQ_FIG_LAG ?
				    (double)p->records : p->lag, t);
		}
		return rc;
	}
}

int
mq_stat_check(const struct mq_stat *st, const struct mq_threshold *t,
    size_t n, struct mq_check *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n; i++)
		if (check_one(st, &t[i], out) < 0) {
			mq_check_free(out);
			return -1;
		}
	return 0;
}

void
mq_check_free(struct mq_check *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].label);
	free(c->v);
	memset(c, 0, sizeof *c);
}
