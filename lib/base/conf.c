/*
 * conf.c: configuration files are "key=value" lines; '#' starts a comment
 * line.  Unknown keys are kept (a newer tool may have written them) and
 * ignored by readers that do not know them.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base.h"

#define MQ_CONF_MAX (64 * 1024)

int
mq_conf_parse(const char *text, size_t len, const char *what,
    struct mq_conf *c)
{
	memset(c, 0, sizeof *c);
	size_t cap = 0;
	const char *p = text, *end = text + len;
	unsigned line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		line++;
		if (e > p && *p != '#') {
			const char *eq = memchr(p, '=', (size_t)(e - p));
			if (!eq || eq == p) {
				mq_conf_free(c);
				return mq_err(EX_CONFIG,
				    "%s: line %u: expected key=value", what, line);
			}
			if (c->n == cap) {
				cap = cap ? cap * 2 : 16;
				char **k = reallocarray(c->keys, cap, sizeof *k);
				char **v = k ? reallocarray(c->vals, cap, sizeof *v) : NULL;
				if (k)
					c->keys = k;
				if (v)
					c->vals = v;
				if (!k || !v) {
					mq_conf_free(c);
					return mq_err_sys("malloc");
				}
			}
			c->keys[c->n] = strndup(p, (size_t)(eq - p));
			c->vals[c->n] = strndup(eq + 1, (size_t)(e - eq - 1));
			c->n++;
			if (!c->keys[c->n - 1] || !c->vals[c->n - 1]) {
				mq_conf_free(c);
				return mq_err_sys("malloc");
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int
mq_conf_read(int dirfd, const char *path, struct mq_conf *c)
{
	char *buf;
	size_t len;
	/* Not a regular file, or too large: malformed, as a bad line
	 * would be. */
	if (mq_read_at(dirfd, path, MQ_CONF_MAX, &buf, &len) < 0)
		return mq_err_recode(EX_DATAERR, EX_CONFIG);
	int rc = mq_conf_parse(buf, len, path, c);
	free(buf);
	return rc;
}

const char *
mq_conf_get(const struct mq_conf *c, const char *key)
{
	const char *v = NULL;
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->keys[i], key))
			v = c->vals[i];            /* the last one wins */
	return v;
}

int
mq_conf_get_u64(const struct mq_conf *c, const char *key, uint64_t dflt,
    uint64_t *out, const char *what)
{
	const char *v = mq_conf_get(c, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *end || errno || *v == '-')
		return mq_err(EX_CONFIG, "%s: bad value for %s: '%s'", what, key, v);
	*out = x;
	return 0;
}

int
mq_conf_get_double(const struct mq_conf *c, const char *key, double dflt,
    double *out, const char *what)
{
	const char *v = mq_conf_get(c, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (!*v || *end || errno || !isfinite(x) || x < 0)
		return mq_err(EX_CONFIG, "%s: bad value for %s: '%s'", what, key, v);
	*out = x;
	return 0;
}

/* Sets the value of every line with this key (the key must exist). */
int
mq_conf_set(struct mq_conf *c, const char *key, const char *val)
{
	int found = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (strcmp(c->keys[i], key))
			continue;
		char *v = strdup(val);
		if (!v)
			return mq_err_sys("malloc");
		free(c->vals[i]);
		c->vals[i] = v;
		found = 1;
	}
	return found ? 0 : mq_err(EX_SOFTWARE, "no key %s to set", key);
}

/* Removes every line with this key. */
void
mq_conf_del(struct mq_conf *c, const char *key)
{
	size_t o = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (!strcmp(c->keys[i], key)) {
			free(c->keys[i]);
			free(c->vals[i]);
			continue;
		}
		c->keys[o] = c->keys[i];
		c->vals[o++] = c->vals[i];
	}
	c->n = o;
}

/* Appends a line. */
int
mq_conf_add(struct mq_conf *c, const char *key, const char *val)
{
	char **k = reallocarray(c->keys, c->n + 1, sizeof *k);
	if (k)
		c->keys = k;
	char **v = k ? reallocarray(c->vals, c->n + 1, sizeof *v) : NULL;
	if (v)
		c->vals = v;
	if (!k || !v)
		return mq_err_sys("malloc");
	c->keys[c->n] = strdup(key);
	c->vals[c->n] = strdup(val);
	c->n++;
	return c->keys[c->n - 1] && c->vals[c->n - 1] ? 0 : mq_err_sys("malloc");
}

int
mq_conf_addf(struct mq_conf *c, const char *key, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof buf)
		return mq_err(EX_SOFTWARE, "conf value for %s too long", key);
	return mq_conf_add(c, key, buf);
}

/* A value on one line: backslash and newline become \\ and \n. */
char *
mq_conf_escape(const char *s)
{
	char *out = malloc(2 * strlen(s) + 1), *o = out;
	if (!out) {
		mq_err_sys("malloc");
		return NULL;
	}
	for (; *s; s++) {
		if (*s == '\\' || *s == '\n')
			*o++ = '\\';
		*o++ = *s == '\n' ? 'n' : *s;
	}
	*o = 0;
	return out;
}

char *
mq_conf_unescape(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	if (!out) {
		mq_err_sys("malloc");
		return NULL;
	}
	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			*o++ = *s == 'n' ? '\n' : *s;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
	return out;
}

/* Writes the lines back in their order, unknown keys included. */
int
mq_conf_render(const struct mq_conf *c, char **out)
{
	size_t len = 1, o = 0;
	for (size_t i = 0; i < c->n; i++)
		len += strlen(c->keys[i]) + strlen(c->vals[i]) + 2;
	char *buf = malloc(len);
	if (!buf)
		return mq_err_sys("malloc");
	for (size_t i = 0; i < c->n; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s=%s\n", c->keys[i],
		    c->vals[i]);
	buf[o] = 0;
	*out = buf;
	return 0;
}

void
mq_conf_free(struct mq_conf *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->keys[i]);
		free(c->vals[i]);
	}
	free(c->keys);
	free(c->vals);
	memset(c, 0, sizeof *c);
}
