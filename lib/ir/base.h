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
/* free() each of the n pointers p[0..n), in order: FREE_ALL(a, b, ...)
 * releases a struct's arrays on its way out in one statement. */
void free_each(void *const *p, int n);
#define FREE_ALL(...) \
	free_each((void *const[]){ __VA_ARGS__ }, \
		  (int)(sizeof((void *const[]){ __VA_ARGS__ }) / sizeof(void *)))
/* Grow *p (holding *cap elements of size sz) so that it holds at least need. */
void grow_array(void **p, int *cap, int need, size_t sz);

/* Read a whole file ("-" is stdin) into a 64-byte aligned buffer.  Returns 0
 * and sets *buf, *len; the caller frees *buf.  The error names the file. */
int file_read_all(const char *path, void **buf, size_t *len);

/* A small text table (the calibration table, the qtable), read line by line:
 * text_open() reads PATH whole and checks that it is text ending in a
 * newline; each text_fields() then splits the next line that is neither
 * blank nor a '#' comment into fields separated by blanks.  Messages name
 * the file as `shown` ("<stdin>" for "-").
 *
 *	struct text_file t;
 *	char *f[2];
 *	if (text_open(&t, path) < 0)
 *		return -1;
 *	while ((n = text_fields(&t, f, 2)) > 0)
 *		... f[0], f[1] (when n == 2), t.line ...
 *	text_close(&t);
 */
struct text_file {
	char *buf;              /* the whole file, its lines cut in place */
	char *p, *end;          /* the next unread byte; the end of buf */
	const char *shown;      /* the file's name in messages (path, or "<stdin>") */
	int line;               /* 1-based number of the line text_fields() last split */
};
/* 0 on success; -1 with a message (unreadable, NUL bytes, no final newline),
 * and then nothing to close. */
int text_open(struct text_file *t, const char *path);
/* The number of fields on the next line that has any (possibly more than
 * max: only the first max are stored in f[], pointing into t->buf); 0 at the
 * end of the file. */
int text_fields(struct text_file *t, char **f, int max);
void text_close(struct text_file *t);

/* Atomic output: out_open() creates "PATH.tmp.XXXXXX" beside PATH (or uses
 * stdout when PATH is NULL or "-"); out_commit() flushes, fsyncs (unless
 * the environment sets TPUC_FSYNC=0) and renames it into place;
 * out_abort() removes the temporary.  No partial file is ever
 * left under PATH.  A PATH that exists and is not a regular file (a
 * device such as /dev/null, a FIFO) is written in place, never replaced; a
 * directory is refused.  Write errors (a full disk) fail the commit. */
struct out_file {
	FILE *fp;
	char *path;     /* final path, NULL for stdout */
	char *tmp;      /* temporary path, NULL for stdout and in-place writes */
};
int out_open(struct out_file *o, const char *path);
int out_commit(struct out_file *o);
void out_abort(struct out_file *o);
/* Commit two outputs opened with out_open, both or neither: the one that
 * can be taken back (a file renamed into place) is committed first and
 * removed again if the second fails; B may be unopened (fp NULL).  When
 * neither can be taken back (stdout, a device), a late failure may leave
 * the first written. */
int out_commit_pair(struct out_file *a, struct out_file *b);
/* The temporaries out_open has open, which a SIGINT, SIGTERM or SIGHUP
 * removes before the process ends (lib/out_signal.c, which also ignores
 * SIGXFSZ so that a file-size limit fails a write instead of killing). */
void out_live_add(const char *tmp, const char *path);
void out_live_remove(const char *tmp);
/* Write a whole buffer atomically to PATH (or stdout). */
int out_write_all(const char *path, const void *buf, size_t len);

/* Wall-clock seconds from a monotonic clock. */
double now_seconds(void);

#endif
