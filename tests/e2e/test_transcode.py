"""Two SIP phones with no codec in common call each other through Kamailio
and `srtpgate serve`: alice offers only PCMU, bob answers only PCMA, both
SRTP. Kamailio's rtpengine module passes rtpengine's transcoding flags
(`codec-transcode-PCMA codec-mask-PCMU`) unchanged, the relay transcodes,
and each phone checks that it decodes the tone the other sent (frequency
and level), in its own codec.

    SRTPGATE_BIN=target/release/srtpgate .venv/bin/python -m pytest tests/e2e/test_transcode.py
"""


import pytest

import harness
from conftest import Stack, skip, srtpgate_bin
from ng_stub import ng_request
from sipua import SipUA, connect, exchange
from test_kamailio import wait_call_gone

FLAGS = ("replace-origin replace-session-connection ICE=remove RTP/SAVP "
         "codec-transcode-PCMA codec-mask-PCMU")
PACKETS = 50


@pytest.fixture(scope="module")
def transcoding(tmp_path_factory):
    if not harness.kamailio_path():
        skip("kamailio is not installed (apt-get install kamailio; it ships rtpengine.so)")
    binary = srtpgate_bin()
    work = str(tmp_path_factory.mktemp("e2e-transcode"))
    relay, cfg = harness.start_relay("srtpgate", work, binary)
    try:
        kam, sip = harness.start_kamailio(work, cfg["ng"], rtpe_flags=FLAGS)
    except Exception:
        relay.stop()
        raise
    yield Stack("srtpgate", relay, cfg, kam, sip)
    kam.stop()
    relay.stop()


def test_pcmu_phone_calls_pcma_phone(transcoding):
    stack = transcoding
    alice = SipUA("alice-t", stack.sip, codecs=(0,))
    bob = SipUA("bob-t", stack.sip, codecs=(8,))
    try:
        errors = connect(alice, bob)
        assert not errors, "bob: %s" % errors[0]
        a, b = alice.dialog, bob.dialog
        offered = [l for l in b.remote_sdp.lines if l.startswith("m=audio")]
        answered = [l for l in a.remote_sdp.lines if l.startswith("m=audio")]
        assert offered[0].split()[3:] == ["101", "8"], "bob was offered %s" % offered
        assert answered[0].split()[3:] == ["0", "101"], "alice got the answer %s" % answered
        problems = exchange(alice, bob, PACKETS, tones=((0, 1000.0, 8), (8, 440.0, 0)))
        assert not problems, "\n".join(problems)
        call_id = a.call_id
        assert alice.bye().status == 200
    finally:
        alice.close()
        bob.close()
    wait_call_gone(stack, call_id)
