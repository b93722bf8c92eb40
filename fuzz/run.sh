#!/usr/bin/env bash
# Runs every srtp fuzz target for SECONDS each (default 60), starting from the
# committed seeds (fuzz/seeds/<target>/, copied into the git-ignored
# fuzz/corpus/<target>/), and prints the executions per target. Exits non-zero
# if any target crashes; the crash input is left in fuzz/artifacts/<target>/.
#
#   fuzz/run.sh [SECONDS]
#
# Environment:
#   JOBS=N            targets run at once (default 1; one core each)
#   SANITIZER=NAME    cargo fuzz --sanitizer (default address; none is faster)
#   TARGETS="a b"     the targets to run (default all)
#   MAX_LEN=N         libFuzzer -max_len (default 8192: the seeds hold 5 KiB
#                     packets, past the 4 KiB counter wrap of the AES engines)
#
# Works on stable Rust: cargo fuzz passes nightly-only flags (-Zsanitizer,
# -Cpasses=sancov-module...), which RUSTC_BOOTSTRAP=1 lets stable rustc take.
set -euo pipefail

SECONDS_EACH=${1:-60}
JOBS=${JOBS:-1}
SANITIZER=${SANITIZER:-address}
MAX_LEN=${MAX_LEN:-8192}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ALL="rtp_header rtcp_header unprotect_rtp unprotect_rtcp sdes_key ng_message sdp transcode ui_message webrtc_datagram ng_structured sdp_structured call_table"
TARGETS=${TARGETS:-$ALL}
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

cargo fuzz build --sanitizer "$SANITIZER"

LOGS=fuzz/target/run-logs
mkdir -p "$LOGS"

# The committed corpora (fuzz/corpora.tar.xz: what the long runs grew,
# minimised with -merge=1) join the seeds in the working corpus.
if [ -f fuzz/corpora.tar.xz ]; then
    mkdir -p fuzz/corpus
    tar -xJf fuzz/corpora.tar.xz -C fuzz/corpus --skip-old-files
fi

run_one() {
    local t=$1
    mkdir -p "fuzz/corpus/$t"
    cp -n "fuzz/seeds/$t"/* "fuzz/corpus/$t"/ 2>/dev/null || true
    cargo fuzz run --sanitizer "$SANITIZER" "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -max_len="$MAX_LEN" -print_final_stats=1 \
        >"$LOGS/$t.log" 2>&1
}

declare -A STATUS
set -- $TARGETS
while [ $# -gt 0 ]; do
    pids=()
    names=()
    for _ in $(seq "$JOBS"); do
        [ $# -gt 0 ] || break
        run_one "$1" &
        pids+=($!)
        names+=("$1")
        shift
    done
    for i in "${!pids[@]}"; do
        if wait "${pids[$i]}"; then STATUS[${names[$i]}]=ok; else STATUS[${names[$i]}]=CRASH; fi
    done
done

failed=0
printf '%-16s %8s %14s %10s  %s\n' target seconds executions exec/s result
for t in $TARGETS; do
    log="$LOGS/$t.log"
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
    execs=$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+).*/\1/p' "$log" | tail -1)
    rate=$(echo "$done_line" | sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p')
    printf '%-16s %8s %14s %10s  %s\n' "$t" "$SECONDS_EACH" "${execs:--}" "${rate:--}" "${STATUS[$t]}"
    [ -n "$done_line" ] && echo "    $done_line"
    if [ "${STATUS[$t]}" != ok ]; then
        failed=1
        grep -E 'panicked at|ERROR: |SUMMARY: ' "$log" | head -5 | sed 's/^/    /'
        ls fuzz/artifacts/"$t"/ 2>/dev/null | sed "s|^|    fuzz/artifacts/$t/|"
        echo "    log: $LOGS/$t.log"
    fi
done
exit $failed
