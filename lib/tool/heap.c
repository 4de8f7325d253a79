/* heap.c - see heap.h. */
#include <malloc.h>

#include "tool/heap.h"

void heap_keep(void)
{
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
}
