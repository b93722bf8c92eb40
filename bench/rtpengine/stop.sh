#!/usr/bin/env bash
# Stops the rtpengine that start.sh started (for the same NG_PORT), by its PID
# only, and prints its CPU time. Keeps its RUNDIR (log) unless CLEAN=1.
set -uo pipefail
NG_PORT=${NG_PORT:-2392}
STATE=/tmp/srtpgate-rtpengine-$NG_PORT.env
PID=${PID:-}
RUNDIR=""
if [ -z "$PID" ] && [ -n "${PIDFILE:-}" ] && [ -s "$PIDFILE" ]; then PID=$(cat "$PIDFILE"); fi
if [ -s "$STATE" ]; then
  # shellcheck disable=SC1090
  . "$STATE"
fi
if [ -z "$PID" ]; then
  echo "rtpengine/stop.sh: nothing started on NG port $NG_PORT ($STATE missing)" >&2
  exit 0
fi
if kill -0 "$PID" 2>/dev/null && [ "$(cat /proc/"$PID"/comm 2>/dev/null)" = rtpengine ]; then
  # utime + stime (fields 14, 15 of /proc/PID/stat), in clock ticks.
  ticks=$(awk '{print $14 + $15}' /proc/"$PID"/stat 2>/dev/null || echo 0)
  kill -TERM "$PID"
  for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$PID" 2>/dev/null; then
    echo "rtpengine/stop.sh: PID $PID ignored SIGTERM; sending SIGKILL" >&2
    kill -KILL "$PID" 2>/dev/null
  fi
  echo "rtpengine/stop.sh: stopped PID $PID (CPU time $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", t/hz}') s)" >&2
else
  echo "rtpengine/stop.sh: PID $PID is not running (or not rtpengine)" >&2
fi
rm -f "$STATE"
if [ "${CLEAN:-0}" = 1 ] && [ -n "$RUNDIR" ] && [[ "$RUNDIR" == /tmp/rtpengine-bench.* ]]; then
  rm -rf "$RUNDIR"
fi
exit 0
