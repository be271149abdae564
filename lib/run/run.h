/*
 * run.h: the loops the tools run, above everything else: mq-sub's
 * consumption (batches written out, acks, handlers, -j workers), mq-pub's
 * standard input in batches, mq-replicate's sessions over their
 * transports and its daemon.  The top layer: it calls every other.
 */
#ifndef MQ_RUN_H
#define MQ_RUN_H

#include "out.h"

#endif
