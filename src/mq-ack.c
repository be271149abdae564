/*
 * mq-ack: acknowledge (or return, with --nack) messages claimed with
 * mq-sub --manual, by their receipts.
 */
#include <err.h>
#include <stdlib.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "tool.h"

enum { OPT_NACK = 256, OPT_HELP };

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] -g GROUP [--nack] TOPIC [RECEIPT...]\n",
	    getprogname());
	exit(code);
}

/* Settles one receipt; returns 0 or the exit code its refusal deserves. */
static int
settle(mq_spool *sp, const char *topic, const char *group, const char *r,
    int nack)
{
	int rc = nack ? mq_receipt_nack(sp, topic, group, r) :
	    mq_receipt_ack(sp, topic, group, r);
	if (rc == 0)
		return 0;
	warnx("%s", mq_errmsg());
	return mq_errcode();
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "nack", no_argument, NULL, OPT_NACK },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL, *group = NULL;
	int c, nack = 0;
	while ((c = getopt_long(argc, argv, "g:s:", longopts, NULL)) != -1) {
		switch (c) {
		case 'g': group = optarg; break;
		case 's': spool = optarg; break;
		case OPT_NACK: nack = 1; break;
		case OPT_HELP: usage(0); break;
		default: usage(EX_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || !group)
		usage(EX_USAGE);
	tool_name("topic", argv[0]);
	tool_name("group", group);

	mq_spool *sp = tool_spool(spool, 0);
	int worst = 0, rc;
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if ((rc = settle(sp, argv[0], group, argv[i], nack)) > worst)
				worst = rc;
	} else {
		char *line = NULL;
		size_t cap = 0;
		ssize_t len;
		while ((len = getline(&line, &cap, stdin)) > 0) {
			if (line[len - 1] == '\n')
				line[--len] = 0;
			if (len == 0)
				continue;
			if ((rc = settle(sp, argv[0], group, line, nack)) > worst)
				worst = rc;
		}
		free(line);
		if (ferror(stdin))
			err(EX_IOERR, "stdin");
	}
	mq_spool_close(sp);
	return worst;
}
