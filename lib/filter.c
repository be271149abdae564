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
 * value (an empty body included), nor when it fails or outputs nothing;
 * header conditions alone work on any body.  See mq-sub(1), FILTERS.
 *
 * The publisher evaluates filters (publish.c), so a message that does not
 * match never enters the group's queue; mq-sub --filter evaluates one at
 * consume time.  The body is parsed once per message, however many
 * filters look at it (struct mq_fmsg).
 */
#include <fnmatch.h>
#include <jq.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

#include "internal.h"

struct mq_filter {
	jq_state *jq;                   /* NULL: no jq program */
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

mq_filter *
mq_filter_compile(const char *expr, const char *const *match, size_t nmatch)
{
	mq_filter *f = calloc(1, sizeof *f);
	if (!f || (nmatch && (!(f->name = calloc(nmatch, sizeof *f->name)) ||
	    !(f->glob = calloc(nmatch, sizeof *f->glob))))) {
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
	struct jq_errbuf e = { .have = 0 };
	if (!(f->jq = jq_init())) {
		mq_err_sys("jq_init");
		mq_filter_free(f);
		return NULL;
	}
	jq_set_error_cb(f->jq, on_error, &e);
	/* No modules: without a search path jq 1.6 asserts on import. */
	jq_set_attr(f->jq, jv_string("JQ_LIBRARY_PATH"), jv_array());
	if (!jq_compile(f->jq, expr)) {
		mq_err(EX_USAGE, "bad filter: %s", e.have ? e.msg :
		    "jq cannot compile it");
		mq_filter_free(f);
		return NULL;
	}
	jq_set_error_cb(f->jq, on_error, NULL);
	return f;
}

void
mq_filter_free(mq_filter *f)
{
	if (!f)
		return;
	if (f->jq)
		jq_teardown(&f->jq);
	for (size_t i = 0; i < f->n; i++) {
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
	return f->jq != NULL;
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

int
mq_filter_eval(mq_filter *f, struct mq_fmsg *m)
{
	for (size_t i = 0; i < f->n; i++)
		if (!header_holds(f, i, m))
			return 0;
	if (!f->jq)
		return 1;
	if (!m->parsed) {
		jv v = m->len > 0 && m->len <= INT_MAX ?
		    jv_parse_sized((const char *)m->body, (int)m->len) :
		    jv_invalid();
		m->parsed = -1;
		if (jv_is_valid(v)) {
			jv *p = malloc(sizeof *p);
			if (!p) {
				jv_free(v);
				m->parsed = 0;
				return mq_err_sys("malloc");
			}
			*p = v;
			m->json = p;
			m->parsed = 1;
		} else {
			jv_free(v);
		}
	}
	if (m->parsed < 0)
		return 0;
	jq_start(f->jq, jv_copy(*(jv *)m->json), 0);
	jv r = jq_next(f->jq);
	jv_kind k = jv_get_kind(r);
	jv_free(r);
	return k != JV_KIND_INVALID && k != JV_KIND_NULL && k != JV_KIND_FALSE;
}

void
mq_fmsg_done(struct mq_fmsg *m)
{
	if (m->parsed > 0) {
		jv_free(*(jv *)m->json);
		free(m->json);
	}
	m->json = NULL;
	m->parsed = 0;
}

int
mq_filter_match(mq_filter *f, const struct mq_msg *msg)
{
	struct mq_fmsg m = {
		.key = msg->key, .headers = msg->headers,
		.nheaders = msg->nheaders, .body = msg->body, .len = msg->len,
	};
	int rc = mq_filter_eval(f, &m);
	mq_fmsg_done(&m);
	return rc;
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
	*out = mq_filter_compile(expr, match, n);
	free(match);
	free(expr);
	if (!*out) {
		char pre[MQ_NAME_MAX + 64];
		snprintf(pre, sizeof pre, "%s: filter: ", what);
		return err_prefix(EX_CONFIG, pre);
	}
	return 0;
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
