/*
 * test_segment.c: the segment file of format 2 (mq-spool(5), SEGMENTED
 * STORAGE).  What is written reads back record for record; a segment is
 * refused whole when its first line, its name or its size is wrong, and
 * a record when its frame is, its number is not the next, it runs past
 * the file, or the count does not match; a changed byte of a record
 * fails its hash alone; sequence numbers never pass MQ_SEQ_MAX.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "t.h"

static const char HDR[] = "Message-Id: 6616aff5f3e00a3f9c1e27b400000000\n"
    "Topic: t\nPartition: 0\nSeq: 0\n\n";

/* A segment of n records from first, the body of record i "body <i>". */
static struct mq_seg_writer
build(uint64_t first, unsigned n)
{
	struct mq_seg_writer w;
	if (mq_seg_begin(&w, first) < 0)
		abort();
	for (unsigned i = 0; i < n; i++) {
		char body[32];
		int len = snprintf(body, sizeof body, "body %u", i);
		if (mq_seg_add(&w, HDR, sizeof HDR - 1, body, (size_t)len) < 0)
			abort();
	}
	if (mq_seg_finish(&w) < 0)
		abort();
	return w;
}

/* Reads every record: how many, -1 at the first refused, and whether
 * all had their hash and their body. */
static int
read_all(const char *data, size_t len, const char *name, bool *hashes,
    bool *bodies)
{
	struct mq_seg s;
	*hashes = *bodies = true;
	if (mq_seg_open_bytes(data, len, name, &s) < 0)
		return -1;
	size_t off = mq_seg_start();
	uint64_t seq = 0;
	struct mq_seg_rec r;
	int n = 0, rc;
	while ((rc = mq_seg_next(&s, &off, &seq, &r)) == 1) {
		char want[32];
		int wl = snprintf(want, sizeof want, "body %d", n);
		if (!r.hash_ok)
			*hashes = false;
		if (seq != s.first + (uint64_t)n || r.hdr_len != sizeof HDR - 1 ||
		    r.body_len != (size_t)wl || memcmp(r.body, want, (size_t)wl))
			*bodies = false;
		n++;
	}
	return rc < 0 ? -1 : n;
}

int
main(void)
{
	bool h, b;
	struct mq_seg_writer w = build(42, 100);
	ok(read_all(w.buf, w.len, "00000000000000000042", &h, &b) == 100 && h && b,
	    "100 records written read back in order, hashes and bodies whole");
	ok(strncmp(w.buf, "mq-segment 2 first=00000000000000000042 count=0000000100 size=", 62) == 0,
	    "the first line names first, count and size");
	ok(memmem(w.buf, w.len, "\n\nbody 7\nmq-record ", 19) != NULL,
	    "a body is followed by a newline and the next record's frame");
	ok(read_all(w.buf, w.len, "00000000000000000043", &h, &b) == -1,
	    "a segment under another name than its first is refused");
	ok(read_all(w.buf, w.len, "42", &h, &b) == -1,
	    "a name not of 20 digits is refused");
	ok(read_all(w.buf, w.len - 1, NULL, &h, &b) == -1,
	    "a segment cut short is refused");

	/* One body byte changed: its record fails its hash, no other. */
	char *c = malloc(w.len);
	memcpy(c, w.buf, w.len);
	char *at = memmem(c, w.len, "body 50", 7);
	at[5] = '9';
	struct mq_seg s;
	mq_seg_open_bytes(c, w.len, NULL, &s);
	size_t off = mq_seg_start();
	uint64_t seq = 0;
	struct mq_seg_rec r;
	int bad = 0, n = 0;
	while (mq_seg_next(&s, &off, &seq, &r) == 1) {
		if (!r.hash_ok)
			bad = (int)seq;
		n++;
	}
	ok(n == 100 && bad == 42 + 50, "a changed body fails its own hash only (%d)", bad);

	/* A record's number changed: refused there. */
	memcpy(c, w.buf, w.len);
	at = memmem(c, w.len, "mq-record 00000000000000000044", 30);
	at[29] = '5';
	ok(read_all(c, w.len, NULL, &h, &b) == -1,
	    "a record whose number is not the next is refused");

	/* A length that runs past the file. */
	memcpy(c, w.buf, w.len);
	at = memmem(c, w.len, "mq-record 00000000000000000141 ", 31);
	memcpy(at + 42, "9999999999", 10);
	ok(read_all(c, w.len, NULL, &h, &b) == -1,
	    "a body length past the file's end is refused");

	/* A count that says more, or fewer, records than there are. */
	memcpy(c, w.buf, w.len);
	memcpy(c + 46, "0000000101", 10);
	ok(read_all(c, w.len, NULL, &h, &b) == -1, "a count above the records is refused");
	memcpy(c + 46, "0000000099", 10);
	ok(read_all(c, w.len, NULL, &h, &b) == -1, "a count below the records is refused");
	memcpy(c + 46, "0000000000", 10);
	ok(read_all(c, w.len, NULL, &h, &b) == -1, "a count of 0 is refused");
	memcpy(c, w.buf, w.len);
	memcpy(c + 62, "00000000000000000001", 20);
	ok(read_all(c, w.len, NULL, &h, &b) == -1, "a size that is not the file's is refused");
	memcpy(c, w.buf, w.len);
	c[19] = 'x';
	ok(read_all(c, w.len, NULL, &h, &b) == -1, "a first line that does not parse is refused");
	free(c);
	mq_seg_writer_free(&w);

	/* Sequence numbers at the top. */
	struct mq_seg_writer top;
	ok(mq_seg_begin(&top, MQ_SEQ_MAX) == 0 &&
	    mq_seg_add(&top, HDR, sizeof HDR - 1, "x", 1) == 0 &&
	    mq_seg_add(&top, HDR, sizeof HDR - 1, "y", 1) == -1,
	    "a writer stops at MQ_SEQ_MAX");
	mq_seg_writer_free(&top);
	w = build(7, 2);
	memcpy(w.buf + 19, "18446744073709551614", 20);
	ok(mq_seg_open_bytes(w.buf, w.len, NULL, &s) == -1,
	    "a segment whose last record would pass MQ_SEQ_MAX is refused");
	memcpy(w.buf + 19, "18446744073709551615", 20);
	ok(mq_seg_read_line(w.buf, w.len, &s) == -1,
	    "a first past MQ_SEQ_MAX is refused");
	memcpy(w.buf + 19, "99999999999999999999", 20);
	ok(mq_seg_read_line(w.buf, w.len, &s) == -1,
	    "20 digits that do not fit in 64 bits are refused");
	mq_seg_writer_free(&w);
	uint64_t first;
	ok(mq_seg_name("00000000000000000007", &first) == 0 && first == 7 &&
	    mq_seg_name("0000000000000000007", &first) < 0 &&
	    mq_seg_name("000000000000000000070", &first) < 0 &&
	    mq_seg_name("0000000000000000000a", &first) < 0,
	    "segment names are exactly 20 digits");
	struct mq_seg_writer none;
	ok(mq_seg_begin(&none, 0) == 0 && mq_seg_finish(&none) == -1,
	    "a segment of no record is not written");
	mq_seg_writer_free(&none);
	return t_done();
}
