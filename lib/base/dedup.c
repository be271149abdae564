/*
 * dedup.c: the idempotency index of a partition, p<k>/dedup/.
 *
 * An entry is a symlink named by the XXH3-128 of an idempotency key whose
 * target is the KEY of the message that first used it.  It is made under
 * the partition's publish lock, before the commit, so the repair of a
 * failed publish removes it with the rest of the chunk (its target's
 * sequence number lies in the range repaired), and a committed message's
 * entry is there for every later publisher.  An entry older than the
 * topic's dedup window (the time in its target's id) no longer counts; gc
 * removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <xxhash.h>

#include "base.h"

/* The dedup index entry of an idempotency key: XXH3-128 of the key. */
static void
dedup_name(const char *ikey, size_t len, char out[33])
{
	XXH128_hash_t h = XXH3_128bits(ikey, len);
	snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, (uint64_t)h.high64,
	    (uint64_t)h.low64);
}

/* Records ikey for the message about to get seq and id, unless the key
 * was seen within the window: then returns 1 with the first message's id
 * in id and its sequence number in *first_seq.  The caller holds the
 * partition lock. */
int
mq_dedup_claim(int dfd, const char *ikey, uint64_t seq, double window,
    char id[MQ_ID_LEN + 1], uint64_t *first_seq)
{
	char name[33], key[MQ_KEY_LEN + 1], old[MQ_KEY_LEN + 2];
	dedup_name(ikey, strlen(ikey), name);
	snprintf(key, sizeof key, "%020" PRIu64 ".%s", seq, id);
	for (int tries = 0; tries < 3; tries++) {
		if (symlinkat(key, dfd, name) == 0)
			return 0;
		if (!mq_name_taken(dfd, name, errno))
			return mq_err_sys("dedup index");
		ssize_t n = readlinkat(dfd, name, old, sizeof old - 1);
		if (n == MQ_KEY_LEN) {
			old[n] = 0;
			if (mq_is_key(old) &&
			    mq_now() - mq_key_time(old) <= window) {
				memcpy(id, old + MQ_SEQ_DIGITS + 1, MQ_ID_LEN + 1);
				*first_seq = strtoull(old, NULL, 10);
				return 1;
			}
		}
		/* Expired (or not ours): the key may be used again. */
		if (mq_unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
			return mq_err_sys("dedup index");
	}
	return mq_err(EX_TEMPFAIL, "dedup index busy");
}

int
mq_dedup_dir(int pfd, int *fd)
{
	if (*fd < 0 && (mq_mkdir(pfd, "dedup") < 0 ||
	    (*fd = mq_dir_open(pfd, "dedup")) < 0))
		return -1;
	return 0;
}

int
mq_dedup_adopt(int dedupfd, const char *ikey, size_t ilen, const char *key)
{
	char name[33], tmp[40], old[MQ_KEY_LEN + 2];
	dedup_name(ikey, ilen, name);
	ssize_t n = readlinkat(dedupfd, name, old, sizeof old - 1);
	if (n == MQ_KEY_LEN && !memcmp(old, key, MQ_KEY_LEN))
		return 0;
	/* Made beside it, then renamed over it: never a moment without an
	 * entry. */
	snprintf(tmp, sizeof tmp, ".r.%s", name);
	mq_unlinkat(dedupfd, tmp, 0);
	if (symlinkat(key, dedupfd, tmp) == 0 &&
	    mq_renameat(dedupfd, tmp, dedupfd, name) == 0)
		return 0;
	int rc = mq_err_sys("dedup index");
	mq_unlinkat(dedupfd, tmp, 0);
	return rc;
}

int
mq_dedup_sweep(int pfd, bool (*drop)(const char *key, void *ctx), void *ctx)
{
	int fd = mq_openat(pfd, "dedup", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("dedup");
	struct mq_names l = { 0 };
	int rc = mq_names_read(fd, NULL, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		char key[MQ_KEY_LEN + 2];
		ssize_t n = readlinkat(fd, l.v[i], key, sizeof key - 1);
		if (n != MQ_KEY_LEN)
			continue;
		key[n] = 0;
		if (mq_is_key(key) && drop(key, ctx) &&
		    mq_unlinkat(fd, l.v[i], 0) < 0 && errno != ENOENT)
			rc = mq_err_sys("unlink dedup/%s", l.v[i]);
	}
	mq_names_free(&l);
	close(fd);
	return rc;
}
