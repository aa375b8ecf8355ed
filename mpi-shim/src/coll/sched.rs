//! Schedules: a collective compiled, for one process, into a sequence of
//! steps, each either a round of engine sends and receives on buffers the
//! schedule owns, posted together and finished together, or a local step
//! (reduce, copy, unpack into the application's memory).
//!
//! A [`Builder`] records the steps; a [`Schedule`] runs them a little at a
//! time ([`Schedule::advance`], never blocking) so that several
//! nonblocking collectives progress side by side, or to the end (the
//! runtime's progress driver, `Runtime::wait_coll`, between advances).
//!
//! Index invariants: a round's receive spans are disjoint from each other
//! and from its send spans; nothing touches a buffer while a round that
//! uses it is in flight (local steps run only between rounds).
//!
//! Tags: a collective's messages carry the communicator's collective
//! context in the upper 32 engine-tag bits and, below, the collective's
//! sequence number on the communicator ([`SEQ_BITS`] bits) above a
//! per-algorithm phase ([`PHASE_BITS`] bits); the top two bits stay
//! clear. The engine keeps messages of
//! one sender and tag in order and every process runs its rounds in order,
//! so within a phase messages between two processes match in the order
//! they were sent.

use std::sync::Arc;

use shm_engine::{Endpoint, Request, Source, TagMatch};

use crate::core::Class;
use crate::core::datatype::TypeRef;
use crate::core::{Comm, MpiError, MpiResult};
use crate::ops::Reduction;

use super::board::{BoardStep, Ran, Setup, Team};

/// Bits of the engine tag holding the algorithm's phase.
pub const PHASE_BITS: u32 = 12;
/// Bits holding the collective's sequence number (it wraps). Together
/// with the phase they keep collective tags below `0x4000_0000`: tags
/// from there up on a collective context are left to other collective
/// exchanges of the library (communicator creation).
pub const SEQ_BITS: u32 = 30 - PHASE_BITS;

/// A buffer of the schedule.
pub type BufId = usize;

/// Bytes `off..off + len` of buffer `buf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub buf: BufId,
    pub off: usize,
    pub len: usize,
}

impl Span {
    /// The sub-span `off..off + len` of this one.
    pub fn sub(self, off: usize, len: usize) -> Span {
        debug_assert!(off + len <= self.len);
        Span {
            buf: self.buf,
            off: self.off + off,
            len,
        }
    }

    /// Consecutive sub-spans with the given lengths, from the start.
    pub fn split(self, lens: impl IntoIterator<Item = usize>) -> Vec<Span> {
        let mut off = 0;
        lens.into_iter()
            .map(|l| {
                off += l;
                self.sub(off - l, l)
            })
            .collect()
    }
}

/// `count` elements of `dt` at `dst` in the application's memory: where a
/// result is unpacked when the schedule reaches it.
#[derive(Debug)]
pub struct Sink {
    pub dst: *mut u8,
    pub count: usize,
    pub dt: TypeRef,
}

