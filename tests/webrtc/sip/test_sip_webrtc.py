"""WebRTC bridging with real SIP clients: a browser (chromium, JsSIP over
ws://) and SIP phones (baresip over UDP, SDES-SRTP mandatory) through
Kamailio (kamailio-ws.cfg) and an NG relay that bridges ICE + DTLS-SRTP
(browser leg) and SDES-SRTP (phone leg).

    SRTPGATE_BIN=target/release/srtpgate .venv/bin/python -m pytest tests/webrtc/sip -q -rs

WEBRTC_RELAYS (comma-separated, default "srtpgate") picks the relays:
"rtpengine" (Debian's rtpengine-daemon, the reference) and "srtpgate"
(`srtpgate serve` from $SRTPGATE_BIN or target/release, with
$SRTPGATE_WEBRTC_ARGS appended). Kamailio talks to the relay through
tests/e2e/ng_stub.py --forward, which records every NG message, so that the
flags Kamailio sends per direction are checked and printed.

The browser's microphone is chromium's fake capture device playing a 1 kHz
WAV; every baresip phone plays a sine from its ausine module (440 Hz unless
said otherwise) and records what it decodes (sndfile). Audio is checked by
frequency on both sides: in the page (WebAudio, Goertzel) and in baresip's
recording.

  a. the browser calls baresip
  b. baresip calls the browser (auto-answer)
  c. hold and resume from the browser (JsSIP re-INVITE a=sendonly, then
     sendrecv): the tone stops in both directions while held, comes back
  d. blind transfer between baresip phones (A calls B, B REFERs A to C)
  e. the relay has no call left after each call (NG `list`), and Kamailio
     sent a delete for every call it offered
"""

import os
import re
import shutil
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sip_rig as rig  # noqa: E402
from sip_rig import wait_for  # noqa: E402

RELAYS = [r.strip() for r in os.environ.get("WEBRTC_RELAYS", "srtpgate").split(",") if r.strip()]
BROWSER_TONE = rig.BROWSER_TONE
PHONE_TONE = rig.PHONE_TONE


def skip(reason):
    print("SKIP: " + reason, file=sys.stderr)
    pytest.skip(reason)


def missing_prerequisite():
    why = rig.browser_missing()
    if why:
        return why
    if not shutil.which("baresip"):
        return "baresip is not installed (apt-get install baresip-core)"
    for mod in ("srtp", "ausine", "sndfile", "ctrl_tcp", "aubridge"):
        if not os.path.exists(os.path.join(rig.BARESIP_MODULES, mod + ".so")):
            return "baresip module %s.so is missing" % mod
    if not rig.baresip_codecs():
        return "baresip has neither the opus nor the g711 module"
    return None


@pytest.fixture(scope="module", params=RELAYS)
def stack(request, tmp_path_factory):
    why = missing_prerequisite() or rig.relay_available(request.param)
    if why:
        skip(why)
    r = rig.Rig(request.param, str(tmp_path_factory.mktemp("webrtc-sip-" + request.param)))
    try:
        r.start()
    except Exception:
        r.stop()
        raise
    yield r
    r.stop()


def ng_flags(req):
    """The NG request's flags, in one comparable form."""
    keep = ("ICE", "DTLS", "DTLS-reverse", "transport-protocol", "rtcp-mux", "SDES", "flags", "replace")
    return {k: req[k] for k in keep if k in req}


