"""WebRTC <-> SIP bridging through a relay, with a real browser.

Headless chromium (page.html: ICE, DTLS-SRTP, rtcp-mux, opus/PCMU...) talks
to an SDES phone (rig.Phone: RTP/SAVP, PCMU) through the relay under test,
which is driven over NG with the flags a Kamailio WebRTC<->SIP bridge gives
rtpengine_offer()/rtpengine_answer() (see FLAGS below). Each test checks
audio both ways by frequency: the browser's microphone plays 1000 Hz, the
phone sends 440 Hz.

Relays: $WEBRTC_RELAYS, comma-separated (default "srtpgate"): "rtpengine"
(Debian's rtpengine-daemon, userspace) and/or "srtpgate" (`srtpgate serve`,
$SRTPGATE_BIN or target/release/srtpgate).

With $WEBRTC_TRANSCRIPTS set to a directory, every call's NG requests and
replies (SDPs included) and measurements are written there as JSON
(<relay>-<flow>.json); rtpengine-sdp.md was made from such a run.
"""

import base64
import json
import os
import re
import shutil
import signal
import socket
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_rig():
    """rig.py, under a name of its own: other suites under tests/webrtc
    (e.g. sip/) have a rig.py too, and a plain `import rig` would get
    whichever pytest imported first."""
    import importlib.util
    name = "srtpgate_webrtc_rig"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "rig.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


rig = _load_rig()
import sipua  # noqa: E402  (on the path rig.py set up)

RELAYS = [r.strip() for r in os.environ.get("WEBRTC_RELAYS", "srtpgate").split(",") if r.strip()]

# The flags strings as they would appear in kamailio.cfg's
# rtpengine_offer("...")/rtpengine_answer("..."); rig.kamailio_flags turns them
# into NG dictionary entries the way Kamailio's rtpengine module does.
FLAGS = {
    # (a) the browser calls the phone
    "a-offer": "ICE=remove DTLS=off transport-protocol=RTP/SAVP rtcp-mux-demux "
               "replace-origin replace-session-connection",
    "a-answer": "ICE=force transport-protocol=UDP/TLS/RTP/SAVPF rtcp-mux-require SDES-off",
    # (b) the phone calls the browser
    "b-offer": "ICE=force transport-protocol=UDP/TLS/RTP/SAVPF rtcp-mux-offer generate-mid SDES-off",
    "b-answer": "ICE=remove transport-protocol=RTP/SAVP rtcp-mux-demux",
}
# $WEBRTC_FLAGS_A_OFFER etc. replace an entry, for experiments.
for _k in FLAGS:
    FLAGS[_k] = os.environ.get("WEBRTC_FLAGS_" + _k.upper().replace("-", "_"), FLAGS[_k])

# The "lite" variant also asks rtpengine for ICE-lite towards the browser
# (what srtpgate always does): `ICE-lite` is valid in offers only; "backward"
# is towards the offer's sender, "forward" towards its receiver.
ICE_LITE = {"a-offer": "ICE-lite=backward", "b-offer": "ICE-lite=forward"}


def flags_for(ice):
    return {k: (v + " " + ICE_LITE[k]) if ice == "lite" and k in ICE_LITE else v for k, v in FLAGS.items()}

MIN_SHARE = 0.8        # of the energy at the expected frequency
CONNECT_MS = 10000
MEASURE_MS = 1500


def skip(reason):
    print("SKIP: " + reason, file=sys.stderr)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return str(tmp_path_factory.mktemp("webrtc"))


