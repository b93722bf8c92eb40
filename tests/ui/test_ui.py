"""The management page (docs/MANAGEMENT.md) in a real browser: Debian's
chromium, headless, driven by Playwright (pointed at the system browser;
nothing downloads one), against `srtpgate serve` under load from
`srtpgate-bench loadgen` (2 000 calls at one packet a second per leg).

Checks: a wrong or missing credential is refused for the page, the socket
and the write actions; the table shows the calls; updates arrive within a
second; filtering finds one call among 2 000; ending a call from the page
removes it from the relay (NG `list` no longer has it) and from the page;
a leg's media controls (block media, play DTMF, play media) from the page
do what their NG commands do; a call whose phones send RTCP reports shows
its call quality per SSRC (MOS, jitter, loss, round trip, lowest MOS, the MOS
chart) in its detail.
Screenshots go to $UI_SCREENSHOTS (default target/ui-screenshots/).
"""
import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import wave

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from ng_stub import ng_request  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SRTPGATE_BIN", os.path.join(ROOT, "target", "release", "srtpgate"))
SHOTS = os.environ.get("UI_SCREENSHOTS", os.path.join(ROOT, "target", "ui-screenshots"))
TOKEN = "ui-test-token-0123456789"
PASSWORD = "open sesame"
CALLS = 2000


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, data=None, headers=None):
    """(status, headers, body) of one request; redirects are not followed."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=5) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def ws_status(url, headers):
    """The HTTP status a WebSocket upgrade gets (101 when accepted)."""
    from websockets.sync.client import connect
    from websockets.exceptions import InvalidStatus
    try:
        with connect(url, additional_headers=headers, open_timeout=5):
            return 101
    except InvalidStatus as e:
        return e.response.status_code


def start_relay(tmp, name, extra):
    ng, web = free_port(socket.SOCK_DGRAM), free_port()
    log = open(os.path.join(tmp, f"{name}.log"), "w")
    p = subprocess.Popen([BIN, "serve", "--listen-ng", f"127.0.0.1:{ng}", "--listen-http", f"127.0.0.1:{web}",
                          "--workers", "1", "--timeout", "120", "--log-level", "info", *extra],
                         stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{web}"
    for _ in range(100):
        try:
            if http(base + "/health")[0] == 200:
                break
        except OSError:
            pass
        if p.poll() is not None:
            break
        time.sleep(0.1)
    else:
        p.kill()
    if p.poll() is not None:
        pytest.fail(f"srtpgate serve did not start: {open(log.name).read()[-2000:]}")
    return p, ng, base


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def relay(tmp_path_factory):
    if not os.path.exists(BIN):
        pytest.skip(f"no srtpgate binary at {BIN} (cargo build --release first)")
    tmp = str(tmp_path_factory.mktemp("ui"))
    # A 5 s prompt for `play media` (silence, 8 kHz, 16-bit mono).
    os.makedirs(os.path.join(tmp, "media"))
    with wave.open(os.path.join(tmp, "media", "hold.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 8000 * 5)
    pw_hash = subprocess.run([BIN, "hash-password"], input=PASSWORD + "\n", capture_output=True, text=True,
                             check=True).stdout.strip()
    p, ng, base = start_relay(tmp, "relay", [
        "--port-min", "42000", "--port-max", "52000", "--recording-dir", os.path.join(tmp, "recordings"),
        "--media-dir", os.path.join(tmp, "media"),
        "--ui-token-sha256", hashlib.sha256(TOKEN.encode()).hexdigest(),
        "--ui-user", "ops", "--ui-password-hash", pw_hash])
    lg = subprocess.Popen([os.path.join(os.path.dirname(BIN), "srtpgate-bench"), "loadgen", "--ng", f"127.0.0.1:{ng}", "--calls", str(CALLS), "--ptime", "1000",
                           "--setup-rate", "1000", "--duration", "120", "--quiet"],
                          stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "loadgen.log"), "w"))
    try:
        # Every call set up.
        deadline = time.time() + 30
        while time.time() < deadline and len(ng_list(ng)) < CALLS:
            time.sleep(0.5)
        assert len(ng_list(ng)) == CALLS, "loadgen did not set up its calls"
        yield {"ng": ng, "base": base, "ws": base.replace("http:", "ws:") + "/ui/ws", "tmp": tmp}
    finally:
        stop(lg)
        stop(p)


def ng_list(ng):
    """Every Call-ID NG `list` gives, page by page."""
    ids, offset = [], 0
    while True:
        r = ng_request(("127.0.0.1", ng), {"command": "list", "offset": offset, "limit": 500})
        assert r["result"] == "ok", r
        ids += r["calls"]
        if "next offset" not in r:
            return ids
        offset = int(r["next offset"])


def test_a_missing_or_wrong_credential_is_refused(relay):
    base, ws = relay["base"], relay["ws"]
    # The page.
    assert http(base + "/ui/")[0] == 401
    assert http(base + "/ui/", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert http(base + "/ui/", headers={"Cookie": "srtpgate_session=" + "00" * 32})[0] == 401
    assert http(base + "/ui/", headers={"Authorization": "Bearer " + TOKEN})[0] == 200
    # The socket: no credential, a wrong one, another site's page with a right one.
    assert ws_status(ws, {}) == 401
    assert ws_status(ws, {"Authorization": "Bearer wrong"}) == 401
    assert ws_status(ws, {"Authorization": "Bearer " + TOKEN, "Origin": "http://evil.example"}) == 403
    assert ws_status(ws, {"Authorization": "Bearer " + TOKEN}) == 101
    # Logins: a wrong password, a wrong token, another site's form; then a right one.
    form = lambda **f: urllib.parse.urlencode(f).encode()
    assert http(base + "/ui/login", form(user="ops", password="wrong"))[0] == 401
    assert http(base + "/ui/login", form(token="wrong"))[0] == 401
    status, _, _ = http(base + "/ui/login", form(user="ops", password=PASSWORD), {"Origin": "http://evil.example"})
    assert status == 403
    status, headers, _ = http(base + "/ui/login", form(user="ops", password=PASSWORD))
    assert status == 303 and "srtpgate_session=" in headers["Set-Cookie"]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    cookie = headers["Set-Cookie"].split(";")[0]
    assert http(base + "/ui/", headers={"Cookie": cookie})[0] == 200
    metrics = http(base + "/metrics")[2].decode()
    assert "srtpgate_ui_login_failures_total 2" in metrics


def test_write_actions_need_a_credential(tmp_path):
    """Open read-only access: a page watches without a credential, and every
    write action it sends is refused; the relay is unchanged."""
    from websockets.sync.client import connect
    p, ng, base = start_relay(str(tmp_path), "ro", ["--port-min", "53000", "--port-max", "53100",
                                                  "--ui-read-only-open"])
    try:
        with connect(base.replace("http:", "ws:") + "/ui/ws", open_timeout=5) as ws:
            inform = json.loads(ws.recv(timeout=5))
            assert inform["type"] == "inform" and inform["read_only"] is True
            for i, edit in enumerate([{"entry": "relay", "drain": True},
                                      {"entry": "relay", "log_level": "debug"},
                                      {"entry": "call", "id": "x", "action": "end"},
                                      {"entry": "leg", "id": "x", "tag": "t", "direction": "inactive"},
                                      {"entry": "leg", "id": "x", "tag": "t", "media": "block-media"}]):
                ws.send(json.dumps({"type": "edit", "ref": 100 + i, **edit}))
                while True:
                    m = json.loads(ws.recv(timeout=5))
                    if m.get("ref") == 100 + i:
                        break
                assert m["type"] == "error" and "read-only" in m["message"], m
            # Reading is allowed.
            ws.send(json.dumps({"type": "edit", "ref": 1, "entry": "view", "limit": 10}))
            while (m := json.loads(ws.recv(timeout=5))).get("ref") != 1:
                pass
            assert m["type"] == "inform", m
        assert http(base + "/health")[0] == 200, "not draining"
    finally:
        stop(p)


def test_updates_are_coalesced_and_arrive_within_a_second(relay):
    from websockets.sync.client import connect
    with connect(relay["ws"], additional_headers={"Authorization": "Bearer " + TOKEN}, open_timeout=5) as ws:
        assert json.loads(ws.recv(timeout=5))["type"] == "inform"
        ws.send(json.dumps({"type": "edit", "ref": 1, "entry": "view", "limit": 20, "sort": "call_id"}))
        summaries, rows, start = [], set(), time.time()
        while time.time() - start < 3:
            m = json.loads(ws.recv(timeout=2))
            if m.get("entry") == "summary":
                summaries.append(time.time())
                assert m["data"]["calls"] == CALLS and m["data"]["matching"] == CALLS
                # The delay bound's drops: counted, none on an idle relay.
                assert m["data"]["stale"] == 0 and m["data"]["stale_per_s"] == 0, m["data"]
            elif m.get("entry") == "call":
                rows.add(m["id"])
        gaps = [b - a for a, b in zip(summaries, summaries[1:])]
        assert len(summaries) >= 4 and max(gaps) < 1.0, gaps
        # Only the page's 20 rows were ever sent, not 2 000.
        assert len(rows) == 20, len(rows)


def test_the_page_shows_filters_and_ends_calls(relay):
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.fail("Debian's chromium is not installed (scripts/deps.sh installs it)")
    os.makedirs(SHOTS, exist_ok=True)
    base = relay["base"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        # bypass_csp: Playwright evaluates the wait conditions as strings, which
        # the page's policy (no eval) forbids; the page itself needs none.
        page = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        # Without a session the page is the login form (401); log in.
        r = page.goto(base + "/ui/")
        assert r.status == 401
        page.fill("input[name=user]", "ops")
        page.fill("input[name=password]", PASSWORD)
        page.click("form#login [type=submit]")
        page.wait_for_url(base + "/ui/")
        # (The browser logs the 401 of the login form as a failed load.)
        errors.clear()
        # The table shows the calls.
        try:
            page.wait_for_function(f"document.querySelector('#summary-calls')?.textContent.trim() === '{CALLS}'",
                                   timeout=10000)
        except Exception:
            page.screenshot(path=os.path.join(SHOTS, "failed-calls.png"))
            pytest.fail(f"calls shown: {page.locator('#summary-calls').inner_text()!r}, status "
                        f"{page.locator('#status').inner_text()!r}, messages {page.locator('#messages').inner_text()!r}")
        page.wait_for_selector("#calls tbody tr[data-id]", timeout=10000)
        assert page.locator("#calls tbody tr[data-id]").count() == 50
        page.screenshot(path=os.path.join(SHOTS, "calls.png"))
        # Updates: the first row's cells change (age, packets) as the samples
        # come (every 0.5 s; the socket test bounds their gaps to a second;
        # here the browser shares two cores with the relay and 2 000 calls).
        first = page.locator("#calls tbody tr[data-id]").first
        before = first.inner_text()
        page.wait_for_function("(b) => document.querySelector('#calls tbody tr[data-id]').innerText !== b",
                               arg=before, timeout=3000)
        # Filtering finds one call among 2 000.
        # A Call-ID that is not part of another one (the filter finds text).
        ids = ng_list(relay["ng"])
        target = next(i for i in ids[len(ids) // 2:] if not any(j != i and i in j for j in ids))
        page.fill("#filter", target)
        page.wait_for_function("(id) => { const r = document.querySelectorAll('#calls tbody tr[data-id]');"
                               " return r.length === 1 && r[0].dataset.id === id; }", arg=target, timeout=10000)
        page.wait_for_function("document.querySelector('#summary-matching').textContent.trim() === '1'",
                               timeout=10000)
        page.screenshot(path=os.path.join(SHOTS, "filtered.png"))
        # The detail view of that call.
        page.locator(f"#calls tbody tr[data-id='{target}'] td").first.click()
        page.wait_for_selector("#detail", state="visible", timeout=10000)
        page.wait_for_function("(id) => document.querySelector('#detail-id')?.textContent.includes(id)",
                               arg=target, timeout=10000)
        page.screenshot(path=os.path.join(SHOTS, "detail.png"))
        page.click("#detail-close")
        # Ending it from the page removes it from the relay and the page.
        page.once("dialog", lambda d: d.accept())
        page.click(f"#calls tbody tr[data-id='{target}'] button.end")
        page.wait_for_function("(id) => !document.querySelector(`#calls tbody tr[data-id='${id}']`)",
                               arg=target, timeout=10000)
        deadline = time.time() + 5
        while target in (left := ng_list(relay["ng"])) and time.time() < deadline:
            time.sleep(0.2)
        assert target not in left and len(left) == CALLS - 1
        page.fill("#filter", "")
        page.wait_for_function(f"document.querySelector('#summary-calls').textContent.trim() === '{CALLS - 1}'",
                               timeout=10000)
        page.screenshot(path=os.path.join(SHOTS, "after-end.png"))
        browser.close()
        assert not errors, errors
    metrics = http(base + "/metrics")[2].decode()
    assert 'srtpgate_calls_ended_total{cause="operator"} 1' in metrics


def test_a_leg_put_on_hold_gets_no_media(relay):
    """`edit` of a leg's direction: inactive holds the leg both ways (the RTP
    it sends is dropped as `blocked`, and so is every RTP packet the other
    party sends to it; RTCP goes on, as RFC 3264 has it for an inactive
    stream); sendrecv resumes."""
    from websockets.sync.client import connect
    target = ng_list(relay["ng"])[7]

    def sides(ws, tag):
        """The held leg and the other party's leg, from one update."""
        while True:
            m = json.loads(ws.recv(timeout=5))
            if m.get("entry") == "detail" and m.get("type") == "update":
                for st in m["data"]["streams"]:
                    found = {side["tag"] == tag: side for side in st["sides"]}
                    if True in found and False in found:
                        return found[True], found[False]

    def rtp_from(other, since):
        """RTP the other party sent since `since` (accepted), and how much of it was blocked."""
        return (other["rtp_received"] - since["rtp_received"],
                other["drops"]["blocked"] - since["drops"]["blocked"])

    with connect(relay["ws"], additional_headers={"Authorization": "Bearer " + TOKEN}, open_timeout=5) as ws:
        ws.send(json.dumps({"type": "edit", "ref": 1, "entry": "view", "filter": target, "limit": 1}))
        ws.send(json.dumps({"type": "edit", "ref": 2, "entry": "detail", "id": target}))
        while (m := json.loads(ws.recv(timeout=5))).get("entry") != "detail":
            pass
        tag = m["data"]["streams"][0]["sides"][1]["tag"]
        ws.send(json.dumps({"type": "edit", "ref": 3, "entry": "leg", "id": target, "tag": tag,
                            "direction": "inactive"}))
        deadline = time.time() + 6
        while (s := sides(ws, tag))[0]["drops"]["blocked"] < 1:
            assert time.time() < deadline, s
        assert s[0]["direction"] == "inactive"
        # From the next update on (the round in which the hold took effect may
        # still have sent what it checked before), every RTP packet of the
        # other party is blocked: none reaches the held leg.
        held, other0 = sides(ws, tag)
        until = time.time() + 2.5
        while time.time() < until:
            s = sides(ws, tag)
        # A packet between its count as received and as dropped (the same
        # round) shows in the next update.
        if rtp_from(s[1], other0)[0] != rtp_from(s[1], other0)[1]:
            s = sides(ws, tag)
        sent, blocked = rtp_from(s[1], other0)
        assert sent >= 1 and blocked == sent, (sent, blocked, s)
        assert s[0]["drops"]["blocked"] >= held["drops"]["blocked"] + 1, s
        ws.send(json.dumps({"type": "edit", "ref": 4, "entry": "leg", "id": target, "tag": tag,
                            "direction": "sendrecv"}))
        deadline = time.time() + 6
        other1 = s[1]
        # Resumed: the other party's RTP reaches the leg again.
        while True:
            s = sides(ws, tag)
            sent, blocked = rtp_from(s[1], other1)
            if sent > blocked:
                break
            assert time.time() < deadline, s
        assert s[0]["direction"] == "sendrecv"


