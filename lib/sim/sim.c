/* sim.c - functional and timed simulation of a .tmodel (lib/sim/sim.h).
 *
 * DDR is one byte image (coefficients, then activations); local memory is
 * lanes × lmem_bytes.  The two engines' streams run in order against each
 * other: a command starts when its engine is free and the command it waits
 * for has finished; of the two engines' next commands the one that can
 * start first runs first, so the functional effects happen in time order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/dynrun.h"
#include "ir/op.h"
#include "quant/quant.h"
#include "chip/cost.h"
#include "chip/isa_copy.h"
#include "sim/sim.h"
#include "ir/limit.h"

struct machine {
	const struct tmodel *m;
	const struct chip *c;
	const char *file;          /* the model, for messages */
	unsigned char *ddr;        /* DDR image */
	int64_t ddr_len;           /* bytes */
	unsigned char *lmem;       /* lane l at lmem + l * lmem_bytes */
	void *scratch[ISA_MAX_OPERANDS];
	size_t scratch_len[ISA_MAX_OPERANDS];
	unsigned char **dump;      /* SIM_DUMP_ALL: per tensor, its dense value, or NULL */
	void **host_val;           /* host commands: per tensor, its buffer (kern_from_graph) */
	struct dynrun *dr;         /* host commands: run-time shapes; dynamic tensors live in
				      the host's memory, in buffers it allocates */
};

/* Tensor t as the run gave it: a dynamic tensor with its run-time shape. */
static const struct ir_tensor *run_tensor(const struct machine *mc, int t)
{
	return mc->dr ? dynrun_tensor(mc->dr, t) : &mc->m->g->tensors[t];
}

/* ---- checks ---- */

static int check_dma(const struct machine *mc, const struct isa_dma *d)
{
	const struct chip *c = mc->c;
	int64_t es = (int64_t)dtype_size(d->dtype);
	int64_t s[4] = { d->n, d->c, d->h, d->w };
	int64_t lane = isa_lane_bytes(c, d->dtype, s);
	int64_t last = d->n && d->c && d->h && d->w
		? d->ddr + ((int64_t)(d->n - 1) * d->nstride + (int64_t)(d->c - 1) * d->cstride +
			    (int64_t)d->h * d->w) * es
		: d->ddr;
	if ((int64_t)d->lmem + lane > c->lmem_bytes)
		return err_set("'%s': dma command %u addresses local memory past %lld bytes per lane",
			       mc->file, d->id, (long long)c->lmem_bytes);
	if (last > mc->ddr_len)
		return err_set("'%s': dma command %u addresses DDR past %lld bytes",
			       mc->file, d->id, (long long)mc->ddr_len);
	/* The block lies inside one tensor of its dtype, at an element
	 * boundary of it, or, a load, starts at the first byte of a weight of
	 * its dtype and lies inside the coefficients (a coefficient run,
	 * formats/tpuc-isa.5). */
	const struct ir_graph *g = mc->m->g;
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		if (t->addr >= 0 && t->dtype == d->dtype && t->addr <= (int64_t)d->ddr &&
		    last <= t->addr + (int64_t)tensor_bytes(t) && ((int64_t)d->ddr - t->addr) % es == 0)
			return 0;
		if (t->data && t->addr == (int64_t)d->ddr && t->dtype == d->dtype &&
		    d->op == ISA_DMA_LOAD && last <= mc->m->coeff_addr + mc->m->coeff_bytes)
			return 0;
	}
	return err_set("'%s': dma command %u: DDR [%lld, %lld) lies in no %s tensor", mc->file,
		       d->id, (long long)d->ddr, (long long)last, dtype_name(d->dtype));
}

/* Operand i of command k: its tensor (*tp, NULL when absent), the lane
 * shape it holds in local memory (held: H is the rows held for sliced
 * operands, C the chunk's channels for split ones), and the window of held
 * rows the kernel sees, [*h0, *h0 + *nh).  -1 when the operand cannot be
 * held that way or the window lies outside the rows held. */
static int operand_shape(const struct ir_graph *g, const struct isa_cmp *k, int i,
			 const struct ir_tensor **tp, int64_t held[4], int64_t *h0, int64_t *nh)
{
	const struct ir_op *op = &g->ops[k->layer];
	int t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
	*tp = t >= 0 ? &g->tensors[t] : NULL;
	if (t < 0)
		return 0;
	isa_lane_shape((*tp)->rank, (*tp)->shape, (*tp)->data != NULL, held);
	*h0 = 0;
	*nh = held[2];
	if (k->sliced >> i & 1) {
		int ax = isa_slice_axis(g, op, i);
		if ((*tp)->rank < 4 || isa_weight_layout(*tp) || ax < 2 || ax > 3 ||
		    k->row0[i] + k->rows[i] > (*tp)->shape[ax])
			return -1;
		*h0 = (i < op->n_in ? k->in_row0 : k->out_row0) - k->row0[i];
		*nh = i < op->n_in ? k->in_rows : k->out_rows;
		if (ax == 3) {
			/* Rows of axis 3 lie inside W: the window is all of them. */
			if ((*tp)->shape[0] != 1 || *h0 != 0 || *nh != k->rows[i])
				return -1;
			isa_held_shape(*tp, ax, k->rows[i], held);
			*nh = held[2];
		} else {
			held[2] = k->rows[i];
		}
		if (*h0 < 0 || *h0 + *nh > held[2])
			return -1;
	}
	if (k->chsplit >> i & 1) {
		if ((*tp)->rank < 1 || k->ch0 + k->chans > held[1])
			return -1;
		held[1] = k->chans;
	}
	return 0;
}

