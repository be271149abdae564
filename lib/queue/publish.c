/*
 * publish.c: publishing, with the head as the commit point.
 *
 * For each chunk of messages bound for one partition (mq-spool(5),
 * PUBLISH): take the partition lock; repair what a dead publisher left;
 * read the group list (this snapshot decides who receives the chunk);
 * record next = committed + n; write each message straight to log/KEY and
 * link it into each group's new/ (invisible: its seq is not yet below
 * committed); make all of it durable as the sync mode asks; then write
 * committed = next (the commit point) and make that durable; unlock.
 * Holding the lock from allocation to commit means commits happen in
 * sequence order, and a chunk is all-or-nothing for every group.
 * A failure before the commit point undoes the chunk at once, under the
 * same lock, exactly as the repair of a dead publisher would.
 *
 * A group with a filter (filter.c) gets only the messages that match it:
 * the publisher evaluates it before linking, so the link set is still
 * decided before the commit point.  Compiled filters are kept per group
 * and conf file identity (inode and mtime), so a publisher compiles each
 * once, and reads a group's conf again only when it was replaced.
 *
 * A publisher with a key signs each chunk once (sign.c): the signature
 * covers a hash tree of the chunk's messages as they will be stored, so
 * every message of the chunk is given its id and sequence number, sealed
 * and rendered before the first file is written, and each file is then
 * written whole with its signature lines; the commit point is where it
 * was.  On a topic with signers, one without a key or with another key is
 * refused before each send writes anything (mq-spool(5), SIGNED
 * MESSAGES).
 *
 * A spool that replication fenced (SPOOL/replicate/fenced: another spool
 * was promoted past it, mq-protocol(5)) is refused at each send, before
 * anything is written: what it took would be lost to the new primary.
 */
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sysexits.h>
#include <unistd.h>
#include <xxhash.h>

#include "pub.h"

int
mq_sync_parse(const char *s, enum mq_sync *out)
{
	if (!strcmp(s, "batch"))
		*out = MQ_SYNC_BATCH;
	else if (!strcmp(s, "each"))
		*out = MQ_SYNC_EACH;
	else if (!strcmp(s, "none"))
		*out = MQ_SYNC_NONE;
	else
		return mq_err(EX_USAGE, "bad sync mode '%s' (each, batch or none)",
		    s);
	return 0;
}

mq_pub *
mq_pub_open(mq_spool *sp, const char *topic, int flags)
{
	if (mq_spool_writable(sp) < 0)
		return NULL;
	mq_pub *p = calloc(1, sizeof *p);
	if (!p) {
		mq_err_sys("malloc");
		return NULL;
	}
	if (mq_topic_open_or_create(sp, topic, (flags & MQ_CREATE) |
	    MQ_FORMAT1 | MQ_FORMAT2, &p->t) < 0) {
		free(p);
		return NULL;
	}
	unsigned np = p->t.conf.partitions;
	p->sp = sp;
	p->rr = arc4random_uniform(np);
	p->hfd = malloc(np * sizeof *p->hfd);
	p->logfd = malloc(np * sizeof *p->logfd);
	p->dedupfd = malloc(np * sizeof *p->dedupfd);
	p->tmpfd = malloc(np * sizeof *p->tmpfd);
	p->jsame = calloc(np, sizeof *p->jsame);
	p->shared = calloc(np, sizeof *p->shared);
	if (!p->hfd || !p->logfd || !p->dedupfd || !p->tmpfd || !p->jsame ||
	    !p->shared) {
		free(p->jsame);
		free(p->shared);
		mq_err_sys("malloc");
		free(p->hfd);
		free(p->logfd);
		free(p->dedupfd);
		free(p->tmpfd);
		mq_topic_close(&p->t);
		free(p);
		return NULL;
	}
	for (unsigned k = 0; k < np; k++)
		p->hfd[k] = p->logfd[k] = p->dedupfd[k] = p->tmpfd[k] = -1;
	return p;
}

/* Whether the topic, as topic.conf says now, takes what we publish. */
static int
pub_admitted(mq_pub *p)
{
	const struct mq_signers *set;
	if (mq_signers_now(&p->t, &set) < 0)
		return -1;
	if (set->n == 0)
		return 0;
	if (!p->signing)
		return mq_err(EX_NOPERM, "topic %s takes only signed messages: "
		    "give a publisher key (--sign or MQ_SIGN_KEY)", p->t.name);
	if (!mq_signers_has(set, p->key.pk)) {
		char hex[MQ_PUBKEY_HEX + 1];
		mq_pubkey_hex(p->key.pk, hex);
		return mq_err(EX_NOPERM, "topic %s: key %s is not one of its "
		    "signers", p->t.name, hex);
	}
	return 0;
}

