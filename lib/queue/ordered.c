/*
 * ordered.c: group members, and ordered groups, where each partition has
 * one owner.
 *
 * Members: topics/<t>/groups/<g>.members/<member>,l<deadline ms>, an empty
 * file whose name a live member renews (renames) every third of the
 * session; a name past its deadline is a member that died or stalled.
 * Every consumer is a member, so mq-stat can count those alive; only in
 * an ordered group do members own partitions.
 * Owners: p<k>/g/<g>/own/ holds exactly one name, <member>,l<deadline ms>,
 * or "-,l0" when free.  Taking a partition is a rename of that one name:
 * of two contenders one wins, as with a claim.  A member takes only free
 * or expired tokens, renews its own, and gives back (renames to "-,l0")
 * those that the assignment now gives to another member.
 *
 * The assignment: every member lists the live members, sorts them, and
 * gives the i-th partition (topics by name, then partition number) to
 * member i mod n.  Members agree once they see the same list; until then
 * a partition may be wanted by two, but only one can hold its token.
 *
 * Order within a partition: its owner claims the oldest message and
 * nothing else until that one is settled.  A claim whose lease ran out,
 * or that was given back (nack), stays in cur/ (given back: with a new
 * token and its retry time as deadline), and the owner claims it again
 * there, by rename, before anything newer: the partition never skips a
 * message, and never has two in flight.  An owner checks its token before
 * each claim and claims only while the token has at least half a session
 * left, so a new owner (which must wait for the token to expire) cannot
 * claim alongside an old one unless that one stalls for half a session
 * between its check and its claim (mq-spool(5), ORDERED GROUPS).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <math.h>
#include <sys/inotify.h>

#include "sub.h"

#define MQ_OWNER_FREE "-,l0"

/* Makes own/ with its free token, unless it exists: built in the group's
 * tmp/ and renamed into place, so no one ever sees own/ without a token
 * or makes a second one. */
