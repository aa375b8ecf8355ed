//! `MPI_Comm_split_type` by hardware (MPI-4.0 §7.4.2): the node, and
//! within it the package, NUMA node, L3 and L2 caches and core each
//! process is bound within (its [`Place`], which the engine publishes for
//! every local process).
//!
//! - `MPI_COMM_TYPE_HW_GUIDED` splits by the resource the info key
//!   `mpi_hw_resource_type` names ([`Resource::parse`]). A process not
//!   bound within one instance of it (an unbound process asked for its
//!   core) gets `MPI_COMM_NULL`, as the standard says of processes that do
//!   not "utilize that specific hardware resource type instance, and no
//!   other"; so does everyone when the key is missing or its value unknown.
//! - `MPI_COMM_TYPE_HW_UNGUIDED` splits by the resource that makes the
//!   fewest communicators while each is a strict subset of the parent:
//!   the node when the parent spans nodes, else the coarsest level of the
//!   hierarchy at which the members are in different instances. Processes
//!   without an instance at that level, and everyone when no level splits,
//!   get `MPI_COMM_NULL`.
//!
//! `MPI_Get_hw_resource_info` (MPI-4.1, "Inquire Hardware Resource
//! Information") names the same resources, as `hwloc://` URIs: for each
//! type the machine has, whether the process is restricted to one instance
//! of it now ([`resource_info`]). Its keys are values of
//! `mpi_hw_resource_type` that `MPI_COMM_TYPE_HW_GUIDED` splits by.

use std::sync::OnceLock;

use shm_engine::Place;
use shm_engine::locality::{Level, UNKNOWN};
use shm_engine::topo::Topology;

use super::info::Info;
use super::{Class, MpiError, MpiResult, Runtime};

/// A hardware resource `MPI_Comm_split_type` splits by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// The node: processes sharing memory (`MPI_COMM_TYPE_SHARED`).
    Node,
    /// One level of the node's hierarchy.
    Level(Level),
}

/// What `MPI_COMM_TYPE_HW_UNGUIDED` tries within a node, coarsest first.
const WITHIN_NODE: [Level; 5] = [
    Level::Package,
    Level::Numa,
    Level::L3,
    Level::L2,
    Level::Core,
];

impl Resource {
    /// The resource an `mpi_hw_resource_type` value names: the reserved
    /// `mpi_shared_memory`, or (ignoring case, with or without the
    /// `hwloc://` prefix of MPI-4.1) an hwloc object type: `Machine`,
    /// `Package`, `NUMANode`, `L3Cache`, `L2Cache`, `Core`, and MPICH's
    /// spellings `node`, `socket`, `numa`, `l3ucache`, `l2ucache`. `None`
    /// for any other value.
    pub fn parse(value: &str) -> Option<Resource> {
        if value == "mpi_shared_memory" {
            return Some(Resource::Node);
        }
        let v = value.to_ascii_lowercase();
        let v = v.strip_prefix("hwloc://").unwrap_or(&v);
        Some(match v {
            "machine" | "node" => Resource::Node,
            "package" | "socket" => Resource::Level(Level::Package),
            "numanode" | "numa" => Resource::Level(Level::Numa),
            "l3cache" | "l3ucache" => Resource::Level(Level::L3),
            "l2cache" | "l2ucache" => Resource::Level(Level::L2),
            "core" => Resource::Level(Level::Core),
            _ => return None,
        })
    }

    /// The `mpi_hw_resource_type` value naming this resource, which
    /// [`Resource::parse`] reads back.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Node => "mpi_shared_memory",
            Resource::Level(Level::Package) => "Package",
            Resource::Level(Level::Numa) => "NUMANode",
            Resource::Level(Level::L3) => "L3Cache",
            Resource::Level(Level::L2) => "L2Cache",
            Resource::Level(Level::Core) => "Core",
        }
    }
}

/// Whether the machine of `topo` has objects of `level`.
fn has_level(topo: &Topology, level: Level) -> bool {
    let cache = |n| {
        topo.caches
            .iter()
            .any(|c| c.level == n && c.kind != "instruction")
    };
    match level {
        Level::Package => !topo.packages.is_empty(),
        Level::Numa => !topo.numa_nodes.is_empty(),
        Level::L3 => cache(3),
        Level::L2 => cache(2),
        Level::Core => !topo.cores.is_empty(),
    }
}

