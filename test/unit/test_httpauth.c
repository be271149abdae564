/*
 * test_httpauth.c: bearer tokens (auth.c, jwk.c): tokens made with
 * libjwt's encoder, keys generated here with OpenSSL (RSA 2048, EC P-256,
 * P-384, P-521) and written to a temporary directory as PEM files and a
 * JWKS file; HS, RS and ES tokens verified, the algorithm confusions
 * refused (an RS256 key's PEM as an HS256 secret, "none", a curve not the
 * alg's), the claims checked, the scopes' grants, the Authorization
 * header's forms, and the configurations refused.  The clock is NOW.
 *
 * test_scope_property: random scopes (seeded: MQ_TEST_SEED, else a fixed
 * seed, printed) asked about random topics and groups, each answer
 * compared with a model of what the scope's items allow, built from the
 * items as they were made (not parsed back) with a glob matcher of its
 * own.
 */
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "http.h"
#include "t.h"

#define NOW 1700000000.0
#define EXP "\"exp\":1700000600"
#define SECRET "0123456789abcdef0123456789abcdef"

static char dir[] = "/tmp/mq-httpauth.XXXXXX";

/* A file of the temporary directory: its path, in a buffer of paths. */
static const char *
put(const char *name, const void *data, size_t len)
{
	static char paths[32][256];
	static size_t n;
	char *p = paths[n++ % 32];
	snprintf(p, 256, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(p);
		exit(1);
	}
	return p;
}

/* pkey as PEM (the public key, or the private one): a string to free. */
static char *
pem(EVP_PKEY *pkey, bool private)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	if (!b || (private ? PEM_write_bio_PrivateKey(b, pkey, NULL, NULL, 0,
	    NULL, NULL) : PEM_write_bio_PUBKEY(b, pkey)) != 1)
		exit(1);
	long n = BIO_get_mem_data(b, &p);
	char *s = strndup(p, (size_t)n);
	BIO_free(b);
	return s;
}

