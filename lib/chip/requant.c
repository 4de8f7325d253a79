/* requant.c - the requantisation parameters of a Tpu graph checked before
 * a kernel uses them (requant.h). */
#include "chip/requant.h"
#include "chip/tmodel.h"

int requant_check_graph(const struct ir_graph *g)
{
	return g->dialect != DIALECT_TPU ? 0 : tmodel_check_requant_graph(g);
}