def test_a_call_is_recorded_paused_and_stopped_from_the_page(relay):
    """`edit` of a call's recording: start, pause, stop, as NG's commands
    do; the detail shows its state; the stop leaves the call's pcap."""
    from websockets.sync.client import connect
    target = ng_list(relay["ng"])[9]

    def answer(ws, ref):
        while True:
            m = json.loads(ws.recv(timeout=5))
            if m.get("ref") == ref:
                assert m["type"] == "inform", m
                return m["message"]

    def recording(ws, want):
        deadline = time.time() + 6
        while time.time() < deadline:
            m = json.loads(ws.recv(timeout=5))
            if m.get("entry") == "detail" and m.get("type") == "update":
                assert m["data"]["recordable"] is True
                r = m["data"].get("recording")
                if (r or {}).get("state") == want:
                    return r
        pytest.fail(f"the detail never showed the recording {want}")

    with connect(relay["ws"], additional_headers={"Authorization": "Bearer " + TOKEN}, open_timeout=5) as ws:
        ws.send(json.dumps({"type": "edit", "ref": 1, "entry": "detail", "id": target}))
        ws.send(json.dumps({"type": "edit", "ref": 2, "entry": "call", "id": target, "action": "start-recording"}))
        assert answer(ws, 2) == f"call '{target}' is recording"
        pcap = recording(ws, "recording")["file"]
        ws.send(json.dumps({"type": "edit", "ref": 3, "entry": "call", "id": target, "action": "pause-recording"}))
        assert answer(ws, 3) == f"call '{target}''s recording is paused"
        recording(ws, "paused")
        ws.send(json.dumps({"type": "edit", "ref": 4, "entry": "call", "id": target, "action": "stop-recording"}))
        assert answer(ws, 4) == f"call '{target}' is not recording"
    # The recorder's thread closes the pcap, then writes the metadata beside it.
    meta = pcap[:-len(".pcap")] + ".json"
    deadline = time.time() + 5
    while not (os.path.exists(pcap) and os.path.exists(meta)) and time.time() < deadline:
        time.sleep(0.05)
    assert os.path.exists(pcap) and os.path.exists(meta), pcap


