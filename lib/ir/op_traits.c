/* op_traits.c - the table of lib/ir/op_traits.h, indexed by op type: the
 * ops OP_TRAITS lists, every other op a vector op with no flags. */
#include "ir/op_traits.h"
#include "ir/convert.h"

#define X_TRAIT(e, c, f) [OP_##e] = { .cost = (c), .flags = (f) },
const struct op_traits op_traits[OP_COUNT] = { OP_TRAITS(X_TRAIT) };
#undef X_TRAIT

/* Each op at most once (a second designated initialiser would silently
 * win): the enum below fails to compile when a name repeats. */
#define X_ONCE(e, c, f) OP_TRAITS_ONCE_##e,
enum { OP_TRAITS(X_ONCE) OP_TRAITS_N };
#undef X_ONCE
_Static_assert((int)OP_TRAITS_N <= (int)OP_COUNT, "OP_TRAITS lists more ops than OP_LIST");
_Static_assert((int)COST_COUNT <= 256 && (int)OPF_DYN_SHAPE < 256, "op_traits fields are one byte");
_Static_assert(sizeof op_traits / sizeof op_traits[0] == OP_COUNT, "one record per op");

/* Weight-reorder packs only operands that are per-channel requantisation
 * parameters. */
#define X_COEFF(e, c, f) \
	_Static_assert(!((f) & OPF_COEFF) || ((f) & OPF_REQUANT_CHAN), #e ": OPF_COEFF needs OPF_REQUANT_CHAN");
OP_TRAITS(X_COEFF)
#undef X_COEFF

/* The ops OP_IO lists; the others (all zero here) one in, one out. */
#define X_IO(e, a, b, c, d, o1, o2) [OP_##e] = { a, b, c, d, o1, o2 },
static const struct op_io io_listed[OP_COUNT] = { OP_IO(X_IO) };
#undef X_IO

struct op_io op_io_of(enum op_type t)
{
	static const struct op_io one = { 1, 1, 1, 1, 1, 1 };
	return (unsigned)t < OP_COUNT && io_listed[t].max_out ? io_listed[t] : one;
}

#define X_ONCE(e, a, b, c, d, o1, o2) OP_IO_ONCE_##e,
enum { OP_IO(X_ONCE) OP_IO_N };
#undef X_ONCE
#define X_SANE(e, a, b, c, d, o1, o2) \
	_Static_assert((a) <= (b) && (c) <= (d) && 1 <= (o1) && (o1) <= (o2), #e ": bad OP_IO counts");
OP_IO(X_SANE)
#undef X_SANE

/* The f32-only ops ir-run also computes in other dtypes (lib/ops/anydtype.c). */
int op_takes_dtype(enum op_type t, enum ir_dtype dt)
{
	if (dt == DT_F32)
		return 1;
	switch (t) {
	case OP_ADD: case OP_MUL: case OP_CLIP: case OP_RELU:
	case OP_MATMUL: case OP_GEMM:
		return dt != DT_BOOL;
	case OP_MAXPOOL:
		return dt != DT_BOOL;
	case OP_AVGPOOL:
		return dtype_is_float(dt);
	default:
		return 0;
	}
}
