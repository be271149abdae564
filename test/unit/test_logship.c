/*
 * test_logship.c: a partition's log of format 2 sent from one spool to
 * another by position (logship.c): every record arrives once and in
 * order, whatever the segments' boundaries; what the receiver holds is
 * compared, never written over; a gap at the sender is skipped; a
 * segment that does not check changes nothing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"
#include "t.h"

static char dir[] = "/tmp/mq-logship.XXXXXX";

static mq_spool *
spool(const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	mq_spool *sp = mq_spool_open(path, MQ_CREATE);
	struct mq_topic_conf c;
	mq_topic_conf_default(&c);
	c.format = 2;
	if (!sp || mq_topic_create(sp, "t", &c) != 1)
		return NULL;
	return sp;
}

/* n messages "<tag>-<i>" in chunks of `chunk`. */
static int
publish(mq_spool *sp, const char *tag, int n, int chunk)
{
	mq_pub *p = mq_pub_open(sp, "t", 0);
	if (!p)
		return -1;
	char body[64][32];
	struct mq_pub_msg m[64];
	char ids[64][MQ_ID_LEN + 1];
	for (int i = 0; i < n; i += chunk) {
		int c = n - i < chunk ? n - i : chunk;
		for (int j = 0; j < c; j++) {
			snprintf(body[j], sizeof body[j], "%s-%d", tag, i + j);
			m[j] = (struct mq_pub_msg){ .partition = 0,
			    .body = body[j], .len = strlen(body[j]) };
		}
		if (mq_pub_send(p, m, (size_t)c, MQ_SYNC_NONE, ids) != (size_t)c)
			return -1;
	}
	mq_pub_close(p);
	return 0;
}

/* Sends a's log from b's end until it has all: segments sent. */
static int
ship(struct mq_topic *a, struct mq_topic *b, uint64_t end,
    struct mq_log_import *sum)
{
	struct mq_seg_writer w;
	struct mq_log_import r = { 0 };
	uint64_t from;
	int segs = 0;
	*sum = (struct mq_log_import){ 0 };
	if (mq_seg_begin(&w, 0) < 0 || mq_log_end(b, 0, &from) < 0)
		return -1;
	for (;;) {
		int got = mq_log_export(a, 0, &from, end, 0, &w);
		if (got < 0)
			return -1;
		if (got == 0)
			break;
		if (got == 2)
			continue;
		if (mq_log_import(b, 0, w.buf, w.len, false, &r) < 0)
			return -1;
		sum->linked += r.linked;
		sum->conflicts += r.conflicts;
		sum->end = r.end;
		from = r.end;
		segs++;
	}
	mq_seg_writer_free(&w);
	return segs;
}

/* The bodies of b's records in order, joined by spaces. */
static char *
bodies(struct mq_topic *t, uint64_t end)
{
	static char out[1 << 16];
	size_t n = 0;
	out[0] = 0;
	for (uint64_t seq = 0; seq < end; seq++) {
		struct mq_msg *m = NULL;
		uint64_t s = seq;
		int r = mq_record_next(t, 0, &s, end, &m);
		if (r <= 0)
			break;
		if (m && n + m->len + 2 < sizeof out) {
			n += (size_t)snprintf(out + n, sizeof out - n, "%s%.*s",
			    n ? " " : "", (int)m->len, (const char *)m->body);
		}
		mq_msg_free(m);
		seq = s;
	}
	return out;
}

