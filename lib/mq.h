/*
 * mq.h: libmq, the library behind the mq tools.
 *
 * The spool directory is the broker; mq-spool(5) describes its format and
 * protocol.  Every operation of every tool is a function here, so other
 * programs can link libmq and do what the tools do.
 *
 * Conventions:
 *  - Functions that can fail return -1 (or NULL) and record an error for the
 *    calling thread: mq_errmsg() is a one-line message, mq_errcode() the
 *    sysexits.h code a tool should exit with.
 *  - Opaque handles (mq_spool, mq_pub, mq_sub) are freed by their _close.
 *  - Strings and arrays returned through pointers belong to the caller unless
 *    the comment says otherwise; free them with the matching _free.
 */
#ifndef MQ_H
#define MQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>
#include <time.h>

#define MQ_SPOOL_VERSION 1
#define MQ_NAME_MAX 200                 /* topic and group names */
#define MQ_PARTITIONS_MAX 1024
#define MQ_ID_LEN 32                    /* hex characters of a message id */
#define MQ_MESSAGE_MAX_DEFAULT (1024 * 1024)
#define MQ_MESSAGE_MAX_LIMIT (256 * 1024 * 1024)
#define MQ_HEADER_BLOCK_MAX (64 * 1024)
#define MQ_LEASE_DEFAULT 30.0
#define MQ_MAX_ATTEMPTS_DEFAULT 5

/* Exit code for "nothing arrived before the timeout" (mq-sub). */
#define MQ_EX_EMPTY 1

/* Errors */
const char *mq_errmsg(void);
int mq_errcode(void);

/* Names: topics and groups are [A-Za-z0-9_.-]{1,200}, not starting with '.'.
 * Returns 0 when valid, else -1 with an error naming what is wrong. */
int mq_name_check(const char *kind, const char *name);

/* Time, in seconds since the epoch; MQ_NOW (seconds, fractional) in the
 * environment overrides the clock for tests. */
double mq_now(void);
/* A monotonic clock, in seconds, for measuring waits. */
double mq_mono(void);
/* Parse "1.5", "30s", "5m", "2h", "1d" into seconds; -1 on error. */
int mq_duration_parse(const char *s, double *out);
/* Parse a point in time: RFC 3339 (2026-11-29T14:20:00Z, offsets too) or
 * @SECONDS since the epoch. */
int mq_time_arg_parse(const char *s, double *out);

/* Spool */
typedef struct mq_spool mq_spool;
#define MQ_CREATE 1
/* Read only, for the tools that only look (mq-stat, list, info, status):
 * a missing spool is EX_NOINPUT, and nothing through the handle creates,
 * writes, sweeps, repairs or write-locks; read and search permission is
 * enough.  What a writer would repair is reported as it is. */
#define MQ_READONLY 2
/* The spool location: dir if not NULL, else $MQ_SPOOL, else
 * $XDG_STATE_HOME/mq, else ~/.local/state/mq.  Caller frees. */
char *mq_spool_locate(const char *dir);
mq_spool *mq_spool_open(const char *dir, int flags);
void mq_spool_close(mq_spool *);
const char *mq_spool_path(const mq_spool *);

/* Permissions (mq-spool(5), PERMISSIONS): a spool's or a topic's Unix
 * group (when has_group) and mode (0: keep), which what is made below
 * takes whatever the maker's umask.  Zeroed: keep both. */
struct mq_perm {
	bool has_group;
	gid_t gid;
	mode_t mode;
};
/* A group name or number and an octal mode, either NULL; a group adds
 * the setgid bit (and mode 2770 if none is given).  EX_NOUSER for an
 * unknown group, EX_USAGE for a bad mode. */
int mq_perm_parse(const char *group, const char *mode, struct mq_perm *);
/* A topic's roles (mq-spool(5), PERMISSIONS, Roles): the Unix group whose
 * members publish to it, the one whose members consume from it, and the
 * one whose members administer it, each by gid when has[role]. */
enum mq_role { MQ_ROLE_PUBLISHERS, MQ_ROLE_CONSUMERS, MQ_ROLE_ADMINS,
	MQ_ROLES };
struct mq_roles {
	bool has[MQ_ROLES];
	gid_t gid[MQ_ROLES];
};
/* names[role] a group name or number, or NULL: no such role.
 * EX_NOUSER for an unknown group. */
int mq_roles_parse(const char *const names[MQ_ROLES], struct mq_roles *);
bool mq_roles_any(const struct mq_roles *);
/* "publishers", "consumers", "admins": the role's topic.conf key. */
const char *mq_role_name(enum mq_role);
/* Makes the spool if it is missing, then gives it and all it holds the
 * permissions (mq-topic init). */
int mq_spool_init(const char *dir, const struct mq_perm *);

/* Topics */
struct mq_topic_conf {
	unsigned partitions;             /* 1..MQ_PARTITIONS_MAX */
	size_t max_message_size;         /* bytes of body */
	double retention;                /* seconds the log keeps a message; 0 = forever */
	double ttl;                      /* default time to live; 0 = none */
	double dedup_window;             /* seconds an idempotency key counts */
	int expired_drop;                /* expired: 1 drop, 0 dead-letter */
	/* Create only (never read back): NULL, or `partitions` entries where
	 * place[k], if not NULL, is an absolute path to an empty or missing
	 * directory that partition k is built in, on any file system;
	 * topics/<t>/p<k> links to it.  See mq-spool(5), Placement. */
	const char *const *place;
	/* Create only: the topic directory's permissions, given before
	 * anything is made in it. */
	struct mq_perm perm;
	/* The roles, given at create (with none, the modes alone decide),
	 * read back from topic.conf: what is made later gets them too. */
	struct mq_roles roles;
	/* Create only: NULL, or the publisher keys whose signatures its
	 * messages need, as mq_topic_alter_signers takes them. */
	const char *signers;
	unsigned nsigners;               /* read back: how many it has */
	/* 1: a file per message; 2: segments and cursors (mq-spool(5),
	 * SEGMENTED STORAGE), the default. */
	unsigned format;
	/* Create only: the format was asked for (--format, MQ_FORMAT), not
	 * the default, which a file system whose locks stay within one
	 * mount (sshfs) makes 1. */
	bool format_asked;
};
void mq_topic_conf_default(struct mq_topic_conf *);
/* EX_UNAVAILABLE, naming the first topic of format 2 and what (as
 * "replication"), when the spool has one: for what cannot handle it. */
int mq_topics_format1(mq_spool *, const char *what);
/* What mq-topic(1)'s options give create: *place gets the placements of
 * n "K=DIR" arguments (--place) as the place of a topic of `partitions`
 * partitions (NULL when n is 0; the caller frees the array, not the
 * strings, which stay args'); a bad one is EX_USAGE.  Signers_read
 * returns the text of a --signers file ("-": standard input), at most
 * 64 KiB without NUL (EX_DATAERR); the caller frees it. */
int mq_topic_place_parse(const char *const *args, size_t n,
    unsigned partitions, const char ***place);
char *mq_topic_signers_read(const char *path);
/* Returns 1 if created, 0 if it already existed (conf then untouched). */
int mq_topic_create(mq_spool *, const char *topic, const struct mq_topic_conf *);
int mq_topic_conf_read(mq_spool *, const char *topic, struct mq_topic_conf *);
/* Grows a topic to `partitions` partitions, with each existing group's
 * directories in the new ones.  Returns 1 if grown, 0 if it had that many
 * already; fewer is refused (EX_USAGE).  Keys hash over the new count, so
 * a key's later messages may go to another partition than its earlier
 * ones.  _placed places new partitions as create does: place has
 * `partitions` entries, those of existing partitions NULL. */
int mq_topic_alter(mq_spool *, const char *topic, unsigned partitions);
int mq_topic_alter_placed(mq_spool *, const char *topic, unsigned partitions,
    const char *const *place);
/* Makes the topic take only messages signed by one of the publisher keys
 * in text: one per line, 64 hexadecimal digits and an optional name, '#'
 * starting a comment (authorized_peers' form); NULL: any message again.
 * A line that is no key is EX_DATAERR, and changes nothing.  See
 * mq-spool(5), SIGNED MESSAGES. */
