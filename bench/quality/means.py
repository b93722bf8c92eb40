#!/usr/bin/env python3
"""PESQ means over several seeds: `bench/quality/run.py` JSON files (one per
seed, same pairs and losses) in, a Markdown table out: for each pair,
direction and loss, srtpgate's and rtpengine's mean, their difference, and
the difference of each seed.

    python3 bench/quality/means.py quality-seed7.json quality-seed8.json quality-seed9.json
"""

import json
import sys
from collections import defaultdict


def main():
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    # (direction, loss) -> relay -> [pesq per seed]
    got = defaultdict(lambda: defaultdict(dict))
    order = []
    for run in runs:
        for r in run["results"]:
            if "error" in r:
                continue
            a, b = r["pair"].split("<->")
            for side, (x, y) in (("callee", (a, b)), ("caller", (b, a))):
                key = (f"{x}→{y}", r["loss_pct"])
                if key not in order:
                    order.append(key)
                got[key][r["relay"]][r["seed"]] = r["sides"][side]["pesq"]
    seeds = sorted({s for k in got for rel in got[k].values() for s in rel})
    print("| direction | loss | srtpgate mean | rtpengine mean | difference | per seed (%s) |" % ", ".join(map(str, seeds)))
    print("|---|---|---|---|---|---|")
    for key in order:
        s, e = got[key].get("srtpgate", {}), got[key].get("rtpengine", {})
        both = [k for k in seeds if k in s and k in e]
        if not both:
            continue
        ms = sum(s[k] for k in both) / len(both)
        me = sum(e[k] for k in both) / len(both)
        per = ", ".join("%+.2f" % (s[k] - e[k]) for k in both)
        print("| %s | %g %% | %.3f | %.3f | %+.2f | %s |" % (key[0], key[1], ms, me, ms - me, per))


if __name__ == "__main__":
    main()
