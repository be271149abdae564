/*
 * run.h: the loops the tools run, above everything else: mq-sub's
 * consumption (batches written out, acks, handlers, -j workers), mq-pub's
 * standard input in batches, mq-replicate's sessions over their
 * transports and its daemon.  The top layer: it calls every other.
 */
#ifndef MQ_RUN_H
#define MQ_RUN_H

#include <stdbool.h>

#include "out.h"

/* pipeout.c: whether fd is a pipe whose unread bytes can be counted; and
 * waiting until its reader has read all it holds: 1, or 0 when the reader
 * went away leaving bytes unread, or -1 when *stop was set. */
bool mq_fd_is_pipe(int fd);
int mq_pipe_drained(int fd, const volatile int *stop);

#endif
