/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/store/proc-stat.h"

int proc_stat_parse(const char *text, struct proc_stat *ret)
{
	const char *p = strrchr(text, ')');
	unsigned long long start;
	char *end;

	/* After "pid (comm)": state is field 3, starttime field 22. */
	if (!p || p[1] != ' ' || !p[2])
		return err_set(-EINVAL, "malformed /proc stat line");
	p += 2;
	ret->state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return err_set(-EINVAL, "short /proc stat line");
		p++;
	}
	errno = 0;
	start = strtoull(p, &end, 10);
	if (end == p || errno)
		return err_set(-EINVAL, "bad start time in /proc stat line");
	ret->start_time = start;
	return 0;
}

int proc_stat_read(const char *proc_root, pid_t pid, struct proc_stat *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	int r;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid);
	r = read_file_all(path, 4096, &text, NULL);
	if (r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return err_setsys(r, "read %s", path);
	return proc_stat_parse(text, ret);
}

bool proc_is_alive(const char *proc_root, pid_t pid, unsigned long long start_time)
{
	struct proc_stat st;

	if (proc_stat_read(proc_root, pid, &st) < 0)
		return false;
	if (st.state == 'Z' || st.state == 'X' || st.state == 'x')
		return false;
	return start_time == 0 || st.start_time == start_time;
}
