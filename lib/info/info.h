/*
 * info.h: read-only views of a spool, as mq-stat, mq-group info and
 * mq-topic info report them (no lock taken, nothing written).  Calls
 * repl/, queue/ and base/.
 */
#ifndef MQ_INFO_H
#define MQ_INFO_H

#include "repl.h"

/* groupinfo.c: the live members in a members directory (mq-spool(5),
 * Members); a missing directory has none. */
int mq_members_alive(int dirfd, const char *path, uint64_t now_ms,
    unsigned *alive);

/* groupinfo.c */
uint64_t mq_log_bytes(int pfd, uint64_t committed);
int mq_group_stat_fill(const struct mq_topic *, struct mq_group_stat *);
int mq_group_info_at(const struct mq_topic *, const char *group,
    struct mq_group_info *);

#endif
