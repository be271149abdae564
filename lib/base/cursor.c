/*
 * cursor.c: a group's cursor in a partition of format 2,
 * p<k>/g/<group>/cursor (mq-spool(5), SEGMENTED STORAGE).
 *
 * One fixed-width line, rewritten in place as the head is (fixline.c):
 *   mq-cursor 2 next=<20 digits> sum=<8 hex>\n
 * next is the first sequence number the group has not taken from the log
 * yet: everything below it is in the group's queues (new/, cur/, delay/),
 * settled, or filtered out.  Raising it is the commit point of a feed
 * (feed.c), so consumers see a fed name only once its sequence number is
 * below next.  The file is also the lock feeds take (an OFD write lock,
 * waited for as lock.c waits).  An empty cursor is one not written yet:
 * its group starts where its conf says (mq_cursor_start).  next may be
 * MQ_SEQ_MAX + 1: past the last record a partition can hold.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "base.h"

#define CURSOR_BODY 37  /* "mq-cursor 2 next=" 20 */
#define CURSOR_SIZE (CURSOR_BODY + 14)

static int
cursor_format(uint64_t next, char buf[CURSOR_SIZE + 1])
{
	int n = snprintf(buf, CURSOR_SIZE + 1, "mq-cursor 2 next=%020" PRIu64,
	    next);
	return mq_line_seal(buf, CURSOR_SIZE + 1, n, CURSOR_BODY, "cursor");
}

static int
cursor_parse(const char *buf, size_t len, void *ctx)
{
	char expect[CURSOR_SIZE + 1];
	uint64_t next;
	if (len != CURSOR_SIZE || buf[CURSOR_SIZE - 1] != '\n' ||
	    sscanf(buf, "mq-cursor 2 next=%20" SCNu64, &next) != 1 ||
	    cursor_format(next, expect) < 0 ||
	    memcmp(expect, buf, len))
		return -1;
	*(uint64_t *)ctx = next;
	return 0;
}

int
mq_cursor_read(int fd, uint64_t *next)
{
	return mq_line_read(fd, cursor_parse, next, "group cursor");
}

int
mq_cursor_write(int fd, uint64_t next, int sync)
{
	char buf[CURSOR_SIZE + 1];
	if (cursor_format(next, buf) < 0)
		return -1;
	return mq_line_write(fd, buf, CURSOR_SIZE, sync, "cursor");
}
