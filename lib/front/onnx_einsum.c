/* onnx_einsum.c - ONNX Einsum as ReduceSum, Transpose, Reshape and MatMul
 * Top ops: the operands are contracted two at a time, each pair as one
 * batched MatMul [batch..., M, K] x [batch..., K, N] (lib/front/onnx_einsum.h).
 */
#include "front/onnx_einsum.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"

/* Index labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51, so that label
 * order is ASCII order (numpy's for an implicit output); broadcast
 * dimension d of "..." (E of them, aligned right across operands) is
 * ELL0 + d. */
#define N_LETTERS 52
#define ELL0 N_LETTERS
#define N_LABELS (N_LETTERS + IR_MAX_RANK)
#define ELL_MARK (-1)   /* where "..." stands in a parsed term */

/* A tensor with one index label per axis. */
struct operand {
	int t;                          /* tensor index in g */
	int rank;
	int lab[IR_MAX_RANK];           /* label of each axis */
	int64_t shape[IR_MAX_RANK];     /* elements per axis */
};

struct ein {
	struct ir_graph *g;
	const char *name;               /* the node's name */
	const char *eq;                 /* the equation without blanks, for messages */
	int last;                       /* the last op added, -1 none */
};

/* Label l as text for messages. */
static const char *label_str(int l, char buf[2])
{
	if (l >= ELL0)
		return "...";
	buf[0] = (char)(l < 26 ? 'A' + l : 'a' + l - 26);
	buf[1] = 0;
	return buf;
}

/* Parse term s[0..n) into tl[] (ELL_MARK for "..."), at most
 * IR_MAX_RANK + 1 entries.  Returns the count, or -1 after err_set(). */
static int parse_term(const struct ein *e, const char *s, size_t n, int *tl)
{
	int k = 0, ell = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i], l;
		if (c >= 'A' && c <= 'Z') {
			l = c - 'A';
		} else if (c >= 'a' && c <= 'z') {
			l = c - 'a' + 26;
		} else if (c == '.' && i + 2 < n && s[i + 1] == '.' && s[i + 2] == '.') {
			if (ell++)
				return err_set("equation '%s': '...' twice in one term", e->eq);
			l = ELL_MARK;
			i += 2;
		} else if (c > ' ' && c < 0x7f) {
			return err_set("equation '%s': unexpected '%c'", e->eq, c);
		} else {
			return err_set("equation '%s': unexpected byte 0x%02x", e->eq, c);
		}
		if (k == IR_MAX_RANK + 1)
			return err_set("equation '%s': a term has more than %d indices", e->eq,
				       IR_MAX_RANK);
		tl[k++] = l;
	}
	return k;
}

/* The labels of operand WHICH, term s[0..n), of RANK axes: sets *n_ell
 * to the dimensions its "..." stands for and, when E >= 0, fills
 * lab[0..rank) with "..." as the last *n_ell of the E broadcast dims.
 * An index may repeat (a diagonal). */
static int operand_labels(const struct ein *e, const char *s, size_t n, int which, int rank,
			  int E, int *lab, int *n_ell)
{
	int tl[IR_MAX_RANK + 1];
	int k = parse_term(e, s, n, tl);
	if (k < 0)
		return -1;
	int has = 0;
	for (int j = 0; j < k; j++)
		has |= tl[j] == ELL_MARK;
	int letters = k - has;
	if (letters > rank || (!has && letters != rank))
		return err_set("equation '%s': operand %d ('%.*s') has %d indices for rank %d",
			       e->eq, which, (int)n, s, letters, rank);
	*n_ell = rank - letters;
	if (E < 0)
		return 0;
	char c[2];
	for (int j = 0, r = 0; j < k; j++) {
		if (tl[j] == ELL_MARK) {
			for (int d = 0; d < *n_ell; d++)
				lab[r++] = ELL0 + E - *n_ell + d;
			continue;
		}
		(void)c;
		lab[r++] = tl[j];   /* a repeat: a diagonal, taken by diagonal() */
	}
	return 0;
}

/* Add op T over in[0..n_in) writing a new tensor NAME_WHAT, which is also
 * the op's name; sets *y to that tensor and returns the op (valid until
 * the next op is added). */
