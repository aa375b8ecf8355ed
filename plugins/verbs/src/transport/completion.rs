//! Completion handling: send-side completions (bounce slots, READs,
//! credit writes), received messages delivered to the engine and their
//! buffers re-posted, asynchronous events, and the outbox of reports.

use std::ffi::c_int;

use plugin_api::{ERR_PEER_FAILED, OK};

use super::{MAX_HEADER, RECV_TAG, SLOT_LEN, STRIDE, State, Token, Transport, Wr};
use crate::sys;
use crate::verbs::{errno_text, event_text, wc_status_text};
use crate::wire::{self, Kind, PREFIX_LEN, Prefix};

/// A report for the engine, made at the next `progress`.
#[derive(Debug)]
pub(super) enum Notice {
    Completed {
        cookie: u64,
        status: c_int,
    },
    Failed {
        peer: u32,
        status: c_int,
        message: String,
    },
}

/// The part of a work completion the transport uses.
#[derive(Clone, Copy, Debug)]
pub(super) struct Completion {
    wr_id: u64,
    status: sys::ibv_wc_status,
    vendor_err: u32,
    byte_len: u32,
}

impl From<&sys::ibv_wc> for Completion {
    fn from(wc: &sys::ibv_wc) -> Self {
        Self {
            wr_id: wc.wr_id,
            status: wc.status,
            vendor_err: wc.vendor_err,
            byte_len: wc.byte_len,
        }
    }
}

