//! Which GPU is near which core. On a host with several sockets each GPU
//! hangs off one of them; a thread that submits through a lane of a GPU on
//! its own NUMA node moves its packets over no socket link on their way to
//! the device. The nodes of the GPUs' PCI slots and of the cores are read
//! from sysfs once, when the engine starts; where the system does not say
//! (no NUMA, a container without sysfs), every lane is near every core.

use cudarc::driver::{sys, CudaContext};

/// The NUMA node of the GPU's PCI slot, where sysfs says.
pub(crate) fn gpu_node(ctx: &CudaContext) -> Option<u32> {
    use sys::CUdevice_attribute as A;
    let domain = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID).ok()?;
    let bus = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID).ok()?;
    let device = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID).ok()?;
    let path = format!("/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{device:02x}.0/numa_node");
    // -1: the platform does not know.
    std::fs::read_to_string(path).ok()?.trim().parse::<i32>().ok().and_then(|n| u32::try_from(n).ok())
}

/// The core the calling thread runs on now.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments; returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// The lanes near each core.
pub(crate) struct Homes {
    /// Every lane: the home of a core whose node has no GPU, or is not known.
    all: Vec<usize>,
    /// Per node with a GPU: the lanes of the GPUs on it.
    by_node: Vec<(u32, Vec<usize>)>,
    /// Per core: its node.
    node_of_cpu: Vec<Option<u32>>,
}

impl Homes {
    /// `gpu_nodes`: each GPU's node, in the engine's order; lane `i` runs on
    /// GPU `i % gpu_nodes.len()`.
    pub(crate) fn new(gpu_nodes: &[Option<u32>], lanes: usize) -> Homes {
        Homes::with_cpus(gpu_nodes, lanes, node_of_cpu())
    }

    fn with_cpus(gpu_nodes: &[Option<u32>], lanes: usize, node_of_cpu: Vec<Option<u32>>) -> Homes {
        let all: Vec<usize> = (0..lanes).collect();
        let mut by_node: Vec<(u32, Vec<usize>)> = Vec::new();
        for (i, node) in (0..lanes).map(|i| (i, gpu_nodes[i % gpu_nodes.len()])) {
            let Some(node) = node else { continue };
            match by_node.iter_mut().find(|(n, _)| *n == node) {
                Some((_, v)) => v.push(i),
                None => by_node.push((node, vec![i])),
            }
        }
        Homes { all, by_node, node_of_cpu }
    }

    /// The lanes near `cpu` (never empty while the engine has lanes).
    pub(crate) fn near(&self, cpu: Option<usize>) -> &[usize] {
        let node = cpu.and_then(|c| self.node_of_cpu.get(c).copied().flatten());
        node.and_then(|n| self.by_node.iter().find(|(m, _)| *m == n)).map_or(&self.all, |(_, v)| v)
    }

    /// Whether lane `lane` is near `cpu`.
    pub(crate) fn is_near(&self, cpu: Option<usize>, lane: usize) -> bool {
        self.near(cpu).contains(&lane)
    }
}

/// Each core's node, from `/sys/devices/system/node/node*/cpulist`.
fn node_of_cpu() -> Vec<Option<u32>> {
    let mut out: Vec<Option<u32>> = Vec::new();
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") else { return out };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(node) = name.to_str().and_then(|n| n.strip_prefix("node")).and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(list) = std::fs::read_to_string(entry.path().join("cpulist")) else { continue };
        for cpu in cpu_list(&list) {
            if cpu < 4096 {
                if out.len() <= cpu {
                    out.resize(cpu + 1, None);
                }
                out[cpu] = Some(node);
            }
        }
    }
    out
}

/// The cores of a kernel CPU list ("0-15,32-47"); what does not parse is
/// left out.
fn cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.trim().parse::<usize>(), hi.trim().parse::<usize>()) {
            if lo <= hi && hi - lo < 4096 {
                out.extend(lo..=hi);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(cpu_list(""), Vec::<usize>::new());
        assert_eq!(cpu_list("5-2,x,7"), vec![7]);
    }

    #[test]
    fn a_core_gets_the_lanes_of_the_gpus_on_its_node() {
        // Two GPUs on nodes 0 and 1, five lanes: 0, 2, 4 on GPU 0.
        let cpus = vec![Some(0), Some(0), Some(1), Some(1), None];
        let h = Homes::with_cpus(&[Some(0), Some(1)], 5, cpus.clone());
        assert_eq!(h.near(Some(0)), &[0, 2, 4]);
        assert_eq!(h.near(Some(3)), &[1, 3]);
        // A core of no known node, one past the list, or no core: every lane.
        assert_eq!(h.near(Some(4)), &[0, 1, 2, 3, 4]);
        assert_eq!(h.near(Some(99)), &[0, 1, 2, 3, 4]);
        assert_eq!(h.near(None), &[0, 1, 2, 3, 4]);
        assert!(h.is_near(Some(2), 3) && !h.is_near(Some(2), 2));
        // Both GPUs on node 1: node 0's cores have no near GPU.
        let h = Homes::with_cpus(&[Some(1), Some(1)], 4, cpus);
        assert_eq!(h.near(Some(0)), &[0, 1, 2, 3]);
        assert_eq!(h.near(Some(2)), &[0, 1, 2, 3]);
        // GPUs of unknown nodes: every lane everywhere.
        let h = Homes::with_cpus(&[None], 3, vec![Some(0)]);
        assert_eq!(h.near(Some(0)), &[0, 1, 2]);
    }
}
