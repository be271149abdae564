/*
 * ordered.c: ordered groups, where each partition has one owner.
 *
 * Members: topics/<t>/groups/<g>.members/<member>,l<deadline ms>, an empty
 * file whose name a live member renews (renames) every third of the
 * session; a name past its deadline is a member that died or stalled.
 * Owners: p<k>/g/<g>/own/ holds exactly one name, <member>,l<deadline ms>,
 * or "-,l0" when free.  Taking a partition is a rename of that one name:
 * of two contenders one wins, as with a claim.  A member takes only free
 * or expired tokens, renews its own, and gives back (renames to "-,l0")
 * those that the assignment now gives to another member.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "internal.h"

#define MQ_OWNER_FREE "-,l0"

int
mq_owner_init(const struct mq_topic *t, unsigned k, const char *group)
{
	char p[MQ_NAME_MAX + 32];
	if (mq_path(p, sizeof p, "g/%s/own", group) < 0 ||
	    mq_mkdir(t->pfd[k], p) < 0 ||
	    mq_path(p, sizeof p, "g/%s/own/" MQ_OWNER_FREE, group) < 0)
		return -1;
	int fd = openat(t->pfd[k], p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0666);
	if (fd < 0 && errno != EEXIST)
		return mq_err_sys("ownership token");
	if (fd >= 0)
		close(fd);
	return 0;
}

/* Splits "<member>,l<deadline ms>" (a member file or an ownership token);
 * the member of a free token is "-". */
int
mq_owner_parse(const char *name, char *member, size_t len,
    uint64_t *deadline_ms)
{
	const char *l = strrchr(name, ',');
	char *end;
	if (!l || l == name || l[1] != 'l' || (size_t)(l - name) >= len)
		return -1;
	errno = 0;
	*deadline_ms = strtoull(l + 2, &end, 10);
	if (!l[2] || *end || errno)
		return -1;
	memcpy(member, name, (size_t)(l - name));
	member[l - name] = 0;
	return 0;
}
