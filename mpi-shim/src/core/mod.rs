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

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use shm_engine::{Endpoint, Source, TagMatch, bootstrap};

use crate::abi::{self, MPI_Errhandler};

pub mod datatype;
pub mod group;
pub mod info;
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

/// The name of an error class, for messages.
pub fn class_name(class: i32) -> &'static str {
    match class {
        abi::MPI_SUCCESS => "MPI_SUCCESS",
        abi::MPI_ERR_BUFFER => "MPI_ERR_BUFFER",
        abi::MPI_ERR_COUNT => "MPI_ERR_COUNT",
        abi::MPI_ERR_TYPE => "MPI_ERR_TYPE",
        abi::MPI_ERR_TAG => "MPI_ERR_TAG",
        abi::MPI_ERR_COMM => "MPI_ERR_COMM",
        abi::MPI_ERR_RANK => "MPI_ERR_RANK",
        abi::MPI_ERR_ROOT => "MPI_ERR_ROOT",
        abi::MPI_ERR_GROUP => "MPI_ERR_GROUP",
        abi::MPI_ERR_OP => "MPI_ERR_OP",
        abi::MPI_ERR_ARG => "MPI_ERR_ARG",
        abi::MPI_ERR_TRUNCATE => "MPI_ERR_TRUNCATE",
        abi::MPI_ERR_OTHER => "MPI_ERR_OTHER",
        abi::MPI_ERR_INTERN => "MPI_ERR_INTERN",
        abi::MPI_ERR_IN_STATUS => "MPI_ERR_IN_STATUS",
        abi::MPI_ERR_REQUEST => "MPI_ERR_REQUEST",
        abi::MPI_ERR_UNSUPPORTED_OPERATION => "MPI_ERR_UNSUPPORTED_OPERATION",
        _ => "unknown error class",
    }
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
    /// Collective calls made on this communicator so far: every member
    /// numbers them alike (the engine tag of a collective carries it).
    pub coll_seq: u32,
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
            coll_seq: 0,
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
    /// A nonblocking collective: its schedule (see `crate::coll`).
    Coll(Box<crate::coll::Schedule>),
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

/// What the library knows once `MPI_Init` has run.
#[derive(Debug)]
pub struct Runtime {
    pub ep: Endpoint,
    /// Communicators by slot: 0 is `MPI_COMM_WORLD`, 1 `MPI_COMM_SELF`.
    comms: Vec<Option<Comm>>,
    reqs: Vec<Option<Req>>,
    free_reqs: Vec<usize>,
    /// Groups the application holds (`MPI_GROUP_EMPTY` is slot 0).
    pub groups: table::Table<group::Group>,
    /// Operations made by `MPI_Op_create`.
    pub ops: table::Table<crate::ops::UserOp>,
    /// Request slots that may hold a nonblocking collective (see
    /// `progress_colls`).
    coll_slots: Vec<usize>,
    /// The smallest context id this process has not seen in use.
    next_ctx: u32,
    pub thread_level: i32,
    /// The thread that initialized the library (`MPI_Is_thread_main`).
    pub main_thread: std::thread::ThreadId,
}

pub const WORLD: usize = 0;
pub const SELF: usize = 1;

impl Runtime {
    pub fn new(thread_level: i32) -> MpiResult<Self> {
        let boot = bootstrap::from_env()
            .map_err(|e| MpiError::new(abi::MPI_ERR_OTHER, format!("bootstrap: {e}")))?;
        let ep = Endpoint::new(boot)
            .map_err(|e| MpiError::new(abi::MPI_ERR_OTHER, format!("engine start-up: {e}")))?;
        let me = ep.rank();
        let world = Comm::new((0..ep.size()).collect(), me, 0);
        let selfc = Comm::new(vec![me], me, 2);
        Ok(Self {
            ep,
            comms: vec![Some(world), Some(selfc)],
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            groups: {
                let mut g = table::Table::new(1);
                g.set(0, group::Group::default());
                g
            },
            ops: table::Table::new(0),
            coll_slots: Vec::new(),
            next_ctx: 4,
            thread_level,
            main_thread: std::thread::current().id(),
        })
    }

    pub fn comm(&self, slot: usize) -> MpiResult<&Comm> {
        self.comms
            .get(slot)
            .and_then(Option::as_ref)
            .ok_or_else(|| MpiError::new(abi::MPI_ERR_COMM, "invalid communicator"))
    }

