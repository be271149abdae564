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
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

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
	struct mq_msg *m = calloc(1, sizeof *m);
	struct msg_priv *pv = malloc(sizeof *pv + size + 1);
	if (!m || !pv) {
		free(m);
		free(pv);
		close(fd);
		return mq_err_sys("malloc");
	}
	m->priv = pv;
	pv->dev = st.st_dev;
	pv->ino = st.st_ino;
	ssize_t len = mq_read_full(fd, pv->buf, size);
	close(fd);
	if (len < 0) {
		mq_msg_free(m);
		return mq_err_sys("read %s", curname);
	}
	pv->buf[len] = 0;
	const char *base = strrchr(curname, '/');
	if (!key)
		key = base ? base + 1 : curname;
	if (mq_msg_parse(pv->buf, len, m) < 0 ||
	    mq_msg_check_name(m, key) < 0) {
		mq_msg_free(m);
		return -1;
	}
	*out = m;
	return 0;
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
