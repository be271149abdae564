/*
 * peer.h: a peer's side of a replication channel after the key
 * exchange, for harnesses: the bytes it sends, in a memory file read as
 * a plain link (ssh's channel, where the key exchange is ssh's), and
 * what we answer thrown away.  The harness adds the frames with
 * fuzz_wire_add (or the raw stream with fuzz_wire_raw), then
 * fuzz_wire_link reads them back.
 */
#ifndef FUZZ_PEER_H
#define FUZZ_PEER_H
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "repl.h"
#include "scratch.h"

static int fuzz_wire = -1;

/* Starts a stream for an input: the previous one's file closed. */
static inline void
fuzz_wire_raw(const void *data, size_t len)
{
	if (fuzz_wire >= 0)
		close(fuzz_wire);
	if ((fuzz_wire = memfd_create("fuzz-wire", MFD_CLOEXEC)) < 0 ||
	    write(fuzz_wire, data, len) != (ssize_t)len)
		abort();
}

/* One frame, as link.c writes it: a 4-byte big-endian length, then it. */
static inline void
fuzz_wire_add(const void *frame, size_t len)
{
	unsigned char hdr[4] = { (unsigned char)(len >> 24),
	    (unsigned char)(len >> 16), (unsigned char)(len >> 8),
	    (unsigned char)len };
	if (write(fuzz_wire, hdr, 4) != 4 ||
	    write(fuzz_wire, frame, len) != (ssize_t)len)
		abort();
}

/* A plain link reading the stream from its start, writing to /dev/null
 * (what we answer is never read: the peer has said all it says). */
static inline mq_link *
fuzz_wire_link(mq_spool *sp)
{
	static int null = -1;
	if (null < 0 && (null = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
		abort();
	if (lseek(fuzz_wire, 0, SEEK_SET) < 0)
		abort();
	mq_link *l = mq_link_open(fuzz_wire, null, sp, NULL, 0, 0);
	if (!l)
		abort();
	return l;
}

/* Aborts if a descriptor is open on something in fuzz_dir (the spool
 * is closed: one is a leak). */
static inline void
fuzz_no_fd_left(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[64], target[4200];
	if (!d)
		abort();
	while ((e = readdir(d))) {
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (!strncmp(target, fuzz_dir, strlen(fuzz_dir))) {
			fprintf(stderr, "harness: a descriptor leaked: %s\n", target);
			abort();
		}
	}
	closedir(d);
}

/* After an input's session: the link and the spool closed; aborts if
 * anything was made beside the spool, or a descriptor on it leaked. */
static inline void
fuzz_session_end(mq_link *l, mq_spool *sp)
{
	mq_link_close(l);
	mq_spool_close(sp);
	fuzz_contained();
	fuzz_no_fd_left();
}

#endif
