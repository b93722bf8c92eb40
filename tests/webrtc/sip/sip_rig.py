"""The processes of the SIP-over-WebSocket WebRTC rig (test_sip_webrtc.py,
test_two_networks.py): the relay (rtpengine-daemon, or srtpgate serve), a
logging NG proxy in front of it, Kamailio with kamailio-ws.cfg, a local HTTP
server for the JsSIP page, the browser, baresip phones driven over ctrl_tcp,
and the audio helpers.

Everything listens on 127.0.0.1, or on the addresses of a two-network rig of
namespaces (bench/netns/two-networks.sh) made for the test; every process is
started in its own process group and stopped by its PID; every wait is
bounded."""

import dataclasses
import glob
import http.server
import json
import math
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import harness  # noqa: E402
from harness import IP, Proc  # noqa: E402
from ng_stub import ng_request  # noqa: E402

import bundle_jssip  # noqa: E402
from netns import exec_in, inside  # noqa: E402
from ng_stub import bdecode, split_cookie, text  # noqa: E402

KAMAILIO_CFG = os.path.join(HERE, "kamailio-ws.cfg")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
KAMAILIO_MODULES = ("/usr/lib/x86_64-linux-gnu/kamailio/modules", "/usr/lib/kamailio/modules",
                    "/usr/local/lib64/kamailio/modules", "/usr/local/lib/kamailio/modules")
BROWSER_TONE = 1000.0  # Hz, the browser's fake microphone
PHONE_TONE = 440.0  # Hz, a baresip phone's ausine tone unless told otherwise
RTPENGINE_CONF = os.path.join(REPO, "bench", "rtpengine", "rtpengine.conf")


def wait_for(what, pred, timeout, interval=0.1):
    """Polls pred() until it returns something true; raises after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


# --- relays -----------------------------------------------------------------

def start_rtpengine(work):
    """Debian's rtpengine-daemon, userspace only, NG and media on 127.0.0.1,
    debug log (every NG message dumped) in work/rtpengine.log."""
    binary = shutil.which("rtpengine") or "/usr/bin/rtpengine"
    ng = (IP, harness.free_udp_port())
    lo, hi = harness.free_port_range(400)
    argv = [binary, "--config-file=%s" % RTPENGINE_CONF, "--config-section=rtpengine",
            "--foreground", "--log-stderr", "--log-level=7", "--table=-1",
            "--pidfile=%s" % os.path.join(work, "rtpengine.pid"),
            "--listen-ng=%s:%d" % ng, "--interface=%s" % IP,
            "--port-min=%d" % lo, "--port-max=%d" % hi,
            "--num-threads=2", "--delete-delay=0", "--timeout=60"]
    proc = Proc("rtpengine", argv, os.path.join(work, "rtpengine.log"))
    harness.wait_for_pong(proc, ng)
    return proc, ng


def start_srtpgate(work, at):
    """srtpgate serve placed as `at` says, with $SRTPGATE_WEBRTC_ARGS
    appended (more `serve` options for a manual run)."""
    extra = list(at.relay_args) + os.environ.get("SRTPGATE_WEBRTC_ARGS", "").split()
    proc, cfg = harness.start_relay("srtpgate", work, harness.srtpgate_path(), extra, interfaces=at.interfaces,
                                    netns=at.relay_ns, ip=at.relay_ip)
    return proc, cfg["ng"]


def relay_available(kind):
    """None if the relay can run here, else why not."""
    if kind == "rtpengine":
        if not (shutil.which("rtpengine") or os.access("/usr/bin/rtpengine", os.X_OK)):
            return "rtpengine is not installed (apt-get install --no-install-recommends rtpengine-daemon)"
        return None
    if kind == "srtpgate":
        path = harness.srtpgate_path()
        if not os.access(path, os.X_OK):
            return "%s not found (build it or set SRTPGATE_BIN)" % path
        if subprocess.run([path, "serve", "--help"], capture_output=True, timeout=10).returncode != 0:
            return "%s has no `serve` subcommand" % path
        return None
    return "unknown relay %r in WEBRTC_RELAYS (known: rtpengine, srtpgate)" % kind


def start_relay(kind, work, at):
    if kind == "rtpengine":
        assert at == Placement(), "rtpengine runs here on 127.0.0.1 only"
        return start_rtpengine(work)
    return start_srtpgate(work, at)


def ng_calls(ng):
    """Call-IDs the relay has now (NG `list`)."""
    r = ng_request(ng, {"command": "list", "limit": "100"}, timeout=2)
    assert r.get("result") == "ok", "NG list: %s" % r
    return list(r.get("calls") or [])


# --- Kamailio ---------------------------------------------------------------

def start_kamailio(work, ng, flags_to_ws=None, flags_to_udp=None, netns=None, ip=IP, defines=None):
    """Kamailio with kamailio-ws.cfg: SIP on UDP, SIP over WebSocket on TCP,
    on `ip` (in network namespace `netns`, which the calling thread is in),
    the rtpengine module pointed at ng; `defines` (name: string) sets more of
    the file's string defines. Returns (proc, sip addr, ws url)."""
    sip = (ip, harness.free_udp_port())
    ws = harness.free_tcp_port()
    rundir = os.path.join(work, "kamailio-run")
    os.makedirs(rundir, exist_ok=True)
    argv = [harness.kamailio_path(), "-f", KAMAILIO_CFG, "-DD", "-E", "-m", "64", "-M", "8",
            "-Y", rundir, "-P", os.path.join(rundir, "kamailio.pid"), "-w", rundir,
            "-A", "SIP_ADDR=%s" % sip[0], "-A", "SIP_PORT=%d" % sip[1], "-A", "WS_PORT=%d" % ws,
            "-A", 'RTPENGINE_SOCK="udp:%s:%d"' % ng]
    if flags_to_ws:
        argv += ["-A", 'RTPE_FLAGS_TO_WS="%s"' % flags_to_ws]
    if flags_to_udp:
        argv += ["-A", 'RTPE_FLAGS_TO_UDP="%s"' % flags_to_udp]
    for name, value in (defines or {}).items():
        argv += ["-A", '%s="%s"' % (name, value)]
    proc = Proc("kamailio", exec_in(netns, argv), os.path.join(work, "kamailio.log"))
    try:
        wait_for("kamailio to answer OPTIONS", lambda: harness.sip_options_ok(sip) or not proc.alive(), 15)
    except TimeoutError:
        pass
    if not proc.alive() or not harness.sip_options_ok(sip):
        why = proc.describe()
        proc.stop()
        raise RuntimeError("kamailio did not come up; " + why)
    return proc, sip, "ws://%s:%d" % (ip, ws)