static struct ir_op *emit(struct ein *e, enum op_type t, int n_in, const int *in,
			  const char *what, int *y)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", e->name, what);
	char *name = graph_unique_name(e->g, base, 1);
	int o = graph_add_tensor(e->g, name, DT_F32, 0, NULL);
	e->last = graph_add_op(e->g, t, name, n_in, in, 1, &o);
	free(name);
	*y = o;
	return &e->g->ops[e->last];
}

/* Sum x over the axes whose label is marked in drop[]. */
static void reduce(struct ein *e, struct operand *x, const int *drop, const char *what)
{
	int64_t axes[IR_MAX_RANK];
	int n = 0, r = 0;
	for (int d = 0; d < x->rank; d++) {
		if (drop[x->lab[d]]) {
			axes[n++] = d;
		} else {
			x->lab[r] = x->lab[d];
			x->shape[r++] = x->shape[d];
		}
	}
	if (!n)
		return;
	int y;
	struct ir_op *op = emit(e, OP_REDUCESUM, 1, &x->t, what, &y);
	op_set_int(op, "keepdims", 0);
	op_set_ints(op, "axes", n, axes);
	x->t = y;
	x->rank = r;
}

/* An index that repeats in x (axes a < b, "ii"): x times an identity
 * matrix over those two axes, summed over b, until none repeats. */
static int diagonal(struct ein *e, struct operand *x)
{
	for (int a = 0; a < x->rank; a++)
		for (int b = a + 1; b < x->rank; b++) {
			if (x->lab[a] != x->lab[b])
				continue;
			char c[2];
			int64_t n = x->shape[a], ws[IR_MAX_RANK];
			if (x->shape[b] != n)
				return err_set("equation '%s': index '%s' has sizes %lld and %lld in one "
					       "operand", e->eq, label_str(x->lab[a], c), (long long)n,
					       (long long)x->shape[b]);
			for (int d = 0; d < x->rank; d++)
				ws[d] = d == a || d == b ? n : 1;
			float *eye = xcalloc((size_t)(n * n), sizeof *eye);
			for (int64_t i = 0; i < n; i++)
				eye[i * n + i] = 1;
			char base[512];
			snprintf(base, sizeof base, "%s_eye", e->name);
			char *name = graph_unique_name(e->g, base, 1);
			/* in the operand's dtype (an input of the node: known) */
			enum ir_dtype dt = e->g->tensors[x->t].dtype;
			void *w = xmalloc(dtype_size(dt) * (size_t)(n * n));
			dtype_convert(w, dt, eye, DT_F32, n * n);
			int in[2] = { x->t, graph_add_weight(e->g, name, dt, x->rank, ws, w) };
			free(name);
			free(w);
			free(eye);
			int y;
			emit(e, OP_MUL, 2, in, "diag", &y);
			x->t = y;
			int64_t ax = b;
			struct ir_op *op = emit(e, OP_REDUCESUM, 1, &x->t, "diag_sum", &y);
			op_set_int(op, "keepdims", 0);
			op_set_ints(op, "axes", 1, &ax);
			x->t = y;
			for (int d = b; d + 1 < x->rank; d++) {
				x->lab[d] = x->lab[d + 1];
				x->shape[d] = x->shape[d + 1];
			}
			x->rank--;
			b = a;   /* look again from a's next axis */
		}
	return 0;
}

/* Reorder x's axes: new axis d is old axis perm[d]. */
static void permute(struct ein *e, struct operand *x, const int64_t *perm, const char *what)
{
	int same = 1;
	for (int d = 0; d < x->rank; d++)
		same &= perm[d] == d;
	if (same)
		return;
	struct operand old = *x;
	for (int d = 0; d < x->rank; d++) {
		x->lab[d] = old.lab[perm[d]];
		x->shape[d] = old.shape[perm[d]];
	}
	int y;
	op_set_ints(emit(e, OP_TRANSPOSE, 1, &old.t, what, &y), "perm", x->rank, perm);
	x->t = y;
}

/* Tensor t of shape from[0..rf) viewed as to[0..rt): t itself when the
 * shapes are equal, else a Reshape's output. */