def test_a_legs_media_is_blocked_and_played_to_from_the_page(relay):
    """A leg's media controls in the detail: block media takes effect (NG
    `query` counts what the leg sends as dropped, `blocked`) and the detail
    says so; unblock undoes it; play DTMF from the leg and play media to it
    are done (the detail shows the prompt playing until it is stopped)."""
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.fail("Debian's chromium is not installed (scripts/deps.sh installs it)")
    os.makedirs(SHOTS, exist_ok=True)
    ng, base = relay["ng"], relay["base"]
    target = ng_list(ng)[11]

    def blocked(tag):
        r = ng_request(("127.0.0.1", ng), {"command": "query", "call-id": target})
        assert r["result"] == "ok", r
        return int(r["tags"][tag]["medias"][0]["streams"][0]["stats"]["drops"]["blocked"])

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
        page.goto(base + "/ui/")
        page.fill("input[name=token]", TOKEN)
        page.click("form#login [type=submit]")
        page.wait_for_url(base + "/ui/")
        page.fill("#filter", target)
        row = page.locator(f"#calls tbody tr[data-id='{target}'] td").first
        row.wait_for(timeout=10000)
        row.click()
        media = page.locator("#detail-legs-body tr.media").first
        media.wait_for(timeout=10000)
        tag = media.get_attribute("data-tag")
        state = media.locator(".m-state")
        before = blocked(tag)

        def done(text):
            page.locator("#messages li.msg.info", has_text=text).first.wait_for(timeout=5000)

        # Block media: the detail says so, and what the leg sends is dropped.
        media.locator("button[data-media='block-media']").click()
        done(f"leg '{tag}' of call '{target}': block media")
        state.locator("[data-state='blocked']").wait_for(timeout=5000)
        deadline = time.time() + 6
        while blocked(tag) <= before:
            assert time.time() < deadline, "no packet of the blocked leg was dropped"
            time.sleep(0.2)
        page.screenshot(path=os.path.join(SHOTS, "media-blocked.png"))
        # Unblocked: no more drops.
        media.locator("button[data-media='unblock-media']").click()
        done("unblock media")
        state.locator("[data-state='blocked']").wait_for(state="detached", timeout=5000)
        time.sleep(1.5)
        after = blocked(tag)
        time.sleep(2.5)
        assert blocked(tag) == after
        # A digit from the leg (the other one hears it).
        media.locator("select.dtmf-code").select_option("5")
        media.locator("button[data-media='play-dtmf']").click()
        done(f"leg '{tag}' of call '{target}': play DTMF 5")
        # A prompt played to the leg, then stopped.
        media.locator("input.media-file").fill("hold.wav")
        media.locator("button[data-media='play-media']").click()
        done("play media 'hold.wav' (5000 ms)")
        state.locator("[data-state='playing']").wait_for(timeout=5000)
        media.locator("button[data-media='stop-media']").click()
        done("stop media")
        state.locator("[data-state='playing']").wait_for(state="detached", timeout=5000)
        errors = page.locator("#messages li.msg.error").all_inner_texts()
        browser.close()
    assert not errors, errors


