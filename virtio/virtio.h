/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Constants of the virtio 1.2 specification shared by the transport, the
 * virtqueues and the devices. Everything on the wire is little-endian; kvrun
 * only runs on little-endian hosts (x86-64), which the build asserts below.
 */
#ifndef KVRUN_VIRTIO_VIRTIO_H
#define KVRUN_VIRTIO_VIRTIO_H

#include <stdint.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "virtio structures are used in place: little-endian only");

/* Device status (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE 0x01u
#define VIRTIO_STATUS_DRIVER 0x02u
#define VIRTIO_STATUS_DRIVER_OK 0x04u
#define VIRTIO_STATUS_FEATURES_OK 0x08u
#define VIRTIO_STATUS_DEVICE_NEEDS_RESET 0x40u
#define VIRTIO_STATUS_FAILED 0x80u

/* Reserved feature bits (6). */
#define VIRTIO_F_INDIRECT_DESC 28
#define VIRTIO_F_RING_EVENT_IDX 29
#define VIRTIO_F_VERSION_1 32
#define VIRTIO_F_ACCESS_PLATFORM 33
#define VIRTIO_F_RING_PACKED 34

#define VIRTIO_BIT(n) (1ULL << (n))

/* Device IDs (5). */
#define VIRTIO_ID_BLOCK 2
#define VIRTIO_ID_BALLOON 5
#define VIRTIO_ID_VSOCK 19
#define VIRTIO_ID_FS 26

/* InterruptStatus bits of virtio-mmio (4.2.2). */
#define VIRTIO_MMIO_INT_VRING 0x1u
#define VIRTIO_MMIO_INT_CONFIG 0x2u

#endif
