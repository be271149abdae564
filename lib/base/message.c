/*
 * message.c: the message file format (mq-spool(5)).
 *
 * A message is an RFC 5322-style header block, a blank line, and the raw
 * body.  The reserved headers come first, in a fixed order; user headers
 * follow in the order given.  Content-Length and Content-Hash (XXH3-128
 * of the body) let a reader prove it holds the whole message: a file that
 * does not match them is never delivered, and neither is one whose
 * Message-Id is not the id its file's name says.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <time.h>
#include <xxhash.h>

#include "base.h"

#define MQ_HEADER_NAME_MAX 100
#define MQ_KEY_MAX 1024

static const char *const reserved[] = {
	"Message-Id", "Topic", "Partition", "Seq", "Key", "Published",
	"Content-Length", "Content-Hash",
};

static bool
is_reserved(const char *name, size_t len)
{
	if (len >= 3 && !strncasecmp(name, "Mq-", 3))
		return true;
	for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
		if (strlen(reserved[i]) == len && !strncasecmp(name, reserved[i], len))
			return true;
	return false;
}

static int
value_check(const char *what, const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return mq_err(EX_DATAERR, "%s contains a control character",
			    what);
	return 0;
}

int
mq_header_parse(const char *line, struct mq_header *out)
{
	const char *colon = strchr(line, ':');
	size_t nlen = colon ? (size_t)(colon - line) : 0;
	if (!colon || nlen == 0)
		return mq_err(EX_DATAERR, "bad header '%.60s': expected "
		    "'Name: value'", line);
	if (nlen > MQ_HEADER_NAME_MAX)
		return mq_err(EX_DATAERR, "header name longer than %d characters",
		    MQ_HEADER_NAME_MAX);
	for (size_t i = 0; i < nlen; i++)
		if (line[i] <= 0x20 || line[i] >= 0x7f)
			return mq_err(EX_DATAERR, "bad header name '%.*s'",
			    (int)nlen, line);
	if (is_reserved(line, nlen))
		return mq_err(EX_DATAERR, "header '%.*s' is reserved", (int)nlen,
		    line);
	const char *v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (value_check("header value", v) < 0)
		return -1;
	out->name = strndup(line, nlen);
	out->value = strdup(v);
	if (!out->name || !out->value) {
		free(out->name);
		free(out->value);
		return mq_err_sys("malloc");
	}
	return 0;
}

int
mq_key_check(const char *key)
{
	if (!*key)
		return mq_err(EX_DATAERR, "empty key");
	if (strlen(key) > MQ_KEY_MAX)
		return mq_err(EX_DATAERR, "key longer than %d bytes", MQ_KEY_MAX);
	return value_check("key", key);
}

void
mq_time_rfc3339(double t, char *buf, size_t len)
{
	/* The second's part formatted once a second: a publisher stamps
	 * every message with it. */
	static _Thread_local time_t last = -1;
	static _Thread_local char day[32];
	static _Thread_local size_t dn;
	time_t sec = (time_t)t;
	long usec = (long)((t - (double)sec) * 1e6);
	if (usec > 999999)
		usec = 999999;
	if (sec != last || sec < 0) {
		struct tm tm;
		gmtime_r(&sec, &tm);
		dn = strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
		last = sec;
	}
	if (usec < 0 || len < dn + 9) {
		snprintf(buf, len, "%.*s.%06ldZ", (int)dn, day, usec);
		return;
	}
	char *o = mq_put(buf, day, dn);
	*o++ = '.';
	o = mq_put_u64w(o, (uint64_t)usec, 6);
	*o++ = 'Z';
	*o = 0;
}

static void
hash_hex(const void *body, size_t len, char out[33])
{
	XXH128_hash_t h = XXH3_128bits(body, len);
	*mq_put_hex(mq_put_hex(out, (uint64_t)h.high64, 16),
	    (uint64_t)h.low64, 16) = 0;
}

void
mq_content_key(const void *body, size_t len, char out[48])
{
	char hex[33];
	hash_hex(body, len, hex);
	snprintf(out, 48, "xxh3-128:%s", hex);
}

/* Renders the header block of a message, blank line included; the body
 * is written after it as it is. */
