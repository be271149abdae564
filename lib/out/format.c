/*
 * format.c: writing a message out, as JSON or through a kcat-style
 * format string (tokens in mq-sub(1)).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <time.h>

#include "out.h"

static char *
base64(const unsigned char *p, size_t len)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = tab[v >> 18 & 63];
		*o++ = tab[v >> 12 & 63];
		*o++ = i + 1 < len ? tab[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? tab[v & 63] : '=';
	}
	*o = 0;
	return out;
}

/* body as "body", or "body_base64" when it is not UTF-8; then o,
 * dumped on one line (and freed). */
static int
json_body_put(json_t *o, const void *data, size_t len, FILE *fp)
{
	json_t *body = json_stringn((const char *)data, len);
	if (body) {
		json_object_set_new(o, "body", body);
	} else {
		char *b64 = base64(data, len);
		if (!b64) {
			json_decref(o);
			return mq_err_sys("malloc");
		}
		json_object_set_new(o, "body_base64", json_string(b64));
		free(b64);
	}
	int rc = json_dumpf(o, fp, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (rc < 0 || putc('\n', fp) == EOF)
		return mq_err_sys("write");
	return 0;
}

int
mq_reply_write_json(const struct mq_reply *r, FILE *fp)
{
	json_t *o = json_pack("{s:s, s:s, s:i}", "correlation_id",
	    r->correlation, "in_reply_to", r->request, "status", r->status);
	if (!o)
		return mq_err(EX_SOFTWARE, "cannot build JSON");
	return json_body_put(o, r->body, r->len, fp);
}

int
mq_msg_write_json(const struct mq_msg *m, FILE *fp)
{
	char when[64];
	mq_time_rfc3339((double)m->published.tv_sec +
	    (double)(m->published.tv_nsec / 1000) / 1e6 + 5e-7, when, sizeof when);
	json_t *hdrs = json_object();
	for (size_t i = 0; hdrs && i < m->nheaders; i++)
		json_object_set_new(hdrs, m->headers[i].name,
		    json_string(m->headers[i].value));
	json_t *o = json_pack("{s:s, s:s?, s:s, s:I, s:I, s:s?, s:o, s:s, s:I, "
	    "s:s?}", "id", m->id, "receipt", m->receipt, "topic",
	    m->topic ? m->topic : "", "partition", (json_int_t)m->partition,
	    "seq", (json_int_t)m->seq, "key", m->key, "headers", hdrs,
	    "published", when, "attempts", (json_int_t)m->attempts,
	    "signer", m->signer);
	if (!o)
		return mq_err(EX_SOFTWARE, "cannot build JSON");
	return json_body_put(o, m->body, m->len, fp);
}

static const char tokens[] = "tpokKsSiraThP%";

/* The length of NAME in "%{NAME}h" at p (after the '%'), or 0 when p
 * holds no such token. */
static size_t
named_len(const char *p)
{
	if (*p != '{')
		return 0;
	size_t n = strcspn(p + 1, "}");
	return n && p[1 + n] == '}' && p[2 + n] == 'h' ? n : 0;
}

int
mq_format_check(const char *fmt)
{
	for (const char *p = fmt; *p; p++) {
		if (*p == '%') {
			size_t n = named_len(p + 1);
			if (n) {
				p += n + 3;
				continue;
			}
			if (!p[1] || !strchr(tokens, p[1]))
				return mq_err(EX_DATAERR, "bad format token '%%%.1s' "
				    "(known: %%t %%p %%o %%k %%K %%s %%S %%i %%r "
				    "%%a %%T %%h %%{NAME}h %%P %%%%)", p + 1);
			p++;
		} else if (*p == '\\') {
			if (!p[1] || !strchr("nt0\\", p[1]))
				return mq_err(EX_DATAERR, "bad format escape '\\%.1s' "
				    "(known: \\n \\t \\0 \\\\)", p + 1);
			p++;
		}
	}
	return 0;
}

struct named {
	const char *name;
	size_t len;
	FILE *fp;
};

/* Writes the value of the header asked for, the first of that name. */
static int
write_named(void *arg, const char *name, const char *value)
{
	struct named *n = arg;
	if (strlen(name) != n->len || strncasecmp(name, n->name, n->len))
		return 0;
	fputs(value, n->fp);
	return 1;
}

int
mq_msg_write_format(const struct mq_msg *m, const char *fmt, FILE *fp)
{
	for (const char *p = fmt; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			putc(*p == 'n' ? '\n' : *p == 't' ? '\t' : *p == '0' ? 0 : *p,
			    fp);
			continue;
		}
		if (*p != '%' || !p[1]) {
			putc(*p, fp);
			continue;
		}
		struct named n = { p + 2, named_len(p + 1), fp };
		if (n.len) {
			mq_msg_headers_each(m, write_named, &n);
			p += n.len + 3;
			continue;
		}
		switch (*++p) {
		case 't': fputs(m->topic ? m->topic : "", fp); break;
		case 'p': fprintf(fp, "%u", m->partition); break;
		case 'o': fprintf(fp, "%" PRIu64, m->seq); break;
		case 'k': fputs(m->key ? m->key : "", fp); break;
		case 'K': fprintf(fp, "%zu", m->key ? strlen(m->key) : 0); break;
		case 's': fwrite(m->body, 1, m->len, fp); break;
		case 'S': fprintf(fp, "%zu", m->len); break;
		case 'i': fputs(m->id, fp); break;
		case 'r': fputs(m->receipt ? m->receipt : "", fp); break;
		case 'a': fprintf(fp, "%u", m->attempts); break;
		case 'P': fputs(m->signer ? m->signer : "", fp); break;
		case 'T':
			fprintf(fp, "%lld", (long long)m->published.tv_sec * 1000 +
			    m->published.tv_nsec / 1000000);
			break;
		case 'h':
			for (size_t i = 0; i < m->nheaders; i++)
				fprintf(fp, "%s%s=%s", i ? "," : "",
				    m->headers[i].name, m->headers[i].value);
			break;
		default: putc(*p, fp); break;
		}
	}
	return ferror(fp) ? mq_err_sys("write") : 0;
}

int
mq_reply_write_format(const struct mq_reply *r, const char *topic,
    const char *fmt, FILE *fp)
{
	char status[16];
	snprintf(status, sizeof status, "%d", r->status);
	struct mq_header h[] = {
		{ "Correlation-Id", (char *)r->correlation },
		{ "In-Reply-To", (char *)r->request },
		{ "Mq-Reply-Status", status },
	};
	/* The request's id and topic; the reply itself is no stored
	 * message: no partition, offset, key, receipt or time. */
	struct mq_msg m = { .topic = (char *)topic, .headers = h,
	    .nheaders = sizeof h / sizeof *h, .body = r->body, .len = r->len };
	snprintf(m.id, sizeof m.id, "%s", r->request);
	return mq_msg_write_format(&m, fmt, fp);
}
