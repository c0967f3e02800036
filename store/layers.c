#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/layers.h"
#include "common/parse.h"

int layers_stack_parse(const char *text, struct layer_stack *ret)
{
	struct layer_stack s = {0};
	const char *p = text;

	while (*p) {
		int64_t v = 0;
		const char *start = p;

		while (*p >= '0' && *p <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return -EINVAL;
			v = v * 10 + (*p - '0');
			p++;
		}
		if (p == start || v <= 0 || (*start == '0'))
			return -EINVAL;
		if (*p == ',') {
			p++;
			if (!*p)
				return -EINVAL;
		} else if (*p)
			return -EINVAL;
		if (s.n >= LAYER_STACK_DEPTH_MAX || layers_stack_contains(&s, v))
			return -EINVAL;
		s.ids[s.n++] = v;
	}
	*ret = s;
	return 0;
}

int layers_stack_format(const struct layer_stack *s, char *buf, size_t bufsz)
{
	size_t off = 0;

	if (bufsz == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		int n = snprintf(buf + off, bufsz - off, "%s%" PRId64, i ? "," : "", s->ids[i]);
		if (n < 0 || (size_t)n >= bufsz - off)
			return -ENAMETOOLONG;
		off += (size_t)n;
	}
	return 0;
}

int layers_stack_push(struct layer_stack *s, int64_t id)
{
	if (s->n >= LAYER_STACK_DEPTH_MAX)
		return -ENOSPC;
	if (id <= 0 || layers_stack_contains(s, id))
		return -EINVAL;
	memmove(&s->ids[1], &s->ids[0], s->n * sizeof s->ids[0]);
	s->ids[0] = id;
	s->n++;
	return 0;
}

bool layers_stack_contains(const struct layer_stack *s, int64_t id)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] == id)
			return true;
	return false;
}

size_t layers_stack_merge_count(const struct layer_stack *s, unsigned depth)
{
	size_t keep = depth / 2 ? depth / 2 - 1 : 0;

	if (depth < 2 || s->n <= depth)
		return 0;
	return s->n - keep;
}

int layers_stack_replace_oldest(struct layer_stack *s, size_t count, int64_t id)
{
	size_t keep;

	if (count == 0 || count > s->n || id <= 0)
		return -EINVAL;
	keep = s->n - count;
	for (size_t i = 0; i < keep; i++)
		if (s->ids[i] == id)
			return -EINVAL;
	s->ids[keep] = id;
	s->n = keep + 1;
	return 0;
}

int layers_snapshot_id(const char *box, int64_t seq, char *buf, size_t bufsz)
{
	char suffix[24];
	size_t keep;
	int n;

	if (!name_valid(box) || seq <= 0)
		return -EINVAL;
	n = snprintf(suffix, sizeof suffix, "-%" PRId64, seq);
	keep = strlen(box);
	if (keep + (size_t)n > NAME_MAX_LEN)
		keep = NAME_MAX_LEN - (size_t)n;
	if (keep + (size_t)n + 1 > bufsz)
		return -ENAMETOOLONG;
	memcpy(buf, box, keep);
	memcpy(buf + keep, suffix, (size_t)n + 1);
	return 0;
}

size_t layers_select_garbage(const int64_t *present, size_t n_present, const int64_t *referenced,
			     size_t n_referenced, int64_t *ret)
{
	size_t n = 0;

	for (size_t i = 0; i < n_present; i++) {
		bool used = false;
		for (size_t k = 0; k < n_referenced && !used; k++)
			used = referenced[k] == present[i];
		if (!used)
			ret[n++] = present[i];
	}
	return n;
}

int layers_dir_id(const char *name, int64_t *ret)
{
	struct layer_stack s;

	if (name[0] != 'L' || !name[1] || strchr(name, ',') ||
	    layers_stack_parse(name + 1, &s) < 0 || s.n != 1)
		return -EINVAL;
	*ret = s.ids[0];
	return 0;
}
