/*
 * fuzz_conf.c: topic.conf and a group's conf as the tools read them from
 * the spool (mq-spool(5), Configuration files): key=value text, then the
 * topic's and the group's settings taken from it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "queue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mq_conf kv;
	if (mq_conf_parse((const char *)data, size, "fuzz", &kv) < 0)
		return 0;
	struct mq_topic_conf tc;
	struct mq_group_conf gc;
	mq_topic_conf_parse(&kv, &tc);
	mq_group_conf_parse(&kv, &gc);
	mq_conf_free(&kv);
	return 0;
}
