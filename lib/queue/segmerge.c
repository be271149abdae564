/*
 * segmerge.c: small segments merged (mq-spool(5), SEGMENTED STORAGE,
 * Merge).
 *
 * A segment per chunk is a file per mq-pub call, so a publisher that
 * linked a small segment (under MERGE_SMALL bytes) counts it, after it
 * unlocked the head, in tmp/.merge, when it gets that file locked without
 * waiting (else another is merging, and the count misses one: it is a
 * hint).  Every MERGE_MIN of them it lists log/ from where the last look
 * left off (the same line: a publish never costs a look at every
 * segment of the log), and merges the first run of consecutive small
 * segments below the head's committed.  A run a, b, ... is
 * checked record by record, written as one segment into tmp/merge.<a>,
 * synced, and renamed onto log/a: the commit point (the name stays, its
 * file holds more).  Then log/ is synced and log/b, ... unlinked.  A
 * crash after the rename leaves names that log/a covers: readers find
 * the same records in either, and the next merge unlinks them.  A merge
 * never reaches the segment at committed or past it, never merges a
 * damaged segment, and stops at MERGE_MAX bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "queue.h"

#define MERGE_MIN 64
#define MERGE_SMALL (256u << 10)
#define MERGE_MAX (4u << 20)

struct small {
	uint64_t first, count;
	size_t size;
};

/* The segments of log/ from `from` on, in order, with their ranges (read
 * from their first lines); names that an earlier segment covers (a merge
 * that died before its unlinks) are unlinked on the way. */
static int
list_log(int logfd, uint64_t from, struct small **out, size_t *n)
{
	struct mq_names names = { 0 };
	*out = NULL;
	*n = 0;
	if (mq_names_read(logfd, NULL, &names) < 0)
		return -1;
	struct small *v = calloc(names.n ? names.n : 1, sizeof *v);
	if (!v) {
		mq_names_free(&names);
		return mq_err_sys("malloc");
	}
	uint64_t end = 0;
	for (size_t i = 0; i < names.n; i++) {
		uint64_t first;
		struct mq_seg sg;
		struct stat st;
		/* Names sort in sequence order: 20 digits each. */
		if (mq_seg_name(names.v[i], &first) < 0 || first < from ||
		    mq_seglog_line(logfd, names.v[i], first, &sg, &st) < 0)
			continue;
		if (*n && first < end) {
			mq_unlinkat(logfd, names.v[i], 0);
			continue;
		}
		/* The file's own size: one that is not what its line says
		 * is damaged, and add_segment refuses it. */
		v[(*n)++] = (struct small){ first, sg.count, (size_t)st.st_size };
		end = first + sg.count;
	}
	mq_names_free(&names);
	*out = v;
	return 0;
}

/* Appends the records of segment log/<s->first> to w, each checked. */
static int
add_segment(int logfd, const struct small *s, struct mq_seg_writer *w)
{
	char name[MQ_SEQ_DIGITS + 1], *buf = malloc(s->size ? s->size : 1);
	if (!buf)
		return mq_err_sys("malloc");
	snprintf(name, sizeof name, "%020" PRIu64, s->first);
	int fd = mq_file_open(logfd, name, O_RDONLY, 0, NULL);
	ssize_t r = fd < 0 ? -1 : mq_read_full(fd, buf, s->size);
	if (fd >= 0)
		close(fd);
	struct mq_seg sg;
	int rc = r < 0 || (size_t)r != s->size ? -1 :
	    mq_seg_open_bytes(buf, s->size, name, &sg);
	size_t off = mq_seg_start();
	uint64_t seq = 0;
	struct mq_seg_rec rec;
	while (rc == 0 && (rc = mq_seg_next(&sg, &off, &seq, &rec)) == 1)
		rc = rec.hash_ok ? mq_seg_add(w, rec.hdr, rec.hdr_len, rec.body,
		    rec.body_len) : -1;
	free(buf);
	return rc;
}

