#!/usr/bin/env python3
"""Checks srtpgate.json against the metrics srtpgate really exports.

Run from the repository root (or anywhere: paths are taken from this file):

    python3 examples/grafana/check_metrics.py [DASHBOARD.json]

It checks that the dashboard is valid JSON, that every srtpgate_* name in a
query is written by crates/srtpgate/src/serve/http.rs (`metric("…")` calls,
plus `_bucket`/`_sum`/`_count` of the histograms), that every label a query
uses is one http.rs writes (or Prometheus' own `instance`/`job`), that every
literal label value a query matches on is a name in the source, and that panel
ids are unique and panels do not overlap. With promtool on PATH it also
parses every query (Grafana's $__rate_interval and $instance substituted).
Exits 1 on any failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
HTTP_RS = os.path.join(ROOT, "crates/srtpgate/src/serve/http.rs")
# Where the label values (drop reasons, transcoding counters, XDP reasons,
# engine paths) are named.
VALUE_SOURCES = [
    HTTP_RS,
    os.path.join(ROOT, "crates/stats/src/lib.rs"),
    os.path.join(ROOT, "crates/srtp-cuda/src/lib.rs"),
]
for _src in VALUE_SOURCES:
    if not os.path.isfile(_src):
        sys.exit(f"FAIL: {_src} is not there (a source of label values moved? update VALUE_SOURCES)")
DASHBOARD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "srtpgate.json")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


# ------------------------------------------------------------ the source
src = open(HTTP_RS).read()
kinds = {}
# `metric(o, "name", "kind", …)`: the page under construction comes first.
for name, kind in re.findall(r'metric\(\s*(?:o,\s*)?"([a-z0-9_]+)",\s*"([a-z]+)"', src):
    kinds["srtpgate_" + name] = kind
for name, kind in re.findall(r"# TYPE (srtpgate_[a-z0-9_]+) ([a-z]+)", src):
    kinds[name] = kind
exported = set()
for name, kind in kinds.items():
    exported.add(name)
    if kind == "histogram":
        exported.update(name + s for s in ("_bucket", "_sum", "_count"))
# Labels http.rs writes: `name=\"` in its format strings, and `le`.
labels_src = set(re.findall(r'([a-z_]+)=\\"', src)) | {"le"}
labels_ok = labels_src | {"instance", "job"}
values_text = "".join(open(p).read() for p in VALUE_SOURCES if os.path.exists(p))

print(f"http.rs exports {len(kinds)} metric families "
      f"({sum(1 for k in kinds.values() if k == 'histogram')} histograms): {len(exported)} series names")
print("labels written by http.rs:", ", ".join(sorted(labels_src)))

# ------------------------------------------------------------ the dashboard
try:
    dash = json.load(open(DASHBOARD))
    print("JSON: parses")
except ValueError as e:
    fail(f"srtpgate.json does not parse: {e}")
    sys.exit(1)


def walk_panels(panels):
    for p in panels:
        yield p
        yield from walk_panels(p.get("panels", []))


panels = list(walk_panels(dash["panels"]))
exprs = []  # (panel title, expr)
for p in panels:
    for t in p.get("targets", []):
        if t.get("expr"):
            exprs.append((p.get("title", "?"), t["expr"]))
for v in dash.get("templating", {}).get("list", []):
    if v.get("type") == "query":
        q = v.get("query")
        exprs.append((f"variable {v['name']}", q["query"] if isinstance(q, dict) else q))
print(f"{len(panels)} panels, {len(exprs)} queries")

used = {}
for title, e in exprs:
    for m in re.findall(r"\bsrtpgate_[a-z0-9_]+", e):
        used.setdefault(m, set()).add(title)
    # Label names: matchers, grouping clauses, label_values().
    for sel in re.findall(r"\{([^{}]*)\}", e):
        for lab in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"', sel):
            if lab not in labels_ok:
                fail(f"{title}: label {lab!r} is not written by http.rs: {e}")
    for group in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        for lab in filter(None, (x.strip() for x in group.split(","))):
            if lab not in labels_ok:
                fail(f"{title}: label {lab!r} in a grouping is not written by http.rs: {e}")
    for lab in re.findall(r"label_values\([^,]+,\s*([a-z_]+)\)", e):
        if lab not in labels_ok:
            fail(f"{title}: label {lab!r} is not written by http.rs")
    # Literal label values (alternations included); $variables are skipped.
    for lab, val in re.findall(r'([a-z_]+)\s*(?:=~|=)\s*"([^"$]*)"', e):
        if lab in ("instance", "job"):
            continue
        for alt in val.split("|"):
            if alt and f'"{alt}"' not in values_text:
                fail(f"{title}: value {lab}={alt!r} is not named in the source")
for p in panels:
    for t in p.get("targets", []):
        for lab in re.findall(r"\{\{\s*([a-zA-Z_]+)\s*\}\}", t.get("legendFormat", "")):
            if lab not in labels_ok:
                fail(f"{p.get('title')}: legend label {lab!r} is not written by http.rs")

print("\nmetric names used in queries:")
for m in sorted(used):
    ok = m in exported
    # The plain grep of the brief: the full name, or its suffix in metric("…").
    base = re.sub(r"_(bucket|sum|count)$", "", m) if m not in kinds else m
    literal = base in src or f'"{base[len("srtpgate_"):]}"' in src
    print(f"  {'ok ' if ok and literal else 'BAD'} {m}  ({kinds.get(base, '?')})")
    if not (ok and literal):
        fail(f"{m} (used in {', '.join(sorted(used[m]))}) is not exported by http.rs")
unused = sorted(k for k in kinds if not any(u == k or re.sub(r'_(bucket|sum|count)$', '', u) == k for u in used))
print("exported but not on the dashboard:", ", ".join(unused) or "none")

# ------------------------------------------------------------ layout
ids = [p["id"] for p in panels]
if len(ids) != len(set(ids)):
    fail("panel ids are not unique")
boxes = [(p.get("title"), p["gridPos"]) for p in panels]
for i, (ta, a) in enumerate(boxes):
    if a["x"] + a["w"] > 24:
        fail(f"{ta}: wider than the grid")
    for tb, b in boxes[i + 1:]:
        if (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
                and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]):
            fail(f"panels overlap: {ta!r} and {tb!r}")

# ------------------------------------------------------------ promtool
promtool = shutil.which("promtool")
if promtool:
    rules = []
    for i, (title, e) in enumerate(exprs):
        if e.startswith("label_values("):
            continue
        e = e.replace("$__rate_interval", "1m").replace('"$instance"', '".+"')
        rules.append({"record": f"check:q{i}", "expr": e})
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
    r = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0:
        fail("promtool check rules:\n" + out)
    else:
        print(f"\npromtool check rules: {len(rules)} queries parse")
else:
    print("\npromtool not on PATH: PromQL syntax not checked")

print()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
