#!/usr/bin/env python3
"""Plots a soak's samples (bench/soak/run.sh): resident memory, open files
and calls, and the relay's p99 delay per interval, against time.

    python3 bench/soak/plot.py SOAK.csv OUT_BASE TITLE     # writes OUT_BASE.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    path, out, title = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = list(csv.DictReader(open(path)))
    t = [float(r["seconds"]) / 60 for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
    axes[0].plot(t, [int(r["rss_kb"]) / 1024 for r in rows])
    axes[0].set_ylabel("relay RSS (MB)")
    axes[0].set_ylim(bottom=0)
    axes[1].plot(t, [float(r["calls"]) for r in rows], label="calls")
    axes[1].plot(t, [int(r["open_files"]) for r in rows], label="open files")
    axes[1].set_ylim(bottom=0)
    axes[1].legend(fontsize=8)
    p = [(x, float(r["relay_p99_us"]) / 1000) for x, r in zip(t, rows) if r["relay_p99_us"]]
    axes[2].plot([x for x, _ in p], [y for _, y in p])
    axes[2].set_ylabel("relay p99 delay (ms)")
    axes[2].set_xlabel("minutes")
    axes[2].set_ylim(bottom=0)
    axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)


if __name__ == "__main__":
    main()
