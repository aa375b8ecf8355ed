//! Where each local process runs, and which peers a stealer visits first.
//!
//! A [`Place`] names the core, L2 cache, L3 cache, NUMA node and package
//! that hold a process's whole CPU affinity mask. Every process learns its
//! own at start-up ([`Place::current`]) and publishes it in its
//! [`ProcArea`](crate::layout::ProcArea) of the node segment, where local
//! peers read it ([`crate::Endpoint::place`]).
//!
//! # Ids
//!
//! A core, cache or package is named by the smallest operating-system CPU
//! number among its PUs, a NUMA node by its own number (as in
//! `/sys/devices/system/node`). Both hwloc and sysfs give these, so the two
//! ways below agree, and ids are unique on the node without a global
//! numbering. [`UNKNOWN`] (`u32::MAX`) says the process is not bound
//! within one object of that level (or the level is not known).
//!
//! # Why not hwloc at start-up
//!
//! `Place::current` runs inside every process's start-up, which takes
//! about 0.3 ms in all; an hwloc discovery ([`crate::topo::Topology::discover`])
//! takes 4 to 30 ms on a 2-CPU machine. So:
//!
//! 1. the launcher, which loads hwloc anyway to bind processes, passes each
//!    process the place it bound it to in `TESSEL_PLACE`
//!    ([`Place::to_env`]; documented with the other variables in
//!    [`crate::config`]);
//! 2. otherwise (under MPICH's Hydra, a process started alone, or an
//!    unbound job) the process reads its affinity mask
//!    (`sched_getaffinity`) and a few files of `/sys/devices/system/cpu`
//!    (tens of microseconds);
//! 3. if those fail too, its place is [`Place::UNKNOWN`].

use std::path::Path;

use crate::layout::CPU_WORDS;
use crate::topo::{Distance, Topology};

/// The id of an object the process is not bound within, or that is unknown.
pub const UNKNOWN: u32 = u32::MAX;

/// A set of CPUs: bit `c % 64` of word `c / 64` for CPU `c`, up to
/// CPU 1023 (a `cpu_set_t`'s worth). Each process publishes the CPUs it
/// may run on with its place; how many CPUs a group of processes shares
/// is the size of the union of theirs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuMask(pub [u64; CPU_WORDS]);

impl CpuMask {
    /// The CPUs of `cpus` (numbers from 1024 up are left out).
    pub fn of(cpus: impl IntoIterator<Item = usize>) -> Self {
        let mut m = Self::default();
        for c in cpus.into_iter().filter(|&c| c < 64 * CPU_WORDS) {
            m.0[c / 64] |= 1 << (c % 64);
        }
        m
    }

    /// The CPUs the calling process may run on: its affinity mask (which
    /// `taskset`, a launcher's binding or a batch system's cpuset
    /// narrows), or every online CPU where the kernel does not say.
    pub fn current() -> Self {
        let mask = crate::sys::affinity().map_or_else(|_| Self::default(), Self::of);
        if mask.count() > 0 {
            return mask;
        }
        Self::of(0..crate::sys::online_cpus())
    }

    /// The CPUs of either.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self(std::array::from_fn(|w| self.0[w] | other.0[w]))
    }

    /// How many CPUs it holds.
    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// The environment variable through which a launcher that bound the
/// process tells it its place (see [`Place::to_env`]).
pub const PLACE_VAR: &str = "TESSEL_PLACE";

/// The environment variable through which Tessel's `mpiexec` tells its
/// processes how many CPUs its own affinity mask holds ([`job_cpus`]).
pub const JOB_CPUS_VAR: &str = "TESSEL_JOB_CPUS";

/// How many CPUs the launcher may run this job's processes on, where it
/// said ([`JOB_CPUS_VAR`]): Tessel's `mpiexec` starts every process on its
/// own machine, within its own affinity mask, virtual nodes included, so
/// this counts the CPUs the whole job shares.
pub fn job_cpus() -> Option<usize> {
    std::env::var(JOB_CPUS_VAR)
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&n| n > 0)
}

/// Where a process runs: ids of its core, L2, L3, NUMA node and package
/// (see the module docs for what an id is; [`UNKNOWN`] = not bound within
/// one).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    /// The core holding every CPU of the process.
    pub core: u32,
    /// The L2 cache shared by every CPU of the process.
    pub l2: u32,
    /// The L3 cache shared by every CPU of the process.
    pub l3: u32,
    /// The NUMA node holding every CPU of the process.
    pub numa: u32,
    /// The package (socket) holding every CPU of the process.
    pub package: u32,
    _pad: u32,
}

/// A level of the hierarchy a [`Place`] names, from finest to coarsest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A core.
    Core,
    /// An L2 cache.
    L2,
    /// An L3 cache.
    L3,
    /// A NUMA node.
    Numa,
    /// A package.
    Package,
}

