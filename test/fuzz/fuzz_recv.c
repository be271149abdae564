/*
 * fuzz_recv.c: what an authorized peer sends after the hello, applied
 * by the receiver (repl_recv) to a fresh spool for each input
 * (mq-protocol(5), REPLICATION CHANNEL; mq(7), Trust): CONF, BATCH, HAVE,
 * SEG (a peer whose hello said segments), PING, ERROR and END frames.  The input is the frames separated by
 * FUZZ_SEP (so that a mutation keeps the framing); the peer is spool
 * PEER.  Whatever the frames, the receiver applies or refuses them
 * without a crash, a leak (of memory or of a descriptor) or undefined
 * behaviour, and makes nothing outside the spool.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"
#include "peer.h"

#define FUZZ_SEP "\n~~frame~~\n"
#define PEER "bd3d604d7bb61cc53e4c99397c492ce5"
#define ME "e274dfc8b57e8065cc74a9b9454ca625"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
frames(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	size_t sl = sizeof FUZZ_SEP - 1;
	fuzz_wire_raw("", 0);
	for (;;) {
		const char *s = memmem(p, (size_t)(end - p), FUZZ_SEP, sl);
		fuzz_wire_add(p, (size_t)((s ? s : end) - p));
		if (!s)
			break;
		p = s + sl;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mq_spool *sp = fuzz_fresh("recv", ME);
	if (!sp) {
		fprintf(stderr, "harness: fuzz_recv: %s\n", mq_errmsg());
		abort();
	}
	frames(data, size);
	mq_link *l = fuzz_wire_link(sp);
	struct mq_repl_opts o = { 0 };
	struct repl_epoch ep = { .segments = true };
	repl_recv(sp, l, PEER, "fuzz", &ep, &o);
	fuzz_session_end(l, sp);
	return 0;
}
