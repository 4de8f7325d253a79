/* name_index.c - open-addressing hash index of names (FNV-1a, linear
 * probing, load at most 1/2). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/name_index.h"

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The slot holding KEY, or the free slot where it would go. */
static struct name_slot *find_slot(const struct name_index *x, const char *key)
{
	uint32_t mask = (uint32_t)x->cap - 1;
	for (uint32_t k = name_hash(key) & mask;; k = (k + 1) & mask)
		if (!x->s[k].key || !strcmp(x->s[k].key, key))
			return &x->s[k];
}

int name_index_get(const struct name_index *x, const char *key)
{
	if (!x->cap)
		return -1;
	const struct name_slot *s = find_slot(x, key);
	return s->key ? s->value : -1;
}

int name_index_put(struct name_index *x, const char *key, int value)
{
	if (2 * (x->n + 1) > x->cap) {
		struct name_index g = { .cap = x->cap ? 2 * x->cap : 64 };
		g.s = xcalloc((size_t)g.cap, sizeof *g.s);
		for (int i = 0; i < x->cap; i++)
			if (x->s[i].key)
				*find_slot(&g, x->s[i].key) = x->s[i];
		g.n = x->n;
		free(x->s);
		*x = g;
	}
	struct name_slot *s = find_slot(x, key);
	if (s->key)
		return s->value;
	s->key = xstrdup(key);
	s->value = value;
	x->n++;
	return -1;
}

void name_index_set(struct name_index *x, const char *key, int value)
{
	if (name_index_put(x, key, value) >= 0)
		find_slot(x, key)->value = value;
}

void name_index_free(struct name_index *x)
{
	for (int i = 0; i < x->cap; i++)
		free(x->s[i].key);
	free(x->s);
	memset(x, 0, sizeof *x);
}
