//! Collectives on intercommunicators (MPI-4.1 §6.2.2): data moves from
//! one group to the other. Compiled from the same arguments as
//! [`super::calls`], which hands intercommunicators over to this module.
//!
//! The builder of an intercommunicator addresses the local group as ranks
//! `0..local` and the remote group from `local` up ([`Comm::everyone`]).
//! The algorithms are MPICH's for intercommunicators: the rooted calls
//! talk to the root directly (gather, scatter) or through the other
//! group's rank 0 (bcast, reduce); the all-to-all calls combine a phase
//! inside each group (the intracommunicator algorithms of [`algo`], run
//! on the local ranks) with an exchange between the two groups' rank 0;
//! allgather and alltoall send every block straight to its process.
//! `MPI_IN_PLACE` is not valid on an intercommunicator, and neither are
//! the scans (§6.11). A root is checked against the intercommunicator,
//! so it is never [`RootIs::Intra`] here; the rooted calls treat that
//! like a bystander of the root's group.
//!
//! [`Comm::everyone`]: crate::core::Comm::everyone

use super::calls::{self, Arg, Blocks, Reduce, in_place_error, packed, sink};
use super::sched::{Builder, PHASE_BITS, Span};
use super::{Schedule, algo, builder};
use crate::core::peer::RootIs;
use crate::core::{Class, MpiError, MpiResult, Runtime};

/// Phase of the messages between the groups: above every phase `algo`
/// uses (those between the members of one group).
const INTER: u16 = (1 << PHASE_BITS) - 1;

/// The sizes of the two groups of the intercommunicator a builder
/// compiles for.
#[derive(Clone, Copy, Debug)]
struct Groups {
    local: usize,
    remote: usize,
}

impl Groups {
    fn of(rt: &Runtime, slot: usize) -> MpiResult<Self> {
        let c = rt.comm(slot)?;
        Ok(Self {
            local: c.members.len(),
            remote: c.peers().len(),
        })
    }

    /// The builder rank of remote rank `r`.
    fn remote(self, r: usize) -> usize {
        self.local + r
    }

    /// Compile `f` for the local group alone.
    fn local<R>(self, b: &mut Builder, f: impl FnOnce(&mut Builder) -> R) -> R {
        let ranks: Vec<usize> = (0..self.local).collect();
        b.in_group(&ranks, f)
    }
}

/// The error of an intercommunicator call given `MPI_IN_PLACE`.
fn no_in_place() -> MpiError {
    in_place_error("on an intercommunicator (MPI-4.1 §6.2.2)")
}

/// A send buffer, which may not be `MPI_IN_PLACE` here.
fn send_arg(send: Option<&Arg>) -> MpiResult<&Arg> {
    send.ok_or_else(no_in_place)
}

/// `MPI_Barrier`: a barrier in each group, then the groups' rank 0
/// exchange a token and release their groups.
pub fn barrier(rt: &mut Runtime, slot: usize) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    let mut b = builder(rt, slot)?;
    let (out, inb) = (b.buf(0), b.buf(0));
    g.local(&mut b, algo::barrier);
    if b.rank == 0 {
        b.phase(INTER);
        b.exchange(g.remote(0), out, inb);
    }
    g.local(&mut b, |b| algo::bcast(b, inb, 0));
    Ok(b.finish())
}

/// `MPI_Bcast`: the root sends to the other group's rank 0, which
/// broadcasts in its group.
///
/// # Safety
/// As for [`calls::bcast`].
pub unsafe fn bcast(rt: &mut Runtime, slot: usize, root: RootIs, buf: &Arg) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    let b = match root {
        RootIs::Here => {
            // SAFETY: the root's buffer holds its elements.
            let data = unsafe { packed(&buf.buf()?) };
            let mut b = builder(rt, slot)?;
            let data = b.input(data);
            b.phase(INTER);
            b.send(g.remote(0), data);
            b
        }
        RootIs::Remote(r) => {
            // SAFETY: the buffer is this process's to receive into.
            let ub = unsafe { buf.buf()? };
            let mut b = builder(rt, slot)?;
            let data = b.buf(ub.len);
            if b.rank == 0 {
                b.phase(INTER);
                b.recv(g.remote(r), data);
            }
            g.local(&mut b, |b| algo::bcast(b, data, 0));
            let k = b.sink(sink(&ub));
            b.unpack(data, k);
            b
        }
        RootIs::Idle | RootIs::Intra(_) => builder(rt, slot)?,
    };
    Ok(b.finish())
}

