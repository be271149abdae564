/*
 * timeit: run a command and record how long it took.
 *
 *   timeit OUT COUNT CMD [ARG...]
 *
 * Runs CMD (stdin, stdout and stderr inherited, so shell redirections on
 * timeit apply to CMD), waits for it and writes one line to the file OUT:
 *   count=COUNT seconds=S rate=COUNT/S user=S sys=S
 * seconds is wall time from just before fork to the end of waitpid
 * (CLOCK_MONOTONIC); user and sys are the CPU time of CMD and its children.
 * Exits with CMD's exit status (128 + signal number if it was killed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

int
main(int argc, char **argv)
{
	struct rusage ru;
	unsigned long long count;
	double t0, secs;
	char *end;
	pid_t pid;
	FILE *out;
	int status;

	if (argc < 4) {
		fprintf(stderr, "usage: timeit OUT COUNT CMD [ARG...]\n");
		return 64;
	}
	count = strtoull(argv[2], &end, 10);
	if (end == argv[2] || *end) {
		fprintf(stderr, "timeit: bad count: %s\n", argv[2]);
		return 64;
	}
	t0 = now();
	if ((pid = fork()) < 0) {
		perror("timeit: fork");
		return 71;
	}
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		fprintf(stderr, "timeit: %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("timeit: waitpid");
			return 71;
		}
	secs = now() - t0;
	getrusage(RUSAGE_CHILDREN, &ru);
	if ((out = fopen(argv[1], "w")) == NULL) {
		fprintf(stderr, "timeit: %s: %s\n", argv[1], strerror(errno));
		return 73;
	}
	fprintf(out, "count=%llu seconds=%.6f rate=%.1f user=%.3f sys=%.3f\n",
	    count, secs, secs > 0 ? (double)count / secs : 0.0,
	    tv(ru.ru_utime), tv(ru.ru_stime));
	if (fclose(out) == EOF) {
		perror("timeit: write");
		return 74;
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
