/*
 * names.c: the names the protocol relies on.
 *
 * Topic and group names become directory and file names, so they are
 * restricted to [A-Za-z0-9_.-], 1 to 200 characters, not starting or ending
 * with '.', with no empty level ("a..b"): no '/', no "..", no control
 * characters can reach a path.
 *
 * Entry names inside a partition (mq-spool(5)):
 *   KEY            <seq: 20 digits>.<id: 32 hex>, seq at most MQ_SEQ_MAX
 *   new/ entry     KEY, or KEY,a<attempts>[,d<deferred>]
 *   cur/ entry     KEY,a<attempts>[,d<deferred>],l<deadline ms>,r<8 hex>:2,
 *   delay/ entry   <due ms: 20 digits>.<new/ entry>
 *   dead letter    the new/ entry, with attempts, as a delivery names it
 * Attempts count deliveries; deferred counts those a handler asked to
 * have again later (exit 75), which are not failures.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base.h"

/* Quotes a name for an error message, escaping anything unprintable. */
const char *
mq_shown(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	for (; *s && o + 5 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
	}
	if (*s && o + 4 < len)
		o += (size_t)snprintf(buf + o, len - o, "...");
	buf[o] = 0;
	return buf;
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* What is wrong with a name of len bytes, or NULL: the one grammar of
 * topic and group names (see the top). */
static const char *
name_fault(const char *name, size_t len)
{
	if (len == 0)
		return "empty";
	if (len > MQ_NAME_MAX)
		return "longer than " STR(MQ_NAME_MAX) " characters";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (!isalnum(c) && c != '_' && c != '.' && c != '-')
			return "only A-Z a-z 0-9 _ . - are allowed";
	}
	if (name[0] == '.' || name[len - 1] == '.' ||
	    memmem(name, len, "..", 2))
		return "empty level (leading, trailing or double '.')";
	return NULL;
}

bool
mq_is_name(const char *name, size_t len)
{
	return name_fault(name, len) == NULL;
}

int
mq_name_check(const char *kind, const char *name)
{
	char b[64];
	const char *fault = name_fault(name ? name : "", name ? strlen(name) : 0);
	if (!fault)
		return 0;
	if (!name || !*name)
		return mq_err(EX_USAGE, "invalid %s name: empty", kind);
	return mq_err(EX_USAGE, "invalid %s name '%s': %s", kind,
	    mq_shown(name, b, sizeof b), fault);
}

static bool
digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool
lowhex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* As digits and lowhex, but strspn checks 16 characters at a time where
 * the CPU can (mq-stat checks a million names, each twice). */
static bool
key_prefix(const char *s)
{
	return strspn(s, "0123456789") >= MQ_SEQ_DIGITS &&
	    s[MQ_SEQ_DIGITS] == '.' &&
	    strspn(s + MQ_SEQ_DIGITS + 1, "0123456789abcdef") >= MQ_ID_LEN;
}

/* The 20 digits of a key's sequence number; UINT64_MAX (more than
 * MQ_SEQ_MAX) for a value past it.  19 digits always fit. */
static uint64_t
seq_digits(const char *s)
{
	uint64_t x = 0;
	for (size_t i = 0; i < MQ_SEQ_DIGITS - 1; i++)
		x = x * 10 + (uint64_t)(s[i] - '0');
	if (__builtin_mul_overflow(x, 10, &x) ||
	    __builtin_add_overflow(x, (uint64_t)(s[MQ_SEQ_DIGITS - 1] - '0'), &x))
		return UINT64_MAX;
	return x;
}

/* Past MQ_SEQ_MAX only from 18446744073709551615 on: a first digit 0
 * (every real KEY for ages) needs no more look. */
static bool
seq_fits(const char *s)
{
	return s[0] == '0' || seq_digits(s) <= MQ_SEQ_MAX;
}

bool
mq_is_id(const char *s, size_t len)
{
	return len == MQ_ID_LEN && lowhex(s, len);
}

bool
mq_is_key(const char *name)
{
	return key_prefix(name) && name[MQ_KEY_LEN] == 0 && seq_fits(name);
}

