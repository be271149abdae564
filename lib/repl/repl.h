/*
 * repl.h: what the replication sender (replsend.c), receiver
 * (replrecv.c) and their state (replstate.c) share.  See mq-spool(5),
 * CHANGE JOURNAL, and mq-protocol(5).
 */
#ifndef MQ_REPL_H
#define MQ_REPL_H

#include <stdarg.h>
#include <stdio.h>

#include "queue.h"

#define REPL_BATCH_RECORDS 1024
#define REPL_BATCH_BYTES (4u << 20)
/* Toward each peer a batch holds at most a number of records, from 1 to
 * REPL_BATCH_RECORDS, and REPL_BATCH_BYTES / REPL_BATCH_RECORDS bytes for
 * each: fewer after a session cut with a batch unconfirmed, twice as many
 * after REPL_BATCH_GROW full batches confirmed in a row (replsend.c). */
#define REPL_BATCH_GROW 4
#define REPL_WINDOW 16                  /* batches sent before an answer */
#define REPL_GROUP 8                    /* batches a receiver syncs at once */
#define REPL_PING 5.0                   /* seconds between pings when idle */
/* Origins a vector holds at most (ours and the peers' included): what a
 * peer may make a receiver remember, and replicate/seen well within the
 * 1 MiB it is read in. */
#define REPL_ORIGINS_MAX 4096

/* The vector: for each origin, the next sequence not yet seen, and the
 * first hole: a publish record that came without its message (a relay
 * had lost it) and so was not applied.  What a peer is told it has seen
 * stops at the hole, so the record comes again by another path. */
struct repl_seen {
	struct repl_origin {
		char id[MQ_ID_LEN + 1];
		uint64_t next;
		uint64_t hole;          /* its sequence + 1; 0: none */
	} *v;
	size_t n;
};
uint64_t repl_seen_get(const struct repl_seen *, const char *origin);
bool repl_seen_has(const struct repl_seen *, const char *origin);
int repl_seen_put(struct repl_seen *, const char *origin, uint64_t next);
/* The origin itself sent everything before end: no hole is left there
 * (what it skipped, it no longer has). */
int repl_seen_settle(struct repl_seen *, const char *origin, uint64_t end);
/* A hole at seq (hole 1), or the record at seq applied at last (0). */
int repl_seen_hole(struct repl_seen *, const char *origin, uint64_t seq,
    int hole);
void repl_seen_free(struct repl_seen *);
int repl_seen_render(const struct repl_seen *, char **text, size_t *len);
int repl_seen_parse(const char *text, size_t len, struct repl_seen *);
/* The receiver's vector: replicate/seen, and the copied records the
 * journal has after the offset it covers (*covered). */
int repl_seen_load(mq_spool *, struct repl_seen *, uint64_t *covered);
int repl_seen_save(mq_spool *, const struct repl_seen *);

/* XXH3-128 of data as 32 lowercase hexadecimal digits, high half first:
 * how messages are named in frames. */
void repl_hash_hex(const void *data, size_t len, char out[33]);
/* Walks a record's list of groups ("a,b,c", or "-" for none): the next
 * one at *g, its length in *len; false at the end. */
bool repl_next_group(const char **g, const char **name, size_t *len);
int repl_spool_id(mq_spool *, char id[MQ_ID_LEN + 1]);
int repl_dir(mq_spool *, const char *sub);      /* made when missing */

/* What a sender records of a peer after each confirmation: where it
 * stands, and the records a batch toward it holds at most. */
int repl_peer_save(mq_spool *, const char *peer_id, const char *name,
    const char *address, uint64_t confirmed, unsigned batch, int connected);
/* What was saved; a peer never saved is at 0, with batches of
 * REPL_BATCH_RECORDS. */
int repl_peer_confirmed(mq_spool *, const char *peer_id, uint64_t *pos,
    unsigned *batch);
/* replicate/peers/ opened to read, never made: 1 with *dfd, 0 when the
 * spool never sent to a peer, -1 on error. */
int repl_peers_open(mq_spool *, int *dfd);
/* Drops the cut files of the journal that every known peer has confirmed
 * and that replicate/seen covers (jsegment.c): how many. */
int repl_journal_trim(mq_spool *);
/* The same, now or when REPL_TRIM_EVERY seconds have passed since *last
 * (mq_mono), which it sets; a failure is logged and only keeps the files
 * longer. */
#define REPL_TRIM_EVERY 2.0
void repl_trim_every(mq_spool *, const struct mq_repl_opts *, double *last,
    bool now);
/* peerends.c: where a partition's log of format 2 ends at a peer, and
 * the id of its record before (none: ""): a line of ENDS, and of
 * replicate/peers/<id>.ends, what a sender last heard of it. */
struct repl_end {
	char topic[MQ_NAME_MAX + 1];
	unsigned k;
	uint64_t end;
	char id[MQ_ID_LEN + 1];
	int state;                      /* the sender's: 0 not checked, 1
					 * sending, 2 apart */
};
int repl_ends_line(FILE *, const char *topic, unsigned k, uint64_t end,
    const char *id);
/* Lines appended to *v, each checked (EX_PROTOCOL). */
int repl_ends_parse(const char *text, size_t len, struct repl_end **v,
    size_t *n);
struct repl_end *repl_end_find(struct repl_end *, size_t n,
    const char *topic, unsigned k);