# --- call quality -------------------------------------------------------------

class Phone:
    """A plain RTP endpoint (G.711 µ-law every 20 ms) that sends RTCP as a
    phone does: a sender report with a report block about what it received
    from the other phone (its LSR/DLSR echo the other's last sender report,
    so the relay can time both legs) and an SDES CNAME. It plays a network
    leg of LEG_S: its DLSR is that much short, so each leg's round trip is
    LEG_S plus loopback."""
    LEG_S = 0.010
    JITTER = 40  # reported, in RTP timestamp units: 5 ms at 8 kHz

    def __init__(self, ssrc, first_report_s, bad_report=None):
        self.ssrc = ssrc
        # The report (by number) that says 10 % of an interval was lost.
        self.bad_report = bad_report
        self.lost = 0
        self.rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.rtp.bind(("127.0.0.1", 0))
        self.rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.rtcp.bind(("127.0.0.1", 0))
        for s in (self.rtp, self.rtcp):
            s.setblocking(False)
        self.first_report_s = first_report_s
        self.relay_rtp = self.relay_rtcp = None
        self.seq, self.sent = 1000, 0
        self.peer = None       # the other phone's SSRC, from its RTP
        self.max_seq = None
        self.last_sr = None    # (NTP middle 32 bits, when it arrived)
        self.reports = 0

    def sdp(self):
        port = self.rtp.getsockname()[1]
        return ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                f"m=audio {port} RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
                f"a=rtcp:{self.rtcp.getsockname()[1]}\r\na=sendrecv\r\n")

    def relay_from(self, sdp):
        """Where the relay is for this phone, from the SDP it was given."""
        ip = re.search(r"^c=IN IP4 (\S+)", sdp, re.M).group(1)
        port = int(re.search(r"^m=audio (\d+) ", sdp, re.M).group(1))
        rtcp = re.search(r"^a=rtcp:(\d+)", sdp, re.M)
        self.relay_rtp = (ip, port)
        self.relay_rtcp = (ip, int(rtcp.group(1)) if rtcp else port + 1)

    def send_rtp(self, t):
        ts = int(t * 8000) & 0xFFFFFFFF
        self.rtp.sendto(struct.pack("!BBHII", 0x80, 0, self.seq & 0xFFFF, ts, self.ssrc) + b"\xff" * 160,
                        self.relay_rtp)
        self.seq += 1
        self.sent += 1

    def read(self):
        while True:
            try:
                p = self.rtp.recv(2048)
            except BlockingIOError:
                break
            if len(p) >= 12:
                seq, = struct.unpack("!H", p[2:4])
                self.peer, = struct.unpack("!I", p[8:12])
                self.max_seq = seq if self.max_seq is None else max(self.max_seq, seq)
        while True:
            try:
                p = self.rtcp.recv(2048)
            except BlockingIOError:
                break
            if len(p) >= 28 and p[1] == 200:
                msw, lsw = struct.unpack("!II", p[8:16])
                self.last_sr = (((msw << 16) | (lsw >> 16)) & 0xFFFFFFFF, time.monotonic())

    def report(self, t):
        """SR (+ one report block once it receives the other phone) and SDES."""
        now = time.time()
        ntp = now + 2_208_988_800
        msw, lsw = int(ntp) & 0xFFFFFFFF, int((ntp % 1) * 2 ** 32)
        blocks = 1 if self.peer is not None else 0
        p = struct.pack("!BBHIIIIII", 0x80 | blocks, 200, 6 + 6 * blocks, self.ssrc, msw, lsw,
                        int(t * 8000) & 0xFFFFFFFF, self.sent, self.sent * 160)
        if blocks:
            lsr, dlsr = 0, 0
            if self.last_sr is not None:
                held = max(0.0, time.monotonic() - self.last_sr[1] - self.LEG_S)
                lsr, dlsr = self.last_sr[0], max(1, int(held * 65536))
            fraction = 0
            if self.reports == self.bad_report:
                fraction, self.lost = 26, self.lost + 6  # 26/256: 10 %
            p += struct.pack("!IIIIII", self.peer, fraction << 24 | self.lost, self.max_seq, self.JITTER, lsr, dlsr)
        p += struct.pack("!BBHI", 0x81, 202, 3, self.ssrc) + b"\x01\x05phone\x00"
        self.rtcp.sendto(p, self.relay_rtcp)
        self.reports += 1

    def close(self):
        self.rtp.close()
        self.rtcp.close()