int mq_topic_alter_signers(mq_spool *, const char *topic, const char *text);
/* Removes the topic, and the directories of its placed partitions. */
int mq_topic_delete(mq_spool *, const char *topic);
/* Unlinks log/ names older than the topic's retention (groups keep their
 * links) and stale temporary files; *removed counts the log names. */
int mq_topic_gc(mq_spool *, const char *topic, uint64_t *removed);
/* Converts a topic of format 1 into format 2 (mq-spool(5), SEGMENTED
 * STORAGE, Upgrade): its log as segments, each group's cursor at its
 * partition's end, then topic.conf says format=2 (the commit point).  A
 * run that died is finished by the next.  0 when converted, 1 when it
 * already was of format 2 (what a run that died after the switch left is
 * removed), -1: EX_UNAVAILABLE for a spool that replicates, EX_NOPERM
 * where it cannot write, EX_TEMPFAIL when the topic changed as it
 * started; nothing changed then. */
struct mq_upgrade_stats {
	unsigned partitions;
	size_t groups;
	uint64_t segments, records;     /* written by this run */
	uint64_t dropped;               /* log/ message files unlinked */
};
int mq_topic_upgrade(mq_spool *, const char *topic, struct mq_upgrade_stats *);
/* Sorted names of all topics, in *names (free with mq_strv_free). */
int mq_topic_list(mq_spool *, char ***names, size_t *n);
void mq_strv_free(char **v, size_t n);

struct mq_group_stat {
	char *name;
	uint64_t pending;                /* committed messages in new/ */
	uint64_t inflight;               /* claimed, in cur/ */
	int ordered;                     /* mode=ordered */
	uint64_t delayed;                /* in delay/ */
	uint64_t dead;                   /* dead letters */
	uint64_t lag;                    /* summed over partitions; see
					    struct mq_group_info */
};
struct mq_partition_stat {
	uint64_t committed;              /* next sequence number to commit */
	uint64_t log_messages;           /* committed messages retained in log/ */
	uint64_t log_bytes;              /* their files' sizes, summed */
	char *place;                     /* where p<k> links to, or NULL */
};
struct mq_topic_info {
	char *name;
	struct mq_topic_conf conf;
	struct mq_partition_stat *partitions;   /* conf.partitions entries */
	struct mq_group_stat *groups;
	size_t ngroups;
};
int mq_topic_info(mq_spool *, const char *topic, struct mq_topic_info *out);
void mq_topic_info_free(struct mq_topic_info *);

/* Groups (subscriptions) */
struct mq_offset {
	unsigned partition;
	uint64_t offset;                 /* a sequence number */
};
#define MQ_SESSION_DEFAULT 10.0
struct mq_group_conf {
	int from_start;                  /* backfill what the log still holds */
	double lease;                    /* default lease, seconds */
	unsigned max_attempts;           /* failures before dead-lettering; 0: never */
	int exactly_once;                /* keep a ledger of processed ids */
	/* Ordered (Kafka-style): each partition has one live owner at a
	 * time and is processed strictly in sequence.  Else shared
	 * (SQS-style): every consumer claims from every partition. */
	int ordered;
	double session;                  /* ordered: seconds a silent member
					    keeps its partitions */
	/* Messages that do not match never enter the group's queue: a jq
	 * expression over the JSON body (NULL: none) and header conditions
	 * "Name=glob" (all must hold). */
	const char *filter;
	const char *const *match;
	size_t nmatch;
	/* Start positions besides from_start: the listed partitions start at
	 * these sequence numbers, and/or every partition at the first
	 * message published at or after from_time (> 0). */
	const struct mq_offset *from_offset;
	size_t nfrom_offset;
	double from_time;
};
void mq_group_conf_default(struct mq_group_conf *);
/* Creates the topic if needed.  Returns 1 if created, 0 if it existed. */
int mq_group_subscribe(mq_spool *, const char *topic, const char *group,
    const struct mq_group_conf *);
int mq_group_unsubscribe(mq_spool *, const char *topic, const char *group);
/* A topic or group name that holds '*' or '>' is a wildcard pattern:
 * subscribing (and unsubscribing) a pattern does so for every topic it
 * matches, those created later included; mq_sub_open on a pattern reads
 * them all.  See mq-spool(5), WILDCARDS. */
int mq_is_pattern(const char *name);
/* Checks a pattern: levels are names, '*' or a last '>'. */
int mq_pattern_check(const char *pattern);
/* "PARTITION:OFFSET" */
int mq_offset_parse(const char *s, struct mq_offset *out);
/* Acks every message of the group in at->partition with a sequence
 * number below at->offset; *acked gets how many. */
int mq_group_commit(mq_spool *, const char *topic, const char *group,
    const struct mq_offset *at, uint64_t *acked);
/* Returns 1 if the group exists, 0 if not, -1 on error. */
int mq_group_exists(mq_spool *, const char *topic, const char *group);

/* Where a group stands, read without a lock (a snapshot).  Per partition:
 * head = the head's committed; offset = the lowest sequence number of the
 * group's committed names in new/, cur/ and delay/ (the oldest message it
 * has not settled), head when none; lag = head - offset. */
struct mq_partition_group {
	uint64_t head, offset, lag;
	uint64_t pending, inflight, delayed, dead;
	double oldest_pending;           /* publish time (from the id) of the
					    oldest pending message; 0: none */
	uint64_t lease_soonest_ms;       /* the soonest lease deadline in
					    cur/; 0: nothing in flight */
	char *owner;                     /* ordered: the live owner, or NULL */
	uint64_t owner_deadline_ms;      /* its deadline; 0 with no owner */
};
struct mq_group_member {                 /* a live member of an ordered group */
	char *name;
	uint64_t deadline_ms;
	unsigned *partitions;            /* those it owns, ascending */
	size_t npartitions;
};
struct mq_group_info {
	char *topic, *group;
	int ordered, from_start, exactly_once;
	double session, lease, created;  /* created: 0 if unknown */
	unsigned max_attempts;
	char *filter;                    /* unescaped; NULL: none */
	char **match;                    /* "Name=glob" conditions */
	size_t nmatch;
	char *pattern;                   /* the wildcard that made it, or NULL */
	char *state;                     /* "ready" or "backfill" */
	unsigned npartitions;
	struct mq_partition_group *partitions;
	struct mq_partition_group total; /* sums, the oldest and soonest
					    over partitions (offset and
					    owner unused) */
	struct mq_group_member *members;
	size_t nmembers;
};
int mq_group_info(mq_spool *, const char *topic, const char *group,
    struct mq_group_info *);
void mq_group_info_free(struct mq_group_info *);
/* The first setting in which c (as for mq_group_subscribe) differs from
 * the group g is ("ordered", "session", "lease", "max-attempts",
 * "exactly-once", "filter" or "match"), NULL when none does.  Start
 * positions count only when a group is made, and are not compared. */
const char *mq_group_conf_differs(const struct mq_group_info *g,
    const struct mq_group_conf *c);
/* The groups of the topics whose names match the fnmatch(3) pattern glob
 * (NULL: all), by topic and group, then the wildcard subscriptions
 * (SPOOL/wildcards/) whose pattern matches glob, with wildcard set and
 * the pattern as topic. */
struct mq_group_ref {
	char *topic, *group;
	int wildcard;
	int ordered;                     /* wildcard subscriptions only */
};
int mq_group_list(mq_spool *, const char *glob, struct mq_group_ref **out,
    size_t *n);
void mq_group_ref_free(struct mq_group_ref *, size_t n);

/* Monitoring (mq-stat(1)): the figures of a spool, one topic (topic not
 * NULL) or one group (group not NULL too), read without a lock like
 * mq_group_info.  Ages are seconds before mq_now(), -1 when there is
 * nothing to measure.  Counts of publishes and acks come from the
 * counters every host keeps (mq-spool(5), COUNTERS). */
