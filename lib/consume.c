/*
 * consume.c: claiming messages for a group, and waiting for them.
 *
 * A consumer lists each partition's new/ once, sorts the names (they
 * start with the sequence number), and claims from that list in order
 * without listing again until it is used up: the cost per message does not
 * grow with the backlog.  It skips names whose sequence number is not yet
 * below the head's committed (a publish in progress).  Claiming is
 * rename(new/NAME, cur/KEY,a<n+1>,l<deadline>,r<token>:2,): one contender
 * wins, the others get ENOENT and move on.
 *
 * When nothing is pending it returns expired leases of its group to new/
 * (any consumer does this for all; there is no daemon), then sleeps in
 * inotify on new/ (a message arrives), head (a commit) and cur/ (a claim
 * whose lease it must watch), no longer than the earliest lease deadline
 * it knows.  Where inotify cannot see other hosts (NFS and the like) or
 * when asked, it polls instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sysexits.h>
#include <unistd.h>

#include "internal.h"

struct part {
	struct mq_gdirs d;              /* new/, cur/ and delay/ */
	int hfd;
	int donefd;                     /* the exactly-once ledger, or -1 */
	DIR *newdir, *curdir, *delaydir; /* their listings */
	int wd_new, wd_cur, wd_head, wd_delay;
	struct mq_names cand;           /* sorted names of new/ at last scan */
	size_t pos;
	uint64_t committed;
	bool scan_new, scan_cur;
	bool await_commit;              /* saw an uncommitted name in new/ */
	double earliest;                /* earliest lease deadline in cur/ */
	bool scan_delay;
	double due;                     /* earliest due time in delay/ */
};

struct mq_sub {
	mq_spool *sp;
	struct mq_topic t;
	char *group;
	double lease, poll;
	unsigned max_attempts;
	int exactly_once;
	int ifd;
	struct part *ps;
	unsigned rr;
	double earliest;                /* earliest lease deadline, all of cur/ */
	double last_expire;             /* when cur/ was last looked at (mono) */
	int wake_fd;                    /* readable: stop waiting */
	double grace;
};

struct msg_priv {
	unsigned k;
	char cur[MQ_KEY_LEN + 64];
	char buf[];
};

void
mq_sub_opts_default(struct mq_sub_opts *o)
{
	memset(o, 0, sizeof *o);
	o->create = 1;
	o->wake_fd = -1;
	o->grace = 30;
	mq_group_conf_default(&o->group);
}

/* Filesystems on which inotify does not see what other hosts do. */
static bool
network_fs(int fd)
{
	static const unsigned long magic[] = {
		0x6969,         /* NFS */
		0x517b,         /* SMB */
		0xff534d42,     /* CIFS */
		0xfe534d42,     /* SMB2 */
		0x65735546,     /* FUSE */
		0x01021997,     /* 9P */
		0x00c36400,     /* Ceph */
		0x5346414f,     /* AFS */
		0x6b414653,     /* kAFS */
		0x01161970,     /* GFS2 */
		0x7461636f,     /* OCFS2 */
		0x47504653,     /* GPFS */
		0x0bd00bd0,     /* Lustre */
	};
	struct statfs st;
	if (fstatfs(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < sizeof magic / sizeof *magic; i++)
		if ((unsigned long)st.f_type == magic[i])
			return true;
	return false;
}

static int
watch(int ifd, int fd, uint32_t mask)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int wd = inotify_add_watch(ifd, path, mask);
	if (wd < 0)
		return mq_err_sys("inotify");
	return wd;
}

