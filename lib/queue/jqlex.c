/*
 * jqlex.c: what a jq filter's text calls, told from jq 1.6's tokens.
 *
 * A filter sees the message and nothing of the process that runs it: the
 * worker it runs in has an empty environment (jqrun.c), and this refuses,
 * before the filter is stored or run, every part of jq that would read
 * or show something else.  Refused: modules (import, include, module,
 * a::b names, modulemeta), which read files; $ENV and env; input, inputs,
 * input_filename and input_line_number; debug and stderr, which write;
 * get_search_list, get_prog_origin, get_jq_origin and jq's own variables
 * ($__loc__, any $__name), which show how the process and the program
 * are put together; halt and halt_error, which end the one program that
 * runs every group's filter (filter.c) instead of this filter alone.
 * The clock (now, localtime and the rest) is allowed: it is no secret.
 * The names are refused wherever they are called, even a def of one's own.
 *
 * The scanner follows jq's lexer (src/lexer.l): strings, in which \( ... )
 * is an expression again; comments to the end of the line; .name is one
 * token, a field; $ and a name are two (jq takes "$ ENV" too).  A name is
 * a call unless it follows $ or is an object key: the first token after
 * '{' or ',' directly inside braces, where jq 1.6 takes only keys
 * ({name: v}, {name}, which is .name).  if ... end counts as a bracket, as
 * a later jq allows an if as an object's value.
 *
 * It also says whether the text is whole: every bracket it opens closed
 * inside it, no string left open.  filter.c sets each group's filter in
 * brackets of its own inside one program, so a filter that closes more
 * than it opens could reach its neighbours even when it compiles.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "queue.h"

#define DEPTH_MAX 256

/* The names refused as calls, and what a filter may not do. */
static const struct {
	const char *name, *why;
} refused[] = {
	{ "env", "read the environment" },
	{ "input", "read input other than its message" },
	{ "inputs", "read input other than its message" },
	{ "input_filename", "read input other than its message" },
	{ "input_line_number", "read input other than its message" },
	{ "debug", "write outside itself" },
	{ "stderr", "write outside itself" },
	{ "modulemeta", "load modules, which are files" },
	{ "get_search_list", "look at the process that runs it" },
	{ "get_prog_origin", "look at the process that runs it" },
	{ "get_jq_origin", "look at the process that runs it" },
	{ "halt", "end every group's filter at once" },
	{ "halt_error", "end every group's filter at once" },
};

enum tok { T_NONE, T_OPEN, T_COMMA, T_DOLLAR, T_NAME, T_OTHER };

struct lex {
	const char *p;
	int line;
	char stack[DEPTH_MAX];          /* ( [ { i (if), I (\(), s (string) */
	int depth;
	enum tok prev;                  /* the token before this one */
	char *broken;                   /* the first reason it is not whole */
	size_t size;
};

static int
refuse(const struct lex *l, const char *what, int len, const char *why)
{
	return mq_err(EX_USAGE, "bad filter: %.*s at line %d: a filter may "
	    "not %s", len, what, l->line, why);
}

