/*
 * mq-stat: the figures of a spool, a topic or a group, as a table, JSON or
 * Prometheus text, or checked against thresholds as a Nagios plugin; see
 * mq-stat(1).  The library reads (stat.c) and checks (statcheck.c) them.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

enum {
	OPT_JSON = 256, OPT_PROMETHEUS, OPT_WATCH, OPT_HELP, OPT_CHECK,
	OPT_WARN, OPT_CRIT, OPT_MESSAGE,
};
enum format { TABLE, JSON, PROMETHEUS };

/* --check: every failure is "MQ UNKNOWN - why" on stdout and exit 3, as
 * a Nagios plugin must. */
enum { CHECK_OK, CHECK_WARNING, CHECK_CRITICAL, CHECK_UNKNOWN };
static int check_mode;

static void __attribute__((noreturn, format(printf, 2, 3)))
die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (!check_mode)
		verrx(code, fmt, ap);
	fputs("MQ UNKNOWN - ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	exit(CHECK_UNKNOWN);
}

static void __attribute__((noreturn))
fail(void)
{
	die(mq_errcode(), "%s", mq_errmsg());
}

static void __attribute__((noreturn))
usage(int code)
{
	if (code && check_mode)
		die(code, "usage: %s --check [-s SPOOL] [--warn EXPR]... "
		    "[--crit EXPR]... [TOPIC [GROUP]]", getprogname());
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] [--json | --prometheus] [-o FILE] "
	    "[--watch SECONDS]\n"
	    "               [TOPIC [GROUP]]\n"
	    "       %s --check [-s SPOOL] [--warn EXPR]... [--crit EXPR]... "
	    "[TOPIC [GROUP]]\n"
	    "       %s --message ID [-s SPOOL] [--json] [TOPIC]\n",
	    getprogname(), getprogname(), getprogname());
	exit(code);
}

/* An age in whole seconds, "-" for none. */
static const char *
age_text(double age, char *buf, size_t len)
{
	if (age < 0)
		return "-";
	snprintf(buf, len, "%.0f", age);
	return buf;
}

static const char *
peer_name(const struct mq_peer_status *p)
{
	return p->name[0] ? p->name : p->id;
}

static void
put_table(const struct mq_stat *st, FILE *f)
{
	char a[32], b[32];
	fprintf(f, "%-16s %-16s %9s %9s %9s %9s %11s %9s\n", "TOPIC", "GROUP",
	    "PENDING", "IN-FLIGHT", "DELAYED", "DEAD", "PENDING-AGE",
	    "LEASE-AGE");
	for (size_t i = 0; i < st->ngroups; i++) {
		const struct mq_stat_group *g = &st->groups[i];
		fprintf(f, "%-16s %-16s %9" PRIu64 " %9" PRIu64 " %9" PRIu64
		    " %9" PRIu64 " %11s %9s\n", g->topic, g->group, g->pending,
		    g->inflight, g->delayed, g->dead,
		    age_text(g->pending_age, a, sizeof a),
		    age_text(g->lease_age, b, sizeof b));
	}
	fprintf(f, "\nstale temporary files: %" PRIu64 "\n\n", st->stale_tmp);
	fprintf(f, "%-40s %20s %12s\n", "FILESYSTEM", "FREE-BYTES",
	    "FREE-INODES");
	for (size_t i = 0; i < st->nfs; i++)
		fprintf(f, "%-40s %20" PRIu64 " %12" PRIu64 "\n",
		    st->fs[i].path, st->fs[i].free_bytes, st->fs[i].free_inodes);
	if (!st->replication)
		return;
	fprintf(f, "\n%-24s %-10s %12s %12s\n", "PEER", "STATE", "LAG-RECORDS",
	    "LAG-SECONDS");
	for (size_t i = 0; i < st->npeers; i++) {
		const struct mq_peer_status *p = &st->peers[i];
		fprintf(f, "%-24s %-10s %12" PRIu64 " %12.0f\n", peer_name(p),
		    p->connected ? "connected" : "idle", p->records, p->lag);
	}
}

static json_t *
age_json(double age)
{
	return age < 0 ? json_null() : json_real(age);
}

