//! Collective operations (MPI-4.0 chapter 6): blocking, nonblocking and
//! persistent ([`persistent`]), each in both count widths; the reduction
//! operations are [`op`]'s, the all-to-all exchanges [`alltoall`]'s and
//! the neighbourhood collectives [`neighbor`]'s.
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
use crate::coll::Schedule;
use crate::coll::board;
use crate::coll::board::direct::{Access, Held, Released};
use crate::coll::calls::{self, Arg, Blocks, Reduce, TypeArg, packed};
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

/// Run a blocking collective: straight on the communicator's board
/// (`direct`) where it can, else compile it and run its schedule (as a
/// request, waited for with the library lock released between turns,
/// under `MPI_THREAD_MULTIPLE`).
#[inline]
fn blocking(
    name: &str,
    comm: MPI_Comm,
    direct: (
        impl FnOnce(&mut Held<'_>) -> Option<MpiResult<()>>,
        impl FnOnce(&mut Released<'_>) -> Option<MpiResult<()>>,
    ),
    build: impl FnOnce(&mut Runtime) -> MpiResult<Schedule>,
) -> c_int {
    // Straight on the communicator's flag board, where it can.
    if core::threads::waits_hold_lock() {
        return call(name, comm, |rt| {
            if let Some(done) = (direct.0)(&mut Held(rt)) {
                return done;
            }
            let s = build(rt)?;
            crate::coll::run(rt, s)
        });
    }
    // Threads call at once: the lock is released while the collective
    // waits, and in any case before what follows takes it again.
    let take = || enter(name);
    let direct = (direct.1)(&mut Released::new(&take));
    match direct {
        Some(Ok(())) => return abi::MPI_SUCCESS,
        Some(Err(e)) => return call(name, comm, |_| Err(e)),
        None => {}
    }
    call_waiting(
        name,
        comm,
        |rt| {
            let mut s = build(rt)?;
            s.advance(&mut rt.ep);
            Ok(Req::Coll(Box::new(s)))
        },
        std::ptr::null_mut(),
    )
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
/// arguments and the communicator; `MPI_X` first tries the function
/// after `direct` (the same arguments) if one is named, which runs the
/// call straight on a flag board or declines.
macro_rules! collective {
    ($b:ident $(/ $b_c:ident)?, $nb:ident $(/ $nb_c:ident)?, $p:ident $(/ $p_c:ident)?:
        $build:ident ($($arg:ident: $ty:ty),*) direct $direct:ident) => {
        collective!(@ [$direct] $b $(/ $b_c)?, $nb $(/ $nb_c)?, $p $(/ $p_c)?: $build ($($arg: $ty),*));
    };
    ($b:ident $(/ $b_c:ident)?, $nb:ident $(/ $nb_c:ident)?, $p:ident $(/ $p_c:ident)?:
        $build:ident ($($arg:ident: $ty:ty),*)) => {
        collective!(@ [] $b $(/ $b_c)?, $nb $(/ $nb_c)?, $p $(/ $p_c)?: $build ($($arg: $ty),*));
    };
    (@ [$($direct:ident)?] $b:ident $(/ $b_c:ident)?, $nb:ident $(/ $nb_c:ident)?, $p:ident $(/ $p_c:ident)?:
        $build:ident ($($arg:ident: $ty:ty),*)) => {
        large_count! {
            fn $b $(/ $b_c)? ($($arg: $ty,)* comm: MPI_Comm) {
                let direct = collective!(@direct [$($direct)?] ($($arg),*) comm);
                // SAFETY: the caller's buffers and arrays, as the standard
                // describes them, forwarded.
                blocking(NAME, comm, direct, |rt| unsafe { $build(rt, $($arg,)* comm) })
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
                        #[allow(unused_variables)] // no array (or no argument at all)
                        let lens = array_lengths(rt, comm, root, stringify!($build))?;
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
    (@direct [] ($($arg:ident),*) $comm:ident) => {
        (
            |_: &mut Held<'_>| -> Option<MpiResult<()>> { None },
            |_: &mut Released<'_>| -> Option<MpiResult<()>> { None },
        )
    };
    (@direct [$direct:ident] ($($arg:ident),*) $comm:ident) => {
        (
            |cx: &mut Held<'_>| -> Option<MpiResult<()>> {
                // SAFETY: the caller's buffers, as the standard describes them.
                unsafe { $direct(cx, $($arg,)* $comm) }
            },
            |cx: &mut Released<'_>| -> Option<MpiResult<()>> {
                // SAFETY: as above.
                unsafe { $direct(cx, $($arg,)* $comm) }
            },
        )
    };
}

// After the macro, which they use.
pub(super) mod alltoall;
pub(super) mod neighbor;
pub(crate) mod op;
mod persistent;

use op::{predefined_op, reduction_of};
use persistent::{Kept, array_lengths, persistent, send_side};

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

// ---------------------------------------------------------------------
// Arguments as the collectives of `crate::coll::calls` take them.

/// The datatype of handle `dt` for buffer `buf`, where `MPI_IN_PLACE` is
/// not valid: its error is the call's where the buffer is significant.
fn type_arg(rt: &Runtime, buf: *const c_void, dt: MPI_Datatype) -> TypeArg {
    if abi::is_in_place(buf) {
        return Err(in_place_error("here"));
    }
    super::datatype(rt, dt)
}

/// A buffer argument where `MPI_IN_PLACE` is not valid.
fn arg(rt: &Runtime, buf: *const c_void, count: MPI_Count, dt: MPI_Datatype) -> Arg {
    Arg {
        ptr: buf,
        count,
        dt: type_arg(rt, buf, dt),
    }
}

/// A buffer argument that may be `MPI_IN_PLACE` (`None`).
fn arg_or_in_place(
    rt: &Runtime,
    buf: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
) -> Option<Arg> {
    (!abi::is_in_place(buf)).then(|| arg(rt, buf, count, dt))
}

/// The arguments of a reduction.
fn reduce_args(
    rt: &Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> Reduce {
    let in_place = |buf: *const c_void| abi::is_in_place(buf);
    let dt = super::datatype(rt, datatype);
    let op = dt.clone().and_then(|t| reduction_of(rt, op, datatype, t));
    Reduce {
        send: (!in_place(sendbuf)).then_some(sendbuf),
        recv: (!in_place(recvbuf)).then_some(recvbuf),
        dt,
        op,
    }
}

/// A reduction of a predefined datatype by a predefined operation, as
/// plain bytes, if its arguments are valid; its receive buffer only if
/// that is valid too (it matters only where the result is read). `None`
/// leaves the call, and any error, to [`reduce_args`].
fn flat_reduction(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> Option<board::direct::Flat> {
    let (dt, len) = contiguous_bytes(count, datatype)?;
    let kernel = crate::ops::check(predefined_op(op)?, dt.elem?).ok()?;
    if len == 0 || sendbuf.is_null() {
        return None;
    }
    let send = (!abi::is_in_place(sendbuf)).then_some(sendbuf.cast::<u8>());
    let recv = recvbuf.cast::<u8>();
    let recv_ok = !recv.is_null()
        && !abi::is_in_place(recvbuf.cast_const())
        && send != Some(recv.cast_const());
    Some(board::direct::Flat {
        send,
        recv: recv_ok.then_some(recv),
        len,
        elem: dt.size,
        kernel,
    })
}

/// A side of `MPI_Alltoallw` (and of the neighbourhood form): byte
/// displacements, a datatype per block.
///
/// # Safety
/// The arrays have `n` entries (MPI contract).
unsafe fn side_w<C: Count, D: Displ>(
    rt: &Runtime,
    buf: *const c_void,
    counts: *const C,
    displs: *const D,
    dts: *const MPI_Datatype,
    n: usize,
) -> MpiResult<Blocks> {
    // SAFETY: the caller's promise.
    let (counts, displs, dts) = unsafe {
        (
            counts::counts(counts, n, "count")?,
            counts::displs(displs, n)?,
            types(dts, n)?,
        )
    };
    Ok(Blocks {
        ptr: buf,
        counts,
        displs,
        types: dts.into_iter().map(|dt| type_arg(rt, buf, dt)).collect(),
    })
}

/// The counts and displacements of a `v` collective's `n` blocks.
///
/// # Safety
/// Both arrays have `n` entries (MPI contract).
unsafe fn counts_displs<C: Count, D: Displ>(
    counts: *const C,
    displs: *const D,
    n: usize,
) -> MpiResult<(Vec<MPI_Count>, Vec<isize>)> {
    // SAFETY: the caller's promise.
    unsafe {
        Ok((
            counts::counts(counts, n, "count")?,
            counts::displs(displs, n)?,
        ))
    }
}

// ---------------------------------------------------------------------
// Entries, one schedule compiler each (MPI-4.1 §6.3-§6.11, compiled by
// `crate::coll::calls`): arguments read, handles resolved.

unsafe fn barrier(rt: &mut Runtime, comm: MPI_Comm) -> MpiResult<Schedule> {
    calls::barrier(rt, comm_slot(comm)?)
}
collective!(MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init: barrier() direct barrier_direct);

unsafe fn barrier_direct(cx: &mut impl Access, comm: MPI_Comm) -> Option<MpiResult<()>> {
    board::direct::barrier(cx, comm_slot(comm).ok()?)
}

unsafe fn bcast<C: Count>(
    rt: &mut Runtime,
    buffer: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let slot = comm_slot(comm)?;
    let buf = arg(rt, buffer, count.get(), datatype);
    // SAFETY: forwarded from the caller.
    unsafe { calls::bcast(rt, slot, root_arg(root), &buf) }
}
collective!(MPI_Bcast / MPI_Bcast_c, MPI_Ibcast / MPI_Ibcast_c, MPI_Bcast_init / MPI_Bcast_init_c: bcast(buffer: *mut c_void, count: C, datatype: MPI_Datatype, root: c_int) direct bcast_direct);

unsafe fn bcast_direct<C: Count>(
    cx: &mut impl Access,
    buffer: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    // A predefined datatype's contiguous bytes, decoded here; anything
    // else (and any error) through an `Arg`.
    let flat = contiguous_bytes(count.get(), datatype)
        .filter(|_| !buffer.is_null() && !abi::is_in_place(buffer));
    if let Some((_, len)) = flat {
        // SAFETY: forwarded from the caller: `len` bytes at `buffer`.
        return unsafe { board::direct::bcast_flat(cx, slot, root_arg(root), buffer.cast(), len) };
    }
    let buf = cx.with(|rt| arg(rt, buffer, count.get(), datatype));
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::bcast(cx, slot, root_arg(root), &buf) }
}

#[allow(clippy::too_many_arguments)]
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
    let slot = comm_slot(comm)?;
    let args = reduce_args(rt, sendbuf, recvbuf, datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { calls::reduce(rt, slot, root_arg(root), &args, count.get()) }
}
collective!(MPI_Reduce / MPI_Reduce_c, MPI_Ireduce / MPI_Ireduce_c, MPI_Reduce_init / MPI_Reduce_init_c: reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op, root: c_int) direct reduce_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    if let Some(f) = flat_reduction(sendbuf, recvbuf, count.get(), datatype, op) {
        // SAFETY: forwarded from the caller; `f` names its buffers.
        return unsafe { board::direct::reduce_flat(cx, slot, Some(root_arg(root)), f) };
    }
    let args = cx.with(|rt| reduce_args(rt, sendbuf, recvbuf, datatype, op));
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::reduce(cx, slot, Some(root_arg(root)), &args, count.get()) }
}

unsafe fn allreduce<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let slot = comm_slot(comm)?;
    let args = reduce_args(rt, sendbuf, recvbuf, datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { calls::allreduce(rt, slot, &args, count.get()) }
}
collective!(MPI_Allreduce / MPI_Allreduce_c, MPI_Iallreduce / MPI_Iallreduce_c, MPI_Allreduce_init / MPI_Allreduce_init_c: allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op) direct allreduce_direct);

unsafe fn allreduce_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    if let Some(f) = flat_reduction(sendbuf, recvbuf, count.get(), datatype, op) {
        // SAFETY: forwarded from the caller; `f` names its buffers.
        return unsafe { board::direct::reduce_flat(cx, slot, None, f) };
    }
    let args = cx.with(|rt| reduce_args(rt, sendbuf, recvbuf, datatype, op));
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::reduce(cx, slot, None, &args, count.get()) }
}

