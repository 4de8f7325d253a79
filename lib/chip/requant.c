/* requant.c - the requantisation parameters of a Tpu graph checked before
 * a kernel uses them (requant.h). */
#include <stdlib.h>
#include <string.h>

#include "chip/requant.h"
#include "chip/tmodel.h"
#include "ir/op.h"

int requant_check_graph(const struct ir_graph *g)
{
	if (g->dialect != DIALECT_TPU)
		return 0;
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		int n = op->n_in;
		if (op->n_out < 1)
			continue;
		struct view *in = xcalloc((size_t)n + 1, sizeof *in);
		for (int j = 0; j < n; j++) {
			if (op->in[j] < 0)
				continue;
			const struct ir_tensor *t = &g->tensors[op->in[j]];
			in[j].data = t->data;
			in[j].dtype = t->dtype;
			in[j].rank = t->rank;
			memcpy(in[j].shape, t->shape, sizeof in[j].shape);
		}
		int rc = tmodel_check_requant(op, g->tensors[op->out[0]].dtype, in, n);
		free(in);
		if (rc < 0)
			return -1;
	}
	return 0;
}
