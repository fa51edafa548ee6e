#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/.

The seeds are small, valid inputs that reach each target's interesting
states at once: for the virtio targets, fake-guest programs (the operations
of tests/fuzz/fuzz-guest.c) that bring a device up and send it real
requests; for the protocol, one frame of each message type; for the JSON
parsers, documents from tests/unit/oci-spec/fixtures and their kin. The
encodings here follow the harnesses byte for byte: change one, change both.

    tests/fuzz/make-seeds.py      (rewrites the corpus directories)
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
FIXTURES = os.path.join(HERE, "..", "unit", "oci-spec", "fixtures")


def u8(v):
    return struct.pack("<B", v & 0xff)


def u16(v):
    return struct.pack("<H", v & 0xffff)


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def u64(v):
    return struct.pack("<Q", v & 0xffffffffffffffff)


# ---- the fake guest's program (fuzz-guest.c) ----
OP_REG_WRITE, OP_REG_READ, OP_CONFIG, OP_MEM_WRITE, OP_BRINGUP, OP_DESC, OP_TABLE_DESC, OP_PUBLISH, OP_KICK, \
    OP_AVAIL, OP_SUPPRESS, OP_RESET, OP_EXTRA = range(13)
RAM = 256 << 10
DATA = 0x28000
F_NEXT, F_WRITE, F_INDIRECT = 1, 2, 4
V1, EVENT_IDX, INDIRECT = 1 << 32, 1 << 29, 1 << 28


def gpa(addr):
    """fz_gpa() of an address at or above FZ_DATA."""
    assert DATA <= addr < RAM
    return u32(addr - DATA)


def desc(addr, length, flags, nxt=0):
    enc = gpa(addr)
    enc += u16(length) if length < 0x8000 else u16(0x8000) + u32(length)
    return enc + u8(flags) + u16(nxt)


def bringup(want, nq, num_log2):
    return u8(OP_BRINGUP) + u64(want) + u8(nq - 1) + u8(num_log2)


def ring_desc(q, idx, addr, length, flags, nxt=0):
    return u8(OP_DESC) + u8(q) + u16(idx) + desc(addr, length, flags, nxt)


def table_desc(idx, addr, length, flags, nxt=0):
    """Entry idx of the table at FZ_DATA (table address DATA + 16 * idx)."""
    return u8(OP_TABLE_DESC) + u16(idx) + desc(addr, length, flags, nxt)


def mem(addr, data):
    out = b""
    for i in range(0, len(data), 255):
        chunk = data[i:i + 255]
        out += u8(OP_MEM_WRITE) + u32(addr + i) + u8(len(chunk)) + chunk
    return out


def publish(q, head):
    return u8(OP_PUBLISH) + u8(q) + u16(head)


def extra(op, args=b""):
    return u8(OP_EXTRA) + u8(op) + args


# ---- per-target seeds ----
def blk_seeds():
    hdr = DATA + 0x1000
    buf = DATA + 0x2000
    st = DATA + 0x3000

    def req(kind, sector, dlen, write_data):
        return (mem(hdr, u32(kind) + u32(0) + u64(sector)) + ring_desc(0, 0, hdr, 16, F_NEXT, 1) +
                ring_desc(0, 1, buf, dlen, F_NEXT | (F_WRITE if write_data else 0), 2) +
                ring_desc(0, 2, st, 1, F_WRITE) + publish(0, 0))

    up = bringup(V1 | EVENT_IDX | INDIRECT | 1 << 9 | 1 << 2 | 1 << 6, 1, 4)
    seeds = {
        "read": b"\0" + up + req(0, 1, 512, True),
        "write-read": b"\0" + up + mem(buf, bytes(range(256)) * 2) + req(1, 3, 512, False) + req(0, 3, 512, True),
        "flush-getid": b"\0" + up + req(4, 0, 0, True) + req(8, 0, 20, True),
        "indirect": b"\0" + up + mem(hdr, u32(0) + u32(0) + u64(7)) + table_desc(0, hdr, 16, F_NEXT, 1) +
        table_desc(1, buf, 1024, F_NEXT | F_WRITE, 2) + table_desc(2, st, 1, F_WRITE) +
        ring_desc(0, 0, DATA, 48, F_INDIRECT) + publish(0, 0),
        "pause-export": b"\0" + up + req(1, 9, 4096, False) + extra(0) + extra(2) + extra(1) + req(0, 9, 512, True),
        "read-only": b"\xff" + up + req(1, 0, 512, False) + req(0, 0, 512, True),
    }
    return seeds


