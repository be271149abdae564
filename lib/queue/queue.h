/*
 * queue.h: topics, partitions and groups, and what is done with them:
 * publish, claim, settle, ordered groups, wildcards, dead letters,
 * filters, signatures and sealed bodies.  Calls base/ only.
 */
#ifndef MQ_QUEUE_H
#define MQ_QUEUE_H

#include "base.h"

/* sealkeys.c: makes a topic's keys those of a replication peer's keys file
 * (text): 1 if they changed, 0 if they were those; EX_DATAERR for a file
 * no tool writes, EX_CONFIG if a group has a jq filter. */
int mq_topic_keys_adopt(mq_spool *, const char *topic, const char *text,
    size_t len);

/* topic.c: an open topic. */
struct mq_signers;
struct mq_roots;
struct mq_topic {
	mq_spool *sp;
	char *name;
	int fd;
	struct mq_topic_conf conf;
	int *pfd;                            /* partition directories */
	struct mq_signers *signers;          /* signers.c, read on first use */
	struct mq_roots *roots;              /* sign.c: chunk signatures verified */
	struct mq_seglog *seglog;            /* format 2: each partition's log
	                                      * reader (msgread.c) */
	ino_t conf_ino;                      /* topic.conf's inode when read:
	                                      * mq_topic_format_now */
};
/* Opens a topic that exists (EX_NOINPUT when it does not) of format 1;
 * mq_topic_open_as opens one of the formats given (EX_UNAVAILABLE for
 * another: what does not handle format 2 yet refuses it, naming it). */
#define MQ_FORMAT1 2
#define MQ_FORMAT2 4
#define MQ_FORMAT_ANY (MQ_FORMAT1 | MQ_FORMAT2)
int mq_topic_open(mq_spool *, const char *name, struct mq_topic *);
/* 0 while the topic is of the format it was opened in; EX_TEMPFAIL once
 * an upgrade (upgrade.c) switched it: one stat of topic.conf, a read of it
 * only when it was replaced since. */
int mq_topic_format_now(struct mq_topic *);
int mq_topic_open_as(mq_spool *, const char *name, int formats,
    struct mq_topic *);
void mq_topic_close(struct mq_topic *);
/* fn on each partition of each topic of format 2 (one deleted meanwhile
 * passed over), until it returns other than 0. */
int mq_partitions2_each(mq_spool *, int (*fn)(const struct mq_topic *,
    unsigned k, void *ctx), void *ctx);
int mq_topic_conf_parse(const struct mq_conf *, struct mq_topic_conf *);
int mq_groups_read(const struct mq_topic *, struct mq_names *);
int mq_group_names_read(int dirfd, struct mq_names *);
int mq_lock_all(const struct mq_topic *, int *fds);
void mq_unlock_all(const struct mq_topic *, int *fds);
int mq_partition_build(int tfd, unsigned k, const char *place,
    const struct mq_roles *, unsigned format);
/* The configuration and partition count as topic.conf says now (an alter
 * may have replaced it since the topic was opened). */
int mq_topic_partitions_now(const struct mq_topic *, unsigned *n);
int mq_topic_conf_now(const struct mq_topic *, struct mq_topic_conf *);
/* Replaces topic.conf with what edit makes of it (the caller holds every
 * partition's lock, as alters do). */
int mq_topic_conf_edit(const struct mq_topic *,
    int (*edit)(struct mq_conf *, const void *), const void *ctx);

/* create.c: EX_UNAVAILABLE, naming topic, where fd's file system keeps
 * locks within one mount (sshfs): a group of format 2 feeds under its
 * cursor's lock, which would not keep two hosts apart there; else 0. */
int mq_format2_refused(int fd, const char *topic);
/* create.c: a topic opened, made first when create (MQ_CREATE, with
 * MQ_FORMAT1 and MQ_FORMAT2 the formats taken: none is format 1) and it
 * does not exist (mq_topic_create: it joins matching wildcard
 * subscriptions). */
int mq_topic_open_or_create(mq_spool *, const char *name, int create,
    struct mq_topic *);

/* place.c: placed partitions, and removing a topic's tree. */
int mq_places_check(const char *const *place, unsigned from, unsigned n);
int mq_place_make(int tfd, const char *name, const char *dir);
int mq_partition_remove(int tfd, const char *name);
/* Removes p<k> of the topic directory tfd for k >= from: an interrupted
 * alter's leftovers. */
int mq_partitions_remove_from(int tfd, unsigned from);
int mq_topic_tree_remove(int dirfd, const char *path);

/* seglog.c: a partition's log of segments (format 2, mq-spool(5),
 * SEGMENTED STORAGE).  mq_seglog_end moves *c (the head's committed, a
 * hint) past every segment linked at it: the log's end. */
int mq_seglog_end(int logfd, uint64_t *c);
/* The first line of segment log/NAME, checked against its name (first);
 * st, if not NULL, gets the file's stat. */
int mq_seglog_line(int logfd, const char *name, uint64_t first,
    struct mq_seg *, struct stat *st);
