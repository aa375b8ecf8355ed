//! The receiving side of the node segment: drain the rings we poll and
//! those of the peers whose doorbell bit is set (within a budget per ring),
//! and act on each control message; and a blocking receive's quick way,
//! which takes its message straight from the sender's ring.

use super::cell::{Control, Corrupt};
use super::{POLLED_RINGS, Polled, Shm};
use crate::board::{self, Watch};
use crate::doorbell;
use crate::endpoint::route::Route;
use crate::endpoint::{Ack, Arrival, Endpoint, Status};
use crate::iov::{self, Piece};
use crate::layout::Cell;
use crate::matching::TagMatch;
use crate::sync::Ordering;
use crate::sys;

/// What [`Endpoint::take_next`] found in a ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The message, received into the buffer.
    Taken(Status),
    /// The ring is empty.
    Empty,
    /// Its next cell was something else, which was acted on as usual (a
    /// message the receive does not take waits unmatched now): post the
    /// receive instead.
    Other,
}

/// A whole message in a control cell (inline, or eager in the pair's
/// staging slot).
struct Whole<'c> {
    tag: u64,
    data: &'c [u8],
    /// The send request to acknowledge (a synchronous send's).
    ack: Option<u64>,
    /// The staging slot to free once the bytes are copied out.
    slot: Option<u64>,
}

impl Endpoint {
    /// Progress the intra-node path once: retry backlogs, drain the rings
    /// we poll and those that rang, run and finish chunked transfers.
    /// Returns whether anything happened.
    pub(in crate::endpoint) fn progress_shm(&mut self) -> bool {
        let mut did = self.shm.flush_blocked(&mut self.reqs);
        let budget = self.shm.seg.layout().geometry.ring_cells;
        did |= self.drain_polled(budget);
        did |= self.drain_doorbell(budget);
        if self.shm.active > 0 {
            did |= self.progress_chunked();
        }
        did
    }

    /// Act on the rings we poll, `budget` cells of each at most. Their
    /// senders ring no doorbell (SP5): looking costs a load of the stamp
    /// of each ring's next slot, a line that stays in our cache while its
    /// sender is quiet.
    fn drain_polled(&mut self, budget: u32) -> bool {
        self.shm.tick += 1;
        let mut did = false;
        for i in 0..self.shm.polling.len() {
            if self.drain_ring(self.shm.polling[i].from, budget) > 0 {
                self.shm.polling[i].last = self.shm.tick;
                did = true;
            }
        }
        did
    }

    /// Act on the rings whose doorbell bits are set (and those left over
    /// from the last visit), `budget` cells of each at most. A ring that
    /// delivers is polled from now on. Returns whether any delivered.
    fn drain_doorbell(&mut self, budget: u32) -> bool {
        let me = self.shm.me;
        if self.shm.revisit.is_empty() && !doorbell::rang(self.shm.seg.bell(me)) {
            return false;
        }
        let mut did = false;
        let mut flagged = std::mem::take(&mut self.shm.flagged);
        flagged.append(&mut self.shm.revisit);
        doorbell::drain(self.shm.seg.bell(me), self.shm.seg.masks(me), |j| {
            flagged.push(j)
        });
        for &j in &flagged {
            if self.drain_ring(j, budget) > 0 {
                did = true;
                self.shm.poll(j);
            }
        }
        flagged.clear();
        self.shm.flagged = flagged;
        did
    }

    /// Stop polling every ring (before sleeping: only a doorbell wakes a
    /// sleeper), then act on what their senders published meanwhile
    /// without ringing. Returns whether any delivered: then the caller
    /// must not sleep.
    pub(in crate::endpoint) fn stop_polling(&mut self) -> bool {
        let budget = self.shm.seg.layout().geometry.ring_cells;
        let mut did = false;
        for p in std::mem::take(&mut self.shm.polling) {
            doorbell::stop_polling(self.shm.peers[p.from as usize].rx.polled());
            did |= self.drain_ring(p.from, budget) > 0;
        }
        did
    }

    /// Act on the cells of local peer `j`'s ring, at most `budget` of
    /// them (a ring with more is visited again on the next progress).
    /// Returns how many.
    fn drain_ring(&mut self, j: u32, budget: u32) -> u32 {
        let mut n = 0;
        while let Some(cell) = self.shm.peers[j as usize].rx.pop() {
            self.handle(j, &cell);
            n += 1;
            if n == budget {
                if !self.shm.revisit.contains(&j) {
                    self.shm.revisit.push(j);
                }
                break;
            }
        }
        n
    }

