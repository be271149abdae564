/*
 * counters.c: how many messages were published and acked, and how long
 * each waited between its publish and its ack, for mq-stat(1).
 *
 * Each host keeps one file per topic (publishes) and one per group (acks
 * and their latencies), mapped shared and updated with atomic adds: no
 * lock and no system call per message, so publishers and consumers do
 * not slow down, and a reader only reads (mq-spool(5), COUNTERS).  A
 * file per host because a shared mapping is coherent only within one
 * host: on NFS each host writes its own and readers add them up.
 *
 * Rates and percentiles come from a ring of one-minute slots; the
 * minute a slot counts is written last, after its figures were zeroed,
 * so a reader takes a slot only when its minute is the one it wants.
 * Zeroing a slot for a new minute is the one step that takes a lock
 * (flock on the file), once a minute at most.
 *
 * Counting is best effort and never fails an operation: a spool this
 * process cannot write to, or a file of another layout, is not counted.
 * A file system that cannot map files shared (GlusterFS mounted with
 * direct-io-mode=enable: ENODEV) is said once per process on stderr, so
 * that figures missing from mq-stat are never a surprise.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define SLOTS 16                        /* minutes: now and 15 before */
#define BUCKETS 336                     /* latencies up to 2^44 us */
#define MAGIC "mqcount1"
#define ORDER 0x01020304u

struct slot {
	uint64_t minute;                /* since the epoch; 0 unused */
	uint64_t count, sum_us, max_us;
	uint64_t hist[BUCKETS];
};

struct cfile {
	char magic[8];
	uint32_t order;                 /* ORDER in the writer's byte order */
	uint32_t size;                  /* sizeof (struct cfile) */
	uint64_t total, sum_us;         /* since the file was made */
	uint64_t reserved[4];
	struct slot slot[SLOTS];
};
_Static_assert(sizeof(struct cfile) == 43584, "the size mq-spool(5) gives");

/* An open counter file, cached on the spool handle. */
struct mq_counter {
	struct mq_counter *next;
	char *topic, *group;            /* group NULL: the topic's publishes */
	int fd;                         /* -1: not counted */
	struct cfile *f;
};

/* Latencies in microseconds go to buckets of 1/8 of a power of two:
 * exact below 8 us, then at most 12.5% wide. */
static unsigned
bucket_of(uint64_t us)
{
	if (us < 8)
		return (unsigned)us;
	unsigned e = 63 - (unsigned)__builtin_clzll(us);
	unsigned b = (e - 2) * 8 + (unsigned)((us >> (e - 3)) & 7);
	return b < BUCKETS ? b : BUCKETS - 1;
}

/* The smallest latency above bucket b. */
static uint64_t
bucket_end(unsigned b)
{
	if (b < 8)
		return b + 1;
	return (uint64_t)(9 + b % 8) << (b / 8 - 1);
}

static bool
disabled(void)
{
	const char *e = getenv("MQ_STATS");
	return e && !strcmp(e, "off");
}

/* A file made by this version, whole: mapped, else NULL. */
static struct cfile *
map_file(int fd, int prot)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0 || sb.st_size != (off_t)sizeof(struct cfile))
		return NULL;
	struct cfile *f = mmap(NULL, sizeof *f, prot, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED) {
		static bool said;
		if (!said)
			fprintf(stderr, "%s: not counted for mq-stat on this "
			    "host: cannot map the counters: %s\n", getprogname(),
			    strerror(errno));
		said = true;
		return NULL;
	}
	if (memcmp(f->magic, MAGIC, 8) || f->order != ORDER ||
	    f->size != sizeof *f) {
		munmap(f, sizeof *f);
		return NULL;
	}
	return f;
}

/* Opens this host's file in dir (made if missing).  Every process makes
 * the same header, so two that make the file at once agree, and one
 * that finds it empty (its maker died) finishes it. */
