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

# What a test may skip for, and the machine deps.sh set up has: a skip for any
# of these fails instead (crates/testkit; tests/require_no_skips.py for
# pytest). io_uring and network namespaces (veth, XDP) need a Linux kernel
# that has them; the rest deps.sh installs or the workspace builds. Only the
# GPU is left out: CI has none. Skips that remain are listed at the end.
export SRTPGATE_REQUIRE="${SRTPGATE_REQUIRE:-uring,redis,plugins,netns,xdp,ipv6,rtnetlink,cc,pytest,mount}"
export SRTPGATE_SKIP_LOG="${SRTPGATE_SKIP_LOG:-$PWD/target/skipped.txt}"
mkdir -p target && : >"$SRTPGATE_SKIP_LOG"
export PYTHONPATH="$PWD/tests${PYTHONPATH:+:$PYTHONPATH}"
pytest_args=(-q -rs -p require_no_skips)

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== cargo test (workspace; the relay's I/O backend is auto: io_uring where the kernel has it)"
cargo test --workspace --release

echo "== unit and library tests again in the dev profile (overflow checks and debug assertions on)"
cargo test -p srtp -p srtpgate-relay -p srtpgate-ng -p srtpgate-sdp -p srtpgate-webrtc -p srtpgate-testkit

echo "== relay integration tests again on the sockets backend (every backend runs the same tests)"
SRTPGATE_IO=sockets cargo test --release -p srtpgate --test relay

echo "== RFC vector files, recomputed independently (Python cryptography)"
.venv/bin/python tests/vectors/check.py -q   # -q: the failures, each with what differs, and the summary line

echo "== interop with libsrtp (both directions)"
cargo build --release -p srtpgate -p srtpgate-bench --quiet
SRTPGATE_BIN="$PWD/target/release/srtpgate" SRTP_TOOL="$PWD/bench/libsrtp/srtp-tool" \
  .venv/bin/python -m pytest tests/interop "${pytest_args[@]}"

echo "== end to end: two SIP phones call through Kamailio's rtpengine module and srtpgate serve (SRTP both legs)"
SRTPGATE_BIN="$PWD/target/release/srtpgate" .venv/bin/python -m pytest tests/e2e "${pytest_args[@]}"

echo "== WebRTC: Chromium (ICE, DTLS-SRTP) to and from SDES phones through srtpgate serve; JsSIP over Kamailio's WebSocket module to baresip, and across two networks behind a NAT; two relays in one Kamailio set ran above"
(cd tests/webrtc/sip && npm ci --no-audit --no-fund --loglevel=error)
WEBRTC_RELAYS=srtpgate SRTPGATE_BIN="$PWD/target/release/srtpgate" .venv/bin/python -m pytest tests/webrtc "${pytest_args[@]}"

echo "== management page: TypeScript check, and the committed build (ui/dist) is what the sources build"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run --silent check && npm run --silent build)
git diff --exit-code --stat -- ui/dist || { echo "ui/dist is not what ui/src builds: run (cd ui && npm run build) and commit"; exit 1; }

echo "== every figure of the benchmark docs names its raw output under docs/results/ (or says it has none)"
python3 scripts/check-figures.py -q

echo "== Grafana dashboard: every metric it queries is one the relay writes"
# Its summary line on success; all of its output, with the FAIL lines, on failure.
metrics_out=$(python3 examples/grafana/check_metrics.py 2>&1) || { printf '%s\n' "$metrics_out"; exit 1; }
tail -n 1 <<<"$metrics_out"

echo "== management page in Debian's chromium (Playwright), against srtpgate serve under srtpgate-bench loadgen"
SRTPGATE_BIN="$PWD/target/release/srtpgate" .venv/bin/python -m pytest tests/ui "${pytest_args[@]}"

echo "== Debian package: built (cargo-deb), installed with dpkg, run from its unit's ExecStart as its user, purged"
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --version 3.8.0 --locked --quiet
scripts/package.sh >/dev/null
SRTPGATE_PACKAGE_TEST=1 .venv/bin/python -m pytest tests/package "${pytest_args[@]}"

if [ -f fuzz/Cargo.toml ]; then
  echo "== fuzz targets: seed and committed corpora replay"
  corpora=$(mktemp -d)
  tar -xJf fuzz/corpora.tar.xz -C "$corpora"
  SRTP_FUZZ_CORPORA="$corpora" cargo test --release --manifest-path fuzz/Cargo.toml -- --nocapture \
    >"$corpora.log" 2>&1 || { cat "$corpora.log"; exit 1; }
  grep -E '^replayed' "$corpora.log"
  rm -rf "$corpora" "$corpora.log"
fi
if [ -s "$SRTPGATE_SKIP_LOG" ]; then
  echo "== skipped (needs this machine lacks, none of them in SRTPGATE_REQUIRE=$SRTPGATE_REQUIRE):"
  sort -u "$SRTPGATE_SKIP_LOG"
fi
echo "== all tests passed"
