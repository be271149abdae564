/*
 * topicargs.c: what mq-topic(1)'s arguments give a topic, made into what
 * mq_topic_conf takes: the placements of --place K=DIR, one entry per
 * partition, and the text of a --signers FILE.  Nothing here touches a
 * spool; the errors name the option, since that is what the user wrote.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "queue.h"

#define SIGNERS_MAX 65536

/* "K=DIR": partition K goes in DIR. */
static int
place_one(const char *arg, unsigned *k, const char **dir)
{
	const char *eq = strchr(arg, '=');
	char *end;
	if (!eq || eq == arg || !eq[1] || *arg < '0' || *arg > '9')
		return mq_err(EX_USAGE, "--place: expected K=DIR, not '%s'", arg);
	errno = 0;
	unsigned long n = strtoul(arg, &end, 10);
	if (end != eq || errno || n >= MQ_PARTITIONS_MAX)
		return mq_err(EX_USAGE, "--place: expected K=DIR with K a "
		    "partition number, not '%s'", arg);
	*k = (unsigned)n;
	*dir = eq + 1;
	return 0;
}

int
mq_topic_place_parse(const char *const *args, size_t n, unsigned partitions,
    const char ***out)
{
	*out = NULL;
	if (!n)
		return 0;
	const char **v = calloc(partitions, sizeof *v);
	if (!v)
		return mq_err_sys("calloc");
	for (size_t i = 0; i < n; i++) {
		unsigned k = 0;
		const char *dir = NULL;
		int rc = place_one(args[i], &k, &dir);
		if (rc == 0 && k >= partitions)
			rc = mq_err(EX_USAGE, "--place: no partition %u in a topic "
			    "of %u partitions", k, partitions);
		else if (rc == 0 && v[k])
			rc = mq_err(EX_USAGE, "--place: partition %u placed twice",
			    k);
		if (rc < 0) {
			free(v);
			return -1;
		}
		v[k] = dir;
	}
	*out = v;
	return 0;
}

char *
mq_topic_signers_read(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f) {
		mq_err(errno == ENOENT ? EX_NOINPUT : EX_NOPERM, "--signers: "
		    "%s: %s", path, strerror(errno));
		return NULL;
	}
	char *text = malloc(SIGNERS_MAX + 1);
	int rc = text ? 0 : mq_err_sys("malloc");
	size_t len = rc == 0 ? fread(text, 1, SIGNERS_MAX + 1, f) : 0;
	if (rc == 0 && ferror(f))
		rc = mq_err(EX_IOERR, "--signers: %s: %s", path, strerror(errno));
	else if (rc == 0 && (len > SIGNERS_MAX || memchr(text, 0, len)))
		rc = mq_err(EX_DATAERR, "--signers: %s is no list of public "
		    "keys", path);
	if (f != stdin)
		fclose(f);
	if (rc < 0) {
		free(text);
		return NULL;
	}
	text[len] = 0;
	return text;
}