struct mq_stat_rates {
	uint64_t total;                  /* since counting began */
	double rate[3];                  /* per second, last 1, 5, 15 min */
};
struct mq_stat_group {
	char *topic, *group;
	uint64_t pending, inflight, delayed, dead;
	double lease;                    /* the group's lease, s */
	double pending_age;              /* of the oldest pending message */
	/* Of the oldest claim: its lease deadline less the group's lease
	 * (a claim extended, or taken with a longer lease, looks younger). */
	double lease_age;
	double lease_soonest;            /* the soonest deadline; 0: none */
	uint64_t consumers;              /* alive: deadline not passed */
	struct mq_stat_rates acked;
	/* Publish-to-ack latencies, s, of the acks of the current minute
	 * and the 5 before: p50, p90, p99, max; -1 when there were none. */
	double latency[4];
	double latency_sum;              /* of all acked.total acks, s */
};
struct mq_stat_topic {
	char *topic;
	struct mq_stat_rates published;
};
struct mq_stat_fs {                      /* one per file system */
	char *path;                      /* the first directory seen on it */
	uint64_t free_bytes, free_inodes;        /* for unprivileged users */
};
struct mq_stat {
	double now;
	struct mq_stat_topic *topics;    /* in name order */
	size_t ntopics;
	struct mq_stat_group *groups;    /* by topic, then group */
	size_t ngroups;
	/* Temporary files older than an hour: ".tmp.*" files in SPOOL/, in
	 * the topics' directories, groups/ and dlq/<group>/, and anything in
	 * SPOOL/tmp/ and each g/<group>/tmp/ (of the topics shown). */
	uint64_t stale_tmp;
	struct mq_stat_fs *fs;           /* the spool's, then partitions' */
	size_t nfs;
	int replication;                 /* SPOOL/replicate/peers/ exists */
	struct mq_peer_status *peers;    /* then: mq_repl_status */
	size_t npeers;
};
int mq_stat_read(mq_spool *, const char *topic, const char *group,
    struct mq_stat *);
void mq_stat_free(struct mq_stat *);

/* Thresholds (mq-stat --check): "[SCOPE:]FIGURE OP N", where SCOPE is
 * TOPIC or TOPIC/GROUP (group figures only), OP one of > >= < <= =, N a
 * number (ages: a duration, as mq_duration_parse; free-bytes: a size with
 * K, M, G or T, powers of 1024).  A bad expression is EX_USAGE. */
enum mq_figure {
	MQ_FIG_PENDING, MQ_FIG_INFLIGHT, MQ_FIG_DELAYED, MQ_FIG_DLQ,
	MQ_FIG_AGE, MQ_FIG_LEASE_AGE, MQ_FIG_CONSUMERS, MQ_FIG_ACK_RATE,
	MQ_FIG_LATENCY_P50, MQ_FIG_LATENCY_P90, MQ_FIG_LATENCY_P99,
	MQ_FIG_LATENCY_MAX,                           /* per group */
	MQ_FIG_PUBLISH_RATE,                          /* per topic */
	MQ_FIG_STALE_TMP,                             /* the spool */
	MQ_FIG_FREE_BYTES, MQ_FIG_FREE_INODES,        /* per file system */
	MQ_FIG_LAG, MQ_FIG_LAG_SECONDS,               /* per peer */
};
enum mq_cmp { MQ_CMP_GT, MQ_CMP_GE, MQ_CMP_LT, MQ_CMP_LE, MQ_CMP_EQ };
struct mq_threshold {
	char topic[MQ_NAME_MAX + 1];     /* scope; "": every group */
	char group[MQ_NAME_MAX + 1];     /* "": every group of topic */
	enum mq_figure figure;
	enum mq_cmp cmp;
	double n;
	int level;                       /* 1 warning, 2 critical */
};
int mq_threshold_parse(const char *s, int level, struct mq_threshold *out);
const char *mq_figure_name(enum mq_figure);
const char *mq_cmp_name(enum mq_cmp);
/* The unit of a figure in Nagios performance data: "s", "B" or "". */
const char *mq_figure_unit(enum mq_figure);
/* Every figure a threshold applies to, once per object (group, file
 * system, peer), in the order the thresholds first name them.  label is
 * "TOPIC/GROUP FIGURE", "PATH FIGURE", "peer NAME FIGURE" or "stale-tmp";
 * warn and crit are the first threshold of each level that applies (for
 * the performance data), crossed the first of the worst level crossed.
 * An age with nothing to measure is 0.  A scope that matches no group is
 * EX_NOINPUT. */
struct mq_check_value {
	char *label;
	enum mq_figure figure;
	double value;
	int state;                       /* 0 OK, 1 warning, 2 critical */
	const struct mq_threshold *warn, *crit, *crossed;
};
struct mq_check {
	int state;                       /* the worst of the values' */
	struct mq_check_value *v;
	size_t n;
};
int mq_stat_check(const struct mq_stat *, const struct mq_threshold *,
    size_t n, struct mq_check *out);
void mq_check_free(struct mq_check *);

/* Where a message is (mq-stat --message ID): for each group of the topic
 * that holds it, its state there.  The message is found by its id in the
 * partitions' log/ (of one topic, or of every topic when topic is NULL);
 * in a topic with a retention also in the groups' directories, since
 * retention removes log names that groups still hold.  Entries come by
 * topic, partition and group; a partition that has the message in a topic
 * without groups gives one entry with group NULL (MQ_MSG_NOGROUP).  None
 * found is EX_NOINPUT; an id that is not 32 hexadecimal digits is
 * EX_USAGE.  Read without a lock: a message that moves meanwhile may be
 * seen in neither place (then "acked").  Why a group does not hold the
 * message is told from its configuration, the message file and the
 * journal (msgstate.c). */
enum mq_msg_state {
	MQ_MSG_PENDING,                  /* in new/; in NULL: yet to be
					    linked by an unfinished backfill */
	MQ_MSG_INFLIGHT,                 /* in cur/ */
	MQ_MSG_DELAYED,                  /* in delay/ */
	MQ_MSG_DEAD,                     /* in dlq/<group>/ */
	/* Dead with the reason "expired", or pending or delayed past its
	 * Mq-Expires (a consumer drops or dead-letters it when it claims
	 * it); in, below, says which.  In NULL: in none of the group's
	 * directories, past its Mq-Expires in a topic that drops expired
	 * messages, with the group's A record in the journal at or after
	 * that time (died): dropped, or settled late. */
	MQ_MSG_EXPIRED,
	MQ_MSG_ACKED,                    /* entered the queue, left it: in
					    none of the group's directories */
	MQ_MSG_FILTERED,                 /* never entered: the group's filter
					    does not match it */
	MQ_MSG_BEFORE,                   /* never entered: published before
					    the group's start, not backfilled */
	MQ_MSG_NOGROUP,                  /* in a topic without groups */
};
struct mq_msg_where {
	char *topic, *group;             /* group NULL: MQ_MSG_NOGROUP */
	unsigned partition;
	uint64_t seq;
	enum mq_msg_state state;
	const char *in;                  /* "new", "cur", "delay", "dlq", or
					    NULL: in none (static) */
	unsigned attempts;               /* deliveries so far */
	double lease_deadline;           /* in flight */
	double due;                      /* delayed */
	double expires;                  /* its Mq-Expires; 0: none, or not
					    read (in flight, dead, acked) */
	char *reason, *detail;           /* dead: from its record; else NULL */
	char *path;                      /* held by the group: a name of its
					    file under the partition's
					    directory; else NULL */
	double died;                     /* dead, or expired and gone: when;
					    0 if unknown */
};
const char *mq_msg_state_name(enum mq_msg_state);
int mq_msg_locate(mq_spool *, const char *topic, const char *id,
    struct mq_msg_where **out, size_t *n);
