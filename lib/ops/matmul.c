/* matmul.c - Gemm (Y = alpha * A' * B' + beta * C, A' and B' optionally
 * transposed; attributes alpha, beta, transA, transB, and a fused ReLU) and
 * MatMul (numpy matmul with batch broadcasting).
 */
#include "opcommon.h"

static int gemm_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 2, 3) < 0)
		return -1;
	const struct ir_tensor *a = op_in(g, op, 0), *b = op_in(g, op, 1);
	if (a->rank != 2 || b->rank != 2)
		return op_error(op, "A and B must be matrices");
	int ta = (int)op_int(op, "transA", 0), tb = (int)op_int(op, "transB", 0);
	int64_t m = a->shape[ta ? 1 : 0], k = a->shape[ta ? 0 : 1];
	int64_t kb = b->shape[tb ? 1 : 0], n = b->shape[tb ? 0 : 1];
	if (k != kb)
		return op_error(op, "inner dimensions %lld and %lld differ", (long long)k, (long long)kb);
	const struct ir_tensor *c = op_in(g, op, 2);
	int64_t shape[2] = { m, n }, bs[IR_MAX_RANK];
	int br;
	if (c && (broadcast_shape(2, shape, c->rank, c->shape, &br, bs) < 0 || br != 2 ||
		  bs[0] != m || bs[1] != n))
		return op_error(op, "C does not broadcast to [%lld,%lld]", (long long)m, (long long)n);
	op_set_out(g, op, 0, a->dtype, 2, shape);
	return 0;
}

static int64_t gemm_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *a = &g->tensors[op->in[0]];
	return tensor_numel(&g->tensors[op->out[0]]) * a->shape[op_int(op, "transA", 0) ? 0 : 1];
}

static int matmul_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 2, 2) < 0)
		return -1;
	const struct ir_tensor *a = op_in(g, op, 0), *b = op_in(g, op, 1);
	if (a->rank < 1 || b->rank < 1)
		return op_error(op, "scalar operands");
	int64_t ash[IR_MAX_RANK + 1], bsh[IR_MAX_RANK + 1];
	int ra = a->rank, rb = b->rank;
	/* Promote vectors as numpy does, then drop the added axes at the end. */
	if (ra == 1) { ash[0] = 1; ash[1] = a->shape[0]; ra = 2; }
	else for (int i = 0; i < ra; i++) ash[i] = a->shape[i];
	if (rb == 1) { bsh[0] = b->shape[0]; bsh[1] = 1; rb = 2; }
	else for (int i = 0; i < rb; i++) bsh[i] = b->shape[i];
	if (ash[ra - 1] != bsh[rb - 2])
		return op_error(op, "inner dimensions %lld and %lld differ",
				(long long)ash[ra - 1], (long long)bsh[rb - 2]);
	int64_t batch[IR_MAX_RANK], shape[IR_MAX_RANK + 2];
	int r;
	if (broadcast_shape(ra - 2, ash, rb - 2, bsh, &r, batch) < 0)
		return op_error(op, "batch dimensions do not broadcast");
	int n = 0;
	for (int i = 0; i < r; i++)
		shape[n++] = batch[i];
	if (a->rank > 1)
		shape[n++] = ash[ra - 2];
	if (b->rank > 1)
		shape[n++] = bsh[rb - 1];
	if (n > IR_MAX_RANK)
		return op_error(op, "result rank too large");
	op_set_out(g, op, 0, a->dtype, n, shape);
	return 0;
}

static int64_t matmul_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *a = &g->tensors[op->in[0]];
	return tensor_numel(&g->tensors[op->out[0]]) * a->shape[a->rank - 1];
}

const struct op_def op_def_GEMM = {
	.name = "Gemm",
	.infer = gemm_infer,
	.macs = gemm_macs,
};

const struct op_def op_def_MATMUL = {
	.name = "MatMul",
	.infer = matmul_infer,
	.macs = matmul_macs,
};
