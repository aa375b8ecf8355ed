//! The collective calls (MPI-4.1 §6.3–§6.11) compiled into schedules from
//! their arguments, once an entry layer has read them: buffers as [`Arg`]
//! and [`Blocks`], `MPI_IN_PLACE` as a missing buffer, datatypes and
//! operations resolved (or the error their handle gives, which matters
//! only where the argument is significant), and the neighbourhood
//! collectives (§8.6). One compiler serves the blocking, nonblocking and
//! persistent form of each call.

use std::ffi::c_void;

use super::algo::Edge;
use super::{Builder, Schedule, Sink, Span, algo, builder, inter};
use crate::core::buffer::{UserBuf, check_count};
use crate::core::datatype::TypeRef;
use crate::core::peer::{Rank, Root, RootIs};
use crate::core::topo::Neighbors;
use crate::core::{Class, MpiError, MpiResult, Runtime};
use crate::ops::Reduction;

/// A datatype argument: the datatype, or the error its handle gives.
pub type TypeArg = MpiResult<TypeRef>;

/// A buffer argument: `count` elements of a datatype at `ptr`, checked
/// where the call makes it significant.
#[derive(Clone, Debug)]
pub struct Arg {
    pub ptr: *const c_void,
    pub count: i64,
    pub dt: TypeArg,
}

impl Arg {
    /// The buffer, checked ([`UserBuf::new`]).
    ///
    /// # Safety
    /// The argument addresses `count` elements (MPI contract).
    pub(super) unsafe fn buf(&self) -> MpiResult<UserBuf> {
        // SAFETY: forwarded from the caller.
        unsafe { self.buf_at(0) }
    }

    /// The buffer `displ` bytes further.
    ///
    /// # Safety
    /// As for [`Arg::buf`], there.
    #[inline]
    pub(crate) unsafe fn buf_at(&self, displ: isize) -> MpiResult<UserBuf> {
        let count = check_count(self.count)?;
        let dt = self.dt.clone()?;
        let at = self
            .ptr
            .cast::<u8>()
            .wrapping_offset(displ)
            .cast::<c_void>();
        // SAFETY: the caller's promise.
        unsafe { UserBuf::new(at, count, dt) }
    }
}

/// Blocks of one buffer, one per rank: `counts[r]` elements of
/// `types[r]` at `displs[r]` bytes from `ptr`.
#[derive(Clone, Debug)]
pub struct Blocks {
    pub ptr: *const c_void,
    pub counts: Vec<i64>,
    pub displs: Vec<isize>,
    pub types: Vec<TypeArg>,
}

impl Blocks {
    /// Blocks of one datatype whose displacements count its extents (the
    /// `v` collectives).
    pub fn typed(
        ptr: *const c_void,
        counts: Vec<i64>,
        displs: &[isize],
        dt: TypeArg,
    ) -> MpiResult<Self> {
        let extent = dt.as_ref().map_err(Clone::clone)?.extent;
        Ok(Self {
            ptr,
            types: vec![dt; counts.len()],
            displs: displs.iter().map(|&d| d.wrapping_mul(extent)).collect(),
            counts,
        })
    }

    /// `n` blocks of `count` elements, one after the other (the regular
    /// collectives as their `v` forms).
    pub fn regular(ptr: *const c_void, count: i64, n: usize, dt: TypeArg) -> MpiResult<Self> {
        let displs: Vec<isize> = (0..n as isize).map(|r| r * count as isize).collect();
        Self::typed(ptr, vec![count; n], &displs, dt)
    }

    /// # Safety
    /// The blocks lie in the application's buffer (MPI contract).
    pub(super) unsafe fn bufs(&self) -> MpiResult<Vec<UserBuf>> {
        (0..self.counts.len())
            .map(|r| {
                let arg = Arg {
                    ptr: self.ptr,
                    count: self.counts[r],
                    dt: self.types[r].clone(),
                };
                // SAFETY: forwarded from the caller.
                unsafe { arg.buf_at(self.displs[r]) }
            })
            .collect()
    }
}

/// The arguments of a reduction: the send and receive buffers (`None`
/// for `MPI_IN_PLACE`, which only the send buffer may be), their datatype
/// and the operation bound to it.
#[derive(Clone, Debug)]
pub struct Reduce {
    pub send: Option<*const c_void>,
    pub recv: Option<*mut c_void>,
    pub dt: TypeArg,
    pub op: MpiResult<Reduction>,
}

