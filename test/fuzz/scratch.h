/*
 * scratch.h: a spool of its own for a harness, made on first use under
 * TMPDIR (which test/fuzz/run points into the build), in fuzz_dir; NULL
 * if it cannot be made.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mq.h"

static char fuzz_dir[4096];

static mq_spool *
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
