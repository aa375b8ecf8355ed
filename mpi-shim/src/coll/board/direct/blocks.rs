//! Collectives that move members' blocks: `MPI_Allgather(v)`,
//! `MPI_Alltoall`, `MPI_Gather(v)` and `MPI_Scatter(v)`.

use std::borrow::Cow;

use super::{Access, Run, alone_copy, keep, members, rooted, slice_at, slice_mut};
use crate::coll::board::algo::{gatherv_exposes, in_line, pieces, share, split};
use crate::coll::board::{PLACED, Ran, expose};
use crate::coll::calls::{Arg, Blocks};
use crate::core::MpiResult;
use crate::core::buffer::UserBuf;
use crate::core::peer::Root;

/// `MPI_Allgather` (`alltoall` false) or `MPI_Alltoall` of contiguous
/// blocks of `recv`'s size (`allgather_blocks`, `alltoall`). `send` is
/// `None` for `MPI_IN_PLACE` (allgather only).
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
    if !rb.dt.is_contiguous() {
        return None;
    }
    let sb = match send {
        // SAFETY: the caller's promise (one block of the send buffer).
        Some(s) => Some(unsafe { s.buf() }.ok()?),
        None => None,
    };
    // Type signatures that differ (erroneous) are the schedule's to report.
    if sb.as_ref().is_some_and(|s| s.len != rb.len) {
        return None;
    }
    if alltoall {
        // SAFETY: forwarded from the caller.
        return unsafe { self::alltoall(cx, slot, &sb?, &rb) };
    }
    let block = |j: usize| (rb.ptr.wrapping_add(j * rb.len), rb.len);
    // SAFETY: forwarded from the caller: block j of the receive buffer.
    unsafe { allgather_blocks(cx, slot, sb.as_ref(), block) }
}

/// `MPI_Allgatherv` of contiguous receive blocks (`allgather_blocks`).
/// `send` is `None` for `MPI_IN_PLACE`.
///
/// # Safety
/// As for `calls::allgather`.
pub unsafe fn allgatherv(
    cx: &mut impl Access,
    slot: usize,
    send: Option<&Arg>,
    recv: &Blocks,
) -> Option<MpiResult<()>> {
    // SAFETY: the caller's promise (the receive blocks).
    let outs = unsafe { recv.bufs() }.ok()?;
    if !outs.iter().all(|u| u.dt.is_contiguous()) {
        return None;
    }
    let sb = match send {
        // SAFETY: the caller's promise (the send buffer).
        Some(s) => Some(unsafe { s.buf() }.ok()?),
        None => None,
    };
    let (n, me) = cx.with(|rt| members(rt, slot))?;
    // Type signatures that differ (erroneous) are the schedule's to report.
    if outs.len() != n || sb.as_ref().is_some_and(|s| s.len != outs[me].len) {
        return None;
    }
    // SAFETY: forwarded from the caller.
    unsafe { allgather_blocks(cx, slot, sb.as_ref(), |j| (outs[j].ptr, outs[j].len)) }
}