void mq_msg_where_free(struct mq_msg_where *, size_t n);
/* Peeking (peek.c, mq-stat --peek): messages read as a consumer would
 * receive them, without claiming them, opening nothing to write and
 * taking no lock.  A message's attempts are its deliveries so far; it has
 * no receipt, and a sealed body is as stored.
 * mq_peek_group: the messages group would be given next, at most max (0:
 * all): each partition's pending names in sequence order, committed and
 * not expired, the partitions in turn from 0, one message each, as one
 * consumer alone takes them.  Calls fn for each until it returns other
 * than 0; returns how many fn was given, or -1 (fn's error, or
 * EX_NOINPUT when the topic or the group does not exist).
 * mq_peek_id: message id, in the group named (NULL: any), of the topic
 * named (NULL: any), while it waits to be settled there: pending, in
 * flight or delayed; EX_NOINPUT when it waits in none. */
struct mq_msg;
int mq_peek_group(mq_spool *, const char *topic, const char *group,
    size_t max, int (*fn)(void *arg, const struct mq_msg *), void *arg);
int mq_peek_id(mq_spool *, const char *topic, const char *group,
    const char *id, struct mq_msg **out);

/* The outputs of mq-stat(1).  Each writes to a FILE and returns 0, or -1
 * if it could not (a write error, or JSON that jansson cannot make). */
/* The figures as a table for people. */
int mq_stat_write_table(const struct mq_stat *, FILE *);
/* The figures as one JSON object on one line. */
int mq_stat_write_json(const struct mq_stat *, FILE *);
/* The figures in the Prometheus text exposition format. */
int mq_stat_write_prometheus(const struct mq_stat *, FILE *);
/* Replaces path, whole and mode 0644, with put's output (one of those). */
int mq_stat_write_file(const struct mq_stat *,
    int (*put)(const struct mq_stat *, FILE *), const char *path);
/* A check's plugin line: "MQ STATE - summary | perfdata". */
int mq_check_write(const struct mq_check *, FILE *);
/* Where a message is: "TOPIC/GROUP STATE key=value..." per entry. */
int mq_msg_where_write_text(const struct mq_msg_where *, size_t n, FILE *);
/* Where message id is, as one JSON object on one line. */
int mq_msg_where_write_json(const char *id, const struct mq_msg_where *,
    size_t n, FILE *);

/* The outputs of mq-group(1), mq-topic(1) and mq-replicate(1) status,
 * in the same manner: 0, or -1 if they could not be written. */
/* list: a row per group of refs with the figures of infos (the same
 * index; a wildcard's info is not looked at, and a group whose info has
 * no topic, not read, is left out), as a table after a heading (when n
 * is not 0), or as one JSON array on one line. */
int mq_group_list_write_table(const struct mq_group_ref *refs,
    const struct mq_group_info *infos, size_t n, FILE *);
int mq_group_list_write_json(const struct mq_group_ref *refs,
    const struct mq_group_info *infos, size_t n, FILE *);
/* info: a group's settings, then a table of its partitions and, for an
 * ordered group, one of its members. */
int mq_group_info_write_text(const struct mq_group_info *, FILE *);
/* info: n groups as one JSON array on one line. */
int mq_group_info_write_json(const struct mq_group_info *, size_t n,
    FILE *);
/* A topic's settings and roles, then tables of its partitions and of
 * its groups; or all of it as one JSON object on one line. */
int mq_topic_info_write_text(const struct mq_topic_info *, FILE *);
int mq_topic_info_write_json(const struct mq_topic_info *, FILE *);
/* mq-topic list --json: the n topics whose confs were read (those whose
 * partitions is 0 are left out), by name and partitions, as one JSON
 * array on one line. */
int mq_topic_list_write_json(const char *const *names,
    const struct mq_topic_conf *confs, size_t n, FILE *);
/* The peers of mq_repl_status, a line each, then the count of files in
 * quarantine when there are any, the epoch when it is not 0 and who
 * fenced the spool if one did; or one JSON object on one line. */
struct mq_repl_self;
int mq_repl_status_write_table(const mq_spool *,
    const struct mq_peer_status *, size_t n, const struct mq_repl_self *,
    FILE *);
int mq_repl_status_write_json(const struct mq_peer_status *, size_t n,
    const struct mq_repl_self *, FILE *);

/* Messages */
struct mq_header {
	char *name;
	char *value;
};
/* Checks a user header "Name: value" and splits it; reserved names
 * (Message-Id, Topic, Partition, Seq, Key, Published, Content-Length,
 * Content-Hash and anything starting with "Mq-") are refused. */
int mq_header_parse(const char *line, struct mq_header *out);
int mq_key_check(const char *key);

struct mq_msg {
	char id[MQ_ID_LEN + 1];
	char *topic;
	unsigned partition;
	uint64_t seq;
	char *key;                       /* NULL when the message has none */
	char *idempotency_key;           /* Mq-Idempotency-Key, or NULL */
	struct timespec published;
	unsigned attempts;               /* deliveries so far, this one included */
	struct mq_header *headers;       /* user headers, in file order */
	size_t nheaders;
	const unsigned char *body;       /* points into the message's buffer */
	size_t len;
	char *receipt;                   /* names this claim; see mq-ack(1) */
	double lease_deadline;
	double deliver_at, expires;      /* 0 when the message has none */
	char *sealed;                    /* Mq-Sealed: the ids of the keys
					    its stored body is sealed to;
					    NULL: stored plain */
	/* The public key (hex) whose signature was verified when it was
	 * delivered; NULL when unsigned, or read without being delivered.
	 * Points into the message's buffer. */
	const char *signer;
	void *priv;
};
void mq_msg_free(struct mq_msg *);

/* Filters (mq-sub(1), FILTERS): a jq expression over the JSON body and
 * header conditions "Name=glob".  A message matches when every condition
 * holds (fnmatch(3) of the glob against the value of a header Name, its
 * name compared without case: a user header, or Key) and the expression's
 * first output is neither false nor null.  A body that is not one JSON
 * value, a run-time error, no output at all, or a run past the bounds
 * (MQ_FILTER_TIMEOUT, MQ_FILTER_MEMORY): no match.  The expression runs
 * in a worker process the filter forks when first needed. */
typedef struct mq_filter mq_filter;
/* expr NULL: header conditions only.  A bad expression or condition is
 * EX_USAGE, with jq's message. */
mq_filter *mq_filter_compile(const char *expr, const char *const *match,
    size_t nmatch);
/* The filter of a group to be made (c's filter and match), checked as
 * publishers will run it: 0, or -1 (EX_USAGE) with jq's message, what
 * is wrong with a condition, or what the expression may not do (read
 * the environment, files or other input: mq-sub(1), Filters).  The
 * subscribe calls check it too. */
int mq_filter_check(const struct mq_group_conf *c);
/* 1 if the message matches, else 0 (-1 when out of memory or no worker
 * could be started). */
int mq_filter_match(mq_filter *, const struct mq_msg *);
/* match[i]: whether msgs[i] matches, for n messages at once (one
 * exchange with the worker); 0, or -1 as mq_filter_match. */
int mq_filter_match_many(mq_filter *, struct mq_msg *const *msgs, size_t n,
    bool *match);
void mq_filter_free(mq_filter *);

/* Publishing */
enum mq_sync { MQ_SYNC_BATCH, MQ_SYNC_EACH, MQ_SYNC_NONE };
int mq_sync_parse(const char *s, enum mq_sync *out);

struct mq_pub_msg {
	const char *key;                 /* NULL: spread over partitions */
	int partition;                   /* -1: from the key, or spread */
	const void *body;
	size_t len;
	const struct mq_header *headers;
	size_t nheaders;
	double deliver_at;               /* > 0: not delivered before (epoch s) */
	double expires;                  /* > 0: not delivered after (epoch s) */
	/* Not NULL: published once within the topic's dedup window; a
	 * repeat gets the first one's id.  It picks the partition when there
	 * is no key and no partition, so repeats meet in one partition. */
	const char *idempotency_key;
};
typedef struct mq_pub mq_pub;
/* The messages of a stream (pubstream.c), as mq-pub(1) reads standard
 * input: fd read to its end is one message, or with split one per record
 * ended by sep (empty records are none).  They go to put in batches: a
 * batch ends at 4096 records or when no more input is waiting, or, with
 * atomic, at the end of the input.  init fills in a message when its
 * record has been read (the time counts from then), with body NULL until
 * put gets the batch.  A record over max bytes is EX_DATAERR, a failed
 * read EX_IOERR ("NAME: why"); a put that fails (< 0) ends the stream.
 * Returns 0 or -1. */
