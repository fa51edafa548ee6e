/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Named points of kvrun's lifecycle at which a test can stop a process:
 * when $KVRUN_STOP_AT names the point, the process stops itself there
 * (SIGSTOP; a monitor stops with all its threads), so that a test can kill
 * it, or another process of the container, at exactly that step, then let
 * the rest go on (SIGCONT) and check that nothing is left
 * (tests/integration/test_lifecycle_kill.py lists the points). Unset, a
 * point costs one getenv().
 */
#ifndef KVRUN_COMMON_STOP_POINT_H
#define KVRUN_COMMON_STOP_POINT_H

void stop_point(const char *name);

#endif
