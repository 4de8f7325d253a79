/* bundle.h - a model compiled for several static shapes in one file
 * (formats/tpuc-tmodel.5, "Bundles of static shapes"): whole .tmodel
 * images, one per set of input shapes ("stage"), after a table; a stage
 * whose coefficients equal an earlier stage's is stored without them.
 * The run picks the stage whose input shapes are those of its inputs.
 * A plain .tmodel reads as a bundle of one stage.
 */
#ifndef TPUC_BUNDLE_H
#define TPUC_BUNDLE_H

#include "chip/tmodel.h"
#include "ir/npz.h"

#define BUNDLE_MAGIC "TPUCBNDL"
#define BUNDLE_VERSION 1
#define BUNDLE_HEADER_BYTES 64
#define BUNDLE_ENTRY_BYTES 32

struct bundle {
	int n;                    /* stages, 1 or more */
	struct tmodel **stage;    /* stage[i]: a whole model; borrows buf when
	                           * the file is a bundle */
	void *buf;                /* the bundle file, or NULL (a plain .tmodel:
	                           * stage[0] owns its buffer) */
};

/* Read PATH ("-": stdin): a bundle, or a plain .tmodel as a bundle of one.
 * Each stage is checked as tmodel_read checks a file; the stages must
 * agree on chip, mode, and the names, order and dtypes of the inputs and
 * outputs, and differ in their input shapes.  Messages name the file (and
 * the stage).  -1 with a message. */
int bundle_read(const char *path, struct bundle *b);
/* The same for the LEN bytes at BUF (64-byte aligned as xaligned() gives;
 * owned by B from then on, freed on failure too), named PATH. */
int bundle_read_buffer(const char *path, void *buf, size_t len, struct bundle *b);
/* Write the N models M[0..n) to PATH (NULL or "-": stdout) atomically: a
 * plain .tmodel when N is 1, else a bundle.  The models must agree as
 * bundle_read requires; -1 with a message naming the first that does not. */
int bundle_write(const char *path, struct tmodel *const *m, int n);
/* The file bundle_write writes, *SIZE bytes (malloc'd); the models must
 * have passed bundle_check. */
unsigned char *bundle_encode(struct tmodel *const *m, int n, uint64_t *size);
/* Check that M[0..n) may share one bundle (bundle_read's rules); -1 with a
 * message naming stage NAMES[i] (the files they came from) otherwise. */
int bundle_check(struct tmodel *const *m, int n, const char *const *names);
/* The stage whose graph inputs have exactly the shapes of the arrays of the
 * same names in IN: 0 for a single stage (the run then checks the shapes
 * itself); -1 with a message naming FILE and listing the stages' shapes
 * when none fits. */
int bundle_pick(const struct bundle *b, const struct npz *in, const char *file);
/* "x [1,512], h [2,1,64]": the input shapes of stage S into BUF (SIZE bytes). */
void bundle_shapes(const struct bundle *b, int s, char *buf, size_t size);
void bundle_free(struct bundle *b);

#endif
