"""Replays what Kamailio 5.6 sent to srtpgate in a recorded call sequence
(tests/ng/kamailio-5.6-srtpgate/, made by `capture_kamailio.py --relay
srtpgate`) against a fresh `srtpgate serve`, and compares each reply with the
one the daemon gave then. Needs no Kamailio: it checks that the daemon still
answers Kamailio's real requests the way a recorded, working call saw.

What must match: the cookie, `result`, every string in the reply (warnings,
tags, suites, addresses: all follow from the request) and the shape of the
reply (same keys, same types, same list lengths). What may not: numbers (times,
ports, packet counts: no media is sent here) and, in an SDP, the media ports
(from this daemon's range) and keys (fresh per call).
"""

import os
import re
import socket

import pytest

import harness
from ng_stub import bdecode, split_cookie, text

RECORDED = os.path.join(harness.REPO, "tests", "ng", "kamailio-5.6-srtpgate")
RERECORD = "(if the change is intended: .venv/bin/python tests/e2e/capture_kamailio.py --relay srtpgate)"


def recorded_requests():
    if not os.path.isdir(RECORDED):
        return []
    return sorted(f for f in os.listdir(RECORDED) if f.endswith(".bin") and not f.endswith(".reply.bin"))


def read(name):
    with open(os.path.join(RECORDED, name), "rb") as f:
        return f.read()


def decode(datagram):
    cookie, body = split_cookie(datagram)
    return cookie, text(bdecode(body))


@pytest.fixture(scope="module")
def replayed(srtpgate_binary, tmp_path_factory):
    """Sends every recorded request, in order, to one fresh daemon; returns
    ({request file: reply datagram}, daemon's cfg). Done once for all the
    checks below, since later requests need the state earlier ones made (an
    answer needs its offer), even when only one check is selected."""
    names = recorded_requests()
    cookies = [split_cookie(read(n))[0] for n in names]
    # A relay may answer a repeated cookie from its cache (rtpengine does): a
    # replay would then be ambiguous.
    assert len(set(cookies)) == len(cookies), "recorded cookies repeat: %s" % cookies
    work = str(tmp_path_factory.mktemp("ng-replay"))
    daemon, cfg = harness.start_relay("srtpgate", work, srtpgate_binary)
    replies = {}
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(3)
            for name, cookie in zip(names, cookies):
                s.sendto(read(name), cfg["ng"])
                # Wait for this request's reply before the next one, as Kamailio
                # did; anything else is left over (none expected) and skipped.
                while True:
                    try:
                        reply = s.recv(65535)
                    except socket.timeout:
                        pytest.fail("no reply to %s in 3 s\n%s" % (name, daemon.describe()))
                    if reply.partition(b" ")[0] == cookie:
                        replies[name] = reply
                        break
    finally:
        daemon.stop()
    return replies, cfg


# --- SDP ---------------------------------------------------------------------

def sdp_lines(sdp):
    return sdp.rstrip("\r\n").split("\r\n")


def sdp_ports(sdp):
    """The media ports the relay put into the SDP: m= lines and a=rtcp."""
    return [int(p) for p in re.findall(r"(?m)^(?:m=\S+ |a=rtcp:)(\d+)", sdp)]


def crypto(sdp):
    """[(tag, suite, session params)] of the a=crypto lines, keys left out."""
    return [(m.group(1), m.group(2), m.group(3).strip())
            for m in re.finditer(r"(?m)^a=crypto:(\d+) (\S+) inline:\S+(.*?)\r?$", sdp)]


def masked(sdp):
    """The SDP with what differs from run to run (ports, keys) blanked."""
    sdp = re.sub(r"(?m)^(m=\S+ |a=rtcp:)\d+", r"\1PORT", sdp)
    return sdp_lines(re.sub(r"inline:[A-Za-z0-9+/=|:]+", "inline:KEY", sdp))


