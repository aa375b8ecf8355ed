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

use std::ffi::{c_char, c_double, c_int, c_void};
use std::sync::Arc;

use crate::abi::{
    self, Kind, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Errhandler, MPI_Group, MPI_Info, MPI_Op,
    MPI_Request, MPI_Status,
};
use crate::core::buffer::{self, UserBuf};
use crate::core::datatype::TypeRef;
use crate::core::errh::{Errhandler, Handling};
use crate::core::peer::{Rank, Tag};
use crate::core::threads::Caller;
use crate::core::{self, Class, Library, MpiError, MpiResult, Phase, Req, Runtime, Status};
use errh::ErrhFn;

pub(crate) mod attr;
pub(crate) mod codes;
mod coll;
mod comm;
pub(crate) mod counts;
mod dynamic;
mod env;
pub(crate) mod errh;
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
mod win;

pub(crate) use errh::{checked_errhandler, errhandler_in, errhandler_out, settable_errhandler};
pub(crate) use status::{status_in, status_out, write_status};

/// Every entry function of this layer, by name: what the standard-ABI
/// layer ([`crate::std_abi`]) calls after translating its arguments.
pub(crate) mod entries {
    pub(crate) use super::attr::*;
    pub(crate) use super::coll::alltoall::*;
    pub(crate) use super::coll::neighbor::*;
    pub(crate) use super::coll::op::*;
    pub(crate) use super::coll::*;
    pub(crate) use super::comm::*;
    pub(crate) use super::dynamic::*;
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
    pub(crate) use super::win::*;
}

