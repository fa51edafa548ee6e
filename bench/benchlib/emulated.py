# SPDX-License-Identifier: Apache-2.0
"""Which guest-workload figures kvrun takes on a host whose guest kernel
runs under instruction emulation (nested kvm_pvm), and why the others are
not taken there.

By default none is taken there: they would measure the emulator. With
--force-emulated the small set below runs (each a Linux boot of 2 to 14
minutes here, so 3 runs at most); the rest stays "not available" with the
reason given here, because it cannot finish in about 20 minutes."""
import fnmatch

EMULATED = "guest kernel emulated on this host (kvm_pvm)"
EMULATED_REASON = "not available: " + EMULATED
# The label every kvrun figure taken on such a host carries.
LABEL = "emulated guest kernel (kvm_pvm)"

# Figures kvrun takes with --force-emulated (shell patterns of "suite/name").
FORCED = ["start/true_p50", "start/true_p95", "cpu-io/bc", "cpu-io/tar_small", "cpu-io/rm_small",
          "net/*", "nginx/*", "template/create_*", "template/pss_*", "template/rss_*", "sizing/*", "density/*",
          "exits/container start*", "exits/exec *", "pod/*"]

# kvrun figures of host-side work only: real on any host, never labelled.
HOST_SIDE = ["vmm/*", "start/kvrun_host_start*", "start/cli_state", "template/restore_*", "template/host_*",
             "template/disk_*", "fs/*"]

# kvrun figures that are counts of what kvrun made, not measurements of
# time or memory: the same under emulation, never labelled.
FACTS = ["pod/vms", "pod/from_template"]

# kvrun figures that carry a label of their own: the data path's, where
# the test guest's CPL3 loop runs natively and only its set-up is emulated.
SELF_LABELLED = ["datapath/*", "datapath-cpu/*", "exits/blk *", "exits/net *", "exits/vsock *"]

# Why the others are not taken even then.
WHY_NOT = [
    ("start/parallel16", "16 Linux guests booting at once on 2 cores does not finish in 20 minutes"),
    ("start/pause", "a Linux boot (2-14 min here) per run for a millisecond figure"),
    ("start/resume", "a Linux boot (2-14 min here) per run for a millisecond figure"),
    ("start/restore", "a Linux boot (2-14 min here) per run for a millisecond figure"),
    ("memory/nginx10_pss", "10 idle nginx are 10 Linux boots (20 min to 2 hours here)"),
    ("memory/pg_idle_pss", "a boot plus PostgreSQL's start, not attempted within the 20-minute budget"),
    ("pg/*", "a boot, PostgreSQL's start, pgbench -i of 60 MB and three pgbench runs per run: "
             "not attempted within the 20-minute budget"),
    ("cpu-io/*", "the 8000-file tar and rm, the gcc build and fio are system-call bound and do not "
                 "finish in 20 minutes under emulation (the small tar and rm show the cost per file)"),
]


def host_side(key):
    """Whether figure key measures only host-side work (meaningful on an
    emulating host too)."""
    return any(fnmatch.fnmatchcase(key, p) for p in HOST_SIDE)


def label_metrics(metrics):
    """Label every kvrun figure taken (kvrun, and kvrun variants such as
    "kvrun (cold boot)") that involved the emulated guest kernel: all but
    the host-side ones, those with a label of their own and the counts."""
    for key, m in metrics.items():
        if host_side(key) or any(fnmatch.fnmatchcase(key, p) for p in SELF_LABELLED + FACTS):
            continue
        for rt, d in m["runtimes"].items():
            if rt.startswith("kvrun") and "samples" in d:
                d["label"] = LABEL


def forced(key):
    """Whether kvrun takes figure key under --force-emulated on an emulating host."""
    return any(fnmatch.fnmatchcase(key, p) for p in FORCED)


def reason(key, emulating, force):
    """Why kvrun does not take figure key on this host (None: it does)."""
    if not emulating:
        return None
    if not force:
        return EMULATED_REASON
    if forced(key):
        return None
    why = next((w for p, w in WHY_NOT if fnmatch.fnmatchcase(key, p)), "not in the small set")
    return f"{EMULATED_REASON}; not run even with --force-emulated: {why}"
