/*
 * groupinfo.c: what a group is and where it stands (mq-group list|info),
 * and the sizes mq-topic info shows.
 *
 * Everything here only reads the spool and takes no lock, so the figures
 * are a snapshot that may be out of date when they are printed.  Each
 * partition's head is read first: names whose sequence number is not
 * below its committed value belong to a publish in progress and are not
 * counted, as consumers do not see them either.  A name that moves while
 * the directories are listed (a claim, an ack) may be counted in neither
 * or both of its places.
 *
 * The group's offset in a partition is the lowest sequence number among
 * its committed names in new/, cur/ and delay/: the oldest message it has
 * not settled.  With none, it is the head's committed value.  Dead letters
 * are settled and do not hold the offset back.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "info.h"

static int
opendir_at(int dirfd, const char *path)
{
	return mq_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/* Lists a directory that may be missing (then it is empty). */
static int
names_maybe(int dirfd, const char *path, struct mq_names *l)
{
	int fd = opendir_at(dirfd, path);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", path);
	int rc = mq_names_read(fd, NULL, l);
	close(fd);
	return rc;
}

/* A member's name in a members directory: its name, and live or not. */
static bool
member_live(const char *name, uint64_t now_ms, char *member, size_t len,
    uint64_t *deadline)
{
	return mq_owner_parse(name, member, len, deadline) == 0 &&
	    strcmp(member, "-") && *deadline > now_ms;
}