static int check_cmp(const struct machine *mc, const struct isa_cmp *k)
{
	const struct ir_graph *g = mc->m->g;
	const struct ir_op *op = &g->ops[k->layer];
	if (isa_cmp_host(k)) {
		/* tmodel_read matched it with a host layer */
		for (int i = 0; i < op->n_in + op->n_out; i++) {
			int t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
			if (t >= 0 && g->tensors[t].addr < 0 && !g->tensors[t].dyn)
				return err_set("'%s': host layer '%s': tensor '%s' has no DDR address",
					       mc->file, op->name, g->tensors[t].name);
		}
		if (!op_kernel(g, op))
			return err_set("'%s': host layer '%s' (%s) has no kernel", mc->file,
				       op->name, op_name(op->type));
		return 0;
	}
	if (!op_defs[op->type]->run_tpu)
		return err_set("'%s': layer '%s' (%s) has no chip kernel", mc->file, op->name,
			       op_name(op->type));
	if (k->sliced) {
		const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
		int ax = isa_slice_axis(g, op, 0);
		if (x->rank < 4 || y->rank < 4 || ax < 2 || ax >= x->rank ||
		    k->in_row0 + k->in_rows > x->shape[ax] ||
		    k->out_row0 + k->out_rows > y->shape[2])
			return err_set("'%s': compute command %u: slice rows outside layer '%s'",
				       mc->file, k->id, op->name);
		/* the input rows held cover those the op's rule reads for the
		 * output rows computed (kernels read them, an elementwise one
		 * as many as it writes) */
		if (!op_defs[op->type]->slice_h)
			return err_set("'%s': compute command %u: layer '%s' (%s) runs whole, "
				       "not in slices", mc->file, k->id, op->name, op_name(op->type));
		int ih0, ih1;
		op_defs[op->type]->slice_h(g, op, k->out_row0, k->out_row0 + k->out_rows, &ih0, &ih1);
		ih0 = ih0 < 0 ? 0 : ih0;
		ih1 = ih1 > x->shape[ax] ? (int)x->shape[ax] : ih1;
		if (ih0 < ih1 && (k->in_row0 > ih0 || k->in_row0 + k->in_rows < ih1))
			return err_set("'%s': compute command %u: input rows %d..%d of layer '%s' "
				       "do not hold rows %d..%d its result rows need", mc->file,
				       k->id, k->in_row0, k->in_row0 + k->in_rows, op->name, ih0, ih1);
	}
	for (int i = 0; i < k->n_in + k->n_out; i++) {
		const struct ir_tensor *t;
		int64_t s[4], h0, nh;
		if (operand_shape(g, k, i, &t, s, &h0, &nh) < 0)
			return err_set("'%s': compute command %u: operand %d does not hold the rows "
				       "or channels it needs", mc->file, k->id, i);
		if (!t)
			continue;
		if (k->addr[i] == ISA_NO_ADDR ||
		    (int64_t)k->addr[i] + isa_lane_bytes(mc->c, t->dtype, s) > mc->c->lmem_bytes)
			return err_set("'%s': compute command %u: operand %d lies outside local memory",
				       mc->file, k->id, i);
	}
	return 0;
}

/* ---- data movement ---- */

static void dma_run(struct machine *mc, const struct isa_dma *d)
{
	const struct chip *c = mc->c;
	size_t es = dtype_size(d->dtype);
	size_t row = (size_t)d->w * es;
	int64_t pitch = isa_pitch(c, d->dtype, d->w);
	for (int n = 0; n < d->n; n++)
		for (int ch = 0; ch < d->c; ch++) {
			unsigned char *lane = mc->lmem + (int64_t)(ch % c->lanes) * c->lmem_bytes + d->lmem;
			int64_t slot = ch / c->lanes;
			for (int h = 0; h < d->h; h++) {
				unsigned char *l = lane + ((slot * d->n + n) * d->h + h) * pitch;
				unsigned char *g = mc->ddr + d->ddr +
					((int64_t)n * d->nstride + (int64_t)ch * d->cstride +
					 (int64_t)h * d->w) * (int64_t)es;
				if (d->op == ISA_DMA_LOAD)
					memcpy(l, g, row);
				else
					memcpy(g, l, row);
			}
		}
}

