/*
 * pubstream.c: the messages of a stream, as mq-pub(1) reads its standard
 * input: the whole of it one message, or one per record ended by a
 * separator (-l, -0), handed on in batches.  A batch ends when it is
 * full or when no more input is waiting, so a slow writer's records are
 * published as they come; an atomic batch is all of the input.
 *
 * Records stay in one buffer that grows as it must; a batch's bodies
 * point into it, and are set only when the batch is handed on, since the
 * buffer may move while it fills.  No record may pass the limit, which
 * is checked while it is read, so a stream without separators cannot
 * fill the memory.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "run.h"

#define BATCH_MAX 4096

struct stream {
	const struct mq_pub_stream *how;
	char *buf;
	size_t cap, len, start;          /* start: of the record being read */
	struct mq_pub_msg *msgs;
	size_t *offs;                    /* the bodies' offsets in buf */
	size_t n, mcap;
};

static int
waiting(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) > 0;
}

static int
too_large(const struct stream *s)
{
	return mq_err(EX_DATAERR, "message is larger than the topic's limit "
	    "of %zu bytes", s->how->max);
}

/* Room for more input: the record read so far moves to the front when
 * no batch points into the buffer, else the buffer grows. */
static int
room(struct stream *s)
{
	if (s->len < s->cap)
		return 0;
	if (s->start > 0 && s->n == 0) {
		memmove(s->buf, s->buf + s->start, s->len - s->start);
		s->len -= s->start;
		s->start = 0;
		return 0;
	}
	char *b = realloc(s->buf, s->cap * 2);
	if (!b)
		return mq_err_sys("malloc");
	s->buf = b;
	s->cap *= 2;
	return 0;
}

static int
put(struct stream *s)
{
	for (size_t i = 0; i < s->n; i++)
		s->msgs[i].body = s->buf + s->offs[i];
	size_t n = s->n;
	s->n = 0;
	return s->how->put(s->msgs, n, s->how->ctx);
}

/* The record buf[start..end) joins the batch. */
static int
record(struct stream *s, size_t end)
{
	if (s->n == s->mcap) {
		struct mq_pub_msg *m = reallocarray(s->msgs, s->mcap * 2,
		    sizeof *m);
		size_t *o = m ? reallocarray(s->offs, s->mcap * 2, sizeof *o) :
		    NULL;
		if (m)
			s->msgs = m;
		if (!o)
			return mq_err_sys("malloc");
		s->offs = o;
		s->mcap *= 2;
	}
	s->offs[s->n] = s->start;
	s->how->init(&s->msgs[s->n++], NULL, end - s->start, s->how->ctx);
	return 0;
}

/* The records input holds so far; at eof the last one, unended. */
static int
records(struct stream *s, int eof)
{
	const struct mq_pub_stream *how = s->how;
	char *p;
	while ((p = memchr(s->buf + s->start, how->sep, s->len - s->start)) ||
	    (eof && s->start < s->len)) {
		size_t end = p ? (size_t)(p - s->buf) : s->len;
		if (end - s->start > how->max)
			return too_large(s);
		if (end > s->start && record(s, end) < 0)
			return -1;
		s->start = p ? end + 1 : s->len;
		if (s->n == BATCH_MAX && !how->atomic && put(s) < 0)
			return -1;
	}
	if (s->n && (eof || (!how->atomic && !waiting(how->fd))) && put(s) < 0)
		return -1;
	if (s->start == s->len && s->n == 0)
		s->start = s->len = 0;
	else if (s->len - s->start > how->max)
		return too_large(s);
	return 0;
}

static int
run(struct stream *s)
{
	const struct mq_pub_stream *how = s->how;
	for (int eof = 0; !eof;) {
		if (room(s) < 0)
			return -1;
		ssize_t r = read(how->fd, s->buf + s->len, s->cap - s->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mq_err(EX_IOERR, "%s: %s", how->name,
			    strerror(errno));
		eof = r == 0;
		s->len += (size_t)r;
		if (!how->split && s->len - s->start > how->max)
			return too_large(s);
		if (how->split && records(s, eof) < 0)
			return -1;
	}
	if (how->split)
		return 0;
	how->init(&s->msgs[0], s->buf, s->len, how->ctx);
	return how->put(s->msgs, 1, how->ctx);
}

int
mq_pub_stream(const struct mq_pub_stream *how)
{
	struct stream s = { .how = how, .cap = 1 << 20, .mcap = 4096 };
	s.buf = malloc(s.cap);
	s.msgs = reallocarray(NULL, s.mcap, sizeof *s.msgs);
	s.offs = reallocarray(NULL, s.mcap, sizeof *s.offs);
	int rc = s.buf && s.msgs && s.offs ? run(&s) : mq_err_sys("malloc");
	free(s.buf);
	free(s.msgs);
	free(s.offs);
	return rc;
}