static char *
b64url(const unsigned char *bin, size_t len)
{
	size_t max = sodium_base64_ENCODED_LEN(len,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *s = malloc(max);
	sodium_bin2base64(s, max, bin, len,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return s;
}

/* A BIGNUM parameter of pkey, base64url, at least pad bytes long. */
static char *
param(EVP_PKEY *pkey, const char *name, int pad)
{
	BIGNUM *bn = NULL;
	unsigned char buf[1024];
	if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1)
		exit(1);
	int n = BN_num_bytes(bn) > pad ? BN_num_bytes(bn) : pad;
	BN_bn2binpad(bn, buf, n);
	BN_free(bn);
	return b64url(buf, (size_t)n);
}

/* A token of claims (JSON), signed by libjwt with key, kid in its
 * header when not NULL: a string to free. */
static char *
make(jwt_alg_t alg, const char *key, size_t len, const char *kid,
    const char *claims)
{
	jwt_t *j;
	if (jwt_new(&j) || jwt_add_grants_json(j, claims) ||
	    (kid && jwt_add_header(j, "kid", kid)) ||
	    jwt_set_alg(j, alg, (const unsigned char *)key, (int)len))
		exit(1);
	char *s = jwt_encode_str(j);
	jwt_free(j);
	return s;
}

static char *
hs(const char *claims)
{
	return make(JWT_ALG_HS256, SECRET, strlen(SECRET), NULL, claims);
}

/* A token of any header, its signature made up. */
static char *
raw(const char *head, const char *claims)
{
	char *h = b64url((const unsigned char *)head, strlen(head));
	char *c = b64url((const unsigned char *)claims, strlen(claims));
	char *s;
	if (asprintf(&s, "%s.%s.c2lnbmF0dXJl", h, c) < 0)
		exit(1);
	free(h);
	free(c);
	return s;
}

static int
check(const struct mq_http_auth *a, const char *tok, double now,
    struct mq_http_grant **g)
{
	char *h;
	if (asprintf(&h, "Bearer %s", tok) < 0)
		exit(1);
	int rc = mq_http_auth_check(a, h, now, g);
	free(h);
	return rc;
}

/* Whether a takes tok (freed) at now, with subject sub if not NULL. */
static bool
accepted_at(const struct mq_http_auth *a, char *tok, double now,
    const char *sub)
{
	struct mq_http_grant *g = NULL;
	int rc = check(a, tok, now, &g);
	bool good = rc == 0 && g && (!sub ||
	    !strcmp(mq_http_grant_subject(g), sub));
	if (rc < 0)
		printf("# refused: %s\n", mq_errmsg());
	mq_http_grant_free(g);
	free(tok);
	return good;
}

static bool
accepted(const struct mq_http_auth *a, char *tok)
{
	return accepted_at(a, tok, NOW, NULL);
}

/* Whether the header h is refused with EX_NOPERM and message msg. */
static bool
header_refused(const struct mq_http_auth *a, const char *h, double now,
    const char *msg)
{
	/* Not NULL before: a refusal must make it so. */
	struct mq_http_grant *g = (struct mq_http_grant *)&g;
	int rc = mq_http_auth_check(a, h, now, &g);
	bool good = rc < 0 && !g && mq_errcode() == EX_NOPERM &&
	    !strcmp(mq_errmsg(), msg);
	if (rc == 0)
		mq_http_grant_free(g);
	if (!good)
		printf("# want \"%s\", got %d: %s\n", msg, rc,
		    rc < 0 ? mq_errmsg() : "accepted");
	return good;
}

static bool
refused_at(const struct mq_http_auth *a, char *tok, double now,
    const char *msg)
{
	char *h;
	if (asprintf(&h, "Bearer %s", tok) < 0)
		exit(1);
	bool good = header_refused(a, h, now, msg);
	free(h);
	free(tok);
	return good;
}

static bool
refused(const struct mq_http_auth *a, char *tok, const char *msg)
{
	return refused_at(a, tok, NOW, msg);
}

static struct mq_http_auth *
auth(const char *secret, const char *key, const char *jwks,
    const char *aud, const char *iss, double leeway)
{
	struct mq_http_auth_conf c = {
		.secret_files = &secret, .nsecret = secret != NULL,
		.key_files = &key, .nkey = key != NULL,
		.jwks_files = &jwks, .njwks = jwks != NULL,
		.audience = aud, .issuer = iss, .leeway = leeway,
	};
	struct mq_http_auth *a = mq_http_auth_new(&c);
	if (!a)
		printf("# %s\n", mq_errmsg());
	return a;
}

/* Whether a configuration is refused with code. */
static bool
conf_refused(const char *secret, const char *key, const char *jwks,
    int code)
{
	struct mq_http_auth *a = auth(secret, key, jwks, NULL, NULL, 0);
	mq_http_auth_free(a);
	return !a && mq_errcode() == code;
}

struct keys {
	EVP_PKEY *rsa, *ec256, *ec256b, *ec384, *ec521;
	char *rsa_priv, *rsa_pub, *ec256_priv, *ec256b_priv, *ec384_priv;
	char *ec521_priv;
	const char *secret, *rsa_pem, *ec256_pem, *ec384_pem, *ec521_pem;
	const char *jwks;
};

static void
keys_make(struct keys *k)
{
	k->rsa = EVP_RSA_gen(2048);
	k->ec256 = EVP_EC_gen("P-256");
	k->ec256b = EVP_EC_gen("P-256");
	k->ec384 = EVP_EC_gen("P-384");
	k->ec521 = EVP_EC_gen("P-521");
	if (!k->rsa || !k->ec256 || !k->ec256b || !k->ec384 || !k->ec521)
		exit(1);
	k->rsa_priv = pem(k->rsa, true);
	k->rsa_pub = pem(k->rsa, false);
	k->ec256_priv = pem(k->ec256, true);
	k->ec256b_priv = pem(k->ec256b, true);
	k->ec384_priv = pem(k->ec384, true);
	k->ec521_priv = pem(k->ec521, true);
	k->secret = put("secret", SECRET, strlen(SECRET));
	k->rsa_pem = put("rsa.pem", k->rsa_pub, strlen(k->rsa_pub));
	char *p = pem(k->ec256, false);
	k->ec256_pem = put("ec256.pem", p, strlen(p));
	free(p);
	p = pem(k->ec384, false);
	k->ec384_pem = put("ec384.pem", p, strlen(p));
	free(p);
	p = pem(k->ec521, false);
	k->ec521_pem = put("ec521.pem", p, strlen(p));
	free(p);

	/* The RSA key twice, once for encryption (skipped), the P-384 key,
	 * and keys of types and curves no alg here uses (skipped too). */
	char *n = param(k->rsa, OSSL_PKEY_PARAM_RSA_N, 0);
	char *e = param(k->rsa, OSSL_PKEY_PARAM_RSA_E, 0);
	char *x = param(k->ec384, OSSL_PKEY_PARAM_EC_PUB_X, 48);
	char *y = param(k->ec384, OSSL_PKEY_PARAM_EC_PUB_Y, 48);
	char *jwks;
	int len = asprintf(&jwks, "{\"keys\":["
	    "{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"},"
	    "{\"kty\":\"RSA\",\"use\":\"enc\",\"kid\":\"renc\","
	    "\"n\":\"%s\",\"e\":\"%s\"},"
	    "{\"kty\":\"RSA\",\"use\":\"sig\",\"kid\":\"r1\",\"alg\":\"RS256\","
	    "\"n\":\"%s\",\"e\":\"%s\"},"
	    "{\"kty\":\"EC\",\"crv\":\"P-384\",\"kid\":\"e1\","
	    "\"x\":\"%s\",\"y\":\"%s\"},"
	    "{\"kty\":\"EC\",\"crv\":\"secp256k1\",\"x\":\"AA\",\"y\":\"AA\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AA\"}]}",
	    n, e, n, e, x, y);
	if (len < 0)
		exit(1);
	k->jwks = put("keys.jwks", jwks, (size_t)len);
	free(jwks);
	free(n);
	free(e);
	free(x);
	free(y);
}

