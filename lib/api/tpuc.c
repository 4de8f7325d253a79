/* tpuc.c - the embeddable runtime (lib/api/tpuc.h): a .tmodel, its I/O
 * and runs on the simulator, through the same library calls as tpu-sim,
 * so that a program gets tpu-sim's results bit for bit.
 */
#include "api/tpuc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "chip/chip.h"
#include "ir/ir.h"
#include "ir/npz.h"
#include "sim/sim.h"
#include "chip/bundle.h"
#include "chip/tmodel.h"
#include "ir/version.h"

_Static_assert(TPUC_BOOL == (int)DT_BOOL, "tpuc_dtype follows enum ir_dtype up to bool");
/* The chip's dtypes: the IR's Top-only ones (f64, u16, u32, u64) come after
 * bool and never reach a .tmodel. */
#define TPUC_DTYPES ((unsigned)TPUC_BOOL + 1)
_Static_assert(TPUC_MAX_RANK == IR_MAX_RANK, "TPUC_MAX_RANK is IR_MAX_RANK");

static _Thread_local char last_error[1024];

/* Keep the library's message (err_msg) as this thread's error. */
static void keep_error(void)
{
	snprintf(last_error, sizeof last_error, "%s", err_msg());
}

/* Set this thread's error; returns -1. */
__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
	return -1;
}

struct tpuc_model {
	char *path;                 /* as messages show it */
	struct bundle b;            /* every stage (one for a plain .tmodel) */
	int stage;                  /* the stage selected */
	struct tmodel *m;           /* b.stage[stage] */
	const struct chip *chip;
	int n_in, n_out;            /* of the stage selected */
	tpuc_tensor *in, *out;      /* desc[stage]'s inputs and outputs */
	tpuc_tensor **desc;         /* per stage: its inputs, then its outputs;
				     * made once, so that a tpuc_tensor stays
				     * valid while the model is open */
	struct npz inputs;          /* arrays set, by input name */
	struct npz outputs;         /* of the last run */
	char *have;                 /* per input: set */
	int ran;
	int64_t cycles;
	double seconds;
};

const char *tpuc_version(void) { return TPUC_VERSION; }
const char *tpuc_last_error(void) { return last_error; }

const char *tpuc_dtype_name(tpuc_dtype t)
{
	return (unsigned)t < TPUC_DTYPES ? dtype_name((enum ir_dtype)t) : NULL;
}

size_t tpuc_dtype_size(tpuc_dtype t)
{
	return (unsigned)t < TPUC_DTYPES ? dtype_size((enum ir_dtype)t) : 0;
}

static void describe(tpuc_tensor *d, const struct ir_tensor *t)
{
	d->name = t->name;
	d->dtype = (tpuc_dtype)t->dtype;
	d->rank = t->rank;
	memcpy(d->shape, t->shape, sizeof d->shape[0] * (size_t)t->rank);
	d->count = (size_t)tensor_numel(t);
	d->scale = t->scale;
	d->zero_point = t->zero_point;
}

/* Select stage S of M's bundle: its inputs and outputs, no input set. */
static void use_stage(tpuc_model *mm, int s)
{
	mm->stage = s;
	mm->m = mm->b.stage[s];
	const struct ir_graph *g = mm->m->g;
	free(mm->have);
	mm->n_in = g->n_inputs;
	mm->n_out = g->n_outputs;
	mm->in = mm->desc[s];
	mm->out = mm->desc[s] + mm->n_in;
	mm->have = xcalloc((size_t)mm->n_in + 1, 1);
	npz_free(&mm->inputs);
	npz_free(&mm->outputs);
	mm->ran = 0;
	mm->cycles = -1;
	mm->seconds = -1;
}

