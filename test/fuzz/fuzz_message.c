/*
 * fuzz_message.c: a message file as a consumer reads it from the spool,
 * where anyone who can write may have put it (mq-spool(5), Message file):
 * any bytes must be parsed or refused, never read past or leaked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mq_msg *m = calloc(1, sizeof *m);
	char *buf = malloc(size + 1);
	if (!m || !buf) {
		free(m);
		free(buf);
		return 0;
	}
	memcpy(buf, data, size);
	buf[size] = 0;
	m->priv = buf;                  /* the message owns its buffer */
	mq_msg_parse(buf, size, m);
	mq_msg_free(m);
	return 0;
}