struct mq_pub_stream {
	int fd;
	const char *name;               /* of the input, for errors */
	int split;
	char sep;
	size_t max;
	int atomic;
	void (*init)(struct mq_pub_msg *, const void *body, size_t len,
	    void *ctx);
	int (*put)(struct mq_pub_msg *, size_t n, void *ctx);
	void *ctx;
};
int mq_pub_stream(const struct mq_pub_stream *);
/* With MQ_CREATE the topic is created with default settings if missing. */
mq_pub *mq_pub_open(mq_spool *, const char *topic, int flags);
/* Publishes msgs[0..n) with the given durability; ids[i] receives the id
 * of each message stored and is empty for one that was not.  Returns how
 * many are stored (durably, as the sync mode asks): n on success, fewer
 * with an error set.  Messages are published per partition, in chunks; a
 * chunk is stored whole or not at all. */
size_t mq_pub_send(mq_pub *, const struct mq_pub_msg *msgs, size_t n,
    enum mq_sync, char (*ids)[MQ_ID_LEN + 1]);
/* The idempotency key of --dedup=content: "xxh3-128:" and the body's
 * hash in hex. */
void mq_content_key(const void *body, size_t len, char out[48]);
/* Signs each message with key (copied; NULL: none) and checks that the
 * topic takes it now: EX_NOPERM when the topic has signers and key is
 * NULL or not one of them.  mq_pub_send checks again, before it writes
 * anything. */
struct mq_identity;
int mq_pub_sign(mq_pub *, const struct mq_identity *key);
/* fn is called for each message that mq_pub_send leaves out as a repeat
 * of an idempotency key, with the first's id; differs when the first
 * message had another body (compared by Content-Hash; never on a sealed
 * topic, nor once the first message is gone).  It is called under the
 * partition's lock: it should only take note. */
void mq_pub_on_repeat(mq_pub *, void (*fn)(const struct mq_pub_msg *,
    const char *first_id, bool differs, void *ctx), void *ctx);
/* With on set, each mq_pub_send is one commit: consumers see all of its
 * messages or none.  They must then all go to one partition. */
void mq_pub_atomic(mq_pub *, int on);
void mq_pub_close(mq_pub *);
/* What a peer must have for what this publisher stored: the journal up
 * to end (a peer whose confirmed offset reaches it has it); on a topic
 * of format 2 the S records at [from, end) also say where each log
 * ended, and a peer whose logs reach those ends has it too, journal or
 * not (from 0: not so; mq_replicas_wait_goal).  On a shared file system
 * the records are merged into the journal first, which may take the
 * clock skew allowed (MQ_CLOCK_SKEW).  0 or -1. */
struct mq_replica_goal {
	uint64_t end, from;
};
int mq_pub_replica_goal(const mq_pub *, struct mq_replica_goal *);

/* Consuming */
typedef struct mq_sub mq_sub;
struct mq_sub_opts {
	double lease;                    /* seconds; <= 0: the group's default */
	double poll;                     /* > 0: poll at this interval, no inotify */
	int create;                      /* subscribe if the group is missing */
	int wake_fd;                     /* >= 0: readable ends any wait */
	double grace;                    /* a running handler's time to finish
					    once wake_fd is readable */
	struct mq_group_conf group;      /* used when creating */
	struct mq_seal_key *key;         /* opens sealed bodies; NULL: none */
};
void mq_sub_opts_default(struct mq_sub_opts *);
mq_sub *mq_sub_open(mq_spool *, const char *topic, const char *group,
    const struct mq_sub_opts *);
/* Claims the next message, waiting up to timeout seconds (< 0: forever).
 * Returns 1 with *out set, 0 on timeout (or when a signal or the wake_fd
 * of the options ended the wait), -1 on error. */
int mq_sub_receive(mq_sub *, double timeout, struct mq_msg **out);
/* How many messages the caller takes with its next receives, at most (1
 * unless set; each receive counts one off): a topic of format 2 hands
 * that many out of one claim, one lease for them all (mq-spool(5),
 * SEGMENTED STORAGE, Claims). */
void mq_sub_prefetch(mq_sub *, unsigned n);
int mq_sub_ack(mq_sub *, const struct mq_msg *);
/* Acks n messages; in an exactly-once group their ledger entries share
 * one sync.  Returns -1 (with the last error) if any could not be acked. */
int mq_sub_ack_batch(mq_sub *, struct mq_msg *const *, size_t n);

/* How a message is given back (NULL: at once, as a failure). */
struct mq_nack {
	double delay;                    /* seconds until it is pending again */
	int deferred;                    /* "again later" (exit 75): no failure */
	int status;                      /* the handler's exit status, or -1 */
	const char *detail;              /* for the dead-letter record */
	const char *tail;                /* the handler's stderr, its last bytes */
	size_t tail_len;
};
/* Gives a message back for another delivery, or dead-letters it when it
 * has failed the group's max-attempts times: returns 0 or 1 (dead). */
int mq_sub_nack(mq_sub *, const struct mq_msg *, const struct mq_nack *);
/* Dead-letters a message at once, with the reason "rejected". */
int mq_sub_reject(mq_sub *, const struct mq_msg *, const struct mq_nack *);
/* Moves the lease deadline to now + seconds; the receipt stays valid. */
int mq_sub_extend(mq_sub *, struct mq_msg *, double seconds);
/* Runs `sh -c cmd` for a message: body on stdin, MQ_ID, MQ_TOPIC,
 * MQ_GROUP, MQ_KEY, MQ_RECEIPT, MQ_PARTITION, MQ_SEQ, MQ_ATTEMPTS in its
 * environment; extends the lease every lease/3 seconds while it runs;
 * after timeout seconds (> 0) sends SIGTERM, 5 s later SIGKILL.  Its
 * stderr passes through to ours; the last 4 KiB are kept in the result. */
struct mq_handler_result {
	int status;                      /* exit status, 128 + signal if killed */
	int timed_out;                   /* stopped after its timeout */
	int stopped;                     /* stopped when the grace period ended */
	char tail[4096];
	size_t tail_len;
	char *out;                       /* with capture: its stdout (free it) */
	size_t out_len;
};
int mq_sub_run(mq_sub *, struct mq_msg *, const char *cmd, double timeout,
    int capture, struct mq_handler_result *);
/* Runs the handler for a message and settles it (see mq-sub(1), --exec):
 * exit 0 acks, after publishing its output lines to publish_to if set;
 * 75 (or a stop at the end of the grace period) gives it back as a
 * deferral; anything else, or the timeout, is a failure that comes back
 * after its backoff, or is dead-lettered at the last attempt; with hold,
 * a failure stays claimed until mq_sub_release_held.  Takes m.  Returns
 * the outcome, or -1; *out's note is a one-line warning worth showing
 * (empty when there is none). */
struct mq_handling {
	const char *cmd;
	double timeout;                  /* seconds; 0: none */
	double backoff, backoff_max;     /* see mq_backoff */
	int hold;
	struct mq_pub *publish_to;
	/* The handler's output goes back as the reply to a request that
	 * has Reply-To (mq_reply_send), whatever its exit status. */
	int reply;
};
enum {
	MQ_HANDLED_ACKED, MQ_HANDLED_RETRY, MQ_HANDLED_DEAD, MQ_HANDLED_HELD,
	MQ_HANDLED_STOPPED,
};
struct mq_handled {
	int status;                      /* the handler's exit status */
	char note[512];
};
int mq_sub_handle(mq_sub *, struct mq_msg *, const struct mq_handling *,
    struct mq_handled *out);