int
mq_pub_sign(mq_pub *p, const struct mq_identity *key)
{
	p->signing = key != NULL;
	if (key)
		p->key = *key;
	else
		mq_identity_forget(&p->key);
	return pub_admitted(p);
}

void
mq_pub_atomic(mq_pub *p, int on)
{
	p->atomic = on;
}

void
mq_pub_close(mq_pub *p)
{
	if (!p)
		return;
	for (unsigned k = 0; k < p->t.conf.partitions; k++) {
		if (p->hfd[k] >= 0)
			close(p->hfd[k]);
		if (p->logfd[k] >= 0)
			close(p->logfd[k]);
		if (p->dedupfd[k] >= 0)
			close(p->dedupfd[k]);
		if (p->tmpfd[k] >= 0)
			close(p->tmpfd[k]);
	}
	free(p->tmpfd);
	mq_seg_writer_free(&p->sw);
	free(p->hfd);
	free(p->logfd);
	free(p->dedupfd);
	free(p->jsame);
	free(p->shared);
	mq_names_free(&p->gnames);
	mq_jbuf_free(&p->jb);
	free(p->glist);
	for (size_t i = 0; i < p->nflt; i++) {
		free(p->flt[i].group);
		mq_filter_free(p->flt[i].f);
	}
	free(p->flt);
	free(p->gflt);
	free(p->in);
	free(p->fm);
	mq_filterset_free(&p->set);
	mq_sealer_free(&p->seal);
	for (size_t i = 0; i < p->stgcap; i++)
		free(p->sb[i].buf);
	free(p->sb);
	free(p->stg);
	free(p->leaf);
	mq_chunk_sig_free(&p->csig);
	mq_topic_close(&p->t);
	mq_identity_forget(&p->key);
	free(p);
}

/* The chunk's P record of a message: the groups it was linked into. */
static int
journal_publish(mq_pub *p, unsigned k, const char *key, const bool *in,
    size_t ng)
{
	size_t len = 0;
	for (size_t g = 0; g < ng; g++)
		len += in[g] ? strlen(p->gnames.v[g]) + 1 : 0;
	if (len + 2 > p->glcap) {
		char *v = realloc(p->glist, len + 2);
		if (!v)
			return mq_err_sys("malloc");
		p->glist = v;
		p->glcap = len + 2;
	}
	char *at = p->glist;
	for (size_t g = 0; g < ng; g++)
		if (in[g]) {
			size_t n = strlen(p->gnames.v[g]);
			memcpy(at, p->gnames.v[g], n);
			at += n;
			*at++ = ',';
		}
	if (at == p->glist)
		*at++ = '-';
	else
		at--;                   /* the last comma */
	*at = 0;
	return mq_journal_line(&p->jb, 'P', "%s %u %s %s", p->t.name, k, key,
	    p->glist);
}

/* Where format 1 writes a staged message: its groups' new/ (or delay/)
 * and their count, and the sync mode. */
struct file_sink {
	const int *gfd;
	size_t ng;
	enum mq_sync sync;
};

/* Writes message st at log/KEY, with its signature lines, and links it
 * into each group g whose in[g] is set: into new/, or for a message not
 * yet due into delay/<due>.KEY. */
