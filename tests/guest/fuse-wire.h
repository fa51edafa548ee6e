/* SPDX-License-Identifier: Apache-2.0 */
/* The FUSE request and reply headers the test guest's virtio-fs drivers
 * (virtio-fs.c, fake-fs.c) put on the wire. */
#ifndef KVRUN_TEST_GUEST_FUSE_WIRE_H
#define KVRUN_TEST_GUEST_FUSE_WIRE_H

#include <stdint.h>

struct in_hdr {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid;
	uint16_t extlen, pad;
};

struct out_hdr {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

#endif
