"""A Kamailio configuration written for rtpengine between two networks,
unchanged against srtpgate: kamailio-interfaces.cfg offers with
`direction=priv direction=pub` and answers and deletes without. The relay has
a private interface (127.0.0.1, the caller's side) and a public one
(127.0.0.2, the callee at 127.0.0.3): each phone gets its side's address in
the SDP, SRTP flows both ways through the sockets of each side, the relay's
query names each leg's interface, and the call ends cleanly.

    SRTPGATE_BIN=$PWD/target/release/srtpgate .venv/bin/python -m pytest tests/e2e/test_interfaces.py -q -rs
"""

import os
import sys
import threading
import time

import pytest

import harness
from ng_stub import ng_request
from sipua import SipUA, connect

CFG = os.path.join(harness.HERE, "kamailio-interfaces.cfg")
PRIVATE, PUBLIC, CALLEE = "127.0.0.1", "127.0.0.2", "127.0.0.3"
PACKETS = 25
INTERVAL = 0.02


def skip(reason):
    print("SKIP: " + reason, file=sys.stderr)
    pytest.skip(reason)


@pytest.fixture
def two_networks(srtpgate_binary, tmp_path):
    if not harness.kamailio_path():
        skip("kamailio is not installed (apt-get install kamailio; it ships rtpengine.so)")
    with harness.running() as started:
        relay, cfg = harness.start_relay("srtpgate", str(tmp_path), srtpgate_binary,
                                         interfaces=("priv/" + PRIVATE, "pub/" + PUBLIC))
        started.append(relay)
        kam, sip = harness.start_kamailio(str(tmp_path), cfg["ng"], cfg_path=CFG)
        started.append(kam)
        yield cfg, sip


def interface_of(q, tag):
    medias = q["tags"][tag]["medias"]
    return medias[0]["interface"], medias[0]["streams"][0]["local address"]


def test_direction_from_an_rtpengine_config_puts_each_side_on_its_network(two_networks):
    cfg, sip = two_networks
    alice, bob = SipUA("alice", sip, ip=PRIVATE), SipUA("bob", sip, ip=CALLEE)
    try:
        errors = connect(alice, bob)
        assert not errors, "bob: %s" % errors[0]
        a, b = alice.dialog, bob.dialog
        # Each phone is told its own side's address of the relay.
        assert b.remote_sdp.addr == PUBLIC, "bob (public side) got %s:\n%s" % (b.remote_sdp.addr, b.remote_sdp.raw)
        assert a.remote_sdp.addr == PRIVATE, "alice (private side) got %s:\n%s" % (a.remote_sdp.addr,
                                                                                  a.remote_sdp.raw)
        q = ng_request(cfg["ng"], {"command": "query", "call-id": a.call_id})
        assert q.get("result") == "ok", q
        assert interface_of(q, a.local_tag) == ("priv", PRIVATE), q
        assert interface_of(q, b.local_tag) == ("pub", PUBLIC), q

        alice.start_media()
        bob.start_media()
        senders = [threading.Thread(target=ua.media.send, args=(PACKETS, INTERVAL)) for ua in (alice, bob)]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        time.sleep(0.5)
        problems = alice.media.check(bob.user, PACKETS) + bob.media.check(alice.user, PACKETS)
        assert not problems, "\n".join(problems)
        # From the socket of each phone's own side.
        for ua, addr in ((alice, PRIVATE), (bob, PUBLIC)):
            assert {f[0] for f in ua.media.rx_from} == {addr}, "%s got media from %s" % (ua.user, ua.media.rx_from)
        assert alice.bye().status == 200
    finally:
        alice.close()
        bob.close()
    deadline = time.monotonic() + 3
    while ng_request(cfg["ng"], {"command": "list"}).get("calls") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ng_request(cfg["ng"], {"command": "list"}).get("calls"), "the call stayed after the BYE"
