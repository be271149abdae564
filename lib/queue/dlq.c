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
#include <stdlib.h>
#include <sysexits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "queue.h"

int
mq_dlq_put(const struct mq_topic *t, unsigned k, const char *group,
    int curfd, const char *curname, const struct mq_entry *e,
    const struct mq_why *why)
{
	char dir[MQ_NAME_MAX + 16], name[MQ_KEY_LEN + 32], wname[MQ_KEY_LEN + 40];
	char when[64], status[16] = "";
	if (mq_path(dir, sizeof dir, "dlq/%s", group) < 0 ||
	    mq_entry_new_name(e, name, sizeof name) < 0 ||
	    mq_path(wname, sizeof wname, "%s.why", name) < 0 ||
	    mq_mkdirs(t->pfd[k], dir) < 0)
		return -1;
	int dfd = mq_dir_open(t->pfd[k], dir);
	if (dfd < 0)
		return -1;
	mq_time_rfc3339(mq_now(), when, sizeof when);
	if (why->status >= 0)
		snprintf(status, sizeof status, "%d", why->status);
	/* The detail is one line: a newline in it would start a key. */
	char detail[512];
	snprintf(detail, sizeof detail, "%s", why->detail ? why->detail : "");
	for (char *p = detail; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	char *text = NULL;
	size_t tl = why->tail ? why->tail_len : 0;
	int n = asprintf(&text, "reason=%s\nattempts=%u\ntime=%s\ngroup=%s\n"
	    "topic=%s\npartition=%u\nstatus=%s\ndetail=%s\n\n%.*s", why->reason,
	    e->attempts, when, group, t->name, k, status, detail, (int)tl,
	    tl ? why->tail : "");
	int rc = n < 0 ? mq_err_sys("malloc") :
	    mq_write_file(dfd, wname, text, (size_t)n, 1, 1);
	free(text);
	/* Format 2: the claim is an empty name of a record in the log; the
	 * dead letter keeps a copy, as retention will not keep the log.  A
	 * record that cannot be read leaves it empty (its reason says
	 * why); one filled before a crash is filled again the same. */
	if (rc == 0 && t->conf.format == 2 &&
	    mq_record_copy(t, k, curfd, curname) < 0 &&
	    mq_errcode() != EX_DATAERR)
		rc = -1;
	if (rc == 0 && mq_renameat(curfd, curname, dfd, name) < 0)
		rc = errno == ENOENT ? mq_err(EX_NOINPUT, "message %s is no longer "
		    "claimed (its lease expired)", e->key + MQ_SEQ_DIGITS + 1) :
		    mq_err_sys("dead-letter %s", name);
	if (rc == 0)
		rc = mq_fsync_fd(dfd);
	if (rc == 0)
		mq_journal_change(t->sp, t->name, 'D', k, group, name);
	close(dfd);
	return rc;
}
