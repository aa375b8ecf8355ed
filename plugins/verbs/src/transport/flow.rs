//! Credit returns: reading what peers wrote into our credit array, and
//! writing our counts into theirs (RDMA WRITE) when half a queue is owed.
//! The counting itself is [`crate::credit`].

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};

use plugin_api::{ERR_AGAIN, ERR_PEER_FAILED};

use super::{State, Transport, Wr};
use crate::sys;

impl Transport {
    /// Take the credit count `p` wrote into our credit array.
    pub(super) fn refresh_credits(&mut self, p: u32) -> Result<(), c_int> {
        // SAFETY: slot `p < size` of the credit array, 4-byte aligned and
        // inside the region, which lives as long as `self`; the device
        // writes it by DMA, so it is only ever read atomically here.
        let reported = unsafe {
            AtomicU32::from_ptr(self.credit_in.ptr().cast::<u32>().add(p as usize))
                .load(Ordering::Relaxed)
        };
        self.grant(p, reported)
    }

    pub(super) fn grant(&mut self, p: u32, reported: u32) -> Result<(), c_int> {
        if let Err(bad) = self.peers[p as usize].credits.grant(reported) {
            self.fail_peer(
                p,
                ERR_PEER_FAILED,
                format!(
                    "rank {p} reported {} buffers freed for {} messages sent",
                    bad.granted, bad.sent
                ),
            );
            return Err(ERR_PEER_FAILED);
        }
        Ok(())
    }

    /// Tell peers how many of our receive buffers they may use again, by
    /// RDMA WRITE into their credit arrays, where half a queue is owed and
    /// no message carried the count.
    pub(super) fn write_credits(&mut self) {
        let threshold = (self.depth / 2).max(1);
        let owing = std::mem::take(&mut self.owing);
        for p in owing {
            let peer = &mut self.peers[p as usize];
            peer.owing_listed = false;
            if peer.state != State::Connected || !peer.returns.write_due(threshold) {
                continue;
            }
            if !self.can_post(p) {
                self.peers[p as usize].owing_listed = true;
                self.owing.push(p);
                continue;
            }
            let value = self.peers[p as usize].returns.current();
            // SAFETY: slot `p < size` of our outgoing counters, 4-byte
            // aligned inside the region; the device may be reading it for
            // an earlier write, so it is written atomically (any newer
            // value is a correct report).
            unsafe {
                AtomicU32::from_ptr(self.credit_out.ptr().cast::<u32>().add(p as usize))
                    .store(value, Ordering::Relaxed);
            }
            let wr_id = self.wrs.insert(Wr::CreditWrite { peer: p });
            let mut sge = sys::ibv_sge {
                addr: self.credit_out.addr() + 4 * u64::from(p),
                length: 4,
                lkey: self.credit_out.lkey(),
            };
            let peer = &self.peers[p as usize];
            let mut req = sys::ibv_send_wr {
                wr_id,
                sg_list: &mut sge,
                num_sge: 1,
                opcode: sys::IBV_WR_RDMA_WRITE,
                send_flags: sys::IBV_SEND_SIGNALED,
                ..Default::default()
            };
            req.wr.rdma = sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
                remote_addr: peer.credit_addr,
                rkey: peer.credit_rkey,
            };
            // SAFETY: the source is our registered counter array, alive as
            // long as `self`; the target is the slot the peer published
            // for us, in its credit array.
            let rc = unsafe { peer.qp.post_send(&mut req) };
            match rc {
                Ok(()) => {
                    self.posted(p);
                    self.peers[p as usize].returns.write_posted(value);
                }
                Err(e) => {
                    self.wrs.remove(wr_id);
                    if self.post_failed(p, "credit RDMA WRITE", e) == ERR_AGAIN {
                        self.peers[p as usize].owing_listed = true;
                        self.owing.push(p);
                    }
                }
            }
        }
    }

    /// List `p` for a credit write if one is due.
    pub(super) fn note_owing(&mut self, p: u32) {
        let threshold = (self.depth / 2).max(1);
        let peer = &mut self.peers[p as usize];
        if !peer.owing_listed && peer.returns.write_due(threshold) {
            peer.owing_listed = true;
            self.owing.push(p);
        }
    }
}
