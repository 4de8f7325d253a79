/* dnnl_util.c - oneDNN 2.6 engine, stream and the conv / matmul runners used
 * by the float kernels.  Layouts are chosen by oneDNN (format_tag_any) and
 * converted from and to the callers' row-major buffers around each call;
 * oneDNN's own primitive cache keeps the compiled kernels between calls.
 */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <dnnl_debug.h>

#include "ir/base.h"
#include "run/dnnl_util.h"
#include "ir/ir.h"

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static dnnl_status_t init_status = dnnl_runtime_error;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_engine(void)
{
	init_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
	if (init_status == dnnl_success)
		init_status = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
}

static int dnnl_ready(void)
{
	pthread_once(&init_once, init_engine);
	if (init_status != dnnl_success)
		return err_set("oneDNN: cannot create the CPU engine: %s",
			       dnnl_status2str(init_status));
	return 0;
}

int dnnl_get_engine(dnnl_engine_t *e, dnnl_stream_t *s)
{
	if (dnnl_ready() < 0)
		return -1;
	*e = engine;
	*s = stream;
	return 0;
}

/* Memory objects of one call, destroyed together. */
struct mems {
	int n;
	dnnl_memory_t m[16];
};

static void mems_free(struct mems *ms)
{
	for (int i = 0; i < ms->n; i++)
		dnnl_memory_destroy(ms->m[i]);
	ms->n = 0;
}

static int mem_new(struct mems *ms, const dnnl_memory_desc_t *md, void *data, dnnl_memory_t *out)
{
	if (ms->n == (int)ARRAY_LEN(ms->m))
		return err_set("oneDNN: too many memory objects");
	dnnl_status_t st = dnnl_memory_create(out, md, engine, data ? data : DNNL_MEMORY_ALLOCATE);
	if (st != dnnl_success)
		return err_set("oneDNN: cannot create memory: %s", dnnl_status2str(st));
	ms->m[ms->n++] = *out;
	return 0;
}

/* Primitives made so far, by the bytes that determine them (the op
 * descriptor and attributes, or a reorder's two memory descriptors):
 * creating a descriptor tries every implementation in turn (about 0.1 ms),
 * which a small model's many ops paid on every run.  Equal keys mean equal
 * inputs to oneDNN, so a hit is always right.  Emptied when full. */
#define PCACHE_MAX 4096   /* entries */
struct pentry {
	unsigned char *key;
	size_t len;
	uint64_t hash;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
};
static struct {
	int n, cap;
	struct pentry *e;
} pcache;
static pthread_mutex_t pcache_lock = PTHREAD_MUTEX_INITIALIZER;

/* FNV-1a over 8-byte words (keys are a few KiB of descriptors). */
static uint64_t key_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603u, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 1099511628211u;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 1099511628211u;
	return h;
}

static void pcache_clear(void)
{
	for (int i = 0; i < pcache.n; i++) {
		dnnl_primitive_destroy(pcache.e[i].prim);
		dnnl_primitive_desc_destroy(pcache.e[i].pd);
		free(pcache.e[i].key);
	}
	pcache.n = 0;
}

/* The primitive cached under KEY (LEN bytes), or made by MAKE (which
 * returns a primitive descriptor, or -1 with a message) and kept; *PD and
 * *PRIM stay the cache's. */
