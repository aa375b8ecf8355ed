//! The receive side of a rendezvous: `fetch` (the engine's buffer
//! registered, RDMA READs posted as room allows, the fetch ended when all
//! completed) and `discard`, and the FINs both send back.

use std::ffi::c_int;

use plugin_api::{ERR_AGAIN, ERR_INVALID, ERR_PEER_FAILED, IN_PROGRESS, Iov, OK};

use super::{Fetch, Notice, State, Transport, Wr};
use crate::rndv::{self, Piece};
use crate::sys;
use crate::verbs::Mr;
use crate::wire::{Kind, Prefix};

impl Transport {
    /// Pull the payload of `token` into `iov`.
    ///
    /// # Safety
    /// Every piece of `iov` is writable for its length and stays valid,
    /// and untouched by anyone else, until the completion is reported.
    pub(crate) unsafe fn fetch(&mut self, token: u64, iov: &[Iov], cookie: u64) -> c_int {
        let Some(t) = self.tokens.get(token) else {
            return ERR_INVALID;
        };
        let total: u64 = iov.iter().map(|v| v.len as u64).sum();
        if total != t.len {
            return ERR_INVALID;
        }
        let p = t.peer;
        if self.peers[p as usize].state == State::Failed {
            self.tokens.remove(token);
            return ERR_PEER_FAILED;
        }
        let mut mrs = Vec::new();
        let mut local = Vec::new();
        for v in iov.iter().filter(|v| v.len > 0) {
            // SAFETY: the piece stays valid and ours until the completion
            // (per the caller); the MR is dropped only after every READ
            // into it completed (`finish_fetch`), or at close after the QPs
            // are destroyed.
            match unsafe { Mr::register(&self.pd, v.base, v.len, sys::IBV_ACCESS_LOCAL_WRITE) } {
                Ok(mr) => {
                    local.push(Piece {
                        addr: v.base as u64,
                        len: v.len as u64,
                        key: mr.lkey(),
                    });
                    mrs.push(mr);
                }
                Err(_) => return self.registration_failed(),
            }
        }
        let remote: Vec<Piece> = t
            .segments
            .iter()
            .map(|s| Piece {
                addr: s.addr,
                len: u64::from(s.len),
                key: s.rkey,
            })
            .collect();
        let Ok(chunks) = rndv::plan(&remote, &local, self.max_message.max(1)) else {
            return ERR_INVALID;
        };
        let t = self.tokens.remove(token).expect("looked up above");
        let key = self.fetches.insert(Fetch {
            peer: p,
            op: t.op,
            chunks,
            next: 0,
            outstanding: 0,
            cookie,
            status: OK,
            _mrs: mrs,
        });
        self.fetch_queue.push_back(key);
        self.post_reads();
        IN_PROGRESS
    }

    /// Drop the payload of `token`: tell its sender (FIN) without reading.
    pub(crate) fn discard(&mut self, token: u64) {
        if let Some(t) = self.tokens.remove(token)
            && self.peers[t.peer as usize].state != State::Failed
        {
            self.fins.push_back((t.peer, t.op));
            self.flush_fins();
        }
    }

    /// Post the READs that fit, for the fetches in `fetch_queue`.
    pub(super) fn post_reads(&mut self) {
        let queue = std::mem::take(&mut self.fetch_queue);
        for key in queue {
            let Some(f) = self.fetches.get(key) else {
                continue;
            };
            let p = f.peer;
            while let Some(f) = self.fetches.get(key) {
                if f.next == f.chunks.len() {
                    if f.outstanding == 0 {
                        self.finish_fetch(key);
                    }
                    break;
                }
                if !self.can_post(p) {
                    self.fetch_queue.push_back(key);
                    break;
                }
                let c = f.chunks[f.next];
                let remote_addr = c.remote_addr;
                let wr_id = self.wrs.insert(Wr::Read {
                    peer: p,
                    fetch: key,
                });
                let mut sge = sys::ibv_sge {
                    addr: c.local_addr,
                    length: c.len,
                    lkey: c.lkey,
                };
                let mut req = sys::ibv_send_wr {
                    wr_id,
                    sg_list: &mut sge,
                    num_sge: 1,
                    opcode: sys::IBV_WR_RDMA_READ,
                    send_flags: sys::IBV_SEND_SIGNALED,
                    ..Default::default()
                };
                req.wr.rdma = sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
                    remote_addr,
                    rkey: c.rkey,
                };
                // SAFETY: the local range lies in the engine's buffer,
                // registered with local write in this fetch's MRs, which
                // stay until the READ completes (the fetch ends only when
                // `outstanding` is back to zero); the remote range is what
                // the peer's RTS offered.
                let rc = unsafe { self.peers[p as usize].qp.post_send(&mut req) };
                match rc {
                    Ok(()) => {
                        self.posted(p);
                        let f = self.fetches.get_mut(key).expect("looked up above");
                        f.next += 1;
                        f.outstanding += 1;
                    }
                    Err(e) => {
                        self.wrs.remove(wr_id);
                        if self.post_failed(p, "RDMA READ", e) == ERR_AGAIN {
                            self.fetch_queue.push_back(key);
                        }
                        // Otherwise the peer failed and its fetches end.
                        break;
                    }
                }
            }
        }
    }

    /// A fetch with nothing in flight ends: deregister, FIN, report.
    pub(super) fn finish_fetch(&mut self, key: u64) {
        let Some(f) = self.fetches.remove(key) else {
            return;
        };
        if f.status == OK {
            self.fins.push_back((f.peer, f.op));
        }
        self.outbox.push(Notice::Completed {
            cookie: f.cookie,
            status: f.status,
        });
    }

    /// Post the FINs that can go (in order per peer).
    pub(super) fn flush_fins(&mut self) {
        for _ in 0..self.fins.len() {
            let Some((p, op)) = self.fins.pop_front() else {
                break;
            };
            if self.peers[p as usize].state != State::Connected {
                continue;
            }
            let mut prefix = Prefix::new(Kind::Fin);
            prefix.op = op;
            if self.post_message(p, prefix, &[], 0, |_| {}) == ERR_AGAIN {
                self.fins.push_back((p, op));
            }
        }
    }
}
