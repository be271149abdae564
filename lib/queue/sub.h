/*
 * sub.h: a subscription's state, shared by consume.c (claiming and
 * waiting), subparts.c (which topics and partitions it reads) and
 * ordered.c (members and partition owners of ordered groups).
 */
#ifndef MQ_SUB_H
#define MQ_SUB_H

#include "queue.h"

/* One partition of one topic, as this subscription reads it. */
struct part {
	struct mq_topic *t;
	unsigned k;
	struct mq_gdirs d;              /* new/, cur/ and delay/ */
	int hfd;
	int donefd;                     /* the exactly-once ledger, or -1 */
	int logfd;                      /* log/ of a topic with roles, or -1 */
	DIR *newdir, *curdir, *delaydir; /* their listings */
	int wd_new, wd_cur, wd_head, wd_delay;
	struct mq_names cand;           /* sorted names of new/ at last scan */
	size_t pos;
	uint64_t committed;
	bool scan_new, scan_cur;
	bool await_commit;              /* saw an uncommitted name in new/ */
	bool resort;                    /* new/ got a name older than cand's */
	double earliest;                /* earliest lease deadline in cur/ */
	bool scan_delay;
	double due;                     /* earliest due time in delay/ */
	/* Ordered groups: the ownership token, and what the last listing of
	 * cur/ found: a claim not due before blocked_until.  Until then it
	 * is listed again only once a claim left cur/ (cur_left). */
	double blocked_until;
	bool cur_left;
	char settled[MQ_KEY_LEN + 64];  /* our last ack here: its event is old news */
	int ownfd, wd_own;
	bool owned;
	uint64_t own_deadline;          /* ms, of our token when owned */
	/* Format 2: the group's cursor (-1: format 1), whether a feed may
	 * find records past it, and the group's filter (feed.c). */
	int cursorfd, wd_cursor;
	bool feed;
	mq_filter *filter;
	/* Format 2, a group that is not ordered: its claims/ and the
	 * claim being handed out (claims.c); else -1 and NULL. */
	int claimsfd;
	struct mq_taken *taken;
};

/* The exactly-once ledger (done/) of m's partition, or -1. */
int mq_sub_ledger_fd(mq_sub *, const struct mq_msg *m);

/* A message whose handler failed, kept claimed (handle.c). */
struct mq_held {
	struct mq_msg *m;
	struct mq_nack how;
	struct mq_handler_result r;
};

struct mq_sub {
	mq_spool *sp;
	char *name;                     /* the topic, or the wildcard pattern */
	bool wildcard;
	struct mq_topic **topics;
	size_t ntopics;
	char *group;
	struct mq_group_conf gc;        /* the group's settings */
	double lease, poll;
	int ifd;
	int wd_topics;                  /* wildcard: topics/ (new topics) */
	int *wd_topic;                  /* per topic: its directory (alter) */
	struct part *ps;
	size_t np;
	unsigned rr;
	double earliest;                /* earliest deadline, of everything */
	double last_expire;             /* when cur/ was last looked at (mono) */
	double last_refresh;            /* when partitions were counted (mono) */
	bool refresh;                   /* topics or partitions may have grown */
	int wake_fd;                    /* readable: stop waiting */
	double grace;
	struct mq_sub_opts opts;
	/* Ordered groups: this member. */
	int membersfd, wd_members;
	char member[MQ_MEMBER_MAX];
	char member_name[MQ_MEMBER_MAX + 32];
	double next_beat;               /* wall clock */
	bool rebalance;                 /* members or owners changed */
	unsigned prefetch;              /* records a claim takes at most: what
					   the caller said it takes in a row,
					   less what it took since */
	struct mq_held *held;           /* failures kept claimed (handle.c) */
	size_t nheld, capheld;
};

/* subparts.c */
int mq_sub_parts_open(mq_sub *);
int mq_sub_parts_refresh(mq_sub *);
void mq_sub_parts_close(mq_sub *);

/* ordered.c */
int mq_member_join(mq_sub *);
void mq_member_leave(mq_sub *);
int mq_member_beat(mq_sub *, bool force);
int mq_owner_confirm(mq_sub *, struct part *);
int mq_ordered_next(mq_sub *, struct part *, char *cur, size_t len,
    struct mq_entry *e);

static inline struct msg_priv *
mq_sub_priv(const struct mq_msg *m)
{
	return m->priv;
}

static inline struct part *
mq_sub_part(mq_sub *s, const struct mq_msg *m)
{
	return &s->ps[mq_sub_priv(m)->part];
}

/* subclaims.c: format 2's claims as a subscription takes and hands them
 * out.  take: 1 when it took a batch, 0 when the log had none, -2 when
 * the file system has no room for a claim (feed names instead), -1.
 * hand_out: 1 with *out, 0 when the partition's claim is handed out.
 * release_taken gives back, as never handed out, what this consumer took
 * and did not hand out (a stop between two receives).  settle_claimed
 * acks the records of claims among m, a claim at a time; those no longer
 * claimed (their lease expired and they were taken back) are EX_NOINPUT.
 * detach_claimed makes m a claim of its own in cur/, for what only such
 * a claim can do: be given back, rejected.  dead_unseen dead-letters the
 * claim cur/CUR unseen, the error being the detail: 0, the caller looks
 * for another message. */
int mq_sub_take(mq_sub *, struct part *);
int mq_sub_hand_out(mq_sub *, size_t i, struct mq_msg **out);
void mq_sub_release_taken(mq_sub *);
int mq_sub_settle_claimed(mq_sub *, struct mq_msg *const *m, size_t n);
int mq_sub_detach_claimed(mq_sub *, const struct mq_msg *m);
int mq_sub_dead_unseen(mq_sub *, struct part *, const char *cur,
    const struct mq_entry *, const char *reason);

/* consume.c */
/* Frees a subscription that holds no message (mq_sub_close gives back
 * what it holds first). */
void mq_sub_free(mq_sub *);
int mq_part_watch(mq_sub *, struct part *);

#endif
