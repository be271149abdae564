/* segmodes.c: the two ways issue 28 proposes to store a publish chunk in
 * a partition's log, measured on one directory (mq-spool(5), SEGMENTED
 * STORAGE, says which mq uses and why).
 *
 *   segmodes append DIR CHUNKS PER SIZE   records appended with pwrite(2)
 *                                         at the head's end offset to one
 *                                         open segment, fdatasync, then the
 *                                         head rewritten and fdatasync'd
 *   segmodes file DIR CHUNKS PER SIZE     each chunk one file written in
 *                                         DIR/tmp, fdatasync, renamed into
 *                                         DIR/log, DIR/log fsync'd
 *
 * Each writes CHUNKS chunks of PER records of SIZE body bytes (a record
 * is a 64-byte frame and header block standing in for mq's, then the
 * body) and prints "MODE msgs/s chunks/s syncs/chunk bytes-on-disk
 * inodes" on one line.  Nothing else of mq runs: this is the floor each
 * mode can reach, the cost mq adds is measured by run.sh beside it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

enum { FRAME = 64 };

static void
must_fsync(int fd, int data, const char *what)
{
	if ((data ? fdatasync(fd) : fsync(fd)) == -1)
		die("sync", what);
}

/* One chunk's records, as the bytes a publisher would write. */
static char *
chunk_bytes(size_t per, size_t size, size_t *len)
{
	size_t n = per * (FRAME + size), i;
	char *b = malloc(n);

	if (!b)
		die("malloc", NULL);
	for (i = 0; i < per; i++) {
		char *r = b + i * (FRAME + size);

		memset(r, 'h', FRAME);
		memcpy(r, "mq-rec ", 7);
		memset(r + FRAME, 'x', size);
	}
	*len = n;
	return b;
}

static void
write_all(int fd, const char *b, size_t n, off_t at, const char *what)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, b, n, at);

		if (w == -1) {
			if (errno == EINTR)
				continue;
			die("pwrite", what);
		}
		b += w;
		n -= (size_t)w;
		at += w;
	}
}

/* Blocks and inodes of the files written (main made DIR the working
 * directory). */
static void
usage_of(long long *bytes, long long *inodes)
{
	const char *sub[] = { ".", "log", "tmp" };
	size_t s;

	*bytes = *inodes = 0;
	for (s = 0; s < 3; s++) {
		DIR *d;
		struct dirent *e;

		if (!(d = opendir(sub[s])))
			continue;
		while ((e = readdir(d))) {
			struct stat st;

			if (e->d_name[0] == '.')
				continue;
			if (fstatat(dirfd(d), e->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) == -1 || S_ISDIR(st.st_mode))
				continue;
			*bytes += (long long)st.st_blocks * 512;
			++*inodes;
		}
		closedir(d);
	}
}

static double
run_append(size_t chunks, size_t per, const char *b,
    size_t len)
{
	char head[80];
	int seg, hd;
	off_t end = 0;
	size_t c;
	double t0;

	if ((seg = open("log/segment", O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1)
		die("open", "log/segment");
	if ((hd = open("head", O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1)
		die("open", "head");
	t0 = now();
	for (c = 0; c < chunks; c++) {
		write_all(seg, b, len, end, "segment");
		must_fsync(seg, 1, "segment");
		end += (off_t)len;
		/* The head: the commit point, a fixed-width line in place. */
		snprintf(head, sizeof head, "mq-head 2 committed=%020zu end=%020lld\n",
		    (c + 1) * per, (long long)end);
		write_all(hd, head, strlen(head), 0, "head");
		must_fsync(hd, 1, "head");
	}
	close(seg);
	close(hd);
	return now() - t0;
}

static double
run_file(size_t chunks, size_t per, const char *b,
    size_t len)
{
	char tmp[64], dst[64];
	int ld;
	size_t c;
	double t0;

	if ((ld = open("log", O_RDONLY | O_DIRECTORY)) == -1)
		die("open", "log");
	t0 = now();
	for (c = 0; c < chunks; c++) {
		int fd;

		snprintf(tmp, sizeof tmp, "tmp/%020zu", c * per);
		snprintf(dst, sizeof dst, "log/%020zu", c * per);
		if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644)) == -1)
			die("open", tmp);
		write_all(fd, b, len, 0, tmp);
		must_fsync(fd, 1, tmp);
		close(fd);
		/* The rename is the commit point; the directory's fsync
		 * makes it durable. */
		if (rename(tmp, dst) == -1)
			die("rename", tmp);
		must_fsync(ld, 0, "log");
	}
	close(ld);
	return now() - t0;
}

int
main(int argc, char **argv)
{
	size_t chunks, per, size, len;
	long long bytes, inodes;
	char *b;
	double t;
	int append;

	if (argc != 6 || (strcmp(argv[1], "append") && strcmp(argv[1], "file"))) {
		fprintf(stderr, "usage: segmodes append|file DIR CHUNKS PER SIZE\n");
		return 64;
	}
	append = !strcmp(argv[1], "append");
	chunks = count_arg(argv[3], 0);
	per = count_arg(argv[4], 0);
	size = count_arg(argv[5], 1);
	if (chdir(argv[2]) == -1)
		die("chdir", argv[2]);
	if (mkdir("log", 0755) == -1 && errno != EEXIST)
		die("mkdir", "log");
	if (mkdir("tmp", 0755) == -1 && errno != EEXIST)
		die("mkdir", "tmp");
	b = chunk_bytes(per, size, &len);
	t = append ? run_append(chunks, per, b, len) :
	    run_file(chunks, per, b, len);
	usage_of(&bytes, &inodes);
	printf("%s %.0f %.1f 2 %lld %lld\n", argv[1],
	    (double)(chunks * per) / t, (double)chunks / t, bytes, inodes);
	free(b);
	return 0;
}