impl Reduce {
    /// The operation and this process's packed contribution of `count`
    /// elements (from the receive buffer with `MPI_IN_PLACE`, where
    /// `in_place_ok`). The receive buffer must not alias the send buffer
    /// where it is significant (`receives`).
    ///
    /// # Safety
    /// The input holds `count` elements (MPI contract).
    pub(super) unsafe fn input(
        &self,
        count: i64,
        in_place_ok: bool,
        receives: bool,
    ) -> MpiResult<(Reduction, Vec<u8>)> {
        // SAFETY: forwarded from the caller.
        let (red, ub) = unsafe { self.source(count, in_place_ok, receives)? };
        // SAFETY: as above.
        Ok((red, unsafe { packed(&ub) }))
    }

    /// As [`Reduce::input`], but the contribution's buffer itself rather
    /// than a packed copy.
    ///
    /// # Safety
    /// As for [`Reduce::input`].
    pub(super) unsafe fn source(
        &self,
        count: i64,
        in_place_ok: bool,
        receives: bool,
    ) -> MpiResult<(Reduction, UserBuf)> {
        let red = self.op.clone()?;
        let src = match self.send {
            None if !in_place_ok => return Err(in_place_error("here (MPI-4.1 §6.9.1)")),
            None => self.recv()?.cast_const(),
            Some(s)
                if receives && count > 0 && Some(s) == self.recv.map(<*mut c_void>::cast_const) =>
            {
                return Err(MpiError::new(
                    Class::Buffer,
                    "send and receive buffers alias (use MPI_IN_PLACE)",
                ));
            }
            Some(s) => s,
        };
        // SAFETY: `count` elements at the source (MPI contract).
        let ub = unsafe { self.buf(src, count)? };
        Ok((red, ub))
    }

    /// The receive buffer of `count` elements.
    ///
    /// # Safety
    /// As for [`Arg::buf`].
    pub(super) unsafe fn output(&self, count: i64) -> MpiResult<UserBuf> {
        // SAFETY: forwarded from the caller.
        unsafe { self.buf(self.recv()?, count) }
    }

    fn recv(&self) -> MpiResult<*mut c_void> {
        self.recv
            .ok_or_else(|| in_place_error("as a receive buffer"))
    }

    /// `count` elements of the datatype at `ptr`, checked as [`Arg::buf`]
    /// checks (one reference to the datatype taken, not two: these counts
    /// are atomic, and the small reductions feel them).
    ///
    /// # Safety
    /// As for [`Arg::buf`].
    unsafe fn buf(&self, ptr: *const c_void, count: i64) -> MpiResult<UserBuf> {
        let count = check_count(count)?;
        let dt = self.dt.clone()?;
        // SAFETY: forwarded from the caller.
        unsafe { UserBuf::new(ptr, count, dt) }
    }

    /// Size in bytes of one element.
    pub(super) fn elem_size(&self) -> MpiResult<usize> {
        Ok(self.dt.as_ref().map_err(Clone::clone)?.size)
    }
}

pub(super) fn in_place_error(what: &str) -> MpiError {
    MpiError::new(Class::Buffer, format!("MPI_IN_PLACE is not valid {what}"))
}

/// The data of a send buffer, packed.
///
/// # Safety
/// The buffer is readable.
pub(crate) unsafe fn packed(ub: &UserBuf) -> Vec<u8> {
    let mut v = crate::core::pool::take(ub.len);
    // SAFETY: a send buffer is readable (MPI contract).
    unsafe { pack_into(ub, &mut v) };
    v
}

/// Pack `ub`'s data into `out` (`ub.len` bytes).
///
/// # Safety
/// The buffer is readable (MPI contract).
unsafe fn pack_into(ub: &UserBuf, out: &mut [u8]) {
    if ub.len == 0 {
        return;
    }
    if ub.dt.is_contiguous() {
        // SAFETY: `len` contiguous readable bytes (the caller's promise).
        shm_engine::copy::slice(out, unsafe { std::slice::from_raw_parts(ub.ptr, ub.len) });
    } else {
        // SAFETY: `count` elements of `dt` at `ptr` (the caller's promise).
        unsafe { ub.dt.pack(ub.ptr, ub.count, out) };
    }
}

