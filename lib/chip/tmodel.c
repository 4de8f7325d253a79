/* tmodel.c - reading and writing .tmodel files (lib/chip/tmodel.h,
 * formats/tpuc-tmodel.5).  The description section is one msgpack map whose
 * layer table follows the IR's conventions (formats/tpuc-ir.5): the same
 * tensor and op entries, with "addr" always present and weights referring
 * to the coefficient image by [offset, bytes].
 */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/bytes.h"
#include "ir/ir_msgpack.h"
#include "ir/op.h"
#include "ir/op_traits.h"
#include "quant/quant.h"
#include "chip/tmodel.h"
#include "ir/limit.h"
#include "ir/file_kind.h"
#include "ir/version.h"

#define ALIGN 64

static uint64_t align_up(uint64_t n) { return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1); }

/* ---- writing ---- */

/* One I/O entry: name, tensor index, dtype, shape, scale, zero point, addr. */
static void pack_io(msgpack_packer *pk, const struct ir_graph *g, int n, const int *idx)
{
	msgpack_pack_array(pk, (size_t)n);
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *t = &g->tensors[idx[i]];
		msgpack_pack_map(pk, 7);
		mp_pack_str(pk, "name"); mp_pack_str(pk, t->name);
		mp_pack_str(pk, "tensor"); msgpack_pack_int64(pk, idx[i]);
		mp_pack_str(pk, "dtype"); mp_pack_str(pk, dtype_name(t->dtype));
		mp_pack_str(pk, "shape"); mp_pack_shape(pk, t);
		mp_pack_str(pk, "scale"); msgpack_pack_float(pk, t->scale);
		mp_pack_str(pk, "zero_point"); msgpack_pack_int64(pk, t->zero_point);
		mp_pack_str(pk, "addr"); msgpack_pack_int64(pk, t->addr);
	}
}

static void pack_meta(msgpack_packer *pk, const struct tmodel *m)
{
	const struct ir_graph *g = m->g;
	msgpack_pack_map(pk, 14);
	mp_pack_str(pk, "version"); msgpack_pack_int64(pk, TMODEL_VERSION);
	/* the tools that wrote it; optional, older files lack it */
	mp_pack_str(pk, "producer"); mp_pack_str(pk, "tpuc " TPUC_VERSION);
	mp_pack_str(pk, "name"); mp_pack_str(pk, m->name);
	mp_pack_str(pk, "chip"); mp_pack_str(pk, m->chip);
	mp_pack_str(pk, "mode"); mp_pack_str(pk, mode_name(m->mode));
	mp_pack_str(pk, "coeff_addr"); msgpack_pack_int64(pk, m->coeff_addr);
	mp_pack_str(pk, "coeff_bytes"); msgpack_pack_int64(pk, m->coeff_bytes);
	mp_pack_str(pk, "neuron_addr"); msgpack_pack_int64(pk, m->neuron_addr);
	mp_pack_str(pk, "neuron_bytes"); msgpack_pack_int64(pk, m->neuron_bytes);
	mp_pack_str(pk, "inputs"); pack_io(pk, g, g->n_inputs, g->inputs);
	mp_pack_str(pk, "outputs"); pack_io(pk, g, g->n_outputs, g->outputs);

	mp_pack_str(pk, "tensors");
	msgpack_pack_array(pk, (size_t)g->n_tensors);
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		int fields = 4 + (t->data != NULL) + (t->scale != 0) + (t->zero_point != 0);
		msgpack_pack_map(pk, (size_t)fields);
		mp_pack_str(pk, "name"); mp_pack_str(pk, t->name);
		mp_pack_str(pk, "dtype"); mp_pack_str(pk, dtype_name(t->dtype));
		mp_pack_str(pk, "shape"); mp_pack_shape(pk, t);
		mp_pack_str(pk, "addr"); msgpack_pack_int64(pk, t->addr);
		if (t->data) {
			mp_pack_str(pk, "weight");
			msgpack_pack_array(pk, 2);
			msgpack_pack_int64(pk, t->addr - m->coeff_addr);
			msgpack_pack_uint64(pk, t->nbytes);
		}
		if (t->scale != 0) { mp_pack_str(pk, "scale"); msgpack_pack_float(pk, t->scale); }
		if (t->zero_point != 0) { mp_pack_str(pk, "zero_point"); msgpack_pack_int64(pk, t->zero_point); }
	}

	mp_pack_str(pk, "layers");
	msgpack_pack_array(pk, (size_t)g->n_ops);
	for (int i = 0; i < g->n_ops; i++)
		ir_pack_op(pk, &g->ops[i], 0);

	mp_pack_str(pk, "locs");
	msgpack_pack_array(pk, (size_t)m->n_cmp);
	for (int i = 0; i < m->n_cmp; i++)
		mp_pack_str(pk, m->loc[i]);
}

