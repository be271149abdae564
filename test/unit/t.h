/* t.h: a minimal TAP producer for the C unit tests. */
#ifndef MQ_T_H
#define MQ_T_H

#include <stdio.h>
#include <stdlib.h>

static int t_n, t_failed;

#define ok(cond, ...) do { \
	int ok_ = !!(cond); \
	printf("%sok %d - ", ok_ ? "" : "not ", ++t_n); \
	printf(__VA_ARGS__); \
	printf("\n"); \
	if (!ok_) { \
		t_failed++; \
		printf("#   at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

static inline int
t_done(void)
{
	printf("1..%d\n", t_n);
	return t_failed ? 1 : 0;
}

#endif
