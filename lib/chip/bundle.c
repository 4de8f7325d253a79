/* bundle.c - several static shapes of one model in one file
 * (lib/chip/bundle.h, formats/tpuc-tmodel.5 "Bundles of static shapes").
 */
#include "chip/bundle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/bytes.h"

#define ALIGN 64

static uint64_t align_up(uint64_t n) { return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1); }

static const char *shown(const char *path)
{
	return !path || !strcmp(path, "-") ? "<stdin>" : path;
}

/* Append to BUF (SIZE bytes, *AT used) as printf would, cut at SIZE. */
__attribute__((format(printf, 4, 5)))
static void put(char *buf, size_t size, size_t *at, const char *fmt, ...)
{
	if (*at >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *at, size - *at, fmt, ap);
	va_end(ap);
	*at = n < 0 ? size : *at + (size_t)n < size ? *at + (size_t)n : size;
}

/* "[1,3,224,224]" */
static void put_shape(char *buf, size_t size, size_t *at, int rank, const int64_t *shape)
{
	put(buf, size, at, "[");
	for (int d = 0; d < rank; d++)
		put(buf, size, at, "%s%lld", d ? "," : "", (long long)shape[d]);
	put(buf, size, at, "]");
}

void bundle_shapes(const struct bundle *b, int s, char *buf, size_t size)
{
	const struct ir_graph *g = b->stage[s]->g;
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < g->n_inputs; i++) {
		const struct ir_tensor *t = &g->tensors[g->inputs[i]];
		put(buf, size, &at, "%s%s ", i ? ", " : "", t->name);
		put_shape(buf, size, &at, t->rank, t->shape);
	}
}

static int same_shape(int ra, const int64_t *a, int rb, const int64_t *b)
{
	return ra == rb && !memcmp(a, b, sizeof *a * (size_t)ra);
}

/* 1 when graph inputs or outputs (OUTPUTS) I of A and B differ in name or dtype. */
static int io_differs(const struct ir_graph *a, const struct ir_graph *b, int outputs, int i)
{
	const struct ir_tensor *x = &a->tensors[(outputs ? a->outputs : a->inputs)[i]];
	const struct ir_tensor *y = &b->tensors[(outputs ? b->outputs : b->inputs)[i]];
	return strcmp(x->name, y->name) || x->dtype != y->dtype;
}

int bundle_check(struct tmodel *const *m, int n, const char *const *names)
{
	char stage[64], other[64];
	for (int s = 1; s < n; s++) {
		const struct ir_graph *a = m[0]->g, *b = m[s]->g;
		const char *what = names ? names[s] : stage;
		snprintf(stage, sizeof stage, "stage %d", s);
		if (strcmp(m[0]->chip, m[s]->chip) || m[0]->mode != m[s]->mode)
			return err_set("'%s': %s %s, the first stage %s %s: one bundle holds one chip "
				       "and mode", what, m[s]->chip, mode_name(m[s]->mode), m[0]->chip,
				       mode_name(m[0]->mode));
		if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
			return err_set("'%s': %d inputs and %d outputs, the first stage %d and %d",
				       what, b->n_inputs, b->n_outputs, a->n_inputs, a->n_outputs);
		for (int i = 0; i < a->n_inputs + a->n_outputs; i++) {
			int out = i >= a->n_inputs, k = out ? i - a->n_inputs : i;
			if (io_differs(a, b, out, k))
				return err_set("'%s': %s %d is '%s' (%s), in the first stage '%s' (%s)",
					       what, out ? "output" : "input", k,
					       b->tensors[(out ? b->outputs : b->inputs)[k]].name,
					       dtype_name(b->tensors[(out ? b->outputs : b->inputs)[k]].dtype),
					       a->tensors[(out ? a->outputs : a->inputs)[k]].name,
					       dtype_name(a->tensors[(out ? a->outputs : a->inputs)[k]].dtype));
		}
		for (int r = 0; r < s; r++) {
			const struct ir_graph *c = m[r]->g;
			int same = 1;
			for (int i = 0; i < b->n_inputs && same; i++) {
				const struct ir_tensor *x = &b->tensors[b->inputs[i]];
				const struct ir_tensor *y = &c->tensors[c->inputs[i]];
				same = same_shape(x->rank, x->shape, y->rank, y->shape);
			}
			snprintf(other, sizeof other, "stage %d", r);
			if (same)
				return err_set("'%s': its input shapes are those of '%s': each stage of "
					       "a bundle has shapes of its own", what,
					       names ? names[r] : other);
		}
	}
	return 0;
}

