/*
 * keys.c: the long-term keys of mq-replicate.
 *
 * A spool that replicates has SPOOL/replicate/key (its Ed25519 secret
 * key, mode 0600), key.pub (the public key and a name) and
 * authorized_peers (the public keys of the peers it accepts, one per
 * line with an optional name; '#' starts a comment).  Keys are written
 * in hex, so they can be pasted between hosts.  A key file is written in
 * tmp/ and renamed into place, so it is there whole or not at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "internal.h"

#define KEY_MAGIC "mq-replicate-key 1"
#define PUB_MAGIC "mq-replicate-pub"

int
mq_crypto_init(void)
{
	if (sodium_init() < 0)
		return mq_err(EX_SOFTWARE, "libsodium cannot start");
	return 0;
}

static int
hex_decode(const char *hex, size_t hexlen, unsigned char *out, size_t len)
{
	size_t got;
	const char *end;
	if (sodium_hex2bin(out, len, hex, hexlen, NULL, &got, &end) < 0 ||
	    got != len || end != hex + hexlen)
		return -1;
	return 0;
}

/* Writes a small file in tmp/ with the mode given, then renames it to
 * path (refusing to replace one unless replace is set). */
static int
write_private(mq_spool *sp, const char *path, const char *text, mode_t mode,
    int replace)
{
	char tmp[64], rnd[17];
	mq_hex_random(rnd, 16);
	snprintf(tmp, sizeof tmp, "tmp/key.%s", rnd);
	int fd = mq_openat(sp->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd < 0)
		return mq_err_sys("create %s", path);
	size_t len = strlen(text);
	int rc = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0 ? 0 : -1;
	if (close(fd) < 0)
		rc = -1;
	if (rc == 0 && !replace && mq_faccessat(sp->fd, path, F_OK,
	    AT_SYMLINK_NOFOLLOW) == 0) {
		mq_unlinkat(sp->fd, tmp, 0);
		return mq_err(EX_CANTCREAT, "%s exists (--force replaces it)",
		    path);
	}
	if (rc == 0 && mq_renameat(sp->fd, tmp, sp->fd, path) < 0)
		rc = -1;
	if (rc < 0) {
		int e = errno;
		mq_unlinkat(sp->fd, tmp, 0);
		errno = e;
		return mq_err_sys("write %s", path);
	}
	return mq_fsync_at(sp->fd, "replicate");
}

/* Makes replicate/ (synced into the spool) and removes key files a
 * crash left in tmp/: they may hold a secret key. */
