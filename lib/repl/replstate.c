/*
 * replstate.c: what replication keeps in SPOOL/replicate/ besides keys:
 * the receiver's vector (seen), what each peer confirmed (peers/<id>),
 * the spool's role; and the readers of them: mq-pub --replicas waiting
 * for confirmations, status, promote.
 *
 * Whether a session with a peer is live is not read from peers/<id>,
 * which a process killed outright leaves saying "connected": a sending
 * session holds an open file description read lock on peers/<id>.live
 * from before it reads where the peer stands until after it last writes
 * peers/<id>, and the kernel drops the lock with the process.  A reader
 * asks for the lock (F_OFD_GETLK): held is connected, free is not.
 * Where locks stay within one mount (sshfs) a free lock says nothing of
 * other hosts, and where the lock cannot be asked for (no file yet, a
 * file system without locks) peers/<id> is believed for 15 seconds after
 * its last contact, as before the lock.  mq_repl_forget (replpeers.c)
 * takes the same lock to write, so it never removes a peer a session is
 * writing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>
#include <xxhash.h>

#include "repl.h"
#include "sub.h"

void
repl_log(const struct mq_repl_opts *o, int prio, const char *fmt, ...)
{
	if (!o || !o->log)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	o->log(prio, msg, o->ctx);
}

void
repl_hash_hex(const void *data, size_t len, char out[33])
{
	XXH128_hash_t h = XXH3_128bits(data, len);
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
	    (unsigned long long)h.low64);
}

bool
repl_next_group(const char **g, const char **name, size_t *len)
{
	if (!**g || !strcmp(*g, "-"))
		return false;
	*name = *g;
	*len = strcspn(*g, ",");
	*g += *len + ((*g)[*len] == ',');
	return true;
}

int
repl_spool_id(mq_spool *sp, char id[MQ_ID_LEN + 1])
{
	char *buf;
	size_t len;
	if (mq_read_at(sp->fd, "ID", 4096, &buf, &len) < 0)
		return -1;
	int ok = len >= MQ_ID_LEN && mq_is_id(buf, MQ_ID_LEN);
	if (ok) {
		memcpy(id, buf, MQ_ID_LEN);
		id[MQ_ID_LEN] = 0;
	}
	free(buf);
	return ok ? 0 : mq_err(EX_CONFIG, "%s/ID is not a spool id",
	    sp->path);
}

int
repl_dir(mq_spool *sp, const char *sub)
{
	char p[64];
	if (mq_spool_writable(sp) < 0)
		return -1;
	int made = mq_faccessat(sp->fd, "replicate", F_OK, AT_SYMLINK_NOFOLLOW) < 0;
	if (mq_path(p, sizeof p, "replicate/%s", sub) < 0 ||
	    mq_mkdirs(sp->fd, p) < 0 || (made && mq_fsync_fd(sp->fd) < 0))
		return -1;
	return mq_dir_open(sp->fd, p);
}

int
repl_quarantine_name(char *buf, size_t len, const char *topic, unsigned k,
    const char *key, const char *origin)
{
	return mq_path(buf, len, "%s.%u.%s.%s", topic, k, key, origin);
}

/* The vector. */
uint64_t
repl_seen_get(const struct repl_seen *s, const char *origin)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].id, origin))
			return s->v[i].hole && s->v[i].hole - 1 < s->v[i].next ?
			    s->v[i].hole - 1 : s->v[i].next;
	return 0;
}

bool
repl_seen_has(const struct repl_seen *s, const char *origin)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].id, origin))
			return true;
	return false;
}

static struct repl_origin *
origin_of(struct repl_seen *s, const char *origin)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].id, origin))
			return &s->v[i];
	struct repl_origin *v = reallocarray(s->v, s->n + 1, sizeof *v);
	if (!v) {
		mq_err_sys("malloc");
		return NULL;
	}
	s->v = v;
	snprintf(v[s->n].id, sizeof v[s->n].id, "%s", origin);
	v[s->n].hole = v[s->n].next = 0;
	return &v[s->n++];
}

