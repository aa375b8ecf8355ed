//! `MPI_Reduce` and `MPI_Allreduce` on the board: small vectors in one
//! step, large ones in slices that every member reduces, in pieces or
//! exposed.

use std::borrow::Cow;

use shm_engine::board::Board;

use super::{Access, Run, alone, rooted, slice_at, slice_mut};
use crate::coll::board::Await;
use crate::coll::board::algo::{innermost, pieces, slice};
use crate::coll::board::{DATA, INLINE, Ran, SMALL, expose, read};
use crate::coll::calls::Reduce;
use crate::core::peer::Root;
use crate::core::{MpiError, MpiResult, Runtime, pool};
use crate::ops::{Kernel, Reduction};

/// `MPI_Allreduce` (`root: None`) or `MPI_Reduce`. Up to [`SMALL`] bytes
/// in all (vector times members), every reader reduces the whole vectors
/// in rank order; larger ones, of contiguous buffers, go in pieces: each
/// member reduces its slice of a piece into its data buffer and posts it,
/// and the readers copy the slices out (the steps of `algo::reduce`), or
/// with the vectors exposed ([`expose::reduce`]).
///
/// # Safety
/// As for `calls::allreduce` and `calls::reduce`.
pub unsafe fn reduce(
    cx: &mut impl Access,
    slot: usize,
    root: Option<Root>,
    args: &Reduce,
    count: i64,
) -> Option<MpiResult<()>> {
    let (reads, n) = cx.with(|rt| reads(rt, slot, root))?;
    // SAFETY: forwarded from the caller (as calls::reduce/allreduce ask).
    let (red, src) = unsafe { args.source(count, reads, reads) }.ok()?;
    let len = src.len;
    let out = if reads {
        // SAFETY: the receive buffer holds `count` elements.
        Some(unsafe { args.output(count) }.ok()?)
    } else {
        None
    };
    if len * n > SMALL {
        let contiguous =
            src.dt.is_contiguous() && out.as_ref().is_none_or(|o| o.dt.is_contiguous());
        // Elements larger than a data buffer go by messages
        // (`coll::algo::board_reduces`).
        if !contiguous || src.dt.size == 0 || src.dt.size > DATA {
            return None;
        }
        let out = out.map(|o| o.ptr);
        let run = cx.with(|rt| Run::begin(rt, slot))?;
        // SAFETY: `len` contiguous bytes at each (checked above), readable
        // and writable as MPI asks of the send and receive buffers.
        return Some(unsafe {
            reduce_pieces(cx, slot, run, &red, (src.ptr, len), out, src.dt.size)
        });
    }
    // Contiguous buffers are used in place: the contribution is posted
    // from the send buffer and the result reduced straight into the
    // receive buffer (a copy of the contribution first with MPI_IN_PLACE,
    // where the two are one).
    let in_place = out.as_ref().is_some_and(|o| o.ptr == src.ptr);
    let own = if in_place {
        // SAFETY: the send buffer is readable (MPI contract).
        Cow::Owned(unsafe { src.data() }.into_owned())
    } else {
        // SAFETY: as above.
        unsafe { src.data() }
    };
    let run = cx.with(|rt| Run::begin(rt, slot))?;
    let Some(out) = out else {
        return Some(small(cx, slot, run, &red, &own, None));
    };
    if out.dt.is_contiguous() {
        // SAFETY: `len` contiguous writable bytes, not the send buffer
        // (`own` is a copy when they are one).
        let acc = unsafe { std::slice::from_raw_parts_mut(out.ptr, len) };
        return Some(small(cx, slot, run, &red, &own, Some(acc)));
    }
    let mut scratch = vec![0; len];
    let done = small(cx, slot, run, &red, &own, Some(&mut scratch));
    if done.is_ok() {
        // SAFETY: the receive buffer is writable (MPI contract).
        unsafe { out.unpack(&scratch) };
    }
    Some(done)
}

