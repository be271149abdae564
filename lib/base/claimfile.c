/*
 * claimfile.c: a claim of format 2, p<k>/g/<group>/claims/<name>
 * (mq-spool(5), SEGMENTED STORAGE, Claims).
 *
 * A claim is a range of a partition's records handed out together, with
 * one lease.  Its name says which and whose,
 *   <first, 20 digits>+<n>,r<token, 8 hex>
 * and the file holds one fixed-width line, rewritten in place as the
 * cursor is (fixline.c):
 *   mq-claim 2 deadline=<20 digits> settled=<128 hex> sum=<8 hex>\n
 * deadline is the lease's end in ms since the epoch; settled has a bit
 * per record of the range (bit i of byte i/8 for first + i, the bytes in
 * hexadecimal in order), set once the record is settled.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "base.h"

#define CLAIM_BODY (20 + 20 + 9 + 2 * MQ_CLAIM_MAX / 8)
#define CLAIM_SIZE (CLAIM_BODY + 14)

int
mq_claim_name_parse(const char *name, struct mq_claim_name *c)
{
	size_t len = strlen(name);
	if (len < MQ_SEQ_DIGITS + 12 || len > MQ_SEQ_DIGITS + 14 ||
	    name[MQ_SEQ_DIGITS] != '+')
		return -1;
	uint64_t first = 0, n;
	for (size_t i = 0; i < MQ_SEQ_DIGITS; i++) {
		if (name[i] < '0' || name[i] > '9' ||
		    __builtin_mul_overflow(first, 10, &first) ||
		    __builtin_add_overflow(first, (uint64_t)(name[i] - '0'),
		    &first))
			return -1;
	}
	/* Canonical: n without a leading zero, 1 .. MQ_CLAIM_MAX, the
	 * range within the sequence numbers. */
	const char *p = mq_decimal(name + MQ_SEQ_DIGITS + 1, MQ_CLAIM_MAX, &n);
	if (!p || n == 0 || first > MQ_SEQ_MAX || n > MQ_SEQ_MAX - first + 1 ||
	    strncmp(p, ",r", 2) || strlen(p + 2) != 8)
		return -1;
	c->first = first;
	for (size_t i = 2; i < 10; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return -1;
	c->n = (unsigned)n;
	memcpy(c->token, p + 2, 9);
	return 0;
}

int
mq_claim_name_make(const struct mq_claim_name *c, char *buf, size_t len)
{
	return mq_path(buf, len, "%020" PRIu64 "+%u,r%s", c->first, c->n,
	    c->token);
}

static int
state_format(const struct mq_claim_state *s, char buf[CLAIM_SIZE + 1])
{
	int n = snprintf(buf, CLAIM_SIZE + 1, "mq-claim 2 deadline=%020" PRIu64
	    " settled=", s->deadline_ms);
	for (size_t i = 0; n > 0 && i < sizeof s->settled; i++)
		n += snprintf(buf + n, CLAIM_SIZE + 1 - (size_t)n, "%02x",
		    s->settled[i]);
	return mq_line_seal(buf, CLAIM_SIZE + 1, n, CLAIM_BODY, "claim");
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ?
	    c - 'a' + 10 : -1;
}

static int
state_parse(const char *buf, size_t len, void *ctx)
{
	struct mq_claim_state s;
	char expect[CLAIM_SIZE + 1];
	const char *hex = buf + 49;
	if (len != CLAIM_SIZE || buf[CLAIM_SIZE - 1] != '\n' ||
	    sscanf(buf, "mq-claim 2 deadline=%20" SCNu64, &s.deadline_ms) != 1)
		return -1;
	for (size_t i = 0; i < sizeof s.settled; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		s.settled[i] = (unsigned char)(hi << 4 | lo);
	}
	if (state_format(&s, expect) < 0 || memcmp(expect, buf, len))
		return -1;
	*(struct mq_claim_state *)ctx = s;
	return 0;
}

int
mq_claim_state_read(int fd, struct mq_claim_state *s)
{
	return mq_line_read(fd, state_parse, s, "claim");
}

int
mq_claim_state_write(int fd, const struct mq_claim_state *s, int sync)
{
	char buf[CLAIM_SIZE + 1];
	if (state_format(s, buf) < 0)
		return -1;
	return mq_line_write(fd, buf, CLAIM_SIZE, sync, "claim");
}

bool
mq_claim_settled(const struct mq_claim_state *s, unsigned i)
{
	return s->settled[i / 8] >> (i % 8) & 1;
}

void
mq_claim_settle(struct mq_claim_state *s, unsigned i)
{
	s->settled[i / 8] |= (unsigned char)(1u << (i % 8));
}

unsigned
mq_claim_unsettled(const struct mq_claim_state *s, unsigned n)
{
	unsigned left = 0;
	for (unsigned i = 0; i < n; i++)
		left += !mq_claim_settled(s, i);
	return left;
}

int
mq_claim_bits_format(uint64_t first, unsigned n, const unsigned char *bits,
    char *buf, size_t len)
{
	if (n == 0 || n > MQ_CLAIM_MAX)
		return mq_err(EX_SOFTWARE, "a claim of %u records", n);
	int w = snprintf(buf, len, "%" PRIu64 "+%u,", first, n);
	for (unsigned i = 0; w > 0 && i < (n + 7) / 8; i++) {
		/* No bit past n: the parser refuses one. */
		unsigned char b = bits[i];
		if (i == (n - 1) / 8 && n % 8)
			b &= (unsigned char)((1u << (n % 8)) - 1);
		w += snprintf(buf + w, len > (size_t)w ? len - (size_t)w : 0,
		    "%02x", b);
	}
	if (w < 0 || (size_t)w >= len)
		return mq_err(EX_SOFTWARE, "claim bits too long");
	return 0;
}

int
mq_claim_bits_parse(const char *s, uint64_t *first, unsigned *n,
    unsigned char bits[MQ_CLAIM_MAX / 8])
{
	uint64_t f, c;
	const char *p = mq_decimal(s, MQ_SEQ_MAX, &f);
	if (!p || *p != '+' || !(p = mq_decimal(p + 1, MQ_CLAIM_MAX, &c)) ||
	    c == 0 || c - 1 > MQ_SEQ_MAX - f || *p != ',')
		return -1;
	size_t bytes = (c + 7) / 8;
	p++;
	if (strlen(p) != 2 * bytes)
		return -1;
	memset(bits, 0, MQ_CLAIM_MAX / 8);
	bool any = false;
	for (size_t i = 0; i < bytes; i++) {
		int hi = hexval(p[2 * i]), lo = hexval(p[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		bits[i] = (unsigned char)(hi << 4 | lo);
		any |= bits[i] != 0;
	}
	if (!any || (c % 8 && bits[bytes - 1] >> (c % 8)))
		return -1;
	*first = f;
	*n = (unsigned)c;
	return 0;
}
