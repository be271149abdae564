/*
 * consume.c: claiming messages for a group, and waiting for them.
 *
 * A consumer lists each partition's new/ once, sorts the names (they
 * start with the sequence number), and claims from that list in order
 * without listing again until it is used up: the cost per message does not
 * grow with the backlog.  It skips names whose sequence number is not yet
 * below the head's committed (a publish in progress).  Claiming is
 * rename(new/NAME, cur/KEY,a<n+1>,l<deadline>,r<token>:2,): one contender
 * wins, the others get ENOENT and move on.
 *
 * When nothing is pending it returns expired leases of its group to new/
 * (any consumer does this for all; there is no daemon), then sleeps in
 * inotify on new/ (a message arrives), head (a commit) and cur/ (a claim
 * whose lease it must watch), no longer than the earliest lease deadline
 * it knows.  Where inotify cannot see other hosts (NFS and the like) or
 * when asked, it polls instead.
 *
 * The partitions are those of one topic or of every topic a wildcard
 * matches (subparts.c).  In an ordered group a consumer claims only in
 * the partitions it owns, and only the oldest message of each, once the
 * one before it is settled (ordered.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "sub.h"

void
mq_sub_opts_default(struct mq_sub_opts *o)
{
	memset(o, 0, sizeof *o);
	o->create = 1;
	o->wake_fd = -1;
	o->grace = 30;
	mq_group_conf_default(&o->group);
}

static int
group_settings(mq_sub *s, const struct mq_sub_opts *o)
{
	if (s->wildcard)
		return mq_wildcard_settings(s->sp, s->name, s->group, o->create ?
		    &o->group : NULL, &s->gc);
	struct mq_topic t;
	if (mq_topic_open_or_create(s->sp, s->name, o->create | MQ_FORMAT1 |
	    MQ_FORMAT2, &t) < 0)
		return -1;
	char path[MQ_NAME_MAX + 16];
	int rc = mq_path(path, sizeof path, "groups/%s.conf", s->group);
	if (rc == 0 && mq_faccessat(t.fd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		if (!o->create)
			rc = mq_err(EX_NOINPUT, "no group '%s' on topic '%s'",
			    s->group, t.name);
		else
			rc = mq_group_subscribe(s->sp, t.name, s->group, &o->group);
		rc = rc < 0 ? -1 : 0;
	}
	struct mq_conf kv;
	if (rc == 0)
		rc = mq_group_conf_read(&t, s->group, &kv);
	if (rc == 0) {
		const char *state = mq_conf_get(&kv, "state");
		bool backfill = state && !strcmp(state, "backfill");
		mq_conf_free(&kv);
		rc = mq_group_settings(&t, s->group, &s->gc);
		if (rc == 0 && backfill)
			rc = mq_group_backfill(&t, s->group);
	}
	mq_topic_close(&t);
	return rc;
}

mq_sub *
mq_sub_open(mq_spool *sp, const char *topic, const char *group,
    const struct mq_sub_opts *o)
{
	struct mq_sub_opts dflt;
	if (!o) {
		mq_sub_opts_default(&dflt);
		o = &dflt;
	}
	bool wildcard = mq_is_pattern(topic);
	if (mq_spool_writable(sp) < 0 || (wildcard ? mq_pattern_check(topic) :
	    mq_name_check("topic", topic)) < 0 ||
	    mq_name_check("group", group) < 0)
		return NULL;
	mq_sub *s = calloc(1, sizeof *s);
	if (!s) {
		mq_err_sys("malloc");
		return NULL;
	}
	s->ifd = s->wd_topics = s->membersfd = s->wd_members = -1;
	s->sp = sp;
	s->wildcard = wildcard;
	s->earliest = INFINITY;
	s->prefetch = 1;
	s->opts = *o;
	s->wake_fd = o->wake_fd;
	s->grace = o->grace;
	if (!(s->name = strdup(topic)) || !(s->group = strdup(group))) {
		mq_err_sys("malloc");
		goto fail;
	}
	if (group_settings(s, o) < 0)
		goto fail;
	s->lease = o->lease > 0 ? o->lease : s->gc.lease;
	s->poll = o->poll;
	if (s->poll <= 0 && (sp->shared || mq_fs_shared(sp->topics)))
		s->poll = 1.0;
	if (s->poll <= 0 &&
	    (s->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		mq_err_sys("inotify");
		goto fail;
	}
	if (mq_sub_parts_open(s) < 0)
		goto fail;
	/* A partition on a network filesystem makes us poll them all. */
	for (size_t i = 0; s->ifd >= 0 && i < s->np; i++)
		if (mq_fs_shared(s->ps[i].t->pfd[s->ps[i].k])) {
			mq_sub_parts_close(s);
			s->ps = NULL;
			s->topics = NULL;
			s->np = s->ntopics = 0;
			close(s->ifd);
			s->ifd = -1;
			s->poll = 1.0;
			if (mq_sub_parts_open(s) < 0)
				goto fail;
			break;
		}
	s->last_refresh = mq_mono();
	if (mq_member_join(s) < 0)
		goto fail;
	return s;
