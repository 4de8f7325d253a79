/* lower_dtype.c - what ir-run computes and the chip lacks.  top2tpu refuses
 * a Top graph holding an f64, u16, u32 or u64 tensor (ONNX's double and
 * wide unsigned integers), with one line naming the tensor
 * (man/man1/top2tpu.1).  An op the chip has no form for runs on the host
 * (PLACE_HOST): codegen gives it a host command and tpu-sim runs it with
 * the interpreter's float kernel on its tensors in DDR (formats/tpuc-isa.5,
 * HOST COMMANDS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/lower_dtype.h"
#include "back/lower.h"

#include "ir/base.h"
#include "ir/op.h"
#include "ir/op_traits.h"

static int chip_lacks(enum ir_dtype t)
{
	return t == DT_F64 || t == DT_U16 || t == DT_U32 || t == DT_U64;
}

/* The subgraph attributes of OP (If's two branches, a Loop's or Scan's
 * body) into SUB, their count returned (at most 2). */
static int bodies(const struct ir_op *op, struct ir_graph **sub)
{
	int n = 0;
	for (int j = 0; j < op->n_attr && n < 2; j++)
		if (op->attr[j].kind == ATTR_GRAPH)
			sub[n++] = op->attr[j].graph;
	return n;
}

int lower_dtype_check(const struct ir_graph *top)
{
	for (int i = 0; i < top->n_tensors; i++) {
		const struct ir_tensor *t = &top->tensors[i];
		if (chip_lacks(t->dtype))
			return err_set("tensor '%s': dtype %s is not supported on the chip "
				       "(no f64, u16, u32 or u64; ir-run computes in it)",
				       t->name, dtype_name(t->dtype));
	}
	return 0;
}

char *lower_shape_values(const struct ir_graph *top)
{
	char *mark = xcalloc((size_t)top->n_tensors + 1, 1);
	for (int i = 0; i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		int from = (op->type == OP_SHAPE || op->type == OP_SIZE) && top->tensors[op->in[0]].dyn;
		for (int j = 0; j < op->n_in && !from; j++)
			from = op->in[j] >= 0 && mark[op->in[j]];
		for (int j = 0; j < op->n_out && from; j++) {
			enum ir_dtype dt = top->tensors[op->out[j]].dtype;
			mark[op->out[j]] = dt != DT_F32 && dt != DT_F16 && dt != DT_BF16 && dt != DT_F64;
		}
	}
	return mark;
}

int lower_on_host(const struct ir_graph *top, const struct ir_op *op, const char *shape_val)
{
	const struct op_def *d = op_defs[op->type];
	if (!d->run_f32)
		return 0;
	if (!d->lower && !d->run_tpu)
		return 1;
	/* a dynamic or empty tensor: the chip's commands have static extents */
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		const struct ir_tensor *t = ti >= 0 ? &top->tensors[ti] : NULL;
		if (t && (t->dyn || (!t->data && tensor_numel(t) == 0) || (shape_val && shape_val[ti])))
			return 1;
	}
	struct ir_graph *sub[2];
	if (bodies(op, sub))
		return 1;      /* control flow: If, Loop, Scan */
	if ((op->type == OP_CONV || op->type == OP_MAXPOOL || op->type == OP_AVGPOOL ||
	     op->type == OP_CONVTRANSPOSE) && top->tensors[op->in[0]].rank == 5)
		return 1;
	/* an operand the chip's form takes as an attribute, given at run time
	 * (Reshape's shape, Slice's starts, TopK's k, Trilu's k ...) */
	int n_in = 0;
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] >= 0)
			n_in = j + 1;
	if (n_in > op_io_of(op->type).tpu_max_in)
		return 1;
	if (op->type == OP_CONV && !top->tensors[op->in[1]].data)
		return 1;
	if (!op_has(op->type, OPF_F32_ONLY))
		return 0;
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		if (ti >= 0 && top->tensors[ti].dtype != DT_F32)
			return 1;
	}
	return 0;
}

