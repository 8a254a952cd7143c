#!/usr/bin/env python3
# plot-peers.py: SVG chart of a peers run (run-all.sh raw results)
#
# Copyright 2026 The wsrt authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# usage: tests/bench/plot-peers.py RAW_RESULTS.txt > peers.svg
#        tests/bench/plot-peers.py --markdown RAW_RESULTS.txt   (the table,
#        with wsrt's ratio to the best other peer and to GThreadPool)
#
# RAW_RESULTS.txt is the file run-all.sh saves under peers/results/: the
# "workload=... peer=... median_ns_per_task=..." lines of every round.
# For each workload and peer the median of the rounds' medians is drawn as
# a bar, ns per task on a log scale (lower is better); DNF is drawn as a
# hatched full-height bar. Standard library only.

import math
import statistics
import sys
from collections import OrderedDict

COLOURS = OrderedDict([
    ("wsrt", "#1f77b4"),
    ("wsrt-handles", "#aec7e8"),
    ("tokio", "#d62728"),
    ("smol", "#9467bd"),
    ("gthreadpool", "#2ca02c"),
    ("gthreadpool-shared", "#98df8a"),
    ("tbb", "#ff7f0e"),
])
EXTRA_COLOURS = ["#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def parse(paths):
    runs = OrderedDict()
    workloads = []
    peers = []
    for path in paths:
        with open(path) as f:
            for line in f:
                if not line.startswith("workload="):
                    continue
                kv = dict(field.split("=", 1) for field in line.split())
                w, p, x = kv["workload"], kv["peer"], kv["median_ns_per_task"]
                if w not in workloads:
                    workloads.append(w)
                if p not in peers:
                    peers.append(p)
                runs.setdefault((w, p), []).append(None if x == "DNF" else float(x))
    result = {}
    for key, values in runs.items():
        # DNF sorts last, as in run-all.sh's table.
        ordered = sorted(values, key=lambda v: math.inf if v is None else v)
        finite = [math.inf if v is None else v for v in ordered]
        m = statistics.median(finite)
        result[key] = None if math.isinf(m) else m
    known = [p for p in COLOURS if p in peers]
    others = [p for p in peers if p not in COLOURS]
    return workloads, known + others, result


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(workloads, peers, result, title):
    colour = dict(COLOURS)
    for i, p in enumerate(p for p in peers if p not in colour):
        colour[p] = EXTRA_COLOURS[i % len(EXTRA_COLOURS)]

    values = [v for v in result.values() if v is not None]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    left, top, plot_h = 70, 60, 320
    bar_w, gap = 11, 22
    group_w = len(peers) * bar_w + gap
    width = left + len(workloads) * group_w + 20
    height = top + plot_h + 150

    def y(v):
        return top + plot_h - plot_h * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        '<defs><pattern id="dnf" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="3" height="6" fill="#bbb"/></pattern></defs>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="14" font-weight="bold">{esc(title)}</text>',
        f'<text x="{left}" y="40">median ns per task, log scale, lower is better; '
        'hatched = DNF (did not finish)</text>',
    ]
    decade = lo
    while decade <= hi * 1.0001:
        yy = y(decade)
        out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{width - 20}" y2="{yy:.1f}" stroke="#ddd"/>')
        label = f"{decade:g}"
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{label}</text>')
        decade *= 10
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')

    for i, w in enumerate(workloads):
        x0 = left + 10 + i * group_w
        for j, p in enumerate(peers):
            if (w, p) not in result:
                continue
            v = result[(w, p)]
            x = x0 + j * bar_w
            if v is None:
                out.append(f'<rect x="{x}" y="{top}" width="{bar_w - 1}" height="{plot_h}" '
                           f'fill="url(#dnf)" stroke="{colour[p]}"><title>{esc(p)} {esc(w)}: DNF</title></rect>')
                continue
            yy = y(v)
            out.append(f'<rect x="{x}" y="{yy:.1f}" width="{bar_w - 1}" height="{top + plot_h - yy:.1f}" '
                       f'fill="{colour[p]}"><title>{esc(p)} {esc(w)}: {v:g} ns</title></rect>')
        cx = x0 + len(peers) * bar_w / 2
        out.append(f'<text transform="translate({cx:.1f},{top + plot_h + 12}) rotate(30)">{esc(w)}</text>')

    ly = height - 22
    lx = left
    for p in peers:
        out.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{colour[p]}"/>')
        out.append(f'<text x="{lx + 14}" y="{ly}">{esc(p)}</text>')
        lx += 14 + 7 * len(p) + 16
    out.append("</svg>")
    return "\n".join(out) + "\n"


def fmt(v):
    if v is None:
        return "DNF"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def markdown(workloads, peers, result):
    others = [p for p in peers if not p.startswith("wsrt")]
    out = ["| workload | " + " | ".join(peers) + " | best other | wsrt / best | GThreadPool / wsrt |",
           "| --- | " + " | ".join("---:" for _ in peers) + " | --- | ---: | ---: |"]
    for w in workloads:
        row = [fmt(result.get((w, p))) if (w, p) in result else "-" for p in peers]
        finite = [(result[(w, p)], p) for p in others
                  if (w, p) in result and result[(w, p)] is not None]
        ws = result.get((w, "wsrt"))
        best = min(finite) if finite else None
        ratio = f"{ws / best[0]:.2f}" if best and ws else "-"
        gtp = result.get((w, "gthreadpool"))
        speedup = (f"{gtp / ws:.1f}" if gtp / ws >= 1 else f"{gtp / ws:.2f}") if gtp and ws else "-"
        out.append(f"| {w} | " + " | ".join(row) +
                   f" | {best[1] if best else '-'} | {ratio} | {speedup} |")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    as_markdown = bool(args) and args[0] == "--markdown"
    if as_markdown:
        args = args[1:]
    if not args:
        sys.exit("usage: plot-peers.py [--markdown] RAW_RESULTS.txt... > chart.svg")
    workloads, peers, result = parse(args)
    if as_markdown:
        sys.stdout.write(markdown(workloads, peers, result))
    else:
        sys.stdout.write(svg(workloads, peers, result, "wsrt and its peers, 2 workers"))


if __name__ == "__main__":
    main()
