/*
 * floor: the raw syscall floor that the mq benchmark compares against.
 *
 *   floor publish DIR N SIZE   for each of N messages: open(tmp/NAME,
 *                              O_CREAT|O_EXCL|O_WRONLY), write SIZE bytes,
 *                              close, rename(tmp/NAME, new/NAME); then one
 *                              syncfs.  The maildir delivery, minimal.
 *                              With FLOOR_SYNC=each in the environment,
 *                              fsync of each file before its close and of
 *                              tmp/ and new/ at the end instead of syncfs
 *                              (what a file system shared between hosts
 *                              needs: syncfs reaches no server on FUSE).
 *   floor drain DIR            readdir new/ once, sort, then per message
 *                              rename(new/X, cur/X) and unlink(cur/X).
 *   floor drainread DIR        as drain, and also open, read and close each
 *                              message and write its bytes to stdout
 *                              (context: what a consumer must do at least).
 *   floor list DIR             readdir new/ once and sort the names, nothing
 *                              else; prints readdir= and sort= seconds too.
 *   floor count DIR...         open each DIR and read it to the end with
 *                              getdents64 into a 1 MiB buffer, counting the
 *                              names that do not start with '.'; nothing is
 *                              kept, sorted or parsed.  The least that
 *                              counting a queue (mq-stat) costs.
 *   floor keep DIR             hard-link every file of new/ into log/ (not
 *                              timed; prepares a drain whose unlinks drop one
 *                              of two links, as mq's acks do, instead of
 *                              freeing the file).
 *   floor lines N LEN          write N lines of LEN-1 characters plus a
 *                              newline to stdout (input for mq-pub -l).
 *   floor spawn N              N times: fork, exec /bin/sh -c true in the
 *                              child, waitpid for it (the least that a
 *                              handler run per message costs, as mq-sub
 *                              --exec runs it: fork and sh -c).
 *
 * publish, drain, list, count and spawn print one line to stdout, key=value:
 *   count=N seconds=S rate=MSGS_PER_S user=S sys=S
 * (drainread prints it to stderr, since its stdout carries the messages).
 * For spawn, count and rate are of spawns, and user and sys include the
 * children's CPU time.
 * Names are built like mq's: <seq, 20 digits>.<32 hex>, 53 characters.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* c0, when not NULL, is RUSAGE_CHILDREN at the start: the children's CPU
 * time since then is counted too. */
static void
report2(FILE *f, unsigned long long count, double secs,
    const struct rusage *r0, const struct rusage *c0)
{
	struct rusage r1, c1;
	double user, sys;

	getrusage(RUSAGE_SELF, &r1);
	user = tv(r1.ru_utime) - tv(r0->ru_utime);
	sys = tv(r1.ru_stime) - tv(r0->ru_stime);
	if (c0) {
		getrusage(RUSAGE_CHILDREN, &c1);
		user += tv(c1.ru_utime) - tv(c0->ru_utime);
		sys += tv(c1.ru_stime) - tv(c0->ru_stime);
	}
	fprintf(f, "count=%llu seconds=%.6f rate=%.1f user=%.3f sys=%.3f\n",
	    count, secs, secs > 0 ? (double)count / secs : 0.0, user, sys);
	fflush(f);
}

static void
report(FILE *f, unsigned long long count, double secs,
    const struct rusage *r0)
{
	report2(f, count, secs, r0, NULL);
}

static unsigned long long
number(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "floor: bad %s: %s\n", what, s);
		exit(64);
	}
	return v;
}

static int
opendirat(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		die("open", name);
	return fd;
}

static void
mkdirs(const char *dir)
{
	static const char *sub[] = { "tmp", "new", "cur" };
	char path[4096];
	size_t i;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("mkdir", dir);
	for (i = 0; i < sizeof sub / sizeof sub[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, sub[i]);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			die("mkdir", path);
	}
}