int
mq_owner_init(const struct mq_topic *t, unsigned k, const char *group)
{
	char p[MQ_NAME_MAX + 32], stage[MQ_NAME_MAX + 64], rnd[17];
	if (mq_path(p, sizeof p, "g/%s/own", group) < 0)
		return -1;
	if (mq_faccessat(t->pfd[k], p, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	mq_hex_random(rnd, 16);
	if (mq_path(stage, sizeof stage, "g/%s/tmp/own.%s", group, rnd) < 0 ||
	    mq_mkdir(t->pfd[k], stage) < 0)
		return -1;
	int dfd = mq_dir_open(t->pfd[k], stage), rc = dfd < 0 ? -1 : 0;
	int fd = dfd < 0 ? -1 : mq_file_open(dfd, MQ_OWNER_FREE, O_WRONLY |
	    O_CREAT, 0666, NULL);
	if (rc == 0 && fd < 0)
		rc = mq_errcode() == EX_DATAERR ? -1 :
		    mq_err_sys("ownership token");
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (rc == 0 && mq_renameat(t->pfd[k], stage, t->pfd[k], p) < 0 &&
	    !mq_name_taken(t->pfd[k], p, errno))
		rc = mq_err_sys("ownership token");
	mq_rmtree(t->pfd[k], stage);
	return rc;
}

/* Splits "<member>,l<deadline ms>" (a member file or an ownership token);
 * the member of a free token is "-". */
int
mq_owner_parse(const char *name, char *member, size_t len,
    uint64_t *deadline_ms)
{
	const char *l = strrchr(name, ',');
	char *end;
	if (!l || l == name || l[1] != 'l' || (size_t)(l - name) >= len)
		return -1;
	errno = 0;
	*deadline_ms = strtoull(l + 2, &end, 10);
	if (!l[2] || *end || errno)
		return -1;
	memcpy(member, name, (size_t)(l - name));
	member[l - name] = 0;
	return 0;
}

static uint64_t
now_ms(void)
{
	return (uint64_t)(mq_now() * 1000);
}

static uint64_t
session_ms(const mq_sub *s)
{
	return (uint64_t)(s->gc.session * 1000);
}

/* The member directory: of the topic's group, or of the wildcard
 * subscription. */
static int
members_dir(mq_sub *s)
{
	char p[2 * MQ_NAME_MAX + 64];
	int base = s->wildcard ? s->sp->fd : s->topics[0]->fd;
	if (s->wildcard ? mq_path(p, sizeof p, "wildcards/%s/%s.members",
	    s->name, s->group) : mq_path(p, sizeof p, "groups/%s.members",
	    s->group))
		return -1;
	if (mq_mkdir(base, p) < 0)
		return -1;
	return mq_dir_open(base, p);
}

static int
member_file(mq_sub *s)
{
	snprintf(s->member_name, sizeof s->member_name, "%s,l%llu", s->member,
	    (unsigned long long)(now_ms() + session_ms(s)));
	int fd = mq_file_open(s->membersfd, s->member_name, O_WRONLY | O_CREAT,
	    0666, NULL);
	if (fd < 0)
		return mq_errcode() == EX_DATAERR ? -1 :
		    mq_err_sys("join group %s", s->group);
	close(fd);
	return 0;
}

static int live_members(mq_sub *, struct mq_names *, uint64_t *);

int
mq_member_join(mq_sub *s)
{
	char host[MQ_HOST_MAX], rnd[9];
	mq_hostname(host);
	mq_hex_random(rnd, 8);
	snprintf(s->member, sizeof s->member, "%s.%ld.%s", rnd, (long)getpid(),
	    host);
	if ((s->membersfd = members_dir(s)) < 0 || member_file(s) < 0) {
		if (s->gc.ordered)
			return -1;
		/* In a shared group membership is only counted: a consumer
		 * that cannot write it consumes all the same, uncounted. */
		if (s->membersfd >= 0)
			close(s->membersfd);
		s->membersfd = -1;
		s->member_name[0] = 0;
		s->next_beat = INFINITY;
		return 0;
	}
	if (!s->gc.ordered) {
		/* Owning nothing, it reads the members only now, to remove
		 * those long dead (best effort, as the rest of it). */
		struct mq_names live = { 0 };
		uint64_t soonest = UINT64_MAX;
		live_members(s, &live, &soonest);
		mq_names_free(&live);
		s->next_beat = mq_now() + s->gc.session / 3;
		return 0;
	}
	if (s->ifd >= 0 && (s->wd_members = mq_watch(s->ifd, s->membersfd,
	    IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
	    IN_ONLYDIR)) < 0)
		return -1;
	s->rebalance = true;
	return 0;
}

/* The only name in own/ (0), or none (1). */
static int
token_read(struct part *p, char *name, size_t len)
{
	struct mq_names l = { 0 };
	if (mq_names_read(p->ownfd, NULL, &l) < 0)
		return -1;
	int rc = 1;
	if (l.n > 0)
		rc = mq_path(name, len, "%s", l.v[0]);
	mq_names_free(&l);
	return rc;
}

/* Renames our token to a new deadline (0 with "-": free).  Returns 1, or
 * 0 when it is no longer ours. */
static int
token_move(mq_sub *s, struct part *p, const char *member, uint64_t deadline)
{
	char from[MQ_MEMBER_MAX + 32], to[MQ_MEMBER_MAX + 32];
	snprintf(from, sizeof from, "%s,l%llu", s->member,
	    (unsigned long long)p->own_deadline);
	snprintf(to, sizeof to, "%s,l%llu", member,
	    (unsigned long long)deadline);
	if (mq_renameat(p->ownfd, from, p->ownfd, to) < 0) {
		p->owned = false;
		return errno == ENOENT ? 0 : mq_err_sys("ownership token");
	}
	p->owned = *member != '-';
	p->own_deadline = deadline;
	return 1;
}

void
mq_member_leave(mq_sub *s)
{
	for (size_t i = 0; i < s->np; i++)
		if (s->ps[i].owned)
			token_move(s, &s->ps[i], "-", 0);
	if (s->membersfd >= 0) {
		if (*s->member_name)
			mq_unlinkat(s->membersfd, s->member_name, 0);
		close(s->membersfd);
		s->membersfd = -1;
	}
}

/* Checks, just before a claim, that we own the partition with half a
 * session to spare, renewing the token if need be: 1 yes, 0 no. */
int
mq_owner_confirm(mq_sub *s, struct part *p)
{
	if (!p->owned)
		return 0;
	uint64_t now = now_ms();
	if (p->own_deadline >= now + session_ms(s) / 2)
		return 1;
	if (p->own_deadline <= now) {
		/* Expired: someone may have it now; only a rename can tell. */
		s->rebalance = true;
	}
	int rc = token_move(s, p, s->member, now + session_ms(s));
	if (rc == 0)
		s->rebalance = true;
	return rc;
}

static int
by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const struct part *sort_parts_base;

static int
by_topic_partition(const void *a, const void *b)
{
	const struct part *x = &sort_parts_base[*(const size_t *)a];
	const struct part *y = &sort_parts_base[*(const size_t *)b];
	int c = strcmp(x->t->name, y->t->name);
	return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* The live members, sorted (names without deadlines), in *live; removes
 * the names of members long dead; *next gets the earliest deadline. */
static int
live_members(mq_sub *s, struct mq_names *live, uint64_t *next)
{
	struct mq_names l = { 0 };
	if (mq_names_read(s->membersfd, NULL, &l) < 0)
		return -1;
	uint64_t now = now_ms();
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		char member[MQ_MEMBER_MAX];
		uint64_t dl;
		if (mq_owner_parse(l.v[i], member, sizeof member, &dl) < 0)
			continue;
		if (dl <= now) {
			if (dl + 10 * session_ms(s) < now)
				mq_unlinkat(s->membersfd, l.v[i], 0);
			continue;
		}
		if (dl < *next)
			*next = dl;
		rc = mq_names_push(live, member, strlen(member));
	}
	mq_names_free(&l);
	if (rc == 0)
		qsort(live->v, live->n, sizeof *live->v, by_string);
	return rc;
}

/* Takes, keeps or gives back partition p as the assignment says. */
static int
settle_owner(mq_sub *s, struct part *p, bool mine, uint64_t *next)
{
	char name[MQ_MEMBER_MAX + 32], member[MQ_MEMBER_MAX];
	uint64_t dl, now = now_ms();
	int rc = token_read(p, name, sizeof name);
	if (rc < 0)
		return -1;
	if (rc == 1 || mq_owner_parse(name, member, sizeof member, &dl) < 0) {
		p->owned = false;
		return 0;
	}
	if (!strcmp(member, s->member)) {
		p->owned = true;
		p->own_deadline = dl;
		if (!mine)
			return token_move(s, p, "-", 0) < 0 ? -1 : 0;
		if (dl < now + 2 * session_ms(s) / 3)
			return token_move(s, p, s->member, now + session_ms(s)) < 0 ?
			    -1 : 0;
		return 0;
	}
	p->owned = false;
	if (!mine)
		return 0;
	if (strcmp(member, "-") && dl > now) {
		if (dl < *next)
			*next = dl;     /* ours once it expires */
		return 0;
	}
	char to[MQ_MEMBER_MAX + 32];
	snprintf(to, sizeof to, "%s,l%llu", s->member,
	    (unsigned long long)(now + session_ms(s)));
	if (mq_renameat(p->ownfd, name, p->ownfd, to) < 0)
		return errno == ENOENT ? 0 : mq_err_sys("ownership token");
	p->owned = true;
	p->own_deadline = now + session_ms(s);
	/* What the last owner left: look at all of it afresh. */
	p->scan_new = p->resort = p->cur_left = true;
	return 0;
}

int
mq_member_beat(mq_sub *s, bool force)
{
	double now = mq_now();
	if (!force && now < s->next_beat)
		return 0;
	if (s->membersfd < 0)           /* a shared group's, uncounted */
		return 0;
	s->rebalance = false;
	/* Renew our membership; a member thought dead joins again. */
	char old[sizeof s->member_name];
	memcpy(old, s->member_name, sizeof old);
	snprintf(s->member_name, sizeof s->member_name, "%s,l%llu", s->member,
	    (unsigned long long)(now_ms() + session_ms(s)));
	if (mq_renameat(s->membersfd, old, s->membersfd, s->member_name) < 0 &&
	    (errno != ENOENT || member_file(s) < 0)) {
		/* A shared group's is only counted: try again later. */
		if (s->gc.ordered)
			return mq_err_sys("renew membership");
	}
	uint64_t next = now_ms() + session_ms(s) / 3;
	if (!s->gc.ordered) {           /* a member, owning nothing */
		s->next_beat = (double)next / 1000;
		return 0;
	}
	struct mq_names live = { 0 };
	size_t *order = calloc(s->np ? s->np : 1, sizeof *order);
	int rc = order ? live_members(s, &live, &next) : mq_err_sys("malloc");
	size_t me = 0;
	for (size_t i = 0; i < live.n; i++)
		if (!strcmp(live.v[i], s->member))
			me = i;
	for (size_t i = 0; i < s->np; i++)
		order[i] = i;
	sort_parts_base = s->ps;
	if (order)
		qsort(order, s->np, sizeof *order, by_topic_partition);
	for (size_t i = 0; rc == 0 && i < s->np; i++) {
		bool mine = live.n == 0 || i % live.n == me;
		rc = settle_owner(s, &s->ps[order[i]], mine, &next);
	}
	free(order);
	mq_names_free(&live);
	s->next_beat = (double)next / 1000;
	return rc;
}

/* The claim waiting in cur/ of an owned partition: 0 none (claim the
 * oldest of new/), 1 claimed again as cur (deliver it), 2 in flight or
 * not yet due (wait), 3 dead-lettered (look again). */
int
mq_ordered_next(mq_sub *s, struct part *p, char *cur, size_t len,
    struct mq_entry *e)
{
	if (!p->owned)
		return 2;
	if (!p->cur_left && mq_now() < p->blocked_until)
		return 2;
	p->cur_left = false;
	p->blocked_until = 0;
	struct mq_names l = { 0 };
	if (mq_names_reread(p->curdir, NULL, &l) < 0) {
		mq_names_free(&l);
		return -1;
	}
	const char *first = NULL;
	for (size_t i = 0; i < l.n; i++) {
		struct mq_entry x;
		if (mq_entry_parse(l.v[i], &x) == 0 && x.claimed &&
		    (!first || strcmp(l.v[i], first) < 0)) {
			first = l.v[i];
			*e = x;
		}
	}
	int rc = 0;
	if (!first)
		goto out;
	rc = 2;
	if (e->deadline_ms > now_ms()) {
		p->blocked_until = (double)e->deadline_ms / 1000;
		goto out;
	}
	if ((rc = mq_owner_confirm(s, p)) <= 0) {
		rc = rc < 0 ? -1 : 2;
		goto out;
	}
	if (s->gc.max_attempts && mq_entry_failures(e) >= s->gc.max_attempts) {
		struct mq_why why = { "max-attempts", "lease expired", -1,
		    NULL, 0 };
		rc = mq_dlq_put(p->t, p->k, s->group, p->d.curfd, first, e,
		    &why) < 0 && mq_errcode() != EX_NOINPUT ? -1 : 3;
		goto out;
	}
	e->attempts++;
	e->deadline_ms = (uint64_t)((mq_now() + s->lease) * 1000);
	rc = mq_claim_move(p->d.curfd, first, p->d.curfd, e, 1, cur, len) == 0 ?
	    1 : errno == ENOENT ? 2 : mq_err_sys("claim");
out:
	mq_names_free(&l);
	return rc;
}
