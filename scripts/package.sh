#!/usr/bin/env bash
# Builds the Debian packages into target/debian/:
#   srtpgate_<version>-1_amd64.deb            the daemon, its plugins, unit, config, man pages
#   srtpgate-codec-g729_<version>-1_amd64.deb  the GPL'd G.729 plugin
# Needs cargo-deb (`cargo install cargo-deb --locked`), dpkg-dev and the
# plugins' build dependencies (scripts/test.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p srtpgate -p srtpgate-plugin-l16 -p srtpgate-plugin-opus \
  -p srtpgate-plugin-spandsp -p srtpgate-plugin-g729
# The manual pages from the command line's own definitions.
rm -rf target/release/man
target/release/srtpgate man target/release/man
gzip -9n target/release/man/*.1
# Stripped: the release profile keeps debug information for profiling.
cargo deb --no-build --locked --strip -p srtpgate
cargo deb --no-build --locked --strip -p srtpgate-plugin-g729
ls target/debian/*.deb
