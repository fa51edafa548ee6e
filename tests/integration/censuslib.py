# SPDX-License-Identifier: Apache-2.0
"""What containers may leave behind on the host, counted before and after
(test_lifecycle_kill.py, test_churn.py): processes whose command line
names the test's containers, state directories, the state root's and the
cache's files, TAPs, ingress qdiscs, the addresses, routes and alias of a
network namespace's interfaces, cgroup directories, host mounts and this
process's own open fds."""
import os
import subprocess

from bundlelib import processes_mentioning

CG = "/sys/fs/cgroup"


def cgroup_dirs(path):
    """Every hierarchy's directory for path (cgroupfs form) that exists."""
    found = []
    if not path or not os.path.isdir(CG):
        return found
    for h in os.listdir(CG):
        d = os.path.join(CG, h) + path
        if not os.path.islink(os.path.join(CG, h)) and os.path.isdir(d):
            found.append(d)
    if os.path.exists(os.path.join(CG, "cgroup.controllers")) and os.path.isdir(CG + path):
        found.append(CG + path)
    return found


def _sh(*argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout


def _files(d):
    out = []
    for dirpath, dirnames, filenames in os.walk(d):
        for n in dirnames + filenames:
            out.append(os.path.relpath(os.path.join(dirpath, n), d))
    return sorted(out)


class Census:
    """tag: a string every container id of the test holds (its processes
    are found by it); root: the --root; cache: $KVRUN_CACHE_DIR; netns: a
    namespace name (ip netns) the containers serve; cgroups: cgroupsPath
    values they use."""

    def __init__(self, tag, root, cache=None, netns=None, cgroups=()):
        self.tag, self.root, self.cache, self.netns, self.cgroups = tag, root, cache, netns, list(cgroups)

    def take(self):
        c = {
            "processes": sorted(processes_mentioning(self.tag)),
            "state": sorted(os.listdir(self.root)) if os.path.isdir(self.root) else [],
            "cache": _files(self.cache) if self.cache and os.path.isdir(self.cache) else [],
            "cgroups": [d for p in self.cgroups for d in cgroup_dirs(p)],
            "mounts": sorted(l.split(" - ")[0].split(" ", 4)[4] for l in open("/proc/self/mountinfo")
                             if self.tag in l),
            "fds": len(os.listdir("/proc/self/fd")),
        }
        if self.netns:
            links = _sh("ip", "-n", self.netns, "-o", "-d", "link", "show")
            c["taps"] = sorted(l.split(":")[1].strip().split("@")[0] for l in links.splitlines() if ": kvt" in l)
            c["aliases"] = sorted(l.split(" alias ", 1)[1].split()[0] for l in links.splitlines() if " alias " in l)
            c["qdiscs"] = sorted(l for l in _sh("tc", "-n", self.netns, "qdisc", "show").splitlines()
                                 if "ingress" in l)
            c["addrs"] = sorted(l.split()[1] + " " + l.split()[3] for l in
                                _sh("ip", "-n", self.netns, "-o", "addr", "show").splitlines())
            c["routes"] = sorted(_sh("ip", "-n", self.netns, "route").splitlines())
        return c

    @staticmethod
    def diff(before, after, ignore=()):
        """{what: (before, after)} for what changed."""
        return {k: (before.get(k), after.get(k)) for k in set(before) | set(after)
                if k not in ignore and before.get(k) != after.get(k)}