static int reshape(struct ein *e, int t, int rf, const int64_t *from, int rt, const int64_t *to,
		   const char *what)
{
	if (rf == rt && !memcmp(from, to, sizeof(int64_t) * (size_t)rt))
		return t;
	int y;
	op_set_ints(emit(e, OP_RESHAPE, 1, &t, what, &y), "shape", rt, to);
	return y;
}

/* Contract a with b into a.  Labels in both and not in keep[] are summed
 * by one MatMul; labels only one side has and keep[] lacks are summed
 * first.  The result's axes: the batch labels (in both, kept) in a's
 * order, a's own labels, then b's.  A constant a is swapped with an
 * activation b, so that a constant B reaches MatMul as a 2-D weight
 * where it can. */
static int contract(struct ein *e, struct operand *a, struct operand *b, const int *keep)
{
	if (e->g->tensors[a->t].data && !e->g->tensors[b->t].data) {
		struct operand t = *a;
		*a = *b;
		*b = t;
	}
	int pa[N_LABELS], pb[N_LABELS], drop_a[N_LABELS] = { 0 }, drop_b[N_LABELS] = { 0 };
	for (int pass = 0; pass < 2; pass++) {
		for (int l = 0; l < N_LABELS; l++)
			pa[l] = pb[l] = -1;
		for (int d = 0; d < a->rank; d++)
			pa[a->lab[d]] = d;
		for (int d = 0; d < b->rank; d++)
			pb[b->lab[d]] = d;
		if (pass)
			break;
		/* A summed label of size 1 on one side only broadcasts:
		 * sum_j a[0] b[j] = a[0] sum_j b[j], so both sides sum it. */
		for (int l = 0; l < N_LABELS; l++) {
			if (keep[l])
				continue;
			int both = pa[l] >= 0 && pb[l] >= 0;
			drop_a[l] = pa[l] >= 0 && (!both || a->shape[pa[l]] != b->shape[pb[l]]);
			drop_b[l] = pb[l] >= 0 && (!both || a->shape[pa[l]] != b->shape[pb[l]]);
		}
		reduce(e, a, drop_a, "sum_a");
		reduce(e, b, drop_b, "sum_b");
	}
	int bat[IR_MAX_RANK], fa[IR_MAX_RANK], kk[IR_MAX_RANK], fb[IR_MAX_RANK];
	int nb = 0, nfa = 0, nk = 0, nfb = 0;
	for (int d = 0; d < a->rank; d++) {
		int l = a->lab[d];
		if (pb[l] < 0)
			fa[nfa++] = l;
		else if (keep[l])
			bat[nb++] = l;
		else
			kk[nk++] = l;
	}
	for (int d = 0; d < b->rank; d++)
		if (pa[b->lab[d]] < 0)
			fb[nfb++] = b->lab[d];
	int nr = nb + nfa + nfb;
	if (nr > IR_MAX_RANK)
		return err_set("equation '%s': an intermediate result has %d dimensions, more than %d",
			       e->eq, nr, IR_MAX_RANK);

	/* a as [batch..., a's own..., summed...], b as [batch..., summed..., b's own...] */
	int64_t perm[IR_MAX_RANK];
	int n = 0;
	for (int i = 0; i < nb; i++)
		perm[n++] = pa[bat[i]];
	for (int i = 0; i < nfa; i++)
		perm[n++] = pa[fa[i]];
	for (int i = 0; i < nk; i++)
		perm[n++] = pa[kk[i]];
	permute(e, a, perm, "transpose_a");
	n = 0;
	for (int i = 0; i < nb; i++)
		perm[n++] = pb[bat[i]];
	for (int i = 0; i < nk; i++)
		perm[n++] = pb[kk[i]];
	for (int i = 0; i < nfb; i++)
		perm[n++] = pb[fb[i]];
	permute(e, b, perm, "transpose_b");

	/* the result's shape, and the operands' and MatMul's as 3-D or wider */
	struct operand r = { .rank = nr };
	int64_t m = 1, k = 1, nn = 1, nbat = 1;
	for (int i = 0; i < nb; i++) {
		r.lab[i] = bat[i];
		r.shape[i] = a->shape[i] > b->shape[i] ? a->shape[i] : b->shape[i];
		nbat *= r.shape[i];
	}
	for (int i = 0; i < nfa; i++) {
		r.lab[nb + i] = fa[i];
		r.shape[nb + i] = a->shape[nb + i];
		m *= a->shape[nb + i];
	}
	for (int i = 0; i < nk; i++)
		k *= a->shape[nb + nfa + i];
	for (int i = 0; i < nfb; i++) {
		r.lab[nb + nfa + i] = fb[i];
		r.shape[nb + nfa + i] = b->shape[nb + nk + i];
		nn *= b->shape[nb + nk + i];
	}
	int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], sy[IR_MAX_RANK];
	int ra = 0, rb = 0, ry = 0;
	if (nb > IR_MAX_RANK - 2) {
		/* too many batch axes for MatMul: one batch axis */
		char c[2];
		for (int i = 0; i < nb; i++)
			if (a->shape[i] != b->shape[i])
				return err_set("equation '%s': %d batch indices with index '%s' "
					       "broadcast are not supported", e->eq, nb,
					       label_str(bat[i], c));
		sa[ra++] = sb[rb++] = sy[ry++] = nbat;
		sa[ra++] = sy[ry++] = m;
	} else if (nb == 0 && nfa > 0) {
		/* a keeps its own axes as MatMul's batch; b is a matrix */
		for (int i = 0; i < nfa; i++)
			sa[ra++] = sy[ry++] = a->shape[i];
	} else {
		for (int i = 0; i < nb; i++) {
			sa[ra++] = a->shape[i];
			sb[rb++] = b->shape[i];
			sy[ry++] = r.shape[i];
		}
		sa[ra++] = sy[ry++] = m;
	}
	sa[ra++] = sb[rb++] = k;
	sb[rb++] = sy[ry++] = nn;
	int in[2] = {
		reshape(e, a->t, a->rank, a->shape, ra, sa, "reshape_a"),
		reshape(e, b->t, b->rank, b->shape, rb, sb, "reshape_b"),
	};
	emit(e, OP_MATMUL, 2, in, "matmul", &r.t);
	r.t = reshape(e, r.t, ry, sy, r.rank, r.shape, "reshape");
	*a = r;
	return 0;
}