def check_recording(phone, hz, min_seconds=1.0, threshold=0.8):
    """The phone's last recording of decoded audio holds hz."""
    files = phone.recordings()
    assert files, "baresip %s recorded nothing in %s" % (phone.name, phone.snd)
    rate, x = rig.read_wav(files[-1])
    body = x[len(x) // 5:]
    share, rms = rig.tone_share(body, rate, hz)
    print("baresip %s heard %.1f %% %g Hz at RMS %.0f (%.1f s at %d Hz)"
          % (phone.name, share * 100, hz, rms, len(x) / rate, rate))
    assert len(x) >= min_seconds * rate, "baresip %s recorded only %.2f s" % (phone.name, len(x) / rate)
    assert share > threshold and rms > 300, "baresip %s: %.0f %% %g Hz at RMS %.0f" % (phone.name, share * 100, hz, rms)
    return x, rate


def check_browser_hears(stack, hz, threshold=0.8):
    stack.wait_page_media()
    m = stack.measure(hz, 1200)
    st = stack.stats()
    print("browser heard %.1f %% %g Hz at RMS %.3f; %s, DTLS %s, %s, pair %s"
          % (m["share"] * 100, hz, m["rms"], st.get("codec"), st.get("dtls"), st.get("srtpCipher"), st.get("pair")))
    assert st.get("dtls") == "connected", "browser DTLS state %s" % st
    assert m["share"] > threshold and m["rms"] > 0.02, "browser: %s; stats %s" % (m, st)
    return m


def hang_up_from_browser(stack, phone):
    since = time.monotonic()
    stack.page.evaluate("phone.hangup()")
    stack.wait_page_call(("ended", "failed"))
    phone.wait_event("CALL_CLOSED", 10, since)


def test_a_browser_calls_baresip(stack):
    bob = stack.phone("a-bob")
    stack.page.evaluate("(u) => phone.call(u)", stack.uri("a-bob"))
    stack.wait_page_call()
    calls = stack.ng_calls()
    assert len(calls) == 1, "relay calls during the call: %s" % calls
    check_browser_hears(stack, PHONE_TONE)
    time.sleep(1.0)
    hang_up_from_browser(stack, bob)
    stack.wait_no_calls()
    check_recording(bob, BROWSER_TONE)


def test_b_baresip_calls_browser(stack):
    bob = stack.phone("b-bob")
    calls_before = stack.state()["calls"]
    since = time.monotonic()
    r = bob.command("dial", stack.uri("web"))
    assert r.get("ok"), r
    st = stack.wait_page_call()
    assert st["direction"] == "incoming" and st["calls"] == calls_before + 1, st
    bob.wait_event("CALL_ESTABLISHED", 10, since)
    check_browser_hears(stack, PHONE_TONE)
    time.sleep(1.0)
    since = time.monotonic()
    assert bob.command("hangup").get("ok")
    bob.wait_event("CALL_CLOSED", 10, since)
    stack.wait_page_call(("ended",))
    stack.wait_no_calls()
    check_recording(bob, BROWSER_TONE)
    # The relay offered DTLS-SRTP with ICE to the browser (and rtcp-mux).
    offer = [x for x in stack.page.evaluate("phone.sdps()") if x["originator"] == "remote"][-1]["sdp"]
    assert "UDP/TLS/RTP/SAVPF" in offer and "a=fingerprint:" in offer and "a=candidate:" in offer, offer
    assert "a=crypto:" not in offer and "a=rtcp-mux" in offer, offer


def baresip_rtp(phone):
    """(packets baresip sent, packets it received) from its audio_debug."""
    data = phone.command("audio_debug").get("data") or ""
    tx = re.search(r"TX: packets=(\d+)", data)
    rx = re.search(r"rcvd=(\d+)", data)
    return int(tx.group(1)) if tx else 0, int(rx.group(1)) if rx else 0


def test_c_hold_and_resume_from_browser(stack):
    bob = stack.phone("c-bob")
    stack.page.evaluate("(u) => phone.call(u)", stack.uri("c-bob"))
    stack.wait_page_call()
    check_browser_hears(stack, PHONE_TONE)
    time.sleep(0.5)
    # Hold: JsSIP sends a re-INVITE with a=sendonly (and mutes its own track).
    stack.page.evaluate("phone.hold()")
    time.sleep(0.5)
    in0 = stack.stats()["inbound"]["packetsReceived"]
    tx0, rx0 = baresip_rtp(bob)
    held = stack.measure(PHONE_TONE, 1200)
    in1 = stack.stats()["inbound"]["packetsReceived"]
    tx1, rx1 = baresip_rtp(bob)
    sdps = stack.page.evaluate("phone.sdps()")
    local_offer = [x for x in sdps if x["originator"] == "local" and x["type"] == "offer"][-1]["sdp"]
    remote_answer = [x for x in sdps if x["originator"] == "remote" and x["type"] == "answer"][-1]["sdp"]
    print("held: browser heard %.1f %% 440 Hz at RMS %.4f, %d packets in 1.2 s; baresip sent %d, got %d"
          % (held["share"] * 100, held["rms"], in1 - in0, tx1 - tx0, rx1 - rx0))
    # Unhold: re-INVITE with a=sendrecv.
    stack.page.evaluate("phone.unhold()")
    time.sleep(0.5)
    back = stack.measure(PHONE_TONE, 1200)
    tx2, rx2 = baresip_rtp(bob)
    time.sleep(0.5)
    tx3, rx3 = baresip_rtp(bob)
    print("resumed: browser heard %.1f %% 440 Hz at RMS %.4f; baresip sent %d, got %d in 0.5 s"
          % (back["share"] * 100, back["rms"], tx3 - tx2, rx3 - rx2))
    hang_up_from_browser(stack, bob)
    stack.wait_no_calls()
    assert "a=sendonly" in local_offer, local_offer
    assert "a=recvonly" in remote_answer or "a=inactive" in remote_answer, remote_answer
    # While held, baresip (recvonly) sent nothing and the browser heard nothing.
    assert tx1 - tx0 <= 2 and in1 - in0 <= 2, "media towards the browser while held: baresip sent %d, browser got %d" % (
        tx1 - tx0, in1 - in0)
    assert held["rms"] < 0.01, "the browser still heard the phone while holding: %s" % held
    # After unhold, both directions flow again; the browser hears the tone.
    assert back["share"] > 0.8 and back["rms"] > 0.02, "no tone at the browser after unhold: %s" % back
    assert tx3 - tx2 >= 15 and rx3 - rx2 >= 15, "after unhold baresip sent %d and got %d packets in 0.5 s" % (
        tx3 - tx2, rx3 - rx2)
    # baresip heard the browser's tone before the hold. (Not after: baresip
    # 1.0 drops its receive-side audio filters, sndfile included, on any
    # re-INVITE whose direction is not sendrecv; see README.md.)
    check_recording(bob, BROWSER_TONE, min_seconds=0.8)


def test_d_blind_transfer_between_phones(stack):
    alice = stack.phone("d-alice", 440)
    bob = stack.phone("d-bob", 660)
    carol = stack.phone("d-carol", 880)
    since = time.monotonic()
    assert alice.command("dial", stack.uri("d-bob")).get("ok")
    alice.wait_event("CALL_ESTABLISHED", 10, since)
    bob.wait_event("CALL_ESTABLISHED", 10, since)
    first_calls = stack.ng_calls()
    assert len(first_calls) == 1, first_calls
    time.sleep(1.0)
    since = time.monotonic()
    r = bob.command("transfer", stack.uri("d-carol"))
    assert r.get("ok"), r
    carol.wait_event("CALL_ESTABLISHED", 10, since)
    bob.wait_event("CALL_CLOSED", 10, since)
    # Alice's call to bob ends too (bob hangs up after the NOTIFY 200).
    alice.wait_event("CALL_CLOSED", 10, since, pred=lambda e: "d-bob" in e.get("peeruri", ""))
    wait_for("only the transferred call left", lambda: (lambda c: c if len(c) == 1 and c != first_calls else None)(
        stack.ng_calls()), 8, 0.2)
    time.sleep(2.0)
    since = time.monotonic()
    assert alice.command("hangup").get("ok")
    carol.wait_event("CALL_CLOSED", 10, since)
    stack.wait_no_calls()
    check_recording(carol, 440)
    check_recording(alice, 880)
    # bob's REFER reached alice in-dialog through Kamailio (Record-Route);
    # alice's NOTIFYs (sipfrag) went back the same way.
    alog = alice.proc.output(10 ** 7)
    assert "REFER sip:" in alog and "Refer-To: %s" % stack.uri("d-carol") in alog, alog[-3000:]
    assert "SIP/2.0 200" in bob.proc.output(10 ** 7).split("NOTIFY sip:", 1)[-1], "bob got no NOTIFY"


def test_e_relay_left_with_no_calls(stack):
    assert stack.ng_calls() == [], "the relay still has calls"
    tx = stack.ng_transcript()
    offered = {req["call-id"] for cmd, req, _ in tx if cmd == "offer"}
    deleted = {req["call-id"] for cmd, req, _ in tx if cmd == "delete"}
    print("NG commands from Kamailio: %s" % " ".join(cmd for cmd, _, _ in tx))
    seen = set()
    for cmd, req, rep in tx:
        if cmd not in ("offer", "answer"):
            continue
        f = ng_flags(req)
        key = (cmd, repr(sorted(f.items())))
        if key not in seen:
            seen.add(key)
            print("  %s: %s -> %s" % (cmd, f, (rep or {}).get("result")))
    assert offered, "Kamailio sent no offer"
    assert offered <= deleted, "calls offered but never deleted: %s" % (offered - deleted)
    failed = [(cmd, rep) for cmd, _, rep in tx if cmd != "ping" and rep and rep.get("result") != "ok"]
    assert not failed, "relay errors: %s" % failed[:3]
    # The direction-specific flags were used: towards the browser ICE + DTLS,
    # towards the phones SDES.
    flags = [ng_flags(req) for cmd, req, _ in tx if cmd in ("offer", "answer")]
    assert any(f.get("transport-protocol") == "UDP/TLS/RTP/SAVPF" and f.get("ICE") == "force" for f in flags), flags
    assert any(f.get("transport-protocol") == "RTP/SAVP" and f.get("ICE") == "remove" for f in flags), flags