def net_seeds():
    feats = V1 | EVENT_IDX | INDIRECT | 1 << 15 | 1 << 0 | 1 << 1 | 1 << 7 | 1 << 5 | 1 << 3 | 1 << 16
    rx = DATA + 0x4000
    tx = DATA + 0x8000
    up = bringup(feats, 2, 4)
    rxbufs = b"".join(ring_desc(0, i, rx + i * 0x800, 0x800, F_WRITE) + publish(0, i) for i in range(4))
    frame = bytes(12) + b"\xff" * 6 + b"\x52\x54\x00\x12\x34\x56" + b"\x08\x00" + bytes(range(46))
    txreq = mem(tx, frame) + ring_desc(1, 0, tx, len(frame), 0) + publish(1, 0)
    inject = extra(0, u8(0) + u16(len(frame) - 12) + frame)
    mq = bringup(feats | 1 << 17 | 1 << 22, 5, 4)
    ctrl = DATA + 0xa000
    ctrl_cmd = (mem(ctrl, b"\x04\x00" + u16(2)) + ring_desc(4, 0, ctrl, 4, F_NEXT, 1) +
                ring_desc(4, 1, ctrl + 0x10, 1, F_WRITE) + publish(4, 0))
    return {
        "rx": b"\0" + up + rxbufs + inject + inject,
        "tx": b"\0" + up + txreq,
        "rx-tx-pause": b"\0" + up + rxbufs + txreq + extra(2) + inject + extra(3),
        "multiqueue": b"\x01" + mq + ctrl_cmd + rxbufs + inject,
        "jumbo-ufo": b"\xc0" + up + rxbufs + extra(0, u8(0) + u16(0x8000 | 9000) + frame),
    }


def vsock_pkt(src_port, dst_port, op, payload=b"", fwd=0):
    return (u64(3) + u64(2) + u32(src_port) + u32(dst_port) + u32(len(payload)) + u16(1) + u16(op) + u32(0) +
            u32(65536) + u32(fwd) + payload)


def vsock_seeds():
    up = bringup(V1 | EVENT_IDX | INDIRECT, 3, 4)
    rx = DATA + 0x4000
    tx = DATA + 0x9000
    rxbufs = b"".join(ring_desc(0, i, rx + i * 0x1000, 0x1000, F_WRITE) + publish(0, i) for i in range(4))

    def send(slot, pkt):
        a = tx + slot * 0x200
        return mem(a, pkt) + ring_desc(1, slot, a, len(pkt), 0) + publish(1, slot)

    accept = extra(3)
    host_data = extra(1, u8(0) + u8(9) + b"from-host!")
    connect_line = extra(0, u8(0))  # "CONNECT 1024\n"
    return {
        "guest-connect": up + rxbufs + send(0, vsock_pkt(5000, 1024, 1)) + accept + send(1, vsock_pkt(
            5000, 1024, 5, b"hello")) + host_data + send(2, vsock_pkt(5000, 1024, 4)),
        "host-connect": up + rxbufs + connect_line + send(0, vsock_pkt(1024, 1 << 30, 2)) +
        extra(1, u8(0) + u8(3) + b"data") + send(1, vsock_pkt(1024, 1 << 30, 6)) + extra(2, u8(0) + u8(0)),
        "rst-and-credit": up + rxbufs + send(0, vsock_pkt(7, 8, 3)) + send(1, vsock_pkt(7, 1024, 7)) +
        extra(4, u8(1)) + extra(4, u8(0)),
        "bad-lines": up + rxbufs + extra(0, u8(3)) + extra(0, u8(4)) + extra(0, u8(250)) + host_data,
    }


