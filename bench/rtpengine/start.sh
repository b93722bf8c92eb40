#!/usr/bin/env bash
# Starts Debian's rtpengine (userspace forwarding only) on loopback for the
# relay benchmark, and returns once its NG port answers `ping`.
#
#   bench/rtpengine/start.sh            # background; prints the PID on stdout
#   FOREGROUND=1 bench/rtpengine/start.sh   # exec in the foreground (no ping wait)
#
# Environment (defaults in brackets):
#   ADDR [127.0.0.1]: NG and media address (198.18.0.2 inside the namespace rig)
#   NG_PORT [2392]  PORT_MIN [40000]  PORT_MAX [59999]  THREADS [1]
#   MEDIA_THREADS [0]  (media-playback threads; the benchmark plays no media)
#   LOG_LEVEL [5]   CPU [unset: no pinning; else `taskset -c $CPU`]
#   RUNDIR [a fresh mktemp -d]: log (rtpengine.log) and pid file live here
#   PIDFILE [$RUNDIR/rtpengine.pid]
#   EXTRA_ARGS [empty]: more rtpengine options, appended last
# Writes /tmp/srtpgate-rtpengine-$NG_PORT.env (PID, RUNDIR, LOG) for stop.sh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export ADDR=${ADDR:-127.0.0.1}
NG_PORT=${NG_PORT:-2392}
PORT_MIN=${PORT_MIN:-40000}
PORT_MAX=${PORT_MAX:-59999}
THREADS=${THREADS:-1}
MEDIA_THREADS=${MEDIA_THREADS:-0}
LOG_LEVEL=${LOG_LEVEL:-5}
STATE=/tmp/srtpgate-rtpengine-$NG_PORT.env

say() { echo "rtpengine/start.sh: $*" >&2; }

# 1. The daemon. Debian's rtpengine-daemon is the userspace daemon; the kernel
#    module would be rtpengine-kernel-dkms, which we neither install nor use.
if ! command -v rtpengine >/dev/null 2>&1; then
  say "installing rtpengine-daemon"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends rtpengine-daemon >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends rtpengine-daemon >&2; }
fi
say "$(rtpengine --version 2>&1 | tail -1)"

# 2. The distro's service must not hold ports or the CPU. Stop it through
#    systemd only when systemd is really PID 1; otherwise through its own pid
#    file (the init script's), killing that one PID only.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  for u in rtpengine-daemon rtpengine-recording-daemon; do
    if systemctl is-active --quiet "$u" 2>/dev/null; then
      say "stopping the distro's $u service"
      systemctl stop "$u" >&2 || true
    fi
  done
fi
for pf in /run/rtpengine/rtpengine-daemon.pid /run/rtpengine-daemon.pid; do
  if [ -s "$pf" ] && kill -0 "$(cat "$pf")" 2>/dev/null; then
    say "stopping the distro's rtpengine (PID $(cat "$pf") from $pf)"
    kill "$(cat "$pf")" || true
    sleep 1
  fi
done

# 3. Our NG port must be free (a previous run of ours, or srtpgate, may hold it).
if [ -s "$STATE" ]; then
  # shellcheck disable=SC1090
  old_pid=$(. "$STATE"; echo "${PID:-}")
  if [ -n "$old_pid" ] && kill -0 "$old_pid" 2>/dev/null &&
     [ "$(cat /proc/"$old_pid"/comm 2>/dev/null)" = rtpengine ]; then
    say "an rtpengine of ours already runs on NG port $NG_PORT (PID $old_pid); run stop.sh first"
    exit 1
  fi
fi
if awk -v p=":$(printf '%04X' "$NG_PORT")" 'FNR > 1 && toupper(substr($2, length($2) - 4)) == p { f = 1 } END { exit !f }' \
     /proc/net/udp /proc/net/udp6 2>/dev/null; then
  say "UDP port $NG_PORT is already in use"
  exit 1
fi

RUNDIR=${RUNDIR:-$(mktemp -d /tmp/rtpengine-bench.XXXXXX)}
mkdir -p "$RUNDIR"
PIDFILE=${PIDFILE:-$RUNDIR/rtpengine.pid}
LOG=$RUNDIR/rtpengine.log

# --config-file also stops rtpengine from reading /etc/rtpengine/rtpengine.conf
# (table = 0, interface = any, recording to /var/spool/rtpengine).
CMD=(rtpengine
  --config-file="$HERE/rtpengine.conf" --config-section=rtpengine
  --foreground --log-stderr --log-level="$LOG_LEVEL"
  --table=-1
  --pidfile="$PIDFILE"
  --listen-ng="$ADDR:$NG_PORT"
  --interface="$ADDR"
  --port-min="$PORT_MIN" --port-max="$PORT_MAX"
  --num-threads="$THREADS" --media-num-threads="$MEDIA_THREADS"
)
# shellcheck disable=SC2206
[ -n "${EXTRA_ARGS:-}" ] && CMD+=($EXTRA_ARGS)
[ -n "${CPU:-}" ] && CMD=(taskset -c "$CPU" "${CMD[@]}")

say "command: ${CMD[*]}"
if [ -n "${FOREGROUND:-}" ]; then
  exec "${CMD[@]}"
fi

# Background, detached from this shell's terminal; taskset execs rtpengine,
# so $! is rtpengine's PID.
nohup "${CMD[@]}" >"$LOG" 2>&1 </dev/null &
PID=$!
echo "$PID" >"$PIDFILE"
printf 'PID=%s\nRUNDIR=%s\nLOG=%s\nPIDFILE=%s\n' "$PID" "$RUNDIR" "$LOG" "$PIDFILE" >"$STATE"

# 4. Wait until NG answers ping (bencode: d7:command4:pinge -> d6:result4:ponge).
if ! python3 - "$NG_PORT" "$PID" <<'PY'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.2)
deadline = time.time() + 15
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("rtpengine exited")
    try:
        s.sendto(b"startsh d7:command4:pinge", (os.environ.get("ADDR", "127.0.0.1"), port))
        reply = s.recv(65535)
        if reply.startswith(b"startsh ") and b"pong" in reply:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
sys.exit("no pong from NG port %d" % port)
PY
then
  say "rtpengine did not come up; last lines of $LOG:"
  tail -20 "$LOG" >&2 || true
  kill "$PID" 2>/dev/null || true
  rm -f "$STATE"
  exit 1
fi
say "up: PID $PID, NG 127.0.0.1:$NG_PORT, media ports $PORT_MIN-$PORT_MAX, $THREADS worker thread(s)${CPU:+, pinned to CPU $CPU}; log $LOG"
echo "$PID"
