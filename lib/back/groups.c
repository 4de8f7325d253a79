/* groups.c - the layer groups of a grouped graph (lib/back/groups.h). */
#include <stdlib.h>

#include "back/groups.h"
#include "chip/isa.h"
#include "chip/isa_copy.h"
#include "ir/base.h"

int lg_groups(const struct ir_graph *g, struct lg_group **out, int *n)
{
	struct lg_group *v = xmalloc(sizeof *v * (size_t)(g->n_ops + 1));
	int k = 0, max_group = -1;
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].group > max_group)
			max_group = g->ops[i].group;
	/* seen[id]: group id began a run already; ids far past the number
	 * of ops (a hand-made file) are looked for among the runs instead */
	int dense = max_group <= 4 * g->n_ops + 1024;
	char *seen = xcalloc(dense ? (size_t)max_group + 2 : 1, 1);
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		if (op->group < 0 || op->place == PLACE_NONE) {
			FREE_ALL(v, seen);
			return err_set("op '%s' (%s) has no layer group", op->name, op_name(op->type));
		}
		if (k && op->group == g->ops[v[k - 1].first].group) {
			if (op->place != v[k - 1].place) {
				FREE_ALL(v, seen);
				return err_set("op '%s' (%s): placement differs within group %d",
					       op->name, op_name(op->type), op->group);
			}
			v[k - 1].n_ops++;
			continue;
		}
		int again = 0;
		if (dense)
			again = seen[op->group];
		else
			for (int j = 0; j < k && !again; j++)
				again = g->ops[v[j].first].group == op->group;
		if (again) {
			FREE_ALL(v, seen);
			return err_set("op '%s' (%s): group %d is not a run of consecutive ops",
				       op->name, op_name(op->type), op->group);
		}
		if (dense)
			seen[op->group] = 1;
		v[k].first = i;
		v[k].n_ops = 1;
		v[k].place = op->place;
		k++;
	}
	free(seen);
	*out = v;
	*n = k;
	return 0;
}

/* The one piece of copy op k into *out when it fills its whole result in
 * order, of the source's dtype; else 0. */
static int whole_piece(const struct ir_graph *g, int k, struct isa_piece *out)
{
	struct isa_piece *pc = NULL;
	int np = isa_copy_pieces(g, &g->ops[k], &pc), ok = 0;
	if (np == 1) {
		const struct isa_piece *p = pc;
		ok = p->dst == g->ops[k].out[0] && p->dst_at == 0 && p->n > 0 && p->reps >= 1 &&
		     (p->reps == 1 || p->dst_step == p->n) &&
		     p->n * p->reps == tensor_numel(&g->tensors[p->dst]) &&
		     g->tensors[p->src].dtype == g->tensors[p->dst].dtype;
		*out = *p;
	}
	free(pc);
	return ok;
}

/* A view: piece p copies its whole source, contiguous. */
static int is_view(const struct ir_graph *g, const struct isa_piece *p)
{
	return p->src_at == 0 && (p->reps == 1 || p->src_step == p->n) &&
	       p->n * p->reps == tensor_numel(&g->tensors[p->src]);
}

/* Strides (lg_fwd) for lane shape s reading piece p's whole result in
 * order, or 0 when its runs do not fall on whole rows. */
static int piece_strides(const struct isa_piece *p, const int64_t s[4], struct lg_fwd *f)
{
	int64_t hw = s[2] * s[3], len = p->n, st = p->src_step;
	f->at = p->src_at;
	if (hw <= 0)
		return 0;
	if (p->reps == 1 || st == len) {
		f->cs = hw;
		f->ns = s[1] * hw;
	} else if (st < 0 || len % hw) {
		return 0;
	} else if (len == hw) {         /* a run per (n, c) */
		f->cs = st;
		f->ns = s[1] * st;
	} else if (len == s[1] * hw) {  /* a run per n */
		f->cs = hw;
		f->ns = st;
	} else {
		return 0;
	}
	if (s[1] == 1)
		f->cs = 0;
	if (s[0] == 1)
		f->ns = 0;
	return f->cs <= UINT32_MAX && f->ns <= UINT32_MAX;
}

struct lg_fwd *lg_forwards(const struct ir_graph *g)
{
	int nt = g->n_tensors;
	struct lg_fwd *f = xmalloc(sizeof *f * ((size_t)nt + 1));
	int *prod = xmalloc(sizeof(int) * ((size_t)nt + 1));
	int *nread = xcalloc((size_t)nt + 1, sizeof(int));
	int *rgrp = xmalloc(sizeof(int) * ((size_t)nt + 1));  /* -2 unread, -1 not one group */
	int *gsize = xcalloc((size_t)g->n_ops + 1, sizeof(int));
	for (int t = 0; t < nt; t++) {
		f[t] = (struct lg_fwd){ -1, t, 0, 0, 0 };
		prod[t] = -1;
		rgrp[t] = -2;
	}
	struct lg_group *grp = NULL;
	int ng = 0;
	if (lg_groups(g, &grp, &ng) < 0)
		ng = 0;   /* not grouped: nothing forwards */
	for (int i = 0; i < ng; i++)
		for (int k = grp[i].first; k < grp[i].first + grp[i].n_ops; k++)
			gsize[k] = grp[i].n_ops;
	free(grp);
	for (int k = 0; k < g->n_ops; k++) {
		const struct ir_op *op = &g->ops[k];
		for (int j = 0; j < op->n_out; j++)
			if (op->out[j] >= 0)
				prod[op->out[j]] = k;
		/* a local group's ops and a global op that is no copy (a copy
		 * may move its input's bytes by address, alone) load their
		 * inputs by rows and channels */
		struct isa_piece *pc = NULL;
		int loads = op->place == PLACE_LOCAL ? gsize[k] >= 2 :
			    op->place == PLACE_GLOBAL && isa_copy_pieces(g, op, &pc) == 0;
		free(pc);
		for (int i = 0; i < op->n_in; i++) {
			int t = op->in[i];
			if (t < 0)
				continue;
			nread[t]++;
			int ok = loads && isa_slice_axis(g, op, i) == 2;
			rgrp[t] = !ok ? -1 : rgrp[t] == -2 || rgrp[t] == op->group ? op->group : -1;
		}
	}
	for (int i = 0; i < g->n_outputs; i++) {
		rgrp[g->outputs[i]] = -1;
		nread[g->outputs[i]] += 2;
	}
	for (int x = 0; x < nt; x++) {
		const struct ir_tensor *tx = &g->tensors[x];
		if (rgrp[x] < 0 || tx->data || tx->dyn)
			continue;
		int64_t s[4];
		isa_lane_shape(tx->rank, tx->shape, 0, s);
		/* back through views, each read once, to the copy */
		for (int v = x, hops = 0; hops < nt; hops++) {
			int k = prod[v];
			struct isa_piece p;
			if (k < 0 || g->ops[k].place != PLACE_GLOBAL || g->ops[k].n_out != 1 ||
			    (v != x && nread[v] != 1) || !whole_piece(g, k, &p) || g->tensors[p.src].dyn)
				break;
			if (is_view(g, &p) && !g->tensors[p.src].data && nread[p.src] == 1) {
				v = p.src;
				continue;
			}
			struct lg_fwd w = { k, p.src, 0, 0, 0 };
			if (piece_strides(&p, s, &w))
				f[x] = w;
			break;
		}
	}
	FREE_ALL(prod, nread, rgrp, gsize);
	return f;
}