int
mq_msg_render(const char *topic, double ttl, unsigned k, uint64_t seq,
    const char *id, const struct mq_pub_msg *m, size_t reserve, double now,
    char **out, size_t *outlen, size_t *sig_at)
{
	char hash[33], when[64];
	hash_hex(m->body, m->len, hash);
	mq_time_rfc3339(now, when, sizeof when);

	size_t cap = 640 + strlen(topic) + (m->key ? strlen(m->key) : 0) +
	    (m->idempotency_key ? strlen(m->idempotency_key) : 0);
	/* The topic's ttl applies to a message that has no expiry of its
	 * own, counted from its publication. */
	double expires = m->expires > 0 ? m->expires :
	    ttl > 0 ? now + ttl : 0;
	for (size_t i = 0; i < m->nheaders; i++)
		cap += strlen(m->headers[i].name) + strlen(m->headers[i].value) + 4;
	char *buf = malloc(cap);
	if (!buf)
		return mq_err_sys("malloc");
	/* Every message's lines, without a format string: mq-pub -l
	 * renders hundreds of thousands a second. */
	char *e = mq_put_str(PUT_LIT(buf, "Message-Id: "), id);
	e = mq_put_str(PUT_LIT(e, "\nTopic: "), topic);
	e = mq_put_u64(PUT_LIT(e, "\nPartition: "), k);
	e = mq_put_u64(PUT_LIT(e, "\nSeq: "), seq);
	*e++ = '\n';
	if (m->key)
		e = PUT_LIT(mq_put_str(PUT_LIT(e, "Key: "), m->key), "\n");
	e = mq_put_str(PUT_LIT(e, "Published: "), when);
	e = mq_put_u64(PUT_LIT(e, "\nContent-Length: "), m->len);
	e = mq_put(PUT_LIT(e, "\nContent-Hash: xxh3-128:"), hash, 32);
	*e++ = '\n';
	size_t o = (size_t)(e - buf);
	char at[64];
	if (m->idempotency_key)
		o += (size_t)snprintf(buf + o, cap - o, "Mq-Idempotency-Key: %s\n",
		    m->idempotency_key);
	if (m->deliver_at > 0) {
		mq_time_rfc3339(m->deliver_at, at, sizeof at);
		o += (size_t)snprintf(buf + o, cap - o, "Mq-Deliver-At: %s\n", at);
	}
	if (expires > 0) {
		mq_time_rfc3339(expires, at, sizeof at);
		o += (size_t)snprintf(buf + o, cap - o, "Mq-Expires: %s\n", at);
	}
	/* The signature lines, if any, go last of the reserved ones (the
	 * publisher writes them in when the chunk is signed). */
	*sig_at = o;
	for (size_t i = 0; i < m->nheaders; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s: %s\n",
		    m->headers[i].name, m->headers[i].value);
	buf[o++] = '\n';
	if (o + reserve > MQ_HEADER_BLOCK_MAX) {
		free(buf);
		return mq_err(EX_DATAERR, "headers longer than %d bytes",
		    MQ_HEADER_BLOCK_MAX - (int)reserve);
	}
	*out = buf;
	*outlen = o;
	return 0;
}

/* Reads exactly n digits. */
static int
digits_at(const char *s, int n, long *out)
{
	long v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Parses the Published form, "YYYY-MM-DDTHH:MM:SS.uuuuuuZ". */
int
mq_time_parse(const char *s, struct timespec *ts)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
	long f[7];
	static const int pos[7] = { 0, 5, 8, 11, 14, 17, 20 };
	static const int len[7] = { 4, 2, 2, 2, 2, 2, 6 };
	if (strlen(s) != sizeof shape - 1)
		return -1;
	for (size_t i = 0; i < sizeof shape - 1; i++)
		if (shape[i] != 'd' && s[i] != shape[i])
			return -1;
	for (int i = 0; i < 7; i++)
		if (digits_at(s + pos[i], len[i], &f[i]) < 0)
			return -1;
	struct tm tm = { .tm_year = (int)f[0] - 1900, .tm_mon = (int)f[1] - 1,
	    .tm_mday = (int)f[2], .tm_hour = (int)f[3], .tm_min = (int)f[4],
	    .tm_sec = (int)f[5] };
	ts->tv_sec = timegm(&tm);
	ts->tv_nsec = f[6] * 1000;
	return 0;
}