/// The C prototype of every function the library exports, by area, in the
/// form MPICH's header declares it (parameter names aside). `mpi.h` is
/// generated from these lists, and a test checks that the library exports
/// exactly these functions.
pub const PROTOTYPES: &[&[&str]] = &[
    env::PROTOTYPES,
    comm::PROTOTYPES,
    dynamic::PROTOTYPES,
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
    win::PROTOTYPES,
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
/// [`Runtime::default_errhandler`]).
///
/// The runtime exists from the first `MPI_Init` or `MPI_Session_init` on,
/// so functions on objects derived from a session work without
/// `MPI_Init`; `MPI_COMM_WORLD` itself exists only in the world model
/// (using it elsewhere is an `MPI_ERR_COMM` naming the reason). A call
/// before any initialization cannot raise an error on anything: it ends
/// the process with a message.
#[inline]
pub(crate) fn call(
    name: &str,
    comm: MPI_Comm,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> c_int {
    call_as(Caller::Serial, name, comm, f)
}

/// [`call`] for the functions MPI lets any thread call at any time
/// ([`gate_any_time`]).
pub(crate) fn call_any_time(
    name: &str,
    comm: MPI_Comm,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> c_int {
    call_as(Caller::AnyTime, name, comm, f)
}

#[inline]
fn call_as(
    caller: Caller,
    name: &str,
    comm: MPI_Comm,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> c_int {
    match gate_as(caller, name, |rt| {
        f(rt).map_err(|e| raise(rt, name, comm, e))
    }) {
        Ok(()) => abi::MPI_SUCCESS,
        Err(h) => h.finish(),
    }
}

/// [`call`] for a flat path, which may decline the call: `None` when `f`
/// did (returned `None`), and the caller goes the general way.
pub(crate) fn call_or_decline(
    name: &str,
    comm: MPI_Comm,
    f: impl FnOnce(&mut Runtime) -> Option<MpiResult<()>>,
) -> Option<c_int> {
    let mut declined = false;
    let rc = call(name, comm, |rt| {
        f(rt).unwrap_or_else(|| {
            declined = true;
            Ok(())
        })
    });
    (!declined).then_some(rc)
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
/// For the application's calls; see [`gate_any_time`].
#[inline]
pub(crate) fn gate<T>(name: &str, f: impl FnOnce(&mut Runtime) -> T) -> T {
    gate_as(Caller::Serial, name, f)
}

/// Take the library lock for the application's call `name` and hand
/// back its guard, once the library is known to run (otherwise the
/// process ends with a message saying why, as in [`gate`]): for a caller
/// that keeps the lock across steps (`board::direct::Released`).
pub(crate) fn enter(name: &str) -> core::StateGuard {
    let mut state = core::state();
    running(&mut state, name);
    state
}

/// [`gate`] for the functions MPI lets any thread call at any time
/// (`core::threads::Caller::AnyTime`).
pub(crate) fn gate_any_time<T>(name: &str, f: impl FnOnce(&mut Runtime) -> T) -> T {
    gate_as(Caller::AnyTime, name, f)
}

#[inline]
fn gate_as<T>(caller: Caller, name: &str, f: impl FnOnce(&mut Runtime) -> T) -> T {
    if let Some(rt) = core::callback_runtime() {
        // SAFETY: an application callback is running on this thread, from
        // inside the library call that holds the lock and `rt`
        // (`core::in_call`); that call uses no borrow into the runtime's
        // tables until the callback returns (`core::run_callback`).
        return f(unsafe { &mut *rt });
    }
    let mut state = match caller {
        Caller::Serial => core::state(),
        Caller::AnyTime => core::state_any_time(),
    };
    core::in_call(running(&mut state, name), f)
}

/// Under `MPI_THREAD_MULTIPLE`, block until `ready` (run under the
/// library lock, once per turn of the progress driver) says the calling
/// blocking function can finish without waiting, releasing the lock
/// between turns so that other threads call MPI meanwhile
/// ([`core::threads`]). An error from `ready` ends the wait too: the
/// function's own call, made next, reports it. Below
/// `MPI_THREAD_MULTIPLE` this returns at once, and the function waits
/// under the lock.
pub(crate) fn wait_released(name: &str, mut ready: impl FnMut(&mut Runtime) -> MpiResult<bool>) {
    if core::threads::waits_hold_lock() {
        return;
    }
    let mut backoff = shm_engine::Backoff::default();
    loop {
        let done = gate(name, |rt| {
            let done = ready(rt).unwrap_or(true);
            if !done {
                rt.turn(&mut backoff, false);
            }
            done
        });
        if done {
            return;
        }
        core::threads::let_others_in();
    }
}

/// A blocking function that starts one request and waits for it (a
/// receive, a blocking send or collective): `start` checks the arguments
/// and starts the operation; its status goes to `status` (null for a
/// send or a collective). Below `MPI_THREAD_MULTIPLE`, or in a callback
/// (which holds the lock of the call that runs it), the request is
/// waited for at once, under the lock that started it, without a slot in
/// the request table. Otherwise it takes a slot and is waited for with the
/// lock released between turns of the progress driver
/// ([`core::threads`]); a request that is ready at once (an eager send)
/// or during a turn finishes under the same lock.
pub(crate) fn call_waiting(
    name: &str,
    comm: MPI_Comm,
    start: impl FnOnce(&mut Runtime) -> MpiResult<Req>,
    status: *mut MPI_Status,
) -> c_int {
    if core::threads::waits_hold_lock() {
        return call(name, comm, |rt| {
            let r = start(rt)?;
            report(rt.wait_started(r), status)
        });
    }
    let mut start = Some(start);
    let mut started = None;
    let mut backoff = shm_engine::Backoff::default();
    loop {
        let mut waiting = false;
        let rc = call(name, comm, |rt| {
            let i = match started {
                Some(i) => i,
                None => {
                    let i = match start.take().expect("started once")(rt)? {
                        Req::Coll(s) => rt.add_coll(s),
                        r => rt.add_req(r),
                    };
                    *started.insert(i)
                }
            };
            if !rt.req_ready(i)? {
                rt.turn(&mut backoff, false);
                if !rt.req_ready(i)? {
                    waiting = true;
                    return Ok(());
                }
            }
            report(rt.wait_req(i), status)
        });
        if !waiting {
            return rc;
        }
        core::threads::let_others_in();
    }
}

/// Write the outcome of a finished request to `status` (an error too,
/// as its `MPI_ERROR`), and return it.
fn report(res: MpiResult<Status>, status: *mut MPI_Status) -> MpiResult<()> {
    // SAFETY: status is an output argument (or null, or ignored).
    unsafe {
        write_status(
            status,
            res.as_ref()
                .map_or_else(|e| Status::error(e.code), |&st| st),
        )
    };
    res.map(drop)
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
#[inline]
pub(crate) fn running<'a>(state: &'a mut Library, name: &str) -> &'a mut Runtime {
    match state {
        Library::Running(rt) => rt,
        _ => not_running(state, name),
    }
}

/// End the process: `state` has no runtime for call `name`.
#[cold]
#[inline(never)]
fn not_running(state: &Library, name: &str) -> ! {
    match state {
        Library::Running(_) => unreachable!("called only without a runtime"),
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
    // Any-time functions fail here too (info objects, error strings).
    let handled = match &mut *core::state_any_time() {
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
    /// Call the application's error handler with the handle of its
    /// object (a communicator or a session), then return the code.
    User {
        f: core::AppFn,
        object: c_int,
        code: c_int,
    },
}

impl Handled {
    /// Finish error handling; the caller holds no library lock, since a
    /// user handler may call MPI.
    pub(crate) fn finish(self) -> c_int {
        match self {
            Handled::Return(code) => code,
            Handled::User { f, object, code } => {
                let (mut object, mut arg) = (object, code);
                // SAFETY: this layer registers handlers as `ErrhFn`s
                // (`MPI_Comm_create_errhandler`,
                // `MPI_Session_create_errhandler`).
                let f = unsafe { std::mem::transmute::<usize, ErrhFn>(f.addr()) };
                // SAFETY: `f` is the application's
                // MPI_Comm_errhandler_function or
                // MPI_Session_errhandler_function (for the object's kind),
                // called with two valid pointers as MPI-4.1 §9.3 says.
                unsafe { f(&mut object, &mut arg) };
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
    let (handler, slot) = rt.comm_errhandler(&e, comm_slot(comm).ok());
    raise_on(rt, name, handler, slot.map_or(comm, comm_handle), e)
}

pub(crate) fn is_predefined_errhandler(h: MPI_Errhandler) -> bool {
    matches!(
        h,
        abi::MPI_ERRORS_ARE_FATAL | abi::MPI_ERRORS_RETURN | abi::MPI_ERRORS_ABORT
    )
}

/// Apply `handler` (of `object`, the handle of a communicator or session)
/// to `e`: return its code under `MPI_ERRORS_RETURN`, leave a user
/// handler to [`Handled::finish`], end the job with a message otherwise
/// ([`Runtime::handle_error`]).
pub(crate) fn raise_on(
    rt: &mut Runtime,
    name: &str,
    handler: Errhandler,
    object: c_int,
    e: MpiError,
) -> Handled {
    let code = codes::code_out(e.code);
    match rt.handle_error(name, handler, &e, code) {
        Handling::Return => Handled::Return(code),
        Handling::User(f) => Handled::User { f, object, code },
    }
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
pub(crate) fn datatype(rt: &Runtime, dt: MPI_Datatype) -> MpiResult<TypeRef> {
    if let Some(t) = types::predefined(dt) {
        return Ok(TypeRef::predefined(t));
    }
    abi::direct_index(Kind::Datatype, dt)
        .filter(|&i| i >= core::FIRST_DERIVED_TYPE)
        .and_then(|i| rt.types.get(i))
        .map(|t| Arc::clone(t).into())
        .ok_or_else(|| err(Class::Type, format!("invalid datatype {dt:#x}")))
}

/// A committed datatype and the bytes of `count` (>= 0) of its elements.
pub(crate) fn committed_bytes(
    rt: &Runtime,
    count: MPI_Count,
    dt: MPI_Datatype,
) -> MpiResult<(TypeRef, usize)> {
    let count = buffer::check_count(count)?;
    buffer::committed_bytes(datatype(rt, dt)?, count)
}

/// `count` elements of datatype `dt` at `buf`, checked ([`UserBuf::new`];
/// `MPI_IN_PLACE` is no buffer here).
///
/// # Safety
/// As for [`UserBuf::new`].
#[inline]
pub(crate) unsafe fn user_buf(
    rt: &Runtime,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
) -> MpiResult<UserBuf> {
    let count = buffer::check_count(count)?;
    if abi::is_in_place(buf) {
        return Err(err(Class::Buffer, "MPI_IN_PLACE is not valid here"));
    }
    let dt = datatype(rt, dt)?;
    // SAFETY: forwarded from the caller.
    unsafe { UserBuf::new(buf, count, dt) }
}

/// A predefined datatype that is contiguous, and the bytes of `count` of
/// its elements: what the flat paths of sends, receives and collectives
/// take (any other type, a negative count or an overflow goes the general
/// way).
#[inline]
pub(crate) fn contiguous_bytes(
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> Option<(&'static Arc<core::datatype::Datatype>, usize)> {
    let dt = types::predefined(datatype).filter(|t| t.is_contiguous())?;
    Some((dt, dt.bytes(usize::try_from(count).ok()?)?))
}

/// A rank argument as the core names it.
pub(crate) fn rank_arg(rank: c_int) -> Rank {
    match rank {
        abi::MPI_PROC_NULL => Rank::Null,
        abi::MPI_ANY_SOURCE => Rank::Any,
        r => Rank::Proc(r),
    }
}

/// The root argument of a collective as the core names it.
pub(crate) fn root_arg(root: c_int) -> crate::core::peer::Root {
    use crate::core::peer::Root;
    match root {
        abi::MPI_ROOT => Root::Here,
        abi::MPI_PROC_NULL => Root::Null,
        r => Root::Rank(r),
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

/// An object name the application sets (`MPI_*_set_name`), cut at a
/// character boundary to what `MPI_MAX_OBJECT_NAME` holds.
///
/// # Safety
/// As for [`read_cstr`].
pub(crate) unsafe fn read_object_name(p: *const c_char) -> MpiResult<String> {
    // SAFETY: forwarded from the caller.
    let mut name = unsafe { read_cstr(p, Class::Arg, "name") }?;
    let max = abi::MPI_MAX_OBJECT_NAME as usize - 1;
    if name.len() > max {
        let mut end = max;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    Ok(name)
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
