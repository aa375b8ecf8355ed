//! Request completion (MPI-4.0 §3.7.3-§3.7.6), cancellation (§3.8.4),
//! persistent request start (§3.9) and generalized requests (§13.2); the
//! accessors of a status's public fields and the status queries of several
//! requests (MPI-4.1 §3.2.5, §3.7.6).
//!
//! A completed request's handle becomes `MPI_REQUEST_NULL`, except a
//! persistent request's, which stays and becomes inactive; the
//! `MPI_Request_get_status` family only looks, leaving every request as it
//! was. Inactive persistent and null requests count as complete with the
//! empty status for `MPI_Wait`/`MPI_Test`, and are ignored by the
//! "any"/"some"/"all" functions. Every wait goes through the core's
//! progress driver ([`Runtime::wait_until`]), which also moves nonblocking
//! collectives.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::super::codes::code_in;
use crate::core::Class;
use crate::mpich::wait_released;
use std::ffi::{c_int, c_void};

use super::super::{
    call, call_starting, check_status, check_statuses, err, out, status_in, status_out,
    write_status,
};
use crate::abi::{self, Kind, MPI_Request, MPI_Status};
use crate::core::completion::{Any, Requests, outcome};
use crate::core::request::Generalized;
use crate::core::{MpiResult, Req, Runtime, Status};

pub(in crate::mpich) const PROTOTYPES: &[&str] = &[
    "int MPI_Wait(MPI_Request *request, MPI_Status *status)",
    "int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)",
    "int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])",
    "int MPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status)",
    "int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[])",
    "int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])",
    "int MPI_Testany(int count, MPI_Request array_of_requests[], int *indx, int *flag, MPI_Status *status)",
    "int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[])",
    "int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)",
    "int MPI_Request_get_status_all(int count, const MPI_Request array_of_requests[], int *flag, MPI_Status *array_of_statuses)",
    "int MPI_Request_get_status_any(int count, const MPI_Request array_of_requests[], int *indx, int *flag, MPI_Status *status)",
    "int MPI_Request_get_status_some(int incount, const MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status *array_of_statuses)",
    "int MPI_Request_free(MPI_Request *request)",
    "int MPI_Cancel(MPI_Request *request)",
    "int MPI_Test_cancelled(const MPI_Status *status, int *flag)",
    "int MPI_Status_set_cancelled(MPI_Status *status, int flag)",
    "int MPI_Status_get_source(const MPI_Status *status, int *source)",
    "int MPI_Status_set_source(MPI_Status *status, int source)",
    "int MPI_Status_get_tag(const MPI_Status *status, int *tag)",
    "int MPI_Status_set_tag(MPI_Status *status, int tag)",
    "int MPI_Status_get_error(const MPI_Status *status, int *error)",
    "int MPI_Status_set_error(MPI_Status *status, int error)",
    "int MPI_Start(MPI_Request *request)",
    "int MPI_Startall(int count, MPI_Request array_of_requests[])",
    "int MPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn, MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request)",
    "int MPI_Grequest_complete(MPI_Request request)",
];

/// The request slot of a handle; `None` for `MPI_REQUEST_NULL`.
pub(in crate::mpich) fn req_slot(h: MPI_Request) -> MpiResult<Option<usize>> {
    if h == abi::MPI_REQUEST_NULL {
        return Ok(None);
    }
    abi::direct_index(Kind::Request, h)
        .map(Some)
        .ok_or_else(|| err(Class::Request, format!("invalid request {h:#x}")))
}

/// The slot of a handle that must name a request (not `MPI_REQUEST_NULL`).
fn live_slot(h: MPI_Request) -> MpiResult<usize> {
    req_slot(h)?.ok_or_else(|| err(Class::Request, "MPI_REQUEST_NULL"))
}

/// The caller's request handle.
///
/// # Safety
/// `request` is null or points to a handle (MPI contract).
unsafe fn handle<'a>(request: *mut MPI_Request) -> MpiResult<&'a mut MPI_Request> {
    // SAFETY: forwarded from the caller; null is rejected.
    unsafe { request.as_mut() }.ok_or_else(|| err(Class::Arg, "null request pointer"))
}

