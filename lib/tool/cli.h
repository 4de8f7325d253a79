/* cli.h - what the tools' mains share: option errors and the optional [IN]
 * operand (exit status 2), the "prog: message" failure line (exit status 1),
 * and the frame of a stage tool: read IN, check its dialect and stage (and
 * chip), one library call, write OUT.  The only part of lib/ that prints;
 * it returns exit statuses and leaves exiting to the tool.
 */
#ifndef TPUC_CLI_H
#define TPUC_CLI_H

#include "chip/chip.h"
#include "ir/ir.h"

/* The options every tool answers the same way, looked for in ARGV before
 * "--" and before any option parsing: -h or --help prints USAGE and a
 * pointer to the manual on stdout, --version prints "PROG (tpuc) VERSION",
 * one line; both return 0, the exit status.  -1 when neither is there. */
int cli_help_version(const char *prog, const char *usage, int argc, char *const argv[]);
/* The same, MORE (if not NULL) printing more help after USAGE. */
int cli_help_version_more(const char *prog, const char *usage, void (*more)(void), int argc,
			  char *const argv[]);

/* The shared wording of usage errors that several tools make, each printed
 * as "PROG: MESSAGE" and USAGE on stderr; the return is 2. */
int cli_operands(const char *prog, const char *usage, int want, int got);

/* Refuse to write binary output (an .npz, IR, a .tmodel) to a terminal:
 * OUT NULL or "-" with stdout a tty gives "PROG: will not write WHAT to a
 * terminal (use -o FILE)" and USAGE on stderr, 2.  0 otherwise. */
int cli_check_stdout(const char *prog, const char *usage, const char *out, const char *what);

/* PATH as messages show it: "<stdin>" for NULL or "-". */
const char *cli_shown(const char *path);

/* Print "PROG: MESSAGE" (err_msg()) on stderr.  Returns 1, the exit status
 * for bad input or a failed check. */
int cli_fail(const char *prog);

/* Report the option getopt_long() just refused (call it for '?' with
 * opterr = 0, passing main's argv): "PROG: option '-o' needs a file name"
 * for an option in FILE_OPTS (its letters, the long form by its val) that
 * lacks its argument, else "PROG: unknown option '-x'" or "... '--name'",
 * then USAGE, all on stderr.  Returns 2, the exit status for usage errors. */
int cli_bad_option(const char *prog, const char *usage, char *const argv[],
		   const char *file_opts);

/* Report the option getopt_long() returned ':' for (':' first in its
 * option string, passing main's argv): "PROG: option '--threads' needs a
 * value", then USAGE, all on stderr.  Returns 2. */
int cli_missing_value(const char *prog, const char *usage, char *const argv[]);

/* Print "PROG: " and the message FMT formats, a newline, then USAGE, all
 * on stderr: a bad option value, a missing option, a missing argument
 * ("option '--threads' needs a value").  Returns 2, the exit status for
 * usage errors. */
int cli_usage_error(const char *prog, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Option --max-memory SIZE (lib/limit.h): set the ceiling from ARG, or
 * print "PROG: --max-memory 'ARG': ..." and USAGE on stderr and return 2. */
int cli_max_memory(const char *prog, const char *usage, const char *arg);

/* The operand of a tool that reads one optional [IN] after its options:
 * argv[optind], or "-" (stdin) when there is none.  NULL after printing
 * USAGE on stderr when there are more (exit status 2). */
const char *cli_input(int argc, char *const argv[], const char *usage);

/* A stage tool: IR in, IR out, at the next stage of the pipeline. */
struct stage_tool {
	const char *prog;          /* program name, the first word of each message */
	enum ir_dialect dialect;   /* the dialect it reads */
	unsigned stages;           /* the stages it reads, bits 1u << STAGE_x */
	unsigned flags;            /* STAGE_TOOL_* */
	/* The tool's work on G, read and checked; CHIP is G's chip with
	 * STAGE_TOOL_CHIP, else NULL; ARG is stage_tool_run's.  Returns 0, or
	 * -1 with a message. */
	int (*run)(struct ir_graph *g, const struct chip *chip, void *arg);
};
#define STAGE_TOOL_CHIP 1u      /* look G's chip up; an unknown chip is bad input */
#define STAGE_TOOL_NO_WRITE 2u  /* RUN writes the tool's output itself: no IR out */

/* Read IN ("-": stdin), check it is T's dialect at one of T's stages
 * (ir_expect) and, with STAGE_TOOL_CHIP, that its chip is known; call
 * T->run; write the graph to OUT (NULL or "-": stdout) atomically
 * (ir_write), unless STAGE_TOOL_NO_WRITE.  On failure print
 * "PROG: message" on stderr.  Returns the exit status, 0 or 1. */
int stage_tool_run(const struct stage_tool *t, const char *in, const char *out, void *arg);

#endif