static int
open_part(mq_sub *s, unsigned k)
{
	struct part *p = &s->ps[k];
	p->scan_new = p->scan_cur = p->scan_delay = true;
	/* A consumer watches delay/, so it makes it. */
	if (mq_gdirs_open(&s->t, k, s->group, &p->d) < 0 ||
	    mq_gdirs_delay(&s->t, k, s->group, &p->d) < 0 ||
	    (p->hfd = mq_head_open(s->t.pfd[k], 0)) < 0 ||
	    !(p->newdir = mq_dir_stream(p->d.newfd)) ||
	    !(p->curdir = mq_dir_stream(p->d.curfd)) ||
	    !(p->delaydir = mq_dir_stream(p->d.delayfd)))
		return -1;
	if (s->exactly_once) {
		char path[MQ_NAME_MAX + 16];
		if (mq_path(path, sizeof path, "g/%s/done", s->group) < 0 ||
		    mq_mkdir(s->t.pfd[k], path) < 0 ||
		    (p->donefd = mq_dir_open(s->t.pfd[k], path)) < 0)
			return -1;
	}
	uint32_t arrive = IN_MOVED_TO | IN_CREATE | IN_ONLYDIR;
	if (s->ifd >= 0 &&
	    ((p->wd_new = watch(s->ifd, p->d.newfd, arrive)) < 0 ||
	    (p->wd_cur = watch(s->ifd, p->d.curfd, arrive)) < 0 ||
	    (p->wd_delay = watch(s->ifd, p->d.delayfd, arrive)) < 0 ||
	    (p->wd_head = watch(s->ifd, p->hfd, IN_MODIFY)) < 0))
		return -1;
	return mq_partition_repair_try(&s->t, k);
}

