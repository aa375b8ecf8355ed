//! Neighbourhood collectives (MPI-4.0 §8.6): exchanges along the edges of
//! a communicator's virtual topology, blocking and nonblocking, compiled
//! into one schedule round by [`algo::neighbor_exchange`].

use super::*;
use crate::abi::MPI_Aint;
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

/// Communicator slot and this process's neighbourhood.
fn neighborhood(rt: &Runtime, comm: MPI_Comm) -> MpiResult<(usize, Neighbors)> {
    let slot = comm_slot(comm)?;
    Ok((slot, calls::neighborhood(rt, slot)?))
}

/// A neighbourhood collective's send buffer (`MPI_IN_PLACE` is not
/// allowed, MPI-4.1 §8.6).
fn send_arg(rt: &Runtime, buf: *const c_void, count: MPI_Count, dt: MPI_Datatype) -> Arg {
    let mut a = arg(rt, buf, count, dt);
    if abi::is_in_place(buf) {
        a.dt = Err(in_place_error("in a neighbourhood collective"));
    }
    a
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
    let (slot, nb) = neighborhood(rt, comm)?;
    let send = send_arg(rt, sendbuf, sendcount.get(), sendtype);
    let recvtype = type_arg(rt, recvbuf, recvtype);
    let recv = Blocks::regular(recvbuf, recvcount.get(), nb.sources.len(), recvtype)?;
    // SAFETY: the caller's buffers (MPI contract).
    unsafe { calls::neighbor_allgather(rt, slot, &send, &recv) }
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
    let (slot, nb) = neighborhood(rt, comm)?;
    // SAFETY: the arrays have one entry per in-edge (MPI contract).
    let (counts, displs) = unsafe { counts_displs(recvcounts, displs, nb.sources.len())? };
    let send = send_arg(rt, sendbuf, sendcount.get(), sendtype);
    let recv = Blocks::typed(recvbuf, counts, &displs, type_arg(rt, recvbuf, recvtype))?;
    // SAFETY: the caller's buffers (MPI contract).
    unsafe { calls::neighbor_allgather(rt, slot, &send, &recv) }
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
    let (slot, nb) = neighborhood(rt, comm)?;
    if abi::is_in_place(sendbuf) {
        return Err(in_place_error("in a neighbourhood collective"));
    }
    let (outdeg, indeg) = (nb.destinations.len(), nb.sources.len());
    let sendtype = type_arg(rt, sendbuf, sendtype);
    let send = Blocks::regular(sendbuf, sendcount.get(), outdeg, sendtype)?;
    let recv = Blocks::regular(
        recvbuf,
        recvcount.get(),
        indeg,
        type_arg(rt, recvbuf, recvtype),
    )?;
    // SAFETY: the caller's buffers (MPI contract).
    unsafe { calls::neighbor_alltoall(rt, slot, &send, &recv) }
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
    // SAFETY: the arrays have one entry per edge (MPI contract).
    let ((sc, sd), (rc, rd)) = unsafe {
        (
            counts_displs(sendcounts, sdispls, outdeg)?,
            counts_displs(recvcounts, rdispls, indeg)?,
        )
    };
    let send = Blocks::typed(sendbuf, sc, &sd, type_arg(rt, sendbuf, sendtype))?;
    let recv = Blocks::typed(recvbuf, rc, &rd, type_arg(rt, recvbuf, recvtype))?;
    // SAFETY: the caller's buffers (MPI contract).
    unsafe { calls::neighbor_alltoall(rt, slot, &send, &recv) }
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
        let send = side_w(rt, sendbuf, sendcounts, sdispls, sendtypes, outdeg)?;
        let recv = side_w(rt, recvbuf, recvcounts, rdispls, recvtypes, indeg)?;
        calls::neighbor_alltoall(rt, slot, &send, &recv)
    }
}
collective!(MPI_Neighbor_alltoallw / MPI_Neighbor_alltoallw_c, MPI_Ineighbor_alltoallw / MPI_Ineighbor_alltoallw_c, MPI_Neighbor_alltoallw_init / MPI_Neighbor_alltoallw_init_c: neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const C, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype));
