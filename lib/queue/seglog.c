/*
 * seglog.c: reading a partition's log of segments (format 2, mq-spool(5)
 * SEGMENTED STORAGE): where it ends, and the records from a sequence
 * number on.
 *
 * The head's committed is a hint: a publish links its segment at log/C
 * (the commit point) before it writes the head, so the log's end is found
 * by following log/C, log/C+count, ... from the head.  A reader lists
 * log/ once, sorts the names, and finds the segment that holds a sequence
 * number by bisection; it lists again only when asked for a number past
 * what its listing holds.  A segment is read whole (it is at most
 * MQ_SEG_MAX_BYTES, and a merged one is bounded far below that) and
 * checked before a record of it is handed out (segment.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "queue.h"

int
mq_seglog_line(int logfd, const char *name, uint64_t first,
    struct mq_seg *sg, struct stat *st)
{
	int fd = mq_file_open(logfd, name, O_RDONLY, 0, st);
	if (fd < 0)
		return -1;
	char line[128];
	ssize_t r = pread(fd, line, sizeof line, 0);
	int e = errno;
	close(fd);
	if (r < 0) {
		errno = e;
		return mq_err_sys("log/%s", name);
	}
	if (mq_seg_read_line(line, (size_t)r, sg) < 0 || sg->first != first)
		return mq_err(EX_DATAERR, "log/%s: not the segment its name "
		    "says", name);
	return 0;
}

int
mq_seglog_end(int logfd, uint64_t *c)
{
	/* Each step is one lookup; only a crash after a commit point (or
	 * a head not yet rewritten by the publish that is under way)
	 * leaves more than the one that fails. */
	for (;;) {
		char name[MQ_SEQ_DIGITS + 1];
		struct mq_seg sg;
		snprintf(name, sizeof name, "%020" PRIu64, *c);
		if (mq_seglog_line(logfd, name, *c, &sg, NULL) < 0)
			return errno == ENOENT ? 0 : -1;
		*c += sg.count;
	}
}

void
mq_seglog_init(struct mq_seglog *l, int logfd)
{
	memset(l, 0, sizeof *l);
	l->logfd = logfd;
}

void
mq_seglog_free(struct mq_seglog *l)
{
	free(l->first);
	free(l->data);
	free(l->roff);
	l->first = NULL;
	l->data = NULL;
	l->roff = NULL;
	l->n = l->cap = l->nroff = l->roffcap = 0;
	l->seg = (struct mq_seg){ 0 };
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Lists log/ again: the first sequence number of each segment, sorted. */
static int
relist(struct mq_seglog *l)
{
	struct mq_names names = { 0 };
	if (mq_names_read(l->logfd, NULL, &names) < 0)
		return -1;
	uint64_t *v = reallocarray(NULL, names.n ? names.n : 1, sizeof *v);
	if (!v) {
		mq_names_free(&names);
		return mq_err_sys("malloc");
	}
	size_t n = 0;
	for (size_t i = 0; i < names.n; i++)
		if (mq_seg_name(names.v[i], &v[n]) == 0)
			n++;
	mq_names_free(&names);
	qsort(v, n, sizeof *v, u64_cmp);
	free(l->first);
	l->first = v;
	l->n = n;
	return 0;
}

/* Index of the last segment whose first is at most seq, or n. */
static size_t
holder(const struct mq_seglog *l, uint64_t seq)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->first[mid] <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : l->n;
}

/* Reads log/<first> whole into l->data and checks its first line. */
static int
load(struct mq_seglog *l, uint64_t first)
{
	char name[MQ_SEQ_DIGITS + 1];
	struct stat st;
	snprintf(name, sizeof name, "%020" PRIu64, first);
	int fd = mq_file_open(l->logfd, name, O_RDONLY, 0, &st);
	if (fd < 0)
		return -1;
	if ((uint64_t)st.st_size > MQ_SEG_MAX_BYTES) {
		close(fd);
		return mq_err(EX_DATAERR, "log/%s: larger than a segment may be",
		    name);
	}
	size_t size = (size_t)st.st_size;
	if (size > l->cap) {
		char *d = realloc(l->data, size);
		if (!d) {
			close(fd);
			return mq_err_sys("malloc");
		}
		l->data = d;
		l->cap = size;
	}
	size_t got = 0;
	while (got < size) {
		ssize_t r = pread(fd, l->data + got, size - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = errno;
			close(fd);
			errno = e;
			return r < 0 ? mq_err_sys("read log/%s", name) :
			    mq_err(EX_DATAERR, "log/%s: shorter than it was", name);
		}
		got += (size_t)r;
	}
	close(fd);
	l->seg = (struct mq_seg){ 0 };
	if (mq_seg_open_bytes(l->data, size, name, &l->seg) < 0)
		return -1;
	l->off = mq_seg_start();
	l->prev = 0;
	l->nroff = 0;
	l->loaded = true;
	return 0;
}

