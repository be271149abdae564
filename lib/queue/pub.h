/*
 * pub.h: a publisher's state, shared by publish.c (the chunks of format
 * 1, a file per message), segpub.c (those of format 2, a segment per
 * chunk) and pubstage.c (what both do to a chunk before it is written:
 * ids, sequence numbers, idempotency keys, sealing, rendering, signing).
 */
#ifndef MQ_PUB_H
#define MQ_PUB_H

#include "queue.h"

struct pub_filter {
	char *group;
	ino_t ino;
	struct timespec mtim;
	mq_filter *f;                   /* NULL: the group has none */
};

/* A message of the chunk, rendered and waiting to be written. */
struct pub_staged {
	const struct mq_pub_msg *m;     /* as given */
	uint64_t seq;
	const char *id;
	const bool *in;                 /* the groups it enters */
	double now;                     /* its publication */
	char *hdr;                      /* its header block, without the */
	size_t hlen, sig_at;            /* signature lines, and where they go */
	const void *body;               /* as stored: sealed on a sealed topic */
	size_t blen;
};

struct mq_pub {
	mq_spool *sp;
	struct mq_topic t;
	unsigned rr;                    /* next partition for keyless messages */
	int atomic;                     /* one commit per mq_pub_send */
	int *hfd, *logfd, *dedupfd;     /* per partition, opened on first use */
	int *tmpfd;                     /* format 2: p<k>/tmp, the same */
	struct mq_seg_writer sw;        /* format 2: the chunk's segment */
	struct pub_filter *flt;         /* every group's filter seen so far */
	size_t nflt;
	mq_filter **gflt;               /* the chunk's groups' filters */
	struct mq_filterset set;        /* their jq programs, as one */
	bool *in;                       /* which groups each message of a
	                                 * chunk enters, a row per message */
	struct mq_fmsg *fm;             /* the chunk's messages, for filters */
	struct mq_names gnames;         /* the chunk's groups */
	struct mq_jbuf jb;              /* the chunk's journal records */
	char *glist;                    /* a P record's list of groups */
	size_t glcap;
	uint64_t jend;                  /* journal offset after our records */
	signed char *jsame;             /* journal on the partition's fs? */
	bool *shared;                   /* partition shared between hosts? */
	struct mq_sealer seal;          /* a sealed topic's keys (seal.c) */
	struct mq_identity key;         /* signs each chunk when signing */
	bool signing;
	struct pub_staged *stg;         /* the chunk's messages, and for each */
	struct mq_sealbuf *sb;          /* its sealed body */
	unsigned char (*leaf)[MQ_HASH_BYTES]; /* the leaves of the tree signed */
	size_t stgcap;
	struct mq_chunk_sig csig;       /* the chunk's signature (of up to
	                                 * MQ_TREE_MAX of them) */
	void (*repeat)(const struct mq_pub_msg *, const char *, bool, void *);
	void *repeat_ctx;               /* mq_pub_on_repeat */
};

/* pubstage.c */
/* Opens partition k's head and log/ on first use; a publisher that may
 * not write log/ is refused before it writes anything. */
int mq_pub_fds(mq_pub *, unsigned k);
/* Gives the n messages msgs[idx[..]] their ids and the sequence numbers
 * from seq, and renders them into p->stg (ng groups: p->in's rows); a
 * repeat of an idempotency key is left out (its id is the first's).
 * *ns gets how many were staged; mq_pub_staged_free frees them. */
int mq_pub_stage(mq_pub *, unsigned k, const struct mq_pub_msg *msgs,
    const size_t *idx, size_t n, uint64_t seq, size_t ng,
    char (*ids)[MQ_ID_LEN + 1], size_t *ns);
void mq_pub_staged_free(mq_pub *, size_t n);
/* The filter of a group (NULL: none), compiled once per version of its
 * conf; at is where to look first in the cache. */
int mq_pub_group_filter(mq_pub *, const char *group, size_t at,
    mq_filter **out);
/* Calls put for each of the n staged messages in order, with its
 * signature lines when signing (sig, slen; else slen 0), signing them in
 * trees of at most MQ_TREE_MAX. */
typedef int mq_pub_put(mq_pub *, unsigned k, const struct pub_staged *,
    const char *sig, size_t slen, void *ctx);
int mq_pub_write_signed(mq_pub *, unsigned k, size_t n, mq_pub_put *,
    void *ctx);

/* segpub.c: a chunk into a partition of format 2 (mq-spool(5),
 * SEGMENTED STORAGE, Publish, format 2). */
int mq_pub_chunk_segment(mq_pub *, unsigned k, const struct mq_pub_msg *msgs,
    const size_t *idx, size_t n, enum mq_sync sync,
    char (*ids)[MQ_ID_LEN + 1]);
#endif