impl Level {
    /// Every level, finest first.
    pub const ALL: [Level; 5] = [
        Level::Core,
        Level::L2,
        Level::L3,
        Level::Numa,
        Level::Package,
    ];

    /// What two processes sharing an object of this level share.
    pub fn distance(self) -> Distance {
        match self {
            Level::Core => Distance::Core,
            Level::L2 => Distance::L2,
            Level::L3 => Distance::L3,
            Level::Numa => Distance::Numa,
            Level::Package => Distance::Package,
        }
    }
}

impl Place {
    /// Nothing known.
    pub const UNKNOWN: Place = Place::new([UNKNOWN; 5]);

    /// The place with ids `[core, l2, l3, numa, package]`.
    pub const fn new(ids: [u32; 5]) -> Self {
        Self {
            core: ids[0],
            l2: ids[1],
            l3: ids[2],
            numa: ids[3],
            package: ids[4],
            _pad: 0,
        }
    }

    /// The ids `[core, l2, l3, numa, package]`, as [`Place::new`] takes them.
    pub const fn ids(&self) -> [u32; 5] {
        [self.core, self.l2, self.l3, self.numa, self.package]
    }

    /// The id at `level` ([`UNKNOWN`] if not bound within one).
    pub fn id(&self, level: Level) -> u32 {
        match level {
            Level::Core => self.core,
            Level::L2 => self.l2,
            Level::L3 => self.l3,
            Level::Numa => self.numa,
            Level::Package => self.package,
        }
    }

    /// The calling process's place: from [`PLACE_VAR`] if the launcher set
    /// it, else from its affinity mask and sysfs, else [`Place::UNKNOWN`]
    /// (module docs). Cheap: no hwloc.
    pub fn current() -> Place {
        if let Ok(v) = std::env::var(PLACE_VAR)
            && let Some(p) = Place::from_env(&v)
        {
            return p;
        }
        match crate::sys::affinity() {
            Ok(mask) => Place::from_sysfs(Path::new(SYSFS_CPU), Path::new(SYSFS_NODE), &mask),
            Err(_) => Place::UNKNOWN,
        }
    }

    /// The calling process's place at this moment in `topo` (an hwloc
    /// snapshot): where its affinity mask is now, unlike
    /// [`Place::current`], which the launcher may tell at start-up.
    /// [`Place::UNKNOWN`] if the mask cannot be read.
    pub fn now_in(topo: &Topology) -> Place {
        crate::sys::affinity().map_or(Place::UNKNOWN, |mask| Place::of_mask(topo, &mask))
    }

    /// The place of a process allowed on the CPUs of `mask`, in `topo`.
    pub fn of_mask(topo: &Topology, mask: &[usize]) -> Place {
        let cache = |level| {
            topo.caches
                .iter()
                .filter(move |c| c.level == level && c.kind != "instruction")
                .map(|c| &c.pus)
        };
        let numa = topo
            .numa_nodes
            .iter()
            .find(|n| covers(&n.pus, mask))
            .map_or(UNKNOWN, |n| n.os_index as u32);
        Place::new([
            holder(topo.cores.iter().map(|d| &d.pus), mask),
            holder(cache(2), mask),
            holder(cache(3), mask),
            numa,
            holder(topo.packages.iter().map(|d| &d.pus), mask),
        ])
    }

    /// The place of a process allowed on the CPUs of `mask`, from the
    /// kernel's description under `cpu_dir` (`/sys/devices/system/cpu`)
    /// and `node_dir` (`/sys/devices/system/node`). A level whose files are
    /// missing is unknown.
    pub fn from_sysfs(cpu_dir: &Path, node_dir: &Path, mask: &[usize]) -> Place {
        let Some(&cpu) = mask.first() else {
            return Place::UNKNOWN;
        };
        let dir = cpu_dir.join(format!("cpu{cpu}"));
        let id_of = |list: Option<Vec<usize>>| match list {
            Some(pus) if covers(&pus, mask) => pus[0] as u32,
            _ => UNKNOWN,
        };
        let topology = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| read_cpu_list(&dir.join("topology").join(n)))
        };
        let numa = numa_of(&dir).map_or(UNKNOWN, |n| {
            match read_cpu_list(&node_dir.join(format!("node{n}/cpulist"))) {
                Some(pus) if covers(&pus, mask) => n,
                _ => UNKNOWN,
            }
        });
        Place::new([
            id_of(topology(&["core_cpus_list", "thread_siblings_list"])),
            id_of(cache_cpus(&dir, 2)),
            id_of(cache_cpus(&dir, 3)),
            numa,
            id_of(topology(&["package_cpus_list", "core_siblings_list"])),
        ])
    }

    /// What this process shares with one at `other`: the finest level at
    /// which both know their object and it is the same one;
    /// [`Distance::Machine`] if none.
    pub fn distance(&self, other: &Place) -> Distance {
        Level::ALL
            .into_iter()
            .find(|&l| self.id(l) != UNKNOWN && self.id(l) == other.id(l))
            .map_or(Distance::Machine, Level::distance)
    }

    /// The value of [`PLACE_VAR`] that [`Place::current`] reads back as
    /// this place: `CORE,L2,L3,NUMA,PACKAGE`, `-` for unknown.
    pub fn to_env(&self) -> String {
        self.ids()
            .map(|id| {
                if id == UNKNOWN {
                    "-".to_owned()
                } else {
                    id.to_string()
                }
            })
            .join(",")
    }

    /// Parse a [`Place::to_env`] value; `None` if it is not one.
    pub fn from_env(text: &str) -> Option<Place> {
        let mut ids = [UNKNOWN; 5];
        let mut fields = text.split(',');
        for id in &mut ids {
            let f = fields.next()?.trim();
            if f != "-" {
                *id = f.parse().ok().filter(|&v| v != UNKNOWN)?;
            }
        }
        fields.next().is_none().then_some(Place::new(ids))
    }
}

