/* heap.h - the allocator tuned for tools that run kernels over and over. */
#ifndef TPUC_HEAP_H
#define TPUC_HEAP_H

/* Keep freed memory for reuse: blocks up to 256 MiB come from the heap, not
 * fresh mappings, and the heap is not trimmed below 512 MiB of free space.
 * The kernels (oneDNN's reorders and scratch buffers, the int8
 * accumulators) allocate and free the same large buffers for every op;
 * without this each allocation maps and faults in new pages, which cost
 * ir-run more than the arithmetic on an INT8 network. */
void heap_keep(void);

#endif
