/* plan_pdcache.h - oneDNN primitive descriptors the plan made already, by
 * the bytes that determine them (lib/run/plan_pdcache.c). */
#ifndef TPUC_RUN_PLAN_PDCACHE_H
#define TPUC_RUN_PLAN_PDCACHE_H

#include <stddef.h>

#include <dnnl.h>

struct pdcache;

/* 1 when a descriptor was kept under KEY[0..LEN): *PD is its clone, or
 * NULL when oneDNN refused it; 0 when the key is unknown (*PD NULL). */
int pdcache_get(const struct pdcache *c, const void *key, size_t len,
		dnnl_primitive_desc_t *pd);
/* Keep a clone of PD (NULL: refused) under KEY; *C is made on first use. */
void pdcache_put(struct pdcache **c, const void *key, size_t len, const_dnnl_primitive_desc_t pd);
/* Drop them all; *C becomes NULL. */
void pdcache_free(struct pdcache **c);

#endif
