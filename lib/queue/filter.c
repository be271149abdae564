/*
 * filter.c: group filters, a jq program over the JSON body (libjq) and
 * header conditions "Name=glob" (fnmatch(3)).
 *
 * A message matches when every header condition holds and, if there is a
 * jq program, its first output is neither false nor null (as with
 * `jq -e` or select()).  A condition Name=glob holds when the message has
 * a header Name (compared without case) whose value the glob matches; the
 * headers it sees are the user headers and Key (a message without a key
 * has no Key).  The jq program never matches a body that is not one JSON
 * value (an empty body included), nor when it fails, outputs nothing or
 * breaks its bounds; header conditions alone work on any body.  See
 * mq-sub(1), FILTERS.
 *
 * The publisher evaluates filters (publish.c), so a message that does not
 * match never enters the group's queue; mq-sub --filter evaluates one at
 * consume time.
 *
 * jq (1.6) spends some 20 ms compiling any program, most of it on its
 * builtins, so the publisher compiles the jq filters of all of a chunk's
 * groups as one program that yields an array of booleans, one per
 * filter (struct mq_filterset): one compile per process and one jq run
 * per message, whatever the number of groups.  Programs run in a worker
 * process, bounded in time and memory (jqrun.c): a filter is code from
 * whoever may write a group's conf.  Each filter sits on lines
 * of its own inside [try ... catch null] | .[0], so it keeps its meaning
 * (first output; an error is no match) and cannot reach its neighbours.
 * Not first(): in jq 1.6 a try also catches the break that first() uses
 * to stop, which makes it several times slower; the price is that every
 * output is computed.  A result that is not that array (a filter that
 * halts) falls back to running the filters one by one.
 */
#include <errno.h>
#include <fnmatch.h>
#include <jq.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <sysexits.h>

#include "queue.h"

struct mq_filter {
	char *expr;                     /* the jq program; NULL: none */
	char *what;                     /* where it came from, for errors */
	jq_state *jq;                   /* compiled when first run alone */
	struct mq_jqrun run;            /* and run there */
	bool warned;                    /* it broke a bound: said once */
	char **name, **glob;            /* header conditions */
	size_t n;
};

/* Keeps the first line of jq's first compile error. */
struct jq_errbuf {
	char msg[512];
	int have;
};

static void
on_error(void *data, jv msg)
{
	struct jq_errbuf *e = data;
	if (e && !e->have) {
		jv s = jv_get_kind(msg) == JV_KIND_STRING ? jv_copy(msg) :
		    jq_format_error(jv_copy(msg));
		if (jv_get_kind(s) == JV_KIND_STRING) {
			const char *t = jv_string_value(s);
			size_t l = strcspn(t, "\n");
			while (l > 0 && (t[l - 1] == ':' || t[l - 1] == ' '))
				l--;
			snprintf(e->msg, sizeof e->msg, "%.*s", (int)l, t);
			e->have = 1;
		}
		jv_free(s);
	}
	jv_free(msg);
}

/* Prefixes the current error's message, keeping its code. */
static int
err_prefix(int code, const char *prefix)
{
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", mq_errmsg());
	return mq_err(code ? code : mq_errcode(), "%s%s", prefix, msg);
}

/* "Name=glob": a header name as mq_header_parse allows it, or Key. */
static int
match_split(const char *cond, char **name, char **glob)
{
	const char *eq = strchr(cond, '=');
	if (!eq || eq == cond)
		return mq_err(EX_USAGE, "bad header condition '%.60s': expected "
		    "Name=glob", cond);
	size_t nlen = (size_t)(eq - cond);
	if (strchr(eq + 1, '\n'))
		return mq_err(EX_USAGE, "a header condition is one line");
	if (memchr(cond, ':', nlen))
		return mq_err(EX_USAGE, "bad header condition '%.60s': bad "
		    "header name", cond);
	if (!(nlen == 3 && !strncasecmp(cond, "Key", 3))) {
		/* mq_header_parse checks the name (and that it is not a
		 * reserved one) and the value: no control characters. */
		char *line;
		struct mq_header h;
		if (asprintf(&line, "%.*s: %s", (int)nlen, cond, eq + 1) < 0)
			return mq_err_sys("malloc");
		int rc = mq_header_parse(line, &h);
		free(line);
		if (rc < 0) {
			char pre[128];
			snprintf(pre, sizeof pre, "bad header condition '%.60s': ",
			    cond);
			return err_prefix(EX_USAGE, pre);
		}
		free(h.name);
		free(h.value);
	}
	*name = strndup(cond, nlen);
	*glob = strdup(eq + 1);
	if (!*name || !*glob) {
		free(*name);
		free(*glob);
		return mq_err_sys("malloc");
	}
	return 0;
}

/* Compiles a jq program into a new state; EX_USAGE with jq's message if
 * it does not compile. */
static jq_state *
jq_program(const char *expr)
{
	struct jq_errbuf e = { .have = 0 };
	jq_state *jq = jq_init();
	if (!jq) {
		mq_err_sys("jq_init");
		return NULL;
	}
	jq_set_error_cb(jq, on_error, &e);
	/* No modules: without a search path jq 1.6 asserts on import. */
	jq_set_attr(jq, jv_string("JQ_LIBRARY_PATH"), jv_array());
	if (!jq_compile(jq, expr)) {
		mq_err(EX_USAGE, "bad filter: %s", e.have ? e.msg :
		    "jq cannot compile it");
		jq_teardown(&jq);
		return NULL;
	}
	jq_set_error_cb(jq, on_error, NULL);
	return jq;
}

/* A filter whose jq program is compiled when first needed. */
static mq_filter *
filter_parse(const char *expr, const char *const *match, size_t nmatch)
{
	mq_filter *f = calloc(1, sizeof *f);
	if (!f || (nmatch && (!(f->name = calloc(nmatch, sizeof *f->name)) ||
	    !(f->glob = calloc(nmatch, sizeof *f->glob)))) ||
	    (expr && !(f->expr = strdup(expr)))) {
		mq_err_sys("malloc");
		mq_filter_free(f);
		return NULL;
	}
	for (; f->n < nmatch; f->n++)
		if (match_split(match[f->n], &f->name[f->n], &f->glob[f->n]) < 0) {
			mq_filter_free(f);
			return NULL;
		}
	return f;
}

/* The filter's jq program, compiled once and given to its runner: 0, or
 * -1 (EX_USAGE with jq's message) if it does not compile. */
static int
compiled(mq_filter *f)
{
	if (f->jq)
		return 0;
	if (!(f->jq = jq_program(f->expr)))
		return -1;
	f->run = (struct mq_jqrun){ .jq = f->jq,
	    .what = f->what ? f->what : "--filter" };
	return 0;
}

mq_filter *
mq_filter_compile(const char *expr, const char *const *match, size_t nmatch)
{
	mq_filter *f = filter_parse(expr, match, nmatch);
	if (f && expr && compiled(f) < 0) {
		mq_filter_free(f);
		return NULL;
	}
	return f;
}

void
mq_filter_free(mq_filter *f)
{
	if (!f)
		return;
	mq_jqrun_stop(&f->run);
	if (f->jq)
		jq_teardown(&f->jq);
	free(f->expr);
	free(f->what);
	for (size_t i = 0; f->name && f->glob && i < f->n; i++) {
		free(f->name[i]);
		free(f->glob[i]);
	}
	free(f->name);
	free(f->glob);
	free(f);
}

bool
mq_filter_has_jq(const mq_filter *f)
{
	return f->expr != NULL;
}

static bool
header_holds(const mq_filter *f, size_t i, const struct mq_fmsg *m)
{
	if (!strcasecmp(f->name[i], "Key"))
		return m->key && fnmatch(f->glob[i], m->key, 0) == 0;
	for (size_t h = 0; h < m->nheaders; h++)
		if (!strcasecmp(m->headers[h].name, f->name[i]) &&
		    fnmatch(f->glob[i], m->headers[h].value, 0) == 0)
			return true;
	return false;
}

/* A stored filter that does not compile: a configuration error. */
static int
compile_failed(const mq_filter *f)
{
	char pre[MQ_NAME_MAX + 64];
	snprintf(pre, sizeof pre, "%s: filter: ", f->what ? f->what : "group");
	return err_prefix(EX_CONFIG, pre);
}

static bool
headers_hold(const mq_filter *f, const struct mq_fmsg *m)
{
	for (size_t i = 0; i < f->n; i++)
		if (!header_holds(f, i, m))
			return false;
	return true;
}

/* A run that broke its bounds does not match; the tool says so once per
 * filter, as it cannot be told per message without flooding. */
static void
broke(mq_filter *f)
{
	if (!f->warned)
		fprintf(stderr, "%s: %s; a message it cannot judge does not "
		    "match\n", program_invocation_short_name, mq_errmsg());
	f->warned = true;
}

int
mq_filter_eval(mq_filter *f, const struct mq_fmsg *m, size_t n, bool *match)
{
	size_t nj = 0;
	for (size_t i = 0; i < n; i++)
		nj += match[i] = headers_hold(f, &m[i]);
	if (!f->expr || !nj)
		return 0;
	if (compiled(f) < 0)
		return compile_failed(f);
	/* The bodies of the messages the headers let through. */
	struct iovec *body = calloc(nj, sizeof *body);
	size_t *at = calloc(nj, sizeof *at);
	int *st = calloc(nj, sizeof *st);
	bool *yes = calloc(nj, sizeof *yes);
	int rc = body && at && st && yes ? 0 : mq_err_sys("malloc");
	for (size_t i = 0, j = 0; rc == 0 && i < n; i++)
		if (match[i]) {
			body[j] = (struct iovec){ (void *)m[i].body, m[i].len };
			at[j++] = i;
		}
	if (rc == 0)
		rc = mq_jqrun_eval(&f->run, body, nj, yes, st);
	for (size_t j = 0; rc == 0 && j < nj; j++) {
		match[at[j]] = st[j] == MQ_JQ_OK && yes[j];
		if (st[j] == MQ_JQ_BROKE)
			broke(f);
	}
	free(body);
	free(at);
	free(st);
	free(yes);
	return rc;
}

/* The text of the combined program of the set's filters. */
static char *
set_program(mq_filter *const *f, size_t n)
{
	size_t len = 16;
	for (size_t i = 0; i < n; i++)
		len += strlen(f[i]->expr) + 128;
	char *text = malloc(len), *o = text;
	if (!text) {
		mq_err_sys("malloc");
		return NULL;
	}
	o += sprintf(o, "[");
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, "%s([try (\n%s\n) catch null] | .[0])\n",
		    i ? "," : "", f[i]->expr);
	sprintf(o, "]");
	return text;
}

void
mq_filterset_free(struct mq_filterset *s)
{
	mq_jqrun_stop(&s->run);
	if (s->jq)
		jq_teardown(&s->jq);
	free(s->f);
	memset(s, 0, sizeof *s);
}

/* Makes the set's program the one for the jq filters among f[0..n),
 * unless it is that already. */
int
mq_filterset_use(struct mq_filterset *s, mq_filter *const *f, size_t n)
{
	size_t nj = 0;
	bool same = true;
	for (size_t i = 0; i < n; i++)
		if (f[i] && f[i]->expr) {
			same = same && nj < s->n && s->f[nj] == f[i];
			nj++;
		}
	if (same && nj == s->n)
		return 0;
	mq_filterset_free(s);
	if (!nj)
		return 0;
	if (!(s->f = calloc(nj, sizeof *s->f)))
		return mq_err_sys("malloc");
	for (size_t i = 0; i < n; i++)
		if (f[i] && f[i]->expr)
			s->f[s->n++] = f[i];
	char *text = set_program(s->f, s->n);
	if (text && !(s->jq = jq_program(text))) {
		/* Name the filter that does not compile. */
		for (size_t i = 0; i < s->n; i++)
			if (compiled(s->f[i]) < 0) {
				compile_failed(s->f[i]);
				break;
			}
	}
	free(text);
	if (!s->jq) {
		mq_filterset_free(s);
		return -1;
	}
	s->run = (struct mq_jqrun){ .jq = s->jq, .n = s->n,
	    .what = "the groups" };
	return 0;
}

/* out[i * nf + g]: whether f[g] (NULL: no filter) lets message i in; f
 * is what mq_filterset_use was last given.  A message for which the set's
 * program does not give its array (a filter halted it, or broke a bound)
 * has its filters run one by one. */