struct mq_seglog {
	int logfd;                      /* log/, not owned */
	uint64_t *first;                /* log/ as last listed, sorted */
	size_t n;
	char *data;                     /* the segment loaded, whole */
	size_t cap;
	struct mq_seg seg;
	bool loaded;
	size_t off;                     /* the next record's */
	uint64_t prev, want;            /* the last record read, and the next
	                                 * one handed out */
	size_t *roff;                   /* where records 0 .. nroff - 1 of the
	                                 * loaded segment start, as read */
	size_t nroff, roffcap;
};
void mq_seglog_init(struct mq_seglog *, int logfd);
void mq_seglog_free(struct mq_seglog *);
/* Positions at seq: 1 when a segment holds it, 0 when none does (not
 * published yet, or removed). */
int mq_seglog_seek(struct mq_seglog *, uint64_t seq);
/* The next record from there into *seq and *r (pointing into the
 * segment, valid until the next seek): 1; 0 at its segment's end (seek
 * again to go on); -1 when the segment is damaged (EX_DATAERR). */
int mq_seglog_next(struct mq_seglog *, uint64_t *seq, struct mq_seg_rec *);
/* Whether no segment holds seq (gone with retention, or numbers a
 * head skipped: dead letters imported, a head set past them): 1 with
 * *next the first sequence number above it that one starts at
 * (UINT64_MAX: none), 0 one holds it. */
int mq_seglog_gap(struct mq_seglog *, uint64_t seq, uint64_t *next);
/* The sequence number below end of the record whose Message-Id is id:
 * 1 with *seq, 0 none; every segment read (mq-stat --message). */
int mq_seglog_find_id(struct mq_seglog *, uint64_t end, const char *id,
    uint64_t *seq);
/* Partition k's reader, kept with the topic (opened on first use; NULL
 * with the error when log/ does not open). */
struct mq_seglog *mq_topic_seglog(const struct mq_topic *, unsigned k);
/* The end of partition k's log, from hint (the head's committed). */
int mq_topic_log_end(const struct mq_topic *, unsigned k, uint64_t hint,
    uint64_t *end);
/* The records in log/ from from below end, their bytes (a segment
 * partly in range by its share) and, if low is not NULL, the first of
 * them (UINT64_MAX: none): one first line read per segment. */
int mq_seglog_totals(int logfd, uint64_t from, uint64_t end,
    uint64_t *records, uint64_t *bytes, uint64_t *low);


/* seglink.c: segment bytes written at tmp/TMP (a KEY), synced when
 * asked, then linked at log/NAME, the commit point: 0, 1 when the name
 * existed (tmp/TMP removed), -1; sync: the directory too.  link_name
 * links alone: tmp/TMP stays for the caller to remove once the
 * directory is synced. */
int mq_seg_write_tmp(int tmpfd, const char *tmp, const void *buf,
    size_t len, bool sync);
int mq_seg_link(int tmpfd, const char *tmp, int logfd, const char *name,
    bool sync);
int mq_seg_link_name(int tmpfd, const char *tmp, int logfd,
    const char *name);

/* logship.c: partition k's log sent to a peer and received from one
 * (format 2).  export builds in w (begun by the caller) a segment of the
 * records from *from (moved past what no segment holds) below end, each
 * as it is, at most max of them (1 to 1024, and 4 KiB each, one larger
 * record alone; 0: 1024): 1 with one, 0 none, 2 when the segment holding *from does not
 * parse (not sent: *from is moved to the next one).  import checks a
 * segment whole, then links what the log lacks at its head (a gap
 * skipped), under the head's lock: *out what it did; records held here
 * with other bytes are counted, kept as they are here. */
int mq_log_export(const struct mq_topic *, unsigned k, uint64_t *from,
    uint64_t end, unsigned max, struct mq_seg_writer *w);
struct mq_log_import {
	uint64_t end;                   /* the log's end after it */
	uint32_t linked;                /* records added */
	uint32_t conflicts;             /* held here with other bytes */
};
int mq_log_import(const struct mq_topic *, unsigned k, const char *data,
    size_t len, bool sync, struct mq_log_import *);
/* Segments received one after another for partition k, imported under
 * one lock and made durable together: each piece's bytes written into
 * tmp/, all of them synced at once, then linked and the directory
 * synced once (a piece that does not follow the one before is linked
 * after those before it are).  Every piece is checked before anything
 * is touched: one that does not parse fails the call and changes
 * nothing.  Returns how many times it made pieces durable, or -1. */
struct mq_log_piece {
	const char *data;
	size_t len;
	struct mq_log_import out;       /* what became of it */
};
int mq_log_import_many(const struct mq_topic *, unsigned k,
    struct mq_log_piece *v, size_t n, bool sync);
/* The Message-Id of the record before end: 1 with it, 0 when there is
 * none (end 0, a gap, a record without a readable id).  A sender checks
 * it against the receiver's: two logs that went apart are never mixed. */
int mq_log_tail_id(const struct mq_topic *, unsigned k, uint64_t end,
    char id[MQ_ID_LEN + 1]);