fail:
	mq_sub_free(s);
	return NULL;
}

void
mq_sub_free(mq_sub *s)
{
	if (!s)
		return;
	mq_sub_release_taken(s);
	mq_member_leave(s);
	mq_sub_parts_close(s);
	if (s->ifd >= 0)
		close(s->ifd);
	free(s->group);
	free(s->name);
	free(s);
}

const char *
mq_sub_group(const mq_sub *s)
{
	return s->group;
}

int
mq_sub_wake_fd(const mq_sub *s)
{
	return s->wake_fd;
}

void
mq_sub_prefetch(mq_sub *s, unsigned n)
{
	s->prefetch = n ? n : 1;
}

double
mq_sub_grace(const mq_sub *s)
{
	return s->grace;
}

double
mq_sub_lease(const mq_sub *s)
{
	return s->lease;
}

/* How often a handler's heartbeat runs: a third of the lease, and of
 * an ordered group's session. */
double
mq_sub_beat_every(const mq_sub *s)
{
	return (s->gc.ordered ? fmin(s->lease, s->gc.session) : s->lease) / 3;
}

unsigned
mq_sub_max_attempts(const mq_sub *s)
{
	return s->gc.max_attempts;
}

int
mq_sub_polling(const mq_sub *s)
{
	return s->ifd < 0;
}

/* Gives back every claim in the partition whose lease has passed (an
 * expired lease is a failed delivery: the last one goes to the dead
 * letters); p->earliest gets the earliest deadline still to come.
 * Returns how many went back to new/.  Not for ordered groups: their
 * claims stay where they are, and the partition's owner takes them again
 * (ordered.c). */
static int
expire_partition(mq_sub *s, struct part *p, double now)
{
	static const struct mq_nack expired = { .status = -1,
	    .detail = "lease expired" };
	struct mq_names l = { 0 };
	if (mq_names_reread(p->curdir, NULL, &l) < 0) {
		mq_names_free(&l);
		return -1;
	}
	uint64_t now_ms = (uint64_t)(now * 1000);
	int returned = 0;
	p->earliest = INFINITY;
	/* Claims over their lease leave their records in cur/, expired, for
	 * the loop below (claims.c). */
	if (p->claimsfd >= 0) {
		int n = mq_claims_expire(p->t, p->k, &p->d, p->cursorfd,
		    p->claimsfd, now, &p->earliest);
		if (n > 0) {
			mq_names_free(&l);
			if (mq_names_reread(p->curdir, NULL, &l) < 0)
				n = -1;
		}
		if (n < 0) {
			mq_names_free(&l);
			return -1;
		}
	}
	for (size_t i = 0; i < l.n; i++) {
		struct mq_entry e;
		if (mq_entry_parse(l.v[i], &e) < 0 || !e.claimed)
			continue;
		if (e.deadline_ms > now_ms) {
			p->earliest = fmin(p->earliest, (double)e.deadline_ms / 1000);
			continue;
		}
		int rc = mq_claim_return(p->t, p->k, s->group, &p->d, l.v[i],
		    &expired, &s->gc);
		if (rc == 0)
			returned++;
		else if (rc < 0 && mq_errcode() != EX_NOINPUT)
			break;
	}
	mq_names_free(&l);
	return returned;
}

/* The first sequence number not yet visible in the group's queue: the
 * head's committed, or in format 2 the group's cursor (feed.c). */
static int
part_committed(struct part *p, uint64_t *c)
{
	if (p->cursorfd < 0) {
		struct mq_head h;
		if (mq_head_read(p->hfd, &h) < 0)
			return -1;
		*c = h.committed;
		return 0;
	}
	int rc = mq_cursor_read(p->cursorfd, c);
	if (rc == 1)
		*c = 0;                 /* nothing fed yet */
	/* Raised lazily past the claims (claims.c). */
	if (rc >= 0 && p->claimsfd >= 0 && mq_claims_end(p->claimsfd, 0, c) < 0)
		rc = -1;
	return rc < 0 ? -1 : 0;
}

