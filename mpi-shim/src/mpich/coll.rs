//! Collective operations (MPI-4.0 chapter 6): blocking, nonblocking and
//! persistent ([`persistent`]), each in both count widths; the reduction
//! operations are [`op`]'s, the neighbourhood collectives [`neighbor`]'s.
//!
//! Each collective has one function here that checks its arguments,
//! packs what this process contributes, and compiles the schedule
//! (`crate::coll`); `MPI_X` runs the schedule to its end, `MPI_IX`
//! returns it as a request, `MPI_X_init` compiles it anew at every start. Arguments are checked before the schedule
//! takes the communicator's next collective number, so a call that fails
//! its checks does not count.
//!
//! # Safety
//! Every `unsafe fn` here takes the application's pointers as the
//! standard describes them (a buffer holds its `count` elements, an array
//! has an entry per rank, an output pointer is writable) and needs exactly
//! that; nonblocking forms also need the buffers left alone until the
//! request completes (MPI-4.0 §6.12).

// MPI's collective signatures are long; the schedule compilers mirror them.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::counts::{self, Count, Displ, large_count};
use super::info::info_hints;
use super::*;
use crate::abi::MPI_Count;
use crate::coll::{Builder, Schedule, Sink, algo};
use crate::ops::{Op, Reduction, UserOp};

pub(super) const PROTOTYPES: &[&str] = &[
    "int MPI_Barrier(MPI_Comm comm)",
    "int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)",
    "int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)",
    "int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm)",
    "int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Bcast_init_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)",
    "int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)",
    "int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Reduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Igather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Gather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Gatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Iscatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Scatter_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)",
    "int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Scatterv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)",
    "int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)",
    "int MPI_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)",
    "int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)",
    "int MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ireduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Reduce_scatter_init_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Ireduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Reduce_scatter_block_init_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Iscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Scan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)",
    "int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Iexscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)",
    "int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Exscan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)",
    "int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)",
    "int MPI_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op)",
    "int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)",
    "int MPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op)",
    "int MPI_Op_free(MPI_Op *op)",
    "int MPI_Op_commutative(MPI_Op op, int *commute)",
];

// ---------------------------------------------------------------------
// Shared by every collective.

/// Run a blocking collective: compile it, then run its schedule.
fn blocking(
    name: &str,
    comm: MPI_Comm,
    build: impl FnOnce(&mut Runtime) -> MpiResult<Schedule>,
) -> c_int {
    call(name, comm, |rt| {
        let s = build(rt)?;
        crate::coll::run(rt, s)
    })
}

/// Start a nonblocking collective: compile it, start it, and hand its
/// request to the application.
unsafe fn nonblocking(
    name: &str,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    build: impl FnOnce(&mut Runtime) -> MpiResult<Schedule>,
) -> c_int {
    call_starting(name, comm, request, |rt| {
        let mut s = build(rt)?;
        s.advance(&mut rt.ep);
        Ok(rt.add_coll(Box::new(s)))
    })
}

/// Define `MPI_X`, `MPI_IX` and `MPI_X_init` (each with its `_c` twin
/// when named after a `/`) from one schedule compiler taking the listed
/// arguments and the communicator.
macro_rules! collective {
    ($b:ident $(/ $b_c:ident)?, $nb:ident $(/ $nb_c:ident)?, $p:ident $(/ $p_c:ident)?:
        $build:ident ($($arg:ident: $ty:ty),*)) => {
        large_count! {
            fn $b $(/ $b_c)? ($($arg: $ty,)* comm: MPI_Comm) {
                // SAFETY: the caller's buffers and arrays, as the standard
                // describes them, forwarded.
                blocking(NAME, comm, |rt| unsafe { $build(rt, $($arg,)* comm) })
            }
        }
        large_count! {
            fn $nb $(/ $nb_c)? ($($arg: $ty,)* comm: MPI_Comm, request: *mut MPI_Request) {
                // SAFETY: as above; the application leaves the buffers alone
                // until the request completes (MPI-4.0 §6.12).
                unsafe { nonblocking(NAME, comm, request, |rt| $build(rt, $($arg,)* comm)) }
            }
        }
        large_count! {
            fn $p $(/ $p_c)? (
                $($arg: $ty,)*
                comm: MPI_Comm,
                info: MPI_Info,
                request: *mut MPI_Request
            ) {
                // SAFETY: as above, until the request is freed (MPI-4.0
                // §6.13): every round reads the buffers; the arrays are
                // copied here.
                unsafe {
                    persistent(NAME, comm, info, request, |rt| {
                        #[allow(unused_mut)] // no root (or no argument at all)
                        let mut root = None;
                        $(if stringify!($arg) == "root" {
                            root = <$ty as Kept>::value($arg);
                        })*
                        let neighbors = stringify!($build).starts_with("neighbor");
                        #[allow(unused_variables)] // no array (or no argument at all)
                        let lens = array_lengths(rt, comm, root, neighbors)?;
                        $(let $arg = <$ty as Kept>::keep(
                            $arg,
                            lens.map(|(recv, send)| if send_side(stringify!($arg)) { send } else { recv }),
                        );)*
                        Ok(move |rt: &mut Runtime| {
                            $build(rt, $(<$ty as Kept>::lend(&$arg),)* comm)
                        })
                    })
                }
            }
        }
    };
}

