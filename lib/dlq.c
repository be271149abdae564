/*
 * dlq.c: dead letters.
 *
 * A dead letter of group G in partition k is p<k>/dlq/G/KEY (a link to
 * the message) beside KEY.why, a key=value record of why it is there.
 * The record is written first (through a temporary file), then the claim
 * is renamed from cur/ into dlq/G/KEY: that rename is the commit point.
 * A crash in between leaves a .why without its message, which readers
 * ignore and the next dead-lettering of the same KEY replaces.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int
mq_dlq_put(const struct mq_topic *t, unsigned k, const char *group,
    int curfd, const char *curname, const struct mq_entry *e,
    const char *reason, const char *detail)
{
	char dir[MQ_NAME_MAX + 16], why[MQ_KEY_LEN + 8], text[2048];
	if (mq_path(dir, sizeof dir, "dlq/%s", group) < 0 ||
	    mq_mkdirs(t->pfd[k], dir) < 0)
		return -1;
	int dfd = mq_dir_open(t->pfd[k], dir);
	if (dfd < 0)
		return -1;
	snprintf(why, sizeof why, "%s.why", e->key);
	snprintf(text, sizeof text, "reason=%s\nattempts=%u\ntime=%.3f\n"
	    "topic=%s\ngroup=%s\npartition=%u\ndetail=%s\n", reason, e->attempts,
	    mq_now(), t->name, group, k, detail ? detail : "");
	int rc = mq_write_file(dfd, why, text, strlen(text), 1, 1);
	if (rc == 0 && renameat(curfd, curname, dfd, e->key) < 0)
		rc = errno == ENOENT ? 0 : mq_err_sys("dead-letter %s", e->key);
	if (rc == 0)
		rc = mq_fsync_fd(dfd);
	close(dfd);
	return rc;
}
