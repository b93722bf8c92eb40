#!/usr/bin/env bash
# The main job on the CPU engine: start the relay (`srtpgate serve`) and put
# 200 concurrent SRTP calls through it (each leg with its own keys), then
# write a capture of an SRTP call, decrypt it with the call's keys, and
# measure the engine beside Debian's libsrtp and the OpenSSL primitives.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cargo build --release -p srtpgate -p srtpgate-bench --quiet
bin=target/release/srtpgate
bench=target/release/srtpgate-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== 1. srtpgate serve (cpu engine) relaying 200 SRTP calls for 5 s (srtpgate-bench loadgen)"
# Media ports below the kernel's default ephemeral range (32768-60999, see
# docs/OPERATIONS.md "Ephemeral ports"), where outgoing connections could
# take them: the relay warns about a range that overlaps it.
"$bin" serve --listen-ng 127.0.0.1:22230 --listen-http 127.0.0.1:22231 --interface 127.0.0.1 \
  --port-min 20000 --port-max 20999 --workers 1 --log-level warn &
relay=$!
trap 'kill $relay 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do
  curl -sf http://127.0.0.1:22231/health >/dev/null 2>&1 && break
  sleep 0.1
done
"$bench" loadgen --ng 127.0.0.1:22230 --calls 200 --duration 5 --json "$work/load.json" >/dev/null
curl -s http://127.0.0.1:22231/metrics | grep -E '^srtpgate_(sessions|packets_(received|sent)_total|port_pairs_in_use) '
kill -TERM $relay && wait $relay
echo
echo "== 2. a 30 s SRTP call (two directions, AES_CM_128_HMAC_SHA1_80) written to call.pcap"
"$bin" sample "$work/call.pcap" --plain "$work/plain.pcap" | tee "$work/keys.txt"
echo
echo "== 3. srtpgate decrypt with the two keys from the SDP"
mapfile -t keys < "$work/keys.txt"
"$bin" decrypt --key "${keys[0]}" --key "${keys[1]}" "$work/call.pcap" "$work/decrypted.pcap"
if cmp -s <(tail -c +25 "$work/decrypted.pcap") <(tail -c +25 "$work/plain.pcap"); then
  echo "decrypted capture is identical to the plaintext capture"
else
  echo "decrypted capture differs from the plaintext capture" >&2
  exit 1
fi
echo
echo "== 4. bench: cpu engine vs Debian libsrtp vs OpenSSL primitives (one core)"
core=$(( $(nproc) - 1 ))
taskset -c "$core" bench/libsrtp/srtp-tool bench --json > "$work/libsrtp.json"
taskset -c "$core" "$bench" engines cpu --json --engine cpu --streams 1,10000 \
  --suite AES_CM_128_HMAC_SHA1_80,AEAD_AES_128_GCM --seconds 0.3 > "$work/srtpgate.json"
python3 bench/compare.py "$work/srtpgate.json" "$work/libsrtp.json" "$(date -u +%FT%TZ)"
