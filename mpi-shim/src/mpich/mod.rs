//! The MPICH-ABI entry layer: the exported `MPI_*` functions.
//!
//! Each function decodes its handles, checks every argument, calls into
//! [`crate::core`] and turns an error into the communicator's error
//! handler: `MPI_ERRORS_RETURN` returns the class, the default
//! `MPI_ERRORS_ARE_FATAL` (and `MPI_ERRORS_ABORT`) prints the function and
//! the reason and ends the job; a user handler is called, then the code
//! returned.
//!
//! Every function reaches the runtime through one gate, `gate`: under
//! the library lock, held for one call at a time; or, when the function
//! is called from application code the library runs inside a call (a
//! reduction function, a generalized request's callbacks), through the
//! runtime that call lends (`core::run_callback`). Error handlers and
//! attribute callbacks run once the lock is released: `call` leaves a
//! user handler to `Handled::finish`, and functions with callbacks take
//! the lock per step through `locked` inside `call_unlocked`.
//!
//! Raw pointers come from C callers, who promise what the MPI standard
//! says about them (a buffer holds `count` elements, an output pointer is
//! writable); the `// SAFETY:` comments name which promise is used.

#![allow(non_snake_case, clippy::missing_safety_doc)]
// Built for the standard ABI, this layer exports nothing: what the
// standard layer does not call is unused there.
#![cfg_attr(tessel_std_abi, allow(dead_code))]

use std::borrow::Cow;
use std::ffi::{c_char, c_double, c_int, c_void};
use std::sync::Arc;

use crate::abi::{
    self, Kind, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Errhandler, MPI_Group, MPI_Info, MPI_Op,
    MPI_Request, MPI_Status,
};
use crate::core::datatype::Datatype;
use crate::core::errh::CommErrhFn;
use crate::core::peer::{Rank, Tag};
use crate::core::{
    self, Class, Comm, Library, MpiError, MpiResult, Phase, Req, Runtime, Staged, Status, Unpack,
};
use shm_engine::{Endpoint, Piece};

mod attr;
pub(crate) mod codes;
mod coll;
mod comm;
pub(crate) mod counts;
mod env;
mod errh;
mod group;
mod info;
mod interop;
mod mem;
mod p2p;
pub mod predefined;
mod recvbuf;
mod session;
mod status;
mod tool;
mod topo;
mod types;
mod unsupported;

pub(crate) use errh::{checked_errhandler, errhandler_out};
pub(crate) use status::{status_in, status_out, write_status};

/// Every entry function of this layer, by name: what the standard-ABI
/// layer ([`crate::std_abi`]) calls after translating its arguments.
pub(crate) mod entries {
    pub(crate) use super::attr::*;
    pub(crate) use super::coll::neighbor::*;
    pub(crate) use super::coll::op::*;
    pub(crate) use super::coll::*;
    pub(crate) use super::comm::*;
    pub(crate) use super::env::*;
    pub(crate) use super::errh::*;
    pub(crate) use super::group::*;
    pub(crate) use super::info::*;
    pub(crate) use super::mem::*;
    pub(crate) use super::p2p::partitioned::*;
    pub(crate) use super::p2p::requests::*;
    pub(crate) use super::p2p::*;
    pub(crate) use super::recvbuf::*;
    pub(crate) use super::session::*;
    pub(crate) use super::tool::*;
    pub(crate) use super::topo::*;
    pub(crate) use super::types::elements::*;
    pub(crate) use super::types::envelope::*;
    pub(crate) use super::types::pack::*;
    pub(crate) use super::types::*;
    pub(crate) use super::unsupported::*;
}

