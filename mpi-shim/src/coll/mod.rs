//! Collective operations (MPI-4.0 chapter 6) over a communicator's
//! collective context, blocking and nonblocking alike.
//!
//! A collective call is compiled, at the calling process, into a
//! [`Schedule`] ([`sched`]): rounds of engine sends and receives on
//! buffers the schedule owns, and local steps (reduce, copy, unpack into
//! the application's memory). A nonblocking collective is a request
//! holding its schedule, advanced whenever the library makes progress; a
//! blocking collective starts the same schedule and waits for it, so each
//! algorithm ([`algo`]) has one implementation.
//!
//! Collective calls are numbered per communicator (all members call them
//! in the same order); the number goes into the engine tag, so several
//! nonblocking collectives outstanding on one communicator never mix
//! their messages.
//!
//! Not built: node-aware (hierarchical) variants for communicators that
//! span several nodes, since the engine has no inter-node transport yet.

pub mod algo;
pub mod calls;
pub mod hier;
pub mod sched;

pub use sched::{Builder, Schedule, Sink, Span};

use std::sync::Arc;

use crate::core::datatype::Datatype;
use crate::core::{MpiResult, Runtime};
use crate::ops::{Elem, Op, Reduction};

/// Where the algorithm families switch, in bytes of one process's data.
///
/// MPICH's defaults (12 KiB for broadcast, 2 KiB for allreduce, 80 KiB
/// for allgather) are tuned for networks. These values are a first guess
/// for shared memory, not yet measured on this engine: messages of a few
/// KiB run the short-message algorithms and messages of a MiB the long
/// ones. Gather and scatter always use binomial trees, their `v` forms
/// and all-to-all have one algorithm each.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// Broadcast: binomial tree below, scatter + ring allgather above.
    pub bcast_large: usize,
    /// Allreduce: recursive doubling below, Rabenseifner above.
    pub allreduce_large: usize,
    /// Allgather (total bytes): recursive doubling below (power-of-two
    /// sizes), ring above.
    pub allgather_large: usize,
}

pub const TUNING: Tuning = Tuning {
    bcast_large: 64 << 10,
    allreduce_large: 64 << 10,
    allgather_large: 64 << 10,
};

/// A builder for the next collective on communicator `slot`, told the
/// node of each member so that collectives across nodes run node-aware
/// ([`hier`]).
pub fn builder(rt: &mut Runtime, slot: usize) -> MpiResult<Builder> {
    let members = rt.comm(slot)?.members.clone();
    let boot = rt.ep.bootstrap();
    let nodes: Vec<u32> = members.iter().map(|&p| boot.node_of(p)).collect();
    let mut b = Builder::new(rt.comm_mut(slot)?, slot);
    b.set_nodes(nodes);
    Ok(b)
}

/// Run a schedule to its end (a blocking collective).
pub fn run(rt: &mut Runtime, s: Schedule) -> MpiResult<()> {
    rt.wait_coll(Box::new(s)).map(drop)
}

/// A blocking barrier on communicator `slot` (used by `MPI_Finalize`).
pub fn barrier(rt: &mut Runtime, slot: usize) -> MpiResult<()> {
    let mut b = builder(rt, slot)?;
    algo::barrier(&mut b);
    run(rt, b.finish())
}

/// Allreduce with `MPI_MAX` of one `u32` over communicator `slot` (the
/// agreement on a new communicator's context id).
pub fn allreduce_max_u32(rt: &mut Runtime, slot: usize, v: &mut [u8; 4]) -> MpiResult<()> {
    let u32_type = Datatype::basic(4, Elem::U32);
    let op = Reduction::predefined(Op::Max, &u32_type)?;
    let mut b = builder(rt, slot)?;
    b.set_op(op);
    let acc = b.input(v.to_vec());
    algo::allreduce(&mut b, acc, 4);
    let sink = b.sink(Sink {
        dst: v.as_mut_ptr(),
        count: 1,
        dt: Arc::new(u32_type),
    });
    b.unpack(acc, sink);
    run(rt, b.finish())
}

#[cfg(test)]
mod tests;