static int
stage_one(mq_pub *p, unsigned k, const struct pub_staged *st,
    const char *sig, size_t slen, void *ctx)
{
	const struct file_sink *fs = ctx;
	const int *gfd = fs->gfd;
	size_t ng = fs->ng;
	bool later = st->m->deliver_at > st->now;
	char key[MQ_KEY_LEN + 1];
	snprintf(key, sizeof key, "%020" PRIu64 ".%s", st->seq, st->id);
	int fd = mq_openat(p->logfd[k], key, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return mq_err_sys("create message");
	struct iovec iov[4] = {
		{ st->hdr, st->sig_at }, { (char *)sig, slen },
		{ st->hdr + st->sig_at, st->hlen - st->sig_at },
		{ (void *)st->body, st->blen },
	};
	int rc = mq_write_all(fd, iov, 4);
	/* Where hosts share the partition, other hosts read what reached
	 * the server: closing does not flush a client that writes behind,
	 * and syncfs reaches no server (mq-spool(5), SHARED FILE SYSTEMS). */
	if (rc == 0 && (fs->sync == MQ_SYNC_EACH || p->shared[k]))
		rc = fsync(fd);
	if (close(fd) < 0)
		rc = -1;
	if (rc < 0)
		return mq_err_sys("write message");
	char dname[MQ_KEY_LEN + 32];
	if (later)
		snprintf(dname, sizeof dname, "%020" PRIu64 ".%s",
		    (uint64_t)ceil(st->m->deliver_at * 1000), key);
	for (size_t g = 0; rc == 0 && g < ng; g++)
		if (st->in[g] && mq_linkat(p->logfd[k], key,
		    gfd[later ? ng + g : g], later ? dname : key, 0) < 0)
			rc = mq_err_sys("link message into group");
	return rc == 0 ? journal_publish(p, k, key, st->in, ng) : rc;
}

void
mq_pub_on_repeat(mq_pub *p, void (*fn)(const struct mq_pub_msg *,
    const char *first_id, bool differs, void *ctx), void *ctx)
{
	p->repeat = fn;
	p->repeat_ctx = ctx;
}

/* The chunk's records go to the journal before the commit point, and are
 * made durable with the chunk: syncfs covers them when the journal is on
 * the partition's file system (see mq-spool(5), CHANGE JOURNAL). */
static int
journal_chunk(mq_pub *p, unsigned k, enum mq_sync sync)
{
	if (p->jb.len == 0)
		return 0;
	uint64_t end;
	if (mq_journal_write(p->sp, &p->jb, &end) < 0)
		return -1;
	if (end > p->jend)
		p->jend = end;
	if (sync == MQ_SYNC_NONE)
		return 0;
	int jfd = mq_journal_fd(p->sp);
	if (!p->jsame[k]) {
		struct stat a, b;
		p->jsame[k] = fstat(jfd, &a) == 0 && fstat(p->logfd[k], &b) == 0 &&
		    a.st_dev == b.st_dev ? 1 : -1;
	}
	if ((sync == MQ_SYNC_EACH || p->jsame[k] < 0 || p->shared[k]) &&
	    fdatasync(jfd) < 0)
		return mq_err_sys("sync journal");
	return 0;
}

/* Format 2: a publish writes no record; what a peer must confirm is an
 * S record of where each log ends now (mq-spool(5), Replication, format
 * 2), which reaches it only after the segments up to there. */
static int
journal_log_ends(const mq_pub *p, uint64_t *end, size_t *len)
{
	struct mq_jbuf jb = { 0 };
	int rc = 0;
	for (unsigned k = 0; rc == 0 && k < p->t.conf.partitions; k++) {
		uint64_t e;
		rc = mq_log_end(&p->t, k, &e) < 0 ? -1 :
		    mq_journal_line(&jb, 'S', "%s %u %" PRIu64, p->t.name, k, e);
	}
	*len = jb.len;
	if (rc == 0)
		rc = mq_journal_write(p->sp, &jb, end);
	mq_jbuf_free(&jb);
	return rc;
}

int
mq_pub_replica_goal(const mq_pub *p, struct mq_replica_goal *g)
{
	uint64_t s_end = 0;
	size_t s_len = 0;
	g->from = 0;
	if (p->t.conf.format == 2 && journal_log_ends(p, &s_end, &s_len) < 0)
		return -1;
	/* Nothing journaled (every message a repeat of an idempotency
	 * key): the first one's record is somewhere before the end. */
	if (!p->sp->shared) {
		g->end = s_end ? s_end : p->jend ? p->jend :
		    mq_journal_size(p->sp);
		if (s_end)
			g->from = s_end - s_len;
		return 0;
	}
	/* Our records are in this host's journal: the end of SPOOL/journal
	 * once they are merged into it. */
	return mq_journal_merge_now(p->sp, &g->end);
}

static int
make_durable(mq_pub *p, unsigned k, const int *gfd, size_t ng,
    enum mq_sync sync)
{
	if (journal_chunk(p, k, sync) < 0)
		return -1;
	if (sync == MQ_SYNC_NONE)
		return 0;
	if (sync == MQ_SYNC_BATCH && !p->shared[k])
		return syncfs(p->logfd[k]) < 0 ? mq_err_sys("sync") : 0;
	if (mq_fsync_fd(p->logfd[k]) < 0)
		return -1;
	for (size_t g = 0; g < 2 * ng; g++)
		if (mq_fsync_fd(gfd[g]) < 0)
			return -1;
	return 0;
}

static void
close_groups(int *gfd, size_t n)
{
	for (size_t g = 0; gfd && g < 2 * n; g++)
		if (gfd[g] >= 0)
			close(gfd[g]);
	free(gfd);
}

/* Opens new/ of every group in gfd[0..n) and delay/ in gfd[n..2n); the
 * groups' filters go to p->gflt[0..n). */
static int
open_groups(mq_pub *p, unsigned k, int **gfdp, size_t *ngp)
{
	struct mq_names groups = { 0 };
	if (mq_groups_read(&p->t, &groups) < 0)
		return -1;
	size_t n = groups.n;
	int *gfd = calloc(n ? 2 * n : 1, sizeof *gfd);
	mq_filter **gflt = reallocarray(p->gflt, n ? n : 1, sizeof *gflt);
	if (gflt)
		p->gflt = gflt;
	int rc = gfd && gflt ? 0 : mq_err_sys("malloc");
	for (size_t i = 0; gfd && i < 2 * n; i++)
		gfd[i] = -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char path[MQ_NAME_MAX + 16];
		rc = mq_path(path, sizeof path, "g/%s/new", groups.v[i]);
		if (rc == 0 && (gfd[i] = mq_dir_open(p->t.pfd[k], path)) < 0)
			rc = -1;
		if (rc == 0)
			rc = mq_path(path, sizeof path, "g/%s/delay", groups.v[i]);
		if (rc == 0 && (mq_mkdir(p->t.pfd[k], path) < 0 ||
		    (gfd[n + i] = mq_dir_open(p->t.pfd[k], path)) < 0))
			rc = -1;
		if (rc == 0)
			rc = mq_pub_group_filter(p, groups.v[i], i, &p->gflt[i]);
	}
	if (rc == 0)
		rc = mq_filterset_use(&p->set, p->gflt, n);
	mq_names_free(&p->gnames);
	p->gnames = groups;
	if (rc < 0) {
		close_groups(gfd, n);
		return -1;
	}
	*gfdp = gfd;
	*ngp = n;
	return 0;
}

