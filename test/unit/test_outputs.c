/*
 * test_outputs.c: unit tests of the tools' writers beside mq-stat's
 * (groupout.c, topicout.c, replout.c, dlqout.c, msgout.c) on figures made
 * up here, byte for byte, and of mq_pub_stream (pubstream.c) on a pipe.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"
#include "t.h"

static char *text;
static size_t len;
static FILE *out;

static FILE *
start(void)
{
	text = NULL;
	len = 0;
	if (!(out = open_memstream(&text, &len)))
		abort();
	return out;
}

/* What was written since start (the caller frees it), or NULL if the
 * writer's rc is not 0. */
static char *
written(int rc)
{
	fclose(out);
	if (rc == 0)
		return text;
	free(text);
	return NULL;
}

/* Whether what was written since start is want; rc is the writer's. */
static int
is(int rc, const char *want)
{
	fclose(out);
	int same = rc == 0 && !strcmp(text, want);
	if (!same)
		printf("# got rc %d:\n%s# want:\n%s", rc, text, want);
	free(text);
	return same;
}

static struct mq_partition_group parts[] = {
	{ .head = 5, .offset = 3, .lag = 2, .pending = 1, .inflight = 1,
	  .owner = "m1", .owner_deadline_ms = 9000500 },
	{ .head = 7, .offset = 7 },
};
static unsigned owned[] = { 0 };
static struct mq_group_member members[] = {
	{ .name = "m1", .deadline_ms = 9000500, .partitions = owned,
	  .npartitions = 1 },
	{ .name = "m2" },
};
static char *match[] = { "Type=a*" };

static void
test_group(void)
{
	struct mq_group_ref refs[] = {
		{ .topic = "orders", .group = "billing" },
		{ .topic = "orders", .group = "gone" },
		{ .topic = "logs.*", .group = "archive", .wildcard = 1,
		  .ordered = 1 },
	};
	struct mq_group_info infos[3] = {
		{ .topic = "orders", .group = "billing", .ordered = 1,
		  .session = 10, .lease = 30, .max_attempts = 5,
		  .created = 1000.1234, .filter = ".a > 1", .match = match,
		  .nmatch = 1, .state = "ready", .npartitions = 2,
		  .partitions = parts, .total = { .head = 12, .lag = 2,
		  .pending = 1, .inflight = 1, .delayed = 4, .dead = 3 },
		  .members = members, .nmembers = 2, .pattern = "ord*" },
	};
	ok(is(mq_group_list_write_table(refs, infos, 3, start()),
	    "TOPIC                    GROUP                    MODE        "
	    "PENDING  IN-FLIGHT    DELAYED       DEAD        LAG  PATTERN\n"
	    "orders                   billing                  ordered     "
	    "      1          1          4          3          2  ord*\n"
	    "logs.*                   archive                  ordered     "
	    "      -          -          -          -          -  logs.*\n"),
	    "group list: a row per group read, a wildcard's without figures");
	ok(is(mq_group_list_write_table(refs, infos, 0, start()), ""),
	    "group list: no groups, no heading");
	ok(is(mq_group_list_write_json(refs, infos, 3, start()),
	    "[{\"topic\":\"orders\",\"group\":\"billing\",\"wildcard\":false,"
	    "\"mode\":\"ordered\",\"pattern\":\"ord*\",\"lag\":2,\"pending\":1,"
	    "\"inflight\":1,\"delayed\":4,\"dead\":3},{\"topic\":\"logs.*\","
	    "\"group\":\"archive\",\"wildcard\":true,\"mode\":\"ordered\","
	    "\"pattern\":\"logs.*\",\"pending\":null,\"inflight\":null,"
	    "\"delayed\":null,\"dead\":null,\"lag\":null}]\n"),
	    "group list --json: the keys in their order, null for a wildcard");
	ok(is(mq_group_info_write_text(&infos[0], start()),
	    "topic: orders\ngroup: billing\nmode: ordered\nsession: 10\n"
	    "lease: 30\nmax-attempts: 5\nexactly-once: 0\nfrom-start: 0\n"
	    "state: ready\ncreated: 1970-01-01T00:16:40.123Z\n"
	    "filter: .a > 1\nmatch: Type=a*\npattern: ord*\n"
	    "PARTITION        HEAD     OFFSET        LAG    PENDING  IN-FLIGHT"
	    "    DELAYED       DEAD  OWNER\n"
	    "0                   5          3          2          1          1"
	    "          0          0  m1\n"
	    "1                   7          7          0          0          0"
	    "          0          0  -\n"
	    "total              12          -          2          1          1"
	    "          4          3\n"
	    "MEMBER                   DEADLINE                 PARTITIONS\n"
	    "m1                       1970-01-01T02:30:00.500Z 0\n"
	    "m2                       -                        -\n"),
	    "group info: settings, partitions with owners, members");
	infos[0].ordered = 0;
	infos[0].created = 0;
	char *t = written(mq_group_info_write_text(&infos[0], start()));
	ok(t && strstr(t, "created: -\n") && strstr(t, "DEAD\n0 ") &&
	    !strstr(t, "MEMBER"),
	    "group info, shared: no owners, no members, no time: -");
	free(t);
	ok(is(mq_group_info_write_json(infos, 0, start()), "[]\n"),
	    "group info --json: an array");
	t = written(mq_group_info_write_json(infos, 1, start()));
	ok(t && !strncmp(t, "[{\"topic\":\"orders\","
	    "\"group\":\"billing\",\"mode\":\"shared\",\"session\":10.0,", 62) &&
	    strstr(t, "{\"partition\":1,\"offset\":7,\"head\":7,\"lag\":0,"
	    "\"pending\":0,\"inflight\":0,\"delayed\":0,\"dead\":0,\"owner\":null,"
	    "\"owner_deadline_ms\":null}") && strstr(t, "\"members\":[{"
	    "\"name\":\"m1\",\"deadline_ms\":9000500,\"partitions\":[0]},"),
	    "group info --json: partitions, members");
	free(t);
}

