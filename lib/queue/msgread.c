/*
 * msgread.c: a message file read whole into an mq_msg, as consumers,
 * backfills, dead-letter commands and mq-stat --message read it.
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
