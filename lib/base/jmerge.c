/*
 * jmerge.c: the hosts' journals, merged into SPOOL/journal.
 *
 * O_APPEND is atomic within one host only: two NFS or GlusterFS clients
 * appending to one file each write at the end their own cache knows of,
 * over each other's records.  So on a shared file system each host
 * appends to its own journals/<host> (journal.c), and whoever needs
 * SPOOL/journal whole (the replication sender, mq-pub --replicas)
 * merges the hosts' records into it, under journals/.lock:
 *
 *  - each host's records in the order of its journal, the hosts' by the
 *    time in each record;
 *  - only records older than the clock skew allowed, so that a record a
 *    later one depends on (the publish of a message acknowledged on
 *    another host) was written before the merge read its journal, and is
 *    merged first;
 *  - an M record after them says how far each host's journal is merged,
 *    in the same write: a crash never merges a record twice or loses one.
 *    journals/.merged remembers the M records up to an offset of
 *    SPOOL/journal, so a merge reads only what follows that offset.
 *
 * Nothing here serialises the hosts' publishers and consumers: only the
 * merges wait for one another.  See mq-spool(5), CHANGE JOURNAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

#define MERGE_BYTES (4u << 20)          /* merged per call at most */

/* A record read ahead from a host's journal. */
struct prec {
	char type;
	uint64_t ms, end;               /* end: offset after it in its journal */
	char origin[MQ_ID_LEN + 1];
	uint64_t seq;
	char *text;                     /* "T ms args", owned */
	size_t len;
	char *key;                      /* "topic k KEY" it is about, or NULL */
};

struct host {
	char name[MQ_HOST_MAX];
	uint64_t from, to;              /* merged before, after this call */
	struct mq_jreader r;
	struct mq_jrec rec;
	int have;                       /* rec is its next record */
	struct prec *v;                 /* what was read ahead */
	size_t n, i;                    /* i: the next to merge */
	bool blocked;                   /* waits for a held publish */
	bool damaged;                   /* its first record is: left out */
};

/* Where a publish record waits to be merged: by its key. */
struct pub {
	const char *key;
	size_t host, at;
};

struct merge {
	mq_spool *sp;
	int dfd;                        /* journals/ */
	struct host *v;
	size_t n;
	uint64_t covered;               /* SPOOL/journal read up to here */
	struct pub *pubs;               /* sorted by key */
	size_t npubs;
};

static struct host *
host_of(struct merge *m, const char *name, size_t len)
{
	for (size_t i = 0; i < m->n; i++)
		if (strlen(m->v[i].name) == len && !memcmp(m->v[i].name, name, len))
			return &m->v[i];
	if (len >= MQ_HOST_MAX)
		return NULL;
	char copy[MQ_HOST_MAX];
	memcpy(copy, name, len);
	copy[len] = 0;
	if (!mq_is_host(copy))
		return NULL;
	struct host *v = reallocarray(m->v, m->n + 1, sizeof *v);
	if (!v) {
		mq_err_sys("malloc");
		return NULL;
	}
	m->v = v;
	struct host *h = &v[m->n++];
	memset(h, 0, sizeof *h);
	h->r.fd = -1;
	memcpy(h->name, copy, len + 1);
	return h;
}

/* "M <ms> <host> <offset>": the host's journal is merged up to offset. */
static void
mark(struct merge *m, const char *args)
{
	size_t len = strcspn(args, " ");
	uint64_t off;
	const char *end;
	struct host *h;
	if (args[len] != ' ' || !(end = mq_decimal(args + len + 1, UINT64_MAX,
	    &off)) || *end || !(h = host_of(m, args, len)))
		return;
	if (off > h->from)
		h->from = off;
}

/* journals/.merged: "journal <offset>" and "<host> <offset>" lines, then
 * every M record of SPOOL/journal after that offset. */
