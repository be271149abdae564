/*
 * server.c: mq-http(1)'s daemon, on libmicrohttpd: a thread per
 * connection (a long poll or a stream blocks its own thread only), each
 * connection with a spool handle of its own, since a handle belongs to
 * one thread.  A request's token is checked before its body is read, so
 * a client without one gets its 401 having sent nothing more; the body
 * is read whole up to max_body, and then routes.c takes it.
 *
 * Stopping (stop_fd readable): the listening socket is closed at once,
 * waits in flight end since stop_fd is their wake fd, and the daemon
 * stops once the requests are done or after a grace.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sysexits.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http.h"

#define STOP_GRACE 10.0                 /* seconds requests get to end */
#define BODY_BUDGET 16                  /* bodies at once, in --max-body */

/* What a connection keeps across its requests. */
struct conn {
	mq_spool *sp;
};

static void
say(const struct mq_http_server *srv, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	if (!srv->conf->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	srv->conf->log(line, srv->conf->log_ctx);
}

/* A CORS preflight from an allowed origin: what it may send. */
static int
preflight(struct mq_http_req *r)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(0, "",
	    MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return -1;
	mq_http_cors(r, resp);
	MHD_add_response_header(resp, "Access-Control-Allow-Methods",
	    "GET, POST, PUT");
	MHD_add_response_header(resp, "Access-Control-Allow-Headers",
	    "Authorization, Content-Type");
	MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
	r->status = MHD_HTTP_NO_CONTENT;
	enum MHD_Result ok = MHD_queue_response(r->conn, MHD_HTTP_NO_CONTENT,
	    resp);
	MHD_destroy_response(resp);
	return ok == MHD_YES ? 0 : -1;
}

static mq_spool *
conn_spool(struct mq_http_server *srv, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *c = ci ? ci->socket_context : NULL;
	if (!c)
		return NULL;
	if (!c->sp)
		c->sp = mq_spool_open(srv->conf->spool, 0);
	return c->sp;
}

static void
on_connection(void *cls, struct MHD_Connection *conn, void **ctx,
    enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	(void)conn;
	struct conn *c = *ctx;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		*ctx = calloc(1, sizeof *c);
	} else if (c) {
		mq_spool_close(c->sp);
		free(c);
		*ctx = NULL;
	}
}

