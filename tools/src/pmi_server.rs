//! The PMI-1 ("simple" wire protocol) server side, without I/O.
//!
//! [`PmiServer::handle_line`] takes one request line from a rank and says
//! what to answer and to whom: a `barrier_in` is answered (to every rank
//! in the barrier) only once all live ranks have entered it. The launcher
//! owns the sockets and feeds lines in.
//!
//! Requests understood, with their answers:
//!
//! | request | answer |
//! | --- | --- |
//! | `cmd=init pmi_version=1 pmi_subversion=1` | `cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0` |
//! | `cmd=get_maxes` | `cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0` |
//! | `cmd=get_my_kvsname` | `cmd=my_kvsname kvsname=K rc=0` |
//! | `cmd=get_appnum` | `cmd=appnum appnum=A rc=0` (the command's index in a spawn, else 0) |
//! | `cmd=get_universe_size` | `cmd=universe_size size=U rc=0` |
//! | `cmd=put kvsname=K key=KEY value=V` | `cmd=put_result rc=0 msg=success` |
//! | `cmd=get kvsname=K key=KEY` | `cmd=get_result rc=0 msg=success value=V` |
//! | `cmd=barrier_in` | `cmd=barrier_out rc=0`, to all, once every rank that has not finalized is in |
//! | `cmd=finalize` | `cmd=finalize_ack rc=0` |
//! | `cmd=abort exitcode=C` | none: the launcher ends the job with code C |
//! | `mcmd=spawn` ... `endcmd` (one block per command) | `cmd=spawn_result rc=0 base=B` after the last block, from the launcher |
//! | `cmd=publish_name service=S port=P` | `cmd=publish_result rc=0` |
//! | `cmd=unpublish_name service=S` | `cmd=unpublish_result rc=0` |
//! | `cmd=lookup_name service=S` | `cmd=lookup_result rc=0 port=P` |
//! | `cmd=pset_create op=OP members=RANKS` | `cmd=pset_create_result rc=0 name=mpix://OP/N` |
//! | `cmd=rc_get` | `cmd=rc_get_result rc=0 type=none\|add\|sub delta=NAME tag=T procs=N`, from the launcher |
//! | `cmd=rc_accept tag=T info=I seg_key=K seg_value=V` | `cmd=rc_accept_result rc=0`, from the launcher |
//! | `cmd=pset_fetch from=K` | `cmd=pset_fetch_result rc=0 sets=S` (the sets created after the first K, hex of `NAME RANKS` lines) |
//!
//! # Jobs and process ids
//!
//! A spawn (MPI-4.1 §11.8) makes a new job, with its own key-value space,
//! barrier and ranks `0..n`; the server numbers every process of every
//! job with one *id* (the job `mpiexec` started holds `0..N`, each new
//! job the next free ids), which is also its id in the engine's universe.
//! A spawn block lists `nprocs`, `execname`, `totspawns`, `spawnssofar`
//! (1-based), `argcnt` and `arg1`.., `preput_num` and `preput_key_I` /
//! `preput_val_I` (put in the new space before its processes start),
//! `info_num` and `info_key_I` / `info_val_I`, one `key=value` per line.
//! Published names are shared by all jobs.
//!
//! A rank that leaves (exits or closes its connection) without `finalize`
//! never enters a barrier again: [`PmiServer::blocking_departure`] names it
//! once other ranks wait for it there, and the launcher ends the job.
//!
//! The key-value store is bounded: a rank may create at most
//! [`KEYS_PER_RANK`] keys, and all values and keys together take at most
//! [`KVS_BYTES`]; a put beyond either is refused with `rc=-1`.
//!
//! Failures carry `rc=-1` and a `msg=` without spaces. A line that is not
//! `key=value` pairs with a `cmd=`, or names an unknown command, is answered
//! with `cmd=error rc=-1 msg=...` and reported through
//! [`Outcome::warning`].

use std::collections::HashMap;

use crate::mapping::Mapping;

