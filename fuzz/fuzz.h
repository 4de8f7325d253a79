/* fuzz.h - what the fuzz harnesses share (fuzz/README.md).
 *
 * Each harness fuzz/fuzz_*.c defines LLVMFuzzerTestOneInput for one reader.
 * Under clang it links with libFuzzer (-fsanitize=fuzzer); under gcc it
 * links with fuzz/replay.c, a main that feeds it the files named on its
 * command line (or every file of a named folder), so that the corpora and
 * the regression files under tests/fuzz/ replay without clang.
 */
#ifndef TPUC_FUZZ_H
#define TPUC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "ir/npz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The readers take file names: DATA[0..SIZE) as a file (an anonymous
 * in-memory file, reached as /proc/self/fd/N).  The name stays valid until
 * fuzz_file_close().  Aborts if no such file can be made (not bad input). */
const char *fuzz_file(const uint8_t *data, size_t size);
void fuzz_file_close(void);

/* The biggest graph a harness runs after reading it: activations and
 * weights of at most this many bytes, so that one input takes milliseconds. */
#define FUZZ_RUN_BYTES ((int64_t)1 << 20)

/* Zero-filled arrays for G's inputs in *Z; 0, or -1 when they would take
 * more than FUZZ_RUN_BYTES (then nothing is added). */
int fuzz_zero_inputs(const struct ir_graph *g, struct npz *z);
/* Every tensor's bytes, activations and weights, saturating. */
int64_t fuzz_graph_bytes(const struct ir_graph *g);

#endif
