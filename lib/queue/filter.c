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
 * filter (struct mq_filterset): one compile per worker and one jq run
 * per message, whatever the number of groups.  Programs are compiled and
 * run in a worker process, bounded in time and memory, that sees nothing
 * of the publisher (jqrun.c): a filter is code from whoever may write a
 * group's conf.  Each filter sits inside ([try (...\n) catch null] |
 * .[0]), so it keeps its meaning (first output; an error is no match).
 * Not first(): in jq 1.6 a try also catches the break that first() uses
 * to stop, which makes it several times slower; the price is that every
 * output is computed.  A result that is not that array (a worker that
 * broke a bound) falls back to running the filters one by one.
 *
 * A group's filter runs exactly as it was checked: the check (at
 * subscribe, and of a replication peer's conf) compiles the program of
 * that filter alone, the set's program with one filter, and jqlex.c
 * says it is whole, so that set among others it is the same bracketed
 * term.  jqlex.c also refuses what would read anything but the message.
 * A conf on disk that holds a filter refused so (written by hand, or
 * before this check) is never run: its group gets no message and each
 * process says so once.  One that does not compile stops the publish
 * (78), as a bad conf does.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <sysexits.h>

#include "queue.h"

struct mq_filter {
	char *expr;                     /* the jq expression; NULL: none */
	char *program;                  /* what runs for it alone */
	bool group;                     /* a group's: bracketed as in a set */
	char *what;                     /* where it came from, for errors */
	char *refused;                  /* why it is never run; NULL: it may */
	char *broken;                   /* why its text is not whole */
	struct mq_jqrun run;            /* its worker, started when first run
	                                 * alone */
	bool warned;                    /* it broke a bound: said once */
	char **name, **glob;            /* header conditions */
	size_t n;
};

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

/* The text of the program of the filters f[0..n), one after another in
 * an array. */
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
		o += sprintf(o, "%s([try (%s\n) catch null] | .[0])\n",
		    i ? "," : "", f[i]->expr);
	sprintf(o, "]");
	return text;
}

/* A filter whose jq program is compiled when first needed: a group's
 * (group) bracketed as a set's program, one of mq-sub --filter as it is.
 * One that jqlex.c refuses has the reason in refused. */
static mq_filter *
filter_parse(const char *expr, const char *const *match, size_t nmatch,
    bool group)
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
	if (!expr)
		return f;
	f->group = group;
	char broken[256];
	bool ok = mq_jqlex_check(expr, broken, sizeof broken) == 0;
	if ((!ok && !(f->refused = strdup(mq_errmsg()))) ||
	    (group && broken[0] && !(f->broken = strdup(broken))) ||
	    !(f->program = group ? set_program(&f, 1) : strdup(expr))) {
		mq_err_sys("malloc");
		mq_filter_free(f);
		return NULL;
	}
	return f;
}

/* Whose filter it is, for errors. */
static const char *
whose(const mq_filter *f)
{
	return f->what ? f->what : f->group ? "--group-filter" : "--filter";
}

/* The filter's program compiled in its worker: 0; MQ_JQ_BROKE (the
 * compile broke a bound: the error says which); or -1, EX_USAGE: it does
 * not compile (jq's message) or it compiles but is not whole, which
 * makes it refused; or no worker. */
static int
compiled(mq_filter *f)
{
	f->run.program = f->program;
	f->run.n = f->group;
	f->run.what = whose(f);
	int rc = mq_jqrun_start(&f->run);
	if (rc == 0 && f->broken) {
		mq_jqrun_stop(&f->run);
		mq_err(EX_USAGE, "bad filter: %s", f->broken);
		if (!(f->refused = strdup(mq_errmsg())))
			return mq_err_sys("malloc");
		return -1;
	}
	return rc;
}

/* A filter that is refused, or whose program does not compile in its
 * bounds: -1, and the error says why. */
static int
checked(mq_filter *f)
{
	if (f->refused)
		return mq_err(EX_USAGE, "%s", f->refused);
	int rc = f->expr ? compiled(f) : 0;
	return rc == MQ_JQ_BROKE ? -1 : rc;
}