/* Copy rows [h0, h0 + nh) of a tensor held in local memory at addr (lane
 * layout of shape s) to or from a dense buffer of shape s[0], s[1], nh,
 * s[3]; to_dense selects the direction. */
static void lmem_xfer(struct machine *mc, uint32_t addr, enum ir_dtype dt, const int64_t s[4],
		      int64_t h0, int64_t nh, unsigned char *dense, int to_dense)
{
	const struct chip *c = mc->c;
	size_t es = dtype_size(dt);
	size_t row = (size_t)s[3] * es;
	int64_t pitch = isa_pitch(c, dt, s[3]);
	for (int64_t n = 0; n < s[0]; n++)
		for (int64_t ch = 0; ch < s[1]; ch++) {
			unsigned char *lane = mc->lmem + (ch % c->lanes) * c->lmem_bytes + addr;
			int64_t slot = ch / c->lanes;
			for (int64_t h = 0; h < nh; h++) {
				unsigned char *l = lane + ((slot * s[0] + n) * s[2] + h0 + h) * pitch;
				unsigned char *d = dense + (size_t)(((n * s[1] + ch) * nh + h) * s[3]) * es;
				if (to_dense)
					memcpy(d, l, row);
				else
					memcpy(l, d, row);
			}
		}
}

static void *scratch(struct machine *mc, int i, size_t n)
{
	if (mc->scratch_len[i] < n) {
		free(mc->scratch[i]);
		mc->scratch[i] = xaligned(n);
		mc->scratch_len[i] = n;
	}
	return mc->scratch[i];
}

/* SIM_DUMP_ALL: copy rows [out_row0, out_row0 + nh) (channels [ch0, ...)
 * when split) of result operand i, dense in buf with held shape s, into the
 * whole tensor's dump. */
static void dump_rows(struct machine *mc, int t, const struct isa_cmp *k, int i,
		      const unsigned char *buf, int64_t nh, const int64_t s[4])
{
	const struct ir_tensor *x = &mc->m->g->tensors[t];
	int64_t w[4], es = (int64_t)dtype_size(x->dtype);
	isa_lane_shape(x->rank, x->shape, 0, w);
	if (!mc->dump[t])
		mc->dump[t] = xcalloc(tensor_bytes(x) + 1, 1);
	int64_t r0 = k->sliced >> i & 1 ? k->out_row0 : 0;
	int64_t c0 = k->chsplit >> i & 1 ? k->ch0 : 0;
	for (int64_t n = 0; n < s[0]; n++)
		for (int64_t c = 0; c < s[1]; c++)
			for (int64_t h = 0; h < nh; h++)
				memcpy(mc->dump[t] + (((n * w[1] + c0 + c) * w[2] + r0 + h) * w[3]) * es,
				       buf + (((n * s[1] + c) * nh + h) * s[3]) * es, (size_t)(s[3] * es));
}

/* A host command: layer L's kernel (op_kernel, as ir-run) over its
 * tensors in DDR, and over dynamic ones in the host's memory, on their
 * run-time shapes (lib/ir/dynrun.h); the results go through buffers of
 * their own, then to their addresses, so that an output may take an
 * input's place. */
static int host_run(struct machine *mc, int l, double *ms)
{
	const struct ir_graph *g = mc->m->g;
	const struct ir_op *op = &g->ops[l];
	if (!mc->dr) {
		mc->host_val = xcalloc((size_t)g->n_tensors + 1, sizeof *mc->host_val);
		mc->dr = xmalloc(sizeof *mc->dr);
		dynrun_init(mc->dr, g, mc->host_val, 0);
	}
	for (int i = 0; i < op->n_in; i++)
		if (op->in[i] >= 0 && !g->tensors[op->in[i]].dyn)
			mc->host_val[op->in[i]] = mc->ddr + g->tensors[op->in[i]].addr;
	/* zeroed, as ir-run's buffers: a kernel that writes fewer elements
	 * than a static output holds (a Slice [0:100] of a dynamic tensor
	 * that has fewer rows in this run) leaves zeros, not old bytes */
	for (int i = 0; i < op->n_out; i++)
		if (!g->tensors[op->out[i]].dyn) {
			size_t nb = tensor_bytes(&g->tensors[op->out[i]]) + 64;
			mc->host_val[op->out[i]] = xaligned(nb);
			memset(mc->host_val[op->out[i]], 0, nb);
		}
	double t0 = now_seconds();
	int rc = dynrun_op(mc->dr, l, op_kernel(g, op), 1);
	*ms += (now_seconds() - t0) * 1e3;
	for (int i = 0; i < op->n_out; i++) {
		int o = op->out[i];
		const struct ir_tensor *t = &g->tensors[o];
		if (t->dyn) {
			if (rc == 0 && mc->dump) {
				size_t nb = tensor_bytes(run_tensor(mc, o));
				free(mc->dump[o]);
				mc->dump[o] = xmalloc(nb + 1);
				memcpy(mc->dump[o], mc->host_val[o], nb);
			}
			continue;
		}
		if (rc == 0)
			memcpy(mc->ddr + t->addr, mc->host_val[o], tensor_bytes(t));
		if (rc == 0 && mc->dump) {
			free(mc->dump[o]);
			mc->dump[o] = mc->host_val[o];
		} else {
			free(mc->host_val[o]);
		}
		mc->host_val[o] = NULL;
	}
	return rc < 0 ? err_prefix("'%s': host layer '%s'", mc->file, op->name) : 0;
}

