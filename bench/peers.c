/*
 * peers: mq beside Redis streams, NATS JetStream and an append log, the
 * same messages through each in one program (section 15 of bench/run.sh,
 * bench/peers.bash).
 *
 *   peers append FILE N SIZE BATCH
 *       the append-log floor: N records (an 8-byte frame header, length and
 *       sequence number, then SIZE bytes) appended to one new FILE, BATCH
 *       records a write(2), one fdatasync per write.
 *   peers mq-pub SPOOL TOPIC N SIZE BATCH SYNC [GROUPS]
 *       mq_pub_send of BATCH messages a call, SYNC (batch, each or none),
 *       N in all, into TOPIC; with GROUPS, the groups g1..gGROUPS are
 *       subscribed first (not timed).  N may be 0: only the set-up.
 *   peers mq-sub SPOOL TOPIC GROUP N BATCH
 *       BATCH claims (mq_sub_receive), then one mq_sub_ack_batch, until N
 *       messages are acked.
 *   peers redis-pub PORT STREAM N SIZE PIPELINE [GROUPS]
 *       XADD STREAM * d BODY, PIPELINE commands sent before their replies
 *       are read (1: one round trip each); with GROUPS, the consumer
 *       groups g1..gGROUPS are made first at the stream's end (not timed).
 *   peers redis-sub PORT STREAM GROUP N COUNT
 *       makes GROUP at the stream's start (not timed), then XREADGROUP
 *       COUNT COUNT and one XACK of the ids read, until N are acked.
 *   peers nats-pub URL STREAM N SIZE async|sync BATCH
 *       makes the JetStream stream STREAM (file storage, subject
 *       STREAM.m; not timed), then N publishes: async, BATCH in flight
 *       and then all of their acks awaited (js_PublishAsyncComplete); or
 *       sync, one js_Publish (its ack awaited) at a time.
 *   peers nats-sub URL STREAM N BATCH
 *       a durable pull consumer with explicit acks: Fetch of BATCH, an ack
 *       each (the ack policy that a work queue needs), until N are
 *       acked, then a flush so that the acks reached the server.
 *
 * Bodies are SIZE bytes of 'x'.  Each prints one line, key=value:
 *   count=N seconds=S rate=MSGS_PER_S
 * Every peer is on 127.0.0.1; the servers are started by peers.bash.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <nats/nats.h>

#include "mq.h"

#include "bench.h"

static void
result(size_t n, double secs)
{
	printf("count=%zu seconds=%.6f rate=%.1f\n", n, secs,
	    secs > 0 ? (double)n / secs : 0.0);
}

static void
fail(const char *what, const char *why)
{
	fprintf(stderr, "peers: %s: %s\n", what, why);
	exit(1);
}

static char *
body(size_t size)
{
	char *b = malloc(size ? size : 1);

	if (!b)
		die("malloc", NULL);
	memset(b, 'x', size);
	return b;
}

static int
append(const char *path, size_t n, size_t size, size_t batch)
{
	size_t rec = 8 + size, len;
	char *buf = malloc(rec * batch);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (!buf)
		die("malloc", NULL);
	if (fd < 0)
		die("open", path);
	double t0 = now();
	for (size_t done = 0; done < n; done += len / rec) {
		len = 0;
		for (size_t i = done; i < n && i < done + batch; i++) {
			uint32_t h[2] = { (uint32_t)size, (uint32_t)i };
			memcpy(buf + len, h, sizeof h);
			memset(buf + len + 8, 'x', size);
			len += rec;
		}
		if (write(fd, buf, len) != (ssize_t)len)
			die("write", path);
		if (fdatasync(fd) < 0)
			die("fdatasync", path);
	}
	result(n, now() - t0);
	close(fd);
	free(buf);
	return 0;
}

static int
mqpub(const char *spool, const char *topic, size_t n, size_t size,
    size_t batch, const char *syncname, size_t groups)
{
	enum mq_sync sync;
	struct mq_group_conf gc;
	char group[32];
	mq_spool *sp = mq_spool_open(spool, MQ_CREATE);

	if (mq_sync_parse(syncname, &sync) < 0 || !sp)
		fail(spool, mq_errmsg());
	mq_group_conf_default(&gc);
	for (size_t g = 1; g <= groups; g++) {
		snprintf(group, sizeof group, "g%zu", g);
		if (mq_group_subscribe(sp, topic, group, &gc) < 0)
			fail(group, mq_errmsg());
	}
	mq_pub *p = mq_pub_open(sp, topic, MQ_CREATE);
	struct mq_pub_msg *m = calloc(batch, sizeof *m);
	char (*ids)[MQ_ID_LEN + 1] = calloc(batch, sizeof *ids);
	char *b = body(size);
	if (!p)
		fail(topic, mq_errmsg());
	if (!m || !ids)
		die("calloc", NULL);
	for (size_t i = 0; i < batch; i++)
		m[i] = (struct mq_pub_msg){ .partition = -1, .body = b,
		    .len = size };
	double t0 = now();
	for (size_t done = 0; done < n; done += batch) {
		size_t k = n - done < batch ? n - done : batch;
		if (mq_pub_send(p, m, k, sync, ids) != k)
			fail(topic, mq_errmsg());
	}
	if (n)
		result(n, now() - t0);
	mq_pub_close(p);
	mq_spool_close(sp);
	free(m);
	free(ids);
	free(b);
	return 0;
}

static int
mqsub(const char *spool, const char *topic, const char *group, size_t n,
    size_t batch)
{
	struct mq_sub_opts o;
	mq_spool *sp = mq_spool_open(spool, 0);
	struct mq_msg **m = calloc(batch, sizeof *m);

	mq_sub_opts_default(&o);
	mq_sub *s = sp ? mq_sub_open(sp, topic, group, &o) : NULL;
	if (!s)
		fail(topic, mq_errmsg());
	if (!m)
		die("calloc", NULL);
	double t0 = now();
	for (size_t done = 0; done < n;) {
		size_t k = 0;
		/* A batch is one claim in format 2, as mq-sub's are. */
		mq_sub_prefetch(s, (unsigned)batch);
		while (k < batch && done + k < n) {
			int r = mq_sub_receive(s, 0, &m[k]);
			if (r < 0)
				fail(topic, mq_errmsg());
			if (r == 0)
				fail(topic, "fewer messages than expected");
			k++;
		}
		if (mq_sub_ack_batch(s, m, k) < 0)
			fail(topic, mq_errmsg());
		for (size_t i = 0; i < k; i++)
			mq_msg_free(m[i]);
		done += k;
	}
	result(n, now() - t0);
	mq_sub_close(s);
	mq_spool_close(sp);
	free(m);
	return 0;
}

