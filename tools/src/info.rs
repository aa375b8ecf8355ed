//! What `tessel-info` prints: the node's topology, the copy mechanisms that
//! work between processes of this user, and every engine setting in force
//! with the environment variable that sets it.

use std::fmt::Write as _;
use std::io;

use shm_engine::config::{CmaMode, Config, NetMode};
use shm_engine::heap::{self, HeapError, SharedBox};
use shm_engine::layout::Geometry;
use shm_engine::locality::PLACE_VAR;
use shm_engine::segment::NodeSegment;
use shm_engine::topo::Topology;

/// A CPU list in the kernel's style: `0-3,6,8-9`.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j == i {
            let _ = write!(out, "{}", cpus[i]);
        } else {
            let _ = write!(out, "{}-{}", cpus[i], cpus[j]);
        }
        i = j + 1;
    }
    out
}

/// Bytes in the largest binary unit that keeps a whole number.
fn size(bytes: Option<u64>) -> String {
    let Some(b) = bytes else {
        return "size unknown".into();
    };
    let mut v = b;
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if v % 1024 != 0 || v < 1024 || unit == "GiB" {
            return format!("{v} {unit}");
        }
        v /= 1024;
    }
    unreachable!("the loop returns at GiB")
}

/// The "Topology" section.
pub fn topology_section(out: &mut String) {
    out.push_str("Topology (hwloc)\n");
    let t = match Topology::discover() {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(out, "  unavailable: {e}");
            return;
        }
    };
    let _ = writeln!(out, "  PUs: {} ({})", cpu_list(&t.pus), t.pus.len());
    let _ = writeln!(out, "  packages: {}", t.packages.len());
    for p in &t.packages {
        let _ = writeln!(out, "    package {}: PUs {}", p.index, cpu_list(&p.pus));
    }
    let _ = writeln!(out, "  NUMA nodes: {}", t.numa_nodes.len());
    for n in &t.numa_nodes {
        let _ = writeln!(
            out,
            "    node {}: PUs {}, memory {}",
            n.os_index,
            cpu_list(&n.pus),
            size(n.memory)
        );
    }
    let _ = writeln!(out, "  cores: {}", t.cores.len());
    for c in &t.cores {
        let _ = writeln!(out, "    core {}: PUs {}", c.index, cpu_list(&c.pus));
    }
    let _ = writeln!(out, "  caches: {}", t.caches.len());
    for c in &t.caches {
        let _ = writeln!(
            out,
            "    L{} {}, {}: PUs {}",
            c.level,
            c.kind,
            size(c.size),
            cpu_list(&c.pus)
        );
    }
    let node = t.current_numa_node().map_or_else(
        || "unknown".into(),
        |i| t.numa_nodes[i].os_index.to_string(),
    );
    let _ = writeln!(out, "  this process: NUMA node {node}");
}

/// Whether a child process can read this process's memory with
/// `process_vm_readv`: the engine's own start-up probe
/// ([`NodeSegment::probe_cma`]), run by a forked child against a segment
/// this process created.
pub fn cma_between_processes(cfg: &Config) -> io::Result<bool> {
    let seg = NodeSegment::create(Geometry {
        nlocal: 1,
        ring_cells: cfg.ring_cells,
        staging_slots: cfg.staging_slots,
        staging_slot_size: cfg.staging_slot_size,
    })
    .map_err(io::Error::other)?;
    // SAFETY: the child runs only `probe_cma` (one process_vm_readv into a
    // local variable, no allocation, no lock).
    let code = unsafe { in_forked_child(|| if seg.probe_cma() { 0 } else { 1 }) }?;
    Ok(code == 0)
}

/// What the parent leaves in the probed heap word, and what the child
/// writes there through its own mapping.
const HEAP_PROBE: (u64, u64) = (0x5445_5353_454c_4850, 0x4850_5441_4b45_4e21);

/// Run `child` in a forked child process and return the exit code it
/// chose (-1 if the child did not exit normally).
///
/// # Safety
/// `child` must be sound in a child forked from a possibly multi-threaded
/// process: no allocation, no lock another thread may hold.
unsafe fn in_forked_child(child: impl FnOnce() -> i32) -> io::Result<i32> {
    // SAFETY: the caller promises the child only runs fork-safe code, then
    // `_exit`.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            let code = child();
            // SAFETY: `_exit` ends the child without running the parent's
            // atexit handlers or flushing its copied stdio buffers.
            unsafe { libc::_exit(code) }
        }
        child => {
            let mut status = 0;
            // SAFETY: `child` is our own child; `status` is a live local.
            let rc = unsafe { libc::waitpid(child, &mut status, 0) };
            if rc != child {
                return Err(io::Error::last_os_error());
            }
            Ok(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            })
        }
    }
}