/// What `MPI_Get_hw_resource_info` reports for a process at `place` on
/// the machine of `topo`: for each level the machine has, coarsest first,
/// the key `hwloc://TYPE` (the hwloc object type, as
/// [`Resource::name`] spells it) with the value `true` if the process is
/// restricted to one instance of it, else `false`.
pub fn resource_info(topo: &Topology, place: Place) -> Info {
    let mut info = Info::default();
    for level in WITHIN_NODE.into_iter().filter(|&l| has_level(topo, l)) {
        let key = format!("hwloc://{}", Resource::Level(level).name());
        let bound = place.id(level) != UNKNOWN;
        info.set(&key, if bound { "true" } else { "false" });
    }
    info
}

/// This machine's topology, discovered once (hwloc takes milliseconds);
/// `None` if hwloc cannot discover it.
fn machine() -> Option<&'static Topology> {
    static TOPOLOGY: OnceLock<Option<Topology>> = OnceLock::new();
    TOPOLOGY.get_or_init(|| Topology::discover().ok()).as_ref()
}

/// `MPI_Get_hw_resource_info` for the calling process, where its affinity
/// mask is at this moment; empty if hwloc cannot tell.
pub fn my_resource_info() -> Info {
    machine().map_or_else(Info::default, |topo| {
        resource_info(topo, Place::now_in(topo))
    })
}

/// The number of instances of `level` among `places`, if splitting by it
/// gives strict subsets: some process has an instance, and not every
/// process has the same one.
fn instances_if_split(places: &[Place], level: Level) -> Option<usize> {
    let mut ids: Vec<u32> = places.iter().map(|p| p.id(level)).collect();
    let all_same = ids.windows(2).all(|w| w[0] == w[1]) && ids[0] != UNKNOWN;
    ids.retain(|&id| id != UNKNOWN);
    ids.sort_unstable();
    ids.dedup();
    (!ids.is_empty() && !all_same).then_some(ids.len())
}

/// The level `MPI_COMM_TYPE_HW_UNGUIDED` splits processes at `places`
/// (one node's) by: the one with the fewest instances among those that
/// split, the coarser on a tie.
pub fn unguided_level(places: &[Place]) -> Option<Level> {
    if places.is_empty() {
        return None;
    }
    WITHIN_NODE
        .into_iter()
        .filter_map(|l| instances_if_split(places, l).map(|n| (n, l)))
        .min_by_key(|&(n, _)| n)
        .map(|(_, l)| l)
}

impl Runtime {
    /// This process's place (every process has one on its own node).
    fn my_place(&self) -> Place {
        self.ep.place(self.ep.rank()).unwrap_or(Place::UNKNOWN)
    }

    /// `MPI_COMM_TYPE_HW_GUIDED` by `resource` (`None`: an unknown or
    /// missing resource, which gives everyone `MPI_COMM_NULL`). Collective
    /// over `parent`'s members on this node; on an intercommunicator,
    /// where only the node applies, a split of both groups by node (an
    /// intercommunicator of each node's processes of the two groups).
    pub fn comm_split_hw(
        &mut self,
        parent: usize,
        key: i32,
        resource: Option<Resource>,
    ) -> MpiResult<Option<usize>> {
        if self.comm(parent)?.is_inter() {
            let color = match resource {
                None => None,
                Some(Resource::Node) => Some(self.ep.node()),
                Some(Resource::Level(_)) => {
                    return Err(MpiError::new(
                        Class::Comm,
                        "a split by a hardware resource inside a node needs an intracommunicator",
                    ));
                }
            };
            return self.comm_split(parent, color, key);
        }
        let color = match resource {
            None => None,
            Some(Resource::Node) => Some(0),
            Some(Resource::Level(l)) => Some(self.my_place().id(l)).filter(|&id| id != UNKNOWN),
        };
        self.comm_split_node(parent, key, color)
    }

