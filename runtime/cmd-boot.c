/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "runtime/cmd-boot.h"

int cmd_boot(int argc, char **argv)
{
	fprintf(stderr, "kvrun boot: the VMM is not part of this build yet\n");
	return 1;
}