/* While there is a hole, the records after it are applied but do not
 * move next: they come again, by the path that fills the hole. */
int
repl_seen_put(struct repl_seen *s, const char *origin, uint64_t next)
{
	struct repl_origin *o = origin_of(s, origin);
	if (!o)
		return -1;
	if (!o->hole && next > o->next)
		o->next = next;
	return 0;
}

int
repl_seen_settle(struct repl_seen *s, const char *origin, uint64_t end)
{
	struct repl_origin *o = origin_of(s, origin);
	if (!o)
		return -1;
	if (o->hole && o->hole - 1 < end)
		o->hole = 0;
	if (!o->hole && end > o->next)
		o->next = end;
	return 0;
}

int
repl_seen_hole(struct repl_seen *s, const char *origin, uint64_t seq,
    int hole)
{
	struct repl_origin *o = origin_of(s, origin);
	if (!o)
		return -1;
	if (hole && (!o->hole || seq + 1 < o->hole))
		o->hole = seq + 1;
	else if (!hole && o->hole == seq + 1)
		o->hole = 0;
	return 0;
}

void
repl_seen_free(struct repl_seen *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

int
repl_seen_render(const struct repl_seen *s, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);
	if (!f)
		return mq_err_sys("malloc");
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].hole)
			fprintf(f, "%s %" PRIu64 " %" PRIu64 "\n", s->v[i].id,
			    s->v[i].next, s->v[i].hole - 1);
		else
			fprintf(f, "%s %" PRIu64 "\n", s->v[i].id, s->v[i].next);
	return fclose(f) == 0 ? 0 : mq_err_sys("malloc");
}


/* "<origin> <next-seq>[ <hole>]", as a C string. */
static int
seen_line(const char *l, struct repl_seen *s)
{
	const char *p;
	uint64_t next, hole;
	char id[MQ_ID_LEN + 1];
	if (!mq_is_id(l, strcspn(l, " ")) || l[MQ_ID_LEN] != ' ' ||
	    !(p = mq_decimal(l + MQ_ID_LEN + 1, MQ_SEQ_MAX + 1, &next)))
		return mq_err(EX_PROTOCOL, "bad vector line");
	int with_hole = *p == ' ';
	if (with_hole && !(p = mq_decimal(p + 1, MQ_SEQ_MAX, &hole)))
		return mq_err(EX_PROTOCOL, "bad vector line");
	if (*p)
		return mq_err(EX_PROTOCOL, "bad vector line");
	snprintf(id, sizeof id, "%.*s", MQ_ID_LEN, l);
	if (s->n >= REPL_ORIGINS_MAX && !repl_seen_has(s, id))
		return mq_err(EX_PROTOCOL, "a vector of more than %d origins",
		    REPL_ORIGINS_MAX);
	if (repl_seen_put(s, id, next) < 0 ||
	    (with_hole && repl_seen_hole(s, id, hole, 1) < 0))
		return -1;
	return 0;
}

int
repl_seen_parse(const char *text, size_t len, struct repl_seen *s)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		char line[MQ_ID_LEN + 64];
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)((nl ? nl : end) - p);
		if (ll >= sizeof line || memchr(p, 0, ll))
			return mq_err(EX_PROTOCOL, "bad vector line");
		memcpy(line, p, ll);
		line[ll] = 0;
		if (seen_line(line, s) < 0)
			return -1;
		p += ll + 1;
	}
	return 0;
}

/* Every copied record in the journal from offset from says what was
 * seen.  replicate/seen says up to where it covers the journal, and the
 * journal, synced before the vector is written, has the rest. */