/* ---- reading ---- */

int bundle_read_buffer(const char *path, void *buf, size_t len, struct bundle *b)
{
	const char *file = shown(path);
	const unsigned char *p = buf;
	memset(b, 0, sizeof *b);
	if (len < 8 || memcmp(p, BUNDLE_MAGIC, 8)) {
		struct tmodel *m;
		if (tmodel_read_buffer(path, buf, len, &m) < 0)
			return -1;
		b->n = 1;
		b->stage = xmalloc(sizeof *b->stage);
		b->stage[0] = m;
		return 0;
	}
	b->buf = buf;
	if (len < BUNDLE_HEADER_BYTES) {
		bundle_free(b);
		return err_set("'%s': truncated bundle (%zu bytes)", file, len);
	}
	if (get_u32(p + 8) != BUNDLE_VERSION) {
		uint32_t v = get_u32(p + 8);
		bundle_free(b);
		return err_set("'%s': bundle version %u, this tpuc reads version %d", file, v,
			       BUNDLE_VERSION);
	}
	uint32_t n = get_u32(p + 12);
	if (n < 1) {
		bundle_free(b);
		return err_set("'%s': corrupt bundle: no stages", file);
	}
	if (n > (len - BUNDLE_HEADER_BYTES) / BUNDLE_ENTRY_BYTES) {
		bundle_free(b);
		return err_set("'%s': truncated bundle (%zu bytes for %u stages)", file, len, n);
	}
	b->stage = xcalloc(n, sizeof *b->stage);
	uint64_t end = BUNDLE_HEADER_BYTES + (uint64_t)n * BUNDLE_ENTRY_BYTES;
	char name[1100];
	for (uint32_t s = 0; s < n; s++) {
		const unsigned char *e = p + BUNDLE_HEADER_BYTES + (size_t)s * BUNDLE_ENTRY_BYTES;
		uint64_t off = get_u64(e), bytes = get_u64(e + 8);
		uint32_t cs = get_u32(e + 16);
		int rc;
		snprintf(name, sizeof name, "%s, stage %u", file, s);
		if (off > len || bytes > len - off)
			rc = err_set("'%s': truncated bundle (%zu bytes)", file, len);
		else if (off % ALIGN || off < end)
			rc = err_set("'%s': corrupt bundle: stage %u overlaps what comes before it",
				     file, s);
		else if (cs > s || (cs < s && get_u32(p + BUNDLE_HEADER_BYTES +
						     (size_t)cs * BUNDLE_ENTRY_BYTES + 16) != cs))
			rc = err_set("'%s': corrupt bundle: stage %u takes the coefficients of stage "
				     "%u, which holds none of its own", file, s, cs);
		else if (cs == s)
			rc = tmodel_read_image(name, p + off, (size_t)bytes, NULL, 0, &b->stage[s]);
		else
			rc = tmodel_read_image(name, p + off, (size_t)bytes, b->stage[cs]->coeff,
					       (uint64_t)b->stage[cs]->coeff_bytes, &b->stage[s]);
		if (rc < 0) {
			b->n = (int)s;
			bundle_free(b);
			return -1;
		}
		end = off + bytes;
	}
	b->n = (int)n;
	if (bundle_check(b->stage, b->n, NULL) < 0) {
		err_prefix("'%s': corrupt bundle", file);
		bundle_free(b);
		return -1;
	}
	return 0;
}

int bundle_read(const char *path, struct bundle *b)
{
	void *buf;
	size_t len;
	memset(b, 0, sizeof *b);
	if (file_read_all(path, &buf, &len) < 0)
		return -1;
	return bundle_read_buffer(path, buf, len, b);
}

void bundle_free(struct bundle *b)
{
	for (int s = 0; s < b->n; s++)
		tmodel_free(b->stage[s]);
	free(b->stage);
	free(b->buf);
	memset(b, 0, sizeof *b);
}

