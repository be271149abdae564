/*
 * receipt.c: receipts name one claim.
 *
 * A receipt is <topic>/<group>/<partition>/<claim>, where <claim> is the
 * cur/ name without its ":2," suffix: KEY,a<attempts>,l<deadline ms>,
 * r<token>.  Every claim of a message has its own attempts, deadline and
 * token, so a receipt from an expired lease can never name a later claim:
 * acking with it finds nothing and changes nothing.  Extending a lease
 * renames the claim with a new deadline but the same message, attempts
 * and token, which is how its receipt still finds it.  A claim whose
 * deadline has passed is refused even if it is still there, since another
 * consumer may return it to the queue at any moment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

int
mq_receipt_make(const char *topic, const char *group, unsigned k,
    const char *claim, char **out)
{
	if (asprintf(out, "%s/%s/%u/%s", topic, group, k, claim) < 0)
		return mq_err_sys("malloc");
	return 0;
}

struct receipt {
	char topic[MQ_NAME_MAX + 1], group[MQ_NAME_MAX + 1];
	unsigned k;
	char cur[MQ_KEY_LEN + 64];
	struct mq_entry e;
};

static int
field(const char **p, char *out, size_t len)
{
	const char *slash = strchr(*p, '/');
	if (!slash || (size_t)(slash - *p) >= len || slash == *p)
		return -1;
	memcpy(out, *p, (size_t)(slash - *p));
	out[slash - *p] = 0;
	*p = slash + 1;
	return 0;
}

static int
receipt_parse(const char *s, const char *topic, const char *group,
    struct receipt *r)
{
	char part[16], *end;
	const char *p = s;
	if (strlen(s) > 2 * MQ_NAME_MAX + MQ_KEY_LEN + 64 ||
	    field(&p, r->topic, sizeof r->topic) < 0 ||
	    field(&p, r->group, sizeof r->group) < 0 ||
	    field(&p, part, sizeof part) < 0 ||
	    mq_name_check("topic", r->topic) < 0 ||
	    mq_name_check("group", r->group) < 0)
		return mq_err(EX_DATAERR, "malformed receipt '%.80s'", s);
	errno = 0;
	unsigned long k = strtoul(part, &end, 10);
	if (*end || errno || k >= MQ_PARTITIONS_MAX || part[0] < '0' ||
	    part[0] > '9' || mq_entry_parse(p, &r->e) < 0 || !r->e.claimed ||
	    strchr(p, ':'))
		return mq_err(EX_DATAERR, "malformed receipt '%.80s'", s);
	if (strcmp(r->topic, topic))
		return mq_err(EX_DATAERR, "receipt is for topic '%s', not '%s'",
		    r->topic, topic);
	if (strcmp(r->group, group))
		return mq_err(EX_DATAERR, "receipt is for group '%s', not '%s'",
		    r->group, group);
	r->k = (unsigned)k;
	return mq_path(r->cur, sizeof r->cur, "%s:2,", p);
}

enum settle { ACK, NACK, REJECT, EXTEND, HELD };

/* Finds the claim a receipt names (extensions change its deadline, not
 * its identity), refuses it if its lease has passed, and settles it. */
static int
receipt_settle(mq_spool *sp, const char *topic, const char *group,
    const char *receipt, enum settle op, const struct mq_nack *how,
    double seconds)
{
	struct receipt r;
	if (mq_name_check("topic", topic) < 0 ||
	    mq_name_check("group", group) < 0 ||
	    receipt_parse(receipt, topic, group, &r) < 0)
		return -1;
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	struct mq_gdirs d = { -1, -1, -1 };
	struct mq_group_conf gc;
	char cur[MQ_KEY_LEN + 64];
	struct mq_entry now_e;
	int rc = 0;
	if (r.k >= t.conf.partitions)
		rc = mq_err(EX_DATAERR, "receipt names partition %u; topic '%s' "
		    "has %u", r.k, topic, t.conf.partitions);
	else if (mq_group_settings(&t, group, &gc) < 0)
		rc = -1;
	if (rc == 0)
		rc = mq_gdirs_open(&t, r.k, group, &d);
	if (rc == 0)
		rc = mq_claim_find(&d, r.cur, cur, sizeof cur);
	if (rc == 0 && (mq_entry_parse(cur, &now_e) < 0 ||
	    (double)now_e.deadline_ms / 1000 < mq_now()))
		rc = mq_err(EX_NOINPUT, "lease of message %s has expired",
		    r.e.key + MQ_SEQ_DIGITS + 1);
	if (rc == 0) {
		char out[MQ_KEY_LEN + 64];
		struct mq_why why = { "rejected", how ? how->detail : NULL, -1,
		    NULL, 0 };
		switch (op) {
		case ACK:
			if (gc.exactly_once && (rc = mq_ledger_record(&t, r.k,
			    group, r.e.key + MQ_SEQ_DIGITS + 1, 1)) < 0)
				break;
			if (gc.exactly_once)
				mq_journal_change(t.sp, t.name, 'E', r.k, group,
				    cur);
			if (mq_unlinkat(d.curfd, cur, 0) < 0)
				rc = errno == ENOENT ? mq_err(EX_NOINPUT, "message "
				    "%s is gone (its lease expired and it was "
				    "claimed again)", r.e.key + MQ_SEQ_DIGITS + 1) :
				    mq_err_sys("ack");
			else {
				mq_journal_change(t.sp, t.name, 'A', r.k, group, cur);
				mq_count_acked(sp, topic, group, mq_now(),
				    mq_key_time(cur));
			}
			break;
		case NACK:
			rc = mq_claim_return(&t, r.k, group, &d, cur, how, &gc);
			rc = rc < 0 ? -1 : 0;
			break;
		case REJECT:
			rc = mq_claim_reject(&t, r.k, group, &d, cur, &why);
			break;
		case EXTEND:
			rc = mq_claim_extend(&d, cur, seconds, out, sizeof out);
			break;
		case HELD:
			rc = 1;
			break;
		}
	}
	mq_gdirs_close(&d);
	mq_topic_close(&t);
	return rc;
}

int
mq_receipt_ack(mq_spool *sp, const char *topic, const char *group,
    const char *receipt)
{
	return receipt_settle(sp, topic, group, receipt, ACK, NULL, 0);
}

int
mq_receipt_nack(mq_spool *sp, const char *topic, const char *group,
    const char *receipt, const struct mq_nack *how)
{
	return receipt_settle(sp, topic, group, receipt, NACK, how, 0);
}

int
mq_receipt_reject(mq_spool *sp, const char *topic, const char *group,
    const char *receipt, const struct mq_nack *how)
{
	return receipt_settle(sp, topic, group, receipt, REJECT, how, 0);
}

int
mq_receipt_extend(mq_spool *sp, const char *topic, const char *group,
    const char *receipt, double seconds)
{
	return receipt_settle(sp, topic, group, receipt, EXTEND, NULL, seconds);
}

int
mq_receipt_held(mq_spool *sp, const char *topic, const char *group,
    const char *receipt)
{
	int rc = receipt_settle(sp, topic, group, receipt, HELD, NULL, 0);
	return rc < 0 && mq_errcode() == EX_NOINPUT ? 0 : rc;
}