/* Where partition k's log ends: its head's committed, followed. */
int mq_log_end(const struct mq_topic *, unsigned k, uint64_t *end);
/* ",ID" appended to buf (len bytes): the Message-Id of the record before
 * end, "-" for none (mq_jarg_id), which a K or C record ends with. */
void mq_log_id_append(const struct mq_topic *, unsigned k, uint64_t end,
    char *buf, size_t len);

/* logcut.c: partition k of format 2 cut back to at (demote, mq-protocol(5),
 * Epochs): log cut removes its segments from at on and cuts the one that
 * goes past it, under the head's lock, the head at at after (refused,
 * EX_TEMPFAIL, when the log went past upto meanwhile); group cut removes
 * a group's names and claims of records from at on (shortening one that
 * goes past it) and brings its cursor down to at, under its lock. */
int mq_log_cut(const struct mq_topic *, unsigned k, uint64_t at,
    uint64_t upto);
int mq_group_cut(const struct mq_topic *, unsigned k, const char *group,
    uint64_t at);

/* segmerge.c: small segments of partition k below committed merged
 * into one, when the log holds enough of them and no one else merges. */
int mq_seg_merge(const struct mq_topic *, unsigned k, uint64_t committed);

/* segrepair.c: a partition of format 2 repaired under its lock: its head
 * brought to its log's end, and what a publish that died before its
 * commit point left (tmp/ names, dedup entries) removed. */
int mq_seg_repair_locked(const struct mq_topic *, unsigned k, int hfd,
    struct mq_head *);

/* repair.c */
int mq_partition_repair_locked(const struct mq_topic *, unsigned k, int hfd,
    struct mq_head *);
int mq_partition_repair_try(const struct mq_topic *, unsigned k);

/* group.c */
int mq_group_conf_read(const struct mq_topic *, const char *group,
    struct mq_conf *);
int mq_group_backfill(const struct mq_topic *, const char *group);
int mq_group_settings(const struct mq_topic *, const char *group,
    struct mq_group_conf *);
int mq_group_conf_parse(const struct mq_conf *, struct mq_group_conf *);
int mq_group_conf_render(const struct mq_topic *, const struct mq_group_conf *,
    const uint64_t *start, const char *pattern, char **out);
/* A group's conf as a replication peer sent it (text, len bytes; path
 * names it in errors): parsed into *kv and *c, its filter compiled (one
 * that does not would stop every publish into the topics the group is
 * in: EX_DATAERR "where: why").  *kv is freed on failure. */
int mq_group_conf_adoptable(const char *text, size_t len, const char *path,
    const char *where, struct mq_conf *kv, struct mq_group_conf *c);
/* A group as a replication peer sent it (replrecv.c). */
int mq_group_adopt(mq_spool *, const char *topic, const char *group,
    const char *text, size_t len);
/* Subscribes group to a topic that exists; a group made for a wildcard
 * subscription names its pattern.  Unsubscribing and asking, of one
 * topic (subscribe.c takes patterns too). */
int mq_group_subscribe_as(mq_spool *, const char *topic, const char *group,
    const struct mq_group_conf *, const char *pattern);
int mq_group_topic_unsubscribe(mq_spool *, const char *topic,
    const char *group);
int mq_group_topic_exists(mq_spool *, const char *topic, const char *group);
int mq_group_dirs_make(const struct mq_topic *, unsigned k, const char *group,
    int ordered);

/* jqlex.c: whether a jq filter's text may be run: -1 (EX_USAGE, the
 * error naming it) when it calls what reads or shows anything but its
 * message; else 0, and broken[0] is 0 when the text is whole (its
 * brackets balance, no string is left open), else says why not. */
int mq_jqlex_check(const char *expr, char *broken, size_t size);

/* filter.c: a message as filters see it; the body is parsed (as JSON)
 * at most once, by the first jq program that needs it.  Zero parsed and
 * json; mq_fmsg_done frees what evaluating kept. */
struct mq_fmsg {
	const char *key;
	const struct mq_header *headers;
	size_t nheaders;
	const void *body;
	size_t len;
};
/* match[i]: whether message m[i] of n passes the filter. */
int mq_filter_eval(mq_filter *, const struct mq_fmsg *m, size_t n,
    bool *match);
bool mq_filter_has_jq(const mq_filter *);
/* A group conf's filter, as publishers run it.  One jqlex.c refuses (or
 * whose text is not whole and that compiles) is kept but never run: it
 * matches nothing, and the first mq_filter_eval says so on stderr. */
int mq_filter_from_conf(const struct mq_conf *, const char *what,
    mq_filter **out);
/* The filter of a group conf (its keys in kv) passes mq_filter_check:
 * 0, or -1 (78). */
int mq_filter_conf_check(const struct mq_conf *, const char *what);
/* jqrun.c: a jq program compiled and run in a worker process, bounded by
 * MQ_FILTER_TIMEOUT and MQ_FILTER_MEMORY.  A zeroed struct has no worker;
 * program (the caller's, kept while the struct is used), n and what are
 * the caller's to set before a run. */
