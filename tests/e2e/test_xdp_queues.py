"""Every receive queue on the AF_XDP fast path. The namespace rig
(bench/netns/rig.sh) with a veth pair of 4 queues and the relay with 2 `xdp`
workers: the veth picks a packet's receive queue by the load generator's
transmit hash, not by anything the relay chose, so most legs' packets arrive
on a queue whose fill ring another worker feeds. Each worker has a socket on
every queue, and the XDP program redirects a frame into its leg owner's
socket on the queue it came in on.

SRTP G.711 calls from `srtpgate-bench loadgen`, re-keyed both ways (the far
end authenticates and decrypts every packet): no loss, at least 90 % of the
frames the program saw for a leg on the fast path (the rest are a leg's
first packets, before it latched), and none passed to the kernel for want of
a socket of its worker on the queue (`passed_queue`). Before every worker had
a socket on every queue, half the frames here took the kernel path.

    SRTPGATE_BIN=$PWD/target/release/srtpgate .venv/bin/python -m pytest tests/e2e/test_xdp_queues.py -q -rs
"""

import json
import os
import re
import subprocess
import time

import netns
from conftest import skip

RIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "netns", "rig.sh")
CALLS, SECONDS = 40, 3


def xdp_frames(ns):
    """The relay's srtpgate_xdp_frames_total by verdict, read inside `ns`."""
    url = "http://198.18.0.2:9101/metrics"
    got = subprocess.run(netns.exec_in(ns, ["python3", "-c",
                          "import urllib.request; print(urllib.request.urlopen(%r, timeout=5).read().decode())" % url]),
                         capture_output=True, text=True, timeout=30)
    assert got.returncode == 0, got.stderr
    out = {}
    for line in got.stdout.splitlines():
        m = re.match(r'srtpgate_xdp_frames_total\{verdict="(\w+)"\} (\S+)', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def test_each_legs_frames_reach_its_worker_on_every_queue(srtpgate_binary, tmp_path):
    check = subprocess.run(["bash", RIG, "check"], capture_output=True, text=True)
    if check.returncode != 0:
        skip("the namespace rig: " + (check.stdout.strip() or check.stderr.strip()))
    bench = os.path.join(os.path.dirname(srtpgate_binary), "srtpgate-bench")
    if not os.access(bench, os.X_OK):
        skip("%s not found (cargo build --release -p srtpgate-bench)" % bench)
    name = "xq%d" % (os.getpid() % 10000)
    up = subprocess.run(["bash", RIG, "up", name], capture_output=True, text=True, env=dict(os.environ, QUEUES="4"))
    assert up.returncode == 0, up.stderr
    log = open(tmp_path / "relay.log", "w+")
    relay = None
    try:
        relay = subprocess.Popen(
            netns.exec_in(name + "-relay", [
                srtpgate_binary, "serve", "--interface", "198.18.0.2", "--listen-ng", "198.18.0.2:2223",
                "--listen-http", "198.18.0.2:9101", "--port-min", "30000", "--port-max", "30999", "--workers", "2",
                "--io", "xdp"]), stdout=log, stderr=subprocess.STDOUT)
        text = ""
        for _ in range(100):
            time.sleep(0.1)
            text = open(tmp_path / "relay.log").read()
            if "srtpgate serve: NG on" in text or relay.poll() is not None:
                break
        if "not built" in text:
            skip("the xdp backend does not run here: " + text[-400:])
        assert "media workers use xdp I/O" in text and relay.poll() is None, text
        assert "4 receive queue(s), 2 worker(s), each with an AF_XDP socket on every queue" in text, text
        assert "has no AF_XDP socket" not in text, text
        out = tmp_path / "loadgen.json"
        lg = subprocess.run(netns.exec_in(name + "-lg", [
                                bench, "loadgen", "--ng", "198.18.0.2:2223", "--local", "198.18.0.1", "--calls",
                                str(CALLS), "--duration", str(SECONDS), "--setup-rate", "1000", "--quiet", "--json",
                                str(out)]),
                            capture_output=True, text=True, timeout=60)
        assert lg.returncode == 0, lg.stderr
        r = json.load(open(out))
        assert r["setup_errors"] == 0 and r["loss_ratio"] == 0.0, r
        # Both ways, 50 packets/s per leg.
        seen = xdp_frames(name + "-relay")
        total = sum(seen.values())
        assert total >= CALLS * 2 * 50 * (SECONDS - 1), (seen, r)
        assert seen.get("passed_queue", 0) == 0, seen
        assert seen.get("redirected", 0) >= 0.9 * total, seen
    finally:
        if relay is not None:
            relay.terminate()
            try:
                relay.wait(timeout=10)
            except subprocess.TimeoutExpired:
                relay.kill()
                relay.wait()
        subprocess.run(["bash", RIG, "down", name], capture_output=True)
        log.close()
