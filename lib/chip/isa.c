/* isa.c - encoding, decoding and disassembly of the command streams, and
 * the local memory layout (lib/chip/isa.h).
 */
#include <stdio.h>
#include <string.h>

#include "ir/base.h"
#include "ir/bytes.h"
#include "chip/isa.h"
#include "ir/op.h"
#include "ir/op_traits.h"

_Static_assert(OP_CODE_MAX < 256, "the compute command's opcode field has 8 bits");
_Static_assert(DT_COUNT <= 16, "the DMA command's dtype field has 4 bits");

/* Field of `bits` bits at bit `at` of word w. */
#define FIELD(v, at, bits) (((uint64_t)(v) & ((UINT64_C(1) << (bits)) - 1)) << (at))
#define GET(w, at, bits) (((w) >> (at)) & ((UINT64_C(1) << (bits)) - 1))

void isa_dma_encode(const struct isa_dma *d, unsigned char *out)
{
	put_u64(out, FIELD(d->op, 0, 4) | FIELD(d->dtype, 4, 4) | FIELD(d->id, 8, 24) |
		     FIELD(d->wait, 32, 32));
	put_u64(out + 8, FIELD(d->ddr, 0, 32) | FIELD(d->lmem, 32, 32));
	put_u64(out + 16, FIELD(d->n, 0, 16) | FIELD(d->c, 16, 16) | FIELD(d->h, 32, 16) |
			  FIELD(d->w, 48, 16));
	put_u64(out + 24, FIELD(d->cstride, 0, 32) | FIELD(d->nstride, 32, 32));
}

int isa_dma_decode(const unsigned char *in, struct isa_dma *d)
{
	uint64_t w0 = get_u64(in), w1 = get_u64(in + 8), w2 = get_u64(in + 16), w3 = get_u64(in + 24);
	memset(d, 0, sizeof *d);
	d->op = (int)GET(w0, 0, 4);
	d->dtype = (enum ir_dtype)GET(w0, 4, 4);
	d->id = (uint32_t)GET(w0, 8, 24);
	d->wait = (uint32_t)GET(w0, 32, 32);
	d->ddr = (uint32_t)GET(w1, 0, 32);
	d->lmem = (uint32_t)GET(w1, 32, 32);
	d->n = (int)GET(w2, 0, 16);
	d->c = (int)GET(w2, 16, 16);
	d->h = (int)GET(w2, 32, 16);
	d->w = (int)GET(w2, 48, 16);
	d->cstride = (uint32_t)GET(w3, 0, 32);
	d->nstride = (uint32_t)GET(w3, 32, 32);
	if (d->op != ISA_DMA_LOAD && d->op != ISA_DMA_STORE)
		return err_set("dma command %u: unknown opcode %d", d->id, d->op);
	if ((unsigned)d->dtype >= DT_COUNT)
		return err_set("dma command %u: unknown dtype %d", d->id, (int)d->dtype);
	return 0;
}

void isa_cmp_encode(const struct isa_cmp *c, unsigned char *out)
{
	put_u64(out, FIELD(op_code((enum op_type)c->opcode), 0, 8) | FIELD(c->id, 8, 24) | FIELD(c->wait, 32, 32));
	put_u64(out + 8, FIELD(c->layer, 0, 32) | FIELD(c->n_in, 32, 8) | FIELD(c->n_out, 40, 8) |
			 FIELD(c->sliced, 48, 16));
	put_u64(out + 16, FIELD(c->out_row0, 0, 16) | FIELD(c->out_rows, 16, 16) |
			  FIELD(c->in_row0, 32, 16) | FIELD(c->in_rows, 48, 16));
	for (int i = 0; i < ISA_MAX_OPERANDS; i++)
		put_u64(out + 24 + 8 * i, FIELD(c->addr[i], 0, 32) | FIELD(c->row0[i], 32, 16) |
					  FIELD(c->rows[i], 48, 16));
	put_u64(out + 88, FIELD(c->ch0, 0, 16) | FIELD(c->chans, 16, 16) | FIELD(c->chsplit, 32, 16));
}

int isa_cmp_host(const struct isa_cmp *c)
{
	return c->n_in == 0 && c->n_out == 0;
}

