# SPDX-License-Identifier: Apache-2.0
"""Where the suites put their figures: per metric, per runtime, the raw
samples or the reason it is not available."""
from .util import summary


class Results:
    def __init__(self):
        self.metrics = {}  # "suite/metric" -> dict
        self.notes = []

    def metric(self, suite, name, unit, better, title, label=None):
        key = f"{suite}/{name}"
        if key not in self.metrics:
            self.metrics[key] = {"suite": suite, "name": name, "unit": unit, "better": better,
                                 "title": title, "label": label, "runtimes": {}}
        return self.metrics[key]

    def add(self, suite, name, rt, value, **meta):
        """Append one sample (meta: unit, better, title, label on first use)."""
        m = self.metric(suite, name, meta.get("unit", ""), meta.get("better", "lower"),
                        meta.get("title", name), meta.get("label"))
        m["runtimes"].setdefault(rt, {"samples": []})["samples"].append(value)

    def na(self, suite, name, rt, reason, **meta):
        m = self.metric(suite, name, meta.get("unit", ""), meta.get("better", "lower"),
                        meta.get("title", name), meta.get("label"))
        m["runtimes"][rt] = {"not_available": reason}

    def finish(self):
        """Medians and spread for every metric with samples."""
        for m in self.metrics.values():
            for rt, d in m["runtimes"].items():
                if "samples" in d:
                    d.update(summary(d["samples"]) or {})
        return self.metrics
