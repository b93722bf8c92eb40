#!/usr/bin/env bash
# Builds, on the development machine, what the GPU machine runs: the release
# binary and the GPU test binary, into .gpu/ (ignored by git; carried to the
# device by the `device` tool). The binaries load CUDA at run time, so no
# CUDA is needed here.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu
cargo build --release -p srtpgate -p srtpgate-bench --quiet
cp target/release/srtpgate target/release/srtpgate-bench .gpu/
bin=$(cargo test --release -p srtp-cuda --test gpu --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu":
        print(m["executable"])' | tail -n 1)
cp "$bin" .gpu/gpu-tests
cp scripts/gpu-run.sh scripts/gpu-relay.sh .gpu/
ls -la .gpu
