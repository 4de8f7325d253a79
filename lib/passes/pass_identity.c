/* pass_identity.c - remove-identity: drop ops that pass their input through
 * unchanged: Identity, Reshape or Flatten whose output shape equals
 * their input shape, a Pad of zero on every side (torch exports one
 * before each AveragePool), a forward Slice that keeps every element
 * (Swin's crop back from a window multiple the input already was), a
 * Mul or Div by ones (PaddleOCR's swish writes x * Sigmoid(1.0 * x)), a
 * Concat of one input, a Split into one output, and a Resize to its input's
 * own shape whose every output element reads the input element at its own
 * index (torchvision's detection transform resizes an image already the
 * model's size).
 */
#include <string.h>

#include "passes/passes.h"

/* A Pad (pads as an attribute) that adds nothing on any side. */
static int zero_pad(const struct ir_op *op)
{
	int64_t p[2 * IR_MAX_RANK];
	if (op->type != OP_PAD || op->n_in != 1)
		return 0;
	int n = op_ints(op, "pads", p, 2 * IR_MAX_RANK);
	if (n <= 0 || n > 2 * IR_MAX_RANK)
		return 0;
	for (int k = 0; k < n; k++)
		if (p[k])
			return 0;
	return 1;
}

/* A Slice (bounds as attributes) of positive steps whose output has its
 * input's shape: it starts at 0 and keeps every element. */
static int whole_slice(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t st[IR_MAX_RANK];
	if (op->type != OP_SLICE || op->n_in != 1 || op->n_out != 1)
		return 0;
	int n = op_ints(op, "steps", st, IR_MAX_RANK);
	if (n < 0 || n > IR_MAX_RANK)
		return 0;
	for (int k = 0; k < n; k++)
		if (st[k] <= 0)
			return 0;
	return pass_same_shape(&g->tensors[op->in[0]], &g->tensors[op->out[0]]);
}

/* A Mul by ones (or Div by them): x * 1 is x, bit for bit, for every
 * float x.  The activation operand goes first, for pass_bypass.  (A sum
 * with zeros is not: -0 + 0 is +0.) */
static int times_one(struct ir_graph *g, struct ir_op *op)
{
	if ((op->type != OP_MUL && op->type != OP_DIV) || op->n_in != 2 || op->in[1] < 0 ||
	    op_int(op, "do_relu", 0) || op->n_attr)
		return 0;
	int j = g->tensors[op->in[1]].data ? 1 : op->type == OP_MUL && g->tensors[op->in[0]].data ? 0 : -1;
	if (j < 0 || g->tensors[op->in[1 - j]].data)
		return 0;
	const struct ir_tensor *c = &g->tensors[op->in[j]], *x = &g->tensors[op->in[1 - j]];
	if (c->dtype != DT_F32 || x->dtype != DT_F32 || !pass_same_shape(x, &g->tensors[op->out[0]]))
		return 0;
	const float *v = c->data;
	for (int64_t k = 0, n = tensor_numel(c); k < n; k++)
		if (v[k] != 1.0f)
			return 0;
	if (j == 0) {
		op->in[0] = op->in[1];
		op->in[1] = c - g->tensors;
	}
	return 1;
}

/* A Resize (sizes or scales as attributes) to its input's shape by a
 * scale of 1 on every axis: each output index maps to input coordinate x
 * itself for the coordinate modes below, so nearest picks it and linear
 * and cubic filters weigh it 1 and their other taps 0.  Not
 * tf_half_pixel_for_nn (x + 0.5: nearest may pick x + 1) nor
 * tf_crop_and_resize (its roi). */
static int same_resize(const struct ir_graph *g, const struct ir_op *op)
{
	static const char *const same_ct[] = { "half_pixel", "pytorch_half_pixel", "align_corners",
					       "asymmetric" };
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	if (op->type != OP_RESIZE || op->n_in != 1 || !pass_same_shape(x, y))
		return 0;
	const char *ct = op_str(op, "coordinate_transformation_mode", "half_pixel");
	int ok = 0;
	for (int k = 0; k < 4; k++)
		ok |= !strcmp(ct, same_ct[k]);
	/* pytorch_half_pixel maps an axis of one output element to -0.5 */
	for (int d = 0; d < x->rank && ok; d++)
		ok = !(x->shape[d] == 1 && !strcmp(ct, "pytorch_half_pixel"));
	const struct ir_attr *sc = op_attr(op, "scales");
	for (int d = 0; ok && sc && d < sc->n; d++)
		ok = sc->kind == ATTR_FLOATS && sc->floats[d] == 1.0f;
	return ok;
}

static int identity_pattern(struct ir_graph *g, int i)
{
	struct ir_op *op = &g->ops[i];
	if (op->n_in < 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	if (times_one(g, op))
		return pass_bypass(g, i);
	int same = pass_same_shape(&g->tensors[op->in[0]], &g->tensors[op->out[0]]);
	if (op->type == OP_IDENTITY || zero_pad(op) || whole_slice(g, op) || same_resize(g, op) ||
	    ((op->type == OP_RESHAPE || op->type == OP_FLATTEN) && same) ||
	    ((op->type == OP_CONCAT || op->type == OP_SPLIT) && op->n_in == 1 && same))
		return pass_bypass(g, i);
	return 0;
}

int pass_remove_identity(struct ir_graph *g)
{
	static const pattern_fn pats[] = { identity_pattern };
	return rewrite_run(g, "remove-identity", pats, 1);
}
