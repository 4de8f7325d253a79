/* ir-print - print an IR file as text (placeholder until the printer lands). */
#include <stdio.h>

int main(void)
{
	fputs("ir-print: not implemented yet\n", stderr);
	return 1;
}
