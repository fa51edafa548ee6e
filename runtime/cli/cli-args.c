/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/cli-help.h"

int cli_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(s, yes[i])) {
			*ret = true;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Digits of an unsigned Go integer literal with base-0 prefixes. */
static int parse_magnitude(const char *s, unsigned long long *ret)
{
	int base = 10;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
		base = 8;
		s += 2;
	} else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
		base = 2;
		s += 2;
	} else if (s[0] == '0' && s[1]) {
		base = 8;
		s++;
	}
	/* strtoull would accept blanks and a sign here; Go does not. */
	if (!*s || (!(s[0] >= '0' && s[0] <= '9') && !(base == 16 && strchr("abcdefABCDEF", s[0]))))
		return -EINVAL;
	errno = 0;
	*ret = strtoull(s, &end, base);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	return 0;
}

int cli_parse_uint(const char *s, unsigned long long *ret)
{
	unsigned long long v;
	int r;

	r = parse_magnitude(s, &v);
	if (r < 0)
		return r;
	*ret = v;
	return 0;
}

int cli_parse_int(const char *s, long long *ret)
{
	bool neg = false;
	unsigned long long v;
	int r;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	r = parse_magnitude(s, &v);
	if (r < 0)
		return r;
	if (neg ? v > (unsigned long long)LLONG_MAX + 1 : v > LLONG_MAX)
		return -ERANGE;
	*ret = neg ? (long long)(0 - v) : (long long)v;
	return 0;
}

static long long duration_unit(const char *u, size_t n)
{
	static const struct {
		const char *name;
		long long ns;
	} units[] = {
	    {"ns", 1LL},       {"us", 1000LL},      {"\xc2\xb5s", 1000LL}, {"\xce\xbcs", 1000LL},
	    {"ms", 1000000LL}, {"s", 1000000000LL}, {"m", 60000000000LL},  {"h", 3600000000000LL},
	};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (strlen(units[i].name) == n && !memcmp(units[i].name, u, n))
			return units[i].ns;
	return 0;
}

int cli_parse_duration(const char *s, long long *ret_ns)
{
	bool neg = false;
	double total = 0;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!strcmp(s, "0")) {
		*ret_ns = 0;
		return 0;
	}
	if (!*s)
		return -EINVAL;
	while (*s) {
		char *end;
		const char *u;
		long long unit;
		double v;

		if (!(*s >= '0' && *s <= '9') && *s != '.')
			return -EINVAL;
		v = strtod(s, &end);
		if (end == s)
			return -EINVAL;
		u = end;
		while (*end && *end != '.' && !(*end >= '0' && *end <= '9'))
			end++;
		unit = duration_unit(u, (size_t)(end - u));
		if (!unit)
			return -EINVAL;
		total += v * (double)unit;
		s = end;
	}
	if (total > (double)LLONG_MAX)
		return -ERANGE;
	*ret_ns = neg ? -(long long)total : (long long)total;
	return 0;
}

void cli_strv_free(struct cli_strv *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int strv_push(struct cli_strv *l, const char *s)
{
	const char **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	nv[l->n++] = s;
	l->v = nv;
	return 0;
}

static const struct cli_flag *flag_find(const struct cli_flag *flags, const char *name, size_t len)
{
	for (const struct cli_flag *f = flags; f && f->name; f++) {
		if (strlen(f->name) == len && !strncmp(f->name, name, len))
			return f;
		if (f->alias && strlen(f->alias) == len && !strncmp(f->alias, name, len))
			return f;
	}
	return NULL;
}

/* Store value into f; the messages are Go's flag package's. */
static int flag_set(const struct cli_flag *f, int len, const char *name, const char *value)
{
	int r = 0;

	switch (f->type) {
	case CLI_BOOL:
		r = cli_parse_bool(value, f->ptr);
		if (r < 0)
			return err_set(-EINVAL, "invalid boolean value \"%s\" for -%.*s: parse error", value, len,
			               name);
		return 0;
	case CLI_STRING:
	case CLI_OPTSTRING:
		*(const char **)f->ptr = value;
		return 0;
	case CLI_INT:
		r = cli_parse_int(value, f->ptr);
		break;
	case CLI_UINT:
		r = cli_parse_uint(value, f->ptr);
		break;
	case CLI_STRV:
		return strv_push(f->ptr, value);
	}
	if (r < 0)
		return err_set(-EINVAL, "invalid value \"%s\" for flag -%.*s: %s", value, len, name,
		               r == -ERANGE ? "value out of range" : "parse error");
	return 0;
}

int cli_parse(const struct cli_command *cmd, const struct cli_flag *flags, int argc, char **argv, int *ret_index)
{
	int i = 1;

	while (i < argc) {
		const char *s = argv[i], *name, *eq, *value = NULL;
		const struct cli_flag *f;
		size_t len;
		int r;

		if (strlen(s) < 2 || s[0] != '-')
			break;
		name = s + 1;
		if (*name == '-') {
			name++;
			if (!*name) {
				i++; /* "--" ends the flags and is consumed */
				break;
			}
		}
		if (*name == '-' || *name == '=')
			return err_set(-EINVAL, "bad flag syntax: %s", s);
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		if (eq)
			value = eq + 1;
		i++;
		f = flag_find(flags, name, len);
		if (!f) {
			if ((len == 4 && !strncmp(name, "help", 4)) || (len == 1 && name[0] == 'h')) {
				cli_print_help(cmd, flags, stdout);
				return CLI_HELP_SHOWN;
			}
			return err_set(-EINVAL, "flag provided but not defined: -%.*s", (int)len, name);
		}
		if (f->type == CLI_BOOL && !value)
			value = "true";
		if (f->type == CLI_OPTSTRING && !value)
			value = "";
		if (!value) {
			if (i >= argc)
				return err_set(-EINVAL, "flag needs an argument: -%.*s", (int)len, name);
			value = argv[i++];
		}
		r = flag_set(f, (int)len, name, value);
		if (r < 0)
			return r;
	}
	*ret_index = i;
	return 0;
}

int cli_check_nargs(const struct cli_command *cmd, int nargs, enum cli_nargs how, int want)
{
	static const char *const words[] = {"exactly", "a minimum of", "a maximum of"};

	if ((how == CLI_ARGS_EXACT && nargs == want) || (how == CLI_ARGS_MIN && nargs >= want) ||
	    (how == CLI_ARGS_MAX && nargs <= want))
		return 0;
	return err_set(-EINVAL, "kvrun: \"%s\" requires %s %d argument(s)", cmd->name, words[how], want);
}

int cli_parse_args(const struct cli_command *cmd, const struct cli_flag *flags, int argc, char **argv,
                   enum cli_nargs how, int want, int *ret_index)
{
	int r, idx;

	r = cli_parse(cmd, flags, argc, argv, &idx);
	if (r != 0)
		return r;
	r = cli_check_nargs(cmd, argc - idx, how, want);
	if (r < 0)
		return r;
	*ret_index = idx;
	return 0;
}

const struct cli_command *cli_command_find(const struct cli_command *const *table, const char *name)
{
	for (size_t i = 0; table && table[i]; i++) {
		const struct cli_command *c = table[i];

		if (!strcmp(c->name, name) || (c->alias && !strcmp(c->alias, name)))
			return c;
	}
	return NULL;
}
