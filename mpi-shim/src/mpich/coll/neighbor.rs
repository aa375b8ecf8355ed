//! Neighbourhood collectives (MPI-4.0 §8.6): exchanges along the edges of
//! a communicator's virtual topology, blocking and nonblocking, compiled
//! into one schedule round by [`algo::neighbor_exchange`].

use super::*;
use crate::abi::MPI_Aint;
use crate::coll::algo::Edge;
use crate::core::topo::Neighbors;

pub(in crate::mpich) const PROTOTYPES: &[&str] = &[
    "int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ineighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ineighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ineighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ineighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)",
    "int MPI_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)",
    "int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ineighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)",
    "int MPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Neighbor_alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, MPI_Request *request)",
];

/// The neighbourhood of this process in communicator `comm`.
fn neighborhood(rt: &Runtime, comm: MPI_Comm) -> MpiResult<(usize, Neighbors)> {
    let slot = comm_slot(comm)?;
    let c = rt.comm(slot)?;
    let topo = c.topo.as_ref().ok_or_else(|| {
        err(
            Class::Topology,
            "a neighbourhood collective needs a communicator with a topology",
        )
    })?;
    Ok((slot, topo.neighbors(c.rank)))
}

/// The communicator rank of a neighbour (`None` for `MPI_PROC_NULL`).
fn peer(rank: Rank) -> Option<usize> {
    match rank {
        Rank::Proc(r) => Some(r as usize),
        Rank::Null | Rank::Any => None,
    }
}

/// Compile the exchange: block `j` of `outs` goes to destination `j`
/// (`shared` when every destination gets the same block), block `i` of
/// `ins` comes from source `i`.
fn exchange(
    rt: &mut Runtime,
    slot: usize,
    nb: &Neighbors,
    outs: Outgoing,
    ins: &[UserBuf],
) -> MpiResult<Schedule> {
    let mut b = builder(rt, slot)?;
    let sends: Vec<Edge> = match outs {
        Outgoing::Shared(data) => {
            let span = b.input(data);
            nb.destinations
                .iter()
                .map(|&(r, c)| (peer(r), c, span))
                .collect()
        }
        Outgoing::Blocks(blocks) => nb
            .destinations
            .iter()
            .zip(blocks)
            .map(|(&(r, c), data)| (peer(r), c, b.input(data)))
            .collect(),
    };
    let recvs: Vec<Edge> = nb
        .sources
        .iter()
        .zip(ins)
        .map(|(&(r, c), ub)| (peer(r), c, b.buf(ub.len)))
        .collect();
    algo::neighbor_exchange(&mut b, &sends, &recvs);
    for (&(from, _, span), ub) in recvs.iter().zip(ins) {
        if from.is_some() {
            let k = b.sink(sink(ub));
            b.unpack(span, k);
        }
    }
    Ok(b.finish())
}

/// What a process sends along its out-edges.
enum Outgoing {
    /// The same data to every destination (allgather).
    Shared(Vec<u8>),
    /// Packed block `j` for destination `j` (alltoall).
    Blocks(Vec<Vec<u8>>),
}

/// The send buffer of a neighbourhood collective (`MPI_IN_PLACE` is not
/// allowed, MPI-4.0 §8.6).
unsafe fn send_buffer(
    rt: &Runtime,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
) -> MpiResult<UserBuf> {
    if abi::is_in_place(buf) {
        return Err(in_place_error("in a neighbourhood collective"));
    }
    // SAFETY: the caller's buffer (MPI contract).
    unsafe { user_buf(rt, buf, count, dt) }
}

/// Blocks with byte displacements and a datatype each, for `n` edges.
unsafe fn blocks_w(
    rt: &Runtime,
    buf: *const c_void,
    counts: &[MPI_Count],
    displs: &[isize],
    dts: &[MPI_Datatype],
) -> MpiResult<Vec<UserBuf>> {
    (0..counts.len())
        // SAFETY: the blocks lie in the caller's buffer (MPI contract).
        .map(|i| unsafe { block(rt, buf, displs[i], counts[i], dts[i]) })
        .collect()
}

/// Packed copies of send blocks.
unsafe fn pack_all(blocks: &[UserBuf]) -> Vec<Vec<u8>> {
    // SAFETY: send blocks are readable (MPI contract).
    blocks.iter().map(|ub| unsafe { packed(ub) }).collect()
}

unsafe fn neighbor_allgather<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let sendcount = sendcount.get();
    let recvcount = recvcount.get();
    let (slot, nb) = neighborhood(rt, comm)?;
    let (counts, displs) = regular(recvcount, nb.sources.len());
    // SAFETY: the caller's buffers (MPI contract).
    unsafe {
        let data = packed(&send_buffer(rt, sendbuf, sendcount, sendtype)?);
        let ins = blocks(rt, recvbuf, &counts, &displs, recvtype)?;
        exchange(rt, slot, &nb, Outgoing::Shared(data), &ins)
    }
}
collective!(MPI_Neighbor_allgather / MPI_Neighbor_allgather_c, MPI_Ineighbor_allgather / MPI_Ineighbor_allgather_c, MPI_Neighbor_allgather_init / MPI_Neighbor_allgather_init_c: neighbor_allgather(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype));

