/*
 * jwk.c: the keys that verify bearer tokens, read from the files the
 * configuration names: HMAC secrets (a file's bytes as they are), PEM
 * public keys, and JWKS files (RFC 7517), whose RSA and EC keys for
 * signatures are kept and whose others are skipped.  libjwt 1.10 takes a
 * public key only as PEM, so every public key is made an EVP_PKEY first
 * (from the PEM, or from the JWK's parameters), which tells its type and
 * curve, and written out again as the PEM libjwt reads: what was checked
 * here is what libjwt gets.  Sizes are bounded: a file at 64 KiB, the
 * keys at 64 in all.
 */
#include <fcntl.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "http.h"

#define KEY_FILE_MAX (64 * 1024)

static const struct curve {
	const char *jwk;                /* a JWK's "crv" */
	const char *group;              /* OpenSSL's name for it */
	int bits;
} curves[] = {
	{ "P-256", "prime256v1", 256 },
	{ "P-384", "secp384r1", 384 },
	{ "P-521", "secp521r1", 521 },
};

static const struct curve *
curve_find(const char *name, bool jwk)
{
	for (size_t i = 0; i < sizeof curves / sizeof *curves; i++)
		if (!strcmp(jwk ? curves[i].jwk : curves[i].group, name))
			return &curves[i];
	return NULL;
}

