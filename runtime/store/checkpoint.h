/* SPDX-License-Identifier: Apache-2.0 */
/* What checkpoint and restore share. */
#ifndef KVRUN_RUNTIME_CHECKPOINT_H
#define KVRUN_RUNTIME_CHECKPOINT_H

/* runc's --manage-cgroups-mode values (soft, full, strict, ignore); NULL is
 * the default. -EINVAL with "Invalid manage cgroups mode" otherwise. */
int checkpoint_check_cgroups_mode(const char *mode);

/* -EINVAL (with a message) unless dir holds a complete checkpoint. */
int checkpoint_check_image(const char *dir);

/* Copy src to dst (created 0600, replaced): a reflink where the file
 * system can, else fd_copy_sparse(). */
int checkpoint_copy_file(const char *src, const char *dst);

#endif
