/* dynrun.h - running a graph whose shapes are partly known only at run
 * time (dynamic dimensions, formats/tpuc-ir.5 "Dynamic dimensions").
 *
 * A dynrun keeps, beside the graph, the run-time shape of every tensor and
 * a buffer per tensor sized to it.  dynrun_op runs one op: when the op
 * reads or writes a dynamic tensor, its shape inference runs first on its
 * inputs' run-time shapes and values (each input is shown to it as a
 * constant, so a Slice of run-time starts or a Range of run-time limits
 * gets its exact extents), the outputs' buffers grow to fit, and the
 * kernel runs on views of those shapes.  An output still dynamic after
 * that (NonZero's, whose extent follows from its input's whole data) is
 * given its upper bound, and its kernel writes the extent it found into
 * its view's shape.  An op whose every output is empty runs no kernel.
 * ir-run, the bodies of If, Loop and Scan, and tpu-sim's host commands
 * run ops this way.
 */
#ifndef TPUC_DYNRUN_H
#define TPUC_DYNRUN_H

#include <stddef.h>

#include "ir/ir.h"

struct kern;

struct dynrun {
	const struct ir_graph *g;
	struct ir_graph rt;        /* g with tensors of its own: their run-time shapes, dyn
				      cleared once known; names and weights borrowed from g */
	void **val;                /* per tensor: its buffer (the caller's array) */
	size_t *cap;               /* per tensor: bytes of val[t] dynrun may replace (it
				      frees the old one, which came from malloc); 0: none */
	unsigned char *mine;       /* per tensor: 1 if dynrun allocated val[t] */
	int adopt;                 /* 1: val's activation buffers are the caller's malloc'd
				      ones of tensor_bytes(), replaced as they must grow */
};

/* Start running G over the buffers VAL (one per tensor, weights their
 * data).  ADOPT 1: VAL's activation buffers are malloc'd, tensor_bytes()
 * each (graph_values_new), and stay the caller's to free with
 * graph_values_free even when dynrun replaced them; ADOPT 0: dynrun
 * allocates the buffers of dynamic tensors into VAL itself and frees them
 * in dynrun_free (the others are the caller's). */
void dynrun_init(struct dynrun *r, const struct ir_graph *g, void **val, int adopt);
/* Free what dynrun allocated (ADOPT 0) and its shapes; VAL stays. */
void dynrun_free(struct dynrun *r);
/* 1 if G has a dynamic tensor (a graph that needs dynrun to run). */
int graph_dynamic(const struct ir_graph *g);
/* Tensor T with its run-time shape (after the op writing it ran). */
static inline const struct ir_tensor *dynrun_tensor(const struct dynrun *r, int t)
{
	return &r->rt.tensors[t];
}
/* Give tensor T (a graph or body input) the run-time shape RANK, SHAPE,
 * its buffer grown to fit: a body input fed a value of another extent.
 * Returns its buffer. */
void *dynrun_set_shape(struct dynrun *r, int t, int rank, const int64_t *shape);
/* Run op I of the graph by RUN (op_kernel's choice, or the caller's) with
 * NTHREADS threads, as the header says.  0, or -1 with a message naming
 * the op. */
int dynrun_op(struct dynrun *r, int i, int (*run)(struct kern *k), int nthreads);

#endif
