/* lower_wide.c - ops with more operands than a compute command has slots
 * (ISA_MAX_OPERANDS, formats/tpuc-isa.5) become trees of narrower ops of
 * the same type (lib/lower.h, lower_split_wide).  A Concat of 17 inputs is
 * three Concats of at most 7 inputs into parts, then a Concat of the parts:
 * the same bytes, the parts quantised like the output so that the last
 * Concat copies them unchanged (multiplier 2^30, shift 30).  The variadic
 * Sum, Max and Min (float on the chip) become partial ops likewise.  An
 * LSTM, GRU or RNN drops its absent inputs (attribute "slots", lib/ops/rnn.c):
 * an LSTM with peepholes and no sequence_lens has X, W, R, B, initial_h,
 * initial_c and P with Y and Y_h, 9 operands of 10 slots, 7 of 8 without
 * initial_c.  Still too wide, an LSTM packs B with P, then initial_h with
 * initial_c, into one input each (a Concat before it): X, W, R, B, initial_h,
 * initial_c with Y, Y_h, Y_c (a stacked LSTM that returns its state) are 8.
 * What is wider still is refused, naming the op.  An op on the host
 * (PLACE_HOST) runs whole: its host command has no operands.
 */
#include <stdlib.h>
#include <string.h>

#include "back/lower_wide.h"
#include "chip/isa.h"
#include "ir/base.h"
#include "ir/op.h"

/* A host op (PLACE_HOST) runs whole: its command has no operands. */
static int wide_kind(const struct ir_op *op)
{
	return op->n_out == 1 && op->n_in + op->n_out > ISA_MAX_OPERANDS && op->place != PLACE_HOST &&
	       (op->type == OP_CONCAT || op->type == OP_SUM || op->type == OP_MAX ||
		op->type == OP_MIN);
}

/* A new op over inputs in[0..n) of the same type and attributes as op i,
 * into a new tensor like op i's output; returns the tensor. */
static int add_part(struct ir_graph *g, int i, const int *in, int n, const int64_t *m,
		    const int64_t *sh)
{
	const struct ir_op *op = &g->ops[i];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int64_t shape[IR_MAX_RANK];
	int rank = y->rank;
	memcpy(shape, y->shape, sizeof shape);
	if (op->type == OP_CONCAT) {
		int axis = (int)op_int(op, "axis", 1);
		if (axis < 0)
			axis += rank;
		shape[axis] = 0;
		for (int j = 0; j < n; j++)
			shape[axis] += g->tensors[in[j]].shape[axis];
	} else {
		rank = g->tensors[in[0]].rank;
		memcpy(shape, g->tensors[in[0]].shape, sizeof shape);
		for (int j = 1; j < n; j++)
			broadcast_shape(rank, shape, g->tensors[in[j]].rank, g->tensors[in[j]].shape,
					&rank, shape);
	}
	char base[512];
	snprintf(base, sizeof base, "%s_part", y->name);
	char *name = graph_unique_name(g, base, 1);
	enum ir_dtype dt = y->dtype;
	float scale = y->scale;
	int zp = y->zero_point;
	int t = graph_add_tensor(g, name, dt, rank, shape);
	g->tensors[t].scale = scale;
	g->tensors[t].zero_point = zp;
	int k = graph_add_op(g, g->ops[i].type, name, n, in, 1, &t);
	free(name);
	op = &g->ops[i];
	struct ir_op *o = &g->ops[k];
	for (int a = 0; a < op->n_attr; a++) {
		const struct ir_attr *at = &op->attr[a];
		if (!strcmp(at->name, "multipliers") || !strcmp(at->name, "shifts"))
			continue;
		op_copy_attr(o, at);
	}
	if (m) {
		op_set_ints(o, "multipliers", n, m);
		op_set_ints(o, "shifts", n, sh);
	}
	return t;
}

static int used(const struct ir_graph *g, int t)
{
	for (int o = 0; o < g->n_outputs; o++)
		if (g->outputs[o] == t)
			return 1;
	for (int k = 0; k < g->n_ops; k++)
		for (int j = 0; j < g->ops[k].n_in; j++)
			if (g->ops[k].in[j] == t)
				return 1;
	return 0;
}

/* When op I with inputs IN[0..*n) (ONNX slots SLOT[]) and its outputs
 * pass the operand slots, and inputs of slots SA and SB are present: one
 * input, their Concat along AXIS (a new op, named after the first with
 * SUFFIX), in place of the first, the second dropped, attribute ATTR set.
 * 1 when packed. */
static int pack_pair(struct ir_graph *g, int i, int *in, int64_t *slot, int *n, int sa, int sb,
		     int axis, const char *suffix, const char *attr)
{
	int a = -1, b = -1;
	for (int j = 0; j < *n; j++) {
		a = slot[j] == sa ? j : a;
		b = slot[j] == sb ? j : b;
	}
	if (*n + g->ops[i].n_out <= ISA_MAX_OPERANDS || a < 0 || b < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[in[a]], *y = &g->tensors[in[b]];
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, x->shape, sizeof shape);
	shape[axis] += y->shape[axis];
	char base[512];
	snprintf(base, sizeof base, "%s%s", x->name, suffix);
	char *name = graph_unique_name(g, base, 1);
	int t = graph_add_tensor(g, name, x->dtype, x->rank, shape);
	int cin[2] = { in[a], in[b] };
	int k = graph_add_op(g, OP_CONCAT, name, 2, cin, 1, &t);
	free(name);
	op_set_int(&g->ops[k], "axis", axis);
	op_set_int(&g->ops[i], attr, 1);
	in[a] = t;
	memmove(in + b, in + b + 1, sizeof *in * (size_t)(*n - b - 1));
	memmove(slot + b, slot + b + 1, sizeof *slot * (size_t)(*n - b - 1));
	(*n)--;
	return 1;
}

