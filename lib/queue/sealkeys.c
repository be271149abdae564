/*
 * sealkeys.c: a sealed topic's keys: adding, removing and listing them,
 * and taking a replication peer's (mq-topic key; mq-spool(5), SEALED
 * BODIES).
 *
 * The keys file is replaced whole (tmp + rename) under every partition's
 * lock, so a chunk is sealed to the set of one moment (seal.c), and a
 * group cannot be given a jq filter (which needs plaintext) while keys are
 * being added: both sides check the other under the same locks
 * (mq_seal_filter_check).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "queue.h"

enum keys_op { KEYS_REMOVE, KEYS_ADD, KEYS_SET };

/* Refused (EX_CONFIG) when a group of t has a jq filter. */
static int
no_jq_groups(const struct mq_topic *t)
{
	struct mq_names groups = { 0 };
	int rc = mq_groups_read(t, &groups);
	for (size_t g = 0; rc == 0 && g < groups.n; g++) {
		struct mq_conf kv;
		if ((rc = mq_group_conf_read(t, groups.v[g], &kv)) < 0)
			break;
		if (mq_conf_get(&kv, "filter"))
			rc = mq_seal_jq_refused(t->name, groups.v[g]);
		mq_conf_free(&kv);
	}
	mq_names_free(&groups);
	return rc;
}

/* Changes the keys under every partition's lock: add (n keys), remove
 * (one), or set (make them the n given: a replication peer's).  Adding
 * to a topic whose groups have a jq filter is refused.  Returns how many
 * keys changed (for set: n when any did). */
static int
keys_change(mq_spool *sp, const char *topic,
    const unsigned char (*arg)[MQ_PUBKEY_BYTES], size_t n, enum keys_op op)
{
	unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES];
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	size_t have = 0, changed = 0;
	int *hfds = calloc(t.conf.partitions, sizeof *hfds);
	int rc = hfds ? mq_lock_all(&t, hfds) : mq_err_sys("malloc");
	if (rc == 0)
		rc = mq_seal_keys_read(&t, pk, &have);
	if (rc == 0 && op != KEYS_REMOVE)
		rc = no_jq_groups(&t);
	if (rc == 0 && op == KEYS_SET) {
		/* Another set, or the same in another order: the peer's. */
		if (have != n || memcmp(pk, arg, n * sizeof *arg))
			changed = n;
		have = n;
		memcpy(pk, arg, n * sizeof *arg);
	}
	for (size_t i = 0; rc == 0 && op != KEYS_SET && i < n; i++) {
		char hex[MQ_PUBKEY_HEX + 1];
		size_t at = 0;
		while (at < have && memcmp(pk[at], arg[i], MQ_PUBKEY_BYTES))
			at++;
		mq_pubkey_hex(arg[i], hex);
		if (op == KEYS_ADD && at < have)
			continue;
		if (op == KEYS_ADD && have == MQ_SEAL_KEYS_MAX)
			rc = mq_err(EX_USAGE, "topic %s: at most %d keys", t.name,
			    MQ_SEAL_KEYS_MAX);
		else if (op == KEYS_ADD)
			memcpy(pk[have++], arg[i], MQ_PUBKEY_BYTES);
		else if (at == have)
			rc = mq_err(EX_NOINPUT, "topic %s has no key %s", t.name,
			    hex);
		else if (have == 1)
			rc = mq_err(EX_USAGE, "topic %s: %s is its last key: a "
			    "sealed topic stays sealed (add its successor first)",
			    t.name, hex);
		else
			memmove(pk[at], pk[at + 1], (--have - at) * sizeof *pk);
		changed += rc == 0;
	}
	if (rc == 0 && changed)
		rc = mq_seal_keys_write(&t, (const unsigned char (*)[MQ_PUBKEY_BYTES])pk,
		    have);
	if (hfds)
		mq_unlock_all(&t, hfds);
	free(hfds);
	mq_topic_close(&t);
	return rc < 0 ? -1 : (int)changed;
}

int
mq_topic_key_add(mq_spool *sp, const char *topic, const char *const *hex,
    size_t n)
{
	unsigned char (*pk)[MQ_PUBKEY_BYTES] = malloc((n ? n : 1) * sizeof *pk);
	int rc = pk ? 0 : mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (mq_pubkey_parse(hex[i], pk[i]) < 0)
			rc = mq_err(EX_DATAERR, "'%.80s' is not a public key (64 hex "
			    "digits)", hex[i]);
	if (rc == 0)
		rc = keys_change(sp, topic,
		    (const unsigned char (*)[MQ_PUBKEY_BYTES])pk, n, KEYS_ADD);
	free(pk);
	return rc;
}

int
mq_topic_key_remove(mq_spool *sp, const char *topic, const char *hex)
{
	unsigned char pk[1][MQ_PUBKEY_BYTES];
	if (mq_pubkey_parse(hex, pk[0]) < 0)
		return mq_err(EX_DATAERR, "'%.80s' is not a public key (64 hex "
		    "digits)", hex);
	return keys_change(sp, topic, (const unsigned char (*)[MQ_PUBKEY_BYTES])pk,
	    1, KEYS_REMOVE) < 0 ? -1 : 0;
}

int
mq_topic_keys_adopt(mq_spool *sp, const char *topic, const char *text,
    size_t len)
{
	unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES];
	size_t n;
	if (mq_seal_keys_parse(topic, text, len, pk, &n) < 0)
		return -1;
	if (n == 0)
		return mq_err(EX_DATAERR, "topic %s: keys: none", topic);
	return keys_change(sp, topic, (const unsigned char (*)[MQ_PUBKEY_BYTES])pk,
	    n, KEYS_SET);
}

int
mq_topic_keys(mq_spool *sp, const char *topic, char ***keys, size_t *n)
{
	unsigned char pk[MQ_SEAL_KEYS_MAX][MQ_PUBKEY_BYTES];
	struct mq_topic t;
	if (mq_topic_open_as(sp, topic, MQ_FORMAT_ANY, &t) < 0)
		return -1;
	int rc = mq_seal_keys_read(&t, pk, n);
	mq_topic_close(&t);
	char **v = rc == 0 ? calloc(*n ? *n : 1, sizeof *v) : NULL;
	if (rc == 0 && !v)
		return mq_err_sys("malloc");
	for (size_t i = 0; rc == 0 && i < *n; i++) {
		if (!(v[i] = malloc(MQ_PUBKEY_HEX + 1))) {
			mq_strv_free(v, i);
			return mq_err_sys("malloc");
		}
		mq_pubkey_hex(pk[i], v[i]);
	}
	if (rc == 0)
		*keys = v;
	return rc;
}
