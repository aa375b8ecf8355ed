//! Blocking collectives run straight on the board, without compiling a
//! schedule: barrier, bcast, reduce and allreduce, allgather and alltoall.
//! Data moves between the application's buffers and the board directly:
//! a schedule would pack the input into its own buffer first and unpack
//! the result at the end, two more copies of every byte. Large data goes
//! in pieces, or, larger still, is copied straight from its owner's memory
//! ([`super::expose`]); reductions and the blocks of allgather and
//! alltoall must be contiguous (others compile the schedule); a
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
//!
//! Under `MPI_THREAD_MULTIPLE` a blocking call must not hold the library
//! lock while it waits ([`crate::core::threads`]): the collective reaches
//! the runtime through [`Released`], which takes the lock for
//! each step and releases it between the turns of a wait. The check that
//! the board is free and the taking of its turn happen under one lock.
//! During its turn this run is the only one to touch the board's
//! counters, also between locks: MPI does not allow two threads to run
//! collectives on one communicator at once (a program that does may hang
//! here, as it may with any MPI), and `MPI_Comm_create_group`, the one
//! concurrent use it allows, runs on messages.

use std::borrow::Cow;
use std::sync::Arc;

use shm_engine::board::{self as bp, Board};

use super::algo::{pieces, share, slice, split};
use super::expose;
use super::{DATA, INLINE, PLACED, Ran, SMALL, Team, missing, read, watch};
use crate::coll::calls::{Arg, Reduce, root_and_me};
use crate::core::buffer::UserBuf;
use crate::core::peer::Root;
use crate::core::progress::Poll;
use crate::core::{MpiError, MpiResult, Runtime, pool, threads};
use crate::ops::{Kernel, Reduction};

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

/// Runs its argument on the runtime, under the library lock.
pub type Enter<'a> = &'a dyn Fn(&mut dyn FnMut(&mut Runtime));

/// The runtime under `MPI_THREAD_MULTIPLE`: the lock taken for each step
/// only (`Enter`), and released between the turns of a wait.
pub struct Released<'a>(pub Enter<'a>);

impl std::fmt::Debug for Released<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Released")
    }
}

impl Access for Released<'_> {
    fn with<T>(&mut self, f: impl FnOnce(&mut Runtime) -> T) -> T {
        let (mut f, mut out) = (Some(f), None);
        (self.0)(&mut |rt| out = f.take().map(|f| f(rt)));
        out.expect("`Enter` runs its argument once")
    }

    /// One turn of the wait per lock taken.
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
    /// alltoall), or for member 0's where member 0 posts last (the
    /// oversubscribed barrier). Posting sooner would not end its wait
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
    /// acknowledgements, a reduce's non-roots): the root of a stream of
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

    /// Copy bytes `off..off + dst.len()` of what member `m` exposed at
    /// this step (`expect` bytes in all) into `dst` ([`expose::pull`]).
    fn pull(&self, m: usize, expect: usize, off: usize, dst: &mut [u8]) -> Ran {
        let pid = self.team.pid(m);
        expose::pull(&self.board(), m, pid, self.t, expect, off, dst)
    }

    /// Begin the next step exposing `len` bytes at `ptr`, and wait until
    /// every member exposed its own (`algo::expose_all`).
    fn expose_all(&mut self, cx: &mut impl Access, ptr: *const u8, len: usize) -> MpiResult<()> {
        self.next();
        self.expose(cx, ptr, len, false)?;
        self.wait_posted(cx, None, self.t)
    }

    /// The last step after an exposure (the board barrier, as
    /// `algo::barrier` compiles it): post once this member's copies are
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

    fn end(self) {
        self.team.end_turn(self.ticket);
    }
}

/// `MPI_Barrier` on communicator `slot`: every member posts, then waits
/// for every post. Where processes outnumber cores, member 0 releases
/// the others instead: it posts once every other member posted, and the
/// others wait for its post alone. The last to arrive would otherwise
/// leave first, and a member that waits for rank 0 right after (the
/// readers of a bcast) would wait for rank 0 to get a core back; this
/// way rank 0 is running when it leaves and goes straight on. (The
/// schedule path keeps the flat barrier: the two mix, since member 0
/// posts only once all others posted, which is all a flat member waits
/// for besides its post.)
pub fn barrier(cx: &mut impl Access, slot: usize) -> Option<MpiResult<()>> {
    let mut run = cx.with(|rt| Run::begin(rt, slot))?;
    Some((|| {
        run.next();
        let t = run.t;
        if !run.oversubscribed {
            run.post(cx, &[])?;
            run.wait_posted(cx, None, t)?;
        } else if run.team.me == 0 {
            run.wait(cx, |b| {
                (1..b.len()).find(|&m| !b.posted(m, t)).map(|m| (m, t))
            })?;
            run.post(cx, &[])?;
        } else {
            run.post(cx, &[])?;
            run.wait_posted(cx, Some(0), t)?;
        }
        run.end();
        Ok(())
    })())
}

