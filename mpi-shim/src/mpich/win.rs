//! One-sided communication (MPI-4.1 chapter 12): window handles, the
//! creation calls, the communication calls (blocking and request-based),
//! synchronization, and the queries (attributes, group, info, name,
//! error handlers). The work is in [`crate::core::win`].
//!
//! Errors of a call on a window go to the window's error handler
//! (`MPI_ERRORS_ARE_FATAL` until the application sets another, MPI-4.1
//! §9.3); a handle that is no window is reported through
//! `MPI_COMM_WORLD`'s. Creation calls report through their communicator.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::collections::HashMap;
use std::ffi::c_char;
use std::sync::Mutex;

use super::counts::{Count, large_count};
use super::errh::ErrhFn;
use super::group::{group_members, new_group};
use super::info::{info_hints, new_info};
use super::*;
use crate::abi::{MPI_Aint, MPI_Group, MPI_Info, MPI_Win};
use crate::core::win::{Flavor, LockType, Target, check_accumulate};
use crate::ops::Op;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)",
    "int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)",
    "int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)",
    "int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)",
    "int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)",
    "int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)",
    "int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)",
    "int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)",
    "int MPI_Win_detach(MPI_Win win, const void *base)",
    "int MPI_Win_free(MPI_Win *win)",
    "int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)",
    "int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit, void *baseptr)",
    "int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)",
    "int MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win)",
    "int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)",
    "int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)",
    "int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)",
    "int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win)",
    "int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)",
    "int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)",
    "int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)",
    "int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)",
    "int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)",
    "int MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)",
    "int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)",
    "int MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)",
    "int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)",
    "int MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)",
    "int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)",
    "int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)",
    "int MPI_Win_fence(int assert, MPI_Win win)",
    "int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)",
    "int MPI_Win_unlock(int rank, MPI_Win win)",
    "int MPI_Win_lock_all(int assert, MPI_Win win)",
    "int MPI_Win_unlock_all(MPI_Win win)",
    "int MPI_Win_flush(int rank, MPI_Win win)",
    "int MPI_Win_flush_all(MPI_Win win)",
    "int MPI_Win_flush_local(int rank, MPI_Win win)",
    "int MPI_Win_flush_local_all(MPI_Win win)",
    "int MPI_Win_sync(MPI_Win win)",
    "int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)",
    "int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)",
    "int MPI_Win_complete(MPI_Win win)",
    "int MPI_Win_wait(MPI_Win win)",
    "int MPI_Win_test(MPI_Win win, int *flag)",
    "int MPI_Win_get_group(MPI_Win win, MPI_Group *group)",
    "int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used)",
    "int MPI_Win_set_info(MPI_Win win, MPI_Info info)",
    "int MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)",
    "int MPI_Win_set_name(MPI_Win win, const char *win_name)",
    "int MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)",
    "int MPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn, MPI_Errhandler *errhandler)",
    "int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)",
    "int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)",
    "int MPI_Win_call_errhandler(MPI_Win win, int errorcode)",
];

pub(crate) fn win_handle(slot: usize) -> MPI_Win {
    abi::direct_handle(Kind::Win, slot)
}

fn win_slot(rt: &Runtime, win: MPI_Win) -> MpiResult<usize> {
    abi::direct_index(Kind::Win, win)
        .filter(|&s| rt.win(s).is_ok())
        .ok_or_else(|| err(Class::Win, format!("invalid window {win:#x}")))
}

/// Run `f` on window `win`; report an error through its error handler.
fn win_call(
    name: &str,
    win: MPI_Win,
    f: impl FnOnce(&mut Runtime, usize) -> MpiResult<()>,
) -> c_int {
    let r = gate(name, |rt| {
        let slot = win_slot(rt, win).map_err(|e| raise(rt, name, abi::MPI_COMM_WORLD, e))?;
        f(rt, slot).map_err(|e| {
            let handler = rt.win(slot).map_or(Errhandler::Fatal, |w| w.errhandler);
            raise_on(rt, name, handler, win, e)
        })
    });
    match r {
        Ok(()) => abi::MPI_SUCCESS,
        Err(h) => h.finish(),
    }
}

