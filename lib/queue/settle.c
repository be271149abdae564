/*
 * settle.c: what can happen to a claim besides an ack.
 *
 * Giving back: the claim cur/NAME is renamed to new/ (pending at once),
 * to delay/<due>.<name> (pending once due), or, when it has failed the
 * group's max-attempts times, to the group's dead letters.  Each is one
 * rename, the commit point, so the claim is in exactly one place.  A
 * delivery a handler deferred (exit 75) counts as an attempt but not as a
 * failure.  In an ordered group a claim given back stays in cur/ (see
 * ordered.c).  Extending: a rename of cur/NAME to the same claim with a later
 * deadline.  The claim keeps its attempts and token, so its receipt finds
 * it still (mq_claim_find).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

int
mq_gdirs_open(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_gdirs *d)
{
	static const char *const sub[] = { "new", "cur", "delay" };
	int *fd[] = { &d->newfd, &d->curfd, &d->delayfd };
	char path[MQ_NAME_MAX + 16];
	d->newfd = d->curfd = d->delayfd = -1;
	d->group = group;
	for (size_t i = 0; i < 3; i++) {
		if (mq_path(path, sizeof path, "g/%s/%s", group, sub[i]) < 0)
			return -1;
		/* delay/ came with a later version than some groups: it is
		 * made when first needed, so an ack works on a read-only
		 * spool. */
		if (i == 2 && mq_faccessat(t->pfd[k], path, F_OK,
		    AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			continue;
		if ((*fd[i] = mq_dir_open(t->pfd[k], path)) < 0) {
			mq_gdirs_close(d);
			return -1;
		}
	}
	return 0;
}

/* Opens delay/ of the group, making it if need be. */
int
mq_gdirs_delay(const struct mq_topic *t, unsigned k, const char *group,
    struct mq_gdirs *d)
{
	char path[MQ_NAME_MAX + 16];
	if (d->delayfd >= 0)
		return 0;
	if (mq_path(path, sizeof path, "g/%s/delay", group) < 0 ||
	    mq_mkdir(t->pfd[k], path) < 0 ||
	    (d->delayfd = mq_dir_open(t->pfd[k], path)) < 0)
		return -1;
	return 0;
}

void
mq_gdirs_close(struct mq_gdirs *d)
{
	int *fd[] = { &d->newfd, &d->curfd, &d->delayfd };
	for (size_t i = 0; i < 3; i++) {
		if (*fd[i] >= 0)
			close(*fd[i]);
		*fd[i] = -1;
	}
}

/* Renames fromfd/from to the cur/ name of e in curfd (out gets it):
 * a claim, a renewal or a deferral.  -1 with errno set, no error
 * recorded: the callers say what ENOENT means to them.  A new token
 * (fresh) makes the receipts of the old name useless. */
