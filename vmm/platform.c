/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The small fixed ports of the platform: the two ways an x86 guest asks
 * for a reset (i8042 command 0xfe, port 0xcf9), the CMOS clock and the
 * ACPI sleep register; and the platform's part of a snapshot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "vmm/platform.h"
#include "vmm/vm.h"

#define I8042_DATA_PORT 0x60
#define I8042_COMMAND_PORT 0x64
#define I8042_CMD_RESET 0xfe
#define RST_CNT_PORT 0xcf9
#define RST_CNT_RESET 0x04

static void zero_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	memset(data, 0, len);
}

/* i8042: no keyboard behind it. The status register always says "output
 * buffer full, input buffer empty": Linux's i8042 driver then fails its
 * flush at once ("no controller", no slow emulated timeouts waiting for
 * replies), while its reset path (reboot=k) sees an empty input buffer and
 * writes command 0xfe straight away, which pulses the reset line. */
#define I8042_STATUS_OBF 0x01

static void i8042_status_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	memset(data, 0, len);
	*(uint8_t *)data = I8042_STATUS_OBF;
}

static void i8042_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	if (*(const uint8_t *)data == I8042_CMD_RESET)
		vm_stopf(opaque, VM_EXIT_REBOOT, 0, "i8042 reset");
}

static const struct bus_dev_ops i8042_ops = {.read = i8042_status_read, .write = i8042_write};
static const struct bus_dev_ops i8042_data_ops = {.read = zero_read};

static void rst_cnt_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	if (*(const uint8_t *)data & RST_CNT_RESET)
		vm_stopf(opaque, VM_EXIT_REBOOT, 0, "port 0xcf9 reset");
}

static const struct bus_dev_ops rst_cnt_ops = {.read = zero_read, .write = rst_cnt_write};

static int platform_register_reset(struct vm *vm)
{
	int r;

	r = bus_register(&vm->pio, I8042_DATA_PORT, 1, &i8042_data_ops, vm);
	if (r >= 0)
		r = bus_register(&vm->pio, I8042_COMMAND_PORT, 1, &i8042_ops, vm);
	if (r < 0)
		return err_setsys(r, "registering the i8042 at 0x%x", I8042_DATA_PORT);
	r = bus_register(&vm->pio, RST_CNT_PORT, 1, &rst_cnt_ops, vm);
	if (r < 0)
		return err_setsys(r, "registering the reset port 0x%x", RST_CNT_PORT);
	return 0;
}

/* On the vCPU thread that wrote the FADT's sleep (or reset) register. */
static void acpi_sleep_event(void *opaque, enum acpi_sleep_event ev)
{
	if (ev == ACPI_SLEEP_POWER_OFF)
		vm_stopf(opaque, VM_EXIT_POWEROFF, 0, "ACPI S5");
	else if (ev == ACPI_SLEEP_RESET)
		vm_stopf(opaque, VM_EXIT_REBOOT, 0, "ACPI reset register");
}

int platform_create(struct vm *vm, struct platform **ret)
{
	struct platform *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->sleep = (struct acpi_sleep_dev){.event = acpi_sleep_event, .opaque = vm};
	r = platform_register_reset(vm);
	if (r >= 0)
		r = rtc_create(vm, &p->rtc);
	if (r >= 0) {
		r = bus_register(&vm->pio, ACPI_SLEEP_PORT, 1, &acpi_sleep_dev_ops, &p->sleep);
		if (r < 0)
			r = err_setsys(r, "registering the ACPI sleep register at 0x%x", ACPI_SLEEP_PORT);
	}
	if (r < 0) {
		rtc_free(p->rtc);
		free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void platform_free(struct platform *p)
{
	if (!p)
		return;
	rtc_free(p->rtc);
	free(p);
}

int platform_state_save(void *opaque, struct snap_buf *out)
{
	struct platform *p = opaque;

	return rtc_state_save(p->rtc, out);
}

int platform_state_load(void *opaque, const void *data, size_t len)
{
	struct platform *p = opaque;

	return rtc_state_load(p->rtc, data, len);
}