/// `MPI_Reduce`: the other group reduces to its rank 0, which sends the
/// result to the root.
///
/// # Safety
/// As for [`calls::reduce`].
pub unsafe fn reduce(
    rt: &mut Runtime,
    slot: usize,
    root: RootIs,
    args: &Reduce,
    count: i64,
) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    match root {
        RootIs::Here => {
            // SAFETY: the root's receive buffer holds `count` elements.
            let out = unsafe { args.output(count)? };
            let mut b = builder(rt, slot)?;
            let acc = b.buf(out.len);
            b.phase(INTER);
            b.recv(g.remote(0), acc);
            Ok(calls::unpack_into(b, acc, Some(sink(&out))))
        }
        RootIs::Remote(r) => {
            // SAFETY: the send buffer holds `count` elements.
            let (red, input) = unsafe { args.input(count, false, false)? };
            let mut b = builder(rt, slot)?;
            b.set_op(red);
            let acc = b.input(input);
            g.local(&mut b, |b| algo::reduce(b, acc, 0));
            if b.rank == 0 {
                b.phase(INTER);
                b.send(g.remote(r), acc);
            }
            Ok(b.finish())
        }
        RootIs::Idle | RootIs::Intra(_) => Ok(builder(rt, slot)?.finish()),
    }
}

/// The reduction of the remote group's `input`, in `len` bytes at every
/// member of the local group: each group reduces to its rank 0, which
/// trade results and broadcast what they received.
fn exchange_reductions(b: &mut Builder, g: Groups, input: Span) -> Span {
    let result = b.buf(input.len);
    g.local(b, |b| algo::reduce(b, input, 0));
    if b.rank == 0 {
        b.phase(INTER);
        b.exchange(g.remote(0), input, result);
    }
    g.local(b, |b| algo::bcast(b, result, 0));
    result
}

/// The reduction of everyone's `acc` (elements of `elem` bytes), in
/// `acc` at every process of both groups of the intercommunicator whose
/// local group has `local` processes, for a commutative operation (the
/// context-id agreement): an allreduce in each group, the rank 0s trade
/// their results and broadcast what they received, and each process
/// combines the two.
pub fn allreduce_both(b: &mut Builder, local: usize, acc: Span, elem: usize) {
    let g = Groups { local, remote: 0 };
    let other = b.buf(acc.len);
    g.local(b, |b| algo::allreduce(b, acc, elem));
    if b.rank == 0 {
        b.phase(INTER);
        b.exchange(g.remote(0), acc, other);
    }
    g.local(b, |b| algo::bcast(b, other, 0));
    b.reduce(other, acc, true);
}

/// `MPI_Allreduce`: each group gets the reduction of the other's data.
///
/// # Safety
/// As for [`calls::allreduce`].
pub unsafe fn allreduce(
    rt: &mut Runtime,
    slot: usize,
    args: &Reduce,
    count: i64,
) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    // SAFETY: forwarded from the caller.
    let ((red, input), out) = unsafe { (args.input(count, false, true)?, args.output(count)?) };
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    let input = b.input(input);
    let result = exchange_reductions(&mut b, g, input);
    Ok(calls::unpack_into(b, result, Some(sink(&out))))
}

/// `MPI_Reduce_scatter` and `_block`: the reduction of the other
/// group's vectors, scattered over this group by `counts` (one per local
/// rank; both groups' vectors have the same length).
///
/// # Safety
/// As for [`calls::reduce_scatter`].
pub unsafe fn reduce_scatter(
    rt: &mut Runtime,
    slot: usize,
    args: &Reduce,
    counts: &[i64],
) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    let all = calls::total(counts)?;
    // SAFETY: forwarded from the caller: `all` elements of input.
    let (red, input) = unsafe { args.input(all, false, true)? };
    let size = args.elem_size()?;
    let me = rt.comm(slot)?.rank as usize;
    // SAFETY: the receive buffer holds this rank's count.
    let out = unsafe { args.output(counts[me])? };
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    let input = b.input(input);
    let result = b.buf(input.len);
    g.local(&mut b, |b| algo::reduce(b, input, 0));
    if b.rank == 0 {
        b.phase(INTER);
        b.exchange(g.remote(0), input, result);
    }
    let parts = result.split(counts.iter().map(|&c| c as usize * size));
    let own = if me == 0 { parts[0] } else { b.buf(out.len) };
    g.local(&mut b, |b| algo::scatterv(b, 0, own, &parts));
    Ok(calls::unpack_into(b, own, Some(sink(&out))))
}

