/*
 * test_claimfile.c: a claim of format 2 (mq-spool(5), SEGMENTED STORAGE,
 * Claims): its name parses only in its one canonical form and within the
 * sequence numbers, its line reads back what was written, bit for bit,
 * and a line changed in any way does not check.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "base.h"
#include "t.h"

static void
test_names(void)
{
	struct mq_claim_name c;
	char buf[64];
	ok(mq_claim_name_parse("00000000000000000007+512,r0123abcd", &c) == 0 &&
	    c.first == 7 && c.n == 512 && !strcmp(c.token, "0123abcd"),
	    "a claim of 512 from 7");
	ok(mq_claim_name_make(&c, buf, sizeof buf) == 0 &&
	    !strcmp(buf, "00000000000000000007+512,r0123abcd"), "made back: %s",
	    buf);
	static const char *const bad[] = {
		"00000000000000000007+0,r0123abcd",      /* empty */
		"00000000000000000007+513,r0123abcd",    /* past the most */
		"00000000000000000007+012,r0123abcd",    /* a leading zero */
		"0000000000000000007+12,r0123abcd",      /* 19 digits */
		"00000000000000000007+12,r0123ABCD",     /* upper case */
		"00000000000000000007+12,r0123abc",      /* a short token */
		"00000000000000000007+12,r0123abcde",    /* a long one */
		"00000000000000000007+12;r0123abcd",
		"00000000000000000007-12,r0123abcd",
		"18446744073709551615+1,r0123abcd",      /* past MQ_SEQ_MAX */
		"18446744073709551614+2,r0123abcd",      /* runs past it */
		"99999999999999999999+1,r0123abcd",      /* wraps */
		"00000000000000000007+12,r0123abcd/",
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(mq_claim_name_parse(bad[i], &c) < 0, "refused: '%s'", bad[i]);
	ok(mq_claim_name_parse("18446744073709551614+1,r0123abcd", &c) == 0,
	    "the last sequence number");
}

static void
test_state(void)
{
	char path[] = "/tmp/mq-unit-claim.XXXXXX";
	int fd = mkstemp(path);
	struct mq_claim_state s = { .deadline_ms = 1796640000123 }, r;
	mq_claim_settle(&s, 0);
	mq_claim_settle(&s, 9);
	mq_claim_settle(&s, 511);
	ok(mq_claim_unsettled(&s, 512) == 509, "3 of 512 settled");
	ok(mq_claim_unsettled(&s, 10) == 8, "2 of the first 10");
	ok(fd >= 0 && mq_claim_state_write(fd, &s, 0) == 0, "written");
	ok(mq_claim_state_read(fd, &r) == 0 && r.deadline_ms == s.deadline_ms &&
	    !memcmp(r.settled, s.settled, sizeof s.settled), "read back");
	ok(mq_claim_settled(&r, 9) && !mq_claim_settled(&r, 8) &&
	    mq_claim_settled(&r, 511), "bits 9 and 511, not 8");
	char line[256];
	ssize_t n = pread(fd, line, sizeof line - 1, 0);
	line[n > 0 ? n : 0] = 0;
	ok(n == 191 && !strncmp(line, "mq-claim 2 deadline=00000001796640000123 "
	    "settled=0102", 53), "the line: %.60s", line);
	/* One byte changed anywhere: refused (as corrupt, EX_CONFIG). */
	for (size_t at = 0; n > 0 && at < (size_t)n - 1; at += 17) {
		char c = line[at] == '0' ? '1' : '0';
		pwrite(fd, &c, 1, (off_t)at);
		ok(mq_claim_state_read(fd, &r) < 0 && mq_errcode() == EX_CONFIG,
		    "byte %zu changed: refused", at);
		pwrite(fd, line + at, 1, (off_t)at);
	}
	ok(ftruncate(fd, 0) == 0 && mq_claim_state_read(fd, &r) == 1,
	    "empty: 1, a claim not written");
	close(fd);
	unlink(path);
}

/* A journal's K record names settled records of a claim so. */
static void
test_bits(void)
{
	unsigned char bits[MQ_CLAIM_MAX / 8] = { 0 }, back[MQ_CLAIM_MAX / 8];
	char text[256];
	uint64_t first;
	unsigned n;
	bits[0] = 0x05;
	bits[1] = 0xff;                 /* past n = 10: not said */
	ok(mq_claim_bits_format(42, 10, bits, text, sizeof text) == 0 &&
	    !strcmp(text, "42+10,0503"), "formatted: %s", text);
	ok(mq_claim_bits_parse(text, &first, &n, back) == 0 && first == 42 &&
	    n == 10 && back[0] == 0x05 && back[1] == 0x03, "parsed back");
	static const char *bad[] = { "042+10,0503", "42+010,0503", "42+0,",
	    "42+513,00", "42+10,050", "42+10,05030", "42+10,0504",
	    "42+10,0000", "42+10,05G3", "42-10,0503", "42+10;0503",
	    "18446744073709551614+2,03", "18446744073709551615+1,01", "" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(mq_claim_bits_parse(bad[i], &first, &n, back) < 0,
		    "refused: '%s'", bad[i]);
	ok(mq_claim_bits_parse("18446744073709551614+1,01", &first, &n,
	    back) == 0, "the last sequence number alone");
	memset(bits, 0xff, sizeof bits);
	ok(mq_claim_bits_format(0, 512, bits, text, sizeof text) == 0 &&
	    strlen(text) == 6 + 128 && mq_claim_bits_parse(text, &first, &n,
	    back) == 0 && n == 512, "512 records, all settled");
}

int
main(void)
{
	test_names();
	test_state();
	test_bits();
	return t_done();
}
