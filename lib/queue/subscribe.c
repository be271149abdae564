/*
 * subscribe.c: subscribing a group to a topic or a pattern, unsubscribing
 * it, and asking whether it is there: the public entry points.  A pattern
 * goes to wildcard.c, a topic to group.c; a topic that does not exist yet
 * is made first, and its creator joins it to the matching wildcard
 * subscriptions (create.c), which is why this sits above both.
 */
#include <stdlib.h>

#include "queue.h"

int
mq_group_subscribe(mq_spool *sp, const char *topic, const char *group,
    const struct mq_group_conf *c)
{
	struct mq_group_conf dflt;
	if (!c) {
		mq_group_conf_default(&dflt);
		c = &dflt;
	}
	/* Before anything is made: a filter that does not compile. */
	if (mq_filter_check(c) < 0)
		return -1;
	if (mq_is_pattern(topic))
		return mq_wildcard_subscribe(sp, topic, group, c);
	if (mq_name_check("topic", topic) < 0 ||
	    mq_name_check("group", group) < 0 ||
	    mq_topic_create(sp, topic, NULL) < 0)
		return -1;
	return mq_group_subscribe_as(sp, topic, group, c, NULL);
}

int
mq_group_unsubscribe(mq_spool *sp, const char *topic, const char *group)
{
	if (mq_is_pattern(topic))
		return mq_wildcard_unsubscribe(sp, topic, group);
	return mq_group_topic_unsubscribe(sp, topic, group);
}

int
mq_group_exists(mq_spool *sp, const char *topic, const char *group)
{
	if (mq_is_pattern(topic))
		return mq_wildcard_exists(sp, topic, group);
	return mq_group_topic_exists(sp, topic, group);
}
