#!/usr/bin/env python3
"""One line per run of bench/netns/capacity.py output files: calls, p99,
loss, the relay's cores (process + softirq), G.711 call equivalents per core
(calls x 20 / ptime over those cores), the share of the frames the XDP
program saw that took the AF_XDP path, and ns per received packet by worker
stage (srtpgate_worker_stage_seconds_total over the run, summed over
workers; `io` holds the worker's waits as well).

    python3 bench/netns/stages.py FILE.json...
    tar xJf docs/results/io-steering-h200host-2026-11-28.tar.xz -C /tmp/s && python3 bench/netns/stages.py /tmp/s/lease*/*.json
"""
import collections
import json
import re
import sys


def main(paths):
    for path in paths:
        d = json.load(open(path))
        ptime = d["meta"].get("ptime_ms", 20)
        for r in d["results"]:
            c = r.get("relay_counters", {})
            stage, packets = collections.Counter(), 0.0
            frames = collections.Counter()
            for k, v in c.items():
                m = re.search(r'stage="(\w+)"', k)
                if m and k.startswith("srtpgate_worker_stage_seconds_total"):
                    stage[m.group(1)] += v
                elif k.startswith("srtpgate_worker_packets_received_total"):
                    packets += v
                elif k.startswith("srtpgate_xdp_frames_total"):
                    frames[k.split('"')[1]] += v
            cores = (r["relay_process_cores"] or 0) + (r["relay_softirq_cores"] or 0)
            equivalents = r["calls"] * 20 / ptime
            fast = frames["redirected"] / sum(frames.values()) if frames else float("nan")
            print("%s: %d calls (ptime %d ms), p99 %s us, loss %s, %.2f cores, %.0f call equivalents per core, "
                  "%.1f %% on the AF_XDP path" % (path, r["calls"], ptime, r["p99_us"], r["loss_ratio"], cores,
                                                  equivalents / cores if cores else 0, 100 * fast))
            if packets:
                print("    ns per packet: " + ", ".join("%s %d" % (s, stage[s] * 1e9 / packets) for s in
                      ("io", "receive", "unprotect", "crypto", "protect", "send", "release") if s in stage))


if __name__ == "__main__":
    main(sys.argv[1:])