/* Moves what is due in delay/ to new/; p->due gets the next due time. */
static int
promote_due(struct part *p, double now)
{
	struct mq_names l = { 0 };
	if (mq_names_reread(p->delaydir, NULL, &l) < 0) {
		mq_names_free(&l);
		return -1;
	}
	uint64_t now_ms = (uint64_t)(now * 1000), due, seq, committed;
	int moved = 0;
	if (part_committed(p, &committed) < 0) {
		mq_names_free(&l);
		return -1;
	}
	p->due = INFINITY;
	p->scan_delay = false;
	for (size_t i = 0; i < l.n; i++) {
		struct mq_entry e;
		char name[MQ_KEY_LEN + 32];
		/* A delayed publish in progress is not there yet. */
		if (mq_delay_parse(l.v[i], &due, &e) < 0 ||
		    mq_seq_of(e.key, &seq) < 0 || seq >= committed)
			continue;
		if (due > now_ms) {
			/* Sorted by due time: the rest is later still. */
			p->due = (double)due / 1000;
			break;
		}
		if (mq_entry_new_name(&e, name, sizeof name) == 0 &&
		    mq_renameat(p->d.delayfd, l.v[i], p->d.newfd, name) == 0)
			moved++;
	}
	mq_names_free(&l);
	if (moved)
		p->resort = true;       /* older than what new/ holds */
	return moved;
}

static int
scan_new(struct part *p)
{
	if (part_committed(p, &p->committed) < 0)
		return -1;
	mq_names_free(&p->cand);
	p->pos = 0;
	p->scan_new = p->resort = false;
	mq_signers_expire(p->t);
	return mq_names_reread(p->newdir, NULL, &p->cand);
}

/* Format 2: the queue is used up, so the group takes what the log has
 * past its cursor (feed.c); it looks again at its queue when the cursor
 * moved since it last looked, and feeds again until a feed finds nothing. */
static int
feed(mq_sub *s, struct part *p)
{
	if (p->taken) {
		int n = mq_sub_take(s, p);
		if (n != -2)
			return n < 0 ? -1 : 0;
	}
	uint64_t cursor;
	int n = mq_feed(p->t, p->k, s->group, &p->d, p->hfd, p->cursorfd,
	    p->filter, &cursor);
	if (n < 0)
		return -1;
	/* Another consumer may have fed what we have not listed.  Added to
	 * what was due already: a lease that ran out, or a poll, may have
	 * brought names back to new/ that no feed made. */
	p->feed = n > 0;
	bool moved = n > 0 || cursor != p->committed;
	p->scan_new |= moved;
	p->scan_delay |= moved;
	return 0;
}

/* A claim that could not be read: dead-lettered for reason when the
 * error says the data is bad (EX_DATAERR), else given back as it was and
 * -1. */
static int
unread(mq_sub *s, struct part *p, char *cur, struct mq_entry *e,
    const char *reason)
{
	if (mq_errcode() == EX_DATAERR)
		return mq_sub_dead_unseen(s, p, cur, e, reason);
	char back[MQ_KEY_LEN + 32];
	e->attempts--;
	if (!s->gc.ordered && mq_entry_new_name(e, back, sizeof back) == 0)
		mq_renameat(p->d.curfd, cur, p->d.newfd, back);
	return -1;
}

/* Delivers the claim cur/CUR (entry e) of partition i: returns 1 with
 * *out set, or 0 when it was settled unseen (processed before, unreadable,
 * expired) and the caller should look for another. */
