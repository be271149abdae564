/*
 * segment.c: the segment file of format 2 (mq-spool(5), SEGMENTED
 * STORAGE): records of consecutive sequence numbers, each a frame line,
 * a message file's header block and its body, written once.
 *
 * The writer builds a segment in memory (a chunk is at most 4096
 * messages; its bytes are written with one write(2)).  The reader takes
 * bytes nothing vouches for: another user may have put the file there,
 * a peer may have sent it.  So every length is checked against what is
 * left of the file before it is used, numbers are parsed with a fixed
 * count of digits that cannot wrap, and the records must follow each
 * other exactly: the first at the end of the first line, each sequence
 * number one more than the last, the last ending where the file does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sysexits.h>
/* XXH3_state_t on the stack: its size is in the header only thus. */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "base.h"

/* "mq-segment 2 first=<20> count=<10> size=<20>\n" */
#define SEG_LINE_LEN (13 + 6 + MQ_SEQ_DIGITS + 7 + 10 + 6 + 20 + 1)
/* "mq-record <20> <10> <10> <16>\n" */
#define REC_LINE_LEN (10 + MQ_SEQ_DIGITS + 1 + 10 + 1 + 10 + 1 + 16 + 1)

/* Exactly n decimal digits at p, into *out; false if any is not a digit
 * or the value passes max. */
static bool
digits(const char *p, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' ||
		    __builtin_mul_overflow(x, 10, &x) ||
		    __builtin_add_overflow(x, (uint64_t)(p[i] - '0'), &x))
			return false;
	}
	if (x > max)
		return false;
	*out = x;
	return true;
}

/* Exactly 16 lowercase hexadecimal digits at p. */
static bool
hex16(const char *p, uint64_t *out)
{
	uint64_t x = 0;
	for (size_t i = 0; i < 16; i++) {
		int d = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' :
		    p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10 : -1;
		if (d < 0)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*out = x;
	return true;
}

static uint64_t
record_hash(const char *hdr, size_t hlen, const void *body, size_t blen)
{
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, hdr, hlen);
	XXH3_64bits_update(&st, body, blen);
	return XXH3_64bits_digest(&st);
}

/* --- writing -------------------------------------------------------- */

static int
grow(struct mq_seg_writer *w, size_t more)
{
	if (more > MQ_SEG_MAX_BYTES - w->len)
		return mq_err(EX_DATAERR, "segment of %zu bytes and more: past "
		    "the limit of %llu", w->len,
		    (unsigned long long)MQ_SEG_MAX_BYTES);
	if (w->len + more <= w->cap)
		return 0;
	size_t cap = w->cap ? w->cap : 64 * 1024;
	while (cap < w->len + more)
		cap *= 2;
	char *b = realloc(w->buf, cap);
	if (!b)
		return mq_err_sys("segment buffer");
	w->buf = b;
	w->cap = cap;
	return 0;
}

int
mq_seg_begin(struct mq_seg_writer *w, uint64_t first)
{
	*w = (struct mq_seg_writer){ 0 };
	return mq_seg_restart(w, first);
}

int
mq_seg_restart(struct mq_seg_writer *w, uint64_t first)
{
	w->first = first;
	w->count = 0;
	w->len = 0;
	if (grow(w, SEG_LINE_LEN) < 0)
		return -1;
	/* Filled in by mq_seg_finish, once count and size are known. */
	w->len = SEG_LINE_LEN;
	return 0;
}

int
mq_seg_add(struct mq_seg_writer *w, const char *hdr, size_t hlen,
    const void *body, size_t blen)
{
	struct iovec h = { (void *)hdr, hlen };
	return mq_seg_addv(w, &h, 1, body, blen);
}

