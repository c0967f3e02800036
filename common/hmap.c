/* hmap.c - the intrusive hash table (hmap.h). Chained buckets, doubled when
 * the table holds as many nodes as buckets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/hmap.h"

uint64_t hmap_hash_str(const char *s)
{
	return XXH3_64bits(s, strlen(s));
}

uint64_t hmap_hash_u64(uint64_t v)
{
	return XXH3_64bits(&v, sizeof v);
}

static int grow(struct hmap *h)
{
	size_t n = h->n_buckets ? h->n_buckets * 2 : 16;
	struct hmap_node **b = calloc(n, sizeof *b);

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < h->n_buckets; i++) {
		struct hmap_node *node = h->buckets[i], *next;

		for (; node; node = next) {
			next = node->next;
			node->next = b[node->hash & (n - 1)];
			b[node->hash & (n - 1)] = node;
		}
	}
	free(h->buckets);
	h->buckets = b;
	h->n_buckets = n;
	return 0;
}

int hmap_insert(struct hmap *h, struct hmap_node *node, uint64_t hash)
{
	struct hmap_node **slot;

	if (h->n >= h->n_buckets && (grow(h) < 0 && h->n_buckets == 0))
		return -ENOMEM; /* a full table still takes it, only slower */
	node->hash = hash;
	slot = &h->buckets[hash & (h->n_buckets - 1)];
	node->next = *slot;
	*slot = node;
	h->n++;
	return 0;
}

int hmap_insert_pair(struct hmap *h1, struct hmap_node *node1, uint64_t hash1, struct hmap *h2,
		     struct hmap_node *node2, uint64_t hash2)
{
	int r = hmap_insert(h1, node1, hash1);

	if (r < 0)
		return r;
	r = hmap_insert(h2, node2, hash2);
	if (r < 0)
		hmap_remove(h1, node1);
	return r;
}

void hmap_remove(struct hmap *h, struct hmap_node *node)
{
	struct hmap_node **p;

	if (!h->n_buckets)
		return;
	for (p = &h->buckets[node->hash & (h->n_buckets - 1)]; *p; p = &(*p)->next)
		if (*p == node) {
			*p = node->next;
			node->next = NULL;
			h->n--;
			return;
		}
}

void hmap_free(struct hmap *h)
{
	free(h->buckets);
	*h = (struct hmap)HMAP_INIT;
}

struct hmap_node *hmap_first_hash(const struct hmap *h, uint64_t hash)
{
	struct hmap_node *node;

	if (!h->n_buckets)
		return NULL;
	for (node = h->buckets[hash & (h->n_buckets - 1)]; node; node = node->next)
		if (node->hash == hash)
			return node;
	return NULL;
}

struct hmap_node *hmap_next_hash(const struct hmap_node *node)
{
	uint64_t hash = node->hash;

	for (node = node->next; node; node = node->next)
		if (node->hash == hash)
			return (struct hmap_node *)node;
	return NULL;
}
