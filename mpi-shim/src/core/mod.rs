//! The MPI library's state, independent of any ABI: communicators (member
//! lists and context ids), requests, error handlers, and the engine.
//!
//! An ABI entry layer (today `mpich`, the MPICH ABI with `int` handles)
//! turns handles into indices here and results into its error codes, so a
//! second entry layer (the MPI-5 standard ABI) can share all of this.
//!
//! Every engine tag carries the communicator's context id in its upper 32
//! bits and the MPI tag below; a communicator owns two context ids, the
//! even one for point-to-point traffic and the next for its collectives.
//! Ids 0 and 2 are reserved for `MPI_COMM_WORLD` and `MPI_COMM_SELF`; the
//! ids from 4 up to [`session::BOOT_CTX_BASE`] are handed out by agreement
//! among a new communicator's members; the ids above are the bootstrap
//! contexts of [`session`].
//!
//! # Life cycle (MPI-4.0 §11.2, §11.3)
//!
//! The engine endpoint is created by the first of `MPI_Init`,
//! `MPI_Init_thread` and `MPI_Session_init` ([`Runtime::new`]; collective
//! over the job, as the engine's start-up is). The world model is built on
//! the session path: `MPI_Init` opens a hidden session and derives
//! `MPI_COMM_WORLD` and `MPI_COMM_SELF` from the `mpi://WORLD` and
//! `mpi://SELF` process sets through the code of
//! `MPI_Comm_create_from_group` (with context ids reserved for them, so
//! `MPI_Init` sends no message). Any number of sessions may be open at
//! once, before, during and after the world model; `MPI_Initialized` and
//! `MPI_Finalized` speak of the world model only, and `MPI_Init` after
//! `MPI_Finalize` is an error.
//!
//! The engine outlives the last session and the world model: it stays
//! until the process exits, and an exit handler of the entry layer leaves
//! the job then (a fence and PMI `finalize`, collective over the job). The
//! process manager's connection cannot be opened twice (`PMI_FD` is handed
//! over once), so an engine finalized early could not serve a later
//! `MPI_Session_init`; and a process that closes its PMI connection without
//! `finalize` makes MPICH's Hydra end the job, so the exit handler must
//! send it. A process exiting with a non-zero status skips the handler's
//! fence: it is failing, and its launcher ends the job; so does a process
//! that exits from inside an MPI call (an abort), which holds the lock.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use shm_engine::{Endpoint, Source, TagMatch, bootstrap};

use crate::abi::{self, MPI_Errhandler};

pub mod datatype;
pub mod group;
pub mod info;
pub mod session;
pub mod table;

/// An MPI error: its class and what the application should be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiError {
    pub class: i32,
    pub message: String,
    /// The communicator slot whose error handler applies, when it is not
    /// the one the call names (a request's communicator).
    pub comm: Option<usize>,
}

impl MpiError {
    pub fn new(class: i32, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
            comm: None,
        }
    }
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, class_name(self.class))
    }
}

pub type MpiResult<T> = Result<T, MpiError>;

/// The name of an error class, for messages: from the ABI table, where
/// every predefined class is (`MPI_SUCCESS`, `MPI_ERR_*`, `MPI_T_ERR_*`).
pub fn class_name(class: i32) -> &'static str {
    abi::CONSTANTS
        .iter()
        .filter(|c| {
            c.name == "MPI_SUCCESS"
                || c.name.starts_with("MPI_ERR_")
                || c.name.starts_with("MPI_T_ERR_")
        })
        .find(|c| c.value == i64::from(class) && c.name != "MPI_ERR_LASTCODE")
        .map_or("unknown error class", |c| c.name)
}

/// Whether `class` is one of the predefined error classes.
pub fn is_predefined_class(class: i32) -> bool {
    class_name(class) != "unknown error class"
}

impl From<shm_engine::Error> for MpiError {
    fn from(e: shm_engine::Error) -> Self {
        let class = match e {
            shm_engine::Error::InvalidPeer { .. } => abi::MPI_ERR_RANK,
            shm_engine::Error::Truncated { .. } => abi::MPI_ERR_TRUNCATE,
            _ => abi::MPI_ERR_OTHER,
        };
        MpiError::new(class, e.to_string())
    }
}

impl MpiError {
    fn on(mut self, comm: usize) -> Self {
        self.comm = Some(comm);
        self
    }
}