int
mq_seg_addv(struct mq_seg_writer *w, const struct iovec *hv, int hn,
    const void *body, size_t blen)
{
	size_t hlen = 0;
	for (int i = 0; i < hn; i++)
		hlen += hv[i].iov_len;
	if (w->count >= MQ_SEG_MAX_RECORDS)
		return mq_err(EX_DATAERR, "segment of %u records: past the limit",
		    w->count);
	if (w->first > MQ_SEQ_MAX - w->count)
		return mq_err(EX_DATAERR, "sequence number past %llu",
		    (unsigned long long)MQ_SEQ_MAX);
	if (hlen > MQ_HEADER_BLOCK_MAX || blen > MQ_SEG_MAX_BYTES)
		return mq_err(EX_DATAERR, "record too large for a segment");
	if (grow(w, REC_LINE_LEN + hlen + blen + 1) < 0)
		return -1;
	/* The header block in place first: the hash is of what is stored. */
	char *p = w->buf + w->len, *h = p + REC_LINE_LEN;
	for (int i = 0; i < hn; i++) {
		memcpy(h, hv[i].iov_base, hv[i].iov_len);
		h += hv[i].iov_len;
	}
	memcpy(h, body, blen);
	h[blen] = '\n';
	/* The frame, without a format string (once per record); lengths
	 * wider than their fields were refused above. */
	char *e = mq_put_u64w(PUT_LIT(p, "mq-record "), w->first + w->count,
	    20);
	e = mq_put_u64w(PUT_LIT(e, " "), hlen, 10);
	e = mq_put_u64w(PUT_LIT(e, " "), blen, 10);
	e = mq_put_hex(PUT_LIT(e, " "), record_hash(p + REC_LINE_LEN, hlen,
	    h, blen), 16);
	*e++ = '\n';
	if (e - p != REC_LINE_LEN)
		return mq_err(EX_SOFTWARE, "record frame of %td bytes", e - p);
	w->len += REC_LINE_LEN + hlen + blen + 1;
	w->count++;
	return 0;
}

int
mq_seg_add_record(struct mq_seg_writer *w, uint64_t seq,
    const struct mq_seg_rec *r)
{
	if (w->first > MQ_SEQ_MAX - w->count || seq != w->first + w->count)
		return mq_err(EX_SOFTWARE, "record %llu copied out of order",
		    (unsigned long long)seq);
	if (w->count >= MQ_SEG_MAX_RECORDS)
		return mq_err(EX_DATAERR, "segment of %u records: past the limit",
		    w->count);
	/* Read by mq_seg_next: its frame line is just before its header
	 * block, and a newline after its body. */
	size_t len = REC_LINE_LEN + r->hdr_len + r->body_len + 1;
	if (grow(w, len) < 0)
		return -1;
	memcpy(w->buf + w->len, r->hdr - REC_LINE_LEN, len);
	w->len += len;
	w->count++;
	return 0;
}

int
mq_seg_finish(struct mq_seg_writer *w)
{
	if (w->count == 0)
		return mq_err(EX_SOFTWARE, "a segment of no record");
	char line[SEG_LINE_LEN + 1];
	int n = snprintf(line, sizeof line, "mq-segment 2 first=%020llu "
	    "count=%010u size=%020zu\n", (unsigned long long)w->first,
	    w->count, w->len);
	if (n != SEG_LINE_LEN)
		return mq_err(EX_SOFTWARE, "segment line of %d bytes", n);
	memcpy(w->buf, line, SEG_LINE_LEN);
	return 0;
}

void
mq_seg_writer_free(struct mq_seg_writer *w)
{
	free(w->buf);
	*w = (struct mq_seg_writer){ 0 };
}

/* --- reading -------------------------------------------------------- */

int
mq_seg_name(const char *name, uint64_t *first)
{
	return strlen(name) == MQ_SEQ_DIGITS &&
	    digits(name, MQ_SEQ_DIGITS, MQ_SEQ_MAX, first) ? 0 : -1;
}