/* Gather the operands, run the layer's kernel over the slice, scatter the
 * results. */
static int cmp_run(struct machine *mc, const struct isa_cmp *k)
{
	const struct ir_graph *g = mc->m->g;
	const struct ir_op *op = &g->ops[k->layer];
	struct kern kn;
	kern_init(&kn, op->n_in, op->n_out);
	kn.g = g;
	kn.op = op;
	kn.nthreads = 1;
	/* A Concat writing some of its result's channels from whole inputs
	 * runs whole; the command keeps channels [ch0, ch0 + chans). */
	int part = op->type == OP_CONCAT && k->chsplit && !(k->chsplit & ((1u << op->n_in) - 1));
	if (part) {
		const struct ir_tensor *y = &g->tensors[op->out[0]];
		int64_t ax = op_int(op, "axis", 1);
		if (y->rank != 4 || y->shape[0] != 1 || (ax != 1 && ax != -3)) {
			kern_done(&kn);
			return err_set("'%s': compute command %u: a Concat computing some channels "
				       "joins along axis 1 of a rank-4 result with N = 1", mc->file, k->id);
		}
	}
	for (int i = 0; i < k->n_in + k->n_out; i++) {
		const struct ir_tensor *t;
		int64_t s[4], h0, nh;
		operand_shape(g, k, i, &t, s, &h0, &nh);
		if (!t)
			continue;
		struct view *v = i < op->n_in ? &kn.in[i] : &kn.out[i - op->n_in];
		if (part && i >= op->n_in)
			s[1] = t->shape[1];   /* the whole result, kept in part below */
		int64_t numel = s[0] * s[1] * nh * s[3];
		v->data = scratch(mc, i, (size_t)numel * dtype_size(t->dtype) + 1);
		v->dtype = t->dtype;
		v->rank = t->rank;
		memcpy(v->shape, t->shape, sizeof v->shape);
		if (k->sliced >> i & 1)
			v->shape[isa_slice_axis(g, op, i)] = i < op->n_in ? k->in_rows : k->out_rows;
		if (k->chsplit >> i & 1)
			v->shape[isa_weight_layout(t) ? 0 : 1] = s[1];
		/* the kernel walks the view's shape: it must not hold more than
		 * the bytes gathered for it (a command's rows or channels that
		 * do not fit its layer's tensor) */
		int64_t vn = 1;
		for (int d = 0; d < v->rank; d++)
			vn *= v->shape[d];
		if (vn > numel) {
			kern_done(&kn);
			return err_set("'%s': compute command %u: operand %d's slice holds %lld "
				       "elements, its layer's tensor %lld", mc->file, k->id, i,
				       (long long)vn, (long long)numel);
		}
		v->scale = t->scale;
		v->zero_point = t->zero_point;
		if (i < op->n_in)
			lmem_xfer(mc, k->addr[i], t->dtype, s, h0, nh, v->data, 1);
	}
	if (k->sliced) {
		kn.out_row0 = k->out_row0;
		kn.in_row0 = k->in_row0;
	}
	if (op->n_in > 0 && op->in[0] >= 0 && g->tensors[op->in[0]].rank >= 3)
		kn.in_full_h = (int)g->tensors[op->in[0]].shape[2];
	/* The parameters came through local memory: check what the kernel
	 * will see, not only the coefficients tmodel_read checked. */
	if (tmodel_check_requant(op, kn.out[0].dtype, kn.in, kn.n_in) < 0) {
		kern_done(&kn);
		return err_prefix("'%s': compute command %u", mc->file, k->id);
	}
	if (op_defs[op->type]->run_tpu(&kn) < 0) {
		kern_done(&kn);
		return err_prefix("'%s': layer '%s'", mc->file, op->name);
	}
	for (int i = op->n_in; i < k->n_in + k->n_out; i++) {
		const struct ir_tensor *t;
		int64_t s[4], h0, nh;
		operand_shape(g, k, i, &t, s, &h0, &nh);
		unsigned char *d = kn.out[i - op->n_in].data;
		if (part) {
			/* every channel computed is dumped, those in place too */
			struct isa_cmp whole = *k;
			int64_t ws[4] = { s[0], t->shape[1], s[2], s[3] };
			whole.chsplit = 0;
			if (mc->dump)
				dump_rows(mc, op->out[i - op->n_in], &whole, i, d, nh, ws);
			d += (size_t)(k->ch0 * nh * s[3]) * dtype_size(t->dtype);   /* N = 1 */
		} else if (mc->dump) {
			dump_rows(mc, op->out[i - op->n_in], k, i, d, nh, s);
		}
		lmem_xfer(mc, k->addr[i], t->dtype, s, h0, nh, d, 0);
	}
	kern_done(&kn);
	return 0;
}

