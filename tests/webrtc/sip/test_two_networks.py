"""A WebRTC call between two networks through Kamailio, as an operator runs
a relay in a cloud: a SIP phone on the private network calls a browser on
the public one, which knows the relay only by its 1:1 NAT address
(bench/netns/two-networks.sh). kamailio-ws.cfg, written for rtpengine, adds
`direction=priv direction=pub` to the first offer and nothing else changes.

    NAME-priv    alice (tests/e2e/sipua.py, SDES-SRTP), Kamailio (UDP + ws://)
    NAME-relay   srtpgate serve: priv/198.18.1.1, pub/198.18.2.1!203.0.113.1
    NAME-pub     chromium running JsSIP (ICE, DTLS-SRTP), registered over ws://

For each I/O backend that runs here, the test checks that the browser is
offered the NAT address (connection line and ICE candidate) and the phone
the relay's private address, that the relay put each leg on its interface,
that ICE settles on the NAT address and DTLS connects, and that each side
hears the other's tone.

    PYTHONPATH=tests SRTPGATE_BIN=target/release/srtpgate .venv/bin/python -m pytest tests/webrtc/sip/test_two_networks.py -q -rs
"""

import os
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sip_rig as rig  # noqa: E402
import netns  # noqa: E402
from ng_stub import ng_request  # noqa: E402
from sipua import SipUA  # noqa: E402

RELAY_PRIV, RELAY_PUB, NAT = "198.18.1.1", "198.18.2.1", "203.0.113.1"
CALLER_NET, CALLEE_NET = "198.18.1.2", "198.18.2.2"
PHONE_TONE = rig.PHONE_TONE
TONE_PACKETS = 150  # 3 s of PCMU from the phone


def skip(reason):
    print("SKIP: " + reason, file=sys.stderr)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def networks():
    why = rig.browser_missing() or rig.relay_available("srtpgate")
    if why:
        skip(why)
    yield from netns.two_networks_fixture("sw%d" % (os.getpid() % 10000), skip)


def leg(q, tag):
    media = q["tags"][tag]["medias"][0]
    return media["interface"], media["streams"][0]["local address"]


@pytest.mark.parametrize("io", ["sockets", "uring", "xdp"])
def test_a_phone_calls_a_browser_behind_the_nat(networks, tmp_path, io):
    ns = networks
    at = rig.Placement(relay_ns=ns["relay"], relay_ip=RELAY_PRIV,
                       interfaces=("priv/" + RELAY_PRIV, "pub/%s!%s" % (RELAY_PUB, NAT)), relay_args=("--io", io),
                       proxy_ns=ns["priv"], proxy_ip=CALLER_NET, browser_ns=ns["pub"], browser_ip=CALLEE_NET,
                       defines={"RTPE_DIRECTION": "direction=priv direction=pub"})
    stack = rig.Rig("srtpgate", str(tmp_path), at)
    alice = None
    try:
        stack.start()
        if "media workers use %s I/O" % io not in stack.relay.output(20000):
            skip("the %s backend does not run here: %s" % (io, stack.relay.output(2000)))
        alice = SipUA("alice", stack.sip, ip=CALLER_NET, netns=ns["priv"])
        alice.register()
        d = alice.call("web")
        stack.wait_page_call()

        # What each side was told: the phone SDES on the private address, the
        # browser DTLS-SRTP with ICE on the NAT address.
        assert d.remote_sdp.addr == RELAY_PRIV and d.remote_sdp.crypto, "alice got:\n%s" % d.remote_sdp.raw
        offer = [x for x in stack.page.evaluate("phone.sdps()") if x["originator"] == "remote"][-1]["sdp"]
        assert "c=IN IP4 %s" % NAT in offer and RELAY_PUB not in offer and RELAY_PRIV not in offer, offer
        candidates = [line for line in offer.splitlines() if line.startswith("a=candidate:")]
        assert candidates and all(" %s " % NAT in c for c in candidates), offer
        assert "UDP/TLS/RTP/SAVPF" in offer and "a=fingerprint:" in offer and "a=crypto:" not in offer, offer
        with netns.inside(ns["priv"]):
            q = ng_request(stack.ng, {"command": "query", "call-id": d.call_id})
        assert leg(q, d.local_tag) == ("priv", RELAY_PRIV), q
        assert leg(q, d.remote_tag) == ("pub", RELAY_PUB), q

        # Tones both ways: the phone's 440 Hz while the browser listens,
        # the browser's 1 kHz at the phone.
        alice.start_media()
        sender = threading.Thread(target=alice.media.send_tone, args=(TONE_PACKETS, 0, PHONE_TONE))
        sender.start()
        try:
            stack.wait_page_media()
            heard = stack.measure(PHONE_TONE, 1200)
            stats = stack.stats()
        finally:
            sender.join()
        print("io %s: browser heard %.1f %% %g Hz at RMS %.3f; DTLS %s, %s, pair %s"
              % (io, heard["share"] * 100, PHONE_TONE, heard["rms"], stats.get("dtls"), stats.get("srtpCipher"),
                 stats.get("pair")))
        assert stats.get("dtls") == "connected", stats
        assert (stats.get("pair") or {}).get("remote", "").startswith(NAT + ":"), stats
        assert heard["share"] > 0.8 and heard["rms"] > 0.02, "browser: %s; stats %s" % (heard, stats)
        pt = max(set(alice.media.pts.values()), key=list(alice.media.pts.values()).count, default=None)
        packets, pcm = alice.media.audio(pt) if pt in (0, 8) else (0, [])
        # In 0.1 s blocks, as for baresip: the browser's audio path (its
        # resampling, its processing) does not keep one phase for seconds.
        share, rms = rig.tone_share(pcm, 8000, rig.BROWSER_TONE)
        print("io %s: alice heard %d packets (payload type %s), %.1f %% %g Hz at RMS %.0f"
              % (io, packets, pt, share * 100, rig.BROWSER_TONE, rms))
        assert packets >= 50 and share > 0.8 and rms > 300, (
            "alice: %d packets of payload type %s, %.0f %% %g Hz at RMS %.0f; unprotect errors %s"
            % (packets, pt, share * 100, rig.BROWSER_TONE, rms, alice.media.rx_errors[:3]))
        # Through the NAT on the public side, the relay's own address on the
        # private one.
        assert {f[0] for f in alice.media.rx_from} == {RELAY_PRIV}, alice.media.rx_from

        assert alice.bye().status == 200
        stack.wait_page_call(("ended",))
        stack.wait_no_calls()
    except Exception:
        if stack.page:
            print("page console:\n%s\nSDPs at the page:\n%s" % ("\n".join(stack.console), stack.page.evaluate(
                "phone.sdps()")), file=sys.stderr)
            print(stack.logs(), file=sys.stderr)
        raise
    finally:
        if alice:
            alice.close()
        stack.stop()
