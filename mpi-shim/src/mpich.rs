//! The MPICH-ABI entry layer: the exported `MPI_*` functions.
//!
//! Each function decodes its handles, checks every argument, calls into
//! [`crate::core`] and turns an error into the communicator's error
//! handler: `MPI_ERRORS_RETURN` returns the class, the default
//! `MPI_ERRORS_ARE_FATAL` (and `MPI_ERRORS_ABORT`) prints the function and
//! the reason and ends the job.
//!
//! Raw pointers come from C callers, who promise what the MPI standard
//! says about them (a buffer holds `count` elements, an output pointer is
//! writable); the `// SAFETY:` comments name which promise is used.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_double, c_int, c_void};

use crate::abi::{
    self, Kind, MPI_Comm, MPI_Datatype, MPI_Errhandler, MPI_Op, MPI_Request, MPI_Status,
};
use crate::coll;
use crate::core::{self, Comm, MpiError, MpiResult, Phase, Req, Runtime};
use crate::ops;

/// The communicator slot of a handle.
fn comm_slot(comm: MPI_Comm) -> MpiResult<usize> {
    match comm {
        abi::MPI_COMM_WORLD => Ok(core::WORLD),
        abi::MPI_COMM_SELF => Ok(core::SELF),
        h => abi::direct_index(Kind::Comm, h)
            .filter(|&i| i > core::SELF)
            .ok_or_else(|| {
                MpiError::new(abi::MPI_ERR_COMM, format!("invalid communicator {h:#x}"))
            }),
    }
}

fn comm_handle(slot: usize) -> MPI_Comm {
    match slot {
        core::WORLD => abi::MPI_COMM_WORLD,
        core::SELF => abi::MPI_COMM_SELF,
        i => abi::direct_handle(Kind::Comm, i),
    }
}

fn err(class: c_int, message: impl Into<String>) -> MpiError {
    MpiError::new(class, message)
}

/// Run `f` on the library's state; report an error through the error
/// handler of `comm` (of `MPI_COMM_WORLD` when `comm` is not valid).
fn call(name: &str, comm: MPI_Comm, f: impl FnOnce(&mut Runtime) -> MpiResult<()>) -> c_int {
    let mut state = core::state();
    let Phase::Running(rt) = &mut *state else {
        let when = if matches!(*state, Phase::Before) {
            "before MPI_Init"
        } else {
            "after MPI_Finalize"
        };
        eprintln!("Tessel MPI: {name} called {when}");
        std::process::exit(1);
    };
    match f(rt) {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => raise(rt, name, comm, e),
    }
}

fn raise(rt: &mut Runtime, name: &str, comm: MPI_Comm, e: MpiError) -> c_int {
    // A request's error goes to its communicator's handler.
    let slot = e
        .comm
        .or_else(|| comm_slot(comm).ok())
        .filter(|&s| rt.comm(s).is_ok())
        .unwrap_or(core::WORLD);
    let handler = rt
        .comm(slot)
        .map_or(abi::MPI_ERRORS_ARE_FATAL, |c| c.errhandler);
    if handler == abi::MPI_ERRORS_RETURN {
        return e.class;
    }
    let message = format!("{name}: {e}");
    eprintln!("Tessel MPI: {message}");
    rt.ep.bootstrap().abort(e.class, &message);
    e.class
}

/// Write `value` through an output pointer, or fail with `MPI_ERR_ARG`.
unsafe fn out<T>(ptr: *mut T, value: T) -> MpiResult<()> {
    if ptr.is_null() {
        return Err(err(abi::MPI_ERR_ARG, "null output argument"));
    }
    // SAFETY: non-null; the caller passes a writable `T` (MPI contract).
    unsafe { ptr.write(value) };
    Ok(())
}

/// Size in bytes of `count` elements of `dt`, checked.
fn message_bytes(count: c_int, dt: MPI_Datatype) -> MpiResult<usize> {
    if count < 0 {
        return Err(err(abi::MPI_ERR_COUNT, format!("negative count {count}")));
    }
    let (size, _) = ops::predefined(dt)?;
    (count as usize)
        .checked_mul(size)
        .ok_or_else(|| err(abi::MPI_ERR_COUNT, "message size overflows"))
}