    /// `MPI_COMM_TYPE_HW_UNGUIDED`: the new communicator, if any, with the
    /// resource it stands for. Collective over `parent`'s members on this
    /// node.
    pub fn comm_split_unguided(
        &mut self,
        parent: usize,
        key: i32,
    ) -> MpiResult<Option<(usize, Resource)>> {
        let members = self.intra(parent)?.members.clone();
        let places: Option<Vec<Place>> = members.iter().map(|&m| self.ep.place(m)).collect();
        let resource = match places {
            // A member on another node: every node is a strict subset.
            None => Some(Resource::Node),
            Some(places) => unguided_level(&places).map(Resource::Level),
        };
        let slot = self.comm_split_hw(parent, key, resource)?;
        Ok(slot.zip(resource))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: u32 = UNKNOWN;

    #[test]
    fn resource_names_parse_and_round_trip() {
        for r in [
            Resource::Node,
            Resource::Level(Level::Package),
            Resource::Level(Level::Numa),
            Resource::Level(Level::L3),
            Resource::Level(Level::L2),
            Resource::Level(Level::Core),
        ] {
            assert_eq!(Resource::parse(r.name()), Some(r));
        }
        assert_eq!(
            Resource::parse("hwloc://NUMANode"),
            Some(Resource::Level(Level::Numa))
        );
        assert_eq!(
            Resource::parse("numanode"),
            Some(Resource::Level(Level::Numa))
        );
        assert_eq!(
            Resource::parse("socket"),
            Some(Resource::Level(Level::Package))
        );
        for bad in ["", "GPU", "MPI_SHARED_MEMORY", "hwloc://", "L1Cache", "PU"] {
            assert_eq!(Resource::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn resource_info_names_the_levels_the_machine_has() {
        let domain = |index, pus: Vec<usize>| shm_engine::topo::Domain { index, pus };
        let cache = |level, kind: &str, pus: Vec<usize>| shm_engine::topo::Cache {
            level,
            kind: kind.into(),
            size: None,
            pus,
        };
        // Two cores with their own L2, one package and NUMA node, no L3
        // (only an instruction cache of that level).
        let topo = Topology {
            packages: vec![domain(0, vec![0, 1])],
            numa_nodes: vec![shm_engine::topo::NumaNode {
                os_index: 0,
                pus: vec![0, 1],
                memory: None,
            }],
            caches: vec![
                cache(2, "unified", vec![0]),
                cache(2, "unified", vec![1]),
                cache(3, "instruction", vec![0, 1]),
            ],
            cores: vec![domain(0, vec![0]), domain(1, vec![1])],
            pus: vec![0, 1],
        };
        let bound = Place::of_mask(&topo, &[1]);
        let want = |v: [&str; 4]| -> Vec<(String, String)> {
            ["Package", "NUMANode", "L2Cache", "Core"]
                .iter()
                .zip(v)
                .map(|(k, v)| (format!("hwloc://{k}"), v.to_owned()))
                .collect()
        };
        assert_eq!(
            resource_info(&topo, bound).entries,
            want(["true", "true", "true", "true"])
        );
        let both = Place::of_mask(&topo, &[0, 1]);
        assert_eq!(
            resource_info(&topo, both).entries,
            want(["true", "true", "false", "false"])
        );
        assert_eq!(
            resource_info(&topo, Place::UNKNOWN).entries,
            want(["false"; 4])
        );
        // Every key is a value of `mpi_hw_resource_type` a split accepts.
        for (k, _) in resource_info(&topo, bound).entries {
            assert!(
                matches!(Resource::parse(&k), Some(Resource::Level(_))),
                "{k}"
            );
        }
    }

    #[test]
    fn unguided_picks_the_coarsest_level_that_splits() {
        let core = |c: u32| Place::new([c, c, 0, c / 2, 0]);
        // Bound to cores 0..4, NUMA nodes of two cores: split by NUMA node.
        let four: Vec<Place> = (0..4).map(core).collect();
        assert_eq!(unguided_level(&four), Some(Level::Numa));
        // Inside one NUMA node: by L2 (as fine as the core, coarser).
        assert_eq!(unguided_level(&four[..2]), Some(Level::L2));
        // One process, or all unbound on a machine with one L3: no split.
        assert_eq!(unguided_level(&four[..1]), None);
        let unbound = Place::new([U, U, 0, 0, 0]);
        assert_eq!(unguided_level(&[unbound, unbound]), None);
        assert_eq!(unguided_level(&[Place::UNKNOWN; 3]), None);
        // One bound process among unbound ones is a strict subset at L2.
        assert_eq!(unguided_level(&[unbound, core(1)]), Some(Level::L2));
        assert_eq!(unguided_level(&[]), None);
    }
}
