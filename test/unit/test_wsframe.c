/*
 * test_wsframe.c: WebSocket frames (wsframe.c, RFC 6455): the accept key
 * of section 1.3 and the keys refused; the frames of section 5.7; frames
 * with 16- and 64-bit lengths, built here with an encoder of the test's
 * own, read back; every prefix of a frame waited on, untouched; each
 * breach of the protocol refused with 1002, a payload over the limit with
 * 1009, before it arrives and without a length wrapping; the headers the
 * server writes, byte for byte.
 */
#include <stdint.h>
#include <string.h>
#include <sysexits.h>

#include "http.h"
#include "t.h"

static const unsigned char mask[4] = { 0x37, 0xfa, 0x21, 0x3d };

/* The room of the largest frame built: a 64-bit length of 70000. */
#define ROOM (14 + 70000)
static unsigned char buf[ROOM], copy[ROOM], payload[ROOM];

/* A client frame's header: b0, then len in ext more bytes (0, 2 or 8)
 * whatever its size, then the mask when masked: its size. */
static size_t
head(unsigned char *out, int b0, bool masked, size_t ext, uint64_t len)
{
	out[0] = b0;
	out[1] = (masked ? 0x80 : 0) |
	    (ext == 2 ? 126 : ext == 8 ? 127 : (int)len);
	for (size_t i = 0; i < ext; i++)
		out[2 + i] = len >> 8 * (ext - 1 - i);
	if (masked)
		memcpy(out + 2 + ext, mask, 4);
	return 2 + ext + (masked ? 4 : 0);
}

/* A whole frame of len bytes of payload, masked: its size. */
static size_t
frame(unsigned char *out, int b0, size_t ext, const unsigned char *p,
    size_t len)
{
	size_t h = head(out, b0, true, ext, len);
	for (size_t i = 0; i < len; i++)
		out[h + i] = p[i] ^ mask[i % 4];
	return h + len;
}

static ssize_t
parse(unsigned char *b, size_t n, size_t max, struct mq_ws_frame *f,
    int *code)
{
	memset(f, 0, sizeof *f);
	*code = 0;
	return mq_ws_parse(b, n, max, f, code);
}

/* Whether b[0..n) is refused with close code want, whatever follows. */
static bool
refused(unsigned char *b, size_t n, size_t max, int want)
{
	struct mq_ws_frame f;
	int code;
	return parse(b, n, max, &f, &code) == -1 && code == want &&
	    mq_errcode() == EX_PROTOCOL;
}

/* Whether no prefix of the frame in buf[0..n) is taken, or changed.
 * The bytes past a prefix are made 0xff, a length with the top bit set,
 * so that reading them would show. */
static bool
waits(size_t n)
{
	struct mq_ws_frame f;
	int code;
	for (size_t k = 0; k < n; k++) {
		memcpy(copy, buf, k);
		memset(copy + k, 0xff, n - k < 16 ? n - k : 16);
		if (parse(copy, k, SIZE_MAX, &f, &code) != 0 ||
		    memcmp(copy, buf, k) != 0)
			return false;
	}
	return true;
}

static bool
key_refused(const char *key)
{
	char out[29] = "untouched";
	return mq_ws_accept_key(key, out) == -1 &&
	    mq_errcode() == EX_PROTOCOL && !strcmp(out, "untouched");
}