#[allow(clippy::too_many_arguments)]
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
    let slot = comm_slot(comm)?;
    let send = arg_or_in_place(rt, sendbuf, sendcount.get(), sendtype);
    let recvtype = type_arg(rt, recvbuf, recvtype);
    let recv = |n| Blocks::regular(recvbuf, recvcount.get(), n, recvtype);
    // SAFETY: forwarded from the caller.
    unsafe { calls::gather(rt, slot, root_arg(root), send.as_ref(), recv, true) }
}
collective!(MPI_Gather / MPI_Gather_c, MPI_Igather / MPI_Igather_c, MPI_Gather_init / MPI_Gather_init_c: gather(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype, root: c_int) direct gather_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn gather_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    let (send, recv) = cx.with(|rt| {
        let send = arg_or_in_place(rt, sendbuf, sendcount.get(), sendtype);
        (send, arg(rt, recvbuf, recvcount.get(), recvtype))
    });
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::gather(cx, slot, root_arg(root), send.as_ref(), &recv) }
}

#[allow(clippy::too_many_arguments)]
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
    let slot = comm_slot(comm)?;
    let send = arg_or_in_place(rt, sendbuf, sendcount.get(), sendtype);
    let recvtype = type_arg(rt, recvbuf, recvtype);
    let recv = |n| {
        // SAFETY: the root's arrays have `n` entries.
        let (counts, displs) = unsafe { counts_displs(recvcounts, displs, n)? };
        Blocks::typed(recvbuf, counts, &displs, recvtype)
    };
    // SAFETY: forwarded from the caller.
    unsafe { calls::gather(rt, slot, root_arg(root), send.as_ref(), recv, false) }
}
collective!(MPI_Gatherv / MPI_Gatherv_c, MPI_Igatherv / MPI_Igatherv_c, MPI_Gatherv_init / MPI_Gatherv_init_c: gatherv(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: MPI_Datatype, root: c_int) direct gatherv_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv_direct<C: Count, D: Displ>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    let (send, recvtype) = cx.with(|rt| {
        let send = arg_or_in_place(rt, sendbuf, sendcount.get(), sendtype);
        (send, type_arg(rt, recvbuf, recvtype))
    });
    let recv = |n| {
        // SAFETY: the root's arrays have `n` entries.
        let (counts, displs) = unsafe { counts_displs(recvcounts, displs, n)? };
        Blocks::typed(recvbuf, counts, &displs, recvtype)
    };
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::gatherv(cx, slot, root_arg(root), send.as_ref(), recv) }
}

