/* import_control.h - If, Loop and Scan nodes and their subgraphs
 * (lib/front/import_control.c), and the parts of the graph importer
 * (lib/front/onnx_import.c) that a subgraph's import shares.
 * Used by lib/front/ only.
 */
#ifndef TPUC_IMPORT_CONTROL_H
#define TPUC_IMPORT_CONTROL_H

#include "front/import_util.h"

/* Import the node im->node, an If, Loop or Scan whose first output is
 * OUT0: its bodies become subgraphs (lib/run/control.h); an If whose
 * condition is constant is replaced by the ops of the branch it takes. */
int import_control(struct imp *im, const char *out0);
/* Resolve NAME, not defined in the subgraph being imported, in the
 * enclosing graphs: a constant is copied in as a weight, any other value
 * becomes a new input of the subgraph (a capture).  *T is its index. */
int import_capture(struct imp *im, const char *name, int *t);

/* onnx_import.c: import every node of GP into im->g in order. */
int import_nodes(struct imp *im, Onnx__GraphProto *gp);
/* onnx_import.c: infer (and fold) the ops im->g gained from op FIRST on. */
int import_infer_ops(struct imp *im, int first);

#endif
