/* rewrite.c - the fixed-point pattern driver and the graph helpers that
 * patterns share (lib/passes/rewrite.h).
 */
#include "passes/rewrite.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"

/* ---- helpers ---- */

/* Who produces, how many read and which ops read each tensor, for the
 * graph being rewritten: built on the first question after a change, so
 * that a pass over a graph it leaves alone asks each in O(1) instead of
 * scanning every op (quadratic in the graph's length).  Dropped by
 * rewrite_run after every rewrite (patterns write the graph directly), by
 * the helpers below that change the graph in ways they do not track, and
 * whenever the graph, its arrays or its counts differ from those it was
 * built for; pass_kill, pass_set_input and pass_replace_uses keep it. */
struct readers {
	int n, cap;
	int *op;                       /* live ops reading the tensor, ascending, each once */
};

static struct {
	const struct ir_graph *g;
	const void *ops, *tensors, *outputs;
	int n_ops, n_tensors, n_outputs, valid;
	unsigned gen;                  /* counts the drops, builds and changes */
	int kept;                      /* the pattern just run kept the index (pass_index_kept) */
	int *prod, *uses, cap;
	struct readers *rd;
} ix;

int rewrite_run(struct ir_graph *g, const char *name, const pattern_fn *pats, int n)
{
	int total = 0;
	pass_index_drop();
	for (int sweep = 0;; sweep++) {
		if (sweep == REWRITE_MAX_SWEEPS)
			return err_set("pass '%s' did not converge in %d sweeps", name, sweep);
		int changed = 0;
		for (int i = g->n_ops - 1; i >= 0; i--)
			for (int k = 0; k < n && g->ops[i].type != OP_COUNT; k++) {
				ix.kept = 0;
				int r = pats[k](g, i);
				if (r && !ix.kept)
					pass_index_drop();
				if (r < 0)
					return -1;
				changed += r;
			}
		total += changed;
		if (!changed)
			break;
	}
	graph_compact(g);
	return total;
}

void pass_index_drop(void)
{
	ix.valid = 0;
	ix.gen++;
}

unsigned pass_index_gen(void)
{
	return ix.gen;
}

/* Whether the index is built for g as it is. */
static int ix_live(const struct ir_graph *g)
{
	return ix.valid && ix.g == g && ix.ops == g->ops && ix.tensors == g->tensors &&
	       ix.outputs == g->outputs && ix.n_ops == g->n_ops && ix.n_tensors == g->n_tensors &&
	       ix.n_outputs == g->n_outputs;
}

/* Op I into t's readers, keeping them ascending and each once. */
static void rd_add(struct readers *r, int i)
{
	int k = r->n;
	while (k > 0 && r->op[k - 1] > i)
		k--;
	if (k > 0 && r->op[k - 1] == i)
		return;
	grow_array((void **)&r->op, &r->cap, r->n + 1, sizeof *r->op);
	memmove(&r->op[k + 1], &r->op[k], sizeof *r->op * (size_t)(r->n - k));
	r->op[k] = i;
	r->n++;
}

static void rd_del(struct readers *r, int i)
{
	for (int k = 0; k < r->n; k++)
		if (r->op[k] == i) {
			memmove(&r->op[k], &r->op[k + 1], sizeof *r->op * (size_t)(r->n - k - 1));
			r->n--;
			return;
		}
}

/* Room in the index for every tensor of g: grown by half at least, the
 * readers' lists kept for reuse, so that a rewrite that adds a weight
 * rebuilds without a malloc per tensor. */
static void ix_grow(const struct ir_graph *g)
{
	if (g->n_tensors + 1 <= ix.cap)
		return;
	int cap = ix.cap + ix.cap / 2 > g->n_tensors + 1 ? ix.cap + ix.cap / 2 : g->n_tensors + 1;
	ix.prod = xrealloc(ix.prod, sizeof *ix.prod * (size_t)cap);
	ix.uses = xrealloc(ix.uses, sizeof *ix.uses * (size_t)cap);
	ix.rd = xrealloc(ix.rd, sizeof *ix.rd * (size_t)cap);
	memset(ix.rd + ix.cap, 0, sizeof *ix.rd * (size_t)(cap - ix.cap));
	ix.cap = cap;
}