unsigned char *tmodel_encode(const struct tmodel *m, uint64_t *total, uint64_t *coeff_off_out)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_meta(&pk, m);

	uint64_t meta_off = TMODEL_HEADER_BYTES;
	uint64_t dma_off = align_up(meta_off + sb.size);
	uint64_t cmp_off = align_up(dma_off + (uint64_t)m->n_dma * ISA_DMA_BYTES);
	uint64_t coeff_off = align_up(cmp_off + (uint64_t)m->n_cmp * ISA_CMP_BYTES);
	*total = align_up(coeff_off + (uint64_t)m->coeff_bytes);
	if (coeff_off_out)
		*coeff_off_out = coeff_off;
	unsigned char *f = xcalloc(*total, 1);
	memcpy(f, TMODEL_MAGIC, 8);
	put_u32(f + 8, TMODEL_VERSION);
	put_u32(f + 12, 0);
	put_u64(f + 16, meta_off);
	put_u64(f + 24, sb.size);
	put_u64(f + 32, dma_off);
	put_u64(f + 40, (uint64_t)m->n_dma);
	put_u64(f + 48, cmp_off);
	put_u64(f + 56, (uint64_t)m->n_cmp);
	put_u64(f + 64, coeff_off);
	put_u64(f + 72, (uint64_t)m->coeff_bytes);
	memcpy(f + meta_off, sb.data, sb.size);
	for (int i = 0; i < m->n_dma; i++)
		isa_dma_encode(&m->dma[i], f + dma_off + (uint64_t)i * ISA_DMA_BYTES);
	for (int i = 0; i < m->n_cmp; i++)
		isa_cmp_encode(&m->cmp[i], f + cmp_off + (uint64_t)i * ISA_CMP_BYTES);
	if (m->coeff_bytes)
		memcpy(f + coeff_off, m->coeff, (size_t)m->coeff_bytes);
	msgpack_sbuffer_destroy(&sb);
	return f;
}

int tmodel_write(const char *path, const struct tmodel *m)
{
	const char *shown = !path || !strcmp(path, "-") ? "<stdout>" : path;
	uint64_t total;
	unsigned char *f = tmodel_encode(m, &total, NULL);
	int rc = out_write_all(path, f, total);
	free(f);
	if (rc < 0)
		return err_prefix("'%s'", shown);
	return 0;
}

int tmodel_write_out(struct out_file *o, const struct tmodel *m)
{
	uint64_t total;
	unsigned char *f = tmodel_encode(m, &total, NULL);
	size_t n = fwrite(f, 1, total, o->fp);
	free(f);
	if (n != total)
		return err_set("cannot write '%s':", o->path ? o->path : "<stdout>");
	return 0;
}

/* ---- reading ---- */

static int corrupt(const char *file, const char *what)
{
	return err_set("'%s': corrupt tmodel: %s", file, what);
}

/* Bytes of a tensor of dtype DT and shape S[RANK], or -1 when they pass
 * TMODEL_MAX_BYTES (products computed without overflow). */
static int64_t shape_bytes(enum ir_dtype dt, int rank, const int64_t *s)
{
	int64_t n = (int64_t)dtype_size(dt);
	for (int i = 0; i < rank; i++)
		if (__builtin_mul_overflow(n, s[i], &n) || n > TMODEL_MAX_BYTES)
			return -1;
	return n;
}