static void
keys_free(struct keys *k)
{
	EVP_PKEY_free(k->rsa);
	EVP_PKEY_free(k->ec256);
	EVP_PKEY_free(k->ec256b);
	EVP_PKEY_free(k->ec384);
	EVP_PKEY_free(k->ec521);
	free(k->rsa_priv);
	free(k->rsa_pub);
	free(k->ec256_priv);
	free(k->ec256b_priv);
	free(k->ec384_priv);
	free(k->ec521_priv);
}

static void
test_algs(const struct keys *k)
{
	struct mq_http_auth *hsa = auth(k->secret, NULL, NULL, NULL, NULL, 0);
	struct mq_http_auth *rsa = auth(NULL, k->rsa_pem, NULL, NULL, NULL, 0);
	struct mq_http_auth *jw = auth(NULL, NULL, k->jwks, NULL, NULL, 0);
	struct mq_http_auth *ec = auth(NULL, k->ec256_pem, NULL, NULL, NULL, 0);
	struct mq_http_auth *ec384 = auth(NULL, k->ec384_pem, NULL, NULL, NULL,
	    0);
	struct mq_http_auth *ec521 = auth(NULL, k->ec521_pem, NULL, NULL, NULL,
	    0);
	struct mq_http_auth *both = auth(k->secret, k->rsa_pem, NULL, NULL,
	    NULL, 0);
	if (!hsa || !rsa || !jw || !ec || !ec384 || !ec521 || !both)
		exit(1);
	size_t rl = strlen(k->rsa_priv);

	ok(accepted(hsa, hs("{" EXP "}")), "HS256 with the secret");
	ok(accepted(hsa, make(JWT_ALG_HS512, SECRET, strlen(SECRET), NULL,
	    "{" EXP "}")), "HS512 with the secret");
	ok(refused(hsa, make(JWT_ALG_HS256, "another secret", 14, NULL,
	    "{" EXP "}"), "bad signature"), "HS256 with another secret: "
	    "bad signature");
	ok(accepted(rsa, make(JWT_ALG_RS256, k->rsa_priv, rl, NULL,
	    "{" EXP "}")), "RS256 with the PEM key");
	ok(accepted(rsa, make(JWT_ALG_RS512, k->rsa_priv, rl, NULL,
	    "{" EXP "}")), "RS512 with the PEM key");
	ok(accepted(jw, make(JWT_ALG_RS256, k->rsa_priv, rl, "r1",
	    "{" EXP "}")), "RS256 with the JWKS key of its kid");
	ok(accepted(jw, make(JWT_ALG_RS256, k->rsa_priv, rl, NULL,
	    "{" EXP "}")), "RS256 without kid: the JWKS keys tried in turn");
	ok(refused(jw, make(JWT_ALG_RS256, k->rsa_priv, rl, "r2",
	    "{" EXP "}"), "no key for this token"), "a kid the JWKS has not");
	ok(refused(jw, make(JWT_ALG_RS256, k->rsa_priv, rl, "renc",
	    "{" EXP "}"), "no key for this token"), "the JWKS key for "
	    "encryption is skipped");
	ok(refused(jw, make(JWT_ALG_RS384, k->rsa_priv, rl, "r1",
	    "{" EXP "}"), "no key for this token"), "the JWKS key's alg "
	    "(RS256) is the only one it verifies");
	ok(accepted(jw, make(JWT_ALG_ES384, k->ec384_priv,
	    strlen(k->ec384_priv), "e1", "{" EXP "}")), "ES384 with the JWKS "
	    "P-384 key");
	ok(accepted(ec, make(JWT_ALG_ES256, k->ec256_priv,
	    strlen(k->ec256_priv), NULL, "{" EXP "}")), "ES256 with the PEM "
	    "P-256 key");
	ok(accepted(ec521, make(JWT_ALG_ES512, k->ec521_priv,
	    strlen(k->ec521_priv), NULL, "{" EXP "}")), "ES512 with the PEM "
	    "P-521 key");
	ok(refused(ec, make(JWT_ALG_ES256, k->ec256b_priv,
	    strlen(k->ec256b_priv), NULL, "{" EXP "}"), "bad signature"),
	    "ES256 by another key: bad signature");
	ok(refused(ec384, make(JWT_ALG_ES256, k->ec256_priv,
	    strlen(k->ec256_priv), NULL, "{" EXP "}"),
	    "no key for this token"), "ES256 with only a P-384 key: no key");
	ok(refused(ec, make(JWT_ALG_RS256, k->rsa_priv, rl, NULL,
	    "{" EXP "}"), "no key for this token"), "RS256 with only an EC "
	    "key: no key");

	/* The classic confusion: the public key's PEM as an HMAC secret. */
	ok(refused(rsa, make(JWT_ALG_HS256, k->rsa_pub, strlen(k->rsa_pub),
	    NULL, "{" EXP "}"), "no key for this token"), "HS256 signed with "
	    "the RSA public key's PEM: refused");
	ok(refused(both, make(JWT_ALG_HS256, k->rsa_pub, strlen(k->rsa_pub),
	    NULL, "{" EXP "}"), "bad signature"), "so it is beside a secret");
	ok(accepted(both, make(JWT_ALG_RS256, k->rsa_priv, rl, NULL,
	    "{" EXP "}")) && accepted(both, hs("{" EXP "}")), "where both "
	    "kinds of key verify their own algs");

	jwt_t *j;
	jwt_new(&j);
	jwt_add_grants_json(j, "{" EXP "}");
	char *none = jwt_encode_str(j);
	jwt_free(j);
	ok(refused(hsa, none, "unsupported alg none"), "alg none refused");
	ok(refused(hsa, raw("{\"alg\":\"hs256\"}", "{" EXP "}"),
	    "unsupported alg hs256"), "alg in lower case refused");
	ok(refused(hsa, raw("{\"alg\":\"PS256\"}", "{" EXP "}"),
	    "unsupported alg PS256"), "PS256 refused");
	ok(refused(hsa, raw("{\"alg\":\"x\\ny\"}", "{" EXP "}"),
	    "unsupported alg"), "an alg not a plain word is not named back");
	ok(refused(hsa, raw("{\"alg\":\"HS256\",\"typ\":\"at+jwt\"}",
	    "{" EXP "}"), "unsupported typ"), "typ other than JWT refused");
	ok(refused(hsa, raw("{\"alg\":\"HS256\",\"crit\":[\"exp\"]}",
	    "{" EXP "}"), "unsupported crit"), "crit refused");
	ok(refused(hsa, raw("{\"alg\":\"HS256\",\"alg\":\"HS256\"}",
	    "{" EXP "}"), "malformed token"), "a header with a name twice "
	    "refused");

	mq_http_auth_free(hsa);
	mq_http_auth_free(rsa);
	mq_http_auth_free(jw);
	mq_http_auth_free(ec);
	mq_http_auth_free(ec384);
	mq_http_auth_free(ec521);
	mq_http_auth_free(both);
}