static int
seen_from_journal(mq_spool *sp, struct repl_seen *s, uint64_t from)
{
	struct mq_jreader r;
	struct mq_jrec rec;
	int rc = mq_jreader_open(sp, &r, from);
	while (rc == 0 && (rc = mq_jreader_next(&r, &rec)) == 1)
		rc = rec.origin[0] ? repl_seen_put(s, rec.origin, rec.seq + 1) : 0;
	mq_jreader_close(&r);
	return rc < 0 ? -1 : 0;
}

int
repl_seen_load(mq_spool *sp, struct repl_seen *s, uint64_t *covered_out)
{
	char *buf;
	size_t len;
	memset(s, 0, sizeof *s);
	*covered_out = 0;
	if (mq_read_at(sp->fd, "replicate/seen", 1 << 20, &buf, &len) < 0)
		return errno == ENOENT ? seen_from_journal(sp, s, 0) : -1;
	/* "journal <offset>" first, then the vector. */
	uint64_t covered = 0;
	char *nl = memchr(buf, '\n', len);
	const char *end = nl && !strncmp(buf, "journal ", 8) ?
	    mq_decimal(buf + 8, UINT64_MAX, &covered) : NULL;
	int rc = nl && end == nl ? 0 : -1;
	if (rc == 0)
		rc = repl_seen_parse(nl + 1, len - (size_t)(nl + 1 - buf), s);
	free(buf);
	if (rc < 0) {
		/* Damaged: the journal knows better. */
		repl_seen_free(s);
		covered = 0;
	}
	*covered_out = covered;
	return seen_from_journal(sp, s, covered);
}