static void ix_fresh(const struct ir_graph *g)
{
	if (ix_live(g))
		return;
	ix_grow(g);
	for (int t = 0; t < g->n_tensors; t++) {
		ix.prod[t] = -1;
		ix.uses[t] = 0;
		ix.rd[t].n = 0;
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		if (op->type == OP_COUNT)
			continue;
		for (int j = 0; j < op->n_out; j++)
			if (op->out[j] >= 0 && op->out[j] < g->n_tensors && ix.prod[op->out[j]] < 0)
				ix.prod[op->out[j]] = i;
		for (int j = 0; j < op->n_in; j++) {
			int t = op->in[j];
			if (t < 0 || t >= g->n_tensors)
				continue;
			ix.uses[t]++;
			struct readers *r = &ix.rd[t];
			if (!r->n || r->op[r->n - 1] != i) {
				grow_array((void **)&r->op, &r->cap, r->n + 1, sizeof *r->op);
				r->op[r->n++] = i;
			}
		}
	}
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] >= 0 && g->outputs[i] < g->n_tensors)
			ix.uses[g->outputs[i]]++;
	ix.g = g;
	ix.ops = g->ops;
	ix.tensors = g->tensors;
	ix.outputs = g->outputs;
	ix.n_ops = g->n_ops;
	ix.n_tensors = g->n_tensors;
	ix.n_outputs = g->n_outputs;
	ix.valid = 1;
	ix.gen++;
}

int pass_producer(const struct ir_graph *g, int t)
{
	if (t < 0 || t >= g->n_tensors)
		return -1;
	ix_fresh(g);
	return ix.prod[t];
}

int pass_readers(const struct ir_graph *g, int t, const int **ops)
{
	if (t < 0 || t >= g->n_tensors) {
		*ops = NULL;
		return 0;
	}
	ix_fresh(g);
	*ops = ix.rd[t].op;
	return ix.rd[t].n;
}

void pass_index_kept(void)
{
	ix.kept = 1;
}

/* Tensors added to g since the index was built (weights no op reads
 * yet): into the index, which was live before they were. */
static void ix_add_tensors(const struct ir_graph *g)
{
	ix_grow(g);
	for (int t = ix.n_tensors; t < g->n_tensors; t++) {
		ix.prod[t] = -1;
		ix.uses[t] = 0;
		ix.rd[t].n = 0;
	}
	ix.tensors = g->tensors;
	ix.n_tensors = g->n_tensors;
	ix.gen++;
}

void pass_kill(struct ir_graph *g, int op)
{
	struct ir_op *o = &g->ops[op];
	if (o->type == OP_COUNT)
		return;
	ix.gen++;
	if (ix_live(g)) {
		for (int j = 0; j < o->n_in; j++)
			if (o->in[j] >= 0 && o->in[j] < g->n_tensors) {
				ix.uses[o->in[j]]--;
				rd_del(&ix.rd[o->in[j]], op);
			}
		for (int j = 0; j < o->n_out; j++)
			if (o->out[j] >= 0 && o->out[j] < g->n_tensors && ix.prod[o->out[j]] == op)
				ix.prod[o->out[j]] = -1;
	}
	o->type = OP_COUNT;
}

void pass_set_input(struct ir_graph *g, int op, int j, int t)
{
	struct ir_op *o = &g->ops[op];
	int was = o->in[j];
	o->in[j] = t;
	ix.gen++;
	if (!ix_live(g) || o->type == OP_COUNT || was == t)
		return;
	if (was >= 0 && was < g->n_tensors) {
		ix.uses[was]--;
		int still = 0;
		for (int k = 0; k < o->n_in; k++)
			still |= o->in[k] == was;
		if (!still)
			rd_del(&ix.rd[was], op);
	}
	if (t >= 0 && t < g->n_tensors) {
		ix.uses[t]++;
		rd_add(&ix.rd[t], op);
	}
}

