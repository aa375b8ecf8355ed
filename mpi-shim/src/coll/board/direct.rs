//! Blocking collectives run straight on the board, without compiling a
//! schedule: barrier, single-piece bcast, small reduce and allreduce, and
//! single-step allgather and alltoall of contiguous blocks.
//! They take exactly the steps the board algorithms ([`super::algo`])
//! compile, from the same step counter, so one member may run a
//! collective here while another runs it as a schedule.
//!
//! A call comes here only when the communicator's board is set up, no
//! nonblocking board collective of this process is still running on it,
//! and the library is not in `MPI_THREAD_MULTIPLE` (whose blocking calls
//! release the lock while they wait); and only once its arguments are
//! valid. Otherwise the answer is `None` and the caller compiles the
//! schedule, which also reports any error.

use std::sync::Arc;

use shm_engine::board::Board;

use super::{DATA, PLACED, Ran, SMALL, Team, missing, read, watch};
use crate::coll::calls::{Arg, Reduce, root_and_me};
use crate::core::peer::Root;
use crate::core::progress::Poll;
use crate::core::{MpiResult, Runtime, threads};

/// Looks at the flags a wait needs before it starts progressing the rest
/// of the library and backing off.
const QUICK_POLLS: u32 = 64;

/// The communicator's board, if a blocking collective may run on it here.
fn ready(rt: &Runtime, slot: usize) -> Option<Arc<Team>> {
    if threads::multiple() {
        return None;
    }
    let team = rt.comm(slot).ok()?.board.clone()??;
    (matches!(team.areas.get(), Some(Ok(_))) && team.idle()).then_some(team)
}

/// One collective's run on the board: its turn and step number taken,
/// the communicator's collective count moved on as a schedule would.
struct Run {
    team: Arc<Team>,
    ticket: u64,
    t: u64,
}

impl Run {
    fn start(rt: &mut Runtime, slot: usize, team: Arc<Team>) -> MpiResult<Self> {
        let c = rt.comm_mut(slot)?;
        c.coll_seq = c.coll_seq.wrapping_add(1);
        let ticket = team.ticket();
        let t = team.step();
        Ok(Self { team, ticket, t })
    }

