/*
 * test_lib.c: unit tests of libmq's formats and protocol steps, on a
 * temporary spool.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"
#include "t.h"

static char spooldir[] = "/tmp/mq-unit.XXXXXX";

static void
test_names(void)
{
	ok(mq_name_check("topic", "orders.eu-1_x") == 0, "valid topic name");
	static const char *bad[] = { "", "../x", "a/b", ".hidden", "a..b", "a.",
	    "a\tb", "sp ace", "caf\xc3\xa9" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(mq_name_check("topic", bad[i]) < 0 && mq_errcode() == EX_USAGE,
		    "invalid topic name %zu refused: %s", i, mq_errmsg());
	char longname[202];
	memset(longname, 'a', 201);
	longname[201] = 0;
	ok(mq_name_check("group", longname) < 0, "201 characters refused");
	longname[200] = 0;
	ok(mq_name_check("group", longname) == 0, "200 characters accepted");
}

static void
test_entries(void)
{
	struct mq_entry e;
	const char *key = "00000000000000000042.0123456789abcdef0123456789abcdef";
	char buf[128];
	ok(mq_entry_parse(key, &e) == 0 && e.attempts == 0 && !e.claimed,
	    "new entry parses");
	e.attempts = 3;
	e.deadline_ms = 1234567;
	memcpy(e.token, "deadbeef", 9);
	e.claimed = 1;
	ok(mq_entry_cur_name(&e, buf, sizeof buf) == 0 &&
	    !strcmp(buf, "00000000000000000042.0123456789abcdef0123456789abcdef"
	    ",a3,l1234567,rdeadbeef:2,"), "cur name format: %s", buf);
	struct mq_entry back;
	ok(mq_entry_parse(buf, &back) == 0 && back.attempts == 3 &&
	    back.deadline_ms == 1234567 && back.claimed &&
	    !strcmp(back.token, "deadbeef"), "cur name round trip");
	ok(mq_entry_new_name(&back, buf, sizeof buf) == 0 &&
	    !strcmp(buf + strlen(key), ",a3"), "returned entry keeps attempts");
	ok(mq_entry_parse("00000000000000000042.0123", &e) < 0,
	    "short key refused");
	ok(mq_entry_parse("0000000000000000004x.0123456789abcdef0123456789abcdef",
	    &e) < 0, "non-digit seq refused");
	uint64_t seq;
	ok(mq_seq_of(key, &seq) == 0 && seq == 42, "seq of key");
	ok(mq_seq_of("18446744073709551614.0123456789abcdef0123456789abcdef",
	    &seq) == 0 && seq == MQ_SEQ_MAX && MQ_SEQ_MAX + 1 == UINT64_MAX,
	    "largest seq: UINT64_MAX - 1, so that seq + 1 fits");
	ok(mq_seq_of("18446744073709551615.0123456789abcdef0123456789abcdef",
	    &seq) < 0 && mq_seq_of("18446744073709551616.0123456789abcdef"
	    "0123456789abcdef", &seq) < 0 && mq_seq_of("99999999999999999999."
	    "0123456789abcdef0123456789abcdef", &seq) < 0,
	    "seq from UINT64_MAX on refused");
	ok(!mq_is_key("18446744073709551615.0123456789abcdef0123456789abcdef") &&
	    mq_is_key("18446744073709551614.0123456789abcdef0123456789abcdef") &&
	    mq_entry_parse("18446744073709551615.0123456789abcdef"
	    "0123456789abcdef,a1", &e) < 0, "nor is it a key, or an entry");
	struct mq_head h = { MQ_SEQ_MAX, MQ_SEQ_MAX };
	ok(mq_head_room(&h) == 1 && (h.committed = UINT64_MAX,
	    mq_head_room(&h) == 0) && (h.committed = 0,
	    mq_head_room(&h) == UINT64_MAX), "room left in a partition");
	ok(mq_seq_of("00000000000000000042.0123456789ABCDEF0123456789abcdef",
	    &seq) < 0, "upper-case id refused");
	ok(mq_seq_of("000000000000000000042.0123456789abcdef0123456789abcde",
	    &seq) < 0, "21 digits refused");
	ok(mq_is_key(key) && !mq_is_key("00000000000000000042.0123456789abcdef"
	    "0123456789abcde"), "a key has 32 hex digits");
	ok(mq_key_time("00000000000000000042.0000000e4e1c00123456789abcdef012")
	    == 15.0, "publish time from the id: 0xe4e1c0 microseconds");
	ok(mq_key_time("00000000000000000042.0000000E4E1C00123456789abcdef012")
	    == 15.0, "an upper-case id reads as strtoull would");
}

static void
test_head(void)
{
	struct mq_head h = { 7, 5 }, r;
	char line[MQ_HEAD_SIZE + 1];
	ok(mq_head_format(&h, line) == 0 && strlen(line) == MQ_HEAD_SIZE,
	    "head line is %d bytes", MQ_HEAD_SIZE);
	char path[256];
	snprintf(path, sizeof path, "%s/head", spooldir);
	int fd = open(path, O_RDWR | O_CREAT, 0666);
	ok(mq_head_write(fd, &h, 0) == 0 && mq_head_read(fd, &r) == 0 &&
	    r.next == 7 && r.committed == 5, "head round trip");
	line[20] ^= 1;          /* a torn or corrupt line is never believed */
	pwrite(fd, line, MQ_HEAD_SIZE, 0);
	ok(mq_head_read(fd, &r) < 0 && mq_errcode() == EX_CONFIG,
	    "corrupt head refused");
	close(fd);
	unlink(path);
}