static void
test_topic(void)
{
	struct mq_partition_stat ps[] = {
		{ .committed = 3, .log_messages = 2, .log_bytes = 120 },
		{ .place = "/srv/p1" },
	};
	struct mq_group_stat gs[] = {
		{ .name = "billing", .pending = 1, .inflight = 2, .ordered = 1,
		  .delayed = 3, .dead = 4, .lag = 5 },
	};
	struct mq_topic_info in = { .name = "orders", .partitions = ps,
	    .groups = gs, .ngroups = 1 };
	mq_topic_conf_default(&in.conf);
	in.conf.partitions = 2;
	in.conf.ttl = 1.5;
	in.conf.retention = 3600;
	in.conf.nsigners = 1;
	/* A gid no system gives a name to. */
	in.conf.roles.has[MQ_ROLE_CONSUMERS] = 1;
	in.conf.roles.gid[MQ_ROLE_CONSUMERS] = 3999999;
	ok(is(mq_topic_info_write_text(&in, start()),
	    "topic: orders\nformat: 2\npartitions: 2\nmax-message-size: 1048576\n"
	    "retention: 3600\nttl: 1.5\nexpired: dlq\nsigners: 1\n"
	    "consumers: ? (3999999)\n"
	    "PARTITION     COMMITTED     MESSAGES        BYTES\n"
	    "0                     3            2          120\n"
	    "1                     0            0            0  placed in /srv/p1\n"
	    "GROUP                    MODE          PENDING    IN-FLIGHT      "
	    "DELAYED         DEAD          LAG\n"
	    "billing                  ordered             1            2      "
	    "      3            4            5\n"),
	    "topic info: settings, a role without a name, places, groups");
	ok(is(mq_topic_info_write_json(&in, start()),
	    "{\"name\":\"orders\",\"format\":2,\"partitions\":2,"
	    "\"max_message_size\":1048576,"
	    "\"retention\":3600,\"ttl\":1.5,\"expired\":\"dlq\","
	    "\"dedup_window\":3600,\"signers\":1,\"roles\":{\"consumers\":"
	    "{\"gid\":3999999,\"group\":null}},\"heads\":[{\"partition\":0,"
	    "\"committed\":3,\"messages\":2,\"bytes\":120},{\"partition\":1,"
	    "\"committed\":0,\"messages\":0,\"bytes\":0,\"place\":\"/srv/p1\"}],"
	    "\"groups\":[{\"name\":\"billing\",\"mode\":\"ordered\","
	    "\"pending\":1,\"inflight\":2,\"delayed\":3,\"dead\":4,"
	    "\"lag\":5}]}\n"),
	    "topic info --json");
	const char *names[] = { "a", "b", "c" };
	struct mq_topic_conf confs[3] = { { .partitions = 1 }, { 0 },
	    { .partitions = 4 } };
	ok(is(mq_topic_list_write_json(names, confs, 3, start()),
	    "[{\"name\":\"a\",\"partitions\":1},{\"name\":\"c\","
	    "\"partitions\":4}]\n"),
	    "topic list --json: a topic not read is left out");
}

