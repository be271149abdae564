/*
 * auth.c: bearer tokens (RFC 6750) verified as JWTs (RFC 7519), and what
 * their "scope" claims allow.
 *
 * libjwt 1.10 verifies with the alg the token's header names and
 * whatever key it is handed, so the header is read here first and its
 * "alg" chooses the keys that may verify it: a secret for HS*, an RSA key
 * for RS*, an EC key on the alg's curve for ES*.  A public key is thus
 * never taken for an HMAC secret, "none" never reaches libjwt, and what
 * libjwt decoded is checked to be that alg.  The claims are read from the
 * payload as decoded here, the bytes the signature covers, once it is
 * verified; libjwt 1.10 checks none of them.  "exp" is required: a token
 * without one would be good forever, and a leaked one could be stopped
 * only by changing the key.
 */
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <jwt.h>
#include <math.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

#include "http.h"

#define B64URL "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
	"0123456789-_"

struct mq_http_auth {
	struct mq_http_keys keys;
	char *audience, *issuer;
	double leeway;
};

struct item {
	int perm;
	char *topic;                    /* the group follows it */
	char *group;                    /* NULL: any */
};
struct mq_http_grant {
	struct item *v;
	size_t n;
	char *subject;                  /* NULL: "-" */
	double until;                   /* exp, and the leeway after it */
};

static const struct alg {
	const char *name;
	jwt_alg_t jwt;
	int type;                       /* of the key: MQ_HTTP_KEY_* */
	int curve;
} algs[] = {
	{ "HS256", JWT_ALG_HS256, MQ_HTTP_KEY_HMAC, 0 },
	{ "HS384", JWT_ALG_HS384, MQ_HTTP_KEY_HMAC, 0 },
	{ "HS512", JWT_ALG_HS512, MQ_HTTP_KEY_HMAC, 0 },
	{ "RS256", JWT_ALG_RS256, MQ_HTTP_KEY_RSA, 0 },
	{ "RS384", JWT_ALG_RS384, MQ_HTTP_KEY_RSA, 0 },
	{ "RS512", JWT_ALG_RS512, MQ_HTTP_KEY_RSA, 0 },
	{ "ES256", JWT_ALG_ES256, MQ_HTTP_KEY_EC, 256 },
	{ "ES384", JWT_ALG_ES384, MQ_HTTP_KEY_EC, 384 },
	{ "ES512", JWT_ALG_ES512, MQ_HTTP_KEY_EC, 521 },
};

struct token {
	char text[MQ_HTTP_TOKEN_MAX + 1];
	json_t *head, *claims;
	const struct alg *alg;
	const char *kid;                /* NULL: none */
};

struct mq_http_auth *
mq_http_auth_new(const struct mq_http_auth_conf *conf)
{
	if (conf->nsecret + conf->nkey + conf->njwks == 0) {
		mq_err(EX_USAGE, "no secret, key or JWKS file to verify "
		    "tokens with");
		return NULL;
	}
	if (!isfinite(conf->leeway) || conf->leeway < 0) {
		mq_err(EX_USAGE, "leeway: not a number of seconds");
		return NULL;
	}
	struct mq_http_auth *a = calloc(1, sizeof *a);
	if (!a) {
		mq_err_sys("malloc");
		return NULL;
	}
	a->leeway = conf->leeway;
	if ((conf->audience && !(a->audience = strdup(conf->audience))) ||
	    (conf->issuer && !(a->issuer = strdup(conf->issuer)))) {
		mq_err_sys("malloc");
		mq_http_auth_free(a);
		return NULL;
	}
	if (mq_http_keys_read(conf, &a->keys) < 0) {
		mq_http_auth_free(a);
		return NULL;
	}
	return a;
}

void
mq_http_auth_free(struct mq_http_auth *a)
{
	if (!a)
		return;
	mq_http_keys_free(&a->keys);
	free(a->audience);
	free(a->issuer);
	free(a);
}

static int
malformed(void)
{
	return mq_err(EX_NOPERM, "malformed token");
}

/* The token of an Authorization header, copied into t->text. */
static int
bearer(const char *h, struct token *t)
{
	if (!h || strncasecmp(h, "Bearer ", 7))
		return mq_err(EX_NOPERM, "no bearer token");
	h += 7;
	h += strspn(h, " ");
	size_t n = strcspn(h, " \t");
	if (n == 0)
		return mq_err(EX_NOPERM, "no bearer token");
	if (h[n + strspn(h + n, " \t")])
		return malformed();
	if (n > MQ_HTTP_TOKEN_MAX)
		return mq_err(EX_NOPERM, "token too long");
	memcpy(t->text, h, n);
	t->text[n] = 0;
	return 0;
}

