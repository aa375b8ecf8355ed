//! The send path: `send`, eager (inline or from a bounce buffer) or
//! rendezvous (the payload registered, an RTS naming it), and the posting
//! of one message with its credit and queue room accounting.

use std::ffi::c_int;

use plugin_api::{
    ERR_AGAIN, ERR_INVALID, ERR_PEER_FAILED, ERR_TRANSPORT, ERR_UNREACHABLE, IN_PROGRESS, Iov, OK,
};

use super::{
    EAGER_MAX, INLINE_BUF, MAX_HEADER, MAX_SEGMENTS, RndvSend, SLOT_LEN, STRIDE, Transport, Wr,
};
use crate::sys;
use crate::verbs::{Mr, errno_text};
use crate::wire::{self, Kind, PREFIX_LEN, Prefix, Segment};

/// The bytes an engine I/O vector names (null with a zero length is fine).
///
/// # Safety
/// `iov.base` is valid for reads of `iov.len` bytes for `'a`.
unsafe fn iov_bytes<'a>(iov: &Iov) -> &'a [u8] {
    if iov.len == 0 {
        &[]
    } else {
        // SAFETY: per the caller.
        unsafe { std::slice::from_raw_parts(iov.base.cast::<u8>(), iov.len) }
    }
}

impl Transport {
    /// Room for one more send-side request on `p`'s QP and the CQ.
    pub(super) fn can_post(&self, p: u32) -> bool {
        self.peers[p as usize].sq_used < self.sq_depth && self.send_outstanding < self.send_budget
    }

    /// A posted send-side request's accounting.
    pub(super) fn posted(&mut self, p: u32) {
        self.peers[p as usize].sq_used += 1;
        self.send_outstanding += 1;
    }

    /// An `ibv_post_send` failure: a full queue is "no resources",
    /// anything else breaks the peer.
    pub(super) fn post_failed(&mut self, p: u32, what: &str, e: c_int) -> c_int {
        if e == libc::ENOMEM || e == libc::EAGAIN {
            return ERR_AGAIN;
        }
        self.fail_peer(
            p,
            ERR_PEER_FAILED,
            format!("ibv_post_send ({what}) to rank {p}: {}", errno_text(e)),
        );
        ERR_PEER_FAILED
    }

    /// Send one message to connected peer `p`: `prefix` (credits and
    /// header length filled in here), `header`, then `body_len` bytes that
    /// `body` writes. Inline when it fits, else from a bounce buffer.
    /// `OK`, `ERR_AGAIN` (nothing sent), or an error.
    pub(super) fn post_message(
        &mut self,
        p: u32,
        mut prefix: Prefix,
        header: &[u8],
        body_len: usize,
        body: impl FnOnce(&mut [u8]),
    ) -> c_int {
        let total = PREFIX_LEN + header.len() + body_len;
        debug_assert!(header.len() <= MAX_HEADER && total <= SLOT_LEN);
        if let Err(rc) = self.refresh_credits(p) {
            return rc;
        }
        let inline = total <= self.inline_bytes;
        if !self.can_post(p)
            || self.peers[p as usize].credits.available() == 0
            || (!inline && self.free_slots.is_empty())
        {
            return ERR_AGAIN;
        }
        let reported = self.peers[p as usize].returns.current();
        prefix.credits = reported;
        prefix.header_len = header.len() as u16;
        let fill = |dst: &mut [u8]| {
            dst[..PREFIX_LEN].copy_from_slice(&prefix.encode());
            dst[PREFIX_LEN..PREFIX_LEN + header.len()].copy_from_slice(header);
            body(&mut dst[PREFIX_LEN + header.len()..]);
        };
        let mut stack = [0u8; INLINE_BUF];
        let (wr, addr, lkey, flags) = if inline {
            fill(&mut stack[..total]);
            (
                Wr::Inline { peer: p },
                stack.as_ptr() as u64,
                0,
                sys::IBV_SEND_SIGNALED | sys::IBV_SEND_INLINE,
            )
        } else {
            let slot = self.free_slots.pop().expect("checked above");
            let at = slot as usize * STRIDE;
            // SAFETY: bounce slot `slot` lies inside the send pool and is
            // ours alone: it was on the free list, so no posted request
            // names it.
            let dst =
                unsafe { std::slice::from_raw_parts_mut(self.send_pool.ptr().add(at), total) };
            fill(dst);
            (
                Wr::Bounce { peer: p, slot },
                self.send_pool.addr() + at as u64,
                self.send_pool.lkey(),
                sys::IBV_SEND_SIGNALED,
            )
        };
        let wr_id = self.wrs.insert(wr);
        let mut sge = sys::ibv_sge {
            addr,
            length: total as u32,
            lkey,
        };
        let mut req = sys::ibv_send_wr {
            wr_id,
            sg_list: &mut sge,
            num_sge: 1,
            opcode: sys::IBV_WR_SEND,
            send_flags: flags,
            ..Default::default()
        };
        // SAFETY: inline data is copied during the call (the stack buffer
        // outlives it); a bounce slot is registered memory that stays ours
        // until this request's completion returns it to the free list.
        let rc = unsafe { self.peers[p as usize].qp.post_send(&mut req) };
        if let Err(e) = rc {
            self.wrs.remove(wr_id);
            if let Wr::Bounce { slot, .. } = wr {
                self.free_slots.push(slot);
            }
            return self.post_failed(p, "send", e);
        }
        let peer = &mut self.peers[p as usize];
        peer.credits.take();
        peer.returns.reported(reported);
        self.posted(p);
        OK
    }

