/*
 * httppub: publish throughput in this process and through mq-http(1).
 *
 *   httppub lib SPOOL TOPIC N BATCH SIZE
 *       mq_pub_send of BATCH messages at a time (MQ_SYNC_BATCH), N in all.
 *   httppub http HOST:PORT TOKEN TOPIC N BATCH SIZE
 *       POST /v1/topics/TOPIC/messages over one keep-alive connection, N
 *       messages in all: the body as it is when BATCH is 1, else a JSON
 *       array of BATCH objects; each answer must be 200.
 *
 * Messages are SIZE bytes of 'x'.  Prints one line, key=value:
 * count=N seconds= rate= (messages a second).
 */
#define _GNU_SOURCE
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mq.h"

#include "bench.h"

static void
result(size_t n, double secs)
{
	printf("count=%zu seconds=%.6f rate=%.1f\n", n, secs, (double)n / secs);
}

static int
lib(const char *spool, const char *topic, size_t n, size_t batch, size_t size)
{
	mq_spool *sp = mq_spool_open(spool, MQ_CREATE);
	mq_pub *p = sp ? mq_pub_open(sp, topic, MQ_CREATE) : NULL;
	char *body = malloc(size);
	struct mq_pub_msg *m = calloc(batch, sizeof *m);
	char (*ids)[MQ_ID_LEN + 1] = calloc(batch, sizeof *ids);
	if (!p || !body || !m || !ids) {
		fprintf(stderr, "httppub: %s\n", mq_errmsg());
		return 1;
	}
	memset(body, 'x', size);
	for (size_t i = 0; i < batch; i++)
		m[i] = (struct mq_pub_msg){ .partition = -1, .body = body,
		    .len = size };
	double t0 = now();
	for (size_t done = 0; done < n; done += batch) {
		size_t k = n - done < batch ? n - done : batch;
		if (mq_pub_send(p, m, k, MQ_SYNC_BATCH, ids) != k) {
			fprintf(stderr, "httppub: %s\n", mq_errmsg());
			return 1;
		}
	}
	result(n, now() - t0);
	mq_pub_close(p);
	mq_spool_close(sp);
	return 0;
}

static int
dial(const char *addr)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	struct addrinfo *ai, hints = { .ai_socktype = SOCK_STREAM };
	int one = 1;
	if (!colon || (size_t)(colon - addr) >= sizeof host)
		return -1;
	snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		die("connect", addr);
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* Reads one answer: its status, its body skipped (by Content-Length). */
static int
answer(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	char *end;
	while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
		ssize_t k = read(fd, buf + len, cap - len);
		if (k <= 0)
			die("read", "answer");
		len += (size_t)k;
	}
	int status = atoi(buf + 9);
	char *cl = strcasestr(buf, "\r\ncontent-length:");
	size_t body = cl ? strtoul(cl + 17, NULL, 10) : 0, have = len -
	    (size_t)(end + 4 - buf);
	while (have < body) {
		ssize_t k = read(fd, buf, cap < body - have ? cap : body - have);
		if (k <= 0)
			die("read", "body");
		have += (size_t)k;
	}
	return status;
}

static int
http(const char *addr, const char *token, const char *topic, size_t n,
    size_t batch, size_t size)
{
	size_t cap = batch * (size + 16) + 4096;
	char *body = malloc(cap), *req = malloc(cap + 4096), buf[65536];
	size_t bl = 0;
	int fd = dial(addr);
	if (fd < 0 || !body || !req)
		die("setup", addr);
	if (batch == 1) {
		memset(body, 'x', size);
		bl = size;
	} else {
		body[bl++] = '[';
		for (size_t i = 0; i < batch; i++) {
			bl += (size_t)sprintf(body + bl, "%s{\"body\":\"", i ? "," : "");
			memset(body + bl, 'x', size);
			bl += size;
			bl += (size_t)sprintf(body + bl, "\"}");
		}
		body[bl++] = ']';
	}
	int hl = sprintf(req, "POST /v1/topics/%s/messages HTTP/1.1\r\n"
	    "Host: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n\r\n", topic, addr, token, batch == 1 ?
	    "application/octet-stream" : "application/json", bl);
	memcpy(req + hl, body, bl);
	double t0 = now();
	for (size_t done = 0; done + batch <= n; done += batch) {
		if (write(fd, req, (size_t)hl + bl) != (ssize_t)((size_t)hl + bl))
			die("write", "request");
		int st = answer(fd, buf, sizeof buf);
		if (st != 200) {
			fprintf(stderr, "httppub: status %d\n", st);
			return 1;
		}
	}
	result(n - n % batch, now() - t0);
	close(fd);
	free(body);
	free(req);
	return 0;
}

int
main(int argc, char *argv[])
{
	if (argc == 7 && !strcmp(argv[1], "lib"))
		return lib(argv[2], argv[3], count_arg(argv[4], 0),
		    count_arg(argv[5], 0), count_arg(argv[6], 0));
	if (argc == 8 && !strcmp(argv[1], "http"))
		return http(argv[2], argv[3], argv[4], count_arg(argv[5], 0),
		    count_arg(argv[6], 0), count_arg(argv[7], 0));
	fprintf(stderr, "usage: httppub lib SPOOL TOPIC N BATCH SIZE\n"
	    "       httppub http HOST:PORT TOKEN TOPIC N BATCH SIZE\n");
	return 64;
}
