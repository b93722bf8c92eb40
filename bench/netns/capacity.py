#!/usr/bin/env python3
"""Calls per relay core through the namespace rig, for srtpgate's I/O
backends and rtpengine, in one run.

    bench/netns/capacity.py [--configs sockets,uring,xdp,rtpengine]   [--counts 200,400,...] [--seconds 10]
        [--webrtc]: every caller a browser (ICE + DTLS-SRTP), the callee an SDES phone
        modifiers: xdp+busy (--busy-poll), xdp+gpu (--engine gpu, threshold measured at start),
        xdp+gpuall (--engine gpu --gpu-min-batch 0: every batch on the GPU), +batchN (--batch N)
                            [--out io-capacity.json] [--workers 1 --relay-cpus 0
                             --loadgen-cpus 1 --loadgen-threads 1]

The rig (bench/netns/rig.sh) puts the relay in one namespace (198.18.0.2,
pinned to core 0) and `srtpgate-bench loadgen` in another (198.18.0.1, pinned to
core 1). For each configuration and count: G.711 SRTP calls re-keyed both
ways, 50 packets/s each way; the end-to-end delay and loss from the load
generator; the relay's CPU over the measurement window counted with the
softirq time of its core (the kernel's receive path runs there); its system
calls per relayed packet (perf stat on raw_syscalls:sys_enter). A
configuration stops at its first count whose median run (of --repeat) is
over p99 5 ms or loss 0.01 %.
Traffic stays inside the namespaces; both are removed at the end.
"""
import argparse, json, os, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RIG = os.path.join(HERE, "rig.sh")
NAME = "sgcap"
HZ = os.sysconf("SC_CLK_TCK")


IP = os.environ.get("IP", "ip")


def ns(side):
    # A carried `ip` may bring its libraries on LD_LIBRARY_PATH: not for what runs inside.
    return [IP, "netns", "exec", "%s-%s" % (NAME, side), "env", "-u", "LD_LIBRARY_PATH"]


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def cpus(spec):
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def softirq_ticks(cores, field=7):
    """Ticks of /proc/stat's `field` (7 softirq, 8 steal) over `cores`."""
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            name = line.split(" ", 1)[0]
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
                total += int(line.split()[field])
    return total


def relay_syscalls():
    """srtpgate's own count of its workers' system calls (from /metrics)."""
    code = ("import urllib.request;t=urllib.request.urlopen('http://198.18.0.2:9101/metrics',timeout=2).read().decode();"
            "print(sum(float(l.rsplit(' ',1)[1]) for l in t.splitlines() "
            "if l.startswith('srtpgate_worker_syscalls_total')))")
    r = subprocess.run(ns("relay") + ["python3", "-c", code], capture_output=True, text=True)
    try:
        return float(r.stdout.strip())
    except ValueError:
        return None


COUNTED = ("srtpgate_engine_path_packets_total", "srtpgate_engine_path_batches_total", "srtpgate_packets_dropped_total", "srtpgate_xdp_socket_drops_total", "srtpgate_xdp_frames_total",
           "srtpgate_worker_send_failed_total", "srtpgate_worker_stage_seconds_total", "srtpgate_worker_syscalls_total",
           "srtpgate_worker_packets_received_total")