static redisContext *
rconnect(const char *port)
{
	redisContext *c = redisConnect("127.0.0.1", (int)count_arg(port, 0));

	if (!c || c->err)
		fail("redis", c ? c->errstr : "cannot connect");
	return c;
}

/* A reply that must not be an error; freed here. */
static void
rcheck(redisContext *c, redisReply *r, const char *what)
{
	if (!r)
		fail(what, c->errstr);
	if (r->type == REDIS_REPLY_ERROR)
		fail(what, r->str);
	freeReplyObject(r);
}

static int
redispub(const char *port, const char *stream, size_t n, size_t size,
    size_t pipeline, size_t groups)
{
	redisContext *c = rconnect(port);
	char *b = body(size);
	void *r;

	char group[32];

	/* hiredis's format knows %s and %b, not %zu. */
	for (size_t g = 1; g <= groups; g++) {
		snprintf(group, sizeof group, "g%zu", g);
		rcheck(c, redisCommand(c, "XGROUP CREATE %s %s $ MKSTREAM",
		    stream, group), "XGROUP CREATE");
	}
	double t0 = now();
	for (size_t done = 0; done < n;) {
		size_t k = n - done < pipeline ? n - done : pipeline;
		for (size_t i = 0; i < k; i++)
			if (redisAppendCommand(c, "XADD %s * d %b", stream, b,
			    size) != REDIS_OK)
				fail("XADD", c->errstr);
		for (size_t i = 0; i < k; i++) {
			if (redisGetReply(c, &r) != REDIS_OK)
				fail("XADD", c->errstr);
			rcheck(c, r, "XADD");
		}
		done += k;
	}
	result(n, now() - t0);
	redisFree(c);
	free(b);
	return 0;
}

