//! One open context: the device and its queues, a reliable connected QP
//! per peer, and the protocol state (credits, tokens, rendezvous sends
//! and fetches). The crate docs describe the protocol; this module keeps
//! its invariants:
//!
//! - Every posted send-side work request has an entry in `wrs` (its
//!   `wr_id` is the entry's key) until its completion is polled; the
//!   entry says whose QP it was on and what to release. Receive requests
//!   carry `RECV_TAG | slot` instead, `slot / depth` being the peer.
//! - `peer.sq_used` counts that peer's send-side requests in flight
//!   (`<= sq_depth`), `send_outstanding` all of them (`<= send_budget`),
//!   and `size * depth + send_budget` is the CQ's size: the CQ never
//!   overflows.
//! - A receive slot is either posted or being handled by `on_recv`, never
//!   both; a bounce slot is on `free_slots` or named by one `Wr::Bounce`.
//! - User memory registered for a rendezvous (send side or fetch side)
//!   stays registered until no request and no peer can touch it: a send's
//!   until its FIN arrives or its peer's QP is in the error state, a
//!   fetch's until all its READs completed.
//! - Callbacks run only in `progress`: what another entry finds (a peer
//!   failing during `send`) goes to `outbox` and is reported at the next
//!   `progress`.
//!
//! The work is spread over submodules, each an `impl Transport` block:
//! - [`connect`]: publishing our address, connecting QPs, failing peers;
//! - [`send`]: `send`, eager and rendezvous, and posting messages;
//! - [`fetch`]: `fetch` and `discard`, the READs, and FINs;
//! - [`flow`]: credit returns (credit array reads and writes);
//! - [`completion`]: work completions, received messages, asynchronous
//!   events, and the outbox.
//!
//! This module has the limits, the state types, `Transport` itself with
//! `open` and `Drop`, and `progress`, `wake_fd` and `arm`, which drive the
//! rest.

mod completion;
mod connect;
mod fetch;
mod flow;
mod send;

use std::collections::{HashMap, VecDeque};
use std::ffi::c_int;

use plugin_api::plugin::Engine;
use plugin_api::{
    ATTR_RMA_READ, ATTR_WAKE_FD, Attr, ERR_AGAIN, ERR_INVALID, ERR_NO_DEVICE, ERR_TRANSPORT, OK,
};

use self::completion::{Completion, Notice};
use self::connect::create_qp;
use crate::credit::{Credits, Returns};
use crate::device;
use crate::rndv::Chunk;
use crate::sys;
use crate::table::Table;
use crate::verbs::{Channel, Cq, Device, Mr, Pd, Qp, Region, errno_text};
use crate::wire::{PREFIX_LEN, SEGMENT_LEN, Segment};

/// The largest engine header.
pub(crate) const MAX_HEADER: usize = 64;
/// The largest payload sent eagerly (through bounce buffers).
pub(crate) const EAGER_MAX: usize = 8192;
/// Bytes of a message in a bounce or receive buffer, at most.
const SLOT_LEN: usize = PREFIX_LEN + MAX_HEADER + EAGER_MAX;
/// Distance between buffers in a pool.
const STRIDE: usize = SLOT_LEN.next_multiple_of(64);
/// Receive buffers per peer: as many as fit [`RECV_POOL_TARGET`], within
/// these bounds.
const MAX_RECV_DEPTH: u32 = 16;
const MIN_RECV_DEPTH: u32 = 4;
const RECV_POOL_TARGET: usize = 64 << 20;
/// Send queue depth per QP.
const SEND_DEPTH: u32 = 64;
/// Bounce buffers, shared by all peers.
const SEND_SLOTS: usize = 64;
/// Send-side requests in flight over all QPs (CQ room), at most and at
/// least.
const SEND_BUDGET: u32 = 256;
const MIN_SEND_BUDGET: u32 = 16;
/// Inline messages are built on the stack in a buffer of this size.
const INLINE_BUF: usize = 256;
/// Segments one RTS carries (they must fit a bounce buffer's payload).
const MAX_SEGMENTS: usize = EAGER_MAX / SEGMENT_LEN;
/// Completions taken per `ibv_poll_cq`.
const POLL_BATCH: usize = 32;
/// Progress calls between looks at the asynchronous event queue.
const ASYNC_EVERY: u64 = 256;
/// Bit 63 of a `wr_id`: a receive request.
const RECV_TAG: u64 = 1 << 63;

