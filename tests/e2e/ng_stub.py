#!/usr/bin/env python3
"""A stand-in for an NG relay (rtpengine's control protocol), for tests.

It logs every request datagram and its reply, raw, to --log-dir (so that we
can see exactly what a client such as Kamailio's rtpengine module sends) and
answers just well enough for signalling to proceed: ping -> pong; offer/answer
-> ok with the SDP pointed at --interface and ports from --port-min/--port-max,
fresh SDES keys and ICE lines dropped; delete/query/list/statistics -> what
rtpengine would say. It relays no media. It takes the same flags as `srtpgate
serve`, so that a test can start either one with the same command line.

With --forward HOST:PORT it answers nothing itself: it is a logging proxy in
front of a real relay (srtpgate serve, rtpengine), passing each request on and
each reply back unchanged, so that a capture gets both sides of the exchange.
Replies are logged as NNNN-command.reply.bin next to their request.

Also a library: bencode by hand (no dependencies) and `ng_request()`, a client.
"""

import argparse
import base64
import itertools
import os
import re
import select
import socket
import sys
import time


def bencode(v):
    """Encodes dicts in insertion order: NG peers neither sort nor require it."""
    if isinstance(v, dict):
        return b"d" + b"".join(bencode(k) + bencode(x) for k, x in v.items()) + b"e"
    if isinstance(v, (list, tuple)):
        return b"l" + b"".join(bencode(x) for x in v) + b"e"
    if isinstance(v, bool):
        raise TypeError("bencode has no booleans")
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, str):
        v = v.encode()
    return b"%d:%s" % (len(v), v)


def bdecode(data):
    """Decodes one bencoded value that must fill `data`; strings stay bytes
    (SDP bodies are not guaranteed UTF-8). Raises ValueError on bad input."""
    def item(i):
        c = data[i:i + 1]
        if c == b"i":
            j = data.index(b"e", i)
            return int(data[i + 1:j]), j + 1
        if c in (b"l", b"d"):
            out, i = [], i + 1
            while data[i:i + 1] != b"e":
                if i >= len(data):
                    raise ValueError("unterminated list/dict")
                x, i = item(i)
                out.append(x)
            if c == b"l":
                return out, i + 1
            if len(out) % 2:
                raise ValueError("dict with a key but no value")
            return dict(zip(out[::2], out[1::2])), i + 1
        if c.isdigit():
            j = data.index(b":", i)
            n = int(data[i:j])
            if j + 1 + n > len(data):
                raise ValueError("string runs past the end")
            return data[j + 1:j + 1 + n], j + 1 + n
        raise ValueError("bad bencode at offset %d" % i)

    try:
        v, end = item(0)
    except IndexError as e:
        raise ValueError("truncated bencode") from e
    if end != len(data):
        raise ValueError("trailing bytes after bencode value")
    return v


def split_cookie(datagram):
    """NG datagrams are `<cookie> <bencoded dict>`."""
    cookie, sep, body = datagram.partition(b" ")
    if not sep:
        raise ValueError("no cookie")
    return cookie, body


