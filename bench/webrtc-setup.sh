#!/usr/bin/env bash
# WebRTC set-up costs, with their references measured in the same run:
#
# 1. DTLS-SRTP handshakes per second per core: the `dtls_cost` example runs
#    HANDSHAKES full DTLS 1.2 handshakes between two legs in one process on
#    core 0 and times the relay's side only (passive, then active); beside it
#    `openssl speed` of the public-key operations a handshake cannot avoid.
# 2. Call set-up time, srtpgate beside rtpengine 10.5: the relay alone on
#    core 0 (one srtpgate media worker, CPU engine; or rtpengine with one
#    thread), `srtpgate-bench loadgen` on core 1 setting up CALLS calls one after
#    another (`--setup-rate 100000`: each as soon as the last is up) for one
#    second of media, SDES <-> SDES and browser (ICE check, DTLS handshake,
#    SRTP with the exported keys) <-> SDES. RUNS runs, the relays taking
#    turns within each run.
#
#   cargo build --release -p srtpgate && cargo build --release -p srtpgate-webrtc --example dtls_cost
#   bench/webrtc-setup.sh OUT.json [RUNS=3] [CALLS=300] [HANDSHAKES=3000]
#
# Writes OUT.json: the machine (CPU model, cores, kernel), the date, the
# commit, rtpengine's version, and every run's raw output (the example's JSON
# line, openssl's table, each loadgen run's JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bench/webrtc-setup.sh OUT.json [RUNS] [CALLS] [HANDSHAKES]}
RUNS=${2:-3}
CALLS=${3:-300}
HANDSHAKES=${4:-3000}
BIN=target/release/srtpgate
DTLS=target/release/examples/dtls_cost
[ -x "$BIN" ] && [ -x "$DTLS" ] || { echo "build first: cargo build --release -p srtpgate -p srtpgate-bench && cargo build --release -p srtpgate-webrtc --example dtls_cost" >&2; exit 2; }
SG_NG=127.0.0.1:22232
RE_PORT=2399
tmp=$(mktemp -d)
SG=""
cleanup() {
  [ -n "$SG" ] && kill "$SG" 2>/dev/null && wait "$SG" 2>/dev/null
  NG_PORT=$RE_PORT CLEAN=1 bench/rtpengine/stop.sh >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

say() { echo "webrtc-setup: $*" >&2; }

# Answers once the NG port at $1:$2 says pong, or fails after 30 s.
ping() {
  python3 - "$1" "$2" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(0.2)
end = time.time() + 30
while time.time() < end:
    s.sendto(b"p1 d7:command4:pinge", (sys.argv[1], int(sys.argv[2])))
    try:
        if b"pong" in s.recv(200): sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("no pong from %s:%s" % (sys.argv[1], sys.argv[2]))
EOF
}

# 1. DTLS handshakes and the public-key floor.
say "dtls_cost: $HANDSHAKES handshakes, passive and active, core 0"
taskset -c 0 "$DTLS" "$HANDSHAKES" passive > "$tmp/dtls-passive.json"
taskset -c 0 "$DTLS" "$HANDSHAKES" active > "$tmp/dtls-active.json"
say "openssl speed ecdsap256 ecdhp256, core 0"
taskset -c 0 openssl speed -seconds 2 ecdsap256 ecdhp256 > "$tmp/openssl.txt" 2>/dev/null

# 2. Call set-up, the relays taking turns.
setup_run() { # relay mode run
  local relay=$1 mode=$2 run=$3 ng flag=""
  [ "$mode" = webrtc ] && flag=--webrtc
  if [ "$relay" = srtpgate ]; then
    taskset -c 0 "$BIN" serve --listen-ng "$SG_NG" --interface 127.0.0.1 --port-min 30000 --port-max 39999 \
      --workers 1 --engine cpu --log-level warn > "$tmp/serve.log" 2>&1 &
    SG=$!
    ping 127.0.0.1 22232
    ng=$SG_NG
  else
    CPU=0 NG_PORT=$RE_PORT PORT_MIN=40000 PORT_MAX=49999 bench/rtpengine/start.sh > /dev/null
    ng=127.0.0.1:$RE_PORT
  fi
  taskset -c 1 "$(dirname "$BIN")/srtpgate-bench" loadgen --ng "$ng" --calls "$CALLS" --duration 1 --setup-rate 100000 $flag --quiet \
    --json "$tmp/setup-$relay-$mode-$run.json" > /dev/null
  if [ "$relay" = srtpgate ]; then
    kill "$SG"; wait "$SG" 2>/dev/null || true; SG=""
  else
    NG_PORT=$RE_PORT CLEAN=1 bench/rtpengine/stop.sh > /dev/null
  fi
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('webrtc-setup: %s %s run %s: %d calls, %.3f ms a call, %d set-up errors' % (sys.argv[2], sys.argv[3], sys.argv[4], r['calls'], 1000*r['setup_seconds']/max(1,r['calls']), r['setup_errors']))" \
    "$tmp/setup-$relay-$mode-$run.json" "$relay" "$mode" "$run" >&2
}
for run in $(seq 1 "$RUNS"); do
  for mode in sdes webrtc; do
    for relay in srtpgate rtpengine; do
      setup_run "$relay" "$mode" "$run"
    done
  done
done

python3 - "$tmp" "$OUT" "$RUNS" "$CALLS" "$HANDSHAKES" <<'EOF'
import json, os, platform, subprocess, sys, datetime, glob
tmp, out, runs, calls, hs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
def sh(*a):
    try: r = subprocess.run(a, capture_output=True, text=True); return (r.stdout + r.stderr).strip()
    except OSError: return None
setup = []
for f in sorted(glob.glob(os.path.join(tmp, "setup-*.json"))):
    relay, mode, run = os.path.basename(f)[len("setup-"):-len(".json")].split("-")
    r = json.load(open(f))
    setup.append({"relay": relay, "mode": mode, "run": int(run),
                  "ms_per_call": 1000 * r["setup_seconds"] / max(1, r["calls"]), "loadgen": r})
doc = {
    "meta": {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
             "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "commit": sh("git", "rev-parse", "--short", "HEAD"),
             "rtpengine": (sh("rtpengine", "--version") or "").splitlines()[-1:],
             "openssl": sh("openssl", "version"),
             "command": f"bench/webrtc-setup.sh {os.path.basename(out)} {runs} {calls} {hs}",
             "pinning": "relay and dtls_cost on core 0, loadgen on core 1"},
    "dtls": [json.load(open(os.path.join(tmp, f"dtls-{r}.json"))) for r in ("passive", "active")],
    "openssl_speed": open(os.path.join(tmp, "openssl.txt")).read(),
    "setup": setup,
}
json.dump(doc, open(out, "w"), indent=1)
EOF
say "wrote $OUT"