/// The C prototype of every function the library exports, by area, in the
/// form MPICH's header declares it (parameter names aside). `mpi.h` is
/// generated from these lists, and a test checks that the library exports
/// exactly these functions.
pub const PROTOTYPES: &[&[&str]] = &[
    env::PROTOTYPES,
    comm::PROTOTYPES,
    session::PROTOTYPES,
    group::PROTOTYPES,
    topo::PROTOTYPES,
    attr::PROTOTYPES,
    info::PROTOTYPES,
    errh::PROTOTYPES,
    types::PROTOTYPES,
    p2p::PROTOTYPES,
    p2p::requests::PROTOTYPES,
    p2p::partitioned::PROTOTYPES,
    coll::PROTOTYPES,
    coll::neighbor::PROTOTYPES,
    interop::PROTOTYPES,
    mem::PROTOTYPES,
    recvbuf::PROTOTYPES,
    unsupported::PROTOTYPES,
    unsupported::UNSUPPORTED,
    tool::PROTOTYPES,
    tool::NOTHING_THERE,
];

/// Every prototype, in header order.
pub fn prototypes() -> impl Iterator<Item = &'static str> {
    PROTOTYPES.iter().flat_map(|area| area.iter().copied())
}

// A buffered message occupies no more of the application's buffer than
// the header promises.
const _: () = assert!(core::bsend::BSEND_OVERHEAD <= abi::MPI_BSEND_OVERHEAD as usize);

/// The communicator slot of a handle.
pub(crate) fn comm_slot(comm: MPI_Comm) -> MpiResult<usize> {
    match comm {
        abi::MPI_COMM_WORLD => Ok(core::WORLD),
        abi::MPI_COMM_SELF => Ok(core::SELF),
        h => abi::direct_index(Kind::Comm, h)
            .filter(|&i| i > core::SELF)
            .ok_or_else(|| MpiError::new(Class::Comm, format!("invalid communicator {h:#x}"))),
    }
}

pub(crate) fn comm_handle(slot: usize) -> MPI_Comm {
    match slot {
        core::WORLD => abi::MPI_COMM_WORLD,
        core::SELF => abi::MPI_COMM_SELF,
        i => abi::direct_handle(Kind::Comm, i),
    }
}

pub(crate) fn err(class: Class, message: impl Into<String>) -> MpiError {
    MpiError::new(class, message)
}

/// Run `f` on the library's runtime; report an error through the error
/// handler of `comm` (the default handler when `comm` is not valid, see
/// [`default_errhandler`]).
///
/// The runtime exists from the first `MPI_Init` or `MPI_Session_init` on,
/// so functions on objects derived from a session work without
/// `MPI_Init`; `MPI_COMM_WORLD` itself exists only in the world model
/// (using it elsewhere is an `MPI_ERR_COMM` naming the reason). A call
/// before any initialization cannot raise an error on anything: it ends
/// the process with a message.
pub(crate) fn call(
    name: &str,
    comm: MPI_Comm,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> c_int {
    match gate(name, |rt| f(rt).map_err(|e| raise(rt, name, comm, e))) {
        Ok(()) => abi::MPI_SUCCESS,
        Err(h) => h.finish(),
    }
}

/// [`call`] for a function that starts an operation and hands its
/// request to the application: `start` (which stores the request and
/// returns its slot) runs only once `request` is known to be writable, so
/// that no operation starts out of the application's reach.
pub(crate) fn call_starting(
    name: &str,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    start: impl FnOnce(&mut Runtime) -> MpiResult<usize>,
) -> c_int {
    call(name, comm, |rt| {
        if request.is_null() {
            return Err(err(Class::Arg, "null request pointer"));
        }
        let i = start(rt)?;
        // SAFETY: non-null output argument (MPI contract: writable).
        unsafe { out(request, abi::direct_handle(Kind::Request, i)) }
    })
}

/// The one way into the runtime: inside an application callback, the
/// runtime the call running it lent (`core::run_callback`); otherwise the
/// library lock's, through the gate that lends it (`core::in_call`).
pub(crate) fn gate<T>(name: &str, f: impl FnOnce(&mut Runtime) -> T) -> T {
    if let Some(rt) = core::callback_runtime() {
        // SAFETY: an application callback is running on this thread, from
        // inside the library call that holds the lock and `rt`
        // (`core::in_call`); that call uses no borrow into the runtime's
        // tables until the callback returns (`core::run_callback`).
        return f(unsafe { &mut *rt });
    }
    let mut state = core::state();
    core::in_call(running(&mut state, name), f)
}

/// Run `f` on the library's state, without error handling: for functions
/// that call the application (attribute callbacks) between steps, which
/// must happen without the library lock since the callbacks may call MPI.
pub(crate) fn locked<T>(name: &str, f: impl FnOnce(&mut Runtime) -> MpiResult<T>) -> MpiResult<T> {
    gate(name, f)
}

/// Run `f`, which takes the library lock itself through [`locked`];
/// report an error through the error handler of `comm`.
pub(crate) fn call_unlocked(
    name: &str,
    comm: MPI_Comm,
    f: impl FnOnce() -> MpiResult<()>,
) -> c_int {
    match f() {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => fail(name, comm, e),
    }
}

/// The runtime, or the end of the process with a message saying why
/// there is none.
pub(crate) fn running<'a>(state: &'a mut Library, name: &str) -> &'a mut Runtime {
    match state {
        Library::Running(rt) => rt,
        Library::Before => {
            core::report(&format!(
                "{name} called before MPI_Init or MPI_Session_init"
            ));
            std::process::exit(1);
        }
        Library::Exited => {
            core::report(&format!(
                "{name} called after the library left the job at exit"
            ));
            // SAFETY: `_exit` ends the process at once; `exit` may not be
            // called again from an exit handler, which is where this runs.
            unsafe { libc::_exit(1) }
        }
    }
}