/* A recurrent op (LSTM, GRU, RNN) with more operands than slots keeps only
 * its inputs present, their ONNX slots in attribute "slots", and its
 * outputs used, theirs in "out_slots"; an LSTM then still too wide packs B
 * and P into one input (attribute bp), then initial_h and initial_c
 * (attribute hc; rnn.c), each by a Concat before it: the ops added last to
 * G, *packed of them. */
static int rnn_compact(struct ir_graph *g, int i, int *packed, int *dropped)
{
	struct ir_op *op = &g->ops[i];
	*packed = 0;
	if ((op->type != OP_LSTM && op->type != OP_GRU && op->type != OP_RNN) ||
	    op->n_in + op->n_out <= ISA_MAX_OPERANDS || op_attr(op, "slots"))
		return 0;
	int *in = xmalloc(sizeof *in * (size_t)(op->n_in + op->n_out + 1));
	int64_t *slot = xmalloc(sizeof *slot * (size_t)(op->n_in + op->n_out + 1));
	int n = 0;
	for (int j = 0; j < op->n_out; j++)
		if (used(g, op->out[j])) {
			in[n] = op->out[j];
			slot[n++] = j;
		}
	if (n < op->n_out && n > 0) {
		memcpy(op->out, in, sizeof *in * (size_t)n);
		op->n_out = n;
		op_set_ints(op, "out_slots", n, slot);
		*dropped = 1;
	}
	n = 0;
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] >= 0) {
			in[n] = op->in[j];
			slot[n++] = j;
		}
	/* B [nd, 8H] and P [nd, 3H] into [nd, 11H]; then initial_h and
	 * initial_c [d0, d1, H] into [2 d0, d1, H] */
	if (op->type == OP_LSTM && pack_pair(g, i, in, slot, &n, 3, 7, 1, "_P", "bp"))
		(*packed)++;
	if (op->type == OP_LSTM && pack_pair(g, i, in, slot, &n, 5, 6, 0, "_c", "hc"))
		(*packed)++;
	op = &g->ops[i];
	op_set_inputs(op, n, in);
	op_set_ints(op, "slots", n, slot);
	free(in);
	free(slot);
	if (op->n_in + op->n_out > ISA_MAX_OPERANDS)
		return op_error(op, "has %d inputs and %d outputs, a compute command takes %d operands",
				op->n_in, op->n_out, ISA_MAX_OPERANDS);
	return 0;
}

int lower_split_wide(struct ir_graph *g)
{
	int n0 = g->n_ops, per = ISA_MAX_OPERANDS - 1, any = 0, dropped = 0;
	int *owner = NULL, cap = 0;    /* per new op: the op it feeds */
	for (int i = 0; i < n0; i++) {
		int k;
		if (rnn_compact(g, i, &k, &dropped) < 0) {
			free(owner);
			return -1;
		}
		if (k > 0) {
			grow_array((void **)&owner, &cap, g->n_ops - n0, sizeof *owner);
			for (int j = g->n_ops - k; j < g->n_ops; j++)
				owner[j - n0] = i;
			any = 1;
		}
	}
	for (int i = 0; i < n0; i++) {
		if (!wide_kind(&g->ops[i]))
			continue;
		if (g->ops[i].type != OP_CONCAT)
			for (int j = 0; j < g->ops[i].n_in; j++)
				if (g->ops[i].in[j] < 0)
					return op_error(&g->ops[i], "absent input %d", j);
		any = 1;
		int n = g->ops[i].n_in;
		int *cur = xmalloc(sizeof *cur * (size_t)n);
		int64_t *m = NULL, *sh = NULL;
		memcpy(cur, g->ops[i].in, sizeof *cur * (size_t)n);
		const struct ir_attr *am = op_attr(&g->ops[i], "multipliers");
		const struct ir_attr *as = op_attr(&g->ops[i], "shifts");
		if (am && as && am->kind == ATTR_INTS && as->kind == ATTR_INTS && am->n == n &&
		    as->n == n) {
			m = xmalloc(sizeof *m * (size_t)n);
			sh = xmalloc(sizeof *sh * (size_t)n);
			memcpy(m, am->ints, sizeof *m * (size_t)n);
			memcpy(sh, as->ints, sizeof *sh * (size_t)n);
		}
		while (n + 1 > ISA_MAX_OPERANDS) {
			int k = 0;
			for (int a = 0; a < n; a += per) {
				int c = n - a < per ? n - a : per;
				int t = cur[a];
				if (c > 1) {
					t = add_part(g, i, cur + a, c, m ? m + a : NULL, sh ? sh + a : NULL);
					grow_array((void **)&owner, &cap, g->n_ops - n0, sizeof *owner);
					owner[g->n_ops - 1 - n0] = i;
				}
				if (m) {
					m[k] = c > 1 ? (int64_t)1 << 30 : m[a];
					sh[k] = c > 1 ? 30 : sh[a];
				}
				cur[k++] = t;
			}
			n = k;
		}
		op_set_inputs(&g->ops[i], n, cur);
		if (m) {
			op_set_ints(&g->ops[i], "multipliers", n, m);
			op_set_ints(&g->ops[i], "shifts", n, sh);
		}
		free(cur);
		free(m);
		free(sh);
	}
	if (!any) {
		if (dropped)
			graph_compact(g);
		return 0;
	}
	graph_place_before(g, n0, owner);   /* each new op just before the op it feeds */
	free(owner);
	if (dropped)
		graph_compact(g);
	return 0;
}