    /// Receive the next message of local process `source` straight from
    /// its ring into the `cap` bytes at `buf`, when it is a whole message
    /// (inline or eager) that `tag` accepts and that fits: a blocking
    /// receive's quick way, without a request or a trip through matching.
    /// Only while no receive is posted and no message waits unmatched: the
    /// ring's next message is then the oldest one a receive from `source`
    /// could match (MPI's order). `None` when that does not hold, or when
    /// `source` is not another process of this node: post the receive as
    /// usual.
    ///
    /// # Safety
    /// `cap` bytes at `buf` are writable during the call.
    pub unsafe fn take_next(
        &mut self,
        source: u32,
        tag: TagMatch,
        buf: *mut u8,
        cap: usize,
    ) -> Option<Next> {
        if self.matcher.has_unexpected() || self.matcher.has_posted() || source == self.rank {
            return None;
        }
        let Ok(Route::Local(j)) = self.router.route(source) else {
            return None;
        };
        let Some(cell) = self.shm.peers[j as usize].rx.pop() else {
            return Some(Next::Empty);
        };
        let c = self.decode(j, &cell);
        if let Ok(whole) = &c
            // SAFETY: forwarded from the caller.
            && let Some(st) = unsafe { self.take_whole(j, whole, tag, Piece::new(buf, cap)) }
        {
            self.shm.delivered(j);
            return Some(Next::Taken(st));
        }
        self.act(j, c);
        Some(Next::Other)
    }

    /// Receive control message `c` of local peer `j` into `into` if it is
    /// a whole message that `tag` accepts and that fits (acknowledged, its
    /// staging slot freed); `None`, with nothing done, otherwise.
    ///
    /// # Safety
    /// `into.len` bytes at `into.ptr` are writable during the call.
    unsafe fn take_whole(
        &mut self,
        j: u32,
        c: &Control<'_>,
        tag: TagMatch,
        into: Piece,
    ) -> Option<Status> {
        let w = self.whole(j, c)?;
        if !tag.accepts(w.tag) || w.data.len() > into.len {
            return None;
        }
        // SAFETY: `into` is writable (the caller) and holds the data.
        unsafe { iov::scatter(&[into], w.data.as_ptr(), w.data.len()) };
        if let Some(slot) = w.slot {
            self.shm.free_slot(j, slot);
        }
        self.acknowledge(w.ack.map(|sreq| Ack::Local { j, sreq }));
        Some(Status::new(
            self.shm.peers[j as usize].rank,
            w.tag,
            w.data.len(),
        ))
    }

    /// The whole message control message `c` of local peer `j` carries
    /// (inline, or eager in the pair's staging slot); `None` for the other
    /// kinds.
    fn whole<'c>(&self, j: u32, c: &Control<'c>) -> Option<Whole<'c>> {
        match *c {
            Control::Inline { tag, data, ack } => Some(Whole {
                tag,
                data,
                ack,
                slot: None,
            }),
            Control::Eager {
                tag,
                slot,
                len,
                ack,
            } => {
                let at = self.shm.seg.staging_slot(j, self.shm.me, slot);
                // SAFETY: the sender filled `len` (<= slot size, checked by
                // `decode`) bytes of this slot before publishing the cell
                // (ring SP1); it is ours until we free it.
                let data = unsafe { std::slice::from_raw_parts(at, len) };
                Some(Whole {
                    tag,
                    data,
                    ack,
                    slot: Some(slot),
                })
            }
            _ => None,
        }
    }

    /// Decode a control cell from local peer `j`; one whose length does not
    /// fit a staging slot is corrupt.
    fn decode<'c>(&self, j: u32, cell: &'c Cell) -> Result<Control<'c>, Corrupt> {
        let slot_size = self.shm.seg.layout().geometry.staging_slot_size as usize;
        match Control::decode(j, cell) {
            Ok(Control::Eager { len, .. } | Control::Chunk { len, .. }) if len > slot_size => {
                Err(Corrupt { kind: cell.kind })
            }
            c => c,
        }
    }

    /// Act on one control cell from local peer `j`.
    fn handle(&mut self, j: u32, cell: &Cell) {
        let c = self.decode(j, cell);
        self.act(j, c);
    }

    /// Act on a decoded control message from local peer `j`.
    fn act(&mut self, j: u32, c: Result<Control<'_>, Corrupt>) {
        let from = self.shm.peers[j as usize].rank;
        match c {
            Ok(w @ (Control::Inline { .. } | Control::Eager { .. })) => {
                let w = self.whole(j, &w).expect("a whole message");
                self.arrive_data(
                    from,
                    w.tag,
                    w.data,
                    w.ack.map(|sreq| Ack::Local { j, sreq }),
                );
                if let Some(slot) = w.slot {
                    self.shm.free_slot(j, slot);
                }
            }
            Ok(Control::Rts(rts)) => self.arrive(from, rts.tag, Arrival::Rts(rts)),
            Ok(Control::Fin { sreq } | Control::Ack { sreq }) => self.reqs.complete_sent(sreq),
            Ok(Control::Cts { .. }) => self.help(j),
            Ok(Control::Grant(g)) => self.granted(j, g),
            Ok(Control::Put { grant, tag, size }) => self.arrive_put(j, grant, tag, size),
            Ok(Control::CtsPipeline { sreq, rreq }) => self.stream(j, sreq, rreq),
            Ok(Control::Chunk {
                rreq,
                off,
                slot,
                len,
            }) => self.chunk(j, rreq, off, slot, len),
            Err(Corrupt { kind }) => {
                // A peer wrote what this build does not know: the layout
                // versions agreed, so this is memory corruption.
                self.boot.abort(
                    70,
                    &format!("tessel: corrupt control cell (kind {kind}) from rank {from}"),
                );
            }
        }
    }
}