/// A communicator: who is in it, in rank order, and its context ids.
#[derive(Debug)]
pub struct Comm {
    /// Job rank (engine process id) of each member.
    pub members: Vec<u32>,
    /// Member index of each job rank in the communicator.
    pub rank_of: HashMap<u32, i32>,
    /// This process's rank in the communicator.
    pub rank: i32,
    /// Even context id: point-to-point; `ctx + 1`: collectives.
    pub ctx: u32,
    pub errhandler: MPI_Errhandler,
}

impl Comm {
    fn new(members: Vec<u32>, me: u32, ctx: u32) -> Self {
        let rank_of: HashMap<u32, i32> = members
            .iter()
            .enumerate()
            .map(|(i, &w)| (w, i as i32))
            .collect();
        Self {
            rank: rank_of[&me],
            members,
            rank_of,
            ctx,
            errhandler: abi::MPI_ERRORS_ARE_FATAL,
        }
    }

    pub fn size(&self) -> i32 {
        self.members.len() as i32
    }

    /// The engine tag of MPI tag `tag` (>= 0) in context `ctx`.
    pub fn tag(ctx: u32, tag: i32) -> u64 {
        u64::from(ctx) << 32 | u64::from(tag as u32)
    }

    /// The engine matcher for `tag` (or `MPI_ANY_TAG`) in context `ctx`.
    pub fn tag_match(ctx: u32, tag: i32) -> TagMatch {
        if tag == abi::MPI_ANY_TAG {
            TagMatch::masked(u64::from(ctx) << 32, 0xffff_ffff << 32)
        } else {
            TagMatch::exact(Self::tag(ctx, tag))
        }
    }

    /// The engine source for rank `src` (or `MPI_ANY_SOURCE`).
    pub fn source(&self, src: i32) -> Source {
        if src == abi::MPI_ANY_SOURCE {
            Source::Any
        } else {
            Source::Rank(self.members[src as usize])
        }
    }
}

/// A request in flight, or one that completed at once (`MPI_PROC_NULL`).
#[derive(Debug)]
pub enum Req {
    Engine {
        req: shm_engine::Request,
        /// Communicator slot, to translate the source and pick the error
        /// handler.
        comm: usize,
        /// A receive into a non-contiguous datatype lands packed and is
        /// scattered at completion; a non-contiguous send keeps its packed
        /// copy alive here until the engine is done with it.
        staged: Option<Staged>,
    },
    Done(abi::MPI_Status),
}

/// The packed copy of a non-contiguous message.
#[derive(Debug)]
pub enum Staged {
    /// Sent from this buffer; dropped at completion.
    Send(Vec<u8>),
    /// Received into `packed`; unpacked into the user's elements.
    Recv(Unpack),
}

/// Where a packed receive goes at completion.
#[derive(Debug)]
pub struct Unpack {
    pub packed: Vec<u8>,
    pub dst: *mut u8,
    pub count: usize,
    pub dt: std::sync::Arc<datatype::Datatype>,
}

/// What the library knows from its first initialization (world model or
/// session) to the process's exit.
#[derive(Debug)]
pub struct Runtime {
    pub ep: Endpoint,
    /// Communicators by slot: 0 is `MPI_COMM_WORLD`, 1 `MPI_COMM_SELF`
    /// (both empty outside the world model).
    comms: Vec<Option<Comm>>,
    reqs: Vec<Option<Req>>,
    free_reqs: Vec<usize>,
    /// Groups the application holds (`MPI_GROUP_EMPTY` is slot 0).
    pub groups: table::Table<group::Group>,
    /// The smallest context id this process has not seen in use.
    next_ctx: u32,
    /// The world model's thread level (`MPI_Query_thread`).
    pub thread_level: i32,
    /// The thread that initialized the world model (`MPI_Is_thread_main`).
    pub main_thread: std::thread::ThreadId,
    /// Open sessions, the world model's hidden one included.
    pub sessions: table::Table<session::Session>,
    /// The process sets of the job, the same in every session.
    pub psets: Vec<session::Pset>,
    /// Where the world model is.
    pub world: Phase,
}

pub const WORLD: usize = 0;
pub const SELF: usize = 1;

