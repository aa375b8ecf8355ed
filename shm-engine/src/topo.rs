//! The node's hardware topology, discovered with hwloc: packages, NUMA
//! nodes, caches, cores and processing units (PUs, hardware threads).
//!
//! [`Topology::discover`] takes one snapshot into plain Rust values (CPU
//! numbers are the operating system's, as in `sched_setaffinity`), so the
//! rest of the engine never touches hwloc. From the CPU affinity masks of
//! local processes, [`Topology::distance`] says what two processes share
//! (a core, a cache, a NUMA node, a package, or only the machine): the
//! engine uses it to pick stealers close to the data.

use std::fmt;

use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;

/// Discovery failed: hwloc could not be initialised or returned an object
/// without the information the engine needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyError {
    /// What failed.
    pub reason: String,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "topology discovery failed: {}", self.reason)
    }
}

impl std::error::Error for TopologyError {}

/// A group of PUs: a package, a NUMA node or a core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// hwloc's logical index among objects of its kind (0, 1, ...).
    pub index: usize,
    /// Operating-system CPU numbers of its PUs, increasing.
    pub pus: Vec<usize>,
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    /// The operating system's node number (as in `/sys/devices/system/node`).
    pub os_index: usize,
    /// Its PUs (the CPUs local to this memory).
    pub pus: Vec<usize>,
    /// Local memory in bytes, when hwloc knows it.
    pub memory: Option<u64>,
}

/// A CPU cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    /// 1, 2 or 3.
    pub level: u8,
    /// `data`, `instruction` or `unified`.
    pub kind: String,
    /// Size in bytes, when hwloc knows it.
    pub size: Option<u64>,
    /// The PUs that share it.
    pub pus: Vec<usize>,
}

/// What two processes share, from closest to farthest. Ordered: a smaller
/// value is closer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Distance {
    /// Both run on the PUs of one core.
    Core,
    /// They share an L2 cache.
    L2,
    /// They share an L3 cache.
    L3,
    /// They share a NUMA node (its memory is local to both).
    Numa,
    /// They share a package (socket).
    Package,
    /// Nothing but the machine.
    Machine,
}

/// A snapshot of the node's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Packages (sockets).
    pub packages: Vec<Domain>,
    /// NUMA nodes.
    pub numa_nodes: Vec<NumaNode>,
    /// L1, L2 and L3 caches (instruction caches included).
    pub caches: Vec<Cache>,
    /// Cores.
    pub cores: Vec<Domain>,
    /// Every PU, increasing.
    pub pus: Vec<usize>,
}

fn pus_of(obj: &TopologyObject) -> Vec<usize> {
    obj.cpuset()
        .map(|set| set.iter_set().map(usize::from).collect())
        .unwrap_or_default()
}

fn domains(topo: &hwlocality::Topology, ty: ObjectType) -> Vec<Domain> {
    topo.objects_with_type(ty)
        .map(|o| Domain {
            index: o.logical_index(),
            pus: pus_of(o),
        })
        .collect()
}

fn caches(topo: &hwlocality::Topology) -> Vec<Cache> {
    let mut out = Vec::new();
    for (level, ty) in [
        (1, ObjectType::L1Cache),
        (1, ObjectType::L1ICache),
        (2, ObjectType::L2Cache),
        (3, ObjectType::L3Cache),
    ] {
        for o in topo.objects_with_type(ty) {
            let (kind, size) = match o.attributes() {
                Some(ObjectAttributes::Cache(c)) => (
                    format!("{:?}", c.cache_type()).to_ascii_lowercase(),
                    c.size().map(u64::from),
                ),
                _ => ("unknown".to_owned(), None),
            };
            out.push(Cache {
                level,
                kind,
                size,
                pus: pus_of(o),
            });
        }
    }
    out
}

/// Whether every CPU of `mask` is in `pus` (both increasing).
fn covers(pus: &[usize], mask: &[usize]) -> bool {
    !mask.is_empty() && mask.iter().all(|c| pus.binary_search(c).is_ok())
}

/// Whether one of `sets` holds every CPU of `mask`.
fn any_covers<'a>(sets: impl IntoIterator<Item = &'a Vec<usize>>, mask: &[usize]) -> bool {
    sets.into_iter().any(|p| covers(p, mask))
}