/* ---- I/O ---- */

/* Each graph input from the array of its name: same dtype as is, f32 from
 * any numeric array, i8 with a scale quantised from floats (as ir-run). */
static int set_inputs(struct machine *mc, const struct npz *in, const char *file)
{
	const struct ir_graph *g = mc->m->g;
	for (int i = 0; i < g->n_inputs; i++) {
		const struct ir_tensor *t = &g->tensors[g->inputs[i]];
		const struct npz_array *a = npz_find(in, t->name);
		if (!a)
			return npz_missing(in, file, t->name, "graph input");
		if (a->rank != t->rank || memcmp(a->shape, t->shape, sizeof(int64_t) * (size_t)t->rank)) {
			char have[128], want[128];
			shape_str(have, sizeof have, a->rank, a->shape);
			shape_str(want, sizeof want, t->rank, t->shape);
			return err_set("'%s': array '%s' has shape %s, the graph input %s", file,
				       t->name, have, want);
		}
		unsigned char *dst = mc->ddr + t->addr;
		int is_float = a->dtype == DT_F32 || a->dtype == DT_F16 || a->dtype == DT_BF16;
		if (a->dtype == t->dtype) {
			memcpy(dst, a->data, a->nbytes);
		} else if (t->dtype == DT_F32 || (t->dtype == DT_I8 && t->scale != 0 && is_float) ||
			   ((t->dtype == DT_BF16 || t->dtype == DT_F16) && is_float)) {
			float *f = npz_to_f32(a);
			if (t->dtype == DT_F32)
				memcpy(dst, f, tensor_bytes(t));
			else if (t->dtype == DT_I8)
				quant_f32_to_i8(f, (int8_t *)dst, tensor_numel(t), t->scale);
			else   /* bf16 and f16 graph inputs from floats, rounded as ir-run does */
				dtype_convert(dst, t->dtype, f, DT_F32, tensor_numel(t));
			free(f);
		} else if (a->dtype != DT_BF16 && (t->scale == 0 || !is_float)) {
			/* by value, as ir-run stores it (Cast's rules) */
			dtype_convert(dst, t->dtype, a->data, a->dtype, tensor_numel(t));
		} else {
			return err_set("'%s': array '%s' is %s, the graph input is %s", file, t->name,
				       dtype_name(a->dtype), dtype_name(t->dtype));
		}
	}
	return 0;
}

static float elem_f32(const unsigned char *p, enum ir_dtype dt, int64_t i)
{
	switch (dt) {
	case DT_F32: { float f; memcpy(&f, p + 4 * i, 4); return f; }
	case DT_I8: return (float)((const int8_t *)p)[i];
	case DT_U8: return (float)p[i];
	case DT_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return (float)v; }
	case DT_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return (float)v; }
	case DT_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (float)v; }
	case DT_BOOL: return (float)(p[i] != 0);
	case DT_F16: case DT_BF16: {
		struct npz_array a = { .dtype = dt, .rank = 1, .shape = { 1 },
				       .data = (void *)(p + 2 * i), .nbytes = 2 };
		float *f = npz_to_f32(&a), v = f[0];
		free(f);
		return v;
	}
	default: return 0;
	}
}

/* Tensor t from src as float32 into out, dequantised, unless present. */
static void add_f32(struct npz *out, const struct ir_tensor *t, const unsigned char *src)
{
	if (npz_find(out, t->name))
		return;
	struct npz_array *a = npz_add(out, t->name, DT_F32, t->rank, t->shape, NULL);
	float *f = a->data;
	int64_t n = tensor_numel(t);
	for (int64_t j = 0; j < n; j++) {
		float v = elem_f32(src, t->dtype, j);
		f[j] = t->dtype != DT_F32 && t->scale != 0 ? t->scale * (v - (float)t->zero_point) : v;
	}
}

/* SIM_DUMP_ALL: the output of a copy the DMA engine made alone (no
 * compute command dumped it) is its inputs' bytes one after the other. */
