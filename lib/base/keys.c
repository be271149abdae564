/*
 * keys.c: the long-term keys of mq-replicate.
 *
 * A spool that replicates has SPOOL/replicate/key (its Ed25519 secret
 * key, mode 0600), key.pub (the public key and a name) and
 * authorized_peers (the public keys of the peers it accepts, one per
 * line with an optional name; '#' starts a comment).  Keys are written
 * in hex, so they can be pasted between hosts.  A publisher's key (mq-pub
 * --sign) is a file of the same form with its own magic line, so neither
 * kind of key is taken for the other.  A key file is written in
 * tmp/ and renamed into place, so it is there whole or not at all.
 * keygen, authorize and revoke read and replace these files under an
 * open file description lock on replicate/lock-keys, one at a time, so
 * that none of them loses what another wrote.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"

#define KEY_MAGIC "mq-replicate-key 1"
#define PUB_MAGIC "mq-replicate-pub"
#define SIGN_MAGIC "mq-publisher-key 1"

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

/* A key file's text: its magic line, then the secret key (at most
 * crypto_sign_SECRETKEYBYTES) in hex. */
#define KEY_TEXT_MAX (2 * crypto_sign_SECRETKEYBYTES + 64)
static void
key_text(const char *magic, const unsigned char *sk, size_t sklen,
    char text[KEY_TEXT_MAX])
{
	char skhex[2 * crypto_sign_SECRETKEYBYTES + 1];
	sodium_bin2hex(skhex, sizeof skhex, sk, sklen);
	snprintf(text, KEY_TEXT_MAX, "%s\n%s\n", magic, skhex);
	sodium_memzero(skhex, sizeof skhex);
}

/* An Ed25519 key file's text; pub gets the public key of the pair made. */
static void
key_make(const char *magic, char text[KEY_TEXT_MAX],
    char pub[MQ_PUBKEY_HEX + 1])
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	crypto_sign_keypair(pk, sk);
	key_text(magic, sk, sizeof sk, text);
	sodium_bin2hex(pub, MQ_PUBKEY_HEX + 1, pk, sizeof pk);
	sodium_memzero(sk, sizeof sk);
}

int
mq_keytext_parse(const char *buf, size_t len, const char *magic,
    unsigned char *sk, size_t sklen)
{
	size_t ml = strlen(magic);
	if (len < ml + 2 + 2 * sklen || memcmp(buf, magic, ml) ||
	    buf[ml] != '\n' || hex_decode(buf + ml + 1, 2 * sklen, sk, sklen) < 0)
		return -1;
	return 0;
}