static int
load(struct merge *m)
{
	char *buf;
	size_t len;
	m->covered = 0;
	/* Another host's rename may leave us a stale handle to the old one
	 * (GlusterFS): open again.  It is a cache: without it, the whole
	 * journal is read. */
	int got = -1;
	for (int tries = 0; got < 0 && tries < 2; tries++)
		got = mq_read_at(m->dfd, ".merged", 1 << 20, &buf, &len);
	if (got == 0) {
		char *save = NULL, *line = strtok_r(buf, "\n", &save);
		uint64_t cov;
		const char *end;
		if (line && !strncmp(line, "journal ", 8) &&
		    (end = mq_decimal(line + 8, UINT64_MAX, &cov)) && !*end) {
			m->covered = cov;
			while ((line = strtok_r(NULL, "\n", &save))) {
				char args[MQ_HOST_MAX + 48];
				snprintf(args, sizeof args, "%s", line);
				mark(m, args);
			}
		}
		free(buf);
	}
	/* A cache that says more than the journal holds is not ours. */
	if (m->covered > mq_journal_size(m->sp)) {
		m->covered = 0;
		for (size_t i = 0; i < m->n; i++)
			m->v[i].from = 0;
	}
	struct mq_jreader r;
	struct mq_jrec rec;
	if (mq_jreader_open(m->sp, &r, m->covered) < 0)
		return -1;
	while ((got = mq_jreader_next(&r, &rec)) == 1)
		if (rec.type == 'M' && !rec.origin[0])
			mark(m, rec.args);
	m->covered = r.pos;
	mq_jreader_close(&r);
	return got < 0 ? -1 : 0;
}

static int
save(struct merge *m, uint64_t covered)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return mq_err_sys("malloc");
	fprintf(f, "journal %" PRIu64 "\n", covered);
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].to)
			fprintf(f, "%s %" PRIu64 "\n", m->v[i].name, m->v[i].to);
	int rc = fclose(f) == 0 ? 0 : mq_err_sys("malloc");
	/* Not synced: an older copy is completed from the M records. */
	if (rc == 0)
		rc = mq_write_file(m->dfd, ".merged", text, len, 0, 1);
	free(text);
	return rc;
}

/* The names of the hosts' journals in journals/ (dfd), listed afresh:
 * regular files named as mq_hostname names, nothing else. */
