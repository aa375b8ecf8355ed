//! Connections: publishing our address and QP numbers, bringing each
//! peer's QP INIT -> RTR -> RTS once its address is readable, and failing
//! a peer (its QP to the error state, its rendezvous work ended).

use std::ffi::c_int;

use plugin_api::{ERR_AGAIN, ERR_PEER_FAILED, ERR_TRANSPORT, ERR_UNREACHABLE, OK, status_name};

use super::{Notice, State, Transport};
use crate::credit::Credits;
use crate::sys;
use crate::verbs::{Cq, Pd, Qp, errno_text};
use crate::wire::{self, Address};

/// Inline data asked of the QPs (the device may grant less or more).
const INLINE_WANT: u32 = 256;
/// Progress calls between retries of peers whose address was missing.
const CONNECT_RETRY_EVERY: u64 = 1024;
/// RC transport timeout, `4.096 us * 2^20` (about 4.3 s) per try.
const QP_TIMEOUT: u8 = 20;
/// Transport retries (the maximum, 7).
const QP_RETRY_CNT: u8 = 7;
/// RNR retries: 7 means unlimited (credits should keep RNR from
/// happening at all).
const QP_RNR_RETRY: u8 = 7;
/// RNR NAK timer code 12 (0.64 ms).
const QP_MIN_RNR_TIMER: u8 = 12;

enum ConnectError {
    /// The peer's address is not published (yet).
    Missing,
    /// Connecting failed for good.
    Broken(String),
}

impl Transport {
    /// Publish our address and our QP numbers (see [`wire`]).
    pub(super) fn publish(&self) -> Result<(), (c_int, String)> {
        let put = |key: String, value: &[u8]| {
            self.engine.put(&key, value).map_err(|rc| {
                (
                    ERR_TRANSPORT,
                    format!("callbacks.put({key}) failed: {}", status_name(rc)),
                )
            })
        };
        let a = Address {
            lid: self.local.lid,
            port: self.local.port,
            mtu: u8::try_from(self.local.mtu).unwrap_or(0),
            link_layer: self.local.link_layer,
            rd_atomic: self.local.rd_atomic,
            recv_depth: u16::try_from(self.depth).unwrap_or(u16::MAX),
            gid: self.local.gid,
            psn: self.local.psn,
            credit_rkey: self.credit_in.rkey(),
            size: self.size,
            credit_addr: self.credit_in.addr(),
        };
        put(wire::address_key(self.rank), &a.encode())?;
        let qpns: Vec<u32> = self.peers.iter().map(|p| p.qp.num()).collect();
        for (i, chunk) in qpns.chunks(wire::QPN_PER_KEY as usize).enumerate() {
            let first = i as u32 * wire::QPN_PER_KEY;
            put(
                wire::qpn_key(self.rank, first),
                &wire::encode_qpns(first, chunk),
            )?;
        }
        Ok(())
    }

    /// Bring `p`'s QP to RTS: read its address, then INIT -> RTR -> RTS.
    fn connect(&mut self, p: u32) -> Result<(), ConnectError> {
        let base = self
            .engine
            .get(&wire::address_key(p))
            .map_err(|_| ConnectError::Missing)?;
        let a = Address::decode(&base).ok_or_else(|| {
            ConnectError::Broken(format!("rank {p}'s verbs address is malformed"))
        })?;
        if a.size != self.size {
            return Err(ConnectError::Broken(format!(
                "rank {p} thinks the job has {} processes, not {}",
                a.size, self.size
            )));
        }
        let chunk = self
            .engine
            .get(&wire::qpn_key(p, self.rank))
            .map_err(|_| ConnectError::Missing)?;
        let qpn = wire::qpn_for(&chunk, self.rank)
            .ok_or_else(|| ConnectError::Broken(format!("rank {p}'s QP numbers are malformed")))?;
        let l = self.local;
        let peer = &mut self.peers[p as usize];

        let mut rtr = sys::ibv_qp_attr {
            qp_state: sys::IBV_QPS_RTR,
            path_mtu: l.mtu.min(u32::from(a.mtu)),
            dest_qp_num: qpn,
            rq_psn: a.psn,
            max_dest_rd_atomic: l.rd_atomic,
            min_rnr_timer: QP_MIN_RNR_TIMER,
            ..Default::default()
        };
        rtr.ah_attr.dlid = a.lid;
        rtr.ah_attr.sl = 0;
        rtr.ah_attr.src_path_bits = 0;
        rtr.ah_attr.port_num = l.port;
        if l.link_layer == sys::IBV_LINK_LAYER_ETHERNET as u8 {
            // RoCE has no LIDs: every packet carries a GRH.
            rtr.ah_attr.is_global = 1;
            rtr.ah_attr.grh.dgid.raw = a.gid;
            rtr.ah_attr.grh.sgid_index = l.gid_index;
            rtr.ah_attr.grh.hop_limit = 64;
        }
        peer.qp
            .modify(
                &mut rtr,
                sys::IBV_QP_STATE
                    | sys::IBV_QP_AV
                    | sys::IBV_QP_PATH_MTU
                    | sys::IBV_QP_DEST_QPN
                    | sys::IBV_QP_RQ_PSN
                    | sys::IBV_QP_MAX_DEST_RD_ATOMIC
                    | sys::IBV_QP_MIN_RNR_TIMER,
            )
            .map_err(|e| {
                ConnectError::Broken(format!(
                    "ibv_modify_qp (RTR) to rank {p}: {}",
                    errno_text(e)
                ))
            })?;

        let mut rts = sys::ibv_qp_attr {
            qp_state: sys::IBV_QPS_RTS,
            timeout: QP_TIMEOUT,
            retry_cnt: QP_RETRY_CNT,
            rnr_retry: QP_RNR_RETRY,
            sq_psn: l.psn,
            max_rd_atomic: l.init_rd_atomic.min(a.rd_atomic).max(1),
            ..Default::default()
        };
        peer.qp
            .modify(
                &mut rts,
                sys::IBV_QP_STATE
                    | sys::IBV_QP_TIMEOUT
                    | sys::IBV_QP_RETRY_CNT
                    | sys::IBV_QP_RNR_RETRY
                    | sys::IBV_QP_SQ_PSN
                    | sys::IBV_QP_MAX_QP_RD_ATOMIC,
            )
            .map_err(|e| {
                ConnectError::Broken(format!(
                    "ibv_modify_qp (RTS) to rank {p}: {}",
                    errno_text(e)
                ))
            })?;

        peer.credits = Credits::new(u32::from(a.recv_depth));
        peer.credit_addr = a.credit_addr + 4 * u64::from(self.rank);
        peer.credit_rkey = a.credit_rkey;
        peer.state = State::Connected;
        peer.missing = false;
        self.unconnected -= 1;
        Ok(())
    }