def balloon_seeds():
    """Statistics and reporting negotiated: inflate 0, deflate 1, stats 2,
    reporting 3; reporting alone: reporting 2."""
    up = bringup(V1 | EVENT_IDX | INDIRECT | 1 << 1 | 1 << 2 | 1 << 5, 4, 4)
    pfns, stats = DATA + 0x1000, DATA + 0x2000
    report = (ring_desc(3, 0, DATA + 0x8000, 0x4000, F_WRITE | F_NEXT, 1) +
              ring_desc(3, 1, DATA + 0x10000, 0x1000, F_WRITE) + publish(3, 0))
    inflate = (mem(pfns, b"".join(u32(x) for x in [0x30, 0x31, 0x32, 0x38, 0xfffff, 0x33])) +
               ring_desc(0, 0, pfns, 24, 0) + publish(0, 0))
    deflate = ring_desc(1, 0, pfns, 24, 0) + publish(1, 0)
    st = (mem(stats, u16(4) + u64(1000) + u16(5) + u64(4096) + u16(77) + u64(1)) + ring_desc(2, 0, stats, 30, 0) +
          publish(2, 0))
    return {
        "report": up + report,
        "inflate-deflate": up + inflate + deflate,
        "stats": up + st + extra(1) + st + extra(3),
        "host-side": up + extra(0, u32(512)) + extra(2, u8(1)) + report + extra(2, u8(0)) + extra(3),
        "report-only": bringup(V1 | 1 << 5, 3, 4) + ring_desc(2, 0, DATA + 0x8000, 0x8000, F_WRITE) + publish(2, 0),
    }


def mmio_seeds():
    buf = DATA + 0x100
    chain = (mem(buf, b"echo me") + ring_desc(0, 0, buf, 7, F_NEXT, 1) + ring_desc(0, 1, buf + 0x100, 64, F_WRITE) +
             publish(0, 0))
    regs = b"".join(u8(OP_REG_WRITE) + u8(off) + u32(v) for off, v in
                    [(0x70, 1), (0x70, 3), (0x24, 1), (0x20, 1), (0x70, 11), (0x30, 1), (0x38, 8), (0x44, 1),
                     (0x70, 15), (0x64, 3)])
    cfg = u8(OP_CONFIG) + u8(4) + u8(2) + u8(1) + u32(0xdeadbeef) + u8(OP_CONFIG) + u8(0) + u8(3) + u8(0)
    return {
        "echo": bringup(V1 | EVENT_IDX | INDIRECT, 2, 4) + chain,
        "registers": regs + cfg + u8(OP_REG_READ) + u16(0x70) + u8(OP_RESET),
        "suppress": bringup(V1 | EVENT_IDX, 1, 3) + u8(OP_SUPPRESS) + u8(0) + u16(1) + u16(3) + u16(0) + chain +
        u8(OP_AVAIL) + u8(0) + u16(40) + u8(OP_KICK) + u8(0),
    }