/// The steps of an allgather(v) as `algo::gather` compiles them, into
/// the receive blocks `block(j)` (address, bytes) from this member's send
/// buffer `send` (packed first where it is not contiguous; `None`: in
/// place, its receive block): up to [`DATA`](crate::coll::board::DATA)
/// bytes of every block per
/// step, or exposed ([`expose::allgather`]), each member copying the
/// others' blocks straight from their memory.
///
/// # Safety
/// The blocks are contiguous and writable, `send` readable and, where
/// given, as long as this member's block (MPI contract).
unsafe fn allgather_blocks(
    cx: &mut impl Access,
    slot: usize,
    send: Option<&UserBuf>,
    block: impl Fn(usize) -> (*mut u8, usize),
) -> Option<MpiResult<()>> {
    let Some(mut run) = cx.with(|rt| Run::begin(rt, slot)) else {
        // SAFETY: alone, receive block 0 is this member's, as long as
        // `send` (the caller's promise).
        return unsafe { alone_copy(cx, slot, send, Some(block(0).0)) };
    };
    let (n, me) = (run.team.size(), run.team.me);
    let (mine, blk) = block(me);
    let own = match send {
        // SAFETY: the send buffer is readable (MPI contract).
        Some(s) => unsafe { s.data() },
        // SAFETY: our receive block holds our data (MPI_IN_PLACE).
        None => Cow::Borrowed(unsafe { slice_at(mine, blk) }),
    };
    if send.is_some() {
        // SAFETY: our receive block: `blk` writable bytes, not the send
        // buffer (not in place).
        unsafe { shm_engine::copy::bytes(own.as_ptr(), mine, blk) };
    }
    let longest = (0..n).map(|j| block(j).1).max().unwrap_or(0);
    let others = || (0..n).filter(move |&j| j != me);
    Some((|| {
        let mut bad = None;
        if expose::allgather(&run.team, longest) {
            run.expose_all(cx, own.as_ptr(), blk)?;
            for j in others() {
                let (at, len) = block(j);
                // SAFETY: receive block j: writable, not our own block
                // (which `own` may borrow).
                let out = unsafe { slice_mut(at, len) };
                if len > 0 {
                    keep(&mut bad, run.pull(j, len, 0, out));
                }
            }
            run.release(cx)?;
            run.end();
            return bad.map_or(Ok(()), |e| Err(e.on(slot)));
        }
        // Bytes `off..off + len` of a block of `l` bytes, as far as it goes.
        let part = |l: usize, off: usize, len: usize| {
            let lo = off.min(l);
            (lo, len.min(l - lo))
        };
        for (off, len) in pieces(longest, 1) {
            run.next();
            let (lo, l) = part(blk, off, len);
            run.post(cx, &own[lo..lo + l])?;
            run.wait_posted(cx, None, run.t)?;
            for j in others() {
                let (at, whole) = block(j);
                let (lo, l) = part(whole, off, len);
                if l == 0 {
                    continue;
                }
                // SAFETY: bytes `lo..lo + l` of receive block j: writable,
                // not our own block.
                let out = unsafe { slice_mut(at.add(lo), l) };
                keep(&mut bad, run.copy_out(j, l, 0, out));
            }
        }
        run.end();
        bad.map_or(Ok(()), |e| Err(e.on(slot)))
    })())
}

/// `MPI_Alltoall` (block `j` of the send buffer `send` to member `j`) of
/// contiguous blocks of `recv`'s size (one block of the receive buffer),
/// in pieces as `algo::alltoall` compiles it: `DATA / n` bytes of every
/// block per step; or exposed ([`expose::alltoall`]), each member copying
/// its blocks straight from the others' send buffers.
///
/// # Safety
/// As for `calls::alltoall`.
unsafe fn alltoall(
    cx: &mut impl Access,
    slot: usize,
    send: &UserBuf,
    recv: &UserBuf,
) -> Option<MpiResult<()>> {
    if !send.dt.is_contiguous() {
        return None;
    }
    let blk = recv.len;
    let Some(mut run) = cx.with(|rt| Run::begin(rt, slot)) else {
        // SAFETY: alone, one block to send and one to receive, of one
        // length (checked by `allgather`).
        return unsafe { alone_copy(cx, slot, Some(send), Some(recv.ptr)) };
    };
    let (n, me) = (run.team.size(), run.team.me);
    let recv_at = |j: usize| recv.ptr.wrapping_add(j * blk);
    // Bytes `off..off + len` of send block `j`.
    let send_part = |j: usize, off: usize, len: usize| {
        // SAFETY: within the send buffer of `n` blocks (MPI contract).
        unsafe { slice_at(send.ptr.add(j * blk + off), len) }
    };
    // SAFETY: our receive block: `blk` writable bytes, not the send
    // buffer.
    unsafe { shm_engine::copy::bytes(send_part(me, 0, blk).as_ptr(), recv_at(me), blk) };
    Some((|| {
        let mut bad = None;
        if expose::alltoall(&run.team, blk) {
            // Expose the send buffer, and copy each member's block for
            // us out of what it exposed.
            run.expose_all(cx, send.ptr.cast_const(), n * blk)?;
            for j in (0..n).filter(|&j| j != me) {
                // SAFETY: receive block j: `blk` writable bytes.
                let out = unsafe { slice_mut(recv_at(j), blk) };
                keep(&mut bad, run.pull(j, n * blk, me * blk, out));
            }
            run.release(cx)?;
            run.end();
            return bad.map_or(Ok(()), |e| Err(e.on(slot)));
        }
        if in_line(n, blk) {
            run.next();
            run.post(cx, send_part(0, 0, n * blk))?;
            run.wait_posted(cx, None, run.t)?;
            for j in (0..n).filter(|&j| j != me) {
                // SAFETY: receive block j: `blk` writable bytes, not our
                // own block.
                let out = unsafe { slice_mut(recv_at(j), blk) };
                keep(&mut bad, run.copy_out(j, n * blk, me * blk, out));
            }
            run.end();
            return bad.map_or(Ok(()), |e| Err(e.on(slot)));
        }
        let per = share(n);
        for (off, len) in split(blk, per) {
            run.next();
            run.place_shares(cx, per, len, |j| send_part(j, off, len))?;
            run.wait_posted(cx, None, run.t)?;
            for j in (0..n).filter(|&j| j != me && len > 0) {
                // SAFETY: bytes `off..off + len` of receive block j:
                // writable, not our own block.
                let out = unsafe { slice_mut(recv_at(j).add(off), len) };
                keep(&mut bad, run.copy_out(j, PLACED, me * per, out));
            }
        }
        run.end();
        bad.map_or(Ok(()), |e| Err(e.on(slot)))
    })())
}