/// Report `e` through the error handler of `comm`. Before `MPI_Init` and
/// after `MPI_Finalize` (info objects, error strings) the default
/// handler, `MPI_ERRORS_ARE_FATAL`, applies (MPI-4.0 §9.3).
pub(crate) fn fail(name: &str, comm: MPI_Comm, e: MpiError) -> c_int {
    if let Some(rt) = core::callback_runtime() {
        // SAFETY: as in `call`.
        return raise(unsafe { &mut *rt }, name, comm, e).finish();
    }
    let handled = match &mut *core::state() {
        Library::Running(rt) => raise(rt, name, comm, e),
        _ => {
            core::report(&format!("{name}: {e}"));
            std::process::exit(1);
        }
    };
    handled.finish()
}

/// What error handling leaves to do once the library lock is released.
#[derive(Debug)]
#[must_use]
pub(crate) enum Handled {
    /// Return this code (`MPI_ERRORS_RETURN`).
    Return(c_int),
    /// Call the application's error handler, then return the code.
    User {
        f: CommErrhFn,
        comm: MPI_Comm,
        code: c_int,
    },
}

impl Handled {
    /// Finish error handling; the caller holds no library lock, since a
    /// user handler may call MPI.
    pub(crate) fn finish(self) -> c_int {
        match self {
            Handled::Return(code) => code,
            Handled::User { f, comm, code } => {
                let (mut comm, mut arg) = (comm, code);
                // SAFETY: `f` is the application's
                // MPI_Comm_errhandler_function (MPI_Comm_create_errhandler),
                // called with two valid pointers as MPI-4.0 §9.3.1 says.
                unsafe { f(&mut comm, &mut arg) };
                code
            }
        }
    }
}

/// Apply the error handler of `comm` (of the communicator the error names,
/// of `MPI_COMM_WORLD` when neither is valid) to `e` (MPI-4.0 §9.3): a
/// fatal handler ends the job here; the others are left to
/// [`Handled::finish`].
pub(crate) fn raise(rt: &mut Runtime, name: &str, comm: MPI_Comm, e: MpiError) -> Handled {
    // A request's error goes to its communicator's handler.
    let slot = e
        .comm
        .or_else(|| comm_slot(comm).ok())
        .filter(|&s| rt.comm(s).is_ok());
    match slot {
        Some(s) => {
            let handler = rt
                .comm(s)
                .map_or(abi::MPI_ERRORS_ARE_FATAL, |c| errhandler_out(c.errhandler));
            raise_on(rt, name, handler, comm_handle(s), e)
        }
        None => {
            let handler = default_errhandler(rt);
            raise_on(rt, name, handler, comm, e)
        }
    }
}