static void dump_copy(struct machine *mc, const struct ir_op *op)
{
	const struct ir_graph *g = mc->m->g;
	struct isa_piece *pc;
	int n = isa_copy_pieces(g, op, &pc);
	for (int i = 0; i < n; i++)
		if (!mc->dump[pc[i].src]) {
			free(pc);
			return;
		}
	for (int i = 0; i < op->n_out; i++)
		if (mc->dump[op->out[i]]) {
			free(pc);
			return;
		}
	for (int i = 0; i < n; i++) {
		size_t es = dtype_size(g->tensors[pc[i].src].dtype);
		if (!mc->dump[pc[i].dst])
			mc->dump[pc[i].dst] = xmalloc(tensor_bytes(&g->tensors[pc[i].dst]) + 1);
		for (int64_t r = 0; r < pc[i].reps; r++)
			memcpy(mc->dump[pc[i].dst] + (pc[i].dst_at + r * pc[i].dst_step) * (int64_t)es,
			       mc->dump[pc[i].src] + (pc[i].src_at + r * pc[i].src_step) * (int64_t)es,
			       (size_t)pc[i].n * es);
	}
	free(pc);
}

static void get_outputs(struct machine *mc, struct npz *out)
{
	const struct ir_graph *g = mc->m->g;
	if (mc->dump) {
		for (int i = 0; i < g->n_inputs; i++)
			add_f32(out, &g->tensors[g->inputs[i]], mc->dump[g->inputs[i]]);
		for (int k = 0; k < g->n_ops; k++)
			for (int i = 0; i < g->ops[k].n_out; i++) {
				int t = g->ops[k].out[i];
				if (!mc->dump[t])
					dump_copy(mc, &g->ops[k]);
				if (mc->dump[t])
					add_f32(out, run_tensor(mc, t), mc->dump[t]);
			}
		return;
	}
	for (int i = 0; i < g->n_outputs; i++) {
		int t = g->outputs[i];
		add_f32(out, run_tensor(mc, t),
			g->tensors[t].dyn ? mc->host_val[t] : mc->ddr + g->tensors[t].addr);
	}
}

/* ---- the run ---- */

/* 1 if tensor t is one of the n entries of list. */
static int listed(const int *list, int n, int t)
{
	for (int i = 0; i < n; i++)
		if (list[i] == t)
			return 1;
	return 0;
}

/* Bytes of each weight that are the network's own: an op a rewrite made
 * multiply zeros too (attribute "own" [MACs, weight bytes]: merged groups,
 * lib/back/reorder.c; output columns as channels, lib/back/lower_fill.c)
 * holds weights and coefficients of which only "own" bytes are the
 * network's, counted on its weight; the rest count whole.  An array over
 * the tensors, 0 for activations. */
static int64_t *own_bytes(const struct ir_graph *g)
{
	int64_t *b = xcalloc((size_t)g->n_tensors + 1, sizeof *b);
	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].data)
			b[i] = (int64_t)g->tensors[i].nbytes;
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		int64_t own[2];
		if (op_ints(op, "own", own, 2) != 2 || own[1] < 0 || op->n_in < 2 || op->in[1] < 0 ||
		    !g->tensors[op->in[1]].data)
			continue;
		for (int j = 2; j < op->n_in; j++)
			if (op->in[j] >= 0 && op->in[j] != op->in[1])
				b[op->in[j]] = 0;
		b[op->in[1]] = own[1];
	}
	return b;
}

static void stats_static(const struct tmodel *m, const struct chip *c, struct sim_stats *st)
{
	const struct ir_graph *g = m->g;
	int64_t *own = own_bytes(g);
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		struct sim_layer *l = &st->layer[i];
		if (op->place == PLACE_HOST)
			continue;   /* the host's, not the chip's: no MACs, no bytes */
		l->macs = op_macs(g, op);
		st->macs += l->macs;
		/* The layer's own minimum DDR traffic, as the model's below. */
		for (int j = 0; j < op->n_in; j++) {
			int t = op->in[j];
			if (t >= 0 && (g->tensors[t].data || listed(g->inputs, g->n_inputs, t)))
				l->min_ddr_bytes += g->tensors[t].data ? own[t]
								       : (int64_t)tensor_bytes(&g->tensors[t]);
		}
		for (int j = 0; j < op->n_out; j++)
			if (op->out[j] >= 0 && listed(g->outputs, g->n_outputs, op->out[j]))
				l->min_ddr_bytes += (int64_t)tensor_bytes(&g->tensors[op->out[j]]);
	}
	/* a weight only host ops read never crosses the chip's DDR port:
	 * the host reads it, in time that is not the chip's */
	char *chip_reads = xcalloc((size_t)g->n_tensors + 1, 1);
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			if (g->ops[i].in[j] >= 0 && g->ops[i].place != PLACE_HOST)
				chip_reads[g->ops[i].in[j]] = 1;
	for (int i = 0; i < g->n_tensors; i++)
		if (chip_reads[i] || !g->tensors[i].data)
			st->min_ddr_bytes += own[i];
	free(chip_reads);
	free(own);
	for (int i = 0; i < g->n_inputs; i++)
		st->min_ddr_bytes += (int64_t)tensor_bytes(&g->tensors[g->inputs[i]]);
	for (int i = 0; i < g->n_outputs; i++)
		st->min_ddr_bytes += (int64_t)tensor_bytes(&g->tensors[g->outputs[i]]);
	enum ir_dtype dt = m->mode == MODE_INT8 ? DT_I8 :
			   m->mode == MODE_F16 || m->mode == MODE_BF16 ? DT_F16 : DT_F32;
	st->peak_macs = chip_cube_macs(c, dt);
	int64_t a = ceil_div(st->macs, st->peak_macs), b = ceil_div(st->min_ddr_bytes, c->ddr_bpc);
	st->bound = a > b ? a : b;
	for (int i = 0; i < g->n_ops; i++) {
		struct sim_layer *l = &st->layer[i];
		a = ceil_div(l->macs, st->peak_macs);
		b = ceil_div(l->min_ddr_bytes, c->ddr_bpc);
		l->bound = a > b ? a : b;
	}
}