def text(v):
    """Decoded dict/list with bytes turned into str, for printing and checks."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    if isinstance(v, list):
        return [text(x) for x in v]
    if isinstance(v, dict):
        return {text(k): text(x) for k, x in v.items()}
    return v


_cookies = itertools.count(1)


def ng_request(addr, msg, timeout=2.0):
    """Sends one NG request to addr=(host, port), returns the decoded reply (str values)."""
    cookie = b"%d_%d" % (os.getpid(), next(_cookies))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(cookie + b" " + bencode(msg), addr)
        while True:
            reply, _ = s.recvfrom(65535)
            got, body = split_cookie(reply)
            if got == cookie:
                return text(bdecode(body))


# --- the stub relay ---------------------------------------------------------

def rewrite_sdp(sdp, ip, ports):
    """Minimal relay-style rewrite: addresses -> ip, each m= port -> a new one,
    every a=crypto key -> a fresh random one, ICE attributes dropped."""
    out = []
    for line in sdp.decode().split("\r\n"):
        if re.match(r"a=(candidate|ice-|end-of-candidates)", line):
            continue
        line = re.sub(r"^(c=IN IP4 |o=(?:\S+ ){4}IP4 )\S+", lambda m: m.group(1) + ip, line)
        line = re.sub(r"^(m=\S+ )\d+", lambda m: m.group(1) + str(next(ports)), line)
        line = re.sub(r"inline:[A-Za-z0-9+/=]+",
                      lambda m: "inline:" + base64.b64encode(os.urandom(30)).decode(), line)
        out.append(line)
    return "\r\n".join(out).encode()


def parse_request(datagram):
    """(cookie, decoded dict or None, command name for the log file's name)."""
    cookie, sep, body = datagram.partition(b" ")
    try:
        if not sep:
            raise ValueError("no cookie")
        req = bdecode(body)
        cmd = req[b"command"].decode()
    except (ValueError, KeyError, TypeError, AttributeError):
        return (cookie if sep else None), None, "malformed"
    # The command ends up in a file name: keep it to a safe alphabet.
    return cookie, req, re.sub(r"[^A-Za-z0-9_-]", "_", cmd) or "malformed"


def log_datagram(log_dir, n, cmd, datagram, reply=False):
    if log_dir:
        name = "%04d-%s%s.bin" % (n, cmd, ".reply" if reply else "")
        with open(os.path.join(log_dir, name), "wb") as f:
            f.write(datagram)


def serve(sock, ip, ports, log_dir):
    calls = {}  # call-id -> {"created": unix time, "tags": [...]}
    for n in itertools.count(1):
        datagram, peer = sock.recvfrom(65535)
        cookie, req, cmd = parse_request(datagram)
        log_datagram(log_dir, n, cmd, datagram)
        if req is None:
            if cookie is not None:
                reply = cookie + b" " + bencode({"result": "error", "error-reason": "Failed to parse"})
                log_datagram(log_dir, n, cmd, reply, reply=True)
                sock.sendto(reply, peer)
            continue
        callid = req.get(b"call-id", b"").decode()
        reply = {"result": "ok"}
        if cmd == "ping":
            reply = {"result": "pong"}
        elif cmd in ("offer", "answer"):
            if cmd == "answer" and callid not in calls:
                reply = {"result": "error", "error-reason": "Unknown call-id"}
            else:
                calls.setdefault(callid, {"created": int(time.time())})
                reply["sdp"] = rewrite_sdp(req[b"sdp"], ip, ports)
        elif cmd == "delete":
            # rtpengine only fails an unknown call-id with the "fatal" flag.
            if calls.pop(callid, None) is None:
                reply["warning"] = "Call-ID not found or tags didn't match"
        elif cmd == "query":
            if callid not in calls:
                reply = {"result": "error", "error-reason": "Unknown call-id"}
            else:
                reply["created"] = calls[callid]["created"]
        elif cmd == "list":
            reply["calls"] = list(calls)
        elif cmd == "statistics":
            reply["statistics"] = {"currentstatistics": {"sessionsown": len(calls)}}
        else:
            reply = {"result": "error", "error-reason": "Unrecognized command"}
        reply = cookie + b" " + bencode(reply)
        log_datagram(log_dir, n, cmd, reply, reply=True)
        sock.sendto(reply, peer)


def forward(sock, upstream, log_dir):
    """Proxy mode: every datagram from a client goes to `upstream` as is, every
    reply goes back to the client that sent the request with that cookie."""
    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.connect(upstream)
    # cookie -> (client address, request number, command). A client that
    # retransmits (same cookie) gets the reply to whichever copy is answered
    # first; a second reply then has no entry and is dropped, as a client that
    # already has its answer would drop it.
    pending = {}
    n = itertools.count(1)
    while True:
        ready, _, _ = select.select([sock, up], [], [])
        if sock in ready:
            datagram, peer = sock.recvfrom(65535)
            k = next(n)
            cookie, _, cmd = parse_request(datagram)
            log_datagram(log_dir, k, cmd, datagram)
            if cookie is not None:
                pending[cookie] = (peer, k, cmd)
            try:
                up.send(datagram)
            except OSError as e:  # relay down: the client times out, as it would without us
                print("ng_stub: forwarding #%d: %s" % (k, e), file=sys.stderr, flush=True)
        if up in ready:
            try:
                reply = up.recv(65535)
            except OSError as e:  # ICMP port unreachable from an earlier send
                print("ng_stub: relay %s:%d: %s" % (upstream + (e,)), file=sys.stderr, flush=True)
                continue
            entry = pending.pop(reply.partition(b" ")[0], None)
            if entry is None:
                print("ng_stub: reply with unknown cookie dropped: %r" % reply[:60], file=sys.stderr, flush=True)
                continue
            peer, k, cmd = entry
            log_datagram(log_dir, k, cmd, reply, reply=True)
            sock.sendto(reply, peer)


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen-ng", type=hostport, required=True)
    ap.add_argument("--interface", default="127.0.0.1")
    ap.add_argument("--port-min", type=int, default=30000)
    ap.add_argument("--port-max", type=int, default=40000)
    ap.add_argument("--listen-http", help="accepted for compatibility, unused")
    ap.add_argument("--log-dir", help="write each request datagram here as NNNN-command.bin, "
                    "its reply as NNNN-command.reply.bin")
    ap.add_argument("--forward", type=hostport, metavar="HOST:PORT",
                    help="proxy every datagram to this NG relay instead of answering")
    a = ap.parse_args()
    if a.log_dir:
        os.makedirs(a.log_dir, exist_ok=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(a.listen_ng)
    # Even ports, as a relay would use for RTP (RTCP on the odd one above).
    ports = itertools.cycle(range(a.port_min + a.port_min % 2, a.port_max, 2))
    print("ng_stub listening on %s:%d" % a.listen_ng
          + (", forwarding to %s:%d" % a.forward if a.forward else ""), file=sys.stderr, flush=True)
    try:
        if a.forward:
            forward(sock, a.forward, a.log_dir)
        else:
            serve(sock, a.interface, ports, a.log_dir)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