/// `MPI_Gather` to `root` of blocks of one length, as `algo::gather`
/// compiles it: in pieces of up to [`DATA`](crate::coll::board::DATA)
/// bytes, each member posting a piece of its block straight from its
/// send buffer (packed first where it is not contiguous) and the root
/// copying every member's piece straight into its receive buffer; or,
/// where [`expose::gather`] says so, exposed in the two steps of a
/// gatherv. The receive buffer must be contiguous (otherwise the
/// schedule runs). `send` is `None` for `MPI_IN_PLACE` (the root's only).
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
    // SAFETY: forwarded from the caller.
    let (sb, rb, blk) = unsafe { rooted_blocks(root == me, send, recv) }?;
    let Some(mut run) = cx.with(|rt| Run::begin(rt, slot)) else {
        // SAFETY: alone, this member is the root: its receive buffer is
        // one block as long as its send data (checked).
        return unsafe { alone_copy(cx, slot, sb.as_ref(), rb.as_ref().map(|r| r.ptr)) };
    };
    // SAFETY: the send buffer is readable (MPI contract).
    let own = sb.as_ref().map(|s| unsafe { s.data() });
    if expose::gather(&run.team, blk) {
        let recv = rb.as_ref().map_or(std::ptr::null_mut(), |rb| rb.ptr);
        let out = |j: usize| (recv.wrapping_add(j * blk), blk);
        // SAFETY: at the root, receive block j is `blk` contiguous
        // writable bytes of the receive buffer (checked, MPI contract),
        // not the send buffer (not in place), and the send data is `blk`
        // bytes (checked).
        return Some(unsafe {
            gather_released(cx, slot, run, root, own.as_deref(), out, |_| true)
        });
    }
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
        unsafe { shm_engine::copy::bytes(own.as_ptr(), recv_at(me), blk) };
    }
    Some((|| {
        let mut bad = None;
        for (off, len) in pieces(blk, 1) {
            run.next();
            // Nobody reads the root's post: it says the root may read
            // this step's pieces until it posts the next.
            run.post(cx, &[])?;
            run.wait_posted(cx, None, run.t)?;
            for j in (0..n).filter(|&j| j != me && len > 0) {
                // SAFETY: bytes `off..off + len` of receive block j:
                // writable, not the send buffer.
                let out = unsafe { slice_mut(recv_at(j).add(off), len) };
                keep(&mut bad, run.copy_out(j, len, 0, out));
            }
        }
        run.end();
        bad.map_or(Ok(()), |e| Err(e.on(slot)))
    })())
}

