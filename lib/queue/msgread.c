/*
 * msgread.c: a message file read whole into an mq_msg, as consumers,
 * backfills, dead-letter commands and mq-stat --message read it.
 *
 * In a topic with roles a consumer may write every group's new/, cur/ and
 * dlq/ (it gives messages back there) but not log/, which only publishers
 * and administrators write.  So a claim is taken for a published message
 * only when it is the very file log/KEY names (same device and inode, the
 * descriptor read compared, not a path looked at again): a file that a
 * co-consumer made and linked into a queue under a committed KEY has no
 * log/ name, and the link it could make to a log/ file is the message that
 * was published there (fs.protected_hardlinks keeps it from linking files
 * it may only read, in any case).  Retention keeps the log/ name of a
 * message that a group or a dead letter still holds in such a topic (gc.c).
 * Format 2 reads a name's record from the segments; only a dead letter
 * imported, which has no record there, is checked so against log/KEY.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

/* A new message with room for size bytes of its file in its priv. */
static struct mq_msg *
msg_alloc(size_t size)
{
	struct mq_msg *m = calloc(1, sizeof *m);
	struct msg_priv *pv = malloc(sizeof *pv + size + 1);
	if (!m || !pv) {
		free(m);
		free(pv);
		mq_err_sys("malloc");
		return NULL;
	}
	m->priv = pv;
	pv->dev = 0;
	pv->claim[0] = pv->cur[0] = 0;
	pv->ino = 0;
	return m;
}

/* Parses the len bytes of m's file, checked against key (NULL: not):
 * 0 with *out, or -1 with m freed. */
static int
msg_parsed(struct mq_msg *m, size_t len, const char *key,
    struct mq_msg **out)
{
	struct msg_priv *pv = m->priv;
	pv->buf[len] = 0;
	if (mq_msg_parse(pv->buf, len, m) < 0 ||
	    (key && mq_msg_check_name(m, key) < 0)) {
		mq_msg_free(m);
		return -1;
	}
	*out = m;
	return 0;
}

/* Reads the claimed message cur/NAME into a new mq_msg. */
int
mq_claim_read(const struct mq_topic *t, int curfd, const char *curname,
    const char *key, struct mq_msg **out)
{
	/* Reading must not write: O_NOATIME spares an inode update per
	 * message where we may use it (we own the file, or are root).  A
	 * consumer that does not own what others publish stops asking, so
	 * as not to pay a failed open per message. */
	static _Thread_local int noatime = O_NOATIME;
	struct stat st;
	int fd = mq_file_open(curfd, curname, O_RDONLY | noatime, 0, &st);
	if (fd < 0 && errno == EPERM && noatime) {
		noatime = 0;
		fd = mq_file_open(curfd, curname, O_RDONLY, 0, &st);
	}
	if (fd < 0)
		return -1;
	size_t limit = t->conf.max_message_size + MQ_HEADER_BLOCK_MAX +
	    MQ_SEAL_OVERHEAD(MQ_SEAL_KEYS_MAX);
	if ((uint64_t)st.st_size > limit) {
		close(fd);
		return mq_err(EX_DATAERR, "%s: too large", curname);
	}
	size_t size = (size_t)st.st_size;
	struct mq_msg *m = msg_alloc(size);
	if (!m) {
		close(fd);
		return -1;
	}
	struct msg_priv *pv = m->priv;
	pv->dev = st.st_dev;
	pv->ino = st.st_ino;
	ssize_t len = mq_read_full(fd, pv->buf, size);
	close(fd);
	if (len < 0) {
		mq_msg_free(m);
		return mq_err_sys("read %s", curname);
	}
	const char *base = strrchr(curname, '/');
	if (!key)
		key = base ? base + 1 : curname;
	return msg_parsed(m, (size_t)len, key, out);
}

int
mq_record_at(const struct mq_topic *t, unsigned k, uint64_t seq,
    struct mq_seg_rec *r)
{
	uint64_t at;
	struct mq_seglog *l = mq_topic_seglog(t, k);
	if (!l)
		return -1;
	int rc = mq_seglog_seek(l, seq);
	if (rc == 1)
		rc = mq_seglog_next(l, &at, r);
	if (rc < 0)
		return -1;
	/* Gone with its segment, or never there: a name that a feed made
	 * names a record it read. */
	if (rc == 0 || at != seq)
		return mq_err(EX_DATAERR, "record %" PRIu64 " is not in the log",
		    seq);
	if (!r->hash_ok)
		return mq_err(EX_DATAERR, "record %" PRIu64 " fails its hash", seq);
	return 0;
}

int
mq_record_read(const struct mq_topic *t, unsigned k, uint64_t seq,
    const char *key, struct mq_msg **out)
{
	struct mq_seg_rec r;
	if (mq_record_at(t, k, seq, &r) < 0)
		return -1;
	size_t size = r.hdr_len + r.body_len;
	struct mq_msg *m = msg_alloc(size);
	if (!m)
		return -1;
	struct msg_priv *pv = m->priv;
	memcpy(pv->buf, r.hdr, r.hdr_len);
	memcpy(pv->buf + r.hdr_len, r.body, r.body_len);
	return msg_parsed(m, size, key, out);
}