/* Notes where record seq, read at off, starts: the records of a segment
 * are read from its start on, so the table grows by one at its end. */
static void
note_offset(struct mq_seglog *l, uint64_t seq, size_t off)
{
	if (seq - l->seg.first != l->nroff)
		return;
	if (l->nroff == l->roffcap) {
		size_t cap = l->roffcap ? 2 * l->roffcap : 256;
		size_t *v = reallocarray(l->roff, cap, sizeof *v);
		if (!v)
			return;                 /* a hint: read from the start */
		l->roff = v;
		l->roffcap = cap;
	}
	l->roff[l->nroff++] = off;
}

/* The segment of the listing that holds seq, from index i back: a name
 * inside the range of one before it (a merge that died before its
 * unlinks) holds less than that one.  Only first lines are read; the
 * walk is bounded by what one merge covers. */
static size_t
covering(struct mq_seglog *l, size_t i, uint64_t seq)
{
	for (size_t back = 0; i < l->n && back <= 64; back++, i--) {
		char name[MQ_SEQ_DIGITS + 1];
		struct mq_seg sg;
		snprintf(name, sizeof name, "%020" PRIu64, l->first[i]);
		if (mq_seglog_line(l->logfd, name, l->first[i], &sg, NULL) == 0 &&
		    seq - l->first[i] < sg.count)
			return i;
		if (i == 0)
			break;
	}
	return l->n;
}

int
mq_seglog_seek(struct mq_seglog *l, uint64_t seq)
{
	/* Segments never change: the one loaded serves while it holds seq,
	 * read on from where it is, or again from its start. */
	if (l->loaded && seq >= l->seg.first &&
	    seq - l->seg.first < l->seg.count) {
		/* A record read before is gone back to where it starts (a
		 * consumer reads the last of a claim again for its ack). */
		if (seq - l->seg.first < l->nroff) {
			l->off = l->roff[seq - l->seg.first];
			l->prev = seq - 1;      /* unused at the first */
		} else if (seq < l->want || l->off == l->seg.len) {
			l->off = mq_seg_start();
			l->prev = 0;
		}
		l->want = seq;
		return 1;
	}
	l->loaded = false;
	/* What we listed first; listed again when seq is not in it (past
	 * its last, or merged away since). */
	for (int pass = 0; pass < 2; pass++) {
		if (pass && relist(l) < 0)
			return -1;
		size_t i = holder(l, seq);
		if (i == l->n)
			continue;
		if (load(l, l->first[i]) < 0) {
			if (errno == ENOENT && !pass)
				continue;
			return -1;
		}
		if (seq < l->seg.first + l->seg.count) {
			l->want = seq;
			return 1;
		}
		l->loaded = false;
		/* Not in the last one below it: one before may cover it. */
		size_t c = pass ? covering(l, i, seq) : l->n;
		if (c < l->n && c != i && load(l, l->first[c]) == 0 &&
		    seq - l->seg.first < l->seg.count) {
			l->want = seq;
			return 1;
		}
		l->loaded = false;
	}
	return 0;
}

int
mq_seglog_next(struct mq_seglog *l, uint64_t *seq, struct mq_seg_rec *r)
{
	while (l->loaded) {
		size_t off = l->off;
		int rc = mq_seg_next(&l->seg, &off, &l->prev, r);
		if (rc <= 0) {
			if (rc < 0)
				l->loaded = false;
			return rc;
		}
		note_offset(l, l->prev, l->off);
		l->off = off;
		if (l->prev >= l->want) {
			*seq = l->prev;
			l->want = l->prev + 1;
			return 1;
		}
	}
	return 0;
}