/* ---- writing ---- */

unsigned char *bundle_encode(struct tmodel *const *m, int n, uint64_t *size)
{
	if (n == 1)
		return tmodel_encode(m[0], size, NULL);
	unsigned char **img = xcalloc((size_t)n, sizeof *img);
	uint64_t *bytes = xcalloc((size_t)n, sizeof *bytes);
	uint32_t *cs = xcalloc((size_t)n, sizeof *cs);
	uint64_t total = align_up(BUNDLE_HEADER_BYTES + (uint64_t)n * BUNDLE_ENTRY_BYTES);
	for (int s = 0; s < n; s++) {
		uint64_t coeff_off;
		img[s] = tmodel_encode(m[s], &bytes[s], &coeff_off);
		cs[s] = (uint32_t)s;
		/* the coefficients of an earlier stage, byte for byte: left out */
		for (int r = 0; r < s && m[s]->coeff_bytes > 0; r++)
			if (cs[r] == (uint32_t)r && m[r]->coeff_bytes == m[s]->coeff_bytes &&
			    !memcmp(m[r]->coeff, m[s]->coeff, (size_t)m[s]->coeff_bytes)) {
				cs[s] = (uint32_t)r;
				bytes[s] = coeff_off;
				break;
			}
		total += align_up(bytes[s]);
	}
	unsigned char *f = xcalloc(total, 1);
	memcpy(f, BUNDLE_MAGIC, 8);
	put_u32(f + 8, BUNDLE_VERSION);
	put_u32(f + 12, (uint32_t)n);
	uint64_t off = align_up(BUNDLE_HEADER_BYTES + (uint64_t)n * BUNDLE_ENTRY_BYTES);
	for (int s = 0; s < n; s++) {
		unsigned char *e = f + BUNDLE_HEADER_BYTES + (size_t)s * BUNDLE_ENTRY_BYTES;
		put_u64(e, off);
		put_u64(e + 8, bytes[s]);
		put_u32(e + 16, cs[s]);
		memcpy(f + off, img[s], bytes[s]);
		off += align_up(bytes[s]);
		free(img[s]);
	}
	FREE_ALL(img, bytes, cs);
	*size = total;
	return f;
}

int bundle_write(const char *path, struct tmodel *const *m, int n)
{
	if (bundle_check(m, n, NULL) < 0)
		return -1;
	uint64_t size;
	unsigned char *f = bundle_encode(m, n, &size);
	int rc = out_write_all(path, f, size);
	free(f);
	if (rc < 0)
		return err_prefix("'%s'", !path || !strcmp(path, "-") ? "<stdout>" : path);
	return 0;
}

/* ---- running ---- */

int bundle_pick(const struct bundle *b, const struct npz *in, const char *file)
{
	if (b->n == 1)
		return 0;
	for (int s = 0; s < b->n; s++) {
		const struct ir_graph *g = b->stage[s]->g;
		int fits = 1;
		for (int i = 0; i < g->n_inputs && fits; i++) {
			const struct ir_tensor *t = &g->tensors[g->inputs[i]];
			const struct npz_array *a = npz_find(in, t->name);
			fits = a && same_shape(a->rank, a->shape, t->rank, t->shape);
		}
		if (fits)
			return s;
	}
	/* what was given, then what the stages take */
	size_t size = 4096, at = 0;
	char *msg = xmalloc(size);
	const struct ir_graph *g = b->stage[0]->g;
	msg[0] = 0;
	for (int i = 0; i < g->n_inputs; i++) {
		const char *name = g->tensors[g->inputs[i]].name;
		const struct npz_array *a = npz_find(in, name);
		put(msg, size, &at, "%s%s ", i ? ", " : "", name);
		if (a)
			put_shape(msg, size, &at, a->rank, a->shape);
		else
			put(msg, size, &at, "missing");
	}
	for (int s = 0; s < b->n && at < size; s++) {
		put(msg, size, &at, s ? " or " : "; the model takes ");
		if (at < size)
			bundle_shapes(b, s, msg + at, size - at);
		at += strlen(msg + at);
	}
	err_set("'%s': no stage of the model takes these input shapes: %s", file, msg);
	free(msg);
	return -1;
}