const SYSFS_CPU: &str = "/sys/devices/system/cpu";
const SYSFS_NODE: &str = "/sys/devices/system/node";

/// The id (smallest CPU) of the first of `sets` that holds every CPU of
/// `mask`, or [`UNKNOWN`].
fn holder<'a>(mut sets: impl Iterator<Item = &'a Vec<usize>>, mask: &[usize]) -> u32 {
    sets.find(|pus| covers(pus, mask))
        .map_or(UNKNOWN, |pus| pus[0] as u32)
}

/// Whether `pus` (increasing) holds every CPU of `mask`.
fn covers(pus: &[usize], mask: &[usize]) -> bool {
    !mask.is_empty() && mask.iter().all(|c| pus.binary_search(c).is_ok())
}

/// A kernel CPU list (`0-3,6`) read from `path`, increasing; `None` if the
/// file is missing, empty or malformed.
fn read_cpu_list(path: &Path) -> Option<Vec<usize>> {
    parse_cpu_list(std::fs::read_to_string(path).ok()?.trim())
}

/// Parse a kernel CPU list (`0-3,6`) into increasing CPU numbers.
fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    (!cpus.is_empty()).then_some(cpus)
}

/// The CPUs sharing the data or unified cache of `level` of the CPU whose
/// sysfs directory is `cpu_dir`.
fn cache_cpus(cpu_dir: &Path, level: u32) -> Option<Vec<usize>> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    (0..)
        .map_while(|i| {
            let index = cpu_dir.join(format!("cache/index{i}"));
            let lvl = read(&index.join("level"))?;
            Some((index, lvl))
        })
        .find(|(index, lvl)| {
            lvl.trim().parse() == Ok(level)
                && read(&index.join("type")).is_some_and(|t| t.trim() != "Instruction")
        })
        .and_then(|(index, _)| read_cpu_list(&index.join("shared_cpu_list")))
}

/// The NUMA node of the CPU whose sysfs directory is `cpu_dir` (its
/// `nodeN` entry).
fn numa_of(cpu_dir: &Path) -> Option<u32> {
    std::fs::read_dir(cpu_dir).ok()?.find_map(|e| {
        let name = e.ok()?.file_name();
        name.to_str()?.strip_prefix("node")?.parse().ok()
    })
}

/// Whether this machine has more than one NUMA node (from sysfs; `false`
/// when it cannot tell).
pub fn several_numa_nodes() -> bool {
    read_cpu_list(&Path::new(SYSFS_NODE).join("online")).is_some_and(|n| n.len() > 1)
}

