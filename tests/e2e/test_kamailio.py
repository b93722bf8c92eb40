"""A call between two SIP phones through Kamailio, with the relay anchoring and
re-keying the media (SRTP on both legs, each leg with its own keys).

Run against the real daemon (the default path is target/release/srtpgate):

    SRTPGATE_BIN=target/release/srtpgate .venv/bin/python -m pytest tests/e2e

The [stub] variants run the same signalling against ng_stub.py, which relays
no media, so they check everything except the media path.
"""

import itertools
import time

import pytest

from ng_stub import ng_request
from sipua import CallFailed, SipUA, connect, exchange

_calls = itertools.count(1)
PACKETS = 50          # per direction: 1 s of G.711 at 20 ms
INTERVAL = 0.02


def place_call(stack, **answer_kw):
    """alice calls bob through Kamailio; returns (alice, bob) once the call is
    up (or rejected, with answer_kw reject=...)."""
    # Fresh user names per call: Kamailio keeps earlier tests' registrations
    # (and their now closed ports) until they expire.
    n = next(_calls)
    alice, bob = SipUA("alice%d" % n, stack.sip), SipUA("bob%d" % n, stack.sip)
    try:
        errors = connect(alice, bob, **answer_kw)
        assert not errors, "bob: %s" % errors[0]
        return alice, bob
    except BaseException:
        alice.close()
        bob.close()
        raise


def wait_call_gone(stack, call_id, timeout=3.0):
    """The relay must forget the call after `delete` (polling briefly: the
    delete may still be in flight when the BYE's 200 arrives)."""
    deadline = time.monotonic() + timeout
    while True:
        q = ng_request(stack.ng, {"command": "query", "call-id": call_id})
        calls = ng_request(stack.ng, {"command": "list", "limit": 1000}).get("calls", [])
        if q.get("result") != "ok" and call_id not in calls:
            return
        if time.monotonic() > deadline:
            raise AssertionError("relay still knows call %s after BYE: query=%s list=%s"
                                 % (call_id, q, calls))
        time.sleep(0.1)


def check_rewritten(received, sent, other_sent, stack, who):
    """`received` is the SDP `who` got; `sent` is what the other phone sent
    (and `other_sent` what `who` itself sent)."""
    problems = []
    lo, hi = stack.cfg["port_min"], stack.cfg["port_max"]
    if received.addr != "127.0.0.1":
        problems.append("media address %s, not the relay's 127.0.0.1" % received.addr)
    if not lo <= received.port <= hi:
        problems.append("media port %s outside the relay's range %d-%d" % (received.port, lo, hi))
    if received.port in (sent.port, other_sent.port):
        problems.append("media port %d is a phone's own port: media bypasses the relay" % received.port)
    if received.proto != "RTP/SAVP":
        problems.append("profile %s, expected RTP/SAVP" % received.proto)
    if not received.crypto:
        problems.append("no a=crypto line")
    peer_keys = {c[2] for c in sent.crypto} | {c[2] for c in other_sent.crypto}
    reused = [c[3] for c in received.crypto if c[2] in peer_keys]
    if reused:
        problems.append("relay passed a phone's own key through: %s" % reused)
    if received.ice:
        problems.append("ICE attributes left in (ICE=remove): %s" % received.ice)
    assert not problems, "%s received an SDP that does not anchor media in the relay:\n  %s\n%s" % (
        who, "\n  ".join(problems), received.raw)


def test_srtp_call_through_kamailio(stack):
    alice, bob = place_call(stack)
    try:
        a, b = alice.dialog, bob.dialog
        call_id = a.call_id
        # What each phone received must be the relay's, with the relay's keys.
        check_rewritten(b.remote_sdp, a.local_sdp, b.local_sdp, stack, "bob (offer)")
        check_rewritten(a.remote_sdp, b.local_sdp, a.local_sdp, stack, "alice (answer)")
        q = ng_request(stack.ng, {"command": "query", "call-id": call_id})
        assert q.get("result") == "ok", "relay does not know the call during it: %s" % q
        assert call_id in ng_request(stack.ng, {"command": "list"}).get("calls", [])

        if stack.kind == "srtpgate":
            # Each phone protects with its own key and unprotects with the key
            # the relay gave it: passes only if the relay re-keys both ways.
            problems = exchange(alice, bob, PACKETS, INTERVAL)
            assert not problems, "\n".join(problems)
            # Symmetric RTP: media comes from the port the SDP advertised.
            for ua in (alice, bob):
                expect = (ua.dialog.remote_sdp.addr, ua.dialog.remote_sdp.port)
                assert ua.media.rx_from == {expect}, "%s got media from %s, SDP said %s" % (
                    ua.user, ua.media.rx_from, expect)

        assert alice.bye().status == 200
        assert not bob.byes.empty(), "bob never saw the BYE"
    finally:
        alice.close()
        bob.close()
    wait_call_gone(stack, call_id)


def test_callee_hangs_up(stack):
    """Kamailio sends the callee's tag as from-tag in this delete."""
    alice, bob = place_call(stack)
    try:
        call_id = alice.dialog.call_id
        assert bob.bye().status == 200
    finally:
        alice.close()
        bob.close()
    wait_call_gone(stack, call_id)


def test_rejected_call_frees_relay(stack):
    """486 from the callee: Kamailio deletes twice (reply and failure route)."""
    with pytest.raises(CallFailed) as failed:
        place_call(stack, reject=(486, "Busy Here"))
    assert failed.value.response.status == 486
    wait_call_gone(stack, failed.value.response.get("call-id"))