/// Longest kvsname, including a C terminator (as announced in `maxes`).
pub const KVSNAME_MAX: usize = 256;
/// Longest key, including a C terminator (as announced in `maxes`).
pub const KEYLEN_MAX: usize = 64;
/// Longest value, including a C terminator (as announced in `maxes`).
pub const VALLEN_MAX: usize = 1024;

/// Most keys one rank may create (Tessel's library puts a few per process).
pub const KEYS_PER_RANK: u32 = 1024;
/// Most bytes of keys and values the store holds for the whole job.
pub const KVS_BYTES: usize = 64 << 20;

/// The key under which the rank-to-node map is published.
pub const PROCESS_MAPPING_KEY: &str = "PMI_process_mapping";

/// One command of a spawn request.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SpawnApp {
    /// The command (`execname`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// How many processes run it (`nprocs`).
    pub procs: u32,
    /// Its hints (`wdir`, `path`; others are ignored).
    pub info: Vec<(String, String)>,
}

/// A complete spawn request: the launcher starts the processes (after
/// [`PmiServer::add_job`]) and answers `by` itself.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The id of the process that asked.
    pub by: u32,
    /// One per command.
    pub apps: Vec<SpawnApp>,
    /// Keys and values for the new job's space.
    pub preput: Vec<(String, String)>,
}

/// What the launcher must do after a request line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Lines (without their newline) to send, as `(rank, line)`.
    pub replies: Vec<(u32, String)>,
    /// The rank asked to abort the job with this exit code.
    pub abort: Option<i32>,
    /// Something worth reporting on stderr (an unknown command, a malformed
    /// line).
    pub warning: Option<String>,
    /// A process asked for new processes.
    pub spawn: Option<SpawnRequest>,
    /// A process asked for the pending resource change, or accepted one.
    pub dynres: Option<DynresRequest>,
}

/// A resource-change request, which the launcher answers itself
/// (`crate::dynres`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DynresRequest {
    /// `cmd=rc_get` from process `by`: the pending change, proposing one
    /// if none is.
    Get {
        /// The asking process.
        by: u32,
    },
    /// `cmd=rc_accept tag=T info=HEX seg_key=K seg_value=HEX` from `by`:
    /// accept change `tag`.
    Accept {
        /// The accepting process.
        by: u32,
        /// The change.
        tag: u32,
        /// For the new processes: hex of `key=value` lines.
        info: String,
        /// Where the new processes find the node segment (a key and its
        /// wire value for their key-value space).
        seg_key: String,
        /// The value under `seg_key`.
        seg_value: String,
    },
}

/// How far a rank got through the PMI session.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// No `init` yet: perhaps not an MPI process at all.
    #[default]
    Started,
    /// Sent `init`, not yet `finalize`.
    Initialized,
    /// Sent `finalize`.
    Finalized,
}

#[derive(Debug, Default, Clone)]
struct RankState {
    /// The job (key-value space) of the process, its rank there, and the
    /// index of its command in the spawn that started it.
    space: usize,
    rank: u32,
    appnum: u32,
    /// Complete spawn blocks received, and the lines of the one being
    /// received.
    spawn: Vec<HashMap<String, String>>,
    block: Option<HashMap<String, String>>,
    stage: Stage,
    /// Exited, or closed its PMI connection.
    gone: bool,
    in_barrier: bool,
    /// Keys this rank created.
    keys: u32,
    /// Told the launcher's log that this rank's puts are refused.
    warned_full: bool,
}

/// One job's key-value space.
#[derive(Debug)]
struct Space {
    kvsname: String,
    kvs: HashMap<String, String>,
    /// Ids of its processes, by rank.
    members: Vec<u32>,
    /// Every process of it has ended; its ids may be given again.
    retired: bool,
    /// Its ids are reserved for processes not started yet (a resource
    /// change proposed, not accepted): it cannot be retired.
    reserved: bool,
}