def device_state_seeds():
    """kind, "saved" mode, [ops count, program on the first device], flips,
    then (virtio) the program that runs on the restored device."""
    stats = DATA + 0x2000
    programs = {0: bringup(V1 | EVENT_IDX | INDIRECT, 1, 4), 1: bringup(V1 | 1 << 15 | 1 << 5, 2, 4),
                2: bringup(V1 | EVENT_IDX, 3, 4),
                6: bringup(V1 | EVENT_IDX | 1 << 1 | 1 << 5, 4, 4) + mem(stats, u16(4) + u64(7)) +
                ring_desc(2, 0, stats, 10, 0) + publish(2, 0)}
    names = ["blk", "net", "vsock", "serial", "rtc", "test-device", "balloon"]
    after = u8(OP_KICK) + u8(0) + publish(0, 0)
    seeds = {}
    for kind, name in enumerate(names):
        first = u8(3) + programs[kind] if kind in programs else b""
        seeds[f"{name}-saved"] = u8(kind) + u8(1) + first + u8(0) + after
        seeds[f"{name}-flipped"] = u8(kind) + u8(1) + first + u8(2) + u16(4) + u8(0x40) + u16(30) + u8(1) + after
    seeds["serial-raw"] = u8(3) + u8(0) + bytes(12) + u32(300) + bytes(256)
    return seeds


def virtqueue_seeds():
    def layout(num, feats, ram):
        return u16(num) + u16(0x100) + u16(0x400) + u16(0x600) + u8(feats) + u16(0) + ram

    ram = bytearray(0x900)

    def put_desc(off, i, addr, length, flags, nxt):
        struct.pack_into("<QIHH", ram, off + 16 * i, addr, length, flags, nxt)

    put_desc(0x100, 0, 0x800, 16, F_NEXT, 1)
    put_desc(0x100, 1, 0x810, 64, F_NEXT | F_WRITE, 2)
    put_desc(0x100, 2, 0x850, 1, F_WRITE, 0)
    put_desc(0x100, 3, 0x700, 48, F_INDIRECT, 0)
    put_desc(0x700, 0, 0x800, 16, F_NEXT, 1)
    put_desc(0x700, 1, 0x810, 64, F_NEXT | F_WRITE, 2)
    put_desc(0x700, 2, 0x850, 1, F_WRITE, 0)
    struct.pack_into("<HHHH", ram, 0x400, 0, 2, 0, 3)
    chain = bytes(ram)
    self_table = bytearray(chain)
    struct.pack_into("<QIHH", self_table, 0x100, 0x100, 16 * 8, F_INDIRECT, 0)
    return {"chains": layout(8, 3, chain), "ring-as-table": layout(8, 1, bytes(self_table)),
            "no-indirect": layout(16, 0, chain)}


def tlv(tag, value):
    return u16(tag) + u32(len(value)) + value


def frame(kind, body, ident=1, flags=0):
    return b"KVRP" + u16(1) + u16(kind) + u32(flags) + u32(len(body)) + u64(ident) + body


