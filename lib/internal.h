/*
 * internal.h: private to lib/.  Tools include only mq.h.
 */
#ifndef MQ_INTERNAL_H
#define MQ_INTERNAL_H

#include <sys/types.h>
#include <sys/stat.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>

#include "mq.h"

#define MQ_SEQ_DIGITS 20
/* The largest sequence number, in a KEY and in the journal: seq + 1 (a
 * head's next, a vector's next-seq) must fit in 64 bits.  A partition
 * whose committed is past it is full. */
#define MQ_SEQ_MAX (UINT64_MAX - 1)
#define MQ_KEY_LEN (MQ_SEQ_DIGITS + 1 + MQ_ID_LEN)      /* "<seq>.<id>" */
#define MQ_CHUNK_MAX 4096
#define MQ_STALE_TMP 3600.0


/* spool.c: 0, or -1 (EX_SOFTWARE) when sp was opened read-only: the
 * places that would create or write something through sp ask first. */
int mq_spool_writable(const mq_spool *sp);
/* spool.c: a duration from the environment (dflt when it is unset,
 * empty or bad); a number or a size with K, M, G or T (powers of 1024). */
double mq_env_duration(const char *name, double dflt);
int mq_size_parse(const char *s, double *out);

/* perm.c: permissions on one directory, or on it and all below. */
int mq_perm_apply(int dfd, const char *what, const struct mq_perm *);
int mq_perm_apply_tree(int dfd, const char *what, const struct mq_perm *);
/* The kinds of directory of a topic that roles tell apart; see
 * mq-spool(5), PERMISSIONS, Roles. */
enum mq_dir_kind {
	MQ_DIR_TOPIC,           /* topics/T */
	MQ_DIR_STATS,           /* T/stats */
	MQ_DIR_GROUPS,          /* T/groups */
	MQ_DIR_PARTITION,       /* T/p<k> */
	MQ_DIR_LOG,             /* p<k>/log */
	MQ_DIR_DEDUP,           /* p<k>/dedup */
	MQ_DIR_GROUPS_OF,       /* p<k>/g */
	MQ_DIR_GROUP,           /* p<k>/g/G */
	MQ_DIR_QUEUE,           /* p<k>/g/G/new, delay: publishers link in */
	MQ_DIR_DLQ,             /* p<k>/dlq */
	MQ_DIR_KINDS
};
/* Gives directory dfd (path what, for errors), of kind kind in a topic
 * with roles r, the access and default ACL the roles need; nothing if r
 * has none.  EX_UNAVAILABLE where the file system has no ACLs. */
int mq_perm_dir(int dfd, const char *what, const struct mq_roles *r,
    enum mq_dir_kind kind);
/* The same for path below dirfd, made there with mq_mkdir first. */
int mq_perm_mkdir(int dirfd, const char *path, const struct mq_roles *r,
    enum mq_dir_kind kind);
/* mq_perm_apply, and the roles' ACL of the topic directory (made
 * before the mode's default ACL can be). */
int mq_perm_topic(int dfd, const char *what, const struct mq_perm *,
    const struct mq_roles *);
/* Makes each of the n directories dir/name (name alone when dir is
 * NULL) of v, in order, as mq_perm_mkdir does. */
struct mq_dir_spec {
	const char *name;
	enum mq_dir_kind kind;
};
int mq_perm_mkdirs(int dirfd, const char *dir, const struct mq_dir_spec *v,
    size_t n, const struct mq_roles *r);
struct mq_conf;
/* topic.conf's role keys: added to kv, or read from it. */
int mq_roles_conf_add(struct mq_conf *kv, const struct mq_roles *);
int mq_roles_conf_get(const struct mq_conf *kv, struct mq_roles *);

/* seal.c: makes a topic's keys those of a replication peer's keys file
 * (text): 1 if they changed, 0 if they were those; EX_DATAERR for a file
 * no tool writes, EX_CONFIG if a group has a jq filter. */