    pub fn comm_mut(&mut self, slot: usize) -> MpiResult<&mut Comm> {
        self.comms
            .get_mut(slot)
            .and_then(Option::as_mut)
            .ok_or_else(|| MpiError::new(abi::MPI_ERR_COMM, "invalid communicator"))
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

    /// The smallest context id free at every member of `parent`.
    fn agree_ctx(&mut self, parent: usize) -> MpiResult<u32> {
        let mut buf = self.next_ctx.to_ne_bytes();
        crate::coll::allreduce_max_u32(self, parent, &mut buf)?;
        let ctx = u32::from_ne_bytes(buf);
        if ctx >= u32::MAX - 2 {
            return Err(MpiError::new(abi::MPI_ERR_INTERN, "context ids exhausted"));
        }
        self.next_ctx = ctx + 2;
        Ok(ctx)
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
        // Collectives progress whatever request is tested (MPI-4.0 §6.12).
        self.progress_colls();
        match self.reqs.get(i).and_then(Option::as_ref) {
            Some(Req::Done(_)) => Ok(true),
            Some(Req::Engine { req, .. }) => Ok(self.ep.test(req)),
            Some(Req::Coll(s)) => Ok(s.is_done()),
            None => Err(MpiError::new(abi::MPI_ERR_REQUEST, "invalid request")),
        }
    }

    /// Wait for request `i`, release it and return its status.
    pub fn wait_req(&mut self, i: usize) -> MpiResult<abi::MPI_Status> {
        match self.take_req(i)? {
            Req::Done(st) => Ok(st),
            // Collectives: see `wait_coll`.
            Req::Coll(s) => self.wait_coll(s),
            Req::Engine { req, comm, staged } => {
                // Progresses collectives too (see `wait_engine`).
                let res = self.wait_engine(req);
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

// ---------------------------------------------------------------------
// Nonblocking collectives (MPI-4.0 §6.12): requests holding a schedule.

impl Runtime {
    /// Advance every outstanding collective schedule (MPI-4.0 §6.12: a
    /// collective makes progress whenever any request is waited for or
    /// tested, whichever order they are completed in). Returns whether
    /// anything happened and whether any collective is outstanding.
    pub fn progress_colls(&mut self) -> (bool, bool) {
        let reqs = &self.reqs;
        self.coll_slots
            .retain(|&i| matches!(reqs.get(i), Some(Some(Req::Coll(_)))));
        let mut did = false;
        for &i in &self.coll_slots {
            if let Some(Some(Req::Coll(s))) = self.reqs.get_mut(i) {
                did |= s.advance(&mut self.ep);
            }
        }
        (did, !self.coll_slots.is_empty())
    }

    /// Store a started nonblocking collective as a request.
    pub fn add_coll(&mut self, s: Box<crate::coll::Schedule>) -> usize {
        let i = self.add_req(Req::Coll(s));
        if !self.coll_slots.contains(&i) {
            self.coll_slots.push(i);
        }
        i
    }

    /// Wait for engine request `req`, progressing the outstanding
    /// collectives meanwhile: another process may need this one's next
    /// round of a collective before it sends what `req` waits for.
    fn wait_engine(
        &mut self,
        req: shm_engine::Request,
    ) -> Result<shm_engine::Completion, shm_engine::Error> {
        let mut idle = 0u32;
        loop {
            let (did, any) = self.progress_colls();
            if !any || self.ep.test(&req) {
                return self.ep.wait(req);
            }
            if did {
                idle = 0;
            } else {
                idle += 1;
                backoff(idle);
            }
        }
    }

    /// Run schedule `s` to its end, progressing the other outstanding
    /// collectives meanwhile (another process may wait for them first).
    pub fn wait_coll(&mut self, mut s: Box<crate::coll::Schedule>) -> MpiResult<abi::MPI_Status> {
        let mut idle = 0u32;
        loop {
            let mine = s.advance(&mut self.ep);
            if s.is_done() {
                break;
            }
            let (others, any) = self.progress_colls();
            if !any {
                // Nothing else to progress: sleep in the engine.
                s.block(&mut self.ep);
            } else if mine || others || self.ep.progress() {
                idle = 0;
            } else {
                idle += 1;
                backoff(idle);
            }
        }
        let comm = s.comm;
        s.result()
            .map(|()| abi::MPI_Status::new(abi::MPI_ANY_SOURCE, abi::MPI_ANY_TAG, 0))
            .map_err(|e| e.on(comm))
    }
}

/// Waiting with several schedules to progress: spin, then yield the core,
/// then nap briefly (oversubscribed jobs share cores).
fn backoff(idle: u32) {
    if idle < 64 {
        std::hint::spin_loop();
    } else if idle < 4096 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

/// Where the library is in its life.
#[derive(Debug)]
pub enum Phase {
    Before,
    Running(Box<Runtime>),
    After,
}

/// The phase behind the library lock.
#[derive(Debug)]
pub struct Locked(Phase);

// SAFETY: the endpoint is not `Send` only because its requests hold raw
// addresses of application buffers. Those stay valid whichever thread
// makes the next MPI call (the MPI standard forbids touching a buffer
// until its request completes, and the library lock serialises calls);
// nothing in the endpoint is tied to the thread that created it.
unsafe impl Send for Locked {}

static STATE: Mutex<Locked> = Mutex::new(Locked(Phase::Before));

/// The library's state, locked: one MPI call at a time (which is why the
/// library provides `MPI_THREAD_SERIALIZED`, not `MULTIPLE`).
pub fn state() -> StateGuard {
    StateGuard(
        STATE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    )
}

/// The locked library state.
#[derive(Debug)]
pub struct StateGuard(MutexGuard<'static, Locked>);

impl std::ops::Deref for StateGuard {
    type Target = Phase;
    fn deref(&self) -> &Phase {
        &self.0.0
    }
}

impl std::ops::DerefMut for StateGuard {
    fn deref_mut(&mut self) -> &mut Phase {
        &mut self.0.0
    }
}
