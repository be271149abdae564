/*
 * scratch.h: a spool of its own for a harness, made under TMPDIR (which
 * test/fuzz/run points into the build): fuzz_scratch makes one on first
 * use, in fuzz_dir; fuzz_fresh makes a new one for each input, in a
 * directory of its own.  NULL if it cannot be made.
 */
#ifndef FUZZ_SCRATCH_H
#define FUZZ_SCRATCH_H
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"

static char fuzz_dir[4096];

static inline mq_spool *
fuzz_scratch(const char *name)
{
	static mq_spool *sp;
	const char *tmp = getenv("TMPDIR");
	if (!sp && snprintf(fuzz_dir, sizeof fuzz_dir, "%s/mq-fuzz-%s.XXXXXX",
	    tmp && *tmp ? tmp : "/tmp", name) < (int)sizeof fuzz_dir &&
	    mkdtemp(fuzz_dir))
		sp = mq_spool_open(fuzz_dir, MQ_CREATE);
	return sp;
}

static inline int
fuzz_rm(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* For harnesses whose input changes the spool: fuzz_dir/spool, the
 * previous one (closed by the caller) removed first, with the spool id
 * given (so that seeds can name it as an origin). */
static char fuzz_spool[4200];

static inline mq_spool *
fuzz_fresh(const char *name, const char *id)
{
	mq_spool *sp;
	const char *tmp = getenv("TMPDIR");
	if (!*fuzz_spool && (snprintf(fuzz_dir, sizeof fuzz_dir,
	    "%s/mq-fuzz-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name) >=
	    (int)sizeof fuzz_dir || !mkdtemp(fuzz_dir)))
		return NULL;
	snprintf(fuzz_spool, sizeof fuzz_spool, "%s/spool", fuzz_dir);
	nftw(fuzz_spool, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);
	if ((sp = mq_spool_open(fuzz_spool, MQ_CREATE)) &&
	    mq_write_file(sp->fd, "ID", id, strlen(id), 0, 1) < 0) {
		mq_spool_close(sp);
		sp = NULL;
	}
	return sp;
}

/* Aborts unless fuzz_dir holds the spool (a directory) and nothing
 * else: what a harness feeds it must not reach beside it. */
static inline void
fuzz_contained(void)
{
	DIR *d = opendir(fuzz_dir);
	struct dirent *e;
	struct stat st;
	if (!d)
		abort();
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "spool")) {
			fprintf(stderr, "harness: made beside the spool: %s\n", e->d_name);
			abort();
		}
	closedir(d);
	if (lstat(fuzz_spool, &st) < 0 || !S_ISDIR(st.st_mode))
		abort();
}

#endif
