/*
 * jline.c: a journal line's seal, the XXH32 checksum that ends it (" %08x"
 * before the newline), written by every record and by a cut's B record,
 * checked by every reader (mq-spool(5), CHANGE JOURNAL, Records).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <xxhash.h>

#include "base.h"

int
mq_jline_seal(char *buf, size_t start, size_t *len, size_t cap)
{
	if (*len + 10 > cap)
		return mq_err(EX_SOFTWARE, "journal record too long");
	unsigned sum = XXH32(buf + start, *len - start, 0);
	*len += (size_t)snprintf(buf + *len, cap - *len, " %08x\n", sum);
	return 0;
}

bool
mq_jline_sealed(const char *line, size_t len)
{
	if (len < 10 || line[len - 9] != ' ' ||
	    strspn(line + len - 8, "0123456789abcdef") < 8)
		return false;
	return XXH32(line, len - 9, 0) == strtoul(line + len - 8, NULL, 16);
}