/// The blocks `ins` packed end to end (those `skip` says, empty), in a
/// buffer reused through `core::pool`.
///
/// # Safety
/// The blocks are readable (MPI contract).
unsafe fn packed_blocks(ins: &[UserBuf], skip: impl Fn(usize) -> bool) -> Vec<u8> {
    let total = (0..ins.len())
        .filter(|&r| !skip(r))
        .map(|r| ins[r].len)
        .sum();
    let mut data = crate::core::pool::take(total);
    let mut at = 0;
    for (r, ub) in ins.iter().enumerate() {
        if !skip(r) {
            // SAFETY: forwarded from the caller.
            unsafe { pack_into(ub, &mut data[at..at + ub.len]) };
            at += ub.len;
        }
    }
    data
}

/// Where a receive buffer's data goes when the schedule ends.
pub(crate) fn sink(ub: &UserBuf) -> Sink {
    Sink {
        dst: ub.ptr,
        count: ub.count,
        dt: ub.dt.clone(),
    }
}

/// A buffer of the schedule with a block for each of `outs`.
pub(super) fn blocks_for(b: &mut Builder, outs: &[UserBuf]) -> Vec<Span> {
    let all = b.buf(outs.iter().map(|u| u.len).sum());
    all.split(outs.iter().map(|u| u.len))
}

/// Unpack block `parts[r]` into `outs[r]` at the end, for every `r` but
/// `skip`.
pub(super) fn unpack_all(b: &mut Builder, parts: &[Span], outs: &[UserBuf], skip: Option<usize>) {
    for (r, ub) in outs.iter().enumerate() {
        if Some(r) != skip {
            unpack_to(b, parts[r], sink(ub));
        }
    }
}

/// Unpack `src` into `out` at the end.
fn unpack_to(b: &mut Builder, src: Span, out: Sink) {
    let k = b.sink(out);
    b.unpack(src, k);
}

/// This process's rank in communicator `slot`, and the size.
fn rank_size(rt: &Runtime, slot: usize) -> MpiResult<(usize, usize)> {
    let c = rt.comm(slot)?;
    Ok((c.rank as usize, c.size() as usize))
}

/// The checked root of a collective on intercommunicator `slot`, `None`
/// on an intracommunicator.
fn inter_root(rt: &Runtime, slot: usize, root: Root) -> MpiResult<Option<RootIs>> {
    let c = rt.comm(slot)?;
    Ok(if c.is_inter() {
        Some(c.check_root(root)?)
    } else {
        None
    })
}

/// The rank of checked root `root` of intracommunicator `slot`, this
/// process's, and the size.
#[inline]
pub(super) fn root_and_me(
    rt: &Runtime,
    slot: usize,
    root: Root,
) -> MpiResult<(usize, usize, usize)> {
    let c = rt.comm(slot)?;
    let RootIs::Intra(r) = c.check_root(root)? else {
        unreachable!("an intracommunicator's root is one of its ranks")
    };
    Ok((r, c.rank as usize, c.size() as usize))
}

/// Whether communicator `slot` is an intercommunicator.
fn is_inter(rt: &Runtime, slot: usize) -> MpiResult<bool> {
    Ok(rt.comm(slot)?.is_inter())
}

/// `MPI_IN_PLACE` in a rooted call is the root's alone (MPI-4.1 §6.5,
/// §6.6).
fn in_place_at_root(in_place: bool, me: usize, root: usize) -> MpiResult<()> {
    if in_place && me != root {
        return Err(in_place_error("at a process other than the root"));
    }
    Ok(())
}

/// A count summed over ranks.
pub(super) fn total(counts: &[i64]) -> MpiResult<i64> {
    counts.iter().try_fold(0i64, |acc, &c| {
        if c < 0 {
            return Err(MpiError::new(Class::Count, format!("negative count {c}")));
        }
        acc.checked_add(c)
            .ok_or_else(|| MpiError::new(Class::Count, "count overflows"))
    })
}

