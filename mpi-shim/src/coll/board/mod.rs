//! Collectives on a flag board: the members of a communicator that share
//! one node exchange data through areas of their shared heaps, with the
//! engine's board protocol (`shm_engine::board`: one writer per line,
//! step numbers that only grow, a member posts step `t` once everyone
//! posted `t - 1`, or, for a contribution that fits in the line and a
//! member that need not wait for the others' posts of that step, once
//! everyone posted `t - 63`), instead of point-to-point messages.
//!
//! Each member owns one area: 64 flag lines, whose inline bytes carry
//! contributions of up to 48 bytes (an 8-byte allreduce costs one cache
//! line per member; the root of an 8-byte bcast may run 63 steps ahead of
//! its readers), and two data buffers of [`DATA`] bytes for larger ones,
//! used alternately by odd and even steps. Larger contributions go
//! in pieces of at most [`DATA`] bytes, one step each. The algorithms are
//! flat: everyone posts, then reads what it needs straight from the
//! others' areas, so a step costs one post and one look at each line it
//! needs, never a chain of forwarded messages:
//! - barrier: post, wait for all (where the members outnumber their
//!   CPUs, member 0 posts last and the others wait for it:
//!   `Team::barrier_plan`, which the direct call and the schedule
//!   follow alike);
//! - bcast: the root posts a piece, the others post, then copy it (BP2
//!   lets them read it until they post the next step, and the root fills
//!   its other data buffer meanwhile), in pieces of [`Team::bcast_piece`];
//! - reduce and allreduce, small (up to [`SMALL`] bytes in all): everyone
//!   posts its vector and reduces all of them in rank order (so
//!   non-commutative operations keep their order, and every member gets
//!   the same bits); large: a reduce-scatter, where member `i` reduces
//!   slice `i` of the piece from every area and posts it, then everyone
//!   (or the root) copies the reduced slices (an allgather);
//! - allgather(v): everyone posts its block, everyone copies the
//!   others'; gather: the others post their blocks, the root copies;
//! - scatter: the root places the blocks, everyone copies its own (blocks
//!   that all fit in the line, 48 bytes, go in it, as a bcast's do);
//! - alltoall: everyone places its blocks, each copies its own block from
//!   every area (from every line where a member's blocks all fit in it);
//! - reduce_scatter(_block), scan, exscan: everyone posts its vector, each
//!   reduces the part it needs in rank order;
//! - gatherv and scatterv, whose counts only the root knows, take steps
//!   that do not depend on them: gatherv two (everyone posts its block,
//!   the root copies them, then posts its release), scatterv one (the
//!   root writes each member's block, or where it lies, into that
//!   member's share of its data buffer; everyone copies its own);
//! - large blocks of allgather(v), gatherv, alltoall, bcast, scatter(v),
//!   reduce and allreduce are not copied through the data buffers: their
//!   owners post where they are, and the readers copy them straight from
//!   the owner's memory ([`expose`]).
//!
//! Members in several packages, NUMA nodes or L3 caches take barriers and
//! small reductions by groups, with a leader each (`shm_engine::tiers`).
//!
//! alltoallv/w stay on messages: each process knows only its own counts,
//! and a board's steps must be the same at every member.
//!
//! Steps are schedule steps ([`algo`], [`super::sched`]), so blocking,
//! nonblocking and persistent collectives all use the board; several
//! nonblocking ones outstanding on one communicator take turns, in the
//! order they were started ([`Team::ticket`]). The common blocking calls
//! skip the schedule ([`direct`]) and take the same steps.
//!
//! A communicator gets a board at its first collective if its members all
//! run on this node, there are 2 to [`MAX_MEMBERS`] of them, and every one
//! of them takes part: its `TESSEL_COLL` is not `p2p` and it can map its
//! peers' heaps (cross-memory attach allowed, and their descriptors
//! reachable: `pidfd_getfd`, or `/proc/PID/fd` where the kernel or
//! valgrind lacks it). Each
//! process says so in the node segment when it attaches, so every member
//! decides alike, even where their environments differ. That first
//! collective first trades the areas' heap references (an allgather of
//! messages), maps them, and trades whether that worked (a second
//! allgather). A communicator that spans nodes gets, on the same terms, a
//! board for its ranks on each node ([`Boards::Node`]; the members of a
//! node decide alike), which the intra-node phases of its node-aware
//! collectives use ([`super::hier`]).
//!
//! A setup can fail at one member: no room for its area in its shared
//! heap, or a peer's heap it cannot map (no file descriptor left, say).
//! The second allgather tells every member of the board, and then they
//! all run the communicator's collectives on messages (the member that
//! failed says why on standard error); on other nodes, boards stay in
//! use. Collectives compiled before the setup ended at a member hold
//! both variants ([`super::Builder::either`]) and take the one the
//! outcome names, so every member takes the same steps.
//!
//! An area outlives its communicator: when the board is dropped its
//! owner posts one more step, "done with this board", and the area is
//! reused by a later board only once every member of the old one posted
//! that step, so a slow member still copying out of it never sees it
//! overwritten.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use shm_engine::Endpoint;
use shm_engine::board::{self as bp, Area, Board, INLINE, Watch};
use shm_engine::heap::{self, HeapRef, PeerHeaps};