/// The length of an array of `count` request handles at `requests`:
/// `MPI_ERR_COUNT` if negative, `MPI_ERR_ARG` for a null array that is not
/// empty.
fn array_len(count: c_int, requests: *const MPI_Request) -> MpiResult<usize> {
    let n =
        usize::try_from(count).map_err(|_| err(Class::Count, format!("negative count {count}")))?;
    if n > 0 && requests.is_null() {
        return Err(err(Class::Arg, "null request array"));
    }
    Ok(n)
}

/// The caller's array of `count` request handles.
///
/// # Safety
/// `requests` points to `count` handles (MPI contract).
unsafe fn handles<'a>(
    count: c_int,
    requests: *mut MPI_Request,
) -> MpiResult<&'a mut [MPI_Request]> {
    match array_len(count, requests)? {
        0 => Ok(&mut []),
        // SAFETY: non-null; the caller's array holds `count` handles and
        // nothing else touches it during the call.
        n => Ok(unsafe { std::slice::from_raw_parts_mut(requests, n) }),
    }
}

/// The caller's array of `count` request handles, which the call only
/// reads.
///
/// # Safety
/// `requests` points to `count` handles (MPI contract).
unsafe fn handles_read<'a>(
    count: c_int,
    requests: *const MPI_Request,
) -> MpiResult<&'a [MPI_Request]> {
    match array_len(count, requests)? {
        0 => Ok(&[]),
        // SAFETY: non-null; the caller's array holds `count` handles.
        n => Ok(unsafe { std::slice::from_raw_parts(requests, n) }),
    }
}

/// Entry `k` of a status array (`MPI_STATUSES_IGNORE` stays ignored).
///
/// # Safety
/// `statuses` is ignored, or holds more than `k` entries (MPI contract).
unsafe fn status_at(statuses: *mut MPI_Status, k: usize) -> *mut MPI_Status {
    if statuses.is_null() || abi::is_status_ignore(statuses) {
        statuses
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { statuses.add(k) }
    }
}

/// An array of request handles as the core reads it.
struct Handles<'a>(&'a [MPI_Request]);

impl Requests for Handles<'_> {
    fn count(&self) -> usize {
        self.0.len()
    }

    fn slot(&self, k: usize) -> MpiResult<Option<usize>> {
        req_slot(self.0[k])
    }
}

/// Every handle of an array checked before any request is looked at: an
/// invalid one is `MPI_ERR_REQUEST` with no output written.
fn check_handles(hs: &[MPI_Request]) -> MpiResult<()> {
    hs.iter().try_for_each(|&h| req_slot(h).map(drop))
}

/// Complete the request `*h` (waiting if need be) and return its status;
/// the handle becomes `MPI_REQUEST_NULL` unless the request lives on
/// ([`Runtime::complete`]).
fn complete(rt: &mut Runtime, h: &mut MPI_Request) -> MpiResult<Status> {
    let (res, lives_on) = rt.complete(req_slot(*h)?);
    if !lives_on {
        *h = abi::MPI_REQUEST_NULL;
    }
    res
}

/// Like [`complete`], for an entry of an array: an error goes into the
/// status (for `MPI_ERR_IN_STATUS`); returns whether it failed.
fn complete_into(rt: &mut Runtime, h: &mut MPI_Request, status: *mut MPI_Status) -> bool {
    let (st, failed) = outcome(complete(rt, h));
    // SAFETY: status array entry (or ignored).
    unsafe { write_status(status, st) };
    failed
}

