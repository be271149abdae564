/*
 * dlq.c: dead letters.
 *
 * A dead letter of group G in partition k is p<k>/dlq/G/KEY,a<n> (the
 * group's link to the message, n deliveries made) beside KEY,a<n>.why, a
 * record of why: key=value lines, a blank line, then the tail of the last
 * handler's standard error.  The record is written first (through a
 * temporary dot file), then the claim is renamed from cur/ into dlq/G/:
 * that rename is the commit point.  A crash in between leaves a .why
 * without its message, which readers ignore; the message itself is still
 * claimed and comes back when its lease ends.
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
	char dir[MQ_NAME_MAX + 16], name[MQ_KEY_LEN + 32], why[MQ_KEY_LEN + 40];
	char when[64], text[2048];
	if (mq_path(dir, sizeof dir, "dlq/%s", group) < 0 ||
	    mq_entry_new_name(e, name, sizeof name) < 0 ||
	    mq_path(why, sizeof why, "%s.why", name) < 0 ||
	    mq_mkdirs(t->pfd[k], dir) < 0)
		return -1;
	int dfd = mq_dir_open(t->pfd[k], dir);
	if (dfd < 0)
		return -1;
	mq_time_rfc3339(mq_now(), when, sizeof when);
	snprintf(text, sizeof text, "reason=%s\nattempts=%u\ntime=%s\n"
	    "group=%s\ntopic=%s\npartition=%u\ndetail=%s\n\n", reason,
	    e->attempts, when, group, t->name, k, detail ? detail : "");
	int rc = mq_write_file(dfd, why, text, strlen(text), 1, 1);
	if (rc == 0 && renameat(curfd, curname, dfd, name) < 0)
		rc = errno == ENOENT ? 0 : mq_err_sys("dead-letter %s", name);
	if (rc == 0)
		rc = mq_fsync_fd(dfd);
	close(dfd);
	return rc;
}
