/*
 * test_alter.c: growing a topic through the library: ordered groups get
 * their ownership tokens in new partitions, and a subscribe that waited
 * for the locks while an alter committed starts over with the new count.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "queue.h"
#include "t.h"

static char spooldir[] = "/tmp/mq-unit-alter.XXXXXX";

static int
exists(const char *fmt, const char *a, unsigned k, const char *b)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof p, fmt, spooldir, a, k, b);
	return stat(p, &st) == 0;
}

static void
test_ordered(mq_spool *sp)
{
	struct mq_group_conf gc = { 0 };
	mq_group_conf_default(&gc);
	gc.ordered = 1;
	ok(mq_group_subscribe(sp, "ord", "o", &gc) == 1, "ordered group made");
	ok(mq_topic_alter(sp, "ord", 3) == 1, "grown to 3");
	for (unsigned k = 1; k < 3; k++)
		ok(exists("%s/spool/topics/%s/p%u/g/o/own/%s", "ord", k, "-,l0"),
		    "p%u has the ordered group's free token", k);
	ok(mq_topic_alter(sp, "ord", 3) == 0, "same count: 0");
	ok(mq_topic_alter(sp, "ord", 2) < 0 && mq_errcode() == EX_USAGE,
	    "shrinking refused: %s", mq_errmsg());
	struct mq_topic_conf c;
	ok(mq_topic_conf_read(sp, "ord", &c) == 0 && c.partitions == 3,
	    "topic.conf says 3");
}

static char
proc_state(pid_t pid)
{
	char p[64], buf[512];
	snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *r = strrchr(buf, ')');
	return r && r[1] && r[2] ? r[2] : 0;
}

/* An alter commits while a subscribe waits for the locks (this process
 * plays the alter, by hand, holding the locks). */
static void
test_subscribe_retry(mq_spool *sp)
{
	ok(mq_topic_create(sp, "race", NULL) == 1, "topic of 1 partition");
	struct mq_topic t;
	int hfd[1];
	ok(mq_topic_open_as(sp, "race", MQ_FORMAT_ANY, &t) == 0 && mq_lock_all(&t, hfd) == 0,
	    "locks held");
	pid_t pid = fork();
	if (pid == 0) {
		mq_spool *sp2 = mq_spool_open(mq_spool_path(sp), 0);
		_exit(sp2 && mq_group_subscribe(sp2, "race", "g", NULL) >= 0 ? 0 :
		    1);
	}
	/* Wait until the child sleeps on the lock. */
	int slept = 0;
	for (int i = 0; i < 500 && !slept; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		slept = proc_state(pid) == 'S';
	}
	ok(slept, "the subscribe waits for the lock");
	const char *conf = "partitions=2\nmax-message-size=1048576\n"
	    "retention=604800\nttl=0.000\nexpired=dlq\ndedup-window=3600\n";
	ok(mq_partition_build(t.fd, 1, NULL, &t.conf.roles, 1) == 0 &&
	    mq_write_file(t.fd, "topic.conf", conf, strlen(conf), 1, 1) == 0,
	    "an alter to 2 partitions committed");
	mq_unlock_all(&t, hfd);
	mq_topic_close(&t);
	int status;
	ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "subscribe succeeded");
	ok(exists("%s/spool/topics/%s/p%u/g/%s/new", "race", 1, "g"),
	    "the group has a queue in the new partition");
	struct mq_topic t2;
	struct mq_conf kv;
	ok(mq_topic_open_as(sp, "race", MQ_FORMAT_ANY, &t2) == 0 &&
	    mq_group_conf_read(&t2, "g", &kv) == 0, "group conf read");
	ok(mq_conf_get(&kv, "start.p1") != NULL, "the conf has start.p1");
	mq_conf_free(&kv);
	mq_topic_close(&t2);
}

int
main(void)
{
	if (!mkdtemp(spooldir))
		return 2;
	char path[256];
	snprintf(path, sizeof path, "%s/spool", spooldir);
	mq_spool *sp = mq_spool_open(path, MQ_CREATE);
	ok(sp != NULL, "spool created");
	test_ordered(sp);
	test_subscribe_retry(sp);
	mq_spool_close(sp);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", spooldir);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return t_done();
}
