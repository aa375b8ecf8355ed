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
//! A communicator whose members all run on one node runs its
//! collectives on a flag board in shared memory ([`board`]); one that
//! spans nodes runs node-aware algorithms over messages ([`hier`]).

pub mod algo;
pub mod board;
pub mod calls;
pub mod hier;
pub mod inter;
pub mod sched;

pub use sched::{Builder, Schedule, Sink, Span};

use std::sync::Arc;

use crate::core::datatype::Datatype;
use crate::core::{MpiResult, Runtime};
use crate::ops::{Elem, Op, Reduction};
use board::{Boards, Setup};

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
/// node of each member of an intracommunicator so that collectives
/// across nodes run node-aware ([`hier`]), and given the communicator's
/// flag board, or its node's, if it has one ([`board`]). The first
/// collective of a communicator decides which boards it gets (every
/// member of a node decides alike) and, if any, starts with the board's
/// setup. The algorithm goes in through [`Builder::either`], which
/// compiles it on messages too while the setup may still fail.
pub fn builder(rt: &mut Runtime, slot: usize) -> MpiResult<Builder> {
    let c = rt.comm(slot)?;
    let decided = c.board.clone();
    // A communicator with a board of its own lies on one node: no layout
    // to tell.
    let whole = matches!(decided, Some(Boards::Whole(_)));
    let nodes: Option<Vec<u32>> =
        (!c.is_inter() && !whole).then(|| c.members.iter().map(|&p| rt.ep.node_of(p)).collect());
    let (boards, fresh) = match decided {
        Some(boards) => (boards, false),
        None => {
            let boards = nodes
                .as_ref()
                .map_or(Boards::None, |nodes| new_boards(rt, slot, nodes));
            rt.comm_mut(slot)?.board = Some(boards.clone());
            (boards, true)
        }
    };
    let mut b = Builder::new(rt.comm_mut(slot)?, slot);
    if let Some(nodes) = nodes {
        b.set_nodes(nodes);
    }
    let setup = match &boards {
        Boards::Whole(team) | Boards::Node { team, .. } => team.setup(),
        Boards::None => Setup::Messages,
    };
    match boards {
        _ if setup == Setup::Abandoned => return Err(board::abandoned()),
        // A board whose setup failed: messages, at every member alike.
        _ if setup == Setup::Messages => {}
        Boards::None => {}
        Boards::Whole(team) => {
            b.set_team(team.clone());
            if fresh {
                board::algo::setup(&mut b, &team);
            }
        }
        Boards::Node { locals, team } => {
            b.set_node_team(locals.clone(), team.clone());
            if fresh {
                b.in_group(&locals, |b| board::algo::setup(b, &team));
            }
        }
    }
    Ok(b)
}

/// The flag boards of intracommunicator `slot`, whose members run on
/// `nodes`: one for the members on this node, if there are 2 to
/// [`board::MAX_MEMBERS`] of them and all of them take part in flag
/// boards ([`shm_engine::Endpoint::boards_among`]: their `TESSEL_COLL` is
/// not `p2p` and they can map their peers' heaps). It is the
/// communicator's own if every member runs here, else the node's share of
/// it. Every member of a node answers alike.
fn new_boards(rt: &Runtime, slot: usize, nodes: &[u32]) -> Boards {
    let Ok(c) = rt.comm(slot) else {
        return Boards::None;
    };
    let me = c.rank as usize;
    let locals = hier::node_ranks(nodes, me);
    if !(2..=board::MAX_MEMBERS).contains(&locals.len()) {
        return Boards::None;
    }
    let ids: Vec<u32> = locals.iter().map(|&r| c.members[r]).collect();
    if !rt.ep.boards_among(&ids) {
        return Boards::None;
    }
    let mine = locals
        .iter()
        .position(|&r| r == me)
        .expect("a node holds its caller");
    let cpus = rt.ep.cpus_of(&ids);
    let places: Vec<_> = ids.iter().map(|&id| rt.ep.place(id)).collect();
    let team = board::Team::new(ids, mine, cpus, board::Tiers::of(&places));
    if locals.len() == nodes.len() {
        Boards::Whole(team)
    } else {
        Boards::Node {
            locals: locals.into(),
            team,
        }
    }
}

/// Run a schedule to its end (a blocking collective).
pub fn run(rt: &mut Runtime, s: Schedule) -> MpiResult<()> {
    rt.wait_coll(Box::new(s)).map(drop)
}

/// A blocking barrier on communicator `slot` (used by `MPI_Finalize`
/// and `MPI_Comm_disconnect`).
pub fn barrier(rt: &mut Runtime, slot: usize) -> MpiResult<()> {
    let s = calls::barrier(rt, slot)?;
    run(rt, s)
}

/// The context-id agreement of a duplicate of communicator `slot`
/// (`MPI_Comm_idup`, and `MPI_Comm_dup` waits for it): the largest `next`
/// (each process's next free id) of every process, of both groups of an
/// intercommunicator, for communicator slot `new` once it ends.
pub fn ctx_agreement(rt: &mut Runtime, slot: usize, next: u32, new: usize) -> MpiResult<Schedule> {
    let u32_type = Datatype::basic(4, Elem::U32);
    let op = Reduction::predefined(Op::Max, &u32_type)?;
    let c = rt.comm(slot)?;
    let local = c.is_inter().then_some(c.members.len());
    let mut b = builder(rt, slot)?;
    b.set_op(op);
    let acc = b.input(next.to_ne_bytes().to_vec());
    match local {
        Some(local) => inter::allreduce_both(&mut b, local, acc, 4),
        None => b.either(|b| algo::allreduce(b, acc, 4)),
    }
    let mut s = b.finish();
    s.set_activation(new, acc);
    Ok(s)
}

/// Allreduce with `MPI_MAX` of one `u32` over communicator `slot` (the
/// agreement on a new communicator's context id).
pub fn allreduce_max_u32(rt: &mut Runtime, slot: usize, v: &mut [u8; 4]) -> MpiResult<()> {
    let u32_type = Datatype::basic(4, Elem::U32);
    let op = Reduction::predefined(Op::Max, &u32_type)?;
    let mut b = builder(rt, slot)?;
    b.set_op(op);
    let acc = b.input(v.to_vec());
    b.either(|b| algo::allreduce(b, acc, 4));
    let sink = b.sink(Sink {
        dst: v.as_mut_ptr(),
        count: 1,
        dt: Arc::new(u32_type).into(),
    });
    b.unpack(acc, sink);
    run(rt, b.finish())
}

#[cfg(test)]
mod tests;