    fn board(&self) -> Board<'_> {
        let Some(Ok(areas)) = self.team.areas.get() else {
            unreachable!("checked by `ready`")
        };
        Board::new(&areas.0, self.team.me)
    }

    /// Wait (progressing everything else) until `missing` finds no flag
    /// missing; it names the first missing one as (member, step).
    fn wait(
        &self,
        rt: &mut Runtime,
        mut missing: impl FnMut(&Board<'_>) -> Option<(usize, u64)>,
    ) -> MpiResult<()> {
        let b = self.board();
        // A short spin on the flags alone first: a peer that is running
        // posts within a few cache-line transfers.
        let polls = if rt.ep.oversubscribed() {
            0
        } else {
            QUICK_POLLS
        };
        for _ in 0..polls {
            if missing(&b).is_none() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        rt.wait_until(|rt| {
            Ok(match missing(&b) {
                None => Poll::Ready(()),
                Some((m, t)) => {
                    watch(&mut rt.ep, &b, m, t);
                    Poll::Idle
                }
            })
        })
    }

    /// Post step `t` with `data` (at most [`DATA`] bytes), once every
    /// member posted `t - 1`.
    fn post(&self, rt: &mut Runtime, data: &[u8]) -> MpiResult<()> {
        self.wait_posted(rt, None, self.t.wrapping_sub(1))?;
        self.team.post_data(&mut rt.ep, &self.board(), self.t, data);
        Ok(())
    }

    /// Write `pieces` (offset, bytes) into this member's data buffer of
    /// this step and post it without a length (readers read it as
    /// [`PLACED`](super::PLACED)), once every member posted `t - 1`.
    fn place(&self, rt: &mut Runtime, pieces: &[(usize, &[u8])]) -> MpiResult<()> {
        self.wait_posted(rt, None, self.t.wrapping_sub(1))?;
        let b = self.board();
        for &(at, data) in pieces {
            self.team.write_data(&b, self.t, at, data);
        }
        self.team.publish(&mut rt.ep, &b, self.t, 0, &[]);
        Ok(())
    }

    /// Wait until member `who` (all: `None`) posted step `t`.
    fn wait_posted(&self, rt: &mut Runtime, who: Option<usize>, t: u64) -> MpiResult<()> {
        self.wait(rt, |b| missing(b, who, t).map(|m| (m, t)))
    }

    fn end(self) {
        self.team.end_turn(self.ticket);
    }
}

/// `MPI_Barrier` on communicator `slot`.
pub fn barrier(rt: &mut Runtime, slot: usize) -> Option<MpiResult<()>> {
    let team = ready(rt, slot)?;
    Some((|| {
        let run = Run::start(rt, slot, team)?;
        run.post(rt, &[])?;
        run.wait_posted(rt, None, run.t)?;
        run.end();
        Ok(())
    })())
}

/// `MPI_Bcast` of at most [`DATA`] bytes.
///
/// # Safety
/// As for `calls::bcast`.
pub unsafe fn bcast(rt: &mut Runtime, slot: usize, root: Root, buf: &Arg) -> Option<MpiResult<()>> {
    let team = ready(rt, slot)?;
    let (root, me, _) = root_and_me(rt, slot, root).ok()?;
    // SAFETY: the caller's promise.
    let ub = unsafe { buf.buf() }.ok()?;
    if ub.len > DATA {
        return None;
    }
    Some((|| {
        let run = Run::start(rt, slot, team)?;
        if me == root {
            // SAFETY: the root's buffer is readable.
            run.post(rt, &unsafe { ub.data() })?;
            run.end();
            return Ok(());
        }
        run.wait_posted(rt, Some(root), run.t)?;
        // SAFETY: the buffer is writable elsewhere (MPI contract).
        let got = read(&run.board(), root, run.t, ub.len, 0, ub.len, |x| unsafe {
            ub.unpack(x)
        });
        run.post(rt, &[])?;
        run.end();
        match got {
            Ran::Truncated(e) => Err(e.on(slot)),
            _ => Ok(()),
        }
    })())
}

/// `MPI_Allreduce` (`root: None`) or `MPI_Reduce` of at most [`SMALL`]
/// bytes in all (vector times members), whole vectors reduced in rank
/// order.
///
/// # Safety
/// As for `calls::allreduce` and `calls::reduce`.
pub unsafe fn reduce(
    rt: &mut Runtime,
    slot: usize,
    root: Option<Root>,
    args: &Reduce,
    count: i64,
) -> Option<MpiResult<()>> {
    let team = ready(rt, slot)?;
    let (root, me, n) = match root {
        Some(r) => {
            let (root, me, n) = root_and_me(rt, slot, r).ok()?;
            (Some(root), me, n)
        }
        None => (None, team.me, team.size()),
    };
    let reads = root.is_none_or(|r| r == me);
    // SAFETY: forwarded from the caller (as calls::reduce/allreduce ask).
    let (red, src) = unsafe { args.source(count, reads, reads) }.ok()?;
    let len = src.len;
    if len * n > SMALL {
        return None;
    }
    let out = if reads {
        // SAFETY: the receive buffer holds `count` elements.
        Some(unsafe { args.output(count) }.ok()?)
    } else {
        None
    };
    // Contiguous buffers are used in place: the contribution is posted
    // from the send buffer and the result reduced straight into the
    // receive buffer (a copy of the contribution first with MPI_IN_PLACE,
    // where the two are one).
    let in_place = out.as_ref().is_some_and(|o| o.ptr == src.ptr);
    let own = if in_place {
        // SAFETY: the send buffer is readable (MPI contract).
        std::borrow::Cow::Owned(unsafe { src.data() }.into_owned())
    } else {
        // SAFETY: as above.
        unsafe { src.data() }
    };
    Some((|| {
        let run = Run::start(rt, slot, team)?;
        run.post(rt, &own)?;
        let Some(out) = out else {
            run.end();
            return Ok(());
        };
        run.wait_posted(rt, None, run.t)?;
        let b = run.board();
        let mut scratch = Vec::new();
        let acc: &mut [u8] = if out.dt.is_contiguous() {
            // SAFETY: `len` contiguous writable bytes, not the send
            // buffer (`own` is a copy when they are one).
            unsafe { std::slice::from_raw_parts_mut(out.ptr, len) }
        } else {
            scratch.resize(len, 0);
            &mut scratch
        };
        // x_0 op (x_1 op (... op x_{n-1})): the rank order holds for any
        // operation, and every member gets the same bits.
        let mut bad = None;
        for j in (0..n).rev() {
            let got = if j == me {
                if j == n - 1 {
                    acc.copy_from_slice(&own);
                } else {
                    red.apply(&own, acc);
                }
                Ran::Done
            } else if j == n - 1 {
                read(&b, j, run.t, len, 0, len, |x| {
                    acc[..x.len()].copy_from_slice(x)
                })
            } else {
                read(&b, j, run.t, len, 0, len, |x| {
                    red.apply(x, &mut acc[..x.len()])
                })
            };
            if let Ran::Truncated(e) = got {
                bad.get_or_insert(e);
            }
        }
        run.end();
        if !out.dt.is_contiguous() {
            // SAFETY: the receive buffer is writable (MPI contract).
            unsafe { out.unpack(&scratch) };
        }
        bad.map_or(Ok(()), |e| Err(e.on(slot)))
    })())
}

/// `MPI_Allgather` (`alltoall` false: every member's block to every
/// member) or `MPI_Alltoall` (block `j` of the send buffer to member `j`)
/// of contiguous blocks of `recv`'s size, in one step: at most [`DATA`]
/// bytes per block for allgather, `DATA / n` for all-to-all. `send` is
/// `None` for `MPI_IN_PLACE` (allgather only).
///
/// # Safety
/// As for `calls::allgather` and `calls::alltoall`.
pub unsafe fn allgather(
    rt: &mut Runtime,
    slot: usize,
    send: Option<&Arg>,
    recv: &Arg,
    alltoall: bool,
) -> Option<MpiResult<()>> {
    let team = ready(rt, slot)?;
    let (n, me) = (team.size(), team.me);
    // SAFETY: the caller's promise (one block of the receive buffer).
    let rb = unsafe { recv.buf() }.ok()?;
    let blk = rb.len;
    let room = if alltoall { DATA / n } else { DATA };
    if !rb.dt.is_contiguous() || blk > room {
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
    let recv_at = |j: usize| rb.ptr.wrapping_add(j * blk);
    Some((|| {
        let run = Run::start(rt, slot, team)?;
        if alltoall {
            let sb = sb.as_ref().expect("checked above");
            // SAFETY: block j of the send buffer: `blk` contiguous
            // readable bytes (MPI contract).
            let block = |j: usize| unsafe { std::slice::from_raw_parts(sb.ptr.add(j * blk), blk) };
            let pieces: Vec<(usize, &[u8])> = (0..n)
                .filter(|&j| j != me && blk > 0)
                .map(|j| (j * room, block(j)))
                .collect();
            run.place(rt, &pieces)?;
            // SAFETY: our blocks of both buffers (distinct: no in-place).
            unsafe { std::ptr::copy_nonoverlapping(sb.ptr.add(me * blk), recv_at(me), blk) };
        } else {
            match &sb {
                Some(s) => {
                    // SAFETY: the send buffer is readable (MPI contract).
                    let own = unsafe { s.data() };
                    run.post(rt, &own)?;
                    // SAFETY: our block of the receive buffer, writable,
                    // `blk` (= `own.len()`) bytes.
                    unsafe { std::ptr::copy_nonoverlapping(own.as_ptr(), recv_at(me), blk) };
                }
                None => {
                    // SAFETY: our block of the receive buffer holds our data.
                    let own = unsafe { std::slice::from_raw_parts(recv_at(me), blk) };
                    run.post(rt, own)?;
                }
            }
        }
        run.wait_posted(rt, None, run.t)?;
        let b = run.board();
        let mut bad = None;
        for j in (0..n).filter(|&j| j != me) {
            // SAFETY: block j of the receive buffer: `blk` writable bytes.
            let out = unsafe { std::slice::from_raw_parts_mut(recv_at(j), blk) };
            let (posted, off) = if alltoall {
                (PLACED, me * room)
            } else {
                (blk, 0)
            };
            if let Ran::Truncated(e) = read(&b, j, run.t, posted, off, blk, |x| {
                out[..x.len()].copy_from_slice(x)
            }) {
                bad.get_or_insert(e);
            }
        }
        run.end();
        bad.map_or(Ok(()), |e| Err(e.on(slot)))
    })())
}
