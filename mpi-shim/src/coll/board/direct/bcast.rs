//! `MPI_Bcast` on the board: in pieces through the root's data buffers,
//! or exposed by the root.

use std::borrow::Cow;

use super::{Access, Run, alone, begin_rooted, slice_at, slice_mut};
use crate::coll::board::algo::split;
use crate::coll::board::{Ran, expose, read};
use crate::coll::calls::Arg;
use crate::core::buffer::UserBuf;
use crate::core::peer::Root;
use crate::core::{MpiResult, pool};

/// `MPI_Bcast`, in pieces of [`Team::bcast_piece`](crate::coll::board::Team::bcast_piece) bytes, or exposed by
/// the root ([`expose::bcast`]).
///
/// # Safety
/// As for `calls::bcast`.
pub unsafe fn bcast(
    cx: &mut impl Access,
    slot: usize,
    root: Root,
    buf: &Arg,
) -> Option<MpiResult<()>> {
    // SAFETY: the caller's promise.
    let ub = unsafe { buf.buf() }.ok()?;
    let layout = (!ub.dt.is_contiguous()).then_some(&ub);
    let (run, root, me) = cx.with(|rt| begin_rooted(rt, slot, root))?;
    // SAFETY: the buffer as `ub` describes it (the caller's promise).
    Some(unsafe { bcast_run(cx, slot, run, root == me, root, (ub.ptr, ub.len), layout) })
}

/// [`bcast`] of `len` contiguous bytes at `ptr`, which an entry layer
/// decoded from a predefined datatype (what building an [`Arg`] and its
/// buffer would cost an 8 B bcast: an eighth of its instructions). `None`
/// where the collective does not run here, or `root` is not valid.
///
/// # Safety
/// `len` bytes at `ptr`, readable at the root and writable elsewhere
/// (MPI contract).
pub unsafe fn bcast_flat(
    cx: &mut impl Access,
    slot: usize,
    root: Root,
    ptr: *mut u8,
    len: usize,
) -> Option<MpiResult<()>> {
    let Some((run, root_rank, me)) = cx.with(|rt| begin_rooted(rt, slot, root)) else {
        return cx.with(|rt| alone(rt, slot, Some(root))).then_some(Ok(()));
    };
    // SAFETY: the caller's promise.
    Some(unsafe { bcast_run(cx, slot, run, root_rank == me, root_rank, (ptr, len), None) })
}

/// The steps of a bcast of the buffer `at` (address, bytes packed) from
/// member `root`; `layout` is the buffer's where it is not contiguous.
///
/// # Safety
/// As for [`bcast_flat`], or as `layout` describes the buffer.
unsafe fn bcast_run(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    is_root: bool,
    root: usize,
    at: (*mut u8, usize),
    layout: Option<&UserBuf>,
) -> MpiResult<()> {
    let (ptr, total) = at;
    if expose::bcast(&run.team, total) {
        // SAFETY: forwarded from the caller.
        return unsafe { bcast_exposed(cx, slot, run, is_root, root, at, layout) };
    }
    let piece = run.team.bcast_piece();
    if is_root {
        // SAFETY: forwarded from the caller.
        let data = unsafe { root_data(ptr, total, layout) };
        for (off, len) in split(total, piece) {
            run.next();
            run.post_ahead(cx, &data[off..off + len])?;
        }
        run.end();
        return Ok(());
    }
    let mut bad = None;
    // A non-contiguous buffer of several pieces is gathered packed and
    // unpacked once at the end; of one piece, unpacked off the board.
    let mut packed = layout.filter(|_| total > piece).map(|_| pool::take(total));
    let mut received = 0;
    for (off, len) in split(total, piece) {
        run.next();
        run.wait_posted(cx, Some(root), run.t)?;
        // Acknowledge before copying: BP2 lets a member read step `t`
        // until it posts `t + 1`, so the root may place the next
        // piece in its other buffer while this one is copied out.
        run.post_ahead(cx, &[])?;
        let got = read(&run.board(), root, run.t, len, 0, len, |x| {
            received += x.len();
            match (layout, packed.as_mut()) {
                // SAFETY: bytes `off..off + len` of the contiguous
                // buffer, writable elsewhere (MPI contract).
                (None, _) => unsafe { shm_engine::copy::bytes(x.as_ptr(), ptr.add(off), x.len()) },
                (Some(_), Some(p)) => shm_engine::copy::slice(&mut p[off..off + x.len()], x),
                // SAFETY: one piece in all (`packed` is for several);
                // the buffer is writable (MPI contract).
                (Some(ub), None) => unsafe { ub.unpack(x) },
            }
        });
        if let Ran::Failed(e) = got {
            bad.get_or_insert(e);
        }
    }
    run.end();
    if let (Some(ub), Some(p)) = (layout, packed) {
        // SAFETY: the buffer is writable (MPI contract); `received`
        // bytes arrived (fewer only from an erroneous sender).
        unsafe { ub.unpack(&p[..received.min(p.len())]) };
        pool::give(p);
    }
    bad.map_or(Ok(()), |e| Err(e.on(slot)))
}

/// The steps of a bcast that the root exposes (`algo::bcast`): the
/// readers copy the whole buffer from the root, then acknowledge, and the
/// root waits for every acknowledgement, so a large bcast ends at the root
/// only once every reader has its copy. A reader whose buffer is not
/// contiguous copies into a packed buffer and unpacks it (not when the
/// copy failed); a contiguous one copies straight into its buffer, which
/// a failed or short copy leaves partly written (the call then fails, as
/// after a truncated message).
///
/// # Safety
/// As for [`bcast_run`].
unsafe fn bcast_exposed(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    is_root: bool,
    root: usize,
    at: (*mut u8, usize),
    layout: Option<&UserBuf>,
) -> MpiResult<()> {
    let (ptr, total) = at;
    run.next();
    if is_root {
        // SAFETY: forwarded from the caller.
        let data = unsafe { root_data(ptr, total, layout) };
        run.expose(cx, data.as_ptr(), data.len(), true)?;
        run.wait_posted(cx, None, run.t)?;
        run.end();
        return Ok(());
    }
    run.wait_posted(cx, Some(root), run.t)?;
    let got = match layout {
        // SAFETY: `total` contiguous bytes, writable at a reader (MPI
        // contract), and nothing else refers to them during the copy.
        None => run.pull(root, total, 0, unsafe { slice_mut(ptr, total) }),
        Some(ub) => {
            let mut packed = pool::take(total);
            let got = run.pull(root, total, 0, &mut packed);
            if matches!(got, Ran::Done) {
                // SAFETY: the buffer is writable (MPI contract).
                unsafe { ub.unpack(&packed) };
            }
            pool::give(packed);
            got
        }
    };
    run.post_ahead(cx, &[])?;
    run.end();
    match got {
        Ran::Failed(e) => Err(e.on(slot)),
        _ => Ok(()),
    }
}

/// A bcast root's data, packed: borrowed from the buffer `ptr` where it
/// is contiguous (`total` bytes), else packed as `layout` says.
///
/// # Safety
/// As for [`bcast_run`] at the root.
unsafe fn root_data<'a>(ptr: *mut u8, total: usize, layout: Option<&'a UserBuf>) -> Cow<'a, [u8]> {
    match layout {
        // SAFETY: the root's buffer is readable (MPI contract).
        Some(ub) => unsafe { ub.data() },
        // SAFETY: as above; `total` contiguous bytes.
        None => Cow::Borrowed(unsafe { slice_at(ptr, total) }),
    }
}
