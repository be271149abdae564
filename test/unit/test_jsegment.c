/*
 * test_jsegment.c: the journal in segments.  Records keep their offsets
 * across cuts; a reader goes from file to file, starts and seeks in any
 * of them; a writer holding a file that was cut writes to the new one;
 * dropping removes whole cut files only, and a reader asked for a dropped
 * offset starts at the oldest kept, told so.  What mq-spool(5) says of
 * crashes: half a line at a cut file's end is skipped; a journal removed
 * by hand is made again where the cut files end; a cut that crashed after
 * its link leaves a second name that is read once and reused.
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
	char p[256], p_spool[256];
	snprintf(p_spool, sizeof p_spool, "%s/s", root);
	mq_spool *sp = mq_spool_open(p_spool, MQ_CREATE);
	mq_spool *stale = mq_spool_open(p_spool, 0);
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

	/* A line cut at the end of a cut file (a crash mid-write) never
	 * ends: it is skipped, and the next file reads on. */
	mq_spool *fresh = mq_spool_open(p_spool, 0);
	char junk[5000];
	memset(junk, 'x', sizeof junk);
	int jfd = fresh ? mq_journal_fd(fresh) : -1;
	uint64_t from = mq_journal_size(sp);
	ok(jfd >= 0 && write(jfd, junk, sizeof junk) == (ssize_t)sizeof junk &&
	    mq_journal_cut(fresh, "journal", jfd, fresh->jbase,
	    mq_journal_segment_max()) == 1 &&
	    mq_journal_note(fresh, 'T', "%s", "after-cut") == 0 &&
	    mq_journal_size(sp) > from + sizeof junk, "a file ending in half a "
	    "line is cut");
	ok(record_at(sp, from, &rec, &gap) == 1 &&
	    !strcmp(rec.args, "after-cut"), "the half line is skipped");

	/* The journal removed by hand: the next writer makes it again where
	 * the last cut file ends. */
	uint64_t jb = 0, again = 1;
	int fd = mq_jfile_open(sp->fd, "journal", &jb, NULL);
	if (fd >= 0)
		close(fd);
	mq_spool_close(fresh);
	fresh = mq_spool_open(p_spool, 0);
	ok(fd >= 0 && jb > 0 && unlinkat(sp->fd, "journal", 0) == 0 && fresh &&
	    mq_journal_note(fresh, 'T', "%s", "reborn") == 0 &&
	    (fd = mq_jfile_open(sp->fd, "journal", &again, NULL)) >= 0 &&
	    again == jb, "a journal made again starts where the cut files end");
	if (fd >= 0)
		close(fd);
	ok(record_at(sp, jb, &rec, &gap) == 1 && !strcmp(rec.args, "reborn"),
	    "and its first record is there");

	/* A cut that crashed after its link: journal.d/<base> is the journal
	 * itself.  It is read once, kept by a drop, and the next cut finds
	 * its link made. */
	char name[64];
	snprintf(name, sizeof name, "journal.d/%020llu", (unsigned long long)jb);
	ok(linkat(sp->fd, "journal", sp->fd, name, 0) == 0 &&
	    mq_journal_drop(sp, "journal", UINT64_MAX) >= 0 &&
	    faccessat(sp->fd, name, F_OK, 0) == 0, "a drop keeps the journal's "
	    "second name");
	wrote = 1;
	for (int i = 0; i < 200; i++)
		wrote &= mq_journal_note(fresh, 'T', "again-%d", i) == 0;
	int count = 0, once = 1;
	uint64_t next = 0;
	if (mq_jreader_open(sp, &r, jb) == 0) {
		while (mq_jreader_next(&r, &rec) == 1) {
			char want[32];
			snprintf(want, sizeof want, "again-%d", count);
			if (!strcmp(rec.args, want))
				count++;
			else if (strcmp(rec.args, "reborn"))
				once = 0;
		}
		mq_jreader_close(&r);
	}
	struct stat st;
	ok(wrote && count == 200 && once && fstatat(sp->fd, name, &st, 0) == 0 &&
	    mq_journal_next_base(sp->fd, "journal", jb, &next) == 0 &&
	    next == jb + (uint64_t)st.st_size, "the next cut goes on from it: "
	    "every record once, the offsets continuous");
	mq_spool_close(fresh);

	mq_spool_close(stale);
	mq_spool_close(sp);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	return system(cmd) == 0 ? t_done() : 1;
}
