/*
 * fence.c: epochs and fencing (mq-protocol(5), Epochs): what a session
 * decides from the epochs of its two ends, and the files it writes for
 * that, replicate/epoch, replicate/fenced and replicate/role (read by
 * base/fenced.c).
 *
 * A spool's epoch is raised by promote and by learning a higher one from
 * a sender; it never goes down.  A receiver refuses a sender at a lower
 * epoch, at the hello and at every batch (it reads its epoch again under
 * replicate/lock-recv, which promote holds while it writes the file, so
 * no batch is applied past a promote).  A spool that learns of a higher
 * epoch while it sends, or while it receives having been a primary, is
 * an old primary: it records replicate/fenced, which stops its writers
 * and its sessions until demote.  Each file is written whole and synced,
 * then its directory: a crash leaves the old file or the new.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include "repl.h"

/* The start of the error a receiver refuses an older sender with: the
 * sender reads the receiver's epoch back from it (repl_fence_learn). */
#define REFUSED "refused: this spool is at epoch "

static int
write_synced(mq_spool *sp, const char *name, const char *text, size_t len)
{
	int dfd = repl_dir(sp, ".");
	if (dfd < 0)
		return -1;
	int rc = mq_write_file(dfd, name, text, len, 1, 1) < 0 ||
	    mq_fsync_fd(dfd) < 0 ? -1 : 0;
	close(dfd);
	return rc;
}

int
repl_epoch_set(mq_spool *sp, uint64_t epoch)
{
	char text[32];
	int n = snprintf(text, sizeof text, "%" PRIu64 "\n", epoch);
	return write_synced(sp, "epoch", text, (size_t)n);
}

int
repl_role_set(mq_spool *sp, const char *role)
{
	char text[64];
	int n = snprintf(text, sizeof text, "%s %.3f\n", role, mq_now());
	return write_synced(sp, "role", text, (size_t)n);
}