/* A part of a token, s[0..len): the JSON object it encodes, or NULL. */
static json_t *
segment(const char *s, size_t len)
{
	size_t n;
	unsigned char *b = mq_http_b64url(s, len, &n);
	json_t *j = b ? json_loadb((char *)b, n, JSON_REJECT_DUPLICATES,
	    NULL) : NULL;
	free(b);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

static int
alg_unsupported(const char *name)
{
	/* Named back to the client only when it is a short plain word. */
	size_t n = strlen(name);
	if (n > 0 && n <= 16 && strspn(name, B64URL) == n)
		return mq_err(EX_NOPERM, "unsupported alg %s", name);
	return mq_err(EX_NOPERM, "unsupported alg");
}

/* The header's alg and kid.  libjwt 1.10 refuses a "typ" but JWT; "crit"
 * names extensions that must be understood (RFC 7515, 4.1.11), and none
 * is here. */
static int
head_read(struct token *t)
{
	json_t *alg = json_object_get(t->head, "alg");
	json_t *kid = json_object_get(t->head, "kid");
	json_t *typ = json_object_get(t->head, "typ");
	if (!json_is_string(alg) || (kid && !json_is_string(kid)) ||
	    (typ && !json_is_string(typ)))
		return malformed();
	for (size_t i = 0; !t->alg && i < sizeof algs / sizeof *algs; i++)
		if (!strcmp(json_string_value(alg), algs[i].name))
			t->alg = &algs[i];
	if (!t->alg)
		return alg_unsupported(json_string_value(alg));
	if (typ && strcasecmp(json_string_value(typ), "JWT"))
		return mq_err(EX_NOPERM, "unsupported typ");
	if (json_object_get(t->head, "crit"))
		return mq_err(EX_NOPERM, "unsupported crit");
	t->kid = json_string_value(kid);
	return 0;
}

/* Header, claims and signature: two of JSON, all three base64url. */
static int
parse(struct token *t)
{
	char *dot = strchr(t->text, '.');
	if (!dot || !(t->head = segment(t->text, (size_t)(dot - t->text))))
		return malformed();
	if (head_read(t) < 0)
		return -1;
	char *body = dot + 1, *sig = strchr(body, '.');
	if (!sig || !*++sig || strspn(sig, B64URL) != strlen(sig) ||
	    !(t->claims = segment(body, (size_t)(sig - 1 - body))))
		return malformed();
	return 0;
}

/* A key that may verify t: of its alg's type and curve, for that alg
 * when the key says, and of its kid when both have one. */
static bool
key_fits(const struct mq_http_key *k, const struct token *t)
{
	return k->type == t->alg->type && k->curve == t->alg->curve &&
	    (!k->alg || !strcmp(k->alg, t->alg->name)) &&
	    (!k->kid || !t->kid || !strcmp(k->kid, t->kid));
}

static int
verify(const struct mq_http_auth *a, const struct token *t)
{
	bool tried = false;
	for (size_t i = 0; i < a->keys.n; i++) {
		const struct mq_http_key *k = &a->keys.v[i];
		if (!key_fits(k, t))
			continue;
		tried = true;
		jwt_t *jwt = NULL;
		int rc = jwt_decode(&jwt, t->text, k->data, (int)k->len);
		bool good = rc == 0 && jwt_get_alg(jwt) == t->alg->jwt;
		if (jwt)
			jwt_free(jwt);
		if (good)
			return 0;
		if (rc == ENOMEM) {
			errno = rc;
			return mq_err_sys("verify a token");
		}
	}
	/* libjwt leaves OpenSSL's errors for the keys that failed queued,
	 * for no one to read. */
	ERR_clear_error();
	return mq_err(EX_NOPERM, tried ? "bad signature" :
	    "no key for this token");
}

static bool
str_is(const json_t *j, const char *s)
{
	return json_is_string(j) && !strcmp(json_string_value(j), s);
}

static bool
audience_has(json_t *aud, const char *want)
{
	size_t i;
	json_t *v;
	if (!json_is_array(aud))
		return str_is(aud, want);
	json_array_foreach(aud, i, v)
		if (str_is(v, want))
			return true;
	return false;
}

static int
claims_check(const struct mq_http_auth *a, json_t *c, double now)
{
	json_t *exp = json_object_get(c, "exp"), *nbf = json_object_get(c, "nbf");
	if (!exp)
		return mq_err(EX_NOPERM, "token has no exp");
	if (!json_is_number(exp) || (nbf && !json_is_number(nbf)))
		return malformed();
	if (json_number_value(exp) <= now - a->leeway)
		return mq_err(EX_NOPERM, "token expired");
	if (nbf && json_number_value(nbf) > now + a->leeway)
		return mq_err(EX_NOPERM, "token not yet valid");
	if (a->audience && !audience_has(json_object_get(c, "aud"),
	    a->audience))
		return mq_err(EX_NOPERM, "wrong audience");
	if (a->issuer && !str_is(json_object_get(c, "iss"), a->issuer))
		return mq_err(EX_NOPERM, "wrong issuer");
	return 0;
}

static const struct {
	const char *prefix;
	int perm;
} perms[] = {
	{ "publish:", MQ_HTTP_PUBLISH },
	{ "consume:", MQ_HTTP_CONSUME },
	{ "admin:", MQ_HTTP_ADMIN },
};

/* One item of a scope, s[0..len): kept, or ignored when not ours. */
static int
item_add(struct mq_http_grant *g, const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof perms / sizeof *perms; i++) {
		size_t pl = strlen(perms[i].prefix);
		if (len < pl || strncmp(s, perms[i].prefix, pl))
			continue;
		struct item *v = reallocarray(g->v, g->n + 1, sizeof *v);
		if (!v)
			return mq_err_sys("malloc");
		g->v = v;
		struct item *it = &v[g->n];
		if (!(it->topic = strndup(s + pl, len - pl)))
			return mq_err_sys("malloc");
		it->perm = perms[i].perm;
		it->group = NULL;
		char *slash = strchr(it->topic, '/');
		if (it->perm == MQ_HTTP_CONSUME && slash) {
			*slash = 0;
			it->group = slash + 1;
		}
		g->n++;
		return 0;
	}
	return 0;
}

