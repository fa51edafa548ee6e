# SPDX-License-Identifier: Apache-2.0
"""kvrun's benchmark harness (bench/run.py): rootfs builders, runtimes,
suites and the report."""
