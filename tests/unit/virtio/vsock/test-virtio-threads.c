/* SPDX-License-Identifier: Apache-2.0 */
/* Devices on the VMM's real event loop thread, kicked through an eventfd
 * (as KVM's ioeventfd would), while this thread plays the vCPU. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake-driver.h"
#include "tap.h"
#include "virtio/vsock/packet.h"
#include "virtio/vsock/vsock.h"

#define CID 5
#define RX_LEN (44 + 4096)
#define FEATURES (VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX))

static struct fake_drv d;
static uint64_t rxgpa[64];
static int doorbell;

static void kick(void)
{
	uint64_t one = 1;

	if (write(doorbell, &one, 8) != 8)
		abort();
}

static void post_rx(uint64_t gpa)
{
	rxgpa[fake_add(&d, 0, (struct fbuf[]){{gpa, RX_LEN, true}}, 1, false)] = gpa;
}

static void send_pkt(uint16_t op, const char *data, uint32_t len)
{
	static uint64_t hdr_gpa, data_gpa;
	struct vsock_hdr h = {.src_cid = CID,
	                      .dst_cid = VSOCK_HOST_CID,
	                      .src_port = 7000,
	                      .dst_port = 1234,
	                      .len = len,
	                      .type = VSOCK_TYPE_STREAM,
	                      .op = op,
	                      .buf_alloc = 65536};
	uint32_t id, used_len;

	if (!hdr_gpa) {
		hdr_gpa = fake_alloc(&d, 44);
		data_gpa = fake_alloc(&d, 4096);
	}
	memcpy(fake_ptr(&d, hdr_gpa), &h, 44);
	if (len)
		memcpy(fake_ptr(&d, data_gpa), data, len);
	fake_add(&d, 1, (struct fbuf[]){{hdr_gpa, 44, false}, {data_gpa, len, false}}, len ? 2 : 1, false);
	kick();
	ok(fake_wait_used(&d, 1, &id, &used_len), "tx packet consumed");
}

static bool recv_pkt(struct vsock_hdr *h, char *data)
{
	uint32_t id, len;

	if (!fake_wait_used(&d, 0, &id, &len))
		return false;
	memcpy(h, fake_ptr(&d, rxgpa[id]), 44);
	memcpy(data, fake_ptr(&d, rxgpa[id] + 44), h->len);
	post_rx(rxgpa[id]);
	kick();
	return true;
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 20000) == 1;
}

TEST(vsock_on_loop_thread)
{
	char dir[] = "/tmp/kvrun-vthr-XXXXXX", path[96], buf[4096];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct event_loop *loop;
	struct virtio_vsock *v;
	struct vsock_hdr h;
	int l, fd;

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/v.sock", dir);
	fake_drv_init(&d);
	is_int(event_loop_new(&loop), 0);
	is_int(virtio_vsock_new(&d.mem, loop, CID, path, true, &v), 0);
	fake_drv_attach(&d, virtio_vsock_mmio(v));
	doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	is_int(virtio_mmio_add_notify_fd(virtio_vsock_mmio(v), loop, doorbell, VIRTIO_MMIO_ALL_QUEUES), 0);
	is_int(event_loop_start(loop), 0);
	fake_bringup(&d, FEATURES, 3, 64);
	for (int i = 0; i < 16; i++)
		post_rx(fake_alloc(&d, RX_LEN));
	kick();

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_1234", path);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ok(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 4) == 0, "host listens");
	send_pkt(VSOCK_OP_REQUEST, NULL, 0);
	ok(recv_pkt(&h, buf) && h.op == VSOCK_OP_RESPONSE, "RESPONSE from the loop thread");
	fd = accept(l, NULL, NULL);
	ok(fd >= 0, "host accepted");
	send_pkt(VSOCK_OP_RW, "over the doorbell", 17);
	ok(readable(fd) && read(fd, buf, sizeof(buf)) == 17, "host got data");
	is_int(write(fd, "back", 4), 4);
	ok(recv_pkt(&h, buf) && h.op == VSOCK_OP_RW && h.len == 4 && memcmp(buf, "back", 4) == 0, "guest got data");
	ok(d.irqs > 0, "interrupts raised from the loop thread");
	/* Reset from this (vCPU) thread while the loop runs. */
	fake_write(&d, VIRTIO_MMIO_STATUS, 0);
	ok(readable(fd) && read(fd, buf, sizeof(buf)) == 0, "reset closed the host stream");
	close(fd);
	close(l);
	event_loop_stop(loop);
	virtio_vsock_free(v);
	event_loop_free(loop);
	close(doorbell);
	fake_drv_free(&d);
	snprintf(buf, sizeof(buf), "rm -rf %s", dir);
	ok(system(buf) == 0, "cleanup");
}

TAP_MAIN()
