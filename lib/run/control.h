/* control.h - the control-flow operators If, Loop and Scan (lib/run/control.c):
 * ops whose bodies are subgraphs, held as ATTR_GRAPH attributes
 * (formats/tpuc-ir.5, "Subgraphs").
 *
 * A body reads the values of the enclosing graph it uses (ONNX's outer
 * scope) as explicit inputs: the importer appends them to the op's inputs
 * as "captures" and to the body's inputs in the same order, so every pass
 * over the enclosing graph sees them as ordinary uses (dead-code
 * elimination, liveness, cutting).  Constants of the enclosing graph are
 * copied into the body as its own weights instead, so they fold there.
 *
 *   If    in  [cond, c1..ck]
 *         then_branch, else_branch: inputs [c1..ck], outputs = the op's
 *         outputs (same dtypes and shapes in both branches)
 *   Loop  in  [M, cond, v1..vn, c1..ck]  (M or cond may be absent: -1)
 *         body: inputs [iter (i64 scalar), cond (bool scalar), v1..vn,
 *         c1..ck], outputs [cond, v1..vn, s1..sm]; the op's outputs
 *         [v1..vn, S1..Sm], Sj = sj stacked over the iterations (M must be
 *         a constant when m > 0, and the loop must run all M iterations);
 *         attribute captures = k
 *   Scan  in  [s1..sn, x1..xm, c1..ck]  (the opset 9 form)
 *         body: inputs [s1..sn, one slice of each xj, c1..ck], outputs
 *         [s1..sn, y1..yq]; the op's outputs [s1..sn, Y1..Yq];
 *         attributes num_scan_inputs = m, captures = k, and ONNX's
 *         scan_input_axes, scan_input_directions, scan_output_axes,
 *         scan_output_directions
 *
 * onnx2top unrolls a Loop of a constant trip count up to 64
 * (lib/front/import_control.h) and folds an If on a constant.
 * Shapes may be dynamic (formats/tpuc-ir.5): shape inference makes a body
 * input dynamic where the outer value is, or where a loop-carried value
 * changes extent from one iteration to the next; an If whose branches
 * differ in extent, and a Loop's scan outputs when the number of
 * iterations is not a constant it surely runs, have dynamic extents.  The
 * kernels run a body op by op on run-time shapes (lib/ir/dynrun.h) with
 * each op's kernel of the body's dialect (run_f32 in Top, run_tpu in Tpu),
 * so a body may hold control flow itself, and give the outputs the extents
 * the run found (kern_out_shape).
 */
#ifndef TPUC_RUN_CONTROL_H
#define TPUC_RUN_CONTROL_H

#include "ir/ir.h"

/* Most iterations a Loop without a trip count runs before it is stopped
 * as runaway (an error naming the op). */
#define CONTROL_MAX_ITERS ((int64_t)1 << 24)

/* 1 if T is If, Loop or Scan. */
int control_op(enum op_type t);


#endif