/// A reduction's buffers as plain bytes, for a predefined datatype and
/// operation: what an entry layer that knows both decodes without
/// building a [`Reduce`] (a third of an 8 B allreduce's instructions).
/// It builds one only for valid send arguments, and names the receive
/// buffer only where that is valid; [`reduce_flat`] hands any call whose
/// significant arguments are not valid to the general path, which
/// reports the error.
#[derive(Clone, Copy, Debug)]
pub struct Flat {
    /// The contribution: `len` readable bytes, or `None` for
    /// `MPI_IN_PLACE` (the contribution is in `recv`).
    pub send: Option<*const u8>,
    /// The receive buffer's `len` bytes: with `MPI_IN_PLACE` the
    /// contribution, and the result at a member that reads it. `None`
    /// where it is not a valid buffer, or the send buffer's: fine where
    /// it is not significant (a reduce's non-roots).
    pub recv: Option<*mut u8>,
    pub len: usize,
    /// Bytes of one element (pieces of large vectors split between
    /// elements).
    pub elem: usize,
    pub kernel: Kernel,
}

/// A reduction whose result depends on the rank (scan, exscan,
/// reduce_scatter_block) of a [`Flat`] vector, where communicator `slot`
/// is this process alone (`alone`): the result of a scan or of a
/// reduce_scatter_block is the process's contribution, copied unless in
/// place; an exscan's (`exclusive`) is not defined at the first process,
/// whose receive buffer stays as it is. `None` elsewhere (these run as
/// schedules), and where the receive buffer is not valid (the schedule
/// reports it).
///
/// # Safety
/// The buffers are as [`Flat`] describes them (MPI contract).
pub unsafe fn alone_ranked(
    cx: &mut impl Access,
    slot: usize,
    f: Flat,
    exclusive: bool,
) -> Option<MpiResult<()>> {
    let out = f.recv?;
    if !cx.with(|rt| alone(rt, slot, None)) {
        return None;
    }
    if let Some(src) = f.send.filter(|_| !exclusive) {
        // SAFETY: `len` bytes each, readable and writable (the caller's
        // promise); `copy` allows them to overlap.
        unsafe { std::ptr::copy(src, out, f.len) };
    }
    Some(Ok(()))
}

/// [`reduce`] of a [`Flat`] reduction: the same steps, from the
/// application's buffers.
///
/// # Safety
/// The buffers are as [`Flat`] describes them (MPI contract).
pub unsafe fn reduce_flat(
    cx: &mut impl Access,
    slot: usize,
    root: Option<Root>,
    f: Flat,
) -> Option<MpiResult<()>> {
    let reads = match root {
        Some(r) => {
            let (root, me, _) = cx.with(|rt| rooted(rt, slot, r))?;
            root == me
        }
        None => true,
    };
    // MPI_IN_PLACE at a reduce's non-root, or no valid receive buffer
    // where it is significant: the general path reports the error.
    let out = if reads { Some(f.recv?) } else { None };
    let src = match f.send {
        Some(s) => s,
        None => out?.cast_const(),
    };
    let Some(run) = cx.with(|rt| Run::begin(rt, slot)) else {
        if !cx.with(|rt| alone(rt, slot, root)) {
            return None;
        }
        if let (Some(src), Some(dst)) = (f.send, out) {
            // SAFETY: `len` bytes each, readable and writable (the
            // caller's promise); `copy` allows them to overlap.
            unsafe { std::ptr::copy(src, dst, f.len) };
        }
        return Some(Ok(()));
    };
    let red = Reduction::Predefined(f.kernel);
    if f.len * run.team.size() > SMALL {
        // SAFETY: the caller's promise; the two may be one (in place).
        return Some(unsafe { reduce_pieces(cx, slot, run, &red, (src, f.len), out, f.elem) });
    }
    // SAFETY: `len` readable bytes (the caller's promise).
    let mut own = unsafe { std::slice::from_raw_parts(src, f.len) };
    // With MPI_IN_PLACE the contribution is copied first: the result is
    // reduced into the buffer that holds it.
    let (mut line, copy);
    if f.send.is_none() {
        if f.len <= INLINE {
            line = [0; INLINE];
            line[..f.len].copy_from_slice(own);
            own = &line[..f.len];
        } else {
            copy = own.to_vec();
            own = &copy;
        }
    }
    // SAFETY: `len` writable bytes at a member that reads the result.
    let acc = out.map(|p| unsafe { std::slice::from_raw_parts_mut(p, f.len) });
    Some(small(cx, slot, run, &red, own, acc))
}

