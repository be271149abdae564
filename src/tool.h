/* tool.h: what every mq tool's main() shares (argument checks, failing). */
#ifndef MQ_TOOL_H
#define MQ_TOOL_H

#include "mq.h"

/* Prints the library's error as "prog: message" and exits with its code. */
void tool_fail(void) __attribute__((noreturn));
/* Checks a name (topic or group) before anything touches the spool. */
void tool_name(const char *kind, const char *name);
/* A topic name, or a wildcard pattern of topics. */
void tool_topic_or_pattern(const char *name);
/* The index of cmd in names (NULL-terminated); anything else is a usage
 * error that lists them. */
int tool_command(const char *cmd, const char *const *names);
/* The soft limit on open files raised to the hard one (tool_spool does
 * it). */
void tool_open_files(void);
mq_spool *tool_spool(const char *dir, int flags);
double tool_duration(const char *opt, const char *arg);
unsigned long tool_number(const char *opt, const char *arg, unsigned long min,
    unsigned long max);

#endif
