/*
 * http.h: mq-http(1), the spool served over HTTP, Server-Sent Events and
 * WebSocket: the top layer.  It parses nothing of HTTP itself
 * (libmicrohttpd does) and does no queue work of its own: every route
 * calls the operation a tool would.
 */
#ifndef MQ_HTTP_H
#define MQ_HTTP_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
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
#define MQ_HTTP_TOKEN_MAX 8192          /* bytes of a token, at most */
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
/* Whether g may see a group's settings, state and dead letters: it may
 * consume from the group, or administer its topic. */
bool mq_http_allowed_group(const struct mq_http_grant *, const char *topic,
    const char *group);
/* Whether g allows anything at all on topic: to see it listed. */
bool mq_http_allowed_any(const struct mq_http_grant *, const char *topic);
/* Who the token is for, for logs and rate limits: its "sub", else its
 * "jti", else "-". */
const char *mq_http_grant_subject(const struct mq_http_grant *);
/* When (as mq_now()) the token stops holding: its "exp" and the leeway.
 * A request is checked when it comes; a stream or a WebSocket, which
 * outlives it, ends then (sseroute.c, wsroute.c). */
double mq_http_grant_until(const struct mq_http_grant *);
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

/* ---- server.c: the daemon, a request's life; respond.c: answers ---- */
struct MHD_Connection;
/* Requests a token may make: a bucket of rate tokens, refilled at rate
 * a second up to rate. */
struct mq_http_bucket {
	char who[128];
	double level, at;
};

/* The daemon: its configuration, verifier, limits and counts. */
struct mq_http_server {
	const struct mq_http_conf *conf;
	struct mq_http_auth *auth;
	int stop_fd;
	size_t max_body;
	double max_wait;
	atomic_int active;              /* requests between start and end */
	atomic_size_t bodies;           /* bytes of request bodies held */
	size_t budget;                  /* bodies' most */
	pthread_mutex_t lock;           /* buckets */
	struct mq_http_bucket *b;
	size_t nb;
};

/* A request, as the routes see it: its path cut at '/', its body read
 * whole (at most max_body), its token verified. */
struct mq_http_req {
	struct mq_http_server *srv;
	struct MHD_Connection *conn;
	const char *method;
	char *path;                      /* as asked */
	char *cut;                       /* a copy of it, cut into seg[] */
	char *seg[8];
	size_t nseg;
	char *body;
	size_t len;
	struct mq_http_grant *grant;
	char who[128];                   /* the token's subject, for the log */
	mq_spool *sp;                    /* this connection's */
	int status;                      /* of the response, for the log */
	int stop_fd;                     /* readable once the server stops */
	double max_wait;
	double t0;                       /* when it came */
	bool done;                       /* answered (or being answered) */
	void *delivered;                 /* claims it hands out (recvroute.c) */
};
/* The request's Origin when the configuration lets pages of it call,
 * else NULL; the CORS headers of a response for it. */
const char *mq_http_origin(const struct mq_http_req *);
struct MHD_Response;
void mq_http_cors(const struct mq_http_req *, struct MHD_Response *);
/* The server's --max-body; a session that outlives its request (a
 * WebSocket) counts as one in flight from start to end. */
size_t mq_http_max_body(const struct mq_http_server *);
void mq_http_session_start(struct mq_http_server *);
void mq_http_session_end(struct mq_http_server *);
/* How long a wait goes before it looks whether its client is gone. */
#define MQ_HTTP_SLICE 0.25
/* Whether the client has closed its end of the connection (a long poll
 * looks, between slices of its wait); whether the server is stopping. */
bool mq_http_client_gone(struct MHD_Connection *);
bool mq_http_stopped(int stop_fd);
/* A query argument, or NULL. */
const char *mq_http_arg(const struct mq_http_req *, const char *name);
/* A request header, or NULL. */
const char *mq_http_header(const struct mq_http_req *, const char *name);
/* Responses: each queues one and returns 0, or -1 if MHD refused it.
 * _json sends len bytes of JSON (or of the content type given); _error
 * {"error": message}; _failed the library's last error, its code mapped
 * to an HTTP status (mq-http(1), STATUS CODES). */
int mq_http_send(struct mq_http_req *, int status, const char *type,
    const void *data, size_t len);
int mq_http_json(struct mq_http_req *, int status, const char *json,
    size_t len);