@pytest.fixture(scope="module")
def browser(work):
    exe = rig.chromium_path()
    if not exe:
        skip("chromium is not installed (scripts/deps.sh installs Debian's; or set $CHROMIUM)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        skip("the playwright Python package is missing (.venv: pip install playwright)")
    b = rig.Browser(rig.write_tone_wav(os.path.join(work, "tone-%d.wav" % rig.BROWSER_HZ)), exe)
    yield b
    b.close()


@pytest.fixture(scope="module", params=RELAYS)
def relay(request, work):
    kind = request.param
    if kind == "rtpengine" and not rig.rtpengine_path():
        skip("rtpengine is not installed (apt-get install --no-install-recommends rtpengine-daemon)")
    if kind == "srtpgate":
        path, why = rig.srtpgate_ready()
        if not path:
            skip(why)
    d = os.path.join(work, kind)
    os.makedirs(d, exist_ok=True)
    proc, cfg = rig.start_relay(kind, d)
    proc.kind = kind
    yield proc, cfg
    proc.stop()


class Call:
    """One call's record: NG exchanges, measurements; saved as JSON."""

    def __init__(self, relay, flow, ice="full"):
        self.proc, self.cfg = relay
        self.flow = flow
        self.ice = ice
        self.flags = flags_for(ice)
        self.ng = rig.Ng(self.cfg["ng"])
        self.call_id = "%s-%s" % (flow, uuid.uuid4().hex[:12])
        self.notes = {}

    def save(self):
        rec = {"relay": self.proc.kind, "flow": self.flow, "ice": self.ice, "call-id": self.call_id,
               "flags": self.flags,
               "ng": [{"request": q, "reply": r} for q, r in self.ng.history], "notes": self.notes}
        out = os.environ.get("WEBRTC_TRANSCRIPTS")
        if out:
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, "%s-%s-%s.json" % (self.proc.kind, self.flow, self.ice)), "w") as f:
                json.dump(rec, f, indent=1)
        return rec

    def diag(self, browser):
        """Context for a failure message."""
        try:
            st = browser.stats()
        except Exception as e:  # the page itself may be gone
            st = repr(e)
        try:
            q = json.dumps(rig.ng_request(self.cfg["ng"], {"command": "query", "call-id": self.call_id}),
                           default=repr)[:6000]
        except Exception as e:
            q = repr(e)
        return "\nbrowser stats: %s\nrelay's query: %s\nconsole: %s\nNG: %s\nrelay log tail:\n%s" % (
            json.dumps(st, indent=1), q, browser.console[-20:],
            json.dumps(self.ng.history, indent=1)[-6000:], self.proc.output(3000))


def check_audio(call, browser, phone, label, browser_sends=True):
    """ICE+DTLS up; the browser hears the phone's 440 Hz; the phone hears the
    browser's 1000 Hz (or, browser_sends=False, hears nothing from it)."""
    st = browser.wait_connected(CONNECT_MS)
    assert st.get("connection") == "connected", "%s: browser not connected: %s%s" % (
        label, st, call.diag(browser))
    got = browser.wait_inbound(25, timeout=5)
    assert got >= 25, "%s: browser received only %d packets in 5 s%s" % (label, got, call.diag(browser))
    m = browser.measure(MEASURE_MS)
    mark = phone.mark()
    time.sleep(1.0)
    heard = phone.heard(mark)
    call.notes[label] = {"browser_heard": m, "phone_heard": heard, "browser_stats": browser.stats()}
    problems = []
    if m.get("share", {}).get(str(rig.PHONE_HZ), 0) < MIN_SHARE or m.get("rms", 0) < 0.02:
        problems.append("browser: received audio is %.0f %% %d Hz at RMS %.3f (%s)" % (
            100 * m.get("share", {}).get(str(rig.PHONE_HZ), 0), rig.PHONE_HZ, m.get("rms", 0), m))
    if browser_sends:
        if heard["packets"] < 40 or heard["share"] < MIN_SHARE or heard["rms"] < 1000:
            problems.append("phone: %d packets in 1 s, %.0f %% %d Hz at RMS %.0f (%s)" % (
                heard["packets"], 100 * heard["share"], rig.BROWSER_HZ, heard["rms"], heard))
    elif heard["packets"] > 5:
        problems.append("phone: %d packets from the browser in 1 s while it should send none" % heard["packets"])
    if heard["unprotect_errors"]:
        problems.append("phone: %d packets failed SRTP unprotect: %s" % (
            heard["unprotect_errors"], phone.media.rx_errors[:3]))
    assert not problems, "%s: %s%s" % (label, "; ".join(problems), call.diag(browser))
    return m, heard