/// The key-value spaces and barriers of the jobs of one launcher.
#[derive(Debug)]
pub struct PmiServer {
    spaces: Vec<Space>,
    /// Bytes of the keys and values of all spaces.
    kvs_bytes: usize,
    /// By process id.
    ranks: Vec<RankState>,
    /// Published names: service -> port.
    names: HashMap<String, String>,
    /// Process sets the jobs created, in order: names are never reused.
    created: Vec<(String, Vec<u32>)>,
    /// How many process ids may exist.
    universe: u32,
}

impl PmiServer {
    /// A server for the job placed by `mapping`, whose single key-value
    /// space is called `kvsname`.
    ///
    /// # Panics
    ///
    /// Panics if `kvsname` is empty, contains whitespace or is not shorter
    /// than [`KVSNAME_MAX`].
    pub fn new(kvsname: &str, mapping: &Mapping) -> Self {
        assert!(
            !kvsname.is_empty()
                && kvsname.len() < KVSNAME_MAX
                && !kvsname.contains(|c: char| c.is_whitespace() || c == '='),
            "unusable kvsname {kvsname:?}"
        );
        let mapping_value = mapping.process_mapping();
        let kvs_bytes = PROCESS_MAPPING_KEY.len() + mapping_value.len();
        let kvs = HashMap::from([(PROCESS_MAPPING_KEY.to_owned(), mapping_value)]);
        let np = mapping.np();
        Self {
            spaces: vec![Space {
                kvsname: kvsname.to_owned(),
                kvs,
                members: (0..np).collect(),
                retired: false,
                reserved: false,
            }],
            kvs_bytes,
            ranks: (0..np)
                .map(|rank| RankState {
                    rank,
                    ..RankState::default()
                })
                .collect(),
            names: HashMap::new(),
            created: Vec::new(),
            universe: np,
        }
    }

    /// Let spawns add processes up to `size` ids in all.
    pub fn set_universe(&mut self, size: u32) {
        self.universe = size.max(self.ranks.len() as u32);
    }

    /// A new job of `procs[i]` processes running command `i`, whose space
    /// holds `preput`: their ids, returned as the first, or why not.
    ///
    /// A job takes consecutive ids: the first run of free ones, where an id
    /// is free if no process had it yet, or if every process of the
    /// (spawned) job that had it has ended, which `ended` says of an id.
    /// The engine relies on this: a process that ends leaves nothing in
    /// flight to the peers that outlive it, once its whole job has ended
    /// (MPI-4.1 §11.10.4: disconnecting completes all communication).
    pub fn add_job(
        &mut self,
        procs: &[u32],
        preput: &[(String, String)],
        ended: impl Fn(u32) -> bool,
    ) -> Result<u32, String> {
        let n: u32 = procs.iter().sum();
        if n == 0 {
            return Err("no_processes_requested".into());
        }
        self.retire(&ended);
        let free = |id: u32| {
            self.ranks
                .get(id as usize)
                .is_none_or(|s| self.spaces[s.space].retired)
        };
        let first_spawnable = self.spaces[0].members.len() as u32;
        let mut base = first_spawnable;
        while u64::from(base) + u64::from(n) <= u64::from(self.universe) {
            match (base..base + n).find(|&id| !free(id)) {
                None => break,
                Some(taken) => base = taken + 1,
            }
        }
        if u64::from(base) + u64::from(n) > u64::from(self.universe) {
            let used = (first_spawnable..self.universe)
                .filter(|&id| !free(id))
                .count();
            return Err(format!(
                "universe_full:_{}_of_{}_ids_in_use,_{n}_more_asked_(mpiexec_--universe-size)",
                used + first_spawnable as usize,
                self.universe
            ));
        }
        let space = self.spaces.len();
        let mapping = Mapping::block(n, None).process_mapping();
        let mut kvs = HashMap::from([(PROCESS_MAPPING_KEY.to_owned(), mapping)]);
        kvs.extend(preput.iter().cloned());
        self.kvs_bytes += kvs.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        self.spaces.push(Space {
            kvsname: format!("{}_{space}", self.spaces[0].kvsname),
            kvs,
            members: (base..base + n).collect(),
            retired: false,
            reserved: false,
        });
        let mut id = base;
        for (appnum, &count) in procs.iter().enumerate() {
            for _ in 0..count {
                let state = RankState {
                    space,
                    rank: id - base,
                    appnum: appnum as u32,
                    ..RankState::default()
                };
                match self.ranks.get_mut(id as usize) {
                    Some(old) => *old = state,
                    None => self.ranks.push(state),
                }
                id += 1;
            }
        }
        Ok(base)
    }