/// Whether a child process can map this process's shared heap the way
/// peers do ([`heap::probe_peer`]: `pidfd_getfd` of the arena, then a
/// mapping of its own), read a word the parent wrote and write one the
/// parent then reads.
pub fn heap_between_processes() -> io::Result<HeapAccess> {
    let word = SharedBox::new(HEAP_PROBE.0).map_err(io::Error::other)?;
    let r = word
        .heap_ref()
        .ok_or_else(|| io::Error::other("a heap block outside the heap"))?;
    // SAFETY: `probe_peer` allocates nothing and takes no lock (pidfd_open,
    // pidfd_getfd, mmap, one word, munmap).
    let code = unsafe {
        in_forked_child(|| match heap::probe_peer(&r, HEAP_PROBE.1) {
            Ok(v) if v == HEAP_PROBE.0 => 0,
            Err(HeapError::PeerRefused { .. }) => 2,
            _ => 1,
        })
    }?;
    // The child has exited (waitpid), so its write is complete.
    Ok(match code {
        0 if *word == HEAP_PROBE.1 => HeapAccess::Works,
        2 => HeapAccess::Refused,
        _ => HeapAccess::Failed,
    })
}

/// What [`heap_between_processes`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapAccess {
    /// The child mapped the arena and saw and changed the parent's bytes.
    Works,
    /// The kernel refused the arena's descriptor (ptrace policy).
    Refused,
    /// Something else went wrong (see `HeapError` for the cases).
    Failed,
}

/// The "Copy mechanisms" section.
pub fn copy_section(out: &mut String, cfg: &Config) {
    out.push_str("Copy mechanisms\n");
    out.push_str("  shared-memory staging slots (eager and pipelined copy): always\n");
    let cma = cma_between_processes(cfg);
    let verdict = match &cma {
        Ok(true) => "works".to_owned(),
        Ok(false) => "refused".to_owned(),
        Err(e) => format!("could not be probed: {e}"),
    };
    let _ = writeln!(
        out,
        "  process_vm_readv between two processes of this user: {verdict}"
    );
    let heap = match heap_between_processes() {
        Ok(HeapAccess::Works) => "yes".to_owned(),
        Ok(HeapAccess::Refused) => "no (pidfd_getfd refused by the ptrace policy)".to_owned(),
        Ok(HeapAccess::Failed) => "no (mapping a peer's arena failed)".to_owned(),
        Err(e) => format!("could not be probed: {e}"),
    };
    let _ = writeln!(
        out,
        "  peers can map the shared heap (MPI_Alloc_mem, SharedVec): {heap}"
    );
    let rndv = format!(
        "the {} protocol (TESSEL_RNDV; GET, COOP and work stealing over steal queues)",
        format!("{:?}", cfg.rndv).to_ascii_lowercase()
    );
    let large = match (cfg.cma, cma) {
        (CmaMode::Auto, Ok(true)) => rndv.as_str(),
        (CmaMode::Auto, _) => "pipelined copy through staging slots (cross-memory attach refused)",
        (CmaMode::Off, _) => "pipelined copy through staging slots (TESSEL_CMA=off)",
    };
    let _ = writeln!(
        out,
        "  messages above TESSEL_EAGER_MAX ({} bytes) use: {large}",
        cfg.eager_max
    );
}

