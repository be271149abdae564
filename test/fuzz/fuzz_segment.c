/*
 * fuzz_segment.c: a segment file of format 2 (mq-spool(5), SEGMENTED
 * STORAGE), as another user or a peer may have put it in log/: any bytes
 * are read record by record or refused, never read past.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: ASan sees a read past them. */
	char *b = malloc(size ? size : 1);
	if (!b)
		return 0;
	memcpy(b, data, size);
	struct mq_seg s;
	if (mq_seg_open_bytes(b, size, NULL, &s) == 0) {
		size_t off = mq_seg_start();
		uint64_t seq = 0;
		struct mq_seg_rec r;
		while (mq_seg_next(&s, &off, &seq, &r) == 1)
			;
	}
	free(b);
	return 0;
}
