/*
 * link.c: the channel between two mq-replicate peers, over a pair of
 * descriptors (a TCP socket, or ssh's standard input and output).
 *
 * Frames are a 4-byte big-endian length and that many bytes.  Over ssh
 * (plain) that is all: ssh authenticates and encrypts.  Otherwise
 * (secure) a handshake comes first, and no spool data crosses before it
 * has succeeded:
 *  1. each side sends a hello: the magic "mq-replicate 1", its long-term
 *     Ed25519 public key, and a fresh X25519 key for this connection;
 *  2. each side looks the other's long-term key up in its spool's
 *     authorized_peers and, if it is not there, closes the connection;
 *  3. each side signs the hash of both hellos (the initiator's first) and
 *     its role, and sends the signature; each checks the other's, which
 *     proves the peer holds the secret key of the long-term key it showed
 *     and binds the fresh keys to it;
 *  4. both derive session keys from the fresh keys (crypto_kx), and each
 *     direction becomes a libsodium secretstream (XChaCha20-Poly1305):
 *     every frame is encrypted and authenticated, in order, so a changed,
 *     dropped, replayed or reordered frame ends the connection.
 * A frame is at most MQ_FRAME_MAX bytes of payload.
 *
 * A key revoked (removed from authorized_peers) while its session runs
 * ends the session at its next frame, either way: a secure link looks at
 * the file again, when it changed, at most once a second.  An idle
 * session sends a PING every 5 seconds, so it ends within that.
 *
 * Until the handshake is over the peer is a stranger, so the handshake
 * may take a deadline: one point in time for all of it, not a timeout
 * per read, so that a peer sending a byte now and then (a partial frame)
 * cannot keep the connection, and the process serving it, for longer.
 *
 * After it, a frame once begun must end: its bytes may not pause for
 * more than LINK_QUIET seconds, and all of them must be in within
 * LINK_FRAME_BASE seconds and a second per LINK_FRAME_RATE bytes.  A
 * length damaged in transit (past authentication on a plain link, before
 * it on a secure one) would otherwise have each side wait for the other
 * for good: the reader for bytes that will never come, the writer for the
 * answer to what it sent.  Between frames there is no limit: an idle
 * session's pings say the peer is there.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "repl.h"

#define LINK_QUIET (3 * REPL_PING)
#define LINK_FRAME_BASE 60.0
#define LINK_FRAME_RATE (256.0 * 1024)

#define HELLO_MAGIC "mq-replicate 1\n"
#define HELLO_LEN (sizeof HELLO_MAGIC - 1 + crypto_sign_PUBLICKEYBYTES + \
    crypto_kx_PUBLICKEYBYTES)

struct mq_link {
	int in, out;
	int secure;
	int ended;                      /* the peer's final frame came */
	double deadline;                /* mq_mono() ending the handshake */
	double timeout;                 /* what it was, in seconds */
	double frame_end;               /* mq_mono() ending the frame begun */
	crypto_secretstream_xchacha20poly1305_state tx, rx;
	unsigned char peer[MQ_PUBKEY_BYTES];
	char peer_name[128];
	mq_spool *sp;
	struct stat keys;               /* authorized_peers when last read */
	double checked;                 /* mq_mono() then */
	unsigned char *buf;             /* a frame as received */
	size_t cap;
	unsigned char *plain;           /* decrypted (pull cannot work in place) */
	size_t pcap;
	size_t next;                    /* the next frame's length, read by */
	int has_next;                   /* mq_link_waiting */
};

/* Waits until fd is ready for events: before the handshake's deadline
 * while there is one, else, in the middle of a frame, before its end and
 * within LINK_QUIET (a frame's bytes are read with it). */
static int
ready(const mq_link *l, int fd, short events)
{
	double until = l->deadline ? l->deadline : l->frame_end;
	if (!until)
		return 0;
	for (;;) {
		double now = mq_mono(), left = until - now;
		if (!l->deadline && left > LINK_QUIET)
			left = LINK_QUIET;
		struct pollfd p = { .fd = fd, .events = events };
		int n = left > 0 ? poll(&p, 1, left > 3600 ? 3600000 :
		    (int)(left * 1000) + 1) : 0;
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return mq_err_sys("peer: poll");
		if (n < 0 || mq_mono() - now < left)
			continue;
		if (l->deadline)
			return mq_err(EX_PROTOCOL, "peer: no handshake within %g s",
			    l->timeout);
		if (mq_mono() >= until)
			return mq_err(EX_PROTOCOL, "peer: a frame begun was not "
			    "all in by its deadline (a length damaged in "
			    "transit?)");
		return mq_err(EX_PROTOCOL, "peer: no byte of a frame begun for "
		    "%g s (a length damaged in transit?)", LINK_QUIET);
	}
}

