/* import_util.h - the ONNX importer's state and the helpers its converters
 * share (lib/front/import_util.c): name maps, messages naming the node,
 * ONNX tensor payloads, constant inputs read as attributes, attribute
 * readers and writers.  Used by lib/front/ only.
 */
#ifndef TPUC_IMPORT_UTIL_H
#define TPUC_IMPORT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "ir/name_index.h"
#include "ir/npz.h"
#include "onnx.pb-c.h"

struct onnx_input_shape;   /* lib/front/onnx_import.h */

struct imp {
	const char *path;              /* model file, for messages */
	const struct npz *consts;      /* graph inputs bound to constants, or NULL */
	const struct onnx_input_shape *shapes;   /* input shapes given from outside */
	int n_shapes;
	int opset;                     /* ai.onnx opset version */
	struct ir_graph *g;
	Onnx__GraphProto *gp;
	struct name_index tensors;     /* ONNX name -> tensor index in g */
	struct name_index inits;       /* initializer name -> index in gp->initializer */
	struct name_index outputs;     /* graph output names */
	struct name_index producers;   /* node output name -> index of the node writing it */
	int node_index;                /* index in gp->node of the node being imported */
	char *known;                   /* per tensor: 1 once its shape is known */
	int cap_known;
	const Onnx__NodeProto *node;   /* node being imported */
	int as2d;                      /* importing a 1-D Conv or pool as 2-D (H of 1) */
	char *node_name;               /* its name, generated when unnamed */
	struct imp *outer;             /* importing a subgraph (If, Loop, Scan body):
					  the enclosing graph's state, else NULL */
	int *caps, n_caps, cap_caps;   /* subgraph: the outer tensors it captures, in
					  the order of its inputs after the formal ones */
	/* Hooks the dispatcher (onnx_import.c) and import_control.c hand down,
	 * so that neither module calls the other back: import every node of a
	 * graph; infer and fold the ops from FIRST on; resolve a name of an
	 * enclosing graph (subgraphs only, else NULL). */
	int (*nodes)(struct imp *im, Onnx__GraphProto *gp);
	int (*infer_ops)(struct imp *im, int first);
	int (*capture)(struct imp *im, const char *name, int *t);
	const unsigned char *file;     /* the model's bytes: initializers' raw data points here */
	size_t file_len;
	int release;                   /* 1: the pages of raw data once copied may be dropped */
};

/* An ONNX tensor decoded into IR terms.  data points into the message or,
 * when a typed field had to be narrowed, into tmp (freed by the caller). */
struct decoded {
	enum ir_dtype dt;
	int rank;
	int64_t shape[IR_MAX_RANK];
	size_t nbytes;
	const void *data;
	void *tmp;
};

/* Largest kernel size, stride, dilation or pad taken: far beyond any real
 * model, small enough that sums and products of a few stay in an int. */
#define SPATIAL_MAX (1 << 24)

/* "'m.onnx': node 'conv1' (Conv): <message>"; returns -1. */
/* Output I of the node: tensor ON, or "<node>_unused_<I>" when the node
 * leaves it unnamed; its shape comes from inference. */
int add_node_output(struct imp *im, int i, const char *on);

enum spatial_kind { SP_CONV, SP_MAXPOOL, SP_AVGPOOL };

/* The attributes after a window's (Conv's group; a pool's ceil_mode,
 * storage_order, count_include_pad), for the 2-D and N-D importers. */
int cv_spatial_attrs(struct imp *im, struct ir_op *op, enum spatial_kind kind);
/* The node's auto_pad resolved into the pads p[0..2n) of a window op of n
 * spatial axes with kernel k, strides s and dilations d over input x
 * (NULL when unknown: an error for SAME_*). */
int spatial_auto_pad(struct imp *im, const struct ir_tensor *x, int n, const int64_t *k,
		     const int64_t *s, const int64_t *d, int64_t *p);

int node_err(struct imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The count of the node's outputs up to its last named one; -1 with a
 * message when one past max_out is named or a later one names a tensor
 * defined before. */
int node_outputs(struct imp *im, int max_out);
void set_known(struct imp *im, int t);
/* Free the lookups of an import (name indexes, known, node name), not its
 * graph nor its captures. */
void imp_release(struct imp *im);
const struct ir_tensor *known_tensor(const struct imp *im, int t);
int dtype_from_onnx(int32_t t);
const char *onnx_dtype_name(int32_t t);
int tensor_decode(const Onnx__TensorProto *t, struct decoded *d);
int add_initializer(struct imp *im, int i);
int resolve_input(struct imp *im, const char *name, int *t);
int const_ints(struct imp *im, int t, const char *what, int64_t *v, int max, int *n);
int const_scalar(struct imp *im, int t, const char *what, double *v);
const Onnx__AttributeProto *attr_find(const Onnx__NodeProto *n, const char *name);
int attr_type_err(struct imp *im, const char *name, const char *want);
int attr_int(struct imp *im, const char *name, int64_t def, int64_t *v);
int attr_float(struct imp *im, const char *name, double def, double *v);
int attr_bound(struct imp *im, const char *name, double def, double *v);
int attr_ints(struct imp *im, const char *name, int64_t *v, int max, int *n);
int attr_spatial(struct imp *im, const char *name, int64_t lo, int64_t *v, int max, int *n);
int attr_bool(struct imp *im, const char *name, int64_t def, int64_t *v);
int attr_epsilon(struct imp *im, double def, double *v);
int attr_str(struct imp *im, const char *name, const char *def, char *buf, size_t size);
int attr_absent(struct imp *im, const char *name);
int put_float(struct imp *im, struct ir_op *op, const char *name, double def);
int put_int(struct imp *im, struct ir_op *op, const char *name, int64_t def);
int put_bool(struct imp *im, struct ir_op *op, const char *name, int64_t def);
int put_epsilon(struct imp *im, struct ir_op *op);
int norm_axes(struct imp *im, int64_t *axes, int n, int r);
int known_rank(const struct imp *im, int t);
int axes_from(struct imp *im, struct ir_op *op, int idx, int64_t *axes, int *n, int r);
int const_floats(struct imp *im, int t, const char *what, float *v, int max, int *n);
int import_extra_op(struct imp *im, int k, enum op_type t, int n_in, const int *in,
			   const char *suffix);

#endif