/* The first call for a request: its token, before any body is read. */
static int
start(struct mq_http_req *r)
{
	const char *cl = mq_http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > r->srv->max_body)
		return mq_http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "a body over "
		    "%zu bytes", r->srv->max_body);
	if (!strcmp(r->path, "/healthz"))
		return 1;
	if (!strcmp(r->method, "OPTIONS") && mq_http_origin(r))
		return preflight(r) < 0 ? -1 : 0;
	/* EventSource and WebSocket in a browser send no header of their
	 * own: their token may come as ?access_token= (RFC 6750). */
	const char *auth = mq_http_header(r, MHD_HTTP_HEADER_AUTHORIZATION),
	    *qt = mq_http_arg(r, "access_token");
	char bearer[MQ_HTTP_TOKEN_MAX + 16];
	if (!auth && qt && !strcmp(r->method, "GET") &&
	    (size_t)snprintf(bearer, sizeof bearer, "Bearer %s", qt) <
	    sizeof bearer)
		auth = bearer;
	if (mq_http_auth_check(r->srv->auth, auth, mq_now(), &r->grant) < 0)
		return mq_http_error(r, MHD_HTTP_UNAUTHORIZED, "%s", mq_errmsg());
	/* Kept for the log (a WebSocket session takes the grant away), with
	 * no control character to forge a line with. */
	snprintf(r->who, sizeof r->who, "%s", mq_http_grant_subject(r->grant));
	for (char *p = r->who; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (mq_http_rate_take(r->srv, r->who) < 0)
		return mq_http_error(r, MHD_HTTP_TOO_MANY_REQUESTS, "%s",
		    mq_errmsg());
	return 1;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **ctx)
{
	struct mq_http_server *srv = cls;
	struct mq_http_req *r = *ctx;
	(void)version;
	if (!r) {
		if (!(r = calloc(1, sizeof *r)) || !(r->path = strdup(url))) {
			free(r);
			return MHD_NO;
		}
		*ctx = r;
		atomic_fetch_add(&srv->active, 1);
		r->srv = srv;
		r->conn = conn;
		r->method = method;
		r->stop_fd = srv->stop_fd;
		r->max_wait = srv->max_wait;
		r->t0 = mq_mono();
		int rc = start(r);
		r->done = rc != 1;
		return rc < 0 ? MHD_NO : MHD_YES;
	}
	if (r->done)
		return MHD_YES;         /* answered: the body is not wanted */
	if (*size) {
		if (*size > srv->max_body - r->len) {
			r->done = true;
			*size = 0;
			return mq_http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "a body "
			    "over %zu bytes", srv->max_body) < 0 ? MHD_NO : MHD_YES;
		}
		/* The bodies of all requests at once: a client with many slow
		 * uploads gets 503, not the memory. */
		if (atomic_fetch_add(&srv->bodies, *size) + *size > srv->budget) {
			atomic_fetch_sub(&srv->bodies, *size);
			r->done = true;
			*size = 0;
			return mq_http_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "busy: "
			    "request bodies hold %zu bytes already", srv->budget) < 0 ?
			    MHD_NO : MHD_YES;
		}
		char *nb = realloc(r->body, r->len + *size + 1);
		if (!nb)
			return MHD_NO;
		memcpy(nb + r->len, data, *size);
		r->body = nb;
		r->len += *size;
		r->body[r->len] = 0;
		*size = 0;
		return MHD_YES;
	}
	r->done = true;
	if (!(r->sp = conn_spool(srv, conn)))
		return mq_http_failed(r) < 0 ? MHD_NO : MHD_YES;
	return mq_http_route(r) < 0 ? MHD_NO : MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
    enum MHD_RequestTerminationCode why)
{
	struct mq_http_server *srv = cls;
	struct mq_http_req *r = *ctx;
	(void)conn;
	if (!r)
		return;
	say(srv, "%s %s %d %s %.1f ms%s", r->method, r->path,
	    r->status, r->who[0] ? r->who : "-",
	    (mq_mono() - r->t0) * 1e3, why == MHD_REQUEST_TERMINATED_COMPLETED_OK
	    ? "" : " (not completed)");
	mq_http_release(r, why == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	mq_http_grant_free(r->grant);
	free(r->path);
	free(r->cut);
	free(r->body);
	atomic_fetch_sub(&srv->bodies, r->len);
	free(r);
	*ctx = NULL;
	atomic_fetch_sub(&srv->active, 1);
}

static void
on_mhd_error(void *cls, const char *fmt, va_list ap)
{
	struct mq_http_server *srv = cls;
	char line[1024];
	vsnprintf(line, sizeof line, fmt, ap);
	line[strcspn(line, "\n")] = 0;
	say(srv, "libmicrohttpd: %s", line);
}

/* Plain HTTP goes on a loopback address only, unless asked. */
static int
check_plain(const struct mq_http_conf *c, int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (c->cert_file || c->plain_anywhere)
		return 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return mq_err_sys("getsockname");
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&ss;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ss;
	bool loop = ss.ss_family == AF_INET ?
	    (ntohl(a4->sin_addr.s_addr) >> 24) == 127 :
	    ss.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
	return loop ? 0 : mq_err(EX_USAGE, "plain HTTP listens on loopback "
	    "only: give a certificate and key, or allow plain HTTP anywhere");
}

static char *
read_pem(const char *path)
{
	char *buf;
	size_t len;
	if (mq_read_at(AT_FDCWD, path, 1 << 20, &buf, &len) < 0)
		return NULL;
	return buf;
}

static struct MHD_Daemon *
start_daemon(struct mq_http_server *srv, int lfd, char *cert, char *key)
{
	const struct mq_http_conf *c = srv->conf;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC | MHD_USE_ERROR_LOG |
	    MHD_ALLOW_UPGRADE | (cert ? MHD_USE_TLS : 0);
	unsigned limit = c->max_connections ? c->max_connections : 256;
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, key },
		{ MHD_OPTION_END, 0, NULL },
	};
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_error, srv,
	    MHD_OPTION_LISTEN_SOCKET, lfd,
	    MHD_OPTION_CONNECTION_LIMIT, limit,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	    MHD_OPTION_ARRAY, cert ? tls : tls + 2,
	    MHD_OPTION_END);
}

