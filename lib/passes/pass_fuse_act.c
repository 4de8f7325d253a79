/* pass_fuse_act.c - fuse-act: a Relu, or a Clip with min 0, whose input is
 * used only by it and comes from an op with OPF_FUSE_RELU (lib/ir/op_traits.h)
 * becomes that
 * op's do_relu=1 (and relu_limit=max for a Clip with a finite max); the op
 * then writes the activation's output, so the activation's name survives.
 */
#include <float.h>

#include "ir/op_traits.h"
#include "passes/passes.h"

static int act_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *act = &g->ops[i];
	double limit = 0;   /* 0: none */
	if (act->type == OP_CLIP) {
		double lo = op_float(act, "min", -FLT_MAX), hi = op_float(act, "max", FLT_MAX);
		if (lo != 0 || hi <= 0)
			return 0;
		if (hi < FLT_MAX)
			limit = hi;
	} else if (act->type != OP_RELU) {
		return 0;
	}
	int x = act->in[0], p = pass_producer(g, x);
	if (p < 0 || !op_has(g->ops[p].type, OPF_FUSE_RELU) || g->ops[p].n_out != 1 || pass_uses(g, x) != 1)
		return 0;
	/* the kernels of other dtypes (lib/ops/anydtype.c) have no do_relu */
	if (g->tensors[x].dtype != DT_F32)
		return 0;
	struct ir_op *op = &g->ops[p];
	/* Clipping twice keeps the tighter bound. */
	double old = op_int(op, "do_relu", 0) ? op_float(op, "relu_limit", 0) : 0;
	if (old > 0 && (limit == 0 || old < limit))
		limit = old;
	op_set_int(op, "do_relu", 1);
	if (limit > 0)
		op_set_float(op, "relu_limit", limit);
	op->out[0] = g->ops[i].out[0];
	g->ops[i].type = OP_COUNT;
	return 1;
}

int pass_fuse_act(struct ir_graph *g)
{
	static const pattern_fn pats[] = { act_pattern };
	return rewrite_run(g, "fuse-act", pats, 1);
}
