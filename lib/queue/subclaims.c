/*
 * subclaims.c: a subscription's claims in topics of format 2 (claims.c):
 * taking a batch from the log when the queue is used up, handing its
 * records out one by one, checked as consume.c checks a name's, settling
 * them a claim at a time, and detaching a record that leaves the happy
 * path (given back, rejected, dead) into a claim of format 1 in cur/.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "sub.h"

/* Dead-letters the claim cur/CUR unseen, the error being the detail:
 * 0, the caller looks for another message. */
int
mq_sub_dead_unseen(mq_sub *s, struct part *p, const char *cur,
    const struct mq_entry *e, const char *reason)
{
	struct mq_why why = { reason, mq_errmsg(), -1, NULL, 0 };
	if (mq_dlq_put(p->t, p->k, s->group, p->d.curfd, cur, e, &why) < 0 &&
	    mq_errcode() != EX_NOINPUT)
		return -1;
	return 0;
}

int
mq_sub_take(mq_sub *s, struct part *p)
{
	/* The next batch, once this one is handed out. */
	if (p->taken->pos < p->taken->c.n)
		return 0;
	mq_taken_clear(p->taken);
	int n = mq_claims_take(p->t, p->k, s->group, &p->d, p->hfd, p->cursorfd,
	    p->claimsfd, p->filter, s->prefetch, s->lease, p->taken);
	/* A file system too full for a claim's line still takes names,
	 * empty files: what was published is delivered. */
	if (n < 0)
		return errno == ENOSPC || errno == EDQUOT ? -2 : -1;
	p->feed = n > 0;
	p->scan_delay |= n > 0;
	if (n > 0)
		mq_signers_expire(p->t);
	/* No claim, but the cursor passed a gap at the log's end (feed.c):
	 * names below it now are claimable. */
	uint64_t c;
	if (n == 0 && mq_cursor_read(p->cursorfd, &c) == 0 && c > p->committed)
		p->scan_new = true;
	return n > 0;
}

/* Detaches record j of the partition's taken claim (claims.c): into
 * cur/ as its first attempt (name gets it), or, attempt 0, back to new/
 * as never handed out.  1 when detached, 0 when it is no longer ours
 * (its lease expired and it was taken back), -1. */