fn in_status(failed: bool) -> MpiResult<()> {
    if failed {
        Err(err(Class::InStatus, "a request failed; see its status"))
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------
// One request.

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    wait_released("MPI_Wait", |rt| {
        // SAFETY: forwarded from the caller.
        let h = unsafe { handle(request)? };
        req_slot(*h)?.map_or(Ok(true), |i| rt.req_ready(i))
    });
    call("MPI_Wait", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: forwarded from the caller.
        let h = unsafe { handle(request)? };
        let st = complete(rt, h).inspect_err(|e| {
            // SAFETY: status is an output argument (or ignored).
            unsafe { write_status(status, Status::error(e.code)) };
        })?;
        // SAFETY: status is an output argument (or ignored).
        unsafe { write_status(status, st) };
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Test(
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Test", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: forwarded from the caller.
        let h = unsafe { handle(request)? };
        if flag.is_null() {
            return Err(err(Class::Arg, "null flag"));
        }
        let done = match req_slot(*h)? {
            Some(i) => rt.req_done(i)?,
            None => true,
        };
        if done {
            let st = complete(rt, h)?;
            // SAFETY: status is an output argument (or ignored).
            unsafe { write_status(status, st) };
        }
        // SAFETY: output argument.
        unsafe { out(flag, c_int::from(done)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_get_status(
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Request_get_status", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        if flag.is_null() {
            return Err(err(Class::Arg, "null flag"));
        }
        let st = match req_slot(request)? {
            None => Some(Status::empty()),
            Some(i) => rt.req_status(i)?,
        };
        if let Some(st) = st {
            // SAFETY: status is an output argument (or ignored).
            unsafe { write_status(status, st) };
        }
        // SAFETY: output argument.
        unsafe { out(flag, c_int::from(st.is_some())) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    call("MPI_Request_free", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: forwarded from the caller.
        let h = unsafe { handle(request)? };
        rt.free_req(live_slot(*h)?)?;
        *h = abi::MPI_REQUEST_NULL;
        Ok(())
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    call("MPI_Cancel", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: forwarded from the caller.
        let h = unsafe { handle(request)? };
        rt.cancel_req(live_slot(*h)?)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    call("MPI_Test_cancelled", abi::MPI_COMM_WORLD, |_| {
        if status.is_null() || abi::is_status_ignore(status) {
            return Err(err(Class::Arg, "no status"));
        }
        // SAFETY: a non-null status the application passes (MPI contract).
        let cancelled = status_in(unsafe { &*status }).cancelled;
        // SAFETY: output argument.
        unsafe { out(flag, c_int::from(cancelled)) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> c_int {
    call("MPI_Status_set_cancelled", abi::MPI_COMM_WORLD, |_| {
        if status.is_null() || abi::is_status_ignore(status) {
            return Err(err(Class::Arg, "no status"));
        }
        // SAFETY: a non-null, writable status (MPI contract).
        let st = unsafe { &mut *status };
        *st = status_out(&Status {
            cancelled: flag != 0,
            ..status_in(st)
        });
        Ok(())
    })
}

/// The status `MPI_Status_get_*` reads: `MPI_ERR_ARG` for a null
/// pointer or `MPI_STATUS_IGNORE`.
///
/// # Safety
/// `status` is null, ignored, or points to a status (MPI contract).
unsafe fn status_to_read<'a>(status: *const MPI_Status) -> MpiResult<&'a MPI_Status> {
    if abi::is_status_ignore(status) {
        return Err(err(Class::Arg, "MPI_STATUS_IGNORE has no fields"));
    }
    // SAFETY: forwarded from the caller; null is rejected.
    unsafe { status.as_ref() }.ok_or_else(|| err(Class::Arg, "null status"))
}

/// The status `MPI_Status_set_*` writes (as [`status_to_read`]).
///
/// # Safety
/// `status` is null, ignored, or points to a writable status.
unsafe fn status_to_write<'a>(status: *mut MPI_Status) -> MpiResult<&'a mut MPI_Status> {
    if abi::is_status_ignore(status) {
        return Err(err(Class::Arg, "MPI_STATUS_IGNORE has no fields"));
    }
    // SAFETY: forwarded from the caller; null is rejected.
    unsafe { status.as_mut() }.ok_or_else(|| err(Class::Arg, "null status"))
}

/// Declares the MPI-4.1 accessors of a public field of `MPI_Status`
/// (§3.2.5): `get` copies it out, `set` stores any value (a generalized
/// request's query function, for one, fills a status this way).
macro_rules! status_field {
    ($get:ident, $set:ident, $field:ident, $what:ident) => {
        #[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
        pub unsafe extern "C" fn $get(status: *const MPI_Status, $what: *mut c_int) -> c_int {
            call(stringify!($get), abi::MPI_COMM_WORLD, |_| {
                // SAFETY: the caller's status (MPI contract).
                let st = unsafe { status_to_read(status)? };
                // SAFETY: output argument.
                unsafe { out($what, st.$field) }
            })
        }

        #[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
        pub unsafe extern "C" fn $set(status: *mut MPI_Status, $what: c_int) -> c_int {
            call(stringify!($set), abi::MPI_COMM_WORLD, |_| {
                // SAFETY: the caller's writable status (MPI contract).
                unsafe { status_to_write(status)? }.$field = $what;
                Ok(())
            })
        }
    };
}

status_field!(
    MPI_Status_get_source,
    MPI_Status_set_source,
    MPI_SOURCE,
    source
);
status_field!(MPI_Status_get_tag, MPI_Status_set_tag, MPI_TAG, tag);
status_field!(MPI_Status_get_error, MPI_Status_set_error, MPI_ERROR, error);

// ---------------------------------------------------------------------
// Several requests.

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    requests: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    wait_released("MPI_Waitall", |rt| {
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(count, requests)? };
        rt.all_done(&Handles(hs))
    });
    call("MPI_Waitall", abi::MPI_COMM_WORLD, |rt| {
        check_statuses(statuses, count)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(count, requests)? };
        check_handles(hs)?;
        let mut failed = false;
        for (k, h) in hs.iter_mut().enumerate() {
            // SAFETY: the caller's status array holds `count` entries.
            failed |= complete_into(rt, h, unsafe { status_at(statuses, k) });
        }
        in_status(failed)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    call("MPI_Testall", abi::MPI_COMM_WORLD, |rt| {
        check_statuses(statuses, count)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(count, requests)? };
        if flag.is_null() {
            return Err(err(Class::Arg, "null flag"));
        }
        let all = rt.all_done(&Handles(hs))?;
        let mut failed = false;
        if all {
            for (k, h) in hs.iter_mut().enumerate() {
                // SAFETY: the caller's status array holds `count` entries.
                failed |= complete_into(rt, h, unsafe { status_at(statuses, k) });
            }
        }
        // SAFETY: output argument.
        unsafe { out(flag, c_int::from(all))? };
        in_status(failed)
    })
}

/// Complete the request [`Runtime::any_done`] found (or report there was none) for
/// Waitany and Testany.
unsafe fn finish_any(
    rt: &mut Runtime,
    hs: &mut [MPI_Request],
    found: Option<usize>,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let Some(k) = found else {
        // SAFETY: output arguments (status may be ignored).
        unsafe {
            write_status(status, Status::empty());
            return out(index, abi::MPI_UNDEFINED);
        }
    };
    // SAFETY: output argument.
    unsafe { out(index, k as c_int)? };
    let st = complete(rt, &mut hs[k])?;
    // SAFETY: status is an output argument (or ignored).
    unsafe { write_status(status, st) };
    Ok(())
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    wait_released("MPI_Waitany", |rt| {
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(count, requests)? };
        Ok(!matches!(rt.any_done(&Handles(hs))?, Any::Pending))
    });
    call("MPI_Waitany", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(count, requests)? };
        if index.is_null() {
            return Err(err(Class::Arg, "null index"));
        }
        let found = rt.wait_until(|rt| rt.any_done(&Handles(hs)).map(Any::ready))?;
        // SAFETY: forwarded from the caller.
        unsafe { finish_any(rt, hs, found, index, status) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Testany", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(count, requests)? };
        if index.is_null() || flag.is_null() {
            return Err(err(Class::Arg, "null output argument"));
        }
        let found = rt.any_done(&Handles(hs))?.done();
        // SAFETY: output argument.
        unsafe { out(flag, c_int::from(found.is_some()))? };
        match found {
            // SAFETY: forwarded from the caller.
            Some(found) => unsafe { finish_any(rt, hs, found, index, status) },
            // SAFETY: output argument.
            None => unsafe { out(index, abi::MPI_UNDEFINED) },
        }
    })
}

/// Complete the requests [`Runtime::some_done`] found (or report there were none
/// active) for Waitsome and Testsome.
unsafe fn finish_some(
    rt: &mut Runtime,
    hs: &mut [MPI_Request],
    found: Option<Vec<usize>>,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> MpiResult<()> {
    let Some(ks) = found else {
        // SAFETY: output argument.
        return unsafe { out(outcount, abi::MPI_UNDEFINED) };
    };
    if indices.is_null() {
        return Err(err(Class::Arg, "null index array"));
    }
    let mut failed = false;
    for (n, &k) in ks.iter().enumerate() {
        // SAFETY: the caller's arrays hold `incount >= ks.len()` entries.
        unsafe {
            indices.add(n).write(k as c_int);
            failed |= complete_into(rt, &mut hs[k], status_at(statuses, n));
        }
    }
    // SAFETY: output argument.
    unsafe { out(outcount, ks.len() as c_int)? };
    in_status(failed)
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    wait_released("MPI_Waitsome", |rt| {
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(incount, requests)? };
        Ok(!matches!(rt.some_done(&Handles(hs))?, Any::Pending))
    });
    call("MPI_Waitsome", abi::MPI_COMM_WORLD, |rt| {
        check_statuses(statuses, incount)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(incount, requests)? };
        if outcount.is_null() {
            return Err(err(Class::Arg, "null outcount"));
        }
        let found = rt.wait_until(|rt| rt.some_done(&Handles(hs)).map(Any::ready))?;
        // SAFETY: forwarded from the caller.
        unsafe { finish_some(rt, hs, found, outcount, indices, statuses) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    call("MPI_Testsome", abi::MPI_COMM_WORLD, |rt| {
        check_statuses(statuses, incount)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(incount, requests)? };
        if outcount.is_null() {
            return Err(err(Class::Arg, "null outcount"));
        }
        match rt.some_done(&Handles(hs))?.done() {
            // SAFETY: forwarded from the caller.
            Some(found) => unsafe { finish_some(rt, hs, found, outcount, indices, statuses) },
            // SAFETY: output argument.
            None => unsafe { out(outcount, 0) },
        }
    })
}

// ---------------------------------------------------------------------
// The status of several requests, leaving them as they are (MPI-4.1
// §3.7.6): like Testall, Testany and Testsome, but no request is freed or
// made inactive, so the same requests may be queried again and then
// completed by a wait or test.

/// `flag` is true when every active request is complete; then each status
/// is written (the empty status for null and inactive requests), failures
/// in their status with `MPI_ERR_IN_STATUS`. Otherwise nothing is written.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_get_status_all(
    count: c_int,
    requests: *const MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    call("MPI_Request_get_status_all", abi::MPI_COMM_WORLD, |rt| {
        check_statuses(statuses, count)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles_read(count, requests)? };
        if flag.is_null() {
            return Err(err(Class::Arg, "null flag"));
        }
        check_handles(hs)?;
        let Some(outcomes) = rt.status_all(&Handles(hs))? else {
            // SAFETY: output argument.
            return unsafe { out(flag, 0) };
        };
        let mut failed = false;
        for (k, r) in outcomes.into_iter().enumerate() {
            let (st, bad) = outcome(r);
            failed |= bad;
            // SAFETY: the caller's status array holds `count` entries (or
            // is ignored).
            unsafe { write_status(status_at(statuses, k), st) };
        }
        // SAFETY: output argument.
        unsafe { out(flag, 1)? };
        in_status(failed)
    })
}

/// `flag` is true when one of the active requests is complete (its index
/// and status are written; a failure is the call's error) or none is
/// active (index `MPI_UNDEFINED`, the empty status).
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_get_status_any(
    count: c_int,
    requests: *const MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Request_get_status_any", abi::MPI_COMM_WORLD, |rt| {
        check_status(status)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles_read(count, requests)? };
        if index.is_null() || flag.is_null() {
            return Err(err(Class::Arg, "null output argument"));
        }
        check_handles(hs)?;
        let any_active = match rt.status_any(&Handles(hs))? {
            Any::Done((k, r)) => {
                let (st, _) = outcome(r.clone());
                // SAFETY: output arguments (status may be ignored).
                unsafe {
                    out(index, k as c_int)?;
                    out(flag, 1)?;
                    write_status(status, st);
                }
                return r.map(drop);
            }
            Any::Pending => true,
            Any::NoneActive => false,
        };
        if !any_active {
            // SAFETY: status is an output argument (or ignored).
            unsafe { write_status(status, Status::empty()) };
        }
        // SAFETY: output arguments.
        unsafe {
            out(index, abi::MPI_UNDEFINED)?;
            out(flag, c_int::from(!any_active))
        }
    })
}

/// The indices and statuses of the active requests that are complete
/// (failures in their status with `MPI_ERR_IN_STATUS`); `outcount` is
/// `MPI_UNDEFINED` when none is active.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Request_get_status_some(
    incount: c_int,
    requests: *const MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    call("MPI_Request_get_status_some", abi::MPI_COMM_WORLD, |rt| {
        check_statuses(statuses, incount)?;
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles_read(incount, requests)? };
        if outcount.is_null() {
            return Err(err(Class::Arg, "null outcount"));
        }
        check_handles(hs)?;
        let Any::Done(done) = rt.status_some(&Handles(hs))? else {
            // SAFETY: output argument.
            return unsafe { out(outcount, abi::MPI_UNDEFINED) };
        };
        if !done.is_empty() && indices.is_null() {
            return Err(err(Class::Arg, "null index array"));
        }
        let mut failed = false;
        let n = done.len();
        for (m, (k, r)) in done.into_iter().enumerate() {
            let (st, bad) = outcome(r);
            failed |= bad;
            // SAFETY: the caller's arrays hold `incount >= n` entries (the
            // statuses may be ignored).
            unsafe {
                indices.add(m).write(k as c_int);
                write_status(status_at(statuses, m), st);
            }
        }
        // SAFETY: output argument.
        unsafe { out(outcount, n as c_int)? };
        in_status(failed)
    })
}

// ---------------------------------------------------------------------
// Persistent requests: starting a round (MPI-4.0 §3.9).

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Start(request: *mut MPI_Request) -> c_int {
    call("MPI_Start", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: forwarded from the caller.
        let h = unsafe { handle(request)? };
        rt.start_req(live_slot(*h)?)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    call("MPI_Startall", abi::MPI_COMM_WORLD, |rt| {
        // SAFETY: forwarded from the caller.
        let hs = unsafe { handles(count, requests)? };
        for &h in hs.iter() {
            live_slot(h)?;
        }
        for &h in hs.iter() {
            rt.start_req(live_slot(h)?)?;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------
// Generalized requests (MPI-4.0 §13.2).

type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// Call the application's query function on `st`: it fills an MPICH
/// status, read back into `st`.
///
/// # Safety
/// `query` is the application's query function for `extra` (MPI-4.0
/// §13.2), which stays valid until the request's free callback ran.
unsafe fn run_query(query: QueryFn, extra: *mut c_void, st: &mut Status) -> c_int {
    let mut m = status_out(st);
    // SAFETY: forwarded from the caller; the status is the library's own.
    let rc = unsafe { query(extra, &mut m) };
    *st = status_in(&m);
    rc
}

/// The application's callbacks as the library calls them (through
/// `core::run_callback`, so that they may make MPI calls).
fn generalized(query: QueryFn, free: FreeFn, cancel: CancelFn, extra: *mut c_void) -> Generalized {
    // The application registered these functions for `extra` and keeps
    // `extra` valid until its free callback ran (MPI-4.0 §13.2).
    Generalized {
        // SAFETY: see above.
        query: Box::new(move |st: &mut Status| code_in(unsafe { run_query(query, extra, st) })),
        // SAFETY: see above.
        free: Box::new(move || code_in(unsafe { free(extra) })),
        cancel: Box::new(move |complete: bool| {
            // SAFETY: see above.
            code_in(unsafe { cancel(extra, c_int::from(complete)) })
        }),
        complete: false,
        freed: false,
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Grequest_start(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    call_starting("MPI_Grequest_start", abi::MPI_COMM_WORLD, request, |rt| {
        let (Some(query), Some(free), Some(cancel)) = (query_fn, free_fn, cancel_fn) else {
            return Err(err(Class::Arg, "a null callback"));
        };
        let g = generalized(query, free, cancel, extra_state);
        Ok(rt.add_req(Req::Generalized(g)))
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Grequest_complete(request: MPI_Request) -> c_int {
    call("MPI_Grequest_complete", abi::MPI_COMM_WORLD, |rt| {
        rt.complete_generalized(live_slot(request)?)
    })
}
