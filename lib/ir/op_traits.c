/* op_traits.c - the table of lib/ir/op_traits.h, indexed by op type: the
 * ops OP_TRAITS lists, every other op a vector op with no flags. */
#include "ir/op_traits.h"

#define X_TRAIT(e, c, f) [OP_##e] = { .cost = (c), .flags = (f) },
const struct op_traits op_traits[OP_COUNT] = { OP_TRAITS(X_TRAIT) };
#undef X_TRAIT

/* Each op at most once (a second designated initialiser would silently
 * win): the enum below fails to compile when a name repeats. */
#define X_ONCE(e, c, f) OP_TRAITS_ONCE_##e,
enum { OP_TRAITS(X_ONCE) OP_TRAITS_N };
#undef X_ONCE
_Static_assert((int)OP_TRAITS_N <= (int)OP_COUNT, "OP_TRAITS lists more ops than OP_LIST");
_Static_assert((int)COST_COUNT <= 256 && (int)OPF_FUSE_RELU < 256, "op_traits fields are one byte");
_Static_assert(sizeof op_traits / sizeof op_traits[0] == OP_COUNT, "one record per op");

/* Weight-reorder packs only operands that are per-channel requantisation
 * parameters. */
#define X_COEFF(e, c, f) \
	_Static_assert(!((f) & OPF_COEFF) || ((f) & OPF_REQUANT_CHAN), #e ": OPF_COEFF needs OPF_REQUANT_CHAN");
OP_TRAITS(X_COEFF)
#undef X_COEFF