/* Describe every stage of MM's bundle (mm->desc). */
static void describe_stages(tpuc_model *mm)
{
	mm->desc = xcalloc((size_t)mm->b.n, sizeof *mm->desc);
	for (int s = 0; s < mm->b.n; s++) {
		const struct ir_graph *g = mm->b.stage[s]->g;
		mm->desc[s] = xcalloc((size_t)(g->n_inputs + g->n_outputs) + 1, sizeof **mm->desc);
		for (int i = 0; i < g->n_inputs; i++)
			describe(&mm->desc[s][i], &g->tensors[g->inputs[i]]);
		for (int i = 0; i < g->n_outputs; i++)
			describe(&mm->desc[s][g->n_inputs + i], &g->tensors[g->outputs[i]]);
	}
}

/* The model around B, read from PATH; NULL (and B freed) on failure. */
static tpuc_model *wrap(struct bundle *b, const char *path)
{
	const struct chip *chip = chip_find(b->stage[0]->chip);
	if (!chip) {
		fail("'%s': unknown chip '%s'", path, b->stage[0]->chip);
		bundle_free(b);
		return NULL;
	}
	tpuc_model *mm = xcalloc(1, sizeof *mm);
	mm->path = xstrdup(path);
	mm->b = *b;
	mm->chip = chip;
	describe_stages(mm);
	use_stage(mm, 0);
	return mm;
}

tpuc_model *tpuc_open(const char *path)
{
	struct bundle b;
	if (!path)
		return fail("tpuc_open: no path"), NULL;
	if (bundle_read(path, &b) < 0)
		return keep_error(), NULL;
	return wrap(&b, !strcmp(path, "-") ? "<stdin>" : path);
}

tpuc_model *tpuc_open_memory(const void *data, size_t size)
{
	struct bundle b;
	if (!data && size)
		return fail("tpuc_open_memory: no data"), NULL;
	void *buf = xaligned(size ? size : 1);
	if (size)
		memcpy(buf, data, size);
	if (bundle_read_buffer("<memory>", buf, size, &b) < 0)
		return keep_error(), NULL;
	return wrap(&b, "<memory>");
}

void tpuc_close(tpuc_model *m)
{
	if (!m)
		return;
	npz_free(&m->inputs);
	npz_free(&m->outputs);
	for (int s = 0; s < m->b.n; s++)
		free(m->desc[s]);
	bundle_free(&m->b);
	FREE_ALL(m->desc, m->have, m->path, m);
}

int tpuc_num_stages(const tpuc_model *m) { return m->b.n; }
int tpuc_stage(const tpuc_model *m) { return m->stage; }

int tpuc_select_stage(tpuc_model *m, int s)
{
	if (s < 0 || s >= m->b.n)
		return fail("'%s': no stage %d (the model holds %d)", m->path, s, m->b.n);
	use_stage(m, s);
	return 0;
}

const char *tpuc_model_name(const tpuc_model *m) { return m->m->name ? m->m->name : ""; }
const char *tpuc_model_chip(const tpuc_model *m) { return m->m->chip; }
const char *tpuc_model_mode(const tpuc_model *m) { return mode_name(m->m->mode); }
int tpuc_num_inputs(const tpuc_model *m) { return m->n_in; }
int tpuc_num_outputs(const tpuc_model *m) { return m->n_out; }

const tpuc_tensor *tpuc_input(const tpuc_model *m, int i)
{
	if (i < 0 || i >= m->n_in)
		return fail("'%s': no input %d (the model has %d)", m->path, i, m->n_in), NULL;
	return &m->in[i];
}

const tpuc_tensor *tpuc_output(const tpuc_model *m, int i)
{
	if (i < 0 || i >= m->n_out)
		return fail("'%s': no output %d (the model has %d)", m->path, i, m->n_out), NULL;
	return &m->out[i];
}

static int find(const tpuc_tensor *t, int n, const char *name)
{
	for (int i = 0; i < n && name; i++)
		if (!strcmp(t[i].name, name))
			return i;
	return -1;
}

int tpuc_input_index(const tpuc_model *m, const char *name)
{
	int i = find(m->in, m->n_in, name);
	return i < 0 ? fail("'%s': no input called '%s'", m->path, name ? name : "") : i;
}

