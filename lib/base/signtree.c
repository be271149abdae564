/*
 * signtree.c: the hash tree a chunk's signature covers (mq-spool(5),
 * SIGNED MESSAGES, Chunk signatures).
 *
 * The leaves are the messages' signed forms in chunk order, hashed as
 * BLAKE2b-256(0x00 || form); a node above two is BLAKE2b-256(0x01 || left
 * || right).  The prefixes keep a leaf from ever being taken for a node:
 * a form whose bytes happened to be two hashes still hashes as a leaf.
 * Each level pairs its hashes from the left; the last hash of a level of
 * odd width has no partner and is promoted to the next level unchanged
 * (never paired with itself, which would let a tree of n leaves and one
 * of n + 1 with a repeated last leaf share a root).  Given the leaf count,
 * the path of a leaf (its siblings from the bottom up) and its index say
 * exactly which hashes meet where, so a root recomputed from a leaf, an
 * index and a path that is not the leaf's own needs a BLAKE2b collision.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

void
mq_tree_leaf(const void *form, size_t len, unsigned char out[MQ_HASH_BYTES])
{
	static const unsigned char tag = 0x00;
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, MQ_HASH_BYTES);
	crypto_generichash_update(&st, &tag, 1);
	crypto_generichash_update(&st, form, len);
	crypto_generichash_final(&st, out, MQ_HASH_BYTES);
}

static void
node_hash(const unsigned char l[MQ_HASH_BYTES],
    const unsigned char r[MQ_HASH_BYTES], unsigned char out[MQ_HASH_BYTES])
{
	unsigned char in[1 + 2 * MQ_HASH_BYTES] = { 0x01 };
	memcpy(in + 1, l, MQ_HASH_BYTES);
	memcpy(in + 1 + MQ_HASH_BYTES, r, MQ_HASH_BYTES);
	crypto_generichash(out, MQ_HASH_BYTES, in, sizeof in, NULL, 0);
}

/* How the walk from leaf i of n up to the root goes: at each level the
 * hash at position j has its sibling at j - 1 (left) when j is odd, at
 * j + 1 (right) when there is one, or none (promoted). */
size_t
mq_tree_path_len(size_t i, size_t n)
{
	size_t len = 0;
	for (size_t w = n; w > 1; w = (w + 1) / 2, i /= 2)
		len += (i % 2 == 1 || i + 1 < w);
	return len;
}

void
mq_tree_root_of(const unsigned char leaf[MQ_HASH_BYTES], size_t i, size_t n,
    const unsigned char (*path)[MQ_HASH_BYTES], unsigned char root[MQ_HASH_BYTES])
{
	unsigned char h[MQ_HASH_BYTES];
	memcpy(h, leaf, sizeof h);
	for (size_t w = n; w > 1; w = (w + 1) / 2, i /= 2) {
		if (i % 2 == 1)
			node_hash(*path++, h, h);
		else if (i + 1 < w)
			node_hash(h, *path++, h);
	}
	memcpy(root, h, sizeof h);
}

int
mq_tree_build(struct mq_tree *t, const unsigned char (*leaf)[MQ_HASH_BYTES],
    size_t n)
{
	/* The leaves, then each level: half the one below, rounded up. */
	size_t need = n;
	for (size_t w = n; w > 1; w = (w + 1) / 2)
		need += (w + 1) / 2;
	if (need > t->cap) {
		unsigned char (*h)[MQ_HASH_BYTES] = reallocarray(t->h, need,
		    sizeof *h);
		if (!h)
			return mq_err_sys("malloc");
		t->h = h;
		t->cap = need;
	}
	memcpy(t->h, leaf, n * sizeof *t->h);
	size_t below = 0, at = n;
	for (size_t w = n; w > 1; w = (w + 1) / 2) {
		for (size_t j = 0; j + 1 < w; j += 2)
			node_hash(t->h[below + j], t->h[below + j + 1],
			    t->h[at + j / 2]);
		if (w % 2 == 1)
			memcpy(t->h[at + w / 2], t->h[below + w - 1], MQ_HASH_BYTES);
		below = at;
		at += (w + 1) / 2;
	}
	t->n = n;
	t->root = below;
	return 0;
}

size_t
mq_tree_path(const struct mq_tree *t, size_t i,
    unsigned char (*path)[MQ_HASH_BYTES])
{
	size_t len = 0, level = 0;
	for (size_t w = t->n; w > 1; level += w, w = (w + 1) / 2, i /= 2) {
		if (i % 2 == 1)
			memcpy(path[len++], t->h[level + i - 1], MQ_HASH_BYTES);
		else if (i + 1 < w)
			memcpy(path[len++], t->h[level + i + 1], MQ_HASH_BYTES);
	}
	return len;
}

void
mq_tree_free(struct mq_tree *t)
{
	free(t->h);
	t->h = NULL;
	t->cap = t->n = 0;
}