static void
put_json(const struct mq_stat *st, FILE *f)
{
	json_t *groups = json_array(), *fs = json_array();
	json_t *peers = st->replication ? json_array() : json_null();
	for (size_t i = 0; i < st->ngroups; i++) {
		const struct mq_stat_group *g = &st->groups[i];
		json_array_append_new(groups, json_pack("{s:s, s:s, s:I, s:I, "
		    "s:I, s:I, s:f, s:o, s:o, s:o}", "topic", g->topic,
		    "group", g->group, "pending", (json_int_t)g->pending,
		    "inflight", (json_int_t)g->inflight,
		    "delayed", (json_int_t)g->delayed,
		    "dead", (json_int_t)g->dead, "lease", g->lease,
		    "oldest_pending_age", age_json(g->pending_age),
		    "oldest_lease_age", age_json(g->lease_age),
		    "lease_soonest", g->lease_soonest > 0 ?
		    json_real(g->lease_soonest) : json_null()));
	}
	for (size_t i = 0; i < st->nfs; i++)
		json_array_append_new(fs, json_pack("{s:s, s:I, s:I}",
		    "path", st->fs[i].path,
		    "free_bytes", (json_int_t)st->fs[i].free_bytes,
		    "free_inodes", (json_int_t)st->fs[i].free_inodes));
	for (size_t i = 0; i < st->npeers; i++) {
		const struct mq_peer_status *p = &st->peers[i];
		json_array_append_new(peers, json_pack("{s:s, s:s, s:s, s:I, "
		    "s:f, s:f}", "peer", peer_name(p), "id", p->id,
		    "state", p->connected ? "connected" : "idle",
		    "lag_records", (json_int_t)p->records,
		    "lag_seconds", p->lag, "contact", p->contact));
	}
	json_t *o = json_pack("{s:f, s:o, s:I, s:o, s:o}", "time", st->now,
	    "groups", groups, "stale_tmp", (json_int_t)st->stale_tmp,
	    "filesystems", fs, "replication", peers);
	if (!o || json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
		errx(EX_SOFTWARE, "cannot write JSON");
	fputc('\n', f);
	json_decref(o);
}

/* A label value of the text exposition format: \, " and newline escaped. */
static void
put_label(FILE *f, const char *name, const char *v, int first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void
put_head(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* The per-group metrics: which figure, by offset in the struct. */
enum { M_PENDING, M_INFLIGHT, M_DELAYED, M_DEAD, M_PENDING_AGE, M_LEASE_AGE };
static const struct {
	const char *name, *help;
} group_metrics[] = {
	{ "mq_pending_messages", "Messages pending for the group." },
	{ "mq_inflight_messages", "Messages claimed under a lease." },
	{ "mq_delayed_messages", "Messages waiting in delay/ until due." },
	{ "mq_dead_letter_messages", "Dead letters of the group." },
	{ "mq_oldest_pending_age_seconds",
	  "Age of the oldest pending message (0: none pending)." },
	{ "mq_oldest_lease_age_seconds",
	  "Time since the oldest claim began (0: none in flight)." },
};

static double
group_figure(const struct mq_stat_group *g, int m)
{
	switch (m) {
	case M_PENDING: return (double)g->pending;
	case M_INFLIGHT: return (double)g->inflight;
	case M_DELAYED: return (double)g->delayed;
	case M_DEAD: return (double)g->dead;
	case M_PENDING_AGE: return g->pending_age < 0 ? 0 : g->pending_age;
	default: return g->lease_age < 0 ? 0 : g->lease_age;
	}
}

static void
put_prometheus(const struct mq_stat *st, FILE *f)
{
	for (int m = 0; m < 6; m++) {
		put_head(f, group_metrics[m].name, group_metrics[m].help);
		for (size_t i = 0; i < st->ngroups; i++) {
			fprintf(f, "%s{", group_metrics[m].name);
			put_label(f, "topic", st->groups[i].topic, 1);
			put_label(f, "group", st->groups[i].group, 0);
			fprintf(f, "} %.17g\n", group_figure(&st->groups[i], m));
		}
	}
	put_head(f, "mq_stale_tmp_files",
	    "Temporary files older than an hour.");
	fprintf(f, "mq_stale_tmp_files %" PRIu64 "\n", st->stale_tmp);
	put_head(f, "mq_fs_free_bytes",
	    "Bytes free for unprivileged users on a spool file system.");
	for (size_t i = 0; i < st->nfs; i++) {
		fputs("mq_fs_free_bytes{", f);
		put_label(f, "path", st->fs[i].path, 1);
		fprintf(f, "} %" PRIu64 "\n", st->fs[i].free_bytes);
	}
	put_head(f, "mq_fs_free_inodes",
	    "Inodes free for unprivileged users on a spool file system.");
	for (size_t i = 0; i < st->nfs; i++) {
		fputs("mq_fs_free_inodes{", f);
		put_label(f, "path", st->fs[i].path, 1);
		fprintf(f, "} %" PRIu64 "\n", st->fs[i].free_inodes);
	}
	if (!st->replication)
		return;
	static const char *const pm[][2] = {
		{ "mq_replication_lag_records",
		  "Journal records the peer has not confirmed." },
		{ "mq_replication_lag_seconds",
		  "Age of the oldest record the peer has not confirmed." },
		{ "mq_replication_contact_age_seconds",
		  "Time since the peer last confirmed or answered a ping." },
	};
	for (int m = 0; m < 3; m++) {
		put_head(f, pm[m][0], pm[m][1]);
		for (size_t i = 0; i < st->npeers; i++) {
			const struct mq_peer_status *p = &st->peers[i];
			double v = m == 0 ? (double)p->records : m == 1 ? p->lag :
			    p->contact > 0 && st->now > p->contact ?
			    st->now - p->contact : 0;
			fprintf(f, "%s{", pm[m][0]);
			put_label(f, "peer", peer_name(p), 1);
			fprintf(f, "} %.17g\n", v);
		}
	}
}

static void
put(const struct mq_stat *st, enum format fmt, FILE *f)
{
	if (fmt == JSON)
		put_json(st, f);
	else if (fmt == PROMETHEUS)
		put_prometheus(st, f);
	else
		put_table(st, f);
}

/* Writes FILE whole or not at all: a temporary dot file in its directory,
 * synced, renamed over it. */
static void
put_file(const struct mq_stat *st, enum format fmt, const char *path)
{
	char *d = strdup(path), *b = strdup(path), tmp[4096];
	if (!d || !b)
		err(EX_OSERR, "malloc");
	const char *dir = dirname(d), *base = basename(b);
	if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, base) >=
	    sizeof tmp)
		errx(EX_USAGE, "%s: path too long", path);
	int fd = mkstemp(tmp);
	if (fd < 0)
		err(EX_CANTCREAT, "%s", tmp);
	FILE *f = fdopen(fd, "w");
	if (!f)
		err(EX_OSERR, "fdopen");
	fchmod(fd, 0644);
	put(st, fmt, f);
	if (fflush(f) == EOF || fsync(fd) < 0 || fclose(f) == EOF) {
		int e = errno;
		unlink(tmp);
		errno = e;
		err(EX_IOERR, "%s", tmp);
	}
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		err(EX_CANTCREAT, "%s", path);
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(d);
	free(b);
}

/* A figure: to the millisecond, without trailing zeros, never with an
 * exponent (performance data takes none). */
static void
put_num(FILE *f, double v)
{
	char b[64];
	snprintf(b, sizeof b, "%.3f", v);
	char *e = b + strlen(b);
	while (e[-1] == '0')
		*--e = 0;
	if (e[-1] == '.')
		e[-1] = 0;
	fputs(strcmp(b, "-0") ? b : "0", f);
}

/* A threshold as a Nagios range: the alert is raised for values outside
 * start:end, or inside with '@' ("~" is minus infinity).  Figures are
 * never negative, so "N" stands for > N. */
static void
put_range(FILE *f, const struct mq_threshold *t)
{
	if (!t)
		return;
	const char *pre[] = { [MQ_CMP_GT] = "", [MQ_CMP_GE] = "@",
	    [MQ_CMP_LT] = "", [MQ_CMP_LE] = "@~:", [MQ_CMP_EQ] = "@" };
	fputs(pre[t->cmp], f);
	put_num(f, t->n);
	if (t->cmp == MQ_CMP_GE || t->cmp == MQ_CMP_LT)
		fputc(':', f);
	else if (t->cmp == MQ_CMP_EQ) {
		fputc(':', f);
		put_num(f, t->n);
	}
}

/* "orders/billing dlq=3 (>0)" for each value at state. */
static void
put_crossed(const struct mq_check *c, int state, FILE *f)
{
	int first = 1;
	for (size_t i = 0; i < c->n; i++) {
		const struct mq_check_value *v = &c->v[i];
		if (v->state != state)
			continue;
		const char *u = mq_figure_unit(v->figure);
		fprintf(f, "%s%s=", first ? "" : ", ", v->label);
		put_num(f, v->value);
		fprintf(f, "%s (%s", u, mq_cmp_name(v->crossed->cmp));
		put_num(f, v->crossed->n);
		fprintf(f, "%s)", u);
		first = 0;
	}
}

static int
put_check(const struct mq_check *c, FILE *f)
{
	static const char *const names[] = { "OK", "WARNING", "CRITICAL" };
	fprintf(f, "MQ %s - ", names[c->state]);
	if (c->state == CHECK_OK)
		fprintf(f, "%zu figure%s within thresholds", c->n,
		    c->n == 1 ? "" : "s");
	else
		put_crossed(c, c->state, f);
	if (c->state == CHECK_CRITICAL && c->n > 0) {
		size_t w = 0;
		for (size_t i = 0; i < c->n; i++)
			w += c->v[i].state == CHECK_WARNING;
		if (w) {
			fputs("; WARNING: ", f);
			put_crossed(c, CHECK_WARNING, f);
		}
	}
	/* Performance data: 'label'=value[UOM];warn;crit;min (a quote in
	 * a label doubled). */
	for (size_t i = 0; i < c->n; i++) {
		const struct mq_check_value *v = &c->v[i];
		fputs(i == 0 ? " | '" : " '", f);
		for (const char *p = v->label; *p; p++) {
			if (*p == '\'')
				fputc('\'', f);
			fputc(*p, f);
		}
		fputs("'=", f);
		put_num(f, v->value);
		fprintf(f, "%s;", mq_figure_unit(v->figure));
		put_range(f, v->warn);
		fputc(';', f);
		put_range(f, v->crit);
		fputs(";0", f);
	}
	fputc('\n', f);
	return c->state;
}

static int
check(mq_spool *sp, const char *topic, const char *group,
    const struct mq_threshold *th, size_t nth)
{
	struct mq_stat st;
	struct mq_check c;
	if (mq_stat_read(sp, topic, group, &st) < 0 ||
	    mq_stat_check(&st, th, nth, &c) < 0)
		fail();
	int state = put_check(&c, stdout);
	mq_check_free(&c);
	mq_stat_free(&st);
	if (fflush(stdout) == EOF || ferror(stdout))
		exit(CHECK_UNKNOWN);
	return state;
}

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

/* One line per group: TOPIC/GROUP STATE, then what the state has. */
static void
put_where_text(const struct mq_msg_where *w, size_t n, FILE *f)
{
	char b[64];
	for (size_t i = 0; i < n; i++, w++) {
		fprintf(f, "%s/%s %s", w->topic, w->group,
		    mq_msg_state_name(w->state));
		if (w->state != MQ_MSG_ACKED)
			fprintf(f, " attempts=%u", w->attempts);
		if (w->state == MQ_MSG_INFLIGHT)
			fprintf(f, " lease-deadline=%s",
			    rfc3339(w->lease_deadline, b, sizeof b));
		if (w->in && !strcmp(w->in, "delay"))
			fprintf(f, " due=%s", rfc3339(w->due, b, sizeof b));
		if (w->expires > 0)
			fprintf(f, " expires=%s", rfc3339(w->expires, b,
			    sizeof b));
		if (w->state == MQ_MSG_EXPIRED)
			fprintf(f, " in=%s", w->in);
		if (w->reason) {
			fprintf(f, " reason=%s", *w->reason ? w->reason : "-");
			if (w->died > 0)
				fprintf(f, " time=%s", rfc3339(w->died, b,
				    sizeof b));
			if (*w->detail)
				fprintf(f, " detail=%s", w->detail);
		}
		fputc('\n', f);
	}
}

static void
put_where_json(const char *id, const struct mq_msg_where *w, size_t n,
    FILE *f)
{
	json_t *groups = json_array();
	for (size_t i = 0; i < n; i++, w++) {
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:s, s:o, s:I}",
		    "topic", w->topic, "group", w->group,
		    "partition", (json_int_t)w->partition,
		    "seq", (json_int_t)w->seq,
		    "state", mq_msg_state_name(w->state),
		    "in", w->in ? json_string(w->in) : json_null(),
		    "attempts", (json_int_t)w->attempts);
		json_object_set_new(o, "lease_deadline",
		    time_json(w->state == MQ_MSG_INFLIGHT ? w->lease_deadline :
		    0));
		json_object_set_new(o, "due", time_json(w->in &&
		    !strcmp(w->in, "delay") ? w->due : 0));
		json_object_set_new(o, "expires", time_json(w->expires));
		json_object_set_new(o, "reason", w->reason ?
		    json_string(w->reason) : json_null());
		json_object_set_new(o, "detail", w->detail ?
		    json_string(w->detail) : json_null());
		json_object_set_new(o, "time", time_json(w->died));
		json_array_append_new(groups, o);
	}
	json_t *o = json_pack("{s:s, s:o}", "id", id, "groups", groups);
	if (!o || json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
		errx(EX_SOFTWARE, "cannot write JSON");
	fputc('\n', f);
	json_decref(o);
}

