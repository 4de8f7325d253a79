/* tpuc.h - the embeddable runtime of tpuc: open a .tmodel, list its
 * inputs and outputs, run it on the simulated chip from memory buffers,
 * read the cycles.  Also the .npz reading and writing of the tools, for
 * programs that exchange files with them.  See tpuc(3).
 *
 * Every function that can fail returns NULL or -1 and leaves one line
 * saying why in tpuc_last_error(), per thread.  A model is used by one
 * thread at a time; different models may run in different threads.
 *
 *   tpuc_model *m = tpuc_open("m.tmodel");
 *   if (!m) { fprintf(stderr, "%s\n", tpuc_last_error()); return 1; }
 *   const tpuc_tensor *in = tpuc_input(m, 0);
 *   float *x = calloc(in->count, sizeof *x);        // fill the input
 *   if (tpuc_set_input(m, 0, TPUC_F32, x, in->count) < 0 || tpuc_run(m) < 0)
 *           fprintf(stderr, "%s\n", tpuc_last_error());
 *   else
 *           printf("%g after %lld cycles\n", tpuc_output_data(m, 0)[0],
 *                  (long long)tpuc_cycles(m));
 *   tpuc_close(m);
 */
#ifndef TPUC_H
#define TPUC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPUC_MAX_RANK 8

/* Element types, as the .tmodel and .npz name them. */
typedef enum tpuc_dtype {
	TPUC_F32, TPUC_F16, TPUC_BF16, TPUC_I8, TPUC_U8, TPUC_I16, TPUC_I32, TPUC_I64,
	TPUC_BOOL,
} tpuc_dtype;

/* A graph input or output of a model. */
typedef struct tpuc_tensor {
	const char *name;
	tpuc_dtype dtype;          /* as the chip holds it (i8 for a quantised input) */
	int rank;
	int64_t shape[TPUC_MAX_RANK];
	size_t count;              /* elements */
	float scale;               /* quantisation: real = scale * (q - zero_point); 0 if none */
	int64_t zero_point;
} tpuc_tensor;

typedef struct tpuc_model tpuc_model;

/* The library's version, "0.9.0". */
const char *tpuc_version(void);
/* Why the last failing call of this thread failed: one line, no newline. */
const char *tpuc_last_error(void);
/* "f32", "i8", ...; NULL for a value outside the enum. */
const char *tpuc_dtype_name(tpuc_dtype t);
size_t tpuc_dtype_size(tpuc_dtype t);

/* Open and check a .tmodel (PATH, "-" for stdin), or SIZE bytes of one at
 * DATA (copied).  NULL on failure. */
tpuc_model *tpuc_open(const char *path);
tpuc_model *tpuc_open_memory(const void *data, size_t size);
void tpuc_close(tpuc_model *m);

const char *tpuc_model_name(const tpuc_model *m);
const char *tpuc_model_chip(const tpuc_model *m);   /* "tpu-a", ... */
const char *tpuc_model_mode(const tpuc_model *m);   /* "int8", "f32", ... */

/* Several static shapes (a bundle, tpuc-tmodel(5)): a model compiled for
 * several sets of input shapes holds one stage per set, each a whole
 * model with the same inputs and outputs but their own shapes.  The stage
 * selected (the first on opening) is the one tpuc_input, tpuc_output,
 * tpuc_set_input and tpuc_run see; selecting one forgets the inputs set
 * and the last run.  A plain .tmodel has one stage.  The tpuc_tensor
 * descriptions of every stage stay valid until tpuc_close. */
int tpuc_num_stages(const tpuc_model *m);
int tpuc_stage(const tpuc_model *m);
/* -1 when S is not a stage of M. */
int tpuc_select_stage(tpuc_model *m, int s);

int tpuc_num_inputs(const tpuc_model *m);
int tpuc_num_outputs(const tpuc_model *m);
/* Input or output I (0-based); NULL when there is none. */
const tpuc_tensor *tpuc_input(const tpuc_model *m, int i);
const tpuc_tensor *tpuc_output(const tpuc_model *m, int i);
/* The index of the input or output called NAME, or -1. */
int tpuc_input_index(const tpuc_model *m, const char *name);
int tpuc_output_index(const tpuc_model *m, const char *name);

/* Give input I as COUNT elements (its count) of DTYPE at DATA, copied.
 * Converted as tpu-sim converts an .npz array: an f32 input takes any
 * dtype by value; a quantised input takes floats (quantised with its
 * scale) or integers by value; other inputs take their own dtype or
 * integers by value.  -1 when I, COUNT or DTYPE do not fit. */
int tpuc_set_input(tpuc_model *m, int i, tpuc_dtype dtype, const void *data, size_t count);

/* Run the model on the simulator with the inputs set (every one must be).
 * -1 on failure (a kernel error, a command outside memory). */
int tpuc_run(tpuc_model *m);
/* Output I of the last run as float32, quantised outputs dequantised: what
 * tpu-sim writes.  tpuc_output_data points into the model (valid until the
 * next run or close); tpuc_get_output copies COUNT (the output's count)
 * floats to DST.  NULL / -1 before a run or for a bad I or COUNT. */
const float *tpuc_output_data(const tpuc_model *m, int i);
int tpuc_get_output(const tpuc_model *m, int i, float *dst, size_t count);
/* The last run's cycles until both engines finished, and that time in
 * seconds at the chip's clock; -1 before a run. */
int64_t tpuc_cycles(const tpuc_model *m);
double tpuc_seconds(const tpuc_model *m);

/* ---- .npz archives as numpy and the tools read and write them ---- */

typedef struct tpuc_npz tpuc_npz;

/* Read PATH ("-" for stdin): every numeric dtype numpy writes, converted
 * as the tools convert it (tpuc-npz in tpuc(3)).  NULL on failure. */
tpuc_npz *tpuc_npz_load(const char *path);
tpuc_npz *tpuc_npz_new(void);
void tpuc_npz_free(tpuc_npz *z);
int tpuc_npz_count(const tpuc_npz *z);
/* Array I: its name, dtype, shape and elements (pointers into Z). */
int tpuc_npz_get(const tpuc_npz *z, int i, const char **name, tpuc_dtype *dtype, int *rank,
		 const int64_t **shape, const void **data, size_t *count);
/* The index of the array called NAME, or -1. */
int tpuc_npz_index(const tpuc_npz *z, const char *name);
/* Append a copy of an array; -1 when NAME is there already or the shape is
 * bad. */
int tpuc_npz_add(tpuc_npz *z, const char *name, tpuc_dtype dtype, int rank,
		 const int64_t *shape, const void *data);
/* Write Z to PATH (NULL or "-" for stdout) atomically, stored as np.savez
 * does: the bytes tpu-sim writes for the same arrays. */
int tpuc_npz_save(const tpuc_npz *z, const char *path);

#ifdef __cplusplus
}
#endif

#endif