int isa_cmp_decode(const unsigned char *in, struct isa_cmp *c)
{
	uint64_t w0 = get_u64(in), w1 = get_u64(in + 8), w2 = get_u64(in + 16);
	memset(c, 0, sizeof *c);
	int code = (int)GET(w0, 0, 8);
	c->opcode = op_from_code(code);
	c->id = (uint32_t)GET(w0, 8, 24);
	c->wait = (uint32_t)GET(w0, 32, 32);
	c->layer = (uint32_t)GET(w1, 0, 32);
	c->n_in = (int)GET(w1, 32, 8);
	c->n_out = (int)GET(w1, 40, 8);
	c->sliced = (unsigned)GET(w1, 48, 16);
	c->out_row0 = (int)GET(w2, 0, 16);
	c->out_rows = (int)GET(w2, 16, 16);
	c->in_row0 = (int)GET(w2, 32, 16);
	c->in_rows = (int)GET(w2, 48, 16);
	for (int i = 0; i < ISA_MAX_OPERANDS; i++) {
		uint64_t w = get_u64(in + 24 + 8 * i);
		c->addr[i] = (uint32_t)GET(w, 0, 32);
		c->row0[i] = (int)GET(w, 32, 16);
		c->rows[i] = (int)GET(w, 48, 16);
	}
	uint64_t w11 = get_u64(in + 88);
	c->ch0 = (int)GET(w11, 0, 16);
	c->chans = (int)GET(w11, 16, 16);
	c->chsplit = (unsigned)GET(w11, 32, 16);
	if (c->opcode < 0)
		return err_set("compute command %u: unknown opcode %d", c->id, code);
	if ((c->n_out < 1 && !isa_cmp_host(c)) || c->n_in + c->n_out > ISA_MAX_OPERANDS)
		return err_set("compute command %u: %d inputs and %d outputs", c->id, c->n_in, c->n_out);
	if (c->sliced >> (c->n_in + c->n_out) || c->chsplit >> (c->n_in + c->n_out))
		return err_set("compute command %u: sliced bits beyond the operands", c->id);
	if (GET(w11, 48, 16) || (c->chsplit && !c->chans))
		return err_set("compute command %u: reserved bits set", c->id);
	for (int i = 0; i < ISA_MAX_OPERANDS; i++)
		if (!(c->sliced >> i & 1) && (c->row0[i] || c->rows[i]))
			return err_set("compute command %u: rows given for unsliced operand %d", c->id, i);
	return 0;
}

void isa_dma_str(const struct isa_dma *d, char *buf, int cap)
{
	snprintf(buf, (size_t)cap, "dma %u %s wait c%u ddr 0x%x lmem %u %s n%d c%d h%d w%d cs %u ns %u",
		 d->id, d->op == ISA_DMA_LOAD ? "LOAD" : d->op == ISA_DMA_STORE ? "STORE" : "?",
		 d->wait, d->ddr, d->lmem, dtype_name(d->dtype), d->n, d->c, d->h, d->w,
		 d->cstride, d->nstride);
}

void isa_cmp_str(const struct isa_cmp *c, char *buf, int cap)
{
	if (isa_cmp_host(c)) {
		snprintf(buf, (size_t)cap, "cmp %u %s wait d%u layer %u host", c->id,
			 op_name((enum op_type)c->opcode), c->wait, c->layer);
		return;
	}
	int n = snprintf(buf, (size_t)cap, "cmp %u %s wait d%u layer %u out %d+%d in %d+%d",
			 c->id, op_name((enum op_type)c->opcode), c->wait, c->layer,
			 c->out_row0, c->out_rows, c->in_row0, c->in_rows);
	if (c->chans && n < cap)
		n += snprintf(buf + n, (size_t)(cap - n), " ch %d+%d", c->ch0, c->chans);
	for (int i = 0; i < c->n_in + c->n_out && i < ISA_MAX_OPERANDS && n < cap; i++) {
		const char *sep = i == c->n_in ? " ->" : "";
		if (c->addr[i] == ISA_NO_ADDR)
			n += snprintf(buf + n, (size_t)(cap - n), "%s -", sep);
		else if (c->sliced >> i & 1)
			n += snprintf(buf + n, (size_t)(cap - n), "%s s%s@%u[%d+%d]", sep,
				      (c->chsplit >> i & 1) ? "c" : "", c->addr[i], c->row0[i], c->rows[i]);
		else
			n += snprintf(buf + n, (size_t)(cap - n), "%s %s@%u", sep,
				      (c->chsplit >> i & 1) ? "c" : "", c->addr[i]);
	}
}

