#!/usr/bin/env python3
"""Records what Kamailio's rtpengine module really sends over NG.

Runs Kamailio with examples/kamailio/kamailio.cfg against ng_stub.py, drives
calls with sipua.py, and writes every NG request Kamailio sent as
tests/ng/kamailio-<version>/NN-command.bin (raw datagram, cookie included) plus
a README.md that decodes each one. Rerun after changing the config or
upgrading Kamailio:

    .venv/bin/python tests/e2e/capture_kamailio.py
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from ng_stub import bdecode, split_cookie, text  # noqa: E402
from sipua import CallFailed, SipUA  # noqa: E402

# Every flag of the module's documented list that means something to an
# SDES relay, to see how each is encoded (the daemon must accept them all).
MANY_FLAGS = ("replace-origin replace-session-connection ICE=remove RTP/SAVP via-branch=auto "
              "trust-address symmetric address-family=IP4 rtcp-mux-demux rtcp-mux-offer "
              "SDES-no-AES_CM_128_HMAC_SHA1_32 SDES-unencrypted_srtcp record-call=on "
              "media-address=127.0.0.1 TOS=184 delete-delay=0 strict-source label=caller "
              "direction=internal direction=internal")


def call(proxy, hangup_by="alice", reject=None):
    alice, bob = SipUA("alice", proxy), SipUA("bob", proxy)
    try:
        alice.register()
        bob.register()
        errors = []

        def answer():
            try:
                bob.answer(reject=reject)
            except Exception as e:  # reported below, in the main thread
                errors.append(e)
        t = threading.Thread(target=answer)
        t.start()
        try:
            alice.call("bob")
        except CallFailed:
            if not reject:
                raise
        t.join()
        if errors:
            raise errors[0]
        if not reject:
            (alice if hangup_by == "alice" else bob).bye()
        time.sleep(0.3)  # let the delete reach the stub
    finally:
        alice.close()
        bob.close()


def run(workdir, scenarios, rtpe_flags=None):
    """Runs the scenarios under one Kamailio; returns [(scenario, path)] of the
    NG requests Kamailio sent, in order."""
    relay, cfg = harness.start_relay("stub", workdir)
    try:
        before = set(os.listdir(cfg["ng_log"]))  # our own readiness ping
        kam, sip = harness.start_kamailio(workdir, cfg["ng"], rtpe_flags=rtpe_flags)
        seen = before
        out = []
        try:
            for name, kwargs in scenarios:
                call(sip, **kwargs)
                now = set(os.listdir(cfg["ng_log"]))
                out += [(name, os.path.join(cfg["ng_log"], f)) for f in sorted(now - seen)]
                seen = now
        finally:
            kam.stop()
    finally:
        relay.stop()
    return out


def describe(datagram):
    cookie, body = split_cookie(datagram)
    msg = text(bdecode(body))
    sdp = msg.pop("sdp", None)
    lines = ["cookie: `%s`" % cookie.decode(), "", "```json", json.dumps(msg, indent=2), "```"]
    if sdp is not None:
        lines += ["", "`sdp` (%d bytes, CRLF line ends):" % len(sdp), "", "```", sdp.rstrip("\r\n"), "```"]
    return "\n".join(lines)


def main():
    version = re.search(rb"kamailio (\d+\.\d+)\.\d+", subprocess.run(
        [harness.kamailio_path(), "-v"], capture_output=True).stdout).group(1).decode()
    full_version = subprocess.run([harness.kamailio_path(), "-v"], capture_output=True
                                  ).stdout.decode().splitlines()[0].replace("version:", "").strip()
    outdir = os.path.join(harness.REPO, "tests", "ng", "kamailio-" + version)
    work = tempfile.mkdtemp(prefix="capture-kamailio-")
    try:
        os.makedirs(os.path.join(work, "a"))
        os.makedirs(os.path.join(work, "b"))
        got = run(os.path.join(work, "a"), [
            ("call, caller hangs up", {}),
            ("call, callee hangs up", {"hangup_by": "bob"}),
            ("call rejected by callee with 486", {"reject": (486, "Busy Here")}),
        ])
        got += [(s, p) for s, p in run(os.path.join(work, "b"), [
            ("call with many flags (RTPE_FLAGS below), caller hangs up", {}),
        ], rtpe_flags=MANY_FLAGS) if not p.endswith("-ping.bin")]  # one startup ping is enough

        if os.path.isdir(outdir):
            for f in os.listdir(outdir):
                if f.endswith(".bin"):
                    os.remove(os.path.join(outdir, f))
        os.makedirs(outdir, exist_ok=True)
        readme = [
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
        for n, (scenario, path) in enumerate(got, 1):
            cmd = re.sub(r"^\d+-", "", os.path.basename(path))
            name = "%02d-%s" % (n, cmd)
            shutil.copyfile(path, os.path.join(outdir, name))
            if cmd == "ping.bin":
                scenario = "Kamailio start-up (the module pings each relay)"
            with open(path, "rb") as f:
                readme += ["## %s — %s" % (name, scenario), "", describe(f.read()), ""]
        with open(os.path.join(outdir, "README.md"), "w") as f:
            f.write("\n".join(readme))
        print("wrote %d requests to %s" % (len(got), outdir))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
