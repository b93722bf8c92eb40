#!/usr/bin/env python3
"""Hostile NG offers against a running-on-demand `srtpgate serve`: the
daemon's resident memory before and after, and how many requests got a reply.

    bench/ng-hostile.py BINARY [--offers 20000] [--kinds 0123]

Starts BINARY serve on loopback (its own NG port, media ports 46000-46099),
sends the offers one at a time (each waits up to 1 s for its reply), and
prints one JSON line. Kinds, taken in turn: 0 a new call with a 60 KB Call-ID
and a rejected m-line; 1 a new call of 16 rejected m-lines, 256-byte identifiers and a 32 KiB SDP; 2 a 57 KB
re-offer of one call; 3 a new call with media until the ports run out.
Traffic goes to 127.0.0.1 only; the daemon is killed at the end.
"""
import argparse, json, os, socket, subprocess, sys, time


def benc(v):
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, str):
        v = v.encode()
    if isinstance(v, bytes):
        return b"%d:%s" % (len(v), v)
    if isinstance(v, dict):
        return b"d" + b"".join(benc(k) + benc(v[k]) for k in sorted(v)) + b"e"
    raise TypeError(v)


def sdp(media, port, pad):
    s = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    for i in range(media):
        s += "m=audio %d RTP/AVP 0\r\n" % (0 if port == 0 else port + 2 * i)
    while len(s) + 40 < pad:
        s += "a=x-padding:0123456789012345678901234\r\n"
    return s


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--offers", type=int, default=20000)
    ap.add_argument("--kinds", default="0123")
    a = ap.parse_args()
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    ng = probe.getsockname()
    probe.close()
    daemon = subprocess.Popen(
        [a.binary, "serve", "--listen-ng", "%s:%d" % ng, "--port-min", "46000", "--port-max", "46099",
         "--workers", "1", "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(ng)
    s.settimeout(1.0)
    seq = [0]

    def ask(body):
        seq[0] += 1
        cookie = b"h%d" % seq[0]
        s.send(cookie + b" " + benc(body))
        try:
            while True:
                r = s.recv(70000)
                if r.startswith(cookie + b" "):
                    return r
        except (socket.timeout, ConnectionRefusedError):
            return None

    try:
        for _ in range(50):
            if ask({"command": "ping"}):
                break
            time.sleep(0.1)
        for i in range(50):
            ask({"command": "offer", "call-id": "warm-%d" % i, "from-tag": "a", "sdp": sdp(1, 0, 2000)})
        before = rss_kb(daemon.pid)
        long_id, no_media = "L" * 60000, sdp(16, 0, 32 * 1024 - 64)
        huge, media, rejected = sdp(1, 40000, 57000), sdp(1, 40000, 30000), sdp(1, 0, 0)
        replies = oks = 0
        t0 = time.time()
        kinds = [int(k) for k in a.kinds]
        for i in range(a.offers):
            k = kinds[i % len(kinds)]
            cid = "%08d" % i + "h" * 240
            body = [
                {"call-id": "%08d" % i + long_id, "from-tag": "a", "sdp": rejected},
                {"call-id": cid, "from-tag": "t" * 250, "sdp": no_media},
                {"call-id": "warm-0", "from-tag": "a", "sdp": huge},
                {"call-id": cid, "from-tag": "a", "sdp": media},
            ][k]
            body["command"] = "offer"
            r = ask(body)
            if r is not None:
                replies += 1
                oks += b"6:result2:ok" in r
        after = rss_kb(daemon.pid)
        print(json.dumps({"binary": a.binary, "offers": a.offers, "kinds": a.kinds, "replies": replies, "ok": oks,
                          "seconds": round(time.time() - t0, 1), "rss_before_kb": before, "rss_after_kb": after,
                          "rss_growth_kb": after - before}))
    finally:
        daemon.kill()
        daemon.wait()


if __name__ == "__main__":
    sys.exit(main())
