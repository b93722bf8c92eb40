"""A real SIP client with a wideband codec: baresip, offering only G.722
over SRTP (SDES, `mediaenc=srtp-mand`), calls a phone that has only PCMU,
through Kamailio and `srtpgate serve` (codec-transcode-PCMU
codec-mask-G722; the G.722 codec from the spandsp plugin). baresip plays a
440 Hz tone (its `ausine` source) and records what it decodes (its
`sndfile` module); the PCMU phone sends 1 kHz. Each side's audio is
checked by frequency: the PCMU phone hears 440 Hz, baresip's recording
holds 1 kHz.

    SRTPGATE_BIN=target/release/srtpgate .venv/bin/python -m pytest tests/e2e/test_baresip.py
"""

import glob
import os
import shutil
import struct
import subprocess
import threading
import time
import wave

import pytest

import harness
from audio import DECODE, tone_share
from conftest import Stack, skip, srtpgate_bin
from sipua import SipUA
from test_kamailio import wait_call_gone

FLAGS = ("replace-origin replace-session-connection ICE=remove RTP/SAVP "
         "codec-transcode-PCMU codec-mask-G722")


def spandsp_plugin(binary):
    """The spandsp plugin built beside the binary (or in its deps/)."""
    name = "libsrtpgate_plugin_spandsp.so"
    here = os.path.dirname(os.path.abspath(binary))
    for p in (os.path.join(here, name), os.path.join(here, "deps", name)):
        if os.path.isfile(p):
            return p
    return None


@pytest.fixture(scope="module")
def wideband(tmp_path_factory):
    if not harness.kamailio_path():
        skip("kamailio is not installed (apt-get install kamailio; it ships rtpengine.so)")
    if not shutil.which("baresip"):
        skip("baresip is not installed (apt-get install baresip-core)")
    binary = srtpgate_bin()
    plugin = spandsp_plugin(binary)
    if not plugin:
        skip("the spandsp codec plugin is not built beside %s (cargo build --release --workspace)" % binary)
    work = str(tmp_path_factory.mktemp("e2e-baresip"))
    plugins = os.path.join(work, "plugins")
    os.makedirs(plugins)
    shutil.copy(plugin, os.path.join(plugins, "spandsp.so"))
    relay, cfg = harness.start_relay("srtpgate", work, binary, ["--codec-plugin-dir", plugins])
    try:
        kam, sip = harness.start_kamailio(work, cfg["ng"], rtpe_flags=FLAGS)
    except Exception:
        relay.stop()
        raise
    yield Stack("srtpgate", relay, cfg, kam, sip), work
    kam.stop()
    relay.stop()


def baresip_config(home, sip, user, snd):
    """A baresip configuration directory: G.722 only, SRTP mandatory, a
    440 Hz source, the decoded audio recorded to `snd`, no sound card."""
    os.makedirs(home, exist_ok=True)
    port = harness.free_udp_port()
    mods = ["g722", "srtp", "ausine", "aubridge", "sndfile"]
    with open(os.path.join(home, "config"), "w") as f:
        f.write("\n".join([
            "poll_method epoll",
            "sip_listen 127.0.0.1:%d" % port,
            "sip_transports udp",
            "audio_source ausine,440",
            "audio_player aubridge,play",
            "audio_alert aubridge,alert",
            "ausrc_srate 48000",
            "ausrc_channels 2",
            "rtp_ports 42000-42999",
            "module_path /usr/lib/baresip/modules",
        ] + ["module %s.so" % m for m in mods] + [
            # Applications last: the account needs the codec and SRTP modules.
            "module_app account.so",
            "module_app menu.so",
            "snd_path %s" % snd,
            "",
        ]))
    with open(os.path.join(home, "accounts"), "w") as f:
        f.write('<sip:%s@127.0.0.1>;regint=0;outbound="sip:%s:%d";audio_codecs=G722/16000/1;mediaenc=srtp-mand\n'
                % (user, sip[0], sip[1]))
    return home


