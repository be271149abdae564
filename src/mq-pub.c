/*
 * mq-pub: publish messages to a topic.
 * Each MESSAGE argument is one message; without any, standard input is
 * one message, or one per line (-l), or one per NUL-terminated record (-0).
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "tool.h"

enum {
	OPT_SYNC = 256, OPT_DELAY, OPT_AT, OPT_TTL, OPT_ATOMIC,
	OPT_DEDUP, OPT_REPLICAS, OPT_REPLICA_TIMEOUT, OPT_SIGN, OPT_KEYGEN,
	OPT_PUBKEY, OPT_NO_CREATE,
};

static struct {
	int split;                      /* 0: whole stdin is one message */
	char sep;                       /* else records end with this */
	int quiet;
	enum mq_sync sync;
	const char *key;
	int partition;
	struct mq_header *headers;
	size_t nheaders;
	double delay, at, ttl;
	int atomic, dedup_content, have_at, no_create;
	const char *idem;               /* -i */
	unsigned replicas;              /* peers that must confirm */
	double replica_timeout;
	const char *sign;               /* the publisher key file */
	mq_spool *sp;
} opt = { .partition = -1, .replica_timeout = 10 };

static void
usage(int code)
{
	const char *p = getprogname();
	fprintf(code ? stderr : stdout,
	    "usage: %s [-0lq] [-H 'Name: value']... [-k KEY] [-p PARTITION] "
	    "[-s SPOOL]\n              [--sync=each|batch|none] [--delay DURATION "
	    "| --at TIME] [--ttl DURATION]\n              [--atomic] "
	    "[-i ID | --dedup=content] [--sign KEYFILE]\n              "
	    "[--no-create] "
	    "[--replicas N [--replica-timeout DURATION]] TOPIC [MESSAGE...]\n"
	    "       %s --keygen KEYFILE | --pubkey KEYFILE\n", p, p);
	exit(code);
}

/* --keygen and --pubkey: the publisher key in path, its public key
 * printed. */
static int
key_command(int keygen, const char *path)
{
	char hex[MQ_PUBKEY_HEX + 1];
	struct mq_identity id;
	if (keygen && mq_signkey_generate(path, hex) < 0)
		tool_fail();
	if (!keygen) {
		if (mq_signkey_load(path, &id) < 0)
			tool_fail();
		mq_pubkey_hex(id.pk, hex);
		mq_identity_forget(&id);
	}
	printf("%s\n", hex);
	if (fflush(stdout) == EOF)
		err(EX_IOERR, "stdout");
	return 0;
}

/* Publishes n messages and prints the ids of those stored; on failure
 * prints the error and exits, after the ids of what did get stored. */
static int
send(struct mq_pub_msg *msgs, size_t n, void *pub)
{
	if (n == 0)
		return 0;
	char (*ids)[MQ_ID_LEN + 1] = reallocarray(NULL, n, sizeof *ids);
	char (*ikeys)[MQ_NAME_MAX + 64] = reallocarray(NULL, n, sizeof *ikeys);
	if (!ids || !ikeys)
		err(EX_OSERR, "malloc");
	/* -i ID names one message; in a batch the n-th is ID.n, so a batch
	 * sent again is recognised message by message. */
	static unsigned long nth;
	for (size_t i = 0; i < n; i++) {
		if (opt.dedup_content)
			mq_content_key(msgs[i].body, msgs[i].len, ikeys[i]);
		else if (opt.idem && !opt.split && nth == 0 && n == 1)
			snprintf(ikeys[i], sizeof *ikeys, "%s", opt.idem);
		else if (opt.idem)
			snprintf(ikeys[i], sizeof *ikeys, "%s.%lu", opt.idem,
			    ++nth);
		msgs[i].idempotency_key = opt.dedup_content || opt.idem ?
		    ikeys[i] : NULL;
	}
	size_t stored = mq_pub_send(pub, msgs, n, opt.sync, ids);
	/* Synchronous replication: the peers confirm what the journal
	 * says we stored (mq-replicate(1)). */
	unsigned got = 0;
	int late = 0;
	struct mq_replica_goal goal;
	if (stored == n && opt.replicas > 0)
		late = mq_pub_replica_goal(pub, &goal) < 0 ? -1 :
		    mq_replicas_wait(opt.sp, &goal, opt.replicas,
		    opt.replica_timeout, &got);
	for (size_t i = 0; !opt.quiet && i < n; i++)
		if (ids[i][0])
			printf("%s\n", ids[i]);
	if (fflush(stdout) == EOF)
		err(EX_IOERR, "stdout");
	free(ids);
	free(ikeys);
	if (stored < n || late < 0)
		tool_fail();
	if (late)
		errx(EX_UNAVAILABLE, "stored here, but only %u of %u replicas "
		    "confirmed it within %g s", got, opt.replicas,
		    opt.replica_timeout);
	return 0;
}