// After the macro, which they use.
pub(super) mod neighbor;
pub(crate) mod op;
mod persistent;

use op::reduction;
use persistent::{Kept, array_lengths, persistent, send_side};

/// Communicator slot, this process's rank and the size.
fn comm_info(rt: &Runtime, comm: MPI_Comm) -> MpiResult<(usize, usize, usize)> {
    let slot = comm_slot(comm)?;
    let c = rt.comm(slot)?;
    Ok((slot, c.rank as usize, c.size() as usize))
}

/// The builder of the communicator's next collective.
fn builder(rt: &mut Runtime, slot: usize) -> MpiResult<Builder> {
    crate::coll::builder(rt, slot)
}

/// `count` elements of `dt` at `buf` plus `displ` bytes, checked.
unsafe fn block(
    rt: &Runtime,
    buf: *const c_void,
    displ: isize,
    count: MPI_Count,
    dt: MPI_Datatype,
) -> MpiResult<UserBuf> {
    let at = buf.cast::<u8>().wrapping_offset(displ).cast::<c_void>();
    // SAFETY: the caller's promise about the block.
    unsafe { user_buf(rt, at, count, dt) }
}

/// Blocks `counts[r]` elements of `dt` at `displs[r]` extents from `buf`,
/// one per rank.
unsafe fn blocks(
    rt: &Runtime,
    buf: *const c_void,
    counts: &[MPI_Count],
    displs: &[isize],
    dt: MPI_Datatype,
) -> MpiResult<Vec<UserBuf>> {
    let extent = super::datatype(rt, dt)?.extent;
    counts
        .iter()
        .zip(displs)
        // SAFETY: the caller's promise about the blocks.
        .map(|(&c, &d)| unsafe { block(rt, buf, d.wrapping_mul(extent), c, dt) })
        .collect()
}

/// The data of a send buffer, packed.
unsafe fn packed(ub: &UserBuf) -> Vec<u8> {
    // SAFETY: a send buffer is readable (MPI contract).
    unsafe { ub.data() }.into_owned()
}

/// Where a receive buffer's data goes when the schedule ends.
fn sink(ub: &UserBuf) -> Sink {
    Sink {
        dst: ub.ptr,
        count: ub.count,
        dt: ub.dt.clone(),
    }
}

