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

B=${B:-.gpurun}

machine() {
  mkdir -p "$1"
  { lscpu | grep -E "^(Model name|CPU\\(s\\)|Thread|Core|Socket${2:-})"; uname -sr; date -u +%FT%TZ; } > "$1/machine.txt"
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
