/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config.json fields a container in a VM cannot have, refused by name
 * before anything is built. Every field the parser reads is either applied
 * (on the host, in the VM plan, or by guest-init from START) or refused
 * here; docs/runtime.md has the table and tests/unit/runtime/monitor/
 * test-spec-fields.c checks that nothing falls between the two.
 */
#ifndef KVRUN_RUNTIME_SPEC_SUPPORT_H
#define KVRUN_RUNTIME_SPEC_SUPPORT_H

#include "oci-spec/spec.h"

/* The first field of spec that kvrun cannot apply: -ENOTSUP (or -EINVAL
 * for a value runc refuses too) with "<json.path>: <why>" in err_msg().
 * 0 when everything can be applied. */
int spec_support_check(const struct oci_spec *spec);

/* The same for a process (config.json's, or exec's process.json); prefix
 * is the path of the process object ("process", or NULL for a standalone
 * process.json). */
int spec_support_check_process(const struct oci_process *p, const char *prefix);

#endif
