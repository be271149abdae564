/*
 * pubstage.c: what a publisher does to a chunk before it is written, in
 * either format: each message given its id and sequence number, its
 * idempotency key claimed, its body sealed, its header block rendered,
 * and the chunk signed (mq-spool(5), PUBLISH, SIGNED MESSAGES).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pub.h"

int
mq_pub_fds(mq_pub *p, unsigned k)
{
	if (p->hfd[k] < 0 &&
	    (p->hfd[k] = mq_head_open(p->t.pfd[k], MQ_HEAD_WRITE)) < 0)
		return -1;
	if (p->logfd[k] < 0) {
		/* Who may not write log/ (a consumer, under the topic's
		 * roles) is refused here, before it writes the head: a
		 * refused publish changes nothing. */
		if (mq_faccessat(p->t.pfd[k], "log", W_OK, AT_EACCESS) < 0)
			return mq_err_sys("log");
		if ((p->logfd[k] = mq_dir_open(p->t.pfd[k], "log")) < 0)
			return -1;
		p->shared[k] = mq_fs_shared(p->logfd[k]);
	}
	return 0;
}

/* Room for a chunk of n messages. */
static int
stage_room(mq_pub *p, size_t n)
{
	if (n <= p->stgcap)
		return 0;
	struct pub_staged *stg = reallocarray(p->stg, n, sizeof *stg);
	if (stg)
		p->stg = stg;
	struct mq_sealbuf *sb = reallocarray(p->sb, n, sizeof *sb);
	if (sb) {
		p->sb = sb;
		memset(sb + p->stgcap, 0, (n - p->stgcap) * sizeof *sb);
	}
	unsigned char (*leaf)[MQ_HASH_BYTES] = reallocarray(p->leaf, n,
	    sizeof *leaf);
	if (leaf)
		p->leaf = leaf;
	if (!stg || !sb || !leaf)
		return mq_err_sys("malloc");
	p->stgcap = n;
	return 0;
}

void
mq_pub_staged_free(mq_pub *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p->stg[i].hdr);
		p->stg[i].hdr = NULL;
	}
}

/* Makes message st of the chunk what will be stored: its body sealed on
 * a sealed topic (a signature covers the stored bytes: the sealed body
 * and its Mq-Sealed header) and its header block rendered. */
static int
prepare_one(mq_pub *p, unsigned k, struct pub_staged *st,
    struct mq_sealbuf *sb)
{
	const struct mq_pub_msg *m = st->m;
	struct mq_pub_msg sealed;
	if (p->seal.n) {
		if (mq_seal_msg(&p->seal, &p->t, st->id, m, sb, &sealed) < 0)
			return -1;
		m = &sealed;
	}
	st->body = m->body;
	st->blen = m->len;
	st->now = mq_now();
	return mq_msg_render(p->t.name, p->t.conf.ttl, k, st->seq, st->id, m,
	    p->signing ? MQ_SIGN_LINES_MAX : 0, st->now, &st->hdr, &st->hlen,
	    &st->sig_at);
}

/* A repeat of an idempotency key goes to p->repeat, which is told
 * whether its body differs from the first message's (its Content-Hash,
 * among the first lines of log/KEY, or of its record in format 2: user
 * headers come after it).  Not
 * known on a sealed topic, whose stored body is sealed, nor when the
 * first is gone already. */
static void
repeat_check(mq_pub *p, unsigned k, const struct mq_pub_msg *m,
    uint64_t first, const char *id)
{
	char key[MQ_KEY_LEN + 1], head[4096], want[50];
	if (!p->repeat)
		return;
	snprintf(key, sizeof key, "%020" PRIu64 ".%s", first, id);
	ssize_t n = -1;
	struct mq_seg_rec r;
	if (p->seal.n) {
		/* sealed: not known */
	} else if (p->t.conf.format == 2) {
		/* Its record's header block, in the log. */
		if (mq_record_at(&p->t, k, first, &r) == 0) {
			n = (ssize_t)(r.hdr_len < sizeof head ? r.hdr_len :
			    sizeof head);
			memcpy(head, r.hdr, (size_t)n);
		}
	} else {
		int fd = mq_openat(p->logfd[k], key, O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC);
		n = fd >= 0 ? read(fd, head, sizeof head) : -1;
		if (fd >= 0)
			close(fd);
	}
	const char *v = n > 0 ? memmem(head, (size_t)n, "\nContent-Hash: ",
	    15) : NULL;
	mq_content_key(m->body, m->len, want);
	strcat(want, "\n");
	size_t wl = strlen(want);
	p->repeat(m, id, v && ((size_t)(head + n - v) < 15 + wl ||
	    memcmp(v + 15, want, wl)), p->repeat_ctx);
}

/* A message with an idempotency key claims it in the partition's dedup
 * index: 1 when it repeats one seen within the window (id is then the
 * first's), 0 when it is new. */