/* The body of onnx_einsum, over EQ without blanks in work (which it
 * splits) and op[0..n_in). */
static int build(struct ein *e, char *work, struct operand *op, int n_in, const int *in, int out)
{
	struct ir_graph *g = e->g;
	char *rhs = strstr(work, "->");
	if (rhs) {
		*rhs = 0;
		rhs += 2;
	}
	int n_terms = 1;
	for (const char *p = work; *p; p++)
		n_terms += *p == ',';
	if (n_terms != n_in)
		return err_set("equation '%s' has %d operand%s for %d input%s", e->eq, n_terms,
			       n_terms == 1 ? "" : "s", n_in, n_in == 1 ? "" : "s");

	/* operands: "..." sizes first (E, the widest), then labels */
	int E = 0, cnt[N_LABELS] = { 0 };
	int64_t size[N_LABELS];
	for (int pass = 0; pass < 2; pass++) {
		const char *p = work;
		for (int i = 0; i < n_in; i++) {
			const struct ir_tensor *x = &g->tensors[in[i]];
			size_t n = strcspn(p, ",");
			int n_ell = 0;
			if (operand_labels(e, p, n, i, x->rank, pass ? E : -1, op[i].lab, &n_ell) < 0)
				return -1;
			E = n_ell > E ? n_ell : E;
			op[i].t = in[i];
			op[i].rank = x->rank;
			memcpy(op[i].shape, x->shape, sizeof op[i].shape);
			p += n + (p[n] == ',');
		}
	}
	for (int l = 0; l < N_LABELS; l++)
		size[l] = -1;
	for (int i = 0; i < n_in; i++)
		for (int d = 0; d < op[i].rank; d++) {
			int l = op[i].lab[d];
			int64_t s = op[i].shape[d];
			char c[2];
			cnt[l]++;
			if (size[l] > 1 && s != 1 && s != size[l])
				return err_set("equation '%s': index '%s' has sizes %lld and %lld, which "
					       "do not broadcast", e->eq, label_str(l, c),
					       (long long)size[l], (long long)s);
			if (size[l] <= 1)
				size[l] = s;
		}

	for (int i = 0; i < n_in; i++)
		if (diagonal(e, &op[i]) < 0)
			return -1;

	/* the output's labels: given, or "..." and the letters used once */
	int out_lab[IR_MAX_RANK], n_out = 0, in_out[N_LABELS] = { 0 };
	if (rhs) {
		int tl[IR_MAX_RANK + 1], has = 0;
		int k = parse_term(e, rhs, strlen(rhs), tl);
		if (k < 0)
			return -1;
		for (int j = 0; j < k; j++) {
			int first = tl[j] == ELL_MARK ? ELL0 : tl[j];
			int last = tl[j] == ELL_MARK ? ELL0 + E : tl[j] + 1;
			has |= tl[j] == ELL_MARK;
			for (int l = first; l < last; l++) {
				char c[2];
				if (!cnt[l])
					return err_set("equation '%s': output index '%s' is in no operand",
						       e->eq, label_str(l, c));
				if (in_out[l]++)
					return err_set("equation '%s': index '%s' repeats in the output",
						       e->eq, label_str(l, c));
				if (n_out == IR_MAX_RANK)
					return err_set("equation '%s': the output has more than %d "
						       "dimensions", e->eq, IR_MAX_RANK);
				out_lab[n_out++] = l;
			}
		}
		if (E && !has)
			return err_set("equation '%s': the output has no '...' for the %d broadcast "
				       "dimension%s", e->eq, E, E == 1 ? "" : "s");
	} else {
		for (int j = 0; j < N_LABELS; j++) {
			int l = (j + ELL0) % N_LABELS;   /* "..." first, then letters */
			if (l < N_LETTERS ? cnt[l] != 1 : l >= ELL0 + E)
				continue;
			if (n_out == IR_MAX_RANK)
				return err_set("equation '%s': the output has more than %d dimensions",
					       e->eq, IR_MAX_RANK);
			out_lab[n_out++] = l;
			in_out[l] = 1;
		}
	}

	/* contract left to right, keeping what the output or a later operand needs */
	struct operand acc = op[0];
	for (int k = 1; k < n_in; k++) {
		int keep[N_LABELS];
		memcpy(keep, in_out, sizeof keep);
		for (int j = k + 1; j < n_in; j++)
			for (int d = 0; d < op[j].rank; d++)
				keep[op[j].lab[d]] = 1;
		if (contract(e, &acc, &op[k], keep) < 0)
			return -1;
	}
	int drop[N_LABELS];
	for (int l = 0; l < N_LABELS; l++)
		drop[l] = !in_out[l];
	reduce(e, &acc, drop, "sum");
	assert(acc.rank == n_out);
	int64_t perm[IR_MAX_RANK];
	for (int d = 0; d < n_out; d++)
		for (int j = 0; j < acc.rank; j++)
			if (acc.lab[j] == out_lab[d])
				perm[d] = j;
	permute(e, &acc, perm, "transpose");
	if (e->last < 0)
		emit(e, OP_IDENTITY, 1, &acc.t, "identity", &acc.t);
	/* the last op writes the node's output under the node's name; the
	 * tensor it wrote is left to graph_compact() */
	struct ir_op *last = &g->ops[e->last];
	last->out[0] = out;
	free(last->name);
	last->name = xstrdup(e->name);
	return 0;
}

int onnx_einsum(struct ir_graph *g, const char *name, const char *eq, size_t len,
		int n_in, const int *in, int out)
{
	char *full = xmalloc(len + 1), *work = xmalloc(len + 1);
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (eq[i] != ' ' && eq[i] != '\t' && eq[i] != '\r' && eq[i] != '\n')
			full[n++] = eq[i];
	full[n] = 0;
	memcpy(work, full, n + 1);
	struct ein e = { g, name, full, -1 };
	struct operand *op = xcalloc((size_t)(n_in > 0 ? n_in : 1), sizeof *op);
	int rc = len && memchr(eq, 0, len) ? err_set("the equation holds a NUL byte")
		 : n_in > 0 ? build(&e, work, op, n_in, in, out)
		 : err_set("Einsum needs at least one input");
	free(op);
	free(work);
	free(full);
	return rc;
}
