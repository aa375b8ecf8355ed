//! Engine configuration: every threshold and knob, with its default and the
//! environment variable that sets it. The README's "Configuration" table
//! lists the same variables; `Config::from_env` is what reads them.
//!
//! Two more variables are set by the launcher, not by users:
//! `TESSEL_PLACE` (`CORE,L2,L3,NUMA,PACKAGE`, `-` for unknown) tells a
//! process that `mpiexec --bind` bound the core, caches, NUMA node and
//! package it runs on ([`crate::locality`]), so that it need not load hwloc
//! at start-up; without it a process reads its place from sysfs.
//! `TESSEL_JOB_CPUS` tells it how many CPUs `mpiexec`'s own affinity mask
//! holds: all the job's processes run within them, on every virtual node
//! ([`crate::locality::job_cpus`]).

use std::time::Duration;

use crate::layout::INLINE_CAPACITY;

/// How large messages move between two processes of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmaMode {
    /// Use `process_vm_readv` when a start-up probe says it works (default).
    Auto,
    /// Never use it: large messages go through the pipelined staging copy.
    Off,
}

/// How the receiver moves a large message (`TESSEL_RNDV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RndvMode {
    /// Learn per peer and size class (default): the first transfer is
    /// split into small chunks that idle processes may copy; the number of
    /// processes that took part picks GET, COOP or work stealing next time.
    Adaptive,
    /// The receiver copies alone, then sends FIN.
    Get,
    /// Receiver and sender copy one half each.
    Coop,
    /// Small chunks on the receiver's steal queue, for anyone who can copy.
    Steal,
}

/// Which network plugin carries messages between nodes (`TESSEL_NET`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetMode {
    /// The plugin of highest preference that loads and opens (default).
    Auto,
    /// Only the plugin of this name (`ucx`, `verbs`, `ofi`); a job that
    /// spans nodes fails at start when it cannot open.
    Named(String),
    /// No plugin: processes on other nodes are unreachable.
    None,
}

/// Engine settings. Segment geometry (`ring_cells`, `staging_*`) is decided
/// by the node's first process and read by the others from the segment.
#[derive(Clone, Debug)]
pub struct Config {
    /// `TESSEL_INLINE_MAX`: largest message carried inside a control cell
    /// (at most 72 bytes). Default 72.
    pub inline_max: usize,
    /// `TESSEL_EAGER_MAX`: largest message sent eagerly through a staging
    /// slot; larger ones use rendezvous. At most the staging slot size.
    /// Default 16384.
    pub eager_max: usize,
    /// `TESSEL_RING_CELLS`: cells per control ring, a power of two. Default 64.
    pub ring_cells: u32,
    /// `TESSEL_STAGING_SLOTS`: staging slots per ordered pair. Default 8.
    pub staging_slots: u32,
    /// `TESSEL_STAGING_SLOT_SIZE`: bytes per staging slot (multiple of 64);
    /// also the chunk size of the pipelined rendezvous. Default 16384.
    pub staging_slot_size: u64,
    /// `TESSEL_CMA`: `auto` (default) or `off`.
    pub cma: CmaMode,
    /// `TESSEL_SPIN`: progress polls before a waiting process starts to
    /// yield its core. Default 100.
    pub spin: u32,
    /// `TESSEL_YIELD`: yields before it sleeps on its futex. Default 200.
    pub yields: u32,
    /// `TESSEL_SLEEP_US`: longest sleep of a waiting process in
    /// microseconds (on its futex, or in `poll` when a network plugin is
    /// open); a sleeper is woken early by any message. Default 1000.
    pub sleep: Duration,
    /// `TESSEL_RNDV`: `adaptive` (default), `get`, `coop` or `steal`: the
    /// protocol of contiguous messages above `eager_max` between processes
    /// of a node when cross-memory attach works (non-contiguous ones use
    /// GET, and without CMA every large message uses the staging pipeline).
    pub rndv: RndvMode,
    /// `TESSEL_CHUNK`: bytes per chunk when a transfer is split finely (the
    /// adaptive protocol's first transfer of a size class, and `steal`);
    /// at most 1024 chunks are made, so larger messages get larger chunks.
    /// A multiple of 64. Default 1024.
    pub chunk: usize,
    /// `TESSEL_REPROBE`: after this many transfers of one peer and size
    /// class, the adaptive protocol splits finely again to notice a changed
    /// pattern; 0 = never. Default 64.
    pub reprobe: u32,
    /// `TESSEL_GRANT_MAX`: a receive posted without a buffer from one
    /// process, of at most this many bytes, lends that process a landing
    /// buffer in the shared heap, so that its next large message is written
    /// at once (no RTS, no CTS). 0 turns this off. Default 4194304.
    pub grant_max: usize,
    /// `TESSEL_STATS`: `1` prints, when the endpoint finalizes, the
    /// transfers per protocol and size class, the bytes each helper
    /// copied, and the CPUs the job's processes on the node may run on
    /// with whether they are oversubscribed (one `tessel-stats:` line
    /// each, on stderr). Default off.
    pub stats: bool,
    /// `TESSEL_COLL`: `board` (default): collectives of a communicator
    /// whose members share one node, and the phases within a node of one
    /// that spans nodes, run on flag boards in shared memory
    /// ([`crate::board`]); `p2p`: always as point-to-point messages.
    pub coll_board: bool,
    /// `TESSEL_SELF`: `direct` (default): a message a process sends itself
    /// is matched and copied at once, without its ring; `ring`: it goes
    /// through the process's own ring and the protocol for its size, as to
    /// a peer (to exercise the protocols within one process).
    pub self_direct: bool,
    /// `TESSEL_NET`: `auto` (default), `none`, or a plugin's name (`ucx`,
    /// `verbs`, `ofi`): the transport between nodes. Plugins are loaded
    /// only by processes of a job that spans nodes.
    pub net: NetMode,
    /// `TESSEL_PLUGIN_PATH`: directories (`:`-separated) searched for
    /// network plugins (`libtessel_plugin_NAME.so`) before the default
    /// places: the library's own directory and its `tessel/`
    /// subdirectory, then the program's directory, its parent and the
    /// parent's `lib/tessel`.
    pub plugin_path: Vec<std::path::PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            inline_max: INLINE_CAPACITY,
            eager_max: 16384,
            ring_cells: 64,
            staging_slots: 8,
            staging_slot_size: 16384,
            cma: CmaMode::Auto,
            spin: 100,
            yields: 200,
            sleep: Duration::from_micros(1000),
            rndv: RndvMode::Adaptive,
            chunk: 1024,
            reprobe: 64,
            grant_max: 4 << 20,
            stats: false,
            coll_board: true,
            self_direct: true,
            net: NetMode::Auto,
            plugin_path: Vec::new(),
        }
    }
}