/// The handler of errors that no valid object of the call can take (an
/// invalid communicator or session handle): `MPI_COMM_WORLD`'s in the world
/// model (MPI-4.0 §9.3), otherwise that of the open session in the lowest
/// slot when it is predefined, otherwise `MPI_ERRORS_ARE_FATAL`.
pub(crate) fn default_errhandler(rt: &Runtime) -> MPI_Errhandler {
    if let Ok(world) = rt.comm(core::WORLD) {
        return errhandler_out(world.errhandler);
    }
    rt.sessions
        .iter()
        .find(|(_, s)| !s.hidden)
        .map(|(_, s)| errhandler_out(s.errhandler))
        .filter(|&h| is_predefined_errhandler(h))
        .unwrap_or(abi::MPI_ERRORS_ARE_FATAL)
}

pub(crate) fn is_predefined_errhandler(h: MPI_Errhandler) -> bool {
    matches!(
        h,
        abi::MPI_ERRORS_ARE_FATAL | abi::MPI_ERRORS_RETURN | abi::MPI_ERRORS_ABORT
    )
}

/// Apply `handler` (of communicator `comm`) to `e`: return its class
/// under `MPI_ERRORS_RETURN`, leave a user handler to [`Handled::finish`],
/// end the job with a message otherwise.
pub(crate) fn raise_on(
    rt: &mut Runtime,
    name: &str,
    handler: MPI_Errhandler,
    comm: MPI_Comm,
    e: MpiError,
) -> Handled {
    let code = codes::code_out(e.code);
    if handler == abi::MPI_ERRORS_RETURN {
        return Handled::Return(code);
    }
    let user = abi::direct_index(Kind::Errhandler, handler).and_then(|i| rt.errors.handler(i));
    if let Some(f) = user {
        return Handled::User { f, comm, code };
    }
    let message = format!("{name}: {e}");
    core::report(&message);
    rt.ep.bootstrap().abort(code, &message);
    Handled::Return(code)
}

/// Write `value` through an output pointer, or fail with `MPI_ERR_ARG`.
pub(crate) unsafe fn out<T>(ptr: *mut T, value: T) -> MpiResult<()> {
    if ptr.is_null() {
        return Err(err(Class::Arg, "null output argument"));
    }
    // SAFETY: non-null; the caller passes a writable `T` (MPI contract).
    unsafe { ptr.write(value) };
    Ok(())
}

/// The datatype behind handle `dt`: predefined (shared, never
/// allocated per call) or derived (committed or not).
pub(crate) fn datatype(rt: &Runtime, dt: MPI_Datatype) -> MpiResult<Arc<Datatype>> {
    if let Some(t) = types::predefined(dt) {
        return Ok(t.clone());
    }
    abi::direct_index(Kind::Datatype, dt)
        .filter(|&i| i >= core::FIRST_DERIVED_TYPE)
        .and_then(|i| rt.types.get(i))
        .cloned()
        .ok_or_else(|| err(Class::Type, format!("invalid datatype {dt:#x}")))
}

/// Addresses below this are never mapped (Linux's `vm.mmap_min_addr` is
/// at least one page): a buffer reaching there from a null address is a
/// mistake, not `MPI_BOTTOM` with absolute displacements.
const LOWEST_VALID_ADDRESS: isize = 4096;

/// A non-contiguous buffer is packed (rather than moved piece by piece)
/// when its blocks average fewer bytes than this, for messages the engine
/// copies itself (inline, eager, and the staging pipeline when CMA is
/// off): each piece costs a cursor step and a `memcpy` call that a
/// packing loop over small blocks does not, so below a few hundred bytes
/// packing and copying once more is faster.
pub(crate) const MIN_AVG_PIECE: usize = 256;