static int
publish(const char *dir, unsigned long long n, size_t size)
{
	struct rusage r0;
	char name[64], *buf;
	unsigned long long i;
	uint64_t tag;
	double t0;
	int dfd, tmp, new, fd;
	const char *e = getenv("FLOOR_SYNC");
	int each = e && strcmp(e, "each") == 0;

	mkdirs(dir);
	dfd = opendirat(AT_FDCWD, dir);
	tmp = opendirat(dfd, "tmp");
	new = opendirat(dfd, "new");
	if ((buf = malloc(size ? size : 1)) == NULL)
		die("malloc", NULL);
	memset(buf, 'x', size);
	tag = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);

	getrusage(RUSAGE_SELF, &r0);
	t0 = now();
	for (i = 0; i < n; i++) {
		size_t off = 0;

		snprintf(name, sizeof name, "%020llu.%016llx%016llx", i,
		    (unsigned long long)tag, i);
		fd = openat(tmp, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
		    0644);
		if (fd < 0)
			die("create tmp/", name);
		while (off < size) {
			ssize_t w = write(fd, buf + off, size - off);

			if (w < 0) {
				if (errno == EINTR)
					continue;
				die("write tmp/", name);
			}
			off += (size_t)w;
		}
		if (each && fsync(fd) < 0)
			die("fsync tmp/", name);
		if (close(fd) < 0)
			die("close tmp/", name);
		if (renameat(tmp, name, new, name) < 0)
			die("rename to new/", name);
	}
	if (each ? fsync(tmp) < 0 || fsync(new) < 0 : syncfs(dfd) < 0)
		die("sync", dir);
	report(stdout, n, now() - t0, &r0);
	free(buf);
	return 0;
}

static int
cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory dfd (no dot files), unsorted; *n gets how many. */
static char **
read_names(int dfd, size_t *n)
{
	struct dirent *e;
	char **names = NULL;
	size_t cap = 0;
	DIR *d;

	*n = 0;
	if ((d = fdopendir(dup(dfd))) == NULL)
		die("opendir", "new");
	while ((errno = 0, e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 1024;
			if ((names = realloc(names, cap * sizeof *names)) == NULL)
				die("realloc", NULL);
		}
		if ((names[(*n)++] = strdup(e->d_name)) == NULL)
			die("strdup", NULL);
	}
	if (errno)
		die("readdir", "new");
	closedir(d);
	return names;
}

static int
drain(const char *dir, int readbody)
{
	struct rusage r0;
	char **names = NULL, buf[65536];
	size_t n = 0, i;
	double t0;
	int dfd, new, cur;

	dfd = opendirat(AT_FDCWD, dir);
	new = opendirat(dfd, "new");
	cur = opendirat(dfd, "cur");

	getrusage(RUSAGE_SELF, &r0);
	t0 = now();
	names = read_names(new, &n);
	qsort(names, n, sizeof *names, cmp);
	for (i = 0; i < n; i++) {
		if (renameat(new, names[i], cur, names[i]) < 0)
			die("rename to cur/", names[i]);
		if (readbody) {
			ssize_t r;
			int fd = openat(cur, names[i], O_RDONLY | O_CLOEXEC);

			if (fd < 0)
				die("open cur/", names[i]);
			while ((r = read(fd, buf, sizeof buf)) > 0)
				if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r)
					die("write", "stdout");
			if (r < 0)
				die("read cur/", names[i]);
			close(fd);
			putchar('\n');
			if (fflush(stdout) == EOF)
				die("write", "stdout");
		}
		if (unlinkat(cur, names[i], 0) < 0)
			die("unlink cur/", names[i]);
		free(names[i]);
	}
	report(readbody ? stderr : stdout, n, now() - t0, &r0);
	free(names);
	return 0;
}

/* Lists DIR/new once and sorts the names, as a consumer does before its
 * first claim; nothing else.  Prints the total and its two parts. */
static int
list(const char *dir)
{
	struct rusage r0;
	char **names = NULL;
	size_t n = 0, i;
	double t0, t1, t2;
	int dfd, new;

	dfd = opendirat(AT_FDCWD, dir);
	new = opendirat(dfd, "new");
	getrusage(RUSAGE_SELF, &r0);
	t0 = now();
	names = read_names(new, &n);
	t1 = now();
	qsort(names, n, sizeof *names, cmp);
	t2 = now();
	printf("readdir=%.6f sort=%.6f ", t1 - t0, t2 - t1);
	report(stdout, n, t2 - t0, &r0);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(new);
	return 0;
}

/* Counts the entries of each directory, one getdents64 call per 1 MiB of
 * them (glibc's readdir reads 32 KiB at a time). */