int
mq_filterset_eval(struct mq_filterset *s, mq_filter *const *f, size_t nf,
    const struct mq_fmsg *m, size_t n, bool *out)
{
	int *st = calloc(n ? n : 1, sizeof *st);
	bool *yes = s->jq ? calloc(n ? n * s->n : 1, sizeof *yes) : NULL;
	struct iovec *body = s->jq ? calloc(n ? n : 1, sizeof *body) : NULL;
	int rc = st && (!s->jq || (yes && body)) ? 0 : mq_err_sys("malloc");
	if (rc == 0 && s->jq) {
		for (size_t i = 0; i < n; i++)
			body[i] = (struct iovec){ (void *)m[i].body, m[i].len };
		rc = mq_jqrun_eval(&s->run, body, n, yes, st);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t j = 0;
		for (size_t g = 0; g < nf; g++) {
			bool *o = &out[i * nf + g];
			*o = true;
			if (!f[g])
				continue;
			if (!f[g]->expr) {
				*o = headers_hold(f[g], &m[i]);
				continue;
			}
			if (st[i] == MQ_JQ_NOT_JSON)
				*o = false;     /* the jq part fails */
			else if (st[i] == MQ_JQ_OK)
				*o = yes[i * s->n + j] && headers_hold(f[g], &m[i]);
			else if (mq_filter_eval(f[g], &m[i], 1, o) < 0)
				rc = -1;
			j++;
		}
	}
	free(st);
	free(yes);
	free(body);
	return rc;
}

int
mq_filter_match_many(mq_filter *f, struct mq_msg *const *msgs, size_t n,
    bool *match)
{
	struct mq_fmsg *m = calloc(n ? n : 1, sizeof *m);
	if (!m)
		return mq_err_sys("malloc");
	for (size_t i = 0; i < n; i++)
		m[i] = (struct mq_fmsg){
			.key = msgs[i]->key, .headers = msgs[i]->headers,
			.nheaders = msgs[i]->nheaders, .body = msgs[i]->body,
			.len = msgs[i]->len,
		};
	int rc = mq_filter_eval(f, m, n, match);
	free(m);
	return rc;
}

int
mq_filter_match(mq_filter *f, const struct mq_msg *msg)
{
	bool match;
	struct mq_msg *one = (struct mq_msg *)msg;
	return mq_filter_match_many(f, &one, 1, &match) < 0 ? -1 : match;
}

/* The filter of a group conf: its filter and match keys (NULL in *out
 * when it has neither). */
int
mq_filter_from_conf(const struct mq_conf *kv, const char *what,
    mq_filter **out)
{
	*out = NULL;
	const char *esc = mq_conf_get(kv, "filter");
	size_t n = 0;
	for (size_t i = 0; i < kv->n; i++)
		n += !strcmp(kv->keys[i], "match");
	if (!esc && !n)
		return 0;
	const char **match = calloc(n ? n : 1, sizeof *match);
	char *expr = esc ? mq_conf_unescape(esc) : NULL;
	if (!match || (esc && !expr)) {
		free(match);
		free(expr);
		return mq_err_sys("malloc");
	}
	n = 0;
	for (size_t i = 0; i < kv->n; i++)
		if (!strcmp(kv->keys[i], "match"))
			match[n++] = kv->vals[i];
	*out = filter_parse(expr, match, n);
	free(match);
	free(expr);
	if (*out && !((*out)->what = strdup(what))) {
		mq_filter_free(*out);
		*out = NULL;
		mq_err_sys("malloc");
	}
	if (!*out) {
		char pre[MQ_NAME_MAX + 64];
		snprintf(pre, sizeof pre, "%s: filter: ", what);
		return err_prefix(EX_CONFIG, pre);
	}
	return 0;
}

/* The same for a group conf as a file holds it. */
int
mq_filter_conf_check(const struct mq_conf *kv, const char *what)
{
	mq_filter *f;
	if (mq_filter_from_conf(kv, what, &f) < 0)
		return -1;
	int rc = f && f->expr && compiled(f) < 0 ? compile_failed(f) : 0;
	mq_filter_free(f);
	return rc;
}

/* Checks the filter of a group to be made: -1 with jq's message (or what
 * is wrong with a header condition) if it does not compile. */
int
mq_filter_check(const struct mq_group_conf *c)
{
	if (!c->filter && !c->nmatch)
		return 0;
	mq_filter *f = mq_filter_compile(c->filter, c->match, c->nmatch);
	if (!f)
		return -1;
	mq_filter_free(f);
	return 0;
}
