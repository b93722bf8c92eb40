#!/usr/bin/env python3
"""Lists where each measured figure of the benchmark docs comes from, and
fails on a figure without a source.

A section (a `##`/`###` heading and its text, up to the next heading) of
docs/BENCHMARKS.md, a docs/lab/ note or README.md that gives figures (a
table with numbers, or numbers with units of time, rate or load) must name
its raw output: a file under docs/results/ (by path or bare name; `{a,b}`,
`*` and `…` patterns are expanded against the files there), or say plainly
that it has none ("no raw output", "not backed", "to re-run", "without raw
output", "no committed"). Every raw output named must exist. README.md's
figures are checked by the link to BENCHMARKS in their section instead.

  scripts/check-figures.py [-q]     (-q: only the failures and the summary)
"""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results")
NO_SOURCE = re.compile(
    r"no raw output|not backed|to re-run|without (a )?(committed )?raw output|no committed|has no (json|raw)|"
    r"records? no machine|no result file",
    re.I,
)
# A figure: a number with a unit of time, rate, size or load, or a table row
# with a number in a cell.
UNIT = re.compile(
    r"\b\d[\d  ,.]*\s?(ns|µs|us|ms|s|Mops/s|ops/s|packets/s|pkt/s|Gb/s|GB/s|calls|%|×|x)\b(?!-)", re.I
)
TABLE_ROW = re.compile(r"^\|.*\|\s*\d[\d  ,.]*\s*(\||[a-zµ%×/ ]+\|)", re.I)
RESULT_REF = re.compile(r"(?:docs/results/)?([A-Za-z0-9_{},.*…\-]+?\.(?:json|txt|csv|log|tar\.xz))")


def sections(path):
    """(heading, text, parent's text) of each section of a markdown file: a
    section's parent is the file's opening (under its `#` title) and, for a
    `###` section, the `##` section above it: sources named once there
    serve the sections below too."""
    out, head, level, lines, parent, top = [], "(top)", 1, [], "", ""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            # A shell comment inside a code block is not a heading.
            m = None if fenced else re.match(r"^(#{1,3}) ", line)
            if m:
                text = "".join(lines)
                out.append((head, text, top + (parent if level == 3 else "")))
                if level == 1:
                    top += text
                if level <= 2:
                    parent = text
                head, level, lines = line.strip("# \n"), len(m.group(1)), []
            else:
                lines.append(line)
    out.append((head, "".join(lines), top + (parent if level == 3 else "")))
    return out


def expand(ref):
    """The files of docs/results/ a reference names (a pattern may name several)."""
    pats = [ref]
    while pats and (m := re.search(r"\{([^{}]*)\}", pats[0])):
        r = re.fullmatch(r"(\d+)\.\.(\d+)", m.group(1))
        alts = [str(i) for i in range(int(r.group(1)), int(r.group(2)) + 1)] if r else m.group(1).split(",")
        pats = [p[: m.start()] + alt + p[m.end() :] for p in pats for alt in alts]
    found = []
    for p in pats:
        p = p.replace("…", "*")
        found += glob.glob(os.path.join(RESULTS, p))
    return sorted(set(found))


def has_figures(text):
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    return bool(UNIT.search(body)) or any(TABLE_ROW.match(l) for l in body.splitlines())


def main():
    quiet = "-q" in sys.argv
    files = [os.path.join(ROOT, "docs", "BENCHMARKS.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "lab", "*.md")))
    bad, missing, n = [], [], 0
    for path in files:
        rel = os.path.relpath(path, ROOT)
        for head, text, parent in sections(path):
            if not has_figures(text):
                continue
            n += 1
            # Names in prose (a command's own output names are in code
            # blocks) that look like raw outputs: dated, or a pattern.
            prose = re.sub(r"```.*?```", "", text + parent, flags=re.S)
            named = sorted(
                {r for r in RESULT_REF.findall(prose) if re.search(r"\d{4}-\d{2}-\d{2}|[*…{]", r)}
            )
            sources = []
            for r in named:
                hits = expand(r)
                if hits:
                    sources += [os.path.basename(h) for h in hits]
                elif re.search(r"[*…{]", r) or r.endswith(".json"):
                    missing.append(f"{rel} § {head}: {r}")
            if sources:
                if not quiet:
                    shown = ", ".join(sorted(set(sources))[:4]) + (" …" if len(set(sources)) > 4 else "")
                    print(f"ok    {rel} § {head}: {shown}")
            elif NO_SOURCE.search(text + parent):
                if not quiet:
                    print(f"said  {rel} § {head}: says it has no raw output")
            else:
                bad.append(f"{rel} § {head}")
    readme = os.path.join(ROOT, "README.md")
    for head, text, _ in sections(readme):
        if has_figures(text) and "BENCHMARKS.md" not in text and "RELIABILITY.md" not in text and "FUZZING.md" not in text:
            bad.append(f"README.md § {head} (figures without a link to where they are backed)")
    for m in missing:
        print(f"FAIL  raw output named but not in docs/results/: {m}")
    for b in bad:
        print(f"FAIL  figures without a raw output or a word that there is none: {b}")
    print(f"figures: {n} sections with figures, {len(bad)} without a source, {len(missing)} sources missing")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