static int pcache_get(const void *key, size_t len, int (*make)(void *arg, dnnl_primitive_desc_t *pd),
		      void *arg, const_dnnl_primitive_desc_t *pd, dnnl_primitive_t *prim)
{
	uint64_t h = key_hash(key, len);
	pthread_mutex_lock(&pcache_lock);
	for (int i = 0; i < pcache.n; i++) {
		const struct pentry *e = &pcache.e[i];
		if (e->hash == h && e->len == len && !memcmp(e->key, key, len)) {
			*pd = e->pd;
			*prim = e->prim;
			pthread_mutex_unlock(&pcache_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&pcache_lock);
	dnnl_primitive_desc_t d;
	dnnl_primitive_t p;
	if (make(arg, &d) < 0)
		return -1;
	dnnl_status_t st = dnnl_primitive_create(&p, d);
	if (st != dnnl_success) {
		dnnl_primitive_desc_destroy(d);
		return err_set("oneDNN: cannot create primitive: %s", dnnl_status2str(st));
	}
	pthread_mutex_lock(&pcache_lock);
	if (pcache.n == PCACHE_MAX)
		pcache_clear();
	grow_array((void **)&pcache.e, &pcache.cap, pcache.n + 1, sizeof *pcache.e);
	struct pentry *e = &pcache.e[pcache.n++];
	e->key = xmalloc(len + 1);
	memcpy(e->key, key, len);
	e->len = len;
	e->hash = h;
	e->pd = d;
	e->prim = p;
	pthread_mutex_unlock(&pcache_lock);
	*pd = d;
	*prim = p;
	return 0;
}

/* pcache_get's MAKE for a reorder between two memory descriptors. */
static int make_reorder(void *arg, dnnl_primitive_desc_t *pd)
{
	const dnnl_memory_desc_t *const *md = arg;
	dnnl_status_t st = dnnl_reorder_primitive_desc_create(pd, md[0], engine, md[1], engine, NULL);
	if (st != dnnl_success)
		return err_set("oneDNN: reorder unavailable: %s", dnnl_status2str(st));
	return 0;
}

static int reorder(dnnl_memory_t from, dnnl_memory_t to)
{
	const dnnl_memory_desc_t *md[2];
	dnnl_memory_get_memory_desc(from, &md[0]);
	dnnl_memory_get_memory_desc(to, &md[1]);
	unsigned char key[1 + 2 * sizeof(dnnl_memory_desc_t)];
	key[0] = 'R';
	memcpy(key + 1, md[0], sizeof *md[0]);
	memcpy(key + 1 + sizeof *md[0], md[1], sizeof *md[1]);
	const_dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	if (pcache_get(key, sizeof key, make_reorder, md, &pd, &p) < 0)
		return -1;
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };
	dnnl_status_t st = dnnl_primitive_execute(p, stream, 2, args);
	if (st != dnnl_success)
		return err_set("oneDNN: reorder failed: %s", dnnl_status2str(st));
	return 0;
}

/* The memory the primitive wants for argument `what`: the user's buffer when
 * the layouts agree, else a fresh one (filled from the user's when in). */
static int bind(struct mems *ms, const_dnnl_primitive_desc_t pd, dnnl_query_t what,
		const dnnl_memory_desc_t *user_md, void *user, int in,
		dnnl_memory_t *user_mem, dnnl_memory_t *mem)
{
	const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, what, 0);
	if (mem_new(ms, user_md, user, user_mem) < 0)
		return -1;
	if (dnnl_memory_desc_equal(want, user_md)) {
		*mem = *user_mem;
		return 0;
	}
	if (mem_new(ms, want, NULL, mem) < 0)
		return -1;
	return in ? reorder(*user_mem, *mem) : 0;
}

/* Constant weights already in a primitive's layout, keyed by the caller's
 * buffer and that layout; on only between dnnl_weights_cache(1) and (0). */
struct wentry {
	const void *user;
	dnnl_memory_desc_t md;
	dnnl_memory_t mem;
};
static struct {
	int on, n, cap;
	struct wentry *e;
} wcache;
static pthread_mutex_t wcache_lock = PTHREAD_MUTEX_INITIALIZER;

void dnnl_weights_cache(int on)
{
	pthread_mutex_lock(&wcache_lock);
	for (int i = 0; i < wcache.n; i++)
		dnnl_memory_destroy(wcache.e[i].mem);
	free(wcache.e);
	memset(&wcache, 0, sizeof wcache);
	wcache.on = on;
	pthread_mutex_unlock(&wcache_lock);
}

/* bind() for weights: with the cache on and CONSTANT set, the reordered
 * copy is made once per buffer and layout. */
