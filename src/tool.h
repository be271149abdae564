/* tool.h: what every mq tool's main() shares (argument checks, failing). */
#ifndef MQ_TOOL_H
#define MQ_TOOL_H

#include <getopt.h>

#include "mq.h"

/* The tool's options, one at a time, as getopt_long(3) returns them for
 * shortopts and longopts (the tool's own, ended by a zero entry; --help
 * is added after them).  --help is usage(0), and an unknown option or
 * one without its argument usage(EX_USAGE) after getopt_long's message;
 * usage prints and exits.  At the end (-1) *argc and *argv are moved
 * past the options. */
int tool_getopt(int *argc, char ***argv, const char *shortopts,
    const struct option *longopts, void (*usage)(int code));

/* A usage error that says what is missing or wrong: "prog: what" (one
 * line), then the usage (usage(EX_USAGE)). */
void tool_usage(void (*usage)(int code), const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

/* Prints the library's error as "prog: message" and exits with its code;
 * an error about a file names the place first, "prog: SPOOL: topic T:
 * group G: message" (tool_place, tool_spool). */
void tool_fail(void) __attribute__((noreturn));
/* The same, as a warning. */
void tool_warn(void);
/* The error's message as tool_fail prints it (in buf, or the library's). */
const char *tool_errmsg(char *buf, size_t len);
/* The topic and group (NULL: none) the tool works on, for its errors. */
void tool_place(const char *topic, const char *group);
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
/* The spool, opened; it fails the tool (tool_spool) or returns NULL
 * (tool_spool_try), its error placed. */
mq_spool *tool_spool(const char *dir, int flags);
mq_spool *tool_spool_try(const char *dir, int flags);
/* A warning, once, when the spool was fenced (mq-protocol(5), Epochs):
 * what a consumer acknowledges there does not reach the new primary. */
void tool_fence_warn(mq_spool *);
/* v (of n elements of size bytes) grown by one; out of memory fails the
 * tool. */
void *tool_grow(void *v, size_t n, size_t size);
/* Strict about topics: a tool that would make a missing topic (mq-pub,
 * mq-sub) refuses it instead when given --no-create (no_create set) or
 * when MQ_STRICT is set to anything but "" or "0": the topic (not a
 * pattern) must exist, or the tool fails with EX_NOINPUT, "no topic 'T'
 * (MQ_STRICT: create it with mq-topic create)". */
void tool_strict_topic(mq_spool *, const char *topic, int no_create);
double tool_duration(const char *opt, const char *arg);
/* The same, and more than 0. */
double tool_duration_positive(const char *opt, const char *arg);
/* --backoff BASE[:MAX]: MAX is 300 s, or BASE if more, when not given. */
void tool_backoff(const char *arg, double *base, double *max);
/* Ends the tool as SIGPIPE ends a filter whose reader went away. */
void tool_sigpipe(void) __attribute__((noreturn));
unsigned long tool_number(const char *opt, const char *arg, unsigned long min,
    unsigned long max);

#endif