/* Merges the run v[a..b) into log/<v[a].first>. */
static int
merge_run(int logfd, int tmpfd, const struct small *v, size_t a, size_t b)
{
	struct mq_seg_writer w;
	char tmp[32 + MQ_SEQ_DIGITS], name[MQ_SEQ_DIGITS + 1];
	if (mq_seg_begin(&w, v[a].first) < 0)
		return -1;
	int rc = 0;
	for (size_t i = a; rc == 0 && i < b; i++)
		rc = add_segment(logfd, &v[i], &w);
	if (rc == 0)
		rc = mq_seg_finish(&w);
	snprintf(name, sizeof name, "%020" PRIu64, v[a].first);
	snprintf(tmp, sizeof tmp, "merge.%s", name);
	int fd = rc < 0 ? -1 : mq_openat(tmpfd, tmp, O_WRONLY | O_CREAT |
	    O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	struct iovec iov = { w.buf, w.len };
	if (rc == 0 && (fd < 0 || mq_write_all(fd, &iov, 1) < 0 ||
	    fdatasync(fd) < 0))
		rc = mq_err_sys("merge into tmp/%s", tmp);
	if (fd >= 0)
		close(fd);
	mq_seg_writer_free(&w);
	/* The commit point: log/<a> now holds the whole run. */
	if (rc == 0 && mq_renameat(tmpfd, tmp, logfd, name) < 0)
		rc = mq_err_sys("merge onto log/%s", name);
	if (rc < 0) {
		mq_unlinkat(tmpfd, tmp, 0);
		return -1;
	}
	if (mq_fsync_fd(logfd) < 0)
		return -1;
	for (size_t i = a + 1; i < b; i++) {
		snprintf(name, sizeof name, "%020" PRIu64, v[i].first);
		mq_unlinkat(logfd, name, 0);
	}
	return 0;
}

/* What a merge that died before its rename left in tmp/ (under the merge
 * lock: no other merge is writing). */
static void
sweep_merges(int tmpfd)
{
	struct mq_names l = { 0 };
	if (mq_names_read(tmpfd, NULL, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			if (!strncmp(l.v[i], "merge.", 6))
				mq_unlinkat(tmpfd, l.v[i], 0);
	mq_names_free(&l);
}

/* tmp/.merge's line, a hint (a crash, a lost count or a line that does
 * not check cost a merge later, never a record): the small segments
 * linked since the last look, and where the next look starts.
 *   mq-merge 2 small=<10 digits> from=<20 digits> sum=<8 hex>\n */
struct merge_state {
	unsigned small;
	uint64_t from;
};

#define STATE_BODY 53       /* "mq-merge 2 small=" 10 " from=" 20 */
#define STATE_LEN (STATE_BODY + 14)

static int
state_format(const struct merge_state *m, char buf[STATE_LEN + 1])
{
	int n = snprintf(buf, STATE_LEN + 1, "mq-merge 2 small=%010u from=%020"
	    PRIu64, m->small, m->from);
	return mq_line_seal(buf, STATE_LEN + 1, n, STATE_BODY, "merge count");
}

static void
state_read(int fd, struct merge_state *m)
{
	char buf[STATE_LEN + 2], expect[STATE_LEN + 1];
	struct merge_state r;
	ssize_t len = pread(fd, buf, sizeof buf - 1, 0);
	*m = (struct merge_state){ 0, 0 };
	if (len != STATE_LEN)
		return;
	buf[len] = 0;
	if (sscanf(buf, "mq-merge 2 small=%10u from=%20" SCNu64, &r.small,
	    &r.from) != 2 || r.small > MERGE_MIN || r.from > MQ_SEQ_MAX ||
	    state_format(&r, expect) < 0)
		return;
	if (!memcmp(buf, expect, STATE_LEN))
		*m = r;
}

static void
state_write(int fd, const struct merge_state *m)
{
	char buf[STATE_LEN + 1];
	/* A hint: not synced, and a failed write is a merge later. */
	if (state_format(m, buf) < 0 || pwrite(fd, buf, STATE_LEN, 0) < 0)
		return;
}

/* Looks at log/ from m->from: merges the first run of small segments
 * below committed, and moves m->from to where the next look may find
 * one (the run merged, else the small segments at the log's end: one
 * between two large ones never merges). */
static int
look(int logfd, int tmpfd, uint64_t committed, struct merge_state *m)
{
	struct small *v = NULL;
	size_t n = 0;
	int rc = list_log(logfd, m->from, &v, &n);
	size_t tail = n;
	while (tail > 0 && v[tail - 1].size < MERGE_SMALL &&
	    (tail == n || v[tail].first == v[tail - 1].first + v[tail - 1].count))
		tail--;
	m->small = 0;
	if (n)
		m->from = tail < n ? v[tail].first : v[n - 1].first + v[n - 1].count;
	for (size_t a = 0; rc == 0 && a < n; a++) {
		size_t b = a, bytes = 0;
		while (b < n && v[b].size < MERGE_SMALL &&
		    v[b].first + v[b].count <= committed &&
		    bytes + v[b].size <= MERGE_MAX &&
		    (b == a || v[b].first == v[b - 1].first + v[b - 1].count))
			bytes += v[b++].size;
		if (b - a >= 2) {
			rc = merge_run(logfd, tmpfd, v, a, b);
			/* More runs after it: the next publish looks on. */
			m->from = v[a].first;
			if (b + 1 < n)
				m->small = MERGE_MIN - 1;
			break;
		}
	}
	free(v);
	return rc;
}

int
mq_seg_merge(const struct mq_topic *t, unsigned k, uint64_t committed)
{
	int tmpfd = mq_dir_open(t->pfd[k], "tmp");
	if (tmpfd < 0)
		return -1;
	int lfd = mq_openat(tmpfd, ".merge", O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0666);
	int rc = lfd < 0 ? mq_err_sys("tmp/.merge") :
	    mq_lock_take(lfd, MQ_LOCK_WRITE, 0, "tmp/.merge");
	struct merge_state m;
	if (rc == 1) {
		/* What a merge killed left goes at once: tmp/ is small. */
		sweep_merges(tmpfd);
		state_read(lfd, &m);
		if (++m.small >= MERGE_MIN) {
			int logfd = mq_dir_open(t->pfd[k], "log");
			rc = logfd < 0 ? -1 : look(logfd, tmpfd, committed, &m);
			if (logfd >= 0)
				close(logfd);
		}
		state_write(lfd, &m);
	}
	if (lfd >= 0)
		close(lfd);
	close(tmpfd);
	return rc < 0 ? -1 : 0;
}