static void
accept_keys(void)
{
	char out[29];
	ok(mq_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out) == 0 &&
	    !strcmp(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
	    "the accept key of RFC 6455 section 1.3");
	ok(mq_ws_accept_key("AAAAAAAAAAAAAAAAAAAAAA==", out) == 0 &&
	    !strcmp(out, "ICX+Yqv66kxgM0FcWaLWlFLwTAI="), "16 zero bytes");
	ok(mq_ws_accept_key("/////////////////////w==", out) == 0 &&
	    !strcmp(out, "XXpj4jYzLM2yUE0C7TIgMwTQh2g="), "16 bytes of 0xff");

	static const char *const bad[] = {
		"",
		"dGhlIHNhbXBsZSBub25jZQ=",      /* 23 characters */
		"dGhlIHNhbXBsZSBub25jZQ===",    /* 25 */
		"dGhlIHNhbXBsZSBub25jZQ== ",
		"dGhlIHNhbXBsZSBub25j",         /* 15 bytes */
		"dGhlIHNhbXBsZSBub25j====",     /* 15 bytes, padded out */
		"dGhlIHNhbXBsZSBub25jZSE=",     /* 17 bytes */
		"dGhlIHNhbXBsZSBub25jZSEh",     /* 18 bytes */
		"dGhlIHNhbXBsZSBub25jZQ!=",
		"dGhlIHNhbXBsZSBub25jZ*==",
		"dGhl=HNhbXBsZSBub25jZQ==",
		" GhlIHNhbXBsZSBub25jZQ==",
		"dGhlIHNhbXBsZSBub25j ZQ=",
		"dGhlIHNhbXBsZSBub25jZR==",     /* bits past the 16 bytes */
		"dGhlIHNhbXBsZSBub25jZQ-_",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(key_refused(bad[i]), "key refused: \"%s\"", bad[i]);
	ok(key_refused(NULL), "no key refused");
}

/* RFC 6455 section 5.7. */
static void
rfc_examples(void)
{
	static const unsigned char hello[] = { 0x81, 0x85, 0x37, 0xfa, 0x21,
	    0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	struct mq_ws_frame f;
	int code;
	memcpy(buf, hello, sizeof hello);
	buf[sizeof hello] = 0xee;
	ok(parse(buf, sizeof hello + 1, 125, &f, &code) == 11 && f.fin &&
	    f.opcode == MQ_WS_TEXT && f.len == 5 && f.payload == buf + 6 &&
	    !memcmp(f.payload, "Hello", 5) && buf[11] == 0xee,
	    "a masked text frame: \"Hello\", 11 bytes taken, no more");

	memcpy(buf, hello, sizeof hello);
	buf[0] = 0x8a;
	ok(parse(buf, sizeof hello, 125, &f, &code) == 11 && f.fin &&
	    f.opcode == MQ_WS_PONG && !memcmp(f.payload, "Hello", 5),
	    "a masked pong with \"Hello\"");

	static const unsigned char plain[] = { 0x81, 0x05, 'H', 'e', 'l', 'l',
	    'o' };
	static const unsigned char hel[] = { 0x01, 0x03, 'H', 'e', 'l' };
	static const unsigned char lo[] = { 0x80, 0x02, 'l', 'o' };
	static const unsigned char ping[] = { 0x89, 0x05, 'H', 'e', 'l', 'l',
	    'o' };
	memcpy(buf, plain, sizeof plain);
	ok(refused(buf, sizeof plain, 125, 1002), "an unmasked text frame");
	memcpy(buf, hel, sizeof hel);
	ok(refused(buf, sizeof hel, 125, 1002), "an unmasked first fragment");
	memcpy(buf, lo, sizeof lo);
	ok(refused(buf, sizeof lo, 125, 1002), "an unmasked last fragment");
	memcpy(buf, ping, sizeof ping);
	ok(refused(buf, sizeof ping, 125, 1002), "an unmasked ping");
	head(buf, 0x82, false, 2, 256);
	ok(refused(buf, 4 + 256, SIZE_MAX, 1002), "256 bytes unmasked");
	head(buf, 0x82, false, 8, 65536);
	ok(refused(buf, 10 + 65536, SIZE_MAX, 1002), "64 KiB unmasked");
}

/* A frame of len bytes in the given form, read back. */
static bool
round_trip(int b0, size_t ext, size_t len)
{
	struct mq_ws_frame f;
	int code;
	for (size_t i = 0; i < len; i++)
		payload[i] = i * 7 + 3;
	size_t n = frame(buf, b0, ext, payload, len);
	return parse(buf, n, len, &f, &code) == (ssize_t)n &&
	    f.fin == !!(b0 & 0x80) && f.opcode == (b0 & 0x0f) &&
	    f.len == len && f.payload == buf + n - len &&
	    !memcmp(f.payload, payload, len);
}

static void
lengths(void)
{
	ok(round_trip(0x82, 0, 0), "an empty frame");
	ok(round_trip(0x82, 0, 125), "125 bytes in 7 bits");
	ok(round_trip(0x82, 2, 126), "126 bytes in 16 bits");
	ok(round_trip(0x02, 2, 300), "300 bytes in 16 bits, not final");
	ok(round_trip(0x80, 2, 65535), "65535 bytes in 16 bits, continued");
	ok(round_trip(0x82, 8, 65536), "65536 bytes in 64 bits");
	ok(round_trip(0x81, 8, 70000), "70000 bytes in 64 bits");
	ok(round_trip(0x89, 0, 125), "a ping of 125 bytes");
	ok(round_trip(0x88, 0, 2), "a close");

	/* Two frames in one buffer: the first taken alone. */
	struct mq_ws_frame f;
	int code;
	size_t a = frame(buf, 0x01, 0, (const unsigned char *)"one", 3);
	size_t b = frame(buf + a, 0x80, 2, payload, 200);
	memcpy(copy, buf + a, b);
	ssize_t r = parse(buf, a + b, 1000, &f, &code);
	ok(r == (ssize_t)a && !f.fin && !memcmp(f.payload, "one", 3) &&
	    !memcmp(buf + a, copy, b), "of two frames the first, the "
	    "second untouched");
	ok(r > 0 && parse(buf + r, a + b - r, 1000, &f, &code) ==
	    (ssize_t)b && f.fin && f.opcode == MQ_WS_CONT && f.len == 200 &&
	    !memcmp(f.payload, payload, 200), "then the second");
}

static void
prefixes(void)
{
	static const unsigned char hello[] = { 0x81, 0x85, 0x37, 0xfa, 0x21,
	    0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	memcpy(buf, hello, sizeof hello);
	ok(waits(sizeof hello), "every prefix of \"Hello\": wait");
	ok(waits(frame(buf, 0x82, 0, payload, 0)), "of an empty frame");
	ok(waits(frame(buf, 0x82, 2, payload, 1000)), "of a 16-bit length");
	ok(waits(frame(buf, 0x82, 8, payload, 70000)), "of a 64-bit length");
}

static void
breaches(void)
{
	for (int rsv = 0x10; rsv <= 0x40; rsv <<= 1) {
		size_t n = frame(buf, 0x81 | rsv, 0, payload, 5);
		ok(refused(buf, n, 125, 1002), "reserved bit 0x%02x", rsv);
		ok(refused(buf, 2, 125, 1002), "known from 2 bytes");
	}
	for (int op = 3; op <= 0xf; op++) {
		if (op >= MQ_WS_CLOSE && op <= MQ_WS_PONG)
			continue;
		size_t n = frame(buf, 0x80 | op, 0, payload, 5);
		ok(refused(buf, n, 125, 1002), "opcode 0x%x", op);
	}
	head(buf, 0x82, false, 0, 0);
	ok(refused(buf, 2, 125, 1002), "an empty unmasked frame");

	for (int op = MQ_WS_CLOSE; op <= MQ_WS_PONG; op++) {
		size_t n = frame(buf, op, 0, payload, 2);
		ok(refused(buf, n, 125, 1002), "control 0x%x fragmented", op);
		n = frame(buf, 0x80 | op, 2, payload, 126);
		ok(refused(buf, n, SIZE_MAX, 1002), "control 0x%x of 126 "
		    "bytes", op);
		n = frame(buf, 0x80 | op, 8, payload, 65536);
		ok(refused(buf, n, SIZE_MAX, 1002), "control 0x%x of 65536 "
		    "bytes", op);
	}
	size_t n = frame(buf, 0x89, 2, payload, 5);
	ok(refused(buf, n, SIZE_MAX, 1002), "a ping of 5 bytes in 16 bits");

	n = frame(buf, 0x82, 2, payload, 125);
	ok(refused(buf, n, SIZE_MAX, 1002), "125 in 16 bits");
	n = frame(buf, 0x82, 2, payload, 0);
	ok(refused(buf, n, SIZE_MAX, 1002), "0 in 16 bits");
	n = frame(buf, 0x82, 8, payload, 65535);
	ok(refused(buf, n, SIZE_MAX, 1002), "65535 in 64 bits");
	n = frame(buf, 0x82, 8, payload, 125);
	ok(refused(buf, n, SIZE_MAX, 1002), "125 in 64 bits");
	head(buf, 0x82, true, 8, UINT64_C(1) << 63);
	ok(refused(buf, 14, SIZE_MAX, 1002), "a length with the top bit");
	head(buf, 0x82, true, 8, UINT64_MAX);
	ok(refused(buf, 14, SIZE_MAX, 1002), "a length of all ones");
}

static void
limits(void)
{
	size_t n = frame(buf, 0x82, 0, payload, 10);
	ok(refused(buf, n, 9, 1009), "10 bytes over a limit of 9");
	struct mq_ws_frame f;
	int code;
	ok(parse(buf, n, 10, &f, &code) == (ssize_t)n, "not over 10");
	n = frame(buf, 0x82, 2, payload, 300);
	ok(refused(buf, n, 299, 1009), "300 bytes over 299");
	n = frame(buf, 0x81, 8, payload, 70000);
	ok(refused(buf, n, 65536, 1009), "70000 bytes over 65536");
	ok(refused(buf, 14, 65536, 1009), "known from the header alone");

	/* Lengths near the top, with no limit: refused or waited on, never
	 * wrapped into a frame buf could hold. */
	head(buf, 0x82, true, 8, INT64_MAX);
	ok(refused(buf, 14, SIZE_MAX, 1009), "2^63 - 1 bytes");
	head(buf, 0x82, true, 8, (uint64_t)INT64_MAX - 14);
	ok(parse(buf, ROOM, SIZE_MAX, &f, &code) == 0, "2^63 - 15 bytes, "
	    "a frame of 2^63 - 1: wait");
	head(buf, 0x82, true, 8, (uint64_t)INT64_MAX - 13);
	ok(refused(buf, ROOM, SIZE_MAX, 1009), "2^63 - 14 bytes, a frame "
	    "of 2^63");
}

static bool
header_is(int opcode, size_t len, const unsigned char *want, size_t wlen)
{
	unsigned char out[11];
	memset(out, 0xee, sizeof out);
	return mq_ws_header(out, opcode, len) == wlen &&
	    !memcmp(out, want, wlen) && out[wlen] == 0xee;
}

static void
headers(void)
{
	ok(header_is(MQ_WS_TEXT, 0, (const unsigned char *)"\x81\x00", 2),
	    "a header of 0");
	ok(header_is(MQ_WS_BINARY, 125, (const unsigned char *)"\x82\x7d", 2),
	    "of 125");
	ok(header_is(MQ_WS_BINARY, 126,
	    (const unsigned char *)"\x82\x7e\x00\x7e", 4), "of 126");
	ok(header_is(MQ_WS_TEXT, 65535,
	    (const unsigned char *)"\x81\x7e\xff\xff", 4), "of 65535");
	ok(header_is(MQ_WS_BINARY, 65536,
	    (const unsigned char *)"\x82\x7f\0\0\0\0\0\x01\0\0", 10),
	    "of 65536");
	ok(header_is(MQ_WS_CLOSE, 2, (const unsigned char *)"\x88\x02", 2),
	    "a close");
	ok(header_is(MQ_WS_PONG, 0, (const unsigned char *)"\x8a\x00", 2),
	    "a pong");
	if (sizeof(size_t) >= 8)
		ok(header_is(MQ_WS_BINARY, (size_t)UINT64_C(0x0102030405060708),
		    (const unsigned char *)"\x82\x7f\x01\x02\x03\x04\x05\x06"
		    "\x07\x08", 10), "the 64 bits in network order");
}

int
main(void)
{
	accept_keys();
	rfc_examples();
	lengths();
	prefixes();
	breaches();
	limits();
	headers();
	return t_done();
}
