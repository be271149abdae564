/*
 * mq-ack: acknowledge messages claimed with mq-sub --manual, by their
 * receipts; or give them back (--nack), dead-letter them (--reject), or
 * extend their leases (--extend); or ack everything before an offset
 * (--commit).
 */
#include <err.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "tool.h"

enum {
	OPT_NACK = 256, OPT_DELAY, OPT_REJECT, OPT_REASON, OPT_EXTEND,
	OPT_COMMIT,
};

static struct {
	int op;                         /* OPT_NACK, OPT_REJECT, OPT_EXTEND or 0 */
	double seconds;                 /* --extend */
	struct mq_nack how;
	struct mq_offset *commit;       /* --commit */
	size_t ncommit;
} opt = { .how = { .status = -1 } };

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] -g GROUP [--nack [--delay DURATION] | "
	    "--reject [--reason TEXT] |\n              --extend DURATION] TOPIC "
	    "[RECEIPT...]\n       %s [-s SPOOL] -g GROUP --commit "
	    "PARTITION:OFFSET... TOPIC\n", getprogname(), getprogname());
	exit(code);
}

/* Settles one receipt; returns 0 or the exit code its refusal deserves. */
static int
settle(mq_spool *sp, const char *topic, const char *group, const char *r)
{
	int rc;
	switch (opt.op) {
	case OPT_NACK:
		rc = mq_receipt_nack(sp, topic, group, r, &opt.how);
		break;
	case OPT_REJECT:
		rc = mq_receipt_reject(sp, topic, group, r, &opt.how);
		break;
	case OPT_EXTEND:
		rc = mq_receipt_extend(sp, topic, group, r, opt.seconds);
		break;
	default:
		rc = mq_receipt_ack(sp, topic, group, r);
	}
	if (rc == 0)
		return 0;
	tool_warn();
	return mq_errcode();
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "nack", no_argument, NULL, OPT_NACK },
		{ "delay", required_argument, NULL, OPT_DELAY },
		{ "reject", no_argument, NULL, OPT_REJECT },
		{ "reason", required_argument, NULL, OPT_REASON },
		{ "extend", required_argument, NULL, OPT_EXTEND },
		{ "commit", required_argument, NULL, OPT_COMMIT },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL, *group = NULL;
	int c, delay = 0, reason = 0;
	while ((c = tool_getopt(&argc, &argv, "g:s:", longopts, usage)) != -1) {
		switch (c) {
		case 'g': group = optarg; break;
		case 's': spool = optarg; break;
		case OPT_NACK:
		case OPT_REJECT:
			if (opt.op && opt.op != c)
				errx(EX_USAGE, "choose one of --nack, --reject and "
				    "--extend");
			opt.op = c;
			break;
		case OPT_EXTEND:
			if (opt.op && opt.op != c)
				errx(EX_USAGE, "choose one of --nack, --reject and "
				    "--extend");
			opt.op = c;
			opt.seconds = tool_duration_positive("--extend", optarg);
			break;
		case OPT_DELAY:
			opt.how.delay = tool_duration("--delay", optarg);
			delay = 1;
			break;
		case OPT_REASON:
			opt.how.detail = optarg;
			reason = 1;
			break;
		case OPT_COMMIT:
			opt.commit = tool_grow(opt.commit, opt.ncommit,
			    sizeof *opt.commit);
			if (mq_offset_parse(optarg, &opt.commit[opt.ncommit++]) < 0)
				errx(mq_errcode(), "--commit: %s", mq_errmsg());
			break;
		}
	}
	if (!group)
		tool_usage(usage, "-g GROUP is required");
	if (argc < 1)
		tool_usage(usage, "a TOPIC is required");
	if (delay && opt.op != OPT_NACK)
		errx(EX_USAGE, "--delay goes with --nack");
	if (reason && opt.op != OPT_REJECT)
		errx(EX_USAGE, "--reason goes with --reject");
	if (opt.ncommit && (opt.op || argc > 1))
		errx(EX_USAGE, "--commit takes no receipts and goes with no other "
		    "operation");
	tool_name("topic", argv[0]);
	tool_name("group", group);
	tool_place(argv[0], group);

	mq_spool *sp = tool_spool(spool, 0);
	tool_fence_warn(sp);
	int worst = 0, rc;
	if (opt.ncommit) {
		for (size_t i = 0; i < opt.ncommit; i++) {
			uint64_t acked;
			if (mq_group_commit(sp, argv[0], group, &opt.commit[i],
			    &acked) < 0)
				tool_fail();
		}
		free(opt.commit);
		mq_spool_close(sp);
		return 0;
	}
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if ((rc = settle(sp, argv[0], group, argv[i])) > worst)
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
			if ((rc = settle(sp, argv[0], group, line)) > worst)
				worst = rc;
		}
		free(line);
		if (ferror(stdin))
			err(EX_IOERR, "stdin");
	}
	mq_spool_close(sp);
	return worst;
}
