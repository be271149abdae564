/*
 * mq-replicate: replication between spools.  This version manages the
 * keys that authenticate peers; the transfer itself is not there yet
 * (see mq-replicate(1)).
 */
#include <err.h>
#include <stdlib.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "tool.h"

enum { OPT_HELP = 256, OPT_FORCE, OPT_NAME };

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-s SPOOL] keygen [--force] [--name NAME]\n"
	    "       %s [-s SPOOL] pubkey\n"
	    "       %s [-s SPOOL] authorize PUBKEY [NAME]\n",
	    getprogname(), getprogname(), getprogname());
	exit(code);
}

/* Prints this spool's public key line (key.pub). */
static void
pubkey(mq_spool *sp)
{
	struct mq_identity id;
	char hex[MQ_PUBKEY_HEX + 1];
	if (mq_identity_load(sp, &id) < 0)
		tool_fail();
	mq_pubkey_hex(id.pk, hex);
	mq_identity_forget(&id);
	printf("%s\n", hex);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL, *name = NULL;
	int c, force = 0;
	while ((c = getopt_long(argc, argv, "s:", longopts, NULL)) != -1) {
		switch (c) {
		case 's': spool = optarg; break;
		case OPT_FORCE: force = 1; break;
		case OPT_NAME: name = optarg; break;
		case OPT_HELP: usage(0); break;
		default: usage(EX_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(EX_USAGE);
	const char *cmd = argv[0];
	int keygen = !strcmp(cmd, "keygen"), authorize = !strcmp(cmd, "authorize");
	tool_command(cmd, (const char *const[]){ "keygen", "pubkey",
	    "authorize", NULL });
	if ((keygen || !authorize) ? argc != 1 : argc < 2 || argc > 3)
		usage(EX_USAGE);
	if ((force || name) && !keygen)
		errx(EX_USAGE, "--force and --name go with keygen");
	mq_spool *sp = tool_spool(spool, keygen || authorize ? MQ_CREATE : 0);
	if (keygen) {
		char hex[MQ_PUBKEY_HEX + 1];
		if (mq_keys_generate(sp, name, force, hex) < 0)
			tool_fail();
		printf("%s\n", hex);
	} else if (authorize) {
		int rc = mq_peer_authorize(sp, argv[1], argc > 2 ? argv[2] : NULL);
		if (rc < 0)
			tool_fail();
		if (rc == 0)
			warnx("peer %s was authorized already", argv[1]);
	} else {
		pubkey(sp);
	}
	mq_spool_close(sp);
	return 0;
}
