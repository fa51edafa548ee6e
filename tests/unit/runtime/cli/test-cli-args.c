/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "tap.h"

static const struct cli_command cmd = {.name = "test", .summary = "a test", .args = "<id>", .run = NULL};
/* cmd.run == NULL would print the main help; give it one. */
static int dummy_run(struct cli_context *ctx, int argc, char **argv)
{
	return 0;
}
static const struct cli_command tcmd = {.name = "test", .summary = "a test", .args = "<id>", .run = dummy_run};

struct opts {
	bool detach;
	const char *bundle;
	long long n;
	unsigned long long u;
	struct cli_strv env;
};

static int parse(struct opts *o, int *idx, int argc, ...)
{
	char *argv[16];
	va_list ap;
	const struct cli_flag flags[] = {
	    {"detach", "d", CLI_BOOL, &o->detach, "detach"}, {"bundle", "b", CLI_STRING, &o->bundle, "bundle"},
	    {"num", NULL, CLI_INT, &o->n, "a number"},       {"preserve-fds", NULL, CLI_UINT, &o->u, "fds"},
	    {"env", "e", CLI_STRV, &o->env, "env"},          CLI_FLAG_END,
	};

	va_start(ap, argc);
	argv[0] = "test";
	for (int i = 1; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[argc] = NULL;
	*o = (struct opts){0};
	err_clear();
	return cli_parse(&tcmd, flags, argc, argv, idx);
}

TEST(flag_forms)
{
	struct opts o;
	int idx;

	is_int(parse(&o, &idx, 4, "--bundle", "/b", "-d", "id"), 0);
	is_str(o.bundle, "/b");
	ok(o.detach, "-d sets detach");
	is_int(idx, 4);
	is_int(parse(&o, &idx, 3, "--bundle=/c", "id"), 0);
	is_str(o.bundle, "/c");
	is_int(parse(&o, &idx, 4, "-bundle", "/d", "id"), 0);
	is_str(o.bundle, "/d");
	is_int(parse(&o, &idx, 3, "-b=/e", "id"), 0);
	is_str(o.bundle, "/e");
	is_int(parse(&o, &idx, 3, "--detach=false", "id"), 0);
	ok(!o.detach, "--detach=false");
	is_int(parse(&o, &idx, 2, "-detach=1"), 0);
	ok(o.detach, "-detach=1");
	cli_strv_free(&o.env);
}

TEST(stops_at_first_positional)
{
	struct opts o;
	int idx;

	is_int(parse(&o, &idx, 4, "id", "--detach", "x"), 0);
	is_int(idx, 1);
	ok(!o.detach, "flag after positional is an argument");
	is_int(parse(&o, &idx, 4, "--", "--detach", "x"), 0);
	is_int(idx, 2);
	is_int(parse(&o, &idx, 3, "-", "x"), 0);
	is_int(idx, 1);
	/* A string flag takes the next word even if it starts with a dash. */
	is_int(parse(&o, &idx, 4, "-b", "-d", "id"), 0);
	is_str(o.bundle, "-d");
	ok(!o.detach, "-d was the value");
}

TEST(repeated_list_flag)
{
	struct opts o;
	int idx;

	is_int(parse(&o, &idx, 6, "-e", "A=1", "--env=B=2", "id", "x"), 0);
	is_int(o.env.n, 2);
	is_str(o.env.v[0], "A=1");
	is_str(o.env.v[1], "B=2");
	cli_strv_free(&o.env);
}

TEST(errors)
{
	struct opts o;
	int idx;

	is_int(parse(&o, &idx, 2, "--bogus"), -EINVAL);
	is_str(err_msg(), "flag provided but not defined: -bogus");
	is_int(parse(&o, &idx, 2, "--bundle"), -EINVAL);
	is_str(err_msg(), "flag needs an argument: -bundle");
	is_int(parse(&o, &idx, 2, "--detach=maybe"), -EINVAL);
	is_str(err_msg(), "invalid boolean value \"maybe\" for -detach: parse error");
	is_int(parse(&o, &idx, 3, "--num", "x1"), -EINVAL);
	is_str(err_msg(), "invalid value \"x1\" for flag -num: parse error");
	is_int(parse(&o, &idx, 3, "--preserve-fds", "-1"), -EINVAL);
	is_str(err_msg(), "invalid value \"-1\" for flag -preserve-fds: parse error");
	is_int(parse(&o, &idx, 3, "--num", "99999999999999999999"), -EINVAL);
	is_str(err_msg(), "invalid value \"99999999999999999999\" for flag -num: value out of range");
	is_int(parse(&o, &idx, 2, "---x"), -EINVAL);
	is_str(err_msg(), "bad flag syntax: ---x");
}

TEST(help_flag)
{
	struct opts o;
	int idx;

	int saved = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY);
	int r1, r2;

	/* The help text must not mix with the TAP stream. */
	fflush(stdout);
	dup2(null, STDOUT_FILENO);
	r1 = parse(&o, &idx, 2, "--help");
	r2 = parse(&o, &idx, 3, "-h", "x");
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(null);
	is_int(r1, CLI_HELP_SHOWN);
	is_int(r2, CLI_HELP_SHOWN);
}

