//! Point-to-point communication (MPI-4.0 chapter 3): the four send modes,
//! receives, probes and matched probes, buffered sends and their attached
//! buffer, persistent requests. Request completion lives in
//! [`requests`].

#![allow(non_snake_case, clippy::missing_safety_doc)]

use shm_engine::{Source, TagMatch};

use super::counts::{Count, CountOut, large_count};
use super::*;
use crate::abi::MPI_Session;
use crate::abi::{MPI_Count, MPI_Message};
use crate::core::bsend::{Attached, Scope};
use crate::core::p2p::SendMode;
use crate::core::peer::RecvFrom;
use crate::core::request::{self, Matched, Persistent};

pub(super) mod partitioned;
pub(super) mod requests;

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Ssend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Rsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
    "int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Issend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Irsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Isendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Isendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Buffer_attach(void *buffer, int size)",
    "int MPI_Buffer_detach(void *buffer_addr, int *size)",
    "int MPI_Buffer_attach_c(void *buffer, MPI_Count size)",
    "int MPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size)",
    "int MPI_Buffer_flush(void)",
    "int MPI_Buffer_iflush(MPI_Request *request)",
    "int MPI_Comm_attach_buffer(MPI_Comm comm, void *buffer, int size)",
    "int MPI_Comm_attach_buffer_c(MPI_Comm comm, void *buffer, MPI_Count size)",
    "int MPI_Comm_detach_buffer(MPI_Comm comm, void *buffer_addr, int *size)",
    "int MPI_Comm_detach_buffer_c(MPI_Comm comm, void *buffer_addr, MPI_Count *size)",
    "int MPI_Comm_flush_buffer(MPI_Comm comm)",
    "int MPI_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request)",
    "int MPI_Session_attach_buffer(MPI_Session session, void *buffer, int size)",
    "int MPI_Session_attach_buffer_c(MPI_Session session, void *buffer, MPI_Count size)",
    "int MPI_Session_detach_buffer(MPI_Session session, void *buffer_addr, int *size)",
    "int MPI_Session_detach_buffer_c(MPI_Session session, void *buffer_addr, MPI_Count *size)",
    "int MPI_Session_flush_buffer(MPI_Session session)",
    "int MPI_Session_iflush_buffer(MPI_Session session, MPI_Request *request)",
    "int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)",
    "int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)",
    "int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)",
    "int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)",
    "int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)",
    "int MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)",
    "int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)",
    "int MPI_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)",
    "int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Send_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Bsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ssend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Rsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)",
    "int MPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)",
];

// ---------------------------------------------------------------------
// Sends (MPI-4.0 §3.2, §3.4, §3.7.2).