/// The byte view of a C buffer of `len` bytes (`buf` may be null if empty).
unsafe fn bytes<'a>(buf: *const c_void, len: usize) -> MpiResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(err(abi::MPI_ERR_BUFFER, "null buffer"));
    }
    // SAFETY: the caller's buffer holds `count` elements (MPI contract).
    Ok(unsafe { std::slice::from_raw_parts(buf.cast(), len) })
}

unsafe fn bytes_mut<'a>(buf: *mut c_void, len: usize) -> MpiResult<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() {
        return Err(err(abi::MPI_ERR_BUFFER, "null buffer"));
    }
    // SAFETY: as for `bytes`, and the buffer is writable and not aliased
    // during the call (MPI contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) })
}

fn check_rank(c: &Comm, rank: c_int, what: &str, wildcard: bool) -> MpiResult<()> {
    let ok = (0..c.size()).contains(&rank)
        || rank == abi::MPI_PROC_NULL
        || (wildcard && rank == abi::MPI_ANY_SOURCE);
    if ok {
        Ok(())
    } else {
        Err(err(
            abi::MPI_ERR_RANK,
            format!(
                "invalid {what} rank {rank} in a communicator of size {}",
                c.size()
            ),
        ))
    }
}

fn check_tag(tag: c_int, wildcard: bool) -> MpiResult<()> {
    if tag >= 0 || (wildcard && tag == abi::MPI_ANY_TAG) {
        Ok(())
    } else {
        Err(err(abi::MPI_ERR_TAG, format!("invalid tag {tag}")))
    }
}

fn check_root(c: &Comm, root: c_int) -> MpiResult<usize> {
    if (0..c.size()).contains(&root) {
        Ok(root as usize)
    } else {
        Err(err(
            abi::MPI_ERR_ROOT,
            format!("invalid root {root} in a communicator of size {}", c.size()),
        ))
    }
}

unsafe fn write_status(status: *mut MPI_Status, st: MPI_Status) {
    if !status.is_null() && !abi::is_status_ignore(status) {
        // SAFETY: a status pointer other than MPI_STATUS_IGNORE is writable.
        unsafe { status.write(st) };
    }
}

/// The status of a receive from `MPI_PROC_NULL` (and of a null request).
fn empty_status() -> MPI_Status {
    MPI_Status::new(abi::MPI_ANY_SOURCE, abi::MPI_ANY_TAG, 0)
}

// ---------------------------------------------------------------------
// Start-up, shutdown, environment.