/// Every setting of `cfg`, with its variable, in the README's order.
pub fn settings(cfg: &Config) -> Vec<(&'static str, String)> {
    let cma = match cfg.cma {
        CmaMode::Auto => "auto",
        CmaMode::Off => "off",
    };
    vec![
        ("TESSEL_INLINE_MAX", cfg.inline_max.to_string()),
        ("TESSEL_EAGER_MAX", cfg.eager_max.to_string()),
        ("TESSEL_RING_CELLS", cfg.ring_cells.to_string()),
        ("TESSEL_STAGING_SLOTS", cfg.staging_slots.to_string()),
        (
            "TESSEL_STAGING_SLOT_SIZE",
            cfg.staging_slot_size.to_string(),
        ),
        ("TESSEL_CMA", cma.to_owned()),
        ("TESSEL_SPIN", cfg.spin.to_string()),
        ("TESSEL_YIELD", cfg.yields.to_string()),
        ("TESSEL_SLEEP_US", cfg.sleep.as_micros().to_string()),
        (
            "TESSEL_RNDV",
            format!("{:?}", cfg.rndv).to_ascii_lowercase(),
        ),
        ("TESSEL_CHUNK", cfg.chunk.to_string()),
        ("TESSEL_REPROBE", cfg.reprobe.to_string()),
        ("TESSEL_GRANT_MAX", cfg.grant_max.to_string()),
        (
            "TESSEL_STATS",
            if cfg.stats { "1" } else { "off" }.to_owned(),
        ),
        (
            "TESSEL_COLL",
            if cfg.coll_board { "board" } else { "p2p" }.to_owned(),
        ),
        (
            "TESSEL_SELF",
            if cfg.self_direct { "direct" } else { "ring" }.to_owned(),
        ),
        (
            "TESSEL_NET",
            match &cfg.net {
                NetMode::Auto => "auto".to_owned(),
                NetMode::None => "none".to_owned(),
                NetMode::Named(n) => n.clone(),
            },
        ),
        (
            "TESSEL_PLUGIN_PATH",
            std::env::join_paths(&cfg.plugin_path)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    ]
    .into_iter()
    .chain(PLUGIN_SETTINGS.iter().map(|&(var, default)| {
        (
            var,
            std::env::var(var).unwrap_or_else(|_| default.to_owned()),
        )
    }))
    .collect()
}

/// Variables the plugins read themselves (documented in each plugin's
/// module docs and the README's table), with what applies when unset.
const PLUGIN_SETTINGS: [(&str, &str); 4] = [
    ("TESSEL_OFI_DOMAIN", "(the provider's first domain)"),
    ("TESSEL_OFI_STALL_TIMEOUT", "120"),
    (
        "TESSEL_VERBS_DEVICE",
        "(the first device with an active port)",
    ),
    ("TESSEL_VERBS_GID_INDEX", "(chosen by the plugin)"),
];

/// The "Network plugins" section: every plugin file found, with its name,
/// version and ABI, and its transport's limits and costs, or why it cannot
/// be loaded or finds no device here.
pub fn network_section(out: &mut String, cfg: &Config) {
    let (found, searched) = shm_engine::transport::survey(cfg);
    out.push_str(
        "Network plugins (between nodes; TESSEL_NET, TESSEL_PLUGIN_PATH)
",
    );
    let chosen = found
        .iter()
        .find(|s| {
            s.status.is_ok()
                && match &cfg.net {
                    NetMode::Auto => true,
                    NetMode::None => false,
                    NetMode::Named(n) => s.plugin.as_ref().is_some_and(|p| &p.0 == n),
                }
        })
        .and_then(|s| s.plugin.as_ref().map(|p| p.0.clone()));
    for s in &found {
        match &s.plugin {
            Some((name, version, (major, minor), pref)) => {
                let mark = if chosen.as_ref() == Some(name) {
                    " (selected)"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "  {name}{mark}: version {version}, ABI {major}.{minor}, preference {pref}, {}",
                    s.path.display()
                );
                match &s.status {
                    Ok(limits) => {
                        let _ = writeln!(out, "    {limits}");
                    }
                    Err(why) => {
                        let _ = writeln!(out, "    cannot run here: {why}");
                    }
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {}: refused: {}",
                    s.path.display(),
                    s.status.as_ref().err().map_or("", |e| e)
                );
            }
        }
    }
    if found.is_empty() {
        out.push_str("  none found\n");
    }
    let dirs: Vec<String> = searched.iter().map(|d| d.display().to_string()).collect();
    let _ = writeln!(out, "  searched: {}", dirs.join(":"));
    match (&cfg.net, &chosen) {
        (NetMode::None, _) => out.push_str("  TESSEL_NET=none: jobs stay on one node\n"),
        (_, None) => {
            out.push_str("  no plugin can run here: a job that spans nodes will fail at start\n")
        }
        (_, Some(name)) => {
            let _ = writeln!(out, "  a job that spans nodes uses {name}");
        }
    }
}

/// The "Configuration" section.
pub fn config_section(out: &mut String, cfg: &Config) {
    out.push_str("Configuration (defaults overridden by the environment)\n");
    for (var, value) in settings(cfg) {
        let _ = writeln!(out, "  {var:<26}{value}");
    }
    let place = shm_engine::Place::current().to_env();
    let (var, how) = (
        PLACE_VAR,
        match std::env::var(PLACE_VAR) {
            Ok(_) => "set by mpiexec --bind",
            Err(_) => "unset; this process's place from sysfs",
        },
    );
    let _ = writeln!(out, "  {var:<26}{place} ({how}; core,L2,L3,NUMA,package)");
}

/// The whole report, or why the configuration in force is invalid.
pub fn report() -> Result<String, String> {
    let cfg = Config::from_env().map_err(|e| format!("invalid configuration: {e}"))?;
    let mut out = String::new();
    topology_section(&mut out);
    out.push('\n');
    copy_section(&mut out, &cfg);
    out.push('\n');
    config_section(&mut out, &cfg);
    out.push('\n');
    network_section(&mut out, &cfg);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_fold_ranges() {
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(cpu_list(&[3]), "3");
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
    }

    #[test]
    fn sizes_use_whole_units() {
        assert_eq!(size(Some(32768)), "32 KiB");
        assert_eq!(size(Some(1000)), "1000 B");
        assert_eq!(size(Some(3 << 30)), "3 GiB");
        assert_eq!(size(None), "size unknown");
    }

    #[test]
    fn heap_probe_agrees_with_the_cma_probe() {
        // Both ask the kernel for the same ptrace permission.
        let cfg = Config::from_lookup(|_| None).unwrap();
        let cma = cma_between_processes(&cfg).unwrap();
        let heap = heap_between_processes().unwrap();
        assert_eq!(heap == HeapAccess::Works, cma, "{heap:?}");
    }

    #[test]
    fn settings_follow_the_configuration() {
        let cfg = Config::from_lookup(|k| (k == "TESSEL_SPIN").then(|| "7".into())).unwrap();
        let s = settings(&cfg);
        assert!(s.contains(&("TESSEL_SPIN", "7".into())));
        assert!(s.contains(&("TESSEL_CMA", "auto".into())));
    }
}
