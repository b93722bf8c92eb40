#!/usr/bin/env python3
"""PESQ against packet loss, one panel per codec pair, srtpgate beside rtpengine,
from bench/quality/run.py's JSON:  python3 bench/quality/plot.py RESULTS.json OUT_BASE"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

data = json.load(open(sys.argv[1]))
base = sys.argv[2]
rows = [r for r in data["results"] if "sides" in r]
pairs = list(dict.fromkeys(r["pair"] for r in rows))
fig, axes = plt.subplots(1, len(pairs), figsize=(3.2 * len(pairs), 3.4), sharey=True)
for ax, pair in zip(axes if len(pairs) > 1 else [axes], pairs):
    for relay, color in (("srtpgate", "tab:blue"), ("rtpengine", "tab:red")):
        for side, style in (("callee", "-"), ("caller", "--")):
            pts = sorted((r["loss_pct"], r["sides"][side]["pesq"]) for r in rows
                         if r["pair"] == pair and r["relay"] == relay and r["sides"][side]["pesq"] is not None)
            if pts:
                a, b = pair.split("<->")
                heard = f"{a}→{b}" if side == "callee" else f"{b}→{a}"
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", color=color, label=f"{relay} {heard}")
    mode = rows[[r["pair"] for r in rows].index(pair)]["sides"]["callee"]["pesq_mode"]
    ax.set_title(f"{pair} ({'wideband' if mode == 'wb' else 'narrowband'} PESQ)", fontsize=9)
    ax.set_xlabel("packet loss before the relay, %")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
axes[0].set_ylabel("MOS-LQO")
m = data["meta"]
fig.suptitle(f"Speech quality through the relay, {m['jitter_ms']} ms jitter with loss ({m['host']}, {m['date']})", fontsize=10)
fig.tight_layout()
for ext in ("png", "svg"):
    fig.savefig(f"{base}.{ext}", dpi=110)
print(f"wrote {base}.png/.svg")
