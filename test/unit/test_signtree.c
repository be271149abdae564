/*
 * test_signtree.c: the hash tree of a signed chunk (signtree.c): for
 * every leaf count up to 70, and for 4095 and MQ_TREE_MAX, the path of
 * every leaf leads back to the root, has the length the verifier expects,
 * and leads elsewhere from another index or with a hash changed; the
 * shape is the one mq-spool(5) writes down.
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "t.h"

static unsigned char leaf[MQ_TREE_MAX][MQ_HASH_BYTES];

/* Whether every leaf of a tree of n checks as the verifier checks it. */
static int
tree_ok(size_t n)
{
	struct mq_tree t = { 0 };
	unsigned char path[MQ_TREE_DEPTH][MQ_HASH_BYTES], root[MQ_HASH_BYTES];
	if (mq_tree_build(&t, (const unsigned char (*)[MQ_HASH_BYTES])leaf,
	    n) < 0)
		return 0;
	int good = 1;
	for (size_t i = 0; good && i < n; i++) {
		size_t len = mq_tree_path(&t, i, path);
		good = len == mq_tree_path_len(i, n) && len <= MQ_TREE_DEPTH;
		mq_tree_root_of(leaf[i], i, n,
		    (const unsigned char (*)[MQ_HASH_BYTES])path, root);
		good = good && !memcmp(root, t.h[t.root], MQ_HASH_BYTES);
		/* Another index with a path of the same length, or a hash
		 * of the path changed, leads to another root. */
		size_t j = (i + 1) % n;
		if (good && j != i && mq_tree_path_len(j, n) == len) {
			mq_tree_root_of(leaf[i], j, n,
			    (const unsigned char (*)[MQ_HASH_BYTES])path, root);
			good = memcmp(root, t.h[t.root], MQ_HASH_BYTES) != 0;
		}
		if (good && len > 0) {
			path[len - 1][0] ^= 1;
			mq_tree_root_of(leaf[i], i, n,
			    (const unsigned char (*)[MQ_HASH_BYTES])path, root);
			good = memcmp(root, t.h[t.root], MQ_HASH_BYTES) != 0;
		}
	}
	mq_tree_free(&t);
	return good;
}

static void
node(const unsigned char *l, const unsigned char *r, unsigned char *out)
{
	unsigned char in[1 + 2 * MQ_HASH_BYTES] = { 0x01 };
	memcpy(in + 1, l, MQ_HASH_BYTES);
	memcpy(in + 1 + MQ_HASH_BYTES, r, MQ_HASH_BYTES);
	crypto_generichash(out, MQ_HASH_BYTES, in, sizeof in, NULL, 0);
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	for (size_t i = 0; i < MQ_TREE_MAX; i++) {
		char form[32];
		int len = snprintf(form, sizeof form, "leaf %zu\n", i);
		mq_tree_leaf(form, (size_t)len, leaf[i]);
	}
	int all = 1;
	for (size_t n = 1; n <= 70; n++)
		all = all && tree_ok(n);
	ok(all, "every leaf of trees of 1 to 70 leaves leads to the root, "
	    "and only from its own index with its own path");
	ok(tree_ok(4095) && tree_ok(MQ_TREE_MAX), "so do trees of 4095 and "
	    "%d leaves", MQ_TREE_MAX);
	ok(mq_tree_path_len(MQ_TREE_MAX - 1, MQ_TREE_MAX) == MQ_TREE_DEPTH,
	    "a path of the largest tree has %d hashes", MQ_TREE_DEPTH);

	/* Three leaves: H(1 || H(1 || L0 || L1) || L2), the third promoted. */
	unsigned char l[3][MQ_HASH_BYTES], n01[MQ_HASH_BYTES], r[MQ_HASH_BYTES];
	mq_tree_leaf("a", 1, l[0]);
	mq_tree_leaf("b", 1, l[1]);
	mq_tree_leaf("c", 1, l[2]);
	node(l[0], l[1], n01);
	node(n01, l[2], r);
	struct mq_tree t = { 0 };
	int built = mq_tree_build(&t, (const unsigned char (*)[MQ_HASH_BYTES])l,
	    3) == 0;
	ok(built && !memcmp(t.h[t.root], r, MQ_HASH_BYTES), "the shape: pairs "
	    "from the left, the odd one out promoted");
	mq_tree_free(&t);

	/* A leaf is H(0x00 || form). */
	unsigned char in[2] = { 0x00, 'a' }, want[MQ_HASH_BYTES];
	crypto_generichash(want, sizeof want, in, sizeof in, NULL, 0);
	ok(!memcmp(l[0], want, sizeof want), "a leaf is BLAKE2b-256 of 0x00 "
	    "and the form");
	return t_done();
}
