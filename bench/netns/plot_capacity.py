#!/usr/bin/env python3
"""Plots capacity.py results: p99 delay (each run, and the median of the
runs) and relay CPU (process + softirq) against concurrent calls, one line
per configuration; the bounds (p99 5 ms) drawn in.

    python3 bench/netns/plot_capacity.py OUT_BASE TITLE RESULTS.json [RESULTS.json ...]

Writes OUT_BASE-delay.png and OUT_BASE-cpu.png (needs matplotlib).
"""
import json
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {"uring": "srtpgate (io_uring)", "sockets": "srtpgate (sockets)", "xdp": "srtpgate (AF_XDP)"}


def main():
    out, title, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = defaultdict(lambda: defaultdict(list))
    for f in files:
        for r in json.load(open(f))["results"]:
            runs[r["config"]][r["calls"]].append(r)
    fig, ax = plt.subplots(figsize=(7, 4))
    for cfg, by in sorted(runs.items()):
        xs = sorted(by)
        med = [statistics.median((r["p99_us"] or 1e6) / 1000 for r in by[n]) for n in xs]
        line, = ax.plot(xs, med, marker="o", label=NAMES.get(cfg, cfg) + ", median of runs")
        for n in xs:
            ax.scatter([n] * len(by[n]), [(r["p99_us"] or 1e6) / 1000 for r in by[n]], s=8, color=line.get_color(),
                       alpha=0.4)
    ax.axhline(5, color="grey", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("concurrent calls")
    ax.set_ylabel("p99 delay (ms)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + "-delay.png", dpi=110)
    fig, ax = plt.subplots(figsize=(7, 4))
    for cfg, by in sorted(runs.items()):
        xs = sorted(by)
        cpu = [statistics.median(r["relay_process_cores"] + r["relay_softirq_cores"] for r in by[n]) for n in xs]
        ax.plot(xs, cpu, marker="o", label=NAMES.get(cfg, cfg))
    ax.set_xlabel("concurrent calls")
    ax.set_ylabel("relay CPU (cores: process + softirq)")
    ax.set_ylim(0, 1.1)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + "-cpu.png", dpi=110)


if __name__ == "__main__":
    main()
