# The shared preamble of the scripts run on a lent machine (bench/device-*.sh):
# sourced after `cd` to the repository root, with B naming the bundle's
# directory (.gpurun unless set).
#
#   machine DIR [FIELDS]   the machine, as every raw output records it, into
#                          DIR/machine.txt (lscpu's model, CPUs, threads, cores,
#                          sockets and FIELDS, e.g. '|Flags'; the kernel; the time)
#   unpack NAME...         each NAME of the bundle decompressed from NAME.xz
#                          where only that was carried, and made executable
#                          (a NAME ending in .so is left as it is); a NAME the
#                          bundle lacks is skipped: a part carries what it runs
#   nic_engine NAME OUT LOADS   bench/device-nic.sh with engine NAME (below)

B=${B:-.gpurun}

machine() {
  mkdir -p "$1"
  { lscpu | grep -E "^(Model name|CPU\\(s\\)|Thread|Core|Socket${2:-})"; uname -sr; date -u +%FT%TZ; } > "$1/machine.txt"
}

# nic_engine NAME OUT LOADS: bench/device-nic.sh (busy-polling) with the
# engine NAME: cpu, gpu-MODE, or gpu-MODE-b64 (the same with `--batch 64`)
nic_engine() {
  local e=$1 m
  case $e in
    cpu) ENGINE=cpu bash bench/device-nic.sh "$2" "$3" busy-poll ;;
    gpu-*-b64) m=${e%-b64}
      SERVE_ARGS="--batch 64" TAG_SUFFIX=-b64 ENGINE=gpu GPU_MODE=${m#gpu-} bash bench/device-nic.sh "$2" "$3" busy-poll ;;
    gpu-*) ENGINE=gpu GPU_MODE=${e#gpu-} bash bench/device-nic.sh "$2" "$3" busy-poll ;;
    *) echo "unknown engine $e (cpu, gpu-MODE, gpu-MODE-b64)" >&2; return 2 ;;
  esac
}

unpack() {
  local f
  for f in "$@"; do
    [ -f "$B/$f" ] || [ ! -f "$B/$f.xz" ] || xz -dkf "$B/$f.xz"
    case $f in
      *.so) ;;
      *) [ ! -f "$B/$f" ] || chmod +x "$B/$f" ;;
    esac
  done
}
