/* frames.c - frame-by-frame runs with state fed back (lib/run/frames.h). */
#include "run/frames.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "run/interp.h"

int frames_parse_state(struct frames *fr, const char *arg)
{
	const char *p = arg;
	for (;;) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		if (!eq || eq == p || eq + 1 == p + len)
			return err_set("--state '%s': expected OUT=IN[,OUT=IN...]", arg);
		char *o = xmalloc((size_t)(eq - p) + 1), *i = xmalloc(len - (size_t)(eq - p));
		memcpy(o, p, (size_t)(eq - p));
		o[eq - p] = 0;
		memcpy(i, eq + 1, len - (size_t)(eq - p) - 1);
		i[len - (size_t)(eq - p) - 1] = 0;
		for (int k = 0; k < fr->n_state; k++)
			if (!strcmp(fr->in[k], i)) {
				err_set("--state '%s': input '%s' is fed twice", arg, i);
				free(o);
				free(i);
				return -1;
			}
		fr->out = xrealloc(fr->out, sizeof *fr->out * (size_t)(fr->n_state + 1));
		fr->in = xrealloc(fr->in, sizeof *fr->in * (size_t)(fr->n_state + 1));
		fr->out[fr->n_state] = o;
		fr->in[fr->n_state++] = i;
		p += len;
		if (!*p++)
			return 0;
	}
}

static int state_of(const struct frames *fr, const char *input)
{
	for (int k = 0; k < fr->n_state; k++)
		if (!strcmp(fr->in[k], input))
			return k;
	return -1;
}

static const struct ir_tensor *io_named(const struct ir_graph *g, int outputs, const char *name);

int frames_input(const struct frames *fr, const struct ir_graph *g, const struct npz *in,
		 const char *file, int64_t f, const struct npz *prev, struct npz *frame)
{
	npz_free(frame);
	for (int i = 0; i < in->n; i++) {
		const struct npz_array *a = &in->a[i];
		if (!io_named(g, 0, a->name))
			continue;   /* ignored, as a single run ignores it */
		int s = state_of(fr, a->name);
		if (s >= 0 && f > 0)
			continue;   /* from the previous frame, below */
		if (s >= 0) {
			if (!npz_add(frame, a->name, a->dtype, a->rank, a->shape, a->data))
				return -1;
			continue;
		}
		if (a->rank < 1 || a->shape[0] != fr->n)
			return err_set("'%s': array '%s' holds %lld frames on its first axis, "
				       "--frames is %lld", file, a->name,
				       a->rank < 1 ? 0LL : (long long)a->shape[0], (long long)fr->n);
		size_t bytes = a->nbytes / (size_t)fr->n;
		if (!npz_add(frame, a->name, a->dtype, a->rank - 1, a->shape + 1,
			     (const char *)a->data + (size_t)f * bytes))
			return -1;
	}
	for (int k = 0; k < fr->n_state && f > 0; k++) {
		const struct npz_array *o = npz_find(prev, fr->out[k]);
		if (!o)
			return err_set("--state: the model has no output '%s'", fr->out[k]);
		if (!npz_add(frame, fr->in[k], o->dtype, o->rank, o->shape, o->data))
			return -1;
	}
	return 0;
}

