/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the host-direct benchmark tool's files (datapath-host.c). */
#ifndef KVRUN_BENCH_DATAPATH_HOST_H
#define KVRUN_BENCH_DATAPATH_HOST_H

#include <stdbool.h>
#include <stdint.h>

uint64_t dh_now_ns(void);
/* This process's CPU time (all its threads, io_uring's workers with them). */
uint64_t dh_cpu_ns(void);
uint64_t dh_parse_size(const char *s);
__attribute__((noreturn)) void dh_die(const char *what, int err);

int dh_tap_sink(int argc, char **argv);
int dh_tap_source(int argc, char **argv);
int dh_tap_write(int argc, char **argv);
int dh_tap_read(int argc, char **argv);
int dh_vsock_peer(int argc, char **argv);
int dh_unix(int argc, char **argv);

#endif
