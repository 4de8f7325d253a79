/* bytes.h - little-endian integers in byte buffers, as every tpuc file
 * format stores them (the IR and .tmodel headers, the ISA's 64-bit words).
 * Independent of the host's byte order and alignment.
 */
#ifndef TPUC_BYTES_H
#define TPUC_BYTES_H

#include <stdint.h>

/* Store V at P[0..3], least significant byte first. */
static inline void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Store V at P[0..7], least significant byte first. */
static inline void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The value stored at P[0..3] by put_u32. */
static inline uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The value stored at P[0..7] by put_u64. */
static inline uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif
