//! Sending to a local peer: the protocol for a message's size, and the
//! pair's backlog, which holds outgoing work in order while the ring or
//! the staging is full.

use std::collections::VecDeque;

use super::cell::{self, Control, Rts};
use super::{Peer, Shm};
use crate::doorbell;
use crate::endpoint::Endpoint;
use crate::endpoint::request::{ReqId, Requests};
use crate::heap;
use crate::iov::{self, Buf, Cursor, Piece};
use crate::layout::Cell;
use crate::queue::spsc::Producer;
use crate::segment::NodeSegment;
use crate::sync::Ordering;
use crate::sys;

/// Outgoing work for one peer, in order.
#[derive(Debug)]
pub(super) enum Outgoing {
    /// A ready control cell.
    Cell(Cell),
    /// An eager message of send `sreq` (`len` bytes), waiting for a
    /// staging slot; `sync`: the receiver acknowledges it at the match.
    Eager {
        sreq: ReqId,
        tag: u64,
        len: usize,
        sync: bool,
    },
    /// Pipelined rendezvous data: sender request, receiver request, total
    /// length, bytes already staged and where they end in the sender's
    /// pieces.
    Stream {
        sreq: ReqId,
        rreq: u64,
        len: usize,
        off: usize,
        cursor: Cursor,
    },
}

/// The inline cell of a message of `len` bytes of `tag`, gathered from
/// `pieces`; `ack`: the sender's request, for a synchronous send.
///
/// # Safety
/// The pieces are readable, `len` bytes in all, at most
/// [`INLINE_CAPACITY`](crate::layout::INLINE_CAPACITY).
#[inline]
unsafe fn inline_cell(tag: u64, pieces: &[Piece], len: usize, ack: Option<u64>) -> Cell {
    let mut cell = cell::inline(tag, len, ack);
    // SAFETY: the caller's promise; the payload holds INLINE_CAPACITY bytes.
    unsafe { iov::gather(pieces, cell.payload.as_mut_ptr(), len) };
    cell
}

/// Our side of staging (me -> peer): slots are taken and freed in order.
#[derive(Debug)]
pub(super) struct TxStaging {
    /// Next sequence number to fill.
    pub(super) staged: u64,
    /// Last known count of slots the peer freed.
    pub(super) freed: u64,
}

impl TxStaging {
    /// Whether slot `staged` of staging (`me` -> `j`) is free: fewer than
    /// `staging_slots` are unfreed (re-reads the receiver's count only
    /// when the cached one says full).
    fn has_slot(&mut self, seg: &NodeSegment, me: u32, j: u32) -> bool {
        let slots = u64::from(seg.layout().geometry.staging_slots);
        if self.staged - self.freed < slots {
            return true;
        }
        // Pairs with the receiver's Release in `free_slot`.
        self.freed = seg.staging(me, j).freed.load(Ordering::Acquire);
        self.staged - self.freed < slots
    }
}

/// Copy `len` bytes of `pieces` into our next staging slot for local peer
/// `j` (whose ring producer and staging state are `tx` and `staging`) and
/// push the eager cell that names it, if a slot is free and the ring has
/// room; otherwise write nothing. Returns whether it did. The caller
/// keeps the order (nothing of `j`'s backlog may wait before it) and
/// announces the cell.
///
/// # Safety
/// The pieces are readable, `len` bytes in all, at most a staging slot;
/// `tx` and `staging` are our ring producer and staging state for peer
/// `j` ([`Shm::sending_to`]), so that slot `staging.staged` of staging
/// (`me` -> `j`) is ours to fill once `has_slot` says so.
#[allow(clippy::too_many_arguments)]
unsafe fn stage_eager(
    seg: &NodeSegment,
    me: u32,
    j: u32,
    tx: &mut Producer<'static>,
    staging: &mut TxStaging,
    tag: u64,
    pieces: &[Piece],
    len: usize,
    ack: Option<u64>,
) -> bool {
    if !(staging.has_slot(seg, me, j) && tx.has_room()) {
        return false;
    }
    let dst = seg.staging_slot(me, j, staging.staged);
    // SAFETY: slot `staged` is ours (FIFO staging protocol: fewer than
    // `staging_slots` unfreed); the pieces are readable and hold `len` <=
    // slot size bytes (the caller).
    unsafe { iov::gather(pieces, dst, len) };
    let cell = Control::Eager {
        tag,
        slot: staging.staged,
        len,
        ack,
    }
    .encode();
    let ok = tx.push(&cell).is_ok();
    debug_assert!(ok, "room was checked");
    staging.staged += 1;
    true
}

impl Endpoint {
    /// Send request `id` (`len` bytes of `tag`) to local peer `j`, by the
    /// protocol for its size: inline, eager, put into a granted buffer, or
    /// a rendezvous.
    pub(in crate::endpoint) fn send_local(
        &mut self,
        j: u32,
        id: ReqId,
        tag: u64,
        len: usize,
        sync: bool,
    ) {
        // Inline and eager: the receiver acknowledges a synchronous send.
        let ack = sync.then_some(id);
        if len <= self.cfg.inline_max {
            // SAFETY: the caller guarantees the pieces are readable (`len`
            // bytes in all, at most inline_max).
            let cell = unsafe { inline_cell(tag, self.reqs.pieces(id), len, ack) };
            self.enqueue(j, Outgoing::Cell(cell));
            if !sync {
                self.reqs.complete_sent(id);
            }
        } else if len <= self.cfg.eager_max {
            let sreq = id;
            self.enqueue(
                j,
                Outgoing::Eager {
                    sreq,
                    tag,
                    len,
                    sync,
                },
            );
        } else if !sync && self.put(j, id, tag, len) {
            // Written into a buffer the receiver lent us: done already.
            self.reqs.complete_sent(id);
        } else {
            // A rendezvous completes at FIN, after the match. The RTS names
            // the buffer, or its list, whose storage stays put in the
            // request until FIN.
            let (addr, pieces) = match &self.reqs.get(id).expect("new request exists").buf {
                Buf::One(p) => (p.ptr as u64, 0),
                Buf::Many(v) => (v.as_ptr() as u64, v.len() as u64),
            };
            let heap = (pieces == 0)
                .then(|| heap::locate(addr as usize as *const u8, len))
                .flatten();
            let rts = Rts {
                from: self.shm.me,
                tag,
                size: len,
                sreq: id,
                addr,
                pieces,
                pid: sys::pid(),
                heap,
            };
            self.control(j, Control::Rts(rts));
        }
    }

    /// Send `len` bytes of `pieces` with `tag` to local peer `j` at once,
    /// without a request, if nothing waits before it (order) and it can
    /// go straight into the ring: inline ([`Shm::push_now`]), or eager
    /// where a staging slot is free too ([`stage_eager`]). Returns
    /// whether it was sent; the caller's buffer is then free again.
    ///
    /// # Safety
    /// The pieces are readable, `len` bytes in all, at most eager_max.
    pub(in crate::endpoint) unsafe fn send_now(
        &mut self,
        j: u32,
        tag: u64,
        pieces: &[Piece],
        len: usize,
    ) -> bool {
        if !self.backlog_clear(j) {
            return false;
        }
        if len <= self.cfg.inline_max {
            // SAFETY: the caller's promise; `inline_max` is at most
            // INLINE_CAPACITY (`Config::validate`).
            let cell = unsafe { inline_cell(tag, pieces, len, None) };
            self.shm.push_now(j, &cell)
        } else {
            // SAFETY: the caller's promise; `eager_max` is at most the
            // segment's staging slot size (clamped at attach).
            unsafe { self.shm.stage_eager_now(j, tag, pieces, len) }
        }
    }

    /// Send control message `c` to local peer `j` (after its backlog).
    pub(in crate::endpoint) fn control(&mut self, j: u32, c: Control<'_>) {
        self.enqueue(j, Outgoing::Cell(c.encode()));
    }

    /// Whether local peer `j`'s backlog is empty, after moving into its
    /// ring and staging what they accept now. A sender that outpaces its
    /// receiver fills the backlog whenever the ring is full; moving it on
    /// at the next send, rather than at the next progress call, keeps the
    /// ring fed and the next sends on the direct path.
    fn backlog_clear(&mut self, j: u32) -> bool {
        self.shm.peers[j as usize].backlog.is_empty() || {
            self.shm.flush(j, &mut self.reqs);
            self.shm.peers[j as usize].backlog.is_empty()
        }
    }

    pub(super) fn enqueue(&mut self, j: u32, out: Outgoing) {
        if let Outgoing::Cell(cell) = &out
            && self.backlog_clear(j)
            && self.shm.push_now(j, cell)
        {
            return;
        }
        let peer = &mut self.shm.peers[j as usize];
        let was_idle = peer.backlog.is_empty();
        peer.backlog.push_back(out);
        if was_idle {
            self.shm.flush(j, &mut self.reqs);
            if !self.shm.peers[j as usize].backlog.is_empty() {
                self.shm.blocked.push(j);
            }
        }
    }
}

impl Shm {
    /// Our local index, the segment, and local peer `j`'s ring producer,
    /// staging state and backlog: what sending to `j` uses, borrowed apart.
    fn sending_to(
        &mut self,
        j: u32,
    ) -> (
        u32,
        &NodeSegment,
        &mut Producer<'static>,
        &mut TxStaging,
        &mut VecDeque<Outgoing>,
    ) {
        let Peer {
            tx,
            staging,
            backlog,
            ..
        } = &mut self.peers[j as usize];
        (self.me, &self.seg, tx, staging, backlog)
    }