/* One tensor entry.  A weight's [offset, bytes] must be its address in the
 * coefficient image and hold its whole value; an activation lies in the
 * activation region, or has address -1 (local memory only). */
static int read_tensor(struct tmodel *m, const char *file, const msgpack_object *o)
{
	if (o->type != MSGPACK_OBJECT_MAP)
		return corrupt(file, "tensor entry is not a map");
	char *name = NULL, *dts = NULL;
	int rank = -1, ok = 1, weight = 0;
	int64_t shape[IR_MAX_RANK] = { 0 }, addr = -1, woff = -1, wlen = -1, zp = 0;
	double scale = 0;
	for (uint32_t i = 0; i < o->via.map.size && ok; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		const msgpack_object *v = &kv->val;
		if (mp_key_is(kv, "name"))
			ok = mp_str(v, &name) == 0;
		else if (mp_key_is(kv, "dtype"))
			ok = mp_str(v, &dts) == 0;
		else if (mp_key_is(kv, "shape")) {
			ok = v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size <= IR_MAX_RANK;
			rank = ok ? (int)v->via.array.size : -1;
			for (int j = 0; ok && j < rank; j++)
				ok = mp_int(&v->via.array.ptr[j], &shape[j]) == 0 && shape[j] >= 0 &&
				     shape[j] < ((int64_t)1 << 40);
		} else if (mp_key_is(kv, "addr"))
			ok = mp_int(v, &addr) == 0 && addr >= -1;
		else if (mp_key_is(kv, "weight"))
			ok = weight = v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 2 &&
				      mp_int(&v->via.array.ptr[0], &woff) == 0 &&
				      mp_int(&v->via.array.ptr[1], &wlen) == 0;
		else if (mp_key_is(kv, "scale"))
			ok = mp_num(v, &scale) == 0;
		else if (mp_key_is(kv, "zero_point"))
			ok = mp_int(v, &zp) == 0 && zp >= INT32_MIN && zp <= INT32_MAX;
	}
	int dt = dts ? dtype_from_name(dts) : -1;
	free(dts);
	if (!ok || !name || dt < 0 || rank < 0) {
		free(name);
		return corrupt(file, "malformed tensor entry");
	}
	int64_t bytes = shape_bytes((enum ir_dtype)dt, rank, shape);
	int k = graph_add_tensor(m->g, name, (enum ir_dtype)dt, rank, shape);
	free(name);
	struct ir_tensor *t = &m->g->tensors[k];
	if (bytes < 0)
		return err_set("'%s': corrupt tmodel: tensor '%s' is larger than %lld bytes", file,
			       t->name, (long long)TMODEL_MAX_BYTES);
	t->addr = addr;
	t->scale = (float)scale;
	t->zero_point = (int)zp;
	if (weight) {
		if (wlen != bytes || woff < 0 || woff > m->coeff_bytes || wlen > m->coeff_bytes - woff)
			return err_set("'%s': corrupt tmodel: weight '%s' lies outside the coefficients",
				       file, t->name);
		if (addr != m->coeff_addr + woff)
			return err_set("'%s': corrupt tmodel: weight '%s' at address %lld, its data at "
				       "offset %lld of the coefficients at %lld", file, t->name,
				       (long long)addr, (long long)woff, (long long)m->coeff_addr);
		t->data = (unsigned char *)m->coeff + woff;
		t->nbytes = (size_t)wlen;
		t->owns_data = 0;
	} else if (addr >= 0 && (addr < m->neuron_addr || bytes > m->neuron_bytes ||
				 addr - m->neuron_addr > m->neuron_bytes - bytes)) {
		return err_set("'%s': corrupt tmodel: tensor '%s' (%lld bytes at %lld) lies outside "
			       "the activation region", file, t->name, (long long)bytes,
			       (long long)addr);
	}
	return 0;
}