static void
test_repl(const char *dir)
{
	struct mq_peer_status p[] = {
		{ .id = "0123456789abcdef0123456789abcdef", .name = "",
		  .address = "10.0.0.1:7468", .connected = 1, .contact = 9990,
		  .confirmed = 10, .journal = 20, .lag_bytes = 100,
		  .records = 2, .lag = 1.25 },
		{ .id = "fedcba9876543210fedcba9876543210", .name = "backup",
		  .address = "-" },
		{ .id = "x", .name = "m", .contact = 9400 },
		{ .id = "y", .name = "h", .contact = 2800 },
	};
	char path[300];
	snprintf(path, sizeof path, "%s/spool", dir);
	mq_spool *sp = mq_spool_open(path, MQ_CREATE);
	ok(sp != NULL, "a spool for the quarantine's path");
	char want[2048];
	/* The first column is as wide as the longest label, the id. */
	snprintf(want, sizeof want,
	    "PEER                             STATE         CONTACT         "
	    "LAG BYTES    RECORDS     LAG S\n"
	    "0123456789abcdef0123456789abcdef connected     10s ago        "
	    "       100          2     1.250\n"
	    "backup                           idle          never          "
	    "         0          0     0.000\n"
	    "m                                idle          10m ago        "
	    "         0          0     0.000\n"
	    "h                                idle          2h ago         "
	    "         0          0     0.000\n"
	    "2 quarantined file(s) in %s/replicate/quarantine\n",
	    mq_spool_path(sp));
	struct mq_repl_self self = { .quarantined = 2 };
	ok(is(mq_repl_status_write_table(sp, p, 4, &self, start()), want),
	    "replicate status: a peer by name or id, in a column as wide "
	    "as the longest, contact as an age");
	self.quarantined = 0;
	ok(is(mq_repl_status_write_table(NULL, p, 0, &self, start()),
	    "PEER                 STATE         CONTACT         LAG BYTES    "
	    "RECORDS     LAG S\n"),
	    "replicate status: no peers, nothing quarantined: the heading");
	ok(is(mq_repl_status_write_json(p, 2, &self, start()),
	    "{\"peers\":[{\"id\":\"0123456789abcdef0123456789abcdef\","
	    "\"name\":\"\",\"address\":\"10.0.0.1:7468\",\"state\":"
	    "\"connected\",\"contact\":9990.0,\"confirmed\":10,\"journal\":20,"
	    "\"lag_bytes\":100,\"lag_records\":2,\"lag_seconds\":1.25},"
	    "{\"id\":\"fedcba9876543210fedcba9876543210\",\"name\":\"backup\","
	    "\"address\":\"-\",\"state\":\"idle\",\"contact\":0.0,"
	    "\"confirmed\":0,\"journal\":0,\"lag_bytes\":0,\"lag_records\":0,"
	    "\"lag_seconds\":0.0}],\"quarantined\":0,\"epoch\":0,"
	    "\"fenced\":null}\n"),
	    "replicate status --json");
	self = (struct mq_repl_self){ .epoch = 3, .fenced = 1, .fence = {
	    .epoch = 4, .peer = "fedcba9876543210fedcba9876543210",
	    .name = "dr", .at = 10000 } };
	ok(is(mq_repl_status_write_table(NULL, p, 0, &self, start()),
	    "PEER                 STATE         CONTACT         LAG BYTES    "
	    "RECORDS     LAG S\n"
	    "epoch 3\n"
	    "FENCED: spool fedcba9876543210fedcba9876543210 (dr) is at epoch 4 "
	    "(learned 1970-01-01T02:46:40.000000Z): this spool takes no publish; run "
	    "'mq-replicate demote'\n"),
	    "replicate status: the epoch, and who fenced the spool");
	ok(is(mq_repl_status_write_json(p, 0, &self, start()),
	    "{\"peers\":[],\"quarantined\":0,\"epoch\":3,\"fenced\":{"
	    "\"epoch\":4,\"peer\":\"fedcba9876543210fedcba9876543210\","
	    "\"name\":\"dr\",\"at\":10000.0}}\n"),
	    "replicate status --json: the epoch, and who fenced the spool");
	mq_spool_close(sp);
}