static int
deliver(mq_sub *s, size_t i, char *cur, struct mq_entry *e,
    struct mq_msg **out)
{
	struct part *p = &s->ps[i];
	/* Processed before (the ack was lost): settle it unseen. */
	if (p->donefd >= 0 && mq_faccessat(p->donefd, e->key + MQ_SEQ_DIGITS + 1,
	    F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		if (mq_unlinkat(p->d.curfd, cur, 0) == 0)
			mq_journal_change(p->t->sp, p->t->name, 'A', p->k,
			    s->group, cur);
		return 0;
	}
	/* Never deliver what cannot be proven whole, nor what its signature
	 * does not vouch for (checked on the stored bytes, before a sealed
	 * body is opened), nor a sealed body that does not open; give back
	 * what only failed to be read (out of memory, ...) or that this
	 * consumer holds no key for (EX_NOPERM, seal.c). */
	struct mq_msg *m = NULL;
	int got = mq_claim_read_at(p->t, p->k, p->d.curfd, cur, &m);
	if (got < 0)
		return unread(s, p, cur, e, "unreadable");
	/* With roles, whoever consumes may place files in the queues:
	 * deliver only what was published (msgread.c). */
	if (got > 0)
		return mq_sub_dead_unseen(s, p, cur, e, "unpublished");
	int pub = p->logfd < 0 ? 1 : mq_claim_published(p->logfd, m, e->key);
	if (pub <= 0) {
		mq_msg_free(m);
		if (pub < 0)
			return unread(s, p, cur, e, "unreadable");
		mq_err(EX_DATAERR, "%s has no log/ name: not published", e->key);
		return mq_sub_dead_unseen(s, p, cur, e, "unpublished");
	}
	int ok = mq_msg_verify(p->t, ((struct msg_priv *)m->priv)->buf, m);
	if (ok <= 0) {
		mq_msg_free(m);
		return ok < 0 ? -1 : mq_sub_dead_unseen(s, p, cur, e, "signature");
	}
	if (mq_seal_open(s->opts.key, p->t, m) < 0) {
		mq_msg_free(m);
		return unread(s, p, cur, e, "undecryptable");
	}
	/* Past its deadline: never delivered; dead-lettered or dropped as
	 * the topic says. */
	if (m->expires > 0 && mq_now() > m->expires) {
		mq_msg_free(m);
		struct mq_why why = { "expired", NULL, -1, NULL, 0 };
		bool drop = p->t->conf.expired_drop;
		int rc = drop ? mq_unlinkat(p->d.curfd, cur, 0) :
		    mq_dlq_put(p->t, p->k, s->group, p->d.curfd, cur, e, &why);
		if (rc < 0 && drop)
			return mq_err_sys("drop expired message");
		if (drop)
			mq_journal_change(p->t->sp, p->t->name, 'A', p->k,
			    s->group, cur);
		return rc < 0 ? -1 : 0;
	}
	struct msg_priv *pv = m->priv;
	pv->part = i;
	snprintf(pv->cur, sizeof pv->cur, "%s", cur);
	m->attempts = e->attempts;
	m->lease_deadline = (double)e->deadline_ms / 1000;
	cur[strlen(cur) - 3] = 0;       /* drop ":2," */
	if (mq_receipt_make(p->t->name, s->group, p->k, cur, &m->receipt) < 0) {
		mq_msg_free(m);
		return -1;
	}
	*out = m;
	return 1;
}

/* Claims new/NAME: its next attempt, with a fresh lease and token. */
static int
claim_new(mq_sub *s, struct part *p, const char *name, struct mq_entry *e,
    char *cur, size_t len)
{
	e->attempts++;
	e->deadline_ms = (uint64_t)((mq_now() + s->lease) * 1000);
	if (mq_claim_move(p->d.newfd, name, p->d.curfd, e, 1, cur, len) < 0) {
		if (errno == ENOENT)
			return 0;
		return mq_err_sys("claim");
	}
	return 1;
}

/* The next committed, unclaimed name in the partition's listing, or NULL
 * (an uncommitted one ends the listing until the head moves). */
static const char *
next_candidate(struct part *p, struct mq_entry *e)
{
	while (p->pos < p->cand.n) {
		const char *name = p->cand.v[p->pos];
		uint64_t seq;
		if (mq_entry_parse(name, e) < 0 || e->claimed ||
		    mq_seq_of(name, &seq) < 0) {
			p->pos++;
			continue;
		}
		/* Not committed yet: neither is anything after it.  Until
		 * the head changes, more links from the same publish are no
		 * reason to look again. */
		if (seq >= p->committed) {
			p->pos = p->cand.n;
			p->await_commit = true;
			return NULL;
		}
		p->pos++;
		return name;
	}
	return NULL;
}

/* Ordered groups: only in a partition we own, the claim waiting in cur/
 * first, else the oldest of new/, and nothing while one is in flight. */
static int
try_claim_ordered(mq_sub *s, size_t i, struct mq_msg **out)
{
	struct part *p = &s->ps[i];
	char cur[MQ_KEY_LEN + 64];
	struct mq_entry e;
	for (;;) {
		int rc = mq_ordered_next(s, p, cur, sizeof cur, &e);
		if (rc < 0)
			return -1;
		if (rc == 2)
			return 0;
		if (rc == 0) {
			/* cur/ is empty: the oldest of new/. */
			if (p->resort && scan_new(p) < 0)
				return -1;
			const char *name = next_candidate(p, &e);
			if (!name)
				return 0;
			if ((rc = mq_owner_confirm(s, p)) <= 0)
				return rc;
			if ((rc = claim_new(s, p, name, &e, cur, sizeof cur)) < 0)
				return -1;
			if (rc == 0) {
				p->resort = true;
				continue;
			}
		}
		if (rc == 1 && (rc = deliver(s, i, cur, &e, out)) != 0) {
			/* cur/ holds our claim now: nothing to list till it
			 * is settled or its lease ends. */
			if (rc == 1)
				p->blocked_until = (double)e.deadline_ms / 1000;
			return rc;
		}
		p->cur_left = true;     /* settled unseen */
	}
}

static int
try_claim(mq_sub *s, size_t i, struct mq_msg **out)
{
	if (s->gc.ordered)
		return try_claim_ordered(s, i, out);
	struct part *p = &s->ps[i];
	char cur[MQ_KEY_LEN + 64];
	struct mq_entry e;
	const char *name;
	/* A claim whose records were all settled unseen (filtered out,
	 * not due, dead) is no delivery: the next one is taken at once, a
	 * few times over, rather than after a pass that a timed receive
	 * may not make. */
	int rc;
	for (int takes = 0; (rc = mq_sub_hand_out(s, i, out)) == 0 && p->taken &&
	    p->feed && p->pos >= p->cand.n && takes < 64; takes++)
		if (feed(s, p) < 0)
			return -1;
	if (rc != 0)
		return rc;
	while ((name = next_candidate(p, &e))) {
		rc = claim_new(s, p, name, &e, cur, sizeof cur);
		if (rc == 0)
			continue;
		if (rc < 0)
			return -1;
		if ((rc = deliver(s, i, cur, &e, out)) != 0)
			return rc;
	}
	return 0;
}

/* Reads pending inotify events and marks what they touched. */
static void
drain_events(mq_sub *s)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t r = read(s->ifd, buf, sizeof buf);
		if (r <= 0)
			return;
		for (char *q = buf; q < buf + r;) {
			struct inotify_event *ev = (struct inotify_event *)q;
			if (ev->wd == s->wd_topics)
				s->refresh = true;
			if (ev->wd == s->wd_members)
				s->rebalance = true;
			for (size_t i = 0; i < s->ntopics; i++)
				if (ev->wd == s->wd_topic[i])
					s->refresh = true;
			for (size_t k = 0; k < s->np; k++) {
				struct part *p = &s->ps[k];
				if (ev->mask & IN_Q_OVERFLOW) {
					p->scan_new = p->scan_cur = p->cur_left = true;
					p->scan_delay = p->resort = true;
					p->feed = p->cursorfd >= 0;
					s->refresh = s->rebalance = true;
				} else if (ev->wd == p->wd_head ||
				    ev->wd == p->wd_cursor) {
					/* A commit may make delayed names count; in
					 * format 2 a publish is what to feed. */
					p->scan_new = p->scan_delay = true;
					p->await_commit = false;
					p->feed |= ev->wd == p->wd_head &&
					    p->cursorfd >= 0;
				} else if (ev->wd == p->wd_new) {
					/* Links of a publish (IN_CREATE) count once
					 * it commits; returns (IN_MOVED_TO) now. */
					if (!p->await_commit || (ev->mask & IN_MOVED_TO))
						p->scan_new = true;
					if (ev->mask & IN_MOVED_TO)
						p->resort = true;
				} else if (ev->wd == p->wd_cur) {
					p->scan_cur = true;
					/* Ordered: a claim that left may unblock. */
					if (s->gc.ordered &&
					    (ev->mask & (IN_DELETE | IN_MOVED_FROM)) &&
					    !(ev->len && !strcmp(ev->name, p->settled)))
						p->scan_new = p->cur_left = true;
				} else if (ev->wd == p->wd_delay) {
					p->scan_delay = true;
				} else if (ev->wd == p->wd_own) {
					s->rebalance = true;
				}
			}
			q += sizeof *ev + ev->len;
		}
	}
}