#[allow(clippy::too_many_arguments)]
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
    let slot = comm_slot(comm)?;
    let sendtype = type_arg(rt, sendbuf, sendtype);
    let send = |n| Blocks::regular(sendbuf, sendcount.get(), n, sendtype);
    let recv = arg_or_in_place(rt, recvbuf, recvcount.get(), recvtype);
    // SAFETY: forwarded from the caller.
    unsafe { calls::scatter(rt, slot, root_arg(root), send, recv.as_ref(), true) }
}
collective!(MPI_Scatter / MPI_Scatter_c, MPI_Iscatter / MPI_Iscatter_c, MPI_Scatter_init / MPI_Scatter_init_c: scatter(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype, root: c_int) direct scatter_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn scatter_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    let (send, recv) = cx.with(|rt| {
        let recv = arg_or_in_place(rt, recvbuf, recvcount.get(), recvtype);
        (arg(rt, sendbuf, sendcount.get(), sendtype), recv)
    });
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::scatter(cx, slot, root_arg(root), &send, recv.as_ref()) }
}

#[allow(clippy::too_many_arguments)]
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
    let slot = comm_slot(comm)?;
    let sendtype = type_arg(rt, sendbuf, sendtype);
    let send = |n| {
        // SAFETY: the root's arrays have `n` entries.
        let (counts, displs) = unsafe { counts_displs(sendcounts, displs, n)? };
        Blocks::typed(sendbuf, counts, &displs, sendtype)
    };
    let recv = arg_or_in_place(rt, recvbuf, recvcount.get(), recvtype);
    // SAFETY: forwarded from the caller.
    unsafe { calls::scatter(rt, slot, root_arg(root), send, recv.as_ref(), false) }
}
collective!(MPI_Scatterv / MPI_Scatterv_c, MPI_Iscatterv / MPI_Iscatterv_c, MPI_Scatterv_init / MPI_Scatterv_init_c: scatterv(sendbuf: *const c_void, sendcounts: *const C, displs: *const D, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype, root: c_int) direct scatterv_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_direct<C: Count, D: Displ>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcounts: *const C,
    displs: *const D,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: C,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    let (sendtype, recv) = cx.with(|rt| {
        let recv = arg_or_in_place(rt, recvbuf, recvcount.get(), recvtype);
        (type_arg(rt, sendbuf, sendtype), recv)
    });
    let send = |n| {
        // SAFETY: the root's arrays have `n` entries.
        let (counts, displs) = unsafe { counts_displs(sendcounts, displs, n)? };
        Blocks::typed(sendbuf, counts, &displs, sendtype)
    };
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::scatterv(cx, slot, root_arg(root), send, recv.as_ref()) }
}