static int
key_parse(const char *buf, size_t len, const char *magic,
    struct mq_identity *id)
{
	if (mq_keytext_parse(buf, len, magic, id->sk, sizeof id->sk) < 0)
		return -1;
	crypto_sign_ed25519_sk_to_pk(id->pk, id->sk);
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

/* replicate/lock-keys, locked (waited for): a descriptor to close, or
 * -2 where the file system has no locks (nothing to close). */
static int
keys_lock(mq_spool *sp)
{
	int fd = mq_file_open(sp->fd, "replicate/lock-keys", O_RDWR | O_CREAT,
	    0666, NULL);
	if (fd < 0)
		return -1;
	if (mq_file_lock(fd, 1, "replicate/lock-keys") == 1)
		return fd;
	int e = errno;
	close(fd);
	return e == EINVAL || e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS ?
	    -2 : -1;
}

static void
keys_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

int
mq_keys_generate(mq_spool *sp, const char *name, int replace,
    char pub[MQ_PUBKEY_HEX + 1])
{
	char text[KEY_TEXT_MAX];
	if (mq_crypto_init() < 0 || replicate_dir(sp) < 0)
		return -1;
	if (name && (!*name || strpbrk(name, " \t\n\r") || strlen(name) > 64))
		return mq_err(EX_USAGE, "a key name is 1 to 64 characters, no "
		    "spaces");
	int lk = keys_lock(sp);
	if (lk == -1)
		return -1;
	key_make(KEY_MAGIC, text, pub);
	int rc = write_private(sp, "replicate/key", text, 0600, replace);
	sodium_memzero(text, sizeof text);
	char host[65] = "";
	if (!name) {
		gethostname(host, sizeof host - 1);
		name = *host ? host : "mq";
	}
	snprintf(text, sizeof text, "%s %s %s\n", PUB_MAGIC, pub, name);
	if (rc == 0)
		rc = write_private(sp, "replicate/key.pub", text, 0644, 1);
	keys_unlock(lk);
	return rc;
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
	int rc = key_parse(buf, len, KEY_MAGIC, id) < 0 ?
	    mq_err(EX_CONFIG, "replicate/key: not an mq-replicate key") : 0;
	sodium_memzero(buf, len);
	free(buf);
	return rc;
}

void
mq_identity_forget(struct mq_identity *id)
{
	sodium_memzero(id, sizeof *id);
}

int
mq_keys_public(mq_spool *sp, char pub[MQ_PUBKEY_HEX + 1])
{
	struct mq_identity id;
	if (mq_identity_load(sp, &id) < 0)
		return -1;
	mq_pubkey_hex(id.pk, pub);
	mq_identity_forget(&id);
	return 0;
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

int
mq_keyline_next(const char **pos, const char *end,
    unsigned char pk[MQ_PUBKEY_BYTES], const char **name, size_t *nlen)
{
	for (;;) {
		const char *line = *pos;
		if (line >= end)
			return 0;
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *e = nl ? nl : end;
		*pos = nl ? nl + 1 : end;
		while (e > line && (e[-1] == '\r' || e[-1] == ' ' ||
		    e[-1] == '\t'))
			e--;    /* a file edited elsewhere */
		if (e == line || *line == '#')
			continue;
		if (e - line < MQ_PUBKEY_HEX || hex_decode(line, MQ_PUBKEY_HEX,
		    pk, MQ_PUBKEY_BYTES) < 0 || (e - line > MQ_PUBKEY_HEX &&
		    line[MQ_PUBKEY_HEX] != ' ' && line[MQ_PUBKEY_HEX] != '\t'))
			return -1;
		const char *n = line + MQ_PUBKEY_HEX;
		while (n < e && (*n == ' ' || *n == '\t'))
			n++;
		*name = n;
		*nlen = (size_t)(e - n);
		return 1;
	}
}

/* Looks pk up in authorized_peers: 1 with its name in name (may be
 * empty), 0 when it is not there.  Lines that are no key are passed
 * over. */
int
mq_peer_authorized(mq_spool *sp, const unsigned char pk[MQ_PUBKEY_BYTES],
    char *name, size_t len)
{
	char *buf;
	size_t blen;
	if (mq_read_at(sp->fd, "replicate/authorized_peers", 1 << 20, &buf,
	    &blen) < 0)
		return mq_errcode() == EX_NOINPUT ? 0 : -1;
	const char *at = buf, *n;
	unsigned char got[MQ_PUBKEY_BYTES];
	size_t nlen;
	int found = 0, rc;
	while (!found && (rc = mq_keyline_next(&at, buf + blen, got, &n,
	    &nlen)) != 0)
		if (rc == 1 && !memcmp(got, pk, MQ_PUBKEY_BYTES)) {
			found = 1;
			snprintf(name, len, "%.*s", (int)nlen, n);
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
	if (replicate_dir(sp) < 0)
		return -1;
	int lk = keys_lock(sp);
	if (lk == -1)
		return -1;
	int rc = mq_peer_authorized(sp, pk, n, sizeof n);
	if (rc != 0) {
		keys_unlock(lk);
		return rc < 0 ? -1 : 0;
	}
	char *old = NULL, *text = NULL;
	size_t olen = 0;
	char canon[MQ_PUBKEY_HEX + 1];
	mq_pubkey_hex(pk, canon);
	if (mq_read_at(sp->fd, "replicate/authorized_peers", 1 << 20, &old,
	    &olen) < 0 && mq_errcode() != EX_NOINPUT)
		rc = -1;
	else if (asprintf(&text, "%.*s%s%s%s%s\n", (int)olen, old ? old : "",
	    olen && old[olen - 1] != '\n' ? "\n" : "", canon, name ? " " : "",
	    name ? name : "") < 0)
		rc = mq_err_sys("malloc");
	else
		rc = write_private(sp, "replicate/authorized_peers", text, 0644,
		    1);
	free(old);
	free(text);
	keys_unlock(lk);
	return rc < 0 ? -1 : 1;
}

/* authorized_peers (len bytes at buf) without the lines of the key what
 * names, or of the name what: into out (as long), the key in pk.  0 when
 * no line is what's, -1 (EX_USAGE) when the name is several keys'. */
static int
revoked_text(const char *buf, size_t len, const char *what, char *out,
    unsigned char pk[MQ_PUBKEY_BYTES])
{
	unsigned char want[MQ_PUBKEY_BYTES], got[MQ_PUBKEY_BYTES];
	size_t wl = strlen(what), olen = 0, removed = 0;
	bool by_key = wl == MQ_PUBKEY_HEX &&
	    hex_decode(what, MQ_PUBKEY_HEX, want, sizeof want) == 0;
	char others[600] = "";
	for (const char *p = buf, *end = buf + len; p < end; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end, *at = p, *n;
		size_t nlen;
		int rc = mq_keyline_next(&at, next, got, &n, &nlen);
		if (rc == 1 && (by_key ? !memcmp(got, want, sizeof got) :
		    nlen == wl && !memcmp(n, what, wl))) {
			if (removed++ == 0)
				memcpy(pk, got, sizeof got);
			else if (memcmp(pk, got, sizeof got)) {
				char hex[MQ_PUBKEY_HEX + 1];
				size_t l = strlen(others);
				mq_pubkey_hex(got, hex);
				snprintf(others + l, sizeof others - l, ", %s", hex);
			}
		} else {
			memcpy(out + olen, p, (size_t)(next - p));
			olen += (size_t)(next - p);
		}
		p = next;
	}
	out[olen] = 0;
	if (*others) {
		char hex[MQ_PUBKEY_HEX + 1];
		mq_pubkey_hex(pk, hex);
		return mq_err(EX_USAGE, "%s names several keys: %s%s: revoke "
		    "one by its key", what, hex, others);
	}
	return removed ? 1 : 0;
}

int
mq_peer_revoke(mq_spool *sp, const char *what, char pub[MQ_PUBKEY_HEX + 1])
{
	unsigned char pk[MQ_PUBKEY_BYTES];
	if (!*what || strpbrk(what, "\n\r"))
		return mq_err(EX_USAGE, "a peer to revoke is a public key or a "
		    "name, on one line");
	if (mq_spool_writable(sp) < 0)
		return -1;
	if (mq_faccessat(sp->fd, "replicate/authorized_peers", F_OK,
	    AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? mq_err(EX_NOINPUT, "%s is not in "
		    "authorized_peers (there is none)", what) :
		    mq_err_sys("replicate/authorized_peers");
	if (replicate_dir(sp) < 0)
		return -1;
	int lk = keys_lock(sp);
	if (lk == -1)
		return -1;
	char *buf = NULL, *text = NULL;
	size_t len;
	int rc = mq_read_at(sp->fd, "replicate/authorized_peers", 1 << 20, &buf,
	    &len);
	if (rc == 0 && memchr(buf, 0, len))
		rc = mq_err(EX_DATAERR, "replicate/authorized_peers holds a NUL "
		    "byte: mend it by hand");
	if (rc == 0 && !(text = malloc(len + 1)))
		rc = mq_err_sys("malloc");
	if (rc == 0)
		rc = revoked_text(buf, len, what, text, pk);
	if (rc == 0)
		rc = mq_err(EX_NOINPUT, "%s is not in authorized_peers", what);
	if (rc == 1)
		rc = write_private(sp, "replicate/authorized_peers", text, 0644,
		    1);
	if (rc == 0 && pub)
		mq_pubkey_hex(pk, pub);
	free(buf);
	free(text);
	keys_unlock(lk);
	return rc < 0 ? -1 : 0;
}

/* A key file of the user's (publisher keys, consumer keys of sealed
 * topics): made beside its final name with O_EXCL and linked into place,
 * so it is there whole or not at all and an existing file is never
 * replaced. */
int
mq_keyfile_create(const char *path, const char *magic, const unsigned char *sk,
    size_t sklen)
{
	char text[KEY_TEXT_MAX], tmp[PATH_MAX], rnd[17];
	mq_hex_random(rnd, 16);
	if (mq_path(tmp, sizeof tmp, "%s.tmp.%s", path, rnd) < 0)
		return -1;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0)
		return mq_err(EX_CANTCREAT, "%s: %s", path, strerror(errno));
	key_text(magic, sk, sklen, text);
	size_t len = strlen(text);
	int rc = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0 ? 0 : -1;
	sodium_memzero(text, sizeof text);
	if (close(fd) < 0)
		rc = -1;
	if (rc < 0)
		rc = mq_err(EX_IOERR, "%s: %s", path, strerror(errno));
	else if (link(tmp, path) < 0)
		rc = mq_err(errno == EEXIST ? EX_CANTCREAT : EX_IOERR, "%s: %s",
		    path, errno == EEXIST ? "exists: a key is never replaced" :
		    strerror(errno));
	unlink(tmp);
	return rc;
}

int
mq_keyfile_generate(const char *path, const char *magic,
    int (*keypair)(unsigned char *, unsigned char *), size_t sklen,
    char pub[MQ_PUBKEY_HEX + 1])
{
	unsigned char pk[MQ_PUBKEY_BYTES], sk[crypto_sign_SECRETKEYBYTES];
	if (sklen > sizeof sk)
		return mq_err(EX_SOFTWARE, "secret key of %zu bytes", sklen);
	if (mq_crypto_init() < 0)
		return -1;
	keypair(pk, sk);
	int rc = mq_keyfile_create(path, magic, sk, sklen);
	sodium_memzero(sk, sizeof sk);
	if (rc == 0)
		mq_pubkey_hex(pk, pub);
	return rc;
}

int
mq_signkey_generate(const char *path, char pub[MQ_PUBKEY_HEX + 1])
{
	return mq_keyfile_generate(path, SIGN_MAGIC, crypto_sign_keypair,
	    crypto_sign_SECRETKEYBYTES, pub);
}

int
mq_signkey_load(const char *path, struct mq_identity *id)
{
	char buf[KEY_TEXT_MAX];
	if (mq_crypto_init() < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return mq_err(errno == ENOENT ? EX_NOINPUT : EX_NOPERM, "%s: %s",
		    path, strerror(errno));
	ssize_t len = read(fd, buf, sizeof buf);
	close(fd);
	int rc = len < 0 || key_parse(buf, (size_t)len, SIGN_MAGIC, id) < 0 ?
	    mq_err(EX_DATAERR, "%s: not an mq publisher key (mq-pub --keygen "
	    "makes one)", path) : 0;
	sodium_memzero(buf, sizeof buf);
	return rc;
}
