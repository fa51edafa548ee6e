/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every whole-document JSON parser of oci-spec/ on the same input: a
 * bundle's config.json (then runc's semantic checks), kvrun's own
 * configuration file, an on-disk state.json, and `update --resources`. A
 * document one of them takes is freed through its destructor; a state
 * that parses is written out and must parse again.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "oci-spec/kvrun-config.h"
#include "oci-spec/spec.h"
#include "oci-spec/state.h"

static void state_roundtrip(const uint8_t *data, size_t size)
{
	struct oci_state *s, *again;
	char *json;

	if (oci_state_from_file_json((const char *)data, size, "state.json", &s) < 0)
		return;
	if (oci_state_to_file_json(s, &json) < 0)
		abort();
	if (oci_state_from_file_json(json, strlen(json), "state.json", &again) < 0)
		abort(); /* what we write we must read */
	oci_state_free(again);
	free(json);
	if (oci_state_to_runc_json(s, &json) == 0)
		free(json);
	oci_state_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_spec *spec;
	struct oci_linux_resources *res;
	struct kvrun_config cfg;

	if (oci_spec_parse((const char *)data, size, "config.json", &spec) == 0) {
		(void)oci_spec_validate(spec);
		oci_spec_free(spec);
	}
	memset(&cfg, 0, sizeof(cfg));
	if (kvrun_config_parse((const char *)data, size, "kvrun.json", &cfg) == 0)
		kvrun_config_clear(&cfg);
	if (oci_resources_parse((const char *)data, size, "resources.json", &res) == 0)
		oci_resources_free(res);
	state_roundtrip(data, size);
	return 0;
}
