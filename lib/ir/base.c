/* base.c - error messages, allocation, whole-file reads and atomic writes. */
#include "ir/base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char err_buf[1024];

static void err_vset(const char *fmt, va_list ap)
{
	int saved = errno;
	vsnprintf(err_buf, sizeof err_buf, fmt, ap);
	size_t n = strlen(err_buf);
	if (n > 0 && err_buf[n - 1] == ':')
		snprintf(err_buf + n, sizeof err_buf - n, " %s", strerror(saved));
}

int err_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(fmt, ap);
	va_end(ap);
	return -1;
}

const char *err_msg(void)
{
	return err_buf;
}

int err_prefix(const char *fmt, ...)
{
	char prefix[256], old[sizeof err_buf];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err_buf, sizeof old);
	size_t n = strlen(prefix);
	memcpy(err_buf, prefix, n);
	memcpy(err_buf + n, ": ", 2);
	size_t room = sizeof err_buf - n - 3;
	size_t m = strnlen(old, room);
	memcpy(err_buf + n + 2, old, m);
	err_buf[n + 2 + m] = 0;
	return -1;
}

static void *check_alloc(void *p, size_t n)
{
	if (!p && n) {
		fprintf(stderr, "tpuc: out of memory allocating %zu bytes\n", n);
		abort();
	}
	return p;
}

void *xmalloc(size_t n) { return check_alloc(malloc(n ? n : 1), n); }
void *xcalloc(size_t n, size_t size) { return check_alloc(calloc(n ? n : 1, size ? size : 1), n * size); }
void *xrealloc(void *p, size_t n) { return check_alloc(realloc(p, n ? n : 1), n); }

char *xstrdup(const char *s)
{
	return s ? check_alloc(strdup(s), strlen(s) + 1) : NULL;
}

void *xaligned(size_t n)
{
	size_t r = (n + 63) & ~(size_t)63;
	return check_alloc(aligned_alloc(64, r ? r : 64), r);
}

void free_each(void *const *p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i]);
}

void grow_array(void **p, int *cap, int need, size_t sz)
{
	if (need <= *cap)
		return;
	int c = *cap ? *cap : 8;
	while (c < need)
		c *= 2;
	*p = xrealloc(*p, (size_t)c * sz);
	memset((char *)*p + (size_t)*cap * sz, 0, (size_t)(c - *cap) * sz);
	*cap = c;
}

int file_read_all(const char *path, void **buf, size_t *len)
{
	int stdin_ = !path || !strcmp(path, "-");
	const char *shown = stdin_ ? "<stdin>" : path;
	int fd = stdin_ ? 0 : open(path, O_RDONLY);
	if (fd < 0)
		return err_set("cannot open '%s':", shown);
	size_t cap = 1 << 16, n = 0;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		cap = (size_t)st.st_size + 64;
	char *b = xaligned(cap);
	for (;;) {
		if (n == cap) {
			char *nb = xaligned(cap * 2);
			memcpy(nb, b, n);
			free(b);
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err_set("cannot read '%s':", shown);
			free(b);
			if (!stdin_)
				close(fd);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (!stdin_)
		close(fd);
	*buf = b;
	*len = n;
	return 0;
}

int text_open(struct text_file *t, const char *path)
{
	void *buf;
	size_t len;
	memset(t, 0, sizeof *t);
	t->shown = !strcmp(path, "-") ? "<stdin>" : path;
	if (file_read_all(path, &buf, &len) < 0)
		return -1;
	int rc = 0;
	if (memchr(buf, '\0', len))
		rc = err_set("'%s': not a text file", t->shown);
	else if (len > 0 && ((char *)buf)[len - 1] != '\n')
		rc = err_set("'%s': truncated: the last line has no newline", t->shown);
	if (rc < 0) {
		free(buf);
		return -1;
	}
	t->buf = t->p = buf;
	t->end = t->buf + len;
	return 0;
}

int text_fields(struct text_file *t, char **f, int max)
{
	while (t->p < t->end) {
		char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
		*nl = '\0';
		char *s = t->p + strspn(t->p, " \t\r");
		t->p = nl + 1;
		t->line++;
		if (*s == '#' || *s == '\0')
			continue;
		int n = 0;
		for (char *tok = strtok(s, " \t\r"); tok; tok = strtok(NULL, " \t\r")) {
			if (n < max)
				f[n] = tok;
			n++;
		}
		return n;
	}
	return 0;
}

void text_close(struct text_file *t)
{
	free(t->buf);
	t->buf = t->p = t->end = NULL;
}

int out_open(struct out_file *o, const char *path)
{
	memset(o, 0, sizeof *o);
	if (!path || !strcmp(path, "-")) {
		o->fp = stdout;
		return 0;
	}
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return err_set("cannot write '%s': it is a directory", path);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* a device or a FIFO: written in place, a rename would replace it */
		if (!(o->fp = fopen(path, "wb")))
			return err_set("cannot open '%s':", path);
		o->path = xstrdup(path);
		return 0;
	}
	size_t n = strlen(path) + 16;
	o->path = xstrdup(path);
	o->tmp = xmalloc(n);
	snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		err_set("cannot create '%s':", path);
		free(o->path);
		free(o->tmp);
		memset(o, 0, sizeof *o);
		return -1;
	}
	out_live_add(o->tmp, o->path);
	fchmod(fd, 0644);
	o->fp = fdopen(fd, "wb");
	return 0;
}

