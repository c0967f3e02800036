/* layers.h - pure helpers for frozen overlay layers and snapshots: layer
 * stacks as stored ("7,5,2", newest first), snapshot ids, the choice of
 * garbage. No I/O (the crash tests' fault points are util.h pd_fault()).
 *
 * A layer is DATA/layers/L<ID>: an old overlay upper directory, frozen
 * (read-only from then on, shared by every box and snapshot built on it).
 * A box's root is overlay(lowerdir = its stack, newest first, then the
 * image's rootfs; upperdir = the box's own upper).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest stack a box or snapshot may have. Overlay takes its options in
 * one page, so the lowerdir list must stay short; layer merging (which
 * would keep stacks shallow) is not built yet. */
#define LAYER_STACK_DEPTH_MAX 48
/* Text of the longest stack: 48 ids of up to 19 digits and commas. */
#define LAYER_STACK_TEXT_MAX (LAYER_STACK_DEPTH_MAX * 20 + 1)

struct layer_stack {
	int64_t ids[LAYER_STACK_DEPTH_MAX];
	size_t n;
};

/* Parses "7,5,2" (or "" for an empty stack). -EINVAL on anything else:
 * non-digits, ids <= 0, a repeated id, more than LAYER_STACK_DEPTH_MAX. */
int layer_stack_parse(const char *text, struct layer_stack *ret);

/* Writes the stack's text form into buf. -ENAMETOOLONG if it does not fit. */
int layer_stack_format(const struct layer_stack *s, char *buf, size_t bufsz);

/* Puts id on top. -ENOSPC when the stack is full. */
int layer_stack_push(struct layer_stack *s, int64_t id);

bool layer_stack_contains(const struct layer_stack *s, int64_t id);

/* A snapshot's id: "BOX-SEQ", the box name shortened so the whole fits a
 * name ([a-z0-9][a-z0-9._-]{0,62}). SEQ is never reused and the id splits
 * at its last '-', so ids never collide. -EINVAL if box is not a name. */
int snapshot_id_make(const char *box, int64_t seq, char *buf, size_t bufsz);

/* Garbage: the ids in present[] that are not in referenced[]. Writes them
 * to ret (room for n_present) and returns how many. Order is kept. */
size_t layers_select_garbage(const int64_t *present, size_t n_present, const int64_t *referenced,
			     size_t n_referenced, int64_t *ret);

/* "L123" -> 123; -EINVAL for any other name (L0, L01, L1.tmp, x). */
int layer_dir_id(const char *name, int64_t *ret);