/// `n` datatype handles from an argument array.
unsafe fn types(p: *const MPI_Datatype, n: usize) -> MpiResult<Vec<MPI_Datatype>> {
    if p.is_null() {
        return Err(err(Class::Arg, "null datatype array"));
    }
    // SAFETY: the array has one entry per rank (MPI contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

fn in_place_error(what: &str) -> MpiError {
    err(Class::Buffer, format!("MPI_IN_PLACE is not valid {what}"))
}

/// `n` counts of `c`, displaced by `c` each (the regular collectives as
/// their `v` forms).
fn regular(c: MPI_Count, n: usize) -> (Vec<MPI_Count>, Vec<isize>) {
    (
        vec![c; n],
        (0..n as isize).map(|r| r * c as isize).collect(),
    )
}

// ---------------------------------------------------------------------
// Reductions.

/// Checked operands of a reduction over `count` elements: the operation
/// and this process's packed contribution (from `recvbuf` with
/// `MPI_IN_PLACE`, where `in_place_ok`). `recvbuf` must not alias
/// `sendbuf` where the receive buffer is significant (`receives`).
unsafe fn reduction_input(
    rt: &Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    in_place_ok: bool,
    receives: bool,
) -> MpiResult<(Reduction, Vec<u8>)> {
    let red = reduction(rt, op, datatype)?;
    let src = if abi::is_in_place(sendbuf) {
        if !in_place_ok {
            return Err(in_place_error("here (MPI-4.0 §6.9.1)"));
        }
        recvbuf.cast_const()
    } else {
        if receives && count > 0 && sendbuf == recvbuf.cast_const() {
            return Err(err(
                Class::Buffer,
                "send and receive buffers alias (use MPI_IN_PLACE)",
            ));
        }
        sendbuf
    };
    // SAFETY: `count` elements at the source (MPI contract).
    let ub = unsafe { user_buf(rt, src, count, datatype)? };
    // SAFETY: as above.
    Ok((red, unsafe { packed(&ub) }))
}

/// Size in bytes of one element of `datatype`.
fn elem_size(rt: &Runtime, datatype: MPI_Datatype) -> MpiResult<usize> {
    Ok(super::datatype(rt, datatype)?.size)
}

/// A count summed over ranks.
fn total(counts: &[MPI_Count]) -> MpiResult<MPI_Count> {
    counts.iter().try_fold(0 as MPI_Count, |acc, &c| {
        if c < 0 {
            return Err(err(Class::Count, format!("negative count {c}")));
        }
        acc.checked_add(c)
            .ok_or_else(|| err(Class::Count, "count overflows"))
    })
}

// ---------------------------------------------------------------------
// Schedule compilers, one per collective (MPI-4.0 §6.3-§6.11).

/// MPI-4.0 §6.3.
unsafe fn barrier(rt: &mut Runtime, comm: MPI_Comm) -> MpiResult<Schedule> {
    let slot = comm_slot(comm)?;
    let mut b = builder(rt, slot)?;
    algo::barrier(&mut b);
    Ok(b.finish())
}
collective!(MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init: barrier());

/// MPI-4.0 §6.4.
unsafe fn bcast<C: Count>(
    rt: &mut Runtime,
    buffer: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let count = count.get();
    let (slot, me, _) = comm_info(rt, comm)?;
    let root = rt.comm(slot)?.check_root(root)?;
    // SAFETY: forwarded from the caller.
    let ub = unsafe { user_buf(rt, buffer, count, datatype)? };
    let data = if me == root {
        // SAFETY: the root's buffer is readable.
        unsafe { packed(&ub) }
    } else {
        vec![0; ub.len]
    };
    let mut b = builder(rt, slot)?;
    let data = b.input(data);
    algo::bcast(&mut b, data, root);
    if me != root {
        let k = b.sink(sink(&ub));
        b.unpack(data, k);
    }
    Ok(b.finish())
}
collective!(MPI_Bcast / MPI_Bcast_c, MPI_Ibcast / MPI_Ibcast_c, MPI_Bcast_init / MPI_Bcast_init_c: bcast(buffer: *mut c_void, count: C, datatype: MPI_Datatype, root: c_int));

/// MPI-4.0 §6.9.1.
unsafe fn reduce<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let count = count.get();
    let (slot, me, _) = comm_info(rt, comm)?;
    let root = rt.comm(slot)?.check_root(root)?;
    let at_root = me == root;
    // SAFETY: forwarded from the caller.
    let (red, input) =
        unsafe { reduction_input(rt, sendbuf, recvbuf, count, datatype, op, at_root, at_root)? };
    let out = if at_root {
        // SAFETY: the root's receive buffer holds `count` elements.
        Some(sink(&unsafe { user_buf(rt, recvbuf, count, datatype)? }))
    } else {
        None
    };
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    let acc = b.input(input);
    algo::reduce(&mut b, acc, root);
    if let Some(k) = out {
        let k = b.sink(k);
        b.unpack(acc, k);
    }
    Ok(b.finish())
}
collective!(MPI_Reduce / MPI_Reduce_c, MPI_Ireduce / MPI_Ireduce_c, MPI_Reduce_init / MPI_Reduce_init_c: reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op, root: c_int));