static int
push_header(struct mq_msg *m, const char *name, size_t nlen, const char *v)
{
	struct mq_header *h = reallocarray(m->headers, m->nheaders + 1,
	    sizeof *h);
	if (!h)
		return mq_err_sys("malloc");
	m->headers = h;
	h[m->nheaders].name = strndup(name, nlen);
	h[m->nheaders].value = strdup(v);
	m->nheaders++;
	if (!h[m->nheaders - 1].name || !h[m->nheaders - 1].value)
		return mq_err_sys("malloc");
	return 0;
}

/* Parses a message file held in buf (NUL-terminated at len, modified in
 * place).  The body points into buf, which the message then owns. */
int
mq_msg_parse(char *buf, size_t len, struct mq_msg *m)
{
	char *p = buf, *end = buf + len;
	int have_len = 0, have_hash = 0, have_id = 0;
	uint64_t clen = 0;
	char hash[33] = "";
	for (;;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return mq_err(EX_DATAERR, "no end of headers");
		if (nl == p) {
			p = nl + 1;
			break;
		}
		/* A NUL would hide the rest of its line from this parse but
		 * not from the signed form (sign.c). */
		if (memchr(p, 0, (size_t)(nl - p)))
			return mq_err(EX_DATAERR, "NUL in a header line");
		*nl = 0;
		char *colon = strchr(p, ':');
		if (!colon)
			return mq_err(EX_DATAERR, "bad header line");
		size_t nlen = (size_t)(colon - p);
		char *v = colon + 1;
		while (*v == ' ')
			v++;
#define IS(s) (nlen == sizeof(s) - 1 && !strncasecmp(p, s, nlen))
		if (IS("Message-Id")) {
			if (!mq_is_id(v, strlen(v)))
				return mq_err(EX_DATAERR, "bad Message-Id");
			memcpy(m->id, v, MQ_ID_LEN + 1);
			have_id = 1;
		} else if (IS("Topic")) {
			free(m->topic);         /* given twice: the last */
			if (!(m->topic = strdup(v)))
				return mq_err_sys("malloc");
		} else if (IS("Partition")) {
			m->partition = (unsigned)strtoul(v, NULL, 10);
		} else if (IS("Seq")) {
			m->seq = strtoull(v, NULL, 10);
		} else if (IS("Key")) {
			free(m->key);
			if (!(m->key = strdup(v)))
				return mq_err_sys("malloc");
		} else if (IS("Published")) {
			if (mq_time_parse(v, &m->published) < 0)
				return mq_err(EX_DATAERR, "bad Published");
		} else if (IS("Content-Length")) {
			clen = strtoull(v, NULL, 10);
			have_len = 1;
		} else if (IS("Content-Hash")) {
			if (strncmp(v, "xxh3-128:", 9) || strlen(v + 9) != 32)
				return mq_err(EX_DATAERR, "bad Content-Hash");
			memcpy(hash, v + 9, 33);
			have_hash = 1;
		} else if (IS("Mq-Deliver-At") || IS("Mq-Expires")) {
			struct timespec ts;
			if (mq_time_parse(v, &ts) < 0)
				return mq_err(EX_DATAERR, "bad %.*s", (int)nlen, p);
			*(IS("Mq-Expires") ? &m->expires : &m->deliver_at) =
			    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
		} else if (IS("Mq-Idempotency-Key")) {
			free(m->idempotency_key);
			if (!(m->idempotency_key = strdup(v)))
				return mq_err_sys("malloc");
		} else if (IS("Mq-Sealed")) {
			free(m->sealed);
			if (!(m->sealed = strdup(v)))
				return mq_err_sys("malloc");
		} else if (!is_reserved(p, nlen)) {
			if (push_header(m, p, nlen, v) < 0)
				return -1;
		}
#undef IS
		p = nl + 1;
	}
	if (!have_id || !have_len || !have_hash)
		return mq_err(EX_DATAERR, "missing Message-Id, Content-Length or "
		    "Content-Hash");
	if ((uint64_t)(end - p) != clen)
		return mq_err(EX_DATAERR, "body is %zu bytes, Content-Length says "
		    "%" PRIu64, (size_t)(end - p), clen);
	char got[33];
	hash_hex(p, clen, got);
	if (strcmp(got, hash))
		return mq_err(EX_DATAERR, "body does not match Content-Hash");
	m->body = (const unsigned char *)p;
	m->len = (size_t)clen;
	return 0;
}