int
mq_record_next(const struct mq_topic *t, unsigned k, uint64_t *seq,
    uint64_t end, struct mq_msg **out)
{
	struct mq_seglog *l = mq_topic_seglog(t, k);
	if (!l)
		return -1;
	*out = NULL;
	while (*seq < end) {
		if (mq_record_read(t, k, *seq, NULL, out) == 0)
			return 1;
		if (mq_errcode() != EX_DATAERR)
			return -1;
		uint64_t next;
		int gap = mq_seglog_gap(l, *seq, &next);
		if (gap < 0 && mq_errcode() != EX_DATAERR)
			return -1;
		if (gap <= 0)
			return 1;       /* there, and damaged */
		*seq = next < end ? next : end;
	}
	return 0;
}

int
mq_record_copy(const struct mq_topic *t, unsigned k, int dirfd,
    const char *name)
{
	uint64_t seq;
	struct mq_seg_rec r;
	struct stat st;
	if (mq_seq_of(name, &seq) < 0)
		return mq_err(EX_DATAERR, "%s: not a message name", name);
	/* Never another message's record: a name that a consumer placed
	 * under its sequence number keeps the bytes it holds.  One that
	 * does not parse is copied (a feed named it with the id of zeros). */
	struct mq_msg *m;
	if (mq_record_read(t, k, seq, NULL, &m) == 0) {
		int other = mq_msg_check_name(m, name);
		mq_msg_free(m);
		if (other < 0)
			return -1;
	}
	if (mq_record_at(t, k, seq, &r) < 0)
		return -1;
	int fd = mq_file_open(dirfd, name, O_WRONLY, 0, &st);
	if (fd < 0)
		return -1;
	if (st.st_nlink > 1) {
		/* The name shares its inode with the rest of its feed's
		 * batch (feed.c), whose names must stay empty: a file of its
		 * own swapped in, or nothing when the claim is gone (its
		 * lease expired), as a rename of it would fail. */
		close(fd);
		char *buf = malloc(r.hdr_len + r.body_len + 1);
		if (!buf)
			return mq_err_sys("malloc");
		memcpy(buf, r.hdr, r.hdr_len);
		memcpy(buf + r.hdr_len, r.body, r.body_len);
		int rc = mq_write_file_swap(dirfd, name, buf,
		    r.hdr_len + r.body_len);
		free(buf);
		return rc;
	}
	struct iovec iov[2] = { { (void *)r.hdr, r.hdr_len },
	    { (void *)r.body, r.body_len } };
	int rc = mq_write_all(fd, iov, 2);
	if (rc == 0)
		rc = fsync(fd);
	if (close(fd) < 0)
		rc = -1;
	return rc < 0 ? mq_err_sys("copy record into %s", name) : 0;
}

/* Format 2, a topic with roles: a name's own bytes count only when it
 * is the file that log/KEY names, out of the segments, as format 1 has
 * it: a dead letter imported (dlqarchive.c), as only publishers and
 * administrators may write log/.  0 with *out; 1 (*out NULL) a file a
 * consumer placed, never published; -1 an error. */
static int
read_imported(const struct mq_topic *t, unsigned k, int curfd,
    const char *curname, const char *key, struct mq_msg **out)
{
	char name[MQ_KEY_LEN + 1];
	snprintf(name, sizeof name, "%.*s", MQ_KEY_LEN, key);
	int logfd = mq_dir_open(t->pfd[k], "log");
	if (logfd < 0)
		return -1;
	int pub = mq_claim_read(t, curfd, curname, NULL, out) < 0 ? -1 :
	    mq_claim_published(logfd, *out, name);
	close(logfd);
	if (pub > 0)
		return 0;
	if (pub == 0) {
		mq_msg_free(*out);
		mq_err(EX_DATAERR, "%s is not in the log: not published", key);
	}
	*out = NULL;
	return pub == 0 ? 1 : -1;
}

int
mq_claim_read_at(const struct mq_topic *t, unsigned k, int curfd,
    const char *curname, struct mq_msg **out)
{
	struct stat st;
	/* Format 2 names what the log holds with an empty file; a dead
	 * letter, a claim about to become one, a name from before an
	 * upgrade hold the same bytes.  The log's record is read whenever
	 * the log has it: a file's bytes are never trusted over it (a
	 * consumer of a topic with roles may write the queues).  A name's
	 * own bytes count only for what the log no longer holds (retention
	 * passed a copy's record), and where consumers write the queues
	 * only when log/KEY names that very file (read_imported). */
	if (t->conf.format == 2) {
		const char *base = strrchr(curname, '/');
		const char *key = base ? base + 1 : curname;
		uint64_t seq;
		if (mq_seq_of(key, &seq) < 0)
			return mq_err(EX_DATAERR, "%s: not a message name", key);
		if (mq_fstatat(curfd, curname, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return mq_err_sys("%s", key);
		if (!S_ISREG(st.st_mode))
			return mq_err(EX_DATAERR, "%s: not a regular file", key);
		int rc = mq_record_read(t, k, seq, key, out);
		if (rc == 0 || st.st_size == 0 || mq_errcode() != EX_DATAERR)
			return rc;
		if (mq_roles_any(&t->conf.roles))
			return read_imported(t, k, curfd, curname, key, out);
	}
	return mq_claim_read(t, curfd, curname, NULL, out);
}

int
mq_claim_published(int logfd, const struct mq_msg *m, const char *key)
{
	const struct msg_priv *pv = m->priv;
	struct stat st;
	if (mq_fstatat(logfd, key, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 :
		    mq_err_sys("log/%s", key);
	return S_ISREG(st.st_mode) && st.st_dev == pv->dev &&
	    st.st_ino == pv->ino;
}