static void
test_claims(const struct keys *k)
{
	struct mq_http_auth *a = auth(k->secret, NULL, NULL, NULL, NULL, 0);
	struct mq_http_auth *l = auth(k->secret, NULL, NULL, "mq",
	    "https://idp.example", 30);
	if (!a || !l)
		exit(1);
	ok(refused(a, hs("{\"exp\":1699999990}"), "token expired"),
	    "exp behind refused");
	ok(refused(a, hs("{\"exp\":1700000000}"), "token expired"),
	    "exp now refused");
	ok(accepted(a, hs("{\"exp\":1700000000.5}")), "exp a half second "
	    "ahead, as a real, taken");
	ok(refused(a, hs("{\"sub\":\"a\"}"), "token has no exp"),
	    "no exp refused");
	ok(refused(a, hs("{\"exp\":\"1700000600\"}"), "malformed token"),
	    "exp a string refused");
	ok(refused(a, hs("{" EXP ",\"nbf\":1700000060}"),
	    "token not yet valid"), "nbf ahead refused");
	ok(accepted(a, hs("{" EXP ",\"nbf\":1700000000}")), "nbf now taken");

	const char *ai = "\"aud\":\"mq\",\"iss\":\"https://idp.example\"";
	char c[256];
	snprintf(c, sizeof c, "{\"exp\":1699999980,%s}", ai);
	ok(accepted(l, hs(c)), "exp 20 s behind, leeway 30: taken");
	snprintf(c, sizeof c, "{\"exp\":1699999969,%s}", ai);
	ok(refused(l, hs(c), "token expired"), "exp 31 s behind: refused");
	snprintf(c, sizeof c, "{" EXP ",\"nbf\":1700000020,%s}", ai);
	ok(accepted(l, hs(c)), "nbf 20 s ahead, leeway 30: taken");
	snprintf(c, sizeof c, "{" EXP ",\"nbf\":1700000031,%s}", ai);
	ok(refused(l, hs(c), "token not yet valid"), "nbf 31 s ahead: refused");

	const char *iss = "\"iss\":\"https://idp.example\"";
	snprintf(c, sizeof c, "{" EXP ",\"aud\":\"other\",%s}", iss);
	ok(refused(l, hs(c), "wrong audience"), "another audience refused");
	snprintf(c, sizeof c, "{" EXP ",\"aud\":[\"a\",\"b\"],%s}", iss);
	ok(refused(l, hs(c), "wrong audience"), "an array without it refused");
	snprintf(c, sizeof c, "{" EXP ",%s}", iss);
	ok(refused(l, hs(c), "wrong audience"), "no aud refused");
	snprintf(c, sizeof c, "{" EXP ",\"aud\":[\"a\",\"mq\"],%s}", iss);
	ok(accepted(l, hs(c)), "an array holding it taken");
	ok(refused(l, hs("{" EXP ",\"aud\":\"mq\",\"iss\":\"https://evil\"}"),
	    "wrong issuer"), "another issuer refused");
	ok(refused(l, hs("{" EXP ",\"aud\":\"mq\"}"), "wrong issuer"),
	    "no iss refused");
	ok(accepted(a, hs("{" EXP ",\"aud\":\"x\",\"iss\":\"y\"}")),
	    "aud and iss unchecked when not configured");

	ok(accepted_at(a, hs("{" EXP ",\"sub\":\"alice\",\"jti\":\"j1\"}"),
	    NOW, "alice"), "subject: sub");
	ok(accepted_at(a, hs("{" EXP ",\"jti\":\"j1\"}"), NOW, "j1"),
	    "subject: jti without sub");
	ok(accepted_at(a, hs("{" EXP ",\"sub\":7}"), NOW, "-"),
	    "subject: \"-\" without either");
	mq_http_auth_free(a);
	mq_http_auth_free(l);
}