uint64_t
mq_log_bytes(int pfd, uint64_t committed)
{
	int fd = opendir_at(pfd, "log");
	if (fd < 0)
		return 0;
	struct mq_names l = { 0 };
	uint64_t bytes = 0, seq;
	struct stat st;
	if (mq_names_read(fd, NULL, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			if (mq_seq_of(l.v[i], &seq) == 0 && seq < committed &&
			    mq_fstatat(fd, l.v[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
				bytes += (uint64_t)st.st_size;
	mq_names_free(&l);
	close(fd);
	return bytes;
}

static void
oldest(uint64_t seq, uint64_t *low)
{
	if (seq < *low)
		*low = seq;
}

/* Keeps the earliest nonzero time in *t. */
static void
earliest(double x, double *t)
{
	if (x > 0 && (*t == 0 || x < *t))
		*t = x;
}

/* What count_partition has found so far, and in which directory. */
struct tally {
	struct mq_partition_group *p;
	uint64_t committed, low;
	enum { NEW, CUR, DELAY, DLQ } dir;
};

static void
tally_name(const char *name, struct tally *t)
{
	struct mq_partition_group *p = t->p;
	struct mq_entry e;
	uint64_t seq, due;
	if (t->dir == DLQ) {
		if (mq_entry_parse(name, &e) == 0 && !e.claimed)
			p->dead++;
		return;
	}
	int ok = t->dir == DELAY ? mq_delay_parse(name, &due, &e) :
	    mq_entry_parse(name, &e);
	if (ok < 0 || mq_seq_of(e.key, &seq) < 0 || seq >= t->committed)
		return;
	oldest(seq, &t->low);
	if (t->dir == NEW && !e.claimed) {
		p->pending++;
		earliest(mq_key_time(e.key), &p->oldest_pending);
	} else if (t->dir == CUR && e.claimed) {
		p->inflight++;
		if (!p->lease_soonest_ms || e.deadline_ms < p->lease_soonest_ms)
			p->lease_soonest_ms = e.deadline_ms;
	} else if (t->dir == DELAY)
		p->delayed++;
}

/* Tallies each name of a directory that may be missing (then it has none)
 * as it is read.  Counting needs neither a copy of the names nor their
 * order: with a million names, mq_names_read's copies, sort and frees
 * took twice as long as the listing. */
static int
tally_dir(int dirfd, const char *path, struct tally *t)
{
	int fd = opendir_at(dirfd, path);
	if (fd < 0)
		return errno == ENOENT ? 0 : mq_err_sys("%s", path);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return mq_err_sys("%s", path);
	}
	struct dirent *de;
	/* tally_name may set errno (mq_delay_parse calls strtoull). */
	for (errno = 0; (de = readdir(d)); errno = 0)
		if (de->d_name[0] != '.')
			tally_name(de->d_name, t);
	int rc = errno ? mq_err_sys("%s", path) : 0;
	closedir(d);
	return rc;
}

/* Counts the group's names in partition k against head committed c. */
static int
count_partition(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t c, struct mq_partition_group *p)
{
	static const char *const dirs[] = { "new", "cur", "delay" };
	char path[MQ_NAME_MAX + 16];
	struct tally ta = { .p = p, .committed = c, .low = c };
	int rc = 0;
	p->head = c;
	for (ta.dir = NEW; rc == 0 && ta.dir <= DLQ; ta.dir++) {
		rc = ta.dir == DLQ ? mq_path(path, sizeof path, "dlq/%s", group) :
		    mq_path(path, sizeof path, "g/%s/%s", group, dirs[ta.dir]);
		if (rc == 0)
			rc = tally_dir(t->pfd[k], path, &ta);
	}
	p->offset = ta.low;
	p->lag = c - ta.low;
	return rc;
}

/* Format 2: the names count below the group's cursor, and what the log
 * holds past it is pending too (not yet fed, its filter not yet applied:
 * feed.c); the head is the log's end.  O(its queue), not O(the log). */
static int
count_format2(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t hint, struct mq_partition_group *p)
{
	uint64_t end, cursor;
	if (mq_topic_log_end(t, k, hint, &end) < 0 ||
	    mq_feed_cursor(t, k, group, end, &cursor) < 0)
		return -1;
	if (cursor > end)
		end = cursor;
	int rc = count_partition(t, k, group, cursor, p);
	p->pending += end - cursor;
	/* What claims hold and have not settled is in flight (claims.c). */
	struct mq_claims_count cc;
	if (rc == 0)
		rc = mq_claims_count(t, k, group, &cc);
	if (rc == 0 && cc.n) {
		p->inflight += cc.inflight;
		if (isfinite(cc.earliest) && (!p->lease_soonest_ms ||
		    (uint64_t)(cc.earliest * 1000) < p->lease_soonest_ms))
			p->lease_soonest_ms = (uint64_t)(cc.earliest * 1000);
		if (cc.low < p->offset)
			p->offset = cc.low;
	}
	/* The oldest not yet fed is the record at the cursor. */
	struct mq_msg *m;
	if (rc == 0 && end > cursor && p->oldest_pending == 0 &&
	    mq_record_read(t, k, cursor, NULL, &m) == 0) {
		earliest(mq_id_time(m->id), &p->oldest_pending);
		mq_msg_free(m);
	}
	p->head = end;
	p->lag = end - p->offset;
	return rc;
}

/* The live owner of partition k of an ordered group, if any. */
static int
read_owner(const struct mq_topic *t, unsigned k, const char *group,
    uint64_t now_ms, struct mq_partition_group *p)
{
	char path[MQ_NAME_MAX + 16], member[MQ_MEMBER_MAX + 1];
	uint64_t deadline;
	struct mq_names l = { 0 };
	int rc = mq_path(path, sizeof path, "g/%s/own", group);
	if (rc == 0)
		rc = names_maybe(t->pfd[k], path, &l);
	for (size_t i = 0; rc == 0 && i < l.n && !p->owner; i++) {
		if (!member_live(l.v[i], now_ms, member, sizeof member,
		    &deadline))
			continue;
		if (!(p->owner = strdup(member)))
			rc = mq_err_sys("malloc");
		p->owner_deadline_ms = deadline;
	}
	mq_names_free(&l);
	return rc;
}

int
mq_members_alive(int dirfd, const char *path, uint64_t now_ms,
    unsigned *alive)
{
	char member[MQ_MEMBER_MAX + 1];
	uint64_t deadline;
	struct mq_names l = { 0 };
	*alive = 0;
	int rc = names_maybe(dirfd, path, &l);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		if (member_live(l.v[i], now_ms, member, sizeof member, &deadline))
			++*alive;
	mq_names_free(&l);
	return rc;
}

/* The live members of a group and the partitions each owns (ordered). */
static int
read_members(const struct mq_topic *t, const char *group, uint64_t now_ms,
    struct mq_group_info *gi)
{
	char path[MQ_NAME_MAX + 32], member[MQ_MEMBER_MAX + 1];
	uint64_t deadline;
	struct mq_names l = { 0 };
	int rc = mq_path(path, sizeof path, "groups/%s.members", group);
	if (rc == 0)
		rc = names_maybe(t->fd, path, &l);
	if (rc == 0 && l.n && !(gi->members = calloc(l.n, sizeof *gi->members)))
		rc = mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		if (!member_live(l.v[i], now_ms, member, sizeof member,
		    &deadline))
			continue;
		struct mq_group_member *m = &gi->members[gi->nmembers++];
		m->deadline_ms = deadline;
		m->partitions = calloc(gi->npartitions, sizeof *m->partitions);
		if (!(m->name = strdup(member)) || !m->partitions) {
			rc = mq_err_sys("malloc");
			break;
		}
		for (unsigned k = 0; k < gi->npartitions; k++)
			if (gi->partitions[k].owner &&
			    !strcmp(gi->partitions[k].owner, member))
				m->partitions[m->npartitions++] = k;
	}
	mq_names_free(&l);
	return rc;
}

static int
copy_conf(const struct mq_topic *t, const char *group,
    struct mq_group_info *gi)
{
	struct mq_group_conf gc;
	struct mq_conf kv = { 0 };
	if (mq_group_settings(t, group, &gc) < 0 ||
	    mq_group_conf_read(t, group, &kv) < 0)
		return -1;
	gi->ordered = gc.ordered;
	gi->session = gc.session;
	gi->lease = gc.lease;
	gi->max_attempts = gc.max_attempts;
	gi->exactly_once = gc.exactly_once;
	const char *v;
	int rc = mq_conf_get_double(&kv, "created", 0, &gi->created,
	    "group conf");
	gi->from_start = (v = mq_conf_get(&kv, "from-start")) && !strcmp(v, "1");
	if (rc == 0 && (v = mq_conf_get(&kv, "filter")) &&
	    !(gi->filter = mq_conf_unescape(v)))
		rc = -1;
	if (rc == 0 && (v = mq_conf_get(&kv, "pattern")) &&
	    !(gi->pattern = strdup(v)))
		rc = mq_err_sys("malloc");
	if (rc == 0 && !(gi->state = strdup((v = mq_conf_get(&kv, "state")) ?
	    v : "ready")))
		rc = mq_err_sys("malloc");
	if (rc == 0 && kv.n && !(gi->match = calloc(kv.n, sizeof *gi->match)))
		rc = mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < kv.n; i++)
		if (!strcmp(kv.keys[i], "match") &&
		    !(gi->match[gi->nmatch++] = strdup(kv.vals[i])))
			rc = mq_err_sys("malloc");
	mq_conf_free(&kv);
	return rc;
}

/* mq_group_info on an open topic. */
int
mq_group_info_at(const struct mq_topic *t, const char *group,
    struct mq_group_info *gi)
{
	memset(gi, 0, sizeof *gi);
	unsigned np = t->conf.partitions;
	uint64_t now_ms = (uint64_t)(mq_now() * 1000);
	gi->npartitions = np;
	gi->topic = strdup(t->name);
	gi->group = strdup(group);
	gi->partitions = calloc(np, sizeof *gi->partitions);
	int rc = gi->topic && gi->group && gi->partitions ? 0 :
	    mq_err_sys("malloc");
	if (rc == 0)
		rc = copy_conf(t, group, gi);
	for (unsigned k = 0; rc == 0 && k < np; k++) {
		struct mq_partition_group *p = &gi->partitions[k];
		struct mq_head h;
		int hfd = mq_head_open(t->pfd[k], MQ_HEAD_READ);
		rc = hfd < 0 ? -1 : mq_head_read(hfd, &h);
		if (hfd >= 0)
			close(hfd);
		if (rc == 0 && t->conf.format == 2)
			rc = count_format2(t, k, group, h.committed, p);
		else if (rc == 0)
			rc = count_partition(t, k, group, h.committed, p);
		if (rc == 0 && gi->ordered)
			rc = read_owner(t, k, group, now_ms, p);
		gi->total.head += p->head;
		gi->total.lag += p->lag;
		gi->total.pending += p->pending;
		gi->total.inflight += p->inflight;
		gi->total.delayed += p->delayed;
		gi->total.dead += p->dead;
		earliest(p->oldest_pending, &gi->total.oldest_pending);
		if (p->lease_soonest_ms && (!gi->total.lease_soonest_ms ||
		    p->lease_soonest_ms < gi->total.lease_soonest_ms))
			gi->total.lease_soonest_ms = p->lease_soonest_ms;
	}
	if (rc == 0)
		rc = read_members(t, group, now_ms, gi);
	if (rc < 0)
		mq_group_info_free(gi);
	return rc;
}

int
mq_group_info(mq_spool *sp, const char *topic, const char *group,
    struct mq_group_info *gi)
{
	struct mq_topic t;
	memset(gi, 0, sizeof *gi);
	if (mq_name_check("group", group) < 0 ||
	    mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int rc = mq_group_info_at(&t, group, gi);
	mq_topic_close(&t);
	return rc;
}

void
mq_group_info_free(struct mq_group_info *gi)
{
	for (unsigned k = 0; gi->partitions && k < gi->npartitions; k++)
		free(gi->partitions[k].owner);
	for (size_t i = 0; i < gi->nmembers; i++) {
		free(gi->members[i].name);
		free(gi->members[i].partitions);
	}
	mq_strv_free(gi->match, gi->nmatch);
	free(gi->members);
	free(gi->partitions);
	free(gi->filter);
	free(gi->pattern);
	free(gi->state);
	free(gi->topic);
	free(gi->group);
	memset(gi, 0, sizeof *gi);
}

/* For mq_topic_info: the group's figures, from one look at its heads.
 * A group unsubscribed meanwhile keeps the counts it had. */
int
mq_group_stat_fill(const struct mq_topic *t, struct mq_group_stat *st)
{
	struct mq_group_info gi;
	if (mq_group_info_at(t, st->name, &gi) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	st->ordered = gi.ordered;
	st->pending = gi.total.pending;
	st->inflight = gi.total.inflight;
	st->delayed = gi.total.delayed;
	st->dead = gi.total.dead;
	st->lag = gi.total.lag;
	mq_group_info_free(&gi);
	return 0;
}

static int
ref_push(struct mq_group_ref **v, size_t *n, const char *topic,
    const char *group, int wildcard, int ordered)
{
	struct mq_group_ref *nv = reallocarray(*v, *n + 1, sizeof **v);
	if (!nv)
		return mq_err_sys("malloc");
	*v = nv;
	struct mq_group_ref *r = &nv[*n];
	r->topic = strdup(topic);
	r->group = strdup(group);
	r->wildcard = wildcard;
	r->ordered = ordered;
	if (!r->topic || !r->group) {
		free(r->topic);
		free(r->group);
		return mq_err_sys("malloc");
	}
	(*n)++;
	return 0;
}

/* SPOOL/wildcards/<pattern>/<group>.conf, patterns matching glob. */
static int
list_wildcards(mq_spool *sp, const char *glob, struct mq_group_ref **v,
    size_t *n)
{
	struct mq_names pats = { 0 };
	int rc = names_maybe(sp->fd, "wildcards", &pats);
	int wfd = rc == 0 && pats.n ? opendir_at(sp->fd, "wildcards") : -1;
	for (size_t i = 0; rc == 0 && wfd >= 0 && i < pats.n; i++) {
		if (glob && fnmatch(glob, pats.v[i], 0))
			continue;
		struct mq_names l = { 0 };
		int pfd = opendir_at(wfd, pats.v[i]);
		if (pfd >= 0)
			rc = mq_group_names_read(pfd, &l);
		for (size_t j = 0; rc == 0 && j < l.n; j++) {
			struct mq_conf kv;
			struct mq_group_conf gc = { 0 };
			char conf[MQ_NAME_MAX + 8];
			snprintf(conf, sizeof conf, "%s.conf", l.v[j]);
			if (mq_conf_read(pfd, conf, &kv) == 0) {
				mq_group_conf_parse(&kv, &gc);
				mq_conf_free(&kv);
			}
			int ordered = gc.ordered;
			rc = ref_push(v, n, pats.v[i], l.v[j], 1, ordered);
		}
		mq_names_free(&l);
		if (pfd >= 0)
			close(pfd);
	}
	if (wfd >= 0)
		close(wfd);
	mq_names_free(&pats);
	return rc;
}

int
mq_group_list(mq_spool *sp, const char *glob, struct mq_group_ref **out,
    size_t *n)
{
	char **topics;
	size_t nt;
	*out = NULL;
	*n = 0;
	if (mq_topic_list(sp, &topics, &nt) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < nt; i++) {
		struct mq_topic t;
		struct mq_names l = { 0 };
		if (glob && fnmatch(glob, topics[i], 0))
			continue;
		if (mq_topic_open_as(sp, topics[i], MQ_FORMAT_ANY, &t) < 0) {
			/* Deleted since it was listed. */
			rc = mq_errcode() == EX_NOINPUT ? 0 : -1;
			continue;
		}
		rc = mq_groups_read(&t, &l);
		for (size_t j = 0; rc == 0 && j < l.n; j++)
			rc = ref_push(out, n, topics[i], l.v[j], 0, 0);
		mq_names_free(&l);
		mq_topic_close(&t);
	}
	mq_strv_free(topics, nt);
	if (rc == 0)
		rc = list_wildcards(sp, glob, out, n);
	if (rc < 0) {
		mq_group_ref_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void
mq_group_ref_free(struct mq_group_ref *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].topic);
		free(v[i].group);
	}
	free(v);
}

/* Counts the committed entries of a directory: seq below committed. */
static uint64_t
count_committed(int dirfd, const char *path, uint64_t committed)
{
	int fd = mq_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct mq_names l = { 0 };
	uint64_t n = 0, seq;
	if (mq_names_read(fd, NULL, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			if (mq_seq_of(l.v[i], &seq) == 0 && seq < committed)
				n++;
	mq_names_free(&l);
	close(fd);
	return n;
}

int
mq_topic_info(mq_spool *sp, const char *name, struct mq_topic_info *info)
{
	struct mq_topic t;
	memset(info, 0, sizeof *info);
	if (mq_topic_open_as(sp, name, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	struct mq_names groups = { 0 };
	unsigned np = t.conf.partitions;
	info->name = strdup(name);
	info->conf = t.conf;
	info->partitions = calloc(np, sizeof *info->partitions);
	if (!info->name || !info->partitions || mq_groups_read(&t, &groups) < 0)
		goto fail;
	info->groups = calloc(groups.n ? groups.n : 1, sizeof *info->groups);
	if (!info->groups)
		goto fail;
	for (unsigned k = 0; k < np; k++) {
		struct mq_head h;
		int hfd = mq_head_open(t.pfd[k], MQ_HEAD_READ);
		if (hfd < 0 || mq_head_read(hfd, &h) < 0) {
			if (hfd >= 0)
				close(hfd);
			goto fail;
		}
		close(hfd);
		/* Format 2: the log's end, and its segments' first lines. */
		uint64_t records, bytes;
		if (t.conf.format == 2 && (mq_topic_log_end(&t, k, h.committed,
		    &h.committed) < 0 || mq_seglog_totals(t.seglog[k].logfd,
		    0, h.committed, &records, &bytes, NULL) < 0))
			goto fail;
		info->partitions[k].committed = h.committed;
		char pk[32], target[4096];
		snprintf(pk, sizeof pk, "p%u", k);
		ssize_t tl = readlinkat(t.fd, pk, target, sizeof target - 1);
		if (tl > 0) {
			target[tl] = 0;
			if (!(info->partitions[k].place = strdup(target)))
				goto fail;
		}
		info->partitions[k].log_messages = t.conf.format == 2 ? records :
		    count_committed(t.pfd[k], "log", h.committed);
		info->partitions[k].log_bytes = t.conf.format == 2 ? bytes :
		    mq_log_bytes(t.pfd[k], h.committed);
		/* The groups' counts come from mq_group_stat_fill below. */
		for (size_t i = 0; t.conf.format != 2 && i < groups.n; i++) {
			char p[MQ_NAME_MAX + 16];
			snprintf(p, sizeof p, "g/%s/new", groups.v[i]);
			info->groups[i].pending +=
			    count_committed(t.pfd[k], p, h.committed);
			snprintf(p, sizeof p, "g/%s/cur", groups.v[i]);
			info->groups[i].inflight +=
			    count_committed(t.pfd[k], p, UINT64_MAX);
		}
	}
	for (size_t i = 0; i < groups.n; i++) {
		info->groups[i].name = groups.v[i];
		groups.v[i] = NULL;
	}
	info->ngroups = groups.n;
	for (size_t i = 0; i < groups.n; i++)
		if (mq_group_stat_fill(&t, &info->groups[i]) < 0)
			goto fail;
	mq_names_free(&groups);
	mq_topic_close(&t);
	return 0;
fail:
	mq_names_free(&groups);
	mq_topic_close(&t);
	mq_topic_info_free(info);
	return -1;
}

void
mq_topic_info_free(struct mq_topic_info *info)
{
	for (size_t i = 0; i < info->ngroups; i++)
		free(info->groups[i].name);
	free(info->groups);
	for (unsigned k = 0; info->partitions && k < info->conf.partitions; k++)
		free(info->partitions[k].place);
	free(info->partitions);
	free(info->name);
	memset(info, 0, sizeof *info);
}

const char *
mq_group_conf_differs(const struct mq_group_info *g,
    const struct mq_group_conf *c)
{
	/* The conf files keep durations to the microsecond. */
	if (!g->ordered != !c->ordered)
		return "ordered";
	if (c->ordered && fabs(g->session - c->session) > 1e-6)
		return "session";
	if (fabs(g->lease - c->lease) > 1e-6)
		return "lease";
	if (g->max_attempts != c->max_attempts)
		return "max-attempts";
	if (!g->exactly_once != !c->exactly_once)
		return "exactly-once";
	if (!g->filter != !c->filter || (c->filter && strcmp(g->filter,
	    c->filter)))
		return "filter";
	if (g->nmatch != c->nmatch)
		return "match";
	for (size_t i = 0; i < c->nmatch; i++)
		if (strcmp(g->match[i], c->match[i]))
			return "match";
	return NULL;
}
