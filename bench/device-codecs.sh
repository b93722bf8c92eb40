#!/usr/bin/env bash
# Codec costs and the transcoding-worker layout, on a lent GPU machine (its
# CPU cores only), from binaries built here:
#
#   # here: the criterion benches, the plugins, the daemon, stripped, with the
#   # shared libraries the plugins link (spandsp, bcg729 and theirs)
#   cargo build --release --workspace
#   cargo bench -p srtpgate-codec -p srtpgate-plugin-opus -p srtpgate-plugin-spandsp -p srtpgate-plugin-g729 --no-run
#   bench/device-codecs.sh bundle            # -> .gpurun/codec.tar.xz (about 14 MB)
#   # there (the device tool's run, carrying .gpurun/codec.tar.xz):
#   bench/device-codecs.sh benches "$OUT"    # every codec bench, pinned to core 2
#   bench/device-codecs.sh mixed "$OUT"      # pass-through calls beside transcoded ones, per layout (OUT/mixed.tar.xz)
#
# Each part writes its raw output and the machine (lscpu, uname) into OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
B=.gpurun/codec
part=${1:?usage: bench/device-codecs.sh bundle|benches OUT|mixed OUT}

unpack() {
  [ -x "$B/srtpgate" ] || tar -C .gpurun -xJf .gpurun/codec.tar.xz
}

machine() {
  mkdir -p "$1"
  { lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'; uname -sr; date -u +%FT%TZ; } > "$1/machine.txt"
}

case "$part" in
bundle)
  rm -rf "$B" && mkdir -p "$B/lib"
  for n in codec opus spandsp g729; do
    # The newest bench executable of each name (cargo bench --no-run built them).
    exe=$(ls -t target/release/deps/"$n"-* | grep -v '\.d$' | head -1)
    strip -o "$B/$n" "$exe"
  done
  for p in opus spandsp g729 l16; do strip -o "$B/libsrtpgate_plugin_$p.so" "target/release/libsrtpgate_plugin_$p.so"; done
  strip -o "$B/srtpgate" target/release/srtpgate
  strip -o "$B/srtpgate-bench" target/release/srtpgate-bench
  for l in $(ldd target/release/libsrtpgate_plugin_spandsp.so target/release/libsrtpgate_plugin_g729.so |
    awk '/=>/{print $3}' | sort -u | grep -v 'libc.so\|libm.so\|ld-linux\|libgcc_s'); do
    cp -L "$l" "$B/lib/"
  done
  tar -C .gpurun -cJf .gpurun/codec.tar.xz codec
  ls -la .gpurun/codec.tar.xz
  ;;
benches)
  OUT=${2:?OUT}
  unpack
  machine "$OUT"
  export LD_LIBRARY_PATH=$PWD/$B/lib
  # The benches find the plugins beside themselves (srtpgate_codec::built_plugin).
  for n in codec opus spandsp g729; do
    echo "== $n" >&2
    (cd "$B" && taskset -c 2 "./$n" --bench) > "$OUT/bench-$n.txt" 2>&1
  done
  ;;
mixed)
  OUT=${2:?OUT}
  unpack
  machine "$OUT"
  export LD_LIBRARY_PATH=$PWD/$B/lib
  # transcode workers, transcoded calls: the layouts of BENCHMARKS' table, two runs each;
  # the loadgen JSONs (three a run) come back as one archive.
  raw=$(mktemp -d)
  for run in 1 2; do
    for layout in 0:60 1:60 0:120 2:120 1:120; do
      tcw=${layout%%:*} tc=${layout##*:}
      echo "== run $run: $tcw transcode workers, $tc transcoded calls" >&2
      WORKERS=4 TC_WORKERS=$tcw RELAY_CPUS=0-3 LG_CPUS=8-11 TC_CPUS=12-15 PASS=1000 TC=$tc DURATION=10 \
        bench/mixed/run.sh "$B/srtpgate" "$B" "$raw/mixed-tcw$tcw-tc$tc-run$run" > /dev/null
    done
  done
  tar -C "$raw" -cJf "$OUT/mixed.tar.xz" .
  rm -rf "$raw"
  ;;
*)
  echo "bench/device-codecs.sh: unknown part '$part'" >&2
  exit 2
  ;;
esac