static void
test_dead(void)
{
	struct mq_dead d[] = {
		{ .topic = "t", .group = "g", .partition = 1,
		  .id = "0123456789abcdef0123456789abcdef", .seq = 7,
		  .attempts = 3, .reason = "max-attempts", .detail = "",
		  .time = "2026-01-01T00:00:00.000000Z", .status = 2,
		  .tail = "oops", .tail_len = 4 },
		{ .topic = "t", .group = "h",
		  .id = "fedcba9876543210fedcba9876543210", .attempts = 1,
		  .reason = "rejected", .detail = "bad",
		  .time = "2026-01-01T00:00:01.000000Z", .status = -1 },
	};
	ok(is(mq_dead_write_table(d, 2, start()),
	    "ID                               GROUP            PART      SEQ "
	    "ATTEMPTS REASON       TIME                        DETAIL\n"
	    "0123456789abcdef0123456789abcdef g                   1        7 "
	    "       3 max-attempts 2026-01-01T00:00:00.000000Z exit 2: oops\n"
	    "fedcba9876543210fedcba9876543210 h                   0        0 "
	    "       1 rejected     2026-01-01T00:00:01.000000Z bad\n"),
	    "dlq list: a handler's failure as its status and its stderr's "
	    "first line");
	ok(is(mq_dead_write_table(d, 0, start()), ""),
	    "dlq list: none, no heading");
	ok(is(mq_dead_write_json(d, 2, start()),
	    "[{\"id\":\"0123456789abcdef0123456789abcdef\",\"topic\":\"t\","
	    "\"group\":\"g\",\"partition\":1,\"seq\":7,\"attempts\":3,"
	    "\"reason\":\"max-attempts\",\"time\":"
	    "\"2026-01-01T00:00:00.000000Z\",\"detail\":\"\",\"status\":2},"
	    "{\"id\":\"fedcba9876543210fedcba9876543210\",\"topic\":\"t\","
	    "\"group\":\"h\",\"partition\":0,\"seq\":0,\"attempts\":1,"
	    "\"reason\":\"rejected\",\"time\":\"2026-01-01T00:00:01.000000Z\","
	    "\"detail\":\"bad\",\"status\":null}]\n"),
	    "dlq list --json: null for no status");
	ok(is(mq_dead_write_record(&d[0], start()),
	    "Id: 0123456789abcdef0123456789abcdef\nGroup: g\nPartition: 1\n"
	    "Seq: 7\nAttempts: 3\nReason: max-attempts\n"
	    "Time: 2026-01-01T00:00:00.000000Z\nStatus: 2\nDetail: \n"
	    "Stderr:\noops\n\n"),
	    "dlq show: the record, the handler's stderr ended by a newline");
	ok(is(mq_dead_write_record(&d[1], start()),
	    "Id: fedcba9876543210fedcba9876543210\nGroup: h\nPartition: 0\n"
	    "Seq: 0\nAttempts: 1\nReason: rejected\n"
	    "Time: 2026-01-01T00:00:01.000000Z\nStatus: \nDetail: bad\n\n"),
	    "dlq show: no status, no stderr");
}