static int
claim_key(mq_pub *p, unsigned k, const struct mq_pub_msg *m, uint64_t seq,
    char *id)
{
	uint64_t first;
	if (mq_dedup_dir(p->t.pfd[k], &p->dedupfd[k]) < 0)
		return -1;
	int rc = mq_dedup_claim(p->dedupfd[k], m->idempotency_key, seq,
	    p->t.conf.dedup_window, id, &first);
	if (rc == 1)
		repeat_check(p, k, m, first, id);
	return rc;
}

int
mq_pub_stage(mq_pub *p, unsigned k, const struct mq_pub_msg *msgs,
    const size_t *idx, size_t n, uint64_t seq, size_t ng,
    char (*ids)[MQ_ID_LEN + 1], size_t *ns)
{
	/* Every message is given its id and sequence number and rendered
	 * before the first is written: the chunk's signature needs them
	 * all. */
	int rc = stage_room(p, n);
	*ns = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct mq_pub_msg *m = &msgs[idx[i]];
		char *id = ids[idx[i]];
		mq_id_new(id);
		if (m->idempotency_key &&
		    (rc = claim_key(p, k, m, seq, id)) != 0) {
			rc = rc == 1 ? 0 : rc;
			continue;
		}
		struct pub_staged *st = &p->stg[*ns];
		*st = (struct pub_staged){ .m = m, .seq = seq++, .id = id,
		    .in = ng ? p->in + i * ng : NULL };
		rc = prepare_one(p, k, st, &p->sb[*ns]);
		*ns += st->hdr != NULL;
	}
	return rc;
}

int
mq_pub_write_signed(mq_pub *p, unsigned k, size_t n, mq_pub_put *put,
    void *ctx)
{
	int rc = 0;
	char sig[MQ_SIGN_LINES_MAX];
	/* A tree of one is none: its message is signed plain, so its leaf
	 * is never hashed. */
	for (size_t s = 0; rc == 0 && s < n; s += MQ_TREE_MAX) {
		size_t m = n - s < MQ_TREE_MAX ? n - s : MQ_TREE_MAX;
		for (size_t i = 0; p->signing && m > 1 && rc == 0 && i < m; i++)
			rc = mq_sign_leaf(p->stg[s + i].hdr, p->stg[s + i].hlen - 1,
			    p->stg[s + i].body, p->stg[s + i].blen, p->leaf[i]);
		if (rc == 0 && p->signing)
			rc = mq_chunk_sign(&p->csig, &p->key,
			    (const unsigned char (*)[MQ_HASH_BYTES])p->leaf, m);
		for (size_t i = 0; rc == 0 && i < m; i++) {
			const struct pub_staged *st = &p->stg[s + i];
			size_t slen = 0;
			if (p->signing && mq_chunk_sign_lines(&p->csig, &p->key, i,
			    st->hdr, st->hlen - 1, st->body, st->blen, sig,
			    &slen) < 0)
				return -1;
			rc = put(p, k, st, sig, slen, ctx);
		}
	}
	return rc;
}

/* The filter of a group (NULL: none), compiled once per version of its
 * conf; at is where to look first in the cache. */
int
mq_pub_group_filter(mq_pub *p, const char *group, size_t at, mq_filter **out)
{
	char path[MQ_NAME_MAX + 16];
	struct stat st;
	if (mq_path(path, sizeof path, "groups/%s.conf", group) < 0)
		return -1;
	if (mq_fstatat(p->t.fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return mq_err_sys("group %s", group);
	struct pub_filter *c = at < p->nflt && !strcmp(p->flt[at].group, group) ?
	    &p->flt[at] : NULL;
	for (size_t i = 0; !c && i < p->nflt; i++)
		if (!strcmp(p->flt[i].group, group))
			c = &p->flt[i];
	if (c && c->ino == st.st_ino && c->mtim.tv_sec == st.st_mtim.tv_sec &&
	    c->mtim.tv_nsec == st.st_mtim.tv_nsec) {
		*out = c->f;
		return 0;
	}
	struct mq_conf kv;
	mq_filter *f;
	if (mq_group_conf_read(&p->t, group, &kv) < 0)
		return -1;
	int rc = mq_filter_from_conf(&kv, path, &f);
	mq_conf_free(&kv);
	if (rc < 0)
		return -1;
	if (!c) {
		struct pub_filter *v = reallocarray(p->flt, p->nflt + 1, sizeof *v);
		char *name = v ? strdup(group) : NULL;
		if (v)
			p->flt = v;
		if (!name) {
			mq_filter_free(f);
			return mq_err_sys("malloc");
		}
		c = &p->flt[p->nflt++];
		*c = (struct pub_filter){ .group = name };
	}
	/* The combined program may hold the old one. */
	mq_filterset_free(&p->set);
	mq_filter_free(c->f);
	c->f = f;
	c->ino = st.st_ino;
	c->mtim = st.st_mtim;
	*out = f;
	return 0;
}