static int
counter_open(mq_spool *sp, struct mq_counter *c)
{
	char dir[2 * MQ_NAME_MAX + 32], host[MQ_HOST_MAX];
	if ((c->group ? mq_path(dir, sizeof dir, "%s/groups/%s.stats",
	    c->topic, c->group) : mq_path(dir, sizeof dir, "%s/stats",
	    c->topic)) < 0)
		return -1;
	int dfd;
	if (mq_mkdir(sp->topics, dir) < 0 ||
	    (dfd = mq_dir_open(sp->topics, dir)) < 0)
		return -1;
	mq_hostname(host);
	struct stat sb;
	int fd = mq_file_open(dfd, host, O_RDWR | O_CREAT, 0666, &sb);
	close(dfd);
	if (fd < 0)
		return -1;
	if (sb.st_size == 0) {
		struct cfile h = { .order = ORDER, .size = sizeof h };
		memcpy(h.magic, MAGIC, 8);
		if (ftruncate(fd, sizeof h) < 0 ||
		    pwrite(fd, &h, offsetof(struct cfile, total), 0) < 0) {
			close(fd);
			return -1;
		}
	}
	if (!(c->f = map_file(fd, PROT_READ | PROT_WRITE))) {
		close(fd);
		return -1;
	}
	c->fd = fd;
	return 0;
}

static struct mq_counter *
counter_get(mq_spool *sp, const char *topic, const char *group)
{
	struct mq_counter **pp = &sp->counters;
	for (struct mq_counter *c = *pp; c; pp = &c->next, c = c->next)
		if (!strcmp(c->topic, topic) && (group ? c->group &&
		    !strcmp(c->group, group) : !c->group)) {
			*pp = c->next;          /* most recent first */
			c->next = sp->counters;
			sp->counters = c;
			return c->fd >= 0 ? c : NULL;
		}
	struct mq_counter *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = -1;
	if (!(c->topic = strdup(topic)) || (group && !(c->group =
	    strdup(group)))) {
		free(c->topic);
		free(c);
		return NULL;
	}
	c->next = sp->counters;
	sp->counters = c;
	int saved = errno;
	if (disabled() || counter_open(sp, c) < 0)
		c->fd = -1;
	errno = saved;
	return c->fd >= 0 ? c : NULL;
}

/* The slot of now's minute, zeroed first if it still counts an older
 * one; NULL when now is older than what the slot counts (a clock set
 * back): then only the totals count. */
static struct slot *
slot_for(struct mq_counter *c, double now)
{
	uint64_t minute = (uint64_t)(now / 60);
	struct slot *s = &c->f->slot[minute % SLOTS];
	uint64_t had = __atomic_load_n(&s->minute, __ATOMIC_ACQUIRE);
	if (had == minute)
		return s;
	if (had > minute || flock(c->fd, LOCK_EX) < 0)
		return NULL;
	if (__atomic_load_n(&s->minute, __ATOMIC_ACQUIRE) < minute) {
		__atomic_store_n(&s->minute, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->sum_us, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->max_us, 0, __ATOMIC_RELAXED);
		for (unsigned b = 0; b < BUCKETS; b++)
			__atomic_store_n(&s->hist[b], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->minute, minute, __ATOMIC_RELEASE);
	}
	flock(c->fd, LOCK_UN);
	return __atomic_load_n(&s->minute, __ATOMIC_ACQUIRE) == minute ? s :
	    NULL;
}

static void
add(uint64_t *p, uint64_t n)
{
	__atomic_fetch_add(p, n, __ATOMIC_RELAXED);
}