    /// A job of `n` processes whose ids are reserved now and whose
    /// processes start later ([`start_reserved`](Self::start_reserved)):
    /// its first id.
    pub fn reserve_job(&mut self, n: u32, ended: impl Fn(u32) -> bool) -> Result<u32, String> {
        let base = self.add_job(&[n], &[], ended)?;
        let space = self.ranks[base as usize].space;
        self.spaces[space].reserved = true;
        Ok(base)
    }

    /// The reserved job at `base` starts: its space gets `preput`.
    pub fn start_reserved(&mut self, base: u32, preput: &[(String, String)]) {
        let space = self.ranks[base as usize].space;
        let sp = &mut self.spaces[space];
        sp.reserved = false;
        self.kvs_bytes += preput.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        sp.kvs.extend(preput.iter().cloned());
    }

    /// Register a process set made by the launcher itself (a resource
    /// change's delta): its name, `mpix://KIND/N`.
    pub fn register_pset(&mut self, kind: &str, members: Vec<u32>) -> String {
        let name = format!("mpix://{kind}/{}", self.created.len());
        self.created.push((name.clone(), members));
        name
    }

    /// Mark the spawned jobs whose every process has ended: their ids may
    /// be given again, and their key-value spaces are emptied.
    fn retire(&mut self, ended: &impl Fn(u32) -> bool) {
        for sp in self.spaces.iter_mut().skip(1) {
            if !sp.retired && !sp.reserved && sp.members.iter().all(|&id| ended(id)) {
                sp.retired = true;
                self.kvs_bytes -= sp.kvs.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
                sp.kvs = HashMap::new();
                sp.members.clear();
            }
        }
    }

    /// Process `id`'s job index (0 for the first) and rank there.
    pub fn job_of(&self, id: u32) -> (usize, u32) {
        let s = &self.ranks[id as usize];
        (s.space, s.rank)
    }

    /// Publish named process sets (`(name, ranks)`) in the key-value
    /// store, as [`shm_engine::bootstrap::pset`] describes; fails if a set
    /// does not fit in one value.
    pub fn publish_psets(&mut self, psets: &[(String, Vec<u32>)]) -> Result<(), String> {
        use shm_engine::bootstrap::pset;
        if psets.is_empty() {
            return Ok(());
        }
        let mut entries = vec![(
            pset::COUNT_KEY.to_owned(),
            pset::wire_value(&psets.len().to_string()),
        )];
        for (i, (name, ranks)) in psets.iter().enumerate() {
            let value = pset::wire_value(&pset::entry(name, ranks));
            if value.len() >= VALLEN_MAX {
                return Err(format!(
                    "process set {name} is too long to publish ({} bytes encoded, at most {}): \
                     write its ranks as ranges",
                    value.len(),
                    VALLEN_MAX - 1
                ));
            }
            entries.push((pset::key(i), value));
        }
        for (key, value) in entries {
            self.kvs_bytes += key.len() + value.len();
            self.spaces[0].kvs.insert(key, value);
        }
        Ok(())
    }

    /// The first job's kvsname.
    pub fn kvsname(&self) -> &str {
        &self.spaces[0].kvsname
    }

    /// The answer to a line that could not be read at all (too long).
    pub fn error_line(msg: &str) -> String {
        format!("cmd=error rc=-1 msg={msg}")
    }