use super::sched::Span;
use crate::core::{Class, MpiError, MpiResult};
use crate::ops::Reduction;
pub use shm_engine::tiers::{self, Await, Tiers};

/// Bytes of each of a member's two data buffers.
pub const DATA: usize = 128 << 10;
/// Most members of a communicator run on a board.
pub const MAX_MEMBERS: usize = 64;
/// Reduce and allreduce of at most this many bytes in all (vector times
/// members) reduce whole vectors at every member; larger ones split the
/// work (reduce-scatter, then allgather).
pub const SMALL: usize = 16 << 10;
/// Bytes of one member's area.
const AREA: usize = bp::area_len(DATA);
/// `posted` of a read of data placed in a data buffer ([`BoardStep::Place`]).
pub const PLACED: usize = usize::MAX;
/// Bytes of a heap reference as the setup trades it.
const REF_LEN: usize = 24;

/// One step of a collective on the board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoardStep {
    /// Map every member's area from the references in `refs` (one of
    /// [`REF_LEN`] bytes per member, from the setup's allgather), and
    /// write whether that worked (1) or not (0) to the byte `ok`.
    Attach { refs: Span, ok: Span },
    /// End the setup with every member's `ok` byte (from an allgather):
    /// the board is used if all are 1, else the communicator's
    /// collectives run on messages, at every member alike.
    Settle { oks: Span },
    /// Post step `t`, with `src` (at most [`DATA`] bytes) as this
    /// member's contribution. `ahead`: the member does not then wait for
    /// everyone's post of `t` (a bcast's root and readers, an exposed
    /// scatter's root and readers, the non-roots of reduce, gather and
    /// gatherv), so a post that stays in the line may run
    /// ahead of the others (`shm_engine::board`, BP2); every other post
    /// waits until all posted `t - 1`, as `direct` does.
    Post {
        t: u64,
        src: Option<Span>,
        ahead: bool,
    },
    /// Wait until member `who` (all members: `None`) posted step `t`.
    Wait { t: u64, who: Option<usize> },
    /// Wait until every leader ([`Tiers::leaders`]) posted step `t`, a
    /// tiered step: then every member has (T1).
    WaitLeaders { t: u64 },
    /// Write `src` at offset `at` of this member's data buffer of step
    /// `t`, which a `Post` of `t` without `src` then publishes (readers
    /// give `posted` as [`PLACED`]).
    Place { t: u64, src: Span, at: usize },
    /// Copy `dst.len` bytes from offset `off` of what member `m` posted
    /// at step `t` (`posted` bytes in all) into `dst`.
    Fetch {
        m: usize,
        t: u64,
        posted: usize,
        off: usize,
        dst: Span,
    },
    /// Post step `t` exposing `src`, this process's memory, instead of
    /// its bytes ([`expose`]); `ahead` as for `Post`.
    Expose { t: u64, src: Span, ahead: bool },
    /// Copy `dst.len` bytes from offset `off` of what member `m` exposed
    /// at step `t` (`expect` bytes in all) into `dst` ([`expose::pull`]).
    Pull {
        m: usize,
        t: u64,
        expect: usize,
        off: usize,
        dst: Span,
    },
    /// Write at offset `at` of this member's data buffer of step `t` the
    /// [`expose::record`] of block `src` and, unless `exposed`, its bytes
    /// after it, for the one member that takes it ([`BoardStep::Take`]);
    /// published as `Place`.
    PlaceBlock {
        t: u64,
        src: Span,
        at: usize,
        exposed: bool,
    },
    /// Copy into `dst` the block that member `m` placed for this member
    /// at offset `at` of its data buffer of step `t`, or exposed
    /// (`expose::take_placed`).
    Take {
        m: usize,
        t: u64,
        at: usize,
        dst: Span,
    },
    /// As `Fetch`, but `dst = x op dst` for those bytes `x`, with the
    /// schedule's operation.
    Reduce {
        m: usize,
        t: u64,
        posted: usize,
        off: usize,
        dst: Span,
    },
}

/// How a communicator's collectives use flag boards (every member of a
/// node decides alike, at the communicator's first collective).
#[derive(Clone, Debug)]
pub enum Boards {
    /// None: its collectives run on messages.
    None,
    /// Its members all run on this node and share one board.
    Whole(Arc<Team>),
    /// It spans nodes, and its members on this node (communicator ranks
    /// `locals`, in order) share a board for the phases of its node-aware
    /// collectives that stay within the node ([`super::hier`]).
    Node {
        locals: Arc<[usize]>,
        team: Arc<Team>,
    },
}