/// [`win_call`] for a request-based operation: `start` gives the
/// request, stored and handed out once `request` is known writable.
fn win_request(
    name: &str,
    win: MPI_Win,
    request: *mut MPI_Request,
    start: impl FnOnce(&mut Runtime, usize) -> MpiResult<Req>,
) -> c_int {
    win_call(name, win, |rt, slot| {
        nonnull(request, "request")?;
        let r = start(rt, slot)?;
        let i = rt.add_req(r);
        // SAFETY: non-null output argument.
        unsafe { out(request, abi::direct_handle(Kind::Request, i)) }
    })
}

// ---------------------------------------------------------------------
// Creation and freeing.

/// The `int` cells of a window's predefined attributes, which the
/// application reads through the pointers `MPI_Win_get_attr` returns.
#[derive(Debug)]
struct Cells {
    size: MPI_Aint,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

/// The cells of each live window, by slot (boxed: their addresses stay).
static CELLS: Mutex<Option<HashMap<usize, Box<Cells>>>> = Mutex::new(None);

fn cells<T>(f: impl FnOnce(&mut HashMap<usize, Box<Cells>>) -> T) -> T {
    let mut g = CELLS.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

fn flavor_out(f: Flavor) -> c_int {
    match f {
        Flavor::Create => abi::MPI_WIN_FLAVOR_CREATE,
        Flavor::Allocate => abi::MPI_WIN_FLAVOR_ALLOCATE,
        Flavor::Dynamic => abi::MPI_WIN_FLAVOR_DYNAMIC,
        Flavor::Shared => abi::MPI_WIN_FLAVOR_SHARED,
    }
}

/// Create a window of `flavor` over `comm` (see `Runtime::win_create`);
/// write the base through `baseptr` when given (allocating flavors).
///
/// # Safety
/// `win` and `baseptr` are null or writable (MPI contract); `base`
/// addresses `size` bytes for `Flavor::Create`.
unsafe fn create(
    name: &str,
    flavor: Flavor,
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: i64,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: Option<*mut c_void>,
    win: *mut MPI_Win,
) -> c_int {
    call(name, comm, |rt| {
        let parent = comm_slot(comm)?;
        rt.comm(parent)?;
        let size =
            usize::try_from(size).map_err(|_| err(Class::Size, format!("negative size {size}")))?;
        let unit = usize::try_from(disp_unit)
            .ok()
            .filter(|&u| u > 0)
            .ok_or_else(|| {
                err(
                    Class::Disp,
                    format!("invalid displacement unit {disp_unit}"),
                )
            })?;
        let hints = info_hints(info)?;
        nonnull(win, "win")?;
        if let Some(p) = baseptr {
            nonnull(p, "baseptr")?;
        }
        let (slot, b) = rt.win_create(parent, flavor, base.cast(), size, unit, hints)?;
        cells(|c| {
            c.insert(
                slot,
                Box::new(Cells {
                    size: size as MPI_Aint,
                    disp_unit: unit as c_int,
                    flavor: flavor_out(flavor),
                    model: abi::MPI_WIN_UNIFIED,
                }),
            )
        });
        // SAFETY: output arguments, checked non-null.
        unsafe {
            if let Some(p) = baseptr {
                out(p.cast::<*mut c_void>(), b.cast())?;
            }
            out(win, win_handle(slot))
        }
    })
}

large_count! {
    fn MPI_Win_create / MPI_Win_create_c(base: *mut c_void, size: MPI_Aint, disp_unit: D, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) {
        // SAFETY: forwarded from the caller.
        unsafe { create(NAME, Flavor::Create, base, size, disp_unit as i64, info, comm, None, win) }
    }
}

large_count! {
    fn MPI_Win_allocate / MPI_Win_allocate_c(size: MPI_Aint, disp_unit: D, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) {
        // SAFETY: forwarded from the caller.
        unsafe { create(NAME, Flavor::Allocate, std::ptr::null_mut(), size, disp_unit as i64, info, comm, Some(baseptr), win) }
    }
}

large_count! {
    fn MPI_Win_allocate_shared / MPI_Win_allocate_shared_c(size: MPI_Aint, disp_unit: D, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) {
        // SAFETY: forwarded from the caller.
        unsafe { create(NAME, Flavor::Shared, std::ptr::null_mut(), size, disp_unit as i64, info, comm, Some(baseptr), win) }
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_create_dynamic(
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe {
        create(
            "MPI_Win_create_dynamic",
            Flavor::Dynamic,
            std::ptr::null_mut(),
            0,
            1,
            info,
            comm,
            None,
            win,
        )
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    win_call("MPI_Win_attach", win, |rt, slot| {
        let len =
            usize::try_from(size).map_err(|_| err(Class::Size, format!("negative size {size}")))?;
        rt.win_attach(slot, base as usize, len)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    win_call("MPI_Win_detach", win, |rt, slot| {
        rt.win_detach(slot, base as usize)
    })
}

/// Collective: every process's operations complete, then the window
/// goes; the handle becomes `MPI_WIN_NULL`.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_free(win: *mut MPI_Win) -> c_int {
    if win.is_null() {
        return fail(
            "MPI_Win_free",
            abi::MPI_COMM_WORLD,
            err(Class::Arg, "null window pointer"),
        );
    }
    // SAFETY: non-null pointer to the caller's handle.
    let h = unsafe { *win };
    // The attributes' delete callbacks first, without the library lock
    // (they may call MPI); one that fails leaves the window.
    let deleted = locked("MPI_Win_free", |rt| win_slot(rt, h))
        .and_then(|slot| super::attr::delete_win_attrs("MPI_Win_free", slot));
    if let Err(e) = deleted {
        return win_call("MPI_Win_free", h, |_, _| Err(e));
    }
    win_call("MPI_Win_free", h, |rt, slot| {
        rt.win_free(slot)?;
        cells(|c| c.remove(&slot));
        // SAFETY: as above.
        unsafe { out(win, abi::MPI_WIN_NULL) }
    })
}

large_count! {
    fn MPI_Win_shared_query / MPI_Win_shared_query_c(win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut D, baseptr: *mut c_void) {
        win_call(NAME, win, |rt, slot| {
            let w = rt.win(slot)?;
            if w.flavor != Flavor::Shared {
                return Err(err(Class::RmaFlavor, "MPI_Win_shared_query needs a window of MPI_Win_allocate_shared"));
            }
            let peer = match rank_arg(rank) {
                // The first process that exposes memory (MPI-4.1 §12.2.3).
                Rank::Null => w.peers.iter().find(|p| p.size > 0).unwrap_or(&w.peers[0]),
                Rank::Proc(r) => w.peers.get(usize::try_from(r).unwrap_or(usize::MAX)).ok_or_else(|| err(Class::Rank, format!("invalid rank {rank}")))?,
                Rank::Any => return Err(err(Class::Rank, "MPI_ANY_SOURCE is no rank here")),
            };
            let (s, u, b) = (peer.size as MPI_Aint, peer.disp_unit, peer.base);
            nonnull(size, "size")?;
            nonnull(disp_unit, "disp_unit")?;
            nonnull(baseptr, "baseptr")?;
            // SAFETY: output arguments, checked non-null.
            unsafe {
                out(size, s)?;
                out(disp_unit, D::try_from(u).unwrap_or(D::MAX))?;
                out(baseptr.cast::<*mut c_void>(), b.cast())
            }
        })
    }
}

// ---------------------------------------------------------------------
// Communication.

/// The target of an operation, checked; `None` for `MPI_PROC_NULL`.
fn target(
    rt: &Runtime,
    rank: c_int,
    disp: MPI_Aint,
    count: i64,
    dt: MPI_Datatype,
) -> MpiResult<Option<Target>> {
    let rank = match rank_arg(rank) {
        Rank::Null => return Ok(None),
        Rank::Proc(r) if r >= 0 => r as u32,
        _ => return Err(err(Class::Rank, format!("invalid target rank {rank}"))),
    };
    let (dt, _) = committed_bytes(rt, count, dt)?;
    Ok(Some(Target {
        rank,
        disp,
        count: count as usize,
        dt,
    }))
}

/// The data of an origin buffer, which must fill the target exactly.
///
/// # Safety
/// `ub` is readable.
unsafe fn origin_data<'a>(ub: &'a UserBuf, t: &Target) -> MpiResult<std::borrow::Cow<'a, [u8]>> {
    if ub.len != t.dt.size * t.count {
        return Err(err(
            Class::Type,
            format!(
                "the origin has {} bytes of data, the target room for {}",
                ub.len,
                t.dt.size * t.count
            ),
        ));
    }
    // SAFETY: the caller's promise.
    Ok(unsafe { ub.data() })
}

/// A predefined operation for an accumulate (`MPI_Op_create` operations
/// do not apply to one-sided communication, MPI-4.1 §12.3.4).
fn rma_op(op: MPI_Op) -> MpiResult<Op> {
    super::coll::op::predefined_op(op).ok_or_else(|| {
        err(
            Class::Op,
            format!("{op:#x} is no predefined operation (user operations do not apply to windows)"),
        )
    })
}

/// # Safety
/// The origin buffer holds `origin_count` elements (MPI contract).
unsafe fn put(
    rt: &mut Runtime,
    slot: usize,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
) -> MpiResult<()> {
    // SAFETY: forwarded from the caller.
    let ub = unsafe { user_buf(rt, origin_addr, origin_count, origin_datatype)? };
    let Some(t) = target(rt, target_rank, target_disp, target_count, target_datatype)? else {
        return Ok(());
    };
    // SAFETY: an origin buffer is readable.
    let data = unsafe { origin_data(&ub, &t)? };
    rt.win_put(slot, &data, &t)
}

large_count! {
    fn MPI_Put / MPI_Put_c(origin_addr: *const c_void, origin_count: C, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, win: MPI_Win) {
        // SAFETY: forwarded from the caller.
        win_call(NAME, win, |rt, slot| unsafe { put(rt, slot, origin_addr, origin_count.get(), origin_datatype, target_rank, target_disp, target_count.get(), target_datatype) })
    }
}

large_count! {
    /// Complete at once: the data is copied out at the call.
    fn MPI_Rput / MPI_Rput_c(origin_addr: *const c_void, origin_count: C, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request) {
        win_request(NAME, win, request, |rt, slot| {
            // SAFETY: forwarded from the caller.
            unsafe { put(rt, slot, origin_addr, origin_count.get(), origin_datatype, target_rank, target_disp, target_count.get(), target_datatype)? };
            Ok(Req::Done(Status::empty()))
        })
    }
}

/// The request of a reply, if any (`MPI_PROC_NULL`: done).
fn reply_req(slot: usize, id: Option<u64>) -> Req {
    id.map_or(Req::Done(Status::empty()), |id| Req::Rma { win: slot, id })
}

/// # Safety
/// The origin buffer holds `origin_count` writable elements (MPI
/// contract), left alone until the operation completes.
unsafe fn get(
    rt: &mut Runtime,
    slot: usize,
    origin_addr: *mut c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
) -> MpiResult<Option<u64>> {
    // SAFETY: forwarded from the caller.
    let ub = unsafe { user_buf(rt, origin_addr, origin_count, origin_datatype)? };
    let Some(t) = target(rt, target_rank, target_disp, target_count, target_datatype)? else {
        return Ok(None);
    };
    if ub.len != t.dt.size * t.count {
        return Err(err(
            Class::Type,
            "the origin and target data differ in size",
        ));
    }
    rt.win_get(slot, ub, &t)
}

large_count! {
    fn MPI_Get / MPI_Get_c(origin_addr: *mut c_void, origin_count: C, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, win: MPI_Win) {
        // SAFETY: forwarded from the caller.
        win_call(NAME, win, |rt, slot| unsafe { get(rt, slot, origin_addr, origin_count.get(), origin_datatype, target_rank, target_disp, target_count.get(), target_datatype).map(drop) })
    }
}

large_count! {
    fn MPI_Rget / MPI_Rget_c(origin_addr: *mut c_void, origin_count: C, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request) {
        win_request(NAME, win, request, |rt, slot| {
            // SAFETY: forwarded from the caller.
            let id = unsafe { get(rt, slot, origin_addr, origin_count.get(), origin_datatype, target_rank, target_disp, target_count.get(), target_datatype)? };
            Ok(reply_req(slot, id))
        })
    }
}

/// The origin data of a small `MPI_NO_OP` fetch, and room for the copies
/// a compare-and-swap makes of one element (at most 32 bytes, a `long
/// double _Complex`): no allocation per call.
const SMALL_RMA: usize = 64;
static ZEROS: [u8; SMALL_RMA] = [0; SMALL_RMA];

/// `MPI_Accumulate` (no `result`) and `MPI_Get_accumulate`: the reply id,
/// if a reply comes.
///
/// # Safety
/// The buffers hold their elements (MPI contract); the origin is not
/// read with `MPI_NO_OP`.
unsafe fn accumulate(
    rt: &mut Runtime,
    slot: usize,
    origin: (*const c_void, i64, MPI_Datatype),
    result: Option<(*mut c_void, i64, MPI_Datatype)>,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<Option<u64>> {
    let op = rma_op(op)?;
    let result = match result {
        // SAFETY: the result buffer holds its elements.
        Some((p, n, dt)) => Some(unsafe { user_buf(rt, p, n, dt)? }),
        None => None,
    };
    let Some(t) = target(rt, target_rank, target_disp, target_count, target_datatype)? else {
        return Ok(None);
    };
    if t.count == 0 || t.dt.size == 0 {
        // Nothing to combine or fetch (any datatype will do).
        return Ok(None);
    }
    let elem = check_accumulate(op, &t.dt)?;
    let ub;
    let len = t.dt.size * t.count;
    let data = if op == Op::NoOp {
        // Nothing reads these bytes as values; a message carries them.
        match ZEROS.get(..len) {
            Some(zeros) => std::borrow::Cow::Borrowed(zeros),
            None => std::borrow::Cow::Owned(vec![0; len]),
        }
    } else {
        // SAFETY: the origin buffer holds its elements.
        ub = unsafe { user_buf(rt, origin.0, origin.1, origin.2)? };
        // SAFETY: as above.
        unsafe { origin_data(&ub, &t)? }
    };
    if let Some(r) = &result
        && r.len != t.dt.size * t.count
    {
        return Err(err(
            Class::Type,
            "the result and target data differ in size",
        ));
    }
    rt.win_accumulate(slot, &data, op, elem, result, &t)
}

large_count! {
    fn MPI_Accumulate / MPI_Accumulate_c(origin_addr: *const c_void, origin_count: C, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win) {
        win_call(NAME, win, |rt, slot| {
            // SAFETY: forwarded from the caller.
            unsafe { accumulate(rt, slot, (origin_addr, origin_count.get(), origin_datatype), None, target_rank, target_disp, target_count.get(), target_datatype, op) }.map(drop)
        })
    }
}

large_count! {
    /// Complete at once: the data is copied out at the call.
    fn MPI_Raccumulate / MPI_Raccumulate_c(origin_addr: *const c_void, origin_count: C, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request) {
        win_request(NAME, win, request, |rt, slot| {
            // SAFETY: forwarded from the caller.
            unsafe { accumulate(rt, slot, (origin_addr, origin_count.get(), origin_datatype), None, target_rank, target_disp, target_count.get(), target_datatype, op)? };
            Ok(Req::Done(Status::empty()))
        })
    }
}

large_count! {
    fn MPI_Get_accumulate / MPI_Get_accumulate_c(origin_addr: *const c_void, origin_count: C, origin_datatype: MPI_Datatype, result_addr: *mut c_void, result_count: C, result_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win) {
        win_call(NAME, win, |rt, slot| {
            // SAFETY: forwarded from the caller.
            unsafe { accumulate(rt, slot, (origin_addr, origin_count.get(), origin_datatype), Some((result_addr, result_count.get(), result_datatype)), target_rank, target_disp, target_count.get(), target_datatype, op) }.map(drop)
        })
    }
}

large_count! {
    fn MPI_Rget_accumulate / MPI_Rget_accumulate_c(origin_addr: *const c_void, origin_count: C, origin_datatype: MPI_Datatype, result_addr: *mut c_void, result_count: C, result_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: C, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request) {
        win_request(NAME, win, request, |rt, slot| {
            // SAFETY: forwarded from the caller.
            let id = unsafe { accumulate(rt, slot, (origin_addr, origin_count.get(), origin_datatype), Some((result_addr, result_count.get(), result_datatype)), target_rank, target_disp, target_count.get(), target_datatype, op)? };
            Ok(reply_req(slot, id))
        })
    }
}

/// One element: `MPI_Get_accumulate` with counts of 1.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    win_call("MPI_Fetch_and_op", win, |rt, slot| {
        // SAFETY: one element in each buffer (MPI contract).
        unsafe {
            accumulate(
                rt,
                slot,
                (origin_addr, 1, datatype),
                Some((result_addr, 1, datatype)),
                target_rank,
                target_disp,
                1,
                datatype,
                op,
            )
        }
        .map(drop)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    win_call("MPI_Compare_and_swap", win, |rt, slot| {
        // SAFETY: one element in each buffer (MPI contract).
        let (origin, compare, result) = unsafe {
            (
                user_buf(rt, origin_addr, 1, datatype)?,
                user_buf(rt, compare_addr, 1, datatype)?,
                user_buf(rt, result_addr, 1, datatype)?,
            )
        };
        let Some(t) = target(rt, target_rank, target_disp, 1, datatype)? else {
            return Ok(());
        };
        if t.dt.elem.is_none() || !t.dt.is_contiguous() {
            return Err(err(
                Class::Type,
                "MPI_Compare_and_swap needs a predefined datatype",
            ));
        }
        // Copies of the origin and compare values, which the result
        // buffer may alias; on the stack for an element that fits.
        // SAFETY: origin and compare buffers are readable.
        let (o, c) = unsafe { (origin.data(), compare.data()) };
        let n = o.len();
        let mut copies = [0u8; SMALL_RMA];
        if 2 * n <= SMALL_RMA && c.len() == n {
            copies[..n].copy_from_slice(&o);
            copies[n..2 * n].copy_from_slice(&c);
            let (oc, cc) = copies[..2 * n].split_at(n);
            return rt.win_cas(slot, oc, cc, result, &t).map(drop);
        }
        let (o, c) = (o.into_owned(), c.into_owned());
        rt.win_cas(slot, &o, &c, result, &t).map(drop)
    })
}

// ---------------------------------------------------------------------
// Synchronization.

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    win_call("MPI_Win_fence", win, |rt, slot| {
        rt.win_fence(
            slot,
            assert & abi::MPI_MODE_NOPRECEDE != 0,
            assert & abi::MPI_MODE_NOSUCCEED != 0,
        )
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_lock(
    lock_type: c_int,
    rank: c_int,
    _assert: c_int,
    win: MPI_Win,
) -> c_int {
    win_call("MPI_Win_lock", win, |rt, slot| {
        let lock = match lock_type {
            abi::MPI_LOCK_SHARED => LockType::Shared,
            abi::MPI_LOCK_EXCLUSIVE => LockType::Exclusive,
            t => return Err(err(Class::Locktype, format!("invalid lock type {t}"))),
        };
        if rank == abi::MPI_PROC_NULL {
            return Ok(());
        }
        rt.win_lock(slot, lock, rank)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    win_call("MPI_Win_unlock", win, |rt, slot| {
        if rank == abi::MPI_PROC_NULL {
            return Ok(());
        }
        rt.win_unlock(slot, rank)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_lock_all(_assert: c_int, win: MPI_Win) -> c_int {
    win_call("MPI_Win_lock_all", win, |rt, slot| rt.win_lock_all(slot))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_unlock_all(win: MPI_Win) -> c_int {
    win_call("MPI_Win_unlock_all", win, |rt, slot| {
        rt.win_unlock_all(slot)
    })
}

/// The flushes: every form completes the operations at their targets.
fn flush(name: &str, rank: Option<c_int>, win: MPI_Win) -> c_int {
    win_call(name, win, |rt, slot| {
        if rank == Some(abi::MPI_PROC_NULL) {
            return Ok(());
        }
        rt.win_flush(slot, rank)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    flush("MPI_Win_flush", Some(rank), win)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_flush_all(win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_all", None, win)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_local", Some(rank), win)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_local_all", None, win)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_sync(win: MPI_Win) -> c_int {
    win_call("MPI_Win_sync", win, |rt, slot| rt.win_sync(slot))
}

/// The window ranks of the members of `group`.
fn window_ranks(rt: &Runtime, slot: usize, group: MPI_Group) -> MpiResult<Vec<u32>> {
    let c = rt.comm(rt.win(slot)?.comm)?;
    group_members(rt, group)?
        .into_iter()
        .map(|pid| {
            c.rank_of.get(&pid).map(|&r| r as u32).ok_or_else(|| {
                err(
                    Class::Group,
                    format!("process {pid} of the group is not in the window"),
                )
            })
        })
        .collect()
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_post(group: MPI_Group, _assert: c_int, win: MPI_Win) -> c_int {
    win_call("MPI_Win_post", win, |rt, slot| {
        let ranks = window_ranks(rt, slot, group)?;
        rt.win_post(slot, ranks)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_start(group: MPI_Group, _assert: c_int, win: MPI_Win) -> c_int {
    win_call("MPI_Win_start", win, |rt, slot| {
        let ranks = window_ranks(rt, slot, group)?;
        rt.win_start(slot, ranks)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_complete(win: MPI_Win) -> c_int {
    win_call("MPI_Win_complete", win, |rt, slot| rt.win_complete(slot))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_wait(win: MPI_Win) -> c_int {
    win_call("MPI_Win_wait", win, |rt, slot| {
        rt.win_wait(slot, true).map(drop)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    win_call("MPI_Win_test", win, |rt, slot| {
        nonnull(flag, "flag")?;
        let done = rt.win_wait(slot, false)?;
        // SAFETY: output argument, checked non-null.
        unsafe { out(flag, c_int::from(done)) }
    })
}

// ---------------------------------------------------------------------
// Queries.

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> c_int {
    win_call("MPI_Win_get_group", win, |rt, slot| {
        let c = rt.comm(rt.win(slot)?.comm)?;
        let g = core::group::Group {
            members: c.members.clone(),
            session: c.session,
        };
        // SAFETY: output argument.
        unsafe { new_group(rt, g, group) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    win_call("MPI_Win_get_info", win, |rt, slot| {
        let hints = rt.win(slot)?.info.clone();
        nonnull(info_used, "info_used")?;
        // SAFETY: output argument, checked non-null.
        unsafe { out(info_used, new_info(hints)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> c_int {
    win_call("MPI_Win_set_info", win, |rt, slot| {
        let hints = info_hints(info)?;
        rt.win_mut(slot)?.info = hints;
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) -> c_int {
    win_call("MPI_Win_set_name", win, |rt, slot| {
        // SAFETY: a NUL-terminated name (MPI contract).
        let name = unsafe { read_object_name(win_name) }?;
        rt.win_mut(slot)?.name = Some(name);
        Ok(())
    })
}

/// `MPI_WIN_NULL` has its name, as the other predefined handles do.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_get_name(
    win: MPI_Win,
    win_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    let write = |name: &str| {
        nonnull(resultlen, "resultlen")?;
        // SAFETY: MPI_MAX_OBJECT_NAME bytes at `win_name` (MPI contract).
        unsafe { write_cstr(win_name, abi::MPI_MAX_OBJECT_NAME as usize, name, resultlen) }
    };
    if win == abi::MPI_WIN_NULL {
        return call("MPI_Win_get_name", abi::MPI_COMM_WORLD, |_| {
            write("MPI_WIN_NULL")
        });
    }
    win_call("MPI_Win_get_name", win, |rt, slot| {
        let name = rt.win(slot)?.name.clone().unwrap_or_default();
        write(&name)
    })
}

/// Whether `keyval` is a predefined window attribute.
fn predefined_keyval(keyval: c_int) -> bool {
    matches!(
        keyval,
        abi::MPI_WIN_BASE
            | abi::MPI_WIN_SIZE
            | abi::MPI_WIN_DISP_UNIT
            | abi::MPI_WIN_CREATE_FLAVOR
            | abi::MPI_WIN_MODEL
    )
}

/// The predefined window attributes (MPI-4.1 §12.2.6): the base address
/// itself, and pointers to the window's size, displacement unit, flavor
/// and memory model; the attributes of user keyvals otherwise.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: MPI_Win,
    win_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if !predefined_keyval(win_keyval) {
        let slot = locked("MPI_Win_get_attr", |rt| win_slot(rt, win));
        return match slot {
            Ok(slot) => super::attr::get_win_attr(slot, win_keyval, attribute_val, flag),
            Err(e) => fail("MPI_Win_get_attr", abi::MPI_COMM_WORLD, e),
        };
    }
    win_call("MPI_Win_get_attr", win, |rt, slot| {
        nonnull(attribute_val, "attribute_val")?;
        nonnull(flag, "flag")?;
        let base = rt.win(slot)?.base;
        let value: Option<*mut c_void> = cells(|c| {
            let cell = c.get_mut(&slot)?;
            Some(match win_keyval {
                abi::MPI_WIN_BASE => base.cast(),
                abi::MPI_WIN_SIZE => (&raw mut cell.size).cast(),
                abi::MPI_WIN_DISP_UNIT => (&raw mut cell.disp_unit).cast(),
                abi::MPI_WIN_CREATE_FLAVOR => (&raw mut cell.flavor).cast(),
                _ => (&raw mut cell.model).cast(),
            })
        });
        // SAFETY: output arguments, checked non-null.
        unsafe {
            if let Some(v) = value {
                out(attribute_val.cast::<*mut c_void>(), v)?;
            }
            out(flag, c_int::from(value.is_some()))
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_create_errhandler(
    win_errhandler_fn: Option<ErrhFn>,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    // SAFETY: forwarded output argument.
    unsafe {
        super::errh::create_errhandler("MPI_Win_create_errhandler", win_errhandler_fn, errhandler)
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    win_call("MPI_Win_set_errhandler", win, |rt, slot| {
        let handler = settable_errhandler(rt, errhandler)?;
        rt.win_mut(slot)?.errhandler = handler;
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Win_get_errhandler(
    win: MPI_Win,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    win_call("MPI_Win_get_errhandler", win, |rt, slot| {
        let h = rt.win(slot)?.errhandler;
        nonnull(errhandler, "errhandler")?;
        // The application frees what a get returns (MPI-4.1 §9.3.1).
        if let Errhandler::User(i) = h {
            rt.errors.retain_handler(i);
        }
        // SAFETY: output argument, checked non-null.
        unsafe { out(errhandler, errhandler_out(h)) }
    })
}

/// Raise `errorcode` on the window, as if a call on it had failed.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub extern "C" fn MPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    let name = "MPI_Win_call_errhandler";
    let mut raised = false;
    let rc = win_call(name, win, |rt, _| {
        let text = rt
            .errors
            .string(codes::code_in(errorcode))
            .map_or_else(|| format!("error code {errorcode}"), str::to_owned);
        raised = true;
        Err(MpiError::new(codes::code_in(errorcode), text))
    });
    if raised { abi::MPI_SUCCESS } else { rc }
}