static void
test_conf_and_durations(void)
{
	struct mq_conf c;
	const char *text = "# comment\npartitions=4\nlease=2.5\n";
	uint64_t n;
	double d;
	ok(mq_conf_parse(text, strlen(text), "t", &c) == 0 &&
	    mq_conf_get_u64(&c, "partitions", 1, &n, "t") == 0 && n == 4 &&
	    mq_conf_get_double(&c, "lease", 30, &d, "t") == 0 && d == 2.5,
	    "conf parses");
	mq_conf_free(&c);
	ok(mq_conf_parse("novalue\n", 8, "t", &c) < 0, "line without = refused");
	ok(mq_duration_parse("1.5", &d) == 0 && d == 1.5, "duration seconds");
	ok(mq_duration_parse("2m", &d) == 0 && d == 120, "duration minutes");
	ok(mq_duration_parse("250ms", &d) == 0 && d == 0.25, "duration ms");
	ok(mq_duration_parse("-1", &d) < 0, "negative duration refused");
	ok(mq_duration_parse("5x", &d) < 0, "bad unit refused");
}

static void
test_headers(void)
{
	struct mq_header h;
	ok(mq_header_parse("X-Trace: abc def", &h) == 0 &&
	    !strcmp(h.name, "X-Trace") && !strcmp(h.value, "abc def"),
	    "user header parses");
	free(h.name);
	free(h.value);
	ok(mq_header_parse("seq: 4", &h) < 0, "reserved header refused");
	ok(mq_header_parse("Mq-Anything: 4", &h) < 0, "Mq- headers reserved");
	ok(mq_header_parse("NoColon", &h) < 0, "header without colon refused");
	ok(mq_header_parse("X: a\nb", &h) < 0, "newline in value refused");
}