/// Communicator slot and size (of the local group).
fn slot_size(rt: &Runtime, comm: MPI_Comm) -> MpiResult<(usize, usize)> {
    let slot = comm_slot(comm)?;
    Ok((slot, rt.comm(slot)?.size() as usize))
}

/// Communicator slot and how many blocks the arrays of an allgather or
/// alltoall have: one per process of the remote group on an
/// intercommunicator, one per rank otherwise.
fn slot_peers(rt: &Runtime, comm: MPI_Comm) -> MpiResult<(usize, usize)> {
    let slot = comm_slot(comm)?;
    Ok((slot, rt.comm(slot)?.peer_size() as usize))
}

#[allow(clippy::too_many_arguments)]
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
    let (slot, n) = slot_peers(rt, comm)?;
    let recv = Blocks::regular(recvbuf, recvcount.get(), n, type_arg(rt, recvbuf, recvtype))?;
    let send = arg_or_in_place(rt, sendbuf, sendcount.get(), sendtype);
    // SAFETY: forwarded from the caller.
    unsafe { calls::allgather(rt, slot, send.as_ref(), &recv) }
}
collective!(MPI_Allgather / MPI_Allgather_c, MPI_Iallgather / MPI_Iallgather_c, MPI_Allgather_init / MPI_Allgather_init_c: allgather(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: C, recvtype: MPI_Datatype) direct allgather_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn allgather_direct<C: Count>(
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
    unsafe { exchange_direct(cx, send, recv, comm, false) }
}

/// The direct form of `MPI_Allgather` (`alltoall` false) or
/// `MPI_Alltoall`, from their (buffer, count, type) arguments.
///
/// # Safety
/// The buffers hold their blocks (MPI contract).
unsafe fn exchange_direct(
    cx: &mut impl Access,
    send: (*const c_void, MPI_Count, MPI_Datatype),
    recv: (*mut c_void, MPI_Count, MPI_Datatype),
    comm: MPI_Comm,
    alltoall: bool,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    let (send, recv) = cx.with(|rt| {
        let send = arg_or_in_place(rt, send.0, send.1, send.2);
        (send, arg(rt, recv.0, recv.1, recv.2))
    });
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::allgather(cx, slot, send.as_ref(), &recv, alltoall) }
}

