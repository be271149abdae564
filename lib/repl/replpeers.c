/*
 * replpeers.c: naming a known peer, and giving one up (mq-replicate
 * forget).
 *
 * A peer is known by its file replicate/peers/<id> alone: mq_repl_peers
 * (replstate.c) lists those, and nothing else of a peer's is kept per
 * peer but the lock file peers/<id>.live beside it, and peers/<id>.ends
 * (peerends.c), a figure for status.  Forgetting is:
 *  1. open or create peers/<id>.live and lock it to write without
 *     waiting: a sending session holds a read lock on it while it runs,
 *     so a refusal is a live session (EX_TEMPFAIL);
 *  2. COMMIT POINT: unlink peers/<id>;
 *  3. unlink peers/<id>.ends and peers/<id>.live, sync peers/, and
 *     close, which drops the lock.  A session that was waiting for it
 *     finds its file gone, makes a new one, and finds no peers/<id>: it
 *     starts as with a new peer.
 * A crash before 2 changes nothing (an empty .live may be left, as a
 * session would make it); between 2 and 3 it leaves peers/<id>.live
 * (and .ends) alone, which no reader lists and the next session with
 * that peer locks (and writes) again; before the sync, a loss of power
 * may bring peers/<id> back: the peer is known again, and forget may be
 * run again.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "repl.h"

#define PREFIX_MIN 8

static bool
all_hex(const char *s)
{
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

/* replicate/peers/ to change, or -1 with EX_NOINPUT when there is none. */
static int
peers_dir(mq_spool *sp, const char *what)
{
	int dfd, rc = repl_peers_open(sp, &dfd);
	if (rc == 0)
		return mq_err(EX_NOINPUT, "no peer %s: this spool never sent to "
		    "one", what);
	return rc < 0 ? -1 : dfd;
}

int
mq_repl_peer_find(mq_spool *sp, const char *what, char id[MQ_ID_LEN + 1])
{
	size_t wl = strlen(what);
	if (!wl || wl > 127 || strpbrk(what, "\n\r"))
		return mq_err(EX_USAGE, "a peer is its name, its spool id or a "
		    "prefix of it, on one line");
	int dfd = peers_dir(sp, what);
	if (dfd < 0)
		return -1;
	/* An id is that peer's, even when its file does not read. */
	int found = mq_is_id(what, wl) && mq_faccessat(dfd, what, F_OK,
	    AT_SYMLINK_NOFOLLOW) == 0;
	close(dfd);
	if (found) {
		memcpy(id, what, MQ_ID_LEN + 1);
		return 0;
	}
	char low[128];
	for (size_t i = 0; i <= wl; i++)
		low[i] = (char)tolower((unsigned char)what[i]);
	bool prefix = wl >= PREFIX_MIN && wl <= MQ_ID_LEN && all_hex(low);
	struct mq_peer_status *v;
	size_t n, m = 0, at = 0;
	if (mq_repl_peers(sp, &v, &n) < 0)
		return -1;
	char list[640] = "";
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i].name, what) &&
		    !(prefix && !strncmp(v[i].id, low, wl)))
			continue;
		if (m++ == 0)
			at = i;
		size_t l = strlen(list);
		if (l < sizeof list - 1)
			snprintf(list + l, sizeof list - l, "%s%s%s%s%s",
			    l ? ", " : "", v[i].id, v[i].name[0] ? " (" : "",
			    v[i].name, v[i].name[0] ? ")" : "");
	}
	if (m == 1)
		memcpy(id, v[at].id, MQ_ID_LEN + 1);
	free(v);
	if (m == 1)
		return 0;
	if (m > 1)
		return mq_err(EX_USAGE, "peer %s is ambiguous: %s", what, list);
	if (all_hex(low) && wl < PREFIX_MIN)
		return mq_err(EX_USAGE, "no peer is named %s, and a prefix of a "
		    "spool id is at least %d hexadecimal digits", what,
		    PREFIX_MIN);
	return mq_err(EX_NOINPUT, "no peer %s (mq-replicate status lists "
	    "them)", what);
}

/* 0 when peers/<id> says a session is live, 1 when not, as
 * mq_file_lock answers. */
static int
unlocked_live(mq_spool *sp, const char *id)
{
	struct mq_peer_status *v;
	size_t n;
	int rc = 1;
	if (mq_repl_peers(sp, &v, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id) && v[i].connected)
			rc = 0;
	free(v);
	return rc;
}

int
mq_repl_forget(mq_spool *sp, const char *what, char out[MQ_ID_LEN + 1])
{
	char id[MQ_ID_LEN + 1], live[MQ_ID_LEN + 8];
	if (mq_spool_writable(sp) < 0 || mq_repl_peer_find(sp, what, id) < 0)
		return -1;
	snprintf(live, sizeof live, "%s.live", id);
	int dfd = peers_dir(sp, what);
	if (dfd < 0)
		return -1;
	int fd = mq_file_open(dfd, live, O_RDWR | O_CREAT, 0666, NULL);
	int rc = fd < 0 ? -1 : mq_file_lock(fd, 0, live);
	/* Where there are no locks, sessions run without one: believe
	 * what the peer's file says, as status does. */
	if (rc < 0 && fd >= 0 && (errno == EINVAL || errno == ENOLCK ||
	    errno == EOPNOTSUPP || errno == ENOSYS))
		rc = unlocked_live(sp, id);
	if (rc == 0)
		rc = mq_err(EX_TEMPFAIL, "peer %s: a session with it is live: "
		    "stop it first", what);
	/* Someone forgot it meanwhile. */
	if (rc == 1 && mq_faccessat(dfd, id, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		rc = errno == ENOENT ? mq_err(EX_NOINPUT, "no peer %s", what) :
		    mq_err_sys("replicate/peers/%s", id);
	if (rc == 1 && mq_unlinkat(dfd, id, 0) < 0)
		rc = mq_err_sys("remove replicate/peers/%s", id);
	if (rc == 1 && (repl_peer_ends_remove(dfd, id) < 0 ||
	    (mq_unlinkat(dfd, live, 0) < 0 && errno != ENOENT) ||
	    mq_fsync_fd(dfd) < 0))
		rc = mq_err_sys("remove replicate/peers/%s", live);
	if (fd >= 0)
		close(fd);
	close(dfd);
	if (rc == 1 && out)
		memcpy(out, id, MQ_ID_LEN + 1);
	/* What only it held of the journal goes now (best effort: the next
	 * session's trim does it otherwise). */
	if (rc == 1)
		(void)repl_journal_trim(sp);
	return rc == 1 ? 0 : -1;
}
