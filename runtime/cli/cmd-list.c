/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun list`: the containers under --root, as a table, ids or JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "runtime/cli/cli-args.h"
#include "runtime/store/state.h"

#define LIST_COLUMNS 6

/* Display width in characters (UTF-8), as Go's tabwriter counts. */
static int text_width(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Go's tabwriter.NewWriter(out, 12, 1, 3, ' ', 0): each column but the last
 * is as wide as its widest cell plus 3, and at least 12. */
static void print_table(char *cells[][LIST_COLUMNS], size_t rows)
{
	int width[LIST_COLUMNS] = {0};

	for (size_t r = 0; r < rows; r++)
		for (int c = 0; c < LIST_COLUMNS - 1; c++) {
			int w = text_width(cells[r][c]) + 3;

			if (w > width[c])
				width[c] = w < 12 ? 12 : w;
		}
	for (size_t r = 0; r < rows; r++) {
		for (int c = 0; c < LIST_COLUMNS - 1; c++)
			printf("%s%*s", cells[r][c], width[c] - text_width(cells[r][c]), "");
		printf("%s\n", cells[r][LIST_COLUMNS - 1]);
	}
}

static int list_table(struct oci_state **states, size_t n)
{
	_cleanup_free_ char *(*cells)[LIST_COLUMNS] = calloc(n + 1, sizeof(*cells));
	_cleanup_free_ char(*pids)[16] = calloc(n + 1, sizeof(*pids));

	if (!cells || !pids)
		return -ENOMEM;
	cells[0][0] = "ID", cells[0][1] = "PID", cells[0][2] = "STATUS";
	cells[0][3] = "BUNDLE", cells[0][4] = "CREATED", cells[0][5] = "OWNER";
	for (size_t i = 0; i < n; i++) {
		snprintf(pids[i], sizeof(pids[i]), "%d", states[i]->pid);
		cells[i + 1][0] = states[i]->id;
		cells[i + 1][1] = pids[i];
		cells[i + 1][2] = (char *)oci_status_name(states[i]->status);
		cells[i + 1][3] = states[i]->bundle ? states[i]->bundle : "";
		cells[i + 1][4] = states[i]->created ? states[i]->created : "";
		cells[i + 1][5] = states[i]->owner ? states[i]->owner : "";
	}
	print_table(cells, n + 1);
	return 0;
}

/* Load every container; ones that cannot be read are skipped with a
 * warning, as runc does. States are moved out of their containers. */
static int load_all(const char *root, struct oci_state ***ret, size_t *ret_n)
{
	char **ids = NULL;
	struct oci_state **states;
	size_t n = 0;
	int r;

	r = container_list_ids(root, &ids);
	if (r < 0)
		return r;
	for (size_t i = 0; ids[i]; i++)
		n++;
	states = calloc(n + 1, sizeof(*states));
	if (!states) {
		container_ids_free(ids);
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; ids[i]; i++) {
		struct container *c;

		if (container_load(root, ids[i], false, &c) < 0) {
			log_warn("load container %s: %s", ids[i], err_msg());
			err_clear();
			continue;
		}
		if (c->state->status == OCI_STATUS_STOPPED)
			c->state->pid = 0;
		states[n++] = TAKE_PTR(c->state);
		container_free(c);
	}
	container_ids_free(ids);
	*ret = states;
	*ret_n = n;
	return 0;
}

static int run_list(struct cli_context *ctx, int argc, char **argv)
{
	const char *format = "table";
	bool quiet = false;
	const struct cli_flag flags[] = {
	    {"format", "f", CLI_STRING, &format, "select one of: table or json (default: \"table\")"},
	    {"quiet", "q", CLI_BOOL, &quiet, "display only container IDs"},
	    CLI_FLAG_END,
	};
	struct oci_state **states = NULL;
	size_t n = 0;
	int r, i;

	r = cli_parse_args(&cli_cmd_list, flags, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (strcmp(format, "table") && strcmp(format, "json"))
		return err_set(-EINVAL, "invalid format option");
	r = load_all(ctx->root, &states, &n);
	if (r < 0)
		return r;
	if (quiet) {
		for (size_t k = 0; k < n; k++)
			printf("%s\n", states[k]->id);
	} else if (!strcmp(format, "json")) {
		_cleanup_free_ char *json = NULL;

		r = oci_state_list_to_json((const struct oci_state *const *)states, n, &json);
		if (r >= 0)
			fputs(json, stdout);
	} else {
		r = list_table(states, n);
	}
	for (size_t k = 0; k < n; k++)
		oci_state_free(states[k]);
	free(states);
	return r < 0 ? r : 0;
}

const struct cli_command cli_cmd_list = {
    .name = "list",
    .summary = "lists containers started by kvrun with the given root",
    .args = "",
    .text = "Where the given root is specified via the global option \"--root\"\n"
	    "(default: \"" KVRUN_DEFAULT_ROOT "\").\n\n"
	    "EXAMPLE 1:\n"
	    "To list containers created via the default \"--root\":\n"
	    "       # kvrun list\n\n"
	    "EXAMPLE 2:\n"
	    "To list containers created using a non-default value for \"--root\":\n"
	    "       # kvrun --root value list",
    .run = run_list,
};