/// Finish a schedule whose result `acc` goes to `out`.
pub(super) fn unpack_into(mut b: Builder, acc: super::Span, out: Option<Sink>) -> Schedule {
    if let Some(out) = out {
        unpack_to(&mut b, acc, out);
    }
    b.finish()
}

/// `MPI_Barrier` (§6.3).
pub fn barrier(rt: &mut Runtime, slot: usize) -> MpiResult<Schedule> {
    if is_inter(rt, slot)? {
        return inter::barrier(rt, slot);
    }
    let mut b = builder(rt, slot)?;
    b.either(algo::barrier);
    Ok(b.finish())
}

/// `MPI_Bcast` (§6.4).
///
/// # Safety
/// The buffer addresses its elements (MPI contract): readable at the
/// root, writable elsewhere until the schedule ends.
pub unsafe fn bcast(rt: &mut Runtime, slot: usize, root: Root, buf: &Arg) -> MpiResult<Schedule> {
    if let Some(root) = inter_root(rt, slot, root)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::bcast(rt, slot, root, buf) };
    }
    let (root, me, _) = root_and_me(rt, slot, root)?;
    // SAFETY: forwarded from the caller.
    let ub = unsafe { buf.buf()? };
    let data = if me == root {
        // SAFETY: the root's buffer is readable.
        unsafe { packed(&ub) }
    } else {
        crate::core::pool::take(ub.len)
    };
    let mut b = builder(rt, slot)?;
    let data = b.input(data);
    b.either(|b| algo::bcast(b, data, root));
    let out = (me != root).then(|| sink(&ub));
    Ok(unpack_into(b, data, out))
}

/// `MPI_Reduce` (§6.9.1): `MPI_IN_PLACE` and the receive buffer are the
/// root's.
///
/// # Safety
/// The buffers address `count` elements (MPI contract).
pub unsafe fn reduce(
    rt: &mut Runtime,
    slot: usize,
    root: Root,
    args: &Reduce,
    count: i64,
) -> MpiResult<Schedule> {
    if let Some(root) = inter_root(rt, slot, root)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::reduce(rt, slot, root, args, count) };
    }
    let (root, me, _) = root_and_me(rt, slot, root)?;
    let at_root = me == root;
    // SAFETY: forwarded from the caller.
    let (red, input) = unsafe { args.input(count, at_root, at_root)? };
    let out = if at_root {
        // SAFETY: the root's receive buffer holds `count` elements.
        Some(sink(&unsafe { args.output(count)? }))
    } else {
        None
    };
    let elem = args.elem_size()?;
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    b.set_elem(elem);
    let acc = b.input(input);
    b.either(|b| algo::reduce(b, acc, root));
    Ok(unpack_into(b, acc, out))
}

/// `MPI_Allreduce` (§6.9.6).
///
/// # Safety
/// As for [`reduce`].
pub unsafe fn allreduce(
    rt: &mut Runtime,
    slot: usize,
    args: &Reduce,
    count: i64,
) -> MpiResult<Schedule> {
    if is_inter(rt, slot)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::allreduce(rt, slot, args, count) };
    }
    // SAFETY: forwarded from the caller.
    let (red, input) = unsafe { args.input(count, true, true)? };
    // SAFETY: the receive buffer holds `count` elements.
    let out = sink(&unsafe { args.output(count)? });
    let elem = args.elem_size()?;
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    let acc = b.input(input);
    b.either(|b| algo::allreduce(b, acc, elem));
    Ok(unpack_into(b, acc, Some(out)))
}