/// Checked arguments of a send: the destination's job rank (None for
/// `MPI_PROC_NULL`), the engine tag and the buffer.
unsafe fn send_args(
    rt: &Runtime,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<(Option<u32>, u64, UserBuf)> {
    let c = rt.comm(comm_slot(comm)?)?;
    // SAFETY: forwarded from the caller.
    let ub = unsafe { user_buf(rt, buf, count, dt)? };
    let (to, tag) = c.send_to(rank_arg(dest), tag_arg(tag))?;
    Ok((to, tag, ub))
}

/// The request of a send in `mode`; a completed one to `MPI_PROC_NULL`.
///
/// # Safety
/// As for [`Runtime::start_send`]; the arguments are a send's (MPI contract).
#[allow(clippy::too_many_arguments)]
unsafe fn isend_in(
    rt: &mut Runtime,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> MpiResult<Req> {
    // SAFETY: forwarded from the caller.
    let (to, tag, ub) = unsafe { send_args(rt, buf, count, dt, dest, tag, comm)? };
    match to {
        // SAFETY: forwarded from the caller.
        Some(to) => unsafe { rt.start_send(to, tag, &ub, comm_slot(comm)?, mode) },
        None => Ok(Req::Done(Status::empty())),
    }
}

/// A blocking send in `mode`: start it and wait for it.
#[allow(clippy::too_many_arguments)]
unsafe fn send_in(
    name: &str,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> c_int {
    // SAFETY: forwarded from the caller.
    if let Some(rc) = unsafe { send_flat(name, buf, count, dt, dest, tag, comm, mode) } {
        return rc;
    }
    call_waiting(
        name,
        comm,
        // SAFETY: the buffer outlives the request: we wait for it here.
        |rt| unsafe { isend_in(rt, buf, count, dt, dest, tag, comm, mode) },
        std::ptr::null_mut(),
    )
}

/// The flat path of a blocking send: a standard or ready send of a
/// predefined contiguous datatype that the engine sends at once (see
/// [`Runtime::send_now`]) skips the general decoding of its arguments,
/// the request and the wait. `None` leaves the call, and any error in its
/// arguments, to the general path.
///
/// # Safety
/// The arguments are a send's (MPI contract).
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn send_flat(
    name: &str,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Option<c_int> {
    if !matches!(mode, SendMode::Standard | SendMode::Ready) {
        return None;
    }
    call_or_decline(name, comm, |rt| {
        // SAFETY: forwarded from the caller.
        unsafe { isend_flat(rt, buf, count, dt, dest, tag, comm, mode) }
    })
}

/// The flat path of a send, blocking or not: a standard or ready send of
/// a predefined contiguous datatype that the engine sends at once (see
/// [`Runtime::send_now`]) is over in the call (a nonblocking one's
/// request is born done), without the general decoding of its
/// arguments. `None` leaves the call, and any error in its arguments, to
/// the general path.
///
/// # Safety
/// The arguments are a send's (MPI contract).
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn isend_flat(
    rt: &mut Runtime,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> Option<MpiResult<()>> {
    if !matches!(mode, SendMode::Standard | SendMode::Ready) {
        return None;
    }
    let (_, len) = contiguous_bytes(count, dt)?;
    if len > 0 && buf.is_null() || abi::is_in_place(buf) {
        return None;
    }
    let slot = comm_slot(comm).ok()?;
    // SAFETY: `len` readable bytes at `buf` (MPI contract).
    unsafe { rt.send_now(slot, rank_arg(dest), tag_arg(tag), buf.cast(), len) }
}

/// A nonblocking send in `mode`: its request goes to `request`.
#[allow(clippy::too_many_arguments)]
unsafe fn nonblocking_send_in(
    name: &str,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    mode: SendMode,
) -> c_int {
    call_starting(name, comm, request, |rt| {
        // SAFETY: the send's buffer, readable (MPI contract).
        if let Some(sent) = unsafe { isend_flat(rt, buf, count, dt, dest, tag, comm, mode) } {
            sent?;
            return Ok(rt.add_req(Req::Done(Status::empty())));
        }
        // SAFETY: MPI forbids touching the buffer until completion.
        let r = unsafe { isend_in(rt, buf, count, dt, dest, tag, comm, mode)? };
        Ok(rt.add_req(r))
    })
}

/// Define the entry of each send mode for one kind of send (`$via`:
/// `send_in` blocking, `nonblocking_send_in`, `send_init` persistent; the
/// last two return a `request`), in both widths.
macro_rules! send_modes {
    ($via:ident $req:tt: $($name:ident / $name_c:ident => $mode:ident;)*) => {
        $(send_modes!(@one $via $req $name $name_c $mode);)*
    };
    (@one $via:ident ($($req:ident)?) $name:ident $name_c:ident $mode:ident) => {
        large_count! {
            fn $name / $name_c(
                buf: *const c_void,
                count: C,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm
                $(, $req: *mut MPI_Request)?
            ) {
                // SAFETY: forwarded from the caller.
                unsafe {
                    $via(NAME, buf, count.get(), datatype, dest, tag, comm, $($req,)? SendMode::$mode)
                }
            }
        }
    };
}

send_modes!(send_in ():
    MPI_Send / MPI_Send_c => Standard;
    MPI_Bsend / MPI_Bsend_c => Buffered;
    MPI_Ssend / MPI_Ssend_c => Synchronous;
    MPI_Rsend / MPI_Rsend_c => Ready;
);

send_modes!(nonblocking_send_in (request):
    MPI_Isend / MPI_Isend_c => Standard;
    MPI_Ibsend / MPI_Ibsend_c => Buffered;
    MPI_Issend / MPI_Issend_c => Synchronous;
    MPI_Irsend / MPI_Irsend_c => Ready;
);

// ---------------------------------------------------------------------
// Receives (MPI-4.0 §3.2.4, §3.7.2).

/// Checked arguments of a receive: whom it accepts, the buffer, the
/// communicator slot.
unsafe fn recv_args(
    rt: &Runtime,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<(RecvFrom, UserBuf, usize)> {
    let slot = comm_slot(comm)?;
    // SAFETY: forwarded from the caller.
    let ub = unsafe { user_buf(rt, buf, count, dt)? };
    let from = recv_from(rt, slot, source, tag)?;
    Ok((from, ub, slot))
}

/// Check a receive's source and tag on communicator `slot` and translate
/// them for the engine (`None` for `MPI_PROC_NULL`).
fn recv_from(rt: &Runtime, slot: usize, source: c_int, tag: c_int) -> MpiResult<RecvFrom> {
    rt.comm(slot)?.recv_from(rank_arg(source), tag_arg(tag))
}

/// Post a library-managed receive (see `recvbuf`): at most `count`
/// elements of a contiguous datatype, into a buffer the engine allocates
/// when the message matches.
fn post_managed(
    rt: &mut Runtime,
    count: MPI_Count,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Req> {
    let slot = comm_slot(comm)?;
    let (_, cap) = committed_bytes(rt, count, dt)?;
    rt.irecv_managed(slot, rank_arg(source), tag_arg(tag), cap)
}

/// Post a receive; a completed request for `MPI_PROC_NULL`.
unsafe fn post_recv(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Req> {
    // SAFETY: forwarded from the caller.
    let (from, ub, slot) = unsafe { recv_args(rt, buf, count, dt, source, tag, comm)? };
    // SAFETY: forwarded from the caller.
    unsafe { rt.start_recv(from, &ub, slot) }
}

/// The flat path of a nonblocking receive: one of a predefined
/// contiguous datatype into a buffer (not a library-managed one) skips
/// the general decoding of its arguments (see [`Runtime::irecv_now`]).
/// `None` leaves the call, and any error in its arguments, to the general
/// path.
///
/// # Safety
/// The arguments are a receive's (MPI contract).
#[inline]
unsafe fn irecv_flat(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<Req>> {
    let (_, cap) = contiguous_bytes(count, dt)?;
    if cap > 0 && buf.is_null() || abi::is_in_place(buf) {
        return None;
    }
    let slot = comm_slot(comm).ok()?;
    // SAFETY: `cap` bytes at `buf`, writable until completion (MPI
    // contract).
    unsafe { rt.irecv_now(slot, rank_arg(source), tag_arg(tag), buf.cast(), cap) }
}

/// The flat path of a blocking receive, below `MPI_THREAD_MULTIPLE`: one
/// of a predefined contiguous datatype (see [`Runtime::recv_now`]) skips
/// the general decoding of its arguments. `None` leaves the call, and any
/// error in its arguments, to the general path.
///
/// # Safety
/// The arguments are a receive's (MPI contract).
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn recv_flat(
    name: &str,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> Option<c_int> {
    // Under MPI_THREAD_MULTIPLE a blocking receive waits with the lock
    // released (`call_waiting`).
    if !core::threads::waits_hold_lock() {
        return None;
    }
    let (_, cap) = contiguous_bytes(count, dt)?;
    if cap > 0 && buf.is_null() || abi::is_in_place(buf) || status.is_null() {
        return None;
    }
    let slot = comm_slot(comm).ok()?;
    call_or_decline(name, comm, |rt| {
        // SAFETY: `cap` writable bytes at `buf`, untouched by the
        // application during the call (MPI contract).
        let got = unsafe { rt.recv_now(slot, rank_arg(source), tag_arg(tag), buf.cast(), cap) };
        got.map(|res| report(res, status))
    })
}

large_count! {
    fn MPI_Recv / MPI_Recv_c(
        buf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) {
        // SAFETY: forwarded from the caller.
        if let Some(rc) = unsafe { recv_flat(NAME, buf, count.get(), datatype, source, tag, comm, status) } {
            return rc;
        }
        call_waiting(
            NAME,
            comm,
            |rt| {
                check_status(status)?;
                // SAFETY: forwarded from the caller.
                unsafe { post_recv(rt, buf, count.get(), datatype, source, tag, comm) }
            },
            status,
        )
    }
}

large_count! {
    fn MPI_Irecv / MPI_Irecv_c(
        buf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) {
        call_starting(NAME, comm, request, |rt| {
            // SAFETY: forwarded from the caller.
            if let Some(r) = unsafe { irecv_flat(rt, buf, count.get(), datatype, source, tag, comm) } {
                return Ok(rt.add_req(r?));
            }
            let managed = buf.is_null() && count.get() > 0 && super::datatype(rt, datatype)?.is_contiguous();
            let r = if managed {
                post_managed(rt, count.get(), datatype, source, tag, comm)?
            } else {
                // SAFETY: forwarded from the caller.
                unsafe { post_recv(rt, buf, count.get(), datatype, source, tag, comm)? }
            };
            Ok(rt.add_req(r))
        })
    }
}

/// Start both halves of a send-receive (MPI-4.0 §3.10) as one request,
/// its arguments checked before either starts. When the send cannot
/// start, the posted receive is withdrawn (cancelled, or completed if it
/// matched), so that no request outlives a failed call.
///
/// # Safety
/// Both buffers are a send's and a receive's (MPI contract) and stay
/// untouched until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_in(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Req> {
    let slot = comm_slot(comm)?;
    rt.comm(slot)?;
    // SAFETY: forwarded from the caller.
    let (send, recv) = unsafe {
        (
            user_buf(rt, sendbuf, sendcount, sendtype)?,
            user_buf(rt, recvbuf, recvcount, recvtype)?,
        )
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        rt.isendrecv(
            slot,
            (rank_arg(dest), tag_arg(sendtag), &send),
            (rank_arg(source), tag_arg(recvtag), &recv),
        )
    }
}

/// Start a send-receive in one buffer (MPI-4.0 §3.10): the outgoing
/// message leaves from a packed copy, so the incoming one may land in
/// `buf` at once.
///
/// # Safety
/// `buf` holds `count` elements and stays untouched until completion.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_replace_in(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Req> {
    let slot = comm_slot(comm)?;
    rt.comm(slot)?;
    // SAFETY: forwarded from the caller.
    let ub = unsafe { user_buf(rt, buf, count, datatype)? };
    // SAFETY: forwarded from the caller.
    unsafe {
        rt.isendrecv_replace(
            slot,
            (rank_arg(dest), tag_arg(sendtag)),
            (rank_arg(source), tag_arg(recvtag)),
            &ub,
        )
    }
}

large_count! {
    fn MPI_Sendrecv / MPI_Sendrecv_c(
        sendbuf: *const c_void,
        sendcount: C,
        sendtype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: C,
        recvtype: MPI_Datatype,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) {
        call_waiting(
            NAME,
            comm,
            |rt| {
                check_status(status)?;
                // SAFETY: both buffers outlive the request: we wait here.
                unsafe {
                    isendrecv_in(
                        rt, sendbuf, sendcount.get(), sendtype, dest, sendtag, recvbuf,
                        recvcount.get(), recvtype, source, recvtag, comm,
                    )
                }
            },
            status,
        )
    }
}

large_count! {
    fn MPI_Isendrecv / MPI_Isendrecv_c(
        sendbuf: *const c_void,
        sendcount: C,
        sendtype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: C,
        recvtype: MPI_Datatype,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) {
        call_starting(NAME, comm, request, |rt| {
            // SAFETY: MPI forbids touching the buffers until completion.
            let r = unsafe {
                isendrecv_in(
                    rt, sendbuf, sendcount.get(), sendtype, dest, sendtag, recvbuf,
                    recvcount.get(), recvtype, source, recvtag, comm,
                )?
            };
            Ok(rt.add_req(r))
        })
    }
}

large_count! {
    fn MPI_Sendrecv_replace / MPI_Sendrecv_replace_c(
        buf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) {
        call_waiting(
            NAME,
            comm,
            |rt| {
                check_status(status)?;
                // SAFETY: the buffer outlives the request: we wait here.
                unsafe {
                    isendrecv_replace_in(
                        rt, buf, count.get(), datatype, dest, sendtag, source, recvtag, comm,
                    )
                }
            },
            status,
        )
    }
}

large_count! {
    fn MPI_Isendrecv_replace / MPI_Isendrecv_replace_c(
        buf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) {
        call_starting(NAME, comm, request, |rt| {
            // SAFETY: MPI forbids touching the buffer until completion.
            let r = unsafe {
                isendrecv_replace_in(
                    rt, buf, count.get(), datatype, dest, sendtag, source, recvtag, comm,
                )?
            };
            Ok(rt.add_req(r))
        })
    }
}

// ---------------------------------------------------------------------
// Buffered sends' buffer (MPI-4.0 §3.6.1).

/// The address standing for `MPI_BUFFER_AUTOMATIC` (MPI-4.1 §3.6.1): the
/// standard ABI's value, which its layer passes on unchanged (the MPICH
/// ABI of MPI 4.0 has no such constant; no buffer lives at address 2).
const BUFFER_AUTOMATIC: usize = 2;

/// The scope of `MPI_Comm_*_buffer` functions.
fn comm_scope(rt: &Runtime, comm: MPI_Comm) -> MpiResult<Scope> {
    let slot = comm_slot(comm)?;
    rt.comm(slot)?;
    Ok(Scope::Comm(slot))
}

/// The scope of `MPI_Session_*_buffer` functions.
fn session_scope(rt: &Runtime, session: MPI_Session) -> MpiResult<Scope> {
    Ok(Scope::Session(super::session::session_of(rt, session)?))
}

/// Attach `size` bytes at `buffer` (or the automatic buffer) to `scope`.
fn attach(rt: &mut Runtime, scope: Scope, buffer: *mut c_void, size: MPI_Count) -> MpiResult<()> {
    let b = if buffer as usize == BUFFER_AUTOMATIC {
        Attached::automatic()
    } else {
        let size =
            usize::try_from(size).map_err(|_| err(Class::Arg, format!("negative size {size}")))?;
        if buffer.is_null() && size > 0 {
            return Err(err(Class::Buffer, "null buffer"));
        }
        Attached::new(buffer.cast(), size)
    };
    rt.attach_buffer(scope, b)
}

/// Detach `scope`'s buffer once its messages are delivered; its address
/// goes to `buffer_addr` (a `void **`: MPI-4.1 §3.6.1 returns "the
/// address of the buffer" through it) and its size to `size`.
///
/// # Safety
/// `buffer_addr` points to a `void *`, `size` to a `C`.
unsafe fn detach<C: CountOut>(
    rt: &mut Runtime,
    scope: Scope,
    buffer_addr: *mut c_void,
    size: *mut C,
) -> MpiResult<()> {
    if buffer_addr.is_null() || size.is_null() {
        return Err(err(Class::Arg, "null output argument"));
    }
    let (ptr, len) = match rt.detach_buffer(scope)? {
        Some(Some((ptr, len))) => (ptr.cast(), len),
        Some(None) => (BUFFER_AUTOMATIC as *mut c_void, 0),
        None => (std::ptr::null_mut(), 0),
    };
    let len = C::from_count(len as MPI_Count).expect("an attached size fits its type");
    // SAFETY: non-null output arguments (MPI contract on their types).
    unsafe {
        buffer_addr.cast::<*mut c_void>().write(ptr);
        out(size, len)
    }
}

large_count! {
    fn MPI_Buffer_attach / MPI_Buffer_attach_c(buffer: *mut c_void, size: C) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| attach(rt, Scope::Process, buffer, size.get()))
    }
}

large_count! {
    fn MPI_Buffer_detach / MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut C) {
        // SAFETY: the caller's output arguments.
        call(NAME, abi::MPI_COMM_WORLD, |rt| unsafe {
            detach(rt, Scope::Process, buffer_addr, size)
        })
    }
}

large_count! {
    fn MPI_Comm_attach_buffer / MPI_Comm_attach_buffer_c(
        comm: MPI_Comm,
        buffer: *mut c_void,
        size: C,
    ) {
        call(NAME, comm, |rt| {
            let scope = comm_scope(rt, comm)?;
            attach(rt, scope, buffer, size.get())
        })
    }
}

large_count! {
    fn MPI_Comm_detach_buffer / MPI_Comm_detach_buffer_c(
        comm: MPI_Comm,
        buffer_addr: *mut c_void,
        size: *mut C,
    ) {
        call(NAME, comm, |rt| {
            let scope = comm_scope(rt, comm)?;
            // SAFETY: the caller's output arguments.
            unsafe { detach(rt, scope, buffer_addr, size) }
        })
    }
}

large_count! {
    fn MPI_Session_attach_buffer / MPI_Session_attach_buffer_c(
        session: MPI_Session,
        buffer: *mut c_void,
        size: C,
    ) {
        super::session::in_session(NAME, session, |rt| {
            let scope = session_scope(rt, session)?;
            attach(rt, scope, buffer, size.get())
        })
    }
}

large_count! {
    fn MPI_Session_detach_buffer / MPI_Session_detach_buffer_c(
        session: MPI_Session,
        buffer_addr: *mut c_void,
        size: *mut C,
    ) {
        super::session::in_session(NAME, session, |rt| {
            let scope = session_scope(rt, session)?;
            // SAFETY: the caller's output arguments.
            unsafe { detach(rt, scope, buffer_addr, size) }
        })
    }
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Buffer_flush() -> c_int {
    call("MPI_Buffer_flush", abi::MPI_COMM_WORLD, |rt| {
        rt.flush_buffer(Scope::Process)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_flush_buffer(comm: MPI_Comm) -> c_int {
    call("MPI_Comm_flush_buffer", comm, |rt| {
        let scope = comm_scope(rt, comm)?;
        rt.flush_buffer(scope)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_flush_buffer(session: MPI_Session) -> c_int {
    super::session::in_session("MPI_Session_flush_buffer", session, |rt| {
        let scope = session_scope(rt, session)?;
        rt.flush_buffer(scope)
    })
}

/// Start flushing `scope`'s buffer; the request's slot.
fn iflush(rt: &mut Runtime, scope: Scope) -> MpiResult<usize> {
    let r = rt.iflush_buffer(scope)?;
    Ok(rt.add_req(r))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Buffer_iflush(request: *mut MPI_Request) -> c_int {
    call_starting("MPI_Buffer_iflush", abi::MPI_COMM_WORLD, request, |rt| {
        iflush(rt, Scope::Process)
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Comm_iflush_buffer(
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    call_starting("MPI_Comm_iflush_buffer", comm, request, |rt| {
        let scope = comm_scope(rt, comm)?;
        iflush(rt, scope)
    })
}

/// Its errors go to the session's handler, so it checks `request` itself.
#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Session_iflush_buffer(
    session: MPI_Session,
    request: *mut MPI_Request,
) -> c_int {
    super::session::in_session("MPI_Session_iflush_buffer", session, |rt| {
        if request.is_null() {
            return Err(err(Class::Arg, "null request pointer"));
        }
        let scope = session_scope(rt, session)?;
        let i = iflush(rt, scope)?;
        // SAFETY: non-null output argument.
        unsafe { out(request, abi::direct_handle(Kind::Request, i)) }
    })
}

// ---------------------------------------------------------------------
// Probes and matched probes (MPI-4.0 §3.8).

/// Checked probe arguments: the engine source and tag matcher and the
/// communicator slot; `None` for `MPI_PROC_NULL`.
fn probe_args(
    rt: &Runtime,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Option<(Source, TagMatch, usize)>> {
    let slot = comm_slot(comm)?;
    let from = rt.comm(slot)?.recv_from(rank_arg(source), tag_arg(tag))?;
    Ok(from.map(|(s, t)| (s, t, slot)))
}

/// An engine status as the application sees it in communicator `slot`.
fn probe_status(rt: &Runtime, slot: usize, st: shm_engine::Status) -> MpiResult<Status> {
    Ok(rt.comm(slot)?.status_of(&st))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Iprobe", comm, |rt| {
        check_status(status)?;
        let found = match probe_args(rt, source, tag, comm)? {
            None => Some(Status::proc_null()),
            Some((src, matcher, slot)) => match rt.ep.iprobe(src, matcher) {
                Some(st) => Some(probe_status(rt, slot, st)?),
                None => None,
            },
        };
        if let Some(st) = found {
            // SAFETY: status is an output argument (or ignored).
            unsafe { write_status(status, st) };
        }
        // SAFETY: output argument.
        unsafe { out(flag, found.is_some() as c_int) }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Probe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    wait_released("MPI_Probe", |rt| probe_ready(rt, source, tag, comm));
    call("MPI_Probe", comm, |rt| {
        check_status(status)?;
        let st = match probe_args(rt, source, tag, comm)? {
            None => Status::proc_null(),
            Some((src, matcher, slot)) => {
                let st = rt.wait_until(|rt| Ok(rt.ep.iprobe(src, matcher).into()))?;
                probe_status(rt, slot, st)?
            }
        };
        // SAFETY: status is an output argument (or ignored).
        unsafe { write_status(status, st) };
        Ok(())
    })
}

/// Whether a blocking probe would find a message now (or fail at once).
fn probe_ready(rt: &mut Runtime, source: c_int, tag: c_int, comm: MPI_Comm) -> MpiResult<bool> {
    Ok(match probe_args(rt, source, tag, comm)? {
        None => true,
        Some((src, matcher, _)) => rt.ep.iprobe(src, matcher).is_some(),
    })
}

/// Message handles share the request encoding (as in MPICH, where
/// `MPI_MESSAGE_NULL == MPI_REQUEST_NULL`); this index bit keeps them
/// apart from request handles.
const MESSAGE_BIT: usize = 1 << 25;

fn message_handle(slot: usize) -> MPI_Message {
    abi::direct_handle(Kind::Request, MESSAGE_BIT | slot)
}

/// Keep a matched message; its handle.
fn keep_message(rt: &mut Runtime, msg: shm_engine::Message, comm: usize) -> MPI_Message {
    message_handle(rt.messages.insert(Matched { msg, comm }))
}

/// A probe that takes the message: `MPI_MESSAGE_NO_PROC` for
/// `MPI_PROC_NULL`; `None` when nothing matches and `block` is false.
fn matched_probe(
    rt: &mut Runtime,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    block: bool,
) -> MpiResult<Option<(MPI_Message, Status)>> {
    let Some((src, matcher, slot)) = probe_args(rt, source, tag, comm)? else {
        return Ok(Some((abi::MPI_MESSAGE_NO_PROC, Status::proc_null())));
    };
    let found = if block {
        Some(rt.wait_until(|rt| Ok(rt.ep.improbe(src, matcher).into()))?)
    } else {
        rt.ep.improbe(src, matcher)
    };
    let Some((st, msg)) = found else {
        return Ok(None);
    };
    let st = probe_status(rt, slot, st)?;
    Ok(Some((keep_message(rt, msg, slot), st)))
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    wait_released("MPI_Mprobe", |rt| probe_ready(rt, source, tag, comm));
    call("MPI_Mprobe", comm, |rt| {
        check_status(status)?;
        if message.is_null() {
            return Err(err(Class::Arg, "null message pointer"));
        }
        let (m, st) = matched_probe(rt, source, tag, comm, true)?
            .ok_or_else(|| err(Class::Intern, "a blocking probe returned nothing"))?;
        // SAFETY: output arguments (status may be ignored).
        unsafe {
            write_status(status, st);
            out(message, m)
        }
    })
}

#[cfg_attr(not(tessel_std_abi), unsafe(no_mangle))]
pub unsafe extern "C" fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    call("MPI_Improbe", comm, |rt| {
        check_status(status)?;
        if message.is_null() || flag.is_null() {
            return Err(err(Class::Arg, "null output argument"));
        }
        let found = matched_probe(rt, source, tag, comm, false)?;
        if let Some((m, st)) = found {
            // SAFETY: output arguments (status may be ignored).
            unsafe {
                write_status(status, st);
                out(message, m)?;
            }
        }
        // SAFETY: output argument.
        unsafe { out(flag, found.is_some() as c_int) }
    })
}

/// Start receiving matched message `*message` into the buffer and reset
/// the handle to `MPI_MESSAGE_NULL` (MPI-4.0 §3.8.3).
///
/// # Safety
/// `message` is a valid pointer; the buffer is a receive's (MPI contract).
unsafe fn start_mrecv(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    message: *mut MPI_Message,
) -> MpiResult<Req> {
    if message.is_null() {
        return Err(err(Class::Arg, "null message pointer"));
    }
    // SAFETY: forwarded from the caller.
    let ub = unsafe { user_buf(rt, buf, count, dt)? };
    // SAFETY: non-null pointer to the caller's message handle.
    let h = unsafe { *message };
    if h == abi::MPI_MESSAGE_NO_PROC {
        // SAFETY: as above.
        unsafe { *message = abi::MPI_MESSAGE_NULL };
        return Ok(Req::Done(Status::proc_null()));
    }
    let matched = abi::direct_index(Kind::Request, h)
        .filter(|i| i & MESSAGE_BIT != 0)
        .and_then(|i| rt.messages.remove(i & !MESSAGE_BIT))
        .ok_or_else(|| err(Class::Request, format!("invalid message {h:#x}")))?;
    // SAFETY: as above.
    unsafe { *message = abi::MPI_MESSAGE_NULL };
    let Matched { msg, comm } = matched;
    // SAFETY: forwarded from the caller.
    unsafe { rt.imrecv(msg, comm, &ub) }
}

large_count! {
    fn MPI_Mrecv / MPI_Mrecv_c(
        buf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) {
        call_waiting(
            NAME,
            abi::MPI_COMM_WORLD,
            |rt| {
                check_status(status)?;
                // SAFETY: forwarded from the caller; we wait for the request here.
                unsafe { start_mrecv(rt, buf, count.get(), datatype, message) }
            },
            status,
        )
    }
}

large_count! {
    fn MPI_Imrecv / MPI_Imrecv_c(
        buf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        request: *mut MPI_Request,
    ) {
        call_starting(NAME, abi::MPI_COMM_WORLD, request, |rt| {
            // SAFETY: forwarded from the caller.
            let r = unsafe { start_mrecv(rt, buf, count.get(), datatype, message)? };
            Ok(rt.add_req(r))
        })
    }
}

// ---------------------------------------------------------------------
// Persistent requests (MPI-4.0 §3.9): the arguments are checked once, at
// initialization; each MPI_Start begins a new round with them.

/// A persistent send in `mode`.
#[allow(clippy::too_many_arguments)]
unsafe fn send_init(
    name: &str,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    mode: SendMode,
) -> c_int {
    call_starting(name, comm, request, |rt| {
        // SAFETY: forwarded from the caller.
        let (to, tag, ub) = unsafe { send_args(rt, buf, count, dt, dest, tag, comm)? };
        let slot = comm_slot(comm)?;
        let start = move |rt: &mut Runtime| match to {
            // SAFETY: MPI forbids touching the buffer while the round is
            // active; it stays valid until the request is freed.
            Some(to) => unsafe { rt.start_send(to, tag, &ub, slot, mode) },
            None => Ok(Req::Done(Status::empty())),
        };
        Ok(persistent(rt, Box::new(start)))
    })
}

/// Store an inactive persistent request; its slot.
pub(super) fn persistent(rt: &mut Runtime, start: request::StartFn) -> usize {
    rt.add_req(Req::Persistent(Persistent {
        start,
        active: None,
    }))
}

send_modes!(send_init (request):
    MPI_Send_init / MPI_Send_init_c => Standard;
    MPI_Bsend_init / MPI_Bsend_init_c => Buffered;
    MPI_Ssend_init / MPI_Ssend_init_c => Synchronous;
    MPI_Rsend_init / MPI_Rsend_init_c => Ready;
);

large_count! {
    fn MPI_Recv_init / MPI_Recv_init_c(
        buf: *mut c_void,
        count: C,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) {
        call_starting(NAME, comm, request, |rt| {
            // SAFETY: forwarded from the caller.
            let (from, ub, slot) = unsafe { recv_args(rt, buf, count.get(), datatype, source, tag, comm)? };
            // SAFETY: MPI forbids touching the buffer while a round is active;
            // it stays valid until the request is freed.
            let start = move |rt: &mut Runtime| unsafe { rt.start_recv(from, &ub, slot) };
            Ok(persistent(rt, Box::new(start)))
        })
    }
}

large_count! {
    fn MPI_Get_count / MPI_Get_count_c(
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut C,
    ) {
        call(NAME, abi::MPI_COMM_WORLD, |rt| {
            if status.is_null() || abi::is_status_ignore(status) {
                return Err(err(Class::Arg, "no status"));
            }
            let size = super::datatype(rt, datatype)?.size;
            // SAFETY: a non-null status the application passes (MPI
            // contract).
            let bytes = status_in(unsafe { &*status }).bytes;
            let n = if size == 0 {
                Some(0)
            } else if !bytes.is_multiple_of(size as u64) {
                None
            } else {
                i64::try_from(bytes / size as u64).ok().and_then(C::from_count)
            };
            let undefined = C::from_count(abi::MPI_UNDEFINED.into()).expect("MPI_UNDEFINED fits");
            // SAFETY: output argument.
            unsafe { out(count, n.unwrap_or(undefined)) }
        })
    }
}