/// What running a board step did.
#[derive(Debug)]
pub enum Ran {
    /// It must wait for another member (a flag to watch is registered).
    Waiting,
    Done,
    /// Done, but what was read had another length than expected, or
    /// could not be copied ([`expose::pull`]).
    Failed(MpiError),
}

/// The members' areas, mapped in this process, and their process ids
/// (for [`expose::pull`]).
#[derive(Debug)]
struct Areas {
    lines: Vec<&'static Area>,
    pids: Vec<u32>,
}

/// How a board's setup ended, at this member.
#[derive(Debug)]
enum Outcome {
    /// Every member mapped every area: collectives run on the board.
    Board(Areas),
    /// Some member could not: collectives run on messages, at every
    /// member alike.
    Messages,
    /// The setup stopped on an error before it settled ([`Team::abandon`]).
    Abandoned,
}

/// What a collective on the board's communicator does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// Nothing yet: the setup has not settled here.
    Pending,
    Board,
    Messages,
    /// Fail ([`abandoned`]).
    Abandoned,
}

/// A communicator's board, as one member sees it.
#[derive(Debug)]
pub struct Team {
    /// Process ids of the members (to wake them after a post).
    ids: Vec<u32>,
    me: usize,
    /// This member's area, in its shared heap, or why it has none (the
    /// setup then fails at every member).
    own: Result<OwnArea, String>,
    /// What this member's `Attach` mapped, until `Settle` (`Err(None)`:
    /// another member had no area to map).
    mapped: Mutex<Option<Result<Areas, Option<String>>>>,
    /// How the setup ended, once it did.
    outcome: OnceLock<Outcome>,
    /// The next step number to hand out.
    next: AtomicU64,
    /// A step every member is known to have posted (posts only grow, so
    /// that stays true): a wait for everyone's post of it, or of an
    /// earlier step, needs no look at the lines. Changes only where
    /// `next` does (see [`take_next`]).
    all_posted: AtomicU64,
    /// Turns: the next ticket to hand out, and the tickets whose turn is
    /// over (turns end in order except when a collective stops on an
    /// error: those wait here until the turns before them end).
    tickets: AtomicU64,
    turn: AtomicU64,
    ended: Mutex<std::collections::BTreeSet<u64>>,
    /// Tickets in `ended`.
    strays: AtomicU64,
    /// Bytes per step of a bcast ([`algo::bcast_piece`]).
    bcast_piece: usize,
    /// Whether the members outnumber the CPUs they may run on (the same
    /// at every member, as `bcast_piece`).
    crowded: bool,
    /// The members' groups and leaders, where they sit in several
    /// packages, NUMA nodes or L3 caches (`shm_engine::tiers`; the same at every
    /// member).
    tiers: Option<Tiers>,
}

/// Take the next number from a team's counter. A team's counters change
/// only under the library lock, which every call reaching a team holds
/// (`core::in_call`), or, under `MPI_THREAD_MULTIPLE`, in the thread whose
/// blocking collective holds the board's turn, between its locks
/// (`direct::Released`; MPI lets no other thread run a collective on the
/// communicator meanwhile): a load and a store suffice, where a
/// read-modify-write would first wait for this process's stores to drain,
/// posts to the board included.
fn take_next(counter: &AtomicU64) -> u64 {
    let n = counter.load(Ordering::Relaxed);
    counter.store(n + 1, Ordering::Relaxed);
    n
}

/// An area of this process's heap, kept for reuse rather than freed.
#[derive(Debug)]
struct OwnArea(std::ptr::NonNull<u8>);

// SAFETY: the area is shared memory meant for every thread and process of
// the node; only the board protocol touches it.
unsafe impl Send for OwnArea {}
// SAFETY: as above.
unsafe impl Sync for OwnArea {}

impl Team {
    /// A board for member `me` of the processes `ids`, which may run on
    /// `cpus` CPUs between them ([`Endpoint::cpus_of`]) and are grouped
    /// by `tiers` (from the places they published, so alike at every
    /// member), with its area (reused or new).
    pub fn new(ids: Vec<u32>, me: usize, cpus: usize, tiers: Option<Tiers>) -> Arc<Self> {
        let own = retired::take().map_or_else(|| heap::alloc(AREA).map(OwnArea), Ok);
        let own = own.map_err(|e| format!("could not place its area in its shared heap: {e}"));
        if let Ok(own) = &own {
            // SAFETY: a fresh or retired area that nobody reads any more
            // (retired::take's check); zero lines mean "nothing posted".
            unsafe { own.0.as_ptr().write_bytes(0, bp::DATA_OFF) };
        }
        let bcast_piece = algo::bcast_piece(ids.len(), cpus);
        let crowded = ids.len() > cpus;
        Arc::new(Self {
            ids,
            me,
            own,
            mapped: Mutex::default(),
            outcome: OnceLock::new(),
            next: AtomicU64::new(1),
            all_posted: AtomicU64::new(0),
            tickets: AtomicU64::new(0),
            turn: AtomicU64::new(0),
            ended: Mutex::default(),
            strays: AtomicU64::new(0),
            bcast_piece,
            crowded,
            tiers,
        })
    }

