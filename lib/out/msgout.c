/*
 * msgout.c: a message as mq-sub(1) writes it: nothing (-q), one line of
 * JSON (--json), a format of its own (-F, format.c), or else its body
 * and a newline, or a NUL (-0) so that bodies may hold newlines.
 */
#include <stdio.h>

#include "out.h"

int
mq_msg_write(const struct mq_msg *m, const struct mq_msg_output *how,
    FILE *f)
{
	if (how->quiet)
		return 0;
	if (how->json)
		return mq_msg_write_json(m, f);
	if (how->format)
		return mq_msg_write_format(m, how->format, f);
	fwrite(m->body, 1, m->len, f);
	putc(how->nul ? '\0' : '\n', f);
	return ferror(f) ? mq_err_sys("write") : 0;
}