struct mq_jqrun {
	const char *program;
	size_t n;                           /* 0: one program, else a set's */
	const char *what;                   /* whose filter, for errors */
	pid_t pid;                          /* the worker; 0: none */
	int fd;
	char *reply;
};
enum { MQ_JQ_OK, MQ_JQ_NOT_JSON, MQ_JQ_NOT_ARRAY, MQ_JQ_BROKE };
/* Starts the worker, unless it runs, and waits for its compile: 0;
 * MQ_JQ_BROKE when the compile broke a bound (the error says which); -1
 * when no worker could be started or the program does not compile
 * (EX_USAGE, "bad filter: " and jq's message). */
int mq_jqrun_start(struct mq_jqrun *);
/* Runs the program on each of n bodies; st[i] says how it went with body
 * i: MQ_JQ_OK with out[i * k .. i * k + k) the truthiness of its output
 * (k = max(n, 1) of the struct), MQ_JQ_NOT_JSON (the body is not one
 * JSON value), MQ_JQ_NOT_ARRAY (a set's output is not its array: one of
 * its programs halted), or MQ_JQ_BROKE (it ran past a bound or jq died:
 * the error says which; a compile that does so leaves every body so).
 * -1 when no worker could be started. */
struct iovec;
int mq_jqrun_eval(struct mq_jqrun *, const struct iovec *body, size_t n,
    bool *out, int *st);
void mq_jqrun_stop(struct mq_jqrun *);
double mq_filter_timeout(void);

/* The jq filters of several groups, run as one program. */
struct mq_filterset {
	char *program;
	mq_filter **f;                      /* its filters, in program order */
	size_t n;
	struct mq_jqrun run;
};
int mq_filterset_use(struct mq_filterset *, mq_filter *const *f, size_t n);
int mq_filterset_eval(struct mq_filterset *, mq_filter *const *f, size_t nf,
    const struct mq_fmsg *m, size_t n, bool *out);
void mq_filterset_free(struct mq_filterset *);

/* ordered.c: members and partition owners of ordered groups. */
#define MQ_MEMBER_MAX 128
int mq_owner_init(const struct mq_topic *, unsigned k, const char *group);
int mq_owner_parse(const char *name, char *member, size_t len,
    uint64_t *deadline_ms);

/* gc.c: temporary files left behind (mq-spool(5), Retention). */
bool mq_tmp_stale(int dirfd, const char *name, double now);
uint64_t mq_tmp_count_stale(int dirfd, bool any_name, double now);

/* dlq.c */
struct mq_why {
	const char *reason;                 /* unreadable, max-attempts, ... */
	const char *detail;                 /* one line, or NULL */
	int status;                         /* handler exit status, or -1 */
	const char *tail;                   /* handler's stderr tail */
	size_t tail_len;
};
int mq_dlq_put(const struct mq_topic *, unsigned k, const char *group,
    int curfd, const char *curname, const struct mq_entry *,
    const struct mq_why *);

/* settle.c: a group's directories in one partition, and giving back,
 * rejecting, finding and extending claims.  mq_group_held: the KEYs the
 * group holds in the partition pfd (new/, cur/, delay/), added to keys,
 * sorted. */
int mq_group_held(int pfd, const char *group, struct mq_names *keys);
struct mq_gdirs {
	int newfd, curfd, delayfd;
	const char *group;              /* mq_gdirs_open's, not owned */
};
int mq_gdirs_open(const struct mq_topic *, unsigned k, const char *group,
    struct mq_gdirs *);
void mq_gdirs_close(struct mq_gdirs *);
/* claims.c: a group's claims in partition k of format 2 (claims/, one
 * file per batch handed out; see the file).  Every call that changes one
 * takes the cursor's lock (cursorfd).  open: the directory, made when
 * create, else -2 when there is none.  end raises *end to the end of the
 * last claim (repair, under the lock: removing one its taker died making);
 * group_end the same for a group's, none when it has no claims/.  create makes one (under the lock), passed at once when
 * it is settled whole.  settle sets the bits of seqs (refused past the lease when
 * refuse_expired): how many it set.  held: 0 when the claim is there,
 * its lease not over and record seq not settled, else -1 (EX_NOINPUT).
 * detach gives each record of seqs not
 * settled a name, new/KEY (attempt 0) or its cur/ name of attempt 1 with
 * the claim's lease and token (names into out if not NULL, "" for one
 * settled already), synced, then sets its bit: how many; with expired_by, only
 * when the lease is over by then.  ids may be NULL: read from the log.
 * expire detaches into cur/ what claims whose lease is over hold, and
 * lowers *earliest to the next deadline.  settle_below settles every
 * record below a sequence number (a commit), listed into *seqs (free it).
 * count: for read-only tools, without the lock; in: 0 no claim holds
 * seq, 1 one holds it unsettled (its lease's end into *deadline), 2
 * settled. */
struct mq_claims_count {
	uint64_t end, inflight, low;
	size_t n;
	double earliest;
};
int mq_claims_open(const struct mq_topic *, unsigned k, const char *group,
    int create);
int mq_claims_end(int claimsfd, int repair, uint64_t *end);
int mq_claims_group_end(const struct mq_topic *, unsigned k,
    const char *group, int repair, uint64_t *end);