    /// Hand out the next step number (every member compiles the same
    /// steps in the same order).
    #[inline]
    pub fn step(&self) -> u64 {
        take_next(&self.next)
    }

    /// A turn for a collective that has board steps. A collective's reads
    /// of step `t` must end before this member posts `t + 1` (BP2), so of
    /// several nonblocking collectives outstanding on one communicator,
    /// one runs its board steps at a time, in the order they were started
    /// (the same order at every member).
    #[inline]
    pub fn ticket(&self) -> u64 {
        take_next(&self.tickets)
    }

    /// Whether no collective holds a turn (none is running on the board).
    pub fn idle(&self) -> bool {
        self.tickets.load(Ordering::Relaxed) == self.turn.load(Ordering::Relaxed)
    }

    /// Whether the collective holding `ticket` may run its board steps.
    pub fn has_turn(&self, ticket: u64) -> bool {
        self.turn.load(Ordering::Relaxed) == ticket
    }

    /// The collective holding `ticket` ran its last board step (or never
    /// will).
    #[inline]
    pub fn end_turn(&self, ticket: u64) {
        let now = self.turn.load(Ordering::Relaxed);
        if ticket == now && self.strays.load(Ordering::Relaxed) == 0 {
            self.turn.store(now + 1, Ordering::Relaxed);
            return;
        }
        self.end_turn_out_of_order(ticket, now);
    }

    /// Turns end in order, except when a collective stops on an error:
    /// its ticket waits here until the turns before it end.
    #[cold]
    fn end_turn_out_of_order(&self, ticket: u64, now: u64) {
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended.insert(ticket);
        let mut now = now;
        while ended.remove(&now) {
            now += 1;
        }
        self.strays.store(ended.len() as u64, Ordering::Relaxed);
        self.turn.store(now, Ordering::Relaxed);
    }

    pub fn size(&self) -> usize {
        self.ids.len()
    }

    /// Bytes per step of a bcast on this board: the same at every member.
    pub fn bcast_piece(&self) -> usize {
        self.bcast_piece
    }

    /// Whether the members outnumber the CPUs they may run on.
    pub fn crowded(&self) -> bool {
        self.crowded
    }

    pub fn me(&self) -> usize {
        self.me
    }

    /// The members' groups, if they sit in several (`shm_engine::tiers`).
    pub fn tiers(&self) -> Option<&Tiers> {
        self.tiers.as_ref()
    }

    /// The groups a small reduction takes its tiered steps by, if any: a
    /// non-commutative operation needs groups of consecutive members.
    pub(super) fn tiers_for(&self, op: Option<&Reduction>) -> Option<&Tiers> {
        let commutes = op.is_none_or(Reduction::commutative);
        self.tiers.as_ref().filter(|t| commutes || t.keeps_order())
    }

    /// The first leader that has not posted step `t`, a tiered step
    /// (`None`: all have, and so has every member, T1, which is recorded
    /// as for [`Team::missing_any`]).
    pub(super) fn missing_leader(&self, b: &Board<'_>, t: u64) -> Option<usize> {
        self.missing_unless_known(t, || {
            self.awaited(Await::Leaders).find(|&l| !b.posted(l, t))
        })
    }

    /// Whose posts of a barrier's step this member waits for, before and
    /// after its own post (`shm_engine::tiers::barrier_plan`: the same
    /// plan for the direct call and the schedule, so that the two mix).
    pub(super) fn barrier_plan(&self) -> (Await, Await) {
        tiers::barrier_plan(self.tiers.as_ref(), self.crowded, self.me)
    }

