/* limit.h - the host resources a model may claim (formats/tpuc-limits.5): the memory ceiling of --max-memory, checked
 * before anything model-sized is allocated, and checked size arithmetic.
 */
#ifndef TPUC_LIMIT_H
#define TPUC_LIMIT_H

#include <stdint.h>

#include "ir/ir.h"

/* The default of --max-memory: 8 GiB. */
#define LIMIT_MAX_MEMORY_DEFAULT ((int64_t)8 << 30)

/* Host memory, in bytes, one model may claim: its weights and activations
 * together, as a tool holds them.  Set once by the tools' --max-memory. */
int64_t limit_max_memory(void);
void limit_set_max_memory(int64_t bytes);

/* Parse a --max-memory value: a positive integer of bytes with an optional
 * suffix K, M, G or T (powers of 1024).  0, or -1 with a message. */
int limit_parse_size(const char *s, int64_t *bytes);

/* Check what NEED bytes of WHAT (a phrase: "the activations") would claim
 * against limit_max_memory(): 0, or -1 with "WHAT need N bytes, more than
 * --max-memory M allows". */
int limit_check(int64_t need, const char *what);

/* Check output tensors of OP after its shape inference: every dimension in
 * [0, IR_MAX_DIM], the element count times the dtype's size without
 * overflow, at most IR_MAX_TENSOR_BYTES and within limit_max_memory().
 * -1 with "op 'NAME' (Type): output 'T' ..." naming the rule. */
int limit_check_outputs(const struct ir_graph *g, const struct ir_op *op);

/* Bytes of RANK dims SHAPE of elements of ESIZE bytes, or -1 when a
 * dimension is negative or the product overflows int64. */
int64_t limit_shape_bytes(int rank, const int64_t *shape, int64_t esize);

/* Walk the msgpack object at BUF[0..LEN) without decoding it, and check
 * that no array or map claims more elements than the bytes left could
 * hold (each takes at least one): the decoder allocates a claimed count
 * before reading it, so 5 bytes could ask for 64 GiB.  Iterative, any
 * depth.  0 (also for a truncated object, which the decoder reports), or
 * -1 with "an array of N elements in M bytes". */
int limit_check_msgpack(const void *buf, size_t len);

#endif
