/* check_hmap.c - the intrusive hash table (hmap.h): objects found by their
 * key after inserts that grow the table, gone after removal, several keys
 * of one hash (a colliding hash forced) each found by its own compare, and
 * an insert into two tables that is all or nothing (calloc made to fail:
 * this test is linked with -Wl,--wrap=calloc). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-tap.h"
#include "common/hmap.h"

struct item {
	char name[16];
	int64_t id;
	struct hmap_node by_name, by_id;
};

/* The next calloc() of the table's code fails when set. */
static bool fail_calloc;
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	if (fail_calloc) {
		fail_calloc = false;
		return NULL;
	}
	return __real_calloc(n, size);
}

static struct item *find(struct hmap *h, const char *name, uint64_t hash)
{
	struct hmap_node *node;

	HMAP_FOR_HASH(node, h, hash)
	{
		struct item *it = HMAP_ENTRY(node, struct item, by_name);
		if (strcmp(it->name, name) == 0)
			return it;
	}
	return NULL;
}

START_TEST(test_empty)
{
	struct hmap h = HMAP_INIT;

	ck_assert_ptr_null(hmap_first_hash(&h, hmap_hash_str("x")));
	ck_assert_ptr_null(find(&h, "x", hmap_hash_str("x")));
	hmap_free(&h);
}
END_TEST

START_TEST(test_many)
{
	enum { N = 5000 };
	struct hmap h = HMAP_INIT;
	struct item *items = calloc(N, sizeof *items);
	char name[16];

	ck_assert_ptr_nonnull(items);
	for (int i = 0; i < N; i++) {
		snprintf(items[i].name, sizeof items[i].name, "box%d", i);
		ck_assert_int_eq(hmap_insert(&h, &items[i].by_name, hmap_hash_str(items[i].name)),
				 0);
	}
	ck_assert_uint_eq(h.n, N);
	ck_assert_uint_ge(h.n_buckets, N); /* it grew */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "box%d", i);
		ck_assert_ptr_eq(find(&h, name, hmap_hash_str(name)), &items[i]);
	}
	ck_assert_ptr_null(find(&h, "box-none", hmap_hash_str("box-none")));
	/* Every other one removed: those are gone, the rest still found. */
	for (int i = 0; i < N; i += 2)
		hmap_remove(&h, &items[i].by_name);
	ck_assert_uint_eq(h.n, N / 2);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "box%d", i);
		ck_assert_ptr_eq(find(&h, name, hmap_hash_str(name)), i % 2 ? &items[i] : NULL);
	}
	hmap_free(&h);
	free(items);
}
END_TEST

/* Three keys given one hash: each found by its compare, removal of the
 * middle one keeps the others. */
START_TEST(test_collisions)
{
	struct hmap h = HMAP_INIT;
	struct item a = {.name = "a"}, b = {.name = "b"}, c = {.name = "c"};

	ck_assert_int_eq(hmap_insert(&h, &a.by_name, 42), 0);
	ck_assert_int_eq(hmap_insert(&h, &b.by_name, 42), 0);
	ck_assert_int_eq(hmap_insert(&h, &c.by_name, 42), 0);
	ck_assert_ptr_eq(find(&h, "a", 42), &a);
	ck_assert_ptr_eq(find(&h, "b", 42), &b);
	ck_assert_ptr_eq(find(&h, "c", 42), &c);
	hmap_remove(&h, &b.by_name);
	ck_assert_ptr_null(find(&h, "b", 42));
	ck_assert_ptr_eq(find(&h, "a", 42), &a);
	ck_assert_ptr_eq(find(&h, "c", 42), &c);
	/* A node of another hash in the same bucket is not returned. */
	ck_assert_ptr_null(hmap_first_hash(&h, 42 + 16));
	hmap_free(&h);
}
END_TEST

static struct item *find_id(struct hmap *h, int64_t id)
{
	struct hmap_node *node;

	HMAP_FOR_HASH(node, h, hmap_hash_u64((uint64_t)id))
	{
		struct item *it = HMAP_ENTRY(node, struct item, by_id);
		if (it->id == id)
			return it;
	}
	return NULL;
}

/* hmap_insert_pair(): in both tables, or (the second table cannot take
 * it) in neither, the first table as it was. */
START_TEST(test_pair)
{
	struct hmap by_name = HMAP_INIT, by_id = HMAP_INIT;
	struct item a = {.name = "a", .id = 1}, b = {.name = "b", .id = 2};

	ck_assert_int_eq(hmap_insert_pair(&by_name, &a.by_name, hmap_hash_str("a"), &by_id,
					  &a.by_id, hmap_hash_u64(1)),
			 0);
	ck_assert_ptr_eq(find(&by_name, "a", hmap_hash_str("a")), &a);
	ck_assert_ptr_eq(find_id(&by_id, 1), &a);

	/* The second table is empty: its first insert allocates, and fails. */
	hmap_remove(&by_id, &a.by_id);
	hmap_free(&by_id);
	fail_calloc = true;
	ck_assert_int_eq(hmap_insert_pair(&by_name, &b.by_name, hmap_hash_str("b"), &by_id,
					  &b.by_id, hmap_hash_u64(2)),
			 -ENOMEM);
	ck_assert(!fail_calloc); /* the failure was the second table's */
	ck_assert_ptr_null(find(&by_name, "b", hmap_hash_str("b")));
	ck_assert_ptr_null(find_id(&by_id, 2));
	ck_assert_uint_eq(by_name.n, 1);
	ck_assert_ptr_eq(find(&by_name, "a", hmap_hash_str("a")), &a);

	/* The first table failing: nothing inserted anywhere. */
	struct hmap empty = HMAP_INIT;
	fail_calloc = true;
	ck_assert_int_eq(hmap_insert_pair(&empty, &b.by_name, hmap_hash_str("b"), &by_id, &b.by_id,
					  hmap_hash_u64(2)),
			 -ENOMEM);
	ck_assert_uint_eq(empty.n, 0);
	ck_assert_uint_eq(by_id.n, 0);
	ck_assert_ptr_null(find_id(&by_id, 2));

	/* And once memory is there, both. */
	ck_assert_int_eq(hmap_insert_pair(&by_name, &b.by_name, hmap_hash_str("b"), &by_id,
					  &b.by_id, hmap_hash_u64(2)),
			 0);
	ck_assert_ptr_eq(find(&by_name, "b", hmap_hash_str("b")), &b);
	ck_assert_ptr_eq(find_id(&by_id, 2), &b);
	hmap_free(&by_name);
	hmap_free(&by_id);
	hmap_free(&empty);
}
END_TEST

START_TEST(test_hashes)
{
	ck_assert_uint_eq(hmap_hash_str("abc"), hmap_hash_str("abc"));
	ck_assert_uint_ne(hmap_hash_str("abc"), hmap_hash_str("abd"));
	ck_assert_uint_ne(hmap_hash_u64(1), hmap_hash_u64(2));
}
END_TEST

static Suite *hmap_suite(void)
{
	Suite *s = suite_create("hmap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_collisions);
	tcase_add_test(tc, test_pair);
	tcase_add_test(tc, test_hashes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(hmap_suite());
}