static struct mq_http_grant *
grant(const struct mq_http_auth *a, const char *scope)
{
	char c[512];
	snprintf(c, sizeof c, "{" EXP ",\"scope\":%s}", scope);
	char *tok = hs(c);
	struct mq_http_grant *g = NULL;
	if (check(a, tok, NOW, &g) < 0) {
		printf("# %s\n", mq_errmsg());
		exit(1);
	}
	free(tok);
	return g;
}

static void
test_scopes(const struct keys *k)
{
	struct mq_http_auth *a = auth(k->secret, NULL, NULL, NULL, NULL, 0);
	if (!a)
		exit(1);
	struct mq_http_grant *g = grant(a, "\"publish:orders.* consume:t/g* "
	    "consume:u  frobnicate:all read admin:x.*\"");
	ok(mq_http_allowed(g, MQ_HTTP_PUBLISH, "orders.eu", NULL),
	    "publish:orders.* allows orders.eu");
	ok(!mq_http_allowed(g, MQ_HTTP_PUBLISH, "ordersx", NULL),
	    "but not ordersx");
	ok(!mq_http_allowed(g, MQ_HTTP_CONSUME, "orders.eu", NULL),
	    "nor consuming orders.eu");
	ok(mq_http_allowed(g, MQ_HTTP_CONSUME, "t", "g1"),
	    "consume:t/g* allows (t, g1)");
	ok(!mq_http_allowed(g, MQ_HTTP_CONSUME, "t", "h"), "not (t, h)");
	ok(!mq_http_allowed(g, MQ_HTTP_CONSUME, "t", NULL),
	    "nor (t, any group)");
	ok(mq_http_allowed(g, MQ_HTTP_CONSUME, "u", "h") &&
	    mq_http_allowed(g, MQ_HTTP_CONSUME, "u", NULL),
	    "consume:u allows (u, h) and (u, any group)");
	ok(mq_http_allowed(g, MQ_HTTP_ADMIN, "x.y", NULL) &&
	    !mq_http_allowed(g, MQ_HTTP_ADMIN, NULL, NULL),
	    "admin:x.* allows x.y, not the spool");
	ok(mq_http_allowed_any(g, "orders.eu") && mq_http_allowed_any(g, "t") &&
	    mq_http_allowed_any(g, "x.z") && !mq_http_allowed_any(g, "v"),
	    "allowed_any: any item's topic");
	ok(!mq_http_allowed_any(g, "all") && !mq_http_allowed_any(g, "read"),
	    "unknown items ignored");
	mq_http_grant_free(g);

	g = grant(a, "\"admin:*\"");
	ok(mq_http_allowed(g, MQ_HTTP_ADMIN, NULL, NULL) &&
	    mq_http_allowed(g, MQ_HTTP_ADMIN, "any", NULL),
	    "admin:* allows the spool and any topic");
	ok(!mq_http_allowed(g, MQ_HTTP_PUBLISH, "any", NULL),
	    "but not publishing");
	mq_http_grant_free(g);

	g = grant(a, "\"admin:t\"");
	ok(mq_http_allowed(g, MQ_HTTP_ADMIN, "t", NULL) &&
	    !mq_http_allowed(g, MQ_HTTP_ADMIN, NULL, NULL),
	    "admin:t allows t, not the spool");
	mq_http_grant_free(g);

	g = grant(a, "[\"publish:a\",\"consume:b/c\",\"consume:d/*\",7]");
	ok(mq_http_allowed(g, MQ_HTTP_PUBLISH, "a", NULL) &&
	    mq_http_allowed(g, MQ_HTTP_CONSUME, "b", "c") &&
	    !mq_http_allowed(g, MQ_HTTP_CONSUME, "b", "e"),
	    "scope as an array");
	ok(mq_http_allowed(g, MQ_HTTP_CONSUME, "d", NULL),
	    "consume:d/* allows (d, any group)");
	mq_http_grant_free(g);

	g = grant(a, "{\"publish\":\"a\"}");
	ok(!mq_http_allowed_any(g, "a") && !mq_http_allowed_any(g, "publish"),
	    "a scope neither string nor array allows nothing");
	mq_http_grant_free(g);
	ok(!mq_http_allowed(NULL, MQ_HTTP_ADMIN, NULL, NULL) &&
	    !strcmp(mq_http_grant_subject(NULL), "-"), "no grant allows "
	    "nothing");
	mq_http_auth_free(a);
}

