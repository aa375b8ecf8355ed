//! Where `mpiexec --bind` puts processes: the places (cores, groups of
//! cores, NUMA nodes) of this machine that mpiexec may use, found with
//! hwloc, handed out round robin by rank ([`crate::launch`] pins each
//! process in its child before `exec`).

use crate::cli::Bind;
use crate::sys::CpuSet;
use shm_engine::locality::Place;
use shm_engine::topo::Topology;

/// The option's name on the command line.
pub(crate) fn bind_name(bind: Bind) -> &'static str {
    match bind {
        Bind::Auto => "auto",
        Bind::Core => "core",
        Bind::Numa => "numa",
        Bind::Unbound => "none",
    }
}

/// Where a process is bound: its CPUs, and its place as `TESSEL_PLACE`
/// tells it (so that it need not load hwloc itself).
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) cpus: CpuSet,
    pub(crate) place: String,
}

/// The bindings of the `np` processes under `bind`, in round-robin order
/// (none for `--bind none`, which does not look at the topology).
/// `--bind auto` binds only when the processes fit ([`auto_places`]), and
/// falls back to no binding where `core` would fail.
pub(crate) fn bind_places(bind: Bind, np: u32) -> Result<Vec<Binding>, String> {
    if bind == Bind::Unbound {
        return Ok(Vec::new());
    }
    let found = discover();
    if bind == Bind::Auto {
        // Best effort: no binding where `core` would fail or not fit.
        let Ok((available, topo)) = found else {
            return Ok(Vec::new());
        };
        let groups = auto_places(places(bind, &topo, &available), omp_threads(), np as usize);
        return Ok(bindings(&topo, &groups));
    }
    let (available, topo) = found?;
    let places = places(bind, &topo, &available);
    if places.is_empty() {
        return Err(format!(
            "no {} holds a CPU this process may use ({})",
            bind_name(bind),
            crate::info::cpu_list(&available)
        ));
    }
    Ok(bindings(&topo, &places))
}

/// The CPUs mpiexec may use, and the machine's topology.
fn discover() -> Result<(Vec<usize>, Topology), String> {
    let available = CpuSet::available()
        .map_err(|e| format!("cannot read the CPUs this process may use: {e}"))?
        .cpus();
    let topo = Topology::discover().map_err(|e| e.to_string())?;
    Ok((available, topo))
}

/// A binding for each place (a set of CPUs of `topo`).
fn bindings(topo: &Topology, places: &[Vec<usize>]) -> Vec<Binding> {
    places
        .iter()
        .map(|p| Binding {
            cpus: CpuSet::of(p),
            place: Place::of_mask(topo, p).to_env(),
        })
        .collect()
}

/// `--bind auto`'s places from the usable `cores`: groups of `per`
/// consecutive cores (one per thread a process runs, as
/// `OMP_NUM_THREADS` says), if every one of the `np` processes gets its
/// own group; none (no binding) otherwise.
pub fn auto_places(cores: Vec<Vec<usize>>, per: usize, np: usize) -> Vec<Vec<usize>> {
    let groups: Vec<Vec<usize>> = cores.chunks_exact(per.max(1)).map(|g| g.concat()).collect();
    if groups.len() >= np {
        groups
    } else {
        Vec::new()
    }
}

/// Threads each process says it runs: the first number of
/// `OMP_NUM_THREADS` (1 when unset or not a number).
fn omp_threads() -> usize {
    std::env::var("OMP_NUM_THREADS")
        .ok()
        .and_then(|v| v.split(',').next()?.trim().parse().ok())
        .filter(|&k| k > 0)
        .unwrap_or(1)
}

/// The places of `topo` for `bind` (its cores or its NUMA nodes), each
/// restricted to the `available` CPUs; places left empty are dropped.
pub fn places(bind: Bind, topo: &Topology, available: &[usize]) -> Vec<Vec<usize>> {
    let domains: Vec<&Vec<usize>> = match bind {
        Bind::Unbound => return Vec::new(),
        Bind::Core | Bind::Auto => topo.cores.iter().map(|c| &c.pus).collect(),
        Bind::Numa => topo.numa_nodes.iter().map(|n| &n.pus).collect(),
    };
    domains
        .into_iter()
        .map(|pus| {
            pus.iter()
                .copied()
                .filter(|c| available.contains(c))
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shm_engine::topo::{Domain, NumaNode};

    /// Two NUMA nodes of two cores of two PUs each.
    fn machine() -> Topology {
        let core = |index: usize| Domain {
            index,
            pus: vec![2 * index, 2 * index + 1],
        };
        let node = |os_index: usize| NumaNode {
            os_index,
            pus: (4 * os_index..4 * os_index + 4).collect(),
            memory: None,
        };
        Topology {
            packages: vec![Domain {
                index: 0,
                pus: (0..8).collect(),
            }],
            numa_nodes: vec![node(0), node(1)],
            caches: Vec::new(),
            cores: (0..4).map(core).collect(),
            pus: (0..8).collect(),
        }
    }

    #[test]
    fn places_are_cores_or_nodes_within_the_available_cpus() {
        let t = machine();
        let all: Vec<usize> = (0..8).collect();
        assert_eq!(
            places(Bind::Core, &t, &all),
            [[0, 1], [2, 3], [4, 5], [6, 7]]
        );
        assert_eq!(places(Bind::Numa, &t, &all), [[0, 1, 2, 3], [4, 5, 6, 7]]);
        assert!(places(Bind::Unbound, &t, &all).is_empty());
        let cores = places(Bind::Auto, &t, &all);
        assert_eq!(auto_places(cores.clone(), 1, 4), cores);
        assert_eq!(
            auto_places(cores.clone(), 2, 2),
            [[0, 1, 2, 3], [4, 5, 6, 7]]
        );
        assert!(auto_places(cores.clone(), 1, 5).is_empty());
        assert!(auto_places(cores, 3, 2).is_empty());
        let some = [1, 2, 3, 7];
        assert_eq!(
            places(Bind::Core, &t, &some),
            [vec![1], vec![2, 3], vec![7]]
        );
        assert_eq!(places(Bind::Numa, &t, &some), [vec![1, 2, 3], vec![7]]);
    }
}
