/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "vmm/bus.h"

int bus_init(struct bus *b, const char *name)
{
	int r;

	memset(b, 0, sizeof(*b));
	b->name = name;
	r = pthread_rwlock_init(&b->lock, NULL);
	return r ? -r : 0;
}

void bus_destroy(struct bus *b)
{
	free(b->ranges);
	b->ranges = NULL;
	b->nr = b->cap = 0;
	pthread_rwlock_destroy(&b->lock);
}

/* Index of the first range whose base is > addr (upper bound). */
static unsigned int bus_upper(const struct bus *b, uint64_t addr)
{
	unsigned int lo = 0, hi = b->nr;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (b->ranges[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct bus_range *bus_find(const struct bus *b, uint64_t addr, uint32_t len)
{
	unsigned int i = bus_upper(b, addr);
	const struct bus_range *r;

	if (i == 0)
		return NULL;
	r = &b->ranges[i - 1];
	/* The whole access must fall inside the range. */
	if (addr - r->base >= r->len || len > r->len - (addr - r->base))
		return NULL;
	return r;
}

static int bus_grow(struct bus *b)
{
	unsigned int cap = b->cap ? b->cap * 2 : 8;
	struct bus_range *n;

	n = realloc(b->ranges, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	b->ranges = n;
	b->cap = cap;
	return 0;
}

int bus_register(struct bus *b, uint64_t base, uint64_t len, const struct bus_dev_ops *ops, void *opaque)
{
	unsigned int i;
	int r = 0;

	if (len == 0 || base + len < base || !ops)
		return -EINVAL;
	pthread_rwlock_wrlock(&b->lock);
	i = bus_upper(b, base);
	if (i > 0 && b->ranges[i - 1].base + b->ranges[i - 1].len > base)
		r = -EEXIST;
	else if (i < b->nr && b->ranges[i].base < base + len)
		r = -EEXIST;
	else if (b->nr == b->cap)
		r = bus_grow(b);
	if (r == 0) {
		memmove(&b->ranges[i + 1], &b->ranges[i], (b->nr - i) * sizeof(b->ranges[0]));
		b->ranges[i] = (struct bus_range){.base = base, .len = len, .ops = ops, .opaque = opaque};
		b->nr++;
	}
	pthread_rwlock_unlock(&b->lock);
	return r;
}

int bus_unregister(struct bus *b, uint64_t base)
{
	unsigned int i;
	int r = -ENOENT;

	pthread_rwlock_wrlock(&b->lock);
	i = bus_upper(b, base);
	if (i > 0 && b->ranges[i - 1].base == base) {
		i--;
		memmove(&b->ranges[i], &b->ranges[i + 1], (b->nr - i - 1) * sizeof(b->ranges[0]));
		b->nr--;
		r = 0;
	}
	pthread_rwlock_unlock(&b->lock);
	return r;
}

int bus_read(struct bus *b, uint64_t addr, void *data, uint32_t len)
{
	const struct bus_range *r;
	int ret = 0;

	pthread_rwlock_rdlock(&b->lock);
	r = bus_find(b, addr, len);
	if (r && r->ops->read)
		r->ops->read(r->opaque, addr - r->base, data, len);
	else if (r)
		memset(data, 0xff, len);
	else
		ret = -ENOENT;
	pthread_rwlock_unlock(&b->lock);
	if (ret) {
		memset(data, 0xff, len);
		log_debug("%s: unclaimed read at 0x%llx (%u bytes)", b->name, (unsigned long long)addr, len);
	}
	return ret;
}

int bus_write(struct bus *b, uint64_t addr, const void *data, uint32_t len)
{
	const struct bus_range *r;
	int ret = 0;

	pthread_rwlock_rdlock(&b->lock);
	r = bus_find(b, addr, len);
	if (r && r->ops->write)
		r->ops->write(r->opaque, addr - r->base, data, len);
	else if (!r)
		ret = -ENOENT;
	pthread_rwlock_unlock(&b->lock);
	if (ret)
		log_debug("%s: unclaimed write at 0x%llx (%u bytes)", b->name, (unsigned long long)addr, len);
	return ret;
}