/* ---- the model of test_scope_property ---- */

static uint64_t rng;

static unsigned
pick(unsigned n)
{
	rng ^= rng << 13;                       /* xorshift64 */
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* fnmatch(3) without flags for patterns of literals, '*' and '?'. */
static bool
glob(const char *p, const char *s)
{
	if (!*p)
		return !*s;
	if (*p == '*')
		return glob(p + 1, s) || (*s && glob(p, s + 1));
	return *s && (*p == '?' || *p == *s) && glob(p + 1, s + 1);
}

static const char *const topics[] = { "a", "b", "ab", "a.b", "payments",
    "x.y.z" };
static const char *const groups[] = { "g", "h", "g1", "gg" };
#define NTOPICS (sizeof topics / sizeof *topics)
#define NGROUPS (sizeof groups / sizeof *groups)

/* A pattern: a name, a glob of the usual kinds, or random characters of
 * names and globs. */
static void
pattern(char *out, size_t size, const char *const *names, size_t n)
{
	static const char *const globs[] = { "*", "?", "a*", "*b", "a.*",
	    "g?", "*.*", "?*", "" };
	static const char chars[] = "abgh1.*?";
	switch (pick(3)) {
	case 0:
		snprintf(out, size, "%s", names[pick((unsigned)n)]);
		break;
	case 1:
		snprintf(out, size, "%s", globs[pick(sizeof globs /
		    sizeof *globs)]);
		break;
	default: {
		size_t len = 1 + pick(4);
		for (size_t i = 0; i < len && i + 1 < size; i++)
			out[i] = chars[pick(sizeof chars - 1)];
		out[len < size ? len : size - 1] = 0;
	}
	}
}

struct model_item {
	int perm;                               /* 0: an item not ours */
	char topic[16], group[16];
	bool has_group;
};

/* What the model says an item allows: perm on topic (NULL: the spool)
 * and group (NULL: every group). */
static bool
item_allows(const struct model_item *it, int perm, const char *topic,
    const char *group)
{
	if (!it->perm || (perm && it->perm != perm))
		return false;
	if (topic ? !glob(it->topic, topic) : strcmp(it->topic, "*"))
		return false;
	if (!it->has_group || !perm)
		return true;
	return group ? glob(it->group, group) : !strcmp(it->group, "*");
}

static bool
model_allowed(const struct model_item *v, size_t n, int perm,
    const char *topic, const char *group)
{
	for (size_t i = 0; i < n; i++)
		if (item_allows(&v[i], perm, topic, group))
			return true;
	return false;
}

/* A random item, written as the scope says it into out. */
static void
item_make(struct model_item *it, char *out, size_t size)
{
	static const struct { const char *prefix; int perm; } kinds[] = {
		{ "publish:", MQ_HTTP_PUBLISH }, { "consume:", MQ_HTTP_CONSUME },
		{ "admin:", MQ_HTTP_ADMIN }, { "read:", 0 }, { "Publish:", 0 },
		{ "publish", 0 }, { "consume-", 0 },
	};
	unsigned k = pick(sizeof kinds / sizeof *kinds);
	memset(it, 0, sizeof *it);
	pattern(it->topic, sizeof it->topic, topics, NTOPICS);
	it->perm = kinds[k].perm;
	/* Only a consume item names groups; another keeps "/..." in its
	 * topic, which no topic name matches. */
	bool slash = pick(3) == 0;
	char grp[16] = "";
	if (slash)
		pattern(grp, sizeof grp, groups, NGROUPS);
	if (slash && it->perm == MQ_HTTP_CONSUME) {
		it->has_group = true;
		snprintf(it->group, sizeof it->group, "%s", grp);
	} else if (slash) {
		size_t l = strlen(it->topic);
		snprintf(it->topic + l, sizeof it->topic - l, "/%s", grp);
	}
	if (!it->perm)
		it->topic[0] = 0;
	snprintf(out, size, "%s%s%s%s", kinds[k].prefix, it->perm ?
	    it->topic : "a", it->has_group ? "/" : "", it->group);
	/* The model of an item not ours allows nothing at all. */
}

static void
test_scope_property(const struct keys *k)
{
	const char *seed = getenv("MQ_TEST_SEED");
	rng = seed ? strtoull(seed, NULL, 10) : 20260126;
	if (!rng)
		rng = 1;
	printf("# seed %llu (MQ_TEST_SEED)\n", (unsigned long long)rng);
	struct mq_http_auth *a = auth(k->secret, NULL, NULL, NULL, NULL, 0);
	if (!a)
		exit(1);
	static const int perms[] = { MQ_HTTP_PUBLISH, MQ_HTTP_CONSUME,
	    MQ_HTTP_ADMIN };
	size_t scopes = 0, asked = 0, wrong = 0;
	for (; scopes < 3000; scopes++) {
		struct model_item v[5];
		size_t n = pick(6);
		bool array = pick(2);
		char scope[512] = "", one[64], *claims, *tok;
		size_t at = 0;
		for (size_t i = 0; i < n; i++) {
			item_make(&v[i], one, sizeof one);
			at += (size_t)snprintf(scope + at, sizeof scope - at, array ?
			    "%s\"%s\"" : "%s%s", i == 0 ? "" : array ? "," :
			    pick(2) ? " " : "  ", one);
		}
		if (asprintf(&claims, array ? "{" EXP ",\"scope\":[%s]}" :
		    "{" EXP ",\"scope\":\" %s\"}", scope) < 0)
			exit(1);
		tok = hs(claims);
		struct mq_http_grant *g = NULL;
		if (check(a, tok, NOW, &g) < 0) {
			printf("# %s: %s\n", claims, mq_errmsg());
			exit(1);
		}
		for (int q = 0; q < 20; q++, asked++) {
			int perm = perms[pick(3)];
			const char *topic = pick(8) ? topics[pick(NTOPICS)] : NULL,
			    *group = pick(4) ? groups[pick(NGROUPS)] : NULL;
			bool want = model_allowed(v, n, perm, topic, group),
			    got = mq_http_allowed(g, perm, topic, group);
			bool want_any = topic && model_allowed(v, n, 0, topic, NULL),
			    got_any = topic && mq_http_allowed_any(g, topic);
			bool want_group = topic && group && (model_allowed(v, n,
			    MQ_HTTP_CONSUME, topic, group) || model_allowed(v, n,
			    MQ_HTTP_ADMIN, topic, NULL)),
			    got_group = topic && group &&
			    mq_http_allowed_group(g, topic, group);
			if (want != got || want_any != got_any ||
			    want_group != got_group) {
				if (wrong++ < 5)
					printf("# scope %s: perm %d on %s/%s: allowed %d "
					    "(model %d), any %d (%d), group %d (%d)\n",
					    scope, perm, topic ? topic : "(spool)",
					    group ? group : "(any)", got, want, got_any,
					    want_any, got_group, want_group);
			}
		}
		mq_http_grant_free(g);
		free(tok);
		free(claims);
	}
	ok(wrong == 0, "%zu random scopes, %zu questions each of allowed, "
	    "allowed_any and allowed_group: as the model says (%zu differ)",
	    scopes, asked, wrong);
	mq_http_auth_free(a);
}

static void
test_until(const struct keys *k)
{
	struct mq_http_auth *a = auth(k->secret, NULL, NULL, NULL, NULL, 0),
	    *l = auth(k->secret, NULL, NULL, NULL, NULL, 30);
	struct mq_http_grant *g = NULL, *gl = NULL;
	char *t1 = hs("{" EXP "}"), *t2 = hs("{" EXP "}");
	ok(a && l && check(a, t1, NOW, &g) == 0 && check(l, t2, NOW, &gl) == 0 &&
	    mq_http_grant_until(g) == 1700000600.0 &&
	    mq_http_grant_until(gl) == 1700000630.0,
	    "a grant holds until exp, and the leeway after it");
	free(t1);
	free(t2);
	mq_http_grant_free(g);
	mq_http_grant_free(gl);
	mq_http_auth_free(a);
	mq_http_auth_free(l);
}

static void
test_header(const struct keys *k)
{
	struct mq_http_auth *a = auth(k->secret, NULL, NULL, NULL, NULL, 0);
	if (!a)
		exit(1);
	char *tok = hs("{" EXP "}"), h[128];
	ok(header_refused(a, NULL, NOW, "no bearer token"), "no header");
	ok(header_refused(a, "Basic dXNlcjpwdw==", NOW, "no bearer token"),
	    "Basic refused");
	ok(header_refused(a, "garbage", NOW, "no bearer token"),
	    "garbage refused");
	ok(header_refused(a, "Bearer ", NOW, "no bearer token"),
	    "Bearer without a token refused");
	ok(header_refused(a, "Bearer garbage", NOW, "malformed token"),
	    "Bearer garbage refused");
	ok(header_refused(a, "Bearer a.b.c", NOW, "malformed token"),
	    "Bearer a.b.c refused");
	snprintf(h, sizeof h, "bEaReR   %s", tok);
	struct mq_http_grant *g = NULL;
	ok(mq_http_auth_check(a, h, NOW, &g) == 0 && g, "\"Bearer\" in any "
	    "case, several spaces");
	mq_http_grant_free(g);
	snprintf(h, sizeof h, "Bearer %s x", tok);
	ok(header_refused(a, h, NOW, "malformed token"), "a word after the "
	    "token refused");
	snprintf(h, sizeof h, "Bearer %s.x", tok);
	ok(header_refused(a, h, NOW, "malformed token"), "a fourth part "
	    "refused");
	size_t n = strlen(tok);
	tok[n - 1] = tok[n - 1] == 'A' ? 'B' : 'A';
	ok(refused(a, tok, "bad signature"), "a signature changed refused");

	char *big = malloc(7 + 8193 + 1);
	memcpy(big, "Bearer ", 7);
	memset(big + 7, 'a', 8193);
	big[7 + 8193] = 0;
	ok(header_refused(a, big, NOW, "token too long"), "8193 bytes: "
	    "token too long");
	big[7 + 8192] = 0;
	ok(header_refused(a, big, NOW, "malformed token"), "8192 bytes: "
	    "read (and found no token)");
	free(big);
	mq_http_auth_free(a);
}

static void
test_conf(const struct keys *k)
{
	char path[256];
	snprintf(path, sizeof path, "%s/missing", dir);
	ok(conf_refused(path, NULL, NULL, EX_NOINPUT) &&
	    conf_refused(NULL, path, NULL, EX_NOINPUT) &&
	    conf_refused(NULL, NULL, path, EX_NOINPUT),
	    "a missing file: EX_NOINPUT");
	ok(conf_refused(NULL, NULL, NULL, EX_USAGE), "no files: EX_USAGE");
	ok(conf_refused(put("empty", "", 0), NULL, NULL, EX_CONFIG),
	    "an empty secret: EX_CONFIG");
	ok(conf_refused(NULL, k->secret, NULL, EX_CONFIG), "a PEM file that "
	    "is not a key: EX_CONFIG");
	ok(conf_refused(NULL, NULL, k->rsa_pem, EX_CONFIG), "a JWKS file that "
	    "is not JSON: EX_CONFIG");
	const char *oct = "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}";
	ok(conf_refused(NULL, NULL, put("oct.jwks", oct, strlen(oct)),
	    EX_CONFIG), "a JWKS file without RSA or EC keys: EX_CONFIG");
	const char *bad = "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\","
	    "\"x\":\"AAAA\",\"y\":\"AAAA\"}]}";
	ok(conf_refused(NULL, NULL, put("bad.jwks", bad, strlen(bad)),
	    EX_CONFIG), "a JWKS EC key of a short x and y: EX_CONFIG");

	EVP_PKEY *small = EVP_RSA_gen(1024);
	char *p = pem(small, false);
	ok(conf_refused(NULL, put("rsa1024.pem", p, strlen(p)), NULL,
	    EX_CONFIG), "an RSA key of 1024 bits: EX_CONFIG");
	free(p);
	EVP_PKEY_free(small);

	char *huge = calloc(1, 64 * 1024 + 1);
	memset(huge, 'k', 64 * 1024 + 1);
	ok(conf_refused(put("huge", huge, 64 * 1024 + 1), NULL, NULL,
	    EX_CONFIG), "a secret over 64 KiB: EX_CONFIG");
	free(huge);

	const char *many[MQ_HTTP_KEYS_MAX + 1];
	for (size_t i = 0; i <= MQ_HTTP_KEYS_MAX; i++)
		many[i] = k->secret;
	struct mq_http_auth_conf c = { .secret_files = many,
	    .nsecret = MQ_HTTP_KEYS_MAX };
	struct mq_http_auth *a = mq_http_auth_new(&c);
	ok(a != NULL, "%d keys taken", MQ_HTTP_KEYS_MAX);
	mq_http_auth_free(a);
	c.nsecret++;
	a = mq_http_auth_new(&c);
	ok(!a && mq_errcode() == EX_CONFIG, "%d refused: EX_CONFIG",
	    MQ_HTTP_KEYS_MAX + 1);
	mq_http_auth_free(a);

	snprintf(path, sizeof path, "%s/link", dir);
	a = NULL;
	if (symlink(k->secret, path) == 0)
		a = auth(path, NULL, NULL, NULL, NULL, 0);
	ok(a && accepted(a, hs("{" EXP "}")), "a secret through a link");
	mq_http_auth_free(a);
}

int
main(void)
{
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	struct keys k;
	keys_make(&k);
	test_algs(&k);
	test_claims(&k);
	test_scopes(&k);
	test_scope_property(&k);
	test_until(&k);
	test_header(&k);
	test_conf(&k);
	keys_free(&k);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
