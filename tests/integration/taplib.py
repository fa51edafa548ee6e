# SPDX-License-Identifier: Apache-2.0
"""Tiny TAP producer for integration tests run by meson (protocol 'tap').

    from taplib import Tap
    t = Tap()
    t.ok(cond, "what")       # one TAP line
    t.eq(got, want, "what")  # with a diagnostic on mismatch
    t.todo(cond, "what", "known gap")  # TAP TODO: a failure is reported, not counted
    t.skip_all("reason")     # exits 0 (meson reads a TAP test's non-zero exit as an error) after "1..0 # SKIP reason"
    t.done()                 # prints the plan, exits 0 or 1
"""
import sys


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, diag=None):
        self.n += 1
        print(f"{'' if cond else 'not '}ok {self.n} - {what}", flush=True)
        if not cond:
            self.failed += 1
            if diag:
                for line in str(diag).splitlines():
                    print(f"#   {line}", flush=True)
        return bool(cond)

    def todo(self, cond, what, gap, diag=None):
        """A check of a known, open gap: printed as TAP's TODO when it fails
        (the runner shows it as an expected failure), as a plain ok once
        the gap is closed."""
        self.n += 1
        print(f"ok {self.n} - {what}" if cond else f"not ok {self.n} - {what} # TODO {gap}", flush=True)
        if not cond and diag:
            for line in str(diag).splitlines():
                print(f"#   {line}", flush=True)
        return bool(cond)

    def skip(self, what, reason):
        """A check that cannot run here: TAP's SKIP, with the reason."""
        self.n += 1
        print(f"ok {self.n} - {what} # SKIP {reason}", flush=True)

    def eq(self, got, want, what):
        return self.ok(got == want, what, f"got:  {got!r}\nwant: {want!r}")

    def diag(self, msg):
        for line in str(msg).splitlines():
            print(f"# {line}", flush=True)

    def skip_all(self, reason):
        print(f"1..0 # SKIP {reason}", flush=True)
        sys.exit(0)

    def done(self):
        print(f"1..{self.n}", flush=True)
        sys.exit(1 if self.failed else 0)