    /// Send `header` and the payload `iov` to `peer`.
    ///
    /// # Safety
    /// Every piece of `iov` is readable for its length; above
    /// [`EAGER_MAX`] it stays valid and unmodified until the send's
    /// completion is reported.
    pub(crate) unsafe fn send(
        &mut self,
        peer: u32,
        header: &[u8],
        iov: &[Iov],
        cookie: u64,
    ) -> c_int {
        if peer >= self.size {
            return ERR_UNREACHABLE;
        }
        if header.len() > MAX_HEADER {
            return ERR_INVALID;
        }
        let total: u64 = iov.iter().map(|v| v.len as u64).sum();
        if total > self.max_message {
            return ERR_INVALID;
        }
        let rc = self.ready(peer);
        if rc != OK {
            return rc;
        }
        if total <= EAGER_MAX as u64 {
            let mut prefix = Prefix::new(Kind::Eager);
            prefix.len = total;
            return self.post_message(peer, prefix, header, total as usize, |dst| {
                let mut at = 0;
                for v in iov {
                    // SAFETY: readable per the caller.
                    let src = unsafe { iov_bytes(v) };
                    dst[at..at + src.len()].copy_from_slice(src);
                    at += src.len();
                }
            });
        }
        // SAFETY: forwarded: the pieces stay valid until completion.
        unsafe { self.send_rndv(peer, header, iov, total, cookie) }
    }

    /// Register the payload, send an RTS naming it; the receiver READs it
    /// and answers FIN.
    ///
    /// # Safety
    /// As [`send`](Self::send).
    unsafe fn send_rndv(
        &mut self,
        p: u32,
        header: &[u8],
        iov: &[Iov],
        total: u64,
        cookie: u64,
    ) -> c_int {
        let pieces: Vec<&Iov> = iov.iter().filter(|v| v.len > 0).collect();
        if pieces.len() > MAX_SEGMENTS {
            return ERR_INVALID;
        }
        // Check for room before registering anything.
        if let Err(rc) = self.refresh_credits(p) {
            return rc;
        }
        if !self.can_post(p)
            || self.peers[p as usize].credits.available() == 0
            || self.free_slots.is_empty()
        {
            return ERR_AGAIN;
        }
        let mut mrs = Vec::with_capacity(pieces.len());
        let mut segments = Vec::with_capacity(pieces.len());
        for v in &pieces {
            // SAFETY: the piece stays valid until the send completes (per
            // the caller), and the MR is dropped no later: at FIN, at the
            // peer's failure (its QP in the error state first), or at close
            // (QPs destroyed first). Remote read only: nothing writes it.
            match unsafe { Mr::register(&self.pd, v.base, v.len, sys::IBV_ACCESS_REMOTE_READ) } {
                Ok(mr) => {
                    segments.push(Segment {
                        addr: v.base as u64,
                        len: v.len as u32,
                        rkey: mr.rkey(),
                    });
                    mrs.push(mr);
                }
                Err(_) => return self.registration_failed(),
            }
        }
        let op = self.sends.insert(RndvSend {
            peer: p,
            cookie,
            posted: false,
            _mrs: mrs,
        });
        let mut prefix = Prefix::new(Kind::Rts);
        prefix.len = total;
        prefix.op = op;
        prefix.nseg = segments.len() as u32;
        let list = wire::encode_segments(&segments);
        let rc = self.post_message(p, prefix, header, list.len(), |dst| {
            dst.copy_from_slice(&list)
        });
        match self.sends.get_mut(op) {
            Some(s) if rc == OK => {
                s.posted = true;
                IN_PROGRESS
            }
            // Not sent: the code says so, no completion follows (a peer
            // failure dropped the unposted entry without reporting it).
            _ => {
                self.sends.remove(op);
                if rc == OK { ERR_PEER_FAILED } else { rc }
            }
        }
    }

    /// `ibv_reg_mr` failed: while other registrations are held, locked
    /// memory may come back ("no resources"); with none, it will not.
    pub(super) fn registration_failed(&self) -> c_int {
        if self.sends.is_empty() && self.fetches.is_empty() {
            ERR_TRANSPORT
        } else {
            ERR_AGAIN
        }
    }
}
