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

#include "ir.h"

/* Lowest and highest ai.onnx opset the importer understands. */
#define ONNX_OPSET_MIN 7
#define ONNX_OPSET_MAX 17

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

/* The ONNX operator types the importer accepts, sorted by name: fills
 * names[0..max) and returns the full count (call with max 0 to size it). */
int onnx_supported_ops(const char **names, int max);

#endif
