/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "runtime/cmd-boot.h"

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-v"))) {
		printf("kvrun version %s\ncommit: %s\nspec: %s\n", KVRUN_VERSION, KVRUN_COMMIT, KVRUN_OCI_VERSION);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "boot"))
		return cmd_boot(argc - 1, argv + 1);
	fprintf(stderr, "kvrun: no command given\n");
	return 1;
}
