/*
 * mq-http: serve a spool to HTTP clients: publish, receive, settle,
 * topics and groups, /metrics, with bearer tokens (JWT).  The library
 * does the serving (lib/http); this parses options, logs, and stops on
 * SIGTERM.  See mq-http(1).
 */
#include <err.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include "tool.h"

#define FILES_MAX 64

enum {
	OPT_CERT = 256, OPT_KEY, OPT_PLAIN_ANYWHERE, OPT_MAX_CONNECTIONS,
	OPT_MAX_BODY, OPT_RATE, OPT_MAX_WAIT, OPT_JWT_SECRET, OPT_JWT_KEY,
	OPT_JWKS, OPT_AUDIENCE, OPT_ISSUER, OPT_LEEWAY, OPT_SYSLOG,
	OPT_ALLOW_ORIGIN,
};

static int stop_pipe[2] = { -1, -1 };
static int use_syslog, quiet;

static void
usage(int code)
{
	fprintf(code ? stderr : stdout,
	    "usage: %s [-q] [-l ADDR:PORT] [-s SPOOL] [--cert FILE --key FILE | "
	    "--plain-anywhere]\n               [--jwt-secret FILE]... "
	    "[--jwt-key FILE]... [--jwks FILE]...\n               "
	    "[--audience AUD] [--issuer ISS] [--leeway DURATION]\n"
	    "               [--max-connections N] [--max-body BYTES] "
	    "[--rate N] [--max-wait DURATION]\n               "
	    "[--allow-origin ORIGIN]... [--syslog]\n",
	    getprogname());
	exit(code);
}

static void
on_signal(int sig)
{
	(void)sig;
	(void)!write(stop_pipe[1], "", 1);
}

/* A request line goes to stderr (or syslog); with -q only what goes
 * wrong. */
static void
log_line(const char *line, void *ctx)
{
	(void)ctx;
	bool request = line[0] >= 'A' && line[0] <= 'Z';
	if (quiet && request)
		return;
	if (use_syslog)
		syslog(LOG_INFO, "%s", line);
	else
		fprintf(stderr, "%s: %s\n", getprogname(), line);
}

static void
add_arg(const char ***v, size_t *n, const char *path)
{
	if (*n == FILES_MAX)
		errx(EX_USAGE, "at most %d of each of --jwt-secret, --jwt-key, "
		    "--jwks and --allow-origin", FILES_MAX);
	*v = tool_grow(*v, *n, sizeof **v);
	(*v)[(*n)++] = path;
}

/* systemd's socket activation: one listening socket, fd 3. */
static int
inherited_socket(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds || strtol(pid, NULL, 10) != getpid())
		return -1;
	if (strcmp(fds, "1"))
		errx(EX_USAGE, "LISTEN_FDS=%s: one socket, please", fds);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "cert", required_argument, NULL, OPT_CERT },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "plain-anywhere", no_argument, NULL, OPT_PLAIN_ANYWHERE },
		{ "max-connections", required_argument, NULL,
		    OPT_MAX_CONNECTIONS },
		{ "max-body", required_argument, NULL, OPT_MAX_BODY },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "max-wait", required_argument, NULL, OPT_MAX_WAIT },
		{ "jwt-secret", required_argument, NULL, OPT_JWT_SECRET },
		{ "jwt-key", required_argument, NULL, OPT_JWT_KEY },
		{ "jwks", required_argument, NULL, OPT_JWKS },
		{ "audience", required_argument, NULL, OPT_AUDIENCE },
		{ "issuer", required_argument, NULL, OPT_ISSUER },
		{ "leeway", required_argument, NULL, OPT_LEEWAY },
		{ "syslog", no_argument, NULL, OPT_SYSLOG },
		{ "allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN },
		{ NULL, 0, NULL, 0 },
	};
	struct mq_http_conf c = { .listen_fd = -1, .leeway = 30 };
	const char **secrets = NULL, **keys = NULL, **jwks = NULL,
	    **origins = NULL;
	int ch;
	while ((ch = tool_getopt(&argc, &argv, "l:qs:", longopts,
	    usage)) != -1) {
		switch (ch) {
		case 'l': c.listen = optarg; break;
		case 'q': quiet = 1; break;
		case 's': c.spool = optarg; break;
		case OPT_CERT: c.cert_file = optarg; break;
		case OPT_KEY: c.key_file = optarg; break;
		case OPT_PLAIN_ANYWHERE: c.plain_anywhere = 1; break;
		case OPT_MAX_CONNECTIONS:
			c.max_connections = (unsigned)tool_number(
			    "--max-connections", optarg, 1, 65536);
			break;
		case OPT_MAX_BODY:
			c.max_body = tool_number("--max-body", optarg, 1024,
			    MQ_MESSAGE_MAX_LIMIT);
			break;
		case OPT_RATE:
			c.rate = (double)tool_number("--rate", optarg, 1, 1000000);
			break;
		case OPT_MAX_WAIT:
			c.max_wait = tool_duration_positive("--max-wait", optarg);
			break;
		case OPT_JWT_SECRET: add_arg(&secrets, &c.nsecret, optarg); break;
		case OPT_JWT_KEY: add_arg(&keys, &c.nkey, optarg); break;
		case OPT_JWKS: add_arg(&jwks, &c.njwks, optarg); break;
		case OPT_AUDIENCE: c.audience = optarg; break;
		case OPT_ISSUER: c.issuer = optarg; break;
		case OPT_LEEWAY: c.leeway = tool_duration("--leeway", optarg); break;
		case OPT_SYSLOG: use_syslog = 1; break;
		case OPT_ALLOW_ORIGIN:
			add_arg(&origins, &c.norigins, optarg);
			break;
		}
	}
	if (argc != 0)
		tool_usage(usage, "no operands");
	if (!c.nsecret && !c.nkey && !c.njwks)
		tool_usage(usage, "a key to verify tokens with is required: "
		    "--jwt-secret, --jwt-key or --jwks");
	c.secret_files = secrets;
	c.key_files = keys;
	c.jwks_files = jwks;
	c.origins = origins;
	c.listen_fd = inherited_socket();
	c.log = log_line;
	if (use_syslog)
		openlog(getprogname(), LOG_PID, LOG_DAEMON);
	if (pipe2(stop_pipe, O_CLOEXEC) < 0)
		err(EX_OSERR, "pipe");
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	int rc = mq_http_serve(&c, stop_pipe[0]);
	free(secrets);
	free(keys);
	free(jwks);
	free(origins);
	if (rc < 0)
		tool_fail();
	return 0;
}