/* Whether a committed file is synced to disk before its rename: yes,
 * unless the environment sets TPUC_FSYNC=0 (the test suite, whose files
 * need the rename's atomicity but not durability across a crash). */
static int out_durable(void)
{
	const char *e = getenv("TPUC_FSYNC");
	return !e || strcmp(e, "0");
}

int out_commit(struct out_file *o)
{
	if (!o->path) {
		if (fflush(stdout) != 0 || ferror(stdout))
			return err_set("cannot write to standard output:");
		return 0;
	}
	if (!o->tmp) {   /* in place */
		int bad = fflush(o->fp) != 0 || ferror(o->fp);
		bad |= fclose(o->fp) != 0;
		if (bad)
			err_set("cannot write '%s':", o->path);
		free(o->path);
		memset(o, 0, sizeof *o);
		return bad ? -1 : 0;
	}
	int bad = fflush(o->fp) != 0 || ferror(o->fp);
	if (!bad && out_durable())
		fsync(fileno(o->fp));
	bad |= fclose(o->fp) != 0;
	o->fp = NULL;
	if (bad || rename(o->tmp, o->path) != 0) {
		err_set("cannot write '%s':", o->path);
		unlink(o->tmp);
		out_live_remove(o->tmp);
		free(o->tmp);
		free(o->path);
		o->tmp = o->path = NULL;
		return -1;
	}
	out_live_remove(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return 0;
}

void out_abort(struct out_file *o)
{
	if (o->path && o->fp)
		fclose(o->fp);
	if (o->tmp) {
		unlink(o->tmp);
		out_live_remove(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof *o);
}

int out_commit_pair(struct out_file *a, struct out_file *b)
{
	if (!b->fp)
		return out_commit(a);
	if (!a->tmp && b->tmp) {
		struct out_file *t = a;
		a = b;
		b = t;
	}
	char *first = a->tmp ? xstrdup(a->path) : NULL;   /* removable once renamed */
	if (out_commit(a) < 0) {
		out_abort(b);
		free(first);
		return -1;
	}
	int rc = out_commit(b);
	if (rc < 0 && first)
		unlink(first);
	free(first);
	return rc;
}

int out_write_all(const char *path, const void *buf, size_t len)
{
	struct out_file o;
	if (out_open(&o, path) < 0)
		return -1;
	if (len && fwrite(buf, 1, len, o.fp) != len) {
		err_set("cannot write '%s':", path ? path : "<stdout>");
		out_abort(&o);
		return -1;
	}
	return out_commit(&o);
}

double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