def protocol_seeds():
    process = (tlv(1, b"/bin/sh") + tlv(1, b"-c") + tlv(1, b"echo hi") + tlv(2, b"PATH=/bin") + tlv(3, b"/") +
               tlv(4, u32(0)) + tlv(5, u32(0)) + tlv(6, u32(10)) + tlv(8, u32(0o22)) + tlv(9, u8(1)) +
               tlv(10, u16(24)) + tlv(11, u16(80)) + tlv(12, u8(1)) + tlv(13, u64(0xffff)) +
               tlv(18, tlv(1, b"RLIMIT_NOFILE") + tlv(2, u64(1024)) + tlv(3, u64(4096))) + tlv(19, u8(1)) +
               tlv(20, u32(-100 & 0xffffffff)) + tlv(21, u32(1025)))
    mount = tlv(1, b"/etc/hosts") + tlv(2, b"bind") + tlv(3, b"/h") + tlv(4, b"ro") + tlv(5, b"127.0.0.1 x\n")
    addr = tlv(1, u8(2)) + tlv(2, u8(24)) + tlv(3, bytes([10, 0, 0, 2]) + bytes(12))
    route = tlv(1, u8(2)) + tlv(2, u8(0)) + tlv(3, bytes(16)) + tlv(4, bytes([10, 0, 0, 1]) + bytes(12)) + tlv(
        5, u8(1)) + tlv(6, u8(0)) + tlv(7, u32(0))
    iface = tlv(1, b"eth0") + tlv(2, bytes(6)) + tlv(3, u32(1500)) + tlv(4, addr) + tlv(5, route) + tlv(6, bytes(6))
    seccomp = (tlv(1, b"SCMP_ACT_ERRNO") + tlv(2, u32(1)) + tlv(3, b"SCMP_ARCH_X86_64") +
               tlv(5, tlv(1, b"read") + tlv(2, b"SCMP_ACT_ALLOW") + tlv(4, tlv(1, u32(0)) + tlv(2, u64(1)) +
                                                                         tlv(4, b"SCMP_CMP_EQ"))))
    start = (tlv(1, process) + tlv(2, b"box") + tlv(4, mount) + tlv(5, b"/proc/kcore") + tlv(7, tlv(1, b"a") + tlv(
        2, b"1")) + tlv(8, seccomp) + tlv(11, b"/dev/vda") + tlv(12, b"ext4") + tlv(14, tlv(1, b"/hook") + tlv(
            4, u32(5))) + tlv(16, b"{}") + tlv(17, tlv(1, iface)) + tlv(18, u64(1 << 60)) + tlv(19, bytes(64)))
    frames = {
        "hello": frame(1, tlv(1, u32(1)) + tlv(2, u32(1)) + tlv(3, b"kvrun-init 0.1.0")),
        "start": frame(2, start, flags=1),
        "ready": frame(3, tlv(1, u32(1))),
        "exec": frame(6, process),
        "signal": frame(7, tlv(1, u32(0)) + tlv(2, u32(15)) + tlv(3, u8(1))),
        "resize": frame(8, tlv(1, u32(0)) + tlv(2, u16(50)) + tlv(3, u16(132))),
        "exit": frame(9, tlv(1, u32(1)) + tlv(2, u32(0x8b)) + tlv(3, u8(1))),
        "stats": frame(10, b"".join(tlv(i, u64(i * 1000)) for i in range(1, 8))),
        "error": frame(11, tlv(1, u32(2)) + tlv(2, b"no such file")),
        "update": frame(12, tlv(1, u64(100)) + tlv(2, u64(1 << 28))),
        "network": frame(14, tlv(1, tlv(1, iface)) + tlv(2, u64(5))),
    }
    seeds = {}
    for name, f in frames.items():
        seeds["frame-" + name] = u8(0) + f
        seeds["body-" + name] = u8(1) + u8(f[6]) + f[24:]
    seeds["stream"] = u8(2) + bytes([7, 30, 1, 200, 3, 24, 0, 255, 5, 9, 11, 40, 2, 6, 100, 13]) + b"".join(
        frames[n] for n in ("hello", "exit", "stats", "start"))
    return seeds


def snapshot_seeds():
    def sections(n):
        out = b""
        for i in range(n):
            data = bytes([i]) * (16 + 8 * i)
            out += u16(len(data)) + u8(i + 2) + u8(1) + data  # device sections
        return out

    # fix: keep header, fix its crc, memory + its crc; 2 extents of 2 pages.
    # 2 extents ({first page, npages}: {0, 2}, {2, 2}) over 4 pages, each
    # page a length byte and its first bytes.
    extents = u8(0) + u8(0) + u8(0) + u8(1) + u8(0) + u8(2) + u8(0) + u8(1)
    pages = u8(16) + b"page-one-content" + u8(8) + b"page-two" + u8(0) + u8(4) + b"four"
    memory = u8(2) + u8(3) + extents + pages
    good = u8(0x31) + u8(4) + u8(0) + memory + sections(4) + u8(0)
    trust = u8(0x31) + u8(2) + u8(1) + memory + sections(2) + u8(1)
    bad_crc = u8(0x11) + u8(1) + u8(0) + memory + sections(1) + u8(0)
    garbled = u8(0x30) + u8(1) + u8(0) + memory + sections(1) + u8(40) + b"KVRUNSNP" + bytes(32) + u8(0)
    return {"good": good, "trusted-memory": trust, "memory-crc-wrong": bad_crc, "header-garbled": garbled}


