#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pjdfstest (the whole suite) on kvrun's virtio-fs server, served to the
host kernel's FUSE client by tests/fs/kvrun-fs-host.

Every assertion that fails must be in tests/fs/pjdfstest-expected.txt (the
assertions known to fail, each with its reason in docs/virtio-fs.md): a
failure not listed is a regression and fails this test. An expected one
that passes is reported (update the list) without failing. A test file
that dies, or a run whose assertion count drops, fails too.

Skips loudly without root, /dev/fuse, prove (perl) or pjdfstest
($KVRUN_PJDFSTEST or shared/tools/pjdfstest beside the checkout).
"""
import os
import tempfile

import fslib
from taplib import Tap

# The suite's assertion count with this pjdfstest build on Linux (its
# README: 8798 on FUSE mounts, which skip the few ext4-only checks).
MIN_ASSERTIONS = 8700

t = Tap()
problem = fslib.fuse_problem()
if problem:
    t.skip_all(problem)
if not fslib.have("prove"):
    t.skip_all("prove (perl) is not installed")
pjd, tried = fslib.find_pjdfstest()
if not pjd:
    t.skip_all(f"pjdfstest not found (tried {', '.join(tried)})")
binary = fslib.fs_host_binary()
if not os.path.isfile(binary):
    t.ok(False, f"kvrun-fs-host exists ({binary})")
    t.done()

expected_path = os.path.join(fslib.src_root(), "tests", "fs", "pjdfstest-expected.txt")
expected = fslib.read_expected(expected_path)
jobs = int(os.environ.get("KVRUN_PJDFSTEST_JOBS", "3"))

with tempfile.TemporaryDirectory(prefix="kvrun-pjdfstest-") as tmp:
    share, mnt = os.path.join(tmp, "share"), os.path.join(tmp, "mnt")
    os.mkdir(share)
    os.mkdir(mnt)
    m = fslib.KvrunMount(share, mnt, ["--threads", "4"])
    with m:
        failed, wstat, total, secs, out = fslib.run_pjdfstest(mnt, pjd, jobs=jobs)
    t.diag(f"pjdfstest: {total} assertions in {secs:.0f} s (prove -j{jobs}), "
           f"{sum(len(v) for v in failed.values())} failed")
    t.eq(m.rc, 0, "kvrun-fs-host ended cleanly at the unmount")
    t.ok(not m.stderr.strip(), "kvrun-fs-host printed no error", m.stderr)
    t.ok(total is not None and total >= MIN_ASSERTIONS, f"the whole suite ran ({total} assertions)",
         "\n".join(out.splitlines()[-30:]))
    t.eq(wstat, {}, "no test file died")
    new = {f: nums - expected.get(f, set()) for f, nums in failed.items()}
    new = {f: n for f, n in new.items() if n}
    t.ok(not new, "no failure beyond tests/fs/pjdfstest-expected.txt",
         "new failures:\n" + "\n".join(fslib.format_failures(new)))
    fixed = {f: nums - failed.get(f, set()) for f, nums in expected.items()}
    fixed = {f: n for f, n in fixed.items() if n}
    if fixed:
        t.diag("expected failures that now pass (update tests/fs/pjdfstest-expected.txt):")
        t.diag("\n".join(fslib.format_failures(fixed)))
    leftovers = os.listdir(share)
    t.eq(leftovers, [], "pjdfstest left nothing in the shared directory")
t.done()
