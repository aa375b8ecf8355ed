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

use std::collections::{HashMap, VecDeque};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};

use plugin_api::{
    ATTR_RMA_READ, ATTR_WAKE_FD, Attr, ERR_AGAIN, ERR_INVALID, ERR_NO_DEVICE, ERR_PEER_FAILED,
    ERR_TRANSPORT, ERR_UNREACHABLE, IN_PROGRESS, Iov, OK, status_name,
};

use crate::credit::{Credits, Returns};
use crate::device;
use crate::rndv::{self, Chunk, Piece};
use crate::sys;
use crate::table::Table;
use crate::verbs::{
    Channel, Cq, Device, Mr, Pd, Qp, Region, errno_text, event_text, wc_status_text,
};
use crate::wire::{self, Address, Kind, PREFIX_LEN, Prefix, SEGMENT_LEN, Segment};
use plugin_api::plugin::Engine;

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
/// Inline data asked of the QPs (the device may grant less or more).
const INLINE_WANT: u32 = 256;
/// Inline messages are built on the stack in a buffer of this size.
const INLINE_BUF: usize = 256;
/// Segments one RTS carries (they must fit a bounce buffer's payload).
const MAX_SEGMENTS: usize = EAGER_MAX / SEGMENT_LEN;
/// Completions taken per `ibv_poll_cq`.
const POLL_BATCH: usize = 32;
/// Progress calls between looks at the asynchronous event queue.
const ASYNC_EVERY: u64 = 256;
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

/// A report for the engine, made at the next `progress`.
#[derive(Debug)]
enum Notice {
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
struct Completion {
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

enum ConnectError {
    /// The peer's address is not published (yet).
    Missing,
    /// Connecting failed for good.
    Broken(String),
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

    /// Publish our address and our QP numbers (see [`wire`]).
    fn publish(&self) -> Result<(), (c_int, String)> {
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

    /// Post receive buffer `slot` (of peer `slot / depth`).
    fn post_recv(&self, slot: usize) -> Result<(), c_int> {
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
    fn connect_pending(&mut self) {
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
    fn ready(&self, p: u32) -> c_int {
        let peer = &self.peers[p as usize];
        match peer.state {
            State::Connected => OK,
            State::Failed => ERR_PEER_FAILED,
            State::Unconnected if peer.missing => ERR_UNREACHABLE,
            State::Unconnected => ERR_AGAIN,
        }
    }

    /// Stop talking to `p`: error its QP, report it, end what involves it.
    fn fail_peer(&mut self, p: u32, status: c_int, message: String) {
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

    /// Take the credit count `p` wrote into our credit array.
    fn refresh_credits(&mut self, p: u32) -> Result<(), c_int> {
        // SAFETY: slot `p < size` of the credit array, 4-byte aligned and
        // inside the region, which lives as long as `self`; the device
        // writes it by DMA, so it is only ever read atomically here.
        let reported = unsafe {
            AtomicU32::from_ptr(self.credit_in.ptr().cast::<u32>().add(p as usize))
                .load(Ordering::Relaxed)
        };
        self.grant(p, reported)
    }

    fn grant(&mut self, p: u32, reported: u32) -> Result<(), c_int> {
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

    /// Room for one more send-side request on `p`'s QP and the CQ.
    fn can_post(&self, p: u32) -> bool {
        self.peers[p as usize].sq_used < self.sq_depth && self.send_outstanding < self.send_budget
    }

    /// A posted send-side request's accounting.
    fn posted(&mut self, p: u32) {
        self.peers[p as usize].sq_used += 1;
        self.send_outstanding += 1;
    }

    /// An `ibv_post_send` failure: a full queue is "no resources",
    /// anything else breaks the peer.
    fn post_failed(&mut self, p: u32, what: &str, e: c_int) -> c_int {
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
    fn post_message(
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
    fn registration_failed(&self) -> c_int {
        if self.sends.is_empty() && self.fetches.is_empty() {
            ERR_TRANSPORT
        } else {
            ERR_AGAIN
        }
    }

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
    fn post_reads(&mut self) {
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
    fn finish_fetch(&mut self, key: u64) {
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
    fn flush_fins(&mut self) {
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

    /// Tell peers how many of our receive buffers they may use again, by
    /// RDMA WRITE into their credit arrays, where half a queue is owed and
    /// no message carried the count.
    fn write_credits(&mut self) {
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
    fn note_owing(&mut self, p: u32) {
        let threshold = (self.depth / 2).max(1);
        let peer = &mut self.peers[p as usize];
        if !peer.owing_listed && peer.returns.write_due(threshold) {
            peer.owing_listed = true;
            self.owing.push(p);
        }
    }

    fn handle(&mut self, c: Completion) {
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
    fn async_events(&mut self) {
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
    fn flush_outbox(&mut self) -> usize {
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

/// A QP with as much inline room as the device grants, down to none.
fn create_qp(pd: &Pd, cq: &Cq, sq_depth: u32, depth: u32) -> Result<Qp, c_int> {
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