int
repl_seen_save(mq_spool *sp, const struct repl_seen *s)
{
	char *text;
	size_t len;
	int dfd = repl_dir(sp, ".");
	if (dfd < 0 || repl_seen_render(s, &text, &len) < 0) {
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	char *full = NULL;
	int n = asprintf(&full, "journal %" PRIu64 "\n%.*s", mq_journal_size(sp),
	    (int)len, text);
	free(text);
	int rc = n < 0 ? mq_err_sys("malloc") :
	    mq_write_file(dfd, "seen", full, (size_t)n, 0, 1);
	free(full);
	close(dfd);
	return rc < 0 ? -1 : 0;
}

/* peers/<id>: key=value lines.  A peer without a name is given its id
 * by the session, for its log lines; the file then has no name. */
int
repl_peer_save(mq_spool *sp, const char *peer_id, const char *name,
    const char *address, uint64_t confirmed, unsigned batch, int connected)
{
	int dfd = repl_dir(sp, "peers");
	if (dfd < 0)
		return -1;
	if (!name || !strcmp(name, peer_id))
		name = "";
	/* One line each: no newline may come in from the address. */
	char addr[256];
	snprintf(addr, sizeof addr, "%s", address ? address : "");
	for (char *p = addr; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	char text[1024];
	int n = snprintf(text, sizeof text, "name=%s\naddress=%s\nconfirmed=%"
	    PRIu64 "\ncontact=%.3f\nstate=%s\nbatch=%u\n", name, addr,
	    confirmed, mq_now(), connected ? "connected" : "idle", batch);
	int rc = mq_write_file(dfd, peer_id, text, (size_t)n, 0, 1);
	close(dfd);
	return rc < 0 ? -1 : 0;
}

int
repl_peer_hold(mq_spool *sp, const char *peer_id)
{
	char name[MQ_ID_LEN + 8];
	snprintf(name, sizeof name, "%s.live", peer_id);
	int dfd = repl_dir(sp, "peers");
	if (dfd < 0)
		return -1;
	for (;;) {
		struct stat a, b;
		int fd = mq_file_open(dfd, name, O_RDWR | O_CREAT, 0666, &a);
		if (fd < 0) {
			close(dfd);
			return -1;
		}
		char what[MQ_ID_LEN + 24];
		snprintf(what, sizeof what, "replicate/peers/%s", name);
		int rc = mq_lock_take(fd, MQ_LOCK_READ, 1, what);
		/* Without locks here, the session runs unseen by them. */
		if (rc < 0 && errno != EINVAL && errno != ENOLCK &&
		    errno != EOPNOTSUPP && errno != ENOSYS) {
			close(fd);
			close(dfd);
			return -1;
		}
		/* mq_repl_forget removed the file while we waited for it. */
		if (mq_fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			close(dfd);
			return fd;
		}
		close(fd);
	}
}

/* 1 when a session holds peers/<id>.live, 0 when none does, -1 when the
 * lock cannot tell (no such file, no locks, another host's locks). */
static int
peer_live(int dfd, const char *id, bool locks_local)
{
	char name[MQ_ID_LEN + 8];
	snprintf(name, sizeof name, "%s.live", id);
	int fd = mq_openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int rc = fcntl(fd, F_OFD_GETLK, &fl);
	close(fd);
	if (rc < 0)
		return -1;
	return fl.l_type != F_UNLCK ? 1 : locks_local ? -1 : 0;
}

/* peers/<id> into p; and into *batch, if not NULL, its batch (one out
 * of range, as a version without it, is REPL_BATCH_RECORDS: only a
 * slower start). */
static int
peer_read(int dfd, const char *id, bool locks_local,
    struct mq_peer_status *p, unsigned *batch)
{
	struct mq_conf kv;
	if (mq_conf_read(dfd, id, &kv) < 0)
		return -1;
	memset(p, 0, sizeof *p);
	snprintf(p->id, sizeof p->id, "%s", id);
	const char *v = mq_conf_get(&kv, "name");
	snprintf(p->name, sizeof p->name, "%s", v ? v : "");
	v = mq_conf_get(&kv, "address");
	snprintf(p->address, sizeof p->address, "%s", v ? v : "");
	v = mq_conf_get(&kv, "state");
	int rc = mq_conf_get_u64(&kv, "confirmed", 0, &p->confirmed, id);
	if (rc == 0)
		rc = mq_conf_get_double(&kv, "contact", 0, &p->contact, id);
	uint64_t b;
	if (batch)
		*batch = mq_conf_get_u64(&kv, "batch", REPL_BATCH_RECORDS, &b,
		    id) == 0 && b >= 1 && b <= REPL_BATCH_RECORDS ? (unsigned)b :
		    REPL_BATCH_RECORDS;
	int live = peer_live(dfd, id, locks_local);
	p->connected = live >= 0 ? live : v && !strcmp(v, "connected") &&
	    mq_now() - p->contact < 15;
	mq_conf_free(&kv);
	return rc;
}

static bool
is_peer_file(const char *name)
{
	return mq_is_id(name, strlen(name));
}

int
repl_peers_open(mq_spool *sp, int *dfd)
{
	*dfd = mq_openat(sp->fd, "replicate/peers", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (*dfd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("replicate/peers");
	return 1;
}

int
repl_peer_confirmed(mq_spool *sp, const char *peer_id, uint64_t *pos,
    unsigned *batch)
{
	*pos = 0;
	*batch = REPL_BATCH_RECORDS;
	int dfd, rc = repl_peers_open(sp, &dfd);
	if (rc <= 0)
		return rc;
	struct mq_peer_status p;
	rc = 0;
	if (mq_faccessat(dfd, peer_id, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		rc = peer_read(dfd, peer_id, false, &p, batch);
		if (rc == 0)
			*pos = p.confirmed;
	}
	close(dfd);
	return rc;
}

int
mq_repl_peers(mq_spool *sp, struct mq_peer_status **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	/* Status only reads: no replicate/ is made for it. */
	int dfd, rc = repl_peers_open(sp, &dfd);
	if (rc <= 0)
		return rc;
	struct mq_names l = { 0 };
	rc = mq_names_read(dfd, is_peer_file, &l);
	mq_names_sort(&l);
	struct mq_peer_status *v = calloc(l.n ? l.n : 1, sizeof *v);
	if (rc == 0 && !v)
		rc = mq_err_sys("malloc");
	size_t m = 0;
	bool local = l.n && mq_fs_locks_local(dfd);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (peer_read(dfd, l.v[i], local, &v[m], NULL) == 0)
			m++;
		else if (mq_errcode() != EX_NOINPUT)
			rc = -1;        /* a peer file replaced meanwhile is fine */
	mq_names_free(&l);
	close(dfd);
	if (rc < 0) {
		free(v);
		return -1;
	}
	*out = v;
	*n = m;
	return 0;
}

int
mq_replicas_wait(mq_spool *sp, const struct mq_replica_goal *goal,
    unsigned n, double timeout, unsigned *got)
{
	uint64_t end = goal->end;
	*got = 0;
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	int dfd = repl_dir(sp, "peers");
	if (dfd < 0) {
		if (ifd >= 0)
			close(ifd);
		return -1;
	}
	/* Without inotify (or on NFS, where it is blind) poll quickly. */
	if (ifd >= 0 && mq_watch(ifd, dfd, IN_MOVED_TO | IN_CREATE) < 0) {
		close(ifd);
		ifd = -1;
	}
	close(dfd);
	double until = mq_mono() + timeout;
	int rc;
	for (;;) {
		struct mq_peer_status *v;
		size_t np;
		if ((rc = mq_repl_peers(sp, &v, &np)) < 0)
			break;
		unsigned have = 0;
		int peersfd = -1;
		for (size_t i = 0; rc >= 0 && i < np; i++) {
			if (v[i].confirmed >= end) {
				have++;
				continue;
			}
			/* Format 2: the logs up to where the S records say,
			 * in whatever session they went. */
			if (!goal->from || (peersfd < 0 &&
			    (rc = repl_peers_open(sp, &peersfd)) <= 0))
				continue;
			int h = repl_peer_has_logs(sp, peersfd, v[i].id,
			    goal->from, end);
			if (h < 0)
				rc = -1;
			have += h == 1;
		}
		if (peersfd >= 0)
			close(peersfd);
		free(v);
		if (rc < 0)
			break;
		*got = have;
		if (have >= n) {
			rc = 0;
			break;
		}
		double left = until - mq_mono();
		if (left <= 0) {
			rc = 1;
			break;
		}
		struct pollfd pfd = { ifd, POLLIN, 0 };
		int ms = ifd >= 0 && left < 1 ? (int)(left * 1000) + 1 :
		    ifd >= 0 ? 1000 : 5;
		if (poll(&pfd, ifd >= 0 ? 1 : 0, ms) > 0) {
			char buf[4096];
			while (read(ifd, buf, sizeof buf) > 0)
				;
		}
	}
	if (ifd >= 0)
		close(ifd);
	return rc;
}

/* The time of the record at pos (the oldest not confirmed), and how many
 * records from there to the end; with what the hosts' journals hold that
 * is not merged into it yet (unmerged: records, bytes, oldest), added to
 * what the logs of format 2 hold past the peer's ends (oldest: the time
 * of the oldest of those, 0 none). */
static void
lag_of(mq_spool *sp, struct mq_peer_status *p, const uint64_t unmerged[3],
    double oldest)
{
	struct mq_jreader r;
	struct mq_jrec rec;
	p->records += unmerged[0];
	p->lag_bytes += (p->journal > p->confirmed ? p->journal -
	    p->confirmed : 0) + unmerged[1];
	if (unmerged[2] != UINT64_MAX && (!oldest ||
	    (double)unmerged[2] / 1000 < oldest))
		oldest = (double)unmerged[2] / 1000;
	if (p->confirmed < p->journal &&
	    mq_jreader_open(sp, &r, p->confirmed) == 0) {
		/* The first record is the oldest. */
		for (bool first = true; mq_jreader_next(&r, &rec) == 1;
		    first = false) {
			p->records++;
			if (first && (!oldest || (double)rec.ms / 1000 < oldest))
				oldest = (double)rec.ms / 1000;
		}
		mq_jreader_close(&r);
	}
	p->lag = oldest ? mq_now() - oldest : 0;
	if (p->lag < 0)
		p->lag = 0;
}

int
mq_repl_status(mq_spool *sp, struct mq_peer_status **v, size_t *n,
    struct mq_repl_self *self)
{
	if (self) {
		memset(self, 0, sizeof *self);
		if (mq_epoch_read(sp, &self->epoch) < 0 ||
		    (self->fenced = mq_fence_read(sp, &self->fence)) < 0)
			return -1;
	}
	if (mq_repl_peers(sp, v, n) < 0)
		return -1;
	uint64_t size = mq_journal_size(sp), u[3];
	if (mq_journal_unmerged(sp, &u[0], &u[1], &u[2]) < 0)
		return -1;
	/* Format 2: the logs past each peer's ends, then the journal. */
	double *oldest = calloc(*n ? *n : 1, sizeof *oldest);
	int dfd = -1, rc = oldest ? 0 : mq_err_sys("malloc");
	if (rc == 0 && *n && repl_peers_open(sp, &dfd) < 0)
		rc = -1;
	if (rc == 0 && dfd >= 0)
		rc = repl_log_lag(sp, dfd, *v, *n, oldest);
	if (dfd >= 0)
		close(dfd);
	if (rc < 0) {
		free(oldest);
		return -1;
	}
	for (size_t i = 0; i < *n; i++) {
		(*v)[i].journal = size;
		lag_of(sp, &(*v)[i], u, oldest[i]);
	}
	free(oldest);
	int qfd = self ? mq_openat(sp->fd, "replicate/quarantine", O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (qfd >= 0) {
		self->quarantined = (size_t)mq_dir_count(qfd, NULL);
		close(qfd);
	}
	return 0;
}

int
repl_journal_trim(mq_spool *sp)
{
	/* The peers' confirmed offsets hold the journal back. */
	struct mq_peer_status *v;
	size_t n;
	if (mq_repl_peers(sp, &v, &n) < 0)
		return -1;
	uint64_t keep = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (v[i].confirmed < keep)
			keep = v[i].confirmed;
	free(v);
	/* And what seen covers: a receiver completes its vector from
	 * there, so it must stay there, durably, before it goes. */
	int fd = mq_faccessat(sp->fd, "replicate/seen", F_OK,
	    AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT ? -1 :
	    mq_file_open(sp->fd, "replicate/seen", O_RDONLY, 0, NULL);
	if (fd >= 0) {
		char head[64];
		uint64_t covered = 0;
		ssize_t got = pread(fd, head, sizeof head - 1, 0);
		int rc = got < 0 || fsync(fd) < 0 ? mq_err_sys("replicate/seen") :
		    0;
		close(fd);
		if (rc < 0)
			return -1;
		head[got] = 0;
		if (strncmp(head, "journal ", 8) ||
		    !mq_decimal(head + 8, MQ_SEQ_MAX, &covered))
			covered = 0;    /* damaged: read from the start */
		if (covered < keep)
			keep = covered;
	} else if (errno != ENOENT) {
		return mq_err_sys("replicate/seen");
	}
	/* Where hosts share the spool, the merge reads the M records from
	 * where journals/.merged covers them. */
	uint64_t merged;
	if (sp->shared && mq_journal_merged(sp, &merged) < 0)
		return -1;
	if (sp->shared && merged < keep)
		keep = merged;
	return mq_journal_drop(sp, "journal", keep);
}

void
repl_trim_every(mq_spool *sp, const struct mq_repl_opts *o, double *last,
    bool now)
{
	if (!now && mq_mono() - *last < REPL_TRIM_EVERY)
		return;
	*last = mq_mono();
	if (repl_journal_trim(sp) < 0)
		repl_log(o, LOG_WARNING, "journal: %s", mq_errmsg());
}
