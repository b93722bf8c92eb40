#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine: the C toolchain
# and Debian's libsrtp2 (the reference for interop and benchmarks), the codec
# libraries of the codec plugins (spandsp, bcg729; libopus 1.6.1 is built
# from the sources vendored in crates/opus-sys), clang
# (builds the relay's XDP program), iproute2 and iptables (the namespace rigs; the
# two-network rig's NAT), Python's
# venv with pytest and cryptography, and a Rust toolchain if none is present.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
# kamailio: the SIP proxy (with its rtpengine module) of the end-to-end test;
# baresip-core: the real SIP client (G.722 over SRTP) of the end-to-end test;
# chromium: the browser of the management page's and the WebRTC tests (driven
# by Playwright, which never downloads one); nodejs and npm: the page's
# TypeScript build and JsSIP; kamailio-websocket-modules: SIP over WebSocket
# for the browser phone of the WebRTC tests; redis-server: the store of the
# restart test (calls kept across a crash); dpkg-dev (dpkg-shlibdeps for
# cargo-deb), systemd (systemd-analyze verify), man-db (the unit's man:
# link) and adduser: the Debian package's build and test.
for pkg in redis-server libsrtp2-dev libspandsp-dev libbcg729-dev pkg-config libssl-dev build-essential clang iproute2 iptables python3-venv kamailio kamailio-websocket-modules baresip-core curl fonts-dejavu-core chromium dpkg-dev systemd man-db adduser; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
# Node.js from Debian only where none is installed (another packaging of it
# may already provide node and npm).
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing Debian packages: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "== installing Rust (rustup, from Debian)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq rustup >/dev/null
  rustup default stable
fi

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import pytest, cryptography, pylibsrtp, playwright, websockets" 2>/dev/null; then
  echo "== Python venv (.venv): pytest, cryptography, pylibsrtp, playwright (the driver only), websockets"
  python3 -m venv .venv
  .venv/bin/pip install -q -r tests/interop/requirements.txt -r tests/ui/requirements.txt cryptography
fi

make -s -C bench/libsrtp
