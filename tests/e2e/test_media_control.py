"""In-call media control through Kamailio's rtpengine module, as a script for
rtpengine drives it, with tests/e2e/kamailio-media.cfg: an in-dialog INFO
from a phone with an X-Media header makes the script call the module
function it names (play_media, stop_media, play_dtmf, block_media,
unblock_media, silence_media, unsilence_media, block_dtmf, unblock_dtmf)
with the flags of its X-Media-Flags header, and answer 200 (the prompt's
duration, from the module's media_duration pvar, in X-Media-Duration).

Two SDES-SRTP phones talk through Kamailio and `srtpgate serve --media-dir
--dtmf-log-dest` the whole time: alice (PCMA first in her SDP) says a 600 Hz
tone, bob (PCMU) a 400 Hz one, each as an unbroken 20 ms stream. Every check
is made on what a phone decrypts and decodes, and on the DTMF log's
datagrams:

* play_media on alice's INFO: alice hears the 1 kHz prompt of the media
  directory (a 16 kHz WAV) in her codec, PCMA, as one marked stream of its
  own, and nothing of bob while it plays; bob is back after it; bob hears
  alice throughout. stop_media cuts a longer prompt short.
* block_media("directional") on bob's INFO: alice gets nothing of bob's
  audio (his RFC 4733 digits still pass), bob still hears alice;
  unblock_media brings him back. silence_media("from-tag=<bob>"): bob's
  packets reach alice as PCMU silence (0xff); unsilence_media undoes it.
* play_dtmf("code=5") on bob's INFO: alice gets RFC 4733 event 5. A digit
  bob's phone sends itself reaches alice and the DTMF log (one JSON datagram
  naming bob's tag); block_dtmf("directional") holds bob's digits back until
  unblock_dtmf.

    SRTPGATE_BIN=$PWD/target/release/srtpgate .venv/bin/python -m pytest tests/e2e/test_media_control.py -q -rs
"""

import collections
import json
import math
import os
import queue
import socket
import struct
import sys
import threading
import time
import wave

import pytest

import harness
from audio import DECODE, ENCODE, tone, tone_share
from conftest import skip
from sipua import Media, SipUA, connect

CFG = os.path.join(harness.HERE, "kamailio-media.cfg")
PROMPT_HZ = 1000
PROMPT_MS = 1000
LONG_MS = 3000
ALICE = (8, 600)     # (payload type she sends and lists first, tone Hz)
BOB = (0, 400)
EVENT_PT = 101       # telephone-event in both phones' SDP (sipua's make_sdp)
SILENCE = {0: 0xFF, 8: 0xD5}
SETTLE = 0.08        # for a packet in flight when a control's 200 arrives

Pkt = collections.namedtuple("Pkt", "t marker pt seq ts ssrc payload")