/* o as the JSON answer (o is taken; NULL: 500). */
int mq_http_object(struct mq_http_req *, int status, json_t *o);
int mq_http_error(struct mq_http_req *, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int mq_http_failed(struct mq_http_req *);
/* The HTTP status for a sysexits.h code. */
int mq_http_status_of(int code);
/* Whether the token allows perm on topic (and group); if not, answers
 * 403 and returns false. */
bool mq_http_permit(struct mq_http_req *, int perm, const char *topic,
    const char *group);
/* The same for a group's settings, state and dead letters
 * (mq_http_allowed_group): if not, answers 403 and returns false. */
bool mq_http_permit_group(struct mq_http_req *, const char *topic,
    const char *group);
/* One request of the token who (its subject) taken from its bucket:
 * 0, or -1 (EX_TEMPFAIL: answered 429) when the bucket is empty.  Every
 * request counts, a WebSocket's as well as an HTTP one. */
int mq_http_rate_take(struct mq_http_server *, const char *who);
/* A response whose body is written by fn into a memory stream: sent as
 * JSON with status 200, or as the error fn left (-1). */
int mq_http_stream_json(struct mq_http_req *,
    int (*fn)(struct mq_http_req *, FILE *, void *), void *ctx);
/* ?NAME=DURATION: *out (default kept when absent); false after answering
 * 400 for a bad one or one over max (max 0: none). */
bool mq_http_duration_arg(struct mq_http_req *, const char *name,
    double max, double *out);

/* A member of a JSON object that is a duration: a string ("30s") or a
 * number of seconds; *out kept when it is missing.  -1 (EX_DATAERR) for
 * anything else. */
int mq_http_seconds(json_t *obj, const char *name, double *out);

/* ---- stream.c: a group streamed to one client (SSE, WebSocket) ---- */
struct mq_http_stream {
	mq_spool *sp;
	mq_sub *sub;
	char topic[MQ_NAME_MAX + 1], group[MQ_NAME_MAX + 1];
	char **held;                     /* receipts out, not known settled */
	size_t nheld, credit;
};
/* Opens the stream: at most credit (1 to 1000) messages out unsettled,
 * each under lease (0: the group's); a wait ends when wake_fd is
 * readable. */
int mq_http_stream_open(struct mq_http_stream *, mq_spool *,
    const char *topic, const char *group, unsigned credit, double lease,
    int wake_fd);
/* The next message, waiting up to timeout: 1 with *m, 0 when none came
 * or the credit is spent (then after a short nap), -1 on error. */
int mq_http_stream_next(struct mq_http_stream *, double timeout,
    struct mq_msg **m);
/* A receipt settled through the stream's own connection. */
void mq_http_stream_settled(struct mq_http_stream *, const char *receipt);
/* Gives back what the client still holds, and closes. */
void mq_http_stream_close(struct mq_http_stream *);
/* Gives back one claim whose client went away (deferred: no failure). */
void mq_http_give_back(mq_spool *, const char *topic, const char *group,
    const char *receipt);

/* ---- sseroute.c, wsroute.c: the streams ---- */
int mq_http_events(struct mq_http_req *, const char *topic,
    const char *group);
/* GET /v1/ws: the upgrade, then a thread of its own for the session. */
int mq_http_websocket(struct mq_http_req *);

/* ---- routes.c: which route a request takes ---- */
int mq_http_route(struct mq_http_req *);

/* ---- the routes ---- */
/* pubroute.c: POST /v1/topics/T/messages */
int mq_http_publish(struct mq_http_req *, const char *topic);
/* The messages of doc (an object, or an array of them, as the route
 * takes them) published with p, all or none, synced as sync says: 0
 * with their ids (a JSON array) in *ids, or -1. */
int mq_http_publish_doc(mq_pub *p, json_t *doc, enum mq_sync sync,
    json_t **ids);
/* recvroute.c: GET .../groups/G/messages, POST .../ack, nack, extend */
int mq_http_receive(struct mq_http_req *, const char *topic,
    const char *group);
int mq_http_settle(struct mq_http_req *, const char *topic,
    const char *group, const char *how);
/* One receipt settled: how is "ack", "nack" (a delay of secs) or
 * "extend" (a lease of secs, 30 when 0): 0, or -1 with the error. */
int mq_http_settle_one(mq_spool *, const char *topic, const char *group,
    const char *how, const char *receipt, double secs);
/* At the end of a request: what it delivered is given back unless the
 * response arrived whole. */
void mq_http_release(struct mq_http_req *, bool arrived);
/* inforoute.c: topics, groups, status, metrics */
int mq_http_topics(struct mq_http_req *);
int mq_http_topic(struct mq_http_req *, const char *topic);
int mq_http_topic_create(struct mq_http_req *, const char *topic);
int mq_http_groups(struct mq_http_req *, const char *topic);
int mq_http_group(struct mq_http_req *, const char *topic,
    const char *group);
int mq_http_group_create(struct mq_http_req *, const char *topic,
    const char *group);
int mq_http_message(struct mq_http_req *, const char *topic,
    const char *id);
/* dlqroute.c: a group's dead letters: list, show, and (how) "redrive"
 * or "purge" */
int mq_http_dead(struct mq_http_req *, const char *topic, const char *group);
int mq_http_dead_one(struct mq_http_req *, const char *topic,
    const char *group, const char *id);
int mq_http_dead_act(struct mq_http_req *, const char *topic,
    const char *group, const char *how);
int mq_http_metrics(struct mq_http_req *);

#endif