    /// Connect every peer whose address is readable (first call after the
    /// engine's fence: all of them); retry the others now and then. Only
    /// `progress` calls this: the bootstrap callbacks may not run inside
    /// `send`.
    pub(super) fn connect_pending(&mut self) {
        if self.unconnected == 0 || self.tick < self.next_connect_tick {
            return;
        }
        let mut missing = false;
        for p in 0..self.size {
            if self.peers[p as usize].state != State::Unconnected {
                continue;
            }
            match self.connect(p) {
                Ok(()) => {}
                Err(ConnectError::Missing) => {
                    self.peers[p as usize].missing = true;
                    missing = true;
                }
                Err(ConnectError::Broken(m)) => self.fail_peer(p, ERR_UNREACHABLE, m),
            }
        }
        if missing {
            self.next_connect_tick = self.tick + CONNECT_RETRY_EVERY;
        }
    }

    /// `OK` when `p` can be sent to. An unconnected peer is "no
    /// resources" until `progress` has looked for its address (the engine
    /// retries after progress, which connects it), unreachable after.
    pub(super) fn ready(&self, p: u32) -> c_int {
        let peer = &self.peers[p as usize];
        match peer.state {
            State::Connected => OK,
            State::Failed => ERR_PEER_FAILED,
            State::Unconnected if peer.missing => ERR_UNREACHABLE,
            State::Unconnected => ERR_AGAIN,
        }
    }

    /// Stop talking to `p`: error its QP, report it, end what involves it.
    pub(super) fn fail_peer(&mut self, p: u32, status: c_int, message: String) {
        let peer = &mut self.peers[p as usize];
        match peer.state {
            State::Failed => return,
            State::Unconnected => self.unconnected -= 1,
            State::Connected => {}
        }
        peer.state = State::Failed;
        // Best effort: a QP that failed is in the error state already.
        let _ = peer.qp.set_error();
        self.outbox.push(Notice::Failed {
            peer: p,
            status,
            message,
        });
        // The QP no longer serves READs: the payloads can go.
        for key in self.sends.keys_where(|s| s.peer == p) {
            if let Some(s) = self.sends.remove(key)
                && s.posted
            {
                self.outbox.push(Notice::Completed {
                    cookie: s.cookie,
                    status,
                });
            }
        }
        // Fetches end once their posted READs have flushed.
        for key in self.fetches.keys_where(|f| f.peer == p) {
            let done = self.fetches.get_mut(key).map(|f| {
                f.status = status;
                f.next = f.chunks.len();
                f.outstanding == 0
            });
            if done == Some(true) {
                self.finish_fetch(key);
            }
        }
        self.fins.retain(|&(q, _)| q != p);
    }
}

/// A QP with as much inline room as the device grants, down to none.
pub(super) fn create_qp(pd: &Pd, cq: &Cq, sq_depth: u32, depth: u32) -> Result<Qp, c_int> {
    let mut last = libc::EINVAL;
    for inline in [INLINE_WANT, 64, 0] {
        let caps = sys::ibv_qp_cap {
            max_send_wr: sq_depth,
            max_recv_wr: depth,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: inline,
        };
        match Qp::create_rc(pd, cq, caps) {
            Ok(qp) => return Ok(qp),
            Err(e) => last = e,
        }
    }
    Err(last)
}