// A full eager message fits a slot, an RTS with every segment too, slots
// are cache-line aligned, and a header-only message can go inline.
const _: () = {
    assert!(PREFIX_LEN + MAX_HEADER + EAGER_MAX <= SLOT_LEN);
    assert!(MAX_SEGMENTS * SEGMENT_LEN <= EAGER_MAX);
    assert!(STRIDE.is_multiple_of(64));
    assert!(INLINE_BUF >= PREFIX_LEN + MAX_HEADER);
};

/// Receive buffers per peer for a job of `size` processes.
pub(crate) fn recv_depth(size: u32) -> u32 {
    let per_peer = RECV_POOL_TARGET / (size.max(1) as usize * STRIDE);
    u32::try_from(per_peer)
        .unwrap_or(u32::MAX)
        .clamp(MIN_RECV_DEPTH, MAX_RECV_DEPTH)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// QP in INIT with receives posted; the peer's address not read yet.
    Unconnected,
    /// QP in RTS.
    Connected,
    /// Reported to the engine; the QP is in the error state.
    Failed,
}

#[derive(Debug)]
struct Peer {
    qp: Qp,
    state: State,
    /// Our sends to it, against its receive buffers.
    credits: Credits,
    /// Its sends to us, against our receive buffers.
    returns: Returns,
    /// On `Transport::owing`.
    owing_listed: bool,
    /// `progress` looked for its address and found none.
    missing: bool,
    /// Send-side requests in flight on `qp`.
    sq_used: u32,
    /// Where our credit count goes in its credit array, and the rkey.
    credit_addr: u64,
    credit_rkey: u32,
}

/// A payload waiting at a peer, handed to the engine as a token.
#[derive(Debug)]
struct Token {
    peer: u32,
    op: u64,
    len: u64,
    segments: Vec<Segment>,
}

/// A rendezvous send waiting for its FIN.
#[derive(Debug)]
struct RndvSend {
    peer: u32,
    cookie: u64,
    /// Its RTS went out (before that, a failure is reported by `send`'s
    /// return code, not by a completion).
    posted: bool,
    /// The payload's registrations, dropped (deregistered) at the end.
    _mrs: Vec<Mr>,
}

/// A fetch: RDMA READs into the engine's buffer.
#[derive(Debug)]
struct Fetch {
    peer: u32,
    op: u64,
    chunks: Vec<Chunk>,
    /// Chunks posted so far.
    next: usize,
    /// Chunks posted and not completed.
    outstanding: u32,
    cookie: u64,
    /// `OK`, or the error it ends with.
    status: c_int,
    _mrs: Vec<Mr>,
}

/// What a send-side work request was.
#[derive(Clone, Copy, Debug)]
enum Wr {
    Bounce { peer: u32, slot: u32 },
    Inline { peer: u32 },
    Read { peer: u32, fetch: u64 },
    CreditWrite { peer: u32 },
}

impl Wr {
    fn peer(self) -> u32 {
        match self {
            Self::Bounce { peer, .. }
            | Self::Inline { peer }
            | Self::Read { peer, .. }
            | Self::CreditWrite { peer } => peer,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Bounce { .. } | Self::Inline { .. } => "send",
            Self::Read { .. } => "RDMA READ",
            Self::CreditWrite { .. } => "credit RDMA WRITE",
        }
    }
}

/// What connecting needs to know of our own port.
#[derive(Clone, Copy, Debug)]
struct Local {
    port: u8,
    lid: u16,
    gid_index: u8,
    gid: [u8; 16],
    link_layer: u8,
    mtu: sys::ibv_mtu,
    psn: u32,
    /// Responder resources (`max_qp_rd_atom`).
    rd_atomic: u8,
    /// Initiator depth (`max_qp_init_rd_atom`).
    init_rd_atomic: u8,
}