/* When the message was published: its id starts with the microseconds,
 * 13 hex digits.  A key's are lower-case hex and read here directly (mq-stat
 * reads a million); anything else goes through strtoull as it always did. */
double
mq_key_time(const char *key)
{
	/* A name too short to hold the time has none (it is no key). */
	if (strnlen(key, MQ_SEQ_DIGITS + 1 + 13) < MQ_SEQ_DIGITS + 1 + 13)
		return 0;
	return mq_id_time(key + MQ_SEQ_DIGITS + 1);
}

double
mq_id_time(const char *id)
{
	const char *h = id;
	if (strnlen(id, 13) < 13)
		return 0;
	uint64_t x = 0;
	size_t i;
	for (i = 0; i < 13; i++) {
		unsigned char c = (unsigned char)h[i];
		if (c >= '0' && c <= '9')
			x = x << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x = x << 4 | (uint64_t)(c - 'a' + 10);
		else
			break;
	}
	if (i == 13)
		return (double)x / 1e6;
	char hex[14];
	memcpy(hex, h, 13);
	hex[13] = 0;
	return (double)strtoull(hex, NULL, 16) / 1e6;
}

int
mq_seq_of(const char *name, uint64_t *seq)
{
	if (!key_prefix(name) || !seq_fits(name))
		return -1;
	*seq = seq_digits(name);
	return 0;
}

const char *
mq_decimal(const char *p, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	const char *s = p;
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(x, 10, &x) ||
		    __builtin_add_overflow(x, (uint64_t)(*p - '0'), &x))
			return NULL;
	if (p == s || (*s == '0' && p - s > 1) || x > max)
		return NULL;
	*out = x;
	return p;
}

/* Reads digits into *out; returns the position after them or NULL. */
static const char *
number(const char *s, uint64_t *out)
{
	if (*s < '0' || *s > '9')
		return NULL;
	uint64_t x = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - 9) / 10)
			return NULL;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*out = x;
	return s;
}

int
mq_entry_parse(const char *name, struct mq_entry *e)
{
	memset(e, 0, sizeof *e);
	if (!key_prefix(name) || !seq_fits(name))
		return -1;
	memcpy(e->key, name, MQ_KEY_LEN);
	e->key[MQ_KEY_LEN] = 0;
	const char *p = name + MQ_KEY_LEN;
	if (!*p)
		return 0;
	uint64_t a, d = 0;
	if (strncmp(p, ",a", 2) || !(p = number(p + 2, &a)) || a > 1000000000)
		return -1;
	if (!strncmp(p, ",d", 2) && (!(p = number(p + 2, &d)) || d > a))
		return -1;
	e->attempts = (unsigned)a;
	e->deferred = (unsigned)d;
	if (!*p)
		return 0;
	if (strncmp(p, ",l", 2) || !(p = number(p + 2, &e->deadline_ms)))
		return -1;
	if (strncmp(p, ",r", 2) || !lowhex(p + 2, 8))
		return -1;
	memcpy(e->token, p + 2, 8);
	e->token[8] = 0;
	p += 10;
	if (*p && strcmp(p, ":2,"))
		return -1;
	e->claimed = 1;
	return 0;
}

int
mq_delay_parse(const char *name, uint64_t *due_ms, struct mq_entry *e)
{
	if (strlen(name) < MQ_SEQ_DIGITS + 1 || !digits(name, MQ_SEQ_DIGITS) ||
	    name[MQ_SEQ_DIGITS] != '.')
		return -1;
	*due_ms = strtoull(name, NULL, 10);
	return mq_entry_parse(name + MQ_SEQ_DIGITS + 1, e) < 0 || e->claimed ?
	    -1 : 0;
}

bool
mq_is_entry(const char *name)
{
	struct mq_entry e;
	return mq_entry_parse(name, &e) == 0;
}

int
mq_dead_parse(const char *name, struct mq_entry *e)
{
	char again[MQ_KEY_LEN + 32];
	return strlen(name) < sizeof again && mq_entry_parse(name, e) == 0 &&
	    !e->claimed && e->attempts > 0 &&
	    mq_entry_new_name(e, again, sizeof again) == 0 &&
	    !strcmp(again, name) ? 0 : -1;
}