/* Gives back expired leases and moves due delayed messages to new/, in
 * the partitions where something changed or came due (in every partition
 * when all is set); s->earliest becomes the next deadline or due time. */
static int
expire_leases(mq_sub *s, bool all)
{
	double now = mq_now();
	if (all)
		s->last_expire = mq_mono();
	s->earliest = INFINITY;
	for (size_t k = 0; k < s->np; k++) {
		struct part *p = &s->ps[k];
		if (s->gc.ordered) {
			/* The owner takes back what expires (ordered.c); we
			 * wake when the claim of a partition we own does. */
			p->earliest = p->owned && p->blocked_until > 0 ?
			    p->blocked_until : INFINITY;
			p->scan_cur = false;
		} else if (all || p->scan_cur || now >= p->earliest) {
			int n = expire_partition(s, p, now);
			if (n < 0)
				return -1;
			if (n > 0)
				p->scan_new = true;
			p->scan_cur = false;
		}
		if (all || p->scan_delay || now >= p->due) {
			int n = promote_due(p, now);
			if (n < 0)
				return -1;
			if (n > 0)
				p->scan_new = true;
		}
		s->earliest = fmin(s->earliest, fmin(p->earliest, p->due));
	}
	s->earliest = fmin(s->earliest, s->next_beat);
	return 0;
}