/* Which groups each message of the chunk enters (p->in), decided for the
 * whole chunk at once: filters run in a worker process (jqrun.c), and one
 * exchange with it per chunk costs what one per message would. */
static int
chunk_filters(mq_pub *p, const struct mq_pub_msg *msgs, const size_t *idx,
    size_t n, size_t ng)
{
	bool *in = reallocarray(p->in, n && ng ? n * ng : 1, sizeof *in);
	if (in)
		p->in = in;
	struct mq_fmsg *fm = reallocarray(p->fm, n ? n : 1, sizeof *fm);
	if (fm)
		p->fm = fm;
	if (!in || !fm)
		return mq_err_sys("malloc");
	for (size_t i = 0; i < n; i++) {
		const struct mq_pub_msg *m = &msgs[idx[i]];
		fm[i] = (struct mq_fmsg){ .key = m->key, .headers = m->headers,
		    .nheaders = m->nheaders, .body = m->body, .len = m->len };
	}
	return mq_filterset_eval(&p->set, p->gflt, ng, fm, n, in);
}

static int
publish_chunk(mq_pub *p, unsigned k, const struct mq_pub_msg *msgs,
    const size_t *idx, size_t n, enum mq_sync sync,
    char (*ids)[MQ_ID_LEN + 1])
{
	if (p->t.conf.format == 2)
		return mq_pub_chunk_segment(p, k, msgs, idx, n, sync, ids);
	if (mq_pub_fds(p, k) < 0)
		return -1;
	int hfd = p->hfd[k];
	if (mq_head_lock(hfd, 1) < 0)
		return -1;
	struct mq_head h;
	int *gfd = NULL;
	size_t ng = 0;
	/* Under the lock, which an upgrade holds across its switch: a
	 * chunk of format 1 in a topic of format 2 would be read by no one. */
	int rc = mq_topic_format_now(&p->t);
	if (rc == 0)
		rc = mq_head_read(hfd, &h);
	if (rc == 0)
		rc = mq_partition_repair_locked(&p->t, k, hfd, &h);
	if (rc == 0)
		rc = open_groups(p, k, &gfd, &ng);
	if (rc == 0)
		rc = mq_seal_chunk(&p->seal, &p->t, p->gflt, p->gnames.v, ng);
	if (rc == 0)
		rc = chunk_filters(p, msgs, idx, n, ng);
	if (rc < 0) {
		close_groups(gfd, ng);
		mq_head_unlock(hfd);
		return -1;
	}
	/* next bounds what this chunk may create; a repeat of an
	 * idempotency key takes no sequence number, so fewer may commit.
	 * Sequence numbers never wrap: past the last, a partition is full. */
	if (mq_head_room(&h) < n)
		rc = mq_err(EX_DATAERR, "topic %s partition %u is full: no "
		    "sequence number is left for %zu message%s", p->t.name, k, n,
		    n == 1 ? "" : "s");
	if (rc == 0) {
		h.next = h.committed + n;
		rc = mq_head_write(hfd, &h, 0);
	}
	/* A repeat of an idempotency key takes no sequence number. */
	uint64_t seq = h.committed;
	size_t ns = 0;
	if (rc == 0)
		rc = mq_pub_stage(p, k, msgs, idx, n, seq, ng, ids, &ns);
	seq += ns;
	struct file_sink fs = { gfd, ng, sync };
	if (rc == 0)
		rc = mq_pub_write_signed(p, k, ns, stage_one, &fs);
	mq_pub_staged_free(p, ns);
	if (rc == 0 && p->dedupfd[k] >= 0 && (sync == MQ_SYNC_EACH ||
	    (sync == MQ_SYNC_BATCH && p->shared[k])))
		rc = mq_fsync_fd(p->dedupfd[k]);
	if (rc == 0)
		rc = make_durable(p, k, gfd, ng, sync);
	if (rc == 0) {
		struct mq_head done = { seq, seq };
		rc = mq_head_write(hfd, &done, sync != MQ_SYNC_NONE);
	}
	if (rc < 0) {
		/* Keep the first error; the undo is best effort, and a later
		 * lock holder finishes it if it fails too. */
		char msg[1024];
		int code = mq_errcode();
		snprintf(msg, sizeof msg, "%s", mq_errmsg());
		mq_partition_repair_locked(&p->t, k, hfd, &h);
		p->jb.len = 0;
		mq_err(code, "%s", msg);
		for (size_t i = 0; i < n; i++)
			ids[idx[i]][0] = 0;
	}
	mq_head_unlock(hfd);
	close_groups(gfd, ng);
	if (rc == 0)
		mq_count_published(p->t.sp, p->t.name, seq - h.committed,
		    mq_now());
	return rc;
}

