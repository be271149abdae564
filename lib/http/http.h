/*
 * http.h: mq-http(1), the spool served over HTTP, Server-Sent Events and
 * WebSocket: the top layer.  It parses nothing of HTTP itself
 * (libmicrohttpd does) and does no queue work of its own: every route
 * calls the operation a tool would.
 */
#ifndef MQ_HTTP_H
#define MQ_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "run.h"

/* ---- auth.c, jwk.c: bearer tokens (JWT) and what they allow ----
 *
 * A token is verified with the keys of the configuration: HS256/384/512
 * with a shared secret, RS256/384/512 and ES256/384/512 with a public key
 * (PEM, or a JWKS file's RSA and EC keys, chosen by "kid" when the token
 * names one).  The token's "alg" must be one its key is for ("none" never
 * is, and a public key is never used as an HMAC secret).  "exp" must lie
 * ahead and "nbf" behind (give or take the leeway); "aud" (a string or
 * an array) must hold the audience, and "iss" equal the issuer, when the
 * configuration names them.
 *
 * What a token allows is in its "scope" claim: a string of items
 * separated by spaces, or an array of them.  An item is
 *   publish:TOPIC       publish to the topics TOPIC matches
 *   consume:TOPIC       receive, ack, nack from any group of them
 *   consume:TOPIC/GROUP only from the groups GROUP matches
 *   admin:TOPIC         create topics, redrive and purge dead letters
 * TOPIC and GROUP are globs (fnmatch(3), no flags); "admin:*" also allows
 * what concerns the spool as a whole (/metrics).  Unknown items are
 * ignored, so one token may carry scopes of other services. */
enum {
	MQ_HTTP_PUBLISH = 1,
	MQ_HTTP_CONSUME = 2,
	MQ_HTTP_ADMIN = 4,
};
struct mq_http_auth_conf {
	const char *const *secret_files; /* HS*: the secret, the file's bytes */
	size_t nsecret;
	const char *const *key_files;    /* RS*, ES*: PEM public keys */
	size_t nkey;
	const char *const *jwks_files;   /* RS*, ES*: JWKS (RFC 7517) files */
	size_t njwks;
	const char *audience;            /* NULL: "aud" not checked */
	const char *issuer;              /* NULL: "iss" not checked */
	double leeway;                   /* seconds allowed to exp and nbf */
};
struct mq_http_auth;
struct mq_http_grant;
/* The verifier: every file read and checked now (EX_NOINPUT for one that
 * is missing, EX_CONFIG for one that is no key); NULL with the error. */
struct mq_http_auth *mq_http_auth_new(const struct mq_http_auth_conf *);
void mq_http_auth_free(struct mq_http_auth *);
/* Verifies the value of an Authorization header ("Bearer TOKEN"; NULL
 * when there was none) at time now: 0 with *g, what it allows; -1 with
 * the error (EX_NOPERM), its message fit for a client ("token expired",
 * "wrong audience", "bad signature", ...). */
int mq_http_auth_check(const struct mq_http_auth *, const char *authorization,
    double now, struct mq_http_grant **g);
/* Whether g allows perm (one of MQ_HTTP_*) on topic (NULL: the spool as
 * a whole) and, for MQ_HTTP_CONSUME, group (NULL: any one of them). */
bool mq_http_allowed(const struct mq_http_grant *, int perm,
    const char *topic, const char *group);
/* Whether g allows anything at all on topic: to see it listed. */
bool mq_http_allowed_any(const struct mq_http_grant *, const char *topic);
/* Who the token is for, for logs and rate limits: its "sub", else its
 * "jti", else "-". */
const char *mq_http_grant_subject(const struct mq_http_grant *);
void mq_http_grant_free(struct mq_http_grant *);

/* jwk.c, for auth.c: the keys of a verifier, read from conf's files. */
#define MQ_HTTP_KEYS_MAX 64
enum { MQ_HTTP_KEY_HMAC = 1, MQ_HTTP_KEY_RSA, MQ_HTTP_KEY_EC };
struct mq_http_key {
	int type;                        /* MQ_HTTP_KEY_* */
	int curve;                       /* EC: 256, 384 or 521; else 0 */
	char *kid;                       /* a JWKS key's "kid"; NULL: none */
	char *alg;                       /* a JWKS key's "alg"; NULL: any */
	unsigned char *data;             /* the secret, or the key as PEM */
	size_t len;
};
struct mq_http_keys {
	struct mq_http_key v[MQ_HTTP_KEYS_MAX];
	size_t n;
};
/* Every key of conf's files added to ks, zeroed before: 0, or -1 with
 * the error (ks then freed). */
int mq_http_keys_read(const struct mq_http_auth_conf *, struct mq_http_keys *);
void mq_http_keys_free(struct mq_http_keys *);
/* s[0..len), base64url without padding (RFC 7515), decoded into a buffer
 * to free, NUL-terminated, *n long; NULL (no error set) when it is not
 * that, or there is no memory. */
unsigned char *mq_http_b64url(const char *s, size_t len, size_t *n);

/* ---- wsframe.c: WebSocket frames (RFC 6455) ---- */
enum {
	MQ_WS_CONT = 0x0, MQ_WS_TEXT = 0x1, MQ_WS_BINARY = 0x2,
	MQ_WS_CLOSE = 0x8, MQ_WS_PING = 0x9, MQ_WS_PONG = 0xA,
};
struct mq_ws_frame {
	bool fin;
	int opcode;
	unsigned char *payload;          /* into the buffer parsed, unmasked */
	size_t len;
};
/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64 of the
 * SHA-1 of the key and the protocol's GUID; -1 (EX_PROTOCOL) for a key
 * that is not 24 characters of base64 of 16 bytes. */
int mq_ws_accept_key(const char *client_key, char out[29]);
/* One frame from a client in buf[0..n): the bytes it took (> 0) with *f,
 * its payload unmasked in place; 0 when buf holds no whole frame yet; -1
 * when it breaks the protocol (EX_PROTOCOL), *close_code the close code
 * to send: 1002 (unmasked frame, reserved bits or opcode, a control
 * frame fragmented or over 125 bytes, a length not in its shortest
 * form) or 1009 (a payload over max). */
ssize_t mq_ws_parse(unsigned char *buf, size_t n, size_t max,
    struct mq_ws_frame *f, int *close_code);
/* The header of a frame from the server (unmasked, final) with a payload
 * of len bytes: its length, 2 to 10 bytes, written into out. */
size_t mq_ws_header(unsigned char out[10], int opcode, size_t len);

#endif
