//! Blocking collectives run straight on the board, without compiling a
//! schedule: barrier, bcast, reduce and allreduce, allgather(v),
//! alltoall, gather(v) and scatter(v).
//! Data moves between the application's buffers and the board directly:
//! a schedule would pack the input into its own buffer first and unpack
//! the result at the end, two more copies of every byte. Large data goes
//! in pieces, or, larger still, is copied straight from its owner's memory
//! ([`super::expose`]); reductions, the blocks of allgather(v) and
//! alltoall, a gather(v) root's receive buffer and a scatter(v)'s buffers must
//! be contiguous (others compile the schedule); a
//! broadcast's non-contiguous buffer is packed at the root and, in several
//! pieces or exposed, gathered packed at a reader and unpacked once. They
//! take exactly the steps the board algorithms
//! ([`super::algo`]) compile, from the same step counter, so one member
//! may run a collective here while another runs it as a schedule.
//!
//! A call comes here only when the communicator's board is set up and no
//! nonblocking board collective of this process is still running on it,
//! and only once its arguments are valid. Otherwise the answer is `None`
//! and the caller compiles the schedule, which also reports any error.
//! A communicator of this process alone has no board: its barrier, the
//! collectives that move blocks (also alltoallv and alltoallw,
//! `alone_exchange`), and its reductions of predefined types and
//! operations (also scan, exscan, reduce_scatter and
//! reduce_scatter_block, `alone_ranked`) end here too, with nothing to
//! wait for (`alone`).
//!
//! Under `MPI_THREAD_MULTIPLE` a blocking call must not hold the library
//! lock while it waits ([`crate::core::threads`]): the collective reaches
//! the runtime through [`Released`], which takes the lock at its first
//! step, keeps it while the steps need not wait (or wait a short spin),
//! and releases it between the turns of a longer wait. The check that
//! the board is free and the taking of its turn happen under one lock.
//! During its turn this run is the only one to touch the board's
//! counters, also between locks: MPI does not allow two threads to run
//! collectives on one communicator at once (a program that does may hang
//! here, as it may with any MPI), and `MPI_Comm_create_group`, the one
//! concurrent use it allows, runs on messages.

use std::sync::Arc;

use shm_engine::board::{self as bp, Board};

use super::expose;
use super::{Await, INLINE, Ran, Team, missing, read, watch};
use crate::coll::calls::root_and_me;
use crate::core::buffer::UserBuf;
use crate::core::peer::Root;
use crate::core::progress::Poll;
use crate::core::{Library, MpiError, MpiResult, Runtime, StateGuard, in_call, threads};

mod bcast;
mod blocks;
mod reduce;

pub use bcast::{bcast, bcast_flat};
pub use blocks::{allgather, allgatherv, gather, gatherv, scatter, scatterv};
pub use reduce::{Flat, alone_ranked, reduce, reduce_flat};

/// Looks at the flags a wait needs before it starts progressing the rest
/// of the library and backing off.
const QUICK_POLLS: u32 = 64;

/// How a blocking collective reaches the runtime: [`Held`] or
/// [`Released`]. The collectives are generic over it, so the common case,
/// held, compiles to straight calls. Whatever may run application code
/// (a reduction by an application's operation, which may call MPI through
/// the runtime of the call that holds the lock) runs inside
/// [`Access::with`].
pub trait Access {
    /// Run `f` on the runtime.
    fn with<T>(&mut self, f: impl FnOnce(&mut Runtime) -> T) -> T;

    /// Wait until `step` says so, progressing everything else meanwhile
    /// (as [`Runtime::wait_until`]).
    fn wait_until(
        &mut self,
        step: impl FnMut(&mut Runtime) -> MpiResult<Poll<()>>,
    ) -> MpiResult<()>;
}

/// The runtime under the library lock for the whole call: below
/// `MPI_THREAD_MULTIPLE`, or inside a callback (which runs under the lock
/// of the call that runs it).
#[derive(Debug)]
pub struct Held<'a>(pub &'a mut Runtime);

impl Access for Held<'_> {
    #[inline]
    fn with<T>(&mut self, f: impl FnOnce(&mut Runtime) -> T) -> T {
        f(self.0)
    }

    #[inline]
    fn wait_until(
        &mut self,
        step: impl FnMut(&mut Runtime) -> MpiResult<Poll<()>>,
    ) -> MpiResult<()> {
        self.0.wait_until(step)
    }
}

