/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Doorbells through ioeventfd: KVM completes the guest's QueueNotify write
 * without a userspace exit and signals an eventfd; the event loop then calls
 * the device, as the vCPU thread would have.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "virtio/mmio.h"
#include "vmm/counters.h"

void virtio_mmio_notify_fd_handler(int fd, uint32_t revents, void *opaque)
{
	struct virtio_mmio_notifier *n = opaque;
	struct virtio_mmio *m = n->m;
	uint64_t count;

	/* Drain the counter; EAGAIN only means another read got it first. */
	if (read(fd, &count, sizeof(count)) < 0) {
		if (errno != EAGAIN)
			return;
	} else {
		vmm_count(VMM_DOORBELL_WAKEUPS, 1);
		vmm_count(VMM_DOORBELL_SIGNALS, count);
	}
	if (!virtio_mmio_active(m) || !m->ops->queue_notify)
		return;
	if (n->queue != VIRTIO_MMIO_ALL_QUEUES) {
		if (n->queue < m->nr_queues)
			m->ops->queue_notify(m, n->queue);
		return;
	}
	for (uint32_t q = 0; q < m->nr_queues; q++)
		m->ops->queue_notify(m, q);
}

int virtio_mmio_add_notify_fd(struct virtio_mmio *m, struct event_loop *loop, int fd, uint32_t queue)
{
	struct virtio_mmio_notifier *n;
	int r;

	if (fd < 0 || (queue != VIRTIO_MMIO_ALL_QUEUES && queue >= m->nr_queues) || (m->loop && m->loop != loop))
		return -EINVAL;
	if (m->nr_notifiers >= VIRTIO_MMIO_MAX_QUEUES + 1)
		return -ENOSPC;
	n = &m->notifiers[m->nr_notifiers];
	*n = (struct virtio_mmio_notifier){.m = m, .fd = fd, .queue = queue};
	r = event_loop_add(loop, fd, EPOLLIN, virtio_mmio_notify_fd_handler, n);
	if (r < 0)
		return r;
	m->loop = loop;
	m->nr_notifiers++;
	return 0;
}

void virtio_mmio_destroy(struct virtio_mmio *m)
{
	for (unsigned int i = 0; i < m->nr_notifiers; i++)
		event_loop_remove(m->loop, m->notifiers[i].fd);
	m->nr_notifiers = 0;
	pthread_mutex_destroy(&m->lock);
}