static int read_layer(struct tmodel *m, const char *file, const msgpack_object *o)
{
	if (o->type != MSGPACK_OBJECT_MAP)
		return corrupt(file, "layer entry is not a map");
	if (ir_unpack_op(m->g, o, file, "tmodel", "layer") < 0)
		return -1;
	if (m->g->ops[m->g->n_ops - 1].n_out < 1)
		return corrupt(file, "malformed layer entry");
	return 0;
}

static int read_io(struct tmodel *m, const char *file, const msgpack_object *o,
		   int **idx, int *n)
{
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return corrupt(file, "inputs or outputs is not an array");
	*n = (int)o->via.array.size;
	*idx = xmalloc(sizeof(int) * (size_t)(*n + 1));
	for (int i = 0; i < *n; i++) {
		const msgpack_object *e = &o->via.array.ptr[i];
		int64_t t = -1;
		for (uint32_t j = 0; e->type == MSGPACK_OBJECT_MAP && j < e->via.map.size; j++)
			if (mp_key_is(&e->via.map.ptr[j], "tensor"))
				mp_int(&e->via.map.ptr[j].val, &t);
		if (t < 0 || t >= m->g->n_tensors)
			return corrupt(file, "input or output names no tensor");
		(*idx)[i] = (int)t;
	}
	return 0;
}

static int read_meta(struct tmodel *m, const char *file, const msgpack_object *root)
{
	if (root->type != MSGPACK_OBJECT_MAP)
		return corrupt(file, "description is not a map");
	const msgpack_object *tensors = NULL, *layers = NULL, *ins = NULL, *outs = NULL, *locs = NULL;
	int64_t coeff_bytes = -1;
	int ok = 1;
	char *mode = NULL;
	for (uint32_t i = 0; i < root->via.map.size && ok; i++) {
		const msgpack_object_kv *kv = &root->via.map.ptr[i];
		if (mp_key_is(kv, "name")) ok = mp_str(&kv->val, &m->name) == 0;
		else if (mp_key_is(kv, "chip")) ok = mp_str(&kv->val, &m->chip) == 0;
		else if (mp_key_is(kv, "mode")) ok = mp_str(&kv->val, &mode) == 0;
		else if (mp_key_is(kv, "producer")) ok = mp_str(&kv->val, &m->producer) == 0;
		else if (mp_key_is(kv, "coeff_addr")) ok = mp_int(&kv->val, &m->coeff_addr) == 0;
		else if (mp_key_is(kv, "coeff_bytes")) ok = mp_int(&kv->val, &coeff_bytes) == 0;
		else if (mp_key_is(kv, "neuron_addr")) ok = mp_int(&kv->val, &m->neuron_addr) == 0;
		else if (mp_key_is(kv, "neuron_bytes")) ok = mp_int(&kv->val, &m->neuron_bytes) == 0;
		else if (mp_key_is(kv, "tensors")) tensors = &kv->val;
		else if (mp_key_is(kv, "layers")) layers = &kv->val;
		else if (mp_key_is(kv, "inputs")) ins = &kv->val;
		else if (mp_key_is(kv, "outputs")) outs = &kv->val;
		else if (mp_key_is(kv, "locs")) locs = &kv->val;
	}
	int have_mode = mode != NULL;
	m->mode = have_mode ? mode_from_name(mode) : MODE_NONE;
	if (have_mode && m->mode == MODE_NONE) {
		err_set("'%s': corrupt tmodel: unknown mode '%s'", file, mode);
		free(mode);
		return -1;
	}
	free(mode);
	if (!ok || !m->chip || !have_mode || !tensors || !layers || !ins || !outs || !locs ||
	    tensors->type != MSGPACK_OBJECT_ARRAY || layers->type != MSGPACK_OBJECT_ARRAY ||
	    locs->type != MSGPACK_OBJECT_ARRAY || m->coeff_addr < 0 || m->neuron_addr < 0 ||
	    m->neuron_bytes < 0)
		return corrupt(file, "the description lacks a field or has a bad one");
	if (coeff_bytes != m->coeff_bytes)
		return err_set("'%s': corrupt tmodel: coeff_bytes %lld in the description, %lld in "
			       "the header", file, (long long)coeff_bytes, (long long)m->coeff_bytes);
	/* Bounded, the regions' ends cannot overflow. */
	if (m->coeff_addr > TMODEL_MAX_BYTES || m->neuron_addr > TMODEL_MAX_BYTES ||
	    m->neuron_bytes > TMODEL_MAX_BYTES)
		return err_set("'%s': corrupt tmodel: a DDR region lies past %lld bytes", file,
			       (long long)TMODEL_MAX_BYTES);
	if (m->coeff_bytes > 0 && m->neuron_bytes > 0 &&
	    m->coeff_addr < m->neuron_addr + m->neuron_bytes &&
	    m->neuron_addr < m->coeff_addr + m->coeff_bytes)
		return corrupt(file, "the coefficient and activation regions overlap");
	m->g->name = xstrdup(m->name ? m->name : "");
	m->g->chip = xstrdup(m->chip);
	m->g->mode = m->mode;
	m->g->coeff_bytes = m->coeff_bytes;
	m->g->neuron_bytes = m->neuron_bytes;
	for (uint32_t i = 0; i < tensors->via.array.size; i++)
		if (read_tensor(m, file, &tensors->via.array.ptr[i]) < 0)
			return -1;
	for (uint32_t i = 0; i < layers->via.array.size; i++)
		if (read_layer(m, file, &layers->via.array.ptr[i]) < 0)
			return -1;
	ir_subgraphs_follow(m->g);
	if (read_io(m, file, ins, &m->g->inputs, &m->g->n_inputs) < 0 ||
	    read_io(m, file, outs, &m->g->outputs, &m->g->n_outputs) < 0)
		return -1;
	if ((int64_t)locs->via.array.size != m->n_cmp)
		return corrupt(file, "debug locations do not match the compute commands");
	m->loc = xcalloc((size_t)m->n_cmp + 1, sizeof *m->loc);
	for (int i = 0; i < m->n_cmp; i++)
		if (mp_str(&locs->via.array.ptr[i], &m->loc[i]) < 0)
			return corrupt(file, "a debug location is not a string");
	return 0;
}