/// The buffers of a gather or scatter, blocks of one length: this
/// member's `own` (`None`: in place, the root's only) and, at the root,
/// one block of `all` (the blocks the root gathers or scatters), which
/// must be contiguous; and the length of a block. `None` where the
/// arguments are not valid, or `own` is not as long as a block of `all`
/// (type signatures that differ, the schedule's to report).
///
/// # Safety
/// The arguments address their elements (MPI contract).
unsafe fn rooted_blocks(
    is_root: bool,
    own: Option<&Arg>,
    all: &Arg,
) -> Option<(Option<UserBuf>, Option<UserBuf>, usize)> {
    let own = match own {
        // SAFETY: the caller's promise.
        Some(a) => Some(unsafe { a.buf() }.ok()?),
        None if is_root => None,
        None => return None,
    };
    let all = if is_root {
        // SAFETY: the caller's promise.
        let b = unsafe { all.buf() }.ok()?;
        Some(b.dt.is_contiguous().then_some(b)?)
    } else {
        None
    };
    let blk = match (&all, &own) {
        (Some(b), _) => b.len,
        (None, Some(o)) => o.len,
        (None, None) => unreachable!("a member other than the root has a buffer"),
    };
    if own.as_ref().is_some_and(|o| o.len != blk) {
        return None;
    }
    Some((own, all, blk))
}

/// [`rooted_blocks`] of gatherv and scatterv: this member's `own`, and
/// at the root the `all(n)` blocks, contiguous, for members `(me, n)`.
///
/// # Safety
/// As for [`rooted_blocks`].
unsafe fn rooted_v_blocks(
    is_root: bool,
    (me, n): (usize, usize),
    own: Option<&Arg>,
    all: impl FnOnce(usize) -> MpiResult<Blocks>,
) -> Option<(Option<UserBuf>, Vec<UserBuf>)> {
    let own = match own {
        // SAFETY: the caller's promise.
        Some(a) => Some(unsafe { a.buf() }.ok()?),
        None if is_root => None,
        None => return None,
    };
    if !is_root {
        return Some((own, Vec::new()));
    }
    // SAFETY: the caller's promise.
    let all = unsafe { all(n).ok()?.bufs() }.ok()?;
    let fits = own.as_ref().is_none_or(|o| o.len == all[me].len);
    (fits && all.iter().all(|u| u.dt.is_contiguous())).then_some((own, all))
}

/// `MPI_Gatherv` to `root` in the two steps `algo::gatherv` compiles:
/// each member posts its block straight from its send buffer (packed
/// first where it is not contiguous), or exposes it, and the root copies
/// every block straight into its receive blocks, which must be contiguous
/// (otherwise the schedule runs); then the root posts its release.
/// `send` is `None` for `MPI_IN_PLACE` (the root's only); `recv` matters
/// at the root only.
///
/// # Safety
/// As for `calls::gather`.
pub unsafe fn gatherv(
    cx: &mut impl Access,
    slot: usize,
    root: Root,
    send: Option<&Arg>,
    recv: impl FnOnce(usize) -> MpiResult<Blocks>,
) -> Option<MpiResult<()>> {
    let (root, me, n) = cx.with(|rt| rooted(rt, slot, root))?;
    let is_root = root == me;
    // SAFETY: forwarded from the caller.
    let (sb, outs) = unsafe { rooted_v_blocks(is_root, (me, n), send, recv) }?;
    let Some(run) = cx.with(|rt| Run::begin(rt, slot)) else {
        // SAFETY: alone, this member is the root: its one receive block
        // is as long as its send data (checked).
        return unsafe { alone_copy(cx, slot, sb.as_ref(), outs.first().map(|o| o.ptr)) };
    };
    // SAFETY: the send buffer is readable (MPI contract).
    let own = sb.as_ref().map(|s| unsafe { s.data() });
    let out = |j: usize| (outs[j].ptr, outs[j].len);
    // SAFETY: the receive blocks are contiguous and writable (checked,
    // MPI contract), not the send buffer (not in place), and the root's
    // is as long as its send data (checked).
    Some(unsafe { gather_released(cx, slot, run, root, own.as_deref(), out, gatherv_exposes) })
}

