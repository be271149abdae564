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
 *
 * Anyone who can write the spool can truncate a file under a process
 * that has it mapped, and touching a page past the end of a file raises
 * SIGBUS, which would kill a publisher in the middle of its stream.
 * Checking the size first cannot help (it can shrink right after), so
 * every access to a mapping runs in guarded(): a SIGBUS handler jumps
 * back out of it (sigsetjmp without the signal mask: no system call, so
 * counting stays nearly free), and that file is counted no more (said
 * once on stderr) or, when reading, left out.  The handler is installed
 * with the first mapping; a SIGBUS outside guarded() goes to whatever
 * handled it before.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"

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

/* Where a SIGBUS in guarded() returns to (NULL outside); initial-exec, so
 * that the handler's access allocates nothing. */
static _Thread_local sigjmp_buf *guard
    __attribute__((tls_model("initial-exec")));
static struct sigaction before;         /* SIGBUS, as it was */
static bool handling;

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (guard)
		siglongjmp(*guard, 1);
	/* Not a counter: as if we were not there.  A fault comes again
	 * when the instruction does; a signal sent is sent again. */
	int saved = errno;
	sigaction(SIGBUS, &before, NULL);
	if (si->si_code <= 0)
		raise(sig);
	errno = saved;
}

static void
install(void)
{
	/* SA_NODEFER: jumping out leaves SIGBUS unblocked, as it was. */
	struct sigaction sa = { .sa_sigaction = on_sigbus,
	    .sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK };
	sigemptyset(&sa.sa_mask);
	handling = sigaction(SIGBUS, &sa, &before) == 0;
}

/* Runs fn(arg), which touches a mapping: false if the file was truncated
 * under it (fn stopped where it was). */
static bool
guarded(void (*fn)(void *), void *arg)
{
	sigjmp_buf env;
	if (sigsetjmp(env, 0)) {
		guard = NULL;
		return false;
	}
	guard = &env;
	/* No access to the mapping moves out of the guarded stretch. */
	atomic_signal_fence(memory_order_seq_cst);
	fn(arg);
	atomic_signal_fence(memory_order_seq_cst);
	guard = NULL;
	return true;
}

static bool
disabled(void)
{
	const char *e = getenv("MQ_STATS");
	return e && !strcmp(e, "off");
}

struct header_check {
	const struct cfile *f;
	bool ours;
};

static void
header_check(void *p)
{
	struct header_check *h = p;
	h->ours = !memcmp(h->f->magic, MAGIC, 8) && h->f->order == ORDER &&
	    h->f->size == sizeof *h->f;
}

/* A file made by this version, whole: mapped, else NULL. */
static struct cfile *
map_file(int fd, int prot)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct stat sb;
	pthread_once(&once, install);
	if (!handling || fstat(fd, &sb) < 0 ||
	    sb.st_size != (off_t)sizeof(struct cfile))
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
	struct header_check h = { f, false };
	if (!guarded(header_check, &h) || !h.ours) {
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
	if (sp->readonly)
		return NULL;            /* a monitor counts nothing */
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
	if (had > minute || mq_lock_take(c->fd, MQ_LOCK_FLOCK_EX, 1,
	    "counters") < 0)
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
	mq_lock_drop(c->fd, MQ_LOCK_FLOCK_EX);
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

/* One publish (n messages) or one ack (us: its latency), added. */
struct count {
	struct mq_counter *c;
	uint64_t n, us;
	bool ack;
	double now;
};

static void
count_in(void *p)
{
	const struct count *o = p;
	add(&o->c->f->total, o->n);
	if (o->ack)
		add(&o->c->f->sum_us, o->us);
	struct slot *s = slot_for(o->c, o->now);
	if (!s)
		return;
	add(&s->count, o->n);
	if (!o->ack)
		return;
	add(&s->sum_us, o->us);
	add(&s->hist[bucket_of(o->us)], 1);
	raise_to(&s->max_us, o->us);
}

static void
count(struct count *o)
{
	static bool said;
	struct mq_counter *c = o->c;
	if (guarded(count_in, o))
		return;
	if (!said)
		fprintf(stderr, "%s: not counted for mq-stat: the counters file "
		    "was truncated\n", getprogname());
	said = true;
	munmap(c->f, sizeof *c->f);
	close(c->fd);                   /* and its lock, if slot_for had it */
	c->f = NULL;
	c->fd = -1;
}

void
mq_count_published(mq_spool *sp, const char *topic, uint64_t n, double now)
{
	struct mq_counter *c = n ? counter_get(sp, topic, NULL) : NULL;
	if (c)
		count(&(struct count){ .c = c, .n = n, .now = now });
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
	count(&(struct count){ .c = c, .n = 1, .us = us, .ack = true,
	    .now = now });
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

struct snapshot {
	const struct cfile *f;
	struct cfile *copy;
};

/* Copies a mapped file, each slot whole or not at all (minute 0). */
static void
snapshot_in(void *p)
{
	const struct snapshot *sn = p;
	const struct cfile *f = sn->f;
	struct cfile *c = sn->copy;
	c->total = __atomic_load_n(&f->total, __ATOMIC_RELAXED);
	c->sum_us = __atomic_load_n(&f->sum_us, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < SLOTS; i++) {
		uint64_t m = __atomic_load_n(&f->slot[i].minute,
		    __ATOMIC_ACQUIRE);
		c->slot[i].minute = slot_read(&f->slot[i], m, &c->slot[i],
		    true) ? m : 0;
	}
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
	int fd = mq_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", path);
	struct mq_names l = { 0 };
	int rc = mq_names_read(fd, NULL, &l);
	double count[SLOTS] = { 0 };
	struct slot *w = calloc(1, sizeof *w);
	struct cfile *copy = malloc(sizeof *copy);
	if (rc == 0 && (!w || !copy))
		rc = mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		int ffd = mq_file_open(fd, l.v[i], O_RDONLY, 0, NULL);
		struct cfile *f = ffd < 0 ? NULL : map_file(ffd, PROT_READ);
		if (ffd >= 0)
			close(ffd);
		if (!f)
			continue;               /* being made, or another layout */
		/* Truncated while being read: as if it were not there. */
		bool whole = guarded(snapshot_in, &(struct snapshot){ f, copy });
		munmap(f, sizeof *f);
		if (!whole)
			continue;
		out->hosts++;
		file_add(copy, now, out, count, w, latency);
	}
	free(copy);
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
