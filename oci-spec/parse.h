/* SPDX-License-Identifier: Apache-2.0 */
/* Private to oci-spec/: the section parsers and destructors shared by the
 * config.json, process.json and resources readers. Each parser fills a
 * zeroed struct from the object v at the path in c; on failure what was
 * read stays in the struct for its destructor. */
#ifndef KVRUN_OCI_SPEC_PARSE_H
#define KVRUN_OCI_SPEC_PARSE_H

#include "oci-spec/jparse.h"
#include "oci-spec/spec.h"

int parse_process(struct jctx *c, json_t *v, struct oci_process *p);
int parse_linux(struct jctx *c, json_t *v, struct oci_linux *l);
int parse_resources(struct jctx *c, json_t *v, struct oci_linux_resources *r);
int parse_id_mapping(struct jctx *c, json_t *v, void *elem);

void process_clear(struct oci_process *p);
void linux_clear(struct oci_linux *l);
void resources_clear(struct oci_linux_resources *r);

/* Read a whole file for the *_load() functions, messages prefixed with path. */
int load_file(const char *path, char **ret, size_t *ret_len);

#endif