/* Request and reply (reply.c; mq-req(1), mq-spool(5) REPLIES).  A caller
 * opens a box, SPOOL/replies/<deadline>.<hex>, publishes its request
 * with the box's name as Reply-To and a Correlation-Id, and waits; the
 * reply is the file replies/<box>/reply, whole.  A box past its deadline
 * (and a grace) is removed by the next caller; a reply that finds none
 * is late: dropped, and counted in replies/.late. */
struct mq_reply_box {
	char name[64];                   /* the Reply-To */
	char correlation[33];            /* a Correlation-Id for it */
	int dfd, fd, ifd, wfd;           /* the box's FIFO, both ends */
	double poll;
};
struct mq_reply {
	const char *correlation;         /* Correlation-Id */
	const char *request;             /* In-Reply-To: the request's id */
	int status;                      /* the handler's exit status */
	const void *body;
	size_t len;
};
bool mq_is_reply_box(const char *name);
/* The box is writable by its caller and by those who may consume topic
 * (which exists), no one else; a reply in it whose Correlation-Id is not
 * the box's is refused: removed, counted as a line in replies/.refused,
 * and waited past. */
int mq_reply_box_open(mq_spool *, const char *topic, double timeout,
    struct mq_reply_box *);
/* 1 with the reply file's bytes (the caller frees them), 0 when none came
 * within timeout seconds. */
int mq_reply_wait(struct mq_reply_box *, double timeout, char **buf,
    size_t *len);
void mq_reply_box_close(struct mq_reply_box *);
/* 0 sent, 2 late (dropped and counted); EX_DATAERR for a Reply-To that is
 * no box or a request without a Correlation-Id. */
int mq_reply_send(mq_spool *, const char *box, const char *group,
    const struct mq_reply *);
/* 1 when the caller waiting in box is done (its box is gone) or gave up
 * (its deadline passed): the request is late, counted as its reply would
 * be; 0 when not (or box is no box: mq_reply_send says so). */
int mq_reply_expired(mq_spool *, const char *box, const char *group,
    const char *request);
/* Exactly-once groups keep the reply to a request with an idempotency
 * key as its ledger entry, done/<id> (donefd: the group's done/ in the
 * request's partition), synced, so that a repeat of the request gets it
 * too.  _kept waits up to timeout for the reply kept for request id by
 * any group of topic: 1 with its bytes (the caller frees them), 0 when
 * none came. */
int mq_reply_keep(int donefd, const struct mq_reply *);
int mq_reply_kept(mq_spool *, const char *topic, const char *id,
    double timeout, char **buf, size_t *len);
/* A reply file read into r (pointers into buf, which it changes). */
int mq_reply_parse(char *buf, size_t len, struct mq_reply *r);
/* A reply as one line of JSON (format.c): correlation_id, in_reply_to,
 * status, and body (or body_base64), as mq_msg_write_json writes one. */
int mq_reply_write_json(const struct mq_reply *, FILE *);
/* A reply through a format of mq-sub(1): %s and %S its body, %i the
 * request's id, %t its topic, %h and %{Name}h the reply's headers
 * (Correlation-Id, In-Reply-To, Mq-Reply-Status); the tokens of a
 * stored message (%p %o %k %K %r %a %T %P) are empty or 0. */
int mq_reply_write_format(const struct mq_reply *, const char *topic,
    const char *fmt, FILE *);
/* A user header's value (its name compared without case), or NULL. */
const char *mq_msg_header_value(const struct mq_msg *, const char *name);

/* A message as mq-sub(1) writes it (msgout.c): nothing (quiet), JSON,
 * a format, or else its body and a newline, or a NUL with nul. */
struct mq_msg_output {
	int quiet, json, nul;
	const char *format;             /* NULL: none */
};
int mq_msg_write(const struct mq_msg *, const struct mq_msg_output *,
    FILE *);
/* mq-sub(1)'s run (subloop.c): receives messages and writes each to out
 * (flushed, then acked unless manual), or with exec hands each to
 * mq_sub_handle, until count of them (0: no limit), or the timeout
 * (seconds; without follow, the wait for the first message, then none;
 * with follow, for each, <= 0 forever), or *stop.  Messages the filter
 * refuses are acked unseen.  What goes wrong along the way without
 * ending the run is told to warn: a note, or NULL for the library's
 * error.  0 with *r set, or -1: an error of the subscription or filter,
 * or (out_errno set) the output failed, what it held given back. */
struct mq_consume {
	unsigned long count;
	double timeout;
	int follow, manual;
	mq_filter *filter;               /* NULL: none */
	const struct mq_handling *exec;  /* NULL: write to out */
	FILE *out;
	struct mq_msg_output output;
	const volatile int *stop;
	void (*warn)(const char *note, void *ctx);
	void *ctx;
};
struct mq_consumed {
	unsigned long delivered;
	int held;                        /* a handler refused a message:
					    it comes again later */
	int out_errno;
};
int mq_sub_consume(mq_sub *, const struct mq_consume *,
    struct mq_consumed *r);
/* -j: n more processes, each to run as this one does: 1 here, with
 * their pids in pids[0..*started) as they start (for a signal handler
 * to pass signals on); 0 in each of them (*started 0); -1 if a fork
 * failed (EX_OSERR), those started left running.  _join waits for them
 * and gives the run's status from this one's (rc) and theirs: an error
 * first, then 75 (a message given back), then 0 (something delivered),
 * else 1. */
int mq_sub_workers_start(pid_t *pids, unsigned long n,
    unsigned long *started);
int mq_sub_workers_join(int rc, const pid_t *pids, unsigned long n);
/* Renews the leases of held messages; call it between messages. */
int mq_sub_keep_held(mq_sub *);
/* Gives the held messages back (after their backoff); *dead counts
 * those that went to the dead letters. */
int mq_sub_release_held(mq_sub *, size_t *dead);
/* Publishes each line of out as a message of p whose idempotency key is
 * "<id>.<n>" (the n-th line): the outputs of a message handled twice
 * exist once. */
int mq_pub_outputs(struct mq_pub *p, const char *id, const char *out,
    size_t len);
/* The delay before the n-th retry: base * 2^(n-1), at most max, with
 * jitter (between half and all of it). */
double mq_backoff(double base, double max, unsigned n);
/* The lease this subscription claims with, and the group's max-attempts. */
double mq_sub_lease(const mq_sub *);
unsigned mq_sub_max_attempts(const mq_sub *);
/* True when the topic's filesystem is polled rather than watched. */
int mq_sub_polling(const mq_sub *);
void mq_sub_close(mq_sub *);

/* Receipts, for settling from another process.  A receipt stays valid
 * while its claim lasts, extensions included. */
int mq_receipt_ack(mq_spool *, const char *topic, const char *group,
    const char *receipt);
int mq_receipt_nack(mq_spool *, const char *topic, const char *group,
    const char *receipt, const struct mq_nack *);
int mq_receipt_reject(mq_spool *, const char *topic, const char *group,
    const char *receipt, const struct mq_nack *);
int mq_receipt_extend(mq_spool *, const char *topic, const char *group,
    const char *receipt, double seconds);
/* 1 while the claim a receipt names lasts (its lease not passed), 0 once
 * it is settled or its lease ended; -1 for a receipt that is none. */
int mq_receipt_held(mq_spool *, const char *topic, const char *group,
    const char *receipt);

/* Dead letters */
struct mq_dead {
	char *topic, *group;
	unsigned partition;
	char id[MQ_ID_LEN + 1];
	uint64_t seq;
	char *name;                      /* in p<k>/dlq/<group>/ */
	unsigned attempts;
	char *reason, *detail, *time;    /* from the record ("" if none) */
	double when;                     /* time, in seconds since the epoch */
	int status;                      /* handler exit status, or -1 */
	char *tail;                      /* handler's stderr tail, or NULL */
	size_t tail_len;
};
/* The dead letters of one group (or of every group when group is NULL),
 * by group, partition and sequence. */
int mq_dlq_list(mq_spool *, const char *topic, const char *group,
    struct mq_dead **out, size_t *n);
void mq_dead_free(struct mq_dead *, size_t n);
int mq_dlq_read(mq_spool *, const struct mq_dead *, struct mq_msg **out);
/* Returns 0 done, 1 when another process took it first, -1 on error.
 * Redrive puts it back in its group's queue with attempts starting again,
 * or, with to_topic, publishes a copy there. */