/// `MPI_Gather` and `MPI_Gatherv` (§6.5): `send` is `None` for
/// `MPI_IN_PLACE` (the root's only); `recv` gives the receive blocks,
/// read at the root only, given the communicator's size; `regular`
/// (gather) blocks all have one size, which the binomial tree needs.
///
/// # Safety
/// The buffers address their elements (MPI contract).
pub unsafe fn gather(
    rt: &mut Runtime,
    slot: usize,
    root: Root,
    send: Option<&Arg>,
    recv: impl FnOnce(usize) -> MpiResult<Blocks>,
    regular: bool,
) -> MpiResult<Schedule> {
    if let Some(root) = inter_root(rt, slot, root)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::gather(rt, slot, root, send, recv) };
    }
    let (root, me, n) = root_and_me(rt, slot, root)?;
    let in_place = send.is_none();
    in_place_at_root(in_place, me, root)?;
    let own = match send {
        None => Vec::new(),
        // SAFETY: the send buffer holds its elements.
        Some(s) => unsafe { packed(&s.buf()?) },
    };
    let outs = if me == root {
        // SAFETY: the root's receive blocks (MPI contract).
        unsafe { recv(n)?.bufs()? }
    } else {
        Vec::new()
    };
    let mut b = builder(rt, slot)?;
    let blk = outs.first().map_or(own.len(), |u| u.len);
    let own = b.input(own);
    // The blocks land where the variant puts them: unpacked within it.
    b.either(|b| {
        let parts = if regular {
            algo::gather(b, root, own, blk)
        } else {
            let parts = blocks_for(b, &outs);
            algo::gatherv(b, root, own, &parts);
            parts
        };
        for (r, ub) in outs.iter().enumerate() {
            if r == me && in_place {
                continue;
            }
            unpack_to(b, if r == me { own } else { parts[r] }, sink(ub));
        }
    });
    Ok(b.finish())
}

/// `MPI_Scatter` and `MPI_Scatterv` (§6.6): `send` gives the send blocks,
/// read at the root only; `recv` is `None` for `MPI_IN_PLACE` (the
/// root's only); `regular` as for [`gather`].
///
/// # Safety
/// The buffers address their elements (MPI contract).
pub unsafe fn scatter(
    rt: &mut Runtime,
    slot: usize,
    root: Root,
    send: impl FnOnce(usize) -> MpiResult<Blocks>,
    recv: Option<&Arg>,
    regular: bool,
) -> MpiResult<Schedule> {
    if let Some(root) = inter_root(rt, slot, root)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::scatter(rt, slot, root, send, recv) };
    }
    let (root, me, n) = root_and_me(rt, slot, root)?;
    let in_place = recv.is_none();
    in_place_at_root(in_place, me, root)?;
    let ins = if me == root {
        // SAFETY: the root's send blocks (MPI contract).
        unsafe { send(n)?.bufs()? }
    } else {
        Vec::new()
    };
    let out = match recv {
        None => None,
        // SAFETY: the receive buffer holds its elements.
        Some(r) => Some(unsafe { r.buf()? }),
    };
    // The root's own block stays out with MPI_IN_PLACE, except for a
    // regular scatter, whose blocks a board may expose end to end.
    let skip = |r: usize| r == me && in_place && !regular;
    // SAFETY: the root's send blocks are readable.
    let data = unsafe { packed_blocks(&ins, skip) };
    let mut b = builder(rt, slot)?;
    let lens = ins
        .iter()
        .enumerate()
        .map(|(r, u)| if skip(r) { 0 } else { u.len });
    let all = b.input(data);
    let parts = all.split(lens);
    let own_len = out.as_ref().map_or(0, |u| u.len);
    // This block lands where the variant puts it: unpacked within it.
    b.either(|b| {
        let own = if regular {
            let blk = ins.iter().map(|u| u.len).max().unwrap_or(own_len);
            algo::scatter(b, root, &parts, blk)
        } else {
            let own = if me == root {
                parts[me]
            } else {
                b.buf(own_len)
            };
            algo::scatterv(b, root, own, &parts);
            own
        };
        if let Some(u) = &out {
            unpack_to(b, own, sink(u));
        }
    });
    Ok(b.finish())
}

/// `MPI_Allgather` and `MPI_Allgatherv` (§6.7): `send` is `None` for
/// `MPI_IN_PLACE` (this process's block of the receive buffer holds its
/// data).
///
/// # Safety
/// The buffers address their elements (MPI contract).
pub unsafe fn allgather(
    rt: &mut Runtime,
    slot: usize,
    send: Option<&Arg>,
    recv: &Blocks,
) -> MpiResult<Schedule> {
    if is_inter(rt, slot)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::allgather(rt, slot, send, recv) };
    }
    let me = rank_size(rt, slot)?.0;
    let in_place = send.is_none();
    // SAFETY: the receive blocks (MPI contract).
    let outs = unsafe { recv.bufs()? };
    let mut own = match send {
        // SAFETY: this process's block of the receive buffer is readable.
        None => unsafe { packed(&outs[me]) },
        // SAFETY: the send buffer holds its elements.
        Some(s) => unsafe { packed(&s.buf()?) },
    };
    if own.len() > outs[me].len {
        return Err(MpiError::new(
            Class::Truncate,
            "the send data is longer than this process's receive block",
        ));
    }
    own.resize(outs[me].len, 0);
    let mut b = builder(rt, slot)?;
    let parts = blocks_for(&mut b, &outs);
    let mine = b.input(own);
    b.copy(mine, parts[me]);
    b.either(|b| algo::allgatherv(b, &parts));
    unpack_all(&mut b, &parts, &outs, in_place.then_some(me));
    Ok(b.finish())
}

