/*
 * wsframe.c: WebSocket frames (RFC 6455) as mq-http(1) reads them from a
 * client and writes them to one, and the opening handshake's accept key.
 *
 * mq_ws_parse looks at one frame at a time and keeps no state: whether a
 * continuation frame continues anything is the caller's to know.  It
 * refuses what no client may send while no extension is negotiated
 * (reserved bits, unknown opcodes, unmasked frames, control frames that
 * are fragmented or long, lengths not in their shortest form) as soon as
 * the header shows it, and a payload over max before it arrives, so a
 * caller never buffers more than max and a header.  Every length is
 * checked against what the buffer holds by subtraction, never by a sum
 * that could wrap.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sysexits.h>

#include <openssl/evp.h>

#include "http.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_LEN 24           /* base64 of 16 bytes */
#define WS_NONCE_LEN 16
#define WS_CONTROL 0x8          /* the opcode bit of control frames */
#define WS_CONTROL_MAX 125

int
mq_ws_accept_key(const char *client_key, char out[29])
{
	unsigned char raw[WS_KEY_LEN], back[WS_KEY_LEN + 1];
	unsigned char in[WS_KEY_LEN + sizeof WS_GUID - 1];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;

	/* EVP_DecodeBlock reads '=' anywhere as zero bits and skips
	 * blanks at either end, so a key is taken only when it is
	 * exactly what base64 of its 16 bytes is. */
	if (!client_key || strnlen(client_key, WS_KEY_LEN + 1) != WS_KEY_LEN ||
	    EVP_DecodeBlock(raw, (const unsigned char *)client_key,
	    WS_KEY_LEN) < 0 ||
	    EVP_EncodeBlock(back, raw, WS_NONCE_LEN) != WS_KEY_LEN ||
	    memcmp(back, client_key, WS_KEY_LEN) != 0)
		return mq_err(EX_PROTOCOL, "websocket: bad Sec-WebSocket-Key");
	memcpy(in, client_key, WS_KEY_LEN);
	memcpy(in + WS_KEY_LEN, WS_GUID, sizeof WS_GUID - 1);
	if (!EVP_Digest(in, sizeof in, md, &mdlen, EVP_sha1(), NULL) ||
	    mdlen != 20)
		return mq_err(EX_SOFTWARE, "websocket: SHA-1 failed");
	EVP_EncodeBlock((unsigned char *)out, md, mdlen);
	return 0;
}

static uint64_t
get_be(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void
put_be(unsigned char *p, uint64_t v, size_t n)
{
	while (n-- > 0) {
		p[n] = v & 0xff;
		v >>= 8;
	}
}

static ssize_t
refuse(int *close_code, int code, const char *why)
{
	*close_code = code;
	return mq_err(EX_PROTOCOL, "websocket: %s", why);
}

static bool
known_opcode(int op)
{
	switch (op) {
	case MQ_WS_CONT: case MQ_WS_TEXT: case MQ_WS_BINARY:
	case MQ_WS_CLOSE: case MQ_WS_PING: case MQ_WS_PONG:
		return true;
	}
	return false;
}

ssize_t
mq_ws_parse(unsigned char *buf, size_t n, size_t max,
    struct mq_ws_frame *f, int *close_code)
{
	if (n < 2)
		return 0;
	bool fin = buf[0] & 0x80;
	int op = buf[0] & 0x0f;
	size_t len7 = buf[1] & 0x7f;
	if (buf[0] & 0x70)
		return refuse(close_code, 1002, "reserved bits set");
	if (!known_opcode(op))
		return refuse(close_code, 1002, "reserved opcode");
	if (!(buf[1] & 0x80))
		return refuse(close_code, 1002, "unmasked frame");
	if ((op & WS_CONTROL) && !fin)
		return refuse(close_code, 1002, "fragmented control frame");
	if ((op & WS_CONTROL) && len7 > WS_CONTROL_MAX)
		return refuse(close_code, 1002, "control frame over 125 bytes");

	/* The extended length: 126 takes 2 bytes, 127 takes 8. */
	size_t ext = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
	if (n < 2 + ext)
		return 0;
	uint64_t len = ext ? get_be(buf + 2, ext) : len7;
	if ((ext == 2 && len < 126) || (ext == 8 && len <= 0xffff))
		return refuse(close_code, 1002, "length not in its shortest "
		    "form");
	if (len >> 63)
		return refuse(close_code, 1002, "length over 63 bits");
	size_t hlen = 2 + ext + 4;
	/* The second test keeps the frame's size, returned, an ssize_t. */
	if (len > (uint64_t)max || len > (uint64_t)SSIZE_MAX - hlen) {
		*close_code = 1009;
		return mq_err(EX_PROTOCOL, "websocket: payload over %zu bytes",
		    max);
	}
	if (n < hlen || n - hlen < len)
		return 0;

	const unsigned char *mask = buf + hlen - 4;
	unsigned char *p = buf + hlen;
	for (size_t i = 0; i < len; i++)
		p[i] ^= mask[i & 3];
	f->fin = fin;
	f->opcode = op;
	f->payload = p;
	f->len = len;
	return (ssize_t)(hlen + len);
}

size_t
mq_ws_header(unsigned char out[10], int opcode, size_t len)
{
	out[0] = 0x80 | (opcode & 0x0f);
	if (len < 126) {
		out[1] = len;
		return 2;
	}
	size_t ext = len <= 0xffff ? 2 : 8;
	out[1] = ext == 2 ? 126 : 127;
	put_be(out + 2, len, ext);
	return 2 + ext;
}
