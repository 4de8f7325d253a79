/* test_out_signal - lib/out_signal.c: a SIGTERM or SIGINT while an output
 * is half written removes its temporary, leaves no file under the final
 * name, prints one line and ends the process by that signal; SIGXFSZ is
 * ignored, so that a write past the file-size limit fails (EFBIG) and
 * out_commit reports it and removes the temporary.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/base.h"

#include "check.h"

/* Files in DIR. */
static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A child writes half of DIR/out, then gets SIG; its stderr goes to
 * DIR/../err.  The status it ended with. */
static int interrupted(const char *dir, const char *errf, int sig)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		char path[700];
		snprintf(path, sizeof path, "%s/out", dir);
		struct out_file o;
		if (out_open(&o, path) < 0)
			_exit(3);
		fputs("half", o.fp);
		fflush(o.fp);
		raise(sig);
		_exit(4);   /* not reached */
	}
	int st;
	waitpid(pid, &st, 0);
	return st;
}

int main(void)
{
	char dir[] = "/tmp/test_out_signal.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char sub[600], errf[600], line[600] = "";
	snprintf(sub, sizeof sub, "%s/d", dir);
	snprintf(errf, sizeof errf, "%s/err", dir);
	mkdir(sub, 0755);

	static const int sigs[] = { SIGTERM, SIGINT };
	static const char *names[] = { "SIGTERM", "SIGINT" };
	for (int i = 0; i < 2; i++) {
		int st = interrupted(sub, errf, sigs[i]);
		CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i], "status %#x", st);
		CHECK_MSG(count_files(sub) == 0, "%d files left", count_files(sub));
		FILE *fp = fopen(errf, "r");
		CHECK(fp && fgets(line, sizeof line, fp));
		char want[700];
		snprintf(want, sizeof want, "test_out_signal: stopped by %s: '%s/out' not written\n",
			 names[i], sub);
		CHECK_MSG(!strcmp(line, want), "got '%s'", line);
		CHECK(fp && !fgets(line, sizeof line, fp));   /* one line */
		if (fp)
			fclose(fp);
	}

	/* A file-size limit: the write fails, the commit says so and cleans up. */
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };
		setrlimit(RLIMIT_FSIZE, &rl);
		char path[700];
		snprintf(path, sizeof path, "%s/big", sub);
		struct out_file o;
		static char buf[65536];
		if (out_open(&o, path) < 0)
			_exit(3);
		fwrite(buf, 1, sizeof buf, o.fp);
		if (out_commit(&o) == 0)
			_exit(4);
		_exit(strstr(err_msg(), "File too large") ? 0 : 5);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	CHECK_MSG(count_files(sub) == 0, "%d files left", count_files(sub));

	unlink(errf);
	rmdir(sub);
	rmdir(dir);
	return check_report("test_out_signal");
}