/// The same for the receiver of a rendezvous over CMA: its pieces are the
/// local side of `process_vm_readv`, where each costs the kernel a step
/// of its copy loop (tens of ns) that the user-space unpack of a packed
/// receive beats for blocks of about 1 KiB (measured with a 4 MiB vector
/// ping-pong: even at 2 KiB, a clear gain from 4 KiB).
pub(crate) const MIN_AVG_PIECE_CMA_LOCAL: usize = 2048;

/// The same for the sender of a rendezvous over CMA: its pieces are the
/// remote side of the receiver's `process_vm_readv`, and the kernel pins
/// and unpins the pages of each remote piece separately (half a
/// microsecond or more each), which packing (a user-space copy, then one
/// contiguous read) beats until blocks reach several KiB (measured: packing
/// wins at 4 KiB, pieces at 16 KiB).
pub(crate) const MIN_AVG_PIECE_CMA_REMOTE: usize = 8192;

/// A non-contiguous buffer of more pieces than this is packed: its piece
/// list (16 bytes a piece, held by the request) would itself be a large
/// allocation, and its walk a long one.
pub(crate) const MAX_PIECES: usize = 1 << 20;

/// A message buffer as the engine sees it: pieces of memory, and the
/// packed copy they point into when the datatype is better packed (the
/// request keeps it alive: moving the `Vec` leaves its storage put).
#[derive(Debug)]
pub(crate) struct Wire {
    /// The only piece (when `many` is empty).
    one: Piece,
    /// The user's memory, piece by piece.
    many: Vec<Piece>,
    /// The packed copy `one` points into, if any.
    pub packed: Option<Vec<u8>>,
}

impl Wire {
    /// The pieces to hand to the engine.
    pub(crate) fn pieces(&self) -> &[Piece] {
        if self.many.is_empty() {
            std::slice::from_ref(&self.one)
        } else {
            &self.many
        }
    }
}

/// A committed datatype and the bytes of `count` (>= 0) of its elements.
pub(crate) fn committed_bytes(
    rt: &Runtime,
    count: MPI_Count,
    dt: MPI_Datatype,
) -> MpiResult<(Arc<Datatype>, usize)> {
    let dt = datatype(rt, dt)?;
    if !dt.committed {
        return Err(err(Class::Type, "datatype not committed"));
    }
    let len = dt
        .bytes(count as usize)
        .ok_or_else(|| err(Class::Count, "message size overflows"))?;
    Ok((dt, len))
}

/// `count` elements of a datatype at `ptr`: a message buffer as the
/// application describes it, checked.
#[derive(Debug)]
pub(crate) struct UserBuf {
    pub ptr: *mut u8,
    pub count: usize,
    pub dt: Arc<Datatype>,
    /// Bytes of data (`count * dt.size`).
    pub len: usize,
}

impl UserBuf {
    /// # Safety
    /// `buf` addresses `count` elements of `dt` (MPI contract); they are
    /// only written through if the caller is a receive. A null `buf` is
    /// `MPI_BOTTOM`.
    pub(crate) unsafe fn new(
        rt: &Runtime,
        buf: *const c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
    ) -> MpiResult<Self> {
        if count < 0 {
            return Err(err(Class::Count, format!("negative count {count}")));
        }
        if abi::is_in_place(buf) {
            return Err(err(Class::Buffer, "MPI_IN_PLACE is not valid here"));
        }
        let (dt, len) = committed_bytes(rt, count, dt)?;
        // A null buffer is `MPI_BOTTOM`: the type's displacements must
        // then be absolute addresses (MPI-4.0 §5.1.12).
        let lowest = dt.lowest_offset(count as usize);
        if buf.is_null() && lowest.is_some_and(|a| a < LOWEST_VALID_ADDRESS) {
            return Err(err(Class::Buffer, "null buffer"));
        }
        Ok(Self {
            ptr: buf.cast_mut().cast(),
            count: count as usize,
            dt,
            len,
        })
    }

