/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-check the ACPI tables with an independent implementation: iasl
 * (Debian package acpica-tools) disassembles each table, and the
 * disassembled DSDT must compile back without errors. Skips when iasl is
 * not installed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fileio.h"
#include "vmm/acpi.h"
#include "tap.h"

#define GPA 0xe0000ULL

static uint8_t buf[ACPI_TABLES_MAX_SIZE];
static char dir[] = "/tmp/kvrun-acpi-iasl-XXXXXX";

/* Run cmd (in dir, output to log); returns its exit status or -1. */
static int run(const char *cmd, const char *log)
{
	char full[1024];
	int st;

	snprintf(full, sizeof(full), "cd %s && %s >%s 2>&1", dir, cmd, log);
	st = system(full);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Print a log file as TAP diagnostics (on failure) and check for errors. */
static int log_has_errors(const char *log)
{
	char path[256], *text = NULL;
	size_t len;
	int bad;

	snprintf(path, sizeof(path), "%s/%s", dir, log);
	if (read_file_all(path, 1 << 20, &text, &len) < 0)
		return 1;
	/* iasl prints "Error" / "Warning" lines with their codes; the summary
	 * of a clean compile says "0 Errors". */
	bad = strstr(text, "Error ") != NULL || strstr(text, "Warning ") != NULL;
	if (bad) {
		for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
			printf("#   %s\n", line);
	}
	free(text);
	return bad;
}

static void write_table(const char *name, uint64_t gpa, const struct acpi_layout *l)
{
	const uint8_t *t = buf + (gpa - GPA);
	size_t len = t[4] | t[5] << 8 | t[6] << 16 | (size_t)t[7] << 24;
	char path[256];

	snprintf(path, sizeof(path), "%s/%s.dat", dir, name);
	ok(len <= l->size && write_file_atomic(path, t, len, 0644) == 0, "write %s", path);
}

static void disassemble(const char *name, const char *sig)
{
	char cmd[256], log[64], dsl[256], *text = NULL;
	size_t len;

	snprintf(cmd, sizeof(cmd), "iasl -d %s.dat", name);
	snprintf(log, sizeof(log), "%s-d.log", name);
	is_int(run(cmd, log), 0);
	ok(!log_has_errors(log), "iasl -d %s.dat reports no errors or warnings", name);
	snprintf(dsl, sizeof(dsl), "%s/%s.dsl", dir, name);
	if (ok(read_file_all(dsl, 1 << 20, &text, &len) == 0, "%s.dsl written", name))
		ok(strstr(text, sig) != NULL, "%s.dsl names %s", name, sig);
	free(text);
}

TEST(iasl_disassembles_and_recompiles)
{
	static const struct acpi_virtio_mmio devs[] = {
	    {0xd0000000, 0x1000, 5},
	    {0xd0001000, 0x1000, 6},
	};
	struct acpi_config cfg = {
	    .ncpus = 4,
	    .virtio = devs,
	    .nr_virtio = 2,
	    .sleep_space = ACPI_GAS_SPACE_IO,
	    .sleep_addr = 0x3c0,
	    .reset_reg = true,
	    .com1 = true,
	};
	struct acpi_layout l;
	char *text = NULL;
	char path[256];
	size_t len;

	if (system("command -v iasl >/dev/null 2>&1") != 0)
		tap_skip_all("iasl not installed (Debian package acpica-tools)");
	if (!mkdtemp(dir))
		tap_skip_all("mkdtemp failed");
	is_int(acpi_build_tables(&cfg, GPA, buf, sizeof(buf), &l), 0);
	write_table("dsdt", l.dsdt, &l);
	write_table("facp", l.fadt, &l);
	write_table("apic", l.madt, &l);
	write_table("xsdt", l.xsdt, &l);
	disassemble("dsdt", "LNRO0005");
	disassemble("facp", "Hardware Reduced (V5) : 1");
	disassemble("apic", "[Local APIC NMI]");
	disassemble("xsdt", "ACPI Table Address   1");

	/* The DSDT's source must compile back cleanly. */
	is_int(run("iasl -p recompiled dsdt.dsl", "dsdt-c.log"), 0);
	ok(!log_has_errors("dsdt-c.log"), "recompiling dsdt.dsl gives no errors or warnings");
	snprintf(path, sizeof(path), "%s/dsdt.dsl", dir);
	if (read_file_all(path, 1 << 20, &text, &len) == 0) {
		ok(strstr(text, "Memory32Fixed (ReadWrite,") != NULL, "dsdt.dsl has Memory32Fixed");
		ok(strstr(text, "Interrupt (ResourceConsumer, Edge, ActiveHigh, Exclusive, ,, )") != NULL,
		   "dsdt.dsl has the edge/high/exclusive Interrupt");
		ok(strstr(text, "Name (\\_S5, Package (0x04)") != NULL, "dsdt.dsl has \\_S5");
		ok(strstr(text, "EisaId (\"PNP0501\")") != NULL, "dsdt.dsl has COM1's EisaId");
		ok(strstr(text, "IRQNoFlags ()") != NULL, "dsdt.dsl has COM1's IRQNoFlags");
		free(text);
	}
	is_int(rm_rf(dir), 0);
}

TAP_MAIN()