    /// Move as much of peer `j`'s backlog as its ring and staging accept.
    /// Returns whether anything moved.
    pub(super) fn flush(&mut self, j: u32, reqs: &mut Requests) -> bool {
        let mut pushed = false;
        let (me, seg, tx, staging, backlog) = self.sending_to(j);
        let slot_size = seg.layout().geometry.staging_slot_size as usize;
        while let Some(front) = backlog.front_mut() {
            let progressed = match front {
                Outgoing::Cell(cell) => tx.push(cell).is_ok(),
                Outgoing::Eager {
                    sreq,
                    tag,
                    len,
                    sync,
                } => {
                    let src = reqs.pieces(*sreq);
                    let ack = sync.then_some(*sreq);
                    // SAFETY: the pieces are valid per isend's contract
                    // and hold `len` <= slot size bytes.
                    let staged =
                        unsafe { stage_eager(seg, me, j, tx, staging, *tag, src, *len, ack) };
                    if staged && !*sync {
                        // A synchronous send waits for its ACK instead.
                        reqs.complete_sent(*sreq);
                    }
                    staged
                }
                Outgoing::Stream {
                    sreq,
                    rreq,
                    len,
                    off,
                    cursor,
                } => {
                    let src = reqs.pieces(*sreq);
                    while *off < *len && staging.has_slot(seg, me, j) && tx.has_room() {
                        let n = (*len - *off).min(slot_size);
                        let dst = seg.staging_slot(me, j, staging.staged);
                        // SAFETY: as for eager; `off + n <= len`, the
                        // total of the pieces.
                        let got = unsafe { cursor.gather(src, dst, n) };
                        debug_assert_eq!(got, n, "the send's pieces hold len bytes");
                        let c = Control::Chunk {
                            rreq: *rreq,
                            off: *off,
                            slot: staging.staged,
                            len: n,
                        };
                        let ok = tx.push(&c.encode()).is_ok();
                        debug_assert!(ok, "room was checked");
                        staging.staged += 1;
                        *off += n;
                        pushed = true;
                    }
                    if *off == *len {
                        reqs.complete_sent(*sreq);
                        true
                    } else {
                        false
                    }
                }
            };
            if !progressed {
                break;
            }
            pushed = true;
            backlog.pop_front();
        }
        if pushed {
            self.announce(j);
        }
        pushed
    }

    /// Push `cell` straight into local peer `j`'s ring, without the
    /// backlog's round trip, when nothing waits before it (order) and the
    /// ring has room (the common case). Returns whether it did.
    #[inline]
    fn push_now(&mut self, j: u32, cell: &Cell) -> bool {
        let peer = &mut self.peers[j as usize];
        if !peer.backlog.is_empty() || peer.tx.push(cell).is_err() {
            return false;
        }
        self.announce(j);
        true
    }

    /// Send `len` bytes of `pieces` with `tag` to local peer `j` eagerly
    /// ([`stage_eager`]) and announce it, if nothing of `j`'s backlog
    /// waits (order) and a slot and ring room are free. Returns whether
    /// it did.
    ///
    /// # Safety
    /// As for [`stage_eager`].
    #[inline(never)]
    unsafe fn stage_eager_now(&mut self, j: u32, tag: u64, pieces: &[Piece], len: usize) -> bool {
        let (me, seg, tx, staging, backlog) = self.sending_to(j);
        // SAFETY: forwarded from the caller.
        let sent = backlog.is_empty()
            && unsafe { stage_eager(seg, me, j, tx, staging, tag, pieces, len, None) };
        if sent {
            self.announce(j);
        }
        sent
    }

    /// Tell local peer `j` that its ring (from us) has news: nothing when
    /// it polls that ring, else its doorbell, and a wake-up if it sleeps.
    fn announce(&mut self, j: u32) {
        if doorbell::must_ring(self.peers[j as usize].tx.polled())
            && doorbell::ring(self.seg.bell(j), self.seg.masks(j), self.me)
        {
            self.wake(j);
        }
    }

    /// Retry every peer's backlog. Returns whether anything moved.
    pub(super) fn flush_blocked(&mut self, reqs: &mut Requests) -> bool {
        if self.blocked.is_empty() {
            return false;
        }
        // A sender that outpaces its receiver calls this in every turn of
        // its wait: the list keeps its storage (no allocation per turn).
        let mut blocked = std::mem::take(&mut self.blocked);
        let mut did = false;
        blocked.retain(|&j| {
            did |= self.flush(j, reqs);
            !self.peers[j as usize].backlog.is_empty()
        });
        debug_assert!(self.blocked.is_empty(), "flush blocks no peer");
        self.blocked = blocked;
        did
    }
}
