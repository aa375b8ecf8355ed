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

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use shm_engine::{Endpoint, Source, TagMatch, bootstrap};

use crate::abi::{self, MPI_Errhandler};

pub mod datatype;
pub mod group;
pub mod info;
pub mod request;
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
/// Completion (MPI-4.0 §3.7): [`Runtime::req_done`] tests, and
/// [`Runtime::wait_req`] waits and returns the status.
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
    /// A persistent request (MPI-4.0 §3.9), active or not.
    Persistent(request::Persistent),
    /// A generalized request (MPI-4.0 §13.2).
    Generalized(request::Generalized),
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
    /// Requests freed by `MPI_Request_free` while active: completed (and
    /// dropped) as they finish.
    detached: Vec<Req>,
    /// Messages taken by matched probes.
    pub messages: table::Table<request::Matched>,
    /// The buffer of buffered sends, when attached.
    pub bsend: Option<request::Attached>,
    /// Groups the application holds (`MPI_GROUP_EMPTY` is slot 0).
    pub groups: table::Table<group::Group>,
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
            detached: Vec::new(),
            messages: table::Table::new(0),
            bsend: None,
            groups: {
                let mut g = table::Table::new(1);
                g.set(0, group::Group::default());
                g
            },
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

    /// Store a request; its slot. Freed requests that finished meanwhile
    /// are completed first.
    pub fn add_req(&mut self, r: Req) -> usize {
        self.reap_detached();
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
        match self.reqs.get(i).and_then(Option::as_ref) {
            Some(r) => Ok(is_ready(&self.ep, r)),
            None => Err(invalid_request()),
        }
    }

    /// Wait for request `i` and return its status. The request is freed,
    /// except a persistent one, which becomes inactive (waiting on an
    /// inactive one returns the empty status at once, MPI-4.0 §3.9).
    pub fn wait_req(&mut self, i: usize) -> MpiResult<abi::MPI_Status> {
        match self.take_req(i)? {
            Req::Persistent(mut p) => {
                let res = match p.active.take() {
                    Some(round) => self.finish(*round),
                    None => Ok(request::empty_status()),
                };
                self.restore_req(i, Req::Persistent(p));
                res
            }
            Req::Generalized(g) => self.finish_generalized(i, g),
            r => self.finish(r),
        }
    }

    /// Wait for a request taken out of the table that is neither
    /// persistent nor generalized (those two live on in their slot): a
    /// plain request, or a round of a persistent one.
    fn finish(&mut self, r: Req) -> MpiResult<abi::MPI_Status> {
        match r {
            Req::Done(st) => done_result(st),
            Req::Engine { req, comm, staged } => self.finish_engine(req, comm, staged),
            Req::Persistent(_) | Req::Generalized(_) => Err(MpiError::new(
                abi::MPI_ERR_INTERN,
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
    ) -> MpiResult<abi::MPI_Status> {
        let res = self.ep.wait(req);
        if let (Ok(done), Some(Staged::Recv(u))) = (&res, &staged) {
            // SAFETY: the receive's elements stay valid until its
            // request completes (MPI contract); this is completion.
            unsafe { u.dt.unpack(&u.packed[..done.status.len], u.count, u.dst) };
        }
        let c = self.comm(comm)?;
        let rank_of = |source: u32| c.rank_of.get(&source).copied();
        let res = match res {
            Ok(done) if done.status.cancelled => {
                let mut st = request::empty_status();
                request::set_cancelled(&mut st, true);
                Ok(st)
            }
            Ok(done) => Ok(abi::MPI_Status::new(
                rank_of(done.status.source).unwrap_or(abi::MPI_ANY_SOURCE),
                done.status.tag as u32 as i32,
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
    /// waited for: no other MPI call can run meanwhile (the library is
    /// `MPI_THREAD_SERIALIZED`), so the wait would never end.
    fn finish_generalized(
        &mut self,
        i: usize,
        mut g: request::Generalized,
    ) -> MpiResult<abi::MPI_Status> {
        if !g.complete {
            self.restore_req(i, Req::Generalized(g));
            return Err(MpiError::new(
                abi::MPI_ERR_REQUEST,
                "waiting for a generalized request that is not complete would never return: call MPI_Grequest_complete first",
            ));
        }
        let mut st = request::empty_status();
        let query = run_callback(self, || (g.query)(&mut st));
        let free = run_callback(self, || (g.free)());
        request::callback_result(query, "query")?;
        request::callback_result(free, "free")?;
        Ok(st)
    }

    /// The status of request `i` if it is complete, without freeing it or
    /// making it inactive (`MPI_Request_get_status`, MPI-4.0 §3.7.6).
    pub fn req_status(&mut self, i: usize) -> MpiResult<Option<abi::MPI_Status>> {
        self.ep.progress();
        let r = self.take_req(i)?;
        let (r, st) = self.settle(r);
        self.restore_req(i, r);
        match st {
            Some(st) if st.MPI_ERROR != abi::MPI_SUCCESS => done_result(st).map(Some),
            st => Ok(st),
        }
    }

    /// A completed request's status, and the request to keep in its place
    /// (a finished engine request becomes `Done` with its status).
    fn settle(&mut self, r: Req) -> (Req, Option<abi::MPI_Status>) {
        match r {
            Req::Done(st) => (r, Some(st)),
            Req::Engine { ref req, .. } if !self.ep.is_complete(req) => (r, None),
            Req::Engine { req, comm, staged } => {
                let st = self
                    .finish_engine(req, comm, staged)
                    .unwrap_or_else(|e| error_status(e.class));
                (Req::Done(st), Some(st))
            }
            Req::Persistent(mut p) => match p.active.take() {
                None => (Req::Persistent(p), Some(request::empty_status())),
                Some(round) => {
                    let (round, st) = self.settle(*round);
                    p.active = Some(Box::new(round));
                    (Req::Persistent(p), st)
                }
            },
            Req::Generalized(mut g) if g.complete => {
                let mut st = request::empty_status();
                let rc = run_callback(self, || (g.query)(&mut st));
                if rc != abi::MPI_SUCCESS {
                    st.MPI_ERROR = rc;
                }
                (Req::Generalized(g), Some(st))
            }
            Req::Generalized(_) => (r, None),
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
                return Err(MpiError::new(abi::MPI_ERR_REQUEST, why));
            }
        };
        let res = (p.start)(self).map(|round| p.active = Some(Box::new(round)));
        self.restore_req(i, Req::Persistent(p));
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
            Some(Req::Done(_)) => Ok(()),
            Some(Req::Persistent(p)) => match p.active.as_deref() {
                Some(Req::Engine { req, .. }) => {
                    ep.cancel(req);
                    Ok(())
                }
                Some(_) => Ok(()),
                None => Err(MpiError::new(
                    abi::MPI_ERR_REQUEST,
                    "cannot cancel an inactive persistent request",
                )),
            },
            Some(Req::Generalized(_)) => {
                let Ok(Req::Generalized(mut g)) = self.take_req(i) else {
                    return Err(invalid_request());
                };
                let complete = g.complete;
                let rc = run_callback(self, || (g.cancel)(complete));
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
                let rc = run_callback(self, || (g.free)());
                request::callback_result(rc, "free")
            }
            Req::Generalized(mut g) => {
                g.freed = true;
                self.restore_req(i, Req::Generalized(g));
                Ok(())
            }
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
                    abi::MPI_ERR_REQUEST,
                    "the generalized request is already complete",
                ));
            }
            _ => {
                return Err(MpiError::new(
                    abi::MPI_ERR_REQUEST,
                    "not a generalized request",
                ));
            }
        };
        match freed.then(|| self.take_req(i)).transpose()? {
            Some(Req::Generalized(mut g)) => {
                let rc = run_callback(self, || (g.free)());
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
        if let Some(attached) = self.bsend.take() {
            attached.drain(&mut self.ep)?;
        }
        for r in &self.detached {
            let round = match r {
                Req::Persistent(p) => p.active.as_deref(),
                r => Some(r),
            };
            if let Some(Req::Engine { req, .. }) = round {
                self.ep.cancel(req);
            }
        }
        let mut backoff = shm_engine::Backoff::default();
        loop {
            self.reap_detached();
            if self.detached.is_empty() {
                return Ok(());
            }
            self.ep.progress_or_back_off(&mut backoff);
        }
    }

    /// Complete the freed requests that have finished. Their errors have
    /// nobody to go to (MPI-4.0 §3.7.3: a freed request's outcome is
    /// learnt by other means).
    fn reap_detached(&mut self) {
        if self.detached.is_empty() {
            return;
        }
        for r in std::mem::take(&mut self.detached) {
            if !is_ready(&self.ep, &r) {
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

fn invalid_request() -> MpiError {
    MpiError::new(abi::MPI_ERR_REQUEST, "invalid request")
}

/// Whether a request is complete, without progressing.
fn is_ready(ep: &Endpoint, r: &Req) -> bool {
    match r {
        Req::Done(_) => true,
        Req::Engine { req, .. } => ep.is_complete(req),
        Req::Persistent(p) => p.active.as_deref().is_none_or(|a| is_ready(ep, a)),
        Req::Generalized(g) => g.complete,
    }
}

/// A finished request's result: its error, if its status records one.
fn done_result(st: abi::MPI_Status) -> MpiResult<abi::MPI_Status> {
    if st.MPI_ERROR == abi::MPI_SUCCESS {
        Ok(st)
    } else {
        Err(MpiError::new(st.MPI_ERROR, "the request failed"))
    }
}

/// The empty status with an error class.
fn error_status(class: i32) -> abi::MPI_Status {
    let mut st = request::empty_status();
    st.MPI_ERROR = class;
    st
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

thread_local! {
    /// The runtime of the library call this thread is in while it runs
    /// application code (see [`run_callback`]); null otherwise.
    static CALLBACK_RUNTIME: Cell<*mut Runtime> = const { Cell::new(std::ptr::null_mut()) };
}

/// Run application code (a generalized request's callback) from inside a
/// library call. The code may make MPI calls: on this thread they use
/// `rt` ([`callback_runtime`]) instead of taking the library lock, which
/// this thread holds (MPI-4.0 §13.2's examples call MPI from callbacks).
pub fn run_callback<T>(rt: &mut Runtime, f: impl FnOnce() -> T) -> T {
    /// Puts the outer value back, also if `f` unwinds.
    struct Restore(*mut Runtime);
    impl Drop for Restore {
        fn drop(&mut self) {
            CALLBACK_RUNTIME.set(self.0);
        }
    }
    let _restore = Restore(CALLBACK_RUNTIME.replace(rt));
    f()
}

/// The runtime [`run_callback`] lent to application code running on this
/// thread, if any. Only this thread's MPI calls may use it, and only
/// until the callback returns.
pub fn callback_runtime() -> Option<*mut Runtime> {
    let rt = CALLBACK_RUNTIME.get();
    (!rt.is_null()).then_some(rt)
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
