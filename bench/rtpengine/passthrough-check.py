#!/usr/bin/env python3
"""Shows whether rtpengine decrypts and re-encrypts SRTP or passes it through.

    bench/rtpengine/passthrough-check.py [NG_PORT]   (default 2392)

Sets up two calls over NG exactly as `srtpgate loadgen` does (offer RTP/SAVP
with one AES_CM_128_HMAC_SHA1_80 a=crypto, transport-protocol RTP/SAVP, ICE
remove, replace origin/session-connection; answer with the callee's own key),
then sends, from the caller's socket to the relay, one valid SRTP packet and
one with a corrupted auth tag, and reports what reaches the callee's socket:

  same-suite   the callee answers the first a=crypto of the relay's offer, as
               loadgen does. rtpengine 10.5 copied the caller's own key into
               that line, so both legs share keys: SRTP<>SRTP passthrough.
  cross-suite  the callee answers the relay's AES_CM_128_HMAC_SHA1_32 line
               (a key rtpengine generated): suites differ, rtpengine must
               decrypt, authenticate and re-encrypt.

Uses `target/release/srtpgate packet` for SRTP; needs nothing else.
"""
import base64
import os
import re
import socket
import subprocess
import sys

NG = ("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 2392)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SRTPGATE_BIN", os.path.join(ROOT, "target/release/srtpgate"))


def enc(v):
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, str):
        v = v.encode()
    if isinstance(v, bytes):
        return b"%d:%s" % (len(v), v)
    if isinstance(v, list):
        return b"l" + b"".join(enc(x) for x in v) + b"e"
    return b"d" + b"".join(enc(k) + enc(v[k]) for k in sorted(v)) + b"e"


def dec(b, i=0):
    c = b[i:i + 1]
    if c == b"i":
        j = b.index(b"e", i)
        return int(b[i + 1:j]), j + 1
    if c in (b"l", b"d"):
        i += 1
        out = [] if c == b"l" else {}
        while b[i:i + 1] != b"e":
            x, i = dec(b, i)
            if c == b"l":
                out.append(x)
            else:
                out[x.decode()], i = dec(b, i)
        return out, i + 1
    j = b.index(b":", i)
    n = int(b[i:j])
    return b[j + 1:j + 1 + n], j + 1 + n


ng = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ng.settimeout(2)
seq = [0]


def call(d):
    seq[0] += 1
    cookie = b"ptc%d_%d" % (os.getpid(), seq[0])  # rtpengine caches replies by cookie
    ng.sendto(cookie + b" " + enc(d), NG)
    r = ng.recv(65535)
    assert r.startswith(cookie + b" ")
    return dec(r[len(cookie) + 1:])[0]


def sdp(i, port, tag, suite, key):
    return (f"v=0\r\no=- {i} 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
            f"m=audio {port} RTP/SAVP 0\r\na=rtpmap:0 PCMU/8000\r\na=ptime:20\r\na=sendrecv\r\n"
            f"a=crypto:{tag} {suite} inline:{key}\r\n")


def cryptos(text):
    return [(int(t), s, k) for t, s, k in re.findall(r"a=crypto:(\d+) (\S+) inline:([^\s|]+)", text)]


def port_of(text):
    return int(re.search(r"m=audio (\d+)", text).group(1))


def srtp(direction, suite, key, pkt):
    r = subprocess.run([BIN, "packet", direction, "--suite", suite, "--key", key],
                       input=pkt.hex() + "\n", capture_output=True, text=True, check=True)
    line = r.stdout.strip()
    return None if line.startswith("error") else bytes.fromhex(line)


def trial(mode):
    a, b = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
    for s in (a, b):
        s.bind(("127.0.0.1", 0))
        s.settimeout(0.5)
    ka = base64.b64encode(os.urandom(30)).decode()
    kb = base64.b64encode(os.urandom(30)).decode()
    cid = f"passthrough-check-{mode}-{os.getpid()}"
    common = {"call-id": cid, "from-tag": "a0", "ICE": "remove", "transport-protocol": "RTP/SAVP",
              "replace": ["origin", "session-connection"]}
    o = call(dict(common, command="offer",
                  sdp=sdp(0, a.getsockname()[1], 1, "AES_CM_128_HMAC_SHA1_80", ka)))
    offer = o["sdp"].decode()
    offered = cryptos(offer)
    if mode == "same-suite":
        tag, suite, relay_key_b = offered[0]
    else:
        tag, suite, relay_key_b = next(c for c in offered if c[1] == "AES_CM_128_HMAC_SHA1_32")
    r = call(dict(common, command="answer", **{"to-tag": "b0"},
                  sdp=sdp(1, b.getsockname()[1], tag, suite, kb)))
    answer = r["sdp"].decode()
    relay_a = ("127.0.0.1", port_of(answer))
    print(f"[{mode}] offer to callee: first a=crypto is tag {offered[0][0]} {offered[0][1]}; "
          f"caller's own key copied into it: {offered[0][2] == ka.rstrip('=')}")
    print(f"[{mode}] callee answers tag {tag} {suite}; answer to caller carries the callee's own key: "
          f"{kb.rstrip('=') in answer}")
    plain = bytes([0x80, 0, 0, 1, 0, 0, 0, 160, 0x12, 0x34, 0x56, 0x78]) + os.urandom(160)
    good = srtp("protect", "AES_CM_128_HMAC_SHA1_80", ka, plain)
    bad = good[:-1] + bytes([good[-1] ^ 0xFF])
    for label, pkt in (("valid SRTP", good), ("SRTP with a corrupted auth tag", bad)):
        a.sendto(pkt, relay_a)
        try:
            got, frm = b.recvfrom(2048)
        except socket.timeout:
            print(f"[{mode}]   {label}: dropped by the relay")
            continue
        same = got == pkt
        dec_ok = srtp("unprotect", suite, relay_key_b, got) == plain
        print(f"[{mode}]   {label}: forwarded from port {frm[1]}, "
              f"{'byte-identical (not decrypted, not authenticated)' if same else 'rewritten'}, "
              f"callee decrypts it with the relay's key: {dec_ok}")
    call({"command": "delete", "call-id": cid})


for m in ("same-suite", "cross-suite"):
    trial(m)