/// MPI-4.0 §6.9.6.
unsafe fn allreduce<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let count = count.get();
    let (slot, _, _) = comm_info(rt, comm)?;
    // SAFETY: forwarded from the caller.
    let (red, input) =
        unsafe { reduction_input(rt, sendbuf, recvbuf, count, datatype, op, true, true)? };
    // SAFETY: the receive buffer holds `count` elements.
    let out = sink(&unsafe { user_buf(rt, recvbuf, count, datatype)? });
    let elem = elem_size(rt, datatype)?;
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    let acc = b.input(input);
    algo::allreduce(&mut b, acc, elem);
    let k = b.sink(out);
    b.unpack(acc, k);
    Ok(b.finish())
}
collective!(MPI_Allreduce / MPI_Allreduce_c, MPI_Iallreduce / MPI_Iallreduce_c, MPI_Allreduce_init / MPI_Allreduce_init_c: allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op));

/// Gather and gatherv (MPI-4.0 §6.5): `counts`/`displs` matter at the
/// root only; `regular` (gather) blocks all have one size, which the
/// binomial tree needs.
unsafe fn gather_any(
    rt: &mut Runtime,
    slot: usize,
    root: usize,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: &[MPI_Count],
    displs: &[isize],
    recvtype: MPI_Datatype,
    regular: bool,
) -> MpiResult<Schedule> {
    let c = rt.comm(slot)?;
    let me = c.rank as usize;
    let in_place = abi::is_in_place(sendbuf);
    if in_place && me != root {
        return Err(in_place_error("at a process other than the root"));
    }
    let own = if in_place {
        Vec::new()
    } else {
        // SAFETY: the send buffer holds `sendcount` elements.
        unsafe { packed(&user_buf(rt, sendbuf, sendcount, sendtype)?) }
    };
    let outs = if me == root {
        // SAFETY: the root's receive blocks (MPI contract).
        unsafe { blocks(rt, recvbuf, counts, displs, recvtype)? }
    } else {
        Vec::new()
    };
    let mut b = builder(rt, slot)?;
    let blk = outs.first().map_or(own.len(), |u| u.len);
    let own = b.input(own);
    let parts = if regular {
        algo::gather(&mut b, root, own, blk)
    } else {
        let all = b.buf(outs.iter().map(|u| u.len).sum());
        let parts = all.split(outs.iter().map(|u| u.len));
        algo::gatherv(&mut b, root, own, &parts);
        parts
    };
    for (r, ub) in outs.iter().enumerate() {
        if r == me && in_place {
            continue;
        }
        let k = b.sink(sink(ub));
        b.unpack(if r == me { own } else { parts[r] }, k);
    }
    Ok(b.finish())
}

unsafe fn gather<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let sendcount = sendcount.get();
    let recvcount = recvcount.get();
    let (slot, me, n) = comm_info(rt, comm)?;
    let root = rt.comm(slot)?.check_root(root)?;
    let (counts, displs) = if me == root {
        regular(recvcount, n)
    } else {
        (Vec::new(), Vec::new())
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        gather_any(
            rt, slot, root, sendbuf, sendcount, sendtype, recvbuf, &counts, &displs, recvtype, true,
        )
    }
}
collective!(MPI_Gather / MPI_Gather_c, MPI_Igather / MPI_Igather_c, MPI_Gather_init / MPI_Gather_init_c: gather(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype, root: c_int));

unsafe fn gatherv<C: Count, D: Displ>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let sendcount = sendcount.get();
    let (slot, me, n) = comm_info(rt, comm)?;
    let root = rt.comm(slot)?.check_root(root)?;
    let (counts, displs) = if me == root {
        // SAFETY: the root's arrays have `n` entries.
        unsafe {
            (
                counts::counts(recvcounts, n, "count")?,
                counts::displs(displs, n)?,
            )
        }
    } else {
        (Vec::new(), Vec::new())
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        gather_any(
            rt, slot, root, sendbuf, sendcount, sendtype, recvbuf, &counts, &displs, recvtype,
            false,
        )
    }
}
collective!(MPI_Gatherv / MPI_Gatherv_c, MPI_Igatherv / MPI_Igatherv_c, MPI_Gatherv_init / MPI_Gatherv_init_c: gatherv(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: MPI_Datatype, root: c_int));

