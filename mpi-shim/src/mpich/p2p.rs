//! Point-to-point communication and request completion.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use super::*;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Wait(MPI_Request *request, MPI_Status *status)",
    "int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)",
    "int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])",
    "int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)",
];

// ---------------------------------------------------------------------
// Point-to-point.

/// Checked arguments of a send: the destination's job rank (None for
/// `MPI_PROC_NULL`), the engine tag and the buffer.
unsafe fn send_args(
    rt: &Runtime,
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<(Option<u32>, u64, UserBuf)> {
    let c = rt.comm(comm_slot(comm)?)?;
    // SAFETY: forwarded from the caller.
    let ub = unsafe { UserBuf::new(rt, buf, count, dt)? };
    check_rank(c, dest, "destination", false)?;
    check_tag(tag, false)?;
    let to = (dest != abi::MPI_PROC_NULL).then(|| c.members[dest as usize]);
    Ok((to, Comm::tag(c.ctx, tag), ub))
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
        let (to, tag, ub) = unsafe { send_args(rt, buf, count, datatype, dest, tag, comm)? };
        if let Some(to) = to {
            // SAFETY: the send buffer is readable (MPI contract).
            rt.ep.send(to, tag, &unsafe { ub.data() })?;
        }
        Ok(())
    })
}

/// Start sending `ub` to `to`: straight from the user's memory when it is
/// contiguous, from a packed copy the request keeps otherwise.
///
/// # Safety
/// The buffer stays readable and unchanged until the request completes.
unsafe fn start_send(
    rt: &mut Runtime,
    to: u32,
    tag: u64,
    ub: &UserBuf,
    comm: usize,
) -> MpiResult<Req> {
    // SAFETY: forwarded from the caller.
    let (req, staged) = match unsafe { ub.data() } {
        // SAFETY: MPI forbids touching the buffer until the request
        // completes, so it outlives the engine request.
        Cow::Borrowed(data) => (
            unsafe { rt.ep.isend_raw(to, tag, data.as_ptr(), data.len())? },
            None,
        ),
        Cow::Owned(packed) => {
            // SAFETY: the Vec's heap storage moves into the request and
            // stays put until the request completes.
            let req = unsafe { rt.ep.isend_raw(to, tag, packed.as_ptr(), packed.len())? };
            (req, Some(Staged::Send(packed)))
        }
    };
    Ok(Req::Engine { req, comm, staged })
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
        let (to, tag, ub) = unsafe { send_args(rt, buf, count, datatype, dest, tag, comm)? };
        let r = match to {
            // SAFETY: MPI forbids touching the buffer until completion.
            Some(to) => unsafe { start_send(rt, to, tag, &ub, comm_slot(comm)?)? },
            None => Req::Done(empty_status()),
        };
        let i = rt.add_req(r);
        // SAFETY: output argument.
        unsafe { out(request, abi::direct_handle(Kind::Request, i)) }
    })
}

/// Post a receive; a completed request for `MPI_PROC_NULL`.
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
    // SAFETY: forwarded from the caller.
    let ub = unsafe { UserBuf::new(rt, buf, count, dt)? };
    let c = rt.comm(slot)?;
    check_rank(c, source, "source", true)?;
    check_tag(tag, true)?;
    if source == abi::MPI_PROC_NULL {
        return Ok(Req::Done(MPI_Status::new(
            abi::MPI_PROC_NULL,
            abi::MPI_ANY_TAG,
            0,
        )));
    }
    let (src, matcher) = (c.source(source), Comm::tag_match(c.ctx, tag));
    if ub.dt.is_contiguous() {
        // SAFETY: MPI forbids touching the buffer until the request
        // completes; it holds `len` contiguous bytes.
        let req = unsafe { rt.ep.irecv_raw(src, matcher, ub.ptr, ub.len)? };
        return Ok(Req::Engine {
            req,
            comm: slot,
            staged: None,
        });
    }
    let mut packed = vec![0u8; ub.len];
    // SAFETY: the Vec's heap storage moves into the request and stays put
    // until the request completes.
    let req = unsafe { rt.ep.irecv_raw(src, matcher, packed.as_mut_ptr(), ub.len)? };
    let unpack = Unpack {
        packed,
        dst: ub.ptr,
        count: ub.count,
        dt: ub.dt,
    };
    Ok(Req::Engine {
        req,
        comm: slot,
        staged: Some(Staged::Recv(unpack)),
    })
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
pub(super) fn finish(rt: &mut Runtime, i: usize, status: *mut MPI_Status) -> MpiResult<MPI_Status> {
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
        let (to, tag, ub) =
            unsafe { send_args(rt, sendbuf, sendcount, sendtype, dest, sendtag, comm)? };
        if let Some(to) = to {
            // SAFETY: the send buffer is readable (MPI contract).
            rt.ep.send(to, tag, &unsafe { ub.data() })?;
        }
        let st = finish(rt, i, status)?;
        // SAFETY: status is an output argument (or ignored).
        unsafe { write_status(status, st) };
        Ok(())
    })
}

/// The request slot of a handle; `None` for `MPI_REQUEST_NULL`.
pub(super) fn req_slot(h: MPI_Request) -> MpiResult<Option<usize>> {
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
    call("MPI_Get_count", abi::MPI_COMM_WORLD, |rt| {
        if status.is_null() || abi::is_status_ignore(status) {
            return Err(err(abi::MPI_ERR_ARG, "no status"));
        }
        let size = super::datatype(rt, datatype)?.size;
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