def browser_calls_phone(call, browser, phone):
    """(a) WebRTC offer -> SIP phone; its SDES answer -> WebRTC answer."""
    btag = "browser-" + uuid.uuid4().hex[:8]
    call.notes["tags"] = {"browser": btag, "phone": phone.tag}
    browser.init()
    offer = browser.make_offer()
    to_phone = call.ng.offer(call.call_id, btag, offer, call.flags["a-offer"])
    answer = phone.answer(to_phone)
    to_browser = call.ng.answer(call.call_id, btag, phone.tag, answer, call.flags["a-answer"])
    browser.accept_answer(to_browser)
    return btag


def phone_calls_browser(call, browser, phone):
    """(b) SIP phone's SDES offer -> WebRTC offer; the browser's answer -> SDES answer."""
    btag = "browser-" + uuid.uuid4().hex[:8]
    call.notes["tags"] = {"browser": btag, "phone": phone.tag}
    browser.init()
    to_browser = call.ng.offer(call.call_id, phone.tag, phone.offer(), call.flags["b-offer"])
    answer = browser.accept_offer(to_browser)
    to_phone = call.ng.answer(call.call_id, phone.tag, btag, answer, call.flags["b-answer"])
    phone.take_answer(to_phone)
    return btag


def reoffer_from_phone(call, browser, phone, btag, direction):
    """A re-INVITE from the phone (caller in flow b) with `direction`."""
    to_browser = call.ng.offer(call.call_id, phone.tag, phone.offer(direction), call.flags["b-offer"])
    answer = browser.accept_offer(to_browser)
    to_phone = call.ng.answer(call.call_id, phone.tag, btag, answer, call.flags["b-answer"])
    phone.take_answer(to_phone)


def run_call(relay, browser, flow, body, ice="full"):
    call = Call(relay, flow, ice)
    phone = rig.Phone()
    try:
        body(call, browser, phone)
    finally:
        if call.ng.history:
            # from-tag: the offerer's (the browser in flow a, the phone otherwise)
            tag = call.notes["tags"]["browser" if flow.startswith("a") else "phone"]
            try:
                call.ng.delete(call.call_id, tag)
            except OSError:
                pass
        browser.hangup()
        phone.close()
        call.save()
    return call


@pytest.mark.parametrize("ice", ["full", "lite"])
def test_browser_calls_phone(relay, browser, ice):
    def body(call, browser, phone):
        tag = browser_calls_phone(call, browser, phone)
        check_audio(call, browser, phone, "call")
        return tag
    call = run_call(relay, browser, "a-browser-calls-phone", body, ice)
    assert call.ng.history[-1][1].get("result") == "ok", "delete: %r" % (call.ng.history[-1],)


@pytest.mark.parametrize("ice", ["full", "lite"])
def test_phone_calls_browser(relay, browser, ice):
    def body(call, browser, phone):
        tag = phone_calls_browser(call, browser, phone)
        check_audio(call, browser, phone, "call")
        return tag
    call = run_call(relay, browser, "b-phone-calls-browser", body, ice)
    assert call.ng.history[-1][1].get("result") == "ok", "delete: %r" % (call.ng.history[-1],)