int pass_is_output(const struct ir_graph *g, int t)
{
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == t)
			return 1;
	return 0;
}

int pass_is_input(const struct ir_graph *g, int t)
{
	for (int i = 0; i < g->n_inputs; i++)
		if (g->inputs[i] == t)
			return 1;
	return 0;
}

int pass_sole_reader(const struct ir_graph *g, int t, int from)
{
	if (pass_uses(g, t) != 1 || pass_is_output(g, t))
		return -1;
	for (int j = from < 0 ? 0 : from; j < g->n_ops; j++) {
		const struct ir_op *u = &g->ops[j];
		for (int k = 0; u->type != OP_COUNT && k < u->n_in; k++)
			if (u->in[k] == t)
				return j;
	}
	return -1;
}

int pass_same_shape(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return !a->dyn && !b->dyn && a->rank == b->rank &&
	       !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank);
}

int pass_uses(const struct ir_graph *g, int t)
{
	if (t < 0 || t >= g->n_tensors)
		return 0;
	ix_fresh(g);
	return ix.uses[t];
}

void pass_replace_uses(struct ir_graph *g, int from, int to)
{
	ix.gen++;
	if (ix_live(g) && from != to && from >= 0 && from < g->n_tensors) {
		/* the readers of `from` from the index, which then holds them as
		 * readers of `to` */
		struct readers *rf = &ix.rd[from];
		for (int k = 0; k < rf->n; k++) {
			struct ir_op *op = &g->ops[rf->op[k]];
			for (int j = 0; j < op->n_in; j++)
				if (op->in[j] == from)
					op->in[j] = to;
			if (to >= 0 && to < g->n_tensors)
				rd_add(&ix.rd[to], rf->op[k]);
		}
		for (int i = 0; i < g->n_outputs; i++)
			if (g->outputs[i] == from)
				g->outputs[i] = to;
		if (to >= 0 && to < g->n_tensors)
			ix.uses[to] += ix.uses[from];
		ix.uses[from] = 0;
		rf->n = 0;
		return;
	}
	pass_index_drop();
	for (int i = 0; i < g->n_ops; i++) {
		struct ir_op *op = &g->ops[i];
		if (op->type == OP_COUNT)
			continue;
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] == from)
				op->in[j] = to;
	}
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == from)
			g->outputs[i] = to;
}

int pass_bypass(struct ir_graph *g, int op)
{
	pass_index_drop();
	int x = g->ops[op].in[0], y = g->ops[op].out[0];
	if (!pass_is_output(g, y)) {
		g->ops[op].type = OP_COUNT;
		pass_replace_uses(g, y, x);
		return 1;
	}
	/* y is a graph output: the producer of x writes y instead. */
	int p = pass_producer(g, x);
	if (p < 0 || pass_is_output(g, x))
		return 0;
	pass_kill(g, op);
	pass_replace_uses(g, x, y);
	for (int j = 0; j < g->ops[p].n_out; j++)
		if (g->ops[p].out[j] == x)
			g->ops[p].out[j] = y;
	pass_index_drop();
	return 1;
}

int pass_add_weight(struct ir_graph *g, const char *base, int rank, const int64_t *shape)
{
	int live = ix_live(g);
	char *name = graph_unique_name(g, base, 1);
	int t = graph_add_weight(g, name, DT_F32, rank, shape, NULL);
	free(name);
	if (live)
		ix_add_tensors(g);
	return t;
}

float *pass_bias_mut(struct ir_graph *g, int op, int64_t n)
{
	if (g->ops[op].n_in < 3 || g->ops[op].in[2] < 0) {
		char base[512];
		snprintf(base, sizeof base, "%s_bias", g->ops[op].name ? g->ops[op].name : "op");
		int tb = pass_add_weight(g, base, 1, &n);
		struct ir_op *o = &g->ops[op];
		if (o->n_in < 3) {
			o->in = xrealloc(o->in, 3 * sizeof *o->in);
			for (int k = o->n_in; k < 2; k++)
				o->in[k] = -1;
			o->n_in = 3;
		}
		o->in[2] = tb;
		pass_index_drop();
	}
	return pass_weight_mut(g, op, 2);
}