/// A configuration variable that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable.
    pub var: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.var, self.reason)
    }
}

impl std::error::Error for ConfigError {}

fn parse<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    into: &mut T,
) -> Result<(), ConfigError> {
    if let Some(v) = get(var) {
        *into = v.trim().parse().map_err(|_| ConfigError {
            var,
            reason: format!("cannot parse {v:?}"),
        })?;
    }
    Ok(())
}

/// A variable naming one of two choices (any case): `on` (or empty) sets
/// `into`, `off` clears it.
fn switch(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    [on, off]: [&str; 2],
    into: &mut bool,
) -> Result<(), ConfigError> {
    if let Some(v) = get(var) {
        *into = match v.trim().to_ascii_lowercase().as_str() {
            "" => true,
            w if w == on => true,
            w if w == off => false,
            _ => {
                return Err(ConfigError {
                    var,
                    reason: format!("{v:?} is not {on} or {off}"),
                });
            }
        };
    }
    Ok(())
}

impl Config {
    /// Defaults overridden by `TESSEL_*` environment variables.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Defaults overridden by whatever `get` returns for each variable.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut c = Self::default();
        parse(&get, "TESSEL_INLINE_MAX", &mut c.inline_max)?;
        parse(&get, "TESSEL_EAGER_MAX", &mut c.eager_max)?;
        parse(&get, "TESSEL_RING_CELLS", &mut c.ring_cells)?;
        parse(&get, "TESSEL_STAGING_SLOTS", &mut c.staging_slots)?;
        parse(&get, "TESSEL_STAGING_SLOT_SIZE", &mut c.staging_slot_size)?;
        parse(&get, "TESSEL_SPIN", &mut c.spin)?;
        parse(&get, "TESSEL_YIELD", &mut c.yields)?;
        let mut us = c.sleep.as_micros() as u64;
        parse(&get, "TESSEL_SLEEP_US", &mut us)?;
        c.sleep = Duration::from_micros(us.max(1));
        parse(&get, "TESSEL_CHUNK", &mut c.chunk)?;
        parse(&get, "TESSEL_REPROBE", &mut c.reprobe)?;
        parse(&get, "TESSEL_GRANT_MAX", &mut c.grant_max)?;
        if let Some(v) = get("TESSEL_STATS") {
            c.stats = !matches!(v.trim(), "" | "0" | "off" | "no");
        }
        switch(&get, "TESSEL_COLL", ["board", "p2p"], &mut c.coll_board)?;
        switch(&get, "TESSEL_SELF", ["direct", "ring"], &mut c.self_direct)?;
        if let Some(v) = get("TESSEL_NET") {
            c.net = match v.trim().to_ascii_lowercase().as_str() {
                "" | "auto" => NetMode::Auto,
                "none" | "off" => NetMode::None,
                name if name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_') =>
                {
                    NetMode::Named(name.to_string())
                }
                _ => {
                    return Err(ConfigError {
                        var: "TESSEL_NET",
                        reason: format!("{v:?} is not auto, none or a plugin name"),
                    });
                }
            };
        }
        if let Some(v) = get("TESSEL_PLUGIN_PATH") {
            c.plugin_path = std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect();
        }
        if let Some(v) = get("TESSEL_RNDV") {
            c.rndv = match v.trim().to_ascii_lowercase().as_str() {
                "adaptive" => RndvMode::Adaptive,
                "get" => RndvMode::Get,
                "coop" => RndvMode::Coop,
                "steal" => RndvMode::Steal,
                _ => {
                    return Err(ConfigError {
                        var: "TESSEL_RNDV",
                        reason: format!("{v:?} is not adaptive, get, coop or steal"),
                    });
                }
            };
        }
        if let Some(v) = get("TESSEL_CMA") {
            c.cma = match v.trim().to_ascii_lowercase().as_str() {
                "auto" | "on" | "1" => CmaMode::Auto,
                "off" | "0" => CmaMode::Off,
                _ => {
                    return Err(ConfigError {
                        var: "TESSEL_CMA",
                        reason: format!("{v:?} is not auto or off"),
                    });
                }
            };
        }
        c.validate()?;
        Ok(c)
    }

    /// Check the settings against each other and the layout's limits.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |var, reason: String| Err(ConfigError { var, reason });
        if self.inline_max > INLINE_CAPACITY {
            return bad("TESSEL_INLINE_MAX", format!("at most {INLINE_CAPACITY}"));
        }
        if !self.ring_cells.is_power_of_two() || self.ring_cells < 2 {
            return bad("TESSEL_RING_CELLS", "must be a power of two >= 2".into());
        }
        if self.staging_slots == 0 {
            return bad("TESSEL_STAGING_SLOTS", "must be at least 1".into());
        }
        if self.staging_slot_size < 64 || !self.staging_slot_size.is_multiple_of(64) {
            return bad(
                "TESSEL_STAGING_SLOT_SIZE",
                "must be a multiple of 64".into(),
            );
        }
        if self.chunk < 64 || !self.chunk.is_multiple_of(64) {
            return bad("TESSEL_CHUNK", "must be a multiple of 64".into());
        }
        if self.eager_max as u64 > self.staging_slot_size {
            return bad(
                "TESSEL_EAGER_MAX",
                format!(
                    "must not exceed the staging slot size ({})",
                    self.staging_slot_size
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_and_checks() {
        let c = Config::from_lookup(|k| match k {
            "TESSEL_EAGER_MAX" => Some("4096".into()),
            "TESSEL_CMA" => Some("OFF".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.eager_max, 4096);
        assert_eq!(c.cma, CmaMode::Off);
        let e = Config::from_lookup(|k| (k == "TESSEL_RING_CELLS").then(|| "48".into()));
        assert_eq!(e.unwrap_err().var, "TESSEL_RING_CELLS");
        let e = Config::from_lookup(|k| (k == "TESSEL_EAGER_MAX").then(|| "1000000".into()));
        assert_eq!(e.unwrap_err().var, "TESSEL_EAGER_MAX");
        let e = Config::from_lookup(|k| (k == "TESSEL_RNDV").then(|| "fast".into()));
        assert_eq!(e.unwrap_err().var, "TESSEL_RNDV");
        let e = Config::from_lookup(|k| (k == "TESSEL_CHUNK").then(|| "1000".into()));
        assert_eq!(e.unwrap_err().var, "TESSEL_CHUNK");
        let c = Config::from_lookup(|k| match k {
            "TESSEL_RNDV" => Some("Steal".into()),
            "TESSEL_STATS" => Some("1".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((c.rndv, c.stats), (RndvMode::Steal, true));
        let c = Config::from_lookup(|k| match k {
            "TESSEL_COLL" => Some("P2P".into()),
            "TESSEL_SELF" => Some("ring".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((c.coll_board, c.self_direct), (false, false));
        let e = Config::from_lookup(|k| (k == "TESSEL_SELF").then(|| "p2p".into()));
        assert_eq!(e.unwrap_err().reason, "\"p2p\" is not direct or ring");
        let e = Config::from_lookup(|k| (k == "TESSEL_SPIN").then(|| "lots".into()));
        assert!(e.unwrap_err().reason.contains("lots"));
    }
}