def test_hold_and_resume_from_phone(relay, browser):
    """(c) flow b, then the phone re-offers a=sendonly (hold: the browser
    answers recvonly and stops sending, still hears the phone), then
    a=sendrecv (resume: audio both ways again)."""
    def body(call, browser, phone):
        tag = phone_calls_browser(call, browser, phone)
        check_audio(call, browser, phone, "call")
        reoffer_from_phone(call, browser, phone, tag, "sendonly")
        time.sleep(0.3)   # packets in flight
        check_audio(call, browser, phone, "hold", browser_sends=False)
        reoffer_from_phone(call, browser, phone, tag, "sendrecv")
        check_audio(call, browser, phone, "resume")
        return tag
    run_call(relay, browser, "c-hold-resume", body)


class VideoSink:
    """The phone's video end: RTP/SAVP, receive only; counts the SRTP packets
    that unprotect under the key the relay offered it, and their payload
    types."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((rig.PHONE_IP, 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]

    def answer(self, section):
        """Our answer to the relay's video m-line `section` (its text)."""
        pt = re.search(r"(?m)^a=rtpmap:(\d+) VP8/90000", section).group(1)
        tag, suite, key = re.search(r"(?m)^a=crypto:(\d+) (AES_CM_128_HMAC_SHA1_80) inline:([A-Za-z0-9+/]+)",
                                    section).groups()
        self.rx = rig.srtp_session((suite, base64.b64decode(key + "=" * (-len(key) % 4))), inbound=True)
        self.pt = int(pt)
        mine = sipua.crypto_line(int(tag), suite, sipua.new_key(suite))
        return "m=video %d RTP/SAVP %s\r\na=rtpmap:%s VP8/90000\r\na=recvonly\r\n%s\r\n" % (
            self.port, pt, pt, mine.decode() if isinstance(mine, bytes) else mine)

    def count(self, seconds):
        good, bad, pts = 0, 0, set()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                data, _ = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            if len(data) < 12 or 192 <= data[1] <= 223:
                continue
            try:
                plain = self.rx.unprotect(data)
                good += 1
                pts.add(plain[1] & 0x7F)
            except Exception:
                bad += 1
        return {"packets": good, "unprotect_errors": bad, "pts": sorted(pts)}

    def close(self):
        self.sock.close()


def test_browser_bundles_audio_and_video(relay, browser):
    """(d) A browser with bundlePolicy max-bundle offers audio and video in
    one BUNDLE group (one port, one ICE and DTLS transport) to a phone that
    takes each on a port of its own: the relay answers the group, the audio
    is heard both ways and the phone's video port receives the browser's
    VP8 under its own SDES key."""
    if relay[0].kind != "srtpgate":
        skip("BUNDLE: rtpengine 10.5 answers each m-line with a transport of its own")
    sink = VideoSink()

    def body(call, browser, phone):
        btag = "browser-" + uuid.uuid4().hex[:8]
        call.notes["tags"] = {"browser": btag, "phone": phone.tag}
        browser.init({"bundlePolicy": "max-bundle", "video": True})
        offer = browser.make_offer()
        assert re.search(r"(?m)^a=group:BUNDLE 0 1\s*$", offer), offer
        to_phone = call.ng.offer(call.call_id, btag, offer, call.flags["a-offer"])
        audio, video = to_phone.split("m=video", 1)
        assert "a=group:BUNDLE" not in to_phone, to_phone
        # The rig's phone answers telephone-event as 101, a type the
        # browser's offer gives to a video codec: Chrome then cannot tell
        # the streams apart by payload type, only by the mid extension the
        # relay adds.
        answer = phone.answer(audio)
        answer += sink.answer("m=video" + video)
        to_browser = call.ng.answer(call.call_id, btag, phone.tag, answer, call.flags["a-answer"])
        assert re.search(r"(?m)^a=group:BUNDLE 0 1\s*$", to_browser), to_browser
        ports = re.findall(r"(?m)^m=(?:audio|video) (\d+) ", to_browser)
        assert len(ports) == 2 and ports[0] == ports[1], to_browser
        browser.accept_answer(to_browser)
        check_audio(call, browser, phone, "call")
        got = sink.count(1.5)
        call.notes["video"] = got
        assert got["packets"] >= 10 and not got["unprotect_errors"] and got["pts"] == [sink.pt], \
            "phone's video port: %s%s" % (got, call.diag(browser))
        return btag
    try:
        run_call(relay, browser, "d-bundle", body)
    finally:
        sink.close()