int pass_make_scale(struct ir_graph *g, int op, int x, int64_t c, float **s, float **t)
{
	char base[512];
	snprintf(base, sizeof base, "%s_scale", g->ops[op].name);
	int ts = pass_add_weight(g, base, 1, &c);
	snprintf(base, sizeof base, "%s_bias", g->ops[op].name);
	int tb = pass_add_weight(g, base, 1, &c);
	struct ir_op *w = &g->ops[op];
	w->type = OP_SCALE;
	if (ix_live(g))   /* op i out of its inputs' readers, into the new ones' */
		for (int j = 0; j < w->n_in; j++)
			pass_set_input(g, op, j, -1);
	if (w->n_in < 3) {
		w->in = xrealloc(w->in, 3 * sizeof *w->in);
		for (int j = w->n_in; j < 3; j++)
			w->in[j] = -1;
	}
	w->n_in = 3;
	pass_set_input(g, op, 0, x);
	pass_set_input(g, op, 1, ts);
	pass_set_input(g, op, 2, tb);
	*s = g->tensors[ts].data;
	*t = g->tensors[tb].data;
	return 0;
}

int pass_insert_after(struct ir_graph *g, int at, enum op_type t, const char *base, int x, int y)
{
	char *name = graph_unique_name(g, base, 1);
	int k = graph_add_op(g, t, name, 1, &x, 1, &y);
	free(name);
	struct ir_op moved = g->ops[k];
	memmove(&g->ops[at + 2], &g->ops[at + 1], sizeof moved * (size_t)(k - at - 1));
	g->ops[at + 1] = moved;
	pass_index_drop();
	return at + 1;
}

float *pass_weight_mut(struct ir_graph *g, int op, int idx)
{
	if (idx >= g->ops[op].n_in || g->ops[op].in[idx] < 0)
		return NULL;
	int t = g->ops[op].in[idx];
	if (!g->tensors[t].data || g->tensors[t].dtype != DT_F32)
		return NULL;
	if (pass_uses(g, t) > 1) {
		char base[256];
		snprintf(base, sizeof base, "%s_%s", g->tensors[t].name, g->ops[op].name);
		int c = pass_add_weight(g, base, g->tensors[t].rank, g->tensors[t].shape);
		memcpy(g->tensors[c].data, g->tensors[t].data, g->tensors[t].nbytes);
		g->ops[op].in[idx] = t = c;
		pass_index_drop();
	} else if (!g->tensors[t].owns_data) {
		/* Borrowed from the file buffer: take a private copy. */
		tensor_set_data(&g->tensors[t], g->tensors[t].data, g->tensors[t].nbytes);
	}
	return g->tensors[t].data;
}

void pass_count_ops(const struct ir_graph *g, int *counts)
{
	memset(counts, 0, sizeof(int) * OP_COUNT);
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].type != OP_COUNT)
			counts[g->ops[i].type]++;
}

int pass_is_view(enum op_type t)
{
	return t == OP_RESHAPE || t == OP_FLATTEN || t == OP_SQUEEZE || t == OP_UNSQUEEZE;
}

int pass_is_pointwise(enum op_type t)
{
	switch (t) {
	case OP_RELU: case OP_SIGMOID: case OP_TANH: case OP_GELU: case OP_ERF: case OP_SILU:
	case OP_HARDSWISH: case OP_HARDSIGMOID: case OP_LEAKYRELU: case OP_ELU: case OP_ABS:
	case OP_NEG: case OP_EXP: case OP_SQRT: case OP_RECIPROCAL: case OP_CAST: case OP_CLIP:
		return 1;
	default:
		return 0;
	}
}
