//! The MPI library's state, independent of any ABI: communicators (member
//! lists and context ids), requests, error handlers, and the engine.
//!
//! The core speaks its own types, never an ABI's numbers: error classes and
//! codes ([`error`]), ranks and tags with their wildcards ([`peer`]), a
//! status ([`status`]), error handlers, thread levels, topology kinds and
//! predefined attributes as enums, objects by slot. An entry layer (`mpich`,
//! the MPICH ABI with `int` handles; `std_abi`, the MPI-5 standard ABI,
//! which translates into it) turns its handles and constants into these
//! and back.
//!
//! Every engine tag carries the communicator's context id in its upper 32
//! bits and the MPI tag below; a communicator owns two context ids, the
//! even one for point-to-point traffic and the next for its collectives.
//! The first ids are reserved for `MPI_COMM_WORLD` and `MPI_COMM_SELF`;
//! the ids from [`session::FIRST_AGREED_CTX`] up to
//! [`session::BOOT_CTX_BASE`] are handed out by agreement among a new
//! communicator's members, each followed by a block for its duplicates
//! ([`comm`]); the ids above are the bootstrap contexts of [`session`].
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

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use shm_engine::lock::{Lock, LockGuard};
use shm_engine::{Endpoint, bootstrap};

use progress::Poll;

pub mod attr;
pub mod bsend;
pub mod buffer;
pub mod comm;
pub mod completion;
pub mod datatype;
pub mod dynamic;
pub mod dynres;
pub mod errh;
pub mod error;
pub mod group;
pub mod hwsplit;
pub mod info;
pub mod intercomm;
pub mod p2p;
pub mod partitioned;
pub mod peer;
pub mod pool;
pub mod progress;
pub mod recvbuf;
pub mod request;
pub mod session;
pub mod status;
pub mod table;
pub mod threads;
pub mod topo;
pub mod win;

pub use comm::Comm;
pub use error::{Class, Code, MpiError, MpiResult};
pub use status::Status;