/// `MPI_Gather` and `MPI_Gatherv`: the root receives every block of the
/// other group straight from its sender.
///
/// # Safety
/// As for [`calls::gather`].
pub unsafe fn gather(
    rt: &mut Runtime,
    slot: usize,
    root: RootIs,
    send: Option<&Arg>,
    recv: impl FnOnce(usize) -> MpiResult<Blocks>,
) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    match root {
        RootIs::Here => {
            // SAFETY: the root's receive blocks, one per remote rank.
            let outs = unsafe { recv(g.remote)?.bufs()? };
            let mut b = builder(rt, slot)?;
            let parts = calls::blocks_for(&mut b, &outs);
            b.phase(INTER);
            for (r, &part) in parts.iter().enumerate() {
                b.recv(g.remote(r), part);
            }
            calls::unpack_all(&mut b, &parts, &outs, None);
            Ok(b.finish())
        }
        RootIs::Remote(root) => {
            // SAFETY: the send buffer holds its elements.
            let data = unsafe { packed(&send_arg(send)?.buf()?) };
            let mut b = builder(rt, slot)?;
            let data = b.input(data);
            b.phase(INTER);
            b.send(g.remote(root), data);
            Ok(b.finish())
        }
        RootIs::Idle | RootIs::Intra(_) => Ok(builder(rt, slot)?.finish()),
    }
}

/// `MPI_Scatter` and `MPI_Scatterv`: the root sends every block of the
/// other group straight to its receiver.
///
/// # Safety
/// As for [`calls::scatter`].
pub unsafe fn scatter(
    rt: &mut Runtime,
    slot: usize,
    root: RootIs,
    send: impl FnOnce(usize) -> MpiResult<Blocks>,
    recv: Option<&Arg>,
) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    match root {
        RootIs::Here => {
            // SAFETY: the root's send blocks, one per remote rank.
            let ins = unsafe { send(g.remote)?.bufs()? };
            let mut b = builder(rt, slot)?;
            b.phase(INTER);
            for (r, ub) in ins.iter().enumerate() {
                // SAFETY: the root's send blocks are readable.
                let data = b.input(unsafe { packed(ub) });
                b.send(g.remote(r), data);
            }
            Ok(b.finish())
        }
        RootIs::Remote(root) => {
            // SAFETY: the receive buffer holds its elements.
            let out = unsafe { recv.ok_or_else(no_in_place)?.buf()? };
            let mut b = builder(rt, slot)?;
            let data = b.buf(out.len);
            b.phase(INTER);
            b.recv(g.remote(root), data);
            Ok(calls::unpack_into(b, data, Some(sink(&out))))
        }
        RootIs::Idle | RootIs::Intra(_) => Ok(builder(rt, slot)?.finish()),
    }
}

/// `MPI_Allgather` and `MPI_Allgatherv`: every process sends its data to
/// each process of the other group, whose blocks (one per remote rank)
/// it receives.
///
/// # Safety
/// As for [`calls::allgather`].
pub unsafe fn allgather(
    rt: &mut Runtime,
    slot: usize,
    send: Option<&Arg>,
    recv: &Blocks,
) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    // SAFETY: the caller's buffers (MPI contract).
    let (data, outs) = unsafe { (packed(&send_arg(send)?.buf()?), recv.bufs()?) };
    let mut b = builder(rt, slot)?;
    let data = b.input(data);
    let parts = calls::blocks_for(&mut b, &outs);
    b.phase(INTER);
    for (r, &part) in parts.iter().enumerate() {
        b.send(g.remote(r), data);
        b.recv(g.remote(r), part);
    }
    calls::unpack_all(&mut b, &parts, &outs, None);
    Ok(b.finish())
}

/// `MPI_Alltoall`, `MPI_Alltoallv` and `MPI_Alltoallw`: block `r` of the
/// send buffer goes to remote rank `r`, block `r` of the receive buffer
/// comes from it.
///
/// # Safety
/// As for [`calls::alltoall`].
pub unsafe fn alltoall(
    rt: &mut Runtime,
    slot: usize,
    send: Option<&Blocks>,
    recv: &Blocks,
) -> MpiResult<Schedule> {
    let g = Groups::of(rt, slot)?;
    let send = send.ok_or_else(no_in_place)?;
    // SAFETY: the caller's blocks (MPI contract); send blocks are
    // readable.
    let (ins, outs) = unsafe {
        let ins: Vec<Vec<u8>> = send.bufs()?.iter().map(|ub| packed(ub)).collect();
        (ins, recv.bufs()?)
    };
    let mut b = builder(rt, slot)?;
    let parts = calls::blocks_for(&mut b, &outs);
    b.phase(INTER);
    for (r, (data, &part)) in ins.into_iter().zip(&parts).enumerate() {
        let data = b.input(data);
        b.send(g.remote(r), data);
        b.recv(g.remote(r), part);
    }
    calls::unpack_all(&mut b, &parts, &outs, None);
    Ok(b.finish())
}

/// The scans have no meaning on an intercommunicator (§6.11).
pub fn no_scan() -> MpiError {
    MpiError::new(
        Class::Comm,
        "MPI_Scan and MPI_Exscan need an intracommunicator",
    )
}