/// An open context.
#[derive(Debug)]
pub(crate) struct Transport {
    engine: Engine,
    rank: u32,
    size: u32,
    local: Local,
    /// Our receive buffers per peer.
    depth: u32,
    sq_depth: u32,
    send_budget: u32,
    /// Whole messages (prefix included) up to this go inline.
    inline_bytes: usize,
    max_message: u64,
    peers: Vec<Peer>,
    qp_peer: HashMap<u32, u32>,
    /// Peers in `State::Unconnected`.
    unconnected: usize,
    next_connect_tick: u64,
    tick: u64,
    tokens: Table<Token>,
    sends: Table<RndvSend>,
    fetches: Table<Fetch>,
    wrs: Table<Wr>,
    /// FIN messages waiting for a credit or queue room: (peer, op).
    fins: VecDeque<(u32, u64)>,
    /// Fetches with READs left to post.
    fetch_queue: VecDeque<u64>,
    /// Peers that may owe a credit write.
    owing: Vec<u32>,
    /// Completions `arm` found, handled at the next `progress`.
    stash: Vec<Completion>,
    outbox: Vec<Notice>,
    send_outstanding: u32,
    free_slots: Vec<u32>,
    // Device resources. `Drop` destroys the QPs (in `peers`) and the user
    // registrations (in `sends`, `fetches`) first; these then drop in
    // declaration order: memory regions, CQ, channel, PD, device.
    recv_pool: Region,
    send_pool: Region,
    /// `size` counters, slot `p` written by peer `p` (RDMA WRITE).
    credit_in: Region,
    /// `size` counters, the source of our credit writes to each peer.
    credit_out: Region,
    cq: Cq,
    channel: Channel,
    pd: Pd,
    device: Device,
}

impl Drop for Transport {
    fn drop(&mut self) {
        // No QP, no device access: then user memory can be deregistered.
        self.peers.clear();
        self.sends.clear();
        self.fetches.clear();
    }
}

fn verbs_error(device: &str, what: &str, e: c_int) -> (c_int, String) {
    (
        ERR_TRANSPORT,
        format!("{device}: {what}: {}", errno_text(e)),
    )
}

fn initial_psn(rank: u32) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (t ^ std::process::id().rotate_left(8) ^ rank.wrapping_mul(0x9e37_79b9)) & 0x00ff_ffff
}

fn clamp_u8(v: c_int) -> u8 {
    u8::try_from(v.clamp(1, 255)).unwrap_or(1)
}