/* Append tensor T of G to G's inputs. */
static void add_input(struct ir_graph *g, int t)
{
	g->inputs = xrealloc(g->inputs, sizeof *g->inputs * (size_t)(g->n_inputs + 1));
	g->inputs[g->n_inputs++] = t;
}

/* NAME, or NAME_2, NAME_3, ... whichever G lacks (malloc'd). */
static char *free_name(const struct ir_graph *g, const char *name)
{
	size_t n = strlen(name) + 16;
	char *s = xmalloc(n);
	snprintf(s, n, "%s", name);
	for (int i = 2; graph_find_tensor(g, s) >= 0; i++)
		snprintf(s, n, "%s_%d", name, i);
	return s;
}

/* The weights of the bodies of control op K of G (nested ones first)
 * become captures: per body weight, an outer weight appended to the op's
 * inputs, and in every body an input appended in the same place (the
 * weight itself, made an input, in the body that had it; an unread one in
 * the other branch of an If).  A .tmodel keeps weights only in its
 * coefficients, at addresses of the outer graph. */
static void hoist_body_weights(struct ir_graph *g, int k)
{
	struct ir_graph *sub[2];
	int nb = bodies(&g->ops[k], sub), added = 0;
	for (int b = 0; b < nb; b++)
		for (int i = 0; i < sub[b]->n_ops; i++) {
			struct ir_graph *inner[2];
			if (bodies(&sub[b]->ops[i], inner))
				hoist_body_weights(sub[b], i);
		}
	for (int b = 0; b < nb; b++)
		for (int t = 0; t < sub[b]->n_tensors; t++) {
			struct ir_tensor *x = &sub[b]->tensors[t];
			if (!x->data)
				continue;
			size_t n = strlen(g->ops[k].name) + strlen(x->name) + 2;
			char *base = xmalloc(n), *name;
			snprintf(base, n, "%s/%s", g->ops[k].name, x->name);
			name = free_name(g, base);
			int w = graph_add_weight(g, name, x->dtype, x->rank, x->shape, x->data);
			free(name);
			struct ir_op *op = &g->ops[k];
			op->in = xrealloc(op->in, sizeof *op->in * (size_t)(op->n_in + 1));
			op->in[op->n_in++] = w;
			for (int c = 0; c < nb; c++) {
				if (c == b) {
					x = &sub[b]->tensors[t];
					if (x->owns_data)
						free(x->data);
					x->data = NULL;
					x->nbytes = 0;
					x->owns_data = 0;
					add_input(sub[c], t);
					continue;
				}
				name = free_name(sub[c], base);
				const struct ir_tensor *y = &g->tensors[w];
				add_input(sub[c], graph_add_tensor(sub[c], name, y->dtype, y->rank, y->shape));
				free(name);
			}
			free(base);
			added++;
		}
	struct ir_op *op = &g->ops[k];
	if (added && op->type != OP_IF)
		op_set_int(op, "captures", op_int(op, "captures", 0) + added);
}

int lower_host(struct lower_ctx *lc, const struct ir_op *op)
{
	int *in = xcalloc((size_t)op->n_in + 1, sizeof *in);
	int *out = xcalloc((size_t)op->n_out + 1, sizeof *out);
	int rc = 0;
	for (int i = 0; i < op->n_in && rc == 0; i++)
		if ((in[i] = op->in[i] < 0 ? -1 : lower_float_input(lc, op, op->in[i], DT_F32)) < 0 &&
		    op->in[i] >= 0)
			rc = -1;
	if (rc == 0) {
		for (int i = 0; i < op->n_out; i++)
			out[i] = lower_output(lc, op->out[i], lc->top->tensors[op->out[i]].dtype, 0, 0);
		int k = lower_emit(lc, op, op->n_in, in, op->n_out, out);
		lc->tpu->ops[k].place = PLACE_HOST;
		struct ir_graph *sub[2];
		if (bodies(op, sub))
			hoist_body_weights(lc->tpu, k);
	}
	free(in);
	free(out);
	return rc;
}
