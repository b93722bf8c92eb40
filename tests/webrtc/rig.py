"""The WebRTC bridging rig: a relay (Debian's rtpengine, or `srtpgate serve`),
an NG client that speaks the way Kamailio's rtpengine module does, an SDES
"phone" (tests/e2e/sipua.py's Media) and a headless chromium running
page.html. Used by test_webrtc.py; also runnable by hand:

    .venv/bin/python tests/webrtc/rig.py            # one call each way, prints the SDPs

Everything binds 127.0.0.1. Chromium never gathers loopback candidates, so
its ICE candidates carry the host's other addresses; packets to and from
them are still delivered locally (nothing leaves the machine).
"""

import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.join(os.path.dirname(HERE), "e2e")
if E2E not in sys.path:
    sys.path.insert(0, E2E)

import harness  # noqa: E402
from audio import DECODE, ENCODE, tone, tone_share  # noqa: E402
from ng_stub import ng_request  # noqa: E402
from sipua import SUITES, Media, Sdp, crypto_line, make_sdp, new_key  # noqa: E402

IP = harness.IP
# The phone's address: 127.0.0.1 too by default; another loopback address
# (WEBRTC_PHONE_IP=127.0.0.2) makes the relay's address rewriting visible.
PHONE_IP = os.environ.get("WEBRTC_PHONE_IP", IP)
PAGE = os.path.join(HERE, "page.html")
BROWSER_HZ = 1000   # the browser's microphone (the WAV file)
PHONE_HZ = 440      # what the phone sends


# --- tools -------------------------------------------------------------------