/// A gather to `root` in the two steps of `algo::gather_released`: each
/// member posts its block `own` (`None`: in place, the root's only)
/// straight from its send buffer, or exposes it where `exposes` says so
/// of its length, and the root copies every block straight into its
/// receive block `out(j)` (address, bytes; asked at the root only); then
/// the root posts its release.
///
/// # Safety
/// At the root, each `out(j)` is writable for its bytes, not `own`, and
/// its own is as long as `own`.
unsafe fn gather_released(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    root: usize,
    own: Option<&[u8]>,
    out: impl Fn(usize) -> (*mut u8, usize),
    exposes: impl Fn(usize) -> bool,
) -> MpiResult<()> {
    let (me, n) = (run.team.me, run.team.size());
    run.next();
    if me != root {
        let own = own.expect("a member other than the root sends");
        let exposed = exposes(own.len());
        if exposed {
            run.expose(cx, own.as_ptr(), own.len(), true)?;
        } else {
            run.post_ahead(cx, own)?;
        }
        run.next();
        run.post_ahead(cx, &[])?;
        if exposed {
            run.wait_posted(cx, Some(root), run.t)?;
        }
        run.end();
        return Ok(());
    }
    if let Some(own) = own {
        // SAFETY: the root's receive block: writable, as long as the
        // send data, not the send buffer (the caller's promise).
        unsafe { shm_engine::copy::bytes(own.as_ptr(), out(me).0, own.len()) };
    }
    run.post(cx, &[])?;
    run.wait_posted(cx, None, run.t)?;
    let mut bad = None;
    for (j, (ptr, len)) in (0..n)
        .map(|j| (j, out(j)))
        .filter(|&(j, (_, len))| j != me && len > 0)
    {
        // SAFETY: receive block j: `len` writable bytes (the caller's
        // promise).
        let out = unsafe { slice_mut(ptr, len) };
        let got = if exposes(len) {
            run.pull(j, len, 0, out)
        } else {
            run.copy_out(j, len, 0, out)
        };
        keep(&mut bad, got);
    }
    run.next();
    run.post(cx, &[])?;
    run.end();
    bad.map_or(Ok(()), |e| Err(e.on(slot)))
}

/// `MPI_Scatterv` from `root` in the one step `algo::scatterv` compiles:
/// the root writes each member's record and block (or the record of its
/// exposure) straight from its send buffer into that member's share of
/// its data buffer, and each member copies its block, or pulls it,
/// straight into its receive buffer. The root's send blocks and the receive buffer must be
/// contiguous (otherwise the schedule runs). `recv` is `None` for
/// `MPI_IN_PLACE` (the root's only); `send` matters at the root only.
///
/// # Safety
/// As for `calls::scatter`.
pub unsafe fn scatterv(
    cx: &mut impl Access,
    slot: usize,
    root: Root,
    send: impl FnOnce(usize) -> MpiResult<Blocks>,
    recv: Option<&Arg>,
) -> Option<MpiResult<()>> {
    let (root, me, n) = cx.with(|rt| rooted(rt, slot, root))?;
    let is_root = root == me;
    // SAFETY: forwarded from the caller.
    let (rb, ins) = unsafe { rooted_v_blocks(is_root, (me, n), recv, send) }?;
    if rb.as_ref().is_some_and(|r| !r.dt.is_contiguous()) {
        return None;
    }
    let Some(mut run) = cx.with(|rt| Run::begin(rt, slot)) else {
        // SAFETY: alone, this member is the root: its one send block is
        // as long as its receive buffer (checked).
        return unsafe { alone_copy(cx, slot, ins.first(), rb.as_ref().map(|r| r.ptr)) };
    };
    let per = share(n);
    run.next();
    Some((|| {
        if !is_root {
            let out = rb.expect("a member other than the root receives");
            run.wait_posted(cx, Some(root), run.t)?;
            // SAFETY: the receive buffer: `out.len` contiguous writable
            // bytes, nothing else refers to them during the copy.
            let dst = unsafe { slice_mut(out.ptr, out.len) };
            let got = run.take_placed(root, me * per, dst);
            run.post(cx, &[])?;
            run.end();
            return match got {
                Ran::Failed(e) => Err(e.on(slot)),
                _ => Ok(()),
            };
        }
        if let Some(out) = &rb {
            // SAFETY: the root's send block and receive buffer: as long
            // (checked), not the same (not in place).
            unsafe { shm_engine::copy::bytes(ins[me].ptr, out.ptr, out.len) };
        }
        // Each other member's record, then its block unless exposed.
        let others = ins.iter().enumerate().filter(|&(j, _)| j != me);
        let exposes = |u: &UserBuf| expose::scatterv(&run.team, u.len);
        let records: Vec<_> = others
            .clone()
            .map(|(j, u)| {
                (
                    j * per,
                    expose::record(exposes(u).then_some(u.ptr.cast_const()), u.len),
                )
            })
            .collect();
        let exposed = others.clone().any(|(_, u)| exposes(u));
        let pieces = records.iter().map(|(at, r)| (*at, &r[..])).chain(
            others
                .filter(|(_, u)| !exposes(u))
                // SAFETY: the root's send block j: readable (MPI contract).
                .map(|(j, u)| (j * per + expose::LEN, unsafe { slice_at(u.ptr, u.len) })),
        );
        run.place(cx, 0, pieces)?;
        if exposed {
            run.wait_posted(cx, None, run.t)?;
        }
        run.end();
        Ok(())
    })())
}