int mq_claims_create(int cursorfd, int claimsfd,
    const struct mq_claim_name *, const struct mq_claim_state *);
int mq_claims_settle(int cursorfd, int claimsfd, const char *name,
    const uint64_t *seqs, size_t n, int refuse_expired);
int mq_claims_held(int cursorfd, int claimsfd, const char *name,
    uint64_t seq);
int mq_claims_extend(int cursorfd, int claimsfd, const char *name,
    uint64_t deadline_ms);
int mq_claims_detach(const struct mq_topic *, unsigned k,
    const struct mq_gdirs *, int cursorfd, int claimsfd, const char *name,
    const uint64_t *seqs, const char (*ids)[MQ_ID_LEN + 1], size_t n,
    int attempt, double expired_by, char (*out)[MQ_KEY_LEN + 64]);
int mq_claims_expire(const struct mq_topic *, unsigned k,
    const struct mq_gdirs *, int cursorfd, int claimsfd, double now,
    double *earliest);
int mq_claims_settle_below(int cursorfd, int claimsfd, uint64_t below,
    uint64_t **seqs, size_t *n);
/* settle_set: the records of sorted (ascending) that the claims hold,
 * settled: how many were not yet. */
int mq_claims_settle_set(int cursorfd, int claimsfd, const uint64_t *sorted,
    size_t n);
/* The K record of records of a claim settled (mq-spool(5), Replication,
 * format 2): those whose bit is set, or the claim's records among seqs;
 * best effort, as every change record; none when no bit is set. */
void mq_claims_journal(const struct mq_topic *, unsigned k, const char *group,
    uint64_t first, unsigned n, const unsigned char *bits);
void mq_claims_journal_seqs(const struct mq_topic *, unsigned k,
    const char *group, const char *claim, const uint64_t *seqs, size_t n);
int mq_claims_count(const struct mq_topic *, unsigned k, const char *group,
    struct mq_claims_count *);
int mq_claims_in(const struct mq_topic *, unsigned k, const char *group,
    uint64_t seq, int *state, double *deadline);
/* each: fn with each claim of the group as read without the lock (one
 * being made passed over), in order, until it returns other than 0. */
int mq_claims_each(const struct mq_topic *, unsigned k, const char *group,
    int (*fn)(const struct mq_claim_name *, const struct mq_claim_state *,
    void *), void *ctx);

/* claims.c: the group's cursor in partition k, opened with flags (the
 * file as mq_file_open opens one). */
int mq_cursor_open(const struct mq_topic *, unsigned k, const char *group,
    int flags);
/* feed.c: a group of format 2 takes the records past its cursor into its
 * queue: how many (filtered ones count), *cursor its cursor after. */
int mq_feed(const struct mq_topic *, unsigned k, const char *group,
    struct mq_gdirs *, int hfd, int cursorfd, mq_filter *,
    uint64_t *cursor);
/* feed.c: a group that is not ordered takes up to max records past its
 * next as a claim of lease seconds, under the cursor's lock: records
 * filtered out or not due yet (named in delay/) settled at once, the
 * others into tk->m (NULL for one that does not read: to be dead-lettered
 * as unreadable).  Returns how many the claim's range holds, 0 when the
 * log has none past next. */
struct mq_taken {
	char name[64];
	struct mq_claim_name c;
	struct mq_claim_state st;
	struct mq_msg *m[MQ_CLAIM_MAX];
	unsigned pos;                   /* the next to hand out */
};
int mq_claims_take(const struct mq_topic *, unsigned k, const char *group,
    struct mq_gdirs *, int hfd, int cursorfd, int claimsfd, mq_filter *,
    unsigned max, double lease, struct mq_taken *);
/* A replica's group takes its records up to `to` (not past the log's
 * end) as claims of no lease (deadline 0), under the cursor's lock:
 * what a primary's consumers took, held or settled, which the changes
 * that follow settle (mq-spool(5), Replication, format 2). */
int mq_claims_fill(const struct mq_topic *, unsigned k, const char *group,
    int hfd, int cursorfd, int claimsfd, uint64_t to);
/* grouprepl.c: group in partition k of format 2 on a replica, changed as
 * the primary's journal says (K, L, A, D, C records): open takes the
 * caller's head (hfd, for reading) and queue directories; take takes
 * the group through `to` (claims of no lease, or names for an ordered
 * group and on a shared file system); settle settles seqs (sorted in
 * place), each by its name or its claim bit; commit settles all below
 * offset; name gives record KEY a name in new/ (delay/ when not due)
 * unless it has one. */
struct mq_greplica {
	const struct mq_topic *t;
	unsigned k;
	const char *group;
	int hfd;
	struct mq_gdirs d;              /* the caller's, not closed */
	int cursorfd, claimsfd;         /* claimsfd -1: names */
	bool names;
	mq_filter *filter;
};
int mq_greplica_open(struct mq_greplica *, const struct mq_topic *,
    unsigned k, const char *group, int hfd, const struct mq_gdirs *);
