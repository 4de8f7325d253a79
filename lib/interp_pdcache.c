/* interp_pdcache.c - oneDNN primitive descriptors the plan already made,
 * by the bytes of their op descriptor and post-ops (interp_int.h).
 *
 * dnnl_primitive_desc_create tries every implementation in turn and costs
 * about 0.1 ms; a graph of many ops of the same kind and shape asks for
 * the same descriptor over and over (a 100,000-op chain spent 16 s here).
 * A clone of a descriptor made before is the same descriptor at a
 * fraction of the cost.  Equal keys mean equal inputs to oneDNN, so a hit
 * is always right; a key that differs only in bytes oneDNN ignores merely
 * misses.  A descriptor oneDNN refused (or gave only in a reference
 * implementation) is kept as refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "interp_int.h"

struct pdc_entry {
	unsigned char *key;
	size_t len;
	uint64_t hash;
	dnnl_primitive_desc_t pd;
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

/* The key: the op descriptor's bytes, then each post-op's kind, function
 * and arguments (a binary post-op's layout, not which weight it reads). */
static unsigned char *make_key(const void *desc, size_t desc_size, const struct postops *po,
			       size_t *len)
{
	size_t cap = desc_size + sizeof po->n + (size_t)po->n * (sizeof po->e[0]);
	unsigned char *k = xmalloc(cap), *w = k;
	memcpy(w, desc, desc_size);
	w += desc_size;
	memcpy(w, &po->n, sizeof po->n);
	w += sizeof po->n;
	for (int i = 0; i < po->n; i++) {
		memcpy(w, &po->e[i].sum, sizeof po->e[i].sum);
		w += sizeof po->e[i].sum;
		memcpy(w, &po->e[i].alg, sizeof po->e[i].alg);
		w += sizeof po->e[i].alg;
		memcpy(w, &po->e[i].a, sizeof po->e[i].a);
		w += sizeof po->e[i].a;
		memcpy(w, &po->e[i].b, sizeof po->e[i].b);
		w += sizeof po->e[i].b;
		if (po->e[i].sum == 2) {
			memcpy(w, &po->e[i].md, sizeof po->e[i].md);
			w += sizeof po->e[i].md;
		}
	}
	*len = (size_t)(w - k);
	return k;
}

static struct pdc_entry *slot(struct pdcache *c, const unsigned char *key, size_t len, uint64_t h)
{
	for (size_t i = h & (size_t)(c->cap - 1);; i = (i + 1) & (size_t)(c->cap - 1)) {
		struct pdc_entry *e = &c->e[i];
		if (!e->key || (e->hash == h && e->len == len && !memcmp(e->key, key, len)))
			return e;
	}
}

int pdcache_get(struct plan *p, const void *desc, size_t desc_size, const struct postops *po,
		dnnl_primitive_desc_t *pd)
{
	struct pdcache *c = p->pdcache;
	*pd = NULL;
	if (!c || !desc_size)
		return 0;
	size_t len;
	unsigned char *key = make_key(desc, desc_size, po, &len);
	struct pdc_entry *e = slot(c, key, len, fnv(key, len));
	free(key);
	if (!e->key)
		return 0;
	if (e->pd && dnnl_primitive_desc_clone(pd, e->pd) != dnnl_success) {
		*pd = NULL;
		return 0;
	}
	return 1;
}

void pdcache_put(struct plan *p, const void *desc, size_t desc_size, const struct postops *po,
		 const_dnnl_primitive_desc_t pd)
{
	if (!desc_size)
		return;
	struct pdcache *c = p->pdcache;
	if (!c)
		c = p->pdcache = xcalloc(1, sizeof *c);
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
	size_t len;
	unsigned char *key = make_key(desc, desc_size, po, &len);
	uint64_t h = fnv(key, len);
	struct pdc_entry *e = slot(c, key, len, h);
	dnnl_primitive_desc_t copy = NULL;
	if (e->key || (pd && dnnl_primitive_desc_clone(&copy, pd) != dnnl_success)) {
		free(key);
		return;
	}
	*e = (struct pdc_entry){ key, len, h, copy };
	c->n++;
}

void pdcache_free(struct plan *p)
{
	struct pdcache *c = p->pdcache;
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
	p->pdcache = NULL;
}
