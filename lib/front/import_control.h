/* import_control.h - If, Loop and Scan nodes and their subgraphs
 * (lib/front/import_control.c); a subgraph's import reaches the graph
 * importer through the hooks of struct imp.
 * Used by lib/front/ only.
 */
#ifndef TPUC_IMPORT_CONTROL_H
#define TPUC_IMPORT_CONTROL_H

#include "front/import_util.h"

/* Most iterations of a Loop with a constant trip count that onnx2top
 * unrolls: each a copy of the body with the iteration a constant, so the
 * model needs no control flow at run time. */
#define CONTROL_UNROLL_MAX 64

/* Import the node im->node, an If, Loop or Scan whose first output is
 * OUT0: its bodies become subgraphs (lib/run/control.h); an If whose
 * condition is constant is replaced by the ops of the branch it takes. */
int import_control(struct imp *im, const char *out0);
#endif