int tpuc_output_index(const tpuc_model *m, const char *name)
{
	int i = find(m->out, m->n_out, name);
	return i < 0 ? fail("'%s': no output called '%s'", m->path, name ? name : "") : i;
}

/* Rebuild the input archive with array I replaced: npz has no removal. */
static void replace_input(tpuc_model *m, int i, enum ir_dtype dt, const void *data)
{
	struct npz z = { 0 };
	for (int k = 0; k < m->inputs.n; k++) {
		const struct npz_array *a = &m->inputs.a[k];
		if (strcmp(a->name, m->in[i].name))
			npz_add(&z, a->name, a->dtype, a->rank, a->shape, a->data);
	}
	npz_add(&z, m->in[i].name, dt, m->in[i].rank, m->in[i].shape, data);
	npz_free(&m->inputs);
	m->inputs = z;
}

int tpuc_set_input(tpuc_model *m, int i, tpuc_dtype dtype, const void *data, size_t count)
{
	if (i < 0 || i >= m->n_in)
		return fail("'%s': no input %d (the model has %d)", m->path, i, m->n_in);
	const tpuc_tensor *t = &m->in[i];
	if ((unsigned)dtype >= TPUC_DTYPES)
		return fail("'%s': input '%s': bad dtype %d", m->path, t->name, (int)dtype);
	if (count != t->count)
		return fail("'%s': input '%s': %zu elements given, it holds %zu", m->path, t->name,
			    count, t->count);
	if (!data && count)
		return fail("'%s': input '%s': no data", m->path, t->name);
	replace_input(m, i, (enum ir_dtype)dtype, data);
	m->have[i] = 1;
	return 0;
}

int tpuc_run(tpuc_model *m)
{
	for (int i = 0; i < m->n_in; i++)
		if (!m->have[i])
			return fail("'%s': input '%s' not set (tpuc_set_input)", m->path, m->in[i].name);
	struct sim_stats st = { 0 };
	npz_free(&m->outputs);
	m->ran = 0;
	if (sim_run(m->m, m->chip, m->path, &m->inputs, "<inputs>", &m->outputs, &st, 0) < 0) {
		keep_error();
		sim_stats_free(&st);
		npz_free(&m->outputs);
		return -1;
	}
	m->cycles = st.cycles;
	m->seconds = st.seconds;
	m->ran = 1;
	sim_stats_free(&st);
	return 0;
}

const float *tpuc_output_data(const tpuc_model *m, int i)
{
	if (i < 0 || i >= m->n_out)
		return fail("'%s': no output %d (the model has %d)", m->path, i, m->n_out), NULL;
	if (!m->ran)
		return fail("'%s': no run yet (tpuc_run)", m->path), NULL;
	const struct npz_array *a = npz_find(&m->outputs, m->out[i].name);
	if (!a || a->dtype != DT_F32)
		return fail("'%s': output '%s' missing from the run", m->path, m->out[i].name), NULL;
	return a->data;
}

int tpuc_get_output(const tpuc_model *m, int i, float *dst, size_t count)
{
	const float *v = tpuc_output_data(m, i);
	if (!v)
		return -1;
	if (count != m->out[i].count)
		return fail("'%s': output '%s': room for %zu elements, it holds %zu", m->path,
			    m->out[i].name, count, m->out[i].count);
	memcpy(dst, v, count * sizeof *dst);
	return 0;
}

int64_t tpuc_cycles(const tpuc_model *m) { return m->ran ? m->cycles : -1; }
double tpuc_seconds(const tpuc_model *m) { return m->ran ? m->seconds : -1; }

/* ---- .npz ---- */

struct tpuc_npz {
	struct npz z;
	char *path;       /* as messages show it; "<new>" for tpuc_npz_new */
};

/* Arrays of the IR's Top-only dtypes (numpy's f64 and wide unsigned
 * integers) as the chip's: f32 and i64, as tpu-sim takes them. */