    /// Handle one request line (without its newline) from `rank`.
    pub fn handle_line(&mut self, rank: u32, line: &[u8]) -> Outcome {
        let r = rank as usize;
        assert!(r < self.ranks.len(), "request from unknown rank {rank}");
        let mut out = Outcome::default();
        let Ok(text) = std::str::from_utf8(line) else {
            return Self::refuse(rank, "malformed_line_not_utf8", "a line that is not UTF-8");
        };
        let text = text.strip_suffix('\r').unwrap_or(text);
        if self.ranks[r].block.is_some() || text.starts_with("mcmd=") {
            return self.spawn_line(rank, text);
        }
        let Some(fields) = parse_fields(text) else {
            return Self::refuse(
                rank,
                "malformed_line",
                &format!("a malformed line {:?}", shorten(text)),
            );
        };
        let Some(&cmd) = fields.get("cmd") else {
            return Self::refuse(
                rank,
                "missing_cmd",
                &format!("a line without cmd= {:?}", shorten(text)),
            );
        };
        let mut reply = |line: String| out.replies.push((rank, line));
        match cmd {
            "init" => {
                let version = fields.get("pmi_version").copied().unwrap_or("1");
                if version == "1" {
                    self.ranks[r].stage = Stage::Initialized;
                    reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".to_owned());
                } else {
                    reply(format!(
                        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 \
                         msg=unsupported_pmi_version_{version}"
                    ));
                }
            }
            "get_maxes" => reply(format!(
                "cmd=maxes kvsname_max={KVSNAME_MAX} keylen_max={KEYLEN_MAX} \
                 vallen_max={VALLEN_MAX} rc=0"
            )),
            "get_my_kvsname" => reply(format!(
                "cmd=my_kvsname kvsname={} rc=0",
                self.spaces[self.ranks[r].space].kvsname
            )),
            "get_appnum" => reply(format!("cmd=appnum appnum={} rc=0", self.ranks[r].appnum)),
            "get_universe_size" => {
                reply(format!("cmd=universe_size size={} rc=0", self.universe));
            }
            "publish_name" => match (fields.get("service"), fields.get("port")) {
                (Some(&service), Some(&port)) => {
                    if self.names.contains_key(service) {
                        reply("cmd=publish_result rc=-1 msg=name_already_published".into());
                    } else {
                        self.names.insert(service.to_owned(), port.to_owned());
                        reply("cmd=publish_result rc=0 msg=success".into());
                    }
                }
                _ => reply("cmd=publish_result rc=-1 msg=missing_service_or_port".into()),
            },
            "unpublish_name" => match fields.get("service") {
                Some(&service) if self.names.remove(service).is_some() => {
                    reply("cmd=unpublish_result rc=0 msg=success".into());
                }
                _ => reply("cmd=unpublish_result rc=-1 msg=name_not_published".into()),
            },
            "pset_create" => reply(self.create_pset(&fields)),
            "rc_get" => out.dynres = Some(DynresRequest::Get { by: rank }),
            "rc_accept" => match fields.get("tag").and_then(|t| t.parse::<u32>().ok()) {
                Some(tag) => {
                    let get = |k: &str| fields.get(k).copied().unwrap_or("").to_owned();
                    out.dynres = Some(DynresRequest::Accept {
                        by: rank,
                        tag,
                        info: get("info"),
                        seg_key: get("seg_key"),
                        seg_value: get("seg_value"),
                    });
                }
                None => reply("cmd=rc_accept_result rc=-1 msg=missing_tag".into()),
            },
            "pset_fetch" => {
                let from = fields.get("from").and_then(|v| v.parse::<usize>().ok());
                reply(match from {
                    Some(k) => {
                        let text: String = self
                            .created
                            .iter()
                            .skip(k)
                            .map(|(n, r)| {
                                format!("{n} {}\n", shm_engine::bootstrap::pset::format_ranks(r))
                            })
                            .collect();
                        format!(
                            "cmd=pset_fetch_result rc=0 msg=success sets={}",
                            shm_engine::bootstrap::pset::wire_value(&text)
                        )
                    }
                    None => "cmd=pset_fetch_result rc=-1 msg=missing_from".into(),
                });
            }
            "lookup_name" => match fields.get("service").and_then(|s| self.names.get(*s)) {
                Some(port) => reply(format!("cmd=lookup_result rc=0 msg=success port={port}")),
                None => reply("cmd=lookup_result rc=-1 msg=name_not_published".into()),
            },
            "put" => {
                let (line, warning) = self.put(rank, &fields);
                reply(line);
                out.warning = warning;
            }
            "get" => reply(self.get(rank, &fields)),
            "barrier_in" => {
                if self.ranks[r].in_barrier {
                    return Self::refuse(
                        rank,
                        "already_in_barrier",
                        "barrier_in twice without waiting for barrier_out",
                    );
                }
                self.ranks[r].in_barrier = true;
                out.replies
                    .extend(self.complete_barrier(self.ranks[r].space));
            }
            "finalize" => {
                self.ranks[r].stage = Stage::Finalized;
                out.replies.push((rank, "cmd=finalize_ack rc=0".to_owned()));
                out.replies
                    .extend(self.complete_barrier(self.ranks[r].space));
            }
            "abort" => {
                let code = fields.get("exitcode").and_then(|c| c.parse::<i32>().ok());
                out.abort = Some(code.unwrap_or(1));
            }
            other => {
                return Self::refuse(
                    rank,
                    &format!("unknown_command_{other}"),
                    &format!("the unknown PMI command {:?}", shorten(other)),
                );
            }
        }
        out
    }

