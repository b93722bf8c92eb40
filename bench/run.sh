#!/usr/bin/env bash
# Measures `srtpgate-bench engines cpu` and Debian's libsrtp (with the OpenSSL
# primitive limit) in one run, on one pinned core, and prints the comparison
# as Markdown. Usage: bench/run.sh [SECONDS_PER_FIGURE] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-0.5}"
out="${2:-bench/results}"
mkdir -p "$out"
scripts/deps.sh >/dev/null
cargo build --release -p srtpgate-bench --quiet
core=$(( $(nproc) - 1 ))
stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "== libsrtp and OpenSSL on core $core" >&2
taskset -c "$core" bench/libsrtp/srtp-tool bench --json > "$out/libsrtp.json"
echo "== srtpgate-bench engines cpu on core $core" >&2
taskset -c "$core" target/release/srtpgate-bench engines cpu --json --seconds "$secs" > "$out/srtpgate.json"
python3 bench/compare.py "$out/srtpgate.json" "$out/libsrtp.json" "$stamp"