/* A busy consumer still looks at all of cur/ once a second, so a crashed
 * peer's claims come back even while messages keep flowing; and it counts
 * topics and partitions again. */
static int
expire_if_due(mq_sub *s)
{
	bool periodic = mq_mono() - s->last_expire >= 1.0;
	if ((periodic || s->refresh) && mq_sub_parts_refresh(s) < 0)
		return -1;
	if (mq_member_beat(s, s->rebalance) < 0)
		return -1;
	if (!periodic && mq_now() < s->earliest)
		return 0;
	return expire_leases(s, periodic);
}

/* Sleeps until something may have changed, until `until` (monotonic), or
 * until the earliest lease deadline; returns 1 when a signal or the wake
 * descriptor ended the sleep. */
static int
wait_for_change(mq_sub *s, double until)
{
	double wait = fmin(until - mq_mono(), s->earliest - mq_now());
	if (s->ifd < 0)
		wait = fmin(wait, s->poll);
	int ms = -1;
	if (isfinite(wait))
		ms = wait <= 0 ? 0 : (int)fmin(ceil(wait * 1000), 3.6e6);
	struct pollfd pfd[2] = {
		{ .fd = s->ifd, .events = POLLIN },
		{ .fd = s->wake_fd, .events = POLLIN },
	};
	int rc = poll(pfd, 2, ms);
	if (rc < 0)
		return errno == EINTR ? 1 : mq_err_sys("poll");
	if (pfd[1].revents)
		return 1;
	if (s->ifd >= 0) {
		drain_events(s);
	} else {
		for (size_t k = 0; k < s->np; k++) {
			s->ps[k].scan_new = s->ps[k].scan_cur = s->ps[k].cur_left =
			    s->ps[k].scan_delay = s->ps[k].resort = true;
			s->ps[k].feed = s->ps[k].cursorfd >= 0;
		}
		s->refresh = s->rebalance = true;
	}
	return 0;
}

/* Whether looking again could find something: a partition whose listing
 * is used up and that changed (one whose listing is not used up was
 * passed over on purpose: an ordered group's partition owned by another
 * member, or one whose claim is in flight; looking again would only spin,
 * and a poller that spins never sleeps to learn of the next change). */
static bool
any_scan(const mq_sub *s)
{
	bool again = s->refresh || (s->gc.ordered && s->rebalance);
	for (size_t k = 0; k < s->np; k++)
		again |= (s->ps[k].scan_new || s->ps[k].feed) &&
		    s->ps[k].pos >= s->ps[k].cand.n;
	return again;
}

