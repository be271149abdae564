/*
 * net.c: the transports of replication: a TCP listener and connection
 * (the daemon), and a command whose standard input and output are the
 * channel (ssh, as rsync -e does it).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "repl.h"

/* "HOST:PORT", "[V6]:PORT" or "PORT" (then on host dflt). */
static int
split_addr(const char *addr, const char *dflt, char *host, size_t hl,
    char *port, size_t pl)
{
	const char *colon = strrchr(addr, ':');
	if (!colon) {
		snprintf(host, hl, "%s", dflt);
		snprintf(port, pl, "%s", addr);
	} else if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close + 1 != colon)
			return mq_err(EX_USAGE, "bad address '%s' (HOST:PORT, "
			    "[IPV6]:PORT)", addr);
		snprintf(host, hl, "%.*s", (int)(close - addr - 1), addr + 1);
		snprintf(port, pl, "%s", colon + 1);
	} else {
		snprintf(host, hl, "%.*s", (int)(colon - addr), addr);
		snprintf(port, pl, "%s", colon + 1);
	}
	char *end;
	long p = strtol(port, &end, 10);
	if (!*port || *end || p < 1 || p > 65535 || !*host)
		return mq_err(EX_USAGE, "bad address '%s' (HOST:PORT, "
		    "[IPV6]:PORT)", addr);
	return 0;
}

static int
resolve(const char *addr, const char *dflt, int passive, struct addrinfo **ai)
{
	char host[256], port[16];
	if (split_addr(addr, dflt, host, sizeof host, port, sizeof port) < 0)
		return -1;
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0 };
	int e = getaddrinfo(host, port, &hints, ai);
	if (e)
		return mq_err(EX_NOHOST, "%s: %s", host, gai_strerror(e));
	return 0;
}

/* A socket for the first address step() accepts (bind and listen, or
 * connect); -1 with errno from the last failure. */
static int
first_socket(struct addrinfo *ai, int (*step)(int, const struct addrinfo *))
{
	int fd = -1, err = 0;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
		    a->ai_protocol);
		if (fd >= 0 && step(fd, a) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		} else if (fd < 0) {
			err = errno;
		}
	}
	freeaddrinfo(ai);
	errno = err;
	return fd;
}

static int
bind_listen(int fd, const struct addrinfo *a)
{
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	return bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 64) < 0 ?
	    -1 : 0;
}

static int
connect_to(int fd, const struct addrinfo *a)
{
	return connect(fd, a->ai_addr, a->ai_addrlen);
}

int
mq_net_listen(const char *addr)
{
	struct addrinfo *ai;
	if (resolve(addr, "127.0.0.1", 1, &ai) < 0)
		return -1;
	int fd = first_socket(ai, bind_listen);
	if (fd < 0)
		return mq_err(errno == EADDRINUSE ? EX_UNAVAILABLE : EX_OSERR,
		    "listen on %s: %s", addr, strerror(errno));
	return fd;
}

static void
tune(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
}

int
mq_net_accept(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			tune(fd);
			return fd;
		}
		if (errno != EINTR && errno != ECONNABORTED)
			return mq_err_sys("accept");
		if (errno == EINTR)
			return mq_err(EX_TEMPFAIL, "interrupted");
	}
}

int
mq_net_connect(const char *addr)
{
	struct addrinfo *ai;
	if (resolve(addr, "127.0.0.1", 0, &ai) < 0)
		return -1;
	int fd = first_socket(ai, connect_to);
	if (fd < 0)
		return mq_err(EX_UNAVAILABLE, "connect to %s: %s", addr,
		    strerror(errno));
	tune(fd);
	return fd;
}

const char *
mq_net_peer(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[NI_MAXHOST], port[NI_MAXSERV];
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port,
	    sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host,
		    port);
	return buf;
}

/* Single quotes for sh(1). */
static int
quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	return fputc('\'', f);
}

int
mq_rsh_spawn(const char *rsh, const char *command, const char *spool,
    int *in, int *out, pid_t *pid)
{
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);
	if (!f)
		return mq_err_sys("malloc");
	fprintf(f, "%s %s serve --stdio", rsh, command);
	if (spool) {
		fputs(" -s ", f);
		quote(f, spool);
	}
	if (fclose(f) != 0)
		return mq_err_sys("malloc");
	int to[2], from[2];
	if (pipe2(to, O_CLOEXEC) < 0) {
		free(line);
		return mq_err_sys("pipe");
	}
	if (pipe2(from, O_CLOEXEC) < 0) {
		close(to[0]);
		close(to[1]);
		free(line);
		return mq_err_sys("pipe");
	}
	pid_t p = fork();
	if (p < 0) {
		int e = errno;
		free(line);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		errno = e;
		return mq_err_sys("fork");
	}
	if (p == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	free(line);
	close(to[0]);
	close(from[1]);
	*in = from[0];
	*out = to[1];
	*pid = p;
	return 0;
}