/* Waits for stop_fd; then lets what is in flight end. */
static void
run_until_stopped(struct mq_http_server *srv, struct MHD_Daemon *d)
{
	struct pollfd p = { .fd = srv->stop_fd, .events = POLLIN };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	int lfd = MHD_quiesce_daemon(d);
	if (lfd >= 0)
		close(lfd);
	say(srv, "stopping: %d request%s in flight", atomic_load(&srv->active),
	    atomic_load(&srv->active) == 1 ? "" : "s");
	double until = mq_mono() + STOP_GRACE;
	while (atomic_load(&srv->active) > 0 && mq_mono() < until)
		usleep(10000);
	MHD_stop_daemon(d);
}

int
mq_http_serve(const struct mq_http_conf *c, int stop_fd)
{
	struct mq_http_server srv = { .conf = c, .stop_fd = stop_fd,
	    .max_body = c->max_body ? c->max_body : 16 << 20,
	    .max_wait = c->max_wait > 0 ? c->max_wait : 60 };
	srv.budget = srv.max_body * BODY_BUDGET;
	struct mq_http_auth_conf ac = { c->secret_files, c->nsecret,
	    c->key_files, c->nkey, c->jwks_files, c->njwks, c->audience,
	    c->issuer, c->leeway };
	char *cert = NULL, *key = NULL;
	int rc = -1, lfd = c->listen_fd;
	if ((c->cert_file != NULL) != (c->key_file != NULL))
		return mq_err(EX_USAGE, "TLS needs both a certificate and a key");
	/* The spool is made now, so that no request needs to. */
	mq_spool *sp = mq_spool_open(c->spool, MQ_CREATE);
	if (!sp)
		return -1;
	mq_spool_close(sp);
	if (!(srv.auth = mq_http_auth_new(&ac)))
		return -1;
	if (!(srv.b = calloc(1024, sizeof *srv.b))) {
		mq_err_sys("malloc");
		goto out;
	}
	pthread_mutex_init(&srv.lock, NULL);
	if (c->cert_file && (!(cert = read_pem(c->cert_file)) ||
	    !(key = read_pem(c->key_file))))
		goto out;
	if (lfd < 0 && (lfd = mq_net_listen(c->listen ? c->listen : "8080")) < 0)
		goto out;
	if (check_plain(c, lfd) < 0)
		goto out;
	struct MHD_Daemon *d = start_daemon(&srv, lfd, cert, key);
	if (!d) {
		mq_err(EX_SOFTWARE, "the HTTP server did not start (see above)");
		goto out;
	}
	lfd = -1;                       /* the daemon's now */
	say(&srv, "serving %s over %s", c->listen_fd >= 0 ? "the socket it "
	    "was given" : c->listen ? c->listen : "8080", cert ? "HTTPS" :
	    "HTTP");
	run_until_stopped(&srv, d);
	rc = 0;
out:
	if (lfd >= 0 && lfd != c->listen_fd)
		close(lfd);
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(cert);
	free(srv.b);
	mq_http_auth_free(srv.auth);
	return rc;
}