static int bind_weights(struct mems *ms, const_dnnl_primitive_desc_t pd,
			const dnnl_memory_desc_t *user_md, const void *user, int constant,
			dnnl_memory_t *mem)
{
	const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	dnnl_memory_t um;
	if (!constant || !wcache.on || dnnl_memory_desc_equal(want, user_md))
		return bind(ms, pd, dnnl_query_weights_md, user_md, (void *)user, 1, &um, mem);
	pthread_mutex_lock(&wcache_lock);
	for (int i = 0; i < wcache.n; i++)
		if (wcache.e[i].user == user && dnnl_memory_desc_equal(&wcache.e[i].md, want)) {
			*mem = wcache.e[i].mem;
			pthread_mutex_unlock(&wcache_lock);
			return 0;
		}
	pthread_mutex_unlock(&wcache_lock);
	dnnl_memory_t m;
	dnnl_status_t st = dnnl_memory_create(&m, want, engine, DNNL_MEMORY_ALLOCATE);
	if (st != dnnl_success)
		return err_set("oneDNN: cannot create memory: %s", dnnl_status2str(st));
	if (mem_new(ms, user_md, (void *)user, &um) < 0 || reorder(um, m) < 0) {
		dnnl_memory_destroy(m);
		return -1;
	}
	pthread_mutex_lock(&wcache_lock);
	grow_array((void **)&wcache.e, &wcache.cap, wcache.n + 1, sizeof *wcache.e);
	wcache.e[wcache.n++] = (struct wentry){ user, *want, m };
	pthread_mutex_unlock(&wcache_lock);
	*mem = m;
	return 0;
}

static int set_act(dnnl_primitive_attr_t attr, const struct dnnl_act *act, int sum)
{
	if (act->kind == DNNL_ACT_NONE && !sum)
		return 0;
	dnnl_post_ops_t po;
	if (dnnl_post_ops_create(&po) != dnnl_success)
		return err_set("oneDNN: cannot create post-ops");
	if (sum)
		dnnl_post_ops_append_sum(po, 1.0f);
	if (act->kind == DNNL_ACT_RELU)
		dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
	else if (act->kind == DNNL_ACT_CLIP)
		dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, act->lo, act->hi);
	dnnl_status_t st = dnnl_primitive_attr_set_post_ops(attr, po);
	dnnl_post_ops_destroy(po);
	if (st != dnnl_success)
		return err_set("oneDNN: cannot set post-ops: %s", dnnl_status2str(st));
	return 0;
}

struct dnnl_act dnnl_act_from_op(const struct ir_op *op)
{
	struct dnnl_act a = { DNNL_ACT_NONE, 0, 0 };
	if (!op_int(op, "do_relu", 0))
		return a;
	double lim = op_float(op, "relu_limit", 0);
	a.kind = lim > 0 ? DNNL_ACT_CLIP : DNNL_ACT_RELU;
	a.lo = 0;
	a.hi = (float)lim;
	return a;
}

void dnnl_dense_strides(int rank, const int64_t *dims, int64_t *stride)
{
	int64_t s = 1;
	for (int i = rank - 1; i >= 0; i--) {
		stride[i] = s;
		s *= dims[i] > 0 ? dims[i] : 1;
	}
}

/* What determines a conv or matmul primitive: its op descriptor (DESC,
 * LEN bytes; WHAT names it in messages), output scale ALPHA (when not 1),
 * then a sum post-op when SUM, then ACT.  The key of pcache_get: the
 * descriptor's bytes, then the rest. */
struct prim_spec {
	const void *desc;
	size_t len;
	const char *what;
	float alpha;
	struct dnnl_act act;
	int sum;
};

/* pcache_get's MAKE for a prim_spec. */
static int make_prim(void *arg, dnnl_primitive_desc_t *pd)
{
	const struct prim_spec *sp = arg;
	dnnl_primitive_attr_t attr;
	dnnl_primitive_attr_create(&attr);
	if (sp->alpha != 1.0f)
		dnnl_primitive_attr_set_output_scales(attr, 1, 0, &sp->alpha);
	if (set_act(attr, &sp->act, sp->sum) < 0) {
		dnnl_primitive_attr_destroy(attr);
		return -1;
	}
	dnnl_status_t st = dnnl_primitive_desc_create(pd, sp->desc, attr, engine, NULL);
	dnnl_primitive_attr_destroy(attr);
	if (st != dnnl_success)
		return err_set("oneDNN: %s unavailable: %s", sp->what, dnnl_status2str(st));
	return 0;
}