int
mq_sub_receive(mq_sub *s, double timeout, struct mq_msg **out)
{
	double until = timeout < 0 ? INFINITY : mq_mono() + timeout;
	bool late_pass = false;
	for (;;) {
		if (expire_if_due(s) < 0)
			return -1;
		size_t np = s->np;
		for (size_t i = 0; i < np; i++) {
			size_t k = (s->rr + i) % np;
			struct part *p = &s->ps[k];
			/* Names first where the log is taken as claims: they
			 * are what came back, older than what the log holds
			 * next.  A feed's names are listed once it made them. */
			if (p->taken && p->pos >= p->cand.n && p->scan_new &&
			    scan_new(p) < 0)
				return -1;
			if (p->pos >= p->cand.n && p->feed && feed(s, p) < 0)
				return -1;
			if (p->pos >= p->cand.n && p->scan_new && scan_new(p) < 0)
				return -1;
			int rc = try_claim(s, k, out);
			if (rc != 0) {
				/* A claim's records are handed out before the
				 * next partition's are taken: one batch, one
				 * claim. */
				bool more = p->taken && p->taken->pos < p->taken->c.n;
				s->rr = (unsigned)((more ? k : k + 1) % np);
				if (rc == 1 && s->prefetch > 1)
					s->prefetch--;
				return rc;
			}
		}
		/* Nothing claimable: look at what changed, then sleep. */
		if (s->ifd >= 0)
			drain_events(s);
		bool again = any_scan(s);
		/* Past the deadline, one more look at what changed, no more:
		 * a busy publisher must not keep a timed call spinning. */
		if (mq_mono() >= until) {
			if (!again || late_pass)
				return 0;
			late_pass = true;
			continue;
		}
		if (again)
			continue;
		/* About to sleep: first give back leases that expired (a
		 * claim seen in cur/ is a lease to watch). */
		if (expire_leases(s, false) < 0)
			return -1;
		if (any_scan(s))
			continue;
		/* A signal ends the wait as a timeout would: the caller
		 * decides whether to stop. */
		int w = wait_for_change(s, until);
		if (w != 0)
			return w < 0 ? -1 : 0;
	}
}

int
mq_sub_ledger_fd(mq_sub *s, const struct mq_msg *m)
{
	return mq_sub_part(s, m)->donefd;
}

/* The claim's name now: another process (mq-ack --extend with the
 * receipt) may have renamed it since we made it. */
static int
refresh_claim(mq_sub *s, struct msg_priv *pv)
{
	char now[sizeof pv->cur];
	if (mq_claim_find(&s->ps[pv->part].d, pv->cur, now, sizeof now) < 0)
		return -1;
	memcpy(pv->cur, now, sizeof now);
	return 0;
}

/* Removes the claim, finding it under its new name if another process
 * extended it. */
static int
unlink_claim(mq_sub *s, const struct mq_msg *m, struct mq_jbuf *jb)
{
	struct msg_priv *pv = mq_sub_priv(m);
	struct part *p = mq_sub_part(s, m);
	int fd = p->d.curfd;
	if (mq_unlinkat(fd, pv->cur, 0) < 0) {
		if (errno != ENOENT)
			return mq_err_sys("ack");
		if (refresh_claim(s, pv) < 0 || mq_unlinkat(fd, pv->cur, 0) < 0)
			goto gone;
	}
	/* Journaled with the rest of the batch (best effort, as every
	 * change record: see mq_journal_change). */
	mq_journal_change_add(jb, p->t->name, 'A', p->k, s->group, pv->cur);
	mq_count_acked(s->sp, p->t->name, s->group, mq_now(),
	    mq_key_time(pv->cur));
	return 0;
gone:
	return mq_err(EX_NOINPUT, "message %s is no longer claimed (its lease "
	    "expired)", m->id);
}

/* In an exactly-once group the ledger entries go first and are made
 * durable, one sync per partition for the whole batch: once an entry is
 * there, a delivery of the same message is settled without being seen. */