int mq_dlq_redrive(mq_spool *, const struct mq_dead *, const char *to_topic);
int mq_dlq_purge(mq_spool *, const struct mq_dead *);
/* Export writes the dead letters of a topic (of one group, or of every
 * group when group is NULL) to a tar archive at path ("-": standard
 * output), removing nothing; *count gets how many.  Import reads such an
 * archive and checks all of it before it changes anything (a damaged,
 * truncated or foreign archive is EX_DATAERR); it then creates missing
 * topics and groups with the defaults and makes each one a dead letter
 * of its group again, skipping those already there: *count gets how many
 * it added.  See mq-dlq(1) for the archive's layout. */
int mq_dlq_export(mq_spool *, const char *topic, const char *group,
    const char *path, size_t *count);
int mq_dlq_import(mq_spool *, const char *path, size_t *count);
/* The outputs of mq-dlq(1), 0 or -1 as mq-stat's: list, a row per dead
 * letter after a heading (when n is not 0), or one JSON array on one
 * line; show, a dead letter's record, before its message. */
int mq_dead_write_table(const struct mq_dead *, size_t n, FILE *);
int mq_dead_write_json(const struct mq_dead *, size_t n, FILE *);
int mq_dead_write_record(const struct mq_dead *, FILE *);

/* Replication keys (mq-protocol(5), REPLICATION KEYS): an Ed25519 key
 * pair per spool in SPOOL/replicate/, and the public keys of the peers
 * it accepts. */
#define MQ_PUBKEY_BYTES 32
#define MQ_PUBKEY_HEX 64
struct mq_identity {
	unsigned char pk[MQ_PUBKEY_BYTES];
	unsigned char sk[64];
};
/* Makes a key pair (name: a label for key.pub, NULL: the host name);
 * refuses to replace a key unless replace.  pub gets the public key. */
int mq_keys_generate(mq_spool *, const char *name, int replace,
    char pub[MQ_PUBKEY_HEX + 1]);
int mq_identity_load(mq_spool *, struct mq_identity *);
void mq_identity_forget(struct mq_identity *);
/* The spool's public key, computed from its secret key (not key.pub). */
int mq_keys_public(mq_spool *, char pub[MQ_PUBKEY_HEX + 1]);
int mq_pubkey_parse(const char *hex, unsigned char pk[MQ_PUBKEY_BYTES]);
/* Publisher keys (mq-pub(1), --sign): a key pair in a file of its own,
 * written as the spool's key is, with the magic line "mq-publisher-key 1",
 * mode 0600.  Generate never replaces a file (EX_CANTCREAT); pub gets the
 * public key. */
int mq_signkey_generate(const char *path, char pub[MQ_PUBKEY_HEX + 1]);
int mq_signkey_load(const char *path, struct mq_identity *);
void mq_pubkey_hex(const unsigned char pk[MQ_PUBKEY_BYTES],
    char out[MQ_PUBKEY_HEX + 1]);
/* 1 (its name in name), 0 not authorized, -1 error. */
int mq_peer_authorized(mq_spool *, const unsigned char pk[MQ_PUBKEY_BYTES],
    char *name, size_t len);
/* Adds a peer: 1 added, 0 it was there. */
int mq_peer_authorize(mq_spool *, const char *hex, const char *name);
/* Removes a peer from authorized_peers: every line with the key what (64
 * hexadecimal digits) or, if what is no key, with the name what; pub
 * gets the key.  None is EX_NOINPUT; a name of several keys EX_USAGE.
 * A live session with that key ends at its next frame (mq_link_recv,
 * mq_link_send look again at most once a second). */
int mq_peer_revoke(mq_spool *, const char *what, char pub[MQ_PUBKEY_HEX + 1]);

/* Sealed topics (mq-topic(1), KEYS; mq-spool(5), SEALED BODIES): a topic
 * with keys has every body published into it encrypted to those X25519
 * public keys; a consumer opens them with its secret key. */
#define MQ_SEAL_KEYS_MAX 64
typedef struct mq_seal_key mq_seal_key;
/* Makes a consumer key pair in a new file at path (mode 0600; an existing
 * file is EX_CANTCREAT); pub gets the public key. */
int mq_seal_keygen(const char *path, char pub[MQ_PUBKEY_HEX + 1]);
/* A consumer's secret key, from its file (free with mq_seal_key_free). */
mq_seal_key *mq_seal_key_load(const char *path);
void mq_seal_key_pub(const mq_seal_key *, char pub[MQ_PUBKEY_HEX + 1]);
void mq_seal_key_free(mq_seal_key *);
/* The topic's keys, in hex (free with mq_strv_free); none: plain. */
int mq_topic_keys(mq_spool *, const char *topic, char ***keys, size_t *n);
/* Adds public keys (hex): returns how many were new.  Refused (EX_CONFIG)
 * while a group of the topic has a jq filter. */
int mq_topic_key_add(mq_spool *, const char *topic, const char *const *hex,
    size_t n);
/* Removes one (EX_NOINPUT if absent; the last one is refused, EX_USAGE). */
int mq_topic_key_remove(mq_spool *, const char *topic, const char *hex);

/* The channel between two replication peers over a pair of descriptors:
 * frames of at most MQ_FRAME_MAX bytes.  With an identity (me) a
 * handshake authenticates both ends against their spools'
 * authorized_peers and encrypts every frame; without one (over ssh) the
 * frames are plain.  A timeout (seconds; 0: none) bounds the whole
 * handshake: past it, EX_PROTOCOL.  See mq-protocol(5), REPLICATION
 * CHANNEL. */
#define MQ_FRAME_MAX (MQ_MESSAGE_MAX_LIMIT + 1024 * 1024)
typedef struct mq_link mq_link;
mq_link *mq_link_open(int in, int out, mq_spool *, const struct mq_identity *me,
    int initiator, double timeout);
/* The peer's long-term key (NULL on a plain link) and its name. */
const unsigned char *mq_link_peer(const mq_link *, const char **name);
int mq_link_send(mq_link *, const void *buf, size_t len);
/* 1 with *buf (valid until the next call) and *len, 0 at the end (on
 * a secure link: the peer's mq_link_end; a cut connection is an error). */
int mq_link_recv(mq_link *, const void **buf, size_t *len);
/* Whether the peer's next frame has come whole (it is in the kernel's
 * buffer): a recv would not wait for the peer. */
bool mq_link_waiting(mq_link *);
/* Sends the final frame of a secure link (nothing on a plain one). */
int mq_link_end(mq_link *);
void mq_link_close(mq_link *);

/* Replication (mq-replicate(1); mq-protocol(5), Session): one session
 * over an open link.  This side sends its journal (MQ_REPL_SEND) or
 * receives and applies the peer's (MQ_REPL_RECV); a responder takes the
 * role the initiator's hello leaves it (MQ_REPL_ANY). */
enum mq_repl_role { MQ_REPL_ANY, MQ_REPL_SEND, MQ_REPL_RECV };
struct mq_repl_opts {
	int follow;                     /* wait for new changes, never end */
	int progress;                   /* an updating line on stderr */
	int compare;                    /* first compare all by hash */
	/* Messages for the log: syslog priorities (LOG_ERR, LOG_INFO...). */
	void (*log)(int prio, const char *msg, void *ctx);
	void *ctx;
	const volatile int *stop;       /* set (by a signal): end cleanly */
	const char *address;            /* of the peer, for status */
	/* Set once the peer's hello came: from then on the peer is told of
	 * our errors (an ERROR frame) and reports them itself, so a server
	 * on ssh's standard error need not print them twice. */
	int *hello_done;
	/* Set, if not NULL, once the session moved replication on: the
	 * peer confirmed more (sending) or a batch was applied and made
	 * durable (receiving), however the session ended.  A retry loop
	 * starts its backoff again after such a session. */
	int *advanced;
	/* mq-replicate demote (a pull): first the peer's vector, then this
	 * spool's own messages the peer lacks are quarantined and its epoch
	 * adopted (mq-protocol(5), Demote); *demoted, if not NULL, says so. */
	int demote;
	struct mq_demoted {
		int done;               /* the demote steps were all taken */
		size_t quarantined;     /* messages in replicate/quarantine/ */
		uint64_t epoch;         /* adopted */
	} *demoted;
};
int mq_repl_session(mq_spool *, mq_link *, enum mq_repl_role, int initiator,
    const struct mq_repl_opts *);
