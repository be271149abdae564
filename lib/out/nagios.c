/*
 * nagios.c: the outcome of mq_stat_check as the one line of a Nagios or
 * Icinga plugin (mq-stat --check): "MQ STATE - summary | perfdata", in
 * the format of the Nagios plugin guidelines, figures to the millisecond
 * and never with an exponent, which performance data does not take.
 */
#include <stdio.h>
#include <string.h>

#include "out.h"

enum { OK, WARNING, CRITICAL };

/* A figure: to the millisecond, without trailing zeros. */
static void
put_num(FILE *f, double v)
{
	char b[64];
	snprintf(b, sizeof b, "%.3f", v);
	char *e = b + strlen(b);
	while (e[-1] == '0')
		*--e = 0;
	if (e[-1] == '.')
		e[-1] = 0;
	fputs(strcmp(b, "-0") ? b : "0", f);
}

/* A threshold as a Nagios range: the alert is raised for values outside
 * start:end, or inside with '@' ("~" is minus infinity).  Figures are
 * never negative, so "N" stands for > N. */
static void
put_range(FILE *f, const struct mq_threshold *t)
{
	if (!t)
		return;
	const char *pre[] = { [MQ_CMP_GT] = "", [MQ_CMP_GE] = "@",
	    [MQ_CMP_LT] = "", [MQ_CMP_LE] = "@~:", [MQ_CMP_EQ] = "@" };
	fputs(pre[t->cmp], f);
	put_num(f, t->n);
	if (t->cmp == MQ_CMP_GE || t->cmp == MQ_CMP_LT)
		fputc(':', f);
	else if (t->cmp == MQ_CMP_EQ) {
		fputc(':', f);
		put_num(f, t->n);
	}
}

/* "orders/billing dlq=3 (>0)" for each value at state. */
static void
put_crossed(const struct mq_check *c, int state, FILE *f)
{
	int first = 1;
	for (size_t i = 0; i < c->n; i++) {
		const struct mq_check_value *v = &c->v[i];
		if (v->state != state)
			continue;
		const char *u = mq_figure_unit(v->figure);
		fprintf(f, "%s%s=", first ? "" : ", ", v->label);
		put_num(f, v->value);
		fprintf(f, "%s (%s", u, mq_cmp_name(v->crossed->cmp));
		put_num(f, v->crossed->n);
		fprintf(f, "%s)", u);
		first = 0;
	}
}

int
mq_check_write(const struct mq_check *c, FILE *f)
{
	static const char *const names[] = { "OK", "WARNING", "CRITICAL" };
	fprintf(f, "MQ %s - ", names[c->state]);
	if (c->state == OK)
		fprintf(f, "%zu figure%s within thresholds", c->n,
		    c->n == 1 ? "" : "s");
	else
		put_crossed(c, c->state, f);
	if (c->state == CRITICAL && c->n > 0) {
		size_t w = 0;
		for (size_t i = 0; i < c->n; i++)
			w += c->v[i].state == WARNING;
		if (w) {
			fputs("; WARNING: ", f);
			put_crossed(c, WARNING, f);
		}
	}
	/* Performance data: 'label'=value[UOM];warn;crit;min (a quote in
	 * a label doubled). */
	for (size_t i = 0; i < c->n; i++) {
		const struct mq_check_value *v = &c->v[i];
		fputs(i == 0 ? " | '" : " '", f);
		for (const char *p = v->label; *p; p++) {
			if (*p == '\'')
				fputc('\'', f);
			fputc(*p, f);
		}
		fputs("'=", f);
		put_num(f, v->value);
		fprintf(f, "%s;", mq_figure_unit(v->figure));
		put_range(f, v->warn);
		fputc(';', f);
		put_range(f, v->crit);
		fputs(";0", f);
	}
	fputc('\n', f);
	return mq_out_status(f);
}
