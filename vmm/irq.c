/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "vmm/counters.h"
#include "vmm/irq.h"

int irq_line_raise(struct irq_line *line)
{
	uint64_t one = 1;

	vmm_count(VMM_IRQ_RAISED, 1);
	if (line->fd < 0) {
		if (line->raise_cb)
			line->raise_cb(line->opaque);
		return 0;
	}
	/* An eventfd write only fails if the counter would overflow, which
	 * means the interrupt is already pending: nothing is lost. */
	if (write(line->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}