impl Topology {
    /// Ask hwloc for this machine's topology.
    pub fn discover() -> Result<Self, TopologyError> {
        let topo = hwlocality::Topology::new().map_err(|e| TopologyError {
            reason: e.to_string(),
        })?;
        let numa_nodes = topo
            .objects_with_type(ObjectType::NUMANode)
            .map(|o| NumaNode {
                os_index: o.os_index().unwrap_or(o.logical_index()),
                pus: pus_of(o),
                memory: match o.attributes() {
                    Some(ObjectAttributes::NUMANode(n)) => n.local_memory().map(u64::from),
                    _ => None,
                },
            })
            .collect();
        let mut pus: Vec<usize> = topo
            .objects_with_type(ObjectType::PU)
            .filter_map(|o| o.os_index())
            .collect();
        pus.sort_unstable();
        let t = Self {
            packages: domains(&topo, ObjectType::Package),
            numa_nodes,
            caches: caches(&topo),
            cores: domains(&topo, ObjectType::Core),
            pus,
        };
        if t.pus.is_empty() {
            return Err(TopologyError {
                reason: "hwloc reports no processing unit".into(),
            });
        }
        Ok(t)
    }

    /// What two processes with CPU affinity masks `a` and `b` share: the
    /// smallest level with one object holding every CPU of both. A process
    /// allowed everywhere shares with others only what holds all CPUs.
    /// An empty mask shares nothing but the machine.
    pub fn distance(&self, a: &[usize], b: &[usize]) -> Distance {
        let mut both: Vec<usize> = a.iter().chain(b).copied().collect();
        both.sort_unstable();
        both.dedup();
        let cache = |level| {
            self.caches
                .iter()
                .filter(move |c| c.level == level)
                .map(|c| &c.pus)
        };
        if any_covers(self.cores.iter().map(|c| &c.pus), &both) {
            Distance::Core
        } else if any_covers(cache(2), &both) {
            Distance::L2
        } else if any_covers(cache(3), &both) {
            Distance::L3
        } else if any_covers(self.numa_nodes.iter().map(|n| &n.pus), &both) {
            Distance::Numa
        } else if any_covers(self.packages.iter().map(|p| &p.pus), &both) {
            Distance::Package
        } else {
            Distance::Machine
        }
    }

    /// The distance between every two processes of `masks` (one CPU
    /// affinity mask per local process, in local rank order).
    pub fn distances(&self, masks: &[Vec<usize>]) -> Vec<Vec<Distance>> {
        masks
            .iter()
            .map(|a| masks.iter().map(|b| self.distance(a, b)).collect())
            .collect()
    }

    /// The position in [`Self::numa_nodes`] of the NUMA node holding every
    /// CPU of `mask`, if one does.
    pub fn numa_node_of(&self, mask: &[usize]) -> Option<usize> {
        self.numa_nodes.iter().position(|n| covers(&n.pus, mask))
    }

    /// The NUMA node of the calling process: the one holding its whole CPU
    /// affinity mask, else the one of the CPU it runs on right now (an
    /// unbound process may move).
    pub fn current_numa_node(&self) -> Option<usize> {
        if let Ok(mask) = crate::sys::affinity()
            && let Some(n) = self.numa_node_of(&mask)
        {
            return Some(n);
        }
        let cpu = crate::sys::current_cpu()?;
        self.numa_node_of(&[cpu])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology::discover().expect("hwloc discovers this machine")
    }

    #[test]
    fn every_pu_is_in_exactly_one_core_and_one_numa_node() {
        let t = topo();
        assert!(!t.pus.is_empty());
        for pu in &t.pus {
            let cores = t.cores.iter().filter(|c| c.pus.contains(pu)).count();
            assert_eq!(cores, 1, "PU {pu} in {cores} cores: {t:?}");
            let nodes = t.numa_nodes.iter().filter(|n| n.pus.contains(pu)).count();
            assert_eq!(nodes, 1, "PU {pu} in {nodes} NUMA nodes: {t:?}");
        }
        for c in &t.caches {
            assert!((1..=3).contains(&c.level));
            assert!(c.pus.iter().all(|p| t.pus.contains(p)));
        }
    }

    #[test]
    fn distance_to_self_is_the_smallest_and_symmetric() {
        let t = topo();
        let mut masks: Vec<Vec<usize>> = t.pus.iter().map(|&p| vec![p]).collect();
        masks.push(t.pus.clone());
        let d = t.distances(&masks);
        for i in 0..masks.len() {
            for j in 0..masks.len() {
                assert_eq!(d[i][j], d[j][i]);
                assert!(d[i][i] <= d[i][j], "{i} {j}: {d:?}");
            }
        }
        for (i, &pu) in t.pus.iter().enumerate() {
            assert_eq!(d[i][i], Distance::Core, "PU {pu}");
        }
        assert_eq!(t.distance(&[], &[]), Distance::Machine);
    }

    #[test]
    fn pus_of_one_core_share_it_and_every_pu_has_a_node() {
        let t = topo();
        for c in &t.cores {
            assert_eq!(t.distance(&c.pus[..1], &c.pus), Distance::Core);
        }
        for &pu in &t.pus {
            assert!(t.numa_node_of(&[pu]).is_some());
        }
        assert!(t.current_numa_node().is_some());
    }
}