/* The DDR the model needs: up to the end of its coefficients and of its
 * furthest tensor (tmodel_read put each inside its region), in *LEN.  -1
 * when the regions the model declares, or any one tensor (local ones
 * too), pass the chip's DDR. */
static int ddr_size(const struct tmodel *m, const struct chip *c, const char *file, int64_t *len)
{
	int64_t coeff_end = m->coeff_addr + m->coeff_bytes;
	int64_t neuron_end = m->neuron_addr + m->neuron_bytes;
	int64_t end = coeff_end > neuron_end ? coeff_end : neuron_end;
	if (end > c->ddr_bytes)
		return err_set("'%s': the model's DDR regions end at %lld bytes, past the %lld of "
			       "chip %s", file, (long long)end, (long long)c->ddr_bytes, c->name);
	int64_t need = coeff_end;
	for (int i = 0; i < m->g->n_tensors; i++) {
		const struct ir_tensor *t = &m->g->tensors[i];
		int64_t bytes = (int64_t)tensor_bytes(t);
		if (bytes > c->ddr_bytes)
			return err_set("'%s': tensor '%s' (%lld bytes) is larger than the DDR of chip %s",
				       file, t->name, (long long)bytes, c->name);
		if (t->addr >= 0 && t->addr + bytes > need)
			need = t->addr + bytes;
	}
	if (limit_check(need + c->lanes * c->lmem_bytes, "the simulated DDR and local memory") < 0)
		return err_prefix("'%s'", file);
	*len = need;
	return 0;
}