/// Takes the library lock for a call and hands back its guard, once it
/// checked that the library runs (the entry layer's gate).
pub type Enter<'a> = &'a dyn Fn() -> StateGuard;

/// The runtime under `MPI_THREAD_MULTIPLE`: the lock is taken ([`Enter`])
/// by the first step that needs the runtime and kept through the steps
/// that follow and the short spin of a wait (`Run::wait`), so that a
/// collective that does not wait long takes it once, as a held one does.
/// Once a wait turns to progressing the rest of the library and backing
/// off, the lock is released between its turns. Dropping the value
/// releases it too.
pub struct Released<'a> {
    enter: Enter<'a>,
    held: Option<StateGuard>,
}

impl<'a> Released<'a> {
    /// Nothing taken yet: the first step takes the lock through `enter`.
    pub fn new(enter: Enter<'a>) -> Self {
        Self { enter, held: None }
    }

    /// Release the lock, if taken.
    fn release(&mut self) {
        self.held = None;
    }
}

impl std::fmt::Debug for Released<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Released")
            .field("held", &self.held.is_some())
            .finish()
    }
}

impl Access for Released<'_> {
    fn with<T>(&mut self, f: impl FnOnce(&mut Runtime) -> T) -> T {
        let enter = self.enter;
        let guard = self.held.get_or_insert_with(enter);
        let Library::Running(rt) = &mut **guard else {
            unreachable!("`Enter` hands back the lock of a running library")
        };
        in_call(rt, f)
    }

    /// One turn of the wait per lock taken; the lock is kept once the
    /// wait is over.
    fn wait_until(
        &mut self,
        mut step: impl FnMut(&mut Runtime) -> MpiResult<Poll<()>>,
    ) -> MpiResult<()> {
        let mut backoff = shm_engine::Backoff::default();
        loop {
            let done = self.with(|rt| {
                let moved = match step(rt) {
                    Err(e) => return Some(Err(e)),
                    Ok(Poll::Ready(())) => return Some(Ok(())),
                    Ok(Poll::Moved) => true,
                    Ok(Poll::Idle) => false,
                };
                rt.turn(&mut backoff, moved);
                None
            });
            if let Some(done) = done {
                return done;
            }
            self.release();
            threads::let_others_in();
        }
    }
}

/// The communicator's board, if a blocking collective may run on it now.
#[inline]
fn ready(rt: &Runtime, slot: usize) -> Option<Arc<Team>> {
    let super::Boards::Whole(team) = rt.comm(slot).ok()?.board.as_ref()? else {
        return None;
    };
    let team = team.clone();
    (team.setup() == super::Setup::Board && team.idle()).then_some(team)
}

/// One collective's run on the board: its turn taken, the
/// communicator's collective count moved on as a schedule would, and the
/// number of its current step (each step begins with [`Run::next`]).
struct Run {
    team: Arc<Team>,
    ticket: u64,
    t: u64,
    /// Whether this node's processes outnumber its cores (waits do not
    /// spin).
    oversubscribed: bool,
}

impl Run {
    /// Take the board's turn on communicator `slot`, if a collective may
    /// run on it now ([`ready`]).
    #[inline]
    fn begin(rt: &mut Runtime, slot: usize) -> Option<Self> {
        let team = ready(rt, slot)?;
        let c = rt.comm_mut(slot).ok()?;
        c.coll_seq = c.coll_seq.wrapping_add(1);
        let ticket = team.ticket();
        Some(Self {
            team,
            ticket,
            t: 0,
            oversubscribed: rt.ep.oversubscribed(),
        })
    }

    /// Begin the next step: take its number.
    fn next(&mut self) {
        self.t = self.team.step();
    }

