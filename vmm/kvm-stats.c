/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "vmm/kvm-stats.h"

/* pread exactly len bytes (a stats fd returns short reads only past its
 * end, which is a layout error here). */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EINVAL;
}

static int parse_desc(struct kvm_stats *s, const uint8_t *d, uint32_t name_size, unsigned int i)
{
	struct kvm_stats_desc hdr;
	size_t end;

	memcpy(&hdr, d, sizeof(hdr));
	/* A statistic of no value, or whose values pass 4 GiB, is not one
	 * KVM would write. */
	if (hdr.size == 0 || hdr.offset % 8)
		return -EINVAL;
	end = (size_t)hdr.offset + (size_t)hdr.size * 8;
	if (end > UINT32_MAX)
		return -EINVAL;
	if (memchr(d + sizeof(hdr), '\0', name_size) == NULL || d[sizeof(hdr)] == '\0')
		return -EINVAL;
	s->stats[i] = (struct kvm_stat){
	    .name = strndup((const char *)d + sizeof(hdr), name_size),
	    .flags = hdr.flags,
	    .size = hdr.size,
	    .offset = hdr.offset,
	};
	if (!s->stats[i].name)
		return -ENOMEM;
	if (end > s->data_size)
		s->data_size = end;
	return 0;
}

static int parse_layout(struct kvm_stats *s)
{
	struct kvm_stats_header h;
	_cleanup_free_ uint8_t *descs = NULL;
	size_t dsize;
	int r;

	r = read_at(s->fd, &h, sizeof(h), 0);
	if (r < 0)
		return r;
	if (h.name_size == 0 || h.name_size > KVM_STATS_MAX_NAME || h.num_desc > KVM_STATS_MAX_DESC)
		return -EINVAL;
	r = read_at(s->fd, s->id, h.name_size, h.id_offset);
	if (r < 0)
		return r;
	s->id[h.name_size] = '\0';
	dsize = sizeof(struct kvm_stats_desc) + h.name_size;
	s->stats = calloc(h.num_desc ? h.num_desc : 1, sizeof(*s->stats));
	descs = malloc(dsize * (h.num_desc ? h.num_desc : 1));
	if (!s->stats || !descs)
		return -ENOMEM;
	r = read_at(s->fd, descs, dsize * h.num_desc, h.desc_offset);
	if (r < 0)
		return r;
	s->data_offset = h.data_offset;
	for (unsigned int i = 0; i < h.num_desc; i++) {
		r = parse_desc(s, descs + i * dsize, h.name_size, i);
		s->nr = i + (r == -ENOMEM ? 0 : 1);
		if (r < 0)
			return r;
	}
	return 0;
}

int kvm_stats_parse(int fd, struct kvm_stats **ret)
{
	struct kvm_stats *s = calloc(1, sizeof(*s));
	int r;

	if (!s) {
		close(fd);
		return -ENOMEM;
	}
	s->fd = fd;
	r = parse_layout(s);
	if (r < 0) {
		kvm_stats_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int kvm_stats_open(int kvm_object_fd, struct kvm_stats **ret)
{
	int fd = ioctl(kvm_object_fd, KVM_GET_STATS_FD, NULL);

	if (fd < 0)
		return -errno;
	return kvm_stats_parse(fd, ret);
}

void kvm_stats_free(struct kvm_stats *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < s->nr; i++)
		free(s->stats[i].name);
	free(s->stats);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

int kvm_stats_find(const struct kvm_stats *s, const char *name)
{
	for (unsigned int i = 0; i < s->nr; i++)
		if (!strcmp(s->stats[i].name, name))
			return (int)i;
	return -ENOENT;
}

bool kvm_stats_is_counter(const struct kvm_stats *s, unsigned int i)
{
	return i < s->nr && (s->stats[i].flags & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_CUMULATIVE &&
	       s->stats[i].size == 1;
}

int kvm_stats_read(const struct kvm_stats *s, uint64_t *values)
{
	_cleanup_free_ uint64_t *data = NULL;
	int r;

	if (!s->data_size)
		return 0;
	data = malloc(s->data_size);
	if (!data)
		return -ENOMEM;
	r = read_at(s->fd, data, s->data_size, s->data_offset);
	if (r < 0)
		return r;
	for (unsigned int i = 0; i < s->nr; i++)
		values[i] = data[s->stats[i].offset / 8];
	return 0;
}
