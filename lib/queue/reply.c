/*
 * reply.c: replies to requests (mq-req(1), mq-sub --reply).
 *
 * A caller waits in a box of its own, SPOOL/replies/<box>/, a directory
 * named "<deadline>.<32 hex>", deadline the time in milliseconds after
 * which no one waits there.  Its request carries the box's name as
 * Reply-To and a Correlation-Id; the handler's output comes back as
 * replies/<box>/reply, written whole beside it and renamed in, so the
 * caller sees all of it or nothing; then a byte written into the box's
 * FIFO, wake, wakes the caller at once.  (Not inotify: closing an
 * inotify instance waits for the kernel's grace period, milliseconds
 * that would be most of a call.)  The caller removes its box when it
 * is done; a box whose caller died is removed by the next caller that
 * finds it past its deadline and a grace for the clocks of other hosts.
 * A reply that finds no box, or a box past its deadline, is late: it is
 * dropped, and a line in replies/.late counts it.  No topic is made for
 * a reply, so nothing is left behind.  See mq-spool(5), REPLIES.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

/* How long after its deadline a box is left alone: the clocks of the
 * hosts sharing a spool may differ by this much. */
#define REPLY_GRACE 60.0
/* The largest reply file: a header and a message's body. */
#define MQ_REPLY_MAX (MQ_HEADER_BLOCK_MAX + MQ_MESSAGE_MAX_LIMIT)

bool
mq_is_reply_box(const char *name)
{
	const char *dot = strchr(name, '.');
	size_t nd = dot ? (size_t)(dot - name) : 0;
	if (!dot || nd < 1 || nd > 15 || strspn(name, "0123456789") != nd ||
	    (nd > 1 && name[0] == '0'))
		return false;
	return strlen(dot + 1) == 32 &&
	    strspn(dot + 1, "0123456789abcdef") == 32;
}

static double
box_deadline(const char *name)
{
	return (double)strtoull(name, NULL, 10) / 1000;
}

/* Removes the boxes whose callers are gone: past their deadline and the
 * grace.  Best effort. */