    /// `rank` exited or closed its connection. Having finalized, it no
    /// longer holds up barriers: returns the `barrier_out` answers this
    /// releases. Otherwise it holds them up for good (see
    /// [`blocking_departure`](Self::blocking_departure)).
    pub fn rank_gone(&mut self, rank: u32) -> Vec<(u32, String)> {
        let state = &mut self.ranks[rank as usize];
        state.gone = true;
        state.in_barrier = false;
        let space = state.space;
        self.complete_barrier(space)
    }

    /// How far `rank` got.
    pub fn stage(&self, rank: u32) -> Stage {
        self.ranks[rank as usize].stage
    }

    /// A rank that left without finalizing while others wait for it in a
    /// barrier it can never enter: the job cannot go on.
    pub fn blocking_departure(&self) -> Option<u32> {
        self.spaces.iter().find_map(|sp| {
            let state = |&id: &u32| &self.ranks[id as usize];
            if !sp.members.iter().any(|id| state(id).in_barrier) {
                return None;
            }
            sp.members
                .iter()
                .copied()
                .find(|id| state(id).gone && state(id).stage != Stage::Finalized)
        })
    }

    /// Answer `pset_create`: the new set's name, `mpix://OP/N`.
    fn create_pset(&mut self, fields: &HashMap<&str, &str>) -> String {
        let op = fields.get("op").copied().unwrap_or("");
        if !["union", "difference", "intersection"].contains(&op) {
            return "cmd=pset_create_result rc=-1 msg=unknown_operation".into();
        }
        let members = match fields.get("members") {
            Some(&"") => Vec::new(),
            Some(m) => match shm_engine::bootstrap::pset::parse_ranks(m) {
                Ok(r) if r.iter().all(|&id| id < self.universe) => r,
                _ => return "cmd=pset_create_result rc=-1 msg=bad_members".into(),
            },
            None => return "cmd=pset_create_result rc=-1 msg=missing_members".into(),
        };
        let name = self.register_pset(op, members);
        format!("cmd=pset_create_result rc=0 msg=success name={name}")
    }