/// Local peer indices other than `me`, nearest first by
/// [`Place::distance`]; peers at the same distance start after `me` and
/// wrap around (`me + 1, me + 2, ...`), so stealers spread over peers.
///
/// # Panics
/// If `me` is not an index of `places`.
pub fn steal_order(me: u32, places: &[Place]) -> Vec<u32> {
    let n = places.len() as u32;
    let mine = places[me as usize];
    let mut order: Vec<u32> = (1..n).map(|k| (me + k) % n).collect();
    // Stable: ties keep the rotation.
    order.sort_by_key(|&j| mine.distance(&places[j as usize]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: u32 = UNKNOWN;

    /// 8 CPUs: cores of 2 CPUs with their own L2; an L3 and a NUMA node
    /// per 4 CPUs; one package.
    fn place_of_cpu(c: u32) -> Place {
        Place::new([c / 2 * 2, c / 2 * 2, c / 4 * 4, c / 4, 0])
    }

    #[test]
    fn distance_is_the_finest_shared_known_level() {
        let a = place_of_cpu(0);
        assert_eq!(a.distance(&place_of_cpu(1)), Distance::Core);
        assert_eq!(a.distance(&place_of_cpu(3)), Distance::L3);
        assert_eq!(a.distance(&place_of_cpu(5)), Distance::Package);
        let unbound_in_node0 = Place::new([U, U, 0, 0, 0]);
        assert_eq!(a.distance(&unbound_in_node0), Distance::L3);
        assert_eq!(unbound_in_node0.distance(&unbound_in_node0), Distance::L3);
        assert_eq!(Place::UNKNOWN.distance(&Place::UNKNOWN), Distance::Machine);
        assert_eq!(a.distance(&Place::UNKNOWN), Distance::Machine);
        let numa_only = Place::new([U, U, U, 1, U]);
        assert_eq!(numa_only.distance(&numa_only), Distance::Numa);
        for c in 0..8 {
            let p = place_of_cpu(c);
            assert_eq!(p.distance(&p), Distance::Core);
            for d in 0..8 {
                let q = place_of_cpu(d);
                assert_eq!(p.distance(&q), q.distance(&p));
            }
        }
    }

    #[test]
    fn steal_order_is_nearest_first_then_rotated() {
        let places: Vec<Place> = (0..8).map(place_of_cpu).collect();
        assert_eq!(steal_order(0, &places), [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(steal_order(5, &places), [4, 6, 7, 0, 1, 2, 3]);
        assert_eq!(steal_order(3, &places), [2, 0, 1, 4, 5, 6, 7]);
        // All equally far: plain rotation from me + 1.
        let same = vec![Place::UNKNOWN; 4];
        assert_eq!(steal_order(2, &same), [3, 0, 1]);
        assert_eq!(steal_order(0, &[Place::UNKNOWN]), Vec::<u32>::new());
        // Nearness wins over the rotation.
        let pair = [place_of_cpu(0), place_of_cpu(4), place_of_cpu(5)];
        assert_eq!(steal_order(0, &pair), [1, 2]);
        assert_eq!(steal_order(1, &pair), [2, 0]);
        assert_eq!(steal_order(2, &pair), [1, 0]);
    }

    #[test]
    fn env_value_round_trips_and_rejects_garbage() {
        for p in [place_of_cpu(5), Place::UNKNOWN, Place::new([U, U, 0, 0, 0])] {
            assert_eq!(Place::from_env(&p.to_env()), Some(p), "{}", p.to_env());
        }
        assert_eq!(Place::new([U, U, 0, 1, 0]).to_env(), "-,-,0,1,0");
        for bad in [
            "",
            "1,2,3,4",
            "1,2,3,4,5,6",
            "a,-,-,-,-",
            "4294967295,-,-,-,-",
        ] {
            assert_eq!(Place::from_env(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    /// The launcher's way (hwloc) and the processes' way (sysfs) name the
    /// same objects, for every single CPU and for the whole machine.
    #[test]
    fn sysfs_and_hwloc_agree_on_this_machine() {
        let topo = Topology::discover().expect("hwloc discovers this machine");
        let mut masks: Vec<Vec<usize>> = topo.pus.iter().map(|&p| vec![p]).collect();
        masks.push(topo.pus.clone());
        for mask in masks {
            let sysfs = Place::from_sysfs(Path::new(SYSFS_CPU), Path::new(SYSFS_NODE), &mask);
            assert_eq!(sysfs, Place::of_mask(&topo, &mask), "mask {mask:?}");
        }
        let one = [topo.pus[0]];
        let p = Place::of_mask(&topo, &one);
        assert_eq!(p.core, topo.pus[0] as u32);
        assert_ne!(p.numa, U);
        assert_eq!(Place::of_mask(&topo, &[]), Place::UNKNOWN);
    }

    #[test]
    fn sysfs_without_files_is_unknown() {
        let none = Path::new("/nonexistent");
        assert_eq!(Place::from_sysfs(none, none, &[0]), Place::UNKNOWN);
        assert_eq!(
            Place::from_sysfs(Path::new(SYSFS_CPU), Path::new(SYSFS_NODE), &[]),
            Place::UNKNOWN
        );
    }

    #[test]
    fn cpu_masks_count_their_union() {
        let a = CpuMask::of([0, 1, 63, 64, 1023, 1024, 5000]);
        assert_eq!(a.count(), 5, "CPUs from 1024 up are left out");
        let b = CpuMask::of([1, 2, 64]);
        assert_eq!(a.union(b).count(), 6);
        assert_eq!(CpuMask::default().union(b), b);
        // This process runs somewhere.
        assert!(CpuMask::current().count() >= 1);
    }
}