#[allow(clippy::too_many_arguments)]
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
    let (slot, n) = slot_peers(rt, comm)?;
    // SAFETY: the arrays have `n` entries.
    let (counts, displs) = unsafe { counts_displs(recvcounts, displs, n)? };
    let recv = Blocks::typed(recvbuf, counts, &displs, type_arg(rt, recvbuf, recvtype))?;
    let send = arg_or_in_place(rt, sendbuf, sendcount.get(), sendtype);
    // SAFETY: forwarded from the caller.
    unsafe { calls::allgather(rt, slot, send.as_ref(), &recv) }
}
collective!(MPI_Allgatherv / MPI_Allgatherv_c, MPI_Iallgatherv / MPI_Iallgatherv_c, MPI_Allgatherv_init / MPI_Allgatherv_init_c: allgatherv(sendbuf: *const c_void, sendcount: C, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const C, displs: *const D, recvtype: MPI_Datatype) direct allgatherv_direct);

#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv_direct<C: Count, D: Displ>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    sendcount: C,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    displs: *const D,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (slot, send, recv) = cx.with(|rt| {
        let (slot, n) = slot_peers(rt, comm).ok()?;
        // SAFETY: the arrays have `n` entries.
        let (counts, displs) = unsafe { counts_displs(recvcounts, displs, n) }.ok()?;
        let recv = Blocks::typed(recvbuf, counts, &displs, type_arg(rt, recvbuf, recvtype)).ok()?;
        let send = arg_or_in_place(rt, sendbuf, sendcount.get(), sendtype);
        Some((slot, send, recv))
    })?;
    // SAFETY: forwarded from the caller.
    unsafe { board::direct::allgatherv(cx, slot, send.as_ref(), &recv) }
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
    let (slot, n) = slot_size(rt, comm)?;
    // SAFETY: the array has `n` entries.
    let counts = unsafe { counts::counts(recvcounts, n, "count")? };
    let args = reduce_args(rt, sendbuf, recvbuf, datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { calls::reduce_scatter(rt, slot, &args, &counts) }
}
collective!(MPI_Reduce_scatter / MPI_Reduce_scatter_c, MPI_Ireduce_scatter / MPI_Ireduce_scatter_c, MPI_Reduce_scatter_init / MPI_Reduce_scatter_init_c: reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const C, datatype: MPI_Datatype, op: MPI_Op) direct reduce_scatter_direct);

