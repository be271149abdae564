/*
 * commit.c: offsets.  An offset is a sequence number in a partition; a
 * group's committed offset there is that of its oldest message not yet
 * acked.  Committing offset N acks every message of the group in that
 * partition with a lower sequence number, wherever it is (pending,
 * claimed, waiting for a retry): the consumer says it has processed
 * everything before N, as a Kafka consumer's commit does.  Each is one
 * unlink, as an ack is.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

int
mq_offset_parse(const char *s, struct mq_offset *out)
{
	char *end;
	const char *colon = strchr(s, ':');
	errno = 0;
	unsigned long k = strtoul(s, &end, 10);
	if (!colon || end != colon || s == colon || *s == '-' || errno ||
	    k >= MQ_PARTITIONS_MAX)
		return mq_err(EX_USAGE, "bad offset '%s' (PARTITION:OFFSET, as "
		    "0:1500)", s);
	unsigned long long n = strtoull(colon + 1, &end, 10);
	if (!colon[1] || *end || colon[1] == '-' || errno)
		return mq_err(EX_USAGE, "bad offset '%s' (PARTITION:OFFSET, as "
		    "0:1500)", s);
	out->partition = (unsigned)k;
	out->offset = n;
	return 0;
}

/* Unlinks the names of dir below offset; delay/ names start with their
 * due time (skip is then 21 characters). */
static int
ack_below(const struct mq_topic *t, unsigned k, const char *group, int dirfd,
    size_t skip, uint64_t offset, uint64_t *acked)
{
	struct mq_names l = { 0 };
	if (mq_names_read(dirfd, NULL, &l) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		uint64_t seq;
		if (strlen(l.v[i]) <= skip || mq_seq_of(l.v[i] + skip, &seq) < 0 ||
		    seq >= offset)
			continue;
		if (mq_unlinkat(dirfd, l.v[i], 0) == 0) {
			(*acked)++;
			mq_journal_change(t->sp, t->name, 'A', k, group,
			    l.v[i] + skip);
			mq_count_acked(t->sp, t->name, group, mq_now(),
			    mq_key_time(l.v[i] + skip));
		}
		else if (errno != ENOENT)
			rc = mq_err_sys("ack %s", l.v[i]);
	}
	mq_names_free(&l);
	return rc;
}

/* An ack counted for record s (format 2), with its latency, as an ack
 * of its name would be. */
static void
count_record(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t s, double now)
{
	struct mq_msg *m;
	if (mq_record_read(t, k, s, NULL, &m) < 0)
		return;
	mq_count_acked(t->sp, t->name, group, now, mq_id_time(m->id));
	mq_msg_free(m);
}

/* Format 2: the records of the group's claims below `below` are settled
 * (claims.c), each counted as acked. */
static int
settle_claims(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t below, uint64_t *acked)
{
	int cfd = mq_claims_open(t, k, group, 0);
	if (cfd == -2)
		return 0;
	int fd = cfd < 0 ? -1 : mq_cursor_open(t, k, group, O_RDWR | O_CREAT);
	uint64_t *seqs = NULL;
	size_t n = 0;
	int rc = fd < 0 ? -1 : mq_claims_settle_below(fd, cfd, below, &seqs, &n);
	double now = mq_now();
	for (size_t i = 0; i < n; i++)
		count_record(t, k, group, seqs[i], now);
	*acked += n;
	free(seqs);
	if (fd >= 0)
		close(fd);
	if (cfd >= 0)
		close(cfd);
	return rc;
}

/* Acks counted for the records a commit passed over unfed (format 2). */
static void
count_skipped(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t from, uint64_t to)
{
	double now = mq_now();
	for (uint64_t s = from; s < to; s++)
		count_record(t, k, group, s, now);
}

int
mq_group_commit(mq_spool *sp, const char *topic, const char *group,
    const struct mq_offset *at, uint64_t *acked)
{
	struct mq_topic t;
	*acked = 0;
	if (mq_name_check("group", group) < 0 ||
	    mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	struct mq_group_conf gc;
	struct mq_gdirs d = { -1, -1, -1 };
	struct mq_head h;
	int hfd = -1, rc = mq_group_settings(&t, group, &gc);
	if (rc == 0 && at->partition >= t.conf.partitions)
		rc = mq_err(EX_USAGE, "topic '%s' has no partition %u (it has %u)",
		    topic, at->partition, t.conf.partitions);
	if (rc == 0 && ((hfd = mq_head_open(t.pfd[at->partition],
	    MQ_HEAD_WRITE)) < 0 ||
	    mq_head_read(hfd, &h) < 0))
		rc = -1;
	/* Format 2: the head is a hint, the log's end the truth. */
	if (rc == 0 && t.conf.format == 2 && mq_topic_log_end(&t,
	    at->partition, h.committed, &h.committed) < 0)
		rc = -1;
	if (rc == 0 && at->offset > h.committed)
		rc = mq_err(EX_USAGE, "offset %" PRIu64 " is past the head of "
		    "partition %u (%" PRIu64 ")", at->offset, at->partition,
		    h.committed);
	/* Format 2: what was never fed is acked by moving the cursor past
	 * it, first: a feed then never names it. */
	uint64_t skipped = 0;
	if (rc == 0 && t.conf.format == 2)
		rc = settle_claims(&t, at->partition, group, at->offset, acked);
	if (rc == 0 && t.conf.format == 2)
		rc = mq_feed_skip(&t, at->partition, group, hfd, at->offset,
		    &skipped);
	*acked += skipped;
	if (rc == 0 && skipped)
		count_skipped(&t, at->partition, group, at->offset - skipped,
		    at->offset);
	/* One record for a replica, whatever the commit passed (mq-spool(5),
	 * Replication, format 2); the names' own A records follow. */
	if (rc == 0 && t.conf.format == 2) {
		char off[24 + MQ_ID_LEN + 2];
		snprintf(off, sizeof off, "%" PRIu64, at->offset);
		mq_log_id_append(&t, at->partition, at->offset, off, sizeof off);
		mq_journal_change(sp, topic, 'C', at->partition, group, off);
	}
	if (rc == 0)
		rc = mq_gdirs_open(&t, at->partition, group, &d);
	if (rc == 0)
		rc = ack_below(&t, at->partition, group, d.newfd, 0, at->offset, acked);
	if (rc == 0)
		rc = ack_below(&t, at->partition, group, d.curfd, 0, at->offset, acked);
	if (rc == 0 && d.delayfd >= 0)
		rc = ack_below(&t, at->partition, group, d.delayfd,
		    MQ_SEQ_DIGITS + 1, at->offset, acked);
	mq_gdirs_close(&d);
	if (hfd >= 0)
		close(hfd);
	mq_topic_close(&t);
	return rc;
}