int sim_run(const struct tmodel *m, const struct chip *c, const char *model_file,
	    const struct npz *in, const char *file, struct npz *out, struct sim_stats *st,
	    unsigned flags)
{
	struct machine mc = { .m = m, .c = c, .file = model_file };
	int timed_only = flags & SIM_TIMED_ONLY;
	memset(st, 0, sizeof *st);
	if (ddr_size(m, c, model_file, &mc.ddr_len) < 0)
		return -1;
	if ((flags & SIM_DUMP_ALL) && !timed_only && out)
		mc.dump = xcalloc((size_t)m->g->n_tensors + 1, sizeof *mc.dump);
	int rc = -1;
	int64_t *end_d = xmalloc(sizeof(int64_t) * (size_t)(m->n_dma + 1));
	int64_t *end_c = xmalloc(sizeof(int64_t) * (size_t)(m->n_cmp + 1));
	mc.ddr = xaligned((size_t)mc.ddr_len + 64);
	memset(mc.ddr, 0, (size_t)mc.ddr_len + 64);
	memcpy(mc.ddr + m->coeff_addr, m->coeff, (size_t)m->coeff_bytes);
	mc.lmem = timed_only ? NULL : xcalloc((size_t)c->lanes, (size_t)c->lmem_bytes);
	st->n_layers = m->g->n_ops;
	st->layer = xcalloc((size_t)m->g->n_ops + 1, sizeof *st->layer);
	stats_static(m, c, st);
	if (flags & SIM_TRACE)
		st->event = xmalloc(sizeof *st->event * ((size_t)m->n_dma + (size_t)m->n_cmp + 1));

	for (int i = 0; i < m->n_dma; i++)
		if (check_dma(&mc, &m->dma[i]) < 0)
			goto out;
	for (int i = 0; i < m->n_cmp; i++)
		if (check_cmp(&mc, &m->cmp[i]) < 0)
			goto out;
	for (int i = 0; i < m->g->n_inputs + m->g->n_outputs; i++) {
		int t = i < m->g->n_inputs ? m->g->inputs[i] : m->g->outputs[i - m->g->n_inputs];
		if (m->g->tensors[t].addr < 0 && !(i >= m->g->n_inputs && m->g->tensors[t].dyn)) {
			err_set("'%s': graph input or output '%s' has no DDR address", mc.file,
				m->g->tensors[t].name);
			goto out;
		}
	}
	if (!timed_only && set_inputs(&mc, in, file) < 0)
		goto out;
	/* Graph inputs as given: their DDR may be reused once they are read. */
	for (int i = 0; mc.dump && i < m->g->n_inputs; i++) {
		const struct ir_tensor *t = &m->g->tensors[m->g->inputs[i]];
		mc.dump[m->g->inputs[i]] = xmalloc(tensor_bytes(t) + 1);
		memcpy(mc.dump[m->g->inputs[i]], mc.ddr + t->addr, tensor_bytes(t));
	}

	int id = 0, ic = 0;
	int64_t td = 0, tc = 0;
	while (id < m->n_dma || ic < m->n_cmp) {
		const struct isa_dma *d = id < m->n_dma ? &m->dma[id] : NULL;
		const struct isa_cmp *k = ic < m->n_cmp ? &m->cmp[ic] : NULL;
		int d_ok = d && d->wait <= (uint32_t)ic;
		int k_ok = k && k->wait <= (uint32_t)id;
		if (!d_ok && !k_ok) {
			err_set("'%s': deadlock: dma command %u waits for compute command %u, "
				"which waits for dma command %u", mc.file, d ? d->id : 0,
				d ? d->wait : 0, k ? k->wait : 0);
			goto out;
		}
		int64_t sd = 0, sc = 0;
		if (d_ok)
			sd = d->wait && end_c[d->wait - 1] > td ? end_c[d->wait - 1] : td;
		if (k_ok)
			sc = k->wait && end_d[k->wait - 1] > tc ? end_d[k->wait - 1] : tc;
		if (d_ok && (!k_ok || sd <= sc)) {
			int64_t cy = cost_dma_cycles(c, d);
			if (!timed_only)
				dma_run(&mc, d);
			if (flags & (SIM_TRACE | SIM_PROFILE)) {
				int tensor, layer;
				sim_dma_layer(m, d, &tensor, &layer);
				/* a coefficient run: its weights' readers share it */
				if (!sim_dma_shares(m, d, cy, st->layer) && layer >= 0)
					st->layer[layer].dma_cycles += cy;
				if (flags & SIM_TRACE)
					st->event[st->n_events++] = (struct sim_event){
						.engine = 0, .index = id, .layer = layer,
						.tensor = tensor, .start = sd, .cycles = cy };
			}
			td = end_d[id] = sd + cy;
			st->dma_busy += cy;
			st->ddr_bytes += (int64_t)d->n * d->c * d->h * d->w * (int64_t)dtype_size(d->dtype);
			id++;
		} else {
			int64_t cy = cost_cmp_cycles(c, m->g, k);
			if (isa_cmp_host(k))
				st->n_host++;
			if (!timed_only && (isa_cmp_host(k) ? host_run(&mc, (int)k->layer, &st->host_ms)
							    : cmp_run(&mc, k)) < 0)
				goto out;
			tc = end_c[ic] = sc + cy;
			st->cmp_busy += cy;
			struct sim_layer *l = &st->layer[k->layer];
			if (!l->slices++)
				l->start = sc;
			l->cycles += cy;
			l->end = tc;
			if (flags & SIM_TRACE)
				st->event[st->n_events++] = (struct sim_event){
					.engine = 1, .index = ic, .layer = (int)k->layer,
					.tensor = -1, .start = sc, .cycles = cy };
			ic++;
		}
	}
	st->cycles = td > tc ? td : tc;
	st->seconds = (double)st->cycles / c->clock_hz;
	if (st->cycles) {
		st->mac_util = (double)st->macs / ((double)st->cycles * st->peak_macs);
		st->efficiency = (double)st->bound / (double)st->cycles;
	}
	for (int i = 0; i < st->n_layers; i++) {
		struct sim_layer *l = &st->layer[i];
		int64_t busy = l->cycles > l->dma_cycles ? l->cycles : l->dma_cycles;
		l->efficiency = busy ? (double)l->bound / (double)busy : 0;
	}
	if (out && !timed_only)
		get_outputs(&mc, out);
	rc = 0;
out:
	for (int i = 0; i < ISA_MAX_OPERANDS; i++)
		free(mc.scratch[i]);
	free(mc.ddr);
	free(mc.lmem);
	if (mc.dr) {
		dynrun_free(mc.dr);
		free(mc.dr);
	}
	free(mc.host_val);
	free(end_d);
	free(end_c);
	for (int i = 0; mc.dump && i < m->g->n_tensors; i++)
		free(mc.dump[i]);
	free(mc.dump);
	return rc;
}

void sim_stats_free(struct sim_stats *st)
{
	free(st->layer);
	st->layer = NULL;
	free(st->event);
	st->event = NULL;
	st->n_events = 0;
}