impl Runtime {
    /// Start the engine and learn the job's process sets. Collective over
    /// every process of the job.
    pub fn new() -> MpiResult<Self> {
        let boot = bootstrap::from_env()
            .map_err(|e| MpiError::new(abi::MPI_ERR_OTHER, format!("bootstrap: {e}")))?;
        let mut ep = Endpoint::new(boot)
            .map_err(|e| MpiError::new(abi::MPI_ERR_OTHER, format!("engine start-up: {e}")))?;
        let psets = session::job_psets(&mut ep)?;
        Ok(Self {
            ep,
            comms: vec![None, None],
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            groups: {
                let mut g = table::Table::new(1);
                g.set(0, group::Group::default());
                g
            },
            next_ctx: session::FIRST_AGREED_CTX,
            thread_level: abi::MPI_THREAD_SINGLE,
            main_thread: std::thread::current().id(),
            sessions: table::Table::new(0),
            psets,
            world: Phase::Before,
        })
    }

    pub fn comm(&self, slot: usize) -> MpiResult<&Comm> {
        self.comms
            .get(slot)
            .and_then(Option::as_ref)
            .ok_or_else(|| self.no_comm(slot))
    }

    pub fn comm_mut(&mut self, slot: usize) -> MpiResult<&mut Comm> {
        let e = self.no_comm(slot);
        self.comms.get_mut(slot).and_then(Option::as_mut).ok_or(e)
    }

    /// Why there is no communicator in `slot`.
    fn no_comm(&self, slot: usize) -> MpiError {
        let what = match slot {
            WORLD => "MPI_COMM_WORLD",
            SELF => "MPI_COMM_SELF",
            _ => return MpiError::new(abi::MPI_ERR_COMM, "invalid communicator"),
        };
        let why = match self.world {
            Phase::After => "after MPI_Finalize",
            _ => "without MPI_Init: a process using only sessions has no world communicator",
        };
        MpiError::new(abi::MPI_ERR_COMM, format!("{what} used {why}"))
    }

    /// Collective over `parent`: a new communicator with the same members
    /// and fresh context ids agreed by all of them.
    pub fn comm_dup(&mut self, parent: usize) -> MpiResult<usize> {
        let ctx = self.agree_ctx(parent)?;
        let p = self.comm(parent)?;
        let mut c = Comm::new(p.members.clone(), self.ep.rank(), ctx);
        c.errhandler = p.errhandler;
        self.comms.push(Some(c));
        Ok(self.comms.len() - 1)
    }

    /// The smallest context id free at every member of `parent`: every
    /// member proposes its own smallest unused id and the largest wins, so
    /// the id is unused at each of them. Needs only `parent`'s members.
    fn agree_ctx(&mut self, parent: usize) -> MpiResult<u32> {
        let mut buf = self.next_ctx.to_ne_bytes();
        crate::coll::allreduce_max_u32(self, parent, &mut buf)?;
        let ctx = u32::from_ne_bytes(buf);
        if ctx >= session::BOOT_CTX_BASE - 2 {
            return Err(MpiError::new(abi::MPI_ERR_INTERN, "context ids exhausted"));
        }
        self.next_ctx = ctx + 2;
        Ok(ctx)
    }

    /// Store `c` in slot `slot` (a predefined communicator) or a new slot.
    fn place_comm(&mut self, c: Comm, slot: Option<usize>) -> usize {
        match slot {
            Some(s) => {
                self.comms[s] = Some(c);
                s
            }
            None => {
                self.comms.push(Some(c));
                self.comms.len() - 1
            }
        }
    }

    pub fn comm_free(&mut self, slot: usize) -> MpiResult<()> {
        if slot <= SELF {
            return Err(MpiError::new(
                abi::MPI_ERR_COMM,
                "predefined communicators cannot be freed",
            ));
        }
        self.comm(slot)?;
        self.comms[slot] = None;
        Ok(())
    }

    pub fn add_req(&mut self, r: Req) -> usize {
        if let Some(i) = self.free_reqs.pop() {
            self.reqs[i] = Some(r);
            i
        } else {
            self.reqs.push(Some(r));
            self.reqs.len() - 1
        }
    }

    pub fn take_req(&mut self, i: usize) -> MpiResult<Req> {
        let r = self
            .reqs
            .get_mut(i)
            .and_then(Option::take)
            .ok_or_else(|| MpiError::new(abi::MPI_ERR_REQUEST, "invalid request"))?;
        self.free_reqs.push(i);
        Ok(r)
    }