# --- the page's web server --------------------------------------------------

class PageServer:
    """Serves phone.html, phone.js, capture-worklet.js and the JsSIP bundle
    on `ip` (in the calling thread's network namespace) from a thread of
    this process."""

    FILES = {"/phone.html": "text/html", "/phone.js": "text/javascript",
             "/capture-worklet.js": "text/javascript"}

    def __init__(self, ip=IP):
        jssip = bundle_jssip.bundle().encode()
        files = {path: (ctype, open(os.path.join(HERE, path[1:]), "rb").read())
                 for path, ctype in self.FILES.items()}
        files["/jssip.js"] = ("text/javascript", jssip)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                entry = files.get(self.path.split("?")[0])
                if not entry:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", entry[0])
                self.send_header("Content-Length", str(len(entry[1])))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(entry[1])

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer((ip, 0), Handler)
        self.origin = "http://%s:%d" % self.httpd.server_address
        self.url = self.origin + "/phone.html"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


# --- audio ------------------------------------------------------------------

def write_tone_wav(path, hz=1000.0, seconds=10, rate=48000, amplitude=0.5):
    """A mono 16-bit WAV of a whole number of cycles (so that it loops
    without a click): chromium's fake microphone."""
    n = int(rate * seconds)
    frames = struct.pack("<%dh" % n, *(int(32767 * amplitude * math.sin(2 * math.pi * hz * i / rate))
                                       for i in range(n)))
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return path