static void
raise_to(uint64_t *p, uint64_t v)
{
	uint64_t had = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > had && !__atomic_compare_exchange_n(p, &had, v, true,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void
mq_count_published(mq_spool *sp, const char *topic, uint64_t n, double now)
{
	struct mq_counter *c = n ? counter_get(sp, topic, NULL) : NULL;
	if (!c)
		return;
	add(&c->f->total, n);
	struct slot *s = slot_for(c, now);
	if (s)
		add(&s->count, n);
}

void
mq_count_acked(mq_spool *sp, const char *topic, const char *group,
    double now, double published)
{
	struct mq_counter *c = counter_get(sp, topic, group);
	if (!c)
		return;
	/* A clock behind the publisher's is no negative latency. */
	uint64_t us = now > published ? (uint64_t)llround((now - published) *
	    1e6) : 0;
	add(&c->f->total, 1);
	add(&c->f->sum_us, us);
	struct slot *s = slot_for(c, now);
	if (!s)
		return;
	add(&s->count, 1);
	add(&s->sum_us, us);
	add(&s->hist[bucket_of(us)], 1);
	raise_to(&s->max_us, us);
}

void
mq_counters_close(mq_spool *sp)
{
	while (sp->counters) {
		struct mq_counter *c = sp->counters;
		sp->counters = c->next;
		if (c->fd >= 0) {
			munmap(c->f, sizeof *c->f);
			close(c->fd);
		}
		free(c->topic);
		free(c->group);
		free(c);
	}
}

/* Reading: every host's file in the directory, added up. */

static const unsigned windows[3] = { 1, 5, 15 };

/* A slot's figures, if it counts minute (read with its minute checked
 * before and after, so a slot being zeroed is not taken). */
static bool
slot_read(const struct slot *s, uint64_t minute, struct slot *out,
    bool hist)
{
	if (__atomic_load_n(&s->minute, __ATOMIC_ACQUIRE) != minute)
		return false;
	out->count = __atomic_load_n(&s->count, __ATOMIC_RELAXED);
	out->sum_us = __atomic_load_n(&s->sum_us, __ATOMIC_RELAXED);
	out->max_us = __atomic_load_n(&s->max_us, __ATOMIC_RELAXED);
	for (unsigned b = 0; hist && b < BUCKETS; b++)
		out->hist[b] = __atomic_load_n(&s->hist[b], __ATOMIC_RELAXED);
	return __atomic_load_n(&s->minute, __ATOMIC_ACQUIRE) == minute;
}

/* Adds one file's figures: per-minute counts into count[j] (minute now
 * less j) and the latency window's histogram into w. */
static void
file_add(const struct cfile *f, double now, struct mq_counts *out,
    double count[SLOTS], struct slot *w, bool hist)
{
	uint64_t minute = (uint64_t)(now / 60);
	out->total += __atomic_load_n(&f->total, __ATOMIC_RELAXED);
	out->sum += (double)__atomic_load_n(&f->sum_us, __ATOMIC_RELAXED) /
	    1e6;
	struct slot *s = malloc(sizeof *s);
	if (!s)
		return;
	for (unsigned j = 0; j < SLOTS && j < minute; j++) {
		bool in_window = hist && j <= MQ_LATENCY_MINUTES;
		if (!slot_read(&f->slot[(minute - j) % SLOTS], minute - j, s,
		    in_window))
			continue;
		count[j] += (double)s->count;
		if (!in_window)
			continue;
		w->count += s->count;
		if (s->max_us > w->max_us)
			w->max_us = s->max_us;
		for (unsigned b = 0; b < BUCKETS; b++)
			w->hist[b] += s->hist[b];
	}
	free(s);
}

/* The q quantile of the window, in seconds: the end of the bucket that
 * holds it, but no more than the largest latency seen. */
static double
quantile(const struct slot *w, double q)
{
	uint64_t rank = (uint64_t)ceil(q * (double)w->count), seen = 0;
	if (rank == 0)
		rank = 1;
	for (unsigned b = 0; b < BUCKETS; b++)
		if ((seen += w->hist[b]) >= rank) {
			uint64_t end = bucket_end(b) - 1;
			return (double)(end < w->max_us ? end : w->max_us) / 1e6;
		}
	return (double)w->max_us / 1e6;
}

int
mq_counts_read(int dirfd, const char *path, bool latency, double now,
    struct mq_counts *out)
{
	memset(out, 0, sizeof *out);
	for (unsigned i = 0; i < 4; i++)
		out->latency[i] = -1;
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", path);
	struct mq_names l = { 0 };
	int rc = mq_names_read(fd, NULL, &l);
	double count[SLOTS] = { 0 };
	struct slot *w = calloc(1, sizeof *w);
	if (rc == 0 && !w)
		rc = mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		int ffd = mq_file_open(fd, l.v[i], O_RDONLY, 0, NULL);
		struct cfile *f = ffd < 0 ? NULL : map_file(ffd, PROT_READ);
		if (ffd >= 0)
			close(ffd);
		if (!f)
			continue;               /* being made, or another layout */
		out->hosts++;
		file_add(f, now, out, count, w, latency);
		munmap(f, sizeof *f);
	}
	mq_names_free(&l);
	close(fd);
	if (rc < 0) {
		free(w);
		return -1;
	}
	/* A window of n minutes: the minute so far, the n - 1 before it,
	 * and of minute n before the part that is still within n * 60 s. */
	double into = (now - floor(now / 60) * 60) / 60;
	for (unsigned i = 0; i < 3; i++) {
		double sum = 0;
		for (unsigned j = 0; j < windows[i]; j++)
			sum += count[j];
		sum += (1 - into) * count[windows[i]];
		out->rate[i] = sum / (windows[i] * 60.0);
	}
	if (w->count) {
		out->latency[0] = quantile(w, 0.50);
		out->latency[1] = quantile(w, 0.90);
		out->latency[2] = quantile(w, 0.99);
		out->latency[3] = (double)w->max_us / 1e6;
		out->window_count = w->count;
	}
	free(w);
	return 0;
}