unsafe fn neighbor_allgatherv<C: Count, D: Displ>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let sendcount = sendcount.get();
    let (slot, nb) = neighborhood(rt, comm)?;
    let n = nb.sources.len();
    // SAFETY: the arrays have one entry per in-edge; the buffers are the
    // caller's (MPI contract).
    unsafe {
        let (counts, displs) = (
            counts::counts(recvcounts, n, "count")?,
            counts::displs(displs, n)?,
        );
        let data = packed(&send_buffer(rt, sendbuf, sendcount, sendtype)?);
        let ins = blocks(rt, recvbuf, &counts, &displs, recvtype)?;
        exchange(rt, slot, &nb, Outgoing::Shared(data), &ins)
    }
}
collective!(MPI_Neighbor_allgatherv / MPI_Neighbor_allgatherv_c, MPI_Ineighbor_allgatherv / MPI_Ineighbor_allgatherv_c, MPI_Neighbor_allgatherv_init / MPI_Neighbor_allgatherv_init_c: neighbor_allgatherv(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: MPI_Datatype));

unsafe fn neighbor_alltoall<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let sendcount = sendcount.get();
    let recvcount = recvcount.get();
    let (slot, nb) = neighborhood(rt, comm)?;
    if abi::is_in_place(sendbuf) {
        return Err(in_place_error("in a neighbourhood collective"));
    }
    let (sc, sd) = regular(sendcount, nb.destinations.len());
    let (rc, rd) = regular(recvcount, nb.sources.len());
    // SAFETY: the caller's buffers (MPI contract).
    unsafe {
        let outs = pack_all(&blocks(rt, sendbuf, &sc, &sd, sendtype)?);
        let ins = blocks(rt, recvbuf, &rc, &rd, recvtype)?;
        exchange(rt, slot, &nb, Outgoing::Blocks(outs), &ins)
    }
}
collective!(MPI_Neighbor_alltoall / MPI_Neighbor_alltoall_c, MPI_Ineighbor_alltoall / MPI_Ineighbor_alltoall_c, MPI_Neighbor_alltoall_init / MPI_Neighbor_alltoall_init_c: neighbor_alltoall(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype));

unsafe fn neighbor_alltoallv<C: Count, D: Displ>(
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
    let (slot, nb) = neighborhood(rt, comm)?;
    if abi::is_in_place(sendbuf) {
        return Err(in_place_error("in a neighbourhood collective"));
    }
    let (outdeg, indeg) = (nb.destinations.len(), nb.sources.len());
    // SAFETY: the arrays have one entry per edge; the buffers are the
    // caller's (MPI contract).
    unsafe {
        let (sc, sd) = (
            counts::counts(sendcounts, outdeg, "count")?,
            counts::displs(sdispls, outdeg)?,
        );
        let (rc, rd) = (
            counts::counts(recvcounts, indeg, "count")?,
            counts::displs(rdispls, indeg)?,
        );
        let outs = pack_all(&blocks(rt, sendbuf, &sc, &sd, sendtype)?);
        let ins = blocks(rt, recvbuf, &rc, &rd, recvtype)?;
        exchange(rt, slot, &nb, Outgoing::Blocks(outs), &ins)
    }
}
collective!(MPI_Neighbor_alltoallv / MPI_Neighbor_alltoallv_c, MPI_Ineighbor_alltoallv / MPI_Ineighbor_alltoallv_c, MPI_Neighbor_alltoallv_init / MPI_Neighbor_alltoallv_init_c: neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const D, recvtype: MPI_Datatype));

unsafe fn neighbor_alltoallw<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcounts: *const C,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (slot, nb) = neighborhood(rt, comm)?;
    if abi::is_in_place(sendbuf) {
        return Err(in_place_error("in a neighbourhood collective"));
    }
    let (outdeg, indeg) = (nb.destinations.len(), nb.sources.len());
    // SAFETY: the arrays have one entry per edge; the buffers are the
    // caller's (MPI contract).
    unsafe {
        let outs = blocks_w(
            rt,
            sendbuf,
            &counts::counts(sendcounts, outdeg, "count")?,
            &counts::displs(sdispls, outdeg)?,
            &types(sendtypes, outdeg)?,
        )?;
        let ins = blocks_w(
            rt,
            recvbuf,
            &counts::counts(recvcounts, indeg, "count")?,
            &counts::displs(rdispls, indeg)?,
            &types(recvtypes, indeg)?,
        )?;
        exchange(rt, slot, &nb, Outgoing::Blocks(pack_all(&outs)), &ins)
    }
}
collective!(MPI_Neighbor_alltoallw / MPI_Neighbor_alltoallw_c, MPI_Ineighbor_alltoallw / MPI_Ineighbor_alltoallw_c, MPI_Neighbor_alltoallw_init / MPI_Neighbor_alltoallw_init_c: neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const C, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype));