static int
redissub(const char *port, const char *stream, const char *group, size_t n,
    size_t count)
{
	redisContext *c = rconnect(port);
	const char **argv = calloc(count + 3, sizeof *argv);
	size_t *lens = calloc(count + 3, sizeof *lens);

	if (!argv || !lens)
		die("calloc", NULL);
	rcheck(c, redisCommand(c, "XGROUP CREATE %s %s 0", stream, group),
	    "XGROUP CREATE");
	argv[0] = "XACK", argv[1] = stream, argv[2] = group;
	char cnt[32];
	snprintf(cnt, sizeof cnt, "%zu", count);
	double t0 = now();
	for (size_t done = 0; done < n;) {
		redisReply *r = redisCommand(c,
		    "XREADGROUP GROUP %s c1 COUNT %s STREAMS %s >", group,
		    cnt, stream);
		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 1)
			fail("XREADGROUP", r && r->type == REDIS_REPLY_ERROR ?
			    r->str : "fewer messages than expected");
		/* [[stream, [[id, [field, value]], ...]]] */
		redisReply *entries = r->element[0]->element[1];
		size_t k = entries->elements;
		for (size_t i = 0; i < k; i++) {
			argv[3 + i] = entries->element[i]->element[0]->str;
			lens[3 + i] = entries->element[i]->element[0]->len;
		}
		for (size_t i = 0; i < 3; i++)
			lens[i] = strlen(argv[i]);
		redisReply *a = redisCommandArgv(c, (int)(3 + k), argv, lens);
		if (!a || a->type != REDIS_REPLY_INTEGER || (size_t)a->integer != k)
			fail("XACK", a && a->type == REDIS_REPLY_ERROR ? a->str :
			    "not every id acked");
		freeReplyObject(a);
		freeReplyObject(r);
		done += k;
	}
	result(n, now() - t0);
	redisFree(c);
	free(argv);
	free(lens);
	return 0;
}

static void
ncheck(natsStatus s, const char *what)
{
	if (s != NATS_OK)
		fail(what, nats_GetLastError(NULL) ? nats_GetLastError(NULL) :
		    natsStatus_GetText(s));
}

static jsCtx *
jsconnect(const char *url, size_t inflight, natsConnection **nc)
{
	jsOptions o;
	jsCtx *js;

	ncheck(natsConnection_ConnectTo(nc, url), url);
	ncheck(jsOptions_Init(&o), "jsOptions_Init");
	o.Wait = 30000;
	o.PublishAsync.MaxPending = (int64_t)inflight;
	ncheck(natsConnection_JetStream(&js, *nc, &o), "JetStream");
	return js;
}

static int
natspub(const char *url, const char *stream, size_t n, size_t size,
    const char *mode, size_t batch)
{
	natsConnection *nc;
	jsCtx *js = jsconnect(url, batch, &nc);
	jsStreamConfig cfg;
	jsStreamInfo *si;
	char subj[256];
	const char *subjs[] = { subj };
	char *b = body(size);
	int async = !strcmp(mode, "async");

	if (!async && strcmp(mode, "sync"))
		fail(mode, "neither async nor sync");
	if ((size_t)snprintf(subj, sizeof subj, "%s.m", stream) >= sizeof subj)
		fail(stream, "name too long");
	jsStreamConfig_Init(&cfg);
	cfg.Name = stream;
	cfg.Subjects = subjs;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_FileStorage;
	ncheck(js_AddStream(&si, js, &cfg, NULL, NULL), "js_AddStream");
	jsStreamInfo_Destroy(si);
	double t0 = now();
	for (size_t i = 0; i < n; i++) {
		if (!async) {
			ncheck(js_Publish(NULL, js, subj, b, (int)size, NULL,
			    NULL), "js_Publish");
			continue;
		}
		ncheck(js_PublishAsync(js, subj, b, (int)size, NULL),
		    "js_PublishAsync");
		if ((i + 1) % batch == 0 || i + 1 == n)
			ncheck(js_PublishAsyncComplete(js, NULL),
			    "js_PublishAsyncComplete");
	}
	result(n, now() - t0);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	free(b);
	return 0;
}

