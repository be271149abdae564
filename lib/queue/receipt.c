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
 *
 * In format 2 a record handed out in a claim (claims.c) has the receipt
 * <topic>/<group>/<partition>/<claim>/<seq>: the claim's name holds its
 * token, so a receipt of a claim taken back (its lease over) names one
 * that is gone or a record settled, and changes nothing either.
 */
#include <errno.h>
#include <inttypes.h>
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
	char claim[64];                 /* format 2: a record of this claim */
	uint64_t seq;
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
	struct mq_claim_name c;
	r->claim[0] = 0;
	if (*end || errno || k >= MQ_PARTITIONS_MAX || part[0] < '0' ||
	    part[0] > '9')
		return mq_err(EX_DATAERR, "malformed receipt '%.80s'", s);
	if (strchr(p, '/')) {
		/* A record of a claim: <claim>/<seq>. */
		const char *q;
		if (field(&p, r->claim, sizeof r->claim) < 0 ||
		    mq_claim_name_parse(r->claim, &c) < 0 ||
		    !(q = mq_decimal(p, MQ_SEQ_MAX, &r->seq)) || *q ||
		    r->seq < c.first || r->seq - c.first >= c.n)
			return mq_err(EX_DATAERR, "malformed receipt '%.80s'", s);
	} else if (mq_entry_parse(p, &r->e) < 0 || !r->e.claimed ||
	    strchr(p, ':'))
		return mq_err(EX_DATAERR, "malformed receipt '%.80s'", s);
	if (strcmp(r->topic, topic))
		return mq_err(EX_DATAERR, "receipt is for topic '%s', not '%s'",
		    r->topic, topic);
	if (strcmp(r->group, group))
		return mq_err(EX_DATAERR, "receipt is for group '%s', not '%s'",
		    r->group, group);
	r->k = (unsigned)k;
	if (r->claim[0])
		return mq_path(r->cur, sizeof r->cur, "%s/%" PRIu64, r->claim,
		    r->seq);
	return mq_path(r->cur, sizeof r->cur, "%s:2,", p);
}

enum settle { ACK, NACK, REJECT, EXTEND, HELD };

/* Settles record r->seq of claim r->claim (format 2; claims.c): refused
 * once the claim's lease has passed, or the record is settled. */
static int
claim_settle(struct mq_topic *t, const char *group,
    const struct mq_group_conf *gc, struct mq_gdirs *d, const struct receipt *r,
    enum settle op, const struct mq_nack *how, const struct mq_why *why,
    double seconds)
{
	unsigned k = r->k;
	int cursorfd = t->conf.format == 2 && !gc->ordered ?
	    mq_cursor_open(t, k, group, O_RDWR) : -1;
	int claimsfd = cursorfd < 0 ? -1 : mq_claims_open(t, k, group, 0);
	int rc = cursorfd < 0 || claimsfd == -1 ? -1 : 0;
	if (rc < 0 && (t->conf.format != 2 || gc->ordered || errno == ENOENT ||
	    claimsfd == -2))
		rc = mq_err(EX_NOINPUT, "record %" PRIu64 " of claim %s is gone "
		    "(settled, or its lease expired)", r->seq, r->claim);
	if (rc == 0)
		rc = mq_claims_held(cursorfd, claimsfd, r->claim, r->seq);
	struct mq_msg *m = NULL;
	if (rc == 0 && op == ACK &&
	    mq_record_read(t, k, r->seq, NULL, &m) < 0 &&
	    mq_errcode() != EX_DATAERR)
		rc = -1;
	char cur[1][MQ_KEY_LEN + 64];
	switch (rc < 0 ? HELD : op) {
	case ACK:
		if (m && gc->exactly_once)
			rc = mq_ledger_record(t, k, group, m->id, 1);
		if (rc == 0 && m && gc->exactly_once) {
			char key[MQ_KEY_LEN + 1];
			snprintf(key, sizeof key, "%0*" PRIu64 ".%s",
			    MQ_SEQ_DIGITS, r->seq, m->id);
			mq_journal_change(t->sp, t->name, 'E', k, group, key);
		}
		if (rc == 0 && mq_claims_settle(cursorfd, claimsfd, r->claim,
		    &r->seq, 1, 1) < 0)
			rc = -1;
		if (rc == 0)
			mq_claims_journal_seqs(t, k, group, r->claim, &r->seq, 1);
		if (rc == 0 && m)
			mq_count_acked(t->sp, t->name, group, mq_now(),
			    mq_id_time(m->id));
		break;
	case NACK:
	case REJECT:
		/* A claim of its own in cur/ first, as format 1's. */
		rc = mq_claims_detach(t, k, d, cursorfd, claimsfd, r->claim,
		    &r->seq, NULL, 1, 1, 0, cur);
		if (rc == 0)
			rc = mq_err(EX_NOINPUT, "record %" PRIu64 " of claim %s "
			    "is settled already", r->seq, r->claim);
		if (rc > 0 && op == NACK)
			rc = mq_claim_return(t, k, group, d, cur[0], how, gc) < 0 ?
			    -1 : 0;
		else if (rc > 0)
			rc = mq_claim_reject(t, k, group, d, cur[0], why);
		break;
	case EXTEND:
		rc = mq_claims_extend(cursorfd, claimsfd, r->claim,
		    (uint64_t)((mq_now() + seconds) * 1000));
		break;
	case HELD:
		rc = rc < 0 ? -1 : 1;
		break;
	}
	mq_msg_free(m);
	if (cursorfd >= 0)
		close(cursorfd);
	if (claimsfd >= 0)
		close(claimsfd);
	return rc;
}

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
	if (rc == 0 && r.claim[0]) {
		struct mq_why why = { "rejected", how ? how->detail : NULL, -1,
		    NULL, 0 };
		rc = claim_settle(&t, group, &gc, &d, &r, op, how, &why, seconds);
		mq_gdirs_close(&d);
		mq_topic_close(&t);
		return rc;
	}
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