    /// The members other than this one whose posts `a` names
    /// (`shm_engine::tiers::awaited`).
    pub(super) fn awaited(&self, a: Await) -> impl Iterator<Item = usize> + '_ {
        tiers::awaited(self.tiers.as_ref(), self.size(), self.me, a)
    }

    /// The first member whose post of step `t` the wait `a` still misses
    /// (`None`: none). A wait that implies every member posted `t`
    /// records it, as [`Team::missing_any`] does: everyone's (direct),
    /// the leaders' (T1), and member 0's where it posts last in a
    /// barrier ([`Team::barrier_plan`]).
    pub(super) fn missing_of(&self, b: &Board<'_>, a: Await, t: u64) -> Option<usize> {
        match a {
            Await::Nobody => None,
            Await::Everyone => self.missing_any(b, t),
            Await::Leaders => self.missing_leader(b, t),
            // Member 0 posts a barrier's step last (the plan).
            Await::Member0 => self.missing_unless_known(t, || (!b.posted(0, t)).then_some(0)),
            Await::Others | Await::Group | Await::GroupAndLeaders => {
                self.awaited(a).find(|&m| !b.posted(m, t))
            }
        }
    }

    /// Whether an earlier look saw every member post step `t` or later.
    #[inline]
    pub(super) fn known_posted(&self, t: u64) -> bool {
        bp::reached(self.all_posted.load(Ordering::Relaxed), t)
    }

    /// The first member that has not posted step `t` (`None`: all have).
    /// The lines are looked at only when no earlier look saw every member
    /// post `t` or a later step.
    #[inline]
    pub(super) fn missing_any(&self, b: &Board<'_>, t: u64) -> Option<usize> {
        self.missing_unless_known(t, || missing(b, None, t))
    }

    /// `find`'s first member that has not posted step `t`, where finding
    /// none proves that every member posted it; `find` runs only when no
    /// earlier look saw every member post `t` or a later step, and finding
    /// none is recorded for the next look.
    #[inline]
    fn missing_unless_known(&self, t: u64, find: impl FnOnce() -> Option<usize>) -> Option<usize> {
        if self.known_posted(t) {
            return None;
        }
        let m = find();
        if m.is_none() {
            self.all_posted.store(t, Ordering::Relaxed);
        }
        m
    }

    /// Where the board's setup stands here ([`BoardStep::Settle`]).
    #[inline]
    pub fn setup(&self) -> Setup {
        match self.outcome.get() {
            None => Setup::Pending,
            Some(Outcome::Board(_)) => Setup::Board,
            Some(Outcome::Messages) => Setup::Messages,
            Some(Outcome::Abandoned) => Setup::Abandoned,
        }
    }

    /// The process id of member `m`, once the board is in use.
    fn pid(&self, m: usize) -> u32 {
        self.areas().expect("a board in use").pids[m]
    }

    /// Every member's area, once the setup settled with the board in use.
    #[inline]
    fn areas(&self) -> Option<&Areas> {
        match self.outcome.get() {
            Some(Outcome::Board(areas)) => Some(areas),
            _ => None,
        }
    }

    /// The collective that sets the board up stopped on an error before
    /// the setup settled (a message of its exchange failed): the members
    /// may never agree on an outcome, so this member's later collectives
    /// on the communicator fail ([`abandoned`]) rather than wait for one.
    pub fn abandon(&self) {
        let _ = self.outcome.set(Outcome::Abandoned);
    }

    /// This member's area as the setup trades it (zeros: none).
    fn own_ref(&self) -> [u8; REF_LEN] {
        let mut b = [0; REF_LEN];
        let Some(r) = self
            .own
            .as_ref()
            .ok()
            .and_then(|o| heap::locate(o.0.as_ptr(), AREA))
        else {
            return b;
        };
        b[..4].copy_from_slice(&r.pid.to_ne_bytes());
        b[4..8].copy_from_slice(&r.fd.to_ne_bytes());
        b[8..16].copy_from_slice(&r.arena_len.to_ne_bytes());
        b[16..].copy_from_slice(&r.offset.to_ne_bytes());
        b
    }

    /// Run step `st` on the schedule's buffers `bufs`; false when it must
    /// wait for another member (a flag to watch was registered).
    pub fn run(
        &self,
        ep: &mut Endpoint,
        st: &BoardStep,
        bufs: &mut [Vec<u8>],
        op: Option<&Reduction>,
    ) -> MpiResult<Ran> {
        match *st {
            BoardStep::Attach { refs, ok } => {
                let mapped = self.map_areas(&bufs[refs.buf][refs.off..refs.off + refs.len]);
                bufs[ok.buf][ok.off] = u8::from(mapped.is_ok());
                *self.mapped.lock().unwrap_or_else(PoisonError::into_inner) = Some(mapped);
                return Ok(Ran::Done);
            }
            BoardStep::Settle { oks } => {
                self.settle(&bufs[oks.buf][oks.off..oks.off + oks.len]);
                return Ok(Ran::Done);
            }
            _ => {}
        }
        // Board steps run after the setup's, or after a choice that saw
        // the board in use.
        let areas = self.areas().expect("a board step on a board not in use");
        let b = Board::new(&areas.lines, self.me);
        match *st {
            BoardStep::Attach { .. } | BoardStep::Settle { .. } => unreachable!("handled above"),
            BoardStep::Place { t, src, at } => {
                if !self.may_post(ep, &b, t, false) {
                    return Ok(Ran::Waiting);
                }
                self.write_data(&b, t, at, &bufs[src.buf][src.off..src.off + src.len]);
                Ok(Ran::Done)
            }
            BoardStep::PlaceBlock {
                t,
                src,
                at,
                exposed,
            } => {
                if !self.may_post(ep, &b, t, false) {
                    return Ok(Ran::Waiting);
                }
                let block = &bufs[src.buf][src.off..src.off + src.len];
                let from = exposed.then_some(block.as_ptr());
                self.write_data(&b, t, at, &expose::record(from, block.len()));
                if !exposed {
                    self.write_data(&b, t, at + expose::LEN, block);
                }
                Ok(Ran::Done)
            }
            BoardStep::Take { m, t, at, dst } => {
                let out = &mut bufs[dst.buf][dst.off..dst.off + dst.len];
                Ok(expose::take_placed(&b, m, areas.pids[m], t, at, out))
            }
            BoardStep::Post { t, src, ahead } => {
                let in_line = src.is_none_or(|s| s.len <= INLINE);
                if !self.may_post(ep, &b, t, ahead && in_line) {
                    return Ok(Ran::Waiting);
                }
                let data = src.map_or(&[][..], |s| &bufs[s.buf][s.off..s.off + s.len]);
                self.post_data(ep, &b, t, data);
                Ok(Ran::Done)
            }
            BoardStep::Expose { t, src, ahead } => {
                if !self.may_post(ep, &b, t, ahead) {
                    return Ok(Ran::Waiting);
                }
                let at = bufs[src.buf][src.off..src.off + src.len].as_ptr();
                self.post_data(ep, &b, t, &expose::encode(at, src.len));
                Ok(Ran::Done)
            }
            BoardStep::Pull {
                m,
                t,
                expect,
                off,
                dst,
            } => {
                let out = &mut bufs[dst.buf][dst.off..dst.off + dst.len];
                Ok(expose::pull(&b, m, areas.pids[m], t, expect, off, out))
            }
            BoardStep::Wait { t, who } => {
                match who.map_or_else(|| self.missing_any(&b, t), |m| missing(&b, Some(m), t)) {
                    Some(m) => {
                        watch(ep, &b, m, t);
                        Ok(Ran::Waiting)
                    }
                    None => Ok(Ran::Done),
                }
            }
            BoardStep::WaitLeaders { t } => match self.missing_leader(&b, t) {
                Some(m) => {
                    watch(ep, &b, m, t);
                    Ok(Ran::Waiting)
                }
                None => {
                    ep.count_tiered();
                    Ok(Ran::Done)
                }
            },
            BoardStep::Fetch {
                m,
                t,
                posted,
                off,
                dst,
            } => {
                let out = &mut bufs[dst.buf][dst.off..dst.off + dst.len];
                Ok(read(&b, m, t, posted, off, dst.len, |x| {
                    shm_engine::copy::slice(&mut out[..x.len()], x)
                }))
            }
            BoardStep::Reduce {
                m,
                t,
                posted,
                off,
                dst,
            } => {
                let op = op.expect("a reduce step without an operation");
                let out = &mut bufs[dst.buf][dst.off..dst.off + dst.len];
                Ok(read(&b, m, t, posted, off, dst.len, |x| {
                    op.apply(x, &mut out[..x.len()])
                }))
            }
        }
    }

    /// Whether this member may post (or place data for) step `t`: every
    /// member posted `t - 1`, or, running `ahead` with a post that stays
    /// in the line, the step BP2 names for the line. If not, the first
    /// missing flag is watched.
    fn may_post(&self, ep: &mut Endpoint, b: &Board<'_>, t: u64, ahead: bool) -> bool {
        let need = bp::must_have_posted(t, !ahead);
        match self.missing_any(b, need) {
            Some(m) => {
                watch(ep, b, m, need);
                false
            }
            None => true,
        }
    }

    /// Write `data` at offset `at` of this member's data buffer of step
    /// `t`. The caller saw every member post `t - 1`.
    fn write_data(&self, b: &Board<'_>, t: u64, at: usize, data: &[u8]) {
        assert!(at + data.len() <= DATA, "a piece larger than a data buffer");
        // SAFETY: our own data buffer of step `t`, DATA bytes long (checked
        // above), which no member reads any more: all posted `t - 1` (BP2).
        unsafe {
            let dst = b.data(self.me, t, DATA).add(at);
            shm_engine::copy::bytes(data.as_ptr(), dst, data.len());
        }
    }

    /// Post step `t` with `data` (at most [`DATA`] bytes) as this member's
    /// contribution: inline in the line up to [`INLINE`] bytes, else in
    /// the data buffer. The caller saw every member post the step BP2
    /// names for it (`bp::must_have_posted`).
    #[inline]
    fn post_data(&self, ep: &mut Endpoint, b: &Board<'_>, t: u64, data: &[u8]) {
        if data.len() <= INLINE {
            self.publish(ep, b, t, data.len(), data);
        } else {
            self.write_data(b, t, 0, data);
            self.publish(ep, b, t, data.len(), &[]);
        }
    }

    /// Post step `t` with a contribution of `len` bytes (at most [`DATA`])
    /// that `f` writes straight where it is posted from: the line's inline
    /// bytes, or this member's data buffer of step `t` (a reduction folds
    /// into it without a copy). The caller saw every member post the step
    /// BP2 names for it.
    fn post_built(
        &self,
        ep: &mut Endpoint,
        b: &Board<'_>,
        t: u64,
        len: usize,
        f: impl FnOnce(&mut [u8]),
    ) {
        if len <= INLINE {
            let mut line = [0; INLINE];
            f(&mut line[..len]);
            self.publish(ep, b, t, len, &line[..len]);
            return;
        }
        assert!(len <= DATA, "a contribution larger than a data buffer");
        // SAFETY: our own data buffer of step `t`, DATA bytes long, which
        // no member reads any more (all posted `t - 1`, BP2) and nothing
        // else references during the call.
        f(unsafe { std::slice::from_raw_parts_mut(b.data(self.me, t, DATA), len) });
        self.publish(ep, b, t, len, &[]);
    }

    /// Post step `t` saying `len` bytes, `inline` in the line, and wake the
    /// members that sleep (`board`, BP3).
    #[inline]
    fn publish(&self, ep: &mut Endpoint, b: &Board<'_>, t: u64, len: usize, inline: &[u8]) {
        b.post(t, len as u64, inline);
        let me = self.me;
        let others = self.ids.iter().enumerate().filter(|&(m, _)| m != me);
        ep.wake_sleepers(others.map(|(_, &id)| id));
    }

    /// End the setup, given every member's answer to its `Attach` (1: it
    /// mapped every area). The board is used only if all did: a member
    /// that could not map an area (no room in a heap, no descriptor left,
    /// a peer's heap refused) tells the others so, and they all run the
    /// communicator's collectives on messages instead.
    /// The member that failed says why, on standard error.
    fn settle(&self, oks: &[u8]) {
        let mapped = self
            .mapped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let outcome = match mapped {
            Some(Ok(areas)) if oks.iter().all(|&o| o == 1) => Outcome::Board(areas),
            mapped => {
                if let Some(Err(Some(why))) = mapped {
                    // One write, so that lines of several processes do
                    // not interleave.
                    let line = format!(
                        "Tessel (pid {}): a communicator's collectives run on messages, \
                         not on shared memory: {why}\n",
                        std::process::id()
                    );
                    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
                }
                Outcome::Messages
            }
        };
        // A second setup cannot happen: only a board's first collective
        // compiles one.
        let _ = self.outcome.set(outcome);
    }

    /// Map every member's area; `Err(None)` if another member has none
    /// (that member says why), else `Err` with why this one failed.
    fn map_areas(&self, refs: &[u8]) -> Result<Areas, Option<String>> {
        let refs: Vec<HeapRef> = refs
            .chunks_exact(REF_LEN)
            .map(|r| {
                let w4 = |a: usize| u32::from_ne_bytes(r[a..a + 4].try_into().expect("sized"));
                let w8 = |a: usize| u64::from_ne_bytes(r[a..a + 8].try_into().expect("sized"));
                HeapRef {
                    pid: w4(0),
                    fd: w4(4),
                    arena_len: w8(8),
                    offset: w8(16),
                }
            })
            .collect();
        if refs.len() != self.ids.len() {
            return Err(Some("a member sent no reference".into()));
        }
        if refs[self.me].arena_len == 0 {
            let why = self
                .own
                .as_ref()
                .err()
                .map_or("its area is not in its shared heap", String::as_str);
            return Err(Some(why.into()));
        }
        if refs.iter().any(|r| r.arena_len == 0) {
            return Err(None);
        }
        let mut heaps = peer_heaps().lock().unwrap_or_else(PoisonError::into_inner);
        let heaps = heaps.get_or_insert_with(PeerHeaps::new);
        let pids = refs.iter().map(|r| r.pid).collect();
        let mut areas = Vec::with_capacity(self.ids.len());
        for r in refs {
            if r.offset.saturating_add(AREA as u64) > r.arena_len {
                return Err(Some(format!("{r:?} does not hold an area")));
            }
            let p = heaps
                .resolve(&r)
                .map_err(|e| format!("cannot map a peer's shared memory: {e}"))?;
            // SAFETY: the area lies in an arena mapped until this process
            // ends (PeerHeaps keeps its mappings; the cache is never
            // dropped), starts 64-aligned (heap blocks are) and holds an
            // `Area` (zeroed or written by its owner as one).
            areas.push(unsafe { &*p.cast::<Area>() });
        }
        Ok(Areas { lines: areas, pids })
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        let Ok(own) = std::mem::replace(&mut self.own, Err(String::new())) else {
            return;
        };
        match self.outcome.take() {
            Some(Outcome::Board(areas)) => {
                // Mark the step after the last one: "done with this
                // board". Our area is free once everyone has.
                let last = *self.next.get_mut();
                let b = Board::new(&areas.lines, self.me);
                b.retire(last);
                retired::put(own, areas.lines, last);
            }
            // Never shared: free for the next board at once.
            _ => retired::put(own, Vec::new(), 0),
        }
    }
}