impl Transport {
    /// Open the device for rank `rank` of `size`, publish the address, and
    /// say what the transport offers.
    pub(crate) fn open(
        rank: u32,
        size: u32,
        engine: Engine,
    ) -> Result<(Self, Attr), (c_int, String)> {
        if size == 0 || rank >= size {
            return Err((ERR_INVALID, format!("rank {rank} in a job of {size}")));
        }
        let sel = device::select().map_err(|m| (ERR_NO_DEVICE, m))?;
        let (gid_index, gid) = device::pick_gid(&sel).map_err(|m| (ERR_NO_DEVICE, m))?;
        let name = sel.name.clone();
        let (da, pa) = (sel.device_attr, sel.port_attr);

        let max_qp_wr = u32::try_from(da.max_qp_wr).unwrap_or(0).max(1);
        let depth = recv_depth(size).min(max_qp_wr);
        let sq_depth = SEND_DEPTH.min(max_qp_wr);
        let max_cqe = u64::try_from(da.max_cqe).unwrap_or(0);
        let recv_total = u64::from(size) * u64::from(depth);
        if u64::try_from(da.max_qp).unwrap_or(0) < u64::from(size) {
            return Err((
                ERR_TRANSPORT,
                format!(
                    "{name}: a job of {size} needs {size} QPs; the device has {}",
                    da.max_qp
                ),
            ));
        }
        if recv_total + u64::from(MIN_SEND_BUDGET) > max_cqe {
            return Err((
                ERR_TRANSPORT,
                format!(
                    "{name}: a job of {size} needs {} completion queue entries; the device has {max_cqe}",
                    recv_total + u64::from(MIN_SEND_BUDGET)
                ),
            ));
        }
        let send_budget = u32::try_from((max_cqe - recv_total).min(u64::from(SEND_BUDGET)))
            .unwrap_or(SEND_BUDGET);
        let recv_total = u32::try_from(recv_total).map_err(|_| {
            (
                ERR_TRANSPORT,
                format!("{name}: a job of {size} is too large"),
            )
        })?;

        sel.device
            .set_async_nonblocking()
            .map_err(|e| verbs_error(&name, "async event fd", e))?;
        let pd = Pd::alloc(&sel.device).map_err(|e| verbs_error(&name, "ibv_alloc_pd", e))?;
        let channel = Channel::create(&sel.device)
            .map_err(|e| verbs_error(&name, "ibv_create_comp_channel", e))?;
        let cq = Cq::create(&sel.device, recv_total + send_budget, &channel)
            .map_err(|e| verbs_error(&name, "ibv_create_cq", e))?;
        let local_write = sys::IBV_ACCESS_LOCAL_WRITE;
        let recv_pool = Region::new(&pd, recv_total as usize * STRIDE, local_write)
            .map_err(|e| verbs_error(&name, "ibv_reg_mr (receive buffers)", e))?;
        let send_pool = Region::new(&pd, SEND_SLOTS * STRIDE, 0)
            .map_err(|e| verbs_error(&name, "ibv_reg_mr (bounce buffers)", e))?;
        let credit_in = Region::new(
            &pd,
            4 * size as usize,
            local_write | sys::IBV_ACCESS_REMOTE_WRITE,
        )
        .map_err(|e| verbs_error(&name, "ibv_reg_mr (credit counters)", e))?;
        let credit_out = Region::new(&pd, 4 * size as usize, 0)
            .map_err(|e| verbs_error(&name, "ibv_reg_mr (credit counters)", e))?;

        let mut peers = Vec::with_capacity(size as usize);
        let mut qp_peer = HashMap::with_capacity(size as usize);
        for p in 0..size {
            let qp = create_qp(&pd, &cq, sq_depth, depth)
                .map_err(|e| verbs_error(&name, "ibv_create_qp", e))?;
            let mut init = sys::ibv_qp_attr {
                qp_state: sys::IBV_QPS_INIT,
                pkey_index: 0,
                port_num: sel.port,
                qp_access_flags: local_write
                    | sys::IBV_ACCESS_REMOTE_READ
                    | sys::IBV_ACCESS_REMOTE_WRITE,
                ..Default::default()
            };
            qp.modify(
                &mut init,
                sys::IBV_QP_STATE
                    | sys::IBV_QP_PKEY_INDEX
                    | sys::IBV_QP_PORT
                    | sys::IBV_QP_ACCESS_FLAGS,
            )
            .map_err(|e| verbs_error(&name, "ibv_modify_qp (INIT)", e))?;
            qp_peer.insert(qp.num(), p);
            peers.push(Peer {
                qp,
                state: State::Unconnected,
                credits: Credits::new(0),
                returns: Returns::default(),
                owing_listed: false,
                missing: false,
                sq_used: 0,
                credit_addr: 0,
                credit_rkey: 0,
            });
        }
        let inline_bytes = peers
            .iter()
            .map(|p| p.qp.caps().max_inline_data as usize)
            .min()
            .unwrap_or(0)
            .min(INLINE_BUF);

        let local = Local {
            port: sel.port,
            lid: pa.lid,
            gid_index,
            gid,
            link_layer: pa.link_layer,
            mtu: pa.active_mtu,
            psn: initial_psn(rank),
            rd_atomic: clamp_u8(da.max_qp_rd_atom),
            init_rd_atomic: clamp_u8(da.max_qp_init_rd_atom),
        };
        let mut attr = Attr {
            flags: ATTR_WAKE_FD | ATTR_RMA_READ,
            max_header: MAX_HEADER as u64,
            inline_max: inline_bytes.saturating_sub(PREFIX_LEN + MAX_HEADER) as u64,
            eager_max: EAGER_MAX as u64,
            max_message: u64::from(pa.max_msg_sz),
            latency_ns: device::latency_ns(pa.link_layer),
            bandwidth_mbs: device::bandwidth_mbs(pa.active_speed, pa.active_width),
            ..Attr::default()
        };
        let link = if pa.link_layer == sys::IBV_LINK_LAYER_ETHERNET as u8 {
            format!("RoCE, GID {gid_index}")
        } else {
            "InfiniBand".to_string()
        };
        attr.set_device(&format!(
            "{name} port {} ({link}, MTU {})",
            sel.port,
            device::mtu_bytes(pa.active_mtu)
        ));

        let t = Self {
            engine,
            rank,
            size,
            local,
            depth,
            sq_depth,
            send_budget,
            inline_bytes,
            max_message: u64::from(pa.max_msg_sz),
            peers,
            qp_peer,
            unconnected: size as usize,
            next_connect_tick: 0,
            tick: 0,
            tokens: Table::default(),
            sends: Table::default(),
            fetches: Table::default(),
            wrs: Table::default(),
            fins: VecDeque::new(),
            fetch_queue: VecDeque::new(),
            owing: Vec::new(),
            stash: Vec::new(),
            outbox: Vec::new(),
            send_outstanding: 0,
            free_slots: (0..SEND_SLOTS as u32).rev().collect(),
            recv_pool,
            send_pool,
            credit_in,
            credit_out,
            cq,
            channel,
            pd,
            device: sel.device,
        };
        for slot in 0..recv_total as usize {
            t.post_recv(slot)
                .map_err(|e| verbs_error(&name, "ibv_post_recv", e))?;
        }
        t.publish()?;
        Ok((t, attr))
    }

