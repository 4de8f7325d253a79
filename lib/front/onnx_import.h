/* onnx_import.h - build a Top graph from a serialised ONNX model.
 *
 * The importer keeps ONNX's operator and attribute names, turns initializers
 * and Constant nodes into weight tensors, rewrites the opset-dependent
 * input forms (Clip min/max, Pad pads, Reshape shape, Slice starts/ends,
 * Split sizes, Reduce and Squeeze axes, Resize scales/sizes) into
 * attributes, and folds every node whose inputs are all constant (shape
 * subgraphs: Shape, Gather, Concat, Unsqueeze, ...) into a weight.
 */
#ifndef TPUC_ONNX_IMPORT_H
#define TPUC_ONNX_IMPORT_H

#include <stddef.h>

#include "ir/ir.h"

/* Lowest and highest ai.onnx opset the importer understands. */
#define ONNX_OPSET_MIN 1
#define ONNX_OPSET_MAX 21
/* Highest ONNX IR version (ModelProto.ir_version) read: 10, ONNX 1.16.
 * Later versions may change the format in ways this reader cannot see. */
#define ONNX_IR_VERSION_MAX 10

/* Parse the ONNX model in buf[0..len) and build a Top graph at STAGE_ORIGIN
 * with every tensor's shape inferred.  path_for_messages names the model in
 * error messages ("'m.onnx': node 'conv1' (LSTM): unsupported operator").
 * buf is only read and may be freed as soon as the call returns.
 * Returns 0 and sets *out (free with graph_free), or -1 after err_set(). */
int onnx_import(const void *buf, size_t len, const char *path_for_messages,
		struct ir_graph **out);

struct npz;
/* The same, with the graph inputs that have an array of their name in
 * consts bound to that array: they become weights (converted to the
 * input's data type), so that shape parameters a model takes as inputs fold
 * like constants.  consts may be NULL. */
int onnx_import_bound(const void *buf, size_t len, const char *path_for_messages,
		      const struct npz *consts, struct ir_graph **out);

/* A graph input's shape fixed from outside the model (onnx2top --shape),
 * for inputs whose declared dimensions are symbolic or unknown. */
struct onnx_input_shape {
	const char *name;              /* input name: name[0..name_len), not terminated */
	size_t name_len;
	int rank;
	int64_t shape[IR_MAX_RANK];    /* elements per dimension, each >= 1 */
	int soft;                      /* from an example input (onnx2top --shapes-from):
					  used only for an input with a dimension the model
					  leaves open, after any hard one; names that are no
					  graph input are ignored */
};

/* Parse "NAME=D0,D1,..." (every Di a positive integer, NAME not empty; the
 * last '=' separates them) into *s, whose name then points into arg.
 * Returns 0, or -1 after err_set() naming arg and the fault. */
int onnx_input_shape_parse(const char *arg, struct onnx_input_shape *s);

/* onnx_import_bound, with shapes[0..n_shapes) fixing the shapes of the
 * graph inputs they name: each must name a graph input (one without an
 * initializer, not bound in consts) at most once, have the rank the model
 * declares (any rank when it declares none) and agree with every static
 * dimension it declares.  A symbolic or unknown dimension of an input
 * without a shape here is an error. */
int onnx_import_shaped(const void *buf, size_t len, const char *path_for_messages,
		       const struct npz *consts, const struct onnx_input_shape *shapes,
		       int n_shapes, struct ir_graph **out);
/* onnx_import_shaped on a buffer the caller gives up: the pages of each
 * weight's bytes are handed back to the system once the weight is copied,
 * so that the file and the graph are not both held whole (peak memory
 * about once the model).  BUF's contents are undefined afterwards; the
 * caller still frees it. */
int onnx_import_consume(void *buf, size_t len, const char *path_for_messages,
			const struct npz *consts, const struct onnx_input_shape *shapes,
			int n_shapes, struct ir_graph **out);

/* The ONNX operator types the importer accepts, sorted by name: fills
 * names[0..max) and returns the full count (call with max 0 to size it). */
int onnx_supported_ops(const char **names, int max);

#endif