/* The primitive (and its descriptor) of SP, made once (pcache_get). */
static int prim_get(const struct prim_spec *sp, const_dnnl_primitive_desc_t *pd,
		    dnnl_primitive_t *prim)
{
	unsigned char *key = xmalloc(sp->len + 64);
	size_t n = sp->len;
	memcpy(key, sp->desc, sp->len);
	memcpy(key + n, &sp->alpha, sizeof sp->alpha);
	n += sizeof sp->alpha;
	memcpy(key + n, &sp->act.kind, sizeof sp->act.kind);
	n += sizeof sp->act.kind;
	memcpy(key + n, &sp->act.lo, sizeof sp->act.lo);
	n += sizeof sp->act.lo;
	memcpy(key + n, &sp->act.hi, sizeof sp->act.hi);
	n += sizeof sp->act.hi;
	key[n++] = (unsigned char)sp->sum;
	int rc = pcache_get(key, n, make_prim, (void *)sp, pd, prim);
	free(key);
	return rc;
}

/* Run primitive P with args (the caller has bound the memories), then
 * bring the destination DST back into the caller's USER_DST when they
 * differ, and wait. */
static int execute(dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args,
		   dnnl_memory_t dst, dnnl_memory_t user_dst)
{
	dnnl_status_t st = dnnl_primitive_execute(p, stream, nargs, args);
	if (st != dnnl_success)
		return err_set("oneDNN: execution failed: %s", dnnl_status2str(st));
	if (dst != user_dst && reorder(dst, user_dst) < 0)
		return -1;
	dnnl_stream_wait(stream);
	return 0;
}

/* Bind the source, the weights (constant: kept in the primitive's own
 * layout), the destination (read first when dst_in) and the bias (when
 * not NULL) of the primitive of SP to the caller's buffers, and run it. */
static int run_bound(const struct prim_spec *sp, const dnnl_memory_desc_t *src_md, const void *src,
		     const dnnl_memory_desc_t *w_md, const void *w, int const_w,
		     const dnnl_memory_desc_t *dst_md, void *dst, int dst_in,
		     const dnnl_memory_desc_t *b_md, const void *bias)
{
	struct mems ms = { 0 };
	dnnl_memory_t us, s, wm, ud, d, bm = NULL;
	const_dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	int rc = -1;
	if (prim_get(sp, &pd, &p) < 0)
		return -1;
	if (bind(&ms, pd, dnnl_query_src_md, src_md, (void *)src, 1, &us, &s) < 0 ||
	    bind_weights(&ms, pd, w_md, w, const_w, &wm) < 0 ||
	    bind(&ms, pd, dnnl_query_dst_md, dst_md, dst, dst_in, &ud, &d) < 0 ||
	    (bias && mem_new(&ms, b_md, (void *)bias, &bm) < 0))
		goto out;
	dnnl_exec_arg_t args[4] = {
		{ DNNL_ARG_SRC, s }, { DNNL_ARG_WEIGHTS, wm }, { DNNL_ARG_DST, d },
		{ DNNL_ARG_BIAS, bm },
	};
	if (execute(p, bias ? 4 : 3, args, d, ud) < 0)
		goto out;
	rc = 0;
out:
	mems_free(&ms);
	return rc;
}


static int int8_allowed = -1;   /* -1: TPUC_DNNL_INT8 decides at first use */

int dnnl_int8_exact(void)
{
	static int vnni = -1;
	if (vnni < 0) {
		unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
		/* 0x40: AVX-512 VNNI (and AMX, which has it); 0x400: AVX-VNNI */
		vnni = (isa & 0x440) != 0;
	}
	if (int8_allowed < 0) {
		const char *e = getenv("TPUC_DNNL_INT8");
		int8_allowed = !(e && !strcmp(e, "0"));
	}
	return vnni && int8_allowed;
}

void dnnl_int8_allow(int on)
{
	int8_allowed = on != 0;
}

/* A convolution over NS spatial axes (2 or 3), the form the 2-D and 3-D
 * entry points share: source extents with their strides, destination
 * extents, and per spatial axis the kernel, stride, dilation (from 0, as
 * oneDNN counts), padding before and after.  WHAT names it in messages. */
struct conv_nd {
	int ns;
	dnnl_dims_t sdims, sstr, ddims, k, strides, dil, pad_l, pad_r;
	int group;
	struct dnnl_act act;
	int const_weights;
	const char *what;
};

/* C with source type SDT, weight type WDT, destination type DDT in layout
 * DTAG (bias, when given, f32). */
