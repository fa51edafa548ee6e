# SPDX-License-Identifier: Apache-2.0
"""Where the suites put their figures: per metric, per runtime, the raw
samples or the reason it is not available."""
from .util import summary

META = ("unit", "better", "title", "label")


class Results:
    def __init__(self):
        self.metrics = {}  # "suite/metric" -> dict
        self.notes = []

    def metric(self, suite, name, **meta):
        """The metric suite/name, made on first use; meta given (unit,
        better, title, label) is set, whoever comes first, so a figure
        first seen as not available still gets its unit and title."""
        key = f"{suite}/{name}"
        if key not in self.metrics:
            self.metrics[key] = {"suite": suite, "name": name, "unit": "", "better": "lower",
                                 "title": name, "label": None, "runtimes": {}}
        m = self.metrics[key]
        m.update({k: v for k, v in meta.items() if k in META})
        return m

    def add(self, suite, name, rt, value, **meta):
        """Append one sample (meta: unit, better, title, label)."""
        m = self.metric(suite, name, **meta)
        d = m["runtimes"].setdefault(rt, {"samples": []})
        if "not_available" not in d:  # a figure that failed in one run stays not available
            d["samples"].append(value)

    def na(self, suite, name, rt, reason, **meta):
        m = self.metric(suite, name, **meta)
        m["runtimes"][rt] = {"not_available": reason}

    def finish(self):
        """Medians and spread for every metric with samples."""
        for m in self.metrics.values():
            for rt, d in m["runtimes"].items():
                if "samples" in d:
                    d.update(summary(d["samples"]) or {})
        return self.metrics
