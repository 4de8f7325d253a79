/* interp.h - the reference interpreter of every IR stage: runs a graph op by
 * op over whole tensors, with float kernels for the Top dialect (run_f32)
 * and the chip's exact kernels for the Tpu dialect (run_tpu).  ir-run and
 * calibrate are built on it.
 */
#ifndef TPUC_INTERP_H
#define TPUC_INTERP_H

#include "ir.h"
#include "npz.h"

struct interp {
	const struct ir_graph *g;
	void **val;          /* per tensor: buffer of tensor_bytes(); weights borrow their data */
	int nthreads;        /* kernel threads (1 or more) */
	void *priv;          /* reserved; oneDNN's state is process-wide (lib/dnnl_util.h) */
};

/* Prepare to run g (which must outlive it): allocates every activation
 * (zeroed) and starts oneDNN's weight cache (lib/dnnl_util.h), so g's
 * weights must not change until interp_free.  nthreads < 1 means 1. */
int interp_init(struct interp *it, const struct ir_graph *g, int nthreads);
/* Copy each graph input from the array of the same name in `in`, converting
 * numeric dtypes to the input's dtype; `file` names the npz in messages
 * ("'in.npz': no array for graph input 'x'", shape mismatches). */
int interp_set_inputs(struct interp *it, const struct npz *in, const char *file);
/* Same, from sample `index` of arrays whose first axis holds samples. */
int interp_set_sample(struct interp *it, const struct npz *in, const char *file, int64_t index);
/* Run every op in order.  After each op, cb (if not NULL) is called with the
 * op index; a negative return stops the run with that result. */
int interp_run(struct interp *it, int (*cb)(struct interp *it, int op, void *user), void *user);
/* Tensor t as float32 (dequantised with its scale and zero point where it
 * is quantised); the caller frees the result. */
float *interp_get_f32(const struct interp *it, int t);
/* Free the activations and empty the weight cache. */
void interp_free(struct interp *it);

#endif