/* Publishes through the library, then receives as two groups. */
static void
test_roundtrip(mq_spool *sp)
{
	ok(mq_group_subscribe(sp, "t1", "a", NULL) == 1, "subscribe a");
	ok(mq_group_subscribe(sp, "t1", "b", NULL) == 1, "subscribe b");
	ok(mq_group_subscribe(sp, "t1", "b", NULL) == 0, "subscribe b again");
	mq_pub *p = mq_pub_open(sp, "t1", 0);
	struct mq_header hdr = { "X-Kind", "test" };
	struct mq_pub_msg m[3] = {
		{ .partition = -1, .body = "one", .len = 3 },
		{ .partition = -1, .body = "two\0bin", .len = 7, .key = "k",
		  .headers = &hdr, .nheaders = 1 },
		{ .partition = -1, .body = "", .len = 0 },
	};
	char ids[3][MQ_ID_LEN + 1];
	ok(p && mq_pub_send(p, m, 3, MQ_SYNC_BATCH, ids) == 3, "publish 3");
	mq_pub_close(p);
	const char *groups[] = { "a", "b" };
	for (int g = 0; g < 2; g++) {
		mq_sub *s = mq_sub_open(sp, "t1", groups[g], NULL);
		struct mq_msg *msg;
		for (int i = 0; i < 3; i++) {
			int rc = mq_sub_receive(s, 0, &msg);
			ok(rc == 1 && msg->len == m[i].len &&
			    !memcmp(msg->body, m[i].body, m[i].len) &&
			    !strcmp(msg->id, ids[i]) && msg->attempts == 1 &&
			    msg->seq == (uint64_t)i, "group %s gets message %d",
			    groups[g], i);
			if (i == 1)
				ok(msg->nheaders == 1 && !strcmp(msg->key, "k") &&
				    !strcmp(msg->headers[0].value, "test"),
				    "key and header survive");
			if (rc == 1) {
				ok(mq_sub_ack(s, msg) == 0, "ack");
				mq_msg_free(msg);
			}
		}
		ok(mq_sub_receive(s, 0, &msg) == 0, "group %s is drained",
		    groups[g]);
		mq_sub_close(s);
	}
}

/* A publisher that died between allocating and committing leaves names
 * that no consumer sees and the next lock holder removes. */
static void
test_repair(mq_spool *sp)
{
	/* Format 1's names (format 2's repair is test_segment's). */
	setenv("MQ_FORMAT", "1", 1);
	ok(mq_group_subscribe(sp, "t2", "g", NULL) == 1, "subscribe t2");
	unsetenv("MQ_FORMAT");
	struct mq_topic t;
	ok(mq_topic_open(sp, "t2", &t) == 0, "open t2");
	int hfd = mq_head_open(t.pfd[0], MQ_HEAD_WRITE);
	struct mq_head h = { 2, 0 };
	mq_head_write(hfd, &h, 0);
	const char *junk = "00000000000000000000.0123456789abcdef0123456789abcdef";
	int lfd = mq_dir_open(t.pfd[0], "log");
	int nfd = mq_dir_open(t.pfd[0], "g/g/new");
	int fd = openat(lfd, junk, O_WRONLY | O_CREAT, 0666);
	write(fd, "Message-Id: x\n", 14);  /* half a message */
	close(fd);
	linkat(lfd, junk, nfd, junk, 0);
	mq_sub *s = mq_sub_open(sp, "t2", "g", NULL);
	struct mq_msg *msg;
	ok(s && mq_sub_receive(s, 0, &msg) == 0, "uncommitted message unseen");
	ok(faccessat(nfd, junk, F_OK, 0) < 0 && faccessat(lfd, junk, F_OK, 0) < 0,
	    "consumer start repaired the dead publish");
	ok(mq_head_read(hfd, &h) == 0 && h.next == 0 && h.committed == 0,
	    "head rolled back");
	mq_pub *p = mq_pub_open(sp, "t2", 0);
	struct mq_pub_msg m = { .partition = -1, .body = "after", .len = 5 };
	char id[1][MQ_ID_LEN + 1];
	ok(mq_pub_send(p, &m, 1, MQ_SYNC_NONE, id) == 1, "publish after repair");
	ok(mq_sub_receive(s, 1, &msg) == 1 && msg->seq == 0 &&
	    msg->len == 5, "sequence number reused after repair");
	mq_msg_free(msg);
	mq_pub_close(p);
	mq_sub_close(s);
	close(lfd);
	close(nfd);
	close(hfd);
	mq_topic_close(&t);
}

