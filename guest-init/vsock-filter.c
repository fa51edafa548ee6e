/* SPDX-License-Identifier: Apache-2.0 */
/*
 * No AF_VSOCK sockets for the container's processes: a seccomp filter of
 * our own, stacked with the container's (the kernel runs every filter of
 * a process and the strictest answer wins, so the order does not matter),
 * returns EPERM for socket(AF_VSOCK, ...), as docker's default profile
 * does. The host's ports are guest-init's: a process of the container
 * that could open a vsock stream could race guest-init for a port the
 * host listens on. The filter is classic BPF, a few instructions per
 * system call.
 *
 * What it cannot see: socketcall(2) of 32-bit x86 processes (its
 * arguments are in memory) and io_uring's socket operation. kvrun's guest
 * kernel has neither IA32 emulation nor io_uring (kernel/kvrun.fragment);
 * on another kernel the host's checks (a token on every stdio stream, one
 * stream per port) still stand.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "guest-init/guest-init.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#define X32_SYSCALL_BIT 0x40000000u
#define NR_SOCKET_X86_64 41u
#define NR_SOCKET_I386 359u

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

/* args[0]'s low 32 bits: little-endian x86, the first word of the u64. */
static const struct sock_filter deny_vsock[] = {
    /* 0 */ LOAD(arch),
    /* 1 */ JEQ(AUDIT_ARCH_X86_64, 0, 3),
    /* 2 */ LOAD(nr),
    /* 3 */ JEQ(NR_SOCKET_X86_64, 5, 0),
    /* 4 */ JEQ(X32_SYSCALL_BIT | NR_SOCKET_X86_64, 4, 3),
    /* 5 */ JEQ(AUDIT_ARCH_I386, 0, 2),
    /* 6 */ LOAD(nr),
    /* 7 */ JEQ(NR_SOCKET_I386, 1, 0),
    /* 8 */ RET(SECCOMP_RET_ALLOW),
    /* 9 */ LOAD(args[0]),
    /* 10 */ JEQ(AF_VSOCK, 0, 1),
    /* 11 */ RET(SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    /* 12 */ RET(SECCOMP_RET_ALLOW),
};

int gi_deny_vsock(void)
{
	struct sock_fprog prog = {.len = ARRAY_SIZE(deny_vsock), .filter = (struct sock_filter *)deny_vsock};

	/* Without no_new_privs the kernel wants CAP_SYS_ADMIN, which the
	 * container's process still has here (it has not dropped anything). */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return err_setsys(-errno, "seccomp filter denying AF_VSOCK sockets");
	return 0;
}
