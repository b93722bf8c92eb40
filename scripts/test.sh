#!/usr/bin/env bash
# Runs every test of the project: formatting and lints, the Rust unit,
# conformance (RFC vectors, every engine) and property tests, the CLI tests,
# the relay daemon's integration tests, the independent check of the vector
# files, interop with Debian's libsrtp in both directions, the end-to-end call
# through Kamailio, the management page in a browser, and the fuzz targets'
# seed replay.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== cargo test (workspace; the relay's I/O backend is auto: io_uring where the kernel has it)"
cargo test --workspace --release

echo "== relay integration tests again on the sockets backend (every backend runs the same tests)"
SRTPGATE_IO=sockets cargo test --release -p srtpgate --test relay

echo "== RFC vector files, recomputed independently (Python cryptography)"
.venv/bin/python tests/vectors/check.py -q   # -q: the failures, each with what differs, and the summary line

echo "== interop with libsrtp (both directions)"
cargo build --release -p srtpgate --quiet
SRTPGATE_BIN="$PWD/target/release/srtpgate" SRTP_TOOL="$PWD/bench/libsrtp/srtp-tool" \
  .venv/bin/python -m pytest tests/interop -q -rs

echo "== end to end: two SIP phones call through Kamailio's rtpengine module and srtpgate serve (SRTP both legs)"
SRTPGATE_BIN="$PWD/target/release/srtpgate" .venv/bin/python -m pytest tests/e2e -q -rs

echo "== WebRTC: Chromium (ICE, DTLS-SRTP) to and from SDES phones through srtpgate serve; JsSIP over Kamailio's WebSocket module to baresip; two relays in one Kamailio set ran above"
(cd tests/webrtc/sip && npm ci --no-audit --no-fund --loglevel=error)
WEBRTC_RELAYS=srtpgate SRTPGATE_BIN="$PWD/target/release/srtpgate" .venv/bin/python -m pytest tests/webrtc -q -rs

echo "== management page: TypeScript check, and the committed build (ui/dist) is what the sources build"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run --silent check && npm run --silent build)
git diff --exit-code --stat -- ui/dist || { echo "ui/dist is not what ui/src builds: run (cd ui && npm run build) and commit"; exit 1; }

echo "== Grafana dashboard: every metric it queries is one the relay writes"
# Its summary line on success; all of its output, with the FAIL lines, on failure.
metrics_out=$(python3 examples/grafana/check_metrics.py 2>&1) || { printf '%s\n' "$metrics_out"; exit 1; }
tail -n 1 <<<"$metrics_out"

echo "== management page in Debian's chromium (Playwright), against srtpgate serve under loadgen"
SRTPGATE_BIN="$PWD/target/release/srtpgate" .venv/bin/python -m pytest tests/ui -q -rs

if [ -f fuzz/Cargo.toml ]; then
  echo "== fuzz targets: seed and committed corpora replay"
  corpora=$(mktemp -d)
  tar -xJf fuzz/corpora.tar.xz -C "$corpora"
  SRTP_FUZZ_CORPORA="$corpora" cargo test --release --manifest-path fuzz/Cargo.toml -- --nocapture \
    >"$corpora.log" 2>&1 || { cat "$corpora.log"; exit 1; }
  grep -E '^replayed' "$corpora.log"
  rm -rf "$corpora" "$corpora.log"
fi
echo "== all tests passed"
