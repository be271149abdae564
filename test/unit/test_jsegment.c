/*
 * test_jsegment.c: the journal in segments.  Records keep their offsets
 * across cuts; a reader goes from file to file, starts and seeks in any
 * of them; a writer holding a file that was cut writes to the new one;
 * dropping removes whole cut files only, and a reader asked for a dropped
 * offset starts at the oldest kept, told so.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "t.h"

#define N 1000

static char root[] = "/tmp/mq-unit-jsegment.XXXXXX";

/* The record whose offset is at, read from a reader opened there: its
 * arguments copied to args (rec's point into the reader's buffer). */
static char args[64];

static int
record_at(mq_spool *sp, uint64_t at, struct mq_jrec *rec, bool *gap)
{
	struct mq_jreader r;
	if (mq_jreader_open(sp, &r, at) < 0)
		return -1;
	int rc = mq_jreader_next(&r, rec);
	*gap = r.gap;
	snprintf(args, sizeof args, "%s", rc == 1 ? rec->args : "");
	rec->args = args;
	rec->text = NULL;
	mq_jreader_close(&r);
	return rc;
}

int
main(void)
{
	if (!mkdtemp(root))
		return 1;
	setenv("MQ_JOURNAL_SEGMENT", "4096", 1);
	char p[256];
	snprintf(p, sizeof p, "%s/s", root);
	mq_spool *sp = mq_spool_open(p, MQ_CREATE);
	mq_spool *stale = mq_spool_open(p, 0);
	if (!sp || !stale)
		return 1;
	/* A peer that confirmed nothing keeps every cut file. */
	snprintf(p, sizeof p, "%s/s/replicate/peers", root);
	if (mq_mkdirs(AT_FDCWD, p) < 0)
		return 1;
	snprintf(p, sizeof p, "%s/s/replicate/peers/"
	    "0123456789abcdef0123456789abcdef", root);
	FILE *f = fopen(p, "w");
	if (!f || fputs("confirmed=0\ncontact=0\n", f) < 0 || fclose(f))
		return 1;

	/* The second handle opens its journal file before any cut. */
	ok(mq_journal_note(stale, 'T', "%s", "early") == 0, "a first record");
	/* at[i]: the offset of record i (after a cut, past the B record). */
	static uint64_t at[N + 1];
	int wrote = 1;
	for (int i = 0; i < N; i++) {
		struct mq_jbuf b = { 0 };
		uint64_t end = 0;
		size_t len = 0;
		wrote &= mq_journal_line(&b, 'T', "topic-%d", i) == 0 &&
		    (len = b.len) > 0 && mq_journal_write(sp, &b, &end) == 0;
		mq_jbuf_free(&b);
		at[i] = end - len;
		at[N] = end;
	}
	ok(wrote, "1000 records written");
	struct mq_jsegs s;
	ok(mq_jsegs_read(sp->fd, "journal", &s) == 0 && s.n >= 5,
	    "the journal was cut (%zu files)", s.n);
	int continuous = s.n > 0 && s.base[0] == 0;
	for (size_t i = 0; i < s.n; i++) {
		char name[64];
		struct stat st;
		uint64_t next = 0;
		snprintf(name, sizeof name, "journal.d/%020llu",
		    (unsigned long long)s.base[i]);
		continuous &= fstatat(sp->fd, name, &st, 0) == 0 &&
		    mq_journal_next_base(sp->fd, "journal", s.base[i], &next) == 0 &&
		    next == s.base[i] + (uint64_t)st.st_size;
	}
	ok(continuous, "each cut file ends where the next file starts");
	mq_jsegs_free(&s);
	ok(mq_journal_size(sp) == at[N], "the size is the last record's end");

	/* Every record, at its offset, across the files. */
	struct mq_jreader r;
	struct mq_jrec rec;
	int all = mq_jreader_open(sp, &r, 0) == 0 &&
	    mq_jreader_next(&r, &rec) == 1 && !strcmp(rec.args, "early");
	for (int i = 0; all && i < N; i++) {
		char want[32];
		snprintf(want, sizeof want, "topic-%d", i);
		all = mq_jreader_next(&r, &rec) == 1 && rec.seq == at[i] &&
		    !strcmp(rec.args, want);
	}
	ok(all, "read from 0: every record at its offset, no B record");
	ok(mq_jreader_next(&r, &rec) == 0, "then nothing");
	/* Back into an early file, and forward into the last. */
	mq_jreader_seek(&r, at[10]);
	ok(mq_jreader_next(&r, &rec) == 1 && !strcmp(rec.args, "topic-10"),
	    "a seek back into a cut file");
	mq_jreader_seek(&r, at[N - 1]);
	ok(mq_jreader_next(&r, &rec) == 1 && !strcmp(rec.args, "topic-999"),
	    "a seek forward into the journal");
	mq_jreader_close(&r);
	bool gap;
	ok(record_at(sp, at[150], &rec, &gap) == 1 &&
	    !strcmp(rec.args, "topic-150") && !gap, "a reader opened mid-way");

	/* The handle whose file was cut long ago writes to the journal. */
	uint64_t end = 0;
	struct mq_jbuf b = { 0 };
	ok(mq_journal_line(&b, 'T', "%s", "late") == 0 &&
	    mq_journal_write(stale, &b, &end) == 0 && end > at[N] &&
	    end == mq_journal_size(sp), "a writer of a cut file writes on");
	mq_jbuf_free(&b);
	ok(record_at(sp, at[N], &rec, &gap) == 1 && !strcmp(rec.args, "late"),
	    "its record follows the last");

	/* Dropping: whole files ending at or before the offset. */
	int dropped = mq_journal_drop(sp, "journal", at[150]);
	uint64_t start = mq_journal_start(sp);
	ok(dropped > 0 && start <= at[150] && start > 0,
	    "dropped %d files; the journal starts at %llu", dropped,
	    (unsigned long long)start);
	ok(record_at(sp, 0, &rec, &gap) == 1 && gap && rec.seq > start &&
	    rec.seq < start + 64,
	    "a reader asked for 0 starts at the oldest kept, told so");
	ok(record_at(sp, at[150], &rec, &gap) == 1 && !gap &&
	    !strcmp(rec.args, "topic-150"), "what was kept reads as before");
	ok(mq_journal_drop(sp, "journal", UINT64_MAX) >= 0 &&
	    mq_jsegs_read(sp->fd, "journal", &s) == 0 && s.n == 0 &&
	    record_at(sp, at[N], &rec, &gap) == 1 && !strcmp(rec.args, "late"),
	    "dropping all keeps the journal itself");
	mq_jsegs_free(&s);

	mq_spool_close(stale);
	mq_spool_close(sp);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	return system(cmd) == 0 ? t_done() : 1;
}
