/*
 * mq-req: send a request to a topic and wait for its reply.
 * The request is published with Reply-To (a reply box of this call) and
 * Correlation-Id headers; a consumer running mq-sub --exec CMD --reply
 * answers with CMD's output.  See mq-req(1).
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <unistd.h>

#include "tool.h"

#define HEADERS_MAX 64                  /* -H */
/* Exit statuses of a call that got no usable reply. */
#define EX_NOREPLY EX_UNAVAILABLE       /* none within -t */
#define EX_FAILED EX_SOFTWARE           /* the handler failed */

enum { OPT_JSON = 256 };

/* A repeat of an idempotency key: the first request's id. */
static char first[MQ_ID_LEN + 1];

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-q] [-F FORMAT | --json] [-H 'Name: value']... "
	    "[-i ID] [-k KEY]\n              [-s SPOOL] [-t DURATION] "
	    "TOPIC [REQUEST]\n", getprogname());
	exit(code);
}

static void
repeat(const struct mq_pub_msg *m, const char *first_id, bool differs,
    void *ctx)
{
	(void)ctx;
	snprintf(first, sizeof first, "%s", first_id);
	if (differs)
		warnx("warning: idempotency key %s was used by request %s with "
		    "other content; its reply is the answer", m->idempotency_key,
		    first_id);
}

/* The request: REQUEST, or standard input whole. */
static char *
request(int argc, char **argv, size_t *len)
{
	if (argc == 2) {
		*len = strlen(argv[1]);
		return strdup(argv[1]);
	}
	char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	for (;;) {
		if (*len == cap && !(buf = realloc(buf, cap = cap ? 2 * cap :
		    65536)))
			err(EX_OSERR, "malloc");
		ssize_t n = read(0, buf + *len, cap - *len);
		if (n < 0)
			err(EX_IOERR, "standard input");
		if (n == 0)
			return buf;
		*len += (size_t)n;
	}
}

static void
print(const struct mq_reply *r, const char *topic, const char *format,
    int json)
{
	if (!json && !format) {
		fwrite(r->body, 1, r->len, stdout);
		if (!r->len || ((const char *)r->body)[r->len - 1] != '\n')
			putchar('\n');
		return;
	}
	if (json ? mq_reply_write_json(r, stdout) < 0 :
	    mq_reply_write_format(r, topic, format, stdout) < 0)
		tool_fail();
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	const char *spool = NULL, *format = NULL;
	double timeout = 30;
	int c, json = 0, quiet = 0;
	struct mq_header h[HEADERS_MAX + 2];
	struct mq_pub_msg m = { .partition = -1, .headers = h };
	while ((c = tool_getopt(&argc, &argv, "F:H:i:k:qs:t:", longopts,
	    usage)) != -1) {
		switch (c) {
		case 'F':
			if (mq_format_check(optarg) < 0)
				errx(mq_errcode(), "-F: %s", mq_errmsg());
			format = optarg;
			break;
		case 'H':
			if (m.nheaders == HEADERS_MAX)
				errx(EX_USAGE, "-H: at most %d headers",
				    HEADERS_MAX);
			if (mq_header_parse(optarg, &h[m.nheaders]) < 0)
				errx(mq_errcode(), "-H: %s", mq_errmsg());
			m.nheaders++;
			break;
		case 'i':
			if (!*optarg)
				errx(EX_USAGE, "-i: an empty idempotency key");
			m.idempotency_key = optarg;
			break;
		case 'k': m.key = optarg; break;
		case 'q': quiet = 1; break;
		case 's': spool = optarg; break;
		case 't': timeout = tool_duration_positive("-t", optarg); break;
		case OPT_JSON: json = 1; break;
		}
	}
	if (argc < 1)
		tool_usage(usage, "a TOPIC is required");
	if (json && format)
		errx(EX_USAGE, "choose one of --json and -F");
	if (argc > 2)
		tool_usage(usage, "one REQUEST at most (or none: standard input)");
	tool_name("topic", argv[0]);
	tool_place(argv[0], NULL);
	for (size_t i = 0; i < m.nheaders; i++)
		if (!strcasecmp(h[i].name, "Reply-To") ||
		    !strcasecmp(h[i].name, "Correlation-Id"))
			errx(EX_USAGE, "-H: %s is set by mq-req", h[i].name);
	m.body = request(argc, argv, &m.len);
	mq_spool *sp = tool_spool(spool, MQ_CREATE);
	tool_strict_topic(sp, argv[0], 0);
	struct mq_reply_box box;
	char id[1][MQ_ID_LEN + 1];
	/* The topic first: the box is made writable by its consumers. */
	mq_pub *p = mq_pub_open(sp, argv[0], MQ_CREATE);
	if (!p || mq_reply_box_open(sp, argv[0], timeout, &box) < 0)
		tool_fail();
	h[m.nheaders++] = (struct mq_header){ "Reply-To", box.name };
	h[m.nheaders++] = (struct mq_header){ "Correlation-Id",
	    box.correlation };
	mq_pub_on_repeat(p, repeat, NULL);
	if (mq_pub_send(p, &m, 1, MQ_SYNC_NONE, id) != 1) {
		mq_reply_box_close(&box);
		tool_fail();
	}
	mq_pub_close(p);
	char *buf;
	size_t len;
	struct mq_reply r;
	/* A repeat was not sent: its answer is the first request's, as an
	 * exactly-once group kept it. */
	int got = first[0] ? 0 : mq_reply_wait(&box, timeout, &buf, &len);
	mq_reply_box_close(&box);
	if (first[0])
		got = mq_reply_kept(sp, argv[0], first, timeout, &buf, &len);
	if (got < 0 || (got == 1 && mq_reply_parse(buf, len, &r) < 0))
		tool_fail();
	if (got == 0 && first[0])
		errx(EX_NOREPLY, "no reply kept for request %s within %g s (this "
		    "call repeats its idempotency key; only exactly-once groups "
		    "keep replies)", id[0], timeout);
	if (got == 0)
		errx(EX_NOREPLY, "no reply to request %s within %g s", id[0],
		    timeout);
	if (first[0] ? strcmp(r.request, first) :
	    strcmp(r.correlation, box.correlation))
		errx(EX_PROTOCOL, "a reply to another request (%s %.40s) in this "
		    "call's box", first[0] ? "In-Reply-To" : "Correlation-Id",
		    first[0] ? r.request : r.correlation);
	if (!quiet)
		print(&r, argv[0], format, json);
	if (fflush(stdout) == EOF)
		err(EX_IOERR, "stdout");
	if (r.status)
		errx(EX_FAILED, "the handler of request %s failed (exit %d)",
		    id[0], r.status);
	free(buf);
	free((void *)m.body);
	for (size_t i = 0; i + 2 < m.nheaders; i++) {
		free(h[i].name);
		free(h[i].value);
	}
	mq_spool_close(sp);
	return 0;
}
