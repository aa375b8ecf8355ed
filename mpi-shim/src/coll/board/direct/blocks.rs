//! Collectives that move members' blocks: `MPI_Allgather`,
//! `MPI_Alltoall`, `MPI_Gather` and `MPI_Scatter`.

use std::borrow::Cow;

use super::{Access, Run, rooted, slice_at, slice_mut};
use crate::coll::board::algo::{pieces, share, split};
use crate::coll::board::{DATA, PLACED, Ran, expose, read};
use crate::coll::calls::Arg;
use crate::core::MpiResult;
use crate::core::buffer::UserBuf;
use crate::core::peer::Root;

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

/// `MPI_Gather` to `root` of blocks of one length, in pieces of up to
/// [`DATA`] bytes as `algo::gather` compiles it: each member posts a
/// piece of its block straight from its send buffer (packed first where
/// it is not contiguous), and the root copies every member's piece
/// straight into its receive buffer, which must be contiguous (otherwise
/// the schedule runs). `send` is `None` for `MPI_IN_PLACE` (the root's
/// only).
///
/// # Safety
/// As for `calls::gather`.
pub unsafe fn gather(
    cx: &mut impl Access,
    slot: usize,
    root: Root,
    send: Option<&Arg>,
    recv: &Arg,
) -> Option<MpiResult<()>> {
    let (root, me, n) = cx.with(|rt| rooted(rt, slot, root))?;
    let is_root = root == me;
    let sb = match send {
        // SAFETY: the caller's promise (the send buffer).
        Some(s) => Some(unsafe { s.buf() }.ok()?),
        None if is_root => None,
        None => return None,
    };
    // The root's receive buffer, one block of it (significant there only).
    let rb = if is_root {
        // SAFETY: the caller's promise (one block of the receive buffer).
        let rb = unsafe { recv.buf() }.ok()?;
        Some(rb).filter(|r| r.dt.is_contiguous())?.into()
    } else {
        None
    };
    let blk = match (&rb, &sb) {
        (Some(r), _) => r.len,
        (None, Some(s)) => s.len,
        (None, None) => unreachable!("a member other than the root sends"),
    };
    // Type signatures that differ (erroneous) are the schedule's to report.
    if sb.as_ref().is_some_and(|s| s.len != blk) {
        return None;
    }
    let mut run = cx.with(|rt| Run::begin(rt, slot))?;
    // SAFETY: the send buffer is readable (MPI contract).
    let own = sb.as_ref().map(|s| unsafe { s.data() });
    let Some(rb) = rb else {
        let own = own.expect("a member other than the root sends");
        return Some((|| {
            for (off, len) in pieces(blk, 1) {
                run.next();
                run.post_ahead(cx, &own[off..off + len])?;
            }
            run.end();
            Ok(())
        })());
    };
    let recv_at = |j: usize| rb.ptr.wrapping_add(j * blk);
    if let Some(own) = &own {
        // SAFETY: the root's receive block: `blk` writable bytes, not the
        // send buffer (not in place).
        unsafe { std::ptr::copy_nonoverlapping(own.as_ptr(), recv_at(me), blk) };
    }
    Some((|| {
        let mut bad = None;
        for (off, len) in pieces(blk, 1) {
            run.next();
            // Nobody reads the root's post: it says the root may read
            // this step's pieces until it posts the next.
            run.post(cx, &[])?;
            run.wait_posted(cx, None, run.t)?;
            let b = run.board();
            for j in (0..n).filter(|&j| j != me && len > 0) {
                // SAFETY: bytes `off..off + len` of receive block j:
                // writable, not the send buffer.
                let out = unsafe { slice_mut(recv_at(j).add(off), len) };
                if let Ran::Failed(e) = read(&b, j, run.t, len, 0, len, |x| {
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

/// `MPI_Scatter` from `root` of blocks of one length, as `algo::scatter`
/// compiles it: in pieces, a step carrying [`share`] bytes of each block,
/// which the root places straight from its send buffer and each member
/// copies straight into its receive buffer; or exposed by the root
/// ([`expose::scatter`]). The send blocks (at the root) and the receive
/// buffer must be contiguous (otherwise the schedule runs). `recv` is
/// `None` for `MPI_IN_PLACE` (the root's only).
///
/// # Safety
/// As for `calls::scatter`.
pub unsafe fn scatter(
    cx: &mut impl Access,
    slot: usize,
    root: Root,
    send: &Arg,
    recv: Option<&Arg>,
) -> Option<MpiResult<()>> {
    let (root, me, n) = cx.with(|rt| rooted(rt, slot, root))?;
    let is_root = root == me;
    let rb = match recv {
        // SAFETY: the caller's promise (the receive buffer).
        Some(r) => Some(unsafe { r.buf() }.ok()?)
            .filter(|r| r.dt.is_contiguous())?
            .into(),
        None if is_root => None,
        None => return None,
    };
    // The root's send buffer, one block of it (significant there only).
    let sb = if is_root {
        // SAFETY: the caller's promise (one block of the send buffer).
        let sb = unsafe { send.buf() }.ok()?;
        Some(sb).filter(|s| s.dt.is_contiguous())?.into()
    } else {
        None
    };
    let blk = match (&sb, &rb) {
        (Some(s), _) => s.len,
        (None, Some(r)) => r.len,
        (None, None) => unreachable!("a member other than the root receives"),
    };
    // Type signatures that differ (erroneous) are the schedule's to report.
    if rb.as_ref().is_some_and(|r| r.len != blk) {
        return None;
    }
    let mut run = cx.with(|rt| Run::begin(rt, slot))?;
    let per = share(n);
    if expose::scatter(&run.team, blk) {
        // SAFETY: forwarded from the caller.
        return Some(unsafe { scatter_exposed(cx, slot, run, root, sb.as_ref(), rb.as_ref()) });
    }
    let Some(sb) = sb else {
        let out = rb.expect("a member other than the root receives");
        return Some((|| {
            let mut bad = None;
            for (off, len) in split(blk, per) {
                run.next();
                run.wait_posted(cx, Some(root), run.t)?;
                // Acknowledge before copying: BP2 lets a member read step
                // `t` until it posts `t + 1`, so the root may place the
                // next pieces in its other buffer meanwhile.
                run.post(cx, &[])?;
                if len == 0 {
                    continue;
                }
                // SAFETY: bytes `off..off + len` of the receive buffer:
                // writable (MPI contract).
                let dst = unsafe { slice_mut(out.ptr.add(off), len) };
                if let Ran::Failed(e) =
                    read(&run.board(), root, run.t, PLACED, me * per, len, |x| {
                        dst[..x.len()].copy_from_slice(x)
                    })
                {
                    bad.get_or_insert(e);
                }
            }
            run.end();
            bad.map_or(Ok(()), |e| Err(e.on(slot)))
        })());
    };
    // Bytes `off..off + len` of send block `j`.
    let send_part = |j: usize, off: usize, len: usize| {
        // SAFETY: within the root's send buffer of `n` contiguous blocks
        // (MPI contract).
        unsafe { slice_at(sb.ptr.add(j * blk + off), len) }
    };
    if let Some(out) = &rb {
        // SAFETY: the root's receive buffer: `blk` writable bytes, not
        // the send buffer (not in place).
        unsafe { std::ptr::copy_nonoverlapping(send_part(me, 0, blk).as_ptr(), out.ptr, blk) };
    }
    Some((|| {
        for (off, len) in split(blk, per) {
            run.next();
            let pieces = (0..n)
                .filter(|&j| j != me && len > 0)
                .map(|j| (j * per, send_part(j, off, len)));
            run.place(cx, 0, pieces)?;
        }
        run.end();
        Ok(())
    })())
}

/// The steps of a scatter that the root exposes (`algo::scatter`): each
/// reader copies its block from the root's send buffer, then
/// acknowledges, and the root waits for every acknowledgement. `send` is
/// the root's (one block of it), `recv` a reader's, or the root's unless
/// in place.
///
/// # Safety
/// As for [`scatter`].
unsafe fn scatter_exposed(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    root: usize,
    send: Option<&UserBuf>,
    recv: Option<&UserBuf>,
) -> MpiResult<()> {
    let (n, me) = (run.team.size(), run.team.me);
    run.next();
    if let Some(sb) = send {
        let blk = sb.len;
        if let Some(out) = recv {
            // SAFETY: the root's send block and its receive buffer: `blk`
            // bytes each, not the same (not in place).
            unsafe { std::ptr::copy_nonoverlapping(sb.ptr.add(me * blk), out.ptr, blk) };
        }
        run.expose(cx, sb.ptr, n * blk, true)?;
        run.wait_posted(cx, None, run.t)?;
        run.end();
        return Ok(());
    }
    let out = recv.expect("a member other than the root receives");
    run.wait_posted(cx, Some(root), run.t)?;
    // SAFETY: the receive buffer: `out.len` contiguous writable bytes,
    // nothing else refers to them during the copy.
    let dst = unsafe { slice_mut(out.ptr, out.len) };
    let got = run.pull(root, n * out.len, me * out.len, dst);
    run.post_ahead(cx, &[])?;
    run.end();
    match got {
        Ran::Failed(e) => Err(e.on(slot)),
        _ => Ok(()),
    }
}
