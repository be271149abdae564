/*
 * test_journal.c: the change journal: a record's sequence is its offset,
 * copied records keep their origin and sequence, a damaged line is
 * skipped (in time linear in the line), a record cut by a crash does
 * not take the next one with it, a line still being written is waited
 * for, and record arguments and lines are of their grammar exactly.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
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

	/* The arguments of a record, one parser for every reader. */
#define KEY "00000000000000000042.6616aff5f3e00a3f9c1e27b400000000"
	const char *key = KEY;
	char a[512];
	struct mq_jargs ja;
	snprintf(a, sizeof a, "orders 3 %s g1,g2", key);
	ok(mq_jargs_parse('P', a, &ja) == 0 && !strcmp(ja.topic, "orders") &&
	    ja.k == 3 && !strcmp(ja.a, key) && !strcmp(ja.b, "g1,g2"),
	    "P: topic, partition, KEY, groups");
	snprintf(a, sizeof a, "orders 3 %s -", key);
	ok(mq_jargs_parse('P', a, &ja) == 0 && !strcmp(ja.b, "-"), "P: no group");
	snprintf(a, sizeof a, "orders 0 g %s,a2,d1", key);
	ok(mq_jargs_parse('D', a, &ja) == 0 && !strcmp(ja.a, "g"),
	    "D: a dead letter's name");