int
main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!mkdtemp(dir))
		return 1;
	mq_spool *sa = spool("a"), *sb = spool("b");
	ok(sa && sb, "two spools, a topic of format 2 in each");
	ok(publish(sa, "m", 40, 7) == 0, "40 records in chunks of 7 on a");
	struct mq_topic a, b;
	ok(mq_topic_open_as(sa, "t", MQ_FORMAT_ANY, &a) == 0 && mq_topic_open_as(sb, "t", MQ_FORMAT_ANY, &b) == 0,
	    "topics open");
	uint64_t end = 0;
	ok(mq_topic_log_end(&a, 0, 0, &end) == 0 && end == 40, "a ends at 40");
	struct mq_log_import r;
	int segs = ship(&a, &b, end, &r);
	ok(segs >= 1 && r.linked == 40 && r.conflicts == 0 && r.end == 40,
	    "b got 40 records in %d segment(s), no conflict", segs);
	char want[4096];
	snprintf(want, sizeof want, "%s", bodies(&a, 40));
	ok(!strcmp(bodies(&b, 40), want), "b's records are a's, in order");
	ok(ship(&a, &b, end, &r) == 0, "nothing more to send");

	/* Sent again from 0: compared, nothing linked. */
	struct mq_seg_writer w;
	uint64_t from = 0;
	mq_seg_begin(&w, 0);
	ok(mq_log_export(&a, 0, &from, 40, 0, &w) == 1 && from == 0,
	    "a segment from 0 again");
	ok(mq_log_import(&b, 0, w.buf, w.len, false, &r) == 0 &&
	    r.linked == 0 && r.conflicts == 0 && r.end == 40,
	    "a repeat links nothing and finds no conflict");

	/* At most max records (a lossy link's smaller batches). */
	from = 0;
	ok(mq_log_export(&a, 0, &from, 40, 7, &w) == 1 && from == 0 &&
	    w.first == 0 && w.count == 7, "a segment of at most 7 records");
	ok(mq_log_import(&b, 0, w.buf, w.len, false, &r) == 0 &&
	    r.linked == 0 && r.conflicts == 0 && r.end == 40,
	    "a smaller segment checks as a whole one");
	from = 0;
	ok(mq_log_export(&a, 0, &from, 40, 0, &w) == 1 && w.count == 40,
	    "max 0: as many as a segment holds");

	/* A segment one byte of which changed in transit. */
	char *bad = malloc(w.len);
	memcpy(bad, w.buf, w.len);
	bad[w.len / 2] ^= 0x20;
	size_t badlen = w.len;
	/* b publishes its own 5: the next from a overlap them. */
	ok(publish(sb, "own", 5, 5) == 0 && publish(sa, "n", 10, 10) == 0,
	    "b publishes 5 of its own, a 10 more");
	mq_topic_log_end(&a, 0, 40, &end);
	struct mq_log_import sum;
	ship(&a, &b, end, &sum);
	uint64_t bend = 0;
	mq_log_end(&b, 0, &bend);
	ok(sum.conflicts == 0 && sum.linked == 5 && bend == 50,
	    "a's 10 past 40 sent from b's end: 5 linked (conflicts %u, "
	    "linked %u, end %llu)", sum.conflicts, sum.linked,
	    (unsigned long long)bend);
	ok(strstr(bodies(&b, 50), "own-4 n-5 n-6") != NULL,
	    "b keeps its own records, then a's");
	/* What tells a sender that the logs went apart: the id of the
	 * record before the receiver's end is not its own record's. */
	char ida[MQ_ID_LEN + 1], idb[MQ_ID_LEN + 1];
	ok(mq_log_tail_id(&a, 0, 45, ida) == 1 &&
	    mq_log_tail_id(&b, 0, 45, idb) == 1 && strcmp(ida, idb),
	    "the records before 45 differ: %.8s on a, %.8s on b", ida, idb);
	ok(mq_log_tail_id(&a, 0, 40, ida) == 1 &&
	    mq_log_tail_id(&b, 0, 40, idb) == 1 && !strcmp(ida, idb),
	    "those before 40 are the same");
	ok(mq_log_tail_id(&b, 0, 0, idb) == 0, "nothing before 0");
	/* Sent from before where the logs went apart: compared. */
	from = 35;
	ok(mq_log_export(&a, 0, &from, 50, 0, &w) == 1 && from == 35 &&
	    mq_log_import(&b, 0, w.buf, w.len, false, &r) == 0 &&
	    r.linked == 0 && r.conflicts == 5 && r.end == 50,
	    "a's 35.. again: its 40..44 conflict with b's and are not taken "
	    "(conflicts %u)", r.conflicts);
	int hfd = mq_head_open(b.pfd[0], MQ_HEAD_READ);
	struct mq_head h;
	ok(hfd >= 0 && mq_head_read(hfd, &h) == 0 && h.committed == 50 &&
	    h.next == 50, "b's head at 50");
	close(hfd);

	/* Changed bytes do not check (frames, lengths or the record's
	 * place); what checks but differs is a conflict. */
	int rc = mq_log_import(&b, 0, bad, badlen, false, &r);
	ok(rc < 0 ? mq_errcode() == EX_DATAERR : r.linked == 0,
	    "a damaged segment links nothing (%s)", rc < 0 ? mq_errmsg() :
	    "read as a conflict");
	mq_log_end(&b, 0, &bend);
	ok(bend == 50, "b still ends at 50");
	free(bad);

	/* A gap at the sender (retention): b's head skips it. */
	mq_spool *sc = spool("c");
	struct mq_topic c;
	ok(sc && mq_topic_open_as(sc, "t", MQ_FORMAT_ANY, &c) == 0, "a third spool");
	int lfd = mq_dir_open(a.pfd[0], "log");
	struct mq_names l = { 0 };
	mq_names_read(lfd, NULL, &l);
	ok(l.n >= 2, "a's log has %zu segments", l.n);
	unlinkat(lfd, l.v[0], 0);       /* as gc removes the oldest */
	uint64_t second = strtoull(l.v[1], NULL, 10);
	mq_names_free(&l);
	close(lfd);
	mq_topic_close(&a);
	mq_topic_open_as(sa, "t", MQ_FORMAT_ANY, &a);
	ship(&a, &c, end, &sum);
	uint64_t cend = 0;
	mq_log_end(&c, 0, &cend);
	ok(cend == 50 && sum.linked == 50 - second,
	    "c skipped the removed 0..%llu and holds the %u after it",
	    (unsigned long long)second - 1, sum.linked);
	hfd = mq_head_open(c.pfd[0], MQ_HEAD_READ);
	ok(hfd >= 0 && mq_head_read(hfd, &h) == 0 && h.committed == 50,
	    "c's head at 50");
	close(hfd);

	/* Segments that came together: linked under one lock, made
	 * durable once when each follows the one before. */
	struct mq_log_piece pc[5];
	char *copy[5];
	uint64_t at = 0;
	int got = 0;
	for (int i = 0; i < 5; i++) {
		got += mq_log_export(&b, 0, &at, 50, 10, &w) == 1;
		copy[i] = malloc(w.len);
		memcpy(copy[i], w.buf, w.len);
		pc[i] = (struct mq_log_piece){ .data = copy[i], .len = w.len };
		at = w.first + w.count;
	}
	ok(got == 5 && at == 50, "b's 50 records as 5 segments of 10");
	mq_spool *sd = spool("d");
	struct mq_topic d;
	ok(sd && mq_topic_open_as(sd, "t", MQ_FORMAT_ANY, &d) == 0,
	    "a fourth spool");
	/* The fourth cut short: its last frame does not check. */
	struct mq_log_piece bad5[5];
	memcpy(bad5, pc, sizeof pc);
	bad5[3].len -= 3;
	uint64_t dend = 1;
	rc = mq_log_import_many(&d, 0, bad5, 5, true);
	int code = mq_errcode();
	char why[256];
	snprintf(why, sizeof why, "%s", mq_errmsg());
	mq_log_end(&d, 0, &dend);
	ok(rc < 0 && code == EX_DATAERR && dend == 0,
	    "the fourth of five cut short: refused (%s), nothing linked",
	    rc < 0 ? why : "taken");
	rc = mq_log_import_many(&d, 0, pc, 5, true);
	unsigned linked = 0;
	for (int i = 0; i < 5; i++)
		linked += pc[i].out.linked;
	mq_log_end(&d, 0, &dend);
	ok(rc == 1 && linked == 50 && dend == 50 && pc[0].out.end == 50,
	    "five that follow each other: made durable once (%d), 50 linked, "
	    "d ends at 50", rc);
	ok(!strcmp(bodies(&d, 50), bodies(&b, 50)), "d holds b's records");
	int tfd = mq_dir_open(d.pfd[0], "tmp");
	struct mq_names tl = { 0 };
	mq_names_read(tfd, NULL, &tl);
	ok(tl.n == 0, "nothing left in tmp/ (%zu)", tl.n);
	mq_names_free(&tl);
	close(tfd);
	rc = mq_log_import_many(&d, 0, pc, 5, true);
	linked = 0;
	unsigned confl = 0;
	for (int i = 0; i < 5; i++) {
		linked += pc[i].out.linked;
		confl += pc[i].out.conflicts;
	}
	ok(rc == 0 && linked == 0 && confl == 0,
	    "the same again: nothing linked, no conflict, no sync");
	/* A piece that does not follow waits for those before it. */
	mq_spool *se = spool("e");
	struct mq_topic e;
	ok(se && mq_topic_open_as(se, "t", MQ_FORMAT_ANY, &e) == 0,
	    "a fifth spool");
	struct mq_log_piece two[2] = { pc[0], pc[2] };
	rc = mq_log_import_many(&e, 0, two, 2, true);
	uint64_t eend = 0;
	mq_log_end(&e, 0, &eend);
	ok(rc == 2 && eend == 30 && two[0].out.linked == 10 &&
	    two[1].out.linked == 10, "0..9 then 20..29: two syncs (%d), "
	    "the gap skipped, e ends at 30", rc);
	/* Records read out of order in one segment: each is the one asked
	 * for, whether read before (its place noted) or not yet. */
	mq_spool *sr = spool("r");
	struct mq_topic rt;
	ok(sr && publish(sr, "r", 64, 64) == 0 &&
	    mq_topic_open_as(sr, "t", MQ_FORMAT_ANY, &rt) == 0,
	    "64 records in one segment");
	static const uint64_t order[] = { 50, 10, 63, 0, 11, 12, 40, 63, 1 };
	int right = 0;
	for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
		struct mq_msg *m = NULL;
		char body[32];
		snprintf(body, sizeof body, "r-%llu", (unsigned long long)order[i]);
		if (mq_record_read(&rt, 0, order[i], NULL, &m) == 0 &&
		    m->len == strlen(body) && !memcmp(m->body, body, m->len))
			right++;
		mq_msg_free(m);
	}
	ok(right == 9, "9 reads out of order, each the record asked for (%d)",
	    right);
	mq_topic_close(&rt);
	mq_spool_close(sr);
	for (int i = 0; i < 5; i++)
		free(copy[i]);
	mq_topic_close(&d);
	mq_topic_close(&e);
	mq_spool_close(sd);
	mq_spool_close(se);
	mq_seg_writer_free(&w);
	mq_topic_close(&a);
	mq_topic_close(&b);
	mq_topic_close(&c);
	mq_spool_close(sa);
	mq_spool_close(sb);
	mq_spool_close(sc);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