/* A topic without groups keeps what is published in log/ only: likely a
 * mistyped name. */
static void
no_groups_warn(mq_spool *sp, const char *topic)
{
	struct mq_group_ref *refs;
	size_t n, mine = 0;
	if (opt.quiet || mq_group_list(sp, topic, &refs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		mine += !refs[i].wildcard && !strcmp(refs[i].topic, topic);
	mq_group_ref_free(refs, n);
	if (!mine)
		warnx("warning: topic '%s' has no groups: the message is kept in "
		    "log/ only", topic);
}

static void
repeat(const struct mq_pub_msg *m, const char *first_id, bool differs,
    void *ctx)
{
	(void)ctx;
	if (differs)
		warnx("warning: idempotency key %s was used by message %s "
		    "with other content; not stored", m->idempotency_key,
		    first_id);
}

static void
msg_init(struct mq_pub_msg *m, const void *body, size_t len, void *ctx)
{
	(void)ctx;
	m->key = opt.key;
	m->partition = opt.partition;
	m->body = body;
	m->len = len;
	m->headers = opt.headers;
	m->nheaders = opt.nheaders;
	/* Times count from when the message is published. */
	double now = mq_now();
	/* A time in the past (even @0) means at once. */
	m->deliver_at = opt.have_at ? opt.at : opt.delay > 0 ? now + opt.delay : 0;
	m->expires = opt.ttl > 0 ? now + opt.ttl : 0;
	m->idempotency_key = NULL;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "sync", required_argument, NULL, OPT_SYNC },
		{ "delay", required_argument, NULL, OPT_DELAY },
		{ "at", required_argument, NULL, OPT_AT },
		{ "ttl", required_argument, NULL, OPT_TTL },
		{ "atomic", no_argument, NULL, OPT_ATOMIC },
		{ "dedup", required_argument, NULL, OPT_DEDUP },
		{ "replicas", required_argument, NULL, OPT_REPLICAS },
		{ "replica-timeout", required_argument, NULL,
		    OPT_REPLICA_TIMEOUT },
		{ "sign", required_argument, NULL, OPT_SIGN },
		{ "keygen", required_argument, NULL, OPT_KEYGEN },
		{ "pubkey", required_argument, NULL, OPT_PUBKEY },
		{ "no-create", no_argument, NULL, OPT_NO_CREATE },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL, *keyfile = NULL;
	int c, keycmd = 0;
	while ((c = tool_getopt(&argc, &argv, "0H:i:k:lp:qs:", longopts,
	    usage)) != -1) {
		switch (c) {
		case '0': opt.split = 1; opt.sep = '\0'; break;
		case 'H': {
			struct mq_header *h = opt.headers = tool_grow(opt.headers,
			    opt.nheaders, sizeof *h);
			if (mq_header_parse(optarg, &h[opt.nheaders]) < 0)
				errx(mq_errcode(), "-H: %s", mq_errmsg());
			opt.nheaders++;
			break;
		}
		case 'k':
			if (mq_key_check(optarg) < 0)
				errx(mq_errcode(), "-k: %s", mq_errmsg());
			opt.key = optarg;
			break;
		case 'l': opt.split = 1; opt.sep = '\n'; break;
		case 'p':
			opt.partition = (int)tool_number("-p", optarg, 0,
			    MQ_PARTITIONS_MAX - 1);
			break;
		case 'q': opt.quiet = 1; break;
		case 's': spool = optarg; break;
		case OPT_SYNC:
			if (mq_sync_parse(optarg, &opt.sync) < 0)
				errx(EX_USAGE, "--sync: %s", mq_errmsg());
			break;
		case OPT_DELAY: opt.delay = tool_duration("--delay", optarg); break;
		case OPT_AT:
			if (mq_time_arg_parse(optarg, &opt.at) < 0)
				errx(EX_USAGE, "--at: %s", mq_errmsg());
			opt.have_at = 1;
			break;
		case OPT_TTL:
			opt.ttl = tool_duration_positive("--ttl", optarg);
			break;
		case OPT_ATOMIC: opt.atomic = 1; break;
		case OPT_NO_CREATE: opt.no_create = 1; break;
		case OPT_DEDUP:
			if (strcmp(optarg, "content"))
				errx(EX_USAGE, "--dedup: only 'content' is known");
			opt.dedup_content = 1;
			break;
		case 'i':
			if (mq_key_check(optarg) < 0 || strlen(optarg) > MQ_NAME_MAX)
				errx(EX_USAGE, "-i: bad id (1 to %d characters, no "
				    "control characters)", MQ_NAME_MAX);
			opt.idem = optarg;
			break;
		case OPT_REPLICAS:
			opt.replicas = (unsigned)tool_number("--replicas", optarg,
			    0, 64);
			break;
		case OPT_REPLICA_TIMEOUT:
			opt.replica_timeout = tool_duration("--replica-timeout",
			    optarg);
			break;
		case OPT_SIGN: opt.sign = optarg; break;
		case OPT_KEYGEN:
		case OPT_PUBKEY:
			if (keycmd)
				tool_usage(usage, "choose one of --keygen and "
				    "--pubkey");
			keycmd = c;
			keyfile = optarg;
			break;
		}
	}
	if (keycmd && argc == 0)
		return key_command(keycmd == OPT_KEYGEN, keyfile);
	if (keycmd)
		tool_usage(usage, "--keygen and --pubkey take no TOPIC");
	if (argc < 1)
		tool_usage(usage, "a TOPIC is required");
	if (!opt.sign && (opt.sign = getenv("MQ_SIGN_KEY")) && !*opt.sign)
		opt.sign = NULL;
	struct mq_identity key;
	if (opt.sign && mq_signkey_load(opt.sign, &key) < 0)
		tool_fail();
	if (opt.delay > 0 && opt.have_at)
		errx(EX_USAGE, "choose one of --delay and --at");
	/* Both count from when the message is published. */
	if (opt.ttl > 0 && (opt.have_at ? opt.at - mq_now() : opt.delay) >=
	    opt.ttl)
		errx(EX_USAGE, "--ttl %gs ends before --%s: the message could "
		    "never be delivered", opt.ttl, opt.have_at ? "at" : "delay");
	if (opt.idem && opt.dedup_content)
		errx(EX_USAGE, "choose one of -i and --dedup=content");
	tool_name("topic", argv[0]);
	tool_place(argv[0], NULL);

	mq_spool *sp = opt.sp = tool_spool(spool, MQ_CREATE);
	tool_strict_topic(sp, argv[0], opt.no_create);
	mq_pub *pub = mq_pub_open(sp, argv[0], MQ_CREATE);
	if (!pub)
		tool_fail();
	/* A topic that will not take what we publish refuses it before
	 * standard input is read. */
	int rc = mq_pub_sign(pub, opt.sign ? &key : NULL);
	if (opt.sign)
		mq_identity_forget(&key);
	if (rc < 0)
		tool_fail();
	mq_pub_atomic(pub, opt.atomic);
	mq_pub_on_repeat(pub, repeat, NULL);
	if (argc > 1) {
		struct mq_pub_msg *msgs = reallocarray(NULL, (size_t)argc - 1,
		    sizeof *msgs);
		if (!msgs)
			err(EX_OSERR, "malloc");
		for (int i = 1; i < argc; i++)
			msg_init(&msgs[i - 1], argv[i], strlen(argv[i]), NULL);
		send(msgs, (size_t)argc - 1, pub);
		free(msgs);
	} else {
		struct mq_topic_conf conf;
		if (mq_topic_conf_read(sp, argv[0], &conf) < 0)
			tool_fail();
		struct mq_pub_stream in = { .fd = 0, .name = "stdin",
		    .split = opt.split, .sep = opt.sep, .atomic = opt.atomic,
		    .max = conf.max_message_size, .init = msg_init, .put = send,
		    .ctx = pub };
		/* What send publishes, it prints; its errors end it there. */
		if (mq_pub_stream(&in) < 0)
			errx(mq_errcode(), "%s", mq_errmsg());
	}
	mq_pub_close(pub);
	no_groups_warn(sp, argv[0]);
	mq_spool_close(sp);
	return 0;
}