/// Tell the user something on standard error, as one line written at
/// once, so that the lines of several processes sharing the launcher's
/// pipe never interleave.
pub fn report(message: &str) {
    use std::io::Write;
    let line = format!("Tessel MPI: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// A request in flight, or one that completed at once (`MPI_PROC_NULL`).
/// Completion (MPI-4.0 §3.7): [`Runtime::req_done`] tests, and
/// [`Runtime::wait_req`] waits and returns the status.
#[derive(Debug)]
pub enum Req {
    Engine {
        req: shm_engine::Request,
        /// Communicator slot, to translate the source and pick the error
        /// handler.
        comm: usize,
        /// A non-contiguous message the engine does not move piece by
        /// piece (small blocks): a receive lands packed and is scattered
        /// at completion; a send keeps its packed copy alive here until
        /// the engine is done with it.
        staged: Option<Staged>,
    },
    Done(Status),
    /// A persistent request (MPI-4.0 §3.9), active or not.
    Persistent(request::Persistent),
    /// A generalized request (MPI-4.0 §13.2).
    Generalized(request::Generalized),
    /// A nonblocking collective: its schedule (see `crate::coll`).
    Coll(Box<crate::coll::Schedule>),
    /// `MPI_Isendrecv` (MPI-4.0 §3.10): a receive and a send, complete
    /// when both are, with the receive's status.
    Pair {
        recv: Box<Req>,
        send: Box<Req>,
    },
    /// `MPI_Buffer_iflush` and friends (MPI-4.1 §3.6.1): complete once
    /// the buffered messages of the scope are delivered.
    Flush(bsend::Scope),
    /// A round of a partitioned send or receive (MPI-4.0 chapter 4).
    Part(partitioned::Round),
    /// A request-based one-sided operation (MPI-4.1 §12.3.5) waiting for
    /// its reply: window slot and reply id.
    Rma {
        win: usize,
        id: u64,
    },
}

impl Req {
    /// Whether this is a collective in progress: a nonblocking one, or a
    /// round of a persistent one.
    fn is_coll(&self) -> bool {
        match self {
            Req::Coll(_) => true,
            Req::Persistent(p) => matches!(p.active.as_deref(), Some(Req::Coll(_))),
            _ => false,
        }
    }

    /// The schedule of a collective in progress.
    fn schedule(&mut self) -> Option<&mut crate::coll::Schedule> {
        match self {
            Req::Coll(s) => Some(s),
            Req::Persistent(p) => match p.active.as_deref_mut() {
                Some(Req::Coll(s)) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The packed copy of a non-contiguous message whose blocks are too
/// small to move piece by piece.
#[derive(Debug)]
pub enum Staged {
    /// Sent from this buffer; dropped at completion.
    Send(Vec<u8>),
    /// Received into `packed`; unpacked into the user's elements.
    Recv(Unpack),
}

impl Drop for Staged {
    fn drop(&mut self) {
        let v = match self {
            Staged::Send(v) => v,
            Staged::Recv(u) => &mut u.packed,
        };
        pool::give(std::mem::take(v));
    }
}

/// Where a packed receive goes at completion.
#[derive(Debug)]
pub struct Unpack {
    pub packed: Vec<u8>,
    pub dst: *mut u8,
    pub count: usize,
    pub dt: datatype::TypeRef,
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
    /// Requests freed by `MPI_Request_free` while active: completed (and
    /// dropped) as they finish.
    detached: Vec<Req>,
    /// Messages taken by matched probes.
    pub messages: table::Table<request::Matched>,
    /// Buffers of library-managed receives (`MPI_Irecv` with no buffer).
    pub recv_bufs: recvbuf::Store,
    /// The buffer of buffered sends, when attached.
    /// The buffer of `MPI_Buffer_attach` (see [`bsend`]).
    pub bsend: Option<bsend::Attached>,
    /// Groups the application holds (`MPI_GROUP_EMPTY` is slot 0).
    pub groups: table::Table<group::Group>,
    /// Operations made by `MPI_Op_create`.
    pub ops: table::Table<crate::ops::UserOp>,
    /// Request slots that may hold a nonblocking collective (see
    /// `progress_colls`).
    coll_slots: Vec<usize>,
    /// Derived datatypes the application holds; slots below
    /// [`FIRST_DERIVED_TYPE`] are never used, so that an entry layer can
    /// give its predefined types handles of those indices.
    pub types: table::Table<std::sync::Arc<datatype::Datatype>>,
    /// Names the application gave predefined datatypes, by the entry
    /// layer's handle (MPI-4.0 §7.8 allows renaming them).
    pub predefined_type_names: HashMap<i32, String>,
    /// The parameterized Fortran types made so far (MPI-4.1 §19.1.9), by
    /// combiner and arguments: their slots in `types`, so that asking
    /// again gives the same type.
    pub f90_types: HashMap<(datatype::Combiner, Vec<i32>), usize>,
    /// The smallest context id this process has not seen in use.
    next_ctx: u32,
    /// The windows of one-sided communication.
    pub wins: win::Windows,
    /// Context-id agreements of `MPI_Comm_idup` in flight: another
    /// creation waits for them (see `comm`).
    agreements: usize,
    /// Keyvals, datatype attributes, predefined attribute values.
    pub attrs: attr::Attrs,
    /// User error handlers and error codes.
    pub errors: errh::Errors,
    /// Open sessions, the world model's hidden one included.
    pub sessions: table::Table<session::Session>,
    /// The process sets of the job, the same in every session: the job's
    /// own, then those created while it runs ([`Runtime::refresh_psets`]).
    pub psets: Vec<session::Pset>,
    /// How many created sets `psets` holds.
    created_psets: usize,
    /// Where the world model is.
    pub world: Phase,
    /// The parent, and the ports open here.
    pub dynamic: dynamic::Dynamic,
    /// Resource changes seen and accepted here.
    pub dynres: dynres::Dynres,
}

pub const WORLD: usize = 0;
pub const SELF: usize = 1;
/// The first slot of the datatype table.
pub const FIRST_DERIVED_TYPE: usize = 64;

impl Runtime {
    /// Start the engine and learn the job's process sets. Collective over
    /// every process of the job.
    pub fn new() -> MpiResult<Self> {
        // The thread that makes the runtime is the main one until
        // `MPI_Init(_thread)` (unless one asked before).
        world_threads();
        let boot = bootstrap::from_env()
            .map_err(|e| MpiError::new(Class::Other, format!("bootstrap: {e}")))?;
        let mut ep = Endpoint::new(boot)
            .map_err(|e| MpiError::new(Class::Other, format!("engine start-up: {e}")))?;
        let psets = session::job_psets(&mut ep)?;
        Ok(Self {
            ep,
            comms: vec![None, None],
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            detached: Vec::new(),
            messages: table::Table::new(0),
            recv_bufs: recvbuf::Store::default(),
            bsend: None,
            ops: table::Table::new(0),
            coll_slots: Vec::new(),
            groups: {
                let mut g = table::Table::new(1);
                g.set(0, group::Group::default());
                g
            },
            types: table::Table::new(FIRST_DERIVED_TYPE),
            predefined_type_names: HashMap::new(),
            f90_types: HashMap::new(),
            next_ctx: session::FIRST_AGREED_CTX,
            agreements: 0,
            wins: win::Windows::default(),
            attrs: attr::Attrs::default(),
            errors: errh::Errors::default(),
            sessions: table::Table::new(0),
            psets,
            created_psets: 0,
            world: Phase::Before,
            dynamic: dynamic::Dynamic::default(),
            dynres: dynres::Dynres::default(),
        })
    }

    pub fn comm(&self, slot: usize) -> MpiResult<&Comm> {
        self.comms
            .get(slot)
            .and_then(Option::as_ref)
            .ok_or_else(|| self.no_comm(slot))
    }

    pub fn comm_mut(&mut self, slot: usize) -> MpiResult<&mut Comm> {
        if !self.comms.get(slot).is_some_and(Option::is_some) {
            return Err(self.no_comm(slot));
        }
        Ok(self.comms[slot].as_mut().expect("checked above"))
    }

    /// Why there is no communicator in `slot`.
    fn no_comm(&self, slot: usize) -> MpiError {
        let what = match slot {
            WORLD => "MPI_COMM_WORLD",
            SELF => "MPI_COMM_SELF",
            _ => return MpiError::new(Class::Comm, "invalid communicator"),
        };
        let why = match self.world {
            Phase::After => "after MPI_Finalize",
            _ => "without MPI_Init: a process using only sessions has no world communicator",
        };
        MpiError::new(Class::Comm, format!("{what} used {why}"))
    }

    pub fn add_req(&mut self, r: Req) -> usize {
        if !self.detached.is_empty() {
            self.reap_detached();
        }
        if let Some(i) = self.free_reqs.pop() {
            self.reqs[i] = Some(r);
            i
        } else {
            self.reqs.push(Some(r));
            self.reqs.len() - 1
        }
    }

    /// Take request `i` out of its slot, freeing the slot.
    pub fn take_req(&mut self, i: usize) -> MpiResult<Req> {
        let r = self
            .reqs
            .get_mut(i)
            .and_then(Option::take)
            .ok_or_else(invalid_request)?;
        self.free_reqs.push(i);
        Ok(r)
    }

    /// Put request `i` back after [`take_req`](Self::take_req): persistent
    /// and generalized requests outlive some of the calls that take them.
    fn restore_req(&mut self, i: usize, r: Req) {
        self.free_reqs.retain(|&f| f != i);
        self.reqs[i] = Some(r);
    }

    /// Whether slot `i` holds a request.
    pub fn req_exists(&self, i: usize) -> bool {
        matches!(self.reqs.get(i), Some(Some(_)))
    }

    /// Whether request `i` is persistent (its handle survives completion).
    pub fn is_persistent(&self, i: usize) -> bool {
        matches!(self.reqs.get(i), Some(Some(Req::Persistent(_))))
    }

    /// Whether request `i` is active: every request but an inactive
    /// persistent one (MPI-4.0 §3.7.5 ignores inactive ones).
    pub fn is_active(&self, i: usize) -> MpiResult<bool> {
        match self.reqs.get(i).and_then(Option::as_ref) {
            Some(Req::Persistent(p)) => Ok(p.active.is_some()),
            Some(_) => Ok(true),
            None => Err(invalid_request()),
        }
    }

    /// Whether request `i` has completed (progressing the engine once).
    /// An inactive persistent request counts as complete.
    pub fn req_done(&mut self, i: usize) -> MpiResult<bool> {
        self.ep.progress();
        // Collectives progress whatever request is tested (MPI-4.0 §6.12),
        // and so do the windows' messages.
        self.progress_colls();
        self.serve_windows();
        match self.reqs.get(i).and_then(Option::as_ref) {
            Some(r) => Ok(self.is_ready(r)),
            None => Err(invalid_request()),
        }
    }

    /// Whether request `i` can be completed without waiting, without
    /// progressing (a waiting loop's turn progresses).
    pub fn req_ready(&self, i: usize) -> MpiResult<bool> {
        match self.reqs.get(i).and_then(Option::as_ref) {
            // `wait_req` refuses it at once.
            Some(Req::Persistent(p)) if partitioned::unstarted(p) => Ok(true),
            Some(r) => Ok(self.is_ready(r)),
            None => Err(invalid_request()),
        }
    }

    /// Wait for request `i` and return its status. The request is freed,
    /// except a persistent one, which becomes inactive (waiting on an
    /// inactive one returns the empty status at once, MPI-4.0 §3.9).
    pub fn wait_req(&mut self, i: usize) -> MpiResult<Status> {
        match self.take_req(i)? {
            Req::Persistent(p) if partitioned::unstarted(&p) => {
                self.restore_req(i, Req::Persistent(p));
                Err(MpiError::new(
                    Class::Request,
                    "waiting for a partitioned send before every partition is ready (MPI_Pready) would never return",
                ))
            }
            Req::Persistent(mut p) => {
                let res = match p.active.take() {
                    Some(round) => self.finish(*round),
                    None => Ok(Status::empty()),
                };
                self.restore_req(i, Req::Persistent(p));
                res
            }
            Req::Generalized(g) => self.finish_generalized(i, g),
            r => self.finish(r),
        }
    }

    /// Wait for request `r`, which a blocking call started and never put
    /// in the table: the call waits for it under the lock it started it
    /// with, so the request needs no slot. Requests the application freed
    /// that have finished are finished first, as [`add_req`](Self::add_req)
    /// does for calls that store a request.
    pub fn wait_started(&mut self, r: Req) -> MpiResult<Status> {
        self.reap_freed();
        self.finish(r)
    }

    /// Finish the requests the application freed that have finished.
    #[inline]
    fn reap_freed(&mut self) {
        if !self.detached.is_empty() {
            self.reap_detached();
        }
    }

    /// Wait for a request taken out of the table that is neither
    /// persistent nor generalized (those two live on in their slot): a
    /// plain request, or a round of a persistent one.
    fn finish(&mut self, r: Req) -> MpiResult<Status> {
        match r {
            Req::Done(st) => done_result(st),
            Req::Engine { req, comm, staged } => self.finish_engine(req, comm, staged),
            Req::Coll(s) => self.wait_coll(s),
            Req::Pair { recv, send } => {
                let sent = self.finish(*send);
                let got = self.finish(*recv);
                sent.and(got)
            }
            Req::Flush(scope) => {
                self.flush_buffer(scope)?;
                Ok(Status::empty())
            }
            Req::Rma { win, id } => {
                self.wait_until(|rt| Ok(rt.win_replied(win, id).then_some(()).into()))?;
                Ok(Status::empty())
            }
            Req::Part(round) => match round.op {
                Some(op) => self.finish(*op),
                None => Err(MpiError::new(
                    Class::Intern,
                    "a partitioned send finished before it started",
                )),
            },
            Req::Persistent(_) | Req::Generalized(_) => Err(MpiError::new(
                Class::Intern,
                format!("a request finished out of its slot: {r:?}"),
            )),
        }
    }

    /// Wait for an engine request; unpack a non-contiguous receive.
    fn finish_engine(
        &mut self,
        req: shm_engine::Request,
        comm: usize,
        staged: Option<Staged>,
    ) -> MpiResult<Status> {
        // Progresses collectives too (see `wait_engine`).
        let res = self.wait_engine(req);
        if let (Ok(done), Some(Staged::Recv(u))) = (&res, &staged) {
            // SAFETY: the receive's elements stay valid until its
            // request completes (MPI contract); this is completion.
            unsafe { u.dt.unpack(&u.packed[..done.status.len], u.count, u.dst) };
        }
        let c = self.comm(comm)?;
        let rank_of = |source: u32| c.peer_rank(source);
        let res = match res {
            Ok(done) if done.status.cancelled => Ok(Status::cancelled()),
            Ok(done) => {
                let st = c.status_of(&done.status);
                if let Some(buf) = done.buffer {
                    self.recv_bufs.complete(&st, buf);
                }
                Ok(st)
            }
            Err(shm_engine::Error::Truncated {
                source,
                tag,
                incoming,
                capacity,
            }) => Err(MpiError::new(
                Class::Truncate,
                format!(
                    "message of {incoming} bytes from rank {} (tag {}) truncated to the {capacity}-byte receive buffer",
                    rank_of(source).unwrap_or(-1),
                    tag as u32 as i32
                ),
            )),
            Err(e) => Err(e.into()),
        };
        res.map_err(|e: MpiError| e.on(comm))
    }

    /// Complete a generalized request: its query, then its free callback
    /// (MPI-4.0 §13.2). One the application has not completed cannot be
    /// waited for here: below `MPI_THREAD_MULTIPLE` no other MPI call can
    /// run meanwhile, so the wait would never end (under it, the blocking
    /// entries wait with the lock released for another thread's
    /// `MPI_Grequest_complete` before they get here, [`threads`]).
    fn finish_generalized(&mut self, i: usize, mut g: request::Generalized) -> MpiResult<Status> {
        if !g.complete {
            self.restore_req(i, Req::Generalized(g));
            return Err(MpiError::new(
                Class::Request,
                "waiting for a generalized request that is not complete would never return: call MPI_Grequest_complete first",
            ));
        }
        let mut st = Status::empty();
        let query = run_callback(|| (g.query)(&mut st));
        let free = run_callback(|| (g.free)());
        request::callback_result(query, "query")?;
        request::callback_result(free, "free")?;
        Ok(st)
    }

    /// The status of request `i` if it is complete, without freeing it or
    /// making it inactive (`MPI_Request_get_status`, MPI-4.0 §3.7.6).
    pub fn req_status(&mut self, i: usize) -> MpiResult<Option<Status>> {
        self.ep.progress();
        let r = self.take_req(i)?;
        let (r, st) = self.settle(r);
        self.restore_req(i, r);
        match st {
            Some(st) if !st.error.is_success() => done_result(st).map(Some),
            st => Ok(st),
        }
    }

    /// A completed request's status, and the request to keep in its place
    /// (a finished engine request becomes `Done` with its status).
    fn settle(&mut self, r: Req) -> (Req, Option<Status>) {
        match r {
            Req::Done(st) => (r, Some(st)),
            Req::Engine { ref req, .. } if !self.ep.is_complete(req) => (r, None),
            Req::Engine { req, comm, staged } => {
                let st = self
                    .finish_engine(req, comm, staged)
                    .unwrap_or_else(|e| Status::error(e.code));
                (Req::Done(st), Some(st))
            }
            Req::Persistent(mut p) => match p.active.take() {
                None => (Req::Persistent(p), Some(Status::empty())),
                Some(round) => {
                    let (round, st) = self.settle(*round);
                    p.active = Some(Box::new(round));
                    (Req::Persistent(p), st)
                }
            },
            Req::Generalized(mut g) if g.complete => {
                let mut st = Status::empty();
                let rc = run_callback(|| (g.query)(&mut st));
                if !rc.is_success() {
                    st.error = rc;
                }
                (Req::Generalized(g), Some(st))
            }
            Req::Generalized(_) => (r, None),
            Req::Coll(ref s) if !s.is_done() => (r, None),
            Req::Coll(s) => {
                let st = self.wait_coll(s).unwrap_or_else(|e| Status::error(e.code));
                (Req::Done(st), Some(st))
            }
            Req::Pair { .. } | Req::Flush(_) | Req::Part(_) | Req::Rma { .. }
                if !self.is_ready(&r) =>
            {
                (r, None)
            }
            Req::Pair { .. } | Req::Flush(_) | Req::Part(_) | Req::Rma { .. } => {
                let st = self.finish(r).unwrap_or_else(|e| Status::error(e.code));
                (Req::Done(st), Some(st))
            }
        }
    }

    /// Start a round of persistent request `i` (`MPI_Start`, MPI-4.0 §3.9).
    pub fn start_req(&mut self, i: usize) -> MpiResult<()> {
        let mut p = match self.take_req(i)? {
            Req::Persistent(p) if p.active.is_none() => p,
            other => {
                let why = if matches!(other, Req::Persistent(_)) {
                    "the persistent request is already active"
                } else {
                    "not a persistent request"
                };
                self.restore_req(i, other);
                return Err(MpiError::new(Class::Request, why));
            }
        };
        let res = (p.start)(self).map(|round| p.active = Some(Box::new(round)));
        self.restore_req(i, Req::Persistent(p));
        if self.reqs[i].as_ref().is_some_and(Req::is_coll) {
            self.track_coll(i);
        }
        res
    }

    /// Try to cancel request `i` (`MPI_Cancel`, MPI-4.0 §3.8.4): a receive
    /// that has not matched completes as cancelled; a send, or a receive
    /// that matched, completes normally; a generalized request's cancel
    /// callback is told whether it completed.
    pub fn cancel_req(&mut self, i: usize) -> MpiResult<()> {
        let ep = &mut self.ep;
        match self.reqs.get_mut(i).and_then(Option::as_mut) {
            None => Err(invalid_request()),
            Some(Req::Engine { req, .. }) => {
                ep.cancel(req);
                Ok(())
            }
            Some(Req::Done(_) | Req::Flush(_) | Req::Part(_) | Req::Rma { .. }) => Ok(()),
            Some(Req::Pair { recv, .. }) => {
                if let Req::Engine { req, .. } = recv.as_ref() {
                    ep.cancel(req);
                }
                Ok(())
            }
            Some(Req::Coll(_)) => Err(MpiError::new(
                Class::Request,
                "a nonblocking collective cannot be cancelled (MPI-4.0 §6.12)",
            )),
            Some(Req::Persistent(p)) => match p.active.as_deref() {
                Some(Req::Engine { req, .. }) => {
                    ep.cancel(req);
                    Ok(())
                }
                Some(_) => Ok(()),
                None => Err(MpiError::new(
                    Class::Request,
                    "cannot cancel an inactive persistent request",
                )),
            },
            Some(Req::Generalized(_)) => {
                let Ok(Req::Generalized(mut g)) = self.take_req(i) else {
                    return Err(invalid_request());
                };
                let complete = g.complete;
                let rc = run_callback(|| (g.cancel)(complete));
                self.restore_req(i, Req::Generalized(g));
                request::callback_result(rc, "cancel")
            }
        }
    }

    /// Free request `i` (`MPI_Request_free`, MPI-4.0 §3.7.3): an active
    /// operation still completes, unobserved; a generalized request is
    /// freed (its free callback called) once it is complete.
    pub fn free_req(&mut self, i: usize) -> MpiResult<()> {
        match self.take_req(i)? {
            Req::Generalized(mut g) if g.complete => {
                let rc = run_callback(|| (g.free)());
                request::callback_result(rc, "free")
            }
            Req::Generalized(mut g) => {
                g.freed = true;
                self.restore_req(i, Req::Generalized(g));
                Ok(())
            }
            // A partitioned send whose message never started has nothing
            // to complete.
            Req::Persistent(p) if partitioned::unstarted(&p) => Ok(()),
            r => {
                self.detached.push(r);
                self.reap_detached();
                Ok(())
            }
        }
    }

    /// `MPI_Grequest_complete`: mark generalized request `i` complete; if
    /// the application freed it already, free it now.
    pub fn complete_generalized(&mut self, i: usize) -> MpiResult<()> {
        let freed = match self.reqs.get_mut(i).and_then(Option::as_mut) {
            Some(Req::Generalized(g)) if !g.complete => {
                g.complete = true;
                g.freed
            }
            Some(Req::Generalized(_)) => {
                return Err(MpiError::new(
                    Class::Request,
                    "the generalized request is already complete",
                ));
            }
            _ => {
                return Err(MpiError::new(Class::Request, "not a generalized request"));
            }
        };
        match freed.then(|| self.take_req(i)).transpose()? {
            Some(Req::Generalized(mut g)) => {
                let rc = run_callback(|| (g.free)());
                request::callback_result(rc, "free")
            }
            _ => Ok(()),
        }
    }

    /// Before `MPI_Finalize`: deliver the buffered messages (finalizing
    /// detaches the buffer, MPI-4.0 §3.6.1) and finish the requests the
    /// application freed while active. A freed receive that never matched
    /// is cancelled rather than waited for.
    pub fn complete_pending(&mut self) -> MpiResult<()> {
        self.detach_buffer(bsend::Scope::Process)?;
        for r in &self.detached {
            let round = match r {
                Req::Persistent(p) => p.active.as_deref(),
                Req::Pair { recv, .. } => Some(recv.as_ref()),
                r => Some(r),
            };
            if let Some(Req::Engine { req, .. }) = round {
                self.ep.cancel(req);
            }
        }
        self.wait_until(|rt| {
            rt.reap_detached();
            Ok(rt.detached.is_empty().then_some(()).into())
        })
    }

    /// Complete the freed requests that have finished. Their errors have
    /// nobody to go to (MPI-4.0 §3.7.3: a freed request's outcome is
    /// learnt by other means).
    #[cold]
    fn reap_detached(&mut self) {
        for r in std::mem::take(&mut self.detached) {
            if !self.is_ready(&r) {
                self.detached.push(r);
                continue;
            }
            let round = match r {
                Req::Persistent(mut p) => p.active.take().map(|b| *b),
                r => Some(r),
            };
            if let Some(round) = round {
                let _unobserved = self.finish(round);
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
        if self.coll_slots.is_empty() {
            return (false, false);
        }
        let reqs = &self.reqs;
        self.coll_slots.retain(|&i| {
            reqs.get(i)
                .is_some_and(|r| r.as_ref().is_some_and(Req::is_coll))
        });
        let mut did = false;
        // By index, each schedule out of its slot while it advances: a
        // reduction function it runs may call MPI (`run_callback`), so no
        // borrow into the tables stays live across it.
        let mut k = 0;
        while let Some(&i) = self.coll_slots.get(k) {
            k += 1;
            let Some(slot) = self.reqs.get_mut(i) else {
                continue;
            };
            let Some(mut r) = slot.take() else {
                continue;
            };
            *slot = Some(Req::Done(Status::empty()));
            if let Some(s) = r.schedule() {
                did |= s.advance(&mut self.ep);
                self.settle_agreement(s);
            }
            self.reqs[i] = Some(r);
        }
        (did, !self.coll_slots.is_empty())
    }

    /// Store a started nonblocking collective as a request.
    pub fn add_coll(&mut self, s: Box<crate::coll::Schedule>) -> usize {
        let i = self.add_req(Req::Coll(s));
        self.track_coll(i);
        i
    }

    /// Progress request `i` with the collectives from now on: it is one,
    /// or a persistent one's round.
    fn track_coll(&mut self, i: usize) {
        if !self.coll_slots.contains(&i) {
            self.coll_slots.push(i);
        }
    }

    /// Wait for engine request `req`, progressing the outstanding
    /// collectives meanwhile: another process may need this one's next
    /// round of a collective before it sends what `req` waits for.
    fn wait_engine(
        &mut self,
        req: shm_engine::Request,
    ) -> Result<shm_engine::Completion, shm_engine::Error> {
        self.wait_until(|rt| Ok(rt.ep.is_complete(&req).then_some(()).into()))
            .expect("testing an engine request cannot fail");
        self.ep.wait(req)
    }

    /// Run schedule `s` to its end, progressing the other outstanding
    /// collectives meanwhile (another process may wait for them first).
    pub fn wait_coll(&mut self, mut s: Box<crate::coll::Schedule>) -> MpiResult<Status> {
        self.wait_until(|rt| {
            let moved = s.advance(&mut rt.ep);
            Ok(if s.is_done() {
                Poll::Ready(())
            } else if moved {
                Poll::Moved
            } else {
                Poll::Idle
            })
        })?;
        self.settle_agreement(&mut s);
        let comm = s.comm;
        s.result().map(|()| Status::empty()).map_err(|e| e.on(comm))
    }
}

fn invalid_request() -> MpiError {
    MpiError::new(Class::Request, "invalid request")
}

impl Runtime {
    /// Whether a request is complete, without progressing.
    fn is_ready(&self, r: &Req) -> bool {
        let ep = &self.ep;
        match r {
            Req::Done(_) => true,
            Req::Engine { req, .. } => ep.is_complete(req),
            Req::Persistent(p) => p.active.as_deref().is_none_or(|a| self.is_ready(a)),
            Req::Generalized(g) => g.complete,
            Req::Coll(s) => s.is_done(),
            Req::Pair { recv, send } => self.is_ready(recv) && self.is_ready(send),
            Req::Flush(scope) => self.buffer_flushed(*scope),
            Req::Part(round) => round.op.as_deref().is_some_and(|o| self.is_ready(o)),
            Req::Rma { win, id } => self.win_replied(*win, *id),
        }
    }
}

/// A finished request's result: its error, if its status records one.
fn done_result(st: Status) -> MpiResult<Status> {
    if st.error.is_success() {
        Ok(st)
    } else {
        Err(MpiError::new(st.error, "the request failed"))
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

static STATE: Lock<Locked> = Lock::new(Locked(Library::Before));

/// The library's state, locked: one MPI call at a time (a blocking call
/// under `MPI_THREAD_MULTIPLE` releases it while it waits, [`threads`]).
/// For the application's calls; see [`state_any_time`].
#[inline]
pub fn state() -> StateGuard {
    StateGuard(threads::take(&STATE, threads::Caller::Serial))
}

/// [`state`] for a function MPI lets any thread call at any time, whatever
/// the thread level ([`threads::Caller::AnyTime`]).
pub fn state_any_time() -> StateGuard {
    StateGuard(threads::take(&STATE, threads::Caller::AnyTime))
}

/// The library's state if no call holds it (`None` when the process exits
/// from inside an MPI call, as an abort does). Taken as by an any-time
/// caller: the process may exit on any thread.
pub fn try_state() -> Option<StateGuard> {
    STATE.try_lock_any_time().map(StateGuard)
}

/// The runtime of the latest library call ([`in_call`]): of the call that
/// holds the library lock, while one does. A callback runs inside such a
/// call, on its thread and under its lock, so no other call replaces it
/// meanwhile.
static CALL_RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());

/// Callbacks running now ([`run_callback`]), on any thread: while there
/// are none (almost always), [`callback_runtime`] answers without reading
/// thread-local storage, which in a shared library costs a call to
/// `__tls_get_addr`.
static CALLBACKS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether application code that this thread's call runs
    /// ([`run_callback`]) is running now.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Sets a thread-local cell back to its previous value, also if the code
/// in between unwinds.
struct Restore<T: Copy + 'static>(&'static std::thread::LocalKey<Cell<T>>, T);

impl<T: Copy + 'static> Drop for Restore<T> {
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

/// Run the body of a library call, `f`, on `rt`, which the call holds
/// under the library lock: the one gate of every entry layer. Application
/// code that `f` runs through [`run_callback`] may call MPI again; those
/// calls use `rt` ([`callback_runtime`]) instead of taking the lock again,
/// which this thread holds.
///
/// The gate costs one plain store and no access to thread-local storage:
/// `CALL_RUNTIME` keeps the runtime of the latest call, and is read only
/// while a callback of the call in progress runs (`IN_CALLBACK`, which
/// only [`run_callback`] sets, inside a call). A call made from a callback
/// never gets here: it finds the lent runtime first.
#[inline]
pub fn in_call<T>(rt: &mut Runtime, f: impl FnOnce(&mut Runtime) -> T) -> T {
    CALL_RUNTIME.store(rt, Ordering::Relaxed);
    f(rt)
}

/// An application's function (an error handler, an attribute's copy or
/// delete callback) as its entry layer registered it: the core keeps it
/// and hands it back, and only the entry layer, which knows its C type in
/// its ABI, calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppFn(usize);

impl AppFn {
    pub fn new(addr: usize) -> Self {
        Self(addr)
    }

    pub fn addr(self) -> usize {
        self.0
    }
}

/// Run application code (a reduction function, a generalized request's
/// or an attribute's callback) from inside a library call. The code may
/// call MPI (MPI-4.1 §13.2's examples do; mpi4py's reduction functions
/// query the datatype): such a call re-enters through the gate of the call
/// in progress ([`in_call`]).
///
/// The library keeps no borrow into its tables (requests, collectives)
/// across a callback; a callback runs with the engine borrowed by the
/// code that called it, so application code called from a reduction may
/// query objects but not communicate (the standard gives reduction
/// functions no use for communication).
pub fn run_callback<T>(f: impl FnOnce() -> T) -> T {
    CALLBACKS.fetch_add(1, Ordering::Relaxed);
    let _count = Counted(&CALLBACKS);
    let _restore = Restore(&IN_CALLBACK, IN_CALLBACK.replace(true));
    f()
}

/// Takes one back from a count when dropped, also if the code in between
/// unwinds.
struct Counted(&'static AtomicUsize);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The world model's phase as `MPI_Initialized` and `MPI_Finalized` see
/// it, without the library lock: any thread may call them at any time.
/// 0 before `MPI_Init`, 1 once it returned, 2 once `MPI_Finalize` did (or
/// the process is exiting).
static WORLD_PHASE: AtomicU8 = AtomicU8::new(0);

/// Publish a move of the world model's phase (by the call that made it,
/// under the lock).
pub fn publish_world(phase: Phase) {
    let v = match phase {
        Phase::Before => 0,
        Phase::Running { .. } => 1,
        Phase::After => 2,
    };
    WORLD_PHASE.store(v, Ordering::Release);
}

/// Whether `MPI_Init` has returned (also after `MPI_Finalize`).
pub fn world_initialized() -> bool {
    WORLD_PHASE.load(Ordering::Acquire) != 0
}

/// Whether `MPI_Finalize` has returned.
pub fn world_finalized() -> bool {
    WORLD_PHASE.load(Ordering::Acquire) == 2
}

/// The world model's thread level (`MPI_Query_thread`) and the number of
/// its main thread (`MPI_Is_thread_main`, [`threads::number`]), which
/// any thread may ask for at any time, without the library lock:
/// `number << 2 | level`. 0 until the first thread asks or makes the
/// runtime; that thread is the main one, at `MPI_THREAD_SINGLE`, until
/// `MPI_Init(_thread)` names its own ([`publish_threads`]).
static THREADS: AtomicU64 = AtomicU64::new(0);

/// `MPI_Init(_thread)` on this thread provided `level`.
pub fn publish_threads(level: session::ThreadLevel) {
    THREADS.store(threads::number() << 2 | level as u64, Ordering::Release);
}

/// The world model's thread level and the number of its main thread.
pub fn world_threads() -> (session::ThreadLevel, u64) {
    use session::ThreadLevel::*;
    let mut v = THREADS.load(Ordering::Acquire);
    if v == 0 {
        let first = threads::number() << 2 | Single as u64;
        v = match THREADS.compare_exchange(0, first, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => first,
            Err(now) => now,
        };
    }
    let level = [Single, Funneled, Serialized, Multiple][(v & 3) as usize];
    (level, v >> 2)
}

/// The runtime of the library call whose callback is running on this
/// thread, if one is. Only this thread's MPI calls may use it, and only
/// until the callback returns.
#[inline]
pub fn callback_runtime() -> Option<*mut Runtime> {
    // Every call asks, and almost none runs in a callback: one load of
    // the count then. A thread that runs a callback counted it itself, so
    // it sees the count; other threads' answer is `None` either way.
    if CALLBACKS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    callback_runtime_here()
}

/// [`callback_runtime`] while some thread runs a callback. Not inlined:
/// the compiler would compute the thread-local's address (a call to
/// `__tls_get_addr`) before the count's test, at every MPI call.
#[cold]
#[inline(never)]
fn callback_runtime_here() -> Option<*mut Runtime> {
    if !IN_CALLBACK.get() {
        return None;
    }
    let rt = CALL_RUNTIME.load(Ordering::Relaxed);
    (!rt.is_null()).then_some(rt)
}

/// The locked library state.
#[derive(Debug)]
pub struct StateGuard(LockGuard<'static, Locked>);

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
