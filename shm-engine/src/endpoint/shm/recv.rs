//! The receiving side of the node segment: drain the rings of the peers
//! whose doorbell bit is set (within a budget per ring), and act on each
//! control message.

use super::Shm;
use super::cell::{Control, Corrupt};
use crate::board::{self, Watch};
use crate::doorbell;
use crate::endpoint::{Ack, Arrival, Endpoint};
use crate::layout::Cell;
use crate::sync::Ordering;
use crate::sys;

impl Endpoint {
    /// Progress the intra-node path once: retry backlogs, drain the rings
    /// that rang, run and finish chunked transfers. Returns whether
    /// anything happened.
    pub(in crate::endpoint) fn progress_shm(&mut self) -> bool {
        let mut did = self.shm.flush_blocked(&mut self.reqs);
        let budget = self.shm.seg.layout().geometry.ring_cells;
        // The peer that sent last likely sends next (a reply, the next
        // message of a stream): look at its ring first, which costs the
        // ring's lines alone, not the bell's before them. When it
        // delivered, leave the doorbell to the next call (every other
        // call at most, so other peers wait one call at most): the
        // process acts on the message sooner. The ring's doorbell bit
        // stays set; the visit it brings finds the ring drained, which is
        // harmless.
        let hot = self.shm.hot.map_or(0, |j| self.drain_ring(j, budget));
        did |= hot > 0;
        self.shm.hot_only = hot > 0 && !self.shm.hot_only;
        if !self.shm.hot_only {
            did |= self.drain_doorbell(budget);
        }
        if self.shm.active > 0 {
            did |= self.progress_chunked();
        }
        did
    }

    /// Act on the rings whose doorbell bits are set (and those left over
    /// from the last visit), `budget` cells of each at most. Returns
    /// whether any delivered.
    fn drain_doorbell(&mut self, budget: u32) -> bool {
        let mut did = false;
        let mut flagged = std::mem::take(&mut self.shm.flagged);
        flagged.append(&mut self.shm.revisit);
        let me = self.shm.me;
        doorbell::drain(self.shm.seg.bell(me), self.shm.seg.masks(me), |j| {
            flagged.push(j)
        });
        for &j in &flagged {
            if self.drain_ring(j, budget) > 0 {
                did = true;
                self.shm.hot = Some(j);
            }
        }
        flagged.clear();
        self.shm.flagged = flagged;
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

    /// Act on one control cell from local peer `j`.
    fn handle(&mut self, j: u32, cell: &Cell) {
        let from = self.shm.peers[j as usize].rank;
        let slot_size = self.shm.seg.layout().geometry.staging_slot_size as usize;
        let c = match Control::decode(j, cell) {
            Ok(Control::Eager { len, .. } | Control::Chunk { len, .. }) if len > slot_size => {
                Err(Corrupt { kind: cell.kind })
            }
            c => c,
        };
        let ack = |a: Option<u64>| a.map(|sreq| Ack::Local { j, sreq });
        match c {
            Ok(Control::Inline { tag, data, ack: a }) => self.arrive_data(from, tag, data, ack(a)),
            Ok(Control::Eager {
                tag,
                slot,
                len,
                ack: a,
            }) => {
                let at = self.shm.seg.staging_slot(j, self.shm.me, slot);
                // SAFETY: the sender filled `len` (<= slot size) bytes of
                // this slot before publishing the cell (ring SP1); it is
                // ours until we free it.
                let data = unsafe { std::slice::from_raw_parts(at, len) };
                self.arrive_data(from, tag, data, ack(a));
                self.shm.free_slot(j, slot);
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
