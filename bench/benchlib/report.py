# SPDX-License-Identifier: Apache-2.0
"""The Markdown table (medians, spread, ratios to runc) and gnuplot PNGs."""
import os
import subprocess

ORDER = ["host-direct", "runc", "crun", "kvrun", "kvrun (guest locks)", "kvrun (256 MiB)", "kvrun (cold boot)", "kvrun (no root disk cache)",
         "kvrun (bzImage)", "qemu-microvm", "bindfs", "bindfs (lock forwarding)"]
# Runtimes whose ratio to runc the table shows.
RATIOS = ("kvrun", "kvrun (256 MiB)", "kvrun (cold boot)", "kvrun (no root disk cache)", "crun")
SUITE_TITLES = {"start": "Start", "memory": "Memory (idle)", "pg": "PostgreSQL (pgbench)",
                "nginx": "nginx (wrk)", "net": "Network (iperf3)", "cpu-io": "CPU and I/O",
                "vmm": "VMM and boot", "template": "Templates (create from a VM snapshot)",
                "fs": "Shared directory server on /dev/fuse (kvrun virtio-fs server, bindfs)",
                "sizing": "Guest sizing (no limit: idle memory, memory given back)",
                "datapath": "Device data path (test guest at CPL3, polled)",
                "datapath-cpu": "Host CPU per operation of the data path (kvrun: its threads but the polling "
                                "vCPU's; host-direct: its process)",
                "exits": "Exits and work per operation", "density": "Density (idle containers)",
                "pod": "Pod (a sandbox and two app containers)"}
# Suites whose ratios are taken to something else than runc: (numerator,
# denominator) pairs, and whether metrics carry a target on the first.
RATIO_PAIRS = {"datapath": [("kvrun", "host-direct"), ("kvrun", "qemu-microvm")],
               "datapath-cpu": [("kvrun", "host-direct")],
               "density": [("kvrun", "runc")],
               "fs": [("kvrun (guest locks)", "bindfs"), ("kvrun", "bindfs (lock forwarding)")]}
# Marks a ratio whose kvrun figure carries a label (an emulated guest kernel).
LABELLED = "‡"


def fmt(v):
    if v is None:
        return "?"
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 0.1 else f"{v:.3f}"


def cell(d):
    if d is None:
        return ""
    if "not_available" in d:
        return "n/a"
    if d.get("median") is None:
        return "?"
    label = f" *[{d['label']}]*" if d.get("label") else ""
    if d["n"] == 1:
        return fmt(d["median"]) + label
    return f"{fmt(d['median'])} ({fmt(d['min'])}–{fmt(d['max'])})" + label


def ratio(m, a, b="runc"):
    da, db = m["runtimes"].get(a), m["runtimes"].get(b)
    if not da or not db or "median" not in da or "median" not in db or not db["median"]:
        return ""
    return f"{da['median'] / db['median']:.2f}"


def target_cell(m, pairs):
    """Met, or missed by how much, for a metric with a target ratio."""
    tg = m.get("target")
    if not tg:
        return ""
    if "max" in tg:
        d = m["runtimes"].get("kvrun", {})
        if "median" not in d:
            return f"≤ {tg['max']} {m['unit']}: not measured"
        if d["median"] <= tg["max"]:
            return f"≤ {tg['max']} {m['unit']}: met"
        return f"≤ {tg['max']} {m['unit']}: missed by {100 * (d['median'] - tg['max']) / tg['max']:.0f}%"
    r = ratio(m, "kvrun", tg["vs"])
    if not r:
        return f"≥ {tg['min']:.2f} × {tg['vs']}: not measured"
    got = float(r)
    if got >= tg["min"]:
        return f"≥ {tg['min']:.2f}: met"
    return f"≥ {tg['min']:.2f}: missed by {100 * (tg['min'] - got) / tg['min']:.0f}%"