unsigned char *
mq_http_b64url(const char *s, size_t len, size_t *n)
{
	size_t max = len / 4 * 3 + 2;
	unsigned char *buf = malloc(max + 1);
	if (!buf)
		return NULL;
	if (sodium_base642bin(buf, max, s, len, NULL, n, NULL,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0) {
		free(buf);
		return NULL;
	}
	buf[*n] = 0;
	return buf;
}

/* The operator's path is followed through links (a secret mounted by
 * Kubernetes is one), which mq_read_at, made for the spool, refuses. */
static int
read_file(const char *path, char **buf, size_t *len)
{
	char *real = realpath(path, NULL);
	if (!real)
		return mq_err_sys("%s", path);
	int rc = mq_read_at(AT_FDCWD, real, KEY_FILE_MAX, buf, len);
	free(real);
	return rc < 0 ? mq_err_recode(EX_DATAERR, EX_CONFIG) : 0;
}

static void
key_free(struct mq_http_key *k)
{
	if (k->data)
		sodium_memzero(k->data, k->len);
	free(k->data);
	free(k->kid);
	free(k->alg);
	memset(k, 0, sizeof *k);
}

/* Takes k, whether it fits or not. */
static int
key_add(struct mq_http_keys *ks, struct mq_http_key *k, const char *path)
{
	if (ks->n == MQ_HTTP_KEYS_MAX) {
		key_free(k);
		return mq_err(EX_CONFIG, "%s: more than %d keys in all", path,
		    MQ_HTTP_KEYS_MAX);
	}
	ks->v[ks->n++] = *k;
	return 0;
}

/* k's type, curve and PEM for pkey.  RSA keys under 2048 bits are
 * refused (RFC 7518, 3.3), and curves no ES alg uses. */
static int
key_from_pkey(EVP_PKEY *pkey, const char *what, struct mq_http_key *k)
{
	const struct curve *c;
	char group[32];
	switch (EVP_PKEY_get_base_id(pkey)) {
	case EVP_PKEY_RSA:
		if (EVP_PKEY_get_bits(pkey) < 2048)
			return mq_err(EX_CONFIG, "%s: RSA key under 2048 bits",
			    what);
		k->type = MQ_HTTP_KEY_RSA;
		break;
	case EVP_PKEY_EC:
		if (EVP_PKEY_get_utf8_string_param(pkey,
		    OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, NULL) != 1 ||
		    !(c = curve_find(group, false)))
			return mq_err(EX_CONFIG, "%s: EC key not on P-256, P-384 "
			    "or P-521", what);
		k->type = MQ_HTTP_KEY_EC;
		k->curve = c->bits;
		break;
	default:
		return mq_err(EX_CONFIG, "%s: not an RSA or EC key", what);
	}
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
	int valid = ctx && EVP_PKEY_public_check(ctx) == 1;
	EVP_PKEY_CTX_free(ctx);
	if (!valid)
		return mq_err(EX_CONFIG, "%s: not a valid public key", what);

	BIO *b = BIO_new(BIO_s_mem());
	char *pem;
	long n = 0;
	if (b && PEM_write_bio_PUBKEY(b, pkey) == 1)
		n = BIO_get_mem_data(b, &pem);
	if (n > 0 && (k->data = malloc((size_t)n))) {
		memcpy(k->data, pem, (size_t)n);
		k->len = (size_t)n;
	}
	BIO_free(b);
	return k->data ? 0 : mq_err(EX_OSERR, "%s: cannot write it as PEM",
	    what);
}

static int
secret_read(const char *path, struct mq_http_keys *ks)
{
	struct mq_http_key k = { .type = MQ_HTTP_KEY_HMAC };
	char *buf;
	if (read_file(path, &buf, &k.len) < 0)
		return -1;
	k.data = (unsigned char *)buf;
	if (k.len == 0) {
		key_free(&k);
		return mq_err(EX_CONFIG, "%s: empty secret", path);
	}
	return key_add(ks, &k, path);
}

static int
pem_read(const char *path, struct mq_http_keys *ks)
{
	struct mq_http_key k = { 0 };
	char *buf;
	size_t len;
	if (read_file(path, &buf, &len) < 0)
		return -1;
	BIO *b = BIO_new_mem_buf(buf, (int)len);
	EVP_PKEY *pkey = b ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	free(buf);
	int rc = !pkey ? mq_err(EX_CONFIG, "%s: not a PEM public key", path) :
	    key_from_pkey(pkey, path, &k);
	EVP_PKEY_free(pkey);
	return rc < 0 ? -1 : key_add(ks, &k, path);
}

/* A JWK's member name, base64url: decoded, or NULL. */
static unsigned char *
jwk_bytes(json_t *jk, const char *name, size_t *n)
{
	const char *s = json_string_value(json_object_get(jk, name));
	return s ? mq_http_b64url(s, strlen(s), n) : NULL;
}

static BIGNUM *
jwk_bn(json_t *jk, const char *name)
{
	size_t n;
	unsigned char *b = jwk_bytes(jk, name, &n);
	BIGNUM *bn = b && n > 0 ? BN_bin2bn(b, (int)n, NULL) : NULL;
	free(b);
	return bn;
}

static EVP_PKEY *
pkey_from(OSSL_PARAM_BLD *bld, const char *type)
{
	OSSL_PARAM *p = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
	EVP_PKEY *pkey = NULL;
	if (p && ctx && EVP_PKEY_fromdata_init(ctx) == 1)
		EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, p);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(p);
	return pkey;
}

