/* onnx_external.h - tensors whose bytes an ONNX model keeps in files
 * beside it (the external data format: models over protobuf's 2 GiB, and
 * any saved with onnx.save(..., save_as_external_data=True)), read into the
 * message before the importer sees it (lib/front/onnx_external.c). */
#ifndef TPUC_FRONT_ONNX_EXTERNAL_H
#define TPUC_FRONT_ONNX_EXTERNAL_H

#include "onnx.pb-c.h"

/* Give every tensor of m (initializers, node attributes, subgraphs) whose
 * data_location is EXTERNAL its bytes as raw_data, read from the file its
 * "location" names relative to the folder of path (the model file), at
 * "offset" for "length" bytes (default: from offset, exactly what the
 * tensor's shape and type need).  A location that is absolute or climbs
 * out with "..", a missing or short file, a length that is not the
 * tensor's size, or a model read from standard input is refused with one
 * message naming the tensor and the file.  Returns 0 or -1 after
 * err_set(); the buffers belong to the message (freed with it). */
int onnx_load_external(Onnx__ModelProto *m, const char *path);

#endif
