/*
 * test_jqlex.c: what jqlex.c lets a jq filter call, as a table: the parts
 * of jq that read files, the environment or other input, write, or look
 * at the process, refused wherever jq would call them (after "$ ", in an
 * interpolation, a def of one's own); fields, keys, variables, strings
 * and comments of those names accepted; and whether a text is whole.
 */
#include <string.h>
#include <sysexits.h>

#include "queue.h"
#include "t.h"

static const char *const refused[] = {
	"$ENV", "$ENV.HOME", "$ ENV", "$\t# a comment\nENV", "env", "env.HOME",
	".a | env", "[env]", "{a: (env)}", "{a: 1 | env}", "\"\\(env)\"",
	"\"a\\(\"b\\(env)\")\"", "\"\\(1, env)\"", "{\"k\\(env)\": 1}",
	"input", "inputs", "[limit(1; inputs)]", "input_filename",
	"input_line_number", "debug", ". | debug", "stderr", "\"x\" | modulemeta",
	"get_search_list", "get_prog_origin", "get_jq_origin", "$__loc__",
	"$ __loc__", "{$__loc__}", "__loc__", "1 as $__x | 1", "halt",
	"halt_error", "halt_error(1)", "import \"x\" as x; .",
	"import \"x\" as $x {search: \"/tmp\"}; .", "include \"x\"; .",
	"module {}; .", "x::f", "a::b::c(1)", "def env: 1; env",
	"def f(input): 1; f(2)", "if . then env else 1 end",
	"{a: if . then 1, env else 2 end}", "reduce env as $x (0; 1)",
	"1 as $x | {a: [env]}", "{(env): 1}", "{a: 1, b: 2} | env",
	". as {a: $x} | env", "@base64 \"\\(env)\"", "1.env",
};

static const char *const accepted[] = {
	".env", ".env.HOME", ".input | .debug", ".[\"env\"]", ".\"env\"",
	"\"env\"", "\"$ENV\"", "\"\\\\(env)\"", "# env and $ENV\n.a",
	"{env: 1}", "{env}", "{env, input}", "{a: 1, env: 2}", "{\"a\": 1, env}",
	"{if: 1, end: 2, import: 3}", "{$x}", ". as $env | $env",
	". as {env: $e, input: $i} | $e", "def environment: 1; environment",
	"envy", "input2", "halting", "now > 0", "localtime", "builtins | length",
	"{a: .b | .env}", "[.[] | {env: .}]", ".a? // \"env\"",
	"if .a then {env: 1} else {input} end", "@text \"\\(.env)\"",
	"reduce .[] as $env (0; . + $env)", "label $env | 1",
};

static const struct {
	const char *text;
	bool whole;
} wholes[] = {
	{ ".a", true }, { "(.a)", true }, { "[.a, {b: (1)}]", true },
	{ "\"(\" + \")\"", true }, { "\"\\(.a)\" | \"\\(\"\\(1)\")\"", true },
	{ "# )]}\n.a", true }, { "if . then 1 elif 2 then 3 else 4 end", true },
	{ "\"\\\")\"", true }, { "{if: 1, end: 2}", true },
	{ ".n) catch null] | .[0]), ([try (true", false }, { ")", false },
	{ "(", false }, { "[", false }, { "{", false }, { "(]", false },
	{ "\"abc", false }, { "\"\\(1", false }, { "\"\\(1)", false },
	{ "1 end", false }, { "if . then 1 else 2", false }, { "\"\\", false },
	{ "1 # )", true }, { "1 #\\\n)", false },
};

/* s on one line, for the TAP output. */
static const char *
shown(const char *s)
{
	static char buf[256];
	size_t o = 0;
	for (; *s && o + 3 < sizeof buf; s++)
		if (*s == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else
			buf[o++] = *s;
	buf[o] = 0;
	return buf;
}

int
main(void)
{
	char broken[256];
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		int rc = mq_jqlex_check(refused[i], broken, sizeof broken);
		ok(rc < 0 && mq_errcode() == EX_USAGE &&
		    !strncmp(mq_errmsg(), "bad filter: ", 12) &&
		    strstr(mq_errmsg(), " a filter may not "),
		    "refused: %s (%s)", shown(refused[i]), rc < 0 ? mq_errmsg() : "");
	}
	for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
		int rc = mq_jqlex_check(accepted[i], broken, sizeof broken);
		ok(rc == 0 && !broken[0], "accepted: %s (%s)", shown(accepted[i]),
		    rc < 0 ? mq_errmsg() : broken);
	}
	for (size_t i = 0; i < sizeof wholes / sizeof *wholes; i++) {
		int rc = mq_jqlex_check(wholes[i].text, broken, sizeof broken);
		ok(rc == 0 && !broken[0] == wholes[i].whole, "%s: %s (%s)",
		    wholes[i].whole ? "whole" : "not whole", shown(wholes[i].text),
		    broken);
	}
	char deep[600];
	memset(deep, '(', sizeof deep - 1);
	deep[sizeof deep - 1] = 0;
	ok(mq_jqlex_check(deep, broken, sizeof broken) < 0 &&
	    strstr(mq_errmsg(), "deeper"), "too deep: %s", mq_errmsg());
	return t_done();
}