mq_filter *
mq_filter_compile(const char *expr, const char *const *match, size_t nmatch)
{
	mq_filter *f = filter_parse(expr, match, nmatch, false);
	if (f && checked(f) < 0) {
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
	free(f->expr);
	free(f->program);
	free(f->what);
	free(f->refused);
	free(f->broken);
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

/* A stored filter that is refused matches nothing, said once. */
static void
never(mq_filter *f, bool *match, size_t n)
{
	if (!f->warned)
		fprintf(stderr, "%s: %s: filter: %s; it is not run and the "
		    "group gets no message\n", program_invocation_short_name,
		    whose(f), f->refused);
	f->warned = true;
	memset(match, 0, n * sizeof *match);
}

int
mq_filter_eval(mq_filter *f, const struct mq_fmsg *m, size_t n, bool *match)
{
	size_t nj = 0;
	for (size_t i = 0; i < n; i++)
		nj += match[i] = headers_hold(f, &m[i]);
	if (!f->expr || !nj)
		return 0;
	int rc = f->refused ? -1 : compiled(f);
	if (rc < 0 && !f->refused)
		return compile_failed(f);
	if (f->refused) {
		never(f, match, n);
		return 0;
	}
	if (rc == MQ_JQ_BROKE) {
		broke(f);
		memset(match, 0, n * sizeof *match);
		return 0;
	}
	/* The bodies of the messages the headers let through. */
	struct iovec *body = calloc(nj, sizeof *body);
	size_t *at = calloc(nj, sizeof *at);
	int *st = calloc(nj, sizeof *st);
	bool *yes = calloc(nj, sizeof *yes);
	rc = body && at && st && yes ? 0 : mq_err_sys("malloc");
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

void
mq_filterset_free(struct mq_filterset *s)
{
	mq_jqrun_stop(&s->run);
	free(s->program);
	free(s->f);
	memset(s, 0, sizeof *s);
}

/* A jq filter that may go in a set: one refused, or not whole, is judged
 * alone (mq_filter_eval), which says what is wrong with it. */
static bool
in_set(const mq_filter *f)
{
	return f && f->expr && !f->refused && !f->broken;
}

/* Makes the set's program the one for the jq filters among f[0..n),
 * unless it is that already. */
int
mq_filterset_use(struct mq_filterset *s, mq_filter *const *f, size_t n)
{
	size_t nj = 0;
	bool same = true;
	for (size_t i = 0; i < n; i++)
		if (in_set(f[i])) {
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
		if (in_set(f[i]))
			s->f[s->n++] = f[i];
	int rc = -1;
	if ((s->program = set_program(s->f, s->n))) {
		s->run = (struct mq_jqrun){ .program = s->program, .n = s->n,
		    .what = "the groups" };
		/* A compile that broke a bound leaves each message to the
		 * filters alone (mq_filterset_eval). */
		rc = mq_jqrun_start(&s->run) < 0 ? -1 : 0;
	}
	if (rc < 0 && mq_errcode() == EX_USAGE) {
		/* Name the filter that does not compile, in its own
		 * worker; if each does alone, the set is the bad conf. */
		err_prefix(EX_CONFIG, "the groups: filter: ");
		for (size_t i = 0; i < s->n; i++)
			if (compiled(s->f[i]) < 0) {
				compile_failed(s->f[i]);
				break;
			}
	}
	if (rc < 0)
		mq_filterset_free(s);
	return rc;
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
	bool *yes = s->n ? calloc(n ? n * s->n : 1, sizeof *yes) : NULL;
	struct iovec *body = s->n ? calloc(n ? n : 1, sizeof *body) : NULL;
	int rc = st && (!s->n || (yes && body)) ? 0 : mq_err_sys("malloc");
	if (rc == 0 && s->n) {
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
			if (!in_set(f[g])) {
				if (mq_filter_eval(f[g], &m[i], 1, o) < 0)
					rc = -1;
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
	*out = filter_parse(expr, match, n, true);
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

/* The same for a group conf as a file holds it (a replication peer's):
 * as mq_filter_check, with the error EX_CONFIG. */
int
mq_filter_conf_check(const struct mq_conf *kv, const char *what)
{
	mq_filter *f;
	if (mq_filter_from_conf(kv, what, &f) < 0)
		return -1;
	int rc = f && checked(f) < 0 ? compile_failed(f) : 0;
	mq_filter_free(f);
	return rc;
}

/* Checks the filter of a group to be made, as publishers will run it:
 * -1 (EX_USAGE) with what jqlex.c refuses, jq's message, or what is
 * wrong with a header condition. */
int
mq_filter_check(const struct mq_group_conf *c)
{
	if (!c->filter && !c->nmatch)
		return 0;
	mq_filter *f = filter_parse(c->filter, c->match, c->nmatch, true);
	int rc = f ? checked(f) : -1;
	mq_filter_free(f);
	return rc < 0 ? mq_err_recode(EX_UNAVAILABLE, EX_USAGE) : 0;
}