/// Whether this member reads a reduction's result (every member for
/// allreduce, `root: None`; the root for reduce), and the members
/// (`None` also for a root that is not valid).
fn reads(rt: &Runtime, slot: usize, root: Option<Root>) -> Option<(bool, usize)> {
    match root {
        Some(r) => {
            let (root, me, n) = rooted(rt, slot, r)?;
            Some((root == me, n))
        }
        None => Some((true, rt.comm(slot).ok()?.size() as usize)),
    }
}

/// A reduction of at most [`SMALL`] bytes in all, in one step: every
/// member posts its contribution `own`, and the members that read the
/// result (`acc`) fold everyone's posts into it in rank order; on a
/// tiered board, by groups ([`tiered`]).
fn small(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    red: &Reduction,
    own: &[u8],
    acc: Option<&mut [u8]>,
) -> MpiResult<()> {
    run.next();
    if run.team.tiers_for(Some(red)).is_some() {
        return tiered(cx, slot, run, red, own, acc);
    }
    let Some(acc) = acc else {
        run.post_ahead(cx, own)?;
        run.end();
        return Ok(());
    };
    run.post(cx, own)?;
    run.wait_posted(cx, None, run.t)?;
    let n = run.team.size();
    // Under the lock: an application's operation may call MPI, through
    // the runtime of the call that holds it (`core::run_callback`).
    let bad = cx.with(|_| fold(&run.board(), run.t, own.len(), 0, Some(own), 0..n, acc, red));
    run.end();
    bad.map_or(Ok(()), |e| Err(e.on(slot)))
}

/// [`small`] on a tiered board (`shm_engine::tiers`; `algo::reduce`
/// takes the same step): a leader waits for its group's posts, folds
/// them in rank order straight into what it posts, its group's partial,
/// in place of its own vector; a member that reads the result waits for
/// every leader's post and folds the partials in group order.
fn tiered(
    cx: &mut impl Access,
    slot: usize,
    run: Run,
    red: &Reduction,
    own: &[u8],
    acc: Option<&mut [u8]>,
) -> MpiResult<()> {
    let team = run.team.clone();
    let tiers = team.tiers_for(Some(red)).expect("checked by `small`");
    let (me, t, len) = (team.me(), run.t, own.len());
    cx.with(|rt| rt.ep.count_tiered());
    let mut bad = None;
    if tiers.leads(me) {
        run.wait_for(cx, Await::Group, t)?;
        let group = tiers.group(me).iter().copied();
        let b = run.board();
        run.post_built(cx, len, |dst| {
            bad = fold(&b, t, len, 0, Some(own), group, dst, red);
        })?;
    } else if acc.is_some() {
        run.post(cx, own)?;
    } else {
        run.post_ahead(cx, own)?;
    }
    if let Some(acc) = acc {
        run.wait_for(cx, Await::Leaders, t)?;
        let b = run.board();
        let e = cx.with(|_| fold(&b, t, len, 0, None, tiers.leaders(), acc, red));
        bad = bad.or(e);
    }
    run.end();
    bad.map_or(Ok(()), |e| Err(e.on(slot)))
}