/* Each command's id, waits, layer and operand counts. */
static int check_streams(const struct tmodel *m, const char *file)
{
	for (int i = 0; i < m->n_dma; i++) {
		const struct isa_dma *d = &m->dma[i];
		if (d->id != (uint32_t)i + 1 || d->wait > (uint32_t)m->n_cmp)
			return err_set("'%s': corrupt tmodel: dma command %d has id %u, waits for %u",
				       file, i + 1, d->id, d->wait);
	}
	for (int i = 0; i < m->n_cmp; i++) {
		const struct isa_cmp *c = &m->cmp[i];
		if (c->id != (uint32_t)i + 1 || c->wait > (uint32_t)m->n_dma)
			return err_set("'%s': corrupt tmodel: compute command %d has id %u, waits for %u",
				       file, i + 1, c->id, c->wait);
		if (c->layer >= (uint32_t)m->g->n_ops)
			return err_set("'%s': corrupt tmodel: compute command %u names layer %u of %d",
				       file, c->id, c->layer, m->g->n_ops);
		const struct ir_op *op = &m->g->ops[c->layer];
		int host = op->place == PLACE_HOST;
		if (c->opcode != (int)op->type || host != isa_cmp_host(c) ||
		    (!host && (c->n_in != op->n_in || c->n_out != op->n_out)))
			return err_set("'%s': corrupt tmodel: compute command %u does not match layer '%s'",
				       file, c->id, op->name);
	}
	return 0;
}