int
mq_seg_read_line(const char *data, size_t len, struct mq_seg *s)
{
	uint64_t first, count, size;
	if (len < SEG_LINE_LEN || memcmp(data, "mq-segment 2 first=", 19) ||
	    !digits(data + 19, MQ_SEQ_DIGITS, MQ_SEQ_MAX, &first) ||
	    memcmp(data + 39, " count=", 7) ||
	    !digits(data + 46, 10, MQ_SEG_MAX_RECORDS, &count) || count == 0 ||
	    memcmp(data + 56, " size=", 6) ||
	    !digits(data + 62, 20, MQ_SEG_MAX_BYTES, &size) ||
	    data[SEG_LINE_LEN - 1] != '\n' || size < SEG_LINE_LEN)
		return mq_err(EX_DATAERR, "not a segment: its first line");
	/* Its last record's number must fit too. */
	if (first > MQ_SEQ_MAX - (count - 1))
		return mq_err(EX_DATAERR, "segment past sequence number %llu",
		    (unsigned long long)MQ_SEQ_MAX);
	*s = (struct mq_seg){ .data = data, .len = len, .first = first,
	    .count = (uint32_t)count, .size = size };
	return 0;
}

int
mq_seg_open_bytes(const char *data, size_t len, const char *name,
    struct mq_seg *s)
{
	uint64_t first;
	if (mq_seg_read_line(data, len, s) < 0)
		return -1;
	if (name && (mq_seg_name(name, &first) < 0 || first != s->first))
		return mq_err(EX_DATAERR, "segment %s says it starts at %llu",
		    name, (unsigned long long)s->first);
	if (s->size != len)
		return mq_err(EX_DATAERR, "segment of %zu bytes says %llu", len,
		    (unsigned long long)s->size);
	return 0;
}

size_t
mq_seg_start(void)
{
	return SEG_LINE_LEN;
}

int
mq_seg_next(const struct mq_seg *s, size_t *off, uint64_t *seq,
    struct mq_seg_rec *r)
{
	size_t at = *off;
	if (at == s->len)
		return 0;
	if (at > s->len || s->len - at < REC_LINE_LEN)
		return mq_err(EX_DATAERR, "segment cut inside a record frame");
	const char *p = s->data + at;
	uint64_t n, hlen, blen, hash;
	if (memcmp(p, "mq-record ", 10) ||
	    !digits(p + 10, MQ_SEQ_DIGITS, MQ_SEQ_MAX, &n) || p[30] != ' ' ||
	    !digits(p + 31, 10, MQ_HEADER_BLOCK_MAX, &hlen) || p[41] != ' ' ||
	    !digits(p + 42, 10, MQ_SEG_MAX_BYTES, &blen) || p[52] != ' ' ||
	    !hex16(p + 53, &hash) || p[REC_LINE_LEN - 1] != '\n')
		return mq_err(EX_DATAERR, "bad record frame at byte %zu", at);
	/* Records follow each other: the first is first, each the next. */
	uint64_t want = at == SEG_LINE_LEN ? s->first : *seq + 1;
	if (n != want || n - s->first >= s->count)
		return mq_err(EX_DATAERR, "record %llu where %llu belongs",
		    (unsigned long long)n, (unsigned long long)want);
	size_t left = s->len - at - REC_LINE_LEN;
	if (hlen > left || blen > left - hlen || left - hlen - blen < 1 ||
	    p[REC_LINE_LEN + hlen + blen] != '\n')
		return mq_err(EX_DATAERR, "record %llu runs past its segment",
		    (unsigned long long)n);
	r->hdr = p + REC_LINE_LEN;
	r->hdr_len = hlen;
	r->body = r->hdr + hlen;
	r->body_len = blen;
	r->hash_ok = record_hash(r->hdr, hlen, r->body, blen) == hash;
	*seq = n;
	*off = at + REC_LINE_LEN + hlen + blen + 1;
	/* The last record ends the file, and only it. */
	if ((*off == s->len) != (n - s->first == s->count - 1))
		return mq_err(EX_DATAERR, "segment holds other than %u records",
		    s->count);
	return 1;
}
