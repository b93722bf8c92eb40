#!/usr/bin/env python3
"""16 kHz G.722 concealment variants outside the relay, scored with PESQ.

Takes the loss patterns that `run.py` recorded (`lost_packets` of the
G722<->opus callee) from its JSON results, decodes the same speech with
each variant (`plugins/spandsp/examples/g722_plc_lab.rs`), G.722 alone and
then Opus-coded at 16 kHz as the relay sends it, and prints wideband PESQ,
the mean over the runs' seeds per loss level. Run from the repository root
after `cargo build --release --workspace && cargo build --release --workspace
--examples` (the first puts the plugins' `.so` files where the examples load
them; building the examples alone can leave an older copy there).

    python3 bench/quality/lab.py docs/results/quality-g722-opus-neural-seed*-devbox-2026-11-25.json

With `--direction opus` it does the same for the other direction's losses
(the Opus endpoint's packets) with `examples/opus_loss.rs`: Opus decoded at
16 kHz by the plugin as shipped, or without libopus's models with FEC,
libopus's classic concealment, or srtpgate's neural one (no G.722 or Opus
stage after it).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from multiprocessing import Pool

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from run import read, score as pesq_wb, speech, write  # noqa: E402  (the quality runs' speech and scoring)

VARIANTS = [
    "plugin",
    "plugin:state=nolook",
    "classic",
    "classic:state=resync",
    "neural:ola=5",
    "neural:ola=5:state=resync",
    "neural:ola=10:state=resync",
    "neural:ola=10:state=sync",
    "truth:state=resync",
]


def score(job):
    ref_path, path = job
    return path, pesq_wb(ref_path, path, 16000)


def fix_one(job):
    """PESQ of a variant's audio with samples lo..hi (one loss's gap and
    what follows it) taken from the lossless decode."""
    ref_path, deg, truth, lo, hi, path = job
    _, y = read(deg)
    _, t = read(truth)
    z = y.copy()
    hi = min(hi, len(z), len(t))
    z[lo:hi] = t[lo:hi]
    write(path, 16000, z)
    return pesq_wb(ref_path, path, 16000)


def attribute(args, ref, out, patterns):
    """The losses that cost the first variant most, per 5 % pattern."""
    variant = args.variants.split(";")[0]
    _, x = read(ref)
    x = x.astype(np.float64)
    level = lambda a, b: 20 * np.log10(np.sqrt(np.mean(x[max(a, 0):b] ** 2)) + 1)
    after = 2240  # 140 ms: the ADPCM decoder's output is off that long after a loss
    for name, lost in patterns:
        if not name.endswith("_5"):
            continue
        deg, truth = os.path.join(out, f"{variant}@{name}.wav"), os.path.join(out, f"truth:state=resync@{name}.wav")
        gaps, lost = [], sorted(set(lost))
        for k in lost:
            if k - 1 not in lost:
                gaps.append([k, k + 1])
            else:
                gaps[-1][1] = k + 1
        # Up to the next loss, so that no loss is credited with another's.
        ends = [min(b * 320 + after, n[0] * 320) for (a, b), n in zip(gaps, gaps[1:] + [[1 << 30]])]
        jobs = [(ref, deg, truth, a * 320, e, os.path.join(out, f"fix-{name}-{a}.wav")) for (a, b), e in zip(gaps, ends)]
        with Pool(os.cpu_count()) as p:
            gains = p.map(fix_one, jobs)
        base = pesq_wb(ref, deg, 16000)
        print(f"{name}: {variant} {base:.3f}")
        for g, (a, b) in sorted(zip(gains, gaps), key=lambda q: -q[0])[: args.attribute]:
            print(f"  packets {a}-{b - 1}: {g - base:+.3f} if concealed perfectly; speech level before "
                  f"{level(a * 320 - 640, a * 320):.0f} dB, in the gap {level(a * 320, b * 320):.0f}, "
                  f"after {level(b * 320, b * 320 + 640):.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="run.py JSON files with a G722<->opus pair")
    ap.add_argument("--variants", default=";".join(VARIANTS))
    ap.add_argument("--example", help="the example binary (default: by --direction)")
    ap.add_argument("--direction", choices=["g722", "opus"], default="g722",
                    help="g722: G.722 -> Opus losses, g722_plc_lab; opus: Opus -> G.722 losses, opus_loss")
    ap.add_argument("--attribute", type=int, metavar="N",
                    help="instead of the table: for each 5 %% pattern, the N losses whose audio costs the first "
                         "variant most (G.722 alone; its gap and the 140 ms after it, up to the next loss, replaced "
                         "by what a decoder that lost nothing plays), with the speech's level before, in and after the gap")
    args = ap.parse_args()
    if args.attribute:
        if args.direction != "g722":
            ap.error("--attribute needs the lossless decode of g722_plc_lab (--direction g722)")
        args.variants = args.variants.split(";")[0] + ";truth:state=resync"
    opus = args.direction == "opus"
    if opus and args.variants == ";".join(VARIANTS):
        args.variants = "plugin;fec;plc;neural"
    args.example = args.example or f"target/release/examples/{'opus_loss' if opus else 'g722_plc_lab'}"
    tmp = tempfile.mkdtemp(prefix="srtpgate-g722-lab-")
    patterns = []
    for f in args.results:
        d = json.load(open(f))
        for r in d["results"] if isinstance(d, dict) else d:
            if r.get("relay") == "srtpgate" and r.get("pair") == "G722<->opus" and r.get("loss_pct", 0) > 0:
                # What the callee lost came from the G.722 caller; what the
                # caller lost, from the Opus callee.
                lost = r["sides"]["caller" if opus else "callee"]["lost_packets"]
                patterns.append((f"s{r['seed']}_{int(r['loss_pct'])}", lost))
    if not patterns:
        sys.exit("no G722<->opus run with loss in the files given")
    with open(os.path.join(tmp, "patterns"), "w") as f:
        for name, lost in patterns:
            f.write(f"{name} {','.join(map(str, lost))}\n")
    ref = speech(tmp)[16000]
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    cmd = [args.example, ref, out, os.path.join(tmp, "patterns"), args.variants]
    subprocess.run(cmd if opus else cmd + ["opus"], check=True)
    if args.attribute:
        return attribute(args, ref, out, patterns)
    files = sorted(os.path.join(out, f) for f in os.listdir(out))
    with Pool(os.cpu_count()) as p:
        scores = p.map(score, [(ref, f) for f in files])
    table = collections.defaultdict(list)
    for path, s in scores:
        parts = os.path.basename(path)[:-4].split("@")
        chain = parts[2] if len(parts) > 2 else "g722"
        loss = parts[1].split("_")[1]
        table[(parts[0], loss, chain)].append(s)
    losses = sorted({k[1] for k in table}, key=int)
    cols = [(l, c) for l in losses for c in (("g722",) if opus else ("g722", "opus"))]
    label = {"g722": "Opus at 16 kHz" if opus else "G.722", "opus": "→ Opus"}
    print("| variant | " + " | ".join(f"{l} %, {label[c]}" for l, c in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for v in args.variants.split(";"):
        row = [np.mean(table[(v, l, c)]) for l, c in cols]
        print(f"| {v} | " + " | ".join(f"{x:.3f}" for x in row) + " |")


if __name__ == "__main__":
    main()
