/* replay.c - a main for the harnesses without libFuzzer (gcc): runs
 * LLVMFuzzerTestOneInput once on each file named, or on every file of a
 * named folder, and prints how many it ran.  A crash or a sanitizer report
 * ends it with that report; it exits 0 otherwise (a harness has no other
 * way to fail).
 *
 *	replay-onnx tests/fuzz/onnx build/fuzz/corpus/onnx
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/base.h"
#include "fuzz.h"

static long runs;

static int one(const char *path)
{
	void *buf;
	size_t len;
	if (file_read_all(path, &buf, &len) < 0) {
		fprintf(stderr, "replay: %s\n", err_msg());
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	runs++;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return one(path);
	DIR *d = opendir(path);
	if (!d) {
		fprintf(stderr, "replay: '%s': cannot open folder\n", path);
		return -1;
	}
	char **names = NULL;
	int n = 0, cap = 0, rc = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		grow_array((void **)&names, &cap, n + 1, sizeof *names);
		names[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp);
	for (int i = 0; i < n; i++) {
		char *p = xmalloc(strlen(path) + strlen(names[i]) + 2);
		sprintf(p, "%s/%s", path, names[i]);
		if (walk(p) < 0)
			rc = -1;
		free(p);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (walk(argv[i]) < 0)
			rc = 1;
	printf("%s: %ld inputs replayed\n", argv[0], runs);
	return rc;
}