static int
count(char **dirs, int n)
{
	static char buf[1 << 20];
	struct rusage r0;
	unsigned long long total = 0;
	double t0;
	int i;

	getrusage(RUSAGE_SELF, &r0);
	t0 = now();
	for (i = 0; i < n; i++) {
		int fd = opendirat(AT_FDCWD, dirs[i]);
		ssize_t len;

		while ((len = getdents64(fd, buf, sizeof buf)) > 0) {
			ssize_t off = 0;

			while (off < len) {
				struct dirent64 *e = (struct dirent64 *)(buf + off);

				if (e->d_name[0] != '.')
					total++;
				off += e->d_reclen;
			}
		}
		if (len < 0)
			die("getdents64", dirs[i]);
		close(fd);
	}
	report(stdout, total, now() - t0, &r0);
	return 0;
}

static int
keep(const char *dir)
{
	struct dirent *e;
	char path[4096];
	int dfd, new, log;
	DIR *d;

	snprintf(path, sizeof path, "%s/log", dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die("mkdir", path);
	dfd = opendirat(AT_FDCWD, dir);
	new = opendirat(dfd, "new");
	log = opendirat(dfd, "log");
	if ((d = fdopendir(dup(new))) == NULL)
		die("opendir", "new");
	while ((errno = 0, e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (linkat(new, e->d_name, log, e->d_name, 0) < 0 &&
		    errno != EEXIST)
			die("link to log/", e->d_name);
	}
	if (errno)
		die("readdir", "new");
	closedir(d);
	return 0;
}

static int
lines(unsigned long long n, size_t len)
{
	char *line;
	unsigned long long i;

	if (len < 12) {
		fprintf(stderr, "floor: line length must be at least 12\n");
		return 64;
	}
	if ((line = malloc(len)) == NULL)
		die("malloc", NULL);
	memset(line, 'x', len - 1);
	line[len - 1] = '\n';
	for (i = 0; i < n; i++) {
		char num[16];

		/* A distinct prefix per line, so no two bodies are equal. */
		snprintf(num, sizeof num, "%010llu ", i % 10000000000ULL);
		memcpy(line, num, 11);
		if (fwrite(line, 1, len, stdout) != len)
			die("write", "stdout");
	}
	if (fflush(stdout) == EOF)
		die("write", "stdout");
	free(line);
	return 0;
}

/* fork + exec of /bin/sh -c true, waited for, N times: what mq-sub --exec
 * pays per message at least (it also makes two pipes, sets the message's
 * environment and writes the body to the handler's stdin). */
static int
spawn(unsigned long long n)
{
	struct rusage r0, c0;
	unsigned long long i;
	double t0;
	pid_t pid;
	int st;

	fflush(NULL);
	getrusage(RUSAGE_SELF, &r0);
	getrusage(RUSAGE_CHILDREN, &c0);
	t0 = now();
	for (i = 0; i < n; i++) {
		if ((pid = fork()) < 0)
			die("fork", NULL);
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
			_exit(127);
		}
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				die("waitpid", NULL);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "floor: /bin/sh -c true failed "
			    "(status %d)\n", st);
			return 1;
		}
	}
	report2(stdout, n, now() - t0, &r0, &c0);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: floor publish DIR N SIZE\n"
	    "       floor drain DIR\n"
	    "       floor drainread DIR\n"
	    "       floor list DIR\n"
	    "       floor count DIR...\n"
	    "       floor keep DIR\n"
	    "       floor lines N LEN\n"
	    "       floor spawn N\n");
	exit(64);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "publish") == 0 && argc == 5)
		return publish(argv[2], number(argv[3], "count"),
		    (size_t)number(argv[4], "size"));
	if (strcmp(argv[1], "drain") == 0 && argc == 3)
		return drain(argv[2], 0);
	if (strcmp(argv[1], "drainread") == 0 && argc == 3)
		return drain(argv[2], 1);
	if (strcmp(argv[1], "list") == 0 && argc == 3)
		return list(argv[2]);
	if (strcmp(argv[1], "count") == 0 && argc >= 3)
		return count(argv + 2, argc - 2);
	if (strcmp(argv[1], "keep") == 0 && argc == 3)
		return keep(argv[2]);
	if (strcmp(argv[1], "lines") == 0 && argc == 4)
		return lines(number(argv[2], "count"),
		    (size_t)number(argv[3], "length"));
	if (strcmp(argv[1], "spawn") == 0 && argc == 3)
		return spawn(number(argv[2], "count"));
	usage();
	return 64;
}
