/* out_signal.c - what an interrupted tool leaves: nothing (base.h).
 *
 * Every tool that links lib/ gets, before main, handlers for SIGINT,
 * SIGTERM and SIGHUP that remove the temporary files out_open() has open,
 * print one line ("PROG: stopped by SIGTERM: 'OUT' not written") and end
 * the process by the same signal; and SIGXFSZ ignored, so that a write
 * past `ulimit -f` fails with EFBIG and the usual error path reports it
 * and removes the temporary, instead of the process dying with the file
 * half written.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "ir/base.h"

#define LIVE_MAX 8   /* temporaries open at once (a tool writes one or two) */

/* Paths of the live temporaries and their final names; a slot is in use
 * when tmp is not NULL.  Written outside the handler with the signals
 * blocked, so the handler never sees a slot half set. */
static struct { const char *tmp, *path; } live[LIVE_MAX];

static void put(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void on_signal(int sig)
{
	int saved = errno;
	const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
	const char *first = NULL;
	for (int i = 0; i < LIVE_MAX; i++)
		if (live[i].tmp) {
			unlink(live[i].tmp);
			if (!first)
				first = live[i].path;
		}
	put(2, program_invocation_short_name);
	put(2, ": stopped by ");
	put(2, name);
	if (first) {
		put(2, ": '");
		put(2, first);
		put(2, "' not written");
	}
	put(2, "\n");
	errno = saved;
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((constructor)) static void out_signal_init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGHUP);
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	for (size_t i = 0; i < ARRAY_LEN(sigs); i++) {
		struct sigaction old;
		/* a signal the shell ignores (nohup, a background job) stays ignored */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
	signal(SIGXFSZ, SIG_IGN);
}

static void block(sigset_t *old)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, old);
}

void out_live_add(const char *tmp, const char *path)
{
	sigset_t old;
	block(&old);
	for (int i = 0; i < LIVE_MAX; i++)
		if (!live[i].tmp) {
			live[i].path = path;
			live[i].tmp = tmp;
			break;
		}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void out_live_remove(const char *tmp)
{
	sigset_t old;
	block(&old);
	for (int i = 0; i < LIVE_MAX; i++)
		if (live[i].tmp == tmp)
			live[i].tmp = live[i].path = NULL;
	sigprocmask(SIG_SETMASK, &old, NULL);
}