/// `MPI_Scatter` from `root` of blocks of one length, as `algo::scatter`
/// compiles it: in pieces, a step carrying `share` bytes of each block,
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
    // SAFETY: forwarded from the caller.
    let (rb, sb, blk) = unsafe { rooted_blocks(root == me, recv, send) }?;
    if rb.as_ref().is_some_and(|r| !r.dt.is_contiguous()) {
        return None;
    }
    let Some(mut run) = cx.with(|rt| Run::begin(rt, slot)) else {
        // SAFETY: alone, this member is the root: its send buffer is one
        // block as long as its receive buffer (checked).
        return unsafe { alone_copy(cx, slot, sb.as_ref(), rb.as_ref().map(|r| r.ptr)) };
    };
    let per = share(n);
    let exposed = expose::scatter(&run.team, blk);
    if exposed || in_line(n, blk) {
        let bufs = (sb.as_ref(), rb.as_ref());
        // SAFETY: forwarded from the caller.
        return Some(unsafe { scatter_whole(cx, slot, run, root, bufs, exposed) });
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
                keep(&mut bad, run.copy_out(root, PLACED, me * per, dst));
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
        unsafe { shm_engine::copy::bytes(send_part(me, 0, blk).as_ptr(), out.ptr, blk) };
    }
    Some((|| {
        for (off, len) in split(blk, per) {
            run.next();
            run.place_shares(cx, per, len, |j| send_part(j, off, len))?;
        }
        run.end();
        Ok(())
    })())
}

/// The one step of a scatter whose root hands over all its blocks at
/// once: in its flag line where they all fit (`exposed` false,
/// `algo::in_line`), or exposed (`algo::scatter`). Each reader copies its
/// own block and acknowledges; the root of an exposure waits for every
/// acknowledgement. `send` is the root's (one block of it), `recv` a
/// reader's, or the root's unless in place.
///
/// # Safety
/// As for [`scatter`].
unsafe fn scatter_whole(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    root: usize,
    (send, recv): (Option<&UserBuf>, Option<&UserBuf>),
    exposed: bool,
) -> MpiResult<()> {
    let (n, me) = (run.team.size(), run.team.me);
    run.next();
    if let Some(sb) = send {
        let blk = sb.len;
        if let Some(out) = recv {
            // SAFETY: the root's send block and its receive buffer: `blk`
            // bytes each, not the same (not in place).
            unsafe { shm_engine::copy::bytes(sb.ptr.add(me * blk), out.ptr, blk) };
        }
        if exposed {
            run.expose(cx, sb.ptr, n * blk, true)?;
            run.wait_posted(cx, None, run.t)?;
        } else {
            // SAFETY: the root's `n` contiguous send blocks (MPI contract).
            run.post_ahead(cx, unsafe { slice_at(sb.ptr, n * blk) })?;
        }
        run.end();
        return Ok(());
    }
    let out = recv.expect("a member other than the root receives");
    run.wait_posted(cx, Some(root), run.t)?;
    // SAFETY: the receive buffer: `out.len` contiguous writable bytes,
    // nothing else refers to them during the copy.
    let dst = unsafe { slice_mut(out.ptr, out.len) };
    let (all, at) = (n * out.len, me * out.len);
    let got = if exposed {
        // The root's memory is the application's again once everyone
        // acknowledged: copy first.
        let got = run.pull(root, all, at, dst);
        run.post_ahead(cx, &[])?;
        got
    } else {
        // Acknowledge before copying, as a bcast's reader does: BP2 lets
        // a member read step `t` until it posts `t + 1`.
        run.post_ahead(cx, &[])?;
        run.copy_out(root, all, at, dst)
    };
    run.end();
    match got {
        Ran::Failed(e) => Err(e.on(slot)),
        _ => Ok(()),
    }
}
