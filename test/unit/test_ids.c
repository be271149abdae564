/*
 * test_ids.c: message ids made by several threads at once (mq-http's
 * connections publish from threads of one process) are all distinct,
 * and a forked child draws a random part of its own.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "t.h"

#define THREADS 4
#define PER 200000

static char (*ids)[MQ_ID_LEN + 1];

static void *
make(void *arg)
{
	size_t at = (size_t)(uintptr_t)arg * PER;
	for (size_t i = 0; i < PER; i++)
		mq_id_new(ids[at + i]);
	return NULL;
}

static int
cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int
main(void)
{
	pthread_t t[THREADS];
	ids = calloc(THREADS * PER, sizeof *ids);
	ok(ids != NULL, "room for %d ids", THREADS * PER);
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, make, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	qsort(ids, THREADS * PER, sizeof *ids, cmp);
	size_t same = 0;
	for (size_t i = 1; i < THREADS * PER; i++)
		same += !strcmp(ids[i - 1], ids[i]);
	ok(same == 0, "%d threads x %d ids: %zu repeated", THREADS, PER, same);
	ok(mq_is_id(ids[0], strlen(ids[0])), "an id is 32 lowercase hex digits");
	/* A child's ids: another random part (digits 13 to 23). */
	char mine[MQ_ID_LEN + 1], theirs[MQ_ID_LEN + 1] = "";
	int p[2];
	mq_id_new(mine);
	if (pipe(p) == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			mq_id_new(theirs);
			(void)!write(p[1], theirs, MQ_ID_LEN);
			_exit(0);
		}
		close(p[1]);
		(void)!read(p[0], theirs, MQ_ID_LEN);
		waitpid(pid, NULL, 0);
	}
	ok(strlen(theirs) == MQ_ID_LEN && memcmp(mine + 13, theirs + 13, 11),
	    "a forked child's random part differs: %.11s, %.11s", mine + 13,
	    theirs + 13);
	free(ids);
	return t_done();
}
