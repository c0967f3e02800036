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

/* Deepest stack a box or snapshot may ever have: a hard safety limit
 * (overlay takes its options in one page, so the lowerdir list must stay
 * short). Boxes stay far shallower: layer merging keeps them at most
 * layer_merge_depth (config.h, at most 32) deep. */
#define LAYER_STACK_DEPTH_MAX 48
/* Text of the longest stack: 48 ids of up to 19 digits and commas. */
#define LAYER_STACK_TEXT_MAX (LAYER_STACK_DEPTH_MAX * 20 + 1)

struct layer_stack {
	int64_t ids[LAYER_STACK_DEPTH_MAX];
	size_t n;
};

/* Parses "7,5,2" (or "" for an empty stack). -EINVAL on anything else:
 * non-digits, ids <= 0, a repeated id, more than LAYER_STACK_DEPTH_MAX. */
int layers_stack_parse(const char *text, struct layer_stack *ret);

/* Writes the stack's text form into buf. -ENAMETOOLONG if it does not fit. */
int layers_stack_format(const struct layer_stack *s, char *buf, size_t bufsz);

/* Puts id on top. -ENOSPC when the stack is full. */
int layers_stack_push(struct layer_stack *s, int64_t id);

bool layers_stack_contains(const struct layer_stack *s, int64_t id);

/* How many of the oldest layers of s to merge into one so the stack is no
 * deeper than depth (>= 2): 0 while it is not deeper. A merge leaves
 * depth/2 layers (the newest depth/2 - 1 and the merged one), so the next
 * ones come at most every depth/2 pushes, not at every push. */
size_t layers_stack_merge_count(const struct layer_stack *s, unsigned depth);

/* Replaces the oldest count layers of s by id (a merge of them). -EINVAL
 * if count is not 1..s->n or id is 0 or already elsewhere in the stack. */
int layers_stack_replace_oldest(struct layer_stack *s, size_t count, int64_t id);

/* A snapshot's id: "BOX-SEQ", the box name shortened so the whole fits a
 * name ([a-z0-9][a-z0-9._-]{0,62}). SEQ is never reused and the id splits
 * at its last '-', so ids never collide. -EINVAL if box is not a name. */
int layers_snapshot_id(const char *box, int64_t seq, char *buf, size_t bufsz);

/* Garbage: the ids in present[] that are not in referenced[]. Writes them
 * to ret (room for n_present) and returns how many. Order is kept. */
size_t layers_select_garbage(const int64_t *present, size_t n_present, const int64_t *referenced,
			     size_t n_referenced, int64_t *ret);

/* "L123" -> 123; -EINVAL for any other name (L0, L01, L1.tmp, x). */
int layers_dir_id(const char *name, int64_t *ret);