def read_wav(path):
    with wave.open(path) as w:
        rate, ch, n = w.getframerate(), w.getnchannels(), w.getnframes()
        data = w.readframes(n)
    x = struct.unpack("<%dh" % (len(data) // 2), data)
    return rate, list(x[::ch])


def goertzel_share(x, rate, hz):
    import math
    w = 2 * math.pi * hz / rate
    c = 2 * math.cos(w)
    s1 = s2 = 0.0
    for v in x:
        s1, s2 = v + c * s1 - s2, s1
    p = s1 * s1 + s2 * s2 - c * s1 * s2
    e = sum(v * v for v in x) or 1.0
    return 2 * p / (len(x) * e)


def test_baresip_g722_calls_a_pcmu_phone(wideband):
    stack, work = wideband
    snd = os.path.join(work, "baresip-audio")
    os.makedirs(snd, exist_ok=True)
    home = baresip_config(os.path.join(work, "baresip"), stack.sip, "carol", snd)
    alice = SipUA("alice-w", stack.sip, codecs=(0,))
    alice.register()
    answered = {}
    answerer = threading.Thread(target=lambda: answered.setdefault("d", alice.answer(timeout=15)))
    answerer.start()
    log = open(os.path.join(work, "baresip.log"), "w")
    bs = subprocess.Popen(["baresip", "-s", "-f", home, "-e", "/dial sip:alice-w@%s:%d" % stack.sip],
                          stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        answerer.join(20)
        d = answered.get("d")
        assert d is not None, "alice got no call from baresip; baresip log:\n%s" % open(log.name).read()[-3000:]
        # baresip offered G.722 only, over SRTP (its SIP trace is in the log).
        trace = open(log.name).read()
        invite = trace[trace.find("INVITE sip:"):]
        invite = invite[:invite.find("m=audio") + 200]
        m = [l for l in invite.splitlines() if l.startswith("m=audio")]
        assert m and m[0].split()[2] == "RTP/SAVP" and "a=crypto:" in invite, "baresip's offer:\n%s" % invite
        assert "rtpmap:9 G722/8000" in invite and "PCMU" not in invite, "baresip's offer:\n%s" % invite
        offered = [l for l in d.remote_sdp.lines if l.startswith("m=audio")]
        assert offered and offered[0].split()[3:] == ["101", "0"], "alice was offered %s" % offered
        alice.start_media()
        alice.media.send_tone(150, 0, 1000.0)
        time.sleep(0.5)
        # What alice heard from baresip: PCMU of the 440 Hz source.
        pcm = [DECODE[0](c) for s in sorted(alice.media.received) for c in alice.media.received[s][1]]
        pts = set(alice.media.pts.values())
        assert pts == {0}, "alice got payload types %s" % pts
        assert len(pcm) > 8000, "alice heard %d samples from baresip" % len(pcm)
        share, rms = tone_share(pcm[len(pcm) // 4:], 440.0)
        print("alice heard %.1f %% 440 Hz at RMS %.0f" % (share * 100, rms))
        assert share > 0.8 and rms > 300, "alice: %.0f %% 440 Hz at RMS %.0f" % (share * 100, rms)
        assert not alice.media.rx_errors, alice.media.rx_errors[:3]
        call_id = d.call_id
        assert alice.bye().status == 200
    finally:
        time.sleep(0.5)
        bs.terminate()
        try:
            bs.wait(5)
        except subprocess.TimeoutExpired:
            bs.kill()
        log.close()
        alice.close()
    wait_call_gone(stack, call_id)
    # What baresip decoded (G.722 at 16 kHz), as its sndfile module saved it.
    files = sorted(glob.glob(os.path.join(snd, "*-dec.wav")))
    assert files, "no recording in %s: %s" % (snd, os.listdir(snd))
    rate, x = read_wav(files[0])
    assert rate == 16000, "baresip decoded G.722 at %d Hz" % rate
    body = x[len(x) // 4: 3 * len(x) // 4]
    share = goertzel_share(body, rate, 1000.0)
    print("baresip heard %.1f %% 1 kHz (%d samples at %d Hz)" % (share * 100, len(x), rate))
    assert "transcoding G722/8000 (offerer) <-> PCMU/8000 (answerer)" in stack.relay.output(100000)
    assert share > 0.8, "baresip heard %.0f %% 1 kHz" % (share * 100)