static void
message(mq_spool *sp, const char *topic, const char *id, enum format fmt)
{
	struct mq_msg_where *w;
	size_t n;
	if (mq_msg_locate(sp, topic, id, &w, &n) < 0)
		fail();
	if (fmt == JSON)
		put_where_json(id, w, n, stdout);
	else
		put_where_text(w, n, stdout);
	mq_msg_where_free(w, n);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
		{ "watch", required_argument, NULL, OPT_WATCH },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "warn", required_argument, NULL, OPT_WARN },
		{ "crit", required_argument, NULL, OPT_CRIT },
		{ "message", required_argument, NULL, OPT_MESSAGE },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL, *out = NULL, *id = NULL;
	enum format fmt = TABLE;
	double watch = 0;
	struct mq_threshold *th = NULL;
	size_t nth = 0;
	int c;
	/* Known before any other option is looked at, so that every error
	 * is reported the plugin's way. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--check"))
			check_mode = 1;
	if (check_mode)
		opterr = 0;
	while ((c = getopt_long(argc, argv, "o:s:", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CHECK:
			break;
		case OPT_MESSAGE:
			id = optarg;
			break;
		case OPT_WARN:
		case OPT_CRIT:
			if (!(th = reallocarray(th, nth + 1, sizeof *th)))
				die(EX_OSERR, "malloc: %s", strerror(errno));
			if (mq_threshold_parse(optarg, c == OPT_WARN ? 1 : 2,
			    &th[nth++]) < 0)
				fail();
			break;
		case 'o':
			out = optarg;
			break;
		case 's':
			spool = optarg;
			break;
		case OPT_JSON:
		case OPT_PROMETHEUS:
			if (fmt != TABLE)
				die(EX_USAGE, "--json and --prometheus "
				    "exclude each other");
			fmt = c == OPT_JSON ? JSON : PROMETHEUS;
			break;
		case OPT_WATCH:
			if (mq_duration_parse(optarg, &watch) < 0)
				die(EX_USAGE, "--watch: %s", mq_errmsg());
			if (watch <= 0)
				die(EX_USAGE, "--watch: expected more than "
				    "0 seconds, not '%s'", optarg);
			break;
		case OPT_HELP:
			usage(0);
		default:
			if (check_mode && optopt > 0 && optopt < 128)
				die(EX_USAGE, "bad option -%c, or no argument",
				    optopt);
			if (check_mode)
				die(EX_USAGE, "bad option %s, or no argument",
				    argv[optind - 1]);
			usage(EX_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 2)
		usage(EX_USAGE);
	if (check_mode && (fmt != TABLE || out || watch > 0))
		die(EX_USAGE, "--check takes no --json, --prometheus, -o or "
		    "--watch");
	if (check_mode && nth == 0)
		die(EX_USAGE, "--check: no threshold (--warn or --crit)");
	if (!check_mode && nth > 0)
		die(EX_USAGE, "--warn and --crit go with --check");
	if (id && (check_mode || fmt == PROMETHEUS || out || watch > 0 ||
	    argc > 1))
		die(EX_USAGE, "--message takes no --check, --prometheus, -o, "
		    "--watch or GROUP");
	const char *topic = argc > 0 ? argv[0] : NULL;
	const char *group = argc > 1 ? argv[1] : NULL;
	if ((topic && mq_name_check("topic", topic) < 0) ||
	    (group && mq_name_check("group", group) < 0))
		fail();
	mq_spool *sp = mq_spool_open(spool, 0);
	if (!sp)
		fail();
	if (id) {
		message(sp, topic, id, fmt);
		mq_spool_close(sp);
		if (fflush(stdout) == EOF || ferror(stdout))
			err(EX_IOERR, "stdout");
		return 0;
	}
	if (check_mode) {
		int state = check(sp, topic, group, th, nth);
		mq_spool_close(sp);
		free(th);
		return state;
	}
	int clear = watch > 0 && !out && fmt == TABLE && isatty(STDOUT_FILENO);
	for (;;) {
		struct mq_stat st;
		if (mq_stat_read(sp, topic, group, &st) < 0)
			fail();
		if (out) {
			put_file(&st, fmt, out);
		} else {
			if (clear)
				fputs("\033[H\033[2J", stdout);
			put(&st, fmt, stdout);
			if (fflush(stdout) == EOF)
				err(EX_IOERR, "stdout");
		}
		mq_stat_free(&st);
		if (watch <= 0)
			break;
		struct timespec ts = { (time_t)watch,
		    (long)((watch - (double)(time_t)watch) * 1e9) };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		if (!clear && fmt == TABLE && !out)
			fputc('\n', stdout);
	}
	mq_spool_close(sp);
	if (fflush(stdout) == EOF || ferror(stdout))
		err(EX_IOERR, "stdout");
	return 0;
}
