//! Blocking collectives run straight on the board, without compiling a
//! schedule: barrier, single-piece bcast, and small reduce and allreduce.
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

use shm_engine::board::{Board, INLINE};

use super::{DATA, Ran, SMALL, Team, read, watch};
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
    (team.areas.get().is_some() && team.idle()).then_some(team)
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
        let areas = self.team.areas.get().expect("checked by `ready`");
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
        let prev = self.t.wrapping_sub(1);
        self.wait(rt, |b| {
            (0..b.len())
                .find(|&m| !b.posted(m, prev))
                .map(|m| (m, prev))
        })?;
        let b = self.board();
        let me = self.team.me;
        if data.len() <= INLINE {
            b.post(self.t, data.len() as u64, data);
        } else {
            // SAFETY: our own data buffer of step `t`, which no member
            // reads any more: all posted `t - 1` (BP2). DATA bytes long.
            unsafe {
                let dst = b.data(me, self.t, DATA);
                std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
            }
            b.post(self.t, data.len() as u64, &[]);
        }
        let others = self.team.ids.iter().enumerate().filter(|&(m, _)| m != me);
        rt.ep.wake_sleepers(others.map(|(_, &id)| id));
        Ok(())
    }

    /// Wait until member `who` (all: `None`) posted this step.
    fn wait_posted(&self, rt: &mut Runtime, who: Option<usize>) -> MpiResult<()> {
        let t = self.t;
        self.wait(rt, |b| match who {
            Some(m) => (!b.posted(m, t)).then_some((m, t)),
            None => (0..b.len()).find(|&m| !b.posted(m, t)).map(|m| (m, t)),
        })
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
        run.wait_posted(rt, None)?;
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
        run.wait_posted(rt, Some(root))?;
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
    let (red, input) = unsafe { args.input(count, reads, reads) }.ok()?;
    if input.len() * n > SMALL {
        return None;
    }
    let out = if reads {
        // SAFETY: the receive buffer holds `count` elements.
        Some(unsafe { args.output(count) }.ok()?)
    } else {
        None
    };
    Some((|| {
        let run = Run::start(rt, slot, team)?;
        run.post(rt, &input)?;
        let Some(out) = out else {
            run.end();
            return Ok(());
        };
        run.wait_posted(rt, None)?;
        let b = run.board();
        // x_0 op (x_1 op (... op x_{n-1})): the rank order holds for any
        // operation, and every member gets the same bits.
        let mut acc = vec![0; input.len()];
        let mut bad = None;
        for j in (0..n).rev() {
            let got = if j == me {
                if j == n - 1 {
                    acc.copy_from_slice(&input);
                } else {
                    red.apply(&input, &mut acc);
                }
                Ran::Done
            } else if j == n - 1 {
                read(&b, j, run.t, input.len(), 0, input.len(), |x| {
                    acc[..x.len()].copy_from_slice(x)
                })
            } else {
                read(&b, j, run.t, input.len(), 0, input.len(), |x| {
                    red.apply(x, &mut acc[..x.len()])
                })
            };
            if let Ran::Truncated(e) = got {
                bad.get_or_insert(e);
            }
        }
        run.end();
        // SAFETY: the receive buffer is writable (MPI contract).
        unsafe { out.unpack(&acc) };
        crate::core::pool::give(input);
        bad.map_or(Ok(()), |e| Err(e.on(slot)))
    })())
}
