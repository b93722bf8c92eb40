//! The machine a figure was measured on, as every result file of the load
//! generator and the benchmarks records it: the CPU model and the machine's
//! CPU count.

/// `<CPU model>, <CPUs> cores`, from `/proc/cpuinfo`.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    // Count the machine's CPUs, not the affinity mask (the bench runs pinned).
    let cores = std::fs::read_to_string("/proc/cpuinfo")
        .map_or(0, |s| s.lines().filter(|l| l.starts_with("processor")).count());
    format!("{cpu}, {cores} cores")
}