static int
detach_taken(struct part *p, const char *claim, uint64_t seq, const char *id,
    int attempt, char name[MQ_KEY_LEN + 64])
{
	char out[1][MQ_KEY_LEN + 64];
	const char (*ids)[MQ_ID_LEN + 1] = NULL;
	char idbuf[1][MQ_ID_LEN + 1];
	if (id) {
		snprintf(idbuf[0], sizeof idbuf[0], "%s", id);
		ids = (const char (*)[MQ_ID_LEN + 1])idbuf;
	}
	int rc = mq_claims_detach(p->t, p->k, &p->d, p->cursorfd, p->claimsfd,
	    claim, &seq, ids, 1, attempt, 0, out);
	if (rc < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	if (name)
		memcpy(name, out[0], sizeof out[0]);
	return rc > 0 && out[0][0];
}

/* A claimed record that must not be delivered (reason), or that failed
 * to be read: dead-lettered from cur/ as format 1 does (when the error
 * says the data is bad, or always with force), else given back as never
 * handed out and -1. */
static int
claimed_unread(mq_sub *s, struct part *p, uint64_t seq, const char *id,
    const char *reason, bool force)
{
	char cur[MQ_KEY_LEN + 64];
	struct mq_entry e;
	const char *claim = p->taken->name;
	if (!force && mq_errcode() != EX_DATAERR) {
		detach_taken(p, claim, seq, id, 0, NULL);
		return -1;
	}
	int rc = detach_taken(p, claim, seq, id, 1, cur);
	if (rc <= 0)
		return rc;
	if (mq_entry_parse(cur, &e) < 0)
		return mq_err(EX_SOFTWARE, "bad claim name %s", cur);
	return mq_sub_dead_unseen(s, p, cur, &e, reason);
}

/* Settles record seq of the partition's taken claim unseen (processed
 * before, or expired and dropped): 0, the caller looks for another. */
static int
settle_unseen(struct part *p, uint64_t seq)
{
	int r = mq_claims_settle(p->cursorfd, p->claimsfd, p->taken->name, &seq,
	    1, 0);
	if (r < 0 && mq_errcode() != EX_NOINPUT)
		return -1;
	if (r > 0)
		mq_claims_journal_seqs(p->t, p->k, p->d.group, p->taken->name,
		    &seq, 1);
	return 0;
}

/* Delivers record j of the partition's taken claim, m as read from the
 * log (NULL: it did not read): 1 with *out, 0 when it was settled unseen,
 * as deliver does with a name. */
static int
deliver_claimed(mq_sub *s, size_t i, unsigned j, struct mq_msg *m,
    struct mq_msg **out)
{
	struct part *p = &s->ps[i];
	struct mq_taken *tk = p->taken;
	uint64_t seq = tk->c.first + j;
	if (!m) {
		mq_err(EX_DATAERR, "record %" PRIu64 " does not read", seq);
		return claimed_unread(s, p, seq, NULL, "unreadable", true);
	}
	char id[MQ_ID_LEN + 1];
	snprintf(id, sizeof id, "%s", m->id);
	if (p->donefd >= 0 && mq_faccessat(p->donefd, id, F_OK,
	    AT_SYMLINK_NOFOLLOW) == 0) {
		mq_msg_free(m);
		return settle_unseen(p, seq);
	}
	int ok = mq_msg_verify(p->t, ((struct msg_priv *)m->priv)->buf, m);
	if (ok <= 0) {
		mq_msg_free(m);
		return claimed_unread(s, p, seq, id, "signature", ok == 0);
	}
	if (mq_seal_open(s->opts.key, p->t, m) < 0) {
		mq_msg_free(m);
		return claimed_unread(s, p, seq, id, "undecryptable", false);
	}
	if (m->expires > 0 && mq_now() > m->expires) {
		mq_msg_free(m);
		if (!p->t->conf.expired_drop) {
			char cur[MQ_KEY_LEN + 64];
			struct mq_entry e;
			struct mq_why why = { "expired", NULL, -1, NULL, 0 };
			int rc = detach_taken(p, tk->name, seq, id, 1, cur);
			if (rc > 0 && mq_entry_parse(cur, &e) == 0)
				rc = mq_dlq_put(p->t, p->k, s->group, p->d.curfd,
				    cur, &e, &why);
			return rc < 0 ? -1 : 0;
		}
		return settle_unseen(p, seq);
	}
	struct msg_priv *pv = m->priv;
	char where[96];
	pv->part = i;
	snprintf(pv->claim, sizeof pv->claim, "%s", tk->name);
	m->attempts = 1;
	m->lease_deadline = (double)tk->st.deadline_ms / 1000;
	snprintf(where, sizeof where, "%s/%" PRIu64, tk->name, seq);
	if (mq_receipt_make(p->t->name, s->group, p->k, where, &m->receipt) < 0) {
		mq_msg_free(m);
		return -1;
	}
	*out = m;
	return 1;
}

int
mq_sub_hand_out(mq_sub *s, size_t i, struct mq_msg **out)
{
	struct mq_taken *tk = s->ps[i].taken;
	while (tk && tk->pos < tk->c.n) {
		unsigned j = tk->pos++;
		struct mq_msg *m = tk->m[j];
		tk->m[j] = NULL;
		if (mq_claim_settled(&tk->st, j))
			continue;
		int rc = deliver_claimed(s, i, j, m, out);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void
mq_sub_release_taken(mq_sub *s)
{
	for (size_t i = 0; i < s->np; i++) {
		struct part *p = &s->ps[i];
		struct mq_taken *tk = p->taken;
		uint64_t seqs[MQ_CLAIM_MAX];
		size_t n = 0;
		if (!tk)
			continue;
		for (unsigned j = tk->pos; j < tk->c.n; j++)
			if (!mq_claim_settled(&tk->st, j))
				seqs[n++] = tk->c.first + j;
		if (n)
			mq_claims_detach(p->t, p->k, &p->d, p->cursorfd,
			    p->claimsfd, tk->name, seqs, NULL, n, 0, 0, NULL);
		mq_taken_clear(tk);
	}
}

int
mq_sub_settle_claimed(mq_sub *s, struct mq_msg *const *m, size_t n)
{
	bool *done = calloc(n ? n : 1, sizeof *done);
	uint64_t *seqs = malloc((n ? n : 1) * sizeof *seqs);
	size_t *of = malloc((n ? n : 1) * sizeof *of), lost = 0;
	int rc = done && seqs && of ? 0 : mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct msg_priv *pv = mq_sub_priv(m[i]);
		if (done[i] || !pv->claim[0])
			continue;
		/* The records of m[i]'s claim, m[of[0..ns)]. */
		size_t ns = 0;
		for (size_t j = i; j < n; j++)
			if (!done[j] && mq_sub_priv(m[j])->part == pv->part &&
			    !strcmp(mq_sub_priv(m[j])->claim, pv->claim)) {
				of[ns] = j;
				seqs[ns++] = m[j]->seq;
				done[j] = true;
			}
		struct part *p = mq_sub_part(s, m[i]);
		int r = mq_claims_settle(p->cursorfd, p->claimsfd, pv->claim,
		    seqs, ns, 0);
		if (r < 0 && mq_errcode() != EX_NOINPUT)
			rc = -1;
		if (r > 0)
			mq_claims_journal_seqs(p->t, p->k, p->d.group, pv->claim,
			    seqs, ns);
		lost += r < 0 ? ns : ns - (size_t)r;
		double now = mq_now();
		for (size_t j = 0; r > 0 && j < ns; j++)
			mq_count_acked(s->sp, p->t->name, s->group, now,
			    mq_id_time(m[of[j]]->id));
		p->cur_left = true;
	}
	free(done);
	free(seqs);
	free(of);
	if (rc == 0 && lost)
		rc = mq_err(EX_NOINPUT, "%zu message%s no longer claimed (the "
		    "lease expired)", lost, lost == 1 ? " is" : "s are");
	return rc;
}

int
mq_sub_detach_claimed(mq_sub *s, const struct mq_msg *m)
{
	struct msg_priv *pv = mq_sub_priv(m);
	struct part *p = mq_sub_part(s, m);
	int rc = detach_taken(p, pv->claim, m->seq, m->id, 1, pv->cur);
	if (rc == 0)
		return mq_err(EX_NOINPUT, "message %s is no longer claimed (its "
		    "lease expired)", m->id);
	if (rc > 0)
		pv->claim[0] = 0;
	return rc < 0 ? -1 : 0;
}