int mq_topic_keys_adopt(mq_spool *, const char *topic, const char *text,
    size_t len);

/* error.c */
int mq_err(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int mq_err_sys(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int mq_errno_code(int e);
/* The last error, with code to instead of from; returns -1. */
int mq_err_recode(int from, int to);

/* beneath.c: openat(2) that resolves every component of path beneath
 * dirfd and follows no symbolic link, at any level. */
int mq_openat(int dirfd, const char *path, int flags, ...);
/* The directory of path's last component opened beneath dirfd (*fd;
 * dirfd itself for a single name), *name that component; -1 with errno.
 * mq_parent_close(dirfd, *fd) after. */
int mq_parent_open(int dirfd, const char *path, const char **name, int *fd);
void mq_parent_close(int dirfd, int fd);
/* The same for these calls: a path's directories opened beneath dirfd. */
int mq_unlinkat(int dirfd, const char *path, int flags);
int mq_fstatat(int dirfd, const char *path, struct stat *, int flags);
int mq_faccessat(int dirfd, const char *path, int mode, int flags);
int mq_renameat(int olddir, const char *oldpath, int newdir,
    const char *newpath);
int mq_linkat(int olddir, const char *oldpath, int newdir,
    const char *newpath, int flags);

/* fs.c: files relative to directory descriptors, never following links. */
int mq_path(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int mq_dir_open(int dirfd, const char *path);
/* An inotify watch on ifd for what fd is open on: its descriptor. */
int mq_watch(int ifd, int fd, uint32_t mask);
int mq_dir_open_partition(int dirfd, const char *path);
int mq_mkdir(int dirfd, const char *path);
int mq_mkdirs(int dirfd, const char *path);
int mq_fsync_fd(int fd);
int mq_fsync_at(int dirfd, const char *path);      /* a directory */
/* The directory holding the last name of path (*last), opened without
 * following a link on the way; a descriptor to close. */
int mq_dir_walk(int dirfd, const char *path, const char **last);
/* Removes path and all it holds, following no link at any level. */
/* An entry that stands for a message: unlinked, or removed whole where
 * someone put a directory (it went through the queues as one); 0, or -1
 * with errno. */
int mq_remove_entry(int dirfd, const char *name);
int mq_rmtree(int dirfd, const char *path);
/* Opens a spool file as openat does (flags, mode): never through a link,
 * never waiting on a FIFO, and
 * only a regular file (else EX_DATAERR, "not a regular file", errno not
 * ENOENT).  st, if
 * not NULL, gets its stat.  O_NONBLOCK stays set, which changes nothing
 * for a regular file. */
int mq_file_open(int dirfd, const char *path, int flags, mode_t mode,
    struct stat *st);
/* A whole file of at most max bytes, NUL-terminated (EX_DATAERR if
 * larger); _st gives its stat too.  mq_read_full: up to size bytes of fd,
 * however many reads it takes: how many (fewer at EOF), or -1. */
int mq_read_at(int dirfd, const char *path, size_t max, char **buf,
    size_t *len);
int mq_read_at_st(int dirfd, const char *path, size_t max, char **buf,
    size_t *len, struct stat *st);
ssize_t mq_read_full(int fd, char *buf, size_t size);
/* All of iov[0..n) written (writev, as often as it takes): 0, or -1 with
 * errno.  mq_iov_advance: iov and n past done bytes, for such a loop. */
struct iovec;
int mq_write_all(int fd, struct iovec *iov, int n);
void mq_iov_advance(struct iovec **iov, int *n, size_t done);
int mq_write_file(int dirfd, const char *path, const void *data, size_t len,
    int sync, int replace);
/* The same, synced and replacing, with the file's mode set to mode. */
int mq_write_file_mode(int dirfd, const char *path, const void *data,
    size_t len, mode_t mode);

struct mq_names {
	char **v;
	size_t n, cap;
};
/* Lists the entries of a directory (no dot files), optionally filtered,
 * sorted by strcmp.  The names are owned by the list. */
int mq_names_read(int dirfd, bool (*keep)(const char *), struct mq_names *);
int mq_names_reread(DIR *, bool (*keep)(const char *), struct mq_names *);
DIR *mq_dir_stream(int dirfd);
int mq_names_push(struct mq_names *, const char *name, size_t len);
void mq_names_sort(struct mq_names *);
void mq_names_free(struct mq_names *);
uint64_t mq_dir_count(int dirfd, bool (*keep)(const char *));

/* sharedfs.c: file systems shared between hosts (NFS, FUSE, ...). */
bool mq_fs_shared(int fd);
/* fd's file opened again, with flags (O_DIRECT dropped where refused). */
int mq_reopen(int fd, int flags);
/* fd's file opened again to be read as the server has it now; readonly
 * (a monitor's read): without the fallocate that drops a cache, so
 * nothing is written, and a copy a second old may be read. */
int mq_fresh_fd(int fd, bool readonly);
/* pread through such a descriptor, which wants alignment. */
ssize_t mq_fresh_pread(int fd, void *buf, size_t len, uint64_t off);
/* The size the server has now, and what it has past it. */
int mq_fresh_size(int fd, bool readonly, uint64_t *size);
/* A link, rename or exclusive create of path failed with err because
 * the name exists. */
bool mq_name_taken(int dirfd, const char *path, int err);
/* Locks on fd's file exclude only processes of this host (sshfs). */
bool mq_fs_locks_local(int fd);

/* conf.c: key=value text files. */
struct mq_conf {
	char **keys, **vals;
	size_t n;
};
int mq_conf_parse(const char *text, size_t len, const char *what,
    struct mq_conf *);
int mq_conf_read(int dirfd, const char *path, struct mq_conf *);
const char *mq_conf_get(const struct mq_conf *, const char *key);
int mq_conf_get_u64(const struct mq_conf *, const char *key, uint64_t dflt,
    uint64_t *out, const char *what);
int mq_conf_get_double(const struct mq_conf *, const char *key, double dflt,
    double *out, const char *what);
int mq_conf_set(struct mq_conf *, const char *key, const char *val);
void mq_conf_del(struct mq_conf *, const char *key);
int mq_conf_add(struct mq_conf *, const char *key, const char *val);
int mq_conf_addf(struct mq_conf *, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
char *mq_conf_escape(const char *s);
char *mq_conf_unescape(const char *s);
int mq_conf_render(const struct mq_conf *, char **out);
void mq_conf_free(struct mq_conf *);

/* id.c */
void mq_id_new(char out[MQ_ID_LEN + 1]);
void mq_hex_random(char *out, size_t nhex);
/* This host's name, with every character but A-Za-z0-9- made '-'. */
#define MQ_HOST_MAX 64
void mq_hostname(char out[MQ_HOST_MAX]);
bool mq_is_host(const char *);          /* a name mq_hostname may make */

/* counters.c: publish and ack counters and publish-to-ack latencies,
 * one file per host (mq-spool(5), COUNTERS).  Counting never fails. */
#define MQ_LATENCY_MINUTES 5            /* percentiles: now and 5 before */
void mq_count_published(mq_spool *, const char *topic, uint64_t n,
    double now);
void mq_count_acked(mq_spool *, const char *topic, const char *group,
    double now, double published);
void mq_counters_close(mq_spool *);
struct mq_counts {                      /* every host's, added up */
	uint64_t total;                 /* since the files were made */
	double sum;                     /* of latencies, s */
	double rate[3];                 /* per second over 1, 5, 15 min */
	double latency[4];              /* p50, p90, p99, max (s); -1: none */
	uint64_t window_count;          /* acks the latencies are of */
	unsigned hosts;
};
/* The counts of directory path (a topic's stats/ or a group's .stats/;
 * missing: all zero); latency: read the histograms too. */
int mq_counts_read(int dirfd, const char *path, bool latency, double now,
    struct mq_counts *);

/* names.c: entry names inside a partition. */
bool mq_pattern_match(const char *pattern, const char *topic);
const char *mq_shown(const char *s, char *buf, size_t len);
bool mq_name_ok(const char *name);    /* mq_name_check, silent */
bool mq_is_id(const char *s, size_t len);  /* 32 lowercase hex digits */
bool mq_is_key(const char *name);
bool mq_is_entry(const char *name);   /* new/ or cur/ name */
/* A number in decimal at p, without sign or leading zero, at most max,
 * into *out: the position after its digits, or NULL. */
const char *mq_decimal(const char *p, uint64_t max, uint64_t *out);
/* A topic or group name of len bytes (mq_name_check without an error). */
bool mq_is_name(const char *name, size_t len);
/* The sequence number of a name that starts with a KEY; -1 when it does
 * not, or when the number is above MQ_SEQ_MAX. */
int mq_seq_of(const char *name, uint64_t *seq);
double mq_key_time(const char *key);
struct mq_entry {
	char key[MQ_KEY_LEN + 1];
	unsigned attempts;                  /* deliveries */
	unsigned deferred;                  /* of which "again later" */
	int claimed;                        /* has a lease */
	uint64_t deadline_ms;
	char token[9];
};
int mq_entry_parse(const char *name, struct mq_entry *);
int mq_entry_new_name(const struct mq_entry *, char *buf, size_t len);
int mq_entry_cur_name(const struct mq_entry *, char *buf, size_t len);
unsigned mq_entry_failures(const struct mq_entry *);
int mq_entry_delay_name(const struct mq_entry *, uint64_t due_ms, char *buf,
    size_t len);
int mq_delay_parse(const char *name, uint64_t *due_ms, struct mq_entry *);
/* A dead letter's name in dlq/<group>/: exactly the new/ name a delivery
 * gives, KEY,a<n>[,d<m>] with n > 0. */
int mq_dead_parse(const char *name, struct mq_entry *);

/* head.c: the partition's commit record and publish lock. */
struct mq_head {
	uint64_t next, committed;
};
#define MQ_HEAD_SIZE 80
int mq_head_read(int fd, struct mq_head *);
int mq_head_write(int fd, const struct mq_head *, int sync);
int mq_head_lock(int fd, int wait);
/* An open file description write lock on all of fd: 1 taken, 0 held by
 * another (without wait), -1 an error naming what. */
int mq_file_lock(int fd, int wait, const char *what);
void mq_head_unlock(int fd);
/* To lock and write, created, or to read (O_RDONLY: no lock).  Writing
 * is 0 and creating 1, as the int this was, so a caller written against
 * that still gets a descriptor that can lock. */
enum mq_head_how { MQ_HEAD_WRITE, MQ_HEAD_CREATE, MQ_HEAD_READ };
int mq_head_open(int pfd, enum mq_head_how);
int mq_head_format(const struct mq_head *, char buf[MQ_HEAD_SIZE + 1]);
/* How many sequence numbers are left after committed. */
uint64_t mq_head_room(const struct mq_head *);

/* spool.c */
struct mq_spool {
	char *path;
	int fd;
	int topics;
	int jfd;                        /* the journal, opened on first use */
	bool shared;                    /* on a file system hosts share */
	bool readonly;                  /* opened with MQ_READONLY */
	struct mq_counter *counters;    /* counters.c, opened on first use */
};

struct mq_topic;
/* journal.c: SPOOL/journal, the change journal (mq-spool(5), CHANGE
 * JOURNAL).  Records are built in a buffer and written with one write. */
#define MQ_JLINE_MAX 262144          /* a P record names every group */
struct mq_jbuf {
	char *buf;
	size_t len, cap;
};
int mq_journal_fd(mq_spool *);
int mq_journal_line(struct mq_jbuf *, char type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int mq_journal_raw(struct mq_jbuf *, const char *origin, uint64_t seq,
    const char *rec, size_t len);
/* An own record's text ("T ms args") sealed into the buffer. */
int mq_journal_text(struct mq_jbuf *, const char *text, size_t len);
/* Writes the buffer (and empties it) to the journal this host appends
 * to; *end: the offset after it there. */
int mq_journal_write(mq_spool *, struct mq_jbuf *, uint64_t *end);
/* Writes it to SPOOL/journal itself, synced (a replication receiver's
 * records). */
int mq_journal_write_main(mq_spool *, struct mq_jbuf *);
/* The same without the lock: the caller holds mq_journal_lock. */
int mq_journal_append_main(mq_spool *, const char *buf, size_t len,
    uint64_t *end);
void mq_jbuf_free(struct mq_jbuf *);
/* One record, built and written at once. */
int mq_journal_note(mq_spool *, char type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
uint64_t mq_journal_size(mq_spool *);
void mq_journal_change(const struct mq_topic *, char type, unsigned k,
    const char *group, const char *name);
/* The same record into a buffer, for many changes written at once. */
int mq_journal_change_add(struct mq_jbuf *, const struct mq_topic *,
    char type, unsigned k, const char *group, const char *name);
struct mq_jrec {
	char origin[MQ_ID_LEN + 1];     /* "" for this spool's own */
	uint64_t seq;                   /* in the origin's journal */
	uint64_t at, end;               /* where the line is in ours */
	char type;
	uint64_t ms;
	char *text;                     /* "T ms args", without the sum */
	size_t len;
	char *args;                     /* after the time */
};
struct mq_jreader {
	int dirfd;                      /* the spool: the journal may come later */
	int fd;
	char path[MQ_HOST_MAX + 16];    /* "journal", or "journals/<host>" */
	bool fresh;                     /* read as the server has it now */
	bool readonly;                  /* the spool's MQ_READONLY */
	char *buf;
	size_t cap, fill, off;
	uint64_t pos;                   /* journal offset of buf + off */
	uint64_t skipped;               /* lines that failed their sum */
};
/* The arguments of a record: "topic" for T; "topic k a b" for P (a the
 * KEY, b the groups), L and A (a the group, b the KEY), D, R and X (a the
 * group, b the dead letter); b points into args.  -1: not one of these
 * (a record of a later version, or damaged). */
struct mq_jargs {
	char topic[MQ_NAME_MAX + 1];
	unsigned k;
	char a[MQ_NAME_MAX + 1];
	const char *b;
};
int mq_jargs_parse(char type, const char *args, struct mq_jargs *);
/* Splits a record's line, "[@origin seq ]T ms args" (len bytes, without
 * sum or newline; line[len] is made a NUL), into rec: printable ASCII, an
 * origin of 32 lowercase hexadecimal digits, a seq of at most MQ_SEQ_MAX
 * and a time in decimal, a type A-Z (of this version or not) and
 * arguments, checked by mq_jargs_parse.  -1: not a record. */
int mq_jrec_parse(char *line, size_t len, struct mq_jrec *);
int mq_jreader_open(mq_spool *, struct mq_jreader *, uint64_t from);
/* Another journal of the spool: path is relative to it. */
int mq_jreader_open_at(mq_spool *, struct mq_jreader *, const char *path,
    uint64_t from);
/* 1 a record, 0 nothing more yet (the rest may be a line being written). */
int mq_jreader_next(struct mq_jreader *, struct mq_jrec *);
/* Reads on from offset pos (a record's start). */
void mq_jreader_seek(struct mq_jreader *, uint64_t pos);
void mq_jreader_close(struct mq_jreader *);

/* jmerge.c: the hosts' journals (journals/<host>, written on a shared
 * file system) merged into SPOOL/journal; see mq-spool(5), CHANGE
 * JOURNAL. */
/* Every journal of the spool, as paths in it: "journal" first, then
 * "journals/<host>" for each host's. */
int mq_journal_list(mq_spool *, struct mq_names *);
/* journals/.lock, waited for: its descriptor, to close. */
int mq_journal_lock(mq_spool *);
/* Merges the records older than upto (ms since the epoch).  *size: the
 * size of SPOOL/journal after; *held: the time of the oldest record held
 * back for being younger (UINT64_MAX: none).  1: more to merge. */
int mq_journal_merge(mq_spool *, uint64_t upto, uint64_t *size,
    uint64_t *held);
/* What the hosts' journals hold that is not merged yet: records, bytes
 * and the time of the oldest (UINT64_MAX: none). */
int mq_journal_unmerged(mq_spool *, uint64_t *records, uint64_t *bytes,
    uint64_t *oldest);
/* Merges everything written before now, waiting out the clock skew. */
int mq_journal_merge_now(mq_spool *, uint64_t *size);
/* The clock skew allowed between hosts (MQ_CLOCK_SKEW, 1 s), and the
 * time before which records may be merged now. */
double mq_clock_skew(void);
uint64_t mq_journal_merge_upto(void);

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
};
/* Opens a topic that exists (EX_NOINPUT when it does not). */
int mq_topic_open(mq_spool *, const char *name, struct mq_topic *);
void mq_topic_close(struct mq_topic *);
int mq_topic_conf_parse(const struct mq_conf *, struct mq_topic_conf *);
int mq_groups_read(const struct mq_topic *, struct mq_names *);
int mq_group_names_read(int dirfd, struct mq_names *);
int mq_lock_all(const struct mq_topic *, int *fds);
void mq_unlock_all(const struct mq_topic *, int *fds);
int mq_partition_build(int tfd, unsigned k, const char *place,
    const struct mq_roles *);
/* The configuration and partition count as topic.conf says now (an alter
 * may have replaced it since the topic was opened). */
int mq_topic_partitions_now(const struct mq_topic *, unsigned *n);
int mq_topic_conf_now(const struct mq_topic *, struct mq_topic_conf *);
/* Replaces topic.conf with what edit makes of it (the caller holds every
 * partition's lock, as alters do). */
int mq_topic_conf_edit(const struct mq_topic *,
    int (*edit)(struct mq_conf *, const void *), const void *ctx);

/* create.c: a topic opened, made first when create and it does not
 * exist (mq_topic_create: it joins matching wildcard subscriptions). */
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

/* repair.c */
int mq_partition_repair_locked(const struct mq_topic *, unsigned k, int hfd,
    struct mq_head *);
int mq_partition_repair_try(const struct mq_topic *, unsigned k);

/* message.c */
void mq_time_rfc3339(double t, char *buf, size_t len);
int mq_time_parse(const char *s, struct timespec *);
/* The header block of a message, blank line included, without signature
 * lines: *sig_at is where they go (sign.c), and reserve the room they
 * will take of MQ_HEADER_BLOCK_MAX (0 when unsigned). */
int mq_msg_render(const struct mq_topic *, unsigned k, uint64_t seq,
    const char *id, const struct mq_pub_msg *, size_t reserve, double now,
    char **out, size_t *len, size_t *sig_at);
int mq_msg_parse(char *buf, size_t len, struct mq_msg *);
/* EX_DATAERR unless name (a KEY, or a queue name starting with one) has
 * the message's id. */
int mq_msg_check_name(const struct mq_msg *, const char *name);

/* dedup.c */
int mq_dedup_claim(int dedupfd, const char *ikey, uint64_t seq, double window,
    char id[MQ_ID_LEN + 1]);
/* Unlinks the entries whose target KEY drop() chooses. */
int mq_dedup_sweep(int pfd, bool (*drop)(const char *key, void *ctx),
    void *ctx);

/* group.c */
int mq_group_conf_read(const struct mq_topic *, const char *group,
    struct mq_conf *);
int mq_group_backfill(const struct mq_topic *, const char *group);
int mq_group_settings(const struct mq_topic *, const char *group,
    struct mq_group_conf *);
int mq_group_conf_parse(const struct mq_conf *, struct mq_group_conf *);
int mq_group_conf_render(const struct mq_topic *, const struct mq_group_conf *,
    const uint64_t *start, const char *pattern, char **out);
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
int mq_filter_from_conf(const struct mq_conf *, const char *what,
    mq_filter **out);
int mq_filter_check(const struct mq_group_conf *);
/* The filter of a group conf (its keys in kv) compiles: 0, or -1 (78). */
int mq_filter_conf_check(const struct mq_conf *, const char *what);
/* jqrun.c: a compiled jq program run in a worker process, bounded by
 * MQ_FILTER_TIMEOUT and MQ_FILTER_MEMORY.  A zeroed struct has no worker;
 * jq, n and what are the caller's to set before a run. */
struct jq_state;
struct mq_jqrun {
	struct jq_state *jq;
	size_t n;                           /* 0: one program, else a set's */
	const char *what;                   /* whose filter, for errors */
	pid_t pid;                          /* the worker; 0: none */
	int fd;
	char *reply;
};
enum { MQ_JQ_OK, MQ_JQ_NOT_JSON, MQ_JQ_NOT_ARRAY, MQ_JQ_BROKE };
/* Runs the program on each of n bodies; st[i] says how it went with body
 * i: MQ_JQ_OK with out[i * k .. i * k + k) the truthiness of its output
 * (k = max(n, 1) of the struct), MQ_JQ_NOT_JSON (the body is not one
 * JSON value), MQ_JQ_NOT_ARRAY (a set's output is not its array: one of
 * its programs halted), or MQ_JQ_BROKE (it ran past a bound or jq died:
 * the error says which).  -1 when no worker could be started. */
struct iovec;
int mq_jqrun_eval(struct mq_jqrun *, const struct iovec *body, size_t n,
    bool *out, int *st);
void mq_jqrun_stop(struct mq_jqrun *);
double mq_filter_timeout(void);

/* The jq filters of several groups, run as one program. */
struct mq_filterset {
	struct jq_state *jq;
	mq_filter **f;                      /* its filters, in program order */
	size_t n;
	struct mq_jqrun run;
};
int mq_filterset_use(struct mq_filterset *, mq_filter *const *f, size_t n);
int mq_filterset_eval(struct mq_filterset *, mq_filter *const *f, size_t nf,
    const struct mq_fmsg *m, size_t n, bool *out);
void mq_filterset_free(struct mq_filterset *);

/* groupinfo.c: the live members in a members directory (mq-spool(5),
 * Members); a missing directory has none. */
int mq_members_alive(int dirfd, const char *path, uint64_t now_ms,
    unsigned *alive);

/* ordered.c: members and partition owners of ordered groups. */
#define MQ_MEMBER_MAX 128
int mq_owner_init(const struct mq_topic *, unsigned k, const char *group);
int mq_owner_parse(const char *name, char *member, size_t len,
    uint64_t *deadline_ms);

/* groupinfo.c */
uint64_t mq_log_bytes(int pfd, uint64_t committed);
int mq_group_stat_fill(const struct mq_topic *, struct mq_group_stat *);
int mq_group_info_at(const struct mq_topic *, const char *group,
    struct mq_group_info *);

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
 * rejecting, finding and extending claims. */
struct mq_gdirs {
	int newfd, curfd, delayfd;
};
int mq_gdirs_open(const struct mq_topic *, unsigned k, const char *group,
    struct mq_gdirs *);
void mq_gdirs_close(struct mq_gdirs *);
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
int mq_ledger_record(const struct mq_topic *, unsigned k, const char *group,
    const char *id);

/* statout.c: what the writers of mq-stat's outputs share. */
struct json_t;
/* Writes o on one line and frees it (o NULL: a failed json_pack). */
int mq_json_put(struct json_t *o, FILE *);
/* 0, or -1 (EX_IOERR) when f has seen a write error. */
int mq_out_status(FILE *);
/* A peer's name, else its id. */
const char *mq_peer_label(const struct mq_peer_status *);

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
	char buf[];
};
/* Reads a message file, checked (EX_DATAERR when it is no whole message
 * file of the message key names, or of the KEY that curname's last part
 * starts with when key is NULL). */
int mq_claim_read(const struct mq_topic *, int curfd, const char *curname,
    const char *key, struct mq_msg **out);

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

/* keys.c */
int mq_crypto_init(void);
/* The next line of a list of public keys (authorized_peers, signers):
 * "HEX [NAME]", blank and '#' lines passed over, trailing blanks dropped.
 * 1 with pk and the name (*nlen bytes, maybe 0), 0 at end, -1 for a line
 * that is no key; *pos moves past the line either way. */
int mq_keyline_next(const char **pos, const char *end,
    unsigned char pk[MQ_PUBKEY_BYTES], const char **name, size_t *nlen);
/* A key file (publisher, sealed-topic consumer): its magic line, then
 * the secret key of sklen bytes in hex.  Create makes a new file of mode
 * 0600 (an existing one is EX_CANTCREAT); parse gives -1, no error set,
 * for a text that is not one. */
/* A new key pair from keypair (crypto_sign_keypair, crypto_box_keypair),
 * its secret key of sklen bytes in a new file made as mq_keyfile_create
 * does; pub: the public key in hex. */
int mq_keyfile_generate(const char *path, const char *magic,
    int (*keypair)(unsigned char *, unsigned char *), size_t sklen,
    char pub[MQ_PUBKEY_HEX + 1]);
int mq_keyfile_create(const char *path, const char *magic,
    const unsigned char *sk, size_t sklen);
int mq_keytext_parse(const char *buf, size_t len, const char *magic,
    unsigned char *sk, size_t sklen);

/* signtree.c: the hash tree of a chunk's signed forms (BLAKE2b-256). */
#define MQ_HASH_BYTES 32
#define MQ_TREE_MAX MQ_CHUNK_MAX        /* leaves of one tree */
#define MQ_TREE_DEPTH 12                /* hashes in a path, at most */
struct mq_tree {
	unsigned char (*h)[MQ_HASH_BYTES];  /* the leaves, then each level up */
	size_t n, cap;                      /* leaves; hashes room */
	size_t root;                        /* h[root] */
};
void mq_tree_leaf(const void *form, size_t len,
    unsigned char out[MQ_HASH_BYTES]);
int mq_tree_build(struct mq_tree *, const unsigned char (*leaf)[MQ_HASH_BYTES],
    size_t n);
/* The path of leaf i into path (MQ_TREE_DEPTH room): its length. */
size_t mq_tree_path(const struct mq_tree *, size_t i,
    unsigned char (*path)[MQ_HASH_BYTES]);
/* How many hashes the path of leaf i of n has. */
size_t mq_tree_path_len(size_t i, size_t n);
/* The root that leaf i of n and its path (mq_tree_path_len(i, n) hashes)
 * lead to. */
void mq_tree_root_of(const unsigned char leaf[MQ_HASH_BYTES], size_t i,
    size_t n, const unsigned char (*path)[MQ_HASH_BYTES],
    unsigned char root[MQ_HASH_BYTES]);
void mq_tree_free(struct mq_tree *);

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
	unsigned char (*pk)[MQ_PUBKEY_BYTES];
	size_t n;                       /* 0: the topic takes any message */
};
int mq_signers_now(struct mq_topic *, const struct mq_signers **out);
bool mq_signers_has(const struct mq_signers *,
    const unsigned char pk[MQ_PUBKEY_BYTES]);
void mq_signers_free(struct mq_signers *);
/* Adds a signer line to kv for each key of text (authorized_peers' form);
 * EX_DATAERR for a line that is no key, or no key at all. */
int mq_signers_add(struct mq_conf *kv, const char *text);
/* A replication peer's topic.conf (kv): the topic created with its
 * signers (c the rest), or its signers made those of kv.  1 when that
 * changed the spool, 0 when not. */
int mq_signers_adopt(mq_spool *, const char *topic, const struct mq_conf *kv,
    bool create, const struct mq_topic_conf *c);

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