int
repl_fence_set(mq_spool *sp, uint64_t epoch, const char *peer,
    const char *name)
{
	char text[512];
	/* One line: nothing but the name could bring a newline. */
	char nm[128];
	snprintf(nm, sizeof nm, "%s", name && strcmp(name, peer) ? name : "");
	for (char *p = nm; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	int n = snprintf(text, sizeof text, "epoch=%" PRIu64 "\npeer=%s\n"
	    "name=%s\nat=%.3f\n", epoch, peer, nm, mq_now());
	return write_synced(sp, "fenced", text, (size_t)n);
}

int
repl_fence_clear(mq_spool *sp)
{
	int dfd = repl_dir(sp, ".");
	if (dfd < 0)
		return -1;
	int rc = mq_unlinkat(dfd, "fenced", 0) < 0 && errno != ENOENT ?
	    mq_err_sys("remove replicate/fenced") : 0;
	if (rc == 0 && mq_fsync_fd(dfd) < 0)
		rc = -1;
	close(dfd);
	return rc;
}

/* Promote and learning both go past what fenced says, if it says more. */
int
repl_epoch_known(mq_spool *sp, uint64_t *epoch)
{
	struct mq_fence f;
	if (mq_epoch_read(sp, epoch) < 0)
		return -1;
	int rc = mq_fence_read(sp, &f);
	if (rc == 1 && f.epoch > *epoch)
		*epoch = f.epoch;
	return rc < 0 ? -1 : 0;
}

/* A primary: promoted (role), or one that sent to peers. */
static int
was_primary(mq_spool *sp)
{
	char *buf;
	size_t len;
	if (mq_read_at(sp->fd, "replicate/role", 64, &buf, &len) == 0) {
		int p = len >= 8 && !memcmp(buf, "primary ", 8);
		free(buf);
		if (p)
			return 1;
	}
	struct mq_peer_status *v;
	size_t n;
	if (mq_repl_peers(sp, &v, &n) < 0)
		return -1;
	free(v);
	return n > 0;
}

static const char *
who(const char *peer, const char *name, char buf[200])
{
	if (!name || !strcmp(name, peer))
		return peer;
	snprintf(buf, 200, "%s (%s)", name, peer);
	return buf;
}

/* A receiver at epoch mine refuses a sender at epoch theirs. */
static int
refuse_older(mq_spool *sp, uint64_t mine, uint64_t theirs, const char *peer,
    const char *name)
{
	char since[64] = "", w[200], t[40];
	struct stat st;
	if (fstatat(sp->fd, "replicate/epoch", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		mq_time_rfc3339((double)st.st_mtim.tv_sec, t, sizeof t);
		snprintf(since, sizeof since, " (since %.19sZ)", t);
	}
	return mq_err(EX_CONFIG, REFUSED "%" PRIu64 "%s, the sender %s is at "
	    "epoch %" PRIu64 ": it is a fenced old primary; run 'mq-replicate "
	    "-s SPOOL demote' there", mine, since, who(peer, name, w), theirs);
}

/* This spool learned that peer is at epoch theirs, past its own. */
static int
fenced_by(mq_spool *sp, uint64_t mine, uint64_t theirs, const char *peer,
    const char *name, const char *doing)
{
	char w[200];
	if (repl_fence_set(sp, theirs, peer, name) < 0)
		return -1;
	return mq_err(EX_CONFIG, "refused: the peer %s is at epoch %" PRIu64
	    ", this spool at epoch %" PRIu64 "%s: it was promoted past this "
	    "old primary, which is fenced now (replicate/fenced); run "
	    "'mq-replicate -s %s demote' here, toward the new primary",
	    who(peer, name, w), theirs, mine, doing, sp->path);
}

int
repl_epoch_hello(mq_spool *sp, enum mq_repl_role role, struct repl_epoch *ep,
    int demote, const char *peer, const char *name,
    const struct mq_repl_opts *o)
{
	struct mq_fence f;
	char w[200];
	int fenced = mq_fence_read(sp, &f);
	if (fenced < 0 || mq_epoch_read(sp, &ep->mine) < 0)
		return -1;
	if (demote) {
		if (!ep->peer_has)
			return mq_err(EX_PROTOCOL, "peer %s: its version has no "
			    "epochs, so this spool cannot be demoted toward it",
			    who(peer, name, w));
		if (ep->peer < ep->mine)
			return mq_err(EX_CONFIG, "refused: the peer %s is at epoch "
			    "%" PRIu64 ", older than this spool's %" PRIu64 ": "
			    "demote toward the newest primary", who(peer, name, w),
			    ep->peer, ep->mine);
		return 0;
	}
	if (fenced == 1) {
		mq_fence_say(sp, &f);
		return mq_err_recode(EX_NOPERM, EX_CONFIG);
	}
	if (role == MQ_REPL_SEND && ep->peer > ep->mine)
		return fenced_by(sp, ep->mine, ep->peer, peer, name, "");
	if (role == MQ_REPL_RECV && ep->peer < ep->mine)
		return refuse_older(sp, ep->mine, ep->peer, peer, name);
	if (role == MQ_REPL_RECV && ep->peer > ep->mine) {
		int p = was_primary(sp);
		if (p < 0)
			return -1;
		if (p)
			return fenced_by(sp, ep->mine, ep->peer, peer, name,
			    ", and this spool was a primary");
		if (repl_epoch_set(sp, ep->peer) < 0)
			return -1;
		repl_log(o, LOG_NOTICE, "epoch %" PRIu64 " learned from %s (was %"
		    PRIu64 ")", ep->peer, who(peer, name, w), ep->mine);
		ep->mine = ep->peer;
	}
	return 0;
}

int
repl_epoch_batch(mq_spool *sp, uint64_t theirs, const char *peer,
    const char *name)
{
	uint64_t mine;
	if (mq_epoch_read(sp, &mine) < 0)
		return -1;
	return mine > theirs ? refuse_older(sp, mine, theirs, peer, name) : 0;
}

void
repl_fence_learn(mq_spool *sp, uint64_t mine, const char *peer,
    const char *name)
{
	static const char said[] = "peer: " REFUSED;
	const char *msg = mq_errmsg();
	uint64_t theirs;
	if (mq_errcode() != EX_CONFIG || strncmp(msg, said, sizeof said - 1) ||
	    !mq_decimal(msg + sizeof said - 1, MQ_EPOCH_MAX, &theirs) ||
	    theirs <= mine)
		return;
	char keep[1024];
	snprintf(keep, sizeof keep, "%s", msg);
	if (repl_fence_set(sp, theirs, peer, name) < 0)
		return;                 /* that error, then */
	mq_err(EX_CONFIG, "%s (this spool is fenced now: replicate/fenced)",
	    keep);
}