/// `acc = x_a op (x_b op (... op x_z))` for the members `from` (`a, b,
/// ..., z`, in rank order), where `x_j` is bytes `off..off + acc.len()`
/// of what member `j` posted at step `t` (`posted` bytes), and this
/// member's own are `own` where given (else read from its line like the
/// others'): the rank order holds for any operation, and every member
/// that folds the same bytes gets the same bits. The first error met, if
/// any.
#[allow(clippy::too_many_arguments)]
fn fold(
    b: &Board<'_>,
    t: u64,
    posted: usize,
    off: usize,
    own: Option<&[u8]>,
    from: impl DoubleEndedIterator<Item = usize>,
    acc: &mut [u8],
    red: &Reduction,
) -> Option<MpiError> {
    let (me, len) = (b.me(), acc.len());
    let mut bad = None;
    for (k, j) in from.rev().enumerate() {
        let innermost = k == 0;
        let got = match own.filter(|_| j == me) {
            Some(own) => {
                if innermost {
                    shm_engine::copy::slice(acc, own);
                } else {
                    red.apply(own, acc);
                }
                Ran::Done
            }
            None if innermost => read(b, j, t, posted, off, len, |x| {
                shm_engine::copy::slice(&mut acc[..x.len()], x)
            }),
            None => read(b, j, t, posted, off, len, |x| {
                red.apply(x, &mut acc[..x.len()])
            }),
        };
        if let Ran::Failed(e) = got {
            bad.get_or_insert(e);
        }
    }
    bad
}

/// A large reduction of the contiguous vector `own` (address, bytes;
/// elements of `elem` bytes) into `out` (`None` at a member that does not
/// read the result), in pieces of two steps each, as `algo::reduce`
/// compiles them: post the piece; fold this member's slice of every
/// member's piece straight into the data buffer of the next step and post
/// it; the readers copy every slice into `out`.
///
/// # Safety
/// `own` is readable and `out` writable for the vector's bytes; the two
/// may be one buffer (`MPI_IN_PLACE`: a piece is read before its result
/// is written), but no other reference reaches them during the call.
unsafe fn reduce_pieces(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    red: &Reduction,
    own: (*const u8, usize),
    out: Option<*mut u8>,
    elem: usize,
) -> MpiResult<()> {
    if expose::reduce(&run.team, own.1) {
        // SAFETY: forwarded from the caller.
        return unsafe { reduce_exposed(cx, slot, run, red, own, out, elem) };
    }
    let (n, me) = (run.team.size(), run.team.me);
    let mut bad = None;
    for (off, len) in pieces(own.1, elem) {
        run.next();
        // SAFETY: bytes `off..off + len` of the vector (the caller's
        // promise); this borrow ends before the piece's result is written.
        let piece = unsafe { std::slice::from_raw_parts(own.0.add(off), len) };
        let (lo, sl) = slice(len, elem, n, me);
        if len <= INLINE {
            run.post(cx, piece)?;
        } else {
            // Every member reads only its own slice of our piece: ours
            // stays out of the data buffer.
            run.place(cx, len, [(0, &piece[..lo]), (lo + sl, &piece[lo + sl..])])?;
        }
        run.wait_posted(cx, None, run.t)?;
        let t1 = run.t;
        run.next();
        let b = run.board();
        run.post_built(cx, sl, |dst| {
            if let Some(e) = fold(
                &b,
                t1,
                len,
                lo,
                Some(&piece[lo..lo + sl]),
                0..b.len(),
                dst,
                red,
            ) {
                bad.get_or_insert(e);
            }
        })?;
        let Some(out) = out else {
            continue;
        };
        run.wait_posted(cx, None, run.t)?;
        // Everyone posted this step, so no one reads our piece any more,
        // and neither do we (with MPI_IN_PLACE `out` holds it).
        for j in 0..n {
            let (lo, sl) = slice(len, elem, n, j);
            // SAFETY: bytes `off + lo..off + lo + sl` of the receive
            // buffer, contiguous and writable (MPI contract).
            let dst = unsafe { std::slice::from_raw_parts_mut(out.add(off + lo), sl) };
            if let Ran::Failed(e) = read(&b, j, run.t, sl, 0, sl, |x| {
                shm_engine::copy::slice(&mut dst[..x.len()], x)
            }) {
                bad.get_or_insert(e);
            }
        }
    }
    run.end();
    bad.map_or(Ok(()), |e| Err(e.on(slot)))
}