void isa_lane_shape(int rank, const int64_t *shape, int is_weight, int64_t s[4])
{
	s[0] = s[1] = s[2] = s[3] = 1;
	if (rank == 0)
		return;
	if (is_weight && !(rank >= 2 && shape[0] == 1)) {
		s[1] = shape[0];
		for (int i = 1; i < rank; i++)
			s[3] *= shape[i];
		return;
	}
	switch (rank) {
	case 1: s[1] = shape[0]; break;
	case 2: s[0] = shape[0]; s[1] = shape[1]; break;
	case 3: s[0] = shape[0]; s[1] = shape[1]; s[3] = shape[2]; break;
	default:
		s[0] = shape[0]; s[1] = shape[1]; s[2] = shape[2];
		for (int i = 3; i < rank; i++)
			s[3] *= shape[i];
	}
}

int64_t isa_pitch(const struct chip *c, enum ir_dtype dt, int64_t w)
{
	return align_to(w * (int64_t)dtype_size(dt), c->vec_bytes);
}

int64_t isa_lane_bytes(const struct chip *c, enum ir_dtype dt, const int64_t s[4])
{
	return ceil_div(s[1], c->lanes) * s[0] * s[2] * isa_pitch(c, dt, s[3]);
}

int isa_slice_axis(const struct ir_graph *g, const struct ir_op *op, int i)
{
	int64_t perm[IR_MAX_RANK];
	if (op->type != OP_TRANSPOSE || i != 0 || op->n_in < 1 || op->in[0] < 0)
		return 2;
	int r = g->tensors[op->in[0]].rank;
	if (r < 3 || op_ints(op, "perm", perm, IR_MAX_RANK) != r)
		return 2;
	return (int)perm[2];
}

void isa_held_shape(const struct ir_tensor *t, int axis, int64_t rows, int64_t s[4])
{
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
	if (rows >= 0 && axis >= 0 && axis < t->rank)
		shape[axis] = rows;
	isa_lane_shape(t->rank, shape, 0, s);
}

int isa_is_copy(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->n_out != 1 || op->n_in < 1)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	for (int i = 0; i < op->n_in; i++) {
		if (op->in[i] < 0)
			return 0;
		const struct ir_tensor *x = &g->tensors[op->in[i]];
		if (x->data || x->dtype != y->dtype)
			return 0;
	}
	if (op->type == OP_CONCAT) {
		int r = y->rank, ax = (int)op_int(op, "axis", 1);
		if (ax < 0)
			ax += r;
		for (int d = 0; d < ax && d < r; d++)
			if (y->shape[d] != 1)
				return 0;
		if (y->dtype == DT_I8 || y->dtype == DT_U8) {
			/* any number of inputs: the attributes read in place */
			const struct ir_attr *m = op_attr(op, "multipliers"), *sh = op_attr(op, "shifts");
			if (!m || !sh || m->kind != ATTR_INTS || sh->kind != ATTR_INTS ||
			    m->n != op->n_in || sh->n != op->n_in)
				return 0;
			for (int i = 0; i < op->n_in; i++)
				if (m->ints[i] != (INT64_C(1) << 30) || sh->ints[i] != 30 ||
				    g->tensors[op->in[i]].zero_point != y->zero_point)
					return 0;
		}
		return op->n_in;
	}
	if (!op_has(op->type, OPF_COPY))
		return 0;
	return op->n_in == 1 && tensor_numel(&g->tensors[op->in[0]]) == tensor_numel(y);
}

int isa_weight_layout(const struct ir_tensor *t)
{
	return t->data != NULL && !(t->rank >= 2 && t->shape[0] == 1);
}