/* Keeps the first reason the text is not whole. */
static void __attribute__((format(printf, 2, 3)))
not_whole(struct lex *l, const char *fmt, ...)
{
	if (l->broken[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->broken, l->size, fmt, ap);
	va_end(ap);
}

static int
push(struct lex *l, char c)
{
	if (l->depth == DEPTH_MAX)
		return mq_err(EX_USAGE, "bad filter: it nests deeper than %d at "
		    "line %d", DEPTH_MAX, l->line);
	l->stack[l->depth++] = c;
	return 0;
}

static char
top(const struct lex *l)
{
	return l->depth ? l->stack[l->depth - 1] : 0;
}

/* A closing ) ] }: jq's lexer pops only the bracket it matches. */
static void
close_one(struct lex *l, char c)
{
	char want = c == ')' ? top(l) == 'I' ? 'I' : '(' : c == ']' ? '[' : '{';
	if (top(l) == want)
		l->depth--;
	else
		not_whole(l, "'%c' at line %d closes what it did not open", c,
		    l->line);
}

static bool
name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/* A name ([a-zA-Z_][a-zA-Z_0-9]*, joined by ::): its length. */
static int
name_len(const char *s)
{
	int n = 0;
	for (;;) {
		while (name_char(s[n]))
			n++;
		if (s[n] != ':' || s[n + 1] != ':' || !name_start(s[n + 2]))
			return n;
		n += 2;
	}
}

/* A name that is neither a field nor a variable nor a key. */
static int
called(struct lex *l, const char *s, int n)
{
	static const char *const modules[] = { "import", "include", "module" };
	for (size_t i = 0; i < sizeof modules / sizeof *modules; i++)
		if ((int)strlen(modules[i]) == n && !strncmp(s, modules[i], n))
			return refuse(l, s, n, "load modules, which are files");
	if (memmem(s, n, "::", 2))
		return refuse(l, s, n, "call into modules, which are files");
	if (n == 7 && !strncmp(s, "__loc__", 7))
		return refuse(l, s, n, "look at how its program is put "
		    "together");
	if (n == 2 && !strncmp(s, "if", 2))
		return push(l, 'i');
	if (n == 3 && !strncmp(s, "end", 3)) {
		if (top(l) == 'i')
			l->depth--;
		else
			not_whole(l, "'end' at line %d ends no if", l->line);
		return 0;
	}
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
		if ((int)strlen(refused[i].name) == n &&
		    !strncmp(s, refused[i].name, n))
			return refuse(l, s, n, refused[i].why);
	return 0;
}

static int
name(struct lex *l)
{
	const char *s = l->p;
	int n = name_len(s);
	l->p += n;
	enum tok prev = l->prev;
	l->prev = T_NAME;
	if (prev == T_DOLLAR) {
		char var[80];
		snprintf(var, sizeof var, "$%.*s", n, s);
		if (n == 3 && !strncmp(s, "ENV", 3))
			return refuse(l, var, INT_MAX, "read the environment");
		if (n >= 2 && !strncmp(s, "__", 2))
			return refuse(l, var, INT_MAX, "look at how its program "
			    "is put together");
		return 0;
	}
	if ((prev == T_OPEN || prev == T_COMMA) && top(l) == '{')
		return 0;               /* a key */
	return called(l, s, n);
}

/* Inside a string: up to its end or an interpolation. */
static int
string(struct lex *l)
{
	for (;;) {
		char c = *l->p;
		if (!c)
			return 0;
		l->p++;
		if (c == '"') {
			l->depth--;
			l->prev = T_OTHER;
			return 0;
		}
		if (c == '\n')
			l->line++;
		if (c != '\\')
			continue;
		if (*l->p == '(') {
			l->p++;
			l->prev = T_OPEN;
			return push(l, 'I');
		}
		if (*l->p == '\n')
			l->line++;
		if (*l->p)
			l->p++;
	}
}

static void
number(struct lex *l)
{
	const char *p = l->p;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (*p == 'e' || *p == 'E') {
		const char *e = p + 1 + (p[1] == '+' || p[1] == '-');
		if (*e >= '0' && *e <= '9')
			for (p = e; *p >= '0' && *p <= '9'; p++)
				;
	}
	l->p = p;
	l->prev = T_OTHER;
}

/* One token (or a comment, or blanks) outside strings. */
static int
token(struct lex *l)
{
	char c = *l->p;
	if (c == '\n' || c == ' ' || c == '\t') {
		l->line += c == '\n';
		l->p++;
		return 0;
	}
	if (c == '#') {
		l->p += strcspn(l->p, "\r\n");
		return 0;
	}
	if (name_start(c))
		return name(l);
	if ((c >= '0' && c <= '9') || (c == '.' && l->p[1] >= '0' &&
	    l->p[1] <= '9')) {
		number(l);
		return 0;
	}
	l->p++;
	l->prev = T_OTHER;
	switch (c) {
	case '.':
		if (name_start(*l->p))          /* a field: one token */
			while (name_char(*l->p))
				l->p++;
		else if (*l->p == '.')
			l->p++;
		return 0;
	case '@':
		while (name_char(*l->p))
			l->p++;
		return 0;
	case '"':
		return push(l, 's');
	case '(': case '[': case '{':
		l->prev = T_OPEN;
		return push(l, c);
	case ')': case ']': case '}':
		close_one(l, c);
		return 0;
	case ',':
		l->prev = T_COMMA;
		return 0;
	case '$':
		l->prev = T_DOLLAR;
		return 0;
	}
	return 0;
}

int
mq_jqlex_check(const char *expr, char *broken, size_t size)
{
	struct lex l = { .p = expr, .line = 1, .broken = broken, .size = size };
	broken[0] = 0;
	while (*l.p)
		if ((top(&l) == 's' ? string(&l) : token(&l)) < 0)
			return -1;
	char t = top(&l);
	if (t == 's' || t == 'I')
		not_whole(&l, "a string is left open at its end");
	else if (t == 'i')
		not_whole(&l, "an if is left open at its end");
	else if (t)
		not_whole(&l, "a '%c' is left open at its end", t);
	return 0;
}
