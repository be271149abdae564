/*
 * fuzz_journal.c: a change journal as a reader finds it, and the hosts'
 * journals and journals/.merged as a merge finds them (mq-spool(5),
 * CHANGE JOURNAL, Host journals), in a spool of its own.  The first byte
 * says where the rest goes: SPOOL/journal (read record by record, each
 * record's arguments parsed), journals/h1 or journals/.merged (then
 * merged into SPOOL/journal); a merge must not fail on what it reads.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
put(mq_spool *sp, const char *path, const uint8_t *data, size_t size)
{
	int fd = openat(sp->fd, path, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

static void
read_all(mq_spool *sp)
{
	struct mq_jreader r;
	struct mq_jrec rec;
	struct mq_jargs ja;
	if (mq_jreader_open(sp, &r, 0) < 0)
		return;
	while (mq_jreader_next(&r, &rec) == 1)
		mq_jargs_parse(rec.type, rec.args, &ja);
	mq_jreader_close(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mq_spool *sp = fuzz_scratch("journal");
	if (!sp || size == 0)
		return 0;
	int dfd = sp->fd;
	unlinkat(dfd, "journal", 0);
	unlinkat(dfd, "journals/h1", 0);
	unlinkat(dfd, "journals/.merged", 0);
	mkdirat(dfd, "journals", 0755);
	const char *where[] = { "journal", "journals/h1", "journals/.merged" };
	put(sp, where[data[0] % 3], data + 1, size - 1);
	if (data[0] % 3 == 0) {
		read_all(sp);
		return 0;
	}
	uint64_t end, held;
	if (mq_journal_merge(sp, UINT64_MAX, &end, &held) < 0)
		abort();
	read_all(sp);
	return 0;
}
