/*
 * put.c: text appended without a format string, for what is written once
 * per message published (its header block, its record's frame): there,
 * snprintf's parsing of the format cost more than the rest of the
 * rendering.  Each returns where the text it wrote ends; the caller has
 * made room.
 */
#include <string.h>

#include "base.h"

char *
mq_put(char *o, const char *s, size_t n)
{
	memcpy(o, s, n);
	return o + n;
}

char *
mq_put_str(char *o, const char *s)
{
	return mq_put(o, s, strlen(s));
}

char *
mq_put_u64(char *o, uint64_t v)
{
	return mq_put_u64w(o, v, 1);
}

char *
mq_put_u64w(char *o, uint64_t v, int width)
{
	/* Right to left, then the zeros: a value wider than width is
	 * written whole, as %0*llu would. */
	char t[20];
	int n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (int i = n; i < width; i++)
		*o++ = '0';
	while (n)
		*o++ = t[--n];
	return o;
}

char *
mq_put_hex(char *o, uint64_t v, int digits)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = digits - 1; i >= 0; i--, v >>= 4)
		o[i] = hex[v & 15];
	return o + digits;
}