/// `MPI_Alltoall`, `MPI_Alltoallv` and `MPI_Alltoallw` (§6.8); `send` is
/// `None` for `MPI_IN_PLACE` (the data goes out of the receive blocks);
/// `regular`: `MPI_Alltoall` (every block of every process has one size,
/// which a flag board needs).
///
/// # Safety
/// The buffers address their elements (MPI contract).
pub unsafe fn alltoall(
    rt: &mut Runtime,
    slot: usize,
    send: Option<&Blocks>,
    recv: &Blocks,
    regular: bool,
) -> MpiResult<Schedule> {
    if is_inter(rt, slot)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::alltoall(rt, slot, send, recv) };
    }
    // SAFETY: the receive blocks (MPI contract).
    let outs = unsafe { recv.bufs()? };
    let ins = match send {
        // SAFETY: the send blocks (MPI contract).
        Some(s) => unsafe { s.bufs()? },
        None => Vec::new(),
    };
    let ins = if send.is_some() { &ins } else { &outs };
    // SAFETY: send blocks are readable.
    let data = unsafe { packed_blocks(ins, |_| false) };
    let mut b = builder(rt, slot)?;
    let sent = b.input(data);
    let sends = sent.split(ins.iter().map(|u| u.len));
    let recvs = blocks_for(&mut b, &outs);
    let blk = recvs.first().map_or(0, |s| s.len);
    b.either(|b| {
        if regular && b.team().is_some() {
            super::board::algo::alltoall(b, &sends, &recvs, blk);
        } else {
            algo::alltoallv(b, &sends, &recvs);
        }
    });
    unpack_all(&mut b, &recvs, &outs, None);
    let mut s = b.finish();
    // The block to itself is copied as far as it fits (erroneous where it
    // does not); the process still takes its part, and reports it at the
    // end, as a receive from another process would.
    let me = rank_size(rt, slot)?.0;
    if ins[me].len > outs[me].len {
        s.record_error(MpiError::new(
            Class::Truncate,
            format!(
                "this process's block to itself has {} bytes, its receive block {}: \
                 the send and receive type signatures differ",
                ins[me].len, outs[me].len
            ),
        ));
    }
    Ok(s)
}

/// `MPI_Reduce_scatter` and `MPI_Reduce_scatter_block` (§6.10):
/// `counts[r]` elements for rank `r`; `MPI_IN_PLACE` takes the input
/// from the receive buffer.
///
/// # Safety
/// The buffers address their elements (MPI contract).
pub unsafe fn reduce_scatter(
    rt: &mut Runtime,
    slot: usize,
    args: &Reduce,
    counts: &[i64],
) -> MpiResult<Schedule> {
    if is_inter(rt, slot)? {
        // SAFETY: forwarded from the caller.
        return unsafe { inter::reduce_scatter(rt, slot, args, counts) };
    }
    let me = rank_size(rt, slot)?.0;
    let all = total(counts)?;
    // SAFETY: forwarded from the caller: `all` elements of input.
    let (red, input) = unsafe { args.input(all, true, true)? };
    // SAFETY: the receive buffer holds this rank's count.
    let out = unsafe { args.output(counts[me])? };
    let size = args.elem_size()?;
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    b.set_elem(size);
    let acc = b.input(input);
    let bytes: Vec<usize> = counts.iter().map(|&c| c as usize * size).collect();
    // This block lands where the variant puts it: unpacked within it.
    b.either(|b| {
        let own = algo::reduce_scatter(b, acc, &bytes);
        unpack_to(b, own, sink(&out));
    });
    Ok(b.finish())
}

