/* SPDX-License-Identifier: Apache-2.0 */
/* A non-cryptographic hash for naming cache entries. Where a name must
 * not be trusted alone, the entry keeps its whole key text and a lookup
 * compares it. */
#ifndef KVRUN_COMMON_HASH_H
#define KVRUN_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of len bytes at data. */
static inline uint64_t fnv1a64(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

#endif