#define RID "6616aff5f3e00a3f9c1e27b400000000"
	char id[MQ_ID_LEN + 1];
	size_t hl;
	ok(mq_jargs_parse('K', "orders 3 g 100+3,05," RID, &ja) == 0 &&
	    !strcmp(ja.a, "g") && ja.k == 3 &&
	    !strcmp(ja.b, "100+3,05," RID) && mq_jarg_id(ja.b, &hl, id) == 0 &&
	    hl == 8 && !strcmp(id, RID),
	    "K: a group, a claim's bits and the id of its last record");
	ok(mq_jargs_parse('K', "orders 3 g 100+3,05,-", &ja) == 0 &&
	    mq_jarg_id(ja.b, &hl, id) == 0 && hl == 8 && !id[0],
	    "K: no id, said so");
	ok(mq_jargs_parse('K', "orders 3 g 100+3,0f," RID, &ja) < 0 &&
	    mq_jargs_parse('K', "orders 3 g 100+3,05", &ja) < 0 &&
	    mq_jargs_parse('K', "orders 3 g 100+3,05,", &ja) < 0 &&
	    mq_jargs_parse('K', "orders 3 g 100+3,05," RID "0", &ja) < 0 &&
	    mq_jargs_parse('K', "orders 3 g 100+3,05," RID " x", &ja) < 0 &&
	    mq_jargs_parse('K', "orders 3 ../g 100+3,05," RID, &ja) < 0,
	    "K: a bit past n, no id, a bad id, an extra word, a bad group: "
	    "refused");
	ok(mq_jargs_parse('C', "orders 0 g 250," RID, &ja) == 0 &&
	    !strcmp(ja.b, "250," RID) && mq_jargs_parse('C', "orders 0 g 0,-",
	    &ja) == 0 && mq_jargs_parse('C', "orders 0 g 0250," RID,
	    &ja) < 0 && mq_jargs_parse('C', "orders 0 g 250", &ja) < 0 &&
	    mq_jargs_parse('C', "orders 0 g", &ja) < 0,
	    "C: an offset, canonical, and the id before it");
	ok(mq_jargs_parse('S', "orders 1 300", &ja) == 0 && ja.k == 1 &&
	    !ja.a[0] && !strcmp(ja.b, "300") &&
	    mq_jargs_parse('S', "orders 1 g 300", &ja) < 0 &&
	    mq_jargs_parse('S', "orders 1 3x", &ja) < 0,
	    "S: a partition and where its log ends, no group");
	ok(mq_jargs_parse('T', "orders", &ja) == 0 &&
	    !strcmp(ja.topic, "orders"), "T: the topic alone");
	ok(mq_jargs_parse('T', "orders 1", &ja) < 0 &&
	    mq_jargs_parse('A', "orders x g " KEY, &ja) < 0 &&
	    mq_jargs_parse('A', "orders 1024 g " KEY, &ja) < 0 &&
	    mq_jargs_parse('A', "orders 1 g", &ja) < 0 &&
	    mq_jargs_parse('A', "orders 1 g KEY more", &ja) < 0 &&
	    mq_jargs_parse('Q', "orders 1 g KEY", &ja) < 0 &&
	    mq_jargs_parse(0, "orders", &ja) < 0,
	    "refused: extra words, a bad partition, a missing argument, an "
	    "unknown type");
	/* Every name exactly of its grammar: nothing else reaches a path. */
	static const char *const bad[][2] = {
		{ "P", "orders 0 %sXYZ g" },
		{ "P", "orders 0 %s,a1,l5,r0badcafe:2, g" },
		{ "P", "orders 0 %s g,,h" },
		{ "P", "orders 0 %s g," },
		{ "P", "orders 0 %s ../g" },
		{ "P", "orders 0 %s " },
		{ "P", "orders 00 %s g" },
		{ "P", "orders +1 %s g" },
		{ "P", "or/ders 0 %s g" },
		{ "P", "..x 0 %s g" },
		{ "L", "orders 0 g %sX" },
		{ "A", "orders 0 g.. %s" },
		{ "A", "orders 0 g %s,a1" },
		{ "D", "orders 0 g %s" },
		{ "D", "orders 0 g %s,a0" },
		{ "D", "orders 0 g %s,a01" },
		{ "R", "orders 0 g %s,a1,l5,r0badcafe:2," },
		{ "X", "orders 0 g %s,a1\n" },
	};
	int refused = 0;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(a, sizeof a, bad[i][1], key);
		if (mq_jargs_parse(bad[i][0][0], a, &ja) < 0)
			refused++;
		else
			printf("# accepted: %c %s\n", bad[i][0][0], a);
	}
	ok(refused == (int)(sizeof bad / sizeof bad[0]),
	    "refused: names with extra characters, of another grammar, or not "
	    "canonical");
	snprintf(a, sizeof a, "orders 0 g 18446744073709551615%s", key + 20);
	ok(mq_jargs_parse('A', a, &ja) < 0, "refused: a KEY past MQ_SEQ_MAX");

	/* The types of topics and subscriptions: a ledger entry names a
	 * message as A does; U a topic or a pattern, W a pattern only, Z a
	 * topic alone. */
	snprintf(a, sizeof a, "orders 3 g %s", key);
	ok(mq_jargs_parse('E', a, &ja) == 0 && ja.k == 3 &&
	    !strcmp(ja.a, "g") && !strcmp(ja.b, key), "E: topic k group KEY");
	ok(mq_jargs_parse('U', "orders g", &ja) == 0 &&
	    !strcmp(ja.topic, "orders") && !strcmp(ja.a, "g") &&
	    mq_jargs_parse('U', "orders.* g", &ja) == 0 &&
	    !strcmp(ja.topic, "orders.*") &&
	    mq_jargs_parse('W', "orders.> g", &ja) == 0 &&
	    !strcmp(ja.topic, "orders.>") && !strcmp(ja.a, "g") &&
	    mq_jargs_parse('Z', "orders", &ja) == 0 &&
	    !strcmp(ja.topic, "orders"),
	    "U: a topic or a pattern and a group; W: a pattern and a group; "
	    "Z: a topic");
	static const char *const badt[][2] = {
		{ "U", "orders" }, { "U", "orders g h" }, { "U", "orders ../g" },
		{ "U", "orders g/h" }, { "U", "or/ders g" }, { "U", "orders.*x g" },
		{ "U", ">.orders g" }, { "U", "orders..* g" }, { "U", "orders  g" },
		{ "U", "orders g " }, { "W", "orders g" }, { "W", "orders.*" },
		{ "W", "orders.* ../g" }, { "Z", "orders 1" }, { "Z", "orders.*" },
		{ "Z", "../orders" }, { "E", "orders 0 g" }, { "T", "orders.*" },
	};
	refused = 0;
	for (size_t i = 0; i < sizeof badt / sizeof badt[0]; i++)
		if (mq_jargs_parse(badt[i][0][0], badt[i][1], &ja) < 0)
			refused++;
		else
			printf("# accepted: %s %s\n", badt[i][0], badt[i][1]);
	ok(refused == (int)(sizeof badt / sizeof badt[0]),
	    "refused: a U, W, Z or E without its words, with more, or with a "
	    "name or pattern not of its grammar");

	/* A record's line: printable, an origin, a seq, a type, a time. */
	struct mq_jrec jr;
	char l[256];
	snprintf(l, sizeof l, "@%s 18446744073709551614 Y 7 what ever", origin);
	ok(mq_jrec_parse(l, strlen(l), &jr) == 0 && jr.seq == MQ_SEQ_MAX &&
	    jr.type == 'Y' && jr.ms == 7 && !strcmp(jr.args, "what ever") &&
	    !strcmp(jr.origin, origin), "a copied record of a later type");
	static const char *const badl[] = {
		"@0123456789abcdef0123456789abcdef 18446744073709551615 T 1 t",
		"@0123456789ABCDEF0123456789abcdef 1 T 1 t",
		"@0123456789abcdef0123456789abcde 1 T 1 t",
		"@0123456789abcdef0123456789abcdef 01 T 1 t",
		"@0123456789abcdef0123456789abcdef 1  T 1 t",
		"t 1 t", "T x t", "T 1 ", "T 1", "T 1 t\x01", "T 1 t\n@",
		"T 1 t\x80", "TT 1 t",
	};
	refused = 0;
	for (size_t i = 0; i < sizeof badl / sizeof badl[0]; i++) {
		snprintf(l, sizeof l, "%s", badl[i]);
		if (mq_jrec_parse(l, strlen(l), &jr) < 0)
			refused++;
		else
			printf("# accepted: %s\n", badl[i]);
	}
	ok(refused == (int)(sizeof badl / sizeof badl[0]),
	    "refused: control characters, a bad origin or seq, a type not A-Z");
	mq_jreader_close(&r);

	/* A damaged line of 1 MB in which every other byte could start a
	 * record: skipped in linear time (it was quadratic: a minute). */
	char *big = malloc(1000010);
	for (size_t i = 0; i < 1000000; i += 2)
		memcpy(big + i, "P ", 2);
	memcpy(big + 1000000, "00000000\n", 10);
	uint64_t big_at = mq_journal_size(sp);
	int bfd = mq_journal_fd(sp);
	ok(write(bfd, big, 1000009) == 1000009, "a 1 MB damaged line");
	for (size_t i = 0; i + 34 < 1000000; i += 34)
		memcpy(big + i, "@0123456789abcdef0123456789abcdef ", 34);
	ok(write(bfd, big, 1000009) == 1000009, "and one of copied starts");
	ok(mq_journal_note(sp, 'T', "%s", "after") == 0, "a record after them");
	ok(mq_jreader_open(sp, &r, big_at) == 0, "reader at them");
	double t0 = mq_mono();
	int got = mq_jreader_next(&r, &rec);
	double took = mq_mono() - t0;
	ok(got == 1 && rec.type == 'T' && !strcmp(rec.args, "after") &&
	    r.skipped == 2, "both skipped, the record after them read");
	ok(took < 0.5, "in %.3f s", took);
	mq_jreader_close(&r);
	free(big);

	/* A copied record after a cut is found, and a cut one is not. */
	ok(mq_jreader_open(sp, &r, mq_journal_size(sp)) == 0, "reader at the end");
	append_raw(sp, "@0123456789abcdef0123456789abcdef 5 P 9 orders 0 ");
	b.len = 0;
	ok(mq_journal_raw(&b, origin, 77, "A 5 orders 1 g x", 16) == 0 &&
	    mq_journal_write(sp, &b, NULL) == 0, "a copied record after a cut");
	ok(mq_jreader_next(&r, &rec) == 1 && rec.seq == 77 && rec.type == 'A' &&
	    !strcmp(rec.origin, origin), "found after the cut");
	mq_jreader_close(&r);
	mq_jbuf_free(&b);
	mq_spool_close(sp);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