/// The error of a collective on a communicator whose board's setup was
/// abandoned ([`Team::abandon`]).
pub fn abandoned() -> MpiError {
    MpiError::new(
        Class::Other,
        "an earlier collective on this communicator failed while it set up the \
         communicator's shared-memory board, so its collectives cannot run",
    )
}

/// The process's cache of its peers' heap arenas, shared by all boards.
fn peer_heaps() -> &'static Mutex<Option<PeerHeaps>> {
    static HEAPS: Mutex<Option<PeerHeaps>> = Mutex::new(None);
    &HEAPS
}

/// Give `f` bytes `off..off + len` of what member `m` posted at step `t`
/// (inline in its line up to [`INLINE`] bytes, else in its data buffer).
/// The poster said how many bytes it posted: if not the `posted` this
/// member expects (type signatures that differ, an erroneous program),
/// `f` gets what there is and the answer is a truncation error. `posted`
/// is [`PLACED`] for data placed in the buffer without a length.
fn read(
    b: &Board<'_>,
    m: usize,
    t: u64,
    posted: usize,
    off: usize,
    len: usize,
    f: impl FnOnce(&[u8]),
) -> Ran {
    debug_assert!(b.posted(m, t));
    let mut line = [0; INLINE];
    let actual = b.read(m, t, &mut line) as usize;
    if posted == PLACED && actual != 0 {
        // A member that places data posts no length: this one posted
        // bytes in its line, having chosen another way than this member
        // from its own block length (type signatures that differ).
        return Ran::Failed(MpiError::new(
            Class::Truncate,
            format!(
                "a process posted {actual} bytes in its flag line where this one expects \
                 a block in its data buffer: the send and receive type signatures differ"
            ),
        ));
    }
    let (actual, inline) = if posted == PLACED {
        (DATA, false)
    } else {
        (actual, actual <= INLINE)
    };
    let have = len.min(actual.saturating_sub(off));
    if inline {
        f(&line[off.min(actual)..off.min(actual) + have]);
    } else {
        // SAFETY: member `m` posted `t` (a Wait step came first) and we
        // have not posted `t + 1`, so nobody writes these bytes (BP2); its
        // buffer holds `actual` bytes, at most DATA.
        f(unsafe { std::slice::from_raw_parts(b.data(m, t, DATA).add(off), have) });
    }
    if posted == PLACED || actual == posted {
        return Ran::Done;
    }
    Ran::Failed(mismatch(actual, posted))
}