static void
test_receipts(mq_spool *sp)
{
	mq_pub *p = mq_pub_open(sp, "t3", MQ_CREATE);
	struct mq_sub_opts o;
	mq_sub_opts_default(&o);
	o.lease = 60;
	mq_sub *s = mq_sub_open(sp, "t3", "g", &o);
	struct mq_pub_msg m = { .partition = -1, .body = "r", .len = 1 };
	char id[1][MQ_ID_LEN + 1];
	mq_pub_send(p, &m, 1, MQ_SYNC_NONE, id);
	struct mq_msg *msg;
	ok(mq_sub_receive(s, 1, &msg) == 1, "claim for receipt");
	char *r = strdup(msg->receipt);
	ok(mq_receipt_ack(sp, "t3", "other", r) < 0 && mq_errcode() == EX_DATAERR,
	    "receipt of another group refused");
	ok(mq_receipt_ack(sp, "t3", "g", "t3/g/0/garbage") < 0 &&
	    mq_errcode() == EX_DATAERR, "malformed receipt refused");
	ok(mq_receipt_nack(sp, "t3", "g", r, NULL) == 0, "nack by receipt");
	ok(mq_receipt_ack(sp, "t3", "g", r) < 0 && mq_errcode() == EX_NOINPUT,
	    "stale receipt refused after nack");
	mq_msg_free(msg);
	ok(mq_sub_receive(s, 1, &msg) == 1 && msg->attempts == 2,
	    "redelivered with attempts 2");
	ok(mq_receipt_ack(sp, "t3", "g", msg->receipt) == 0, "ack by receipt");
	ok(mq_receipt_ack(sp, "t3", "g", msg->receipt) < 0 &&
	    mq_errcode() == EX_NOINPUT, "second ack refused");
	mq_msg_free(msg);
	free(r);
	mq_sub_close(s);
	mq_pub_close(p);
}

/* A read-only handle: no spool made for it, and the library's writers
 * refuse it (the tools would fail anyway without write permission; as
 * root nothing else would stop them). */
static void
test_readonly(const char *path)
{
	char missing[300];
	snprintf(missing, sizeof missing, "%s/typo", spooldir);
	ok(!mq_spool_open(missing, MQ_READONLY) && mq_errcode() == EX_NOINPUT &&
	    access(missing, F_OK) < 0, "read-only open of no spool: %s",
	    mq_errmsg());
	ok(!mq_spool_open(path, MQ_READONLY | MQ_CREATE) &&
	    mq_errcode() == EX_SOFTWARE, "MQ_CREATE with MQ_READONLY refused");
	mq_spool *sp = mq_spool_open(path, MQ_READONLY);
	ok(sp != NULL, "read-only open of a spool");
	if (!sp)
		return;
	ok(mq_topic_create(sp, "ro", NULL) < 0 && mq_errcode() == EX_SOFTWARE,
	    "no topic created through it: %s", mq_errmsg());
	ok(!mq_pub_open(sp, "t1", MQ_CREATE), "no publisher on it");
	ok(!mq_sub_open(sp, "t1", "g", NULL), "no consumer on it");
	ok(mq_journal_fd(sp) < 0, "no journal append through it");
	struct mq_topic_info in;
	ok(mq_topic_info(sp, "t1", &in) == 0, "topic info reads through it");
	mq_topic_info_free(&in);            /* zeroed when it failed */
	mq_spool_close(sp);
}

/* A role's or --group's gid as a number: what a gid_t holds but the
 * (gid_t)-1 that means none, in plain decimal. */