static int
replicate_dir(mq_spool *sp)
{
	if (mq_faccessat(sp->fd, "replicate", F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    (mq_mkdir(sp->fd, "replicate") < 0 || mq_fsync_fd(sp->fd) < 0))
		return -1;
	int fd = mq_openat(sp->fd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	struct mq_names l = { 0 };
	if (fd >= 0 && mq_names_read(fd, NULL, &l) == 0)
		for (size_t i = 0; i < l.n; i++) {
			struct stat st;
			if (!strncmp(l.v[i], "key.", 4) &&
			    mq_fstatat(fd, l.v[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    mq_now() - (double)st.st_mtime > 60)
				mq_unlinkat(fd, l.v[i], 0);
		}
	mq_names_free(&l);
	if (fd >= 0)
		close(fd);
	return 0;
}

int
mq_keys_generate(mq_spool *sp, const char *name, int replace,
    char pub[MQ_PUBKEY_HEX + 1])
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	char skhex[2 * sizeof sk + 1], text[2 * sizeof sk + 128];
	if (mq_crypto_init() < 0 || replicate_dir(sp) < 0)
		return -1;
	if (name && (!*name || strpbrk(name, " \t\n\r") || strlen(name) > 64))
		return mq_err(EX_USAGE, "a key name is 1 to 64 characters, no "
		    "spaces");
	crypto_sign_keypair(pk, sk);
	sodium_bin2hex(skhex, sizeof skhex, sk, sizeof sk);
	sodium_bin2hex(pub, MQ_PUBKEY_HEX + 1, pk, sizeof pk);
	snprintf(text, sizeof text, "%s\n%s\n", KEY_MAGIC, skhex);
	sodium_memzero(sk, sizeof sk);
	sodium_memzero(skhex, sizeof skhex);
	int rc = write_private(sp, "replicate/key", text, 0600, replace);
	sodium_memzero(text, sizeof text);
	if (rc < 0)
		return -1;
	char host[65] = "";
	if (!name) {
		gethostname(host, sizeof host - 1);
		name = *host ? host : "mq";
	}
	snprintf(text, sizeof text, "%s %s %s\n", PUB_MAGIC, pub, name);
	return write_private(sp, "replicate/key.pub", text, 0644, 1);
}

int
mq_identity_load(mq_spool *sp, struct mq_identity *id)
{
	char *buf;
	size_t len;
	if (mq_crypto_init() < 0)
		return -1;
	if (mq_read_at(sp->fd, "replicate/key", 4096, &buf, &len) < 0) {
		if (mq_errcode() == EX_NOINPUT)
			return mq_err(EX_CONFIG, "no key: run mq-replicate keygen");
		return -1;
	}
	size_t ml = strlen(KEY_MAGIC);
	int rc = 0;
	if (len < ml + 2 + 2 * sizeof id->sk || memcmp(buf, KEY_MAGIC, ml) ||
	    buf[ml] != '\n' || hex_decode(buf + ml + 1, 2 * sizeof id->sk,
	    id->sk, sizeof id->sk) < 0)
		rc = mq_err(EX_CONFIG, "replicate/key: not an mq-replicate key");
	sodium_memzero(buf, len);
	free(buf);
	if (rc == 0)
		crypto_sign_ed25519_sk_to_pk(id->pk, id->sk);
	return rc;
}

void
mq_identity_forget(struct mq_identity *id)
{
	sodium_memzero(id, sizeof *id);
}

int
mq_pubkey_parse(const char *hex, unsigned char pk[MQ_PUBKEY_BYTES])
{
	if (strlen(hex) != MQ_PUBKEY_HEX ||
	    hex_decode(hex, MQ_PUBKEY_HEX, pk, MQ_PUBKEY_BYTES) < 0)
		return mq_err(EX_DATAERR, "not a public key (64 hex digits)");
	return 0;
}

void
mq_pubkey_hex(const unsigned char pk[MQ_PUBKEY_BYTES],
    char out[MQ_PUBKEY_HEX + 1])
{
	sodium_bin2hex(out, MQ_PUBKEY_HEX + 1, pk, MQ_PUBKEY_BYTES);
}

/* Looks pk up in authorized_peers: 1 with its name in name (may be
 * empty), 0 when it is not there. */
int
mq_peer_authorized(mq_spool *sp, const unsigned char pk[MQ_PUBKEY_BYTES],
    char *name, size_t len)
{
	char *buf;
	size_t blen;
	if (mq_read_at(sp->fd, "replicate/authorized_peers", 1 << 20, &buf,
	    &blen) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	char want[MQ_PUBKEY_HEX + 1];
	mq_pubkey_hex(pk, want);
	int found = 0;
	for (char *line = buf, *end = buf + blen; !found && line < end;) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		char *e = nl ? nl : end;
		while (e > line && (e[-1] == '\r' || e[-1] == ' ' ||
		    e[-1] == '\t'))
			e--;    /* a file edited elsewhere */
		if (e - line >= MQ_PUBKEY_HEX && *line != '#' &&
		    !strncasecmp(line, want, MQ_PUBKEY_HEX) &&
		    (e - line == MQ_PUBKEY_HEX || line[MQ_PUBKEY_HEX] == ' ' ||
		    line[MQ_PUBKEY_HEX] == '\t')) {
			found = 1;
			const char *n = line + MQ_PUBKEY_HEX;
			while (n < e && (*n == ' ' || *n == '\t'))
				n++;
			snprintf(name, len, "%.*s", (int)(e - n), n);
		}
		line = nl ? nl + 1 : end;
	}
	free(buf);
	return found;
}

int
mq_peer_authorize(mq_spool *sp, const char *hex, const char *name)
{
	unsigned char pk[MQ_PUBKEY_BYTES];
	char n[128];
	if (mq_pubkey_parse(hex, pk) < 0)
		return -1;
	if (name && (!*name || strpbrk(name, "\n\r") || strlen(name) > 64))
		return mq_err(EX_USAGE, "a peer name is 1 to 64 characters on "
		    "one line");
	int rc = mq_peer_authorized(sp, pk, n, sizeof n);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (replicate_dir(sp) < 0)
		return -1;
	char *old = NULL, *text;
	size_t olen = 0;
	if (mq_read_at(sp->fd, "replicate/authorized_peers", 1 << 20, &old,
	    &olen) < 0 && mq_errcode() != EX_NOINPUT)
		return -1;
	char canon[MQ_PUBKEY_HEX + 1];
	mq_pubkey_hex(pk, canon);
	if (asprintf(&text, "%.*s%s%s%s%s\n", (int)olen, old ? old : "",
	    olen && old[olen - 1] != '\n' ? "\n" : "", canon, name ? " " : "",
	    name ? name : "") < 0) {
		free(old);
		return mq_err_sys("malloc");
	}
	free(old);
	rc = write_private(sp, "replicate/authorized_peers", text, 0644, 1);
	free(text);
	return rc < 0 ? -1 : 1;
}