TEST(nargs)
{
	is_int(cli_check_nargs(&cmd, 1, CLI_ARGS_EXACT, 1), 0);
	is_int(cli_check_nargs(&cmd, 0, CLI_ARGS_EXACT, 1), -EINVAL);
	is_str(err_msg(), "kvrun: \"test\" requires exactly 1 argument(s)");
	is_int(cli_check_nargs(&cmd, 0, CLI_ARGS_MIN, 1), -EINVAL);
	is_str(err_msg(), "kvrun: \"test\" requires a minimum of 1 argument(s)");
	is_int(cli_check_nargs(&cmd, 3, CLI_ARGS_MAX, 2), -EINVAL);
	is_str(err_msg(), "kvrun: \"test\" requires a maximum of 2 argument(s)");
	is_int(cli_check_nargs(&cmd, 5, CLI_ARGS_MIN, 1), 0);
}

TEST(numbers)
{
	long long v;
	unsigned long long u;
	bool b;

	is_int(cli_parse_int("42", &v), 0);
	is_int(v, 42);
	is_int(cli_parse_int("-0x10", &v), 0);
	is_int(v, -16);
	is_int(cli_parse_int("0o17", &v), 0);
	is_int(v, 15);
	is_int(cli_parse_int("017", &v), 0);
	is_int(v, 15);
	is_int(cli_parse_int("0b101", &v), 0);
	is_int(v, 5);
	is_int(cli_parse_int("", &v), -EINVAL);
	is_int(cli_parse_int(" 1", &v), -EINVAL);
	is_int(cli_parse_int("1x", &v), -EINVAL);
	is_int(cli_parse_int("9223372036854775808", &v), -ERANGE);
	is_int(cli_parse_int("-9223372036854775808", &v), 0);
	is_int(cli_parse_uint("-1", &u), -EINVAL);
	is_int(cli_parse_bool("True", &b), 0);
	ok(b, "True");
	is_int(cli_parse_bool("yes", &b), -EINVAL);
}

TEST(durations)
{
	long long ns;

	is_int(cli_parse_duration("5s", &ns), 0);
	is_int(ns, 5000000000LL);
	is_int(cli_parse_duration("1m30s", &ns), 0);
	is_int(ns, 90000000000LL);
	is_int(cli_parse_duration("250ms", &ns), 0);
	is_int(ns, 250000000LL);
	is_int(cli_parse_duration("1.5h", &ns), 0);
	is_int(ns, 5400000000000LL);
	is_int(cli_parse_duration("0", &ns), 0);
	is_int(ns, 0);
	is_int(cli_parse_duration("-2s", &ns), 0);
	is_int(ns, -2000000000LL);
	is_int(cli_parse_duration("5", &ns), -EINVAL);
	is_int(cli_parse_duration("5x", &ns), -EINVAL);
	is_int(cli_parse_duration("", &ns), -EINVAL);
}

TAP_MAIN()
