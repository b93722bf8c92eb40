#!/usr/bin/env python3
"""What connected management pages cost the relay: calls per core of relay
CPU with 0 and with K pages connected, alternating, same load.

    .venv/bin/python bench/ui/cost.py [--bin target/release/srtpgate] [--calls 500]
        [--pages 5] [--runs 3] [--duration 10] [--out result.json]

One `srtpgate serve` (WORKERS workers, default 1, CPU engine, the page on with a token); for
each run `srtpgate-bench loadgen` holds CALLS SRTP calls (20 ms packets) for
DURATION s and reports the relay's CPU (cores); calls per core = CALLS /
cores. With pages, K WebSocket clients (Python `websockets`, threads) each
watch a page of 50 rows sorted by packets and one call's detail, reading
every message, as a browser would. RELAY_CPU / LG_CPU pin the processes
(taskset lists; default 0 and 1). Loopback only; everything is stopped.
"""
import argparse
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "e2e"))
from ng_stub import ng_request  # noqa: E402

TOKEN = "bench-token"


def free(kind):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def page(url, stop, counts, i, call_id):
    from websockets.sync.client import connect
    with connect(url, additional_headers={"Authorization": "Bearer " + TOKEN}, open_timeout=5,
                 max_size=None) as ws:
        ws.send(json.dumps({"type": "edit", "ref": 1, "entry": "view", "sort": "packets", "desc": True, "limit": 50}))
        ws.send(json.dumps({"type": "edit", "ref": 2, "entry": "detail", "id": call_id}))
        while not stop.is_set():
            try:
                ws.recv(timeout=0.5)
                counts[i] += 1
            except TimeoutError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="target/release/srtpgate")
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--pages", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="loadgen sender/receiver pairs")
    ap.add_argument("--out")
    a = ap.parse_args()
    relay_cpu, lg_cpu = os.environ.get("RELAY_CPU", "0"), os.environ.get("LG_CPU", "1")
    ng, web = free(socket.SOCK_DGRAM), free(socket.SOCK_STREAM)
    tmp = tempfile.mkdtemp(prefix="srtpgate-uicost-")
    relay = subprocess.Popen(["taskset", "-c", relay_cpu, a.bin, "serve", "--listen-ng", f"127.0.0.1:{ng}",
                              "--listen-http", f"127.0.0.1:{web}", "--workers", str(a.workers), "--port-min", "20000",
                              "--port-max", "60000", "--log-level", "warn",
                              "--ui-token-sha256", hashlib.sha256(TOKEN.encode()).hexdigest()],
                             stdout=open(os.path.join(tmp, "relay.log"), "w"), stderr=subprocess.STDOUT)
    rows = []
    try:
        time.sleep(1)
        for run in range(a.runs):
            for k in (0, a.pages):
                stop, threads, counts = threading.Event(), [], [0] * k
                lg = subprocess.Popen(["taskset", "-c", lg_cpu, os.path.join(os.path.dirname(a.bin), "srtpgate-bench"), "loadgen", "--ng", f"127.0.0.1:{ng}",
                                       "--calls", str(a.calls), "--duration", str(a.duration), "--quiet",
                                       "--threads", str(a.threads),
                                       "--json", os.path.join(tmp, "lg.json")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                # The pages connect once the calls are up (the measurement starts then).
                while True:
                    r = ng_request(("127.0.0.1", ng), {"command": "list", "limit": 1})
                    if int(r.get("total", 0)) >= a.calls or lg.poll() is not None:
                        break
                    time.sleep(0.2)
                call_id = (r.get("calls") or ["none"])[0]
                for i in range(k):
                    t = threading.Thread(target=page, args=(f"ws://127.0.0.1:{web}/ui/ws", stop, counts, i, call_id))
                    t.start()
                    threads.append(t)
                lg.wait()
                stop.set()
                for t in threads:
                    t.join()
                res = json.load(open(os.path.join(tmp, "lg.json")))
                cores = res["relay_cpu_cores"]
                row = {"run": run, "pages": k, "calls": res["calls"], "relay_cpu_cores": cores,
                       "calls_per_core": res["calls"] / cores if cores else None, "lost": res["lost"],
                       "p99_us": res["delay_us"]["p99"], "messages_per_page_per_s":
                           (sum(counts) / k / a.duration) if k else 0}
                rows.append(row)
                print(json.dumps(row), flush=True)
                time.sleep(2)
    finally:
        relay.terminate()
        relay.wait(10)
    summary = {}
    for k in (0, a.pages):
        v = [r["calls_per_core"] for r in rows if r["pages"] == k and r["calls_per_core"]]
        summary[k] = {"calls_per_core_mean": statistics.mean(v), "min": min(v), "max": max(v)}
    base, withp = summary[0]["calls_per_core_mean"], summary[a.pages]["calls_per_core_mean"]
    summary["difference_pct"] = (withp - base) / base * 100
    print(json.dumps(summary))
    if a.out:
        json.dump({"rows": rows, "summary": summary, "calls": a.calls, "pages": a.pages,
                   "date": time.strftime("%Y-%m-%d"), "host": os.uname().nodename}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