def write_tone_wav(path, hz, ms, rate=16000, amplitude=12000):
    """A 16-bit mono WAV of a `hz` sine, `ms` long, at `rate`."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        n = rate * ms // 1000
        w.writeframes(b"".join(struct.pack("<h", int(amplitude * math.sin(2 * math.pi * hz * i / rate)))
                               for i in range(n)))


class Phone(Media):
    """sipua's Media, talking without a break: every 20 ms a G.711 frame of
    a tone (payload type `pt`), or in its place the next RFC 4733 packet of
    a digit it is pressing; every packet it decrypts goes to `got` (Pkt, in
    arrival order)."""

    def __init__(self, sock, name, pt, hz):
        super().__init__(sock, name)
        self.pt, self.hz = pt, hz
        self.got = []
        self.digits = queue.Queue()

    def _receive(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                data, src = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            if len(data) < 12 or data[0] >> 6 != 2 or 72 <= data[1] & 0x7F <= 79:
                continue  # RTCP
            try:
                plain = self.rx.unprotect(data)
            except Exception as e:  # pylibsrtp.Error
                self.rx_errors.append("%s (%d bytes from %s)" % (e, len(data), src))
                continue
            seq, ts, ssrc = struct.unpack("!HII", plain[2:12])
            head = 12 + 4 * (plain[0] & 0x0F)
            if plain[0] & 0x10:
                head += 4 + 4 * struct.unpack("!H", plain[head + 2:head + 4])[0]
            self.got.append(Pkt(time.monotonic(), bool(plain[1] & 0x80), plain[1] & 0x7F, seq, ts, ssrc,
                                plain[head:]))

    def talk(self):
        self.talker = threading.Thread(target=self._talk, daemon=True)
        self.talker.start()

    def _talk(self):
        seq = struct.unpack("!H", os.urandom(2))[0]
        ts = struct.unpack("!I", os.urandom(4))[0]
        pressing, event_ts, n = [], 0, 0
        t0 = time.monotonic()
        while not self.stop.is_set():
            if not pressing:
                try:
                    pressing, event_ts = self.digits.get_nowait(), ts
                except queue.Empty:
                    pass
            if pressing:
                first, payload = pressing.pop(0)
                hdr = struct.pack("!BBHII", 0x80, (0x80 if first else 0) | EVENT_PT, seq, event_ts, self.ssrc)
            else:
                payload = bytes(ENCODE[self.pt](x) for x in tone(self.hz, 160 * n, 160))
                hdr = struct.pack("!BBHII", 0x80, (0x80 if n == 0 else 0) | self.pt, seq, ts, self.ssrc)
            try:
                self.sock.sendto(self.tx.protect(hdr + payload), self.dest)
            except OSError:
                return
            seq, ts, n = (seq + 1) & 0xFFFF, (ts + 160) & 0xFFFFFFFF, n + 1
            time.sleep(max(0.0, t0 + n * 0.02 - time.monotonic()))

    def press(self, event, volume=10):
        """A 100 ms digit, as a phone sends it: four updates, the end three times."""
        packets = [(i == 0, struct.pack("!BBH", event, volume, d)) for i, d in enumerate((160, 320, 480, 640))]
        packets += [(False, struct.pack("!BBH", event, 0x80 | volume, 800))] * 3
        self.digits.put(packets)

    def mark(self):
        return len(self.got)

    def since(self, mark):
        return self.got[mark:]

    def close(self):
        self.stop.set()
        if hasattr(self, "talker"):
            self.talker.join(1)
        super().close()


def events(pkts, ssrc=None):
    """(event, end, volume, duration, ts, marker) of the RFC 4733 packets (from `ssrc`)."""
    out = []
    for p in pkts:
        if p.pt == EVENT_PT and len(p.payload) >= 4 and ssrc in (None, p.ssrc):
            e, flags, dur = struct.unpack("!BBH", p.payload[:4])
            out.append((e, bool(flags & 0x80), flags & 0x3F, dur, p.ts, p.marker))
    return out


def audio_of(pkts, ssrc):
    return [p for p in pkts if p.ssrc == ssrc and p.pt != EVENT_PT]


def is_tone(pkts, pt, hz):
    """(share of the power at hz, RMS) of these G.711 packets."""
    return tone_share([DECODE[pt](c) for p in pkts for c in p.payload], hz)


class MediaCall:
    def __init__(self, alice, bob, relay, kamailio, dtmf_log):
        self.alice, self.bob, self.relay, self.kamailio, self.dtmf_log = alice, bob, relay, kamailio, dtmf_log

    def control(self, ua, action, flags=""):
        """`action` with `flags` from the Kamailio script, on an INFO from `ua`;
        the 200 (anything else fails the test)."""
        extra = ["X-Media: " + action] + (["X-Media-Flags: " + flags] if flags else [])
        r = ua.in_dialog("INFO", extra)
        assert r.status == 200, "%s(%r) on %s's INFO: %s\n%s" % (
            action, flags, ua.user, r.first, self.kamailio.output(3000))
        return r

    def logs(self):
        return "\n\n".join(p.describe() for p in (self.relay, self.kamailio))


@pytest.fixture(scope="module")
def call(srtpgate_binary, tmp_path_factory):
    """alice and bob in an SRTP call through Kamailio and srtpgate, both
    talking; the relay's media directory holds prompt.wav (1 kHz, 1 s) and
    long.wav (1 kHz, 3 s), its DTMF log goes to call.dtmf_log."""
    if not harness.kamailio_path():
        skip("kamailio is not installed (apt-get install kamailio; it ships rtpengine.so)")
    work = tmp_path_factory.mktemp("media-control")
    media = work / "media"
    media.mkdir()
    write_tone_wav(media / "prompt.wav", PROMPT_HZ, PROMPT_MS)
    write_tone_wav(media / "long.wav", PROMPT_HZ, LONG_MS)
    dtmf_log = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dtmf_log.bind((harness.IP, 0))
    with harness.running() as started:
        relay, cfg = harness.start_relay("srtpgate", str(work), srtpgate_binary, extra=[
            "--media-dir", str(media), "--dtmf-log-dest", "%s:%d" % dtmf_log.getsockname()])
        started.append(relay)
        kam, sip = harness.start_kamailio(str(work), cfg["ng"], cfg_path=CFG)
        started.append(kam)
        alice, bob = SipUA("alice", sip, codecs=(ALICE[0], BOB[0])), SipUA("bob", sip, codecs=(BOB[0], ALICE[0]))
        try:
            errors = connect(alice, bob)
            assert not errors, "bob: %s" % errors[0]
            for ua, (pt, hz) in ((alice, ALICE), (bob, BOB)):
                ua.media = Phone(ua.media.sock, ua.user, pt, hz)
                ua.start_media()
                ua.media.talk()
            c = MediaCall(alice, bob, relay, kam, dtmf_log)
            time.sleep(0.3)
            a, b = alice.media, bob.media
            assert audio_of(a.got, b.ssrc) and audio_of(b.got, a.ssrc), "no media both ways\n" + c.logs()
            yield c
            assert alice.bye().status == 200
        finally:
            alice.close()
            bob.close()
            dtmf_log.close()


@pytest.fixture(autouse=True)
def media_logs_on_failure(request):
    yield
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed and "call" in request.fixturenames:
        print(request.getfixturevalue("call").logs(), file=sys.stderr)


def test_play_media_is_heard_by_the_sender_of_the_info_in_place_of_the_other(call):
    a, b = call.alice.media, call.bob.media
    ma, mb = a.mark(), b.mark()
    r = call.control(call.alice, "play_media", "file=prompt.wav")
    assert r.get("x-media-duration") == str(PROMPT_MS), "media_duration pvar: %s" % r.get("x-media-duration")
    # Until the prompt has played and bob has been back for a while.
    deadline = time.monotonic() + PROMPT_MS / 1000 + 3

    def played():
        got = a.since(ma)
        prompt = [p for p in got if p.ssrc != b.ssrc]
        return got, prompt, prompt and len(audio_of(got[got.index(prompt[-1]):], b.ssrc)) >= 25
    while not played()[2] and time.monotonic() < deadline:
        time.sleep(0.05)
    got, prompt, _ = played()
    # 1 s in 20 ms frames of alice's first codec, one stream, the first marked.
    assert len(prompt) == PROMPT_MS // 20, "alice got %d prompt packets: %s" % (
        len(prompt), [(p.pt, p.seq) for p in prompt[:8]])
    assert {p.pt for p in prompt} == {ALICE[0]} and {len(p.payload) for p in prompt} == {160}, \
        "prompt in alice's codec: %s" % sorted({(p.pt, len(p.payload)) for p in prompt})
    assert len({p.ssrc for p in prompt}) == 1
    assert prompt[0].marker and not any(p.marker for p in prompt[1:]), [p.marker for p in prompt]
    for x, y in zip(prompt, prompt[1:]):
        assert (y.seq - x.seq) & 0xFFFF == 1 and (y.ts - x.ts) & 0xFFFFFFFF == 160, (x, y)
    share, rms = is_tone(prompt, ALICE[0], PROMPT_HZ)
    assert share > 0.8 and rms > 3000, "prompt is %.0f %% 1 kHz at RMS %.0f" % (share * 100, rms)
    # Nothing of bob's while it played; bob back after it.
    first, last = got.index(prompt[0]), got.index(prompt[-1])
    during = audio_of(got[first:last + 1], b.ssrc)
    assert not during, "%d of bob's packets reached alice during the prompt (seq %s)" % (
        len(during), [p.seq for p in during[:5]])
    after = audio_of(got[last + 1:], b.ssrc)
    assert len(after) >= 15, "only %d of bob's packets after the prompt" % len(after)
    share, _ = is_tone(after, BOB[0], BOB[1])
    assert share > 0.8, "bob after the prompt: %.0f %% his tone" % (share * 100)
    # Bob heard alice throughout.
    heard = audio_of(b.since(mb), a.ssrc)
    assert len(heard) >= 60, "bob got only %d of alice's packets meanwhile" % len(heard)
    assert not a.rx_errors and not b.rx_errors, a.rx_errors + b.rx_errors


def test_stop_media_cuts_a_prompt_short(call):
    a, b = call.alice.media, call.bob.media
    ma = a.mark()
    r = call.control(call.alice, "play_media", "file=long.wav")
    assert r.get("x-media-duration") == str(LONG_MS)
    time.sleep(0.4)
    playing = [p for p in a.since(ma) if p.ssrc != b.ssrc]
    assert len(playing) >= 15, "only %d prompt packets before stop_media" % len(playing)
    call.control(call.alice, "stop_media")
    time.sleep(SETTLE)
    ms = a.mark()
    time.sleep(0.5)
    after = a.since(ms)
    late = [p for p in after if p.ssrc == playing[0].ssrc]
    assert len(late) <= 1, "%d prompt packets after stop_media" % len(late)
    assert len(audio_of(after, b.ssrc)) >= 20, "bob not back after stop_media: %d packets" % len(
        audio_of(after, b.ssrc))


def test_block_and_silence_media_of_one_party(call):
    a, b = call.alice.media, call.bob.media
    bob_tag = call.bob.dialog.local_tag

    call.control(call.bob, "block_media", "directional")
    time.sleep(SETTLE)
    ma, mb = a.mark(), b.mark()
    time.sleep(0.3)
    b.press(3)   # a blocked party's digits still pass
    time.sleep(0.4)
    got = a.since(ma)
    leaked = audio_of(got, b.ssrc)
    assert not leaked, "%d of bob's packets reached alice while blocked" % len(leaked)
    digit = events(got, b.ssrc)
    assert digit and {e[0] for e in digit} == {3} and any(e[1] for e in digit), \
        "bob's digit 3 while blocked: %s" % digit
    assert len(audio_of(b.since(mb), a.ssrc)) >= 25, "blocking bob stopped alice's media to him too"

    call.control(call.bob, "unblock_media", "directional")
    time.sleep(SETTLE)
    ma = a.mark()
    time.sleep(0.4)
    back = audio_of(a.since(ma), b.ssrc)
    assert len(back) >= 15, "only %d of bob's packets after unblock_media" % len(back)
    assert is_tone(back, BOB[0], BOB[1])[0] > 0.8

    call.control(call.bob, "silence_media", "from-tag=" + bob_tag)
    time.sleep(SETTLE)
    ma = a.mark()
    time.sleep(0.4)
    quiet = audio_of(a.since(ma), b.ssrc)
    assert len(quiet) >= 15, "only %d of bob's packets while silenced" % len(quiet)
    loud = [p.seq for p in quiet if p.pt != BOB[0] or p.payload != bytes([SILENCE[BOB[0]]]) * 160]
    assert not loud, "%d of %d packets not PCMU silence (seq %s)" % (len(loud), len(quiet), loud[:5])

    call.control(call.bob, "unsilence_media", "from-tag=" + bob_tag)
    time.sleep(SETTLE)
    ma = a.mark()
    time.sleep(0.4)
    back = audio_of(a.since(ma), b.ssrc)
    assert len(back) >= 15 and is_tone(back, BOB[0], BOB[1])[0] > 0.8, \
        "bob's tone after unsilence_media: %d packets" % len(back)


def test_play_dtmf_and_digits_a_phone_sends(call):
    a, b = call.alice.media, call.bob.media
    bob_tag, alice_tag = call.bob.dialog.local_tag, call.alice.dialog.local_tag

    # The INFO's sender (bob) is the one the digit comes from: alice gets it.
    ma = a.mark()
    call.control(call.bob, "play_dtmf", "code=5")
    time.sleep(0.7)
    ev = events(a.since(ma))
    assert ev, "alice got no RFC 4733 packet for play_dtmf (payload types %s)" % sorted(
        {p.pt for p in a.since(ma)})
    assert {e[0] for e in ev} == {5}, "events %s" % ev
    assert ev[0][5] and not any(e[5] for e in ev[1:]), "marker on the first packet only: %s" % ev
    assert len({e[4] for e in ev}) == 1, "one timestamp for the event: %s" % ev
    ends = [e for e in ev if e[1]]
    assert ends, "no end packet: %s" % ev
    assert 240 * 8 <= ends[0][3] <= 280 * 8, "250 ms by default, got %d samples" % ends[0][3]
    assert len(audio_of(a.since(ma), b.ssrc)) >= 10, "bob's audio after the digit"

    # A digit bob's phone sends: relayed to alice, and one datagram in the log.
    call.dtmf_log.settimeout(0)
    try:
        while True:
            call.dtmf_log.recv(65535)
    except OSError:
        pass
    ma = a.mark()
    b.press(7)
    deadline = time.monotonic() + 3
    records = []
    call.dtmf_log.settimeout(0.2)
    while time.monotonic() < deadline and not any(r.get("event") == 7 for r in records):
        try:
            records.append(json.loads(call.dtmf_log.recv(65535)))
        except socket.timeout:
            pass
    seven = [r for r in records if r.get("event") == 7]
    assert seven, "no DTMF log datagram for bob's digit 7; got %s" % records
    rec = seven[0]
    assert rec["callid"] == call.alice.dialog.call_id and rec["source_tag"] == bob_tag, rec
    assert rec["type"] == "DTMF" and rec["duration"] == 100 and rec["volume"] == 10, rec
    assert rec["source_ip"] == harness.IP and sorted(rec["tags"]) == sorted([alice_tag, bob_tag]), rec
    time.sleep(0.3)
    try:
        more = json.loads(call.dtmf_log.recv(65535))
        assert more.get("event") != 7, "a second datagram for one digit: %s" % more
    except socket.timeout:
        pass
    relayed = events(a.since(ma), b.ssrc)
    assert {e[0] for e in relayed} == {7} and any(e[1] for e in relayed), "bob's digit at alice: %s" % relayed

    # block_dtmf: bob's digits are held back, his audio is not.
    call.control(call.bob, "block_dtmf", "directional")
    time.sleep(SETTLE)
    ma = a.mark()
    b.press(9)
    time.sleep(0.4)
    assert not events(a.since(ma), b.ssrc), "bob's digit 9 passed block_dtmf: %s" % events(a.since(ma))
    assert len(audio_of(a.since(ma), b.ssrc)) >= 8, "block_dtmf blocked bob's audio"
    call.control(call.bob, "unblock_dtmf", "directional")
    time.sleep(SETTLE)
    ma = a.mark()
    b.press(9)
    time.sleep(0.4)
    assert {e[0] for e in events(a.since(ma), b.ssrc)} == {9}, "bob's digit 9 after unblock_dtmf"