static void
test_gids(void)
{
	static const struct { const char *v; int good; gid_t gid; } conf[] = {
		{ "1234 staff", 1, 1234 }, { "0", 1, 0 },
		{ "4294967294", 1, 4294967294u }, { "4294967295", 0, 0 },
		{ "99999999999999999999", 0, 0 }, { "-1", 0, 0 },
		{ " 5", 0, 0 }, { "5x", 0, 0 }, { "", 0, 0 },
	};
	for (size_t i = 0; i < sizeof conf / sizeof *conf; i++) {
		struct mq_conf kv = { 0 };
		struct mq_roles r;
		mq_conf_add(&kv, "consumers", conf[i].v);
		int rc = mq_roles_conf_get(&kv, &r);
		ok(conf[i].good ? rc == 0 && r.has[MQ_ROLE_CONSUMERS] &&
		    r.gid[MQ_ROLE_CONSUMERS] == conf[i].gid :
		    rc < 0 && mq_errcode() == EX_CONFIG,
		    "topic.conf consumers=%s %s", conf[i].v,
		    conf[i].good ? "read" : "refused");
		mq_conf_free(&kv);
	}
	struct mq_perm p;
	ok(mq_perm_parse("4321", NULL, &p) == 0 && p.has_group &&
	    p.gid == 4321 && p.mode == (02770), "--group 4321: a gid");
	ok(mq_perm_parse("4294967295", NULL, &p) < 0 &&
	    mq_errcode() == EX_NOUSER, "--group 4294967295: no group");
	ok(mq_perm_parse("-5", NULL, &p) < 0 && mq_errcode() == EX_NOUSER,
	    "--group -5: no group");
}

/* put.c writes what snprintf would, and the Published stamp keeps its
 * form across the seconds it caches. */
static void
test_put(void)
{
	char b[64], *e;
	e = mq_put_u64w(PUT_LIT(b, "x="), 42, 20);
	*e = 0;
	ok(!strcmp(b, "x=00000000000000000042"), "a number padded to 20: %s", b);
	*mq_put_u64(b, UINT64_MAX) = 0;
	ok(!strcmp(b, "18446744073709551615"), "the largest: %s", b);
	*mq_put_u64(b, 0) = 0;
	ok(!strcmp(b, "0"), "zero: %s", b);
	*mq_put_u64w(b, 123456, 3) = 0;
	ok(!strcmp(b, "123456"), "wider than its width, whole: %s", b);
	*mq_put_hex(b, 0xfedcba9876543210u, 16) = 0;
	ok(!strcmp(b, "fedcba9876543210"), "16 hex digits: %s", b);
	*mq_put_hex(b, 0xabc, 5) = 0;
	ok(!strcmp(b, "00abc"), "5 hex digits: %s", b);
	char t1[64], t2[64], t3[64];
	mq_time_rfc3339(1796685866.5, t1, sizeof t1);
	mq_time_rfc3339(1796685866.125, t2, sizeof t2);
	mq_time_rfc3339(1796685867.25, t3, sizeof t3);
	ok(!strcmp(t1, "2026-12-07T23:24:26.500000Z") &&
	    !strcmp(t2, "2026-12-07T23:24:26.125000Z") &&
	    !strcmp(t3, "2026-12-07T23:24:27.250000Z"),
	    "Published stamps: %s %s %s", t1, t2, t3);
}

int
main(void)
{
	if (!mkdtemp(spooldir))
		return 2;
	test_put();
	test_names();
	test_entries();
	test_head();
	test_conf_and_durations();
	test_headers();
	test_gids();
	char path[256];
	snprintf(path, sizeof path, "%s/spool", spooldir);
	mq_spool *sp = mq_spool_open(path, MQ_CREATE);
	ok(sp != NULL, "spool created");
	test_roundtrip(sp);
	test_repair(sp);
	test_receipts(sp);
	mq_spool_close(sp);
	test_readonly(path);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", spooldir);
	system(cmd);
	return t_done();
}