impl Shm {
    /// Poll local peer `j`'s ring from now on, if we do not yet. When
    /// [`POLLED_RINGS`] are polled already, the one that delivered least
    /// recently makes room: it is looked at once more on the next
    /// progress (SP5: a cell its sender published before seeing the
    /// change rang nothing).
    fn poll(&mut self, j: u32) {
        if self.polling.iter().any(|p| p.from == j) {
            return;
        }
        if self.polling.len() == POLLED_RINGS {
            let (i, _) = self
                .polling
                .iter()
                .enumerate()
                .min_by_key(|(_, p)| p.last)
                .expect("POLLED_RINGS > 0");
            let old = self.polling.swap_remove(i).from;
            doorbell::stop_polling(self.peers[old as usize].rx.polled());
            if !self.revisit.contains(&old) {
                self.revisit.push(old);
            }
        }
        doorbell::start_polling(self.peers[j as usize].rx.polled());
        self.polling.push(Polled {
            from: j,
            last: self.tick,
        });
    }

    /// Local peer `j`'s ring delivered outside a visit of the progress
    /// loop ([`Endpoint::take_next`]): counted as a visit would.
    fn delivered(&mut self, j: u32) {
        match self.polling.iter_mut().find(|p| p.from == j) {
            Some(p) => p.last = self.tick,
            None => self.poll(j),
        }
    }

    /// We copied staging slot `seq` of peer `j` out: the sender may refill
    /// it.
    pub(super) fn free_slot(&mut self, j: u32, seq: u64) {
        // Pairs with the sender's Acquire in `has_slot`: our copy-out is done.
        self.seg
            .staging(j, self.me)
            .freed
            .store(seq + 1, Ordering::Release);
    }
}

