/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal TAP producer for unit tests (meson test protocol 'tap').
 *
 *   TEST(name) { ok(x == 1, "x is one"); is_int(f(), 0); is_str(s, "a"); }
 *   TAP_MAIN()   (once per test program)
 *
 * Every TEST runs in registration order; each assertion is one TAP line.
 * A test program that cannot run prints "1..0 # SKIP reason" (tap_skip_all).
 */
#ifndef KVRUN_TESTS_TAP_H
#define KVRUN_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tap_test {
	const char *name;
	void (*fn)(void);
};

extern struct tap_test tap_tests[];
extern int tap_nr_tests;
extern int tap_count, tap_failed;
extern const char *tap_current;

#define TAP_MAX_TESTS 512

#define TEST(name)                                                                         \
	static void test_##name(void);                                                     \
	__attribute__((constructor)) static void tap_register_##name(void)                 \
	{                                                                                  \
		if (tap_nr_tests < TAP_MAX_TESTS)                                          \
			tap_tests[tap_nr_tests++] = (struct tap_test){#name, test_##name}; \
	}                                                                                  \
	static void test_##name(void)

__attribute__((format(printf, 4, 5))) static inline int tap_ok(int cond, const char *file, int line, const char *fmt,
                                                               ...)
{
	va_list ap;

	char desc[1024];

	tap_count++;
	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	/* A description is one TAP line: control characters would start a new one. */
	for (char *c = desc; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
	printf("%sok %d - %s: %s\n", cond ? "" : "not ", tap_count, tap_current, desc);
	if (!cond) {
		tap_failed++;
		printf("#   at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want)                                                           \
	do {                                                                        \
		long long _g = (long long)(got), _w = (long long)(want);            \
		if (!tap_ok(_g == _w, __FILE__, __LINE__, "%s == %s", #got, #want)) \
			printf("#   got %lld, want %lld\n", _g, _w);                \
	} while (0)
#define is_str(got, want)                                                                      \
	do {                                                                                   \
		const char *_g = (got), *_w = (want);                                          \
		int _c = _g && _w ? strcmp(_g, _w) == 0 : _g == _w;                            \
		if (!tap_ok(_c, __FILE__, __LINE__, "%s == \"%s\"", #got, _w ? _w : "(null)")) \
			printf("#   got \"%s\"\n", _g ? _g : "(null)");                        \
	} while (0)

static inline void tap_skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	exit(0); /* meson reads any non-zero exit of a TAP test as an error */
}

#define TAP_MAIN()                                       \
	struct tap_test tap_tests[TAP_MAX_TESTS];        \
	int tap_nr_tests, tap_count, tap_failed;         \
	const char *tap_current = "";                    \
	int main(void)                                   \
	{                                                \
		setvbuf(stdout, NULL, _IOLBF, 0);        \
		for (int i = 0; i < tap_nr_tests; i++) { \
			tap_current = tap_tests[i].name; \
			tap_tests[i].fn();               \
		}                                        \
		printf("1..%d\n", tap_count);            \
		return tap_failed ? 1 : 0;               \
	}

#endif
