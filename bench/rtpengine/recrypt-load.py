#!/usr/bin/env python3
"""rtpengine's CPU for SRTP passthrough versus decrypt + re-encrypt, same load.

    bench/rtpengine/recrypt-load.py [CALLS] [SECONDS] [NG_PORT]   (200 5 2392)

`srtpgate loadgen` cannot yet make rtpengine 10.5 re-encrypt (see README.md):
its callee answers the a=crypto line in which rtpengine copied the caller's own
key, so rtpengine relays the SRTP bytes untouched. This stand-in sets the same
calls up twice (G.711 timing: 50 packets/s per leg, 160-byte payload, both
directions) and measures rtpengine's CPU seconds per second of load:

  same-suite   callee answers tag 1 (AES_CM_128_HMAC_SHA1_80, the caller's key): passthrough
  cross-suite  callee answers rtpengine's AES_CM_128_HMAC_SHA1_32 line: rtpengine
               decrypts + authenticates AES_CM_128_HMAC_SHA1_80 and encrypts
               AES_CM_128_HMAC_SHA1_32 (and back), the per-packet work srtpgate does

Packets are SRTP-protected in advance with `srtpgate packet`; the sender is a
Python loop pinned wherever the caller pins it, so delays are not measured here
(use loadgen for those); loss is counted. rtpengine's PID comes from
/tmp/srtpgate-rtpengine-$NG_PORT.env (written by start.sh).
"""
import base64
import multiprocessing as mp
import os
import re
import select
import socket
import subprocess
import sys
import time

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
PORT = int(sys.argv[3]) if len(sys.argv) > 3 else 2392
NG = ("127.0.0.1", PORT)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SRTPGATE_BIN", os.path.join(ROOT, "target/release/srtpgate"))
PTIME = 0.02
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def load_ng():
    # The bencode client of passthrough-check.py, without running its trials.
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "passthrough-check.py")).read()
    src = src.split("\ndef trial(")[0].replace('int(sys.argv[1]) if len(sys.argv) > 1 else 2392', str(PORT))
    g = {"__file__": os.path.abspath(__file__)}
    exec(compile(src, "passthrough-check.py", "exec"), g)
    return g


ng = load_ng()


def rtpengine_pid():
    for line in open(f"/tmp/srtpgate-rtpengine-{PORT}.env"):
        if line.startswith("PID="):
            return int(line[4:])
    raise SystemExit("no PID in the state file")


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def protect_many(suite, key, ssrc, n):
    lines = []
    for i in range(n):
        hdr = bytes([0x80, 0]) + i.to_bytes(2, "big") + (i * 160).to_bytes(4, "big") + ssrc.to_bytes(4, "big")
        lines.append((hdr + os.urandom(160)).hex())
    r = subprocess.run([BIN, "packet", "protect", "--suite", suite, "--key", key],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return [bytes.fromhex(x) for x in r.stdout.split()]


def receiver(socks, stop, out):
    counts = [0, 0]
    fds = {s.fileno(): i for i, s in enumerate(socks)}
    for s in socks:
        s.setblocking(False)
    while not stop.is_set():
        r, _, _ = select.select(socks, [], [], 0.05)
        for s in r:
            while True:
                try:
                    s.recv(2048)
                except BlockingIOError:
                    break
                counts[fds[s.fileno()]] += 1
    out.put(counts)


def run(mode):
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    ports = [s.getsockname()[1] for s in socks]
    n = int(SECS / PTIME) + 10
    legs = []  # (socket index, relay address, packets)
    cids = []
    for i in range(CALLS):
        cid = f"recrypt-load-{mode}-{os.getpid()}-{i}"
        cids.append(cid)
        ka = base64.b64encode(os.urandom(30)).decode()
        kb = base64.b64encode(os.urandom(30)).decode()
        common = {"call-id": cid, "from-tag": f"a{i}", "ICE": "remove", "transport-protocol": "RTP/SAVP",
                  "replace": ["origin", "session-connection"]}
        o = ng["call"](dict(common, command="offer",
                            sdp=ng["sdp"](2 * i, ports[0], 1, "AES_CM_128_HMAC_SHA1_80", ka)))
        offered = ng["cryptos"](o["sdp"].decode())
        if mode == "same-suite":
            tag, suite, _ = offered[0]
        else:
            tag, suite, _ = next(c for c in offered if c[1] == "AES_CM_128_HMAC_SHA1_32")
        relay_b = ("127.0.0.1", ng["port_of"](o["sdp"].decode()))
        a = ng["call"](dict(common, command="answer", **{"to-tag": f"b{i}"},
                            sdp=ng["sdp"](2 * i + 1, ports[1], tag, suite, kb)))
        relay_a = ("127.0.0.1", ng["port_of"](a["sdp"].decode()))
        legs.append((0, relay_a, protect_many("AES_CM_128_HMAC_SHA1_80", ka, 0x50000000 + 2 * i, n)))
        legs.append((1, relay_b, protect_many(suite, kb, 0x50000001 + 2 * i, n)))
    stop, out = mp.Event(), mp.Queue()
    rx = mp.Process(target=receiver, args=(socks, stop, out))
    rx.start()
    pid = rtpengine_pid()
    step = PTIME / len(legs)
    # 5 rounds of warm-up, then the measured rounds.
    warm = 5
    t0 = time.perf_counter()
    c0 = None
    sent = 0
    for rnd in range(n - 2):
        if rnd == warm:
            c0, w0 = cpu_s(pid), time.perf_counter()
        for k, (side, to, pkts) in enumerate(legs):
            due = t0 + rnd * PTIME + k * step
            d = due - time.perf_counter()
            if d > 0.0005:
                time.sleep(d)
            socks[side].sendto(pkts[rnd], to)
            sent += 1
    c1, w1 = cpu_s(pid), time.perf_counter()
    time.sleep(0.3)
    stop.set()
    counts = out.get()
    rx.join()
    for cid in cids:
        ng["call"]({"command": "delete", "call-id": cid})
    got = sum(counts)
    print(f"{mode:12s} calls {CALLS}  {sent / (w1 - t0):7.0f} packets/s sent  received {got}/{sent} "
          f"(loss {100 * (1 - got / sent):.3f} %)  rtpengine CPU {100 * (c1 - c0) / (w1 - w0):.1f} % of a core",
          flush=True)


if __name__ == "__main__":
    for m in ("same-suite", "cross-suite"):
        run(m)