/// Scatter and scatterv (MPI-4.0 §6.6): `counts`/`displs` matter at the
/// root only; `regular` as for [`gather_any`].
unsafe fn scatter_any(
    rt: &mut Runtime,
    slot: usize,
    root: usize,
    sendbuf: *const c_void,
    counts: &[MPI_Count],
    displs: &[isize],
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    regular: bool,
) -> MpiResult<Schedule> {
    let me = rt.comm(slot)?.rank as usize;
    let in_place = abi::is_in_place(recvbuf);
    if in_place && me != root {
        return Err(in_place_error("at a process other than the root"));
    }
    let ins = if me == root {
        // SAFETY: the root's send blocks (MPI contract).
        unsafe { blocks(rt, sendbuf, counts, displs, sendtype)? }
    } else {
        Vec::new()
    };
    let out = if in_place {
        None
    } else {
        // SAFETY: the receive buffer holds `recvcount` elements.
        Some(unsafe { user_buf(rt, recvbuf, recvcount, recvtype)? })
    };
    let mut data = Vec::with_capacity(ins.iter().map(|u| u.len).sum());
    for (r, ub) in ins.iter().enumerate() {
        if !(r == me && in_place) {
            // SAFETY: the root's send blocks are readable.
            data.extend_from_slice(&unsafe { ub.data() });
        }
    }
    let mut b = builder(rt, slot)?;
    let lens = ins
        .iter()
        .enumerate()
        .map(|(r, u)| if r == me && in_place { 0 } else { u.len });
    let all = b.input(data);
    let parts = all.split(lens);
    let own_len = out.as_ref().map_or(0, |u| u.len);
    let own = if regular {
        let blk = ins.iter().map(|u| u.len).max().unwrap_or(own_len);
        algo::scatter(&mut b, root, &parts, blk)
    } else {
        let own = if me == root {
            parts[me]
        } else {
            b.buf(own_len)
        };
        algo::scatterv(&mut b, root, own, &parts);
        own
    };
    if let Some(ub) = out {
        let k = b.sink(sink(&ub));
        b.unpack(own, k);
    }
    Ok(b.finish())
}

unsafe fn scatter<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let sendcount = sendcount.get();
    let recvcount = recvcount.get();
    let (slot, me, n) = comm_info(rt, comm)?;
    let root = rt.comm(slot)?.check_root(root)?;
    let (counts, displs) = if me == root {
        regular(sendcount, n)
    } else {
        (Vec::new(), Vec::new())
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        scatter_any(
            rt, slot, root, sendbuf, &counts, &displs, sendtype, recvbuf, recvcount, recvtype, true,
        )
    }
}
collective!(MPI_Scatter / MPI_Scatter_c, MPI_Iscatter / MPI_Iscatter_c, MPI_Scatter_init / MPI_Scatter_init_c: scatter(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype, root: c_int));

unsafe fn scatterv<C: Count, D: Displ>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcounts: *const C,
    displs: *const D,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let recvcount = recvcount.get();
    let (slot, me, n) = comm_info(rt, comm)?;
    let root = rt.comm(slot)?.check_root(root)?;
    let (counts, displs) = if me == root {
        // SAFETY: the root's arrays have `n` entries.
        unsafe {
            (
                counts::counts(sendcounts, n, "count")?,
                counts::displs(displs, n)?,
            )
        }
    } else {
        (Vec::new(), Vec::new())
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        scatter_any(
            rt, slot, root, sendbuf, &counts, &displs, sendtype, recvbuf, recvcount, recvtype,
            false,
        )
    }
}
collective!(MPI_Scatterv / MPI_Scatterv_c, MPI_Iscatterv / MPI_Iscatterv_c, MPI_Scatterv_init / MPI_Scatterv_init_c: scatterv(sendbuf: *const c_void, sendcounts: *const C, displs: *const D, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype, root: c_int));

