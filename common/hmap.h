/* hmap.h - an intrusive hash table: the caller embeds a struct hmap_node in
 * its object, computes the key's hash (hmap_hash_str(), hmap_hash_u64())
 * and compares keys itself while walking the nodes of one hash
 * (HMAP_FOR_HASH). The engine indexes its boxes by name and by id with it,
 * so a lookup costs the same with ten boxes or ten thousand.
 *
 * No lock: the table is guarded by whatever guards its objects. Insertion
 * may grow the bucket array (-ENOMEM when it cannot; the node is then not
 * inserted); removal never fails. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct hmap_node {
	struct hmap_node *next;
	uint64_t hash;
};

struct hmap {
	struct hmap_node **buckets;
	size_t n_buckets; /* a power of two, or 0 before the first insert */
	size_t n;
};

#define HMAP_INIT                                                                                  \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

uint64_t hmap_hash_str(const char *s);
uint64_t hmap_hash_u64(uint64_t v);

int hmap_insert(struct hmap *h, struct hmap_node *node, uint64_t hash);
void hmap_remove(struct hmap *h, struct hmap_node *node);
/* An object in two tables (by name and by id): node1 into h1 with hash1,
 * then node2 into h2 with hash2. All or nothing: when the second insert
 * fails the first is undone, and -ENOMEM leaves the object in neither. */
int hmap_insert_pair(struct hmap *h1, struct hmap_node *node1, uint64_t hash1, struct hmap *h2,
		     struct hmap_node *node2, uint64_t hash2);
/* Frees the bucket array (not the objects). */
void hmap_free(struct hmap *h);

/* The first node of hash, or NULL; then hmap_next_hash(). */
struct hmap_node *hmap_first_hash(const struct hmap *h, uint64_t hash);
struct hmap_node *hmap_next_hash(const struct hmap_node *node);

/* The object holding a node: HMAP_ENTRY(node, struct box, by_name). */
#define HMAP_ENTRY(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

/* for (node of hash) { ... }, node a struct hmap_node *. */
#define HMAP_FOR_HASH(node, h, hash)                                                               \
	for ((node) = hmap_first_hash((h), (hash)); (node); (node) = hmap_next_hash(node))
