//! Collectives that move members' blocks: `MPI_Allgather` and
//! `MPI_Alltoall`.

use std::borrow::Cow;

use super::{Access, Run, slice_at, slice_mut};
use crate::coll::board::algo::{share, split};
use crate::coll::board::{DATA, PLACED, Ran, expose, read};
use crate::coll::calls::Arg;
use crate::core::MpiResult;

/// `MPI_Allgather` (`alltoall` false: every member's block to every
/// member) or `MPI_Alltoall` (block `j` of the send buffer to member `j`)
/// of contiguous blocks of `recv`'s size, in pieces as `algo::gather` and
/// `algo::alltoall` compile them: up to [`DATA`] bytes of a block per
/// step for allgather, `DATA / n` for all-to-all; or exposed
/// ([`expose::allgather`], [`expose::alltoall`]), each member copying its
/// blocks straight from the others' buffers. `send` is `None` for
/// `MPI_IN_PLACE` (allgather only).
///
/// # Safety
/// As for `calls::allgather` and `calls::alltoall`.
pub unsafe fn allgather(
    cx: &mut impl Access,
    slot: usize,
    send: Option<&Arg>,
    recv: &Arg,
    alltoall: bool,
) -> Option<MpiResult<()>> {
    // SAFETY: the caller's promise (one block of the receive buffer).
    let rb = unsafe { recv.buf() }.ok()?;
    let blk = rb.len;
    if !rb.dt.is_contiguous() {
        return None;
    }
    let sb = match send {
        // SAFETY: the caller's promise (one block of the send buffer).
        Some(s) => Some(unsafe { s.buf() }.ok()?),
        None if alltoall => return None,
        None => None,
    };
    // Type signatures that differ (erroneous) are the schedule's to report.
    if sb
        .as_ref()
        .is_some_and(|s| s.len != blk || (alltoall && !s.dt.is_contiguous()))
    {
        return None;
    }
    let mut run = cx.with(|rt| Run::begin(rt, slot))?;
    let (n, me) = (run.team.size(), run.team.me);
    let recv_at = |j: usize| rb.ptr.wrapping_add(j * blk);
    // This member's block: its send buffer (packed, for allgather, if not
    // contiguous) or, in place, its receive block.
    let own = match &sb {
        // SAFETY: the send buffer is readable (MPI contract).
        Some(s) => unsafe { s.data() },
        // SAFETY: our receive block holds our data (MPI_IN_PLACE).
        None => Cow::Borrowed(unsafe { slice_at(recv_at(me), blk) }),
    };
    // Bytes `off..off + len` of send block `j` (all-to-all: contiguous).
    let send_part = |j: usize, off: usize, len: usize| {
        // SAFETY: within the send buffer of `n` blocks (MPI contract).
        sb.as_ref()
            .map(|s| unsafe { std::slice::from_raw_parts(s.ptr.add(j * blk + off), len) })
    };
    Some((|| {
        if sb.is_some() {
            let mine = if alltoall {
                send_part(me, 0, blk).expect("all-to-all has a send buffer")
            } else {
                &own
            };
            // SAFETY: our receive block: `blk` writable bytes, not the
            // send buffer (not in place).
            unsafe { std::ptr::copy_nonoverlapping(mine.as_ptr(), recv_at(me), blk) };
        }
        let mut bad = None;
        let exposes = if alltoall {
            expose::alltoall(&run.team, blk)
        } else {
            expose::allgather(&run.team, blk)
        };
        if exposes {
            // Expose the send buffer (all-to-all) or our block, and copy
            // each member's block for us out of what it exposed.
            let (exposed, expect, at) = if alltoall {
                let s = sb.as_ref().expect("all-to-all has a send buffer");
                (s.ptr.cast_const(), n * blk, me * blk)
            } else {
                (own.as_ptr(), blk, 0)
            };
            run.expose_all(cx, exposed, expect)?;
            for j in (0..n).filter(|&j| j != me) {
                // SAFETY: receive block j: `blk` writable bytes, not our
                // own block (which `own` may borrow).
                let out = unsafe { slice_mut(recv_at(j), blk) };
                if let Ran::Failed(e) = run.pull(j, expect, at, out) {
                    bad.get_or_insert(e);
                }
            }
            run.release(cx)?;
            run.end();
            return bad.map_or(Ok(()), |e| Err(e.on(slot)));
        }
        // Bytes of a block per step.
        let per = if alltoall { share(n) } else { DATA };
        for (off, len) in split(blk, per) {
            run.next();
            if alltoall {
                let pieces = (0..n)
                    .filter(|&j| j != me && len > 0)
                    .map(|j| (j * per, send_part(j, off, len).expect("checked above")));
                run.place(cx, 0, pieces)?;
            } else {
                run.post(cx, &own[off..off + len])?;
            }
            run.wait_posted(cx, None, run.t)?;
            let b = run.board();
            // What each posted, and where our part of it lies.
            let (posted, at) = if alltoall {
                (PLACED, me * per)
            } else {
                (len, 0)
            };
            for j in (0..n).filter(|&j| j != me && len > 0) {
                // SAFETY: bytes `off..off + len` of receive block j:
                // writable, not our own block.
                let out = unsafe { std::slice::from_raw_parts_mut(recv_at(j).add(off), len) };
                if let Ran::Failed(e) = read(&b, j, run.t, posted, at, len, |x| {
                    out[..x.len()].copy_from_slice(x)
                }) {
                    bad.get_or_insert(e);
                }
            }
        }
        run.end();
        bad.map_or(Ok(()), |e| Err(e.on(slot)))
    })())
}
