/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to oci-spec/: serialise a jansson tree exactly as Go's
 * encoding/json (go1.19, as runc is built here) would: members in the
 * tree's order, HTML-safe escaping (<, >, & as \u003c...), control bytes as
 * \u00XX except \n \r \t, invalid UTF-8 as \ufffd, U+2028/2029 escaped.
 */
#ifndef KVRUN_OCI_SPEC_GOJSON_H
#define KVRUN_OCI_SPEC_GOJSON_H

#include <jansson.h>

/* indent NULL: compact (json.Marshal); otherwise json.MarshalIndent with
 * prefix "" and that indent. No trailing newline. *ret is malloc'd. */
int gojson_dump(json_t *v, const char *indent, char **ret);

/* json_object_set_new() that keeps going on NULL values and reports
 * -ENOMEM at the end: jset(o, k, v, &r). */
void jset(json_t *o, const char *key, json_t *v, int *r);
/* Append v to array a the same way. */
void jappend(json_t *a, json_t *v, int *r);
/* A new array of strings from a NULL-terminated list (NULL on ENOMEM). */
json_t *jstrv(const char *const *v);

#endif
