#!/usr/bin/env python3
"""Speech quality of transcoded calls, srtpgate against rtpengine in the same run.

For each relay, codec pair and packet-loss level, `srtpgate-bench loadgen quality`
places one call whose two endpoints send the same speech at once (Debian's
asterisk-core-sounds-en-wav prompts, ~10 s), with loss and jitter on what
they send; each endpoint decodes what it receives as a phone would. PESQ
(ITU-T P.862, PyPI `pesq`) scores each endpoint's audio against the speech
it was sent: narrowband when a leg is narrowband, wideband (16 kHz) for
G.722 <-> Opus. Also recorded: the delay through the relay (p50, p99), the
packets held longer than a packet time, and the RTP clock seen on the wire.

    python3 bench/quality/run.py --bin target/release/srtpgate \
        --plugins target/release --out docs/results/quality.json

Needs: rtpengine-daemon, asterisk-core-sounds-en-wav, a venv with pesq,
numpy and scipy (the script says how to make one).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import wave

try:
    import numpy as np
    from pesq import pesq
    from scipy.signal import resample_poly
except ImportError:
    sys.exit("needs pesq, numpy and scipy: python3 -m venv /tmp/qvenv && /tmp/qvenv/bin/pip install pesq numpy scipy")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOUNDS = "/usr/share/asterisk/sounds/en"
PROMPTS = ["demo-congrats", "conf-adminmenu", "vm-intro"]
PAIRS = [("PCMU", "PCMA"), ("PCMA", "G722"), ("PCMA", "opus"), ("PCMA", "G729"), ("G722", "opus")]
WIDEBAND = {"G722", "opus"}


def read(path):
    with wave.open(path) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)


def write(path, rate, x):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(x, dtype=np.int16).tobytes())


def speech(tmp):
    """~10 s of speech at 8 kHz (prompts with 300 ms pauses), and at 16 kHz."""
    parts = []
    for p in PROMPTS:
        rate, x = read(os.path.join(SOUNDS, p + ".wav"))
        assert rate == 8000
        parts += [x, np.zeros(2400, dtype=np.int16)]
    x = np.concatenate(parts)[: 8000 * 10]
    nb, wb = os.path.join(tmp, "speech8k.wav"), os.path.join(tmp, "speech16k.wav")
    write(nb, 8000, x)
    write(wb, 16000, np.clip(resample_poly(x.astype(np.float64), 2, 1), -32768, 32767))
    return {8000: nb, 16000: wb}


def score(ref_path, deg_path, rate):
    _, ref = read(ref_path)
    _, deg = read(deg_path)
    deg = deg[: len(ref)] if len(deg) >= len(ref) else np.pad(deg, (0, len(ref) - len(deg)))
    try:
        return round(float(pesq(rate, ref.astype(np.float64), deg.astype(np.float64), "wb" if rate == 16000 else "nb")), 3)
    except Exception as e:  # PESQ refuses audio it cannot align (e.g. silence)
        print(f"  PESQ failed on {deg_path}: {e}", file=sys.stderr)
        return None


def start_srtpgate(args, port):
    cmd = [args.bin, "serve", "--listen-ng", f"127.0.0.1:{port}", "--interface", "127.0.0.1",
           "--port-min", "30000", "--port-max", "30999", "--workers", "1", "--codec-plugin-dir", args.plugins]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return p, lambda: (p.terminate(), p.wait(10))


def start_rtpengine(port):
    env = dict(os.environ, NG_PORT=str(port), MEDIA_THREADS="1", PORT_MIN="31000", PORT_MAX="31999")
    subprocess.run([os.path.join(ROOT, "bench/rtpengine/start.sh")], env=env, check=True, stdout=subprocess.DEVNULL)
    return None, lambda: subprocess.run([os.path.join(ROOT, "bench/rtpengine/stop.sh")], env=env, check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/srtpgate"))
    ap.add_argument("--plugins", default=os.path.join(ROOT, "target/release"), help="directory with the plugin .so files")
    ap.add_argument("--relays", default="srtpgate,rtpengine")
    ap.add_argument("--losses", default="0,1,5")
    ap.add_argument("--jitter", type=int, default=10, help="ms of jitter (uniform extra delay) with loss")
    ap.add_argument("--pairs", default=",".join(f"{a}:{b}" for a, b in PAIRS))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="srtpgate-quality-")
    plugdir = os.path.join(tmp, "plugins")
    os.makedirs(plugdir)
    for lib in ("spandsp", "opus", "g729"):
        src = os.path.join(args.plugins, f"libsrtpgate_plugin_{lib}.so")
        os.symlink(os.path.abspath(src), os.path.join(plugdir, f"{lib}.so"))
    args.plugins = plugdir
    files = speech(tmp)
    pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
    results = []
    for relay in args.relays.split(","):
        port = 2400 if relay == "srtpgate" else 2401
        _, stop = start_srtpgate(args, port) if relay == "srtpgate" else start_rtpengine(port)
        try:
            for a, b in pairs:
                rate = 16000 if a in WIDEBAND and b in WIDEBAND else 8000
                for loss in [float(x) for x in args.losses.split(",")]:
                    out = os.path.join(tmp, f"{relay}-{a}-{b}-{loss}")
                    cmd = [os.path.join(os.path.dirname(args.bin), "srtpgate-bench"), "loadgen", "quality", "--ng", f"127.0.0.1:{port}", "--codec", a, "--transcode-to", b,
                           "--speech", files[rate], "--phone-rate", str(rate), "--loss", str(loss),
                           "--jitter", str(args.jitter if loss > 0 else 0), "--seed", str(args.seed),
                           "--codec-plugin-dir", plugdir, "--out", out]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    if r.returncode != 0:
                        print(f"{relay} {a}->{b} loss {loss}: {r.stderr.strip()}", file=sys.stderr)
                        results.append({"relay": relay, "pair": f"{a}<->{b}", "loss_pct": loss, "error": r.stderr.strip()})
                        continue
                    q = json.load(open(os.path.join(out, "quality.json")))
                    for side, s in q["sides"].items():
                        s["pesq"] = score(files[rate], os.path.join(out, s["wav"]), rate)
                        s["pesq_mode"] = "wb" if rate == 16000 else "nb"
                    results.append({"relay": relay, "pair": f"{a}<->{b}", "loss_pct": loss, **q})
                    c, e = q["sides"]["callee"], q["sides"]["caller"]
                    print(f"{relay:9} {a:>5}<->{b:<5} loss {loss:>3}%: PESQ callee {c['pesq']} caller {e['pesq']}  "
                          f"delay p50 {c['delay_ms_p50']:.2f}/{e['delay_ms_p50']:.2f} ms  held {c['held_over_ptime']}/{e['held_over_ptime']}  "
                          f"clock {c['wire_clock_hz']:.0f}/{e['wire_clock_hz']:.0f}", flush=True)
        finally:
            stop()
    meta = {"date": time.strftime("%Y-%m-%d"), "host": os.uname().nodename, "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": "),
            "speech": [p + ".wav" for p in PROMPTS], "jitter_ms": args.jitter, "seed": args.seed}
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