/// Allgather and allgatherv (MPI-4.0 §6.7).
unsafe fn allgather_any(
    rt: &mut Runtime,
    slot: usize,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    counts: &[MPI_Count],
    displs: &[isize],
    recvtype: MPI_Datatype,
) -> MpiResult<Schedule> {
    let me = rt.comm(slot)?.rank as usize;
    let in_place = abi::is_in_place(sendbuf);
    // SAFETY: the receive blocks (MPI contract).
    let outs = unsafe { blocks(rt, recvbuf, counts, displs, recvtype)? };
    let mut own = if in_place {
        // SAFETY: this process's block of the receive buffer is readable.
        unsafe { packed(&outs[me]) }
    } else {
        // SAFETY: the send buffer holds `sendcount` elements.
        unsafe { packed(&user_buf(rt, sendbuf, sendcount, sendtype)?) }
    };
    if own.len() > outs[me].len {
        return Err(err(
            Class::Truncate,
            "the send data is longer than this process's receive block",
        ));
    }
    own.resize(outs[me].len, 0);
    let mut b = builder(rt, slot)?;
    let all = b.buf(outs.iter().map(|u| u.len).sum());
    let parts = all.split(outs.iter().map(|u| u.len));
    let mine = b.input(own);
    b.copy(mine, parts[me]);
    algo::allgatherv(&mut b, &parts);
    for (r, ub) in outs.iter().enumerate() {
        if !(r == me && in_place) {
            let k = b.sink(sink(ub));
            b.unpack(parts[r], k);
        }
    }
    Ok(b.finish())
}

unsafe fn allgather<C: Count>(
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
    let (slot, _, n) = comm_info(rt, comm)?;
    let (counts, displs) = regular(recvcount, n);
    // SAFETY: forwarded from the caller.
    unsafe {
        allgather_any(
            rt, slot, sendbuf, sendcount, sendtype, recvbuf, &counts, &displs, recvtype,
        )
    }
}
collective!(MPI_Allgather / MPI_Allgather_c, MPI_Iallgather / MPI_Iallgather_c, MPI_Allgather_init / MPI_Allgather_init_c: allgather(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype));

unsafe fn allgatherv<C: Count, D: Displ>(
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
    let (slot, _, n) = comm_info(rt, comm)?;
    // SAFETY: the arrays have `n` entries.
    let (counts, displs) = unsafe {
        (
            counts::counts(recvcounts, n, "count")?,
            counts::displs(displs, n)?,
        )
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        allgather_any(
            rt, slot, sendbuf, sendcount, sendtype, recvbuf, &counts, &displs, recvtype,
        )
    }
}
collective!(MPI_Allgatherv / MPI_Allgatherv_c, MPI_Iallgatherv / MPI_Iallgatherv_c, MPI_Allgatherv_init / MPI_Allgatherv_init_c: allgatherv(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: MPI_Datatype));

/// The send or receive side of an all-to-all: one block per rank.
struct Side {
    buf: *const c_void,
    counts: Vec<MPI_Count>,
    /// Byte displacements.
    displs: Vec<isize>,
    types: Vec<MPI_Datatype>,
}

impl Side {
    /// A side whose displacements count extents of one datatype.
    fn typed(
        rt: &Runtime,
        buf: *const c_void,
        counts: Vec<MPI_Count>,
        displs: &[isize],
        dt: MPI_Datatype,
    ) -> MpiResult<Self> {
        let extent = super::datatype(rt, dt)?.extent;
        Ok(Self {
            buf,
            types: vec![dt; counts.len()],
            displs: displs.iter().map(|&d| d.wrapping_mul(extent)).collect(),
            counts,
        })
    }

    /// # Safety
    /// The blocks lie in the application's buffer (MPI contract).
    unsafe fn blocks(&self, rt: &Runtime) -> MpiResult<Vec<UserBuf>> {
        (0..self.counts.len())
            .map(|r| {
                // SAFETY: forwarded from the caller.
                unsafe { block(rt, self.buf, self.displs[r], self.counts[r], self.types[r]) }
            })
            .collect()
    }
}

