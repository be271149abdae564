/*
 * test_sharedfs.c: the paths taken where hosts share a spool, run on a
 * local disk with MQ_SHARED_FS=1: a head written through a fresh
 * descriptor reads back through another, also while the descriptor
 * held for the lock has it locked; an empty head reads as 0/0; names
 * that exist are told from other failures; a local disk is no sshfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "t.h"

int
main(void)
{
	char root[] = "/var/tmp/mq-unit-sharedfs.XXXXXX";
	if (!mkdtemp(root))
		return 1;
	int dfd = open(root, O_RDONLY | O_DIRECTORY);
	setenv("MQ_SHARED_FS", "1", 1);
	ok(mq_fs_shared(dfd), "MQ_SHARED_FS=1 makes any file system shared");

	int hfd = mq_head_open(dfd, MQ_HEAD_CREATE);
	struct mq_head h = { 99, 99 };
	ok(hfd >= 0 && mq_head_read(hfd, &h) == 0 && h.next == 0 &&
	    h.committed == 0, "an empty head reads as next 0, committed 0");
	ok(mq_head_lock(hfd, 0) == 1, "the held descriptor takes the lock");
	struct mq_head w = { 7, 5 }, r = { 0, 0 };
	ok(mq_head_write(hfd, &w, 0) == 0, "a head is written under the lock "
	    "through a fresh descriptor");
	ok(mq_head_read(hfd, &r) == 0 && r.next == 7 && r.committed == 5,
	    "and read back through another: next %llu committed %llu",
	    (unsigned long long)r.next, (unsigned long long)r.committed);
	char line[MQ_HEAD_SIZE + 1] = { 0 };
	ok(pread(hfd, line, MQ_HEAD_SIZE, 0) == MQ_HEAD_SIZE &&
	    !strncmp(line, "mq-head 1 next=00000000000000000007", 35),
	    "the file holds the whole line");
	mq_head_unlock(hfd);

	ok(mq_name_taken(dfd, "head", EEXIST), "EEXIST: taken");
	ok(mq_name_taken(dfd, "nothing", ENOTEMPTY), "ENOTEMPTY: taken");
	ok(mq_name_taken(dfd, "head", EPERM),
	    "EPERM where the name exists (sshfs): taken");
	ok(!mq_name_taken(dfd, "nothing", EPERM),
	    "EPERM where it does not: a real failure");
	ok(!mq_name_taken(dfd, "head", EACCES), "EACCES: a real failure");
	ok(!mq_fs_locks_local(dfd), "a local disk keeps no locks per mount");

	unsetenv("MQ_SHARED_FS");
	ok(!mq_fs_shared(dfd),
	    "without it the local disk is not shared");
	close(hfd);
	close(dfd);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