/* A session over its transport (replrun.c).  The initiator reaches its
 * peer at address over TCP, secure with this spool's key, or with rsh
 * runs "RSH COMMAND serve --stdio [-s SPOOL]" (mq_rsh_spawn) and talks
 * plain over its pipes; a command that could not run (127) is
 * EX_UNAVAILABLE.  _serve_one is the responder on in and out, secure or
 * plain; a stranger has timeout seconds to show it holds an authorized
 * key.  _serve is the daemon: it listens on addr and serves each
 * connection in a child process, at most max at a time (more are closed
 * at once and logged), until *o->stop; it catches SIGCHLD meanwhile.
 * All of them log through o->log. */
struct mq_repl_peer {
	const char *address;            /* HOST:PORT; unused with rsh */
	const char *rsh, *command, *spool;
};
int mq_repl_connect(mq_spool *, const struct mq_repl_peer *,
    enum mq_repl_role, const struct mq_repl_opts *);
int mq_repl_serve_one(mq_spool *, int in, int out, int secure,
    double timeout, const struct mq_repl_opts *);
int mq_repl_serve(mq_spool *, const char *addr, unsigned long max,
    double timeout, const struct mq_repl_opts *o);
/* Waits until n peers have what goal says (mq_pub_replica_goal): 0, or
 * 1 at the timeout (*got: how many had). */
int mq_replicas_wait(mq_spool *, const struct mq_replica_goal *,
    unsigned n, double timeout, unsigned *got);
struct mq_peer_status {
	char id[MQ_ID_LEN + 1];
	char name[128];                 /* "": none (shown by its id) */
	char address[256];
	int connected;                  /* a session holds peers/<id>.live */
	double contact;                 /* last confirmation or ping */
	uint64_t confirmed, journal;    /* offsets in this spool's journal */
	uint64_t lag_bytes;             /* after confirmed, with what the
					 * hosts' journals hold unmerged */
	uint64_t records;               /* records not yet confirmed */
	double lag;                     /* age of the oldest of them, s */
};
struct mq_repl_self;
/* The peers, each with its lag, and (when self is not NULL) what is
 * said of the spool itself. */
int mq_repl_status(mq_spool *, struct mq_peer_status **, size_t *n,
    struct mq_repl_self *);
/* The peers this spool knows, one per file replicate/peers/<id>, sorted
 * by id, without the lag figures (*v the caller's to free; none when the
 * spool never sent).  What they have not confirmed is what the journal
 * must keep for them; a forgotten peer is not among them. */
int mq_repl_peers(mq_spool *, struct mq_peer_status **v, size_t *n);
/* The known peer that what names: its spool id, a prefix of it of at
 * least 8 hexadecimal digits, or its name; id gets its id.  None is
 * EX_NOINPUT, several EX_USAGE (the message lists them). */
int mq_repl_peer_find(mq_spool *, const char *what, char id[MQ_ID_LEN + 1]);
/* Forgets that peer (mq-protocol(5), REPLICATION STATE): removes
 * replicate/peers/<id>, so that status, mq-stat and the journal no
 * longer count it; EX_TEMPFAIL while a session with it is live.  id, if
 * not NULL, gets its id. */
int mq_repl_forget(mq_spool *, const char *what, char id[MQ_ID_LEN + 1]);
/* Finishes what an interrupted receive left and marks the spool
 * primary; fails with EX_TEMPFAIL while a receiver runs. */
int mq_repl_promote(mq_spool *, size_t *repaired, uint64_t *epoch);

/* Epochs and fencing (fenced.c; mq-protocol(5), REPLICATION STATE): the
 * spool's epoch, replicate/epoch (0 when missing; EX_DATAERR when
 * damaged); and replicate/fenced, which a spool records when it learns
 * that another was promoted past it: 1 with *f, 0 when not fenced, -1
 * (EX_DATAERR when damaged). */
#define MQ_EPOCH_DIGITS 10
#define MQ_EPOCH_MAX 4294967295ull
int mq_epoch_read(mq_spool *, uint64_t *epoch);
struct mq_fence {
	uint64_t epoch;                 /* the newer epoch */
	char peer[MQ_ID_LEN + 1];       /* the spool at that epoch */
	char name[128];                 /* its name, "" when it has none */
	double at;                      /* when this spool learned it */
};
int mq_fence_read(mq_spool *, struct mq_fence *f);
/* What status says of the spool itself. */
struct mq_repl_self {
	size_t quarantined;             /* files in replicate/quarantine/ */
	uint64_t epoch;
	int fenced;                     /* then fence says by whom */
	struct mq_fence fence;
};

/* Transports of replication (net.c): TCP (an address is HOST:PORT,
 * [IPV6]:PORT, or PORT on 127.0.0.1), and a command run by sh(1) as
 * "RSH COMMAND serve --stdio [-s SPOOL]" whose standard input and output
 * are the channel. */
int mq_net_listen(const char *addr);
int mq_net_accept(int listener);
int mq_net_connect(const char *addr);
/* The address at the other end of a socket, as HOST:PORT; "-" if fd is
 * not one (a pipe from ssh). */
const char *mq_net_peer(int fd, char *buf, size_t len);
int mq_rsh_spawn(const char *rsh, const char *command, const char *spool,
    int *in, int *out, pid_t *pid);

/* Output of a message: JSON object on one line, or a kcat-style format
 * (see mq-sub(1)).  mq_format_check validates a format string. */
int mq_msg_write_json(const struct mq_msg *, FILE *);
int mq_format_check(const char *fmt);
int mq_msg_write_format(const struct mq_msg *, const char *fmt, FILE *);

/* mq-http(1): the spool served over HTTP (lib/http).  Requests carry a
 * bearer token (JWT) verified with the keys named here; see mq-http(1)
 * for the routes and what a token's scope allows. */
struct mq_http_conf {
	const char *spool;               /* NULL: the default spool */
	const char *listen;              /* HOST:PORT, [IPV6]:PORT or PORT
					    (on 127.0.0.1); NULL: 8080 */
	int listen_fd;                   /* >= 0: a socket listening already
					    (systemd), instead of listen */
	const char *cert_file, *key_file; /* TLS: both PEM, or neither */
	int plain_anywhere;              /* plain HTTP on an address that is
					    not loopback */
	unsigned max_connections;        /* 0: 256 */
	size_t max_body;                 /* bytes of a request body; 0: 16 MiB */
	double rate;                     /* requests a second per token
					    (a burst of as many); 0: any */
	double max_wait;                 /* the longest ?wait=; 0: 60 s */
	const char *const *secret_files; /* HS256/384/512 secrets */
	size_t nsecret;
	const char *const *key_files;    /* PEM public keys (RS*, ES*) */
	size_t nkey;
	const char *const *jwks_files;   /* JWKS files (RS*, ES*) */
	size_t njwks;
	const char *audience, *issuer;   /* NULL: not checked */
	double leeway;                   /* seconds allowed to exp and nbf */
	const char *const *origins;      /* web pages that may call it (CORS):
					    "https://host[:port]", or "*" */
	size_t norigins;
	/* A line per request, and what goes wrong (NULL: nothing said). */
	void (*log)(const char *line, void *ctx);
	void *log_ctx;
};
/* Serves until stop_fd is readable (a byte written into a pipe by a
 * signal handler): then takes no new connection, lets the requests in
 * flight end (waits and streams end at once, giving back what their
 * clients did not acknowledge), and returns 0; -1 with the error if it
 * could not start. */
int mq_http_serve(const struct mq_http_conf *, int stop_fd);

#endif
