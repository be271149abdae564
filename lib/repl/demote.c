/*
 * demote.c: an old primary made a replica of the new one
 * (mq-replicate(1) demote; mq-protocol(5), Demote).
 *
 * The messages it took after the new primary last had its records are
 * its own P records from where the new primary's vector stands for this
 * spool's origin: the new primary never saw them, and sending them now
 * would merge two histories.  Each is kept aside, never lost: linked into
 * replicate/quarantine/ under the name a conflict has (a copy where the
 * partition is placed on another file system), that made durable, then
 * unlinked from every group's queue, then from log/.  A crash between
 * these steps leaves the message in quarantine and perhaps still in some
 * queues; the next demote reads the same records from the same offset
 * (the vector did not move: a fenced spool sends nothing) and finishes.
 * Only then is the epoch adopted, the role written and fenced removed,
 * each a whole file synced: until fenced is gone, publishers stay
 * refused, so a crash at any point is finished by demote run again.
 * A partition of format 2 has no P records: demotelog.c does its part,
 * between the two.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include "repl.h"

/* from (beneath fromfd) into quarantine as qname: 1 when it is there now,
 * 0 when from is gone. */
static int
keep(int fromfd, const char *from, int qfd, const char *qname)
{
	if (mq_linkat(fromfd, from, qfd, qname, 0) == 0 || errno == EEXIST)
		return mq_fsync_fd(qfd) < 0 ? -1 : 1;
	if (errno == ENOENT)
		return 0;
	if (errno != EXDEV)
		return mq_err_sys("quarantine %s", qname);
	char *buf;
	size_t len;
	if (mq_read_at(fromfd, from, MQ_FRAME_MAX, &buf, &len) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	int rc = mq_write_file(qfd, qname, buf, len, 1, 0);
	free(buf);
	return rc < 0 || mq_fsync_fd(qfd) < 0 ? -1 : 1;
}

/* Every link of a group of partition pfd to key: kept first if *kept is
 * 0, then removed.  tmp/ and new/ hold KEY, cur/ KEY and its lease,
 * delay/ the due time, a dot and KEY. */
static int
unlink_group(int pfd, const char *group, const char *key, int qfd,
    const char *qname, int *kept)
{
	static const char *const sub[] = { "tmp", "new", "cur", "delay" };
	int rc = 0;
	for (size_t d = 0; rc == 0 && d < 4; d++) {
		char p[MQ_NAME_MAX + 16], e[MQ_NAME_MAX + MQ_KEY_LEN + 96];
		struct mq_names l = { 0 };
		size_t skip = d == 3 ? MQ_SEQ_DIGITS + 1 : 0;
		rc = mq_path(p, sizeof p, "g/%s/%s", group, sub[d]);
		if (rc == 0)
			rc = mq_names_read_at(pfd, p, NULL, &l);
		for (size_t i = 0; rc == 0 && i < l.n; i++) {
			if (strlen(l.v[i]) < skip + MQ_KEY_LEN ||
			    memcmp(l.v[i] + skip, key, MQ_KEY_LEN) ||
			    mq_path(e, sizeof e, "%s/%s", p, l.v[i]) < 0)
				continue;
			if (!*kept && (*kept = keep(pfd, e, qfd, qname)) < 0)
				rc = -1;
			/* A consumer that claimed it meanwhile acks nothing. */
			else if (mq_unlinkat(pfd, e, 0) < 0 && errno != ENOENT)
				rc = mq_err_sys("demote: %s", e);
		}
		mq_names_free(&l);
	}
	return rc;
}

/* One message of ours the peer lacks: topic's partition k, KEY. */
static int
quarantine_own(mq_spool *sp, int qfd, const char *me, const char *topic,
    unsigned k, const char *key, const struct mq_repl_opts *o, size_t *n)
{
	struct mq_topic t;
	if (mq_topic_open(sp, topic, &t) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;    /* deleted */
	char qname[MQ_NAME_MAX + MQ_KEY_LEN + MQ_ID_LEN + 32], log[MQ_KEY_LEN + 8];
	struct mq_names groups = { 0 };
	int kept = 0, rc = k < t.conf.partitions ? 0 : 1;
	if (rc == 0)
		rc = repl_quarantine_name(qname, sizeof qname, topic, k, key, me);
	if (rc == 0)
		rc = mq_path(log, sizeof log, "log/%s", key);
	if (rc == 0 && (kept = keep(t.pfd[k], log, qfd, qname)) < 0)
		rc = -1;
	if (rc == 0)
		rc = mq_groups_read(&t, &groups);
	for (size_t g = 0; rc == 0 && g < groups.n; g++)
		rc = unlink_group(t.pfd[k], groups.v[g], key, qfd, qname, &kept);
	if (rc == 0 && mq_unlinkat(t.pfd[k], log, 0) < 0 && errno != ENOENT)
		rc = mq_err_sys("demote: %s", log);
	if (rc == 0 && syncfs(t.pfd[k]) < 0)
		rc = mq_err_sys("sync");
	if (rc == 0 && (kept || mq_faccessat(qfd, qname, F_OK,
	    AT_SYMLINK_NOFOLLOW) == 0)) {
		(*n)++;
		repl_log(o, LOG_WARNING, "quarantined %s/%u/%s, published here "
		    "after the last record the new primary has of this spool "
		    "(replicate/quarantine/%s)", topic, k, key, qname);
	}
	mq_names_free(&groups);
	mq_topic_close(&t);
	return rc < 0 ? -1 : 0;
}

int
repl_demote(mq_spool *sp, mq_link *l, const struct repl_seen *seen,
    uint64_t epoch, bool segments, const struct mq_repl_opts *o, size_t *n)
{
	char me[MQ_ID_LEN + 1];
	struct mq_jreader jr;
	struct mq_jrec rec;
	uint64_t mine;
	*n = 0;
	if (repl_spool_id(sp, me) < 0 || mq_epoch_read(sp, &mine) < 0)
		return -1;
	uint64_t from = repl_seen_get(seen, me);
	int qfd = repl_dir(sp, "quarantine");
	if (qfd < 0)
		return -1;
	int rc = mq_jreader_open(sp, &jr, from), got = 0;
	if (rc == 0 && jr.gap)
		repl_log(o, LOG_WARNING, "demote: the journal no longer holds "
		    "offset %" PRIu64 ", where the new primary stands: messages "
		    "published here before %" PRIu64 " are not looked at", from,
		    jr.pos);
	while (rc == 0 && (got = mq_jreader_next(&jr, &rec)) == 1) {
		struct mq_jargs ja;
		char key[MQ_KEY_LEN + 1];
		if (rec.origin[0] || rec.type != 'P' ||
		    mq_jargs_parse(rec.type, rec.args, &ja) < 0)
			continue;
		snprintf(key, sizeof key, "%.*s", MQ_KEY_LEN, ja.a);
		if (mq_is_key(key))
			rc = quarantine_own(sp, qfd, me, ja.topic, ja.k, key, o, n);
	}
	if (rc == 0 && got < 0)
		rc = -1;
	mq_jreader_close(&jr);
	if (rc == 0 && segments)
		rc = repl_demote_logs(sp, l, qfd, me, o, n);
	close(qfd);
	if (rc == 0 && epoch > mine)
		rc = repl_epoch_set(sp, epoch);
	if (rc == 0)
		rc = repl_role_set(sp, "replica");
	if (rc == 0)
		rc = repl_fence_clear(sp);
	return rc;
}