int tmodel_check_requant(const struct ir_op *op, enum ir_dtype out_dtype,
			 const struct view *in, int n_in)
{
	if (!op_has(op->type, OPF_REQUANT_CHAN) || !quant_is_q(out_dtype))
		return 0;
	/* As quant_channel_params: the split form when multiplier and shift
	 * are there, else the coefficient tensor; STRIDE apart, from P. */
	const int32_t *mult, *shift;
	int64_t n, stride;
	if (n_in > 4 && in[3].data && in[4].data) {
		if (in[3].dtype != DT_I32 || in[4].dtype != DT_I32 ||
		    view_numel(&in[3]) != view_numel(&in[4]))
			return 0;
		mult = in[3].data;
		shift = in[4].data;
		n = view_numel(&in[3]);
		stride = 1;
	} else if (n_in > 2 && in[2].data && in[2].dtype == DT_I32 && in[2].rank == 2 &&
		   in[2].shape[1] == 3) {
		mult = (const int32_t *)in[2].data + 1;
		shift = (const int32_t *)in[2].data + 2;
		n = in[2].shape[0];
		stride = 3;
	} else {
		return 0;
	}
	for (int64_t c = 0; c < n; c++) {
		int32_t mv = mult[c * stride], sv = shift[c * stride];
		if (mv < 0)
			return err_set("layer '%s' (%s): requantisation multiplier %d of channel "
				       "%lld is negative", op->name, op_name(op->type), (int)mv,
				       (long long)c);
		if (sv < 0 || sv > QUANT_MAX_SHIFT)
			return err_set("layer '%s' (%s): requantisation shift %d of channel %lld "
				       "outside [0, %d]", op->name, op_name(op->type), (int)sv,
				       (long long)c, QUANT_MAX_SHIFT);
	}
	return 0;
}