static int
group_settings(mq_sub *s, const struct mq_sub_opts *o)
{
	char path[MQ_NAME_MAX + 16];
	if (mq_path(path, sizeof path, "groups/%s.conf", s->group) < 0)
		return -1;
	if (faccessat(s->t.fd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		if (!o->create)
			return mq_err(EX_NOINPUT, "no group '%s' on topic '%s'",
			    s->group, s->t.name);
		if (mq_group_subscribe(s->sp, s->t.name, s->group, &o->group) < 0)
			return -1;
	}
	struct mq_conf kv;
	if (mq_group_conf_read(&s->t, s->group, &kv) < 0)
		return -1;
	const char *state = mq_conf_get(&kv, "state");
	bool backfill = state && !strcmp(state, "backfill");
	mq_conf_free(&kv);
	struct mq_group_conf gc;
	if (mq_group_settings(&s->t, s->group, &gc) < 0)
		return -1;
	s->lease = o->lease > 0 ? o->lease : gc.lease;
	s->max_attempts = gc.max_attempts;
	s->exactly_once = gc.exactly_once;
	return backfill ? mq_group_backfill(&s->t, s->group) : 0;
}

mq_sub *
mq_sub_open(mq_spool *sp, const char *topic, const char *group,
    const struct mq_sub_opts *o)
{
	struct mq_sub_opts dflt;
	if (!o) {
		mq_sub_opts_default(&dflt);
		o = &dflt;
	}
	if (mq_name_check("topic", topic) < 0 ||
	    mq_name_check("group", group) < 0)
		return NULL;
	mq_sub *s = calloc(1, sizeof *s);
	if (!s) {
		mq_err_sys("malloc");
		return NULL;
	}
	s->ifd = -1;
	s->sp = sp;
	s->earliest = INFINITY;
	if (mq_topic_open(sp, topic, o->create, &s->t) < 0) {
		free(s);
		return NULL;
	}
	unsigned np = s->t.conf.partitions;
	if (!(s->group = strdup(group)) ||
	    !(s->ps = calloc(np, sizeof *s->ps))) {
		mq_err_sys("malloc");
		goto fail;
	}
	for (unsigned k = 0; k < np; k++) {
		struct part *p = &s->ps[k];
		p->d.newfd = p->d.curfd = p->d.delayfd = p->hfd = -1;
		p->donefd = -1;
		p->earliest = p->due = INFINITY;
	}
	s->wake_fd = o->wake_fd;
	s->grace = o->grace;
	if (group_settings(s, o) < 0)
		goto fail;
	s->poll = o->poll;
	for (unsigned k = 0; s->poll <= 0 && k < np; k++)
		if (network_fs(s->t.pfd[k]))
			s->poll = 1.0;
	if (s->poll <= 0 &&
	    (s->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		mq_err_sys("inotify");
		goto fail;
	}
	for (unsigned k = 0; k < np; k++)
		if (open_part(s, k) < 0)
			goto fail;
	return s;
fail:
	mq_sub_close(s);
	return NULL;
}

void
mq_sub_close(mq_sub *s)
{
	if (!s)
		return;
	if (s->ps) {
		for (unsigned k = 0; k < s->t.conf.partitions; k++) {
			struct part *p = &s->ps[k];
			mq_gdirs_close(&p->d);
			if (p->hfd >= 0)
				close(p->hfd);
			if (p->donefd >= 0)
				close(p->donefd);
			if (p->newdir)
				closedir(p->newdir);
			if (p->curdir)
				closedir(p->curdir);
			if (p->delaydir)
				closedir(p->delaydir);
			mq_names_free(&p->cand);
		}
		free(s->ps);
	}
	if (s->ifd >= 0)
		close(s->ifd);
	free(s->group);
	mq_topic_close(&s->t);
	free(s);
}

const char *
mq_sub_group(const mq_sub *s)
{
	return s->group;
}

int
mq_sub_wake_fd(const mq_sub *s)
{
	return s->wake_fd;
}

double
mq_sub_grace(const mq_sub *s)
{
	return s->grace;
}

double
mq_sub_lease(const mq_sub *s)
{
	return s->lease;
}

unsigned
mq_sub_max_attempts(const mq_sub *s)
{
	return s->max_attempts;
}

int
mq_sub_polling(const mq_sub *s)
{
	return s->ifd < 0;
}

/* Reads the claimed message cur/NAME into a new mq_msg. */
int
mq_claim_read(const struct mq_topic *t, int curfd, const char *curname,
    struct mq_msg **out)
{
	/* Reading must not write: O_NOATIME spares an inode update per
	 * message where we may use it (we own the file, or are root). */
	int fd = openat(curfd, curname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	    O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(curfd, curname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return mq_err_sys("read message");
	struct stat st;
	size_t limit = t->conf.max_message_size + MQ_HEADER_BLOCK_MAX;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > limit) {
		close(fd);
		return mq_err(EX_DATAERR, "not a message file, or too large");
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
	size_t len = 0;
	while (len < size) {
		ssize_t r = read(fd, pv->buf + len, size - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	pv->buf[len] = 0;
	if (mq_msg_parse(pv->buf, len, m) < 0) {
		mq_msg_free(m);
		return -1;
	}
	*out = m;
	return 0;
}

/* Gives back every claim in partition k whose lease has passed (an
 * expired lease is a failed delivery: the last one goes to the dead
 * letters); p->earliest gets the earliest deadline still to come.
 * Returns how many went back to new/. */
static int
expire_partition(mq_sub *s, unsigned k, double now)
{
	static const struct mq_nack expired = { .status = -1,
	    .detail = "lease expired" };
	struct part *p = &s->ps[k];
	struct mq_names l = { 0 };
	if (mq_names_reread(p->curdir, NULL, &l) < 0) {
		mq_names_free(&l);
		return -1;
	}
	uint64_t now_ms = (uint64_t)(now * 1000);
	int returned = 0;
	p->earliest = INFINITY;
	for (size_t i = 0; i < l.n; i++) {
		struct mq_entry e;
		if (mq_entry_parse(l.v[i], &e) < 0 || !e.claimed)
			continue;
		if (e.deadline_ms > now_ms) {
			p->earliest = fmin(p->earliest, (double)e.deadline_ms / 1000);
			continue;
		}
		int rc = mq_claim_return(&s->t, k, s->group, &p->d, l.v[i],
		    &expired, s->max_attempts);
		if (rc == 0)
			returned++;
		else if (rc < 0 && mq_errcode() != EX_NOINPUT)
			break;
	}
	mq_names_free(&l);
	return returned;
}

/* Moves what is due in delay/ to new/; p->due gets the next due time. */
static int
promote_due(mq_sub *s, unsigned k, double now)
{
	struct part *p = &s->ps[k];
	struct mq_names l = { 0 };
	if (mq_names_reread(p->delaydir, NULL, &l) < 0) {
		mq_names_free(&l);
		return -1;
	}
	uint64_t now_ms = (uint64_t)(now * 1000), due, seq;
	struct mq_head h;
	int moved = 0;
	if (mq_head_read(p->hfd, &h) < 0) {
		mq_names_free(&l);
		return -1;
	}
	p->due = INFINITY;
	p->scan_delay = false;
	for (size_t i = 0; i < l.n; i++) {
		struct mq_entry e;
		char name[MQ_KEY_LEN + 32];
		/* A delayed publish in progress is not there yet. */
		if (mq_delay_parse(l.v[i], &due, &e) < 0 ||
		    mq_seq_of(e.key, &seq) < 0 || seq >= h.committed)
			continue;
		if (due > now_ms) {
			/* Sorted by due time: the rest is later still. */
			p->due = (double)due / 1000;
			break;
		}
		if (mq_entry_new_name(&e, name, sizeof name) == 0 &&
		    renameat(p->d.delayfd, l.v[i], p->d.newfd, name) == 0)
			moved++;
	}
	mq_names_free(&l);
	(void)s;
	return moved;
}

static int
scan_new(mq_sub *s, struct part *p)
{
	struct mq_head h;
	if (mq_head_read(p->hfd, &h) < 0)
		return -1;
	p->committed = h.committed;
	mq_names_free(&p->cand);
	p->pos = 0;
	p->scan_new = false;
	(void)s;
	return mq_names_reread(p->newdir, NULL, &p->cand);
}

static int
try_claim(mq_sub *s, unsigned k, struct mq_msg **out)
{
	struct part *p = &s->ps[k];
	while (p->pos < p->cand.n) {
		const char *name = p->cand.v[p->pos];
		struct mq_entry e;
		uint64_t seq;
		if (mq_entry_parse(name, &e) < 0 || e.claimed ||
		    mq_seq_of(name, &seq) < 0) {
			p->pos++;
			continue;
		}
		/* Not committed yet: neither is anything after it.  Until
		 * the head changes, more links from the same publish are no
		 * reason to look again. */
		if (seq >= p->committed) {
			p->pos = p->cand.n;
			p->await_commit = true;
			break;
		}
		p->pos++;
		double now = mq_now();
		char cur[MQ_KEY_LEN + 64];
		e.attempts++;
		e.deadline_ms = (uint64_t)((now + s->lease) * 1000);
		mq_hex_random(e.token, 8);
		e.claimed = 1;
		if (mq_entry_cur_name(&e, cur, sizeof cur) < 0)
			return -1;
		if (renameat(p->d.newfd, name, p->d.curfd, cur) < 0) {
			if (errno == ENOENT)
				continue;
			return mq_err_sys("claim");
		}
		/* Processed before (the ack was lost): settle it unseen. */
		if (p->donefd >= 0 && faccessat(p->donefd,
		    e.key + MQ_SEQ_DIGITS + 1, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			unlinkat(p->d.curfd, cur, 0);
			continue;
		}
		struct mq_msg *m;
		if (mq_claim_read(&s->t, p->d.curfd, cur, &m) < 0) {
			/* Never deliver what cannot be proven whole; give back
			 * what only failed to be read (out of memory, ...). */
			if (mq_errcode() != EX_DATAERR) {
				char back[MQ_KEY_LEN + 32];
				e.attempts--;
				if (mq_entry_new_name(&e, back, sizeof back) == 0)
					renameat(p->d.curfd, cur, p->d.newfd, back);
				return -1;
			}
			struct mq_why why = { "unreadable", mq_errmsg(), -1,
			    NULL, 0 };
			if (mq_dlq_put(&s->t, k, s->group, p->d.curfd, cur, &e,
			    &why) < 0 && mq_errcode() != EX_NOINPUT)
				return -1;
			continue;
		}
		/* Past its deadline: never delivered; dead-lettered or dropped
		 * as the topic says. */
		if (m->expires > 0 && mq_now() > m->expires) {
			mq_msg_free(m);
			struct mq_why why = { "expired", NULL, -1, NULL, 0 };
			int rc = s->t.conf.expired_drop ?
			    unlinkat(p->d.curfd, cur, 0) :
			    mq_dlq_put(&s->t, k, s->group, p->d.curfd, cur, &e, &why);
			if (rc < 0 && s->t.conf.expired_drop)
				return mq_err_sys("drop expired message");
			if (rc < 0)
				return -1;
			continue;
		}
		struct msg_priv *pv = m->priv;
		pv->k = k;
		snprintf(pv->cur, sizeof pv->cur, "%s", cur);
		m->attempts = e.attempts;
		m->lease_deadline = (double)e.deadline_ms / 1000;
		cur[strlen(cur) - 3] = 0;       /* drop ":2," */
		if (mq_receipt_make(s->t.name, s->group, k, cur, &m->receipt) < 0) {
			mq_msg_free(m);
			return -1;
		}
		*out = m;
		return 1;
	}
	return 0;
}

/* Reads pending inotify events and marks what they touched. */
static void
drain_events(mq_sub *s)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	unsigned np = s->t.conf.partitions;
	for (;;) {
		ssize_t r = read(s->ifd, buf, sizeof buf);
		if (r <= 0)
			return;
		for (char *q = buf; q < buf + r;) {
			struct inotify_event *ev = (struct inotify_event *)q;
			for (unsigned k = 0; k < np; k++) {
				struct part *p = &s->ps[k];
				if (ev->mask & IN_Q_OVERFLOW) {
					p->scan_new = p->scan_cur = true;
					p->scan_delay = true;
				} else if (ev->wd == p->wd_head) {
					/* A commit may make delayed names count. */
					p->scan_new = p->scan_delay = true;
					p->await_commit = false;
				} else if (ev->wd == p->wd_new) {
					/* Links of a publish (IN_CREATE) count once
					 * it commits; returns (IN_MOVED_TO) now. */
					if (!p->await_commit || (ev->mask & IN_MOVED_TO))
						p->scan_new = true;
				} else if (ev->wd == p->wd_cur) {
					p->scan_cur = true;
				} else if (ev->wd == p->wd_delay) {
					p->scan_delay = true;
				}
			}
			q += sizeof *ev + ev->len;
		}
	}
}

/* Gives back expired leases and moves due delayed messages to new/, in
 * the partitions where something changed or came due (in every partition
 * when all is set); s->earliest becomes the next deadline or due time. */
static int
expire_leases(mq_sub *s, bool all)
{
	double now = mq_now();
	if (all)
		s->last_expire = mq_mono();
	s->earliest = INFINITY;
	for (unsigned k = 0; k < s->t.conf.partitions; k++) {
		struct part *p = &s->ps[k];
		if (all || p->scan_cur || now >= p->earliest) {
			int n = expire_partition(s, k, now);
			if (n < 0)
				return -1;
			if (n > 0)
				p->scan_new = true;
			p->scan_cur = false;
		}
		if (all || p->scan_delay || now >= p->due) {
			int n = promote_due(s, k, now);
			if (n < 0)
				return -1;
			if (n > 0)
				p->scan_new = true;
		}
		s->earliest = fmin(s->earliest, fmin(p->earliest, p->due));
	}
	return 0;
}

/* A busy consumer still looks at all of cur/ once a second, so a crashed
 * peer's claims come back even while messages keep flowing. */
static int
expire_if_due(mq_sub *s)
{
	bool periodic = mq_mono() - s->last_expire >= 1.0;
	if (!periodic && mq_now() < s->earliest)
		return 0;
	return expire_leases(s, periodic);
}

/* Sleeps until something may have changed, until `until` (monotonic), or
 * until the earliest lease deadline; returns 1 when a signal or the wake
 * descriptor ended the sleep. */
static int
wait_for_change(mq_sub *s, double until)
{
	double wait = fmin(until - mq_mono(), s->earliest - mq_now());
	if (s->ifd < 0)
		wait = fmin(wait, s->poll);
	int ms = -1;
	if (isfinite(wait))
		ms = wait <= 0 ? 0 : (int)fmin(ceil(wait * 1000), 3.6e6);
	struct pollfd pfd[2] = {
		{ .fd = s->ifd, .events = POLLIN },
		{ .fd = s->wake_fd, .events = POLLIN },
	};
	int rc = poll(pfd, 2, ms);
	if (rc < 0)
		return errno == EINTR ? 1 : mq_err_sys("poll");
	if (pfd[1].revents)
		return 1;
	if (s->ifd >= 0) {
		drain_events(s);
	} else {
		for (unsigned k = 0; k < s->t.conf.partitions; k++)
			s->ps[k].scan_new = s->ps[k].scan_cur =
			    s->ps[k].scan_delay = true;
	}
	return 0;
}

int
mq_sub_receive(mq_sub *s, double timeout, struct mq_msg **out)
{
	unsigned np = s->t.conf.partitions;
	double until = timeout < 0 ? INFINITY : mq_mono() + timeout;
	bool late_pass = false;
	for (;;) {
		if (expire_if_due(s) < 0)
			return -1;
		for (unsigned i = 0; i < np; i++) {
			unsigned k = (s->rr + i) % np;
			struct part *p = &s->ps[k];
			if (p->pos >= p->cand.n && p->scan_new &&
			    scan_new(s, p) < 0)
				return -1;
			int rc = try_claim(s, k, out);
			if (rc != 0) {
				s->rr = (k + 1) % np;
				return rc;
			}
		}
		/* Nothing claimable: look at what changed, then sleep. */
		if (s->ifd >= 0)
			drain_events(s);
		bool again = false;
		for (unsigned k = 0; k < np; k++)
			again |= s->ps[k].scan_new;
		/* Past the deadline, one more look at what changed, no more:
		 * a busy publisher must not keep a timed call spinning. */
		if (mq_mono() >= until) {
			if (!again || late_pass)
				return 0;
			late_pass = true;
			continue;
		}
		if (again)
			continue;
		/* About to sleep: first give back leases that expired (a
		 * claim seen in cur/ is a lease to watch). */
		if (expire_leases(s, false) < 0)
			return -1;
		for (unsigned k = 0; k < np; k++)
			again |= s->ps[k].scan_new;
		if (again)
			continue;
		/* A signal ends the wait as a timeout would: the caller
		 * decides whether to stop. */
		int w = wait_for_change(s, until);
		if (w != 0)
			return w < 0 ? -1 : 0;
	}
}

static struct msg_priv *
priv_of(const struct mq_msg *m)
{
	return m->priv;
}

/* The claim's name now: another process (mq-ack --extend with the
 * receipt) may have renamed it since we made it. */
static int
refresh_claim(mq_sub *s, struct msg_priv *pv)
{
	char now[sizeof pv->cur];
	if (mq_claim_find(&s->ps[pv->k].d, pv->cur, now, sizeof now) < 0)
		return -1;
	memcpy(pv->cur, now, sizeof now);
	return 0;
}

/* Removes the claim, finding it under its new name if another process
 * extended it. */
static int
unlink_claim(mq_sub *s, const struct mq_msg *m)
{
	struct msg_priv *pv = priv_of(m);
	int fd = s->ps[pv->k].d.curfd;
	if (unlinkat(fd, pv->cur, 0) == 0)
		return 0;
	if (errno != ENOENT)
		return mq_err_sys("ack");
	if (refresh_claim(s, pv) == 0 && unlinkat(fd, pv->cur, 0) == 0)
		return 0;
	return mq_err(EX_NOINPUT, "message %s is no longer claimed (its lease "
	    "expired)", m->id);
}

/* In an exactly-once group the ledger entries go first and are made
 * durable, one sync per partition for the whole batch: once an entry is
 * there, a delivery of the same message is settled without being seen. */
int
mq_sub_ack_batch(mq_sub *s, struct mq_msg *const *m, size_t n)
{
	unsigned np = s->t.conf.partitions;
	if (s->exactly_once) {
		bool *touched = calloc(np, sizeof *touched);
		if (!touched)
			return mq_err_sys("malloc");
		int rc = 0;
		for (size_t i = 0; rc == 0 && i < n; i++) {
			struct part *p = &s->ps[priv_of(m[i])->k];
			rc = mq_ledger_add(p->donefd, m[i]->id, 0);
			touched[priv_of(m[i])->k] = true;
		}
		for (unsigned k = 0; rc == 0 && k < np; k++)
			if (touched[k])
				rc = mq_fsync_fd(s->ps[k].donefd);
		free(touched);
		if (rc < 0)
			return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n; i++)
		if (unlink_claim(s, m[i]) < 0)
			rc = -1;
	return rc;
}

int
mq_sub_ack(mq_sub *s, const struct mq_msg *m)
{
	struct mq_msg *one = (struct mq_msg *)m;
	return mq_sub_ack_batch(s, &one, 1);
}

int
mq_sub_nack(mq_sub *s, const struct mq_msg *m, const struct mq_nack *how)
{
	struct msg_priv *pv = priv_of(m);
	struct part *p = &s->ps[pv->k];
	int rc = mq_claim_return(&s->t, pv->k, s->group, &p->d, pv->cur, how,
	    s->max_attempts);
	if (rc < 0 && mq_errcode() == EX_NOINPUT && refresh_claim(s, pv) == 0)
		rc = mq_claim_return(&s->t, pv->k, s->group, &p->d, pv->cur, how,
		    s->max_attempts);
	if (rc == 0)
		p->scan_new = true;
	return rc;
}

int
mq_sub_reject(mq_sub *s, const struct mq_msg *m, const struct mq_nack *how)
{
	struct msg_priv *pv = priv_of(m);
	struct mq_why why = { "rejected", how ? how->detail : NULL,
	    how ? how->status : -1, how ? how->tail : NULL,
	    how ? how->tail_len : 0 };
	int rc = mq_claim_reject(&s->t, pv->k, s->group, &s->ps[pv->k].d,
	    pv->cur, &why);
	if (rc < 0 && mq_errcode() == EX_NOINPUT && refresh_claim(s, pv) == 0)
		rc = mq_claim_reject(&s->t, pv->k, s->group, &s->ps[pv->k].d,
		    pv->cur, &why);
	return rc;
}

int
mq_sub_extend(mq_sub *s, struct mq_msg *m, double seconds)
{
	struct msg_priv *pv = priv_of(m);
	char cur[sizeof pv->cur];
	if (mq_claim_extend(&s->ps[pv->k].d, pv->cur, seconds, cur,
	    sizeof cur) < 0 && (mq_errcode() != EX_NOINPUT ||
	    refresh_claim(s, pv) < 0 || mq_claim_extend(&s->ps[pv->k].d,
	    pv->cur, seconds, cur, sizeof cur) < 0))
		return -1;
	memcpy(pv->cur, cur, sizeof cur);
	struct mq_entry e;
	if (mq_entry_parse(cur, &e) == 0)
		m->lease_deadline = (double)e.deadline_ms / 1000;
	return 0;
}