int
mq_claim_move(int fromfd, const char *from, int curfd, struct mq_entry *e,
    int fresh, char *out, size_t len)
{
	if (fresh)
		mq_hex_random(e->token, 8);
	e->claimed = 1;
	if (mq_entry_cur_name(e, out, len) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return mq_renameat(fromfd, from, curfd, out);
}

int
mq_claim_return(const struct mq_topic *t, unsigned k, const char *group,
    const struct mq_gdirs *d, const char *curname, const struct mq_nack *how,
    const struct mq_group_conf *gc)
{
	unsigned max_attempts = gc->max_attempts;
	static const struct mq_nack plain = { .status = -1 };
	struct mq_entry e;
	char name[MQ_KEY_LEN + 64];
	if (!how)
		how = &plain;
	if (mq_entry_parse(curname, &e) < 0 || !e.claimed)
		return mq_err(EX_SOFTWARE, "bad claim name %s", curname);
	if (how->deferred)
		e.deferred++;
	if (!how->deferred && max_attempts &&
	    mq_entry_failures(&e) >= max_attempts) {
		struct mq_why why = { "max-attempts", how->detail, how->status,
		    how->tail, how->tail_len };
		return mq_dlq_put(t, k, group, d->curfd, curname, &e, &why) < 0 ?
		    -1 : 1;
	}
	int rc;
	if (gc->ordered) {
		/* The partition's head stays in cur/ until its retry is due,
		 * under a new token: the owner claims it there again, before
		 * anything newer (ordered.c). */
		e.deadline_ms = (uint64_t)ceil((mq_now() + fmax(how->delay, 0)) *
		    1000);
		rc = mq_claim_move(d->curfd, curname, d->curfd, &e, 1, name,
		    sizeof name);
	} else if (how->delay > 0) {
		uint64_t due = (uint64_t)ceil((mq_now() + how->delay) * 1000);
		struct mq_gdirs dd = *d;
		if (d->delayfd < 0 && mq_gdirs_delay(t, k, group, &dd) < 0)
			return -1;
		rc = mq_entry_delay_name(&e, due, name, sizeof name);
		if (rc == 0 && mq_renameat(d->curfd, curname, dd.delayfd, name) < 0)
			rc = -1;
		if (dd.delayfd != d->delayfd) {
			int saved = errno;
			close(dd.delayfd);
			errno = saved;
		}
	} else {
		rc = mq_entry_new_name(&e, name, sizeof name);
		if (rc == 0 && mq_renameat(d->curfd, curname, d->newfd, name) < 0)
			rc = -1;
	}
	if (rc < 0 && errno == ENOENT)
		return mq_err(EX_NOINPUT, "message %s is no longer claimed (its "
		    "lease expired)", e.key + MQ_SEQ_DIGITS + 1);
	return rc < 0 ? mq_err_sys("give back %s", e.key) : 0;
}

int
mq_claim_reject(const struct mq_topic *t, unsigned k, const char *group,
    const struct mq_gdirs *d, const char *curname, const struct mq_why *why)
{
	struct mq_entry e;
	if (mq_entry_parse(curname, &e) < 0 || !e.claimed)
		return mq_err(EX_SOFTWARE, "bad claim name %s", curname);
	return mq_dlq_put(t, k, group, d->curfd, curname, &e, why);
}

/* Finds the current name of the claim a (possibly older) name refers to:
 * the same message, attempts and token, whatever its deadline now is. */
int
mq_claim_find(const struct mq_gdirs *d, const char *curname, char *out,
    size_t len)
{
	struct mq_entry want, e;
	if (mq_entry_parse(curname, &want) < 0 || !want.claimed)
		return mq_err(EX_SOFTWARE, "bad claim name %s", curname);
	if (mq_faccessat(d->curfd, curname, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return mq_path(out, len, "%s", curname);
	struct mq_names l = { 0 };
	int rc = mq_names_read(d->curfd, NULL, &l), found = 0;
	for (size_t i = 0; rc == 0 && !found && i < l.n; i++)
		if (mq_entry_parse(l.v[i], &e) == 0 && e.claimed &&
		    !strcmp(e.key, want.key) && e.attempts == want.attempts &&
		    !strcmp(e.token, want.token)) {
			found = 1;
			rc = mq_path(out, len, "%s", l.v[i]);
		}
	mq_names_free(&l);
	if (rc == 0 && !found)
		return mq_err(EX_NOINPUT, "message %s is gone (acked, or its lease "
		    "expired and it was claimed again)",
		    want.key + MQ_SEQ_DIGITS + 1);
	return rc;
}

int
mq_claim_extend(const struct mq_gdirs *d, const char *curname, double seconds,
    char *out, size_t len)
{
	struct mq_entry e;
	if (mq_entry_parse(curname, &e) < 0 || !e.claimed)
		return mq_err(EX_SOFTWARE, "bad claim name %s", curname);
	e.deadline_ms = (uint64_t)((mq_now() + seconds) * 1000);
	if (mq_claim_move(d->curfd, curname, d->curfd, &e, 0, out, len) < 0) {
		if (errno == ENOENT)
			return mq_err(EX_NOINPUT, "message %s is no longer claimed "
			    "(its lease expired)", e.key + MQ_SEQ_DIGITS + 1);
		return mq_err_sys("extend");
	}
	return 0;
}

/* The exactly-once ledger: g/<group>/done/<id>, an empty file, its
 * directory synced before the ack that it allows (the caller may sync once
 * for a batch: sync 0). */
int
mq_ledger_add(int donefd, const char *id, int sync)
{
	int fd = mq_file_open(donefd, id, O_WRONLY | O_CREAT, 0666, NULL);
	if (fd < 0)
		return mq_errcode() == EX_DATAERR ? -1 : mq_err_sys("ledger");
	close(fd);
	return sync ? mq_fsync_fd(donefd) : 0;
}

int
mq_ledger_dir(int pfd, const char *group, int *fd)
{
	char path[MQ_NAME_MAX + 16];
	if (*fd < 0 && (mq_path(path, sizeof path, "g/%s/done", group) < 0 ||
	    mq_mkdir(pfd, path) < 0 || (*fd = mq_dir_open(pfd, path)) < 0))
		return -1;
	return 0;
}

int
mq_ledger_record(const struct mq_topic *t, unsigned k, const char *group,
    const char *id, int sync)
{
	int fd = -1;
	if (mq_ledger_dir(t->pfd[k], group, &fd) < 0)
		return -1;
	int rc = mq_ledger_add(fd, id, sync);
	close(fd);
	return rc;
}

int
mq_group_held(int pfd, const char *group, struct mq_names *keys)
{
	static const char *const sub[] = { "new", "cur", "delay" };
	int rc = 0;
	for (size_t d = 0; rc == 0 && d < 3; d++) {
		char p[MQ_NAME_MAX + 16];
		struct mq_names l = { 0 };
		/* A delay/ name starts with its due time. */
		size_t skip = d == 2 ? MQ_SEQ_DIGITS + 1 : 0;
		rc = mq_path(p, sizeof p, "g/%s/%s", group, sub[d]);
		if (rc == 0)
			rc = mq_names_read_at(pfd, p, NULL, &l);
		for (size_t i = 0; rc == 0 && i < l.n; i++)
			if (strlen(l.v[i]) >= skip + MQ_KEY_LEN)
				rc = mq_names_push(keys, l.v[i] + skip, MQ_KEY_LEN);
		mq_names_free(&l);
	}
	mq_names_sort(keys);
	return rc;
}