@pytest.fixture
def kept_relay(work):
    """`srtpgate serve` keeping its calls in a Redis of the test's own
    (srtpgate only: the restart is its feature under test)."""
    path, why = rig.srtpgate_ready()
    if not path:
        skip(why)
    server = shutil.which("redis-server")
    if not server:
        skip("redis-server is not installed (Debian package redis-server)")
    d = os.path.join(work, "kept")
    os.makedirs(d, exist_ok=True)
    port = rig.harness.free_tcp_port()
    redis = rig.harness.Proc("redis", [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no"], os.path.join(d, "redis.log"))
    key_file = os.path.join(d, "redis.key")
    with open(key_file, "w") as f:
        f.write(os.urandom(32).hex())
    extra = ["--redis", "redis://127.0.0.1:%d/0" % port, "--redis-key-file", key_file,
             "--redis-namespace", "webrtc-kept"]
    proc = cfg = None
    deadline = time.monotonic() + 5
    while proc is None:
        try:
            proc, cfg = rig.harness.start_relay("srtpgate", d, path, extra=extra)
        except RuntimeError:
            if time.monotonic() > deadline:  # Redis did not come up
                redis.stop()
                raise
            time.sleep(0.1)
    proc.kind = "srtpgate"
    yield proc, cfg
    proc.stop()
    redis.stop()


def test_a_browser_call_survives_a_relay_crash(kept_relay, browser):
    """Chromium calls the phone; the relay is killed (SIGKILL) mid-call and
    started again with the same command line: the call resumes from Redis,
    and both hear each other again within a second, on the same ICE pair and
    DTLS keys (the browser stays connected: no new handshake)."""
    proc, cfg = kept_relay

    def body(call, browser, phone):
        tag = browser_calls_phone(call, browser, phone)
        check_audio(call, browser, phone, "before the crash")
        os.killpg(proc.p.pid, signal.SIGKILL)
        proc.p.wait(5)
        killed = time.monotonic()
        before = (browser.stats().get("inbound") or {}).get("packetsReceived") or 0
        mark = phone.mark()
        again = rig.harness.Proc("srtpgate", proc.argv, proc.log_path + ".restarted")
        proc.p, proc.log, proc.log_path = again.p, again.log, again.log_path
        rig.harness.wait_for_pong(proc, cfg["ng"])
        started = time.monotonic()
        # Media back: the phone hears the browser, the browser the phone.
        assert phone.wait_packets(mark, 5, timeout=5) >= 5, "the phone heard nothing after the restart%s" % (
            call.diag(browser))
        to_phone = time.monotonic() - started
        assert browser.wait_inbound(5, timeout=5) >= 5, "the browser heard nothing after the restart%s" % (
            call.diag(browser))
        to_browser = time.monotonic() - started
        after = (browser.stats().get("inbound") or {}).get("packetsReceived") or 0
        print("relay restarted %.2f s after the kill; media back %.2f s (to the phone) and %.2f s (to the "
              "browser) after the restart; the browser received %d packets meanwhile" % (
                  started - killed, to_phone, to_browser, after - before))
        call.notes["restart"] = {"to_phone_s": to_phone, "to_browser_s": to_browser}
        assert to_phone < 1.0, "media to the phone came back %.2f s after the restart" % to_phone
        check_audio(call, browser, phone, "after the restart")
        assert "call resumed from Redis" in proc.output(20000), proc.output(3000)
        return tag

    call = run_call((proc, cfg), browser, "a-browser-calls-phone-restart", body)
    assert call.ng.history[-1][1].get("result") == "ok", "delete: %r" % (call.ng.history[-1],)