void mq_greplica_close(struct mq_greplica *);
int mq_greplica_take(struct mq_greplica *, uint64_t to);
int mq_greplica_settle(struct mq_greplica *, uint64_t *seqs, size_t n);
/* settle_key: one record by its KEY (an A record), its name looked for as
 * new/KEY before the queues are listed. */
int mq_greplica_settle_key(struct mq_greplica *, const char *key);
int mq_greplica_commit(struct mq_greplica *, uint64_t offset);
int mq_greplica_name(struct mq_greplica *, const char *key);
/* state: on the primary's side (--compare), the records that bring a
 * replica's group to this group's state now, of the records below upto
 * (what the replica's log holds), given to fn with what follows the
 * group in their arguments: C of its cursor, K of each claim's settled
 * records, L of each of its names (new/, cur/, delay/), read without a
 * lock in that order, so that a record that moves on meanwhile is said
 * again by the journal's record of its move, which follows. */
int mq_greplica_state(const struct mq_topic *, unsigned k, const char *group,
    uint64_t upto, int (*fn)(char type, const char *arg, void *ctx),
    void *ctx);
/* Frees what a taken claim has not handed out. */
void mq_taken_clear(struct mq_taken *);
/* Raises the group's cursor to `to` (a commit of that offset): *skipped
 * how many records it passed over unfed. */
int mq_feed_skip(const struct mq_topic *, unsigned k, const char *group,
    int hfd, uint64_t to, uint64_t *skipped);
/* The group's next record in partition k, read without a lock: its
 * cursor (one never written: where the group starts), or the end of its
 * last claim past it. */
int mq_feed_cursor(const struct mq_topic *, unsigned k, const char *group,
    uint64_t end, uint64_t *next);
/* The group's cursor as written, read without a lock (one never written:
 * where the group starts): every record below it is settled or named. */
int mq_feed_written(const struct mq_topic *, unsigned k, const char *group,
    uint64_t end, uint64_t *next);
/* What a feed makes of record m for a group whose filter is f (NULL:
 * none), at time now: filtered out, or named, in new/ or (not due yet)
 * in delay/, or one a consumer settles unseen (past its Mq-Expires);
 * -1 when the filter fails.  Read-only tools tell from it what is past
 * a cursor (peek.c, msgstate.c). */
enum mq_fate { MQ_FATE_FILTERED, MQ_FATE_NEW, MQ_FATE_DELAYED,
	MQ_FATE_EXPIRED };
int mq_feed_fate(mq_filter *f, const struct mq_msg *m, double now);
/* Lowers *low to the least sequence number the group still needs of
 * partition k's log (end: the log's end): its cursor as written (never
 * past a claim's records), or the least of its queues' names. */
int mq_feed_low(const struct mq_topic *, unsigned k, const char *group,
    uint64_t end, uint64_t *low);
int mq_gdirs_delay(const struct mq_topic *, unsigned k, const char *group,
    struct mq_gdirs *);
int mq_claim_return(const struct mq_topic *, unsigned k, const char *group,
    const struct mq_gdirs *, const char *curname, const struct mq_nack *,
    const struct mq_group_conf *);
int mq_claim_reject(const struct mq_topic *, unsigned k, const char *group,
    const struct mq_gdirs *, const char *curname, const struct mq_why *);
int mq_claim_move(int fromfd, const char *from, int curfd, struct mq_entry *,
    int fresh, char *out, size_t len);
int mq_claim_find(const struct mq_gdirs *, const char *curname, char *out,
    size_t len);
int mq_claim_extend(const struct mq_gdirs *, const char *curname,
    double seconds, char *out, size_t len);
int mq_ledger_add(int donefd, const char *id, int sync);
/* g/<group>/done of the partition pfd, made when missing, opened into
 * *fd unless it is open already (*fd >= 0). */
int mq_ledger_dir(int pfd, const char *group, int *fd);
/* The same in g/<group>/done/ of partition k, made when missing (an
 * ack by receipt, a replica told of an entry). */
int mq_ledger_record(const struct mq_topic *, unsigned k, const char *group,
    const char *id, int sync);

/* consume.c */
const char *mq_sub_group(const mq_sub *);
int mq_sub_wake_fd(const mq_sub *);
double mq_sub_grace(const mq_sub *);
double mq_sub_beat_every(const mq_sub *);
/* msgread.c: a message as a consumer holds it (m->priv): its file's
 * text, read whole, and where it is claimed. */
struct msg_priv {
	size_t part;                    /* index into the subscription's parts */
	char cur[MQ_KEY_LEN + 64];
	char claim[64];                 /* format 2: the claim holding it, or "" */
	dev_t dev;                      /* the file read, as opened */
	ino_t ino;
	char buf[];
};
/* Reads a message file, checked (EX_DATAERR when it is no whole message
 * file of the message key names, or of the KEY that curname's last part
 * starts with when key is NULL). */
int mq_claim_read(const struct mq_topic *, int curfd, const char *curname,
    const char *key, struct mq_msg **out);
/* Whether m, read by mq_claim_read, is the file that log/KEY names in the
 * log directory logfd: 1 it is, 0 it is not (placed, never published), -1
 * an error.  See msgread.c. */