static int
scope_add(struct mq_http_grant *g, const char *s)
{
	while (*s) {
		s += strspn(s, " ");
		size_t n = strcspn(s, " ");
		if (n && item_add(g, s, n) < 0)
			return -1;
		s += n;
	}
	return 0;
}

static struct mq_http_grant *
grant_new(json_t *c, double leeway)
{
	struct mq_http_grant *g = calloc(1, sizeof *g);
	if (!g) {
		mq_err_sys("malloc");
		return NULL;
	}
	/* claims_check found exp a number. */
	g->until = json_number_value(json_object_get(c, "exp")) + leeway;
	json_t *scope = json_object_get(c, "scope"), *v;
	size_t i;
	int rc = 0;
	if (json_is_string(scope))
		rc = scope_add(g, json_string_value(scope));
	json_array_foreach(scope, i, v)
		if (rc == 0 && json_is_string(v))
			rc = scope_add(g, json_string_value(v));
	json_t *who = json_object_get(c, "sub");
	if (!json_is_string(who))
		who = json_object_get(c, "jti");
	if (rc == 0 && json_is_string(who) &&
	    !(g->subject = strdup(json_string_value(who))))
		rc = mq_err_sys("malloc");
	if (rc < 0) {
		mq_http_grant_free(g);
		return NULL;
	}
	return g;
}

int
mq_http_auth_check(const struct mq_http_auth *a, const char *authorization,
    double now, struct mq_http_grant **g)
{
	struct token t;
	t.head = t.claims = NULL;
	t.alg = NULL;
	*g = NULL;
	int rc = bearer(authorization, &t);
	if (rc == 0)
		rc = parse(&t);
	if (rc == 0)
		rc = verify(a, &t);
	if (rc == 0)
		rc = claims_check(a, t.claims, now);
	if (rc == 0 && !(*g = grant_new(t.claims, a->leeway)))
		rc = -1;
	json_decref(t.head);
	json_decref(t.claims);
	return rc;
}

/* A topic of NULL, the spool as a whole, only "*" allows. */
static bool
topic_ok(const struct item *it, const char *topic)
{
	return topic ? fnmatch(it->topic, topic, 0) == 0 :
	    !strcmp(it->topic, "*");
}

/* So does a group of NULL, any of them, when the item names groups. */
static bool
group_ok(const struct item *it, const char *group)
{
	if (!it->group)
		return true;
	return group ? fnmatch(it->group, group, 0) == 0 :
	    !strcmp(it->group, "*");
}

bool
mq_http_allowed(const struct mq_http_grant *g, int perm, const char *topic,
    const char *group)
{
	for (size_t i = 0; g && i < g->n; i++)
		if (g->v[i].perm == perm && topic_ok(&g->v[i], topic) &&
		    group_ok(&g->v[i], group))
			return true;
	return false;
}

bool
mq_http_allowed_group(const struct mq_http_grant *g, const char *topic,
    const char *group)
{
	return mq_http_allowed(g, MQ_HTTP_CONSUME, topic, group) ||
	    mq_http_allowed(g, MQ_HTTP_ADMIN, topic, NULL);
}

bool
mq_http_allowed_any(const struct mq_http_grant *g, const char *topic)
{
	for (size_t i = 0; g && i < g->n; i++)
		if (topic_ok(&g->v[i], topic))
			return true;
	return false;
}

const char *
mq_http_grant_subject(const struct mq_http_grant *g)
{
	return g && g->subject ? g->subject : "-";
}

double
mq_http_grant_until(const struct mq_http_grant *g)
{
	return g ? g->until : 0;
}

void
mq_http_grant_free(struct mq_http_grant *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].topic);
	free(g->v);
	free(g->subject);
	free(g);
}