/* The id in a file's name is the one the consumers trust (the ledger
 * takes it for a file name): a message file that says another is not
 * that message. */
int
mq_msg_check_name(const struct mq_msg *m, const char *name)
{
	uint64_t seq;
	if (mq_seq_of(name, &seq) < 0 ||
	    memcmp(name + MQ_SEQ_DIGITS + 1, m->id, MQ_ID_LEN))
		return mq_err(EX_DATAERR, "Message-Id %s is not the id of %.*s",
		    m->id, MQ_KEY_LEN, name);
	return 0;
}

void
mq_msg_free(struct mq_msg *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nheaders; i++) {
		free(m->headers[i].name);
		free(m->headers[i].value);
	}
	free(m->headers);
	free(m->topic);
	free(m->key);
	free(m->idempotency_key);
	free(m->receipt);
	free(m->sealed);
	free(m->priv);
	free(m);
}

/* A time as the file has it: Published to the nanosecond it holds, the
 * others parsed into a double, rounded back to the microsecond. */
static void
time_text(const struct timespec *ts, double t, char buf[64])
{
	if (ts) {
		struct tm tm;
		gmtime_r(&ts->tv_sec, &tm);
		size_t n = strftime(buf, 64, "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(buf + n, 64 - n, ".%06ldZ", ts->tv_nsec / 1000);
	} else {
		mq_time_rfc3339(t + 5e-7, buf, 64);
	}
}

int
mq_msg_headers_each(const struct mq_msg *m,
    int (*fn)(void *, const char *, const char *), void *arg)
{
	char part[16], seq[24], pub[64], at[64], exp[64];
	snprintf(part, sizeof part, "%u", m->partition);
	snprintf(seq, sizeof seq, "%" PRIu64, m->seq);
	time_text(&m->published, 0, pub);
	time_text(NULL, m->deliver_at, at);
	time_text(NULL, m->expires, exp);
	const struct mq_header std[] = {
		{ "Message-Id", (char *)m->id },
		{ "Topic", m->topic },
		{ "Partition", part },
		{ "Seq", seq },
		{ "Key", m->key },
		{ "Published", pub },
		{ "Mq-Idempotency-Key", m->idempotency_key },
		{ "Mq-Deliver-At", m->deliver_at > 0 ? at : NULL },
		{ "Mq-Expires", m->expires > 0 ? exp : NULL },
	};
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof std / sizeof *std; i++)
		if (std[i].value)
			rc = fn(arg, std[i].name, std[i].value);
	for (size_t i = 0; !rc && i < m->nheaders; i++)
		rc = fn(arg, m->headers[i].name, m->headers[i].value);
	return rc;
}

const char *
mq_msg_header_value(const struct mq_msg *m, const char *name)
{
	for (size_t i = 0; i < m->nheaders; i++)
		if (!strcasecmp(m->headers[i].name, name))
			return m->headers[i].value;
	return NULL;
}

const char *
mq_msg_header(const char *data, size_t len, const char *name, size_t *vlen)
{
	const char *end = memmem(data, len, "\n\n", 2);
	if (!end)
		return NULL;
	size_t nlen = strlen(name);
	/* Every header line but the first (Message-Id) follows a newline. */
	for (const char *p = data; (p = memchr(p, '\n', (size_t)(end - p))) &&
	    p < end; p++) {
		if ((size_t)(end - p) < nlen + 3 || memcmp(p + 1, name, nlen) ||
		    memcmp(p + 1 + nlen, ": ", 2))
			continue;
		const char *v = p + 1 + nlen + 2;
		*vlen = (size_t)((const char *)memchr(v, '\n',
		    (size_t)(end + 1 - v)) - v);
		return v;
	}
	return NULL;
}