static EVP_PKEY *
jwk_rsa(json_t *jk)
{
	BIGNUM *n = jwk_bn(jk, "n"), *e = jwk_bn(jk, "e");
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	EVP_PKEY *pkey = NULL;
	if (n && e && bld &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
		pkey = pkey_from(bld, "RSA");
	OSSL_PARAM_BLD_free(bld);
	BN_free(n);
	BN_free(e);
	return pkey;
}

/* x and y are each as long as the field (RFC 7518, 6.2.1.2): the point
 * is 0x04 and the two, uncompressed. */
static EVP_PKEY *
jwk_ec(json_t *jk, const struct curve *c)
{
	size_t field = (size_t)(c->bits + 7) / 8, xn = 0, yn = 0;
	unsigned char pt[1 + 2 * 66];
	unsigned char *x = jwk_bytes(jk, "x", &xn), *y = jwk_bytes(jk, "y", &yn);
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	EVP_PKEY *pkey = NULL;
	if (x && y && xn == field && yn == field && bld) {
		pt[0] = 0x04;
		memcpy(pt + 1, x, field);
		memcpy(pt + 1 + field, y, field);
		if (OSSL_PARAM_BLD_push_utf8_string(bld,
		    OSSL_PKEY_PARAM_GROUP_NAME, c->group, 0) &&
		    OSSL_PARAM_BLD_push_octet_string(bld,
		    OSSL_PKEY_PARAM_PUB_KEY, pt, 1 + 2 * field))
			pkey = pkey_from(bld, "EC");
	}
	OSSL_PARAM_BLD_free(bld);
	free(x);
	free(y);
	return pkey;
}

/* Key i of a JWKS file: added, or skipped (0) when it is not for
 * signatures, or of a type or curve that no alg here uses. */
static int
jwk_add(json_t *jk, const char *path, size_t i, struct mq_http_keys *ks)
{
	char what[512];
	snprintf(what, sizeof what, "%s: key %zu", path, i);
	json_t *use = json_object_get(jk, "use");
	json_t *kid = json_object_get(jk, "kid"), *alg = json_object_get(jk, "alg");
	const char *kty = json_string_value(json_object_get(jk, "kty"));
	if (!kty || (use && !json_is_string(use)) ||
	    (kid && !json_is_string(kid)) || (alg && !json_is_string(alg)))
		return mq_err(EX_CONFIG, "%s: not a JWK", what);
	if (use && strcmp(json_string_value(use), "sig"))
		return 0;

	EVP_PKEY *pkey;
	if (!strcmp(kty, "RSA"))
		pkey = jwk_rsa(jk);
	else if (!strcmp(kty, "EC")) {
		const char *crv = json_string_value(json_object_get(jk, "crv"));
		const struct curve *c = crv ? curve_find(crv, true) : NULL;
		if (!c)
			return 0;
		pkey = jwk_ec(jk, c);
	} else
		return 0;
	if (!pkey)
		return mq_err(EX_CONFIG, "%s: not a valid %s key", what, kty);

	struct mq_http_key k = { 0 };
	int rc = key_from_pkey(pkey, what, &k);
	EVP_PKEY_free(pkey);
	if (rc == 0 && ((kid && !(k.kid = strdup(json_string_value(kid)))) ||
	    (alg && !(k.alg = strdup(json_string_value(alg))))))
		rc = mq_err_sys("%s", what);
	if (rc < 0) {
		key_free(&k);
		return -1;
	}
	return key_add(ks, &k, path);
}

static int
jwks_read(const char *path, struct mq_http_keys *ks)
{
	char *buf;
	size_t len, before = ks->n;
	if (read_file(path, &buf, &len) < 0)
		return -1;
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	free(buf);
	json_t *keys = json_object_get(doc, "keys");
	int rc = json_is_array(keys) ? 0 :
	    mq_err(EX_CONFIG, "%s: not a JWKS file", path);
	for (size_t i = 0; rc == 0 && i < json_array_size(keys); i++)
		rc = jwk_add(json_array_get(keys, i), path, i, ks);
	json_decref(doc);
	if (rc == 0 && ks->n == before)
		rc = mq_err(EX_CONFIG, "%s: no RSA or EC key for signatures",
		    path);
	return rc;
}

int
mq_http_keys_read(const struct mq_http_auth_conf *conf,
    struct mq_http_keys *ks)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < conf->nsecret; i++)
		rc = secret_read(conf->secret_files[i], ks);
	for (size_t i = 0; rc == 0 && i < conf->nkey; i++)
		rc = pem_read(conf->key_files[i], ks);
	for (size_t i = 0; rc == 0 && i < conf->njwks; i++)
		rc = jwks_read(conf->jwks_files[i], ks);
	/* OpenSSL's queue is left empty: the error set says what failed. */
	ERR_clear_error();
	if (rc < 0)
		mq_http_keys_free(ks);
	return rc;
}

void
mq_http_keys_free(struct mq_http_keys *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		key_free(&ks->v[i]);
	ks->n = 0;
}