static void
reap(int dfd)
{
	struct mq_names l = { 0 };
	double now = mq_now();
	if (mq_names_read(dfd, mq_is_reply_box, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			if (box_deadline(l.v[i]) + REPLY_GRACE < now)
				mq_rmtree(dfd, l.v[i]);
	mq_names_free(&l);
}

/* The box: made 0700, then open to the topic's consumers alone, those
 * who may write its first partition's g/ (mq_perm_writers). */
static int
box_make(mq_spool *sp, const char *topic, struct mq_reply_box *b)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int gfd = mq_dir_open(t.pfd[0], "g");
	int rc = gfd < 0 ? -1 : 0;
	if (rc == 0 && mkdirat(b->dfd, b->name, 0700) < 0)
		rc = mq_err_sys("reply box %s", b->name);
	if (rc == 0 && (b->fd = mq_dir_open(b->dfd, b->name)) < 0)
		rc = -1;
	if (rc == 0)
		rc = mq_perm_writers(b->fd, gfd, b->name);
	if (gfd >= 0)
		close(gfd);
	mq_topic_close(&t);
	return rc;
}

/* The FIFO writable by whoever may write the box, whatever the caller's
 * umask and whether or not the file system keeps the box's default ACL:
 * without one, a FIFO is the caller's group's, and a server that cannot
 * open it leaves the caller asleep until its timeout.  Through the
 * descriptor opened: a name in the box may be changed meanwhile. */
static int
fifo_share(const struct mq_reply_box *b)
{
	struct stat box, st;
	if (fstat(b->fd, &box) < 0 || fstat(b->ifd, &st) < 0)
		return -1;
	if (!S_ISFIFO(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	if (st.st_gid != box.st_gid && fchown(b->ifd, (uid_t)-1, box.st_gid) < 0)
		return -1;
	mode_t want = 0600 | (box.st_mode & (S_IWGRP | S_IWOTH));
	return (st.st_mode & 07777) == want ? 0 : fchmod(b->ifd, want);
}

int
mq_reply_box_open(mq_spool *sp, const char *topic, double timeout,
    struct mq_reply_box *b)
{
	memset(b, 0, sizeof *b);
	b->fd = b->dfd = b->ifd = b->wfd = -1;
	if (mq_mkdir(sp->fd, "replies") < 0)
		return -1;
	if ((b->dfd = mq_dir_open(sp->fd, "replies")) < 0)
		return -1;
	reap(b->dfd);
	char rnd[33];
	mq_hex_random(rnd, 32);
	mq_hex_random(b->correlation, 32);
	snprintf(b->name, sizeof b->name, "%" PRIu64 ".%s",
	    (uint64_t)((mq_now() + timeout) * 1000) + 1, rnd);
	if (box_make(sp, topic, b) < 0) {
		mq_reply_box_close(b);
		return -1;
	}
	/* On a file system hosts share, a FIFO joins only this host's
	 * processes: there the box is looked at every few milliseconds.
	 * The caller holds the FIFO's write end too, so that its read end
	 * never reads as hung up. */
	b->poll = mq_env_duration("MQ_POLL", 0);
	if (b->poll <= 0 && (sp->shared || mq_fs_shared(b->fd)))
		b->poll = 0.02;
	if (b->poll <= 0 && (mkfifoat(b->fd, "wake", 0666) < 0 ||
	    (b->ifd = mq_openat(b->fd, "wake", O_RDONLY | O_NONBLOCK |
	    O_NOFOLLOW | O_CLOEXEC)) < 0 || fifo_share(b) < 0 ||
	    (b->wfd = mq_openat(b->fd, "wake", O_WRONLY | O_NONBLOCK |
	    O_NOFOLLOW | O_CLOEXEC)) < 0)) {
		mq_err_sys("reply box %s/wake", b->name);
		mq_reply_box_close(b);
		return -1;
	}
	return 0;
}

/* Counts a reply as a line "<ms> <what>" appended to replies/NAME, whole
 * (O_APPEND, one write): .late for one no one waits for, .refused for one
 * its caller refused. */
static int
count_reply(int dfd, const char *name, const char *what)
{
	char line[MQ_NAME_MAX + MQ_ID_LEN + 64];
	int n = snprintf(line, sizeof line, "%" PRIu64 " %s\n",
	    (uint64_t)(mq_now() * 1000), what);
	if (n < 0 || (size_t)n >= sizeof line)
		return mq_err(EX_SOFTWARE, "replies/%s: line too long", name);
	int fd = mq_file_open(dfd, name, O_WRONLY | O_APPEND | O_CREAT, 0666,
	    NULL);
	ssize_t w = fd >= 0 ? write(fd, line, (size_t)n) : -1;
	if (fd >= 0)
		close(fd);
	return w == n ? 0 : mq_err_sys("replies/%s", name);
}

/* Whether the reply's header says the box's Correlation-Id. */
static bool
ours(const struct mq_reply_box *b, const char *buf, size_t len)
{
	char line[64];
	int n = snprintf(line, sizeof line, "Correlation-Id: %s\n",
	    b->correlation);
	const char *end = memmem(buf, len, "\n\n", 2);
	for (const char *l = buf; end && l <= end; ) {
		if ((size_t)(end + 1 - l) >= (size_t)n && !memcmp(l, line, (size_t)n))
			return true;
		const char *nl = memchr(l, '\n', (size_t)(end + 1 - l));
		if (!nl)
			break;
		l = nl + 1;
	}
	return false;
}

/* A reply that is not for this call (a consumer's mistake or malice):
 * removed unread, and a line in replies/.refused. */
static int
refuse(struct mq_reply_box *b)
{
	if (mq_unlinkat(b->fd, "reply", 0) < 0 && errno != ENOENT)
		return mq_err_sys("reply box %s: reply", b->name);
	fprintf(stderr, "%s: refused a reply in box %s that is not this "
	    "call's (Correlation-Id)\n", program_invocation_short_name,
	    b->name);
	return count_reply(b->dfd, ".refused", b->name);
}

int
mq_reply_wait(struct mq_reply_box *b, double timeout, char **buf,
    size_t *len)
{
	double until = mq_mono() + timeout;
	for (;;) {
		int rc = mq_read_at(b->fd, "reply", MQ_REPLY_MAX, buf, len);
		if (rc == 0 && ours(b, *buf, *len))
			return 1;
		if (rc == 0) {
			free(*buf);
			if (refuse(b) < 0)
				return -1;
			continue;
		}
		if (mq_errcode() != EX_NOINPUT)
			return -1;
		double left = until - mq_mono();
		if (left <= 0)
			return 0;
		if (b->poll > 0) {
			usleep((useconds_t)((left < b->poll ? left : b->poll) * 1e6));
			continue;
		}
		struct pollfd p = { .fd = b->ifd, .events = POLLIN };
		if (poll(&p, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return mq_err_sys("poll");
		char ev[64];
		while (read(b->ifd, ev, sizeof ev) > 0)
			;
	}
}

void
mq_reply_box_close(struct mq_reply_box *b)
{
	if (b->fd >= 0)
		close(b->fd);
	if (b->ifd >= 0)
		close(b->ifd);
	if (b->wfd >= 0)
		close(b->wfd);
	if (b->dfd >= 0) {
		if (b->name[0])
			mq_rmtree(b->dfd, b->name);
		close(b->dfd);
	}
	b->fd = b->dfd = b->ifd = b->wfd = -1;
}

/* Wakes a caller waiting in the box (bfd): a byte into its FIFO, if it
 * is one (the box is its caller's, and nothing else is written to). */
static void
wake(int bfd)
{
	struct stat st;
	int fd = mq_openat(bfd, "wake", O_WRONLY | O_NONBLOCK | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return;         /* no reader: the caller polls, or is gone */
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && write(fd, "", 1) < 0)
		errno = 0;      /* full: it is woken already */
	close(fd);
}

/* A reply no one waits for: 2, counted in replies/.late. */
static int
late(int dfd, const char *group, const char *request)
{
	char what[MQ_NAME_MAX + MQ_ID_LEN + 2];
	snprintf(what, sizeof what, "%s %s", group, request);
	return count_reply(dfd, ".late", what) < 0 ? -1 : 2;
}

int
mq_reply_expired(mq_spool *sp, const char *box, const char *group,
    const char *request)
{
	if (!mq_is_reply_box(box))
		return 0;
	int dfd = mq_mkdir(sp->fd, "replies") < 0 ? -1 :
	    mq_dir_open(sp->fd, "replies");
	/* The box is made before its request: gone, its caller is done. */
	bool gone = dfd >= 0 && (box_deadline(box) < mq_now() ||
	    (mq_faccessat(dfd, box, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno == ENOENT));
	int rc = dfd < 0 ? -1 : !gone ? 0 : late(dfd, group, request) < 0 ? -1 :
	    1;
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* The reply file's bytes: its header, a blank line, the body. */
static int
reply_text(const struct mq_reply *r, char **all, size_t *len)
{
	char head[MQ_NAME_MAX + MQ_ID_LEN + 96];
	int hl = snprintf(head, sizeof head, "Correlation-Id: %s\n"
	    "In-Reply-To: %s\nMq-Reply-Status: %d\n\n", r->correlation,
	    r->request, r->status);
	if (hl < 0 || (size_t)hl >= sizeof head)
		return mq_err(EX_SOFTWARE, "reply header too long");
	if (!(*all = malloc((size_t)hl + r->len + 1)))
		return mq_err_sys("malloc");
	memcpy(*all, head, (size_t)hl);
	if (r->len)
		memcpy(*all + hl, r->body, r->len);
	*len = (size_t)hl + r->len;
	return 0;
}

int
mq_reply_keep(int donefd, const struct mq_reply *r)
{
	char *all;
	size_t len;
	if (reply_text(r, &all, &len) < 0)
		return -1;
	int rc = mq_write_file(donefd, r->request, all, len, 1, 1);
	free(all);
	return rc;
}

/* The reply kept for request id in one of the topic's exactly-once
 * groups: 1 with it in *buf, 0 when none has it (yet); an empty ledger
 * entry (acked without a reply kept) is none. */
static int
kept_look(const struct mq_topic *t, const char *id, char **buf, size_t *len)
{
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(t, &groups) < 0 ? -1 : 0;
	for (unsigned k = 0; rc == 0 && k < t->conf.partitions; k++)
		for (size_t i = 0; rc == 0 && i < groups.n; i++) {
			char path[MQ_NAME_MAX + MQ_ID_LEN + 16];
			if (mq_path(path, sizeof path, "g/%s/done/%s", groups.v[i],
			    id) < 0) {
				rc = -1;
				break;
			}
			if (mq_read_at(t->pfd[k], path, MQ_REPLY_MAX, buf, len) < 0) {
				if (mq_errcode() != EX_NOINPUT)
					rc = -1;
				continue;
			}
			if (*len)
				rc = 1;
			else
				free(*buf);
		}
	mq_names_free(&groups);
	return rc;
}

int
mq_reply_kept(mq_spool *sp, const char *topic, const char *id,
    double timeout, char **buf, size_t *len)
{
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	double until = mq_mono() + timeout, left;
	int rc;
	while ((rc = kept_look(&t, id, buf, len)) == 0 &&
	    (left = until - mq_mono()) > 0)
		usleep((useconds_t)((left < 0.02 ? left : 0.02) * 1e6));
	mq_topic_close(&t);
	return rc;
}

int
mq_reply_send(mq_spool *sp, const char *box, const char *group,
    const struct mq_reply *r)
{
	if (!mq_is_reply_box(box))
		return mq_err(EX_DATAERR, "Reply-To '%.80s' is not a reply box "
		    "(deadline.32 hexadecimal digits)", box);
	if (!r->correlation || !*r->correlation ||
	    strlen(r->correlation) > MQ_NAME_MAX ||
	    strpbrk(r->correlation, "\n\r"))
		return mq_err(EX_DATAERR, "a request without a usable "
		    "Correlation-Id");
	if (mq_mkdir(sp->fd, "replies") < 0)
		return -1;
	int dfd = mq_dir_open(sp->fd, "replies");
	if (dfd < 0)
		return -1;
	int rc;
	if (box_deadline(box) < mq_now()) {
		rc = late(dfd, group, r->request);
		close(dfd);
		return rc;
	}
	char *all;
	size_t len;
	if (reply_text(r, &all, &len) < 0) {
		close(dfd);
		return -1;
	}
	/* Whole, then renamed in: a box that is gone (the caller gave up,
	 * or it was reaped, even while this is written) makes it late.
	 * Readable by all, whatever our umask: the box's own mode (or
	 * ACL) keeps out everyone but its caller and the topic's consumers,
	 * and without ACLs the caller is not in our group. */
	int bfd = mq_dir_open(dfd, box);
	rc = bfd < 0 ? (errno == ENOENT ? 1 : -1) : mq_write_file_mode(bfd,
	    "reply", all, len, 0, 0644) < 0 ? (errno == ENOENT ? 1 : -1) : 0;
	if (rc == 0)
		wake(bfd);
	free(all);
	if (bfd >= 0)
		close(bfd);
	if (rc == 1)
		rc = late(dfd, group, r->request);
	close(dfd);
	return rc;
}

int
mq_reply_parse(char *buf, size_t len, struct mq_reply *r)
{
	memset(r, 0, sizeof *r);
	char *end = memmem(buf, len, "\n\n", 2);
	if (!end)
		return mq_err(EX_DATAERR, "a reply without its header");
	*end = 0;
	r->body = end + 2;
	r->len = len - (size_t)(end + 2 - buf);
	r->status = -1;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
	    l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "Correlation-Id: ", 16))
			r->correlation = l + 16;
		else if (!strncmp(l, "In-Reply-To: ", 13))
			r->request = l + 13;
		else if (!strncmp(l, "Mq-Reply-Status: ", 17))
			r->status = atoi(l + 17);
	}
	if (!r->correlation || !r->request || r->status < 0 || r->status > 255)
		return mq_err(EX_DATAERR, "a reply without Correlation-Id, "
		    "In-Reply-To or Mq-Reply-Status");
	return 0;
}
