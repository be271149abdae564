/*
 * test_journal.c: the change journal: a record's sequence is its offset,
 * copied records keep their origin and sequence, a damaged line is
 * skipped, a record cut by a crash does not take the next one with it,
 * and a line still being written is waited for.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "t.h"

static char root[] = "/tmp/mq-unit-journal.XXXXXX";

static void
append_raw(mq_spool *sp, const char *text)
{
	int fd = mq_journal_fd(sp);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		exit(1);
}

int
main(void)
{
	if (!mkdtemp(root))
		return 1;
	char p[256];
	snprintf(p, sizeof p, "%s/s", root);
	mq_spool *sp = mq_spool_open(p, MQ_CREATE);
	if (!sp)
		return 1;
	const char origin[] = "0123456789abcdef0123456789abcdef";

	/* Two own records and a copied one. */
	ok(mq_journal_note(sp, 'T', "%s", "orders") == 0, "note T");
	uint64_t first_end = mq_journal_size(sp);
	struct mq_jbuf b = { 0 };
	uint64_t end = 0;
	ok(mq_journal_line(&b, 'A', "orders 0 g %s",
	    "00000000000000000007.6616aff5f3e00a3f9c1e27b400000000") == 0 &&
	    mq_journal_raw(&b, origin, 4242, "X 5 orders 1 g name", 19) == 0 &&
	    mq_journal_write(sp, &b, &end) == 0, "a buffer of two records");
	ok(end == mq_journal_size(sp), "the end offset is the journal's size");

	struct mq_jreader r;
	struct mq_jrec rec;
	ok(mq_jreader_open(sp, &r, 0) == 0, "reader");
	ok(mq_jreader_next(&r, &rec) == 1 && rec.type == 'T' && rec.seq == 0 &&
	    !rec.origin[0] && !strcmp(rec.args, "orders"), "T, own, sequence 0");
	ok(mq_jreader_next(&r, &rec) == 1 && rec.type == 'A' &&
	    rec.seq == first_end && rec.at == first_end, "A: its offset");
	ok(mq_jreader_next(&r, &rec) == 1 && rec.type == 'X' && rec.seq == 4242 &&
	    !strcmp(rec.origin, origin) && rec.ms == 5 &&
	    !strcmp(rec.args, "orders 1 g name"), "copied: origin and sequence");
	ok(mq_jreader_next(&r, &rec) == 0, "nothing more");

	/* A line whose sum is wrong, then a record cut by a crash followed
	 * on the same line by the next writer's record. */
	append_raw(sp, "T 1 damaged 00000000\n");
	uint64_t cut = mq_journal_size(sp);
	append_raw(sp, "P 2 orders 0 00000000000000000001.66");
	uint64_t next_at = mq_journal_size(sp);
	ok(mq_journal_note(sp, 'T', "%s", "after") == 0, "a record after the cut");
	ok(mq_jreader_next(&r, &rec) == 1 && rec.type == 'T' &&
	    !strcmp(rec.args, "after") && rec.at == next_at && rec.at > cut,
	    "the damaged line is skipped; the record after the cut is found");
	ok(r.skipped == 2, "two lines counted as skipped (%llu)",
	    (unsigned long long)r.skipped);

	/* A line still being written: not returned until it is whole. */
	b.len = 0;
	ok(mq_journal_line(&b, 'R', "orders 0 g %s", "KEY,a1") == 0, "R built");
	size_t half = b.len / 2;
	int fd = mq_journal_fd(sp);
	ok(write(fd, b.buf, half) == (ssize_t)half, "half a line written");
	ok(mq_jreader_next(&r, &rec) == 0, "half a line is waited for");
	ok(write(fd, b.buf + half, b.len - half) == (ssize_t)(b.len - half),
	    "the rest");
	ok(mq_jreader_next(&r, &rec) == 1 && rec.type == 'R', "then it is read");
	mq_jreader_close(&r);
	mq_jbuf_free(&b);

	/* The arguments of a record, one parser for every reader. */
	struct mq_jargs ja;
#define KEY "00000000000000000042.6616aff5f3e00a3f9c1e27b400000000"
	ok(mq_jargs_parse('P', "orders 3 " KEY " g1,g2", &ja) == 0 &&
	    !strcmp(ja.topic, "orders") && ja.k == 3 && !strcmp(ja.a, KEY) &&
	    !strcmp(ja.b, "g1,g2"), "P: topic, partition, KEY, groups");
	ok(mq_jargs_parse('P', "orders 3 " KEY " -", &ja) == 0 &&
	    mq_jargs_parse('D', "orders 0 g " KEY ",a3,d1", &ja) == 0 &&
	    !strcmp(ja.a, "g") && !strcmp(ja.b, KEY ",a3,d1"),
	    "P for no group; D: group, dead letter");
	ok(mq_jargs_parse('T', "orders", &ja) == 0 &&
	    !strcmp(ja.topic, "orders"), "T: the topic alone");
	ok(mq_jargs_parse('T', "orders 1", &ja) < 0 &&
	    mq_jargs_parse('A', "orders x g " KEY, &ja) < 0 &&
	    mq_jargs_parse('A', "orders 1024 g " KEY, &ja) < 0 &&
	    mq_jargs_parse('A', "orders 1 g", &ja) < 0 &&
	    mq_jargs_parse('A', "orders 1 g " KEY " more", &ja) < 0 &&
	    mq_jargs_parse('Q', "orders 1 g " KEY, &ja) < 0,
	    "refused: extra words, a bad partition, a missing argument, an "
	    "unknown type");
	/* Readers build paths from them: nothing but what the names say. */
	ok(mq_jargs_parse('T', "..", &ja) < 0 &&
	    mq_jargs_parse('A', "../x 1 g " KEY, &ja) < 0 &&
	    mq_jargs_parse('D', "orders 1 ../../.. " KEY ",a1", &ja) < 0 &&
	    mq_jargs_parse('D', "orders 1 g ../../../etc/passwd", &ja) < 0 &&
	    mq_jargs_parse('X', "orders 1 g " KEY "/../../x", &ja) < 0 &&
	    mq_jargs_parse('A', "orders 1 g KEY", &ja) < 0 &&
	    mq_jargs_parse('P', "orders 1 " KEY "/.. g", &ja) < 0 &&
	    mq_jargs_parse('P', "orders 1 " KEY " g,../..", &ja) < 0 &&
	    mq_jargs_parse('P', "orders 1 " KEY " g,", &ja) < 0,
	    "refused: a topic, group, KEY or dead letter that is not one");
#undef KEY
	mq_spool_close(sp);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