int tmodel_check_requant_graph(const struct ir_graph *g)
{
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

/* The requantisation parameters in the coefficients are in range, for
 * each layer (tmodel_check_requant). */
static int check_requant(const struct tmodel *m, const char *file)
{
	if (tmodel_check_requant_graph(m->g) < 0)
		return err_prefix("'%s': corrupt tmodel", file);
	return 0;
}

int tmodel_read(const char *path, struct tmodel **out)
{
	void *buf;
	size_t len;
	*out = NULL;
	if (file_read_all(path, &buf, &len) < 0)
		return -1;
	return tmodel_read_buffer(path, buf, len, out);
}

int tmodel_read_buffer(const char *path, void *buf, size_t len, struct tmodel **out)
{
	const char *file = !path || !strcmp(path, "-") ? "<stdin>" : path;
	*out = NULL;
	if (tmodel_read_image(file, buf, len, NULL, 0, out) < 0) {
		free(buf);
		return -1;
	}
	(*out)->buf = buf;
	(*out)->borrowed = 0;
	return 0;
}

int tmodel_read_image(const char *file, const void *buf, size_t len, const void *coeff,
		      uint64_t coeff_bytes, struct tmodel **out)
{
	*out = NULL;
	const unsigned char *p = buf;
	if (len < TMODEL_HEADER_BYTES || memcmp(p, TMODEL_MAGIC, 8)) {
		int magic = len >= 8 && !memcmp(p, TMODEL_MAGIC, 8);
		const char *hint = file_kind_hint(file_kind_of(p, len, file), FILE_TMODEL);
		if (len == 0)
			return err_set("'%s': empty input, expected a tmodel file", file);
		if (magic)
			return err_set("'%s': truncated tmodel (%zu bytes)", file, len);
		return err_set("'%s': not a tmodel file (bad magic)%s", file, hint);
	}
	if (get_u32(p + 8) != TMODEL_VERSION)
		return err_set("'%s': tmodel version %u, this tpuc reads version %d", file,
			       get_u32(p + 8), TMODEL_VERSION);
	uint64_t meta_off = get_u64(p + 16), meta_len = get_u64(p + 24);
	uint64_t dma_off = get_u64(p + 32), n_dma = get_u64(p + 40);
	uint64_t cmp_off = get_u64(p + 48), n_cmp = get_u64(p + 56);
	uint64_t coeff_off = get_u64(p + 64), coeff_len = get_u64(p + 72);
	/* An image without its coefficients ends where they would begin. */
	int outside = coeff && (coeff_off != len || coeff_len != coeff_bytes);
	if (meta_off > len || meta_len > len - meta_off || dma_off > len ||
	    n_dma > (len - dma_off) / ISA_DMA_BYTES || cmp_off > len ||
	    n_cmp > (len - cmp_off) / ISA_CMP_BYTES || coeff_off > len ||
	    (!coeff && coeff_len > len - coeff_off) || outside || coeff_off % ALIGN ||
	    n_dma >= (1u << 24) || n_cmp >= (1u << 24))
		return err_set("'%s': truncated tmodel (%zu bytes)", file, len);
	/* Each section inside the file (above), so these sums cannot overflow. */
	if (meta_off < TMODEL_HEADER_BYTES || meta_off + meta_len > dma_off ||
	    dma_off + n_dma * ISA_DMA_BYTES > cmp_off || cmp_off + n_cmp * ISA_CMP_BYTES > coeff_off ||
	    coeff_len > (uint64_t)TMODEL_MAX_BYTES)
		return err_set("'%s': corrupt tmodel: sections overlap or are out of order", file);

	struct tmodel *m = xcalloc(1, sizeof *m);
	m->borrowed = 1;
	m->coeff = coeff ? (void *)coeff : (unsigned char *)buf + coeff_off;
	m->coeff_bytes = (int64_t)coeff_len;
	m->n_dma = (int)n_dma;
	m->n_cmp = (int)n_cmp;
	m->dma = xmalloc(sizeof *m->dma * (n_dma + 1));
	m->cmp = xmalloc(sizeof *m->cmp * (n_cmp + 1));
	m->g = graph_new(DIALECT_TPU, STAGE_ADDRESSED);
	int rc = -1;
	for (uint64_t i = 0; i < n_dma; i++)
		if (isa_dma_decode(p + dma_off + i * ISA_DMA_BYTES, &m->dma[i]) < 0) {
			err_prefix("'%s': corrupt tmodel", file);
			goto done;
		}
	for (uint64_t i = 0; i < n_cmp; i++)
		if (isa_cmp_decode(p + cmp_off + i * ISA_CMP_BYTES, &m->cmp[i]) < 0) {
			err_prefix("'%s': corrupt tmodel", file);
			goto done;
		}

	msgpack_unpacked res;
	msgpack_unpacked_init(&res);
	size_t off = 0;
	int huge = limit_check_msgpack(p + meta_off, meta_len) < 0;
	int ret = huge ? MSGPACK_UNPACK_PARSE_ERROR :
		  msgpack_unpack_next(&res, (const char *)p + meta_off, meta_len, &off);
	if (huge)
		err_prefix("'%s': corrupt tmodel", file);
	else if (ret != MSGPACK_UNPACK_SUCCESS || off != meta_len)
		corrupt(file, "the description does not decode");
	else if (read_meta(m, file, &res.data) == 0 && check_streams(m, file) == 0)
		rc = 0;
	msgpack_unpacked_destroy(&res);
	/* The layer table is a graph as ir_read checks one: structure, then
	 * each op against its definition (stored shapes and dtypes those its
	 * inputs and attributes give). */
	if (rc == 0 && (ir_verify(m->g) < 0 || ir_verify_ops(m->g) < 0)) {
		err_prefix("'%s': corrupt tmodel: layer table", file);
		rc = -1;
	}
	if (rc == 0 && check_requant(m, file) < 0)
		rc = -1;
done:
	if (rc < 0)
		tmodel_free(m);
	else
		*out = m;
	return rc;
}

void tmodel_free(struct tmodel *m)
{
	if (!m)
		return;
	FREE_ALL(m->name, m->chip, m->producer, m->dma, m->cmp);
	if (m->loc)
		for (int i = 0; i < m->n_cmp; i++)
			free(m->loc[i]);
	free(m->loc);
	graph_free(m->g);
	if (!m->borrowed) {
		if (!m->buf)
			free(m->coeff);   /* built in memory (codegen): owned */
		free(m->buf);
	}
	free(m);
}