/// `MPI_Bcast`, in pieces of [`Team::bcast_piece`] bytes, or exposed by
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
    let (run, root, me) = cx.with(|rt| begin_rooted(rt, slot, root))?;
    // SAFETY: the caller's promise.
    Some(unsafe { bcast_run(cx, slot, run, root == me, root, (ptr, len), None) })
}

/// [`Run::begin`] of a rooted collective: the run, the root's rank and
/// this member's (`None` also for a root that is not valid).
fn begin_rooted(rt: &mut Runtime, slot: usize, root: Root) -> Option<(Run, usize, usize)> {
    let (root, me, _) = rooted(rt, slot, root)?;
    Some((Run::begin(rt, slot)?, root, me))
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
                (None, _) => unsafe {
                    std::ptr::copy_nonoverlapping(x.as_ptr(), ptr.add(off), x.len())
                },
                (Some(_), Some(p)) => p[off..off + x.len()].copy_from_slice(x),
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
    let red = Reduction::Predefined(f.kernel);
    let run = cx.with(|rt| Run::begin(rt, slot))?;
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

/// The root's rank, this member's and the members of communicator
/// `slot`; `None` for a root that is not valid, or an intercommunicator
/// (which has no board of its own).
fn rooted(rt: &Runtime, slot: usize, root: Root) -> Option<(usize, usize, usize)> {
    if rt.comm(slot).ok()?.is_inter() {
        return None;
    }
    root_and_me(rt, slot, root).ok()
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
/// result (`acc`) fold everyone's posts into it in rank order.
fn small(
    cx: &mut impl Access,
    slot: usize,
    mut run: Run,
    red: &Reduction,
    own: &[u8],
    acc: Option<&mut [u8]>,
) -> MpiResult<()> {
    run.next();
    let Some(acc) = acc else {
        run.post_ahead(cx, own)?;
        run.end();
        return Ok(());
    };
    run.post(cx, own)?;
    run.wait_posted(cx, None, run.t)?;
    // Under the lock: an application's operation may call MPI, through
    // the runtime of the call that holds it (`core::run_callback`).
    let bad = cx.with(|_| fold(&run.board(), run.t, own.len(), 0, own, acc, red));
    run.end();
    bad.map_or(Ok(()), |e| Err(e.on(slot)))
}

/// `acc = x_0 op (x_1 op (... op x_{n-1}))`, where `x_j` is bytes
/// `off..off + acc.len()` of what member `j` posted at step `t` (`posted`
/// bytes) and this member's own are `own`: the rank order holds for any
/// operation, and every member that folds the same bytes gets the same
/// bits. The first error met, if any.
fn fold(
    b: &Board<'_>,
    t: u64,
    posted: usize,
    off: usize,
    own: &[u8],
    acc: &mut [u8],
    red: &Reduction,
) -> Option<MpiError> {
    let (n, me, len) = (b.len(), b.me(), acc.len());
    let mut bad = None;
    for j in (0..n).rev() {
        let got = if j == me {
            if j == n - 1 {
                acc.copy_from_slice(own);
            } else {
                red.apply(own, acc);
            }
            Ran::Done
        } else if j == n - 1 {
            read(b, j, t, posted, off, len, |x| {
                acc[..x.len()].copy_from_slice(x)
            })
        } else {
            read(b, j, t, posted, off, len, |x| {
                red.apply(x, &mut acc[..x.len()])
            })
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
            if let Some(e) = fold(&b, t1, len, lo, &piece[lo..lo + sl], dst, red) {
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
                dst[..x.len()].copy_from_slice(x)
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
    let mut operand = pool::take(if n > 2 || me == n - 1 { sl } else { 0 });
    // res = x_0 op (x_1 op (... op x_{n-1})), as `fold` does.
    for j in (0..n).rev() {
        let got = if j == me && j == n - 1 {
            res.copy_from_slice(mine);
            Ran::Done
        } else if j == me {
            cx.with(|_| red.apply(mine, res));
            Ran::Done
        } else if j == n - 1 {
            run.pull(j, len, lo, res)
        } else {
            let got = run.pull(j, len, lo, &mut operand);
            cx.with(|_| red.apply(&operand, res));
            got
        };
        if let Ran::Failed(e) = got {
            bad.get_or_insert(e);
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
                    unsafe { slice_mut(out.add(lo), sl) }.copy_from_slice(v);
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