int mq_claim_published(int logfd, const struct mq_msg *m, const char *key);
/* Format 2: record seq of partition k's log, read and checked as a
 * message file is (EX_DATAERR: not there, damaged, or not the message
 * key, if not NULL, names).  mq_record_copy writes the record that a
 * queue's name dirfd/NAME (an empty file) names into it: a dead letter
 * keeps its message (EX_DATAERR, nothing written: the log holds no
 * record at its sequence number, or another message's).  mq_claim_read_at reads a claim of either format:
 * 0 read, -1 an error, 1 (*out NULL, EX_DATAERR) a name of format 2 in a
 * topic with roles that holds bytes of its own the log does not hold
 * under its KEY, and that log/KEY does not name: placed by a consumer,
 * never published. */
int mq_record_read(const struct mq_topic *, unsigned k, uint64_t seq,
    const char *key, struct mq_msg **out);
/* The record itself, checked by its hash, pointing into the segment the
 * partition's reader holds (valid until it reads another). */
int mq_record_at(const struct mq_topic *, unsigned k, uint64_t seq,
    struct mq_seg_rec *);
int mq_record_copy(const struct mq_topic *, unsigned k, int dirfd,
    const char *name);
/* The record at *seq, or past a gap (mq_seglog_gap) at the next one
 * there, below end: 1 with *seq moved to it and *out (NULL when it is
 * there but cannot be read: damaged), 0 none left below end. */
int mq_record_next(const struct mq_topic *, unsigned k, uint64_t *seq,
    uint64_t end, struct mq_msg **out);
int mq_claim_read_at(const struct mq_topic *, unsigned k, int curfd,
    const char *curname, struct mq_msg **out);

/* wildcard.c: subscriptions to topic patterns. */
int mq_wildcard_join(mq_spool *, const char *pattern, const char *group,
    const char *topic);
int mq_wildcard_settings(mq_spool *, const char *pattern, const char *group,
    const struct mq_group_conf *create, struct mq_group_conf *out);
int mq_wildcard_topic_created(mq_spool *, const char *topic);
int mq_wildcard_subscribe(mq_spool *, const char *pattern, const char *group,
    const struct mq_group_conf *);
int mq_wildcard_unsubscribe(mq_spool *, const char *pattern,
    const char *group);
int mq_wildcard_exists(mq_spool *, const char *pattern, const char *group);
/* A peer's subscription, its conf's text as the peer has it: checked
 * (mq_group_conf_adoptable), then made here as mq_wildcard_subscribe
 * makes it. */
int mq_wildcard_adopt(mq_spool *, const char *pattern, const char *group,
    const char *text, size_t len);

/* sign.c: signed messages (mq-spool(5), SIGNED MESSAGES). */
#define MQ_SIGN_LINES_MAX 1152
/* The leaf of a message: its header block (hdr, hlen bytes, without its
 * blank line or signature lines) and its body, as stored. */
int mq_sign_leaf(const char *hdr, size_t hlen, const void *body, size_t blen,
    unsigned char leaf[MQ_HASH_BYTES]);
/* A chunk's signature: over the tree of its n leaves (at most
 * MQ_TREE_MAX), or for n = 1 none, its one message signed plain. */
struct mq_chunk_sig {
	struct mq_tree tree;
	size_t n;
	unsigned char sig[64];
};
int mq_chunk_sign(struct mq_chunk_sig *, const struct mq_identity *key,
    const unsigned char (*leaf)[MQ_HASH_BYTES], size_t n);
/* The Mq-Signer and Mq-Signature lines of the chunk's message i, whose
 * header block and body (as mq_sign_leaf takes them) gave leaf i. */
int mq_chunk_sign_lines(const struct mq_chunk_sig *,
    const struct mq_identity *key, size_t i, const char *hdr, size_t hlen,
    const void *body, size_t blen, char out[MQ_SIGN_LINES_MAX], size_t *olen);
void mq_chunk_sig_free(struct mq_chunk_sig *);
/* Whether message m, parsed from a file whose header block begins at hdr,
 * may be delivered from topic t: 1 (m->signer set when signed), 0 not
 * (the error says why: the detail of its dead letter), -1 an error.  The
 * chunk signatures it verified are kept in t->roots. */
int mq_msg_verify(struct mq_topic *t, const char *hdr, struct mq_msg *m);
void mq_roots_free(struct mq_roots *);

/* signers.c: a topic's publisher keys, kept per topic.conf identity. */
struct mq_signers {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
	bool read;
	bool fresh;                     /* read since the last expire */
	unsigned char (*pk)[MQ_PUBKEY_BYTES];
	size_t n;                       /* 0: the topic takes any message */
};
int mq_signers_now(struct mq_topic *, const struct mq_signers **out);
/* The set as mq_signers_now read it last, unless expired since: a
 * consumer expires it at each claim and each look at its queue, so that
 * what it verifies was read after what it claimed was published, at one
 * stat per batch rather than per message. */
int mq_signers_cached(struct mq_topic *, const struct mq_signers **out);
void mq_signers_expire(struct mq_topic *);
bool mq_signers_has(const struct mq_signers *,
    const unsigned char pk[MQ_PUBKEY_BYTES]);