static int
hosts_read(int dfd, struct mq_names *out)
{
	struct mq_names l = { 0 };
	int fd = mq_reopen(dfd, O_RDONLY | O_DIRECTORY);
	int rc = fd < 0 ? -1 : mq_names_read(fd, mq_is_host, &l);
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		struct stat st;
		if (mq_fstatat(dfd, l.v[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			rc = mq_names_push(out, l.v[i], strlen(l.v[i]));
	}
	mq_names_free(&l);
	return rc;
}

/* Every host's journal, from where it is merged. */
static int
hosts_open(struct merge *m)
{
	struct mq_names l = { 0 };
	int rc = load(m) < 0 || hosts_read(m->dfd, &l) < 0 ? -1 : 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (!host_of(m, l.v[i], strlen(l.v[i])))
			rc = -1;
	mq_names_free(&l);
	for (size_t i = 0; rc == 0 && i < m->n; i++) {
		struct host *h = &m->v[i];
		char path[MQ_HOST_MAX + 16];
		snprintf(path, sizeof path, "journals/%s", h->name);
		h->to = h->from;
		rc = mq_jreader_open_at(m->sp, &h->r, path, h->from);
		/* One host's damaged journal does not stop the others': it
		 * stays unmerged, for a human to look at. */
		if (rc < 0 && mq_errcode() == EX_DATAERR) {
			h->damaged = true;
			rc = 0;
		}
	}
	return rc;
}

/* The next record of a host's journal worth merging: an M record there
 * was not written by a merge, and is not taken for one. */
static int
next(struct host *h)
{
	int got;
	while ((got = mq_jreader_next(&h->r, &h->rec)) == 1 &&
	    h->rec.type == 'M')
		;
	h->have = got == 1;
	return got < 0 ? -1 : 0;
}

int
mq_journal_list(mq_spool *sp, struct mq_names *out)
{
	memset(out, 0, sizeof *out);
	struct mq_names l = { 0 };
	int dfd = mq_openat(sp->fd, "journals", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	int rc = dfd < 0 && errno != ENOENT ? mq_err_sys("journals") :
	    mq_names_push(out, "journal", 7);
	if (rc == 0 && dfd >= 0)
		rc = hosts_read(dfd, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		char path[MQ_HOST_MAX + 16];
		int n = snprintf(path, sizeof path, "journals/%s", l.v[i]);
		rc = mq_names_push(out, path, (size_t)n);
	}
	mq_names_free(&l);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* The message a record is about, as "topic k KEY": every type but T,
 * U, W and Z names one (a dead letter's name starts with its KEY). */
static char *
key_of(const struct mq_jrec *rec)
{
	struct mq_jargs ja;
	if (strchr("TUWZ", rec->type) || mq_jargs_parse(rec->type, rec->args,
	    &ja) < 0)
		return NULL;
	/* Its arguments read, the name starts with a whole KEY. */
	const char *key = rec->type == 'P' ? ja.a : ja.b;
	char *out;
	if (asprintf(&out, "%s %u %.*s", ja.topic, ja.k, MQ_KEY_LEN, key) < 0)
		return NULL;
	return out;
}

/* Reads ahead what the host's journal has, up to MERGE_BYTES. */
static int
read_ahead(struct host *h)
{
	size_t bytes = 0;
	while (bytes < MERGE_BYTES) {
		if (next(h) < 0)
			return -1;
		if (!h->have)
			break;
		struct prec *v = reallocarray(h->v, h->n + 1, sizeof *v);
		if (!v)
			return mq_err_sys("malloc");
		h->v = v;
		struct prec *p = &v[h->n];
		memset(p, 0, sizeof *p);
		p->type = h->rec.type;
		p->ms = h->rec.ms;
		p->end = h->rec.end;
		memcpy(p->origin, h->rec.origin, sizeof p->origin);
		p->seq = h->rec.seq;
		p->len = h->rec.len;
		if (!(p->text = strndup(h->rec.text, h->rec.len)))
			return mq_err_sys("malloc");
		p->key = key_of(&h->rec);
		h->n++;
		bytes += p->len;
	}
	return 0;
}

static int
cmp_pub(const void *a, const void *b)
{
	return strcmp(((const struct pub *)a)->key, ((const struct pub *)b)->key);
}

/* The publishes read ahead, to find by key. */
static int
index_pubs(struct merge *m)
{
	for (size_t i = 0; i < m->n; i++)
		for (size_t j = 0; j < m->v[i].n; j++) {
			if (m->v[i].v[j].type != 'P' || !m->v[i].v[j].key)
				continue;
			struct pub *v = reallocarray(m->pubs, m->npubs + 1,
			    sizeof *v);
			if (!v)
				return mq_err_sys("malloc");
			m->pubs = v;
			v[m->npubs++] = (struct pub){ m->v[i].v[j].key, i, j };
		}
	if (m->npubs > 1)
		qsort(m->pubs, m->npubs, sizeof *m->pubs, cmp_pub);
	return 0;
}

/* The host whose publish of the message of h's next record is not merged
 * yet, or -1. */
static ssize_t
waits_for(struct merge *m, size_t h)
{
	const struct prec *r = &m->v[h].v[m->v[h].i];
	if (r->type == 'P' || !r->key || !m->npubs)
		return -1;
	struct pub want = { .key = r->key };
	const struct pub *p = bsearch(&want, m->pubs, m->npubs, sizeof want,
	    cmp_pub);
	if (!p)
		return -1;
	/* Publishes of one key on two hosts: a damaged or forged journal;
	 * any of them not merged yet counts. */
	while (p > m->pubs && !strcmp(p[-1].key, r->key))
		p--;
	for (; p < m->pubs + m->npubs && !strcmp(p->key, r->key); p++)
		if (p->host != h && p->at >= m->v[p->host].i)
			return (ssize_t)p->host;
	return -1;
}

/* The host to merge a record from next, or -1: the oldest record not
 * younger than upto; but a record about a message whose publish another
 * host has not merged yet goes after that publish, whatever the clocks
 * say.  A publish held back for being too young holds it back too. */
static ssize_t
pick(struct merge *m, uint64_t upto)
{
	for (;;) {
		ssize_t first = -1;
		for (size_t i = 0; i < m->n; i++) {
			struct host *h = &m->v[i];
			if (h->i < h->n && !h->blocked && h->v[h->i].ms < upto &&
			    (first < 0 || h->v[h->i].ms < m->v[first].v[
			    m->v[first].i].ms))
				first = (ssize_t)i;
		}
		if (first < 0)
			return -1;
		size_t h = (size_t)first;
		for (size_t steps = 0; steps < m->n; steps++) {
			ssize_t g = waits_for(m, h);
			if (g < 0)
				return (ssize_t)h;
			struct host *gh = &m->v[g];
			if (gh->blocked || gh->v[gh->i].ms >= upto)
				break;
			h = (size_t)g;
		}
		/* Waits for a held publish (or a circle, which no real
		 * journals make): not this time. */
		m->v[first].blocked = true;
	}
}

static int
merge_locked(struct merge *m, uint64_t upto, uint64_t *size, uint64_t *held)
{
	if (hosts_open(m) < 0)
		return -1;
	for (size_t i = 0; i < m->n; i++)
		if (!m->v[i].damaged && read_ahead(&m->v[i]) < 0)
			return -1;
	if (index_pubs(m) < 0)
		return -1;
	struct mq_jbuf b = { 0 };
	int rc = 0;
	ssize_t h;
	while (rc == 0 && b.len < MERGE_BYTES && (h = pick(m, upto)) >= 0) {
		struct host *from = &m->v[h];
		struct prec *r = &from->v[from->i++];
		rc = r->origin[0] ? mq_journal_raw(&b, r->origin, r->seq, r->text,
		    r->len) : mq_journal_text(&b, r->text, r->len);
		from->to = r->end;
	}
	*held = UINT64_MAX;
	for (size_t i = 0; i < m->n; i++) {
		struct host *hh = &m->v[i];
		if (hh->i < hh->n && hh->v[hh->i].ms >= upto &&
		    hh->v[hh->i].ms < *held)
			*held = hh->v[hh->i].ms;
	}
	for (size_t i = 0; rc == 0 && i < m->n; i++)
		if (m->v[i].to > m->v[i].from)
			rc = mq_journal_line(&b, 'M', "%s %" PRIu64, m->v[i].name,
			    m->v[i].to);
	uint64_t end = m->covered;
	if (rc == 0 && b.len)
		rc = mq_journal_append_main(m->sp, b.buf, b.len, &end);
	else if (rc == 0)
		end = mq_journal_size(m->sp);
	/* What the file holds past the last whole record is a line a crash
	 * cut: .merged covers the records before it. */
	if (rc == 0 && b.len)
		rc = save(m, end);
	/* The M record, synced, says how far each host's journal is
	 * merged: its cut files before that may go. */
	for (size_t i = 0; rc == 0 && i < m->n; i++) {
		char path[MQ_HOST_MAX + 16];
		snprintf(path, sizeof path, "journals/%s", m->v[i].name);
		if (m->v[i].to > m->v[i].from &&
		    mq_journal_drop(m->sp, path, m->v[i].to) < 0)
			rc = -1;
	}
	bool more = b.len >= MERGE_BYTES;
	mq_jbuf_free(&b);
	if (rc == 0)
		*size = end;
	return rc < 0 ? -1 : more;
}

static void
merge_free(struct merge *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct host *h = &m->v[i];
		if (h->r.buf)
			mq_jreader_close(&h->r);
		for (size_t j = 0; j < h->n; j++) {
			free(h->v[j].text);
			free(h->v[j].key);
		}
		free(h->v);
	}
	free(m->v);
	free(m->pubs);
	if (m->dfd >= 0)
		close(m->dfd);
}

int
mq_journal_merge(mq_spool *sp, uint64_t upto, uint64_t *size, uint64_t *held)
{
	*held = UINT64_MAX;
	struct stat st;
	if (mq_fstatat(sp->fd, "journals", &st, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno == ENOENT) {
		*size = mq_journal_size(sp);
		return 0;
	}
	struct merge m = { .sp = sp };
	int lfd = mq_journal_lock(sp);
	if (lfd < 0)
		return -1;
	m.dfd = mq_openat(sp->fd, "journals", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	int rc = m.dfd < 0 ? mq_err_sys("journals") :
	    merge_locked(&m, upto, size, held);
	merge_free(&m);
	close(lfd);
	return rc;
}

int
mq_journal_merged(mq_spool *sp, uint64_t *covered)
{
	/* None: no merge saved its M records, or it is lost, and then a
	 * merge may take again what it merged once, which replication
	 * applies once (mq-protocol(5)): no reason to keep files. */
	*covered = UINT64_MAX;
	int fd = mq_file_open(sp->fd, "journals/.merged", O_RDONLY, 0, NULL);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	char head[64];
	ssize_t got = pread(fd, head, sizeof head - 1, 0);
	int rc = got < 0 || fsync(fd) < 0 ? mq_err_sys("journals/.merged") : 0;
	close(fd);
	const char *end;
	if (rc == 0) {
		head[got] = 0;
		if (strncmp(head, "journal ", 8) ||
		    !(end = mq_decimal(head + 8, UINT64_MAX, covered)) ||
		    *end != '\n')
			*covered = UINT64_MAX;  /* damaged: as none */
	}
	return rc;
}

int
mq_journal_unmerged(mq_spool *sp, uint64_t *records, uint64_t *bytes,
    uint64_t *oldest)
{
	*records = *bytes = 0;
	*oldest = UINT64_MAX;
	struct merge m = { .sp = sp };
	m.dfd = mq_openat(sp->fd, "journals", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (m.dfd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("journals");
	/* Read only: no lock, and a merge under way counts as not done. */
	int rc = hosts_open(&m);
	for (size_t i = 0; rc == 0 && i < m.n; i++) {
		struct host *h = &m.v[i];
		while ((rc = next(h)) == 0 && h->have) {
			(*records)++;
			*bytes += h->rec.end - h->rec.at;
			if (h->rec.ms < *oldest)
				*oldest = h->rec.ms;
		}
	}
	merge_free(&m);
	return rc;
}

double
mq_clock_skew(void)
{
	return mq_env_duration("MQ_CLOCK_SKEW", 1.0);
}

uint64_t
mq_journal_merge_upto(void)
{
	double ms = (mq_now() - mq_clock_skew()) * 1000;
	return ms > 0 ? (uint64_t)ms : 0;
}

int
mq_journal_merge_now(mq_spool *sp, uint64_t *size)
{
	uint64_t now = (uint64_t)(mq_now() * 1000), held;
	for (;;) {
		uint64_t upto = mq_journal_merge_upto();
		int rc = mq_journal_merge(sp, upto < now + 1 ? upto : now + 1, size,
		    &held);
		if (rc < 0)
			return -1;
		/* Done when no record of before now is held back for being
		 * younger than the skew. */
		if (rc == 0 && held > now)
			return 0;
		if (rc == 0)
			nanosleep(&(struct timespec){ 0, 20 * 1000000 }, NULL);
	}
}
