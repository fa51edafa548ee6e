/* SPDX-License-Identifier: Apache-2.0 */
#include <signal.h>
#include <string.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/stop-point.h"

void stop_point(const char *name)
{
	const char *at = getenv("KVRUN_STOP_AT");

	if (!at || strcmp(at, name))
		return;
	log_debug("stopping at %s ($KVRUN_STOP_AT)", name);
	raise(SIGSTOP);
}