    /// The message's bytes: the user's memory itself when the datatype is
    /// contiguous, a packed copy otherwise.
    ///
    /// # Safety
    /// The buffer is readable (the promise of [`UserBuf::new`]).
    pub(crate) unsafe fn data(&self) -> Cow<'_, [u8]> {
        if self.len == 0 {
            Cow::Borrowed(&[])
        } else if self.dt.is_contiguous() {
            // SAFETY: `len` contiguous readable bytes (MPI contract).
            Cow::Borrowed(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
        } else {
            let mut v = vec![0; self.len];
            // SAFETY: `count` elements of `dt` at `ptr` (MPI contract).
            unsafe { self.dt.pack(self.ptr, self.count, &mut v) };
            Cow::Owned(v)
        }
    }

    /// Whether `ep` should move this non-contiguous buffer piece by piece
    /// rather than through a packed copy: only when its blocks are large
    /// on average for the way the engine will move it ([`MIN_AVG_PIECE`]
    /// and its CMA variants; a receive's capacity stands for the size of
    /// the message) and not too many ([`MAX_PIECES`]).
    fn piecewise(&self, ep: &Endpoint, send: bool) -> bool {
        let min_avg = if !ep.uses_cma() || self.len <= ep.config().eager_max {
            MIN_AVG_PIECE
        } else if send {
            MIN_AVG_PIECE_CMA_REMOTE
        } else {
            MIN_AVG_PIECE_CMA_LOCAL
        };
        let pieces = self.count.saturating_mul(self.dt.blocks.len());
        pieces <= MAX_PIECES && self.len >= pieces.saturating_mul(min_avg)
    }

    /// The buffer as `ep` moves it (see [`Wire`]): the user's memory when
    /// contiguous or worth moving piecewise, else a packed copy (of the
    /// data for a send, zeroed for a receive).
    ///
    /// # Safety
    /// For a send (`send == true`) the buffer is readable (the promise of
    /// [`UserBuf::new`]).
    pub(crate) unsafe fn wire(&self, ep: &Endpoint, send: bool) -> Wire {
        let mut w = Wire {
            one: Piece::new(self.ptr, self.len),
            many: Vec::new(),
            packed: None,
        };
        if self.len == 0 || self.dt.is_contiguous() {
            return w;
        }
        if self.piecewise(ep, send) {
            w.many = self.dt.pieces(self.ptr, self.count);
            return w;
        }
        let mut packed = vec![0; self.len];
        if send {
            // SAFETY: `count` elements of `dt` at `ptr` (the caller).
            unsafe { self.dt.pack(self.ptr, self.count, &mut packed) };
        }
        w.one = Piece::new(packed.as_mut_ptr(), self.len);
        w.packed = Some(packed);
        w
    }

    /// Write packed data (at most `len` bytes) into the buffer.
    ///
    /// # Safety
    /// The buffer is writable (the promise of [`UserBuf::new`]).
    pub(crate) unsafe fn unpack(&self, packed: &[u8]) {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.dt
                .unpack(&packed[..packed.len().min(self.len)], self.count, self.ptr)
        };
    }
}

/// A rank argument as the core names it.
pub(crate) fn rank_arg(rank: c_int) -> Rank {
    match rank {
        abi::MPI_PROC_NULL => Rank::Null,
        abi::MPI_ANY_SOURCE => Rank::Any,
        r => Rank::Proc(r),
    }
}

/// A rank the core gives back, as an `int` of this ABI (`None` is
/// `MPI_UNDEFINED`).
pub(crate) fn rank_out(rank: Option<Rank>) -> c_int {
    match rank {
        Some(Rank::Proc(r)) => r,
        Some(Rank::Null) => abi::MPI_PROC_NULL,
        Some(Rank::Any) => abi::MPI_ANY_SOURCE,
        None => abi::MPI_UNDEFINED,
    }
}