static int
natssub(const char *url, const char *stream, size_t n, size_t batch)
{
	natsConnection *nc;
	jsCtx *js = jsconnect(url, batch, &nc);
	jsSubOptions so;
	natsSubscription *sub;
	char subj[256];

	if ((size_t)snprintf(subj, sizeof subj, "%s.m", stream) >= sizeof subj)
		fail(stream, "name too long");
	jsSubOptions_Init(&so);
	so.Stream = stream;
	so.Config.AckPolicy = js_AckExplicit;
	/* The default (1,000 unacked) would hold back a larger batch. */
	so.Config.MaxAckPending = (int64_t)(batch * 4);
	ncheck(js_PullSubscribe(&sub, js, subj, "drain", NULL, &so, NULL),
	    "js_PullSubscribe");
	double t0 = now();
	for (size_t done = 0; done < n;) {
		natsMsgList list;
		int want = (int)(n - done < batch ? n - done : batch);
		ncheck(natsSubscription_Fetch(&list, sub, want, 5000, NULL),
		    "natsSubscription_Fetch");
		for (int i = 0; i < list.Count; i++)
			ncheck(natsMsg_Ack(list.Msgs[i], NULL), "natsMsg_Ack");
		done += (size_t)list.Count;
		natsMsgList_Destroy(&list);
	}
	ncheck(natsConnection_FlushTimeout(nc, 30000), "flush");
	result(n, now() - t0);
	natsSubscription_Destroy(sub);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: peers append FILE N SIZE BATCH\n"
	    "       peers mq-pub SPOOL TOPIC N SIZE BATCH SYNC [GROUPS]\n"
	    "       peers mq-sub SPOOL TOPIC GROUP N BATCH\n"
	    "       peers redis-pub PORT STREAM N SIZE PIPELINE [GROUPS]\n"
	    "       peers redis-sub PORT STREAM GROUP N COUNT\n"
	    "       peers nats-pub URL STREAM N SIZE async|sync BATCH\n"
	    "       peers nats-sub URL STREAM N BATCH\n");
	exit(64);
}

int
main(int argc, char *argv[])
{
	const char *m = argc > 1 ? argv[1] : "";

	if (!strcmp(m, "append") && argc == 6)
		return append(argv[2], count_arg(argv[3], 0),
		    count_arg(argv[4], 1), count_arg(argv[5], 0));
	if (!strcmp(m, "mq-pub") && (argc == 8 || argc == 9))
		return mqpub(argv[2], argv[3], count_arg(argv[4], 1),
		    count_arg(argv[5], 1), count_arg(argv[6], 0), argv[7],
		    argc == 9 ? count_arg(argv[8], 1) : 0);
	if (!strcmp(m, "mq-sub") && argc == 7)
		return mqsub(argv[2], argv[3], argv[4], count_arg(argv[5], 0),
		    count_arg(argv[6], 0));
	if (!strcmp(m, "redis-pub") && (argc == 7 || argc == 8))
		return redispub(argv[2], argv[3], count_arg(argv[4], 0),
		    count_arg(argv[5], 1), count_arg(argv[6], 0),
		    argc == 8 ? count_arg(argv[7], 1) : 0);
	if (!strcmp(m, "redis-sub") && argc == 7)
		return redissub(argv[2], argv[3], argv[4], count_arg(argv[5], 0),
		    count_arg(argv[6], 0));
	if (!strcmp(m, "nats-pub") && argc == 8)
		return natspub(argv[2], argv[3], count_arg(argv[4], 0),
		    count_arg(argv[5], 1), argv[6], count_arg(argv[7], 0));
	if (!strcmp(m, "nats-sub") && argc == 6)
		return natssub(argv[2], argv[3], count_arg(argv[4], 0),
		    count_arg(argv[5], 0));
	usage();
}