def boot_tables_seeds():
    acpi = (u8(0) + u8(0x70) + u8(0) + u16(0x4000) + u8(2) + u8(3) + b"".join(u16(i) + u8(5 + i) for i in range(3)) +
            u8(1) + u64(0x600))
    acpi_ids = u8(0) + u8(0x04) + u8(0) + u16(0x2000) + u8(4) + bytes([0, 2, 4, 6]) + u8(1) + u16(0) + u8(
        9) + u8(0) + u64(0xfed00000)
    tiny = u8(0) + u8(0x02) + u8(0) + u16(64) + u8(1) + u8(0) + u8(1) + u64(0x600)
    mp = u8(1) + u16(4) + u8(0)
    mp_far = u8(1) + u16(2) + u8(1) + u32(0xf0000)
    return {"acpi": acpi, "acpi-apic-ids": acpi_ids, "acpi-too-small": tiny, "mp": mp, "mp-elsewhere": mp_far}


def oci_config_seeds():
    seeds = {}
    for name in sorted(os.listdir(FIXTURES)):
        path = os.path.join(FIXTURES, name)
        if name.endswith(".json") and os.path.isfile(path):
            with open(path, "rb") as f:
                seeds["fixture-" + name[:-5]] = f.read()
    seeds["kvrun-config"] = json.dumps({"kernel": "/boot/vmlinux", "initrd": "/i.cpio", "modules": "auto",
                                        "acpi": "auto", "memory": 268435456, "cpus": 2,
                                        "cmdline_extra": "quiet", "early_create": True}).encode()
    seeds["state-file"] = json.dumps({
        "ociVersion": "1.2.0", "id": "c1", "pid": 42, "status": "running", "bundle": "/b", "rootfs": "/b/rootfs",
        "created": "2026-01-01T00:00:00.000000001Z", "owner": "", "annotations": {"a": "b"},
        "kvrun": {"pid-start-time": "123", "cgroup": "/k"}}).encode()
    seeds["resources"] = json.dumps({
        "memory": {"limit": 1 << 28, "swap": 1 << 29}, "cpu": {"shares": 1024, "quota": 50000, "period": 100000,
                                                              "cpus": "0-1"},
        "pids": {"limit": 100}, "blockIO": {"weight": 10}}).encode()
    return seeds


def oci_process_seeds():
    base = {"terminal": False, "user": {"uid": 0, "gid": 0, "additionalGids": [1, 2], "umask": 18},
            "args": ["/bin/sh", "-c", "echo hi"], "env": ["PATH=/usr/bin:/bin", "TERM=xterm"], "cwd": "/",
            "capabilities": {"bounding": ["CAP_CHOWN", "CAP_KILL"], "effective": ["CAP_CHOWN"],
                             "permitted": ["CAP_CHOWN"], "ambient": []},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}], "noNewPrivileges": True,
            "oomScoreAdj": 100, "apparmorProfile": "x", "selinuxLabel": "y"}
    tty = dict(base, terminal=True, consoleSize={"height": 24, "width": 80})
    return {"process": json.dumps(base).encode(), "process-tty": json.dumps(tty).encode(),
            "minimal": json.dumps({"args": ["true"], "cwd": "/", "user": {"uid": 1, "gid": 1}}).encode()}


# fuzz-fs-server.c: indexes into its opcode table.
FS_OP = {"lookup": 0, "getattr": 2, "readlink": 4, "mkdir": 7, "rename": 10, "open": 12, "read": 13, "write": 14,
         "flush": 22, "opendir": 24, "readdir": 25, "setlk": 29, "setlkw": 30, "create": 32}
FS_ROOT = u8(210)