/// One message of a round; `peer` is a rank of the communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Xfer {
    Send { peer: usize, span: Span, phase: u16 },
    Recv { peer: usize, span: Span, phase: u16 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Local {
    /// `dst = src op dst` (`src_left`) or `dst = dst op src`; `src` is
    /// scratch afterwards.
    Reduce {
        src: Span,
        dst: Span,
        src_left: bool,
    },
    Copy {
        src: Span,
        dst: Span,
    },
    /// Unpack `src` into sink number `sink`.
    Unpack {
        src: Span,
        sink: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Round(Vec<Xfer>),
    Local(Local),
    /// A step on the communicator's flag board, or its node's
    /// ([`super::board`]).
    Board(BoardStep),
    /// Where a collective was compiled before its board's setup ended
    /// ([`Builder::either`]): wait until the setup settled, then go on
    /// (the board's variant) or continue at step `p2p` (the variant on
    /// messages).
    Choose {
        p2p: usize,
    },
    /// Continue at step `to` (the end of the board's variant).
    Jump {
        to: usize,
    },
}

/// Records a schedule for one process of a communicator.
#[derive(Debug)]
pub struct Builder {
    pub size: usize,
    pub rank: usize,
    /// Inside [`Builder::in_group`]: the communicator rank of each group
    /// rank (peers are translated through it).
    map: Option<Vec<usize>>,
    /// The node of each rank, when the communicator spans several nodes
    /// ([`Builder::set_nodes`]); `None` inside a group.
    nodes: Option<Vec<u32>>,
    /// The ranks whose board the schedule's board steps use: `None` for
    /// the whole communicator's, the node's ranks for a node's board
    /// ([`Builder::set_node_team`]).
    team_group: Option<Arc<[usize]>>,
    /// Inside [`Builder::either`]: whether the variant being compiled is
    /// the board's (`Some(true)`) or the one on messages (`Some(false)`,
    /// where the algorithms see no board).
    variant: Option<bool>,
    phase: u16,
    round: Vec<Xfer>,
    elem: Option<usize>,
    s: Schedule,
}

impl Builder {
    /// The flag board of the ranks the builder compiles for now, if they
    /// have one: the communicator's (outside any group), or its node's
    /// (inside the group of the node's ranks, [`Builder::in_group`]).
    pub fn team(&self) -> Option<&Arc<Team>> {
        self.s.team.as_ref().filter(|_| {
            self.variant != Some(false) && self.map.as_deref() == self.team_group.as_deref()
        })
    }

    /// Compile the collective `f`. Where it has a board whose setup has
    /// not settled here yet (a setup fails alike at every member of a
    /// node, `Team::settle`, but a member learns it at run time), `f` is
    /// compiled twice: on the board, and on messages, and the schedule
    /// takes the one the setup's outcome names. Both variants start with
    /// the same message phase, so a member that knew the outcome when it
    /// compiled sends what the others' chosen variant expects. Where a
    /// variant puts its result is its own business: what reads it (an
    /// unpack into the application's memory) belongs inside `f`, unless
    /// both variants fill one buffer given to `f`.
    pub fn either(&mut self, mut f: impl FnMut(&mut Self)) {
        if self
            .s
            .team
            .as_ref()
            .is_none_or(|t| t.setup() != Setup::Pending)
        {
            f(self);
            return;
        }
        self.end_round();
        let choose = self.s.steps.len();
        self.s.steps.push(Step::Choose { p2p: 0 });
        let phase = self.phase;
        self.variant = Some(true);
        f(self);
        self.end_round();
        let after = self.phase;
        let jump = self.s.steps.len();
        self.s.steps.push(Step::Jump { to: 0 });
        (self.phase, self.variant) = (phase, Some(false));
        f(self);
        self.end_round();
        self.variant = None;
        self.s.steps[choose] = Step::Choose { p2p: jump + 1 };
        self.s.steps[jump] = Step::Jump {
            to: self.s.steps.len(),
        };
        // The phase after the board's variant (the algorithms set theirs
        // anyway).
        self.phase = after;
    }

    /// Use `team`'s board for this collective.
    pub fn set_team(&mut self, team: Arc<Team>) {
        self.s.team = Some(team);
    }

    /// Use `team`'s board for the phases of this collective that run
    /// within the group of communicator ranks `locals` (this node's).
    pub fn set_node_team(&mut self, locals: Arc<[usize]>, team: Arc<Team>) {
        self.team_group = Some(locals);
        self.s.team = Some(team);
    }

    /// A step on the board. The schedule's first takes its turn on the
    /// board ([`Team::ticket`]).
    pub fn board(&mut self, st: BoardStep) {
        let team = self.s.team.as_ref().expect("a board step without a board");
        debug_assert!(
            self.variant != Some(false),
            "a board step on the variant without one"
        );
        debug_assert!(
            self.variant.is_some()
                || team.setup() == Setup::Board
                || matches!(st, BoardStep::Attach { .. } | BoardStep::Settle { .. }),
            "a collective compiled outside Builder::either before its board's setup settled"
        );
        let ticket = self.s.ticket.unwrap_or_else(|| team.ticket());
        self.end_round();
        self.s.ticket = Some(ticket);
        self.s.steps.push(Step::Board(st));
        self.s.last_board = self.s.steps.len() - 1;
    }

    /// Start the next collective on communicator `comm` (slot `slot`):
    /// takes its sequence number. On an intercommunicator, ranks from the
    /// local group's size up are the remote group's
    /// ([`Comm::everyone`]).
    pub fn new(comm: &mut Comm, slot: usize) -> Self {
        let seq = comm.coll_seq;
        comm.coll_seq = comm.coll_seq.wrapping_add(1);
        let ctx = comm.ctx + 1;
        Self::bare(comm.everyone(), comm.rank as usize, ctx, seq, slot)
    }

    /// A builder for rank `rank` of the job ranks `members`.
    pub fn bare(members: Vec<u32>, rank: usize, ctx: u32, seq: u32, slot: usize) -> Self {
        Self {
            size: members.len(),
            rank,
            map: None,
            nodes: None,
            team_group: None,
            variant: None,
            phase: 0,
            round: Vec::new(),
            elem: None,
            s: Schedule {
                comm: slot,
                ctx,
                seq: seq & ((1 << SEQ_BITS) - 1),
                members,
                bufs: Vec::new(),
                steps: Vec::new(),
                sinks: Vec::new(),
                op: None,
                next: 0,
                pending: Vec::new(),
                error: None,
                stopped: false,
                activates: None,
                team: None,
                ticket: None,
                last_board: 0,
            },
        }
    }

    /// Tell the builder the node of each rank, so that algorithms can work
    /// node-aware ([`super::hier`]). Ignored unless several nodes appear.
    pub fn set_nodes(&mut self, nodes: Vec<u32>) {
        debug_assert_eq!(nodes.len(), self.size);
        if nodes.iter().any(|&n| n != nodes[0]) {
            self.nodes = Some(nodes);
        }
    }

    /// The node of each rank, if the communicator spans several nodes.
    pub fn nodes(&self) -> Option<&[u32]> {
        self.nodes.as_deref()
    }

    /// Compile `f` for the sub-communicator of the ranks `group` (which
    /// holds this rank): inside, `size` and `rank` are the group's and
    /// peers are group ranks. The group sees no node layout.
    pub fn in_group<R>(&mut self, group: &[usize], f: impl FnOnce(&mut Self) -> R) -> R {
        let me = group
            .iter()
            .position(|&r| r == self.rank)
            .expect("a group holds its caller");
        let to_comm: Vec<usize> = group
            .iter()
            .map(|&r| self.map.as_ref().map_or(r, |m| m[r]))
            .collect();
        let saved = (
            self.size,
            self.rank,
            self.map.replace(to_comm),
            self.nodes.take(),
        );
        self.size = group.len();
        self.rank = me;
        let out = f(self);
        self.end_round();
        (self.size, self.rank, self.map, self.nodes) = saved;
        out
    }

    fn peer(&self, peer: usize) -> usize {
        self.map.as_ref().map_or(peer, |m| m[peer])
    }

    /// The operation the schedule's reduce steps apply.
    pub fn set_op(&mut self, op: Reduction) {
        self.s.op = Some(op);
    }

    /// The size of the reduced datatype, where an algorithm may split a
    /// vector between its elements ([`Builder::elem`]).
    pub fn set_elem(&mut self, elem: usize) {
        self.elem = Some(elem);
    }

    /// The size set by [`Builder::set_elem`], if any.
    pub fn elem(&self) -> Option<usize> {
        self.elem.filter(|&e| e > 0)
    }

    pub fn op(&self) -> Option<&Reduction> {
        self.s.op.as_ref()
    }

    /// Messages from here on carry phase `p` (distinct sub-algorithms of
    /// one collective use distinct phases).
    pub fn phase(&mut self, p: u16) {
        debug_assert!(u32::from(p) < 1 << PHASE_BITS);
        self.end_round();
        self.phase = p;
    }

    /// A scratch buffer of `len` bytes, contents unspecified (reused
    /// through [`crate::core::pool`]): every algorithm writes a buffer
    /// before it reads it.
    pub fn buf(&mut self, len: usize) -> Span {
        self.input(crate::core::pool::take(len))
    }

    /// A buffer holding `data`.
    pub fn input(&mut self, data: Vec<u8>) -> Span {
        let len = data.len();
        self.s.bufs.push(data);
        Span {
            buf: self.s.bufs.len() - 1,
            off: 0,
            len,
        }
    }

    pub fn sink(&mut self, sink: Sink) -> usize {
        self.s.sinks.push(sink);
        self.s.sinks.len() - 1
    }

    pub fn send(&mut self, peer: usize, span: Span) {
        let (phase, peer) = (self.phase, self.peer(peer));
        self.round.push(Xfer::Send { peer, span, phase });
    }

    pub fn recv(&mut self, peer: usize, span: Span) {
        let (phase, peer) = (self.phase, self.peer(peer));
        self.round.push(Xfer::Recv { peer, span, phase });
    }

    /// Send `span` to `peer` in the current round with phase `phase`
    /// (collectives whose messages of one round need several phases).
    pub fn send_on(&mut self, peer: usize, span: Span, phase: u16) {
        debug_assert!(u32::from(phase) < 1 << PHASE_BITS);
        let peer = self.peer(peer);
        self.round.push(Xfer::Send { peer, span, phase });
    }

    /// Receive `span` from `peer` in the current round with phase `phase`.
    pub fn recv_on(&mut self, peer: usize, span: Span, phase: u16) {
        debug_assert!(u32::from(phase) < 1 << PHASE_BITS);
        let peer = self.peer(peer);
        self.round.push(Xfer::Recv { peer, span, phase });
    }

    /// Send `out` to and receive `inb` from `peer` in one round.
    pub fn exchange(&mut self, peer: usize, out: Span, inb: Span) {
        self.send(peer, out);
        self.recv(peer, inb);
        self.end_round();
    }

    /// Close the current round: later messages wait for its completion.
    pub fn end_round(&mut self) {
        if !self.round.is_empty() {
            let r = std::mem::take(&mut self.round);
            self.s.steps.push(Step::Round(r));
        }
    }

    fn local(&mut self, l: Local) {
        self.end_round();
        self.s.steps.push(Step::Local(l));
    }

    /// `dst = src op dst` if `src_left`, else `dst = dst op src`.
    pub fn reduce(&mut self, src: Span, dst: Span, src_left: bool) {
        debug_assert_eq!(src.len, dst.len);
        debug_assert_ne!(src.buf, dst.buf);
        self.local(Local::Reduce { src, dst, src_left });
    }

    /// Copy `src` into `dst` (as much as fits).
    pub fn copy(&mut self, src: Span, dst: Span) {
        self.local(Local::Copy { src, dst });
    }

    pub fn unpack(&mut self, src: Span, sink: usize) {
        self.local(Local::Unpack { src, sink });
    }

    pub fn finish(mut self) -> Schedule {
        self.end_round();
        self.s
    }
}

/// A collective in progress at this process.
#[derive(Debug)]
pub struct Schedule {
    /// Communicator slot (its error handler applies).
    pub comm: usize,
    ctx: u32,
    seq: u32,
    members: Vec<u32>,
    bufs: Vec<Vec<u8>>,
    steps: Vec<Step>,
    sinks: Vec<Sink>,
    op: Option<Reduction>,
    /// The first step not finished.
    next: usize,
    /// Engine requests of the round in flight (`None` once finished).
    pending: Vec<Option<Request>>,
    /// The first error; the schedule still runs to its end after a
    /// truncated message (so that the other processes do not wait for
    /// this one forever), and stops after any other.
    error: Option<MpiError>,
    stopped: bool,
    /// A context-id agreement (`MPI_Comm_idup`): the communicator slot
    /// it creates and the span of the agreed id; taken once done.
    activates: Option<(usize, Span)>,
    /// The flag board its board steps use.
    team: Option<Arc<Team>>,
    /// Its turn on the board (its board steps run once the collectives
    /// before it on the communicator ran theirs), until its last board
    /// step ran.
    ticket: Option<u64>,
    /// The index of its last board step.
    last_board: usize,
}

impl Schedule {
    /// Make this schedule the context-id agreement of communicator slot
    /// `comm`: the `u32` in `agreed` when it ends is the id.
    pub fn set_activation(&mut self, comm: usize, agreed: Span) {
        debug_assert_eq!(agreed.len, 4);
        self.activates = Some((comm, agreed));
    }

    /// Once done, and once only: the communicator this agreement creates
    /// and the agreed id (or why there is none).
    pub fn take_activation(&mut self) -> Option<(usize, MpiResult<u32>)> {
        if !self.is_done() {
            return None;
        }
        let (comm, span) = self.activates.take()?;
        let id = self.result().map(|()| {
            let b = self.slice(span);
            u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
        });
        Some((comm, id))
    }

    /// Record `e` as the schedule's outcome: an error found after it
    /// ended, in what its completion does, or one found as it was
    /// compiled that must not keep this process from taking its part (the
    /// others would wait for it); every step still runs.
    pub fn record_error(&mut self, e: MpiError) {
        self.error.get_or_insert(e);
    }

    pub(crate) fn tag(&self, phase: u16) -> u64 {
        Comm::tag(self.ctx, (self.seq << PHASE_BITS | u32::from(phase)) as i32)
    }

    #[cfg(test)]
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Whether every step has run (or an error stopped the schedule and
    /// nothing is in flight).
    pub fn is_done(&self) -> bool {
        self.pending.is_empty() && (self.next == self.steps.len() || self.stopped)
    }

    /// The outcome, once [`Schedule::is_done`].
    pub fn result(&self) -> MpiResult<()> {
        self.error.clone().map_or(Ok(()), Err)
    }

    /// Run as far as possible without waiting; returns whether anything
    /// happened. It looks at its messages without progressing the engine:
    /// the caller does that once for all it waits for (the progress
    /// driver, or a test that progressed first).
    pub fn advance(&mut self, ep: &mut Endpoint) -> bool {
        let mut did = false;
        loop {
            if !self.pending.is_empty() {
                for i in 0..self.pending.len() {
                    if let Some(r) = &self.pending[i]
                        && ep.is_complete(r)
                    {
                        let r = self.pending[i].take().expect("tested above");
                        self.finished(ep.wait(r));
                        did = true;
                    }
                }
                if self.pending.iter().any(Option::is_some) {
                    return did;
                }
                self.pending.clear();
                self.next += 1;
            }
            if self.is_done() {
                return did;
            }
            match self.start_step(ep) {
                Ok(true) => did = true,
                // A board step waits for another member's post.
                Ok(false) => return did,
                Err(e) => {
                    did = true;
                    self.fail(e, true);
                }
            }
        }
    }

    fn finished(&mut self, r: Result<shm_engine::Completion, shm_engine::Error>) {
        let e = match r {
            Ok(_) => return,
            Err(shm_engine::Error::Truncated {
                incoming, capacity, ..
            }) => MpiError::new(
                Class::Truncate,
                format!(
                    "a process sent {incoming} bytes where this one expects {capacity}: \
                     the send and receive type signatures differ"
                ),
            ),
            Err(e) => return self.fail(e.into(), true),
        };
        self.fail(e, false);
    }

    fn fail(&mut self, e: MpiError, stop: bool) {
        self.stopped |= stop;
        if stop && let Some(team) = &self.team {
            if let Some(ticket) = self.ticket.take() {
                // Its remaining board steps will not run: let the next one's.
                team.end_turn(ticket);
            }
            let settles = |s: &Step| matches!(s, Step::Board(BoardStep::Settle { .. }));
            if team.setup() == Setup::Pending && self.steps[self.next..].iter().any(settles) {
                // The board's setup will not end: the collectives waiting
                // for its outcome must not wait forever.
                team.abandon();
            }
        }
        self.error.get_or_insert(e);
    }

    /// Post the round at `next`, or run the local or board step there
    /// (and move past it). False when a board step cannot run yet.
    fn start_step(&mut self, ep: &mut Endpoint) -> MpiResult<bool> {
        match self.steps[self.next].clone() {
            Step::Round(xfers) => {
                for x in xfers {
                    let r = self.post(ep, x)?;
                    self.pending.push(Some(r));
                }
                if self.pending.is_empty() {
                    self.next += 1;
                }
            }
            Step::Local(l) => {
                self.run_local(l);
                self.next += 1;
            }
            Step::Board(st) => {
                let team = self.team.clone().expect("a board step without a board");
                let ticket = self.ticket.expect("board steps take a turn");
                if !team.has_turn(ticket) {
                    return Ok(false);
                }
                match team.run(ep, &st, &mut self.bufs, self.op.as_ref())? {
                    Ran::Waiting => return Ok(false),
                    Ran::Done => {}
                    // Run to the end, as after a truncated message.
                    Ran::Failed(e) => self.fail(e, false),
                }
                if self.next == self.last_board {
                    team.end_turn(ticket);
                    self.ticket = None;
                }
                self.next += 1;
            }
            Step::Choose { p2p } => {
                let team = self.team.clone().expect("a choice without a board");
                match team.setup() {
                    Setup::Pending => return Ok(false),
                    Setup::Abandoned => return Err(super::board::abandoned()),
                    Setup::Board => self.next += 1,
                    Setup::Messages => {
                        // The board's variant will not run: neither will
                        // its board steps.
                        if let Some(ticket) = self.ticket.take() {
                            team.end_turn(ticket);
                        }
                        self.next = p2p;
                    }
                }
            }
            Step::Jump { to } => self.next = to,
        }
        Ok(true)
    }

    fn post(&mut self, ep: &mut Endpoint, x: Xfer) -> MpiResult<Request> {
        match x {
            Xfer::Send { peer, span, phase } => {
                let p = self.bufs[span.buf][span.off..span.off + span.len].as_ptr();
                // SAFETY: the buffer belongs to the schedule, is neither
                // moved nor written until this round completes (module
                // invariant), and outlives it: dropping a schedule with
                // messages in flight leaks its buffers.
                Ok(unsafe { ep.isend_raw(self.members[peer], self.tag(phase), p, span.len)? })
            }
            Xfer::Recv { peer, span, phase } => {
                let p = self.bufs[span.buf][span.off..span.off + span.len].as_mut_ptr();
                let m = TagMatch::exact(self.tag(phase));
                // SAFETY: as above; no other span of the round overlaps.
                Ok(unsafe { ep.irecv_raw(Source::Rank(self.members[peer]), m, p, span.len)? })
            }
        }
    }

    fn slice(&self, s: Span) -> &[u8] {
        &self.bufs[s.buf][s.off..s.off + s.len]
    }

    pub(crate) fn run_local(&mut self, l: Local) {
        match l {
            Local::Reduce { src, dst, src_left } => {
                let op = self.op.as_ref().expect("reduce step without an operation");
                let mut a = std::mem::take(&mut self.bufs[src.buf]);
                let mut b = std::mem::take(&mut self.bufs[dst.buf]);
                let sa = &mut a[src.off..src.off + src.len];
                let sb = &mut b[dst.off..dst.off + dst.len];
                if src_left {
                    op.apply(sa, sb);
                } else {
                    op.apply(sb, sa);
                    shm_engine::copy::slice(sb, sa);
                }
                self.bufs[src.buf] = a;
                self.bufs[dst.buf] = b;
            }
            Local::Copy { src, dst } => {
                // Lengths differ only when the application's send and
                // receive type signatures do (erroneous): copy what fits.
                let len = src.len.min(dst.len);
                let (from, to) = (src.off..src.off + len, dst.off..dst.off + len);
                if src.buf == dst.buf {
                    self.bufs[dst.buf].copy_within(from, to.start);
                } else {
                    let a = std::mem::take(&mut self.bufs[src.buf]);
                    shm_engine::copy::slice(&mut self.bufs[dst.buf][to], &a[from]);
                    self.bufs[src.buf] = a;
                }
            }
            Local::Unpack { src, sink } => {
                let k = &self.sinks[sink];
                // SAFETY: the sink's memory holds `count` writable elements
                // of its datatype, untouched by the application until the
                // collective completes (MPI contract, kept by the entry
                // layer that made the sink).
                unsafe { k.dt.unpack(self.slice(src), k.count, k.dst) };
                // Longer than the sink only where the application's send
                // and receive type signatures differ (erroneous, as a
                // root's own block longer than its receive block): what
                // fits was unpacked, and the call reports it.
                let room = k.dt.size.saturating_mul(k.count);
                if src.len > room {
                    let e = MpiError::new(
                        Class::Truncate,
                        format!(
                            "a block of {} bytes for a receive buffer of {room}: \
                             the send and receive type signatures differ",
                            src.len
                        ),
                    );
                    self.fail(e, false);
                }
            }
        }
    }
}

impl Drop for Schedule {
    fn drop(&mut self) {
        if self.pending.iter().any(Option::is_some) {
            // The engine may still write into (or read from) these.
            std::mem::forget(std::mem::take(&mut self.bufs));
        }
        for b in self.bufs.drain(..) {
            crate::core::pool::give(b);
        }
    }
}

#[cfg(test)]
pub(crate) mod sim {
    //! Run the schedules of every member of a virtual communicator in one
    //! process: sends are buffered, receives match per (sender, tag) in
    //! order, as in the engine.

    use super::*;
    use std::collections::{HashMap, VecDeque};

    /// Run `scheds` (one per rank) to the end; panics on deadlock or on a
    /// receive whose message has a different length.
    pub fn run(scheds: &mut [Schedule]) {
        let mut queues: HashMap<(usize, usize, u64), VecDeque<Vec<u8>>> = HashMap::new();
        let mut posted = vec![false; scheds.len()];
        loop {
            let mut moved = false;
            for (me, s) in scheds.iter_mut().enumerate() {
                while s.next < s.steps.len() {
                    match s.steps[s.next].clone() {
                        Step::Local(l) => s.run_local(l),
                        // No boards here: a board's setup never succeeds,
                        // and a choice takes the variant on messages.
                        Step::Choose { p2p } => {
                            s.next = p2p;
                            continue;
                        }
                        Step::Board(_) | Step::Jump { .. } => {
                            unreachable!("the simulator has no boards")
                        }
                        Step::Round(xfers) => {
                            if !posted[me] {
                                for x in &xfers {
                                    if let Xfer::Send { peer, span, phase } = *x {
                                        let key = (me, peer, s.tag(phase));
                                        let data = s.slice(span).to_vec();
                                        queues.entry(key).or_default().push_back(data);
                                    }
                                }
                                posted[me] = true;
                            }
                            // All receives must find their messages.
                            let ready = xfers.iter().all(|x| match *x {
                                Xfer::Recv { peer, phase, .. } => {
                                    let want = xfers
                                        .iter()
                                        .filter(|y| matches!(y, Xfer::Recv { peer: p, phase: f, .. } if *p == peer && *f == phase))
                                        .count();
                                    queues.get(&(peer, me, s.tag(phase))).map_or(0, VecDeque::len) >= want
                                }
                                Xfer::Send { .. } => true,
                            });
                            if !ready {
                                break;
                            }
                            for x in &xfers {
                                if let Xfer::Recv { peer, span, phase } = *x {
                                    let data = queues
                                        .get_mut(&(peer, me, s.tag(phase)))
                                        .and_then(VecDeque::pop_front)
                                        .expect("checked");
                                    assert_eq!(data.len(), span.len, "rank {me} from {peer}");
                                    s.bufs[span.buf][span.off..span.off + span.len]
                                        .copy_from_slice(&data);
                                }
                            }
                            posted[me] = false;
                        }
                    }
                    s.next += 1;
                    moved = true;
                }
            }
            if scheds.iter().all(|s| s.next == s.steps.len()) {
                assert!(
                    queues.values().all(VecDeque::is_empty),
                    "unreceived messages"
                );
                return;
            }
            assert!(moved, "deadlock");
        }
    }
}