    fn board(&self) -> Board<'_> {
        let areas = self.team.areas().expect("checked by `ready`");
        Board::new(&areas.lines, self.team.me)
    }

    /// Wait (progressing everything else) until `missing` finds no flag
    /// missing; it names the first missing one as (member, step).
    fn wait(
        &self,
        cx: &mut impl Access,
        mut missing: impl FnMut(&Board<'_>) -> Option<(usize, u64)>,
    ) -> MpiResult<()> {
        let b = self.board();
        // A short spin on the flags alone first: a peer that is running
        // posts within a few cache-line transfers.
        let polls = if self.oversubscribed { 0 } else { QUICK_POLLS };
        for _ in 0..polls {
            if missing(&b).is_none() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        cx.wait_until(|rt| {
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
    /// member posted `t - 1`: for a member that then waits for every
    /// member's post of this step (barrier, allreduce, allgather,
    /// alltoall, a gather's root), or for member 0's where member 0 posts
    /// last (the oversubscribed barrier), and for the acknowledgements of
    /// scatter(v), which follow the root's post of the step anyway. Posting sooner would not end its wait
    /// sooner; and where processes outnumber cores, a member that arrives
    /// last this way runs on into what follows rather than waiting for
    /// the core: a bcast right after a barrier at 4 processes on 2 cores
    /// took 4.2 µs with barriers that ran ahead, 0.21 µs without.
    fn post(&self, cx: &mut impl Access, data: &[u8]) -> MpiResult<()> {
        self.may_post(cx, false)?;
        cx.with(|rt| self.team.post_data(&mut rt.ep, &self.board(), self.t, data));
        Ok(())
    }

    /// Post step `t` with `data` (at most [`DATA`] bytes), running ahead
    /// where BP2 allows: a contribution that fits in the line waits only
    /// for everyone's `t - 63`. For a member that does not wait for the
    /// others' posts of this step (a bcast's root and its readers'
    /// acknowledgements, an exposed scatter's likewise, the non-roots of
    /// reduce, gather and gatherv): the root of a stream of
    /// small broadcasts posts many before its readers have read them.
    fn post_ahead(&self, cx: &mut impl Access, data: &[u8]) -> MpiResult<()> {
        self.may_post(cx, data.len() <= INLINE)?;
        cx.with(|rt| self.team.post_data(&mut rt.ep, &self.board(), self.t, data));
        Ok(())
    }

    /// Post step `t` with `len` bytes that `f` writes in place (see
    /// `Team::post_built`), once every member posted `t - 1`.
    fn post_built(
        &self,
        cx: &mut impl Access,
        len: usize,
        f: impl FnOnce(&mut [u8]),
    ) -> MpiResult<()> {
        self.may_post(cx, false)?;
        cx.with(|rt| {
            self.team
                .post_built(&mut rt.ep, &self.board(), self.t, len, f)
        });
        Ok(())
    }

    /// Write `pieces` (offset, bytes) into this member's data buffer of
    /// this step and post it saying `len` bytes (more than [`INLINE`]:
    /// readers look in the buffer; 0 for readers that read it as
    /// [`PLACED`](super::PLACED)), once every member posted `t - 1`.
    /// Bytes no reader reads need not be written.
    fn place<'a>(
        &self,
        cx: &mut impl Access,
        len: usize,
        pieces: impl IntoIterator<Item = (usize, &'a [u8])>,
    ) -> MpiResult<()> {
        debug_assert!(len == 0 || len > INLINE);
        self.may_post(cx, false)?;
        let b = self.board();
        for (at, data) in pieces {
            self.team.write_data(&b, self.t, at, data);
        }
        cx.with(|rt| self.team.publish(&mut rt.ep, &b, self.t, len, &[]));
        Ok(())
    }

    /// Place `part(j)` (`len` bytes, none if 0) for each other member `j`
    /// at its share of this step's data buffer, `j * per`, and post it
    /// (scatter, alltoall; readers read it as [`PLACED`](super::PLACED)).
    fn place_shares<'a>(
        &self,
        cx: &mut impl Access,
        per: usize,
        len: usize,
        part: impl Fn(usize) -> &'a [u8],
    ) -> MpiResult<()> {
        let me = self.team.me;
        let shares = (0..self.team.size())
            .filter(|&j| j != me && len > 0)
            .map(|j| (j * per, part(j)));
        self.place(cx, 0, shares)
    }

    /// Post this step exposing `len` bytes at `ptr` ([`expose`]), as
    /// [`Run::post_ahead`] does where `ahead`, else as [`Run::post`].
    fn expose(
        &self,
        cx: &mut impl Access,
        ptr: *const u8,
        len: usize,
        ahead: bool,
    ) -> MpiResult<()> {
        let line = expose::encode(ptr, len);
        if ahead {
            self.post_ahead(cx, &line)
        } else {
            self.post(cx, &line)
        }
    }

    /// Copy bytes `at..at + dst.len()` of what member `m` posted at this
    /// step (`posted` bytes, or [`PLACED`](super::PLACED) where placed)
    /// into `dst` (`super::read`).
    fn copy_out(&self, m: usize, posted: usize, at: usize, dst: &mut [u8]) -> Ran {
        read(&self.board(), m, self.t, posted, at, dst.len(), |x| {
            shm_engine::copy::slice(&mut dst[..x.len()], x)
        })
    }

    /// Copy bytes `off..off + dst.len()` of what member `m` exposed at
    /// this step (`expect` bytes in all) into `dst` ([`expose::pull`]).
    fn pull(&self, m: usize, expect: usize, off: usize, dst: &mut [u8]) -> Ran {
        let pid = self.team.pid(m);
        expose::pull(&self.board(), m, pid, self.t, expect, off, dst)
    }

    /// Copy into `dst` the block member `m` placed (or exposed) for us at
    /// offset `at` of its data buffer of this step (`expose::take_placed`).
    fn take_placed(&self, m: usize, at: usize, dst: &mut [u8]) -> Ran {
        let pid = self.team.pid(m);
        expose::take_placed(&self.board(), m, pid, self.t, at, dst)
    }

    /// Begin the next step exposing `len` bytes at `ptr`, and wait until
    /// every member exposed its own (`algo::expose_all`).
    fn expose_all(&mut self, cx: &mut impl Access, ptr: *const u8, len: usize) -> MpiResult<()> {
        self.next();
        self.expose(cx, ptr, len, false)?;
        self.wait_posted(cx, None, self.t)
    }

    /// The last step after an exposure (the board barrier, as
    /// `algo::release` compiles it): post once this member's copies are
    /// done, and wait until everyone did.
    fn release(&mut self, cx: &mut impl Access) -> MpiResult<()> {
        self.next();
        self.post(cx, &[])?;
        self.wait_posted(cx, None, self.t)
    }

    /// Wait until this member may post this step: once every member
    /// posted `t - 1`, or, running `ahead` with a post that stays in the
    /// line, the step BP2 names for the line.
    fn may_post(&self, cx: &mut impl Access, ahead: bool) -> MpiResult<()> {
        self.wait_posted(cx, None, bp::must_have_posted(self.t, !ahead))
    }

    /// Wait until member `who` (all: `None`) posted step `t`.
    #[inline]
    fn wait_posted(&self, cx: &mut impl Access, who: Option<usize>, t: u64) -> MpiResult<()> {
        match who {
            Some(m) => self.wait(cx, |b| missing(b, Some(m), t).map(|m| (m, t))),
            None if self.team.known_posted(t) => Ok(()),
            None => self.wait(cx, |b| self.team.missing_any(b, t).map(|m| (m, t))),
        }
    }

    /// Wait until every member `a` names posted step `t`
    /// ([`Team::missing_of`]).
    fn wait_for(&self, cx: &mut impl Access, a: Await, t: u64) -> MpiResult<()> {
        if a == Await::Nobody {
            return Ok(());
        }
        self.wait(cx, |b| self.team.missing_of(b, a, t).map(|m| (m, t)))
    }

    fn end(self) {
        self.team.end_turn(self.ticket);
    }
}

/// `MPI_Barrier` on communicator `slot`: one step, each member waiting
/// for the posts `Team::barrier_plan` names before and after its own
/// (the schedule takes the same plan, `algo::barrier`).
pub fn barrier(cx: &mut impl Access, slot: usize) -> Option<MpiResult<()>> {
    let Some(mut run) = cx.with(|rt| Run::begin(rt, slot)) else {
        return cx.with(|rt| alone(rt, slot, None)).then_some(Ok(()));
    };
    Some((|| {
        run.next();
        let t = run.t;
        let (before, after) = run.team.barrier_plan();
        if run.team.tiers().is_some() {
            cx.with(|rt| rt.ep.count_tiered());
        }
        run.wait_for(cx, before, t)?;
        run.post(cx, &[])?;
        run.wait_for(cx, after, t)?;
        run.end();
        Ok(())
    })())
}

/// Whether communicator `slot` is an intracommunicator of this process
/// alone (and `root`, if any, is valid on it): a collective then has
/// nothing to wait for and moves no data between processes, so the
/// caller finishes it here (a reduction copies its contribution to its
/// result) instead of compiling a schedule, which costs its allocations
/// (a barrier on `MPI_COMM_SELF` took 300 ns that way, against 5 ns in
/// Open MPI). Counts the collective as a schedule would.
fn alone(rt: &mut Runtime, slot: usize, root: Option<Root>) -> bool {
    let solo = match root {
        Some(r) => rooted(rt, slot, r).is_some_and(|(_, _, n)| n == 1),
        None => members(rt, slot) == Some((1, 0)),
    };
    if let Some(c) = rt.comm_mut(slot).ok().filter(|_| solo) {
        c.coll_seq = c.coll_seq.wrapping_add(1);
    }
    solo
}

/// A collective that moves members' blocks (gather, scatter, allgather,
/// alltoall and their `v` forms) where [`Run::begin`] found no board:
/// if communicator `slot` is this process alone ([`alone`]; the caller
/// checked the root, if any), copy this member's own block, `from` (its
/// send data, packed where it is not contiguous), to `to` (its receive
/// block) unless either is absent (in place), and end the call there.
/// `None` otherwise: the schedule runs.
///
/// # Safety
/// `from` is readable, and `to`, where both are given, holds `from.len`
/// writable bytes (MPI contract; the caller checked that the block
/// lengths agree).
unsafe fn alone_copy(
    cx: &mut impl Access,
    slot: usize,
    from: Option<&UserBuf>,
    to: Option<*mut u8>,
) -> Option<MpiResult<()>> {
    if !cx.with(|rt| alone(rt, slot, None)) {
        return None;
    }
    if let (Some(from), Some(to)) = (from, to) {
        // SAFETY: the caller's promise.
        let data = unsafe { from.data() };
        if !data.is_empty() {
            // SAFETY: `data.len()` writable bytes at `to` (the caller's
            // promise); `copy`, not `copy_nonoverlapping`, as the two may
            // be the same bytes in an erroneous call.
            unsafe { std::ptr::copy(data.as_ptr(), to, data.len()) };
        }
    }
    Some(Ok(()))
}

/// An alltoallv or alltoallw on communicator `slot` where it is this
/// process alone: `blocks` makes the one block of each side (`None` for
/// an `MPI_IN_PLACE` send), and the block is copied as `alone_copy`
/// does. `None` elsewhere, where `blocks` finds a block not valid, the
/// receive block is not contiguous, or the two lengths differ: the
/// schedule runs, and reports what is wrong.
///
/// # Safety
/// The blocks lie in the application's buffers (MPI contract).
pub unsafe fn alone_exchange(
    cx: &mut impl Access,
    slot: usize,
    blocks: impl FnOnce(&Runtime) -> Option<(Option<UserBuf>, UserBuf)>,
) -> Option<MpiResult<()>> {
    if cx.with(|rt| members(rt, slot)) != Some((1, 0)) {
        return None;
    }
    let (send, recv) = cx.with(|rt| blocks(rt))?;
    if !recv.dt.is_contiguous() || send.as_ref().is_some_and(|s| s.len != recv.len) {
        return None;
    }
    // SAFETY: `recv` is contiguous and as long as `send`.
    unsafe { alone_copy(cx, slot, send.as_ref(), Some(recv.ptr)) }
}

/// [`Run::begin`] of a rooted collective: the run, the root's rank and
/// this member's (`None` also for a root that is not valid).
fn begin_rooted(rt: &mut Runtime, slot: usize, root: Root) -> Option<(Run, usize, usize)> {
    let (root, me, _) = rooted(rt, slot, root)?;
    Some((Run::begin(rt, slot)?, root, me))
}

/// `len` bytes at `ptr`, to write.
///
/// # Safety
/// They are writable, and nothing else refers to them during the borrow.
unsafe fn slice_mut<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's promise; not null where bytes are written.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

/// `len` bytes at `ptr`.
///
/// # Safety
/// They are readable, and not written during the borrow.
unsafe fn slice_at<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's promise; not null where bytes are read.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// Keep the first failure of a member's copies in `bad`: the others
/// still run, so that no member waits for this one in vain.
fn keep(bad: &mut Option<MpiError>, ran: Ran) {
    if let Ran::Failed(e) = ran {
        bad.get_or_insert(e);
    }
}

/// The members of communicator `slot` and this member's rank; `None` for
/// an intercommunicator (which has no board of its own).
fn members(rt: &Runtime, slot: usize) -> Option<(usize, usize)> {
    let c = rt.comm(slot).ok()?;
    (!c.is_inter()).then_some((c.size() as usize, c.rank as usize))
}

/// The root's rank, this member's and the members of communicator
/// `slot`; `None` for a root that is not valid, or an intercommunicator
/// (which has no board of its own).
fn rooted(rt: &Runtime, slot: usize, root: Root) -> Option<(usize, usize, usize)> {
    if rt.comm(slot).ok()?.is_inter() {
        return None;
    }
    root_and_me(rt, slot, root).ok()
}
