/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/store/proc-stat.h"
#include "tap.h"

TEST(parse_plain)
{
	struct proc_stat st;
	const char *line = "123 (sh) S 1 123 123 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";

	is_int(proc_stat_parse(line, &st), 0);
	is_int(st.state, 'S');
	is_int(st.start_time, 98765);
}

TEST(parse_comm_with_parens_and_spaces)
{
	struct proc_stat st;
	const char *line = "7 (a) b (c d) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0";

	is_int(proc_stat_parse(line, &st), 0);
	is_int(st.state, 'Z');
	is_int(st.start_time, 4242);
}

TEST(parse_malformed)
{
	struct proc_stat st;

	ok(proc_stat_parse("garbage", &st) < 0, "no parenthesis");
	ok(proc_stat_parse("1 (x) S 1 2", &st) < 0, "too short");
}

TEST(self_alive_and_dead_child)
{
	struct proc_stat st;
	pid_t child;

	is_int(proc_stat_read("/proc", getpid(), &st), 0);
	ok(proc_is_alive("/proc", getpid(), st.start_time), "we are alive with our start time");
	ok(!proc_is_alive("/proc", getpid(), st.start_time + 1), "a different start time is another process");
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	ok(proc_is_alive("/proc", child, 0), "child alive");
	kill(child, SIGKILL);
	/* Not reaped yet: a zombie does not count as alive. */
	for (int i = 0; i < 1000 && proc_is_alive("/proc", child, 0); i++)
		usleep(1000);
	ok(!proc_is_alive("/proc", child, 0), "killed child (zombie) is not alive");
	waitpid(child, NULL, 0);
	ok(!proc_is_alive("/proc", child, 0), "reaped child is not alive");
	is_int(proc_stat_read("/proc", child, &st), -ESRCH);
}

TAP_MAIN()
