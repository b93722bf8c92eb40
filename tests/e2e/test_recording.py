"""Calls recorded through Kamailio's rtpengine module, as scripts for
rtpengine ask it, with examples/kamailio/kamailio.cfg: `record-call=yes`
added to its rtpengine_manage() flags (recording from the offer, completed
by the delete), and its WITH_RECORDING block (the module's start_recording()
on the ACK, stop_recording() on the BYE). Two SDES-SRTP phones
talk; after the BYE the relay's recording directory holds the call's pcap,
with every RTP packet of both phones decrypted (each phone's payload as it
sent it), and its JSON metadata naming the call and its two tags.

    SRTPGATE_BIN=$PWD/target/release/srtpgate .venv/bin/python -m pytest tests/e2e/test_recording.py -q -rs
"""

import glob
import json
import os
import struct
import time

import harness
from conftest import skip
from sipua import Media, SipUA, connect, exchange

FLAGS = "replace-origin replace-session-connection ICE=remove RTP/SAVP record-call=yes"
PACKETS = 25


def raw_ip_udp(path):
    """[(src port, dst port, payload)] of a pcap of raw IPv4 packets."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, _, _, _, _, link = struct.unpack("<IHHiIII", data[:24])
    assert magic == 0xA1B2C3D4 and link == 101, "a raw-IP pcap (magic %x, link %d)" % (magic, link)
    out, i = [], 24
    while i + 16 <= len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[i:i + 16])
        frame = data[i + 16:i + 16 + incl]
        i += 16 + incl
        ihl = (frame[0] & 0x0F) * 4
        sport, dport, ulen = struct.unpack("!HHH", frame[ihl:ihl + 6])
        out.append((sport, dport, frame[ihl + 8:ihl + ulen]))
    return out


def recorded_call(srtpgate_binary, tmp_path, rtpe_flags, defines=None):
    """A call between two phones through Kamailio and a recording relay;
    (its Call-ID, the phones' RTP ports by name, the recording's JSON and
    pcap paths, the relay)."""
    if not harness.kamailio_path():
        skip("kamailio is not installed (apt-get install kamailio; it ships rtpengine.so)")
    rec = str(tmp_path / "recordings")
    with harness.running() as started:
        relay, cfg = harness.start_relay("srtpgate", str(tmp_path), srtpgate_binary,
                                         extra=["--recording-dir", rec])
        started.append(relay)
        kam, sip = harness.start_kamailio(str(tmp_path), cfg["ng"], rtpe_flags=rtpe_flags, defines=defines)
        started.append(kam)
        alice, bob = SipUA("alice", sip), SipUA("bob", sip)
        try:
            errors = connect(alice, bob)
            assert not errors, "bob: %s" % errors[0]
            problems = exchange(alice, bob, PACKETS)
            assert not problems, "\n".join(problems)
            call_id = alice.dialog.call_id
            ports = {alice.media.sock.getsockname()[1]: "alice", bob.media.sock.getsockname()[1]: "bob"}
            assert alice.bye().status == 200
        finally:
            alice.close()
            bob.close()
        deadline = time.monotonic() + 5
        while not glob.glob(rec + "/**/*.json", recursive=True) and time.monotonic() < deadline:
            time.sleep(0.05)
        metas = glob.glob(rec + "/**/*.json", recursive=True)
        assert len(metas) == 1, "recordings: %s\n%s" % (os.listdir(rec), relay.output(3000))
        return call_id, ports, metas[0], metas[0][:-len(".json")] + ".pcap", relay.output(100000)


def check_recording(call_id, ports, json_path, pcap):
    """The JSON names the call; the pcap holds both phones' RTP, decrypted."""
    with open(json_path) as f:
        meta = json.load(f)
    assert meta["call-id"] == call_id and meta["tags"][0] and meta["tags"][1], meta
    assert meta["streams"][0]["legs"][0]["suite"] == "AES_CM_128_HMAC_SHA1_80", meta
    frames = raw_ip_udp(pcap)
    for who in ("alice", "bob"):
        name = who.encode()[:4].ljust(4, b"_")
        got = [p for sport, _, p in frames if ports.get(sport) == who and len(p) >= 12 and not 192 <= p[1] <= 223]
        payloads = {struct.unpack("!H", p[2:4])[0]: p[12:] for p in got}
        missing = [s for s in range(PACKETS) if payloads.get(s) != Media.payload(name, s)]
        assert not missing, "%s's RTP in the recording, decrypted: seq %s missing or wrong (%d frames)" % (
            who, missing[:5], len(frames))
    assert len([f for f in os.listdir(os.path.dirname(pcap)) if f.startswith(".")]) == 0, "no part file left"


def test_record_call_from_a_kamailio_script(srtpgate_binary, tmp_path):
    call_id, ports, meta, pcap, log = recorded_call(srtpgate_binary, tmp_path, FLAGS)
    check_recording(call_id, ports, meta, pcap)


def test_start_and_stop_recording_from_a_kamailio_script(srtpgate_binary, tmp_path):
    call_id, ports, meta, pcap, log = recorded_call(
        srtpgate_binary, tmp_path, "replace-origin replace-session-connection ICE=remove RTP/SAVP",
        defines={"WITH_RECORDING": None})
    check_recording(call_id, ports, meta, pcap)
    # Stopped by `stop recording` (the BYE), not only by the delete.
    assert "recording started" in log and "recording stopped" in log, log[-3000:]
