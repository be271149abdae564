/*
 * out.h: the writers: text, JSON, Prometheus and Nagios output of what
 * info/ gathers, and message formats.  The top layer.
 */
#ifndef MQ_OUT_H
#define MQ_OUT_H

#include <stdio.h>

#include "info.h"

/* statout.c: what the writers of mq-stat's outputs share. */
struct json_t;
/* Writes o on one line and frees it (o NULL: a failed json_pack). */
int mq_json_put(struct json_t *o, FILE *);
/* 0, or -1 (EX_IOERR) when f has seen a write error. */
int mq_out_status(FILE *);
/* A peer's name, else its id. */
const char *mq_peer_label(const struct mq_peer_status *);
/* The width of a column of the n peers' labels: at least least. */
int mq_peer_label_width(const struct mq_peer_status *, size_t n, int least);

#endif
