/* plan_pdcache.c - oneDNN primitive descriptors the plan made already
 * (plan_pdcache.h).
 *
 * dnnl_primitive_desc_create tries every implementation in turn and costs
 * about 0.1 ms; a graph of many ops of the same kind and shape asks for
 * the same descriptor over and over (a 100,000-op chain spent 16 s there).
 * A clone of a descriptor made before is the same descriptor at a
 * fraction of the cost.  The key is what determines the descriptor (the
 * op descriptor's bytes and the post-ops, lib/run/plan_ops.c): equal keys
 * mean equal inputs to oneDNN, so a hit is always right; a key differing
 * only in bytes oneDNN ignores merely misses.  A descriptor oneDNN refused
 * (or gave only in a reference implementation) is kept as refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "run/plan_pdcache.h"

struct pdc_entry {
	unsigned char *key;        /* NULL: a free slot */
	size_t len;
	uint64_t hash;
	dnnl_primitive_desc_t pd;  /* NULL: refused */
};

struct pdcache {
	int n, cap;                /* entries in use; slots, a power of two */
	struct pdc_entry *e;
};

static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211u;
	return h;
}

static struct pdc_entry *slot(const struct pdcache *c, const void *key, size_t len, uint64_t h)
{
	for (size_t i = h & (size_t)(c->cap - 1);; i = (i + 1) & (size_t)(c->cap - 1)) {
		struct pdc_entry *e = &c->e[i];
		if (!e->key || (e->hash == h && e->len == len && !memcmp(e->key, key, len)))
			return e;
	}
}

int pdcache_get(const struct pdcache *c, const void *key, size_t len, dnnl_primitive_desc_t *pd)
{
	*pd = NULL;
	if (!c || !c->n)
		return 0;
	const struct pdc_entry *e = slot(c, key, len, fnv(key, len));
	if (!e->key)
		return 0;
	if (e->pd && dnnl_primitive_desc_clone(pd, e->pd) != dnnl_success) {
		*pd = NULL;
		return 0;
	}
	return 1;
}

void pdcache_put(struct pdcache **cp, const void *key, size_t len, const_dnnl_primitive_desc_t pd)
{
	struct pdcache *c = *cp;
	if (!c)
		c = *cp = xcalloc(1, sizeof *c);
	if (2 * (c->n + 1) > c->cap) {
		struct pdcache big = { 0, c->cap ? 2 * c->cap : 64, NULL };
		big.e = xcalloc((size_t)big.cap, sizeof *big.e);
		for (int i = 0; i < c->cap; i++)
			if (c->e[i].key) {
				*slot(&big, c->e[i].key, c->e[i].len, c->e[i].hash) = c->e[i];
				big.n++;
			}
		free(c->e);
		*c = big;
	}
	uint64_t h = fnv(key, len);
	struct pdc_entry *e = slot(c, key, len, h);
	dnnl_primitive_desc_t copy = NULL;
	if (e->key || (pd && dnnl_primitive_desc_clone(&copy, pd) != dnnl_success))
		return;
	unsigned char *k = xmalloc(len ? len : 1);
	memcpy(k, key, len);
	*e = (struct pdc_entry){ k, len, h, copy };
	c->n++;
}

void pdcache_free(struct pdcache **cp)
{
	struct pdcache *c = *cp;
	if (!c)
		return;
	for (int i = 0; i < c->cap; i++)
		if (c->e[i].key) {
			free(c->e[i].key);
			if (c->e[i].pd)
				dnnl_primitive_desc_destroy(c->e[i].pd);
		}
	free(c->e);
	free(c);
	*cp = NULL;
}