def sdp_problems(got, want, cfg):
    problems = []
    lo, hi = cfg["port_min"], cfg["port_max"]
    conn = [l for l in sdp_lines(got) if l.startswith("c=")]
    if not conn or any(l != "c=IN IP4 127.0.0.1" for l in conn):
        problems.append("connection lines %s, not the relay's 127.0.0.1" % conn)
    ports = sdp_ports(got)
    if not ports or not all(lo <= p <= hi for p in ports):
        problems.append("media ports %s not all in the daemon's range %d-%d" % (ports, lo, hi))
    protos = re.findall(r"(?m)^m=\S+ \d+ (\S+)", got)
    if not protos or any(p != "RTP/SAVP" for p in protos):
        problems.append("profiles %s, expected RTP/SAVP" % protos)
    if crypto(got) != crypto(want):
        problems.append("a=crypto (tag, suite, params) %s, recorded %s" % (crypto(got), crypto(want)))
    keys = re.findall(r"inline:(\S+)", got)
    if set(keys) & set(re.findall(r"inline:(\S+)", want)):
        problems.append("a key from the recording came back: keys must be fresh per call")
    ice = [l for l in sdp_lines(got) if re.match(r"a=(candidate|ice-|end-of-candidates)", l)]
    if ice:
        problems.append("ICE lines left in (ICE=remove): %s" % ice)
    if not problems and masked(got) != masked(want):
        problems.append("SDP differs from the recorded one beyond ports and keys:\n  got  %s\n  want %s"
                        % (masked(got), masked(want)))
    return problems


# --- the rest of a reply -----------------------------------------------------

# Keys whose presence depends on the media that flowed during the capture
# (the SSRCs the endpoints sent, their call quality): the replay sends none.
MEDIA_KEYS = {"SSRC"}


def compare(got, want, path="reply"):
    """Problems where `got` differs from `want`: strings exactly, numbers only
    in being numbers, dicts and lists recursively (same keys, same length);
    `MEDIA_KEYS` only in their type where both have them."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return ["%s: %r, recorded a dictionary" % (path, got)]
        problems = []
        for k in sorted(set(got) | set(want)):
            if k in MEDIA_KEYS:
                if k in got and k in want and type(got[k]) is not type(want[k]):
                    problems.append("%s[%r]: %r, recorded %r" % (path, k, got[k], want[k]))
                continue
            if k not in got:
                problems.append("%s: no %r (recorded %r)" % (path, k, want[k]))
            elif k not in want:
                problems.append("%s: %r = %r, not in the recording" % (path, k, got[k]))
            elif not (path == "reply" and k == "sdp"):  # checked by sdp_problems
                problems += compare(got[k], want[k], "%s[%r]" % (path, k))
        return problems
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return ["%s: %r, recorded %r" % (path, got, want)]
        return [p for i, (g, w) in enumerate(zip(got, want)) for p in compare(g, w, "%s[%d]" % (path, i))]
    if isinstance(want, int):
        return [] if isinstance(got, int) else ["%s: %r, recorded an integer" % (path, got)]
    return [] if got == want else ["%s: %r, recorded %r" % (path, got, want)]


@pytest.mark.parametrize("name", recorded_requests())
def test_reply_as_recorded(replayed, name):
    replies, cfg = replayed
    req_cookie, req = decode(read(name))
    want_cookie, want = decode(read(name[:-len(".bin")] + ".reply.bin"))
    got_cookie, got = decode(replies[name])
    assert got_cookie == want_cookie == req_cookie

    problems = []
    if got.get("result") != want.get("result"):
        why = got.get("error-reason") or got.get("warning")
        problems.append("result %r, recorded %r%s" % (
            got.get("result"), want.get("result"), " (%s)" % why if why else ""))
    else:
        if req["command"] in ("offer", "answer"):
            if "sdp" not in got:
                problems.append("no sdp")
            else:
                problems += sdp_problems(got["sdp"], want["sdp"], cfg)
        problems += compare(got, want)
    what = " ".join(x for x in (req["command"], req.get("call-id")) if x)
    assert not problems, "%s (%s): the reply differs from the recording %s:\n  %s" % (
        name, what, RERECORD, "\n  ".join(problems))