int
mq_sub_ack_batch(mq_sub *s, struct mq_msg *const *m, size_t n)
{
	if (s->gc.exactly_once) {
		bool *touched = calloc(s->np ? s->np : 1, sizeof *touched);
		if (!touched)
			return mq_err_sys("malloc");
		int rc = 0;
		for (size_t i = 0; rc == 0 && i < n; i++) {
			rc = mq_ledger_add(mq_sub_part(s, m[i])->donefd, m[i]->id, 0);
			touched[mq_sub_priv(m[i])->part] = true;
		}
		for (size_t k = 0; rc == 0 && k < s->np; k++)
			if (touched[k])
				rc = mq_fsync_fd(s->ps[k].donefd);
		free(touched);
		if (rc < 0)
			return -1;
		/* Journaled before the acks, so that a replica has the
		 * entries whenever it has the acks (best effort, as every
		 * change record).  A record of a claim (format 2) has no
		 * name: its KEY. */
		struct mq_jbuf jb = { 0 };
		for (size_t i = 0; i < n; i++) {
			struct part *p = mq_sub_part(s, m[i]);
			char key[MQ_KEY_LEN + 1];
			const char *name = mq_sub_priv(m[i])->cur;
			if (mq_sub_priv(m[i])->claim[0]) {
				snprintf(key, sizeof key, "%0*" PRIu64 ".%s",
				    MQ_SEQ_DIGITS, m[i]->seq, m[i]->id);
				name = key;
			}
			mq_journal_change_add(&jb, p->t->name, 'E', p->k,
			    s->group, name);
		}
		mq_journal_write(s->sp, &jb, NULL);
		mq_jbuf_free(&jb);
	}
	int rc = mq_sub_settle_claimed(s, m, n);
	struct mq_jbuf jb = { 0 };
	for (size_t i = 0; i < n; i++) {
		struct part *p = mq_sub_part(s, m[i]);
		if (mq_sub_priv(m[i])->claim[0])
			continue;
		if (unlink_claim(s, m[i], &jb) < 0)
			rc = -1;
		p->cur_left = true;
		snprintf(p->settled, sizeof p->settled, "%s", mq_sub_priv(m[i])->cur);
	}
	if (n)
		mq_journal_write(mq_sub_part(s, m[0])->t->sp, &jb, NULL);
	mq_jbuf_free(&jb);
	return rc;
}

int
mq_sub_ack(mq_sub *s, const struct mq_msg *m)
{
	struct mq_msg *one = (struct mq_msg *)m;
	return mq_sub_ack_batch(s, &one, 1);
}

int
mq_sub_nack(mq_sub *s, const struct mq_msg *m, const struct mq_nack *how)
{
	struct msg_priv *pv = mq_sub_priv(m);
	struct part *p = mq_sub_part(s, m);
	if (pv->claim[0] && mq_sub_detach_claimed(s, m) < 0)
		return -1;
	int rc = mq_claim_return(p->t, p->k, s->group, &p->d, pv->cur, how,
	    &s->gc);
	if (rc < 0 && mq_errcode() == EX_NOINPUT && refresh_claim(s, pv) == 0)
		rc = mq_claim_return(p->t, p->k, s->group, &p->d, pv->cur, how,
		    &s->gc);
	if (rc == 0)
		p->scan_new = p->resort = p->cur_left = true;
	return rc;
}

int
mq_sub_reject(mq_sub *s, const struct mq_msg *m, const struct mq_nack *how)
{
	struct msg_priv *pv = mq_sub_priv(m);
	struct part *p = mq_sub_part(s, m);
	struct mq_why why = { "rejected", how ? how->detail : NULL,
	    how ? how->status : -1, how ? how->tail : NULL,
	    how ? how->tail_len : 0 };
	if (pv->claim[0] && mq_sub_detach_claimed(s, m) < 0)
		return -1;
	int rc = mq_claim_reject(p->t, p->k, s->group, &p->d, pv->cur, &why);
	p->cur_left = true;
	if (rc < 0 && mq_errcode() == EX_NOINPUT && refresh_claim(s, pv) == 0)
		rc = mq_claim_reject(p->t, p->k, s->group, &p->d, pv->cur, &why);
	return rc;
}

int
mq_sub_extend(mq_sub *s, struct mq_msg *m, double seconds)
{
	struct msg_priv *pv = mq_sub_priv(m);
	struct part *p = mq_sub_part(s, m);
	char cur[sizeof pv->cur];
	if (pv->claim[0]) {
		uint64_t deadline = (uint64_t)((mq_now() + seconds) * 1000);
		if (mq_claims_extend(p->cursorfd, p->claimsfd, pv->claim,
		    deadline) < 0)
			return -1;
		m->lease_deadline = (double)deadline / 1000;
		return mq_member_beat(s, false) < 0 ? -1 : 0;
	}
	if (mq_claim_extend(&p->d, pv->cur, seconds, cur, sizeof cur) < 0 &&
	    (mq_errcode() != EX_NOINPUT || refresh_claim(s, pv) < 0 ||
	    mq_claim_extend(&p->d, pv->cur, seconds, cur, sizeof cur) < 0))
		return -1;
	memcpy(pv->cur, cur, sizeof cur);
	struct mq_entry e;
	if (mq_entry_parse(cur, &e) == 0)
		m->lease_deadline = (double)e.deadline_ms / 1000;
	/* A long handler keeps its membership too. */
	if (mq_member_beat(s, false) < 0)
		return -1;
	return 0;
}