/// `MPI_Scan` (§6.11.1) or, `exclusive`, `MPI_Exscan` (§6.11.2).
///
/// # Safety
/// The buffers address `count` elements (MPI contract).
pub unsafe fn scan(
    rt: &mut Runtime,
    slot: usize,
    args: &Reduce,
    count: i64,
    exclusive: bool,
) -> MpiResult<Schedule> {
    if is_inter(rt, slot)? {
        return Err(inter::no_scan());
    }
    let me = rank_size(rt, slot)?.0;
    // SAFETY: forwarded from the caller.
    let (red, input) = unsafe { args.input(count, true, true)? };
    // SAFETY: the receive buffer holds `count` elements.
    let out = sink(&unsafe { args.output(count)? });
    let elem = args.elem_size()?;
    let mut b = builder(rt, slot)?;
    b.set_op(red);
    b.set_elem(elem);
    let len = input.len();
    let partial = b.input(input);
    let result = b.buf(len);
    b.either(|b| algo::scan(b, partial, result, exclusive));
    // The exclusive scan leaves rank 0's receive buffer undefined.
    let out = (!(exclusive && me == 0)).then_some(out);
    Ok(unpack_into(b, result, out))
}

/// This process's neighbourhood in communicator `slot`'s virtual
/// topology (MPI-4.1 §8.6): how many blocks the arrays of a
/// neighbourhood collective have (`sources.len()` received,
/// `destinations.len()` sent).
pub fn neighborhood(rt: &Runtime, slot: usize) -> MpiResult<Neighbors> {
    let c = rt.comm(slot)?;
    let topo = c.topo.as_ref().ok_or_else(|| {
        MpiError::new(
            Class::Topology,
            "a neighbourhood collective needs a communicator with a topology",
        )
    })?;
    Ok(topo.neighbors(c.rank))
}

/// `MPI_Neighbor_allgather` and `MPI_Neighbor_allgatherv` (§8.6.1): the
/// same data to every out-neighbour, block `i` of `recv` from
/// in-neighbour `i`.
///
/// # Safety
/// The buffers address their elements (MPI contract).
pub unsafe fn neighbor_allgather(
    rt: &mut Runtime,
    slot: usize,
    send: &Arg,
    recv: &Blocks,
) -> MpiResult<Schedule> {
    let nb = neighborhood(rt, slot)?;
    // SAFETY: the caller's buffers (MPI contract).
    let (data, ins) = unsafe { (packed(&send.buf()?), recv.bufs()?) };
    exchange(rt, slot, &nb, Outgoing::Shared(data), &ins)
}

/// `MPI_Neighbor_alltoall`, `_alltoallv` and `_alltoallw` (§8.6.2): block
/// `j` of `send` to out-neighbour `j`, block `i` of `recv` from
/// in-neighbour `i`.
///
/// # Safety
/// The buffers address their elements (MPI contract).
pub unsafe fn neighbor_alltoall(
    rt: &mut Runtime,
    slot: usize,
    send: &Blocks,
    recv: &Blocks,
) -> MpiResult<Schedule> {
    let nb = neighborhood(rt, slot)?;
    // SAFETY: the caller's buffers (MPI contract); send blocks are
    // readable.
    let (outs, ins) = unsafe {
        let outs = send.bufs()?.iter().map(|ub| packed(ub)).collect();
        (outs, recv.bufs()?)
    };
    exchange(rt, slot, &nb, Outgoing::Blocks(outs), &ins)
}

/// What a process sends along its out-edges.
enum Outgoing {
    /// The same data to every destination (allgather).
    Shared(Vec<u8>),
    /// Packed block `j` for destination `j` (alltoall).
    Blocks(Vec<Vec<u8>>),
}

/// The communicator rank of a neighbour (`None` for `MPI_PROC_NULL`).
fn peer(rank: Rank) -> Option<usize> {
    match rank {
        Rank::Proc(r) => Some(r as usize),
        Rank::Null | Rank::Any => None,
    }
}

/// Compile the exchange: `outs` go to the destinations, block `i` of
/// `ins` comes from source `i`, in one round of
/// [`algo::neighbor_exchange`].
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
            unpack_to(&mut b, span, sink(ub));
        }
    }
    Ok(b.finish())
}