static int conv_nd_run(const struct conv_nd *c, dnnl_data_type_t sdt, dnnl_data_type_t wdt,
		       dnnl_data_type_t ddt, dnnl_format_tag_t dtag, const void *src,
		       const void *w, const float *bias, void *dst, int nthreads)
{
	if (dnnl_ready() < 0)
		return -1;
	if (nthreads > 0)
		omp_set_num_threads(nthreads);
	int nd = c->ns + 2, g = c->group > 1;
	int64_t oc = c->ddims[1], ic = c->sdims[1];
	dnnl_dims_t wdims = { oc, ic }, gwdims = { c->group, oc / c->group, ic / c->group };
	dnnl_dims_t bdims = { oc };
	for (int i = 0; i < c->ns; i++)
		wdims[2 + i] = gwdims[3 + i] = c->k[i];
	dnnl_format_tag_t wtag = c->ns == 3 ? (g ? dnnl_goidhw : dnnl_oidhw)
					    : (g ? dnnl_goihw : dnnl_oihw);
	dnnl_memory_desc_t src_md, w_md, b_md, dst_md, any_src, any_w, any_dst;

	dnnl_memory_desc_init_by_strides(&src_md, nd, c->sdims, sdt, c->sstr);
	dnnl_memory_desc_init_by_tag(&dst_md, nd, c->ddims, ddt, dtag);
	dnnl_memory_desc_init_by_tag(&w_md, g ? nd + 1 : nd, g ? gwdims : wdims, wdt, wtag);
	dnnl_memory_desc_init_by_tag(&b_md, 1, bdims, dnnl_f32, dnnl_x);
	dnnl_memory_desc_init_by_tag(&any_src, nd, c->sdims, sdt, dnnl_format_tag_any);
	dnnl_memory_desc_init_by_tag(&any_dst, nd, c->ddims, ddt, dnnl_format_tag_any);
	dnnl_memory_desc_init_by_tag(&any_w, g ? nd + 1 : nd, g ? gwdims : wdims, wdt,
				     dnnl_format_tag_any);

	dnnl_convolution_desc_t cd;
	memset(&cd, 0, sizeof cd);   /* the key's bytes, padding included */
	dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
		dnnl_convolution_direct, &any_src, &any_w, bias ? &b_md : NULL, &any_dst,
		c->strides, c->dil, c->pad_l, c->pad_r);
	if (st != dnnl_success)
		return err_set("oneDNN: bad %s: %s", c->what, dnnl_status2str(st));
	struct prim_spec sp = { &cd, sizeof cd, c->what, 1.0f, c->act, 0 };
	return run_bound(&sp, &src_md, src, &w_md, w, c->const_weights, &dst_md, dst, 0, &b_md, bias);
}

/* One 2-D convolution of source type SDT, weight type WDT, destination
 * type DDT in layout DTAG (bias, when given, of the destination's float
 * type). */
static int conv_run(const struct dnnl_conv *c, dnnl_data_type_t sdt, dnnl_data_type_t wdt,
		    dnnl_data_type_t ddt, dnnl_format_tag_t dtag, const void *src, const void *w,
		    const float *bias, void *dst, int nthreads)
{
	struct conv_nd n = {
		.ns = 2,
		.sdims = { c->n, c->ic, c->ih, c->iw },
		.sstr = { c->src_stride[0], c->src_stride[1], c->src_stride[2], c->src_stride[3] },
		.ddims = { c->n, c->oc, c->oh, c->ow },
		.k = { c->kh, c->kw },
		.strides = { c->sh, c->sw },
		.dil = { c->dh - 1, c->dw - 1 },
		.pad_l = { c->pt, c->pl },
		.pad_r = { c->pb, c->pr },
		.group = c->group, .act = c->act, .const_weights = c->const_weights,
		.what = "convolution",
	};
	return conv_nd_run(&n, sdt, wdt, ddt, dtag, src, w, bias, dst, nthreads);
}

int dnnl_conv_f32(const struct dnnl_conv *c, const float *src, const float *w,
		  const float *bias, float *dst, int nthreads)
{
	return conv_run(c, dnnl_f32, dnnl_f32, dnnl_f32, dnnl_nchw, src, w, bias, dst, nthreads);
}