    /// A line of a spawn request from `rank`: the request once complete.
    fn spawn_line(&mut self, rank: u32, text: &str) -> Outcome {
        let state = &mut self.ranks[rank as usize];
        if text == "endcmd" {
            let block = state.block.take().unwrap_or_default();
            state.spawn.push(block);
            let last = state.spawn.last().expect("just pushed");
            let (Some(total), Some(sofar)) = (
                last.get("totspawns").and_then(|v| v.parse::<usize>().ok()),
                last.get("spawnssofar")
                    .and_then(|v| v.parse::<usize>().ok()),
            ) else {
                state.spawn.clear();
                return Self::refuse_spawn(rank, "missing_totspawns_or_spawnssofar");
            };
            if sofar < total {
                return Outcome::default();
            }
            let blocks = std::mem::take(&mut state.spawn);
            return match spawn_request(rank, &blocks) {
                Ok(req) => Outcome {
                    spawn: Some(req),
                    ..Outcome::default()
                },
                Err(msg) => Self::refuse_spawn(rank, &msg),
            };
        }
        let block = state.block.get_or_insert_with(HashMap::new);
        match text.split_once('=') {
            Some((k, v)) => {
                block.insert(k.to_owned(), v.to_owned());
                Outcome::default()
            }
            None => {
                state.block = None;
                state.spawn.clear();
                Self::refuse_spawn(rank, "malformed_spawn_line")
            }
        }
    }

    fn refuse_spawn(rank: u32, msg: &str) -> Outcome {
        Outcome {
            replies: vec![(rank, format!("cmd=spawn_result rc=-1 msg={msg}"))],
            warning: Some(format!(
                "rank {rank} sent a bad spawn request ({msg}); answered rc=-1"
            )),
            ..Outcome::default()
        }
    }

    /// An error answer to `rank`, with a warning for the launcher's log.
    fn refuse(rank: u32, msg: &str, what: &str) -> Outcome {
        let msg: String = msg
            .chars()
            .map(|c| if c.is_whitespace() { '_' } else { c })
            .collect();
        Outcome {
            replies: vec![(rank, Self::error_line(&msg))],
            abort: None,
            warning: Some(format!("rank {rank} sent {what}; answered rc=-1")),
            spawn: None,
            dynres: None,
        }
    }

    /// Release job `space`'s barrier if every process of it that has not
    /// finalized is in it.
    fn complete_barrier(&mut self, space: usize) -> Vec<(u32, String)> {
        let members = &self.spaces[space].members;
        let state = |id: &u32| &self.ranks[*id as usize];
        let expected = |s: &RankState| s.stage != Stage::Finalized;
        let waiting = members.iter().filter(|id| state(id).in_barrier).count();
        if waiting == 0
            || members
                .iter()
                .any(|id| expected(state(id)) && !state(id).in_barrier)
        {
            return Vec::new();
        }
        let mut replies = Vec::with_capacity(waiting);
        for &id in members {
            let state = &mut self.ranks[id as usize];
            if state.in_barrier {
                state.in_barrier = false;
                replies.push((id, "cmd=barrier_out rc=0".to_owned()));
            }
        }
        replies
    }

