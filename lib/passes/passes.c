/* passes.c - the pass table, pipeline parsing and running (the pattern
 * driver the passes use is lib/passes/rewrite.c).
 */
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"

const struct pass pass_table[] = {
	{ "remove-identity", pass_remove_identity,
	  "remove Identity ops, Reshape, Flatten and forward Slice ops that keep the shape, zero Pads, Mul by ones" },
	{ "fold-bn", pass_fold_bn,
	  "fold BatchNormalization into the conv before it, else make it a Scale; a Scale into the conv after it" },
	{ "deconv-to-conv", pass_deconv_to_conv,
	  "make a ConvTranspose whose square kernel equals its stride a 1x1 Conv and a DepthToSpace" },
	{ "fuse-act", pass_fuse_act,
	  "fuse Relu and Clip(0, max) into the Conv, Gemm, Add or Scale before it" },
	{ "fold-const", pass_fold_const,
	  "run ops whose inputs are all constant and make their results weights" },
	{ "merge-layout", pass_merge_layout,
	  "merge Transpose pairs and Reshape/Flatten/Squeeze/Unsqueeze chains; drop no-ops" },
	{ "fold-pad", pass_fold_pad,
	  "fold a zero Pad of the spatial dimensions into the Conv or AveragePool that reads it" },
	{ "fold-affine", pass_fold_affine,
	  "fold a constant Mul or Add after a Conv (as a Scale, for fold-bn) or a Gemm into it" },
	{ "fuse-gelu", pass_fuse_gelu,
	  "fuse the erf and tanh forms of GELU into Gelu" },
	{ "fuse-swish", pass_fuse_swish,
	  "fuse x*Sigmoid(x) into SiLU and x*HardSigmoid(x) into HardSwish" },
	{ "fuse-layernorm", pass_fuse_layernorm,
	  "fuse the ReduceMean/Sub/Pow/Sqrt/Div chain (with scale, bias) into LayerNormalization" },
	{ "fold-qdq", pass_fold_qdq,
	  "make each QuantizeLinear/DequantizeLinear pair the scale of the float tensor it quantises" },
	{ "nest-concat", pass_nest_concat,
	  "make a Concat that repeats an earlier Concat's inputs along its axis read that Concat's result" },
	{ "batch-rows", pass_batch_rows,
	  "make identical elementwise ops on one-wide Slices of a tensor (a loop over classes unrolled) one op on those rows" },
	{ "dce", pass_dce,
	  "remove ops whose results nobody uses, and unused weights" },
	{ NULL, NULL, NULL },
};

int passes_parse(const char *list, const struct pass ***out)
{
	if (!list)
		list = PASSES_DEFAULT;
	int n = 0, cap = 0;
	const struct pass **pl = NULL;
	*out = NULL;
	for (const char *p = list; *list; p++) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const struct pass *found = NULL;
		for (const struct pass *ps = pass_table; ps->name && !found && len; ps++)
			if (strlen(ps->name) == len && !memcmp(ps->name, p, len))
				found = ps;
		if (!found) {
			free(pl);
			if (!len)
				return err_set("empty pass name in '%s'", list);
			return err_set("unknown pass '%.*s'", (int)len, p);
		}
		grow_array((void **)&pl, &cap, n + 1, sizeof *pl);
		pl[n++] = found;
		if (!end)
			break;
		p = end;
	}
	*out = pl;
	return n;
}

int passes_run_counted(struct ir_graph *g, const char *list, int *rewrites)
{
	const struct pass **pl;
	int n = passes_parse(list, &pl);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		int r = pl[i]->run(g);
		if (r < 0) {
			free(pl);
			return -1;
		}
		if (rewrites)
			rewrites[i] = r;
	}
	free(pl);
	return graph_infer(g);
}

int passes_run(struct ir_graph *g, const char *list)
{
	return passes_run_counted(g, list, NULL);
}
