/*
 * base.h: the spool's storage primitives, private to lib/ (tools include
 * only mq.h): errors, paths opened beneath the spool, files, names,
 * configuration files, permissions, counters, the head, the change
 * journal, message files, keys.  It knows no topic; lib/README says what
 * each layer may call.
 */
#ifndef MQ_BASE_H
#define MQ_BASE_H

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

/* fenced.c: the grammar of replicate/epoch and replicate/fenced (0, or
 * -1 without an error set); mq_fence_check: 0 when the spool is not
 * fenced, else -1 with EX_NOPERM saying so (what writers call once per
 * write); mq_fence_say: that error for f. */
int mq_epoch_parse(const char *text, size_t len, uint64_t *epoch);
int mq_fence_parse(const char *text, size_t len, struct mq_fence *f);
int mq_fence_check(mq_spool *);
int mq_fence_say(mq_spool *, const struct mq_fence *f);

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
/* Directory dfd, made 0700 by the caller, writable by it and by whoever
 * may write directory fromfd and by no one else, and what is made in it
 * readable and writable by those (a reply box, writable by the topic's
 * consumers: reply.c).  Without ACLs the mode bits alone, with fromfd's
 * group when the caller may give it. */
int mq_perm_writers(int dfd, int fromfd, const char *what);
/* topic.conf's role keys: added to kv, or read from it. */
int mq_roles_conf_add(struct mq_conf *kv, const struct mq_roles *);
int mq_roles_conf_get(const struct mq_conf *kv, struct mq_roles *);