fn init(name: &str, required: c_int) -> c_int {
    let mut state = core::state();
    match &*state {
        Phase::Before => {}
        _ => {
            eprintln!("Tessel MPI: {name}: MPI was already initialized");
            std::process::exit(1);
        }
    }
    // One call at a time under the library lock: SERIALIZED is the most
    // this library supports.
    let level = required.clamp(abi::MPI_THREAD_SINGLE, abi::MPI_THREAD_SERIALIZED);
    match Runtime::new(level) {
        Ok(rt) => {
            *state = Phase::Running(Box::new(rt));
            abi::MPI_SUCCESS
        }
        Err(e) => {
            eprintln!("Tessel MPI: {name}: {e}");
            std::process::exit(1);
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init("MPI_Init", abi::MPI_THREAD_SINGLE)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let rc = init("MPI_Init_thread", required);
    call("MPI_Init_thread", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: `provided` is an output argument.
        unsafe { out(provided, rt.thread_level) }
    });
    rc
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    let v = !matches!(*core::state(), Phase::Before);
    // SAFETY: `flag` is an output argument.
    unsafe { out(flag, v as c_int) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    let v = matches!(*core::state(), Phase::After);
    // SAFETY: `flag` is an output argument.
    unsafe { out(flag, v as c_int) }.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Finalize() -> c_int {
    let rc = call("MPI_Finalize", abi::MPI_COMM_WORLD, |rt| {
        coll::barrier(rt, core::WORLD)
    });
    if rc != abi::MPI_SUCCESS {
        return rc;
    }
    let mut state = core::state();
    let Phase::Running(rt) = std::mem::replace(&mut *state, Phase::After) else {
        unreachable!("call() checked the phase");
    };
    match rt.ep.finalize() {
        Ok(()) => abi::MPI_SUCCESS,
        Err(e) => {
            eprintln!("Tessel MPI: MPI_Finalize: {e}");
            abi::MPI_ERR_OTHER
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    call("MPI_Query_thread", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: output argument.
        unsafe { out(provided, rt.thread_level) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    call("MPI_Is_thread_main", abi::MPI_COMM_WORLD, |rt| {
        let main = std::thread::current().id() == rt.main_thread;
        // SAFETY: output argument.
        unsafe { out(flag, main as c_int) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    call("MPI_Abort", comm, |rt| {
        let who = rt.ep.rank();
        rt.ep.bootstrap().abort(
            errorcode,
            &format!("MPI_Abort(comm {comm:#x}, {errorcode}) called by rank {who}"),
        );
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    // Callable at any time, even before MPI_Init.
    // SAFETY: output arguments.
    let r = unsafe {
        out(version, abi::MPI_VERSION).and_then(|()| out(subversion, abi::MPI_SUBVERSION))
    };
    r.map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

/// Copy `s` into a C string buffer of `cap` bytes, NUL-terminated.
unsafe fn write_cstr(dst: *mut c_char, cap: usize, s: &str, len: *mut c_int) -> MpiResult<()> {
    if dst.is_null() {
        return Err(err(abi::MPI_ERR_ARG, "null string argument"));
    }
    let n = s.len().min(cap - 1);
    // SAFETY: the caller's buffer holds `cap` bytes (MPI_MAX_* contract).
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast(), dst, n);
        dst.add(n).write(0);
        out(len, n as c_int)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_library_version(
    version: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let text = concat!(
        "Tessel MPI ",
        env!("CARGO_PKG_VERSION"),
        " (MPICH ABI, libmpi.so.12; shared-memory engine)"
    );
    let cap = abi::MPI_MAX_LIBRARY_VERSION_STRING as usize;
    // SAFETY: MPI_MAX_LIBRARY_VERSION_STRING bytes at `version`.
    unsafe { write_cstr(version, cap, text, resultlen) }
        .map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call("MPI_Get_processor_name", abi::MPI_COMM_WORLD, |_| {
        let mut host = [0u8; 256];
        // SAFETY: gethostname writes at most `host.len()` bytes.
        let rc = unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) };
        let host = if rc == 0 {
            let end = host.iter().position(|&b| b == 0).unwrap_or(host.len());
            String::from_utf8_lossy(&host[..end]).into_owned()
        } else {
            "localhost".into()
        };
        let cap = abi::MPI_MAX_PROCESSOR_NAME as usize;
        // SAFETY: MPI_MAX_PROCESSOR_NAME bytes at `name`.
        unsafe { write_cstr(name, cap, &host, resultlen) }
    })
}

fn monotonic() -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Wtime() -> c_double {
    let ts = monotonic();
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Wtick() -> c_double {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

// ---------------------------------------------------------------------
// Communicators and errors.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", comm, |rt| {
        let r = rt.comm(comm_slot(comm)?)?.rank;
        // SAFETY: output argument.
        unsafe { out(rank, r) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", comm, |rt| {
        let n = rt.comm(comm_slot(comm)?)?.size();
        // SAFETY: output argument.
        unsafe { out(size, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    call("MPI_Comm_dup", comm, |rt| {
        let slot = rt.comm_dup(comm_slot(comm)?)?;
        // SAFETY: output argument.
        unsafe { out(newcomm, comm_handle(slot)) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    if comm.is_null() {
        return call("MPI_Comm_free", abi::MPI_COMM_WORLD, |_| {
            Err(err(abi::MPI_ERR_ARG, "null communicator pointer"))
        });
    }
    // SAFETY: non-null pointer to the caller's handle.
    let h = unsafe { *comm };
    call("MPI_Comm_free", h, |rt| {
        rt.comm_free(comm_slot(h)?)?;
        // SAFETY: as above.
        unsafe { out(comm, abi::MPI_COMM_NULL) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    call("MPI_Comm_set_errhandler", comm, |rt| {
        let c = rt.comm_mut(comm_slot(comm)?)?;
        match errhandler {
            abi::MPI_ERRORS_ARE_FATAL | abi::MPI_ERRORS_RETURN | abi::MPI_ERRORS_ABORT => {
                c.errhandler = errhandler;
                Ok(())
            }
            h => Err(err(
                abi::MPI_ERR_ARG,
                format!("invalid error handler {h:#x}"),
            )),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    call("MPI_Comm_get_errhandler", comm, |rt| {
        let h = rt.comm(comm_slot(comm)?)?.errhandler;
        // SAFETY: output argument.
        unsafe { out(errhandler, h) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    // Error codes are their classes in this library.
    let ok = (0..=abi::MPI_ERR_UNSUPPORTED_OPERATION).contains(&errorcode);
    // SAFETY: output argument.
    match unsafe { out(errorclass, errorcode) } {
        Ok(()) if ok => abi::MPI_SUCCESS,
        _ => abi::MPI_ERR_ARG,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Error_string(
    errorcode: c_int,
    string: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let text = core::class_name(errorcode);
    let cap = abi::MPI_MAX_ERROR_STRING as usize;
    // SAFETY: MPI_MAX_ERROR_STRING bytes at `string`.
    unsafe { write_cstr(string, cap, text, resultlen) }
        .map_or(abi::MPI_ERR_ARG, |()| abi::MPI_SUCCESS)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    call("MPI_Type_size", abi::MPI_COMM_WORLD, |_| {
        let (s, _) = ops::predefined(datatype)?;
        // SAFETY: output argument.
        unsafe { out(size, s as c_int) }
    })
}

// ---------------------------------------------------------------------
// Point-to-point.

/// Checked arguments of a send: the destination's job rank (None for
/// `MPI_PROC_NULL`), the engine tag and the bytes.
unsafe fn send_args<'a>(
    rt: &Runtime,
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<(Option<u32>, u64, &'a [u8])> {
    let c = rt.comm(comm_slot(comm)?)?;
    let len = message_bytes(count, dt)?;
    check_rank(c, dest, "destination", false)?;
    check_tag(tag, false)?;
    // SAFETY: forwarded from the caller.
    let data = unsafe { bytes(buf, len)? };
    let to = (dest != abi::MPI_PROC_NULL).then(|| c.members[dest as usize]);
    Ok((to, Comm::tag(c.ctx, tag), data))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Send", comm, |rt| {
        // SAFETY: forwarded from the caller.
        let (to, tag, data) = unsafe { send_args(rt, buf, count, datatype, dest, tag, comm)? };
        if let Some(to) = to {
            rt.ep.send(to, tag, data)?;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    call("MPI_Isend", comm, |rt| {
        // SAFETY: forwarded from the caller.
        let (to, tag, data) = unsafe { send_args(rt, buf, count, datatype, dest, tag, comm)? };
        let r = match to {
            Some(to) => Req::Engine {
                // SAFETY: MPI forbids touching the buffer until the request
                // completes, so it outlives the engine request.
                req: unsafe { rt.ep.isend_raw(to, tag, data.as_ptr(), data.len())? },
                comm: comm_slot(comm)?,
            },
            None => Req::Done(empty_status()),
        };
        let i = rt.add_req(r);
        // SAFETY: output argument.
        unsafe { out(request, abi::direct_handle(Kind::Request, i)) }
    })
}

/// Post a receive; `None` for `MPI_PROC_NULL`.
unsafe fn post_recv(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Req> {
    let slot = comm_slot(comm)?;
    let c = rt.comm(slot)?;
    let len = message_bytes(count, dt)?;
    check_rank(c, source, "source", true)?;
    check_tag(tag, true)?;
    if source == abi::MPI_PROC_NULL {
        return Ok(Req::Done(MPI_Status::new(
            abi::MPI_PROC_NULL,
            abi::MPI_ANY_TAG,
            0,
        )));
    }
    // SAFETY: forwarded from the caller.
    let data = unsafe { bytes_mut(buf, len)? };
    let (src, matcher) = (c.source(source), Comm::tag_match(c.ctx, tag));
    // SAFETY: MPI forbids touching the buffer until the request completes.
    let req = unsafe {
        rt.ep
            .irecv_raw(src, matcher, data.as_mut_ptr(), data.len())?
    };
    Ok(Req::Engine { req, comm: slot })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Recv", comm, |rt| {
        // SAFETY: forwarded from the caller.
        let r = unsafe { post_recv(rt, buf, count, datatype, source, tag, comm)? };
        let i = rt.add_req(r);
        let st = finish(rt, i, status)?;
        // SAFETY: status is an output argument (or ignored).
        unsafe { write_status(status, st) };
        Ok(())
    })
}

/// Wait for request `i`; on truncation, record the error in `status`.
fn finish(rt: &mut Runtime, i: usize, status: *mut MPI_Status) -> MpiResult<MPI_Status> {
    rt.wait_req(i).inspect_err(|e| {
        let mut st = empty_status();
        st.MPI_ERROR = e.class;
        // SAFETY: status is an output argument (or ignored).
        unsafe { write_status(status, st) };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    call("MPI_Irecv", comm, |rt| {
        // SAFETY: forwarded from the caller.
        let r = unsafe { post_recv(rt, buf, count, datatype, source, tag, comm)? };
        let i = rt.add_req(r);
        // SAFETY: output argument.
        unsafe { out(request, abi::direct_handle(Kind::Request, i)) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Sendrecv", comm, |rt| {
        // SAFETY: forwarded from the caller.
        let r = unsafe { post_recv(rt, recvbuf, recvcount, recvtype, source, recvtag, comm)? };
        let i = rt.add_req(r);
        // SAFETY: forwarded from the caller.
        let (to, tag, data) =
            unsafe { send_args(rt, sendbuf, sendcount, sendtype, dest, sendtag, comm)? };
        if let Some(to) = to {
            rt.ep.send(to, tag, data)?;
        }
        let st = finish(rt, i, status)?;
        // SAFETY: status is an output argument (or ignored).
        unsafe { write_status(status, st) };
        Ok(())
    })
}

/// The request slot of a handle; `None` for `MPI_REQUEST_NULL`.
fn req_slot(h: MPI_Request) -> MpiResult<Option<usize>> {
    if h == abi::MPI_REQUEST_NULL {
        return Ok(None);
    }
    abi::direct_index(Kind::Request, h)
        .map(Some)
        .ok_or_else(|| err(abi::MPI_ERR_REQUEST, format!("invalid request {h:#x}")))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    call("MPI_Wait", abi::MPI_COMM_WORLD, |rt| {
        if request.is_null() {
            return Err(err(abi::MPI_ERR_REQUEST, "null request pointer"));
        }
        // SAFETY: non-null pointer to the caller's request handle.
        let h = unsafe { *request };
        let st = match req_slot(h)? {
            None => empty_status(),
            Some(i) => {
                // SAFETY: as above.
                unsafe { *request = abi::MPI_REQUEST_NULL };
                finish(rt, i, status)?
            }
        };
        // SAFETY: status is an output argument (or ignored).
        unsafe { write_status(status, st) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Test(
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Test", abi::MPI_COMM_WORLD, |rt| {
        if request.is_null() {
            return Err(err(abi::MPI_ERR_REQUEST, "null request pointer"));
        }
        // SAFETY: non-null pointer to the caller's request handle.
        let h = unsafe { *request };
        let done = match req_slot(h)? {
            None => Some(empty_status()),
            Some(i) if rt.req_done(i)? => {
                // SAFETY: as above.
                unsafe { *request = abi::MPI_REQUEST_NULL };
                Some(finish(rt, i, status)?)
            }
            Some(_) => None,
        };
        if let Some(st) = done {
            // SAFETY: status is an output argument (or ignored).
            unsafe { write_status(status, st) };
        }
        // SAFETY: output argument.
        unsafe { out(flag, done.is_some() as c_int) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    requests: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    call("MPI_Waitall", abi::MPI_COMM_WORLD, |rt| {
        if count < 0 {
            return Err(err(abi::MPI_ERR_COUNT, format!("negative count {count}")));
        }
        if count > 0 && requests.is_null() {
            return Err(err(abi::MPI_ERR_REQUEST, "null request array"));
        }
        let ignore = abi::is_status_ignore(statuses) || statuses.is_null();
        let mut failed = false;
        for k in 0..count as usize {
            // SAFETY: the caller's arrays hold `count` entries.
            let (req, st) = unsafe {
                (
                    requests.add(k),
                    if ignore { statuses } else { statuses.add(k) },
                )
            };
            // SAFETY: as above.
            let h = unsafe { *req };
            let res = match req_slot(h)? {
                None => Ok(empty_status()),
                Some(i) => {
                    // SAFETY: as above.
                    unsafe { *req = abi::MPI_REQUEST_NULL };
                    rt.wait_req(i)
                }
            };
            let s = res.unwrap_or_else(|e| {
                failed = true;
                let mut s = empty_status();
                s.MPI_ERROR = e.class;
                s
            });
            // SAFETY: status array entry (or ignored).
            unsafe { write_status(st, s) };
        }
        if failed {
            Err(err(
                abi::MPI_ERR_IN_STATUS,
                "a request failed; see its status",
            ))
        } else {
            Ok(())
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Get_count(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut c_int,
) -> c_int {
    call("MPI_Get_count", abi::MPI_COMM_WORLD, |_| {
        if status.is_null() || abi::is_status_ignore(status) {
            return Err(err(abi::MPI_ERR_ARG, "no status"));
        }
        let (size, _) = ops::predefined(datatype)?;
        // SAFETY: non-null status written by this library.
        let bytes = unsafe { (*status).bytes() };
        let n = if size == 0 {
            0
        } else if bytes % size as u64 != 0 {
            abi::MPI_UNDEFINED
        } else {
            c_int::try_from(bytes / size as u64).unwrap_or(abi::MPI_UNDEFINED)
        };
        // SAFETY: output argument.
        unsafe { out(count, n) }
    })
}

// ---------------------------------------------------------------------
// Collectives.

#[unsafe(no_mangle)]
pub extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    call("MPI_Barrier", comm, |rt| {
        coll::barrier(rt, comm_slot(comm)?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Bcast", comm, |rt| {
        let slot = comm_slot(comm)?;
        let root = check_root(rt.comm(slot)?, root)?;
        let len = message_bytes(count, datatype)?;
        // SAFETY: forwarded from the caller.
        let buf = unsafe { bytes_mut(buffer, len)? };
        coll::bcast(rt, slot, buf, root)
    })
}

/// Checked arguments of a reduction, and the accumulator initialised from
/// the send buffer (or from the receive buffer with `MPI_IN_PLACE`).
unsafe fn reduce_args(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    receives: bool,
) -> MpiResult<(Vec<u8>, ops::Elem)> {
    let len = message_bytes(count, datatype)?;
    let (_, elem) = ops::predefined(datatype)?;
    ops::check(op, elem)?;
    let src = if abi::is_in_place(sendbuf) {
        if !receives {
            return Err(err(
                abi::MPI_ERR_BUFFER,
                "MPI_IN_PLACE is only valid at the root",
            ));
        }
        recvbuf.cast_const()
    } else {
        sendbuf
    };
    // SAFETY: forwarded from the caller.
    Ok((unsafe { bytes(src, len)? }.to_vec(), elem))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Reduce", comm, |rt| {
        let slot = comm_slot(comm)?;
        let c = rt.comm(slot)?;
        let root = check_root(c, root)?;
        let at_root = c.rank as usize == root;
        // SAFETY: forwarded from the caller.
        let (mut acc, elem) =
            unsafe { reduce_args(sendbuf, recvbuf, count, datatype, op, at_root)? };
        coll::reduce(rt, slot, &mut acc, op, elem, root)?;
        if at_root {
            // SAFETY: the root's receive buffer holds `count` elements.
            unsafe { bytes_mut(recvbuf, acc.len())? }.copy_from_slice(&acc);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Allreduce", comm, |rt| {
        let slot = comm_slot(comm)?;
        rt.comm(slot)?;
        // SAFETY: forwarded from the caller.
        let (mut acc, elem) = unsafe { reduce_args(sendbuf, recvbuf, count, datatype, op, true)? };
        coll::allreduce(rt, slot, &mut acc, op, elem)?;
        // SAFETY: the receive buffer holds `count` elements.
        unsafe { bytes_mut(recvbuf, acc.len())? }.copy_from_slice(&acc);
        Ok(())
    })
}