/* The attempts part of a name: ",a<n>" and ",d<m>" when m > 0. */
static int
counts(const struct mq_entry *e, char *buf, size_t len)
{
	if (e->deferred)
		return mq_path(buf, len, ",a%u,d%u", e->attempts, e->deferred);
	return mq_path(buf, len, ",a%u", e->attempts);
}

int
mq_entry_new_name(const struct mq_entry *e, char *buf, size_t len)
{
	char c[32];
	if (e->attempts == 0)
		return mq_path(buf, len, "%s", e->key);
	return counts(e, c, sizeof c) < 0 ? -1 :
	    mq_path(buf, len, "%s%s", e->key, c);
}

int
mq_entry_cur_name(const struct mq_entry *e, char *buf, size_t len)
{
	char c[32];
	return counts(e, c, sizeof c) < 0 ? -1 :
	    mq_path(buf, len, "%s%s,l%" PRIu64 ",r%s:2,", e->key, c,
	    e->deadline_ms, e->token);
}

/* Failed deliveries: attempts less those deferred ("again later"). */
unsigned
mq_entry_failures(const struct mq_entry *e)
{
	return e->attempts - e->deferred;
}

int
mq_entry_delay_name(const struct mq_entry *e, uint64_t due_ms, char *buf,
    size_t len)
{
	char n[MQ_KEY_LEN + 32];
	return mq_entry_new_name(e, n, sizeof n) < 0 ? -1 :
	    mq_path(buf, len, "%020" PRIu64 ".%s", due_ms, n);
}

bool
mq_name_ok(const char *name)
{
	return name && mq_is_name(name, strlen(name));
}

/* Topic patterns (wildcard.c): dot-separated levels, "*" for one
 * level, a last ">" for one or more. */
int
mq_is_pattern(const char *name)
{
	return strchr(name, '*') || strchr(name, '>');
}

/* Whether a pattern of len bytes is of the grammar, saying nothing: a
 * journal's record may name one (mq_jargs_parse). */
bool
mq_is_pattern_name(const char *pattern, size_t len)
{
	if (!len || len > MQ_NAME_MAX)
		return false;
	const char *end = pattern + len;
	for (const char *l = pattern; l;) {
		const char *dot = memchr(l, '.', (size_t)(end - l));
		size_t n = dot ? (size_t)(dot - l) : (size_t)(end - l);
		bool ok = n > 0;
		if (ok && memchr(l, '*', n))
			ok = n == 1;
		if (ok && memchr(l, '>', n))
			ok = n == 1 && !dot;
		for (size_t i = 0; ok && i < n; i++)
			ok = l[i] == '*' || l[i] == '>' || l[i] == '_' ||
			    l[i] == '-' || (l[i] >= '0' && l[i] <= '9') ||
			    (l[i] >= 'a' && l[i] <= 'z') || (l[i] >= 'A' && l[i] <= 'Z');
		if (!ok)
			return false;
		l = dot ? dot + 1 : NULL;
	}
	return true;
}

int
mq_pattern_check(const char *pattern)
{
	char b[64];
	size_t len = strlen(pattern);
	if (!len || len > MQ_NAME_MAX)
		return mq_err(EX_USAGE, "invalid pattern '%s': 1 to %d characters",
		    mq_shown(pattern, b, sizeof b), MQ_NAME_MAX);
	if (!mq_is_pattern_name(pattern, len))
		return mq_err(EX_USAGE, "invalid pattern '%s': levels are "
		    "names, '*' (one level) or a last '>' (the rest)",
		    mq_shown(pattern, b, sizeof b));
	return 0;
}

bool
mq_pattern_match(const char *p, const char *t)
{
	for (;;) {
		const char *pd = strchr(p, '.'), *td = strchr(t, '.');
		size_t pn = pd ? (size_t)(pd - p) : strlen(p);
		size_t tn = td ? (size_t)(td - t) : strlen(t);
		if (pn == 1 && *p == '>')
			return tn > 0;
		if (!(pn == 1 && *p == '*') && (pn != tn || memcmp(p, t, pn)))
			return false;
		if (!pd || !td)
			return !pd && !td;
		p = pd + 1;
		t = td + 1;
	}
}
