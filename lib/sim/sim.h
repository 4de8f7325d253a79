/* sim.h - the chip simulator: runs a .tmodel's two command streams
 * functionally (bit-exact, with the same kernels as ir-run) and in time
 * (the cost model of formats/tpuc-isa.5).
 */
#ifndef TPUC_SIM_H
#define TPUC_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "chip/chip.h"
#include "chip/isa.h"
#include "ir/npz.h"
#include "chip/tmodel.h"

struct sim_layer {
	int64_t cycles;          /* compute engine cycles spent on the layer */
	int slices;              /* compute commands of the layer */
	int64_t start, end;      /* cycle its first compute command started, its last ended */
	int64_t dma_cycles;      /* DMA engine cycles of the commands sim_dma_layer
				    (sim_dma_shares) gives it */
	int64_t macs;            /* its multiply-accumulates (Conv, Gemm, MatMul, RNNs) */
	int64_t min_ddr_bytes;   /* its coefficients, graph inputs it reads, outputs it writes */
	int64_t bound;           /* max(macs / peak, min_ddr_bytes / ddr_bpc), cycles */
	double efficiency;       /* bound / max(cycles, dma_cycles); 0 when both are 0 */
};

/* One command as it ran (SIM_TRACE). */
struct sim_event {
	int engine;              /* 0 the DMA engine, 1 the compute engine */
	int index;               /* 0-based position in its stream */
	int layer;               /* the layer it belongs to, -1 for none */
	int tensor;              /* DMA: the tensor it moves, -1 for none; compute: -1 */
	int64_t start, cycles;   /* cycle it started, cycles it took */
};

struct sim_stats {
	int64_t cycles;          /* until both engines are done */
	int64_t dma_busy;        /* cycles the DMA engine worked */
	int64_t cmp_busy;        /* cycles the compute engine worked */
	int64_t ddr_bytes;       /* bytes moved between DDR and local memory */
	int64_t macs;            /* multiply-accumulates of Conv, Gemm, MatMul */
	int64_t min_ddr_bytes;   /* weights (not those only host ops read) + network inputs + outputs, once */
	int peak_macs;           /* cube MACs per cycle for the model's mode */
	int64_t bound;           /* roofline: max(macs / peak, min_ddr_bytes / ddr_bpc), cycles */
	double seconds;          /* cycles at the chip's clock */
	double mac_util;         /* macs / (cycles * peak_macs) */
	double efficiency;       /* bound / cycles */
	int n_host;              /* host commands run (isa_cmp_host) */
	double host_ms;          /* their wall time on this machine, milliseconds */
	int n_layers;
	struct sim_layer *layer; /* per layer of the table (malloc'd; sim_stats_free) */
	int n_events;
	struct sim_event *event; /* SIM_TRACE: every command in the order it ran (malloc'd) */
};

enum {
	SIM_TIMED_ONLY = 1,      /* skip the kernels and the data: timing only */
	SIM_DUMP_ALL = 2,        /* OUT gets every activation, not only the outputs */
	SIM_TRACE = 4,           /* record every command in st->event */
	SIM_PROFILE = 8,         /* give each layer the DMA cycles of its commands */
};

/* Run model M (read from MODEL_FILE, named in messages) on chip C with the
 * graph inputs taken by name from IN (FILE names it in messages); OUT (if
 * not NULL) receives each graph output by name as float32 (quantised
 * outputs dequantised), or with SIM_DUMP_ALL in FLAGS every activation (the
 * graph inputs, then each layer's results in layer order) as the compute
 * commands produced it, for comparison with ir-run --dump-all.  With
 * SIM_TIMED_ONLY the kernels are skipped (timing does not depend on data).
 * Fails on a missing or misshapen input, a command addressing memory
 * outside DDR or local memory, streams that wait for each other
 * (deadlock), or a kernel error naming the layer. */
int sim_run(const struct tmodel *m, const struct chip *c, const char *model_file,
	    const struct npz *in, const char *file, struct npz *out, struct sim_stats *st,
	    unsigned flags);
void sim_stats_free(struct sim_stats *st);

/* The tensor DMA command d of model M moves (the one whose DDR holds its
 * first byte; -1 for none) and the layer it serves, in *tensor and *layer:
 * for a store, the layer producing the tensor; for a load, the layer of the
 * first compute command from the one it waits for on that reads the tensor
 * (else the tensor's first reader; -1 for none). */
void sim_dma_layer(const struct tmodel *m, const struct isa_dma *d, int *tensor, int *layer);
/* A load of several weights (a coefficient run, formats/tpuc-isa.5) serves
 * the reader of each: add to layer[L].dma_cycles, for each weight it moves,
 * the share of its cycles cy that the weight's bytes in the block take
 * (the remainder of the division to the first), its reader L found as
 * sim_dma_layer finds it.  0 when d moves bytes of one tensor only (nothing
 * added), else 1. */
int sim_dma_shares(const struct tmodel *m, const struct isa_dma *d, int64_t cy,
		   struct sim_layer *layer);
/* Write the run's events (ST from a SIM_TRACE run of M on chip C) as a
 * Chrome trace event JSON document to FP: one thread per engine, one
 * complete event per command named "LAYER: KIND", times in microseconds at
 * the chip's clock, the cycles in its args.  -1 on a write error. */
int sim_trace_write(FILE *fp, const struct tmodel *m, const struct chip *c,
		    const struct sim_stats *st);

#endif