def fs_req(op, body, node=FS_ROOT, fh=None, room=4096):
    """One request of fuzz-fs-server.c's program: the opcode, the body's
    length, one reply buffer, flags (1: a remembered file handle first in
    the body), the node, the body, the handle, the request in one piece,
    the reply room."""
    flags = 1 if fh is not None else 0
    b = u8(FS_OP[op]) + u16(len(body)) + u8(0) + u8(flags) + node + body
    if fh is not None:
        b += fh
    return b + u8(0) + u8(0) + u32(room)


def fs_seeds():
    """Writable server; then programs: lookup, open and read a file;
    create, write and read back; mkdir, the symlink out of the share,
    readdir; a waiting lock (cancelled); with the locks left to the
    client, the lock requests and FLUSH it sends anyway."""
    first = u8(0)  # remembered id 0
    read_in = lambda size: u64(0) + u64(0) + u32(size) + u32(0) + u64(0) + u32(0) + u32(0)
    write_in = lambda data: u64(0) + u64(0) + u32(len(data)) + u32(0) + u64(0) + u32(0) + u32(0) + data
    progs = {
        "lookup-open-read": [fs_req("lookup", b"file\0"), fs_req("open", u32(0) + u32(0), node=first),
                             fs_req("read", read_in(4096), node=first, fh=first)],
        "create-write-read": [fs_req("create", u32(0o102) + u32(0o644) + u32(0o22) + u32(0) + b"new\0"),
                              fs_req("write", write_in(b"hello" * 20), node=first, fh=first),
                              fs_req("read", read_in(100), node=first, fh=first)],
        "mkdir-escape-readdir": [fs_req("mkdir", u32(0o755) + u32(0) + b"d\0"), fs_req("lookup", b"escape\0"),
                                 fs_req("readlink", b"", node=u8(1)), fs_req("opendir", u32(0) + u32(0)),
                                 fs_req("readdir", read_in(4096), fh=first)],
        "setlkw": [fs_req("create", u32(0o102) + u32(0o644) + u32(0) + u32(0) + b"lk\0"),
                   fs_req("setlkw", u64(0) + u64(7) + u64(0) + u64(99) + u32(1) + u32(1) + u32(0) + u32(0),
                          node=first, fh=first)],
    }
    seeds = {name: u8(0) + u8(len(reqs) - 1) + b"".join(reqs) for name, reqs in progs.items()}
    # Locks left to the client (the first byte's low bit): the lock
    # requests and FLUSH a client sends anyway.
    lk = u64(0) + u64(7) + u64(0) + u64(99) + u32(1) + u32(1) + u32(0) + u32(0)
    reqs = [fs_req("create", u32(0o102) + u32(0o644) + u32(0) + u32(0) + b"lk\0"),
            fs_req("setlk", lk, node=first, fh=first), fs_req("setlkw", lk, node=first, fh=first),
            fs_req("flush", u64(0) + u32(0) + u32(0) + u64(7), node=first, fh=first)]
    seeds["guest-locks"] = u8(1) + u8(len(reqs) - 1) + b"".join(reqs)
    return seeds


TARGETS = {
    "oci-config": oci_config_seeds,
    "oci-process": oci_process_seeds,
    "protocol": protocol_seeds,
    "virtqueue": virtqueue_seeds,
    "virtio-mmio": mmio_seeds,
    "virtio-blk-raw": blk_seeds,
    "virtio-blk-cow": blk_seeds,
    "virtio-net": net_seeds,
    "virtio-vsock": vsock_seeds,
    "virtio-balloon": balloon_seeds,
    "fs-server": fs_seeds,
    "snapshot": snapshot_seeds,
    "device-state": device_state_seeds,
    "boot-tables": boot_tables_seeds,
}


def main():
    for target, make in TARGETS.items():
        d = os.path.join(CORPUS, target)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for name, data in make().items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(os.listdir(d))} seeds")


if __name__ == "__main__":
    main()