/// Alltoall, alltoallv, alltoallw (MPI-4.0 §6.8); `send` is `None` for
/// `MPI_IN_PLACE` (the data goes out of the receive blocks).
unsafe fn alltoall_any(
    rt: &mut Runtime,
    slot: usize,
    send: Option<Side>,
    recv: Side,
) -> MpiResult<Schedule> {
    // SAFETY: the receive blocks (MPI contract).
    let outs = unsafe { recv.blocks(rt)? };
    let ins = match &send {
        // SAFETY: the send blocks (MPI contract).
        Some(s) => unsafe { s.blocks(rt)? },
        None => Vec::new(),
    };
    let ins = if send.is_some() { &ins } else { &outs };
    let mut data = Vec::with_capacity(ins.iter().map(|u| u.len).sum());
    for ub in ins {
        // SAFETY: send blocks are readable.
        data.extend_from_slice(&unsafe { ub.data() });
    }
    let mut b = builder(rt, slot)?;
    let sent = b.input(data);
    let sends = sent.split(ins.iter().map(|u| u.len));
    let got = b.buf(outs.iter().map(|u| u.len).sum());
    let recvs = got.split(outs.iter().map(|u| u.len));
    algo::alltoallv(&mut b, &sends, &recvs);
    for (r, ub) in outs.iter().enumerate() {
        let k = b.sink(sink(ub));
        b.unpack(recvs[r], k);
    }
    Ok(b.finish())
}

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
    let sendcount = sendcount.get();
    let recvcount = recvcount.get();
    let (slot, _, n) = comm_info(rt, comm)?;
    let (rc, rd) = regular(recvcount, n);
    let recv = Side::typed(rt, recvbuf, rc, &rd, recvtype)?;
    let send = if abi::is_in_place(sendbuf) {
        None
    } else {
        let (sc, sd) = regular(sendcount, n);
        Some(Side::typed(rt, sendbuf, sc, &sd, sendtype)?)
    };
    // SAFETY: forwarded from the caller.
    unsafe { alltoall_any(rt, slot, send, recv) }
}
collective!(MPI_Alltoall / MPI_Alltoall_c, MPI_Ialltoall / MPI_Ialltoall_c, MPI_Alltoall_init / MPI_Alltoall_init_c: alltoall(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype));

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
    let (slot, _, n) = comm_info(rt, comm)?;
    // SAFETY: the arrays have `n` entries (MPI contract).
    let recv = unsafe {
        Side::typed(
            rt,
            recvbuf,
            counts::counts(recvcounts, n, "count")?,
            &counts::displs(rdispls, n)?,
            recvtype,
        )?
    };
    let send = if abi::is_in_place(sendbuf) {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe {
            Side::typed(
                rt,
                sendbuf,
                counts::counts(sendcounts, n, "count")?,
                &counts::displs(sdispls, n)?,
                sendtype,
            )?
        })
    };
    // SAFETY: forwarded from the caller.
    unsafe { alltoall_any(rt, slot, send, recv) }
}
collective!(MPI_Alltoallv / MPI_Alltoallv_c, MPI_Ialltoallv / MPI_Ialltoallv_c, MPI_Alltoallv_init / MPI_Alltoallv_init_c: alltoallv(sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const D, recvtype: MPI_Datatype));

/// A side of `MPI_Alltoallw`: byte displacements, a datatype per block.
unsafe fn side_w<C: Count, D: Displ>(
    buf: *const c_void,
    counts: *const C,
    displs: *const D,
    dts: *const MPI_Datatype,
    n: usize,
) -> MpiResult<Side> {
    // SAFETY: the arrays have `n` entries (MPI contract).
    unsafe {
        Ok(Side {
            buf,
            counts: counts::counts(counts, n, "count")?,
            displs: counts::displs(displs, n)?,
            types: types(dts, n)?,
        })
    }
}

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
    let (slot, _, n) = comm_info(rt, comm)?;
    // SAFETY: forwarded from the caller.
    unsafe {
        let recv = side_w(recvbuf, recvcounts, rdispls, recvtypes, n)?;
        let send = if abi::is_in_place(sendbuf) {
            None
        } else {
            Some(side_w(sendbuf, sendcounts, sdispls, sendtypes, n)?)
        };
        alltoall_any(rt, slot, send, recv)
    }
}
collective!(MPI_Alltoallw / MPI_Alltoallw_c, MPI_Ialltoallw / MPI_Ialltoallw_c, MPI_Alltoallw_init / MPI_Alltoallw_init_c: alltoallw(sendbuf: *const c_void, sendcounts: *const C, sdispls: *const D, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, rdispls: *const D, recvtypes: *const MPI_Datatype));

