/*
 * replframe.c: the small frames and lines both sides of a replication
 * session send and read (replsend.c, replrecv.c, and the hello of
 * replsession.c), over a link (link.c).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "repl.h"

int
repl_send_text(mq_link *l, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof buf)
		return mq_err(EX_SOFTWARE, "frame too long");
	return mq_link_send(l, buf, (size_t)n);
}

int
repl_line(const char *f, size_t len, char *out, size_t cap, size_t *used)
{
	const char *nl = memchr(f, '\n', len < cap ? len : cap);
	size_t n = nl ? (size_t)(nl - f) : 0;
	if (!nl || n >= cap || memchr(f, 0, n))
		return -1;
	memcpy(out, f, n);
	out[n] = 0;
	*used = n + 1;
	return 0;
}

/* The next frame must start with word (then a space or a newline); an
 * ERROR frame is the peer's error. */
int
repl_expect(mq_link *l, const char *word, const char **rest, size_t *len)
{
	const void *buf;
	size_t n;
	int rc = mq_link_recv(l, &buf, &n);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return mq_err(EX_PROTOCOL, "peer: connection ended (expected %s)",
		    word);
	const char *f = buf;
	size_t wl = strlen(word);
	if (n > 6 && !memcmp(f, "ERROR ", 6))
		return repl_error_frame(f, n);
	if (n < wl || memcmp(f, word, wl) || (n > wl && f[wl] != ' ' &&
	    f[wl] != '\n'))
		return mq_err(EX_PROTOCOL, "peer: expected %s, got '%.*s'", word,
		    (int)(n < 20 ? n : 20), f);
	*rest = f + (n > wl ? wl + 1 : wl);
	*len = n > wl ? n - wl - 1 : 0;
	return 0;
}

int
repl_error_frame(const char *f, size_t n)
{
	/* ERROR <code> <message>: the code read from a copy. */
	char num[4] = "";
	uint64_t code = 0;
	if (n > 6)
		snprintf(num, sizeof num, "%.*s", (int)(n - 6 < 3 ? n - 6 : 3),
		    f + 6);
	if (!mq_decimal(num, 999, &code))
		code = 0;
	const char *sp = n > 6 ? memchr(f + 6, ' ', n - 6) : NULL;
	size_t ml = sp ? n - (size_t)(sp + 1 - f) : 0;
	/* One line, whatever the peer put in it. */
	char msg[960];
	ml = ml < sizeof msg ? ml : sizeof msg - 1;
	for (size_t i = 0; i < ml; i++)
		msg[i] = sp[1 + i] < 0x20 || sp[1 + i] == 0x7f ? '?' : sp[1 + i];
	msg[ml] = 0;
	/* The peer's own message may name its peer (us) already. */
	return mq_err(code >= 64 && code <= 78 ? (int)code : EX_PROTOCOL, "%s%s",
	    ml >= 6 && !memcmp(msg, "peer: ", 6) ? "" : "peer: ", msg);
}

int
repl_seen_send(mq_link *l, const struct repl_seen *seen)
{
	char *text = NULL;
	size_t tlen;
	if (repl_seen_render(seen, &text, &tlen) < 0)
		return -1;
	char *frame = malloc(tlen + 5);
	int rc = frame ? 0 : mq_err_sys("malloc");
	if (rc == 0) {
		memcpy(frame, "SEEN\n", 5);
		memcpy(frame + 5, text, tlen);
		rc = mq_link_send(l, frame, tlen + 5);
		free(frame);
	}
	free(text);
	return rc;
}