/* error.c */
int mq_err(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int mq_err_sys(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int mq_errno_code(int e);
/* The directory whose file system an ENOSPC is asked about (-1: none),
 * to tell "no free inodes" from "disk full". */
void mq_err_space_fd(int fd);
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
/* The same, replacing, with the file's mode set to mode. */
int mq_write_file_mode(int dirfd, const char *path, const void *data,
    size_t len, int sync, mode_t mode);
/* The same, synced, swapped in for path with RENAME_EXCHANGE: fails
 * (ENOENT) rather than make path when it is gone. */
int mq_write_file_swap(int dirfd, const char *path, const void *data,
    size_t len);

struct mq_names {
	char **v;
	size_t n, cap;
};
/* Lists the entries of a directory (no dot files), optionally filtered,
 * sorted by strcmp.  The names are owned by the list. */
int mq_names_read(int dirfd, bool (*keep)(const char *), struct mq_names *);
/* The same for the directory path below dirfd; none when it is missing. */
int mq_names_read_at(int dirfd, const char *path, bool (*keep)(const char *),
    struct mq_names *);
int mq_names_reread(DIR *, bool (*keep)(const char *), struct mq_names *);
DIR *mq_dir_stream(int dirfd);
int mq_names_push(struct mq_names *, const char *name, size_t len);
void mq_names_sort(struct mq_names *);
/* Whether sorted l (mq_names_sort) holds name. */
bool mq_names_has(const struct mq_names *l, const char *name);
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
bool mq_is_pattern_name(const char *pattern, size_t len);
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
/* The same of a message id: when it was published, in seconds. */
double mq_id_time(const char *id);
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

/* segment.c: the segment file of format 2 (mq-spool(5), SEGMENTED
 * STORAGE).  A writer builds one in memory; a reader checks bytes that
 * nothing vouches for. */
#define MQ_SEG_MAX_BYTES (1ULL << 30)
#define MQ_SEG_MAX_RECORDS 1000000u
struct mq_seg_writer {
	char *buf;
	size_t len, cap;
	uint64_t first;
	uint32_t count;
};
int mq_seg_begin(struct mq_seg_writer *, uint64_t first);
/* Begins again at first, keeping the buffer. */
int mq_seg_restart(struct mq_seg_writer *, uint64_t first);
/* A record: a message file's header block (its empty line included) and
 * body; its sequence number is the next of the segment. */
int mq_seg_add(struct mq_seg_writer *, const char *hdr, size_t hlen,
    const void *body, size_t blen);
/* The same with the header block in hn pieces. */
int mq_seg_addv(struct mq_seg_writer *, const struct iovec *hv, int hn,
    const void *body, size_t blen);
/* A record read by mq_seg_next (its number seq, the next of the
 * segment), copied as it is: its frame and hash, whether the hash holds
 * or not. */
struct mq_seg_rec;
int mq_seg_add_record(struct mq_seg_writer *, uint64_t seq,
    const struct mq_seg_rec *);
/* Fills in the first line: buf and len are then the segment's bytes. */
int mq_seg_finish(struct mq_seg_writer *);
void mq_seg_writer_free(struct mq_seg_writer *);
struct mq_seg {
	const char *data;
	size_t len;
	uint64_t first, size;
	uint32_t count;
};
struct mq_seg_rec {
	const char *hdr, *body;
	size_t hdr_len, body_len;
	bool hash_ok;                   /* header block and body as framed */
};
/* A segment's name in log/: its first sequence number in 20 digits. */
int mq_seg_name(const char *name, uint64_t *first);
/* The first line alone (len: at least what was read): first, count and
 * size, all bounded. */
int mq_seg_read_line(const char *data, size_t len, struct mq_seg *);
/* A whole segment: its first line, its name (NULL: not checked) and its
 * size.  The records are checked by mq_seg_next as they are read. */
int mq_seg_open_bytes(const char *data, size_t len, const char *name,
    struct mq_seg *);
/* Where the first record starts. */
size_t mq_seg_start(void);
/* The record at *off (start: mq_seg_start()), its number into *seq
 * (which holds the previous one's after the first): 1 and *off past
 * it, 0 at the end, -1 (EX_DATAERR) when the bytes are not the next
 * record or the count does not match. */
int mq_seg_next(const struct mq_seg *, size_t *off, uint64_t *seq,
    struct mq_seg_rec *);

/* fixline.c: a file of one checked line of fixed width, rewritten in
 * place and read without a lock (fresh on a shared file system): read
 * returns 0 with parse's result, 1 when the file is empty, -1 (EX_CONFIG
 * when parse keeps refusing it). */
/* Ends the line's body buf[0..n) (body bytes long, else EX_SOFTWARE
 * naming what) with " sum=<XXH32 of it, 8 hex>\n"; size is buf's.  A
 * parser checks a line by sealing what it read again and comparing. */
int mq_line_seal(char *buf, size_t size, int n, int body, const char *what);
int mq_line_read(int fd, int (*parse)(const char *, size_t, void *),
    void *ctx, const char *what);
int mq_line_write(int fd, const char *buf, size_t len, int sync,
    const char *what);

/* claimfile.c: a claim of format 2, a range of at most MQ_CLAIM_MAX
 * records handed out together under one lease: its name in claims/
 * (<first>+<n>,r<token>) and its line, the lease's deadline and a bit per
 * record, set once it is settled.  read: 0, 1 when empty, -1. */
#define MQ_CLAIM_MAX 512
struct mq_claim_name {
	uint64_t first;
	unsigned n;
	char token[9];
};
struct mq_claim_state {
	uint64_t deadline_ms;
	unsigned char settled[MQ_CLAIM_MAX / 8];
};
int mq_claim_name_parse(const char *name, struct mq_claim_name *);
int mq_claim_name_make(const struct mq_claim_name *, char *buf, size_t len);
int mq_claim_state_read(int fd, struct mq_claim_state *);
int mq_claim_state_write(int fd, const struct mq_claim_state *, int sync);
bool mq_claim_settled(const struct mq_claim_state *, unsigned i);
void mq_claim_settle(struct mq_claim_state *, unsigned i);
unsigned mq_claim_unsettled(const struct mq_claim_state *, unsigned n);
/* The records of a claim settled together, as a journal's K record says
 * them: "<first>+<n>,<bits>", first and n in decimal, the n bits in
 * (n + 7) / 8 bytes of lowercase hexadecimal as a claim's settled.  parse
 * takes only that: canonical numbers, n 1 .. MQ_CLAIM_MAX, the range
 * within the sequence numbers, a bit set, none past n. */
int mq_claim_bits_format(uint64_t first, unsigned n, const unsigned char *bits,
    char *buf, size_t len);
int mq_claim_bits_parse(const char *s, uint64_t *first, unsigned *n,
    unsigned char bits[MQ_CLAIM_MAX / 8]);

/* cursor.c: a group's cursor in a partition of format 2, and the lock
 * its feeds take.  read: 0 with *next, 1 when not written yet. */
int mq_cursor_read(int fd, uint64_t *next);
int mq_cursor_write(int fd, uint64_t next, int sync);

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

/* lock.c: the one lock wait.  A lock on all of fd, open file description
 * (fcntl) or flock(2): 1 taken, 0 held by another (without wait), -1 an
 * error naming what, with errno as the file system said (EAGAIN: waited
 * MQ_LOCK_TIMEOUT, EX_TEMPFAIL).  On a shared file system a wait never
 * blocks in the kernel. */
enum mq_lock_kind { MQ_LOCK_WRITE, MQ_LOCK_READ, MQ_LOCK_FLOCK_EX,
	MQ_LOCK_FLOCK_SH };
int mq_lock_take(int fd, enum mq_lock_kind, int wait, const char *what);
void mq_lock_drop(int fd, enum mq_lock_kind);
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
	uint64_t jbase;                 /* jfd's first offset (jsegment.c) */
	ino_t jino;                     /* and its inode */
	bool shared;                    /* on a file system hosts share */
	bool readonly;                  /* opened with MQ_READONLY */
	/* A replication receiver applies a peer's change through the
	 * functions a tool calls: the record it journals is the peer's,
	 * so mq_journal_note writes none of its own. */
	bool replaying;
	struct mq_counter *counters;    /* counters.c, opened on first use */
};

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
void mq_journal_change(mq_spool *, const char *topic, char type, unsigned k,
    const char *group, const char *name);
/* The same record into a buffer, for many changes written at once. */
int mq_journal_change_add(struct mq_jbuf *, const char *topic,
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
	uint64_t base, end;             /* fd's offsets: first, and past its
					   last when cut (else UINT64_MAX) */
	ino_t ino;
	bool gap;                       /* the offset asked for was dropped:
					   pos moved to the oldest kept */
	bool fresh;                     /* read as the server has it now */
	bool readonly;                  /* the spool's MQ_READONLY */
	char *buf;
	size_t cap, fill, off;
	uint64_t pos;                   /* journal offset of buf + off */
	uint64_t skipped;               /* lines that failed their sum */
};
/* The types of records this version reads and replicates (B and M are
 * the journal's own, never replicated). */
#define MQ_JTYPES "PLADRXTEUWZKCS"
/* The arguments of a record: "topic" for T and Z; "topic k a b" for P (a
 * the KEY, b the groups), L, A and E (a the group, b the KEY), D, R and X
 * (a the group, b the dead letter), K (a the group, b the claim's bits,
 * mq_claim_bits_parse, and an id: mq_jarg_id) and C (a the group, b an
 * offset and an id); "topic k b" for S
 * (a "", b where the log ends); "topic a" for U
 * and W (topic a topic
 * or a pattern, W only a pattern; a the group; b "").  b points into
 * args.  -1: not one of these (a record of a later version, or
 * damaged). */
struct mq_jargs {
	char topic[MQ_NAME_MAX + 1];
	unsigned k;
	char a[MQ_NAME_MAX + 1];
	const char *b;
};
int mq_jargs_parse(char type, const char *args, struct mq_jargs *);
/* K's and C's b ends in ",ID": the Message-Id of the record before its
 * range's end (K: first + n; C: the offset), or "-" when the primary
 * could not read one, so that a replica applies it only to that record
 * (mq-spool(5), Replication, format 2).  The length of b before it, and
 * the id ("" for "-"); -1 when b has no such end. */
int mq_jarg_id(const char *b, size_t *head, char id[MQ_ID_LEN + 1]);
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

/* jline.c: a journal line's seal.  Appends " <sum>\n" for the line that
 * starts at buf + start (len its end, cap the room); whether line (len
 * bytes, without its newline) ends in its right sum. */
int mq_jline_seal(char *buf, size_t start, size_t *len, size_t cap);
bool mq_jline_sealed(const char *line, size_t len);

/* jsegment.c: the journal in segments (mq-spool(5), CHANGE JOURNAL,
 * Segments): the file appended to keeps the journal's name, those cut
 * off are <path>.d/<base>.  The cut size is MQ_JOURNAL_SEGMENT (64 MiB). */
uint64_t mq_journal_segment_max(void);
/* The offset of the first byte of the journal file fd (its B record's;
 * 0 for a file without one). */
int mq_jfile_base(int fd, uint64_t *base);
/* path's journal file opened to read, *base its first offset (st, when
 * not NULL, its stat): -1 with errno ENOENT and no error set when there
 * is none. */
int mq_jfile_open(int dirfd, const char *path, uint64_t *base,
    struct stat *st);
/* The bases of the cut files of path's journal, ascending. */
struct mq_jsegs {
	uint64_t *base;
	size_t n;
};
int mq_jsegs_read(int dirfd, const char *path, struct mq_jsegs *);
void mq_jsegs_free(struct mq_jsegs *);
/* The file of path's journal that holds offset pos: fd -1 when there is
 * no journal; gap when pos was dropped (the oldest file kept instead). */
struct mq_jfile {
	int fd;
	uint64_t base, end;             /* end: UINT64_MAX for the file
					   appended to */
	ino_t ino;
	bool gap;
};
int mq_jseg_open(int dirfd, const char *path, uint64_t pos, struct mq_jfile *);
/* The first offset of the file after the one that starts at after. */
int mq_journal_next_base(int dirfd, const char *path, uint64_t after,
    uint64_t *next);
/* A journal file fd just made (empty) while cut files exist starts with
 * the B record of where the last one ends. */
int mq_journal_start_file(mq_spool *, const char *path, int fd);
/* Cuts path's journal file fd (whose first offset is base) when it is
 * still the journal and holds min bytes (MQ_JOURNAL_SEGMENT, or 0 to cut
 * it whatever its size): 1 when it did.  Its flock is tried, and a file
 * being written left for a later write to cut.  A spool no peer needs
 * the journal of (mq_journal_needed) keeps no cut file. */
int mq_journal_cut(mq_spool *, const char *path, int fd, uint64_t base,
    uint64_t min);
/* Whether a replication peer may need the journal: the spool has sent
 * to one (replicate/peers/) or received from one (replicate/seen). */
bool mq_journal_needed(mq_spool *);
/* Unlinks the cut files of path's journal that end at or before upto:
 * how many. */
int mq_journal_drop(mq_spool *, const char *path, uint64_t upto);
/* The oldest offset SPOOL/journal still holds. */
uint64_t mq_journal_start(mq_spool *);

/* jmerge.c: the hosts' journals (journals/<host>, written on a shared
 * file system) merged into SPOOL/journal; see mq-spool(5), CHANGE
 * JOURNAL. */
/* Every journal of the spool, as paths in it: "journal" first, then
 * "journals/<host>" for each host's. */
/* The offset of SPOOL/journal up to which journals/.merged holds the M
 * records, once it is durable: what a drop of SPOOL/journal's cut files
 * may reach without the merge losing how far each host is merged
 * (UINT64_MAX without one). */
int mq_journal_merged(mq_spool *, uint64_t *covered);
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

/* message.c */
void mq_time_rfc3339(double t, char *buf, size_t len);

/* put.c: text appended at o without a format string (for what is written
 * per message): n bytes of s, a string, a decimal, a decimal of at least
 * width digits with leading zeros, the low DIGITS hex digits of v (1 to
 * 16).  Each returns the end
 * of what it wrote; the caller has made room. */
char *mq_put(char *o, const char *s, size_t n);
char *mq_put_str(char *o, const char *s);
char *mq_put_u64(char *o, uint64_t v);
char *mq_put_u64w(char *o, uint64_t v, int width);
char *mq_put_hex(char *o, uint64_t v, int digits);
#define PUT_LIT(o, lit) mq_put((o), (lit), sizeof(lit) - 1)
int mq_time_parse(const char *s, struct timespec *);
/* The header block of a message into topic (whose ttl applies when the
 * message has no expiry), blank line included, without signature lines:
 * *sig_at is where they go (sign.c), and reserve the room they will take
 * of MQ_HEADER_BLOCK_MAX (0 when unsigned). */
int mq_msg_render(const char *topic, double ttl, unsigned k, uint64_t seq,
    const char *id, const struct mq_pub_msg *, size_t reserve, double now,
    char **out, size_t *len, size_t *sig_at);
int mq_msg_parse(char *buf, size_t len, struct mq_msg *);
/* The value of the header name in a message file's header block (data,
 * len bytes, not NUL-terminated): where it is in data, *vlen bytes
 * long, or NULL. */
const char *mq_msg_header(const char *data, size_t len, const char *name,
    size_t *vlen);
/* The headers of a parsed message by name, in the order of its file:
 * Message-Id, Topic, Partition, Seq, Key, Published, Mq-Idempotency-Key,
 * Mq-Deliver-At and Mq-Expires (those it has), then its user headers
 * (Content-Length, Content-Hash, Mq-Sealed and signatures are left out:
 * they describe the stored bytes).  Calls fn for each until it returns
 * other than 0, and returns that, or 0.  A value is valid only during
 * its call. */
int mq_msg_headers_each(const struct mq_msg *,
    int (*fn)(void *arg, const char *name, const char *value), void *arg);
/* EX_DATAERR unless name (a KEY, or a queue name starting with one) has
 * the message's id. */
int mq_msg_check_name(const struct mq_msg *, const char *name);

/* dedup.c */
int mq_dedup_claim(int dedupfd, const char *ikey, uint64_t seq, double window,
    char id[MQ_ID_LEN + 1], uint64_t *first_seq);
/* p<k>/dedup of the partition pfd, made when missing, opened into *fd
 * unless it is open already (*fd >= 0). */
int mq_dedup_dir(int pfd, int *fd);
/* Makes the entry of ikey name KEY, as a replica does for the messages
 * it is sent (the one it had is replaced). */
int mq_dedup_adopt(int dedupfd, const char *ikey, size_t ilen,
    const char *key);
/* Unlinks the entries whose target KEY drop() chooses. */
int mq_dedup_sweep(int pfd, bool (*drop)(const char *key, void *ctx),
    void *ctx);

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

#endif
