/*
 * fuzz_archive.c: an archive given to mq-dlq import (mq-dlq(1), mq-spool(5)
 * Dead letter archives), written to a file and imported into a spool of
 * its own with a topic t and a group g: whatever the bytes, the import
 * takes it whole or refuses it, and never crashes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mq_spool *sp;
static char file[4200];

static int
setup(void)
{
	if (!(sp = fuzz_scratch("archive")))
		return -1;
	snprintf(file, sizeof file, "%s.tar", fuzz_dir);
	struct mq_topic_conf tc;
	mq_topic_conf_default(&tc);
	tc.partitions = 2;
	struct mq_group_conf gc;
	mq_group_conf_default(&gc);
	return mq_topic_create(sp, "t", &tc) < 0 ||
	    mq_group_subscribe(sp, "t", "g", &gc) < 0 ? -1 : 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!sp && setup() < 0) {
		fprintf(stderr, "fuzz_archive: %s\n", mq_errmsg());
		abort();
	}
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	size_t count;
	mq_dlq_import(sp, file, &count);
	return 0;
}