impl Shm {
    /// Sleep on our doorbell futex until a local peer rings it or
    /// `timeout` passes; not at all if a `watched` board flag was posted
    /// meanwhile (its poster wakes us only once we sleep: `board`, BP3).
    pub(in crate::endpoint) fn sleep(&self, timeout: std::time::Duration, watched: &[Watch]) {
        let bell = self.seg.bell(self.me);
        if doorbell::prepare_sleep(bell) {
            if board::may_sleep(watched.iter().map(Watch::get)) {
                sys::futex_wait(bell, doorbell::SLEEPING, timeout);
            }
            doorbell::cancel_sleep(bell);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::endpoint::tests::WithRoom;
    use crate::queue::spsc::{Consumer, Producer};
    use crate::{Source, TagMatch};

    /// Local process 0 of a segment with room for 4, and the producing
    /// end of ring (2 -> 0): the test plays process 2, which the router
    /// admits as if it had been spawned.
    fn with_peer() -> (Endpoint, Producer<'static>) {
        let mut ep = Endpoint::with_config(Box::new(WithRoom::default()), Config::default())
            .expect("one-process endpoint with room");
        ep.router.admit([2]);
        // SAFETY: nobody else produces into ring (2 -> 0); the handle
        // touches no memory when dropped.
        let tx = unsafe { Producer::new(ep.shm.seg.ring(2, 0)) };
        (ep, tx)
    }

    /// Send `c` to process 0 as process 2 does: push it, and ring 0's
    /// doorbell unless 0 polls the ring.
    fn send(ep: &Endpoint, tx: &mut Producer<'_>, c: Control<'_>) {
        tx.push(&c.encode()).expect("room in the ring");
        if doorbell::must_ring(tx.polled()) {
            doorbell::ring(ep.shm.seg.bell(0), ep.shm.seg.masks(0), 2);
        }
    }

    /// Take the next message from process 2 into `buf`, as a blocking
    /// receive of `tag` would.
    fn take(ep: &mut Endpoint, tag: u64, buf: &mut [u8]) -> Option<Next> {
        // SAFETY: `buf` is writable.
        unsafe { ep.take_next(2, TagMatch::exact(tag), buf.as_mut_ptr(), buf.len()) }
    }

    #[test]
    fn take_next_receives_whole_messages_straight_from_the_ring() {
        let (mut ep, mut tx) = with_peer();
        let mut buf = [0u8; 16];
        assert_eq!(take(&mut ep, 5, &mut buf), Some(Next::Empty));

        // Inline, from a synchronous send: acknowledged to its sender.
        let ack = Some(77);
        send(
            &ep,
            &mut tx,
            Control::Inline {
                tag: 5,
                data: b"hello",
                ack,
            },
        );
        assert_eq!(
            take(&mut ep, 5, &mut buf),
            Some(Next::Taken(Status::new(2, 5, 5)))
        );
        assert_eq!(&buf[..5], b"hello");
        // SAFETY: nobody else consumes ring (0 -> 2).
        let mut rx = unsafe { Consumer::new(ep.shm.seg.ring(0, 2)) };
        let cell = rx.pop().expect("an acknowledgement");
        assert!(matches!(
            Control::decode(0, &cell),
            Ok(Control::Ack { sreq: 77 })
        ));

        // Eager: copied from the staging slot, which is freed.
        let data: Vec<u8> = (0..16).collect();
        let at = ep.shm.seg.staging_slot(2, 0, 0);
        // SAFETY: slot 0 of staging (2 -> 0) holds a staging slot's bytes,
        // and nobody reads it before the cell below is published.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), at, 16) };
        let eager = Control::Eager {
            tag: 6,
            slot: 0,
            len: 16,
            ack: None,
        };
        send(&ep, &mut tx, eager);
        assert_eq!(
            take(&mut ep, 6, &mut buf),
            Some(Next::Taken(Status::new(2, 6, 16)))
        );
        assert_eq!(&buf[..], &data[..]);
        assert_eq!(ep.shm.seg.staging(2, 0).freed.load(Ordering::Relaxed), 1);
        assert!(rx.pop().is_none(), "no acknowledgement asked for");
    }

    #[test]
    fn take_next_leaves_what_it_does_not_take_to_matching() {
        let (mut ep, mut tx) = with_peer();
        let mut small = [0u8; 2];
        // Another tag, then a message longer than the buffer: each is
        // acted on as usual and waits unmatched, and the receive is told
        // to post itself (it must not pass them: None from then on).
        send(
            &ep,
            &mut tx,
            Control::Inline {
                tag: 9,
                data: b"x",
                ack: None,
            },
        );
        send(
            &ep,
            &mut tx,
            Control::Inline {
                tag: 5,
                data: b"long",
                ack: None,
            },
        );
        assert_eq!(take(&mut ep, 5, &mut small), Some(Next::Other));
        assert_eq!(take(&mut ep, 5, &mut small), None);
        let st = ep
            .iprobe(Source::Rank(2), TagMatch::exact(9))
            .expect("unmatched");
        assert_eq!(st.len, 1);
        let r = ep.irecv(Source::Rank(2), TagMatch::exact(9), 1).unwrap();
        assert_eq!(ep.wait(r).unwrap().data.unwrap(), b"x");
        let r = ep.irecv(Source::Rank(2), TagMatch::exact(5), 8).unwrap();
        assert_eq!(ep.wait(r).unwrap().data.unwrap(), b"long");

        // A posted receive comes first: nothing is taken past it.
        let posted = ep.irecv(Source::Any, TagMatch::exact(5), 8).unwrap();
        send(
            &ep,
            &mut tx,
            Control::Inline {
                tag: 5,
                data: b"y",
                ack: None,
            },
        );
        assert_eq!(take(&mut ep, 5, &mut small), None);
        assert_eq!(ep.wait(posted).unwrap().data.unwrap(), b"y");
        // From ourselves: never.
        // SAFETY: the buffer is writable.
        let me = unsafe { ep.take_next(0, TagMatch::any(), small.as_mut_ptr(), 2) };
        assert_eq!(me, None);
    }
}
