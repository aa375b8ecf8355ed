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

use std::borrow::Cow;
use std::ffi::{c_char, c_double, c_int, c_void};
use std::sync::Arc;

use crate::abi::{
    self, Kind, MPI_Comm, MPI_Datatype, MPI_Errhandler, MPI_Op, MPI_Request, MPI_Status,
};
use crate::core::datatype::Datatype;
use crate::core::{self, Comm, MpiError, MpiResult, Phase, Req, Runtime, Staged, Unpack};
use crate::ops;

mod coll;
mod comm;
mod env;
mod p2p;
mod types;

/// The C prototype of every function the library exports, by area, in the
/// form MPICH's header declares it (parameter names aside). `mpi.h` is
/// generated from these lists, and a test checks that the library exports
/// exactly these functions.
pub const PROTOTYPES: &[&[&str]] = &[
    env::PROTOTYPES,
    comm::PROTOTYPES,
    types::PROTOTYPES,
    p2p::PROTOTYPES,
    coll::PROTOTYPES,
];

/// Every prototype, in header order.
pub fn prototypes() -> impl Iterator<Item = &'static str> {
    PROTOTYPES.iter().flat_map(|area| area.iter().copied())
}

/// The communicator slot of a handle.
pub(crate) fn comm_slot(comm: MPI_Comm) -> MpiResult<usize> {
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

pub(crate) fn comm_handle(slot: usize) -> MPI_Comm {
    match slot {
        core::WORLD => abi::MPI_COMM_WORLD,
        core::SELF => abi::MPI_COMM_SELF,
        i => abi::direct_handle(Kind::Comm, i),
    }
}

pub(crate) fn err(class: c_int, message: impl Into<String>) -> MpiError {
    MpiError::new(class, message)
}

/// Run `f` on the library's state; report an error through the error
/// handler of `comm` (of `MPI_COMM_WORLD` when `comm` is not valid).
pub(crate) fn call(
    name: &str,
    comm: MPI_Comm,
    f: impl FnOnce(&mut Runtime) -> MpiResult<()>,
) -> c_int {
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

pub(crate) fn raise(rt: &mut Runtime, name: &str, comm: MPI_Comm, e: MpiError) -> c_int {
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
pub(crate) unsafe fn out<T>(ptr: *mut T, value: T) -> MpiResult<()> {
    if ptr.is_null() {
        return Err(err(abi::MPI_ERR_ARG, "null output argument"));
    }
    // SAFETY: non-null; the caller passes a writable `T` (MPI contract).
    unsafe { ptr.write(value) };
    Ok(())
}

/// The datatype behind handle `dt`.
pub(crate) fn datatype(_rt: &Runtime, dt: MPI_Datatype) -> MpiResult<Arc<Datatype>> {
    let (size, elem) = ops::predefined(dt)?;
    let mut t = Datatype::basic(size, elem);
    if let ops::Elem::Pair(p) = elem {
        // `{value; int}` as a C struct lays it out (MPI-4.0 §6.9.4).
        t.extent = p.extent() as isize;
        if p.index_offset() != p.value_size() {
            t.blocks = vec![(0, p.value_size()), (p.index_offset() as isize, 4)];
        }
    }
    Ok(Arc::new(t))
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
    /// only written through if the caller is a receive.
    pub(crate) unsafe fn new(
        rt: &Runtime,
        buf: *const c_void,
        count: c_int,
        dt: MPI_Datatype,
    ) -> MpiResult<Self> {
        if count < 0 {
            return Err(err(abi::MPI_ERR_COUNT, format!("negative count {count}")));
        }
        if abi::is_in_place(buf) {
            return Err(err(abi::MPI_ERR_BUFFER, "MPI_IN_PLACE is not valid here"));
        }
        let dt = datatype(rt, dt)?;
        let len = dt
            .bytes(count as usize)
            .ok_or_else(|| err(abi::MPI_ERR_COUNT, "message size overflows"))?;
        if len > 0 && buf.is_null() {
            return Err(err(abi::MPI_ERR_BUFFER, "null buffer"));
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

pub(crate) fn check_rank(c: &Comm, rank: c_int, what: &str, wildcard: bool) -> MpiResult<()> {
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

pub(crate) fn check_tag(tag: c_int, wildcard: bool) -> MpiResult<()> {
    if tag >= 0 || (wildcard && tag == abi::MPI_ANY_TAG) {
        Ok(())
    } else {
        Err(err(abi::MPI_ERR_TAG, format!("invalid tag {tag}")))
    }
}

pub(crate) fn check_root(c: &Comm, root: c_int) -> MpiResult<usize> {
    if (0..c.size()).contains(&root) {
        Ok(root as usize)
    } else {
        Err(err(
            abi::MPI_ERR_ROOT,
            format!("invalid root {root} in a communicator of size {}", c.size()),
        ))
    }
}

pub(crate) unsafe fn write_status(status: *mut MPI_Status, st: MPI_Status) {
    if !status.is_null() && !abi::is_status_ignore(status) {
        // SAFETY: a status pointer other than MPI_STATUS_IGNORE is writable.
        unsafe { status.write(st) };
    }
}

/// The status of a receive from `MPI_PROC_NULL` (and of a null request).
pub(crate) fn empty_status() -> MPI_Status {
    MPI_Status::new(abi::MPI_ANY_SOURCE, abi::MPI_ANY_TAG, 0)
}

/// Copy `s` into a C string buffer of `cap` bytes, NUL-terminated.
pub(crate) unsafe fn write_cstr(
    dst: *mut c_char,
    cap: usize,
    s: &str,
    len: *mut c_int,
) -> MpiResult<()> {
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
