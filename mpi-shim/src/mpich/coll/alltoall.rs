//! All-to-all exchanges (MPI-4.0 §6.8): `MPI_Alltoall`, `MPI_Alltoallv`
//! and `MPI_Alltoallw`, blocking, nonblocking and persistent, each with
//! its direct entry for blocking calls (on a flag board, or on a
//! communicator of this process alone).

use super::*;

#[allow(clippy::too_many_arguments)]
unsafe fn alltoall<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (slot, n) = slot_peers(rt, comm)?;
    let recv = Blocks::regular(recvbuf, recvcount.get(), n, type_arg(rt, recvbuf, recvtype))?;
    let send = if abi::is_in_place(sendbuf) {
        None
    } else {
        Some(Blocks::regular(
            sendbuf,
            sendcount.get(),
            n,
            type_arg(rt, sendbuf, sendtype),
        )?)
    };
    // SAFETY: forwarded from the caller.
    unsafe { calls::alltoall(rt, slot, send.as_ref(), &recv, true) }
}
collective!(MPI_Alltoall / MPI_Alltoall_c, MPI_Ialltoall / MPI_Ialltoall_c, MPI_Alltoall_init / MPI_Alltoall_init_c: alltoall(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype) direct alltoall_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn alltoall_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let send = (sendbuf, sendcount.get(), sendtype);
    let recv = (recvbuf, recvcount.get(), recvtype);
    // SAFETY: forwarded from the caller.
    unsafe { exchange_direct(cx, send, recv, comm, true) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv<C: Count, D: Displ>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (slot, n) = slot_peers(rt, comm)?;
    // SAFETY: the arrays have `n` entries (MPI contract).
    let (rc, rd) = unsafe { counts_displs(recvcounts, rdispls, n)? };
    let recv = Blocks::typed(recvbuf, rc, &rd, type_arg(rt, recvbuf, recvtype))?;
    let send = if abi::is_in_place(sendbuf) {
        None
    } else {
        // SAFETY: as above.
        let (sc, sd) = unsafe { counts_displs(sendcounts, sdispls, n)? };
        Some(Blocks::typed(
            sendbuf,
            sc,
            &sd,
            type_arg(rt, sendbuf, sendtype),
        )?)
    };
    // SAFETY: forwarded from the caller.
    unsafe { calls::alltoall(rt, slot, send.as_ref(), &recv, false) }
}
collective!(MPI_Alltoallv / MPI_Alltoallv_c, MPI_Ialltoallv / MPI_Ialltoallv_c, MPI_Alltoallv_init / MPI_Alltoallv_init_c: alltoallv(sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const D, recvtype: MPI_Datatype) direct alltoallv_direct);

/// On a communicator of this process alone, its one block copied
/// ([`exchange_alone`]); elsewhere the schedule runs.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv_direct<C: Count, D: Displ>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let send = (sendbuf, sendcounts, sdispls, &raw const sendtype);
    let recv = (
        recvbuf.cast_const(),
        recvcounts,
        rdispls,
        &raw const recvtype,
    );
    // SAFETY: forwarded from the caller; one datatype serves every block.
    unsafe { exchange_alone(cx, comm, send, recv, true) }
}

/// A side of an alltoallv or alltoallw as its entry takes it: the buffer,
/// the counts, the displacements and the datatypes (an alltoallv's one).
type Side<C, D> = (*const c_void, *const C, *const D, *const MPI_Datatype);

/// An alltoallv (`extents`: displacements in extents) or alltoallw (in
/// bytes) on a communicator of this process alone: its one block copied
/// ([`board::direct::alone_exchange`]); `None` elsewhere.
///
/// # Safety
/// As for [`first_block`], for both sides.
unsafe fn exchange_alone<C: Count, D: Displ>(
    cx: &mut impl Access,
    comm: MPI_Comm,
    send: Side<C, D>,
    recv: Side<C, D>,
    extents: bool,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    // SAFETY: forwarded from the caller.
    unsafe {
        board::direct::alone_exchange(cx, slot, |rt| {
            let block = |(buf, counts, displs, dts): Side<C, D>| {
                first_block(rt, buf, counts, displs, dts, extents)
            };
            let recv = block(recv)?;
            let send = if abi::is_in_place(send.0) {
                None
            } else {
                Some(block(send)?)
            };
            Some((send, recv))
        })
    }
}

/// The first block of a side of an alltoallv (`displs` in `extents`) or
/// alltoallw (in bytes, a datatype per block): `counts[0]` elements of
/// `dts[0]` at `displs[0]` into `buf`. `None` where an array is null or
/// the block is not valid.
///
/// # Safety
/// Non-null arrays have an entry per process, at least one, and the
/// block lies in the application's buffer (MPI contract).
unsafe fn first_block<C: Count, D: Displ>(
    rt: &Runtime,
    buf: *const c_void,
    counts: *const C,
    displs: *const D,
    dts: *const MPI_Datatype,
    extents: bool,
) -> Option<UserBuf> {
    if counts.is_null() || displs.is_null() || dts.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    let (count, displ, dt) = unsafe { ((*counts).get(), (*displs).value(), *dts) };
    let dt = type_arg(rt, buf, dt).ok()?;
    let displ = if extents {
        displ.wrapping_mul(dt.extent)
    } else {
        displ
    };
    let block = Arg {
        ptr: buf,
        count,
        dt: Ok(dt),
    };
    // SAFETY: the caller's promise.
    unsafe { block.buf_at(displ) }.ok()
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw<C: Count, D: Displ>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (slot, n) = slot_peers(rt, comm)?;
    // SAFETY: forwarded from the caller.
    unsafe {
        let recv = side_w(rt, recvbuf, recvcounts, rdispls, recvtypes, n)?;
        let send = if abi::is_in_place(sendbuf) {
            None
        } else {
            Some(side_w(rt, sendbuf, sendcounts, sdispls, sendtypes, n)?)
        };
        calls::alltoall(rt, slot, send.as_ref(), &recv, false)
    }
}
collective!(MPI_Alltoallw / MPI_Alltoallw_c, MPI_Ialltoallw / MPI_Ialltoallw_c, MPI_Alltoallw_init / MPI_Alltoallw_init_c: alltoallw(sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const D, recvtypes: *const MPI_Datatype) direct alltoallw_direct);

/// As [`alltoallv_direct`].
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw_direct<C: Count, D: Displ>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const D,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const D,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let send = (sendbuf, sendcounts, sdispls, sendtypes);
    let recv = (recvbuf.cast_const(), recvcounts, rdispls, recvtypes);
    // SAFETY: forwarded from the caller.
    unsafe { exchange_alone(cx, comm, send, recv, false) }
}