/// A large reduction whose members expose their vectors (the steps of
/// `algo::reduce`): each member folds its slice of every member's vector,
/// copied straight from the owners, in rank order; then it exposes that
/// reduced slice, the readers copy every slice into `out`, and a last
/// step releases the memory. Arguments as for [`reduce_pieces`].
///
/// # Safety
/// As for [`reduce_pieces`].
unsafe fn reduce_exposed(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    red: &Reduction,
    own: (*const u8, usize),
    out: Option<*mut u8>,
    elem: usize,
) -> MpiResult<()> {
    let (n, me) = (run.team.size(), run.team.me);
    let (len, slice_of) = (own.1, |j: usize| slice(own.1, elem, n, j));
    let (lo, sl) = slice_of(me);
    let mut bad = None;
    run.expose_all(cx, own.0, len)?;
    // Our slice of the result: straight in the receive buffer, unless
    // that holds our contribution (MPI_IN_PLACE), which the fold reads.
    let in_place = out.is_some_and(|o| o.cast_const() == own.0);
    let mut scratch = (out.is_none() || in_place).then(|| pool::take(sl));
    let res: &mut [u8] = match (&mut scratch, out) {
        (Some(v), _) => v,
        // SAFETY: bytes `lo..lo + sl` of the receive buffer, writable
        // (MPI contract), not the send buffer (not in place), and no
        // other member writes or reads them during this step.
        (None, Some(o)) => unsafe { slice_mut(o.add(lo), sl) },
        (None, None) => unreachable!("scratch where there is no output"),
    };
    // SAFETY: our slice of the vector, readable (the caller's promise);
    // nothing writes it before the fold ends.
    let mine = unsafe { slice_at(own.0.add(lo), sl) };
    // res = x_0 op (x_1 op (... op x_{n-1})), as `fold` does, the
    // innermost operand straight in `res` (`algo::innermost`).
    let (first, swap) = innermost(n, me, red.commutative());
    let more = (0..first).any(|j| j != me);
    let mut operand = pool::take(if more { sl } else { 0 });
    let mut note = |got: Ran| {
        if let Ran::Failed(e) = got {
            bad.get_or_insert(e);
        }
    };
    if first == me {
        shm_engine::copy::slice(res, mine);
    } else {
        note(run.pull(first, len, lo, res));
    }
    if swap {
        cx.with(|_| red.apply(mine, res));
    }
    for j in (0..first).rev() {
        if j == me {
            cx.with(|_| red.apply(mine, res));
        } else {
            note(run.pull(j, len, lo, &mut operand));
            cx.with(|_| red.apply(&operand, res));
        }
    }
    pool::give(operand);
    run.next();
    run.expose(cx, res.as_ptr(), sl, false)?;
    if let Some(out) = out {
        run.wait_posted(cx, None, run.t)?;
        // Everyone posted this step: no one reads our vector any more
        // (with MPI_IN_PLACE, `out` holds it).
        for j in 0..n {
            let (lo, sl) = slice_of(j);
            if j == me {
                // Our slice is in place already, unless it is in `scratch`.
                if let Some(v) = &scratch {
                    // SAFETY: bytes `lo..lo + sl` of the receive buffer,
                    // contiguous and writable (MPI contract); `res`
                    // borrows `scratch` here, not them.
                    shm_engine::copy::slice(unsafe { slice_mut(out.add(lo), sl) }, v);
                }
                continue;
            }
            // SAFETY: bytes `lo..lo + sl` of the receive buffer, contiguous
            // and writable (MPI contract): another member's slice, which
            // `res` (our slice, or `scratch`) does not cover.
            let dst = unsafe { slice_mut(out.add(lo), sl) };
            if let Ran::Failed(e) = run.pull(j, sl, 0, dst) {
                bad.get_or_insert(e);
            }
        }
    }
    run.release(cx)?;
    run.end();
    if let Some(v) = scratch {
        pool::give(v);
    }
    bad.map_or(Ok(()), |e| Err(e.on(slot)))
}
