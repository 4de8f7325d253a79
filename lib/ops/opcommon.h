/* opcommon.h - helpers shared by the operator files in lib/ops/ (not
 * exported beyond them): tensor access, output shape setting, broadcasting.
 */
#ifndef TPUC_OPCOMMON_H
#define TPUC_OPCOMMON_H

#include "base.h"
#include "ir.h"
#include "op.h"

/* Input i of op as a tensor, or NULL when absent. */
static inline struct ir_tensor *op_in(struct ir_graph *g, const struct ir_op *op, int i)
{
	return i < op->n_in && op->in[i] >= 0 ? &g->tensors[op->in[i]] : NULL;
}

static inline struct ir_tensor *op_out(struct ir_graph *g, const struct ir_op *op, int i)
{
	return &g->tensors[op->out[i]];
}

/* Set output i's dtype and shape. */
void op_set_out(struct ir_graph *g, const struct ir_op *op, int i, enum ir_dtype dt,
		int rank, const int64_t *shape);
/* Output 0 takes input 0's dtype and shape. */
int infer_same(struct ir_graph *g, struct ir_op *op);
/* Fail with "op 'NAME' (Type): reason" when the op lacks min..max inputs. */
int op_check_arity(const struct ir_graph *g, const struct ir_op *op, int min_in, int max_in);
/* Record an error about op: "op 'NAME' (Type): ...". */
int op_error(const struct ir_op *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Numpy broadcasting of two shapes into out (which may be a or b); -1 if
 * incompatible. */
int broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out);
/* Normalise a possibly negative axis against rank; -1 if out of range. */
int norm_axis(int64_t axis, int rank);

/* A Slice's first index, step and count per axis of an input of rank r
 * and the given shape (lib/ops/movement.c); -1 with a message. */
int slice_geometry(const struct ir_op *op, int r, const int64_t *shape, int64_t *start,
		   int64_t *step, int64_t *count);

#endif
