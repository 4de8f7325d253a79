/* base.h - error reporting, memory and file helpers shared by every tpuc module.
 *
 * Library functions never exit: they return -1 (or NULL) after recording one
 * message with err_set(); tools print it with the program name in front.
 */
#ifndef TPUC_BASE_H
#define TPUC_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Record the current error (printf format) and return -1.  A message ending
 * in ':' gets ": strerror(errno)" appended, as in sbase's eprintf. */
int err_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last recorded message ("" if none). */
const char *err_msg(void);
/* Prefix the current message with "PREFIX: " (used to add a file or op name). */
int err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Allocation that aborts on exhaustion (out of memory is not bad input). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* 64-byte aligned allocation, free with free(). */
void *xaligned(size_t n);
/* Grow *p (holding *cap elements of size sz) so that it holds at least need. */
void grow_array(void **p, int *cap, int need, size_t sz);

/* Read a whole file ("-" is stdin) into a 64-byte aligned buffer.  Returns 0
 * and sets *buf, *len; the caller frees *buf.  The error names the file. */
int file_read_all(const char *path, void **buf, size_t *len);

/* Atomic output: out_open() creates "PATH.tmp.XXXXXX" beside PATH (or uses
 * stdout when PATH is NULL or "-"); out_commit() flushes, fsyncs and renames
 * it into place; out_abort() removes the temporary.  No partial file is ever
 * left under PATH. */
struct out_file {
	FILE *fp;
	char *path;     /* final path, NULL for stdout */
	char *tmp;      /* temporary path, NULL for stdout */
};
int out_open(struct out_file *o, const char *path);
int out_commit(struct out_file *o);
void out_abort(struct out_file *o);
/* Write a whole buffer atomically to PATH (or stdout). */
int out_write_all(const char *path, const void *buf, size_t len);

/* Wall-clock seconds from a monotonic clock. */
double now_seconds(void);

#endif
