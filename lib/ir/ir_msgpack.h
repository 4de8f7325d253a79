/* ir_msgpack.h - the msgpack conventions of the IR file (formats/tpuc-ir.5)
 * that the .tmodel's layer table shares (formats/tpuc-tmodel.5): strings,
 * index lists, shapes and the op entry with its attributes.  Implemented in
 * lib/ir/ir_io.c; used by lib/ir/ir_io.c and lib/chip/tmodel.c only.
 */
#ifndef TPUC_IR_MSGPACK_H
#define TPUC_IR_MSGPACK_H

#include <msgpack.h>
#include <stdint.h>

#include "ir/ir.h"

/* ---- writing ---- */

/* S as a msgpack str; NULL packs as "". */
void mp_pack_str(msgpack_packer *pk, const char *s);
/* N ints as an array of integers. */
void mp_pack_ints(msgpack_packer *pk, int n, const int *v);
/* T's shape as an array of RANK integers. */
void mp_pack_shape(msgpack_packer *pk, const struct ir_tensor *t);
/* One op entry: a map of "type", "name", "in", "out" and "attrs" (each
 * attribute by its kind: int, float64, str, int array, float32 array, nil
 * for an empty float list); with GROUPS also "group" and "place" where the
 * op has them (the IR file; the .tmodel leaves them out). */
void ir_pack_op(msgpack_packer *pk, const struct ir_op *op, int groups);

/* ---- reading: each returns 0, or -1 (no message) when O is not what it
 * should be.  Strings are copied: the caller frees them. ---- */

/* Whether KV's key is the str K. */
int mp_key_is(const msgpack_object_kv *kv, const char *k);
/* A str as a new NUL-terminated string in *OUT, freeing what *OUT held
 * (NULL or a string from an earlier call). */
int mp_str(const msgpack_object *o, char **out);
/* An integer that fits int64_t. */
int mp_int(const msgpack_object *o, int64_t *v);
/* A float, or an integer as a double. */
int mp_num(const msgpack_object *o, double *v);
/* An array of integers in [LO, LIMIT) as a new int array in *OUT (freeing
 * what *OUT held) and its length in *N.  On failure *OUT is still set. */
int mp_indices(const msgpack_object *o, int lo, int limit, int **out, int *n);

/* Decode op entry O, a map as ir_pack_op writes it (keys in any order,
 * unknown keys skipped, "type", "name", "in" and "out" each once), and
 * append the op to G; its tensor indices must lie below g->n_tensors.
 * Returns 0, or -1 with a message naming FILE: "'FILE': corrupt KIND:
 * malformed NOUN entry" (also when O is not a map) or "... malformed
 * attribute", where KIND is "IR" or "tmodel" and NOUN "op" or "layer"; or
 * "'FILE': NOUN 'name': unknown operator type 'x'".  An op appended before
 * a bad attribute was found stays in G. */
int ir_unpack_op(struct ir_graph *g, const msgpack_object *o, const char *file,
		 const char *kind, const char *noun);
/* Give the subgraphs of G (If, Loop, Scan bodies, nested) their dialect,
 * stage and mode: G's, or Top's under an op placed on the host; a reader
 * of ops one by one (ir_unpack_op) calls it once all are read. */
void ir_subgraphs_follow(struct ir_graph *g);

#endif
