/*
 * fuzz_frame.c: the frames an authorized peer sends, as the bytes come
 * over the channel (mq-protocol(5), REPLICATION CHANNEL): each a 4-byte
 * length and that many bytes, read by link.c; the peer's HELLO; then, if
 * it receives, its SEEN, its answers (OK, RESEND, SKIP) and, with
 * --compare, its WANT lists, read by the sender; if it sends, its CONF,
 * BATCH, HAVE, PING and END frames, read by the receiver; from either,
 * ERROR.  The first byte of the input says which side we play (0:
 * receive, 1: send, 2: send with --compare), the rest is the stream.
 * Each input gets a fresh spool, spool ME, with topic t, group g and two
 * messages to send: whatever the peer says, the session ends with an
 * answer or an error, and no crash, leak or undefined behaviour.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"
#include "peer.h"

#define ME "e274dfc8b57e8065cc74a9b9454ca625"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two messages in t (partitions 0 and 1), for a sender to send. */
static int
content(mq_spool *sp)
{
	struct mq_group_conf gc;
	mq_group_conf_default(&gc);
	if (mq_group_subscribe(sp, "t", "g", &gc) < 0)
		return -1;
	mq_pub *p = mq_pub_open(sp, "t", 0);
	struct mq_pub_msg m[2] = {
		{ .key = "a", .partition = 0, .body = "one", .len = 3 },
		{ .key = "b", .partition = 1, .body = "two", .len = 3 },
	};
	char ids[2][MQ_ID_LEN + 1];
	size_t n = p ? mq_pub_send(p, m, 2, MQ_SYNC_NONE, ids) : 0;
	mq_pub_close(p);
	return n == 2 ? 0 : -1;
}

static mq_spool *
setup(void)
{
	mq_spool *sp = fuzz_fresh("frame", ME);
	struct mq_topic_conf tc;
	mq_topic_conf_default(&tc);
	tc.partitions = 2;
	if (!sp || mq_topic_create(sp, "t", &tc) < 0 || content(sp) < 0) {
		fprintf(stderr, "harness: fuzz_frame: %s\n", mq_errmsg());
		abort();
	}
	return sp;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	mq_spool *sp = setup();
	fuzz_wire_raw(data + 1, size - 1);
	mq_link *l = fuzz_wire_link(sp);
	struct mq_repl_opts o = { .compare = data[0] % 3 == 2 };
	mq_repl_session(sp, l, data[0] % 3 ? MQ_REPL_SEND : MQ_REPL_RECV, 1,
	    &o);
	fuzz_session_end(l, sp);
	return 0;
}