/// The error of a member that posted `actual` bytes where this one
/// expects `expected`.
fn mismatch(actual: usize, expected: usize) -> MpiError {
    MpiError::new(
        Class::Truncate,
        format!(
            "a process sent {actual} bytes where this one expects {expected}: \
             the send and receive type signatures differ"
        ),
    )
}

/// The first member (of `who`, or of all) that has not posted step `t`.
fn missing(b: &Board<'_>, who: Option<usize>, t: u64) -> Option<usize> {
    match who {
        Some(m) => (!b.posted(m, t)).then_some(m),
        None => (0..b.len()).find(|&m| !b.posted(m, t)),
    }
}

/// Watch member `m`'s flag of step `t` while backing off.
fn watch(ep: &mut Endpoint, b: &Board<'_>, m: usize, t: u64) {
    // SAFETY: the word lies in an area mapped until the process ends.
    ep.watch(unsafe { Watch::new(b.seq_word(m, t), t) });
}

/// Areas of boards that were dropped, waiting until every member of their
/// board is done with them.
mod retired {
    use super::*;

    struct Retired {
        own: OwnArea,
        /// The old board's areas (empty: never shared).
        areas: Vec<&'static Area>,
        /// The "done" step every member posts.
        done: u64,
    }

    static POOL: Mutex<Vec<Retired>> = Mutex::new(Vec::new());

    pub(super) fn put(own: OwnArea, areas: Vec<&'static Area>, done: u64) {
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        pool.push(Retired { own, areas, done });
    }

    /// An area no member of its old board reads any more.
    pub(super) fn take() -> Option<OwnArea> {
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        let free = pool
            .iter()
            .position(|r| (0..r.areas.len()).all(|m| Board::new(&r.areas, 0).posted(m, r.done)))?;
        Some(pool.swap_remove(free).own)
    }
}

pub mod algo;
pub mod direct;
pub mod expose;
