/* frames.h - running a model frame by frame with state fed back (ir-run and
 * tpu-sim --state OUT=IN[,OUT=IN...] --frames N), lib/run/frames.c.
 *
 * The input .npz holds, for every graph input that is not a state, its N
 * frames stacked on a new first axis ([N, ...the input's shape]); a state
 * input's array is its value for the first frame (the initial state, the
 * input's own shape).  Frame f runs on slice f of each framed array and, for
 * f > 0, on the state outputs of frame f - 1 as the state inputs: output OUT
 * feeds input IN.  The output .npz holds every graph output of every frame,
 * stacked the same way ([N, ...]).  The model is compiled once; nothing
 * about it changes between frames.
 */
#ifndef TPUC_RUN_FRAMES_H
#define TPUC_RUN_FRAMES_H

#include "ir/npz.h"

struct frames {
	int n_state;
	char **out, **in;    /* state pairs: output out[i] feeds input in[i] */
	int64_t n;           /* frames to run */
};

/* Add the pairs of ARG, "OUT=IN[,OUT=IN...]", to *FR.  -1 with a message
 * naming ARG when a pair is malformed or an input is fed twice. */
int frames_parse_state(struct frames *fr, const char *arg);
/* The inputs of frame F of graph G into *FRAME (emptied first): framed
 * arrays of IN (read from FILE) sliced, arrays naming no input of G left
 * out, state inputs from IN for frame 0 and from PREV
 * (the outputs of frame F - 1) after.  -1 with a message naming FILE when
 * a framed array holds other than N frames or a state output is missing. */
int frames_input(const struct frames *fr, const struct ir_graph *g, const struct npz *in,
		 const char *file, int64_t f, const struct npz *prev, struct npz *frame);
/* Store the outputs of frame F (OUT, f32 as the tools write them) into
 * ALL, whose arrays get N frames each (made at frame 0). */
int frames_collect(const struct frames *fr, struct npz *all, const struct npz *out, int64_t f);
/* Every state pair names a graph output and a graph input of G (read from
 * FILE) of the same shape.  -1 with a message naming FILE otherwise. */
int frames_check(const struct frames *fr, const struct ir_graph *g, const char *file);
/* Run G (float or lowered) over the FR->n frames of IN (read from FILE)
 * with state fed back and store into *REC (emptied first) the inputs each
 * frame ran on, stacked ([N, ...] for every graph input, state included):
 * the frames as single samples that carry the states G meets (ir-run
 * --record-inputs, calibrate --frames).  NTHREADS as interp_init. */
int frames_record(const struct frames *fr, const struct ir_graph *g, const struct npz *in,
		  const char *file, int nthreads, struct npz *rec);
void frames_free(struct frames *fr);

#endif
