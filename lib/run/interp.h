/* interp.h - the reference interpreter of every IR stage: runs a graph op by
 * op over whole tensors, with float kernels for the Top dialect (run_f32,
 * most of them replaced by a plan of oneDNN primitives built once) and the
 * chip's exact kernels for the Tpu dialect (run_tpu).  ir-run and calibrate
 * are built on it.
 */
#ifndef TPUC_INTERP_H
#define TPUC_INTERP_H

#include "ir/ir.h"
#include "ir/npz.h"

struct interp {
	const struct ir_graph *g;
	void **val;          /* per tensor: buffer of tensor_bytes(); weights borrow their data */
	int nthreads;        /* kernel threads (1 or more) */
	void *priv;          /* Top graphs: the plan of oneDNN primitives (lib/run/plan.c) */
	int keep_all;        /* 1: every activation stays readable by interp_get_f32
				after a run (no fusion across ops); set before interp_run */
	double *op_ms;       /* NULL, or per op: milliseconds interp_run adds up (an op
				fused into an earlier one counts 0; the final reorders
				of the graph outputs count to the last op) */
	struct dynrun *dr;   /* a graph with dynamic or empty tensors (graph_dynamic):
				its ops run one by one on run-time shapes, val's
				buffers grown to fit (lib/ir/dynrun.h); else NULL */
};

/* Prepare to run g (which must outlive it): allocates every activation
 * (zeroed) and starts oneDNN's weight cache (lib/run/dnnl_util.h), so g's
 * weights must not change until interp_free.  nthreads < 1 means 1. */
int interp_init(struct interp *it, const struct ir_graph *g, int nthreads);
/* Copy each graph input from the array of the same name in `in`, converting
 * numeric dtypes to the input's dtype; `file` names the npz in messages
 * ("'in.npz': no array for graph input 'x'", shape mismatches). */
int interp_set_inputs(struct interp *it, const struct npz *in, const char *file);
/* Same, from sample `index` of arrays whose first axis holds samples. */
int interp_set_sample(struct interp *it, const struct npz *in, const char *file, int64_t index);
/* Copy the graph inputs that arrays of `in` name (the others keep their
 * values), as interp_set_inputs: frames fed back from a run's outputs. */
int interp_set_named(struct interp *it, const struct npz *in, const char *file);
/* Run every op in order.  After each op, cb (if not NULL) is called with the
 * op index and finds the op's outputs in it->val; a negative return stops
 * the run with that result.  Top graphs run as a plan of oneDNN primitives
 * built at the first run (and again when nthreads, keep_all or the presence
 * of cb change): activations may stay in oneDNN's layouts between ops, so
 * without cb only the graph outputs are sure to be in it->val afterwards.
 * With keep_all set, interp_get_f32 finds every tensor; without it, only
 * the graph outputs are defined after a run (ops are fused and buffers of
 * dead tensors reused).  The environment variable TPUC_PLAN=0 runs every
 * op by its kernel instead; TPUC_PLAN=show prints the plan on stderr. */
int interp_run(struct interp *it, int (*cb)(struct interp *it, int op, void *user), void *user);
/* Tensor t as the last run gave it: its run-time shape (a dynamic
 * tensor's extents are known once the op writing it ran); the graph's own
 * tensor for a static graph. */
const struct ir_tensor *interp_tensor(const struct interp *it, int t);
/* Tensor t of the last run as float32 (dequantised with its scale and zero
 * point where it is quantised); the caller frees the result. */
float *interp_get_f32(const struct interp *it, int t);
/* Add tensor t of the last run to Z under its name (nothing if Z holds
 * it): f64 and unsigned tensors as they are, every other dtype as
 * interp_get_f32 gives it.  -1 with a message when out of memory. */
int interp_add_npz(struct npz *z, const struct interp *it, int t);
/* Free the activations and empty the weight cache. */
void interp_free(struct interp *it);

#endif
