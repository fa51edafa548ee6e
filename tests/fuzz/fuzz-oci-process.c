/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process.json (`kvrun exec --process`): parsed and checked by
 * oci-spec/, then turned into the EXEC the monitor sends to guest-init
 * (runtime/guest-spec.c), which must encode and decode again.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/protocol.h"
#include "fuzz.h"
#include "oci-spec/spec.h"
#include "runtime/monitor/guest-spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg m = {.type = PROTO_MSG_EXEC}, back;
	struct oci_process *p;
	uint8_t *frame;
	size_t len;

	if (oci_process_parse((const char *)data, size, "process.json", &p) < 0)
		return 0;
	if (oci_process_validate(p, "process.json", NULL) == 0 && guest_process_from_oci(p, &m.u.exec) == 0) {
		int r = proto_encode(&m, &frame, &len);

		if (r == 0) {
			if (proto_decode(frame, len, &back) < 0) {
				fprintf(stderr, "an EXEC made from a valid process.json does not decode\n");
				abort();
			}
			proto_msg_free(&back);
			free(frame);
		}
		proto_msg_free(&m);
	}
	oci_process_free(p);
	return 0;
}