int frames_collect(const struct frames *fr, struct npz *all, const struct npz *out, int64_t f)
{
	for (int i = 0; i < out->n; i++) {
		const struct npz_array *a = &out->a[i];
		struct npz_array *s = npz_find(all, a->name);
		if (!s) {
			if (a->rank >= IR_MAX_RANK)
				return err_set("output '%s': rank %d leaves no axis for frames", a->name,
					       a->rank);
			int64_t sh[IR_MAX_RANK];
			sh[0] = fr->n;
			memcpy(sh + 1, a->shape, sizeof(int64_t) * (size_t)a->rank);
			if (!(s = npz_add(all, a->name, a->dtype, a->rank + 1, sh, NULL)))
				return -1;
		}
		/* an output of dynamic extents (formats/tpuc-ir.5) stacks only
		 * while every frame gives the same */
		if (s->rank != a->rank + 1 || memcmp(s->shape + 1, a->shape, sizeof(int64_t) * (size_t)a->rank)) {
			char got[IR_MAX_RANK * 21 + 3], first[IR_MAX_RANK * 21 + 3];
			shape_str(got, sizeof got, a->rank, a->shape);
			shape_str(first, sizeof first, s->rank - 1, s->shape + 1);
			return err_set("output '%s' is %s in frame %lld, %s in frame 0: outputs of "
				       "dynamic extents that change do not stack over frames", a->name, got,
				       (long long)f, first);
		}
		memcpy((char *)s->data + (size_t)f * a->nbytes, a->data, a->nbytes);
	}
	return 0;
}

static const struct ir_tensor *io_named(const struct ir_graph *g, int outputs, const char *name)
{
	int n = outputs ? g->n_outputs : g->n_inputs;
	const int *ts = outputs ? g->outputs : g->inputs;
	for (int i = 0; i < n; i++)
		if (!strcmp(g->tensors[ts[i]].name, name))
			return &g->tensors[ts[i]];
	return NULL;
}

int frames_check(const struct frames *fr, const struct ir_graph *g, const char *file)
{
	for (int k = 0; k < fr->n_state; k++) {
		const struct ir_tensor *o = io_named(g, 1, fr->out[k]), *i = io_named(g, 0, fr->in[k]);
		if (!o)
			return err_set("'%s': --state: '%s' is not a graph output", file, fr->out[k]);
		if (!i)
			return err_set("'%s': --state: '%s' is not a graph input", file, fr->in[k]);
		if (o->rank != i->rank || memcmp(o->shape, i->shape, sizeof(int64_t) * (size_t)o->rank))
			return err_set("'%s': --state: output '%s' and input '%s' differ in shape", file,
				       o->name, i->name);
	}
	return 0;
}

int frames_record(const struct frames *fr, const struct ir_graph *g, const struct npz *in,
		  const char *file, int nthreads, struct npz *rec)
{
	struct npz frame = { 0 }, ins = { 0 }, prev = { 0 };
	struct interp it = { 0 };
	npz_free(rec);
	int rc = frames_check(fr, g, file);
	if (rc == 0)
		rc = interp_init(&it, g, nthreads);
	for (int64_t f = 0; rc == 0 && f < fr->n; f++) {
		rc = frames_input(fr, g, in, file, f, &prev, &frame);
		if (rc == 0)
			rc = interp_set_inputs(&it, &frame, file);
		/* the inputs as the frame runs on them (dtypes converted) */
		npz_free(&ins);
		for (int i = 0; rc == 0 && i < g->n_inputs; i++)
			rc = interp_add_npz(&ins, &it, g->inputs[i]);
		if (rc == 0)
			rc = frames_collect(fr, rec, &ins, f);
		if (rc == 0 && (rc = interp_run(&it, NULL, NULL)) < 0)
			err_prefix("'%s': frame %lld", file, (long long)f);
		npz_free(&prev);
		for (int k = 0; rc == 0 && k < fr->n_state; k++)
			rc = interp_add_npz(&prev, &it, io_named(g, 1, fr->out[k]) - g->tensors);
	}
	if (it.val)
		interp_free(&it);
	npz_free(&frame);
	npz_free(&ins);
	npz_free(&prev);
	if (rc < 0)
		npz_free(rec);
	return rc < 0 ? -1 : 0;
}

void frames_free(struct frames *fr)
{
	for (int k = 0; k < fr->n_state; k++) {
		free(fr->out[k]);
		free(fr->in[k]);
	}
	free(fr->out);
	free(fr->in);
	memset(fr, 0, sizeof *fr);
}