def read_wav(path):
    """(rate, first channel's samples) of a 16-bit WAV."""
    with wave.open(path) as w:
        rate, ch, n = w.getframerate(), w.getnchannels(), w.getnframes()
        data = w.readframes(n)
    x = struct.unpack("<%dh" % (len(data) // 2), data)
    return rate, list(x[::ch])


def block_shares(x, rate, hz, block=0.1):
    """[(share of hz, rms)] for consecutive blocks of `block` seconds."""
    n = int(rate * block)
    w = 2 * math.pi * hz / rate
    c = 2 * math.cos(w)
    out = []
    for b in range(0, len(x) - n + 1, n):
        s1 = s2 = e = 0.0
        for v in x[b:b + n]:
            s1, s2 = v + c * s1 - s2, s1
            e += v * v
        p = s1 * s1 + s2 * s2 - c * s1 * s2
        out.append((2 * p / (n * e) if e else 0.0, math.sqrt(e / n)))
    return out


def tone_share(x, rate, hz):
    """Energy share of hz over x, from 0.1 s blocks (robust to the phase jumps
    of packet loss concealment), and the RMS."""
    blocks = block_shares(x, rate, hz)
    if not blocks:
        return 0.0, 0.0
    n = int(rate * 0.1)
    e = sum(r * r * n for _, r in blocks)
    tone = sum(s * r * r * n for s, r in blocks)
    return (tone / e if e else 0.0), math.sqrt(e / (n * len(blocks)))


# --- baresip ----------------------------------------------------------------

BARESIP_MODULES = "/usr/lib/baresip/modules"


def baresip_codecs():
    """The audio codecs this baresip has, in order of preference."""
    have = []
    for mod, codec in (("opus", "opus/48000/2"), ("g711", "PCMU/8000/1"), ("g711", "PCMA/8000/1")):
        if os.path.exists(os.path.join(BARESIP_MODULES, mod + ".so")):
            have.append((mod, codec))
    return have


class Baresip:
    """One baresip phone: own config dir, SRTP (SDES) mandatory, the ausine
    tone source at `hz`, decoded audio recorded by sndfile, registered to
    Kamailio over UDP, auto-answering, driven through ctrl_tcp (netstring
    JSON commands, events read by a thread)."""

    def __init__(self, work, name, sip, hz):
        self.name, self.sip, self.hz = name, sip, hz
        self.home = os.path.join(work, "baresip-" + name)
        self.snd = os.path.join(self.home, "snd")
        os.makedirs(self.snd, exist_ok=True)
        self.ctrl = (IP, harness.free_tcp_port())
        port = harness.free_udp_port()
        codecs = baresip_codecs()
        mods = sorted({m for m, _ in codecs}) + ["srtp", "ausine", "aubridge", "sndfile"]
        lo, hi = harness.free_port_range(100)
        with open(os.path.join(self.home, "config"), "w") as f:
            f.write("\n".join([
                "poll_method epoll",
                "sip_listen %s:%d" % (IP, port),
                "sip_transports udp",
                "audio_source ausine,%d" % hz,
                "audio_player aubridge,play-%s" % name,
                "audio_alert aubridge,alert-%s" % name,
                "ausrc_srate 48000",
                "ausrc_channels 2",
                "rtp_ports %d-%d" % (lo, hi),
                "net_interface %s" % IP,
                "module_path %s" % BARESIP_MODULES,
            ] + ["module %s.so" % m for m in mods] + [
                "module_app account.so",
                "module_app menu.so",
                "module_app ctrl_tcp.so",
                "ctrl_tcp_listen %s:%d" % self.ctrl,
                "snd_path %s" % self.snd,
                "",
            ]))
        with open(os.path.join(self.home, "accounts"), "w") as f:
            f.write('<sip:%s@%s>;regint=600;outbound="sip:%s:%d";audio_codecs=%s;mediaenc=srtp-mand;answermode=auto\n'
                    % (name, IP, sip[0], sip[1], ",".join(c for _, c in codecs)))
        self.events, self.responses = [], {}
        self.lock = threading.Condition()
        self.proc = Proc("baresip-" + name, ["baresip", "-s", "-f", self.home],
                         os.path.join(work, "baresip-%s.log" % name))
        self.sock = None
        deadline = time.monotonic() + 10
        while self.sock is None:
            try:
                self.sock = socket.create_connection(self.ctrl, timeout=1)
            except OSError:
                if not self.proc.alive() or time.monotonic() > deadline:
                    out = self.proc.output()
                    self.proc.stop()
                    raise RuntimeError("baresip %s: no ctrl_tcp; log:\n%s" % (name, out))
                time.sleep(0.1)
        self.sock.settimeout(None)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.tokens = 0

    def _read(self):
        buf = b""
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data
            while True:
                colon = buf.find(b":")
                if colon < 0:
                    break
                n = int(buf[:colon])
                if len(buf) < colon + 1 + n + 1:
                    break
                msg = json.loads(buf[colon + 1:colon + 1 + n].decode("utf-8", "replace"))
                buf = buf[colon + 1 + n + 1:]
                with self.lock:
                    if msg.get("event"):
                        msg["t"] = time.monotonic()
                        self.events.append(msg)
                    elif msg.get("response"):
                        self.responses[msg.get("token")] = msg
                    self.lock.notify_all()

    def command(self, cmd, params=None, timeout=5):
        """Runs a menu command (dial, accept, hangup, transfer, ...) and
        returns its response dict."""
        self.tokens += 1
        token = "%s-%d" % (self.name, self.tokens)
        msg = {"command": cmd, "token": token}
        if params is not None:
            msg["params"] = params
        body = json.dumps(msg).encode()
        self.sock.sendall(b"%d:%s," % (len(body), body))
        with self.lock:
            ok = self.lock.wait_for(lambda: token in self.responses, timeout)
            if not ok:
                raise TimeoutError("baresip %s: no response to %s" % (self.name, cmd))
            return self.responses.pop(token)

    def wait_event(self, etype, timeout=10, since=0.0, pred=None):
        with self.lock:
            def find():
                return next((e for e in self.events if e.get("type") == etype and e["t"] >= since
                             and (pred is None or pred(e))), None)
            ok = self.lock.wait_for(find, timeout)
            if not ok:
                raise TimeoutError("baresip %s: no %s event in %.0f s; events: %s; log:\n%s"
                                   % (self.name, etype, timeout, [e.get("type") for e in self.events],
                                      self.proc.output(3000)))
            return find()

    def wait_registered(self, timeout=10):
        """Polls `reginfo` (the REGISTER_OK event may come before ctrl_tcp
        is connected) until the account shows a 200 OK binding."""
        def ok():
            data = self.command("reginfo").get("data") or ""
            return "OK" in data and data
        try:
            return wait_for("baresip %s to register" % self.name, ok, timeout, 0.2)
        except TimeoutError:
            raise TimeoutError("baresip %s did not register; log:\n%s" % (self.name, self.proc.output(3000)))

    def recordings(self):
        """Decoded-audio recordings (sndfile's *-dec.wav), oldest first."""
        return sorted(glob.glob(os.path.join(self.snd, "*-dec.wav")), key=os.path.getmtime)

    def stop(self):
        try:
            if self.sock:
                self.sock.close()
        except OSError:
            pass
        self.proc.stop()


# --- the whole rig ----------------------------------------------------------

def browser_missing():
    """Why the browser side of the rig (Kamailio with WebSocket, chromium
    through Playwright, JsSIP) cannot run here; None if it can."""
    if not harness.kamailio_path():
        return "kamailio is not installed (apt-get install kamailio)"
    if not any(os.path.exists(os.path.join(d, "websocket.so")) for d in KAMAILIO_MODULES):
        return "Kamailio's websocket module is missing (apt-get install kamailio-websocket-modules)"
    if not os.path.exists(CHROMIUM):
        return "Debian's chromium is not installed (scripts/deps.sh installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright (the Python package) is not installed in this interpreter"
    if not os.path.exists(os.path.join(HERE, "node_modules", "jssip", "lib", "JsSIP.js")):
        return "JsSIP is not installed: run `npm ci` in %s" % HERE
    return None


@dataclasses.dataclass
class Placement:
    """Where the parts of a Rig run: network namespaces (None: this one) and
    addresses. The default puts everything on 127.0.0.1 here."""
    relay_ns: str = None
    relay_ip: str = IP           # the relay's NG address
    interfaces: tuple = (IP,)    # its --interface values (srtpgate)
    relay_args: tuple = ()       # more `serve` options (srtpgate)
    proxy_ns: str = None         # Kamailio, the NG proxy, and this process's NG requests
    proxy_ip: str = IP           # Kamailio's SIP and WebSocket address
    browser_ns: str = None       # the browser and its page's web server
    browser_ip: str = IP
    defines: dict = dataclasses.field(default_factory=dict)  # kamailio-ws.cfg's string defines


class Rig:
    """The running stack of one relay kind, plus the browser page."""

    def __init__(self, kind, work, at=None):
        self.kind, self.work, self.at = kind, work, at or Placement()
        self.procs, self.phones = [], []
        self.pw = self.browser = self.server = self.page = None

    def start(self):
        at = self.at
        with inside(at.proxy_ns):
            relay, self.ng = start_relay(self.kind, self.work, at)
            self.relay = relay
            self.procs.append(relay)
            proxy, pcfg = harness.start_ng_proxy(self.work, self.ng)
            self.procs.append(proxy)
            self.ng_log = pcfg["ng_log"]
            self.kam, self.sip, self.ws = start_kamailio(self.work, pcfg["ng"], netns=at.proxy_ns, ip=at.proxy_ip,
                                                         defines=at.defines)
            self.procs.append(self.kam)
        wav = write_tone_wav(os.path.join(self.work, "tone-1k.wav"), BROWSER_TONE)
        from playwright.sync_api import sync_playwright
        # The page's server and the browser (Playwright's driver, and the
        # browser it starts) are made in the browser's namespace.
        with inside(at.browser_ns):
            self.server = PageServer(at.browser_ip)
            self.pw = sync_playwright().start()
            self.browser = self.pw.chromium.launch(executable_path=CHROMIUM, headless=True, timeout=30000, args=[
                "--no-sandbox",
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                # Looped (no %noloop): one WAV serves every call of the module.
                "--use-file-for-fake-audio-capture=%s" % wav,
                # Loopback candidates are left out of ICE gathering otherwise.
                "--allow-loopback-in-peer-connection",
                "--autoplay-policy=no-user-gesture-required",
                # getUserMedia needs a secure context: http:// is one on
                # 127.0.0.1 only, not on a namespace's address.
                "--unsafely-treat-insecure-origin-as-secure=%s" % self.server.origin,
            ])
        self.page = self.browser.new_page()
        self.page.set_default_timeout(15000)
        self.console = []
        self.page.on("console", lambda m: self.console.append(m.text[:300]))
        self.page.goto(self.server.url)
        self.page.evaluate("([url, aor]) => phone.register(url, aor, 8000)", [self.ws, "sip:web@%s" % self.sip[0]])

    def stop(self):
        for p in self.phones:
            p.stop()
        if self.browser:
            try:
                self.browser.close()
            except Exception:
                pass
        if self.pw:
            self.pw.stop()
        if self.server:
            self.server.stop()
        for p in reversed(self.procs):
            p.stop()

    # --- helpers for the tests ---

    def uri(self, user):
        return "sip:%s@%s:%d" % (user, self.sip[0], self.sip[1])

    def phone(self, name, hz=PHONE_TONE):
        p = Baresip(self.work, name, self.sip, hz)
        self.phones.append(p)
        p.wait_registered()
        return p

    def state(self):
        return self.page.evaluate("phone.state()")

    def wait_page_call(self, states=("confirmed",), timeout=15):
        try:
            return wait_for("the page's call to be %s" % "/".join(states),
                            lambda: (lambda s: s if s["call"] in states else None)(self.state()), timeout, 0.1)
        except TimeoutError:
            raise AssertionError("page call state %s, wanted %s; page events:\n%s\n%s"
                                 % (self.state()["call"], states, "\n".join(self.state()["events"]), self.logs()))

    def stats(self):
        return self.page.evaluate("phone.stats()")

    def wait_page_media(self, min_packets=25, timeout=10):
        """Waits until the browser has received min_packets RTP packets more
        than now (media flows through the relay)."""
        start = (self.stats().get("inbound") or {}).get("packetsReceived", 0)
        try:
            return wait_for("RTP at the browser",
                            lambda: (lambda s: s if (s.get("inbound") or {}).get("packetsReceived", 0)
                                     >= start + min_packets else None)(self.stats()), timeout, 0.1)
        except TimeoutError:
            raise AssertionError("the browser got no RTP: stats %s\n%s" % (self.stats(), self.logs()))

    def measure(self, hz, ms=1000):
        return self.page.evaluate("([f, ms]) => phone.measure(f, ms)", [hz, ms])

    def ng_calls(self):
        with inside(self.at.proxy_ns):
            return ng_calls(self.ng)

    def wait_no_calls(self, timeout=8):
        try:
            wait_for("the relay to have no call", lambda: not self.ng_calls(), timeout, 0.2)
        except TimeoutError:
            raise AssertionError("the relay still has calls %s\n%s" % (self.ng_calls(), self.logs()))

    def ng_transcript(self):
        """[(command, request dict, reply dict or None)] that Kamailio sent."""
        out = []
        for path in sorted(glob.glob(os.path.join(self.ng_log, "*.bin"))):
            if path.endswith(".reply.bin"):
                continue
            req = text(bdecode(split_cookie(open(path, "rb").read())[1]))
            rpath = path[:-4] + ".reply.bin"
            rep = text(bdecode(split_cookie(open(rpath, "rb").read())[1])) if os.path.exists(rpath) else None
            out.append((req.get("command"), req, rep))
        return out

    def logs(self, tail=4000):
        parts = ["page events:\n" + "\n".join(self.state()["events"])] if self.page else []
        parts += [p.describe() for p in self.procs]
        parts += ["baresip %s log:\n%s" % (p.name, p.proc.output(tail)) for p in self.phones]
        return "\n\n".join(parts)[-30000:]