    /// Make progress: connections, completions (at most about `budget`),
    /// READs, FINs and credit writes waiting for room, reports.
    pub(crate) fn progress(&mut self, budget: u32) -> c_int {
        self.tick += 1;
        self.connect_pending();
        if self.tick.is_multiple_of(ASYNC_EVERY) {
            self.async_events();
        }
        let budget = budget.max(1) as usize;
        let mut events = 0usize;
        for c in std::mem::take(&mut self.stash) {
            self.handle(c);
            events += 1;
        }
        let mut wcs = [sys::ibv_wc::default(); POLL_BATCH];
        let mut failed = false;
        while events < budget {
            let want = (budget - events).min(POLL_BATCH);
            match self.cq.poll(&mut wcs[..want]) {
                Ok(n) => {
                    for wc in &wcs[..n] {
                        self.handle(Completion::from(wc));
                    }
                    events += n;
                    if n < want {
                        break;
                    }
                }
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        self.post_reads();
        self.flush_fins();
        self.write_credits();
        events += self.flush_outbox();
        if failed {
            return ERR_TRANSPORT;
        }
        c_int::try_from(events).unwrap_or(c_int::MAX)
    }

    pub(crate) fn wake_fd(&self) -> c_int {
        self.channel.fd()
    }

    /// Prepare to sleep on the channel: drain it, ask for the next event,
    /// and poll once to close the race with completions that came before
    /// the request (they are kept for the next `progress`).
    pub(crate) fn arm(&mut self) -> c_int {
        // Work that only `progress` does, and that no completion would
        // announce: reports, FINs, READs and credit writes waiting for
        // room, and connecting (a peer's first packets reach a QP still in
        // INIT, which drops them silently, until `progress` connects it).
        let connect_due = self.unconnected > 0 && self.tick >= self.next_connect_tick;
        if connect_due
            || !self.outbox.is_empty()
            || !self.stash.is_empty()
            || !self.fins.is_empty()
            || !self.owing.is_empty()
            || !self.fetch_queue.is_empty()
        {
            return ERR_AGAIN;
        }
        while self.channel.take_event() {
            self.cq.ack_events(1);
        }
        if self.cq.req_notify().is_err() {
            return ERR_TRANSPORT;
        }
        let mut wcs = [sys::ibv_wc::default(); POLL_BATCH];
        match self.cq.poll(&mut wcs) {
            Ok(0) => OK,
            Ok(n) => {
                self.stash.extend(wcs[..n].iter().map(Completion::from));
                ERR_AGAIN
            }
            Err(_) => ERR_TRANSPORT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_depth_shrinks_with_the_job_within_bounds() {
        assert_eq!(recv_depth(1), MAX_RECV_DEPTH);
        assert_eq!(recv_depth(64), MAX_RECV_DEPTH);
        let d = recv_depth(1000);
        assert!((MIN_RECV_DEPTH..MAX_RECV_DEPTH).contains(&d), "{d}");
        assert_eq!(recv_depth(1_000_000), MIN_RECV_DEPTH);
    }

    #[test]
    fn work_request_ids_never_look_like_receives() {
        let mut t: Table<Wr> = Table::default();
        for _ in 0..1000 {
            let k = t.insert(Wr::Inline { peer: 0 });
            assert_eq!(k & RECV_TAG, 0);
        }
    }
}