def chromium_path():
    for p in (os.environ.get("CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
              "/usr/bin/chromium"):
        if p and os.access(p, os.X_OK):
            return p
    return None


def rtpengine_path():
    return shutil.which("rtpengine") or next(
        (p for p in ("/usr/bin/rtpengine", "/usr/sbin/rtpengine") if os.access(p, os.X_OK)), None)


def srtpgate_ready():
    """(path, None) for a `srtpgate` with `serve`, else (None, why not)."""
    path = harness.srtpgate_path()
    if not os.access(path, os.X_OK):
        return None, "%s not found (build it or set SRTPGATE_BIN)" % path
    try:
        ok = subprocess.run([path, "serve", "--help"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "%s serve --help: %s" % (path, e)
    return (path, None) if ok else (None, "%s has no `serve` subcommand" % path)


def write_tone_wav(path, hz=BROWSER_HZ, rate=48000, seconds=10, amplitude=0.5):
    """Mono 16-bit WAV of a sine. Chromium loops the file with a short gap
    (a phase jump) at each turn, hence 10 s rather than one period."""
    period = rate // math.gcd(rate, hz)   # samples in a whole number of cycles
    one = b"".join(struct.pack("<h", int(round(amplitude * 32767 * math.sin(2 * math.pi * hz * i / rate))))
                   for i in range(period))
    frames = one * (rate * seconds // period)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return path


# --- relays --------------------------------------------------------------------

def start_rtpengine(workdir, log_level=6):
    """Debian's rtpengine, userspace only (--table=-1: no kernel module), no
    config file, on 127.0.0.1 with its own NG port and port range, logging to
    workdir/rtpengine.log. Returns (harness.Proc, cfg)."""
    exe = rtpengine_path()
    cfg = {"ng": (IP, harness.free_udp_port()), "log": os.path.join(workdir, "rtpengine.log")}
    cfg["port_min"], cfg["port_max"] = harness.free_port_range()
    argv = [exe, "--config-file=none", "--foreground", "--log-stderr", "--log-level=%d" % log_level,
            "--table=-1", "--pidfile=" + os.path.join(workdir, "rtpengine.pid"),
            "--interface=" + IP, "--listen-ng=%s:%d" % cfg["ng"],
            "--port-min=%d" % cfg["port_min"], "--port-max=%d" % cfg["port_max"],
            "--num-threads=2", "--timeout=60", "--delete-delay=0"]
    proc = harness.Proc("rtpengine", argv, cfg["log"])
    harness.wait_for_pong(proc, cfg["ng"])
    return proc, cfg


def start_relay(kind, workdir):
    """kind "rtpengine" or "srtpgate" (tests/e2e/harness.start_relay with
    $SRTPGATE_BIN). Returns (proc, cfg) with cfg["ng"] the NG address."""
    if kind == "rtpengine":
        return start_rtpengine(workdir)
    if kind == "srtpgate":
        path, why = srtpgate_ready()
        if not path:
            raise RuntimeError(why)
        return harness.start_relay("srtpgate", workdir, path)
    raise ValueError("unknown relay %r" % kind)


# --- NG ------------------------------------------------------------------------

TRANSPORTS = ("RTP/AVP", "RTP/SAVP", "RTP/AVPF", "RTP/SAVPF")


def kamailio_flags(flags):
    """What Kamailio's rtpengine module makes of an rtpengine_offer()/answer()
    flags string (modules/rtpengine/rtpengine.c parse_flags): `replace-X` ->
    "replace" list, `rtcp-mux-X` -> "rtcp-mux" list, a bare profile ->
    "transport-protocol", `key=value` -> a dictionary entry, anything else ->
    the "flags" list. Returns (dict entries, list entries) to merge in order."""
    kv, flag_list, replace, mux, proto = {}, [], [], [], None
    for tok in flags.split():
        if tok.startswith("replace-"):
            replace.append(tok[len("replace-"):])
        elif tok.startswith("rtcp-mux-"):
            mux.append(tok[len("rtcp-mux-"):])
        elif tok in TRANSPORTS:
            proto = tok
        elif "=" in tok:
            k, v = tok.split("=", 1)
            kv[k] = v
        else:
            flag_list.append(tok)
    tail = {}
    if flag_list:
        tail["flags"] = flag_list
    if replace:
        tail["replace"] = replace
    if proto:
        tail["transport-protocol"] = proto
    if mux:
        tail["rtcp-mux"] = mux
    return kv, tail


class Ng:
    """NG client for one relay; keeps every (request, reply) for the record."""

    def __init__(self, addr, timeout=3.0):
        self.addr, self.timeout = addr, timeout
        self.history = []

    def request(self, msg):
        reply = ng_request(self.addr, msg, timeout=self.timeout)
        self.history.append((msg, reply))
        return reply

    def _sdp_command(self, command, call_id, from_tag, to_tag, sdp, flags):
        """Builds the dictionary in the order Kamailio's module does: sdp,
        key=value flags, flags/replace/transport-protocol/rtcp-mux, call-id,
        received-from, from-tag, to-tag, command."""
        kv, tail = kamailio_flags(flags)
        msg = {"sdp": sdp}
        msg.update(kv)
        msg.update(tail)
        msg["call-id"] = call_id
        msg["received-from"] = ["IP4", IP]
        msg["from-tag"] = from_tag
        if to_tag:
            msg["to-tag"] = to_tag
        msg["command"] = command
        reply = self.request(msg)
        if reply.get("result") != "ok" or "sdp" not in reply:
            raise RuntimeError("NG %s failed: %r" % (command, reply))
        return reply["sdp"]

    def offer(self, call_id, from_tag, sdp, flags, to_tag=None):
        return self._sdp_command("offer", call_id, from_tag, to_tag, sdp, flags)

    def answer(self, call_id, from_tag, to_tag, sdp, flags):
        return self._sdp_command("answer", call_id, from_tag, to_tag, sdp, flags)

    def delete(self, call_id, from_tag):
        return self.request({"call-id": call_id, "received-from": ["IP4", IP], "from-tag": from_tag,
                             "command": "delete"})


# --- the SDES phone --------------------------------------------------------------

def parse_sdp(sdp):
    """sipua.Sdp, after restoring the base64 padding of a=crypto keys:
    rtpengine leaves the trailing '=' out (RFC 4568 6.1 is ambiguous; its
    SDES=pad flag puts them back), which sipua.Sdp's b64decode rejects."""
    def pad(m):
        return m.group(1) + m.group(2) + "=" * (-len(m.group(2)) % 4)
    return Sdp(re.sub(r"(inline:)([A-Za-z0-9+/]+)=*", pad, sdp))


def srtp_session(suite_key, inbound):
    import pylibsrtp
    suite, key = suite_key
    profile = {"AES_CM_128_HMAC_SHA1_80": pylibsrtp.Policy.SRTP_PROFILE_AES128_CM_SHA1_80,
               "AES_CM_128_HMAC_SHA1_32": pylibsrtp.Policy.SRTP_PROFILE_AES128_CM_SHA1_32}[suite]
    direction = pylibsrtp.Policy.SSRC_ANY_INBOUND if inbound else pylibsrtp.Policy.SSRC_ANY_OUTBOUND
    return pylibsrtp.Session(policy=pylibsrtp.Policy(key=key, ssrc_type=direction, srtp_profile=profile))


class Phone:
    """A SIP phone's media end: RTP/SAVP with SDES keys, PCMU only, sends a
    tone continuously (until stop()) and records what it decodes."""

    def __init__(self, name="phone", hz=PHONE_HZ):
        self.name, self.hz = name, hz
        self.tag = name + "-" + uuid.uuid4().hex[:8]
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        sock.bind((PHONE_IP, 0))
        self.port = sock.getsockname()[1]
        self.media = Media(sock, name)
        self.sess_id = int(time.time())
        self.version = 0
        self.tx = self.rx = None
        self.sending = threading.Event()     # cleared: hold (send nothing)
        self.sender = None
        self.sent = 0

    def _sdp(self, crypto_lines, direction):
        sdp = make_sdp(self.name, PHONE_IP, self.port, crypto_lines, codecs=(0,)).decode()
        sdp = re.sub(r"(?m)^o=[^\r\n]*", "o=%s %d %d IN IP4 %s" % (self.name, self.sess_id, self.version, PHONE_IP),
                     sdp)
        self.version += 1
        return sdp.replace("a=sendrecv", "a=" + direction)

    def offer(self, direction="sendrecv"):
        """An SDES offer (AES_CM_128_HMAC_SHA1_80 and _32). A re-offer keeps
        the keys of the first one."""
        if not hasattr(self, "offered"):
            self.offered = {1: ("AES_CM_128_HMAC_SHA1_80", new_key("AES_CM_128_HMAC_SHA1_80")),
                            2: ("AES_CM_128_HMAC_SHA1_32", new_key("AES_CM_128_HMAC_SHA1_32"))}
        return self._sdp([crypto_line(t, s, k) for t, (s, k) in self.offered.items()], direction)

    def take_answer(self, sdp):
        """The relay's answer to our offer: its crypto line (same tag) keys
        what we receive; we send with our offered key of that tag."""
        remote = parse_sdp(sdp)
        if not remote.crypto:
            raise AssertionError("answer to the phone has no a=crypto:\n" + sdp)
        tag, suite, key = remote.crypto[0][:3]
        self._start(self.offered[tag], (suite, key), remote)
        return remote

    def answer(self, sdp, direction="sendrecv"):
        """Answers the relay's offer with the first crypto suite we support."""
        remote = parse_sdp(sdp)
        choice = next(((t, s, k) for t, s, k, _, _ in remote.crypto if s in SUITES), None)
        if choice is None:
            raise AssertionError("offer to the phone has no usable a=crypto:\n" + sdp)
        tag, suite, peer_key = choice
        mine = (suite, new_key(suite))
        out = self._sdp([crypto_line(tag, suite, mine[1])], direction)
        self._start(mine, (suite, peer_key), remote)
        return out

    def _start(self, tx, rx, remote):
        dest = (remote.addr, remote.port)
        if self.tx is None:
            self.tx, self.rx = tx, rx
            self.media.start(tx[0], tx[1], rx[0], rx[1], dest)
            self.sending.set()
            self.sender = threading.Thread(target=self._send_loop, daemon=True)
            self.sender.start()
        else:
            # A re-negotiation: keep the SRTP sessions (their replay and
            # rollover state) unless the key changed.
            self.media.dest = dest
            if rx != self.rx:
                self.rx, self.media.rx = rx, srtp_session(rx, inbound=True)
            if tx != self.tx:
                self.tx, self.media.tx = tx, srtp_session(tx, inbound=False)

    def _send_loop(self, pt=0):
        """20 ms PCMU packets of self.hz while self.sending is set; one
        continuous RTP stream (seq, timestamp) across holds."""
        ts = struct.unpack("!I", os.urandom(4))[0]
        seq = struct.unpack("!H", os.urandom(2))[0]
        t0, i = time.monotonic(), 0
        while not self.media.stop.is_set():
            if self.sending.is_set():
                payload = bytes(ENCODE[pt](x) for x in tone(self.hz, 160 * i, 160))
                hdr = struct.pack("!BBHII", 0x80, (0x80 if self.sent == 0 else 0) | pt, seq & 0xFFFF,
                                  (ts + 160 * i) & 0xFFFFFFFF, self.media.ssrc)
                try:
                    self.media.sock.sendto(self.media.tx.protect(hdr + payload), self.media.dest)
                except OSError:
                    return
                seq += 1
                self.sent += 1
            i += 1
            time.sleep(max(0.0, t0 + i * 0.02 - time.monotonic()))

    def mark(self):
        """A point in what we received, for heard(since=...)."""
        return len(self.media.received)

    def heard(self, since=0, hz=BROWSER_HZ):
        """(share of the energy at hz, RMS, packets) of the PCMU received
        after `since` (arrival order: dict insertion order)."""
        payloads = list(self.media.received.items())[since:]
        pts = {self.media.pts.get(s) for s, _ in payloads}
        pcm = [DECODE[0](c) for _, (_, p) in payloads for c in p]
        # 80 ms blocks, shares weighted by energy: chromium's fake microphone
        # does not loop its file seamlessly (a phase jump at each turn).
        num = den = 0.0
        for i in range(0, len(pcm) - 639, 640):
            share, rms = tone_share(pcm[i:i + 640], hz)
            num += share * rms * rms
            den += rms * rms
        share = num / den if den else 0.0
        rms = math.sqrt(sum(x * x for x in pcm) / len(pcm)) if pcm else 0.0
        return {"share": share, "rms": rms, "packets": len(payloads), "pts": sorted(p for p in pts if p is not None),
                "unprotect_errors": len(self.media.rx_errors)}

    def wait_packets(self, since, count, timeout):
        deadline = time.monotonic() + timeout
        while self.mark() - since < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.mark() - since

    def close(self):
        self.media.close()
        if self.sender:
            self.sender.join(1)


# --- the browser -------------------------------------------------------------------

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--use-fake-ui-for-media-stream",          # grant getUserMedia without a prompt
    "--use-fake-device-for-media-stream",      # fake capture devices ...
    # "--use-file-for-fake-audio-capture=..."  ... whose microphone plays our WAV (added below)
    "--autoplay-policy=no-user-gesture-required",  # AudioContext and <audio> run without a click
    "--disable-features=WebRtcHideLocalIpsWithMdns",  # real host candidates, not .local names
    "--allow-loopback-in-peer-connection",     # gather 127.0.0.1 candidates too
]


class Browser:
    """Headless chromium (Debian's, through Playwright) on page.html."""

    def __init__(self, wav, exe=None, timeout_ms=15000):
        from playwright.sync_api import sync_playwright
        self.http = serve_page()
        self.pw = sync_playwright().start()
        try:
            self.browser = self.pw.chromium.launch(
                executable_path=exe or chromium_path(), headless=True, timeout=20000,
                args=CHROMIUM_ARGS + ["--use-file-for-fake-audio-capture=" + wav])
            self.page = self.browser.new_page(bypass_csp=True)
            self.page.set_default_timeout(timeout_ms)
            self.console = []
            self.page.on("console", lambda m: self.console.append("%s: %s" % (m.type, m.text)))
            self.page.on("pageerror", lambda e: self.console.append("pageerror: %s" % e))
            # Over http://127.0.0.1 (a secure context, like file://) rather
            # than file://, whose opaque origin keeps the AudioWorklet module
            # (a blob: URL) from loading.
            self.page.goto("http://%s:%d/page.html" % self.http.server_address)
            self.page.wait_for_function("typeof init === 'function'")
        except Exception:
            self.close()
            raise

    def js(self, expr, arg=None):
        """Evaluates `expr` (a function of one argument, or an expression)."""
        return self.page.evaluate(expr, arg)

    def init(self, opts=None):
        return self.js("o => init(o)", opts or {})

    def make_offer(self):
        return self.js("() => makeOffer()")

    def accept_answer(self, sdp):
        return self.js("sdp => acceptAnswer(sdp)", sdp)

    def accept_offer(self, sdp):
        return self.js("sdp => acceptOffer(sdp)", sdp)

    def wait_connected(self, ms=10000):
        return self.js("ms => waitConnected(ms)", ms)

    def measure(self, ms=1000, freqs=(PHONE_HZ, BROWSER_HZ)):
        return self.js("([ms, f]) => measure(ms, f)", [ms, list(freqs)])

    def stats(self):
        return self.js("() => stats()")

    def wait_inbound(self, packets, timeout=5.0):
        """Waits until getStats() counts `packets` more received packets than now."""
        start = (self.stats().get("inbound") or {}).get("packetsReceived") or 0
        deadline = time.monotonic() + timeout
        while True:
            now = (self.stats().get("inbound") or {}).get("packetsReceived") or 0
            if now - start >= packets or time.monotonic() > deadline:
                return now - start
            time.sleep(0.1)

    def hangup(self):
        try:
            return self.js("() => hangup()")
        except Exception:
            return None

    def close(self):
        try:
            if hasattr(self, "browser"):
                self.browser.close()
        finally:
            self.pw.stop()
            self.http.shutdown()
            self.http.server_close()


def serve_page():
    """A thread serving page.html (only) on 127.0.0.1; .shutdown() stops it."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/page.html":
                # (no favicon: 204 rather than a 404 in the console log)
                self.send_response(204 if self.path == "/favicon.ico" else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = open(PAGE, "rb").read()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer((IP, 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


# --- by hand ---------------------------------------------------------------------------

if __name__ == "__main__":
    # One call each way through the first relay of $WEBRTC_RELAYS; prints
    # every NG request and reply (SDPs included).
    import importlib.util
    import tempfile
    sys.modules.setdefault("srtpgate_webrtc_rig", sys.modules[__name__])
    spec = importlib.util.spec_from_file_location("test_webrtc", os.path.join(HERE, "test_webrtc.py"))
    t = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t)
    work = tempfile.mkdtemp(prefix="webrtc-rig.")
    kind = os.environ.get("WEBRTC_RELAYS", "srtpgate").split(",")[0]
    proc, cfg = start_relay(kind, work)
    proc.kind = kind
    browser = Browser(write_tone_wav(os.path.join(work, "tone.wav")))
    try:
        for flow, fn in (("a-browser-calls-phone", t.browser_calls_phone),
                         ("b-phone-calls-browser", t.phone_calls_browser)):
            def body(call, browser, phone, fn=fn):
                fn(call, browser, phone)
                t.check_audio(call, browser, phone, "call")
            call = t.run_call((proc, cfg), browser, flow, body)
            for req, rep in call.ng.history:
                for what, d in (("request", req), ("reply", rep)):
                    print("=== %s %s %s" % (flow, req["command"], what))
                    print(json.dumps({k: v for k, v in d.items() if k != "sdp"}))
                    if "sdp" in d:
                        print(d["sdp"].replace("\r\n", "\n"))
    finally:
        browser.close()
        proc.stop()
    print("work dir:", work)