    /// Check the kvsname and key of a put/get; the error `msg` otherwise.
    fn check_kvs_and_key<'a>(
        &self,
        rank: u32,
        fields: &HashMap<&str, &'a str>,
    ) -> Result<&'a str, &'static str> {
        match fields.get("kvsname") {
            Some(&name) if name == self.spaces[self.ranks[rank as usize].space].kvsname => {}
            Some(_) => return Err("unknown_kvsname"),
            None => return Err("missing_kvsname"),
        }
        let key = *fields.get("key").ok_or("missing_key")?;
        if key.is_empty() {
            return Err("empty_key");
        }
        if key.len() >= KEYLEN_MAX {
            return Err("key_too_long");
        }
        Ok(key)
    }

    /// Answer a put from `rank`, with a warning for the launcher's log the
    /// first time the store refuses that rank for being full.
    fn put(&mut self, rank: u32, fields: &HashMap<&str, &str>) -> (String, Option<String>) {
        let refuse = |msg: &str| (format!("cmd=put_result rc=-1 msg={msg}"), None);
        let key = match self.check_kvs_and_key(rank, fields) {
            Ok(key) => key,
            Err(msg) => return refuse(msg),
        };
        let space = self.ranks[rank as usize].space;
        let Some(&value) = fields.get("value") else {
            return refuse("missing_value");
        };
        if value.len() >= VALLEN_MAX {
            return refuse("value_too_long");
        }
        if key == PROCESS_MAPPING_KEY {
            return refuse("key_reserved");
        }
        let old = self.spaces[space].kvs.get(key).map(|v| key.len() + v.len());
        let bytes = self.kvs_bytes - old.unwrap_or(0) + key.len() + value.len();
        let state = &mut self.ranks[rank as usize];
        let full = if old.is_none() && state.keys >= KEYS_PER_RANK {
            Some(format!("more than {KEYS_PER_RANK} keys from one rank"))
        } else if bytes > KVS_BYTES {
            Some(format!(
                "more than {} MiB of keys and values",
                KVS_BYTES >> 20
            ))
        } else {
            None
        };
        if let Some(what) = full {
            let warning = (!std::mem::replace(&mut state.warned_full, true)).then(|| {
                format!(
                    "rank {rank}'s puts exceed the key-value store's bound ({what}); \
                     answered rc=-1"
                )
            });
            return (
                "cmd=put_result rc=-1 msg=key_value_store_full".to_owned(),
                warning,
            );
        }
        if old.is_none() {
            state.keys += 1;
        }
        self.kvs_bytes = bytes;
        self.spaces[space]
            .kvs
            .insert(key.to_owned(), value.to_owned());
        ("cmd=put_result rc=0 msg=success".to_owned(), None)
    }

    fn get(&self, rank: u32, fields: &HashMap<&str, &str>) -> String {
        let key = match self.check_kvs_and_key(rank, fields) {
            Ok(key) => key,
            Err(msg) => return format!("cmd=get_result rc=-1 msg={msg}"),
        };
        match self.spaces[self.ranks[rank as usize].space].kvs.get(key) {
            Some(value) => format!("cmd=get_result rc=0 msg=success value={value}"),
            None => format!("cmd=get_result rc=-1 msg=key_{key}_not_found"),
        }
    }
}

/// The request the spawn blocks of `by` describe.
fn spawn_request(by: u32, blocks: &[HashMap<String, String>]) -> Result<SpawnRequest, String> {
    let num = |b: &HashMap<String, String>, k: &str| -> Result<usize, String> {
        b.get(k)
            .map_or(Ok(0), |v| v.parse().map_err(|_| format!("bad_{k}")))
    };
    let mut req = SpawnRequest {
        by,
        ..SpawnRequest::default()
    };
    for b in blocks {
        let program = b.get("execname").cloned().ok_or("missing_execname")?;
        let procs = u32::try_from(num(b, "nprocs")?).map_err(|_| "bad_nprocs")?;
        let args = (1..=num(b, "argcnt")?)
            .map(|i| {
                b.get(&format!("arg{i}"))
                    .cloned()
                    .ok_or(format!("missing_arg{i}"))
            })
            .collect::<Result<_, _>>()?;
        let pairs = |n: &str, k: &str, v: &str| -> Result<Vec<(String, String)>, String> {
            (0..num(b, n)?)
                .map(|i| {
                    let key = b.get(&format!("{k}{i}")).cloned();
                    let val = b.get(&format!("{v}{i}")).cloned();
                    key.zip(val).ok_or(format!("missing_{k}{i}"))
                })
                .collect()
        };
        let info = pairs("info_num", "info_key_", "info_val_")?;
        req.preput = pairs("preput_num", "preput_key_", "preput_val_")?;
        req.apps.push(SpawnApp {
            program,
            args,
            procs,
            info,
        });
    }
    Ok(req)
}

/// Split a request into `key=value` pairs; `None` if a token has no `=`.
fn parse_fields(line: &str) -> Option<HashMap<&str, &str>> {
    let mut fields = HashMap::new();
    for token in line.split_ascii_whitespace() {
        let (key, value) = token.split_once('=')?;
        fields.insert(key, value);
    }
    Some(fields)
}

/// At most 80 bytes of `text` (on a char boundary), for log messages.
fn shorten(text: &str) -> &str {
    let mut end = text.len().min(80);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests;