/// A comparison result as an `int` of this ABI.
pub(crate) fn comparison_out(c: core::group::Comparison) -> c_int {
    use crate::core::group::Comparison::*;
    match c {
        Ident => abi::MPI_IDENT,
        Congruent => abi::MPI_CONGRUENT,
        Similar => abi::MPI_SIMILAR,
        Unequal => abi::MPI_UNEQUAL,
    }
}

/// A tag argument as the core names it.
pub(crate) fn tag_arg(tag: c_int) -> Tag {
    if tag == abi::MPI_ANY_TAG {
        Tag::Any
    } else {
        Tag::Value(tag)
    }
}

/// A tag the core gives back, as an `int` of this ABI.
pub(crate) fn tag_out(tag: Tag) -> c_int {
    match tag {
        Tag::Value(t) => t,
        Tag::Any => abi::MPI_ANY_TAG,
    }
}

pub(crate) fn check_root(c: &Comm, root: c_int) -> MpiResult<usize> {
    if (0..c.size()).contains(&root) {
        Ok(root as usize)
    } else {
        Err(err(
            Class::Root,
            format!("invalid root {root} in a communicator of size {}", c.size()),
        ))
    }
}

/// A status argument is a status or `MPI_STATUS_IGNORE`; null is
/// `MPI_ERR_ARG`, as in MPICH (whose `MPI_STATUS_IGNORE` is not null).
pub(crate) fn check_status(status: *const MPI_Status) -> MpiResult<()> {
    if status.is_null() {
        return Err(err(
            Class::Arg,
            "null status (MPI_STATUS_IGNORE ignores the status)",
        ));
    }
    Ok(())
}

/// A status array of `count` entries, or `MPI_STATUSES_IGNORE`; null is
/// `MPI_ERR_ARG` unless the array is empty.
pub(crate) fn check_statuses(statuses: *const MPI_Status, count: c_int) -> MpiResult<()> {
    if statuses.is_null() && count > 0 {
        return Err(err(
            Class::Arg,
            "null array of statuses (MPI_STATUSES_IGNORE ignores them)",
        ));
    }
    Ok(())
}

/// The C string at `p`; a null pointer is an error of `class`.
///
/// # Safety
/// A non-null `p` points to a NUL-terminated string (MPI contract).
pub(crate) unsafe fn read_cstr(p: *const c_char, class: Class, what: &str) -> MpiResult<String> {
    if p.is_null() {
        return Err(err(class, format!("null {what}")));
    }
    // SAFETY: non-null and NUL-terminated (the caller's promise).
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned())
}

/// Fail with `MPI_ERR_ARG` if an output pointer is null: checked before
/// a collective creates an object the caller could not receive.
pub(crate) fn nonnull<T>(p: *mut T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        Err(err(Class::Arg, format!("null {what} argument")))
    } else {
        Ok(())
    }
}

/// Copy `s` into a C string buffer of `cap` bytes, NUL-terminated.
pub(crate) unsafe fn write_cstr(
    dst: *mut c_char,
    cap: usize,
    s: &str,
    len: *mut c_int,
) -> MpiResult<()> {
    // SAFETY: forwarded from the caller.
    let n = unsafe { copy_cstr(dst, cap, s) }?;
    // SAFETY: output argument.
    unsafe { out(len, n as c_int) }
}

/// Copy at most `cap - 1` bytes of `s` and a NUL to `dst`; the bytes
/// copied.
///
/// # Safety
/// A non-null `dst` addresses `cap` writable bytes (MPI contract).
pub(crate) unsafe fn copy_cstr(dst: *mut c_char, cap: usize, s: &str) -> MpiResult<usize> {
    if dst.is_null() {
        return Err(err(Class::Arg, "null string argument"));
    }
    if cap == 0 {
        return Ok(0);
    }
    let n = s.len().min(cap - 1);
    // SAFETY: the caller's buffer holds `cap` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast(), dst, n);
        dst.add(n).write(0);
    }
    Ok(n)
}
