/*
 * pipeout.c: knowing what the reader of a pipe has read.
 *
 * A message written into a pipe is not yet read: a reader that goes away
 * (head -n 1) drops what it left in the pipe.  The bytes still in the
 * pipe (FIONREAD, which Linux answers on the write end too) say whether
 * the reader took them; the write end polls POLLERR once no reader is
 * left, and what it did not take stays counted there (Linux frees a
 * pipe's buffers only once both ends are closed).  Nothing wakes a
 * writer when a pipe becomes empty (POLLOUT means room, not empty), so
 * the wait naps, 20 µs at first, growing to 2 ms: a reader that keeps up
 * is found done at the first look.
 */
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include "run.h"

bool
mq_fd_is_pipe(int fd)
{
	struct stat st;
	int n;
	/* A FIFO that cannot say what it holds is written as a file is. */
	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
	    ioctl(fd, FIONREAD, &n) == 0;
}

int
mq_pipe_drained(int fd, const volatile int *stop)
{
	long nap = 20000;
	for (int spins = 0;; spins++) {
		int n;
		if (ioctl(fd, FIONREAD, &n) < 0 || n == 0)
			return 1;
		/* The reader gone, what it left stays in the pipe for good;
		 * it may have taken the rest between the look above and
		 * leaving (head -n 1 reading the last line): look again. */
		struct pollfd p = { .fd = fd, .events = 0 };
		if (poll(&p, 1, 0) > 0 && (p.revents & POLLERR))
			return ioctl(fd, FIONREAD, &n) == 0 && n == 0 ? 1 : 0;
		if (stop && *stop)
			return -1;
		if (spins < 100) {
			sched_yield();
			continue;
		}
		nanosleep(&(struct timespec){ 0, nap }, NULL);
		if (nap < 2000000)
			nap += nap / 2;
	}
}
