/*
 * fuzz_text.c: the short texts the tools take from users, files and
 * peers: durations and times, offsets, --check thresholds, headers, sync
 * modes, public keys, receipts, a partition's head line and the seen
 * vector of replication (mq-spool(5), The head line; mq-protocol(5),
 * REPLICATION STATE); the text of a jq filter as jqlex.c reads it.
 * Any string is parsed whole or refused.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "repl.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
head(const uint8_t *data, size_t size)
{
	int fd = memfd_create("head", MFD_CLOEXEC);
	if (fd < 0)
		return;
	struct mq_head h;
	if (write(fd, data, size) == (ssize_t)size)
		mq_head_read(fd, &h);
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	double d;
	struct mq_offset off;
	struct mq_threshold th;
	struct mq_header hd;
	enum mq_sync sync;
	unsigned char pk[MQ_PUBKEY_BYTES];
	mq_duration_parse(s, &d);
	mq_time_arg_parse(s, &d);
	mq_offset_parse(s, &off);
	mq_threshold_parse(s, 1, &th);
	if (mq_header_parse(s, &hd) == 0) {
		free(hd.name);
		free(hd.value);
	}
	mq_sync_parse(s, &sync);
	mq_pubkey_parse(s, pk);
	char broken[256];
	mq_jqlex_check(s, broken, sizeof broken);
	mq_spool *sp = fuzz_scratch("text");
	if (sp)
		mq_receipt_ack(sp, "t", "g", s);
	struct repl_seen seen = { 0 };
	if (repl_seen_parse((const char *)data, size, &seen) == 0) {
		char *text;
		size_t len;
		if (repl_seen_render(&seen, &text, &len) == 0)
			free(text);
	}
	repl_seen_free(&seen);
	head(data, size);
	free(s);
	return 0;
}
