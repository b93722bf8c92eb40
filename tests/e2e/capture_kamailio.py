#!/usr/bin/env python3
"""Records what Kamailio's rtpengine module really sends over NG.

Runs Kamailio with examples/kamailio/kamailio.cfg against ng_stub.py, drives
calls with sipua.py, and writes every NG request Kamailio sent as
tests/ng/kamailio-<version>/NN-command.bin (raw datagram, cookie included) plus
a README.md that decodes each one. Rerun after changing the config or
upgrading Kamailio:

    .venv/bin/python tests/e2e/capture_kamailio.py

With --relay srtpgate the relay is the real daemon ($SRTPGATE_BIN, default
target/release/srtpgate) with ng_stub.py --forward between Kamailio and it, the
answered calls carry SRTP media through it both ways, and the daemon's replies
are kept too: tests/ng/kamailio-<version>-srtpgate/NN-command.bin and
NN-command.reply.bin, replayed by test_ng_replay.py.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from ng_stub import bdecode, split_cookie, text  # noqa: E402
from sipua import CallFailed, SipUA, connect, exchange  # noqa: E402

# Every flag of the module's documented list that means something to an
# SDES relay, to see how each is encoded (the daemon must accept them all).
MANY_FLAGS = ("replace-origin replace-session-connection ICE=remove RTP/SAVP via-branch=auto "
              "trust-address symmetric address-family=IP4 rtcp-mux-demux rtcp-mux-offer "
              "SDES-no-AES_CM_128_HMAC_SHA1_32 SDES-unencrypted_srtcp record-call=on "
              "media-address=127.0.0.1 TOS=184 delete-delay=0 strict-source label=caller "
              "direction=internal direction=internal")


MEDIA_PACKETS = 25  # per direction: 0.5 s of G.711 at 20 ms


def call(proxy, hangup_by="alice", reject=None, media=False):
    alice, bob = SipUA("alice", proxy), SipUA("bob", proxy)
    try:
        try:
            errors = connect(alice, bob, reject=reject)
        except CallFailed:
            if not reject:
                raise
            errors = []
        if errors:
            raise errors[0]
        if media and not reject:
            send_media(alice, bob)
        if not reject:
            (alice if hangup_by == "alice" else bob).bye()
        time.sleep(0.3)  # let the delete reach the stub
    finally:
        alice.close()
        bob.close()


def send_media(alice, bob):
    """SRTP both ways through the relay, each phone with the keys the relay gave
    it: the recorded calls then are calls that worked, not just signalling (and
    the deletes' replies count real packets)."""
    problems = exchange(alice, bob, MEDIA_PACKETS)
    if problems:
        raise RuntimeError("media through the relay failed:\n" + "\n".join(problems))


def requests_in(log_dir):
    return {f for f in os.listdir(log_dir) if not f.endswith(".reply.bin")}


def start_relay(relay, workdir):
    """Returns ([processes to stop, last first], NG address for Kamailio, log dir)."""
    if relay == "stub":
        proc, cfg = harness.start_relay("stub", workdir)
        return [proc], cfg["ng"], cfg["ng_log"]
    binary = harness.srtpgate_path()
    if not os.access(binary, os.X_OK):
        sys.exit("%s not found (set SRTPGATE_BIN)" % binary)
    daemon, dcfg = harness.start_relay("srtpgate", workdir, binary)
    try:
        proxy, pcfg = harness.start_ng_proxy(workdir, dcfg["ng"])
    except Exception:
        daemon.stop()
        raise
    return [proxy, daemon], pcfg["ng"], pcfg["ng_log"]


def run(workdir, scenarios, rtpe_flags=None, relay="stub"):
    """Runs the scenarios under one Kamailio (and a fresh relay); returns
    [(scenario, path)] of the NG requests Kamailio sent, in order."""
    procs, ng, log_dir = start_relay(relay, workdir)
    try:
        before = requests_in(log_dir)  # our own readiness ping
        kam, sip = harness.start_kamailio(workdir, ng, rtpe_flags=rtpe_flags)
        seen = before
        out = []
        try:
            for name, kwargs in scenarios:
                call(sip, media=relay != "stub", **kwargs)
                now = requests_in(log_dir)
                out += [(name, os.path.join(log_dir, f)) for f in sorted(now - seen)]
                seen = now
        finally:
            kam.stop()
    finally:
        for p in procs:
            p.stop()
    return out


def describe(datagram):
    cookie, body = split_cookie(datagram)
    msg = text(bdecode(body))
    sdp = msg.pop("sdp", None)
    lines = ["cookie: `%s`" % cookie.decode(), "", "```json", json.dumps(msg, indent=2), "```"]
    if sdp is not None:
        lines += ["", "`sdp` (%d bytes, CRLF line ends):" % len(sdp), "", "```", sdp.rstrip("\r\n"), "```"]
    return "\n".join(lines)


def wait_for_file(path, timeout=3.0):
    """The proxy logs a reply when it passes it on, possibly just after the
    scenario's last listing of the log directory."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError("no reply logged for " + os.path.basename(path))
        time.sleep(0.05)
    time.sleep(0.05)  # written in one go, but give the write time to finish


def stub_readme(version, full_version):
    return [
        "# NG requests sent by Kamailio %s's rtpengine module" % version,
        "",
        "Recorded by `tests/e2e/capture_kamailio.py` (%s) from" % full_version,
        "`examples/kamailio/kamailio.cfg`, which calls `rtpengine_manage(\"%s\")`,"
        % "replace-origin replace-session-connection ICE=remove RTP/SAVP",
        "with `tests/e2e/sipua.py` as both phones and `tests/e2e/ng_stub.py` as the relay.",
        "Each `NN-command.bin` is one UDP datagram exactly as received: `<cookie> <bencoded dict>`.",
        "The last call ran with the flags",
        "",
        "    " + MANY_FLAGS,
        "",
        "to show how the module encodes each one. Things to note for a relay:",
        "",
        "- keys arrive in the module's order, not sorted; empty lists are left out;",
        "- `supports: [\"load limit\"]` is in every offer/answer/delete;",
        "- flags without a special meaning become items of `flags`, `key=value` pairs",
        "  become dictionary keys as written (`record-call`, `label`, `TOS`, ...);",
        "- `delete` carries no SDP, no `replace` and, unlike offer/answer, no `to-tag`;",
        "- the delete for a BYE from the callee has the *callee's* tag as `from-tag` (05-07):",
        "  a relay must find the call by call-id and either tag;",
        "- a rejected call (486) gives two deletes, from the reply route and the failure",
        "  route (09, 10): the second one is for a call already gone and should get `ok`",
        "  (rtpengine adds a `warning`), not an error;",
        "- with `via-branch=auto` the delete carries the BYE's branch, not the INVITE's (13);",
        "- `delete-delay=0` arrives twice, as `delete delay` (integer 0) and `delete-delay`",
        "  (string \"0\"); `TOS` is an integer; `direction=` twice becomes a list;",
        "  `SDES-...` and `rtcp-mux-...` flags become the `SDES` and `rtcp-mux` lists;",
        "- the reply must start with the same cookie and a space; offer/answer replies",
        "  need `result: ok` and `sdp`, ping needs `result: pong`, errors are",
        "  `result: error` with `error-reason`.",
        "",
    ]


def srtpgate_readme(version, full_version, srtpgate_version):
    return [
        "# Kamailio %s's NG requests and srtpgate's replies" % version,
        "",
        "Recorded by `tests/e2e/capture_kamailio.py --relay srtpgate` (%s, %s):" % (
            full_version, srtpgate_version),
        "the same calls as `../kamailio-%s/` (see its README about the requests), from" % version,
        "`examples/kamailio/kamailio.cfg` with `tests/e2e/sipua.py` as both phones, but with",
        "`srtpgate serve` as the relay and `tests/e2e/ng_stub.py --forward` between Kamailio",
        "and it, logging both directions. Each answered call also carried %d SRTP packets" % MEDIA_PACKETS,
        "each way through the relay, each phone using the keys the relay gave it, all",
        "checked at the receiver. Each daemon (one per Kamailio run) was fresh.",
        "",
        "`NN-command.bin` is Kamailio's request, `NN-command.reply.bin` the daemon's reply,",
        "each one UDP datagram exactly as it went: `<cookie> <bencoded dict>`. The last call",
        "ran with the flags",
        "",
        "    " + MANY_FLAGS,
        "",
        "The `a=crypto` keys in the replies are the relay's for calls long gone: test data.",
        "`tests/e2e/test_ng_replay.py` replays the requests in order against a fresh daemon",
        "and checks its replies against these (media ports and keys are new each run; the",
        "cookies, results, crypto tags and suites and the shape of each reply are not).",
        "",
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--relay", choices=("stub", "srtpgate"), default="stub",
                    help="stub: ng_stub.py answers, requests only (tests/ng/kamailio-V/); "
                    "srtpgate: the real daemon, requests and replies (tests/ng/kamailio-V-srtpgate/)")
    a = ap.parse_args()
    version = re.search(rb"kamailio (\d+\.\d+)\.\d+", subprocess.run(
        [harness.kamailio_path(), "-v"], capture_output=True).stdout).group(1).decode()
    full_version = subprocess.run([harness.kamailio_path(), "-v"], capture_output=True
                                  ).stdout.decode().splitlines()[0].replace("version:", "").strip()
    with_replies = a.relay == "srtpgate"
    outdir = os.path.join(harness.REPO, "tests", "ng", "kamailio-" + version
                          + ("-srtpgate" if with_replies else ""))
    work = tempfile.mkdtemp(prefix="capture-kamailio-")
    try:
        os.makedirs(os.path.join(work, "a"))
        os.makedirs(os.path.join(work, "b"))
        got = run(os.path.join(work, "a"), [
            ("call, caller hangs up", {}),
            ("call, callee hangs up", {"hangup_by": "bob"}),
            ("call rejected by callee with 486", {"reject": (486, "Busy Here")}),
        ], relay=a.relay)
        got += [(s, p) for s, p in run(os.path.join(work, "b"), [
            ("call with many flags (RTPE_FLAGS below), caller hangs up", {}),
        ], rtpe_flags=MANY_FLAGS, relay=a.relay) if not p.endswith("-ping.bin")]  # one startup ping is enough

        if os.path.isdir(outdir):
            for f in os.listdir(outdir):
                if f.endswith(".bin"):
                    os.remove(os.path.join(outdir, f))
        os.makedirs(outdir, exist_ok=True)
        if with_replies:
            srtpgate_version = subprocess.run([harness.srtpgate_path(), "--version"], capture_output=True
                                              ).stdout.decode().strip()
            readme = srtpgate_readme(version, full_version, srtpgate_version)
        else:
            readme = stub_readme(version, full_version)
        for n, (scenario, path) in enumerate(got, 1):
            cmd = re.sub(r"^\d+-", "", os.path.basename(path))
            name = "%02d-%s" % (n, cmd)
            shutil.copyfile(path, os.path.join(outdir, name))
            if cmd == "ping.bin":
                scenario = "Kamailio start-up (the module pings each relay)"
            with open(path, "rb") as f:
                request = describe(f.read())
            if not with_replies:
                readme += ["## %s — %s" % (name, scenario), "", request, ""]
                continue
            reply_path = path[:-len(".bin")] + ".reply.bin"
            wait_for_file(reply_path)
            reply_name = name[:-len(".bin")] + ".reply.bin"
            shutil.copyfile(reply_path, os.path.join(outdir, reply_name))
            with open(reply_path, "rb") as f:
                reply = describe(f.read())
            readme += ["## %s — %s" % (name[:-len(".bin")], scenario), "",
                       "### request (`%s`)" % name, "", request, "",
                       "### reply (`%s`)" % reply_name, "", reply, ""]
        with open(os.path.join(outdir, "README.md"), "w") as f:
            f.write("\n".join(readme))
        print("wrote %d requests%s to %s" % (len(got), " and replies" if with_replies else "", outdir))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