static int
choose_partition(mq_pub *p, const struct mq_pub_msg *m, unsigned *k)
{
	unsigned np = p->t.conf.partitions;
	if (m->partition >= 0) {
		if ((unsigned)m->partition >= np)
			return mq_err(EX_USAGE, "topic '%s' has no partition %d "
			    "(it has %u)", p->t.name, m->partition, np);
		*k = (unsigned)m->partition;
	} else if (m->key || m->idempotency_key) {
		const char *by = m->key ? m->key : m->idempotency_key;
		*k = (unsigned)(XXH3_64bits(by, strlen(by)) % np);
	} else {
		*k = p->rr;
		p->rr = (p->rr + 1) % np;
	}
	return 0;
}

size_t
mq_pub_send(mq_pub *p, const struct mq_pub_msg *msgs, size_t n,
    enum mq_sync sync, char (*ids)[MQ_ID_LEN + 1])
{
	unsigned np = p->t.conf.partitions;
	unsigned *part = malloc((n ? n : 1) * sizeof *part);
	size_t *idx = malloc((n ? n : 1) * sizeof *idx);
	size_t stored = 0;
	int rc = part && idx ? 0 : mq_err_sys("malloc");
	for (size_t i = 0; i < n; i++)
		ids[i][0] = 0;
	/* A spool fenced by a newer primary takes no more messages: one
	 * look for the file per call, not per message. */
	if (rc == 0 && n)
		rc = mq_fence_check(p->sp);
	if (rc == 0 && n)
		rc = pub_admitted(p);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (msgs[i].len > p->t.conf.max_message_size)
			rc = mq_err(EX_DATAERR, "message of %zu bytes is larger "
			    "than the topic's limit of %zu", msgs[i].len,
			    p->t.conf.max_message_size);
		else if (msgs[i].key && mq_key_check(msgs[i].key) < 0)
			rc = -1;
		else
			rc = choose_partition(p, &msgs[i], &part[i]);
	}
	for (size_t i = 1; rc == 0 && p->atomic && i < n; i++)
		if (part[i] != part[0])
			rc = mq_err(EX_USAGE, "an atomic batch must go to one "
			    "partition (give a key or -p)");
	/* One pass per partition, in order: a chunk holds that partition's
	 * messages in their original order.  An atomic batch is one chunk. */
	size_t limit = p->atomic ? n : sync == MQ_SYNC_EACH ? 1 : MQ_CHUNK_MAX;
	for (unsigned k = 0; rc == 0 && k < np; k++) {
		size_t m = 0;
		for (size_t i = 0; rc == 0 && i <= n; i++) {
			if (i < n && part[i] == k)
				idx[m++] = i;
			if (m && (m == limit || i == n)) {
				rc = publish_chunk(p, k, msgs, idx, m, sync, ids);
				if (rc == 0)
					stored += m;
				m = 0;
			}
		}
	}
	free(part);
	free(idx);
	return stored;
}