static int
write_full(const mq_link *l, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	while (len) {
		if (ready(l, l->out, POLLOUT) < 0)
			return -1;
		ssize_t w = write(l->out, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return mq_err_sys("peer: send");
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Reads exactly len bytes: 1, or 0 at a clean end before any byte. */
static int
read_full(const mq_link *l, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t got = 0;
	while (got < len) {
		if (ready(l, l->in, POLLIN) < 0)
			return -1;
		ssize_t r = read(l->in, p + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mq_err_sys("peer: receive");
		if (r == 0)
			return got ? mq_err(EX_PROTOCOL, "peer: connection closed "
			    "in the middle of a frame") : 0;
		got += (size_t)r;
	}
	return 1;
}

static int
send_raw(mq_link *l, const void *buf, size_t len)
{
	unsigned char hdr[4] = { (unsigned char)(len >> 24),
	    (unsigned char)(len >> 16), (unsigned char)(len >> 8),
	    (unsigned char)len };
	if (write_full(l, hdr, 4) < 0)
		return -1;
	return write_full(l, buf, len);
}

/* Receives one frame into l->buf: 1, 0 at the end of the stream. */
static int
recv_raw(mq_link *l, size_t max, size_t *len)
{
	unsigned char hdr[4];
	int rc = l->has_next ? 1 : read_full(l, hdr, 4);
	if (rc <= 0)
		return rc;
	size_t n = l->has_next ? l->next : (size_t)hdr[0] << 24 |
	    (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	l->has_next = 0;
	if (n > max)
		return mq_err(EX_PROTOCOL, "peer: frame of %zu bytes is larger "
		    "than %zu", n, max);
	if (n > l->cap) {
		unsigned char *b = realloc(l->buf, n);
		if (!b)
			return mq_err_sys("malloc");
		l->buf = b;
		l->cap = n;
	}
	/* The handshake has a deadline of its own. */
	l->frame_end = mq_mono() + LINK_FRAME_BASE + (double)n / LINK_FRAME_RATE;
	if (n)
		rc = read_full(l, l->buf, n);
	l->frame_end = 0;
	if (rc <= 0)
		return rc < 0 ? -1 : mq_err(EX_PROTOCOL, "peer: connection "
		    "closed in the middle of a frame");
	*len = n;
	return 1;
}

/* The transcript hash both sides sign: both hellos, the initiator's first. */
static void
transcript(const unsigned char *first, const unsigned char *second,
    unsigned char out[crypto_generichash_BYTES])
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, crypto_generichash_BYTES);
	crypto_generichash_update(&st, (const unsigned char *)"mq-replicate "
	    "handshake 1", 24);
	crypto_generichash_update(&st, first, HELLO_LEN);
	crypto_generichash_update(&st, second, HELLO_LEN);
	crypto_generichash_final(&st, out, crypto_generichash_BYTES);
}

static void
keys_stat(const mq_link *l, struct stat *st)
{
	if (mq_fstatat(l->sp->fd, "replicate/authorized_peers", st,
	    AT_SYMLINK_NOFOLLOW) < 0)
		memset(st, 0, sizeof *st);
}

/* The peer's key is still authorized: looked up again when
 * authorized_peers changed, at most once a second. */
static int
still_authorized(mq_link *l)
{
	double now = mq_mono();
	if (!l->secure || now - l->checked < 1)
		return 0;
	l->checked = now;
	struct stat st;
	keys_stat(l, &st);
	if (st.st_ino == l->keys.st_ino && st.st_dev == l->keys.st_dev &&
	    st.st_size == l->keys.st_size &&
	    st.st_mtim.tv_sec == l->keys.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == l->keys.st_mtim.tv_nsec &&
	    st.st_ctim.tv_sec == l->keys.st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == l->keys.st_ctim.tv_nsec)
		return 0;
	l->keys = st;
	char name[128], hex[MQ_PUBKEY_HEX + 1];
	int rc = mq_peer_authorized(l->sp, l->peer, name, sizeof name);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	mq_pubkey_hex(l->peer, hex);
	return mq_err(EX_NOPERM, "peer: key %s was revoked (it is no longer "
	    "in authorized_peers)", hex);
}

static int
handshake(mq_link *l, mq_spool *sp, const struct mq_identity *me,
    int initiator)
{
	unsigned char epk[crypto_kx_PUBLICKEYBYTES], esk[crypto_kx_SECRETKEYBYTES];
	unsigned char mine[HELLO_LEN], *theirs;
	size_t ml = sizeof HELLO_MAGIC - 1, n;
	crypto_kx_keypair(epk, esk);
	memcpy(mine, HELLO_MAGIC, ml);
	memcpy(mine + ml, me->pk, MQ_PUBKEY_BYTES);
	memcpy(mine + ml + MQ_PUBKEY_BYTES, epk, sizeof epk);
	errno = 0;
	int rc = send_raw(l, mine, sizeof mine);
	if (rc == 0)
		rc = recv_raw(l, HELLO_LEN, &n);
	/* A daemon sends its hello before it reads ours, whatever it
	 * thinks of our key: one that closes first has no session for us. */
	if (initiator && (rc == 0 || (rc < 0 && (errno == EPIPE ||
	    errno == ECONNRESET))))
		rc = mq_err(EX_TEMPFAIL, "peer: closed the connection before its "
		    "hello (all its sessions taken? see --max-sessions)");
	else if (rc == 0)
		rc = mq_err(EX_PROTOCOL, "peer: closed the connection before "
		    "its hello");
	if (rc < 0)
		goto out;
	theirs = l->buf;
	if (n != HELLO_LEN || memcmp(theirs, HELLO_MAGIC, ml)) {
		rc = mq_err(EX_PROTOCOL, "peer: not an mq-replicate peer, or "
		    "another version");
		goto out;
	}
	memcpy(l->peer, theirs + ml, MQ_PUBKEY_BYTES);
	char hex[MQ_PUBKEY_HEX + 1];
	mq_pubkey_hex(l->peer, hex);
	/* Before anything else: is this a peer we accept? */
	keys_stat(l, &l->keys);
	l->checked = mq_mono();
	rc = mq_peer_authorized(sp, l->peer, l->peer_name, sizeof l->peer_name);
	if (rc == 0)
		rc = mq_err(EX_NOPERM, "peer: key %s is not in authorized_peers",
		    hex);
	if (rc < 0)
		goto out;
	unsigned char their_epk[crypto_kx_PUBLICKEYBYTES];
	memcpy(their_epk, theirs + ml + MQ_PUBKEY_BYTES, sizeof their_epk);
	unsigned char h[crypto_generichash_BYTES + 1];
	if (initiator)
		transcript(mine, theirs, h);
	else
		transcript(theirs, mine, h);
	unsigned char sig[crypto_sign_BYTES];
	h[crypto_generichash_BYTES] = initiator ? 'I' : 'R';
	crypto_sign_detached(sig, NULL, h, sizeof h, me->sk);
	/* A peer that does not accept our key closes the connection now. */
	if ((rc = send_raw(l, sig, sizeof sig)) < 0 ||
	    (rc = recv_raw(l, crypto_sign_BYTES, &n)) <= 0) {
		if (rc == 0 || errno == EPIPE || errno == ECONNRESET)
			rc = mq_err(EX_NOPERM, "peer: closed the connection in "
			    "the handshake (it does not accept our key)");
		rc = -1;
		goto out;
	}
	h[crypto_generichash_BYTES] = initiator ? 'R' : 'I';
	if (n != crypto_sign_BYTES ||
	    crypto_sign_verify_detached(l->buf, h, sizeof h, l->peer) != 0) {
		rc = mq_err(EX_NOPERM, "peer: key %s: bad signature (not the "
		    "holder of that key)", hex);
		goto out;
	}
	unsigned char rxk[crypto_kx_SESSIONKEYBYTES], txk[crypto_kx_SESSIONKEYBYTES];
	if ((initiator ? crypto_kx_client_session_keys(rxk, txk, epk, esk,
	    their_epk) : crypto_kx_server_session_keys(rxk, txk, epk, esk,
	    their_epk)) != 0) {
		rc = mq_err(EX_PROTOCOL, "peer: unusable key exchange");
		goto out;
	}
	unsigned char header[crypto_secretstream_xchacha20poly1305_HEADERBYTES];
	crypto_secretstream_xchacha20poly1305_init_push(&l->tx, header, txk);
	if ((rc = send_raw(l, header, sizeof header)) < 0)
		goto wipe;
	if ((rc = recv_raw(l, sizeof header, &n)) <= 0 || n != sizeof header ||
	    crypto_secretstream_xchacha20poly1305_init_pull(&l->rx, l->buf,
	    rxk) != 0)
		rc = rc < 0 ? -1 : mq_err(EX_PROTOCOL, "peer: bad stream header");
	else
		rc = 0;
wipe:
	sodium_memzero(rxk, sizeof rxk);
	sodium_memzero(txk, sizeof txk);
out:
	sodium_memzero(esk, sizeof esk);
	return rc;
}

mq_link *
mq_link_open(int in, int out, mq_spool *sp, const struct mq_identity *me,
    int initiator, double timeout)
{
	if (me && mq_crypto_init() < 0)
		return NULL;
	mq_link *l = calloc(1, sizeof *l);
	if (!l) {
		mq_err_sys("malloc");
		return NULL;
	}
	l->in = in;
	l->out = out;
	l->sp = sp;
	l->secure = me != NULL;
	if (timeout > 0) {
		l->timeout = timeout;
		l->deadline = mq_mono() + timeout;
	}
	if (l->secure && handshake(l, sp, me, initiator) < 0) {
		mq_link_close(l);
		return NULL;
	}
	l->deadline = 0;                /* the peer is who it says */
	return l;
}

const unsigned char *
mq_link_peer(const mq_link *l, const char **name)
{
	if (name)
		*name = l->peer_name;
	return l->secure ? l->peer : NULL;
}

int
mq_link_send(mq_link *l, const void *buf, size_t len)
{
	if (len > MQ_FRAME_MAX)
		return mq_err(EX_SOFTWARE, "frame of %zu bytes is too large", len);
	if (still_authorized(l) < 0)
		return -1;
	if (!l->secure)
		return send_raw(l, buf, len);
	size_t clen = len + crypto_secretstream_xchacha20poly1305_ABYTES;
	unsigned char *c = malloc(clen);
	if (!c)
		return mq_err_sys("malloc");
	crypto_secretstream_xchacha20poly1305_push(&l->tx, c, NULL, buf, len,
	    NULL, 0, 0);
	int rc = send_raw(l, c, clen);
	free(c);
	return rc;
}

/* The last frame of a secure link says so (the final tag), so that a
 * connection cut between two frames is not taken for an orderly end. */
int
mq_link_end(mq_link *l)
{
	if (!l->secure)
		return 0;
	unsigned char c[crypto_secretstream_xchacha20poly1305_ABYTES];
	crypto_secretstream_xchacha20poly1305_push(&l->tx, c, NULL, NULL, 0,
	    NULL, 0, crypto_secretstream_xchacha20poly1305_TAG_FINAL);
	return send_raw(l, c, sizeof c);
}

int
mq_link_recv(mq_link *l, const void **buf, size_t *len)
{
	size_t n = 0, over = l->secure ?
	    crypto_secretstream_xchacha20poly1305_ABYTES : 0;
	*buf = NULL;
	*len = 0;
	if (l->ended)
		return 0;
	int rc = recv_raw(l, MQ_FRAME_MAX + over, &n);
	if (rc == 0 && l->secure)
		return mq_err(EX_PROTOCOL, "peer: the connection ended without "
		    "its final frame");
	if (rc <= 0 || !l->secure) {
		*buf = l->buf;
		*len = n;
		return rc;
	}
	unsigned long long plen;
	unsigned char tag;
	if (n < over)
		return mq_err(EX_PROTOCOL, "peer: a frame is too short");
	if (n - over + 1 > l->pcap) {
		unsigned char *p = realloc(l->plain, n - over + 1);
		if (!p)
			return mq_err_sys("malloc");
		l->plain = p;
		l->pcap = n - over + 1;
	}
	if (crypto_secretstream_xchacha20poly1305_pull(&l->rx, l->plain, &plen,
	    &tag, l->buf, n, NULL, 0) != 0)
		return mq_err(EX_PROTOCOL, "peer: a frame failed authentication "
		    "(changed in transit?)");
	if (tag == crypto_secretstream_xchacha20poly1305_TAG_FINAL) {
		l->ended = 1;
		return 0;
	}
	if (still_authorized(l) < 0)
		return -1;
	*buf = l->plain;
	*len = (size_t)plen;
	return 1;
}

bool
mq_link_waiting(mq_link *l)
{
	int avail;
	if (l->ended || ioctl(l->in, FIONREAD, &avail) < 0 || avail < 0)
		return false;
	if (!l->has_next) {
		unsigned char hdr[4];
		if (avail < 4 || read_full(l, hdr, 4) != 1)
			return false;
		l->next = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 |
		    (size_t)hdr[2] << 8 | hdr[3];
		l->has_next = 1;
		avail -= 4;
	}
	return (size_t)avail >= l->next;
}

void
mq_link_close(mq_link *l)
{
	if (!l)
		return;
	free(l->buf);
	if (l->plain)
		sodium_memzero(l->plain, l->pcap);
	free(l->plain);
	sodium_memzero(l, sizeof *l);
	free(l);
}