/* peers/<id>.ends in replicate/peers (dfd): written whole, not synced;
 * read (none when missing, EX_DATAERR when it does not parse); removed
 * when the peer is forgotten. */
int repl_peer_ends_save(int dfd, const char *peer_id,
    const struct repl_end *, size_t n);
int repl_peer_ends_load(int dfd, const char *peer_id, struct repl_end **v,
    size_t *n);
int repl_peer_ends_remove(int dfd, const char *peer_id);
/* What each peer lacks of the logs of format 2 (past its ends, read in
 * replicate/peers, dfd), added to its records and lag_bytes; oldest[i]
 * (0 or a time the caller set) gets the time of the oldest such record
 * when it is older. */
int repl_log_lag(mq_spool *, int dfd, struct mq_peer_status *, size_t n,
    double *oldest);
/* Whether the peer's logs reach every end that this spool's S records
 * at [from, end) of the journal say (mq_pub_replica_goal): 1, 0, -1. */
int repl_peer_has_logs(mq_spool *, int dfd, const char *peer_id,
    uint64_t from, uint64_t end);

/* A sending session's hold on peers/<id>.live (replstate.c): a
 * descriptor with a read lock, waited for while mq_repl_forget holds it,
 * which the session closes when it has written peers/<id> for the last
 * time.  Status reads the lock as "connected". */
int repl_peer_hold(mq_spool *, const char *peer_id);

void repl_log(const struct mq_repl_opts *, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Frames: a word, then text or data.  A frame is not NUL-terminated:
 * its first line is read as a copy, by its length. */
/* The first line of a frame of len bytes, without its newline, as a C
 * string in out (cap bytes); *used: its length with the newline.  -1 when
 * the frame has no newline within cap - 1 bytes, or a NUL before it. */
int repl_line(const char *f, size_t len, char *out, size_t cap, size_t *used);
int repl_send_text(mq_link *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int repl_expect(mq_link *, const char *word, const char **rest, size_t *len);
/* "ERROR <code> <message>" from the peer, as our error (-1). */
int repl_error_frame(const char *frame, size_t len);

/* Epochs (fence.c; mq-protocol(5), Epochs): this spool's and the
 * peer's, as their hellos said (peer_has: the peer's said one; an old
 * version's did not, and is at 0). */
struct repl_epoch {
	uint64_t mine, peer;
	bool peer_has;
	bool segments;                  /* the peer's hello said it: it sends
					 * and takes format 2's frames */
};
/* After the hellos: refuses a session this spool must not have (a
 * fenced spool's, unless demote; a sender's toward a newer epoch, which
 * fences this spool; a receiver's from an older one), learns a newer
 * epoch; -1 with EX_CONFIG, the message saying what to do. */
int repl_epoch_hello(mq_spool *, enum mq_repl_role, struct repl_epoch *,
    int demote, const char *peer, const char *name,
    const struct mq_repl_opts *);
/* A batch of a sender at epoch theirs: refused when this spool's epoch,
 * read again, is higher (a promote while the session ran). */
int repl_epoch_batch(mq_spool *, uint64_t theirs, const char *peer,
    const char *name);
/* After a session failed: a receiver's refusal of our epoch fences this
 * spool. */
void repl_fence_learn(mq_spool *, uint64_t mine, const char *peer,
    const char *name);
/* The highest epoch this spool knows: its own, or the one fenced says. */
int repl_epoch_known(mq_spool *, uint64_t *epoch);
int repl_epoch_set(mq_spool *, uint64_t epoch);
int repl_role_set(mq_spool *, const char *role);
int repl_fence_set(mq_spool *, uint64_t epoch, const char *peer,
    const char *name);
int repl_fence_clear(mq_spool *);
/* demote.c: on a spool demoted toward a peer whose vector is seen (sent
 * by it first in a demote session), quarantines this spool's own
 * messages that the peer lacks (format 1 by the journal's P records,
 * format 2 by repl_demote_logs), then adopts epoch, writes role replica
 * and removes fenced.  *n: how many are in quarantine. */
int repl_demote(mq_spool *, mq_link *, const struct repl_seen *seen,
    uint64_t epoch, bool segments, const struct mq_repl_opts *, size_t *n);
/* demotelog.c: the same for the partitions of format 2, over PROBE
 * frames (segments: the peer's hello said it): each log and its groups
 * cut back to where it parts from the peer's, what was past it in
 * quarantine (qfd) as message files; *n gains how many of ours are
 * there.  answer is the new primary's side. */
int repl_demote_logs(mq_spool *, mq_link *, int qfd, const char *me,
    const struct mq_repl_opts *, size_t *n);
int repl_demote_answer(mq_spool *, mq_link *);
/* SEEN and a vector, as a frame. */
int repl_seen_send(mq_link *, const struct repl_seen *);
/* replicate/quarantine/<topic>.<k>.<KEY>.<origin> (mq-protocol(5),
 * Conflicts). */
int repl_quarantine_name(char *buf, size_t len, const char *topic,
    unsigned k, const char *key, const char *origin);

/* The two sides of a session, after the hello. */
int repl_send(mq_spool *, mq_link *, const char *peer, const char *peer_name,
    const struct repl_epoch *, const struct mq_repl_opts *);
int repl_recv(mq_spool *, mq_link *, const char *peer, const char *peer_name,
    const struct repl_epoch *, const struct mq_repl_opts *);

#endif