def pair_table(suite, ms, reasons):
    """A suite compared with RATIO_PAIRS instead of runc."""
    pairs = RATIO_PAIRS[suite]
    rts = [r for r in ORDER if any(r in m["runtimes"] for m in ms)]
    head = ["measurement", "unit"] + rts + [f"{a}/{b}" for a, b in pairs if a in rts and b in rts]
    has_target = any(m.get("target") for m in ms)
    if has_target:
        head.append("target (kvrun)")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for m in ms:
        row = [m["title"].replace("|", "\\|"), m["unit"]]
        for r in rts:
            d = m["runtimes"].get(r)
            if d and "not_available" in d:
                reasons.setdefault(d["not_available"], len(reasons) + 1)
                row.append(f"n/a [{reasons[d['not_available']]}]")
            else:
                row.append(cell(d))
        row += [ratio(m, a, b) for a, b in pairs if a in rts and b in rts]
        if has_target:
            row.append(target_cell(m, pairs))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def grouped_table(ms, reasons):
    """Metrics named "<subject>: <figure>" (one runtime) as one row per
    subject and a column per figure: the exits suite."""
    rows, cols, labels = {}, [], set()
    for m in ms:
        subject, _, fig = m["title"].partition(": ")
        col = f"{fig} ({m['unit']})" if m["unit"] else fig
        if col not in cols:
            cols.append(col)
        d = next(iter(m["runtimes"].values()), None)
        if d and "not_available" in d:
            reasons.setdefault(d["not_available"], len(reasons) + 1)
            v = f"n/a [{reasons[d['not_available']]}]"
        else:
            v = cell(d)
        rows.setdefault(subject, {})[col] = v
        if m.get("label"):
            labels.add(m["label"])
    lines = ["| what | " + " | ".join(cols) + " |", "|" + " --- |" * (len(cols) + 1)]
    for subject, vals in rows.items():
        lines.append("| " + subject.replace("|", "\\|") + " | " + " | ".join(vals.get(c, "") for c in cols) + " |")
    if labels:
        lines += ["", "Every figure above: " + "; ".join(sorted(labels)) + "."]
    return lines


def table(res):
    metrics = res["metrics"]
    lines = []
    reasons = {}
    labels = set()
    for suite in SUITE_TITLES:
        ms = [m for m in metrics.values() if m["suite"] == suite]
        if not ms:
            continue
        if suite in RATIO_PAIRS:
            lines += ["", f"### {SUITE_TITLES[suite]}", ""] + pair_table(suite, ms, reasons)
            continue
        if suite == "exits":
            lines += ["", f"### {SUITE_TITLES[suite]}"]
            # One table per kind of operation (blk, net, vsock, ...).
            for kind in dict.fromkeys(m["title"].split()[0] for m in ms):
                lines += [""] + grouped_table([m for m in ms if m["title"].split()[0] == kind], reasons)
            continue
        rts = [r for r in ORDER if any(r in m["runtimes"] for m in ms)]
        has_runc = "runc" in rts
        lines += ["", f"### {SUITE_TITLES[suite]}", ""]
        head = ["measurement", "unit"] + rts
        if has_runc:
            head += [f"{r}/runc" for r in RATIOS if r in rts]
            if suite == "memory":
                head += [f"{r} − runc" for r in ("kvrun", "crun") if r in rts]
        if "qemu-microvm" in rts:
            head += ["qemu/kvrun"]
        lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for m in ms:
            title = m["title"].replace("|", "\\|")
            row = [title + (f" *[{m['label']}]*" if m.get("label") else ""), m["unit"]]
            for r in rts:
                d = m["runtimes"].get(r)
                if d and "not_available" in d:
                    reasons.setdefault(d["not_available"], len(reasons) + 1)
                    row.append(f"n/a [{reasons[d['not_available']]}]")
                else:
                    row.append(cell(d))
            if has_runc:
                for r in [r for r in RATIOS if r in rts]:
                    x, lab = ratio(m, r), m["runtimes"].get(r, {}).get("label")
                    if x and lab:
                        labels.add(lab)
                        x += " " + LABELLED
                    row.append(x)
                if suite == "memory":
                    for r in [r for r in ("kvrun", "crun") if r in rts]:
                        da, db = m["runtimes"].get(r, {}), m["runtimes"].get("runc", {})
                        row.append(fmt(da["median"] - db["median"]) if "median" in da and "median" in db else "")
            if "qemu-microvm" in rts:
                row.append(ratio(m, "qemu-microvm", "kvrun"))
            lines.append("| " + " | ".join(row) + " |")
    if labels:
        lines += ["", f"{LABELLED} the kvrun figure of this ratio is labelled "
                  f"{' / '.join(sorted(labels))}: it measures the guest kernel under emulation, "
                  "not what kvrun costs on a native KVM host."]
    if reasons:
        lines += ["", "Not available:", ""]
        lines += [f"{n}. {r}" for r, n in sorted(reasons.items(), key=lambda x: x[1])]
    return lines