int
mq_seglog_gap(struct mq_seglog *l, uint64_t seq, uint64_t *next)
{
	int rc = mq_seglog_seek(l, seq);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	/* The seek listed log/ again if it had to: its listing is fresh. */
	size_t i = holder(l, seq);
	i = i == l->n ? 0 : i + 1;
	*next = i < l->n ? l->first[i] : UINT64_MAX;
	return 1;
}

/* Whether record r's header block says Message-Id: id. */
static bool
record_has_id(const struct mq_seg_rec *r, const char *id)
{
	static const char tag[] = "Message-Id: ";
	size_t tl = sizeof tag - 1;
	for (const char *p = r->hdr, *end = r->hdr + r->hdr_len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (len == tl + MQ_ID_LEN && !memcmp(p, tag, tl))
			return !memcmp(p + tl, id, MQ_ID_LEN);
		if (!nl)
			break;
		p = nl + 1;
	}
	return false;
}

int
mq_seglog_find_id(struct mq_seglog *l, uint64_t end, const char *id,
    uint64_t *seq)
{
	/* A copy of the listing: a seek may list log/ again. */
	if (relist(l) < 0)
		return -1;
	size_t n = l->n;
	uint64_t *first = n ? reallocarray(NULL, n, sizeof *first) : NULL;
	if (n && !first)
		return mq_err_sys("malloc");
	if (n)
		memcpy(first, l->first, n * sizeof *first);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n && first[i] < end; i++) {
		int r = mq_seglog_seek(l, first[i]);
		if (r < 0 && mq_errcode() != EX_DATAERR) {
			rc = -1;
			break;
		}
		struct mq_seg_rec rec;
		uint64_t q;
		/* A damaged segment is passed over, as readers pass its
		 * records over. */
		while (r > 0 && (r = mq_seglog_next(l, &q, &rec)) == 1 &&
		    q < end)
			if (record_has_id(&rec, id)) {
				*seq = q;
				rc = 1;
				break;
			}
	}
	free(first);
	return rc;
}

struct mq_seglog *
mq_topic_seglog(const struct mq_topic *t, unsigned k)
{
	struct mq_seglog *l = &t->seglog[k];
	if (l->logfd < 0) {
		int fd = mq_dir_open(t->pfd[k], "log");
		if (fd < 0)
			return NULL;
		mq_seglog_init(l, fd);
	}
	return l;
}

int
mq_topic_log_end(const struct mq_topic *t, unsigned k, uint64_t hint,
    uint64_t *end)
{
	struct mq_seglog *l = mq_topic_seglog(t, k);
	*end = hint;
	return l ? mq_seglog_end(l->logfd, end) : -1;
}

int
mq_seglog_totals(int logfd, uint64_t from, uint64_t end, uint64_t *records,
    uint64_t *bytes, uint64_t *low)
{
	struct mq_names names = { 0 };
	*records = *bytes = 0;
	if (low)
		*low = UINT64_MAX;
	if (mq_names_read(logfd, NULL, &names) < 0)
		return -1;
	uint64_t covered = 0;
	for (size_t i = 0; i < names.n; i++) {
		uint64_t first;
		struct mq_seg sg;
		/* A name that is no segment of the log is not counted, nor
		 * one that a segment before it covers (names sort in
		 * sequence order: a merge that died before its unlinks). */
		if (mq_seg_name(names.v[i], &first) < 0 || first >= end ||
		    (i && first < covered) ||
		    mq_seglog_line(logfd, names.v[i], first, &sg, NULL) < 0)
			continue;
		covered = first + sg.count;
		uint64_t a = first > from ? first : from;
		uint64_t b = covered < end ? covered : end;
		if (a >= b)
			continue;
		/* A segment partly in range: its share of the bytes. */
		*records += b - a;
		*bytes += b - a == sg.count ? sg.size : sg.size / sg.count *
		    (b - a);
		if (low && a < *low)
			*low = a;
	}
	mq_names_free(&names);
	return 0;
}