/// Reduce-scatter with `counts[r]` elements for rank `r` (MPI-4.0
/// §6.10); `MPI_IN_PLACE` takes the input from the receive buffer.
unsafe fn reduce_scatter_any(
    rt: &mut Runtime,
    slot: usize,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: &[MPI_Count],
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<Schedule> {
    let me = rt.comm(slot)?.rank as usize;
    let all = total(counts)?;
    // SAFETY: forwarded from the caller: `all` elements of input.
    let (red, input) =
        unsafe { reduction_input(rt, sendbuf, recvbuf, all, datatype, op, true, true)? };
    // SAFETY: the receive buffer holds this rank's count.
    let out = sink(&unsafe { user_buf(rt, recvbuf, counts[me], datatype)? });
    let size = elem_size(rt, datatype)?;
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    let acc = b.input(input);
    let bytes: Vec<usize> = counts.iter().map(|&c| c as usize * size).collect();
    let own = algo::reduce_scatter(&mut b, acc, &bytes);
    let k = b.sink(out);
    b.unpack(own, k);
    Ok(b.finish())
}

unsafe fn reduce_scatter<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (slot, _, n) = comm_info(rt, comm)?;
    // SAFETY: the array has `n` entries; the rest is forwarded.
    unsafe {
        let counts = counts::counts(recvcounts, n, "count")?;
        reduce_scatter_any(rt, slot, sendbuf, recvbuf, &counts, datatype, op)
    }
}
collective!(MPI_Reduce_scatter / MPI_Reduce_scatter_c, MPI_Ireduce_scatter / MPI_Ireduce_scatter_c, MPI_Reduce_scatter_init / MPI_Reduce_scatter_init_c: reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const C, datatype: MPI_Datatype, op: MPI_Op));

unsafe fn reduce_scatter_block<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let recvcount = recvcount.get();
    let (slot, _, n) = comm_info(rt, comm)?;
    // SAFETY: forwarded from the caller.
    unsafe {
        reduce_scatter_any(
            rt,
            slot,
            sendbuf,
            recvbuf,
            &vec![recvcount; n],
            datatype,
            op,
        )
    }
}
collective!(MPI_Reduce_scatter_block / MPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block / MPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init / MPI_Reduce_scatter_block_init_c: reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: C, datatype: MPI_Datatype, op: MPI_Op));

/// Inclusive (MPI-4.0 §6.11.1) or exclusive (§6.11.2) scan.
unsafe fn scan_any(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    exclusive: bool,
) -> MpiResult<Schedule> {
    let (slot, me, _) = comm_info(rt, comm)?;
    // SAFETY: forwarded from the caller.
    let (red, input) =
        unsafe { reduction_input(rt, sendbuf, recvbuf, count, datatype, op, true, true)? };
    // SAFETY: the receive buffer holds `count` elements.
    let out = sink(&unsafe { user_buf(rt, recvbuf, count, datatype)? });
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    let len = input.len();
    let partial = b.input(input);
    let result = b.buf(len);
    algo::scan(&mut b, partial, result, exclusive);
    // The exclusive scan leaves rank 0's receive buffer undefined.
    if !(exclusive && me == 0) {
        let k = b.sink(out);
        b.unpack(result, k);
    }
    Ok(b.finish())
}

unsafe fn scan<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let count = count.get();
    // SAFETY: forwarded from the caller.
    unsafe { scan_any(rt, sendbuf, recvbuf, count, datatype, op, comm, false) }
}
collective!(MPI_Scan / MPI_Scan_c, MPI_Iscan / MPI_Iscan_c, MPI_Scan_init / MPI_Scan_init_c: scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op));

unsafe fn exscan<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let count = count.get();
    // SAFETY: forwarded from the caller.
    unsafe { scan_any(rt, sendbuf, recvbuf, count, datatype, op, comm, true) }
}
collective!(MPI_Exscan / MPI_Exscan_c, MPI_Iexscan / MPI_Iexscan_c, MPI_Exscan_init / MPI_Exscan_init_c: exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op));