/// On a communicator of this process alone, as its scan, of its one
/// count ([`board::direct::alone_ranked`]); elsewhere the schedule runs.
unsafe fn reduce_scatter_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    if recvcounts.is_null() {
        return None;
    }
    // SAFETY: the array has an entry per process of the communicator, at
    // least one (MPI contract).
    let count = unsafe { *recvcounts };
    // SAFETY: forwarded from the caller.
    unsafe { scan_direct(cx, sendbuf, recvbuf, count, datatype, op, comm) }
}

unsafe fn reduce_scatter_block<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (slot, n) = slot_size(rt, comm)?;
    let args = reduce_args(rt, sendbuf, recvbuf, datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { calls::reduce_scatter(rt, slot, &args, &vec![recvcount.get(); n]) }
}
collective!(MPI_Reduce_scatter_block / MPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block / MPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init / MPI_Reduce_scatter_block_init_c: reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: C, datatype: MPI_Datatype, op: MPI_Op) direct reduce_scatter_block_direct);

/// On a communicator of this process alone, as its scan
/// ([`board::direct::alone_ranked`]); elsewhere the schedule runs.
unsafe fn reduce_scatter_block_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    // SAFETY: forwarded from the caller.
    unsafe { scan_direct(cx, sendbuf, recvbuf, recvcount, datatype, op, comm) }
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
    let slot = comm_slot(comm)?;
    let args = reduce_args(rt, sendbuf, recvbuf, datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { calls::scan(rt, slot, &args, count.get(), false) }
}
collective!(MPI_Scan / MPI_Scan_c, MPI_Iscan / MPI_Iscan_c, MPI_Scan_init / MPI_Scan_init_c: scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op) direct scan_direct);

/// A scan of a predefined type and operation on a communicator of this
/// process alone ([`board::direct::alone_ranked`]); elsewhere the
/// schedule runs.
unsafe fn scan_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let args = (sendbuf, recvbuf, count.get(), datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { ranked_direct(cx, args, comm, false) }
}

/// [`board::direct::alone_ranked`] of a reduction's arguments (send and
/// receive buffers, count, datatype, operation) where they are of a
/// predefined type and operation.
///
/// # Safety
/// The buffers hold `count` elements of the datatype (MPI contract).
unsafe fn ranked_direct(
    cx: &mut impl Access,
    (sendbuf, recvbuf, count, datatype, op): (
        *const c_void,
        *mut c_void,
        MPI_Count,
        MPI_Datatype,
        MPI_Op,
    ),
    comm: MPI_Comm,
    exclusive: bool,
) -> Option<MpiResult<()>> {
    let slot = comm_slot(comm).ok()?;
    let f = flat_reduction(sendbuf, recvbuf, count, datatype, op)?;
    // SAFETY: forwarded from the caller; `f` names its buffers.
    unsafe { board::direct::alone_ranked(cx, slot, f, exclusive) }
}

unsafe fn exscan<C: Count>(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let slot = comm_slot(comm)?;
    let args = reduce_args(rt, sendbuf, recvbuf, datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { calls::scan(rt, slot, &args, count.get(), true) }
}
collective!(MPI_Exscan / MPI_Exscan_c, MPI_Iexscan / MPI_Iexscan_c, MPI_Exscan_init / MPI_Exscan_init_c: exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: C, datatype: MPI_Datatype, op: MPI_Op) direct exscan_direct);

/// As [`scan_direct`], for an exscan.
unsafe fn exscan_direct<C: Count>(
    cx: &mut impl Access,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let args = (sendbuf, recvbuf, count.get(), datatype, op);
    // SAFETY: forwarded from the caller.
    unsafe { ranked_direct(cx, args, comm, true) }
}