    /// Whether request `i` has completed (progressing the engine once).
    pub fn req_done(&mut self, i: usize) -> MpiResult<bool> {
        match self.reqs.get(i).and_then(Option::as_ref) {
            Some(Req::Done(_)) => Ok(true),
            Some(Req::Engine { req, .. }) => Ok(self.ep.test(req)),
            None => Err(MpiError::new(abi::MPI_ERR_REQUEST, "invalid request")),
        }
    }

    /// Wait for request `i`, release it and return its status.
    pub fn wait_req(&mut self, i: usize) -> MpiResult<abi::MPI_Status> {
        match self.take_req(i)? {
            Req::Done(st) => Ok(st),
            Req::Engine { req, comm, staged } => {
                let res = self.ep.wait(req);
                if let (Ok(done), Some(Staged::Recv(u))) = (&res, &staged) {
                    // SAFETY: the receive's elements stay valid until its
                    // request completes (MPI contract); this is completion.
                    unsafe { u.dt.unpack(&u.packed[..done.status.len], u.count, u.dst) };
                }
                let c = self.comm(comm)?;
                let status_of = |source: u32, tag: u64, len: usize| {
                    abi::MPI_Status::new(
                        c.rank_of
                            .get(&source)
                            .copied()
                            .unwrap_or(abi::MPI_ANY_SOURCE),
                        tag as u32 as i32,
                        len,
                    )
                };
                let res = match res {
                    Ok(done) => Ok(status_of(
                        done.status.source,
                        done.status.tag,
                        done.status.len,
                    )),
                    Err(shm_engine::Error::Truncated {
                        source,
                        tag,
                        incoming,
                        capacity,
                    }) => Err(MpiError::new(
                        abi::MPI_ERR_TRUNCATE,
                        format!(
                            "message of {incoming} bytes from rank {} (tag {}) truncated to the {capacity}-byte receive buffer",
                            c.rank_of.get(&source).copied().unwrap_or(-1),
                            tag as u32 as i32
                        ),
                    )),
                    Err(e) => Err(e.into()),
                };
                res.map_err(|e: MpiError| e.on(comm))
            }
        }
    }
}

/// Where the world model is: `MPI_Initialized` is true from `Running`
/// on, `MPI_Finalized` in `After`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Before,
    /// Between `MPI_Init` and `MPI_Finalize`; the world's hidden session.
    Running {
        session: usize,
    },
    After,
}

/// The library: nothing before the first initialization, the runtime
/// from then until the process exits.
#[derive(Debug, Default)]
pub enum Library {
    #[default]
    Before,
    Running(Box<Runtime>),
    /// The exit handler left the job; the process is ending.
    Exited,
}

impl Library {
    /// The world model's phase.
    pub fn world(&self) -> Phase {
        match self {
            Self::Before => Phase::Before,
            Self::Running(rt) => rt.world,
            Self::Exited => Phase::After,
        }
    }
}

/// The library behind its lock.
#[derive(Debug)]
pub struct Locked(Library);

// SAFETY: the endpoint is not `Send` only because its requests hold raw
// addresses of application buffers. Those stay valid whichever thread
// makes the next MPI call (the MPI standard forbids touching a buffer
// until its request completes, and the library lock serialises calls);
// nothing in the endpoint is tied to the thread that created it.
unsafe impl Send for Locked {}

static STATE: Mutex<Locked> = Mutex::new(Locked(Library::Before));

/// The library's state, locked: one MPI call at a time (which is why the
/// library provides `MPI_THREAD_SERIALIZED`, not `MULTIPLE`).
pub fn state() -> StateGuard {
    StateGuard(
        STATE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    )
}

/// The library's state if no call holds it (`None` when the process exits
/// from inside an MPI call, as an abort does).
pub fn try_state() -> Option<StateGuard> {
    match STATE.try_lock() {
        Ok(g) => Some(StateGuard(g)),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(StateGuard(p.into_inner())),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// The locked library state.
#[derive(Debug)]
pub struct StateGuard(MutexGuard<'static, Locked>);

impl std::ops::Deref for StateGuard {
    type Target = Library;
    fn deref(&self) -> &Library {
        &self.0.0
    }
}

impl std::ops::DerefMut for StateGuard {
    fn deref_mut(&mut self) -> &mut Library {
        &mut self.0.0
    }
}
