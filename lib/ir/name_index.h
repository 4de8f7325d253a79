/* name_index.h - a hash index from names to small integers (entry numbers
 * of a table, op indices), so that lookups by name in tables of any size
 * take constant time.  Keys are copied.
 */
#ifndef TPUC_NAME_INDEX_H
#define TPUC_NAME_INDEX_H

struct name_slot {
	char *key;                   /* NULL for a free slot */
	int value;
};

struct name_index {
	struct name_slot *s;         /* cap slots, open addressing */
	int cap, n;                  /* cap a power of two (0 before the first put) */
};

/* The value stored under KEY, or -1. */
int name_index_get(const struct name_index *x, const char *key);
/* Store VALUE under KEY unless KEY is there already; returns the value
 * KEY already had, or -1 when it was added. */
int name_index_put(struct name_index *x, const char *key, int value);
/* Store VALUE under KEY, replacing any value KEY had. */
void name_index_set(struct name_index *x, const char *key, int value);
void name_index_free(struct name_index *x);

#endif
