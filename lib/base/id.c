/*
 * id.c: message ids and random tokens.
 *
 * An id is 32 hex digits: 13 of microseconds since the epoch, 11 drawn at
 * random once per process, 8 of a per-process counter.  Two processes
 * collide only if they start the same microsecond with the same 44 random
 * bits, so ids stay unique across hosts sharing a spool without trusting
 * hostnames or pids.  Ids sort roughly by time; order comes from sequence
 * numbers, never from ids.
 */
#include <stdlib.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

/* The random part of this process's ids (0: not drawn yet), and the
 * counter after it: atomic, since threads (mq-http's connections) make
 * ids at once, in the same microsecond too. */
static _Atomic uint64_t id_random;
static _Atomic uint32_t id_counter;
static pthread_once_t id_once = PTHREAD_ONCE_INIT;

/* A forked child must not reuse its parent's sequence of ids. */
static void
id_forget(void)
{
	atomic_store(&id_random, 0);
}

static void
id_register(void)
{
	pthread_atfork(NULL, NULL, id_forget);
}

void
mq_id_new(char out[MQ_ID_LEN + 1])
{
	uint64_t r = atomic_load(&id_random);
	if (!r) {
		uint64_t none = 0;
		pthread_once(&id_once, id_register);
		arc4random_buf(&r, sizeof r);
		r = (r & ((UINT64_C(1) << 44) - 1)) | 1;    /* never 0 */
		/* The first thread's draw wins; the counter goes on. */
		if (!atomic_compare_exchange_strong(&id_random, &none, r))
			r = none;
	}
	uint32_t c = atomic_fetch_add(&id_counter, 1);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	/* 13, 11 and 8 hex digits: the time's low 52 bits, the draw's 44,
	 * the counter's 32 (one id per message published). */
	char *o = mq_put_hex(out, us, 13);
	*mq_put_hex(mq_put_hex(o, r, 11), c, 8) = 0;
}

void
mq_hex_random(char *out, size_t nhex)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t r = 0;
	for (size_t i = 0; i < nhex; i++) {
		if (i % 8 == 0)
			r = arc4random();
		out[i] = hex[r & 15];
		r >>= 4;
	}
	out[nhex] = 0;
}

/* The characters of a host's name as the spool holds it. */
static bool
host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-';
}

void
mq_hostname(char out[MQ_HOST_MAX])
{
	memset(out, 0, MQ_HOST_MAX);
	/* Two mounts of one spool on one machine stand for two hosts. */
	const char *e = getenv("MQ_HOST");
	if (e && *e)
		snprintf(out, MQ_HOST_MAX, "%s", e);
	else if (gethostname(out, MQ_HOST_MAX - 1) < 0 || !*out)
		snprintf(out, MQ_HOST_MAX, "host");
	for (char *c = out; *c; c++)
		if (!host_char(*c))
			*c = '-';
}

bool
mq_is_host(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= MQ_HOST_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!host_char(s[i]))
			return false;
	return true;
}
