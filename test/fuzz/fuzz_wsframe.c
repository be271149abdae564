/*
 * fuzz_wsframe.c: what a WebSocket client sends mq-http(1) (wsframe.c,
 * RFC 6455): frames, read one after another from the input until one is
 * incomplete or refused, and the input as a Sec-WebSocket-Key.  The
 * first two bytes are the payload limit (big-endian), the rest the
 * stream.  A frame taken lies within what was left, its payload ends it
 * and is unmasked with the mask before it, it breaks none of the rules
 * checked, and the header the server would write for it is the client's
 * without the mask; a refusal says 1002 or 1009.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fail(const char *what)
{
	fprintf(stderr, "harness: fuzz_wsframe: %s\n", what);
	abort();
}

/* The frame that took r bytes at in (the input as it came, still
 * masked), parsed at at. */
static void
check(const unsigned char *in, const unsigned char *at, size_t left,
    ssize_t r, const struct mq_ws_frame *f, size_t max)
{
	if ((size_t)r > left || r < 6)
		fail("a frame longer than the input, or shorter than a header");
	if (f->payload < at + 6 || f->payload > at + r ||
	    f->payload + f->len != at + r)
		fail("a payload outside its frame");
	size_t hlen = (size_t)r - f->len;
	const unsigned char *mask = in + hlen - 4;
	for (size_t i = 0; i < f->len; i++)
		if ((f->payload[i] ^ mask[i % 4]) != in[hlen + i])
			fail("a payload not unmasked");
	if (memcmp(at, in, hlen) != 0)
		fail("a header changed");
	if (f->fin != !!(in[0] & 0x80) || f->opcode != (in[0] & 0x0f))
		fail("FIN or the opcode not the header's");
	if ((in[0] & 0x70) || !(in[1] & 0x80))
		fail("reserved bits, or no mask");
	if ((f->opcode & 0x7) > 2)
		fail("a reserved opcode");
	if (f->len > max)
		fail("a payload over the limit");
	if (f->opcode & 0x8 && (!f->fin || f->len > 125))
		fail("a fragmented or long control frame");
	/* Both take lengths only in their shortest form. */
	unsigned char out[10];
	size_t h = mq_ws_header(out, f->opcode, f->len);
	if (h != hlen - 4 || out[0] != (0x80 | in[0]) ||
	    out[1] != (in[1] & 0x7f) || memcmp(out + 2, in + 2, h - 2) != 0)
		fail("the server's header is not the client's unmasked");
}

static void
key(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), out[29];
	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = 0;
	if (mq_ws_accept_key(s, out) == 0 && strlen(out) != 28)
		fail("an accept key not of 28 characters");
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	key(data, size);
	if (size < 2)
		return 0;
	size_t max = (size_t)data[0] << 8 | data[1];
	size_t n = size - 2;
	/* Exactly the stream's size, for ASan to see a read past it. */
	unsigned char *buf = malloc(n ? n : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 2, n);
	size_t off = 0;
	for (;;) {
		struct mq_ws_frame f;
		int code = 0;
		ssize_t r = mq_ws_parse(buf + off, n - off, max, &f, &code);
		if (r < 0 && ((code != 1002 && code != 1009) ||
		    mq_errcode() != EX_PROTOCOL))
			fail("a refusal without its close code");
		if (r <= 0)
			break;
		check(data + 2 + off, buf + off, n - off, r, &f, max);
		off += (size_t)r;
	}
	free(buf);
	return 0;
}