static void
test_msg(void)
{
	struct mq_msg m = { .body = (const unsigned char *)"a\nb", .len = 3 };
	ok(is(mq_msg_write(&m, &(struct mq_msg_output){ 0 }, start()),
	    "a\nb\n"), "a message: its body and a newline");
	char *t = written(mq_msg_write(&m, &(struct mq_msg_output){ .nul = 1 },
	    start()));
	ok(t && len == 4 && !memcmp(t, "a\nb", 4), "-0: its body and a NUL");
	free(t);
	ok(is(mq_msg_write(&m, &(struct mq_msg_output){ .quiet = 1 },
	    start()), ""), "-q: nothing");
}

/* What mq_pub_stream hands on, as "body|" per message and "/" per
 * batch. */
static char got[256];

static void
init(struct mq_pub_msg *m, const void *body, size_t n, void *ctx)
{
	(void)ctx;
	memset(m, 0, sizeof *m);
	m->body = body;
	m->len = n;
}

static int
put(struct mq_pub_msg *msgs, size_t n, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%.*s|",
		    (int)msgs[i].len, (const char *)msgs[i].body);
	strcat(got, "/");
	return 0;
}

/* Streams input through a pipe, written and closed before the stream
 * reads it; 0 or -1 as mq_pub_stream. */
static int
stream(const char *input, size_t n, struct mq_pub_stream how)
{
	int fds[2];
	if (pipe(fds) < 0 || write(fds[1], input, n) != (ssize_t)n)
		abort();
	close(fds[1]);
	got[0] = 0;
	how.fd = fds[0];
	how.name = "in";
	how.init = init;
	how.put = put;
	int rc = mq_pub_stream(&how);
	close(fds[0]);
	return rc;
}

static void
test_stream(void)
{
	ok(stream("a\nbb\n\nccc", 9, (struct mq_pub_stream){ .split = 1,
	    .sep = '\n', .max = 3 }) == 0 && !strcmp(got, "a|bb|ccc|/"),
	    "records by line, an empty one none, the last one unended: %s",
	    got);
	ok(stream("a\0b\nc\0", 6, (struct mq_pub_stream){ .split = 1,
	    .max = 9 }) == 0 && !strcmp(got, "a|b\nc|/"),
	    "records by NUL, a newline in one");
	ok(stream("a\nb\n", 4, (struct mq_pub_stream){ .max = 9 }) == 0 &&
	    !strcmp(got, "a\nb\n|/"), "no split: all of it one message");
	ok(stream("", 0, (struct mq_pub_stream){ .max = 9 }) == 0 &&
	    !strcmp(got, "|/"), "no split, no input: one empty message");
	ok(stream("", 0, (struct mq_pub_stream){ .split = 1, .sep = '\n',
	    .max = 9 }) == 0 && !strcmp(got, ""), "split, no input: none");
	ok(stream("a\nbbbb\n", 7, (struct mq_pub_stream){ .split = 1,
	    .sep = '\n', .max = 3 }) < 0 && mq_errcode() == EX_DATAERR &&
	    !strcmp(mq_errmsg(), "message is larger than the topic's limit "
	    "of 3 bytes"), "a record over the limit: EX_DATAERR");
	ok(stream("abcd", 4, (struct mq_pub_stream){ .max = 3 }) < 0 &&
	    mq_errcode() == EX_DATAERR && !strcmp(got, ""),
	    "no split, over the limit: nothing handed on");
	int fd = open("/", O_RDONLY | O_DIRECTORY);
	struct mq_pub_stream how = { .fd = fd, .name = "in", .max = 9,
	    .init = init, .put = put };
	ok(mq_pub_stream(&how) < 0 && mq_errcode() == EX_IOERR &&
	    !strncmp(mq_errmsg(), "in: ", 4), "a read error: EX_IOERR, named: %s",
	    mq_errmsg());
	close(fd);
}

int
main(void)
{
	char dir[] = "/tmp/mq-unit.XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	setenv("MQ_NOW", "10000", 1);
	test_group();
	test_topic();
	test_repl(dir);
	test_dead();
	test_msg();
	test_stream();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	system(cmd);
	return t_done();
}
