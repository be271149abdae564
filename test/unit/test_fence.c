/*
 * test_fence.c: the grammar of replicate/epoch and replicate/fenced
 * (mq-protocol(5), REPLICATION STATE): what is read, and that nothing
 * else is, the value asked for left alone when the text is refused.
 */
#include <string.h>

#include "base.h"
#include "t.h"

static int
epoch(const char *text, uint64_t *e)
{
	*e = 77;
	return mq_epoch_parse(text, strlen(text), e);
}

static int
fence(const char *text, struct mq_fence *f)
{
	return mq_fence_parse(text, strlen(text), f);
}

#define ID "0123456789abcdef0123456789abcdef"

int
main(void)
{
	uint64_t e;
	ok(epoch("0\n", &e) == 0 && e == 0, "0");
	ok(epoch("1\n", &e) == 0 && e == 1, "1");
	ok(epoch("4294967295\n", &e) == 0 && e == 4294967295u, "the largest");
	static const char *const bad[] = { "", "\n", "1", "01\n", "-1\n",
	    "+1\n", " 1\n", "1 \n", "1\n\n", "1\n2\n", "x\n", "4294967296\n",
	    "99999999999999999999999\n", "1\r\n" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(epoch(bad[i], &e) < 0 && e == 77, "epoch refused: %zu", i);
	ok(mq_epoch_parse("1\n\0", 3, &e) < 0, "a NUL");

	struct mq_fence f;
	ok(fence("epoch=2\npeer=" ID "\nname=beta\nat=1796180504.127\n", &f)
	    == 0 && f.epoch == 2 && !strcmp(f.peer, ID) &&
	    !strcmp(f.name, "beta") && f.at > 1796180504.1, "a fence");
	ok(fence("epoch=2\npeer=" ID "\nname=\nat=1\n", &f) == 0 &&
	    !f.name[0], "without a name");
	static const char *const fbad[] = {
	    "epoch=0\npeer=" ID "\nname=\nat=1\n",
	    "epoch=02\npeer=" ID "\nname=\nat=1\n",
	    "epoch=2\npeer=" ID "0\nname=\nat=1\n",
	    "epoch=2\npeer=" ID "\nname=\nat=x\n",
	    "epoch=2\npeer=" ID "\nname=\nat=-1\n",
	    "epoch=2\npeer=" ID "\nname=\n",
	    "epoch=2\npeer=" ID "\nname=\nat=1\nmore=1\n",
	    "epoch=2\npeer=" ID "\nname=a\tb\nat=1\n",
	    "garbage\n", "" };
	for (size_t i = 0; i < sizeof fbad / sizeof *fbad; i++)
		ok(fence(fbad[i], &f) < 0, "fence refused: %zu", i);
	return t_done();
}
