/* check.h - the unit tests' assertion: CHECK(cond) counts a check and, when
 * cond is false, a failure, printed as "file:line: check failed: cond"; the
 * test goes on.  CHECK_MSG(cond, fmt, ...) adds a printf message after it:
 * "file:line: check failed: cond: message".  main ends with
 * `return check_report("test_x");`.
 */
#ifndef TPUC_CHECK_H
#define TPUC_CHECK_H

#include <stdio.h>

static int checks, failures;

#define CHECK(cond) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_MSG(cond, ...) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

/* Print "NAME: N checks, N failed" on stdout; the exit status, 0 when no
 * check failed, else 1. */
static inline int check_report(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, checks, failures);
	return failures != 0;
}

#endif