void mq_signers_free(struct mq_signers *);
/* Adds a signer line to kv for each key of text (authorized_peers' form);
 * EX_DATAERR for a line that is no key, or no key at all. */
int mq_signers_add(struct mq_conf *kv, const char *text);
/* alter.c: a replication peer's topic.conf (kv): the topic created with its
 * signers (c the rest), or its signers made those of kv.  1 when that
 * changed the spool, 0 when not. */
int mq_signers_adopt(mq_spool *, const char *topic, const struct mq_conf *kv,
    bool create, const struct mq_topic_conf *c);
/* alter.c: the settings the messages of a topic are held to (the size,
 * retention, ttl, expired and dedup-window lines) made those of a peer's
 * topic.conf (kv, checked by mq_topic_conf_parse) where they differ: 1
 * when that changed the spool, 0 when not. */
int mq_topic_settings_adopt(mq_spool *, const char *topic,
    const struct mq_conf *kv);

/* seal.c: the keys file of topic t.  Parsing: public keys in hex, one a
 * line (the form of authorized_peers, keys.c, without names); blank lines
 * and lines starting with '#' are skipped; pk gets them, *n how many.
 * Reading: 0 with *n = 0 when it has none.  Writing replaces it whole. */
int mq_seal_keys_parse(const char *topic, const char *buf, size_t len,
    unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES], size_t *n);
int mq_seal_keys_read(const struct mq_topic *,
    unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES], size_t *n);
int mq_seal_keys_write(const struct mq_topic *,
    const unsigned char pk[][MQ_PUBKEY_BYTES], size_t n);
/* EX_CONFIG: group has a jq filter, which cannot read sealed bodies. */
int mq_seal_jq_refused(const char *topic, const char *group);

/* seal.c: sealed bodies (mq-spool(5), SEALED BODIES).  The envelope:
 * MQ_SEAL_MAGIC, a 2-byte big-endian count n, n times a public key and
 * the data key sealed to it, a nonce, the ciphertext. */
#define MQ_SEAL_MAGIC "mqs\001"
#define MQ_SEAL_BOX (32 + 48)           /* crypto_box_seal of a data key */
#define MQ_SEAL_OVERHEAD(n) (6 + (n) * (MQ_PUBKEY_BYTES + MQ_SEAL_BOX) + \
	24 + 16)
#define MQ_SEAL_AD_MAX (MQ_SEAL_OVERHEAD(MQ_SEAL_KEYS_MAX) + MQ_NAME_MAX + \
	1 + MQ_ID_LEN)
/* A publisher's sealing state: the keys (cached by the keys file's
 * identity) and the chunk's data key and envelope head. */
struct mq_sealer {
	bool cached;
	ino_t ino;
	struct timespec mtim;
	size_t n;                           /* keys; 0: the topic is plain */
	unsigned char (*pk)[MQ_PUBKEY_BYTES];
	char ids[MQ_SEAL_KEYS_MAX * 17];    /* the Mq-Sealed value */
	unsigned char dk[32];
	/* A message's associated data: the envelope's head (hlen bytes,
	 * the chunk's), the topic, a NUL and the message id. */
	unsigned char ad[MQ_SEAL_AD_MAX];
	size_t hlen, adlen;
	struct mq_header *hdrs;             /* a message's headers, and
					       Mq-Sealed */
	size_t hcap;
};
/* Where a message's sealed body goes: the publisher keeps one per message
 * of a chunk, since a signed chunk's files are written after all of its
 * messages are sealed (publish.c). */
struct mq_sealbuf {
	unsigned char *buf;
	size_t cap;
};
/* At a chunk's start, under the partition's lock: the topic's keys now,
 * a new data key sealed to them; a group of the chunk (gflt, groups:
 * ng of them) with a jq filter on a sealed topic is EX_CONFIG. */
int mq_seal_chunk(struct mq_sealer *, const struct mq_topic *,
    mq_filter *const *gflt, char *const *groups, size_t ng);
/* out: in with its body sealed into sb (valid while sb is) and an
 * Mq-Sealed header (valid until the next call); only when the chunk has
 * keys (s->n). */
int mq_seal_msg(struct mq_sealer *, const struct mq_topic *, const char *id,
    const struct mq_pub_msg *in, struct mq_sealbuf *sb,
    struct mq_pub_msg *out);
void mq_sealer_free(struct mq_sealer *);
/* Opens a sealed message's body in place (nothing for a plain one):
 * EX_NOPERM when k is NULL or the body is not sealed to it (the message
 * is not at fault), EX_DATAERR when it does not open (damaged). */
int mq_seal_open(mq_seal_key *k, const struct mq_topic *, struct mq_msg *);
/* A group filter c on topic t: EX_CONFIG with a jq expression when t is
 * sealed. */
int mq_seal_filter_check(const struct mq_topic *t, const char *group,
    const struct mq_group_conf *c);

/* receipt.c */
int mq_receipt_make(const char *topic, const char *group, unsigned k,
    const char *curname, char **out);

#endif