int dnnl_conv3d_f32(const struct dnnl_conv3d *c, const float *src, const float *w,
		    const float *bias, float *dst, int nthreads)
{
	const int64_t *f = c->src_full;
	struct conv_nd n = {
		.ns = 3,
		.sdims = { c->n, c->ic, c->src[0], c->src[1], c->src[2] },
		.sstr = { c->ic * f[0] * f[1] * f[2], f[0] * f[1] * f[2], f[1] * f[2], f[2], 1 },
		.ddims = { c->n, c->oc, c->dst[0], c->dst[1], c->dst[2] },
		.group = c->group, .act = c->act, .const_weights = c->const_weights,
		.what = "3-D convolution",
	};
	for (int i = 0; i < 3; i++) {
		n.k[i] = c->k[i];
		n.strides[i] = c->s[i];
		n.dil[i] = c->d[i] - 1;
		n.pad_l[i] = c->pl[i];
		n.pad_r[i] = c->pr[i];
	}
	return conv_nd_run(&n, dnnl_f32, dnnl_f32, dnnl_f32, dnnl_ncdhw, src, w, bias, dst, nthreads);
}

int dnnl_conv_s8(const struct dnnl_conv *c, const void *src, int src_u8, const int8_t *w,
		 int32_t *dst, int nthreads)
{
	struct dnnl_conv plain = *c;
	plain.act = (struct dnnl_act){ DNNL_ACT_NONE, 0, 0 };
	return conv_run(&plain, src_u8 ? dnnl_u8 : dnnl_s8, dnnl_s8, dnnl_s32, dnnl_nhwc, src, w,
			NULL, dst, nthreads);
}

static int matmul_run(const struct dnnl_matmul *m, dnnl_data_type_t adt, dnnl_data_type_t bdt,
		      dnnl_data_type_t cdt, const void *a, const void *b, void *dst, int nthreads)
{
	if (dnnl_ready() < 0)
		return -1;
	if (m->rank < 2 || m->rank > 12)
		return err_set("oneDNN: matmul of rank %d", m->rank);
	if (nthreads > 0)
		omp_set_num_threads(nthreads);
	int r = m->rank;
	dnnl_dims_t ad, as, bd, bs, cd, cs;
	for (int i = 0; i < r; i++) {
		ad[i] = m->a_dims[i];
		as[i] = m->a_stride[i];
		bd[i] = m->b_dims[i];
		bs[i] = m->b_stride[i];
		cd[i] = m->c_dims[i];
	}
	dnnl_dense_strides(r, m->c_dims, (int64_t *)cs);
	dnnl_memory_desc_t a_md, b_md, c_md, any_b;
	dnnl_memory_desc_init_by_strides(&a_md, r, ad, adt, as);
	dnnl_memory_desc_init_by_strides(&b_md, r, bd, bdt, bs);
	dnnl_memory_desc_init_by_strides(&c_md, r, cd, cdt, cs);
	dnnl_memory_desc_init_by_tag(&any_b, r, bd, bdt, dnnl_format_tag_any);

	/* A and C as the caller has them; B in oneDNN's layout only when it is
	 * constant (reordered once, dnnl_weights_cache), else read in place */
	dnnl_matmul_desc_t md;
	memset(&md, 0, sizeof md);
	dnnl_status_t st = dnnl_matmul_desc_init(&md, &a_md, m->const_b ? &any_b : &b_md, NULL, &c_md);
	if (st != dnnl_success)
		return err_set("oneDNN: bad matmul: %s", dnnl_status2str(st));
	struct prim_spec sp = { &md, sizeof md, "matmul", m->alpha, m->act, m->accumulate };
	return run_bound(&sp, &a_md, a, &b_md, b, m->const_b, &c_md, dst, m->accumulate, NULL, NULL);
}

int dnnl_matmul_f32(const struct dnnl_matmul *m, const float *a, const float *b,
		    float *dst, int nthreads)
{
	return matmul_run(m, dnnl_f32, dnnl_f32, dnnl_f32, a, b, dst, nthreads);
}

int dnnl_matmul_s8(const struct dnnl_matmul *m, const void *a, int a_u8, const void *b, int b_u8,
		   int32_t *dst, int nthreads)
{
	struct dnnl_matmul plain = *m;
	plain.alpha = 1;
	plain.accumulate = 0;
	plain.act = (struct dnnl_act){ DNNL_ACT_NONE, 0, 0 };
	return matmul_run(&plain, a_u8 ? dnnl_u8 : dnnl_s8, b_u8 ? dnnl_u8 : dnnl_s8, dnnl_s32,
			  a, b, dst, nthreads);
}
