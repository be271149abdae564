/*
 * fuzz_names.c: the names a consumer lists in new/, cur/ and delay/, and
 * the arguments of a change journal record and a record's line
 * (mq-spool(5), Names in new/, cur/ and delay/; CHANGE JOURNAL): any
 * string is parsed whole or refused.  The first byte picks the journal
 * record's type.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	struct mq_entry e;
	uint64_t seq, due;
	char name[MQ_KEY_LEN + 64];
	if (mq_entry_parse(s, &e) == 0) {
		mq_entry_new_name(&e, name, sizeof name);
		mq_entry_cur_name(&e, name, sizeof name);
	}
	mq_delay_parse(s, &due, &e);
	mq_seq_of(s, &seq);
	mq_is_key(s);
	mq_key_time(s);
	struct mq_jargs a;
	mq_jargs_parse((char)data[0], s, &a);
	struct mq_jrec rec;
	if (mq_jrec_parse(s, size - 1, &rec) == 0 && rec.type != 'M')
		mq_jargs_parse(rec.type, rec.args, &a);
	free(s);
	return 0;
}