def write_markdown(res, path):
    h = res["host"]
    lines = [
        f"# kvrun benchmarks, {res['started']}", "",
        f"Host: {h['cpu_model']}, {h['cpus']} CPUs, {h['mem_total_kib'] // 1024} MiB, Linux {h['kernel']}; "
        f"host kind **{h['host']['kind']}**.",
        f"Load average at start {res['loadavg_start']}, at end {res['loadavg_end']} (1, 5, 15 min).",
        f"Runs: {res['config']['runs']} per figure, runtimes alternated; cells are median (min–max). "
        f"Limits in every config.json: {res['config']['limits']}.",
        f"Command: `{res['command']}`; wall time {res['wall_s']:.0f} s.",
    ]
    lines += table(res)
    if res.get("notes"):
        lines += ["", "Notes:", ""] + [f"- {n}" for n in res["notes"]]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def gnuplot(script, cwd):
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True, cwd=cwd)
    if r.returncode != 0:
        raise RuntimeError(f"gnuplot: {r.stderr.strip()[-300:]}")


def legend(ms, rt):
    """rt, with the label its figures in ms carry (the emulated guest kernel)."""
    labels = sorted({m["runtimes"].get(rt, {}).get("label") for m in ms} - {None})
    return f"{rt} ({'; '.join(labels)})" if labels else rt


def plot_suite(res, suite, out, normalise, unit=None, base="runc", invert_lower=False):
    """One PNG of suite's medians (of one unit, or all), absolute or
    normalised to base; with invert_lower, figures where lower is better
    (latencies) are plotted as base / value, so that higher is better
    throughout."""
    ms = [m for m in res["metrics"].values() if m["suite"] == suite and (unit is None or m["unit"] == unit)]
    rts = [r for r in ORDER if any("median" in m["runtimes"].get(r, {}) for m in ms)]
    ms = [m for m in ms if any("median" in m["runtimes"].get(r, {}) for r in rts)]
    if not ms or not rts or (normalise and base not in rts):
        return None
    name = suite if unit is None else f"{suite}-{unit.lower().replace('/', '-')}"
    dat = os.path.join(out, f"{name}.dat")
    with open(dat, "w") as f:
        f.write("# metric " + " ".join(f'"{r}" lo hi' for r in rts) + "\n")
        for m in ms:
            div = m["runtimes"].get(base, {}).get("median") if normalise else 1
            row = [f'"{m["name"]}"']
            for r in rts:
                d = m["runtimes"].get(r, {})
                if "median" in d and div and invert_lower and m["better"] == "lower" and d["min"]:
                    row += [f"{div / d['median']:.6g}", f"{div / d['max']:.6g}", f"{div / d['min']:.6g}"]
                elif "median" in d and div:
                    row += [f"{d['median'] / div:.6g}", f"{d['min'] / div:.6g}", f"{d['max'] / div:.6g}"]
                else:
                    row += ["?", "?", "?"]
            f.write(" ".join(row) + "\n")
    inv = "; latencies inverted" if invert_lower else ""
    ylabel = f"ratio to {base} (1 = {base}{inv})" if normalise else " / ".join(sorted({m["unit"] for m in ms}))
    png = f"{name}.png"
    cols = ", ".join(f"'{name}.dat' using {2 + 3 * k}:{3 + 3 * k}:{4 + 3 * k}"
                     f"{':xtic(1)' if k == 0 else ''} title '{legend(ms, r)}'" for k, r in enumerate(rts))
    gnuplot(f"""set terminal pngcairo size {max(1000, 14 * len(ms) * len(rts))},560 font ',10'
set output '{png}'
set datafile missing '?'
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -30 noenhanced
set key top left noenhanced
set grid ytics
{"set logscale y" if unit == "ms" and suite in ("vmm", "template", "pod") else "set yrange [0:*]"}
set ylabel '{ylabel}'
set title '{SUITE_TITLES[suite]}: medians, bars min-max{f" (normalised to {base})" if normalise else ""}' noenhanced
plot {cols}
""", out)
    os.unlink(dat)
    return png


def write_plots(res, out):
    pngs = []
    for suite, norm in (("start", False), ("memory", False), ("pg", True), ("nginx", True), ("net", True),
                        ("cpu-io", True)):
        pngs.append(plot_suite(res, suite, out, norm))
    # Data path: normalised to the host doing the same directly.
    pngs.append(plot_suite(res, "datapath", out, True, base="host-direct", invert_lower=True))
    for unit in ("exits", "kicks", "irqs"):
        pngs.append(plot_suite(res, "exits", out, False, unit))
    for unit in ("MiB", "%"):
        pngs.append(plot_suite(res, "density", out, False, unit))
    for unit in ("ms", "MiB"):
        pngs.append(plot_suite(res, "pod", out, False, unit))
    # The VMM figures mix times and sizes: one plot per unit.
    for suite in ("vmm", "template"):
        for unit in ("ms", "MiB"):
            pngs.append(plot_suite(res, suite, out, False, unit))
    pngs.append(plot_suite(res, "fs", out, True, base="bindfs"))
    return [p for p in pngs if p]
