/*
 * test_statout.c: unit tests of mq-stat's writers on figures made up
 * here, so that every branch is reached without a spool in that state.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"
#include "t.h"

/* What put writes for st, in a string the caller frees. */
static char *
written(int (*put)(const struct mq_stat *, FILE *), const struct mq_stat *st)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f || put(st, f) < 0)
		abort();
	fclose(f);
	return text;
}

static struct mq_stat_group groups[] = {
	{ .topic = "t", .group = "g", .pending = 2, .inflight = 1, .delayed = 0,
	  .dead = 3, .lease = 30, .pending_age = 12.5, .lease_age = -1 },
	{ .topic = "t", .group = "h", .pending = 0, .pending_age = -1,
	  .lease_age = 4 },
};
static struct mq_stat_fs fs[] = {
	{ .path = "/sp\"o\\ol\n", .free_bytes = 4096, .free_inodes = 7 },
};
static struct mq_peer_status peers[] = {
	{ .id = "0123456789abcdef0123456789abcdef", .name = "", .records = 5,
	  .lag = 2.5, .contact = 990 },
	{ .id = "fedcba9876543210fedcba9876543210", .name = "backup",
	  .contact = 0 },
};

static void
test_prometheus(void)
{
	struct mq_stat st = { .now = 1000, .groups = groups, .ngroups = 2,
	    .stale_tmp = 1, .fs = fs, .nfs = 1, .replication = 1,
	    .peers = peers, .npeers = 2 };
	char *text = written(mq_stat_write_prometheus, &st);
	ok(strstr(text, "# HELP mq_pending_messages Messages pending for the "
	    "group.\n# TYPE mq_pending_messages gauge\n"
	    "mq_pending_messages{topic=\"t\",group=\"g\"} 2\n"
	    "mq_pending_messages{topic=\"t\",group=\"h\"} 0\n") != NULL,
	    "a family: HELP, TYPE, a sample per group");
	ok(strstr(text, "mq_oldest_pending_age_seconds{topic=\"t\","
	    "group=\"g\"} 12.5\n") && strstr(text,
	    "mq_oldest_pending_age_seconds{"
	    "topic=\"t\",group=\"h\"} 0\n") && strstr(text,
	    "mq_oldest_lease_age_seconds{topic=\"t\",group=\"h\"} 4\n"),
	    "ages, none as 0");
	ok(strstr(text, "\nmq_stale_tmp_files 1\n") != NULL,
	    "a spool figure has no labels");
	ok(strstr(text, "mq_fs_free_bytes{path=\"/sp\\\"o\\\\ol\\n\"} 4096\n")
	    != NULL, "label values escaped");
	ok(strstr(text, "mq_replication_lag_records{peer=\"0123456789abcdef"
	    "0123456789abcdef\"} 5\n") && strstr(text,
	    "mq_replication_lag_records{peer=\"backup\"} 0\n"),
	    "a peer by its name, else its id");
	ok(strstr(text, "mq_replication_contact_age_seconds{peer=\"backup\"} "
	    "0\n") && strstr(text, "mq_replication_contact_age_seconds{peer="
	    "\"0123456789abcdef0123456789abcdef\"} 10\n"),
	    "contact age: now less the contact, 0 without one");
	free(text);
	st.replication = 0;
	st.ngroups = 0;
	text = written(mq_stat_write_prometheus, &st);
	ok(!strstr(text, "replication"), "no peers, no replication families");
	ok(strstr(text, "# TYPE mq_pending_messages gauge\n# HELP") != NULL,
	    "no groups: the family without samples");
	free(text);
}

static void
test_table_json(void)
{
	struct mq_stat st = { .now = 1000, .groups = groups, .ngroups = 1,
	    .fs = fs, .nfs = 0, .replication = 1, .peers = peers,
	    .npeers = 1 };
	char *text = written(mq_stat_write_table, &st);
	ok(strstr(text, "\nt                g                        2         "
	    "1         0         3          12         -\n") != NULL,
	    "table row, no lease age as -");
	ok(strstr(text, "\n0123456789abcdef0123456789abcdef idle       "
	    "           5            2\n") != NULL, "table peer row");
	free(text);
	text = written(mq_stat_write_json, &st);
	ok(!strncmp(text, "{\"time\":1000.0,\"topics\":[],\"groups\":[{"
	    "\"topic\":\"t\",\"group\":\"g\",\"pending\":2,", 66) && strstr(text,
	    "\"oldest_lease_age\":null") && text[strlen(text) - 1] == '\n',
	    "JSON on one line, null for none");
	free(text);
}

static void
test_check(void)
{
	struct mq_threshold warn = { .figure = MQ_FIG_AGE, .cmp = MQ_CMP_GE,
	    .n = 10, .level = 1 };
	struct mq_threshold crit = { .figure = MQ_FIG_AGE, .cmp = MQ_CMP_EQ,
	    .n = 12.5, .level = 2 };
	struct mq_check_value v[] = {
		{ .label = "t/it's age", .figure = MQ_FIG_AGE, .value = 12.5,
		  .state = 2, .warn = &warn, .crit = &crit,
		  .crossed = &crit },
	};
	struct mq_check c = { .state = 2, .v = v, .n = 1 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ok(mq_check_write(&c, f) == 0, "check line written");
	fclose(f);
	ok(!strcmp(text, "MQ CRITICAL - t/it's age=12.5s (=12.5s) | "
	    "'t/it''s age'=12.5s;@10:;@12.5:12.5;0\n"),
	    "plugin line, a quote doubled in perfdata");
	free(text);
}

static void
test_file(const char *dir)
{
	struct mq_stat st = { .now = 1000, .groups = groups, .ngroups = 1 };
	char path[256];
	snprintf(path, sizeof path, "%s/out.prom", dir);
	mode_t old = umask(077);
	ok(mq_stat_write_file(&st, mq_stat_write_prometheus, path) == 0,
	    "file written");
	umask(old);
	struct stat sb;
	ok(stat(path, &sb) == 0 && (sb.st_mode & 07777) == 0644,
	    "mode 0644 whatever the umask");
	snprintf(path, sizeof path, "%s/none/out.prom", dir);
	ok(mq_stat_write_file(&st, mq_stat_write_json, path) < 0 &&
	    mq_errcode() == EX_CANTCREAT, "no directory: EX_CANTCREAT: %s",
	    mq_errmsg());
}

int
main(void)
{
	char dir[] = "/tmp/mq-unit.XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	test_prometheus();
	test_table_json();
	test_check();
	test_file(dir);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	system(cmd);
	return t_done();
}