static void chip_dtypes(struct npz *z)
{
	int other = 0;
	for (int i = 0; i < z->n; i++)
		other |= (unsigned)z->a[i].dtype >= TPUC_DTYPES;
	if (!other)
		return;
	struct npz c = { 0 };
	for (int i = 0; i < z->n; i++) {
		const struct npz_array *a = &z->a[i];
		if ((unsigned)a->dtype < TPUC_DTYPES) {
			npz_add(&c, a->name, a->dtype, a->rank, a->shape, a->data);
			continue;
		}
		enum ir_dtype to = dtype_is_float(a->dtype) ? DT_F32 : DT_I64;
		int64_t n = (int64_t)(a->nbytes / dtype_size(a->dtype));
		void *v = xmalloc(dtype_size(to) * (size_t)(n + 1));
		dtype_convert(v, to, a->data, a->dtype, n);
		npz_add(&c, a->name, to, a->rank, a->shape, v);
		free(v);
	}
	/* the members npz_read left out stay listed */
	c.n_skipped = z->n_skipped;
	c.cap_skipped = z->cap_skipped;
	c.skipped = z->skipped;
	z->n_skipped = z->cap_skipped = 0;
	z->skipped = NULL;
	npz_free(z);
	*z = c;
}

tpuc_npz *tpuc_npz_load(const char *path)
{
	tpuc_npz *z = xcalloc(1, sizeof *z);
	if (!path) {
		free(z);
		return fail("tpuc_npz_load: no path"), NULL;
	}
	if (npz_read(path, &z->z) < 0) {
		keep_error();
		free(z);
		return NULL;
	}
	z->path = xstrdup(strcmp(path, "-") ? path : "<stdin>");
	chip_dtypes(&z->z);
	return z;
}

tpuc_npz *tpuc_npz_new(void)
{
	tpuc_npz *z = xcalloc(1, sizeof *z);
	z->path = xstrdup("<new>");
	return z;
}

void tpuc_npz_free(tpuc_npz *z)
{
	if (z) {
		npz_free(&z->z);
		free(z->path);
		free(z);
	}
}

int tpuc_npz_count(const tpuc_npz *z) { return z->z.n; }

int tpuc_npz_get(const tpuc_npz *z, int i, const char **name, tpuc_dtype *dtype, int *rank,
		 const int64_t **shape, const void **data, size_t *count)
{
	if (i < 0 || i >= z->z.n)
		return fail("'%s': no array %d (the archive holds %d)", z->path, i, z->z.n);
	const struct npz_array *a = &z->z.a[i];
	if (name) *name = a->name;
	if (dtype) *dtype = (tpuc_dtype)a->dtype;
	if (rank) *rank = a->rank;
	if (shape) *shape = a->shape;
	if (data) *data = a->data;
	if (count) *count = (size_t)npz_numel(a);
	return 0;
}

int tpuc_npz_index(const tpuc_npz *z, const char *name)
{
	for (int i = 0; i < z->z.n && name; i++)
		if (!strcmp(z->z.a[i].name, name))
			return i;
	npz_missing(&z->z, z->path, name ? name : "", "name");
	return keep_error(), -1;
}

int tpuc_npz_add(tpuc_npz *z, const char *name, tpuc_dtype dtype, int rank,
		 const int64_t *shape, const void *data)
{
	if (!name)
		return fail("'%s': tpuc_npz_add: no name", z->path);
	if ((unsigned)dtype >= TPUC_DTYPES)
		return fail("'%s': array '%s': bad dtype %d", z->path, name, (int)dtype);
	if (!npz_add(&z->z, name, (enum ir_dtype)dtype, rank, shape, data)) {
		err_prefix("'%s'", z->path);
		return keep_error(), -1;
	}
	return 0;
}

int tpuc_npz_save(const tpuc_npz *z, const char *path)
{
	if (npz_write(path, &z->z, 0) < 0)
		return keep_error(), -1;
	return 0;
}