def relay_counters():
    """srtpgate's drop and path counters (from /metrics), by name and label."""
    code = ("import urllib.request,json;t=urllib.request.urlopen('http://198.18.0.2:9101/metrics',timeout=2).read().decode();"
            "print(json.dumps({l.rsplit(' ',1)[0]: float(l.rsplit(' ',1)[1]) for l in t.splitlines() "
            "if l.startswith(%r)}))" % (COUNTED,))
    r = subprocess.run(ns("relay") + ["python3", "-c", code], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


def modifiers(cfg):
    """serve flags of a configuration's +modifiers."""
    flags = []
    for m in cfg.split("+")[1:]:
        if m == "busy":
            flags.append("--busy-poll")
        elif m == "gpu":
            flags += ["--engine", "gpu"]
        elif m == "gpuall":
            flags += ["--engine", "gpu", "--gpu-min-batch", "0"]
        elif m.startswith("batch") and m[5:].isdigit():
            flags += ["--batch", m[5:]]
        else:
            raise SystemExit("unknown configuration modifier %r in %r" % (m, cfg))
    return flags


def start_relay(cfg, binary, a):
    if cfg == "rtpengine":
        env = dict(os.environ, ADDR="198.18.0.2", NG_PORT="2223", PORT_MIN="30000", PORT_MAX="59999",
                   CPU=a.relay_cpus, THREADS=str(a.workers), FOREGROUND="1", LOG_LEVEL="3")
        p = subprocess.Popen(ns("relay") + [os.path.join(ROOT, "bench/rtpengine/start.sh")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        p = subprocess.Popen(ns("relay") + ["taskset", "-c", a.relay_cpus, binary, "serve", "--interface",
                                            "198.18.0.2", "--listen-ng", "198.18.0.2:2223", "--listen-http",
                                            "198.18.0.2:9101", "--port-min", "30000", "--port-max", "59999",
                                            "--workers", str(a.workers), "--io", cfg.split("+")[0],
                                            "--log-level", "warn"] + modifiers(cfg),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The GPU engine compiles its kernels and measures its threshold first.
    time.sleep(8 if "+gpu" in cfg else 1.5)
    return p


def relay_pid(p):
    # ip netns exec and taskset exec the relay; rtpengine's start.sh execs too.
    for _ in range(50):
        try:
            comm = open("/proc/%d/comm" % p.pid).read().strip()
            if comm in ("srtpgate", "rtpengine"):
                return p.pid
        except OSError:
            pass
        time.sleep(0.1)
    return p.pid


def measure(pid, start_in, window, out, cores, own_count, all_cores):
    time.sleep(start_in)
    c0, s0, t0 = cpu_ticks(pid), softirq_ticks(cores), time.time()
    st0 = softirq_ticks(all_cores, 8)
    y0 = relay_syscalls() if own_count else None
    syscalls = None
    try:
        perf = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p", str(pid), "--",
                               "sleep", str(window)], capture_output=True, text=True)
        for line in perf.stderr.splitlines():
            parts = line.split(",")
            if len(parts) > 2 and "raw_syscalls:sys_enter" in line and parts[0].strip().isdigit():
                syscalls = int(parts[0])
    except OSError:
        time.sleep(window)  # no perf here: srtpgate counts its own
    y1 = relay_syscalls() if own_count else None
    c1, s1, t1 = cpu_ticks(pid), softirq_ticks(cores), time.time()
    st1 = softirq_ticks(all_cores, 8)
    if syscalls is None and y0 is not None and y1 is not None:
        syscalls = y1 - y0
    out.update(wall=t1 - t0, process_cores=(c1 - c0) / HZ / (t1 - t0), softirq_cores=(s1 - s0) / HZ / (t1 - t0),
               syscalls=syscalls, steal_cores=(st1 - st0) / HZ / (t1 - t0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="sockets,uring,xdp,rtpengine")
    ap.add_argument("--counts", default="200,400,600,800,1000,1200,1400,1600,2000,2400,3000")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--out", default="io-capacity.json")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/srtpgate"))
    ap.add_argument("--workers", type=int, default=1, help="relay workers (rtpengine: threads)")
    ap.add_argument("--relay-cpus", default="0")
    ap.add_argument("--loadgen-cpus", default="1")
    ap.add_argument("--loadgen-threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="runs per count; a count holds when the median run does")
    ap.add_argument("--webrtc", action="store_true", help="callers are browsers (loadgen --webrtc)")
    ap.add_argument("--ptime", type=int, default=20,
                    help="ms between a leg's packets (below 20: each call is 20/PTIME G.711 call equivalents)")
    a = ap.parse_args()
    subprocess.run([RIG, "up", NAME], check=True, stdout=subprocess.DEVNULL)
    results = []
    try:
        for cfg in a.configs.split(","):
            relay = start_relay(cfg, a.binary, a)
            pid = relay_pid(relay)
            try:
                for n in [int(c) for c in a.counts.split(",")]:
                    runs = []
                    for rep in range(a.repeat):
                        js = "/tmp/io-capacity-%s-%d-%d.json" % (cfg, n, rep)
                        ramp = n / 1000.0
                        m = {}
                        t = threading.Thread(target=measure, args=(pid, ramp + 1.0, max(a.seconds - 2, 1), m,
                                                                   cpus(a.relay_cpus), cfg != "rtpengine",
                                                                   cpus(a.relay_cpus) + cpus(a.loadgen_cpus)))
                        before = relay_counters() if cfg != "rtpengine" else {}
                        t.start()
                        subprocess.run(ns("lg") + ["taskset", "-c", a.loadgen_cpus, os.path.join(os.path.dirname(a.binary), "srtpgate-bench"), "loadgen", "--ng",
                                                   "198.18.0.2:2223", "--local", "198.18.0.1", "--calls", str(n),
                                                   "--duration", str(a.seconds), "--setup-rate", "1000",
                                                   "--threads", str(a.loadgen_threads), "--ptime", str(a.ptime),
                                                   "--quiet", "--json", js]
                                       + (["--webrtc"] if a.webrtc else []),
                                       check=False, stdout=subprocess.DEVNULL)
                        t.join()
                        try:
                            r = json.load(open(js))
                        except (OSError, ValueError):
                            r = {}
                        pps_in = r.get("packets_per_second", 0.0)
                        row = {
                            "config": cfg, "calls": n, "packets_per_second": pps_in,
                            "loss_ratio": r.get("loss_ratio"), "setup_errors": r.get("setup_errors"),
                            "p1_us": (r.get("delay_us") or {}).get("p1"), "p50_us": (r.get("delay_us") or {}).get("p50"),
                            "p90_us": (r.get("delay_us") or {}).get("p90"), "p99_us": (r.get("delay_us") or {}).get("p99"),
                            "relay_process_cores": m.get("process_cores"), "relay_softirq_cores": m.get("softirq_cores"),
                            "steal_cores": m.get("steal_cores"),
                            "syscalls_per_packet": (m["syscalls"] / m["wall"] / pps_in) if m.get("syscalls") and pps_in else None,
                        }
                        row["run"] = rep
                        if cfg != "rtpengine":
                            after = relay_counters()
                            row["relay_counters"] = {k: v - before.get(k, 0) for k, v in after.items()
                                                     if v - before.get(k, 0) > 0}
                        results.append(row)
                        runs.append(row)
                        print(json.dumps(row), flush=True)
                    # A count holds when the median run is within bounds.
                    med = lambda k, bad: sorted((r[k] if r[k] is not None else bad) for r in runs)[len(runs) // 2]
                    if med("p99_us", 1e9) > 5000 or med("loss_ratio", 1.0) > 0.0001 or \
                            any((r["setup_errors"] or 0) > 0 for r in runs):
                        break
            finally:
                relay.kill()
                relay.wait()
                time.sleep(0.5)
    finally:
        subprocess.run([RIG, "down", NAME], check=False)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d"), "webrtc": a.webrtc, "ptime_ms": a.ptime, "queues": int(os.environ.get("QUEUES", "1")), "cores": os.cpu_count(), "seconds": a.seconds,
            "workers": a.workers, "repeat": a.repeat, "relay_cpus": a.relay_cpus, "loadgen_cpus": a.loadgen_cpus,
            "machine": subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"], capture_output=True,
                                      text=True).stdout.strip()}
    json.dump({"meta": meta, "results": results}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