def run_phones(phones, seconds, stop):
    """Both phones: RTP every 20 ms, a report every 1.2 s from each (the
    first at their first_report_s)."""
    t0 = time.monotonic()
    next_rtp = 0.0
    due = [ph.first_report_s for ph in phones]
    while (t := time.monotonic() - t0) < seconds and not stop.is_set():
        for ph in phones:
            ph.read()
        if t >= next_rtp:
            for ph in phones:
                ph.send_rtp(t)
            next_rtp += 0.02
        for i, ph in enumerate(phones):
            if t >= due[i]:
                ph.report(t)
                due[i] += 1.2
        time.sleep(0.002)


def test_the_call_detail_shows_call_quality_per_ssrc(tmp_path):
    """Two plain RTP phones send sender reports whose blocks echo each
    other's (a round trip on each leg, so a MOS under the default CQ model);
    one of the callee's reports tells of 10 % lost. The call's detail shows, per SSRC, the leg that sends it, source RTCP, the
    average MOS (the one NG `query` gives), jitter, loss, round trip, the
    lowest MOS, and a MOS chart that grows to several points while the page
    is open; each leg's counters have the relay's own jitter."""
    from playwright.sync_api import sync_playwright
    if not os.path.exists(BIN):
        pytest.skip(f"no srtpgate binary at {BIN} (cargo build --release first)")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.fail("Debian's chromium is not installed (scripts/deps.sh installs it)")
    os.makedirs(SHOTS, exist_ok=True)
    p, ng, base = start_relay(str(tmp_path), "quality", [
        "--port-min", "54000", "--port-max", "54100",
        "--ui-token-sha256", hashlib.sha256(TOKEN.encode()).hexdigest()])
    call_id, from_tag, to_tag = "quality-call", "qa", "qb"
    # b's fourth report (at 4.5 s) tells of a bad interval: its MOS dips.
    a, b = Phone(0x0A0A0A0A, 0.3), Phone(0x0B0B0B0B, 0.9, bad_report=3)
    stop_phones = threading.Event()
    phones = threading.Thread(target=run_phones, args=([a, b], 9.0, stop_phones), daemon=True)
    try:
        r = ng_request(("127.0.0.1", ng), {"command": "offer", "call-id": call_id, "from-tag": from_tag,
                                           "sdp": a.sdp()})
        assert r["result"] == "ok", r
        b.relay_from(r["sdp"])
        r = ng_request(("127.0.0.1", ng), {"command": "answer", "call-id": call_id, "from-tag": from_tag,
                                           "to-tag": to_tag, "sdp": b.sdp()})
        assert r["result"] == "ok", r
        a.relay_from(r["sdp"])
        phones.start()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(base + "/ui/")
            page.fill("input[name=token]", TOKEN)
            page.click("form#login [type=submit]")
            page.wait_for_url(base + "/ui/")
            page.locator(f"#calls tbody tr[data-id='{call_id}'] td").first.click()
            page.wait_for_selector("#detail", state="visible", timeout=10000)
            card = {ph.ssrc: page.locator(f"#detail-quality .q-ssrc[data-ssrc='{ph.ssrc}']") for ph in (a, b)}
            # Live: each SSRC's chart grows to 2 points with a MOS or more while
            # the page is open (the first MOS comes with the second report).
            for ph in (a, b):
                card[ph.ssrc].locator("svg.sparkline").wait_for(timeout=10000)
            page.wait_for_function(
                "() => [...document.querySelectorAll('#detail-quality svg.sparkline')]"
                ".filter(s => Number(s.dataset.points) >= 2).length === 2", timeout=15000)
            phones.join(15)
            assert not phones.is_alive() and a.reports >= 6 and b.reports >= 6, (a.reports, b.reports)
            # The book no longer changes: the page settles on what NG query says.
            q = ng_request(("127.0.0.1", ng), {"command": "query", "call-id": call_id})
            assert q["result"] == "ok", q
            for ph, tag in ((a, from_tag), (b, to_tag)):
                entry = q["SSRC"][str(ph.ssrc)]
                want = f"{entry['average MOS']['MOS'] / 10:.1f}"
                c = card[ph.ssrc]
                mos = c.locator(".q-v[data-k='mos']")
                try:
                    page.wait_for_function("([el, want]) => el.textContent === want", arg=[mos.element_handle(), want],
                                           timeout=5000)
                except Exception:
                    page.screenshot(path=os.path.join(SHOTS, "failed-quality.png"))
                    pytest.fail(f"SSRC {ph.ssrc}: page MOS {mos.inner_text()!r}, NG query {want} ({entry})")
                assert 1.0 <= float(want) <= 4.5, entry
                assert c.get_attribute("data-tag") == tag
                assert tag in c.locator(".q-who").inner_text()
                assert c.locator(".q-source").inner_text() == "RTCP"
                avg = entry["average MOS"]
                assert c.locator(".q-v[data-k='jitter']").inner_text() == f"{avg['jitter']} ms" == "5 ms"
                assert c.locator(".q-v[data-k='loss']").inner_text() == f"{avg['packet loss']} %"
                assert c.locator(".q-v[data-k='cumulative']").inner_text() == f"{ph.lost} packets"
                rtt = c.locator(".q-v[data-k='rtt']").inner_text()
                assert re.fullmatch(r"\d+(\.\d)? ms", rtt) and float(rtt.split()[0]) >= 2 * Phone.LEG_S * 1000, rtt
                lowest = entry["lowest MOS"]
                assert (lowest["MOS"] < avg["MOS"]) == (ph is b), entry
                at = time.strftime("%H:%M:%S", time.localtime(lowest["reported at"]))
                assert c.locator(".q-v[data-k='lowest']").inner_text() == f"{lowest['MOS'] / 10:.1f} at {at}"
                # Every kept sample is a point of the chart: the first, of the
                # first report, has no MOS (no round trip yet).
                points = int(c.locator("svg.sparkline").get_attribute("data-points"))
                assert points >= 3 and points == entry["average MOS"]["samples"], (points, entry)
                assert c.locator("svg.sparkline polyline").count() >= 1
            # Each leg's counters: the relay's own jitter of what it receives.
            jitter = page.locator("#detail-streams tr[data-field='jitter_us'] td")
            assert jitter.count() == 2
            for text in jitter.all_inner_texts():
                assert re.fullmatch(r"\d+(\.\d)? ms", text), text
            page.locator("#detail-quality").scroll_into_view_if_needed()
            page.screenshot(path=os.path.join(SHOTS, "quality.png"))
            browser.close()
        assert not errors, errors
    finally:
        stop_phones.set()
        if phones.is_alive():
            phones.join(5)
        a.close()
        b.close()
        stop(p)