impl Transport {
    /// Post receive buffer `slot` (of peer `slot / depth`).
    pub(super) fn post_recv(&self, slot: usize) -> Result<(), c_int> {
        let peer = slot / self.depth as usize;
        let mut sge = sys::ibv_sge {
            addr: self.recv_pool.addr() + (slot * STRIDE) as u64,
            length: SLOT_LEN as u32,
            lkey: self.recv_pool.lkey(),
        };
        let mut wr = sys::ibv_recv_wr {
            wr_id: RECV_TAG | slot as u64,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        // SAFETY: the slot lies inside the receive pool (slot < size *
        // depth), registered with local write on our PD, and no other
        // posted receive names it: each slot is posted once at open and
        // again only after its completion was handled.
        unsafe { self.peers[peer].qp.post_recv(&mut wr) }
    }

    pub(super) fn handle(&mut self, c: Completion) {
        if c.wr_id & RECV_TAG != 0 {
            self.on_recv(c);
        } else {
            self.on_send_side(c);
        }
    }

    fn completion_error(c: &Completion, what: &str, p: u32) -> String {
        format!(
            "{what} with rank {p} failed: {} (vendor error {:#x})",
            wc_status_text(c.status),
            c.vendor_err
        )
    }

    fn on_send_side(&mut self, c: Completion) {
        let Some(wr) = self.wrs.remove(c.wr_id) else {
            return;
        };
        let p = wr.peer();
        self.peers[p as usize].sq_used -= 1;
        self.send_outstanding -= 1;
        let ok = c.status == sys::IBV_WC_SUCCESS;
        match wr {
            Wr::Bounce { slot, .. } => self.free_slots.push(slot),
            Wr::Inline { .. } => {}
            Wr::CreditWrite { .. } => {
                self.peers[p as usize].returns.write_done();
                self.note_owing(p);
            }
            Wr::Read { fetch, .. } => {
                let done = self.fetches.get_mut(fetch).map(|f| {
                    f.outstanding -= 1;
                    if !ok {
                        f.status = ERR_PEER_FAILED;
                        f.next = f.chunks.len();
                    }
                    f.outstanding == 0 && f.next == f.chunks.len()
                });
                if done == Some(true) {
                    self.finish_fetch(fetch);
                }
            }
        }
        if !ok {
            let m = Self::completion_error(&c, wr.what(), p);
            self.fail_peer(p, ERR_PEER_FAILED, m);
        }
    }

    fn on_recv(&mut self, c: Completion) {
        let slot = (c.wr_id & !RECV_TAG) as usize;
        if slot >= self.peers.len() * self.depth as usize {
            return;
        }
        let p = (slot / self.depth as usize) as u32;
        if c.status != sys::IBV_WC_SUCCESS {
            let m = Self::completion_error(&c, "receive", p);
            self.fail_peer(p, ERR_PEER_FAILED, m);
            return;
        }
        if self.peers[p as usize].state == State::Failed {
            return;
        }
        let len = (c.byte_len as usize).min(SLOT_LEN);
        // SAFETY: the slot lies inside the receive pool; its receive
        // completed, so the device no longer writes it, and it is posted
        // again only below, after the last use of `msg`.
        let msg =
            unsafe { std::slice::from_raw_parts(self.recv_pool.ptr().add(slot * STRIDE), len) };
        if let Err(m) = self.deliver(p, msg) {
            self.fail_peer(
                p,
                ERR_PEER_FAILED,
                format!("rank {p} sent a malformed message: {m}"),
            );
            return;
        }
        if let Err(e) = self.post_recv(slot) {
            self.fail_peer(
                p,
                ERR_PEER_FAILED,
                format!("ibv_post_recv for rank {p}: {}", errno_text(e)),
            );
            return;
        }
        self.peers[p as usize].returns.reposted_one();
        self.note_owing(p);
    }

    /// Hand one received message to the engine (or end a rendezvous).
    fn deliver(&mut self, p: u32, msg: &[u8]) -> Result<(), String> {
        let prefix = Prefix::decode(msg).ok_or("no valid prefix")?;
        if self.grant(p, prefix.credits).is_err() {
            return Err("impossible credit count".into());
        }
        let hl = usize::from(prefix.header_len);
        if hl > MAX_HEADER {
            return Err(format!("header of {hl} bytes"));
        }
        let header = msg.get(PREFIX_LEN..PREFIX_LEN + hl).ok_or("cut short")?;
        let body = &msg[PREFIX_LEN + hl..];
        match prefix.kind {
            Kind::Eager => {
                if prefix.len != body.len() as u64 {
                    return Err(format!(
                        "{} payload bytes, {} announced",
                        body.len(),
                        prefix.len
                    ));
                }
                self.engine.arrived_data(p, header, body);
            }
            Kind::Rts => {
                let segments = wire::decode_segments(body, prefix.nseg as usize)
                    .ok_or("segment list cut short")?;
                let sum: u64 = segments.iter().map(|s| u64::from(s.len)).sum();
                if sum != prefix.len || prefix.len == 0 {
                    return Err(format!(
                        "segments of {sum} bytes for a payload of {}",
                        prefix.len
                    ));
                }
                let token = self.tokens.insert(Token {
                    peer: p,
                    op: prefix.op,
                    len: prefix.len,
                    segments,
                });
                self.engine.arrived_token(p, header, prefix.len, token);
            }
            Kind::Fin => match self.sends.get(prefix.op) {
                Some(s) if s.peer == p => {
                    let s = self.sends.remove(prefix.op).expect("looked up above");
                    self.engine.completed(s.cookie, OK);
                }
                _ => return Err("FIN for no send of ours".into()),
            },
        }
        Ok(())
    }

    /// Look at the asynchronous events: a QP's fatal error fails its
    /// peer; a device or CQ error fails everyone.
    pub(super) fn async_events(&mut self) {
        while let Some(ev) = self.device.next_async_event() {
            let text = event_text(ev.kind);
            match ev.kind {
                sys::IBV_EVENT_QP_FATAL
                | sys::IBV_EVENT_QP_REQ_ERR
                | sys::IBV_EVENT_QP_ACCESS_ERR => {
                    if let Some(&p) = ev.qp_num.and_then(|n| self.qp_peer.get(&n)) {
                        self.fail_peer(p, ERR_PEER_FAILED, format!("QP to rank {p}: {text}"));
                    }
                }
                sys::IBV_EVENT_DEVICE_FATAL | sys::IBV_EVENT_CQ_ERR => {
                    for p in 0..self.size {
                        self.fail_peer(p, ERR_PEER_FAILED, format!("device: {text}"));
                    }
                }
                _ => {}
            }
        }
    }

    /// Report what is waiting in the outbox; how many reports.
    pub(super) fn flush_outbox(&mut self) -> usize {
        let notices = std::mem::take(&mut self.outbox);
        let n = notices.len();
        for n in notices {
            match n {
                Notice::Completed { cookie, status } => self.engine.completed(cookie, status),
                Notice::Failed {
                    peer,
                    status,
                    message,
                } => self.engine.failed(peer, status, &message),
            }
        }
        n
    }
}
