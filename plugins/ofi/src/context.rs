//! One open transport: the endpoint, its buffers, and the protocol state
//! (rendezvous sends waiting for their FIN, tokens waiting for the engine,
//! fetches reading). The ABI entries in `lib.rs` call the methods here;
//! callbacks to the engine are made only from [`Ofi::progress`] (and the
//! bootstrap's `put` from `open`, its `get` at a peer's first use).
//!
//! Buffers: `RX_SLOTS` receive buffers and `TX_SLOTS` send buffers of
//! [`SLOT_SIZE`] bytes each, two page-aligned regions registered once when
//! the provider wants local registrations (`FI_MR_LOCAL`). Every eager
//! message, RTS and FIN is copied into a send buffer, so `send` of an eager
//! payload returns `OK` at once.
//!
//! Rendezvous: the sender registers each piece of the payload for remote
//! reads (up to [`MAX_SEGS`] pieces; more are packed into one buffer of the
//! plugin's, which also makes the send complete at once) and sends an RTS
//! naming them. The receiver hands the engine a token (a [`Table`] id:
//! generation and index, XOR a per-context salt, so a stale, made-up or
//! other context's token is refused); `fetch` registers the engine's
//! buffer if `FI_MR_LOCAL` asks for it and `fi_read`s the payload (see
//! [`crate::rndv`]); when the last read completes it sends a FIN and
//! reports the fetch. The FIN makes the sender deregister and report its
//! send.
//!
//! Failures: an error completion of a send or read names a peer (each
//! posted operation's context records it): the peer is reported failed
//! once, its rendezvous sends and fetches complete with that error, and
//! later sends to it are refused with it. A peer whose posts answer "no
//! resources" for longer than `TESSEL_OFI_STALL_TIMEOUT` seconds (default
//! 120; 0 turns the guard off) is reported unreachable the same way:
//! `tcp;ofi_rxm` 1.17 reports a refused connection only so (it resets the
//! connection and retries, see `rxm_process_reject`).

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plugin_api::{
    ATTR_RMA_READ, ATTR_WAKE_FD, Attr, ERR_AGAIN, ERR_INVALID, ERR_PEER_FAILED, ERR_TRANSPORT,
    ERR_UNREACHABLE, IN_PROGRESS, Iov, OK,
};

use crate::buffers::{Ctx, Kind, Region, Slots};
use crate::fi::{Addr, Endpoint, FiError};
use crate::provider::{self, Chosen};
use crate::rndv::{Fetch, Issue, Piece, RndvSend, Token};
use crate::sys;
use crate::table::Table;
use crate::wire::{self, FIN_DISCARDED, FIN_FAILED, FIN_READ, Message, PREFIX_LEN, Seg};
use plugin_api::plugin::Engine;

/// The largest engine header.
pub const MAX_HEADER: usize = 128;
/// Payloads up to this size travel with the header (one message).
pub const EAGER_MAX: usize = 8192;
/// Bytes of one send or receive buffer.
pub const SLOT_SIZE: usize = PREFIX_LEN + MAX_HEADER + EAGER_MAX;
/// Receive buffers posted at all times (fewer if the provider's receive
/// queue is shorter). RDM providers buffer what arrives beyond them.
const RX_SLOTS: usize = 64;
/// Send buffers: at most this many messages in flight.
const TX_SLOTS: usize = 64;
/// Pieces of a rendezvous payload registered one by one; beyond, packed.
pub const MAX_SEGS: usize = 64;
/// Completions read per `fi_cq_read`.
const CQ_BATCH: usize = 16;

const _: () = assert!(wire::rts_len(MAX_HEADER, MAX_SEGS) <= SLOT_SIZE);
const _: () = assert!(wire::FIN_LEN <= SLOT_SIZE);

/// What the plugin knows of a peer.
#[derive(Debug, Default)]
struct Peer {
    addr: Option<Addr>,
    failed: Option<c_int>,
    /// Since when every post to the peer answered "no resources".
    again_since: Option<Instant>,
}

/// Map a libfabric error to a status code.
fn status_of(e: &FiError) -> c_int {
    let c = e.code as u32;
    if e.is_again() {
        ERR_AGAIN
    } else if [
        sys::FI_ECONNREFUSED,
        sys::FI_EHOSTUNREACH,
        sys::FI_ENETUNREACH,
        sys::FI_EADDRNOTAVAIL,
        sys::FI_ENETDOWN,
        sys::FI_EHOSTDOWN,
    ]
    .contains(&c)
    {
        ERR_UNREACHABLE
    } else if [
        sys::FI_ECONNRESET,
        sys::FI_ENOTCONN,
        sys::FI_ECONNABORTED,
        sys::FI_ETIMEDOUT,
        sys::FI_EIO,
    ]
    .contains(&c)
    {
        ERR_PEER_FAILED
    } else {
        ERR_TRANSPORT
    }
}

/// The payload pieces of an `(iov, count)` argument, empty ones dropped,
/// or `None` when the argument is malformed.
///
/// # Safety
/// `iov` is null or points to `count` readable `Iov`s.
pub unsafe fn pieces<'a>(iov: *const Iov, count: usize) -> Option<Vec<&'a Iov>> {
    if count == 0 {
        return Some(Vec::new());
    }
    if iov.is_null() {
        return None;
    }
    // SAFETY: non-null, `count` entries per the caller.
    let all = unsafe { std::slice::from_raw_parts(iov, count) };
    let mut total = 0usize;
    let mut out = Vec::with_capacity(count);
    for p in all.iter().filter(|p| p.len > 0) {
        if p.base.is_null() {
            return None;
        }
        total = total.checked_add(p.len)?;
        out.push(p);
    }
    (total <= isize::MAX as usize).then_some(out)
}

/// One open transport.
///
/// Field order matters for drop: `net` (the endpoint, which closes the
/// provider's objects and every registration) goes first, before the
/// buffers and read contexts the provider may still point at.
#[derive(Debug)]
pub struct Ofi {
    net: Endpoint,
    engine: Engine,
    rank: u32,
    size: u32,
    provider: String,
    max_read: u64,
    peers: Vec<Peer>,
    rx: Slots,
    tx: Slots,
    tx_free: Vec<u32>,
    /// Peer of the message in each send buffer.
    tx_peer: Vec<u32>,
    /// Receive buffers whose repost the provider refused for now.
    repost: Vec<u32>,
    sends: Table<RndvSend>,
    tokens: Table<Token>,
    fetches: Table<Fetch>,
    /// Fetches with reads still to issue.
    blocked: VecDeque<u64>,
    /// FINs to send: (peer, operation, outcome).
    fins: VecDeque<(u32, u64, u64)>,
    /// Messages dropped as malformed (never expected; kept for debugging).
    dropped: u64,
    /// Tokens are table ids XOR this per-context value, so a token handed
    /// to another context (or made up) is refused rather than taken.
    salt: u64,
    /// How long posts to a peer may answer "no resources" before it is
    /// reported unreachable (`None`: never).
    stall_timeout: Option<Duration>,
    /// Peers whose `again_since` may be set.
    stalled: Vec<u32>,
}

/// The environment variable with the stall timeout in seconds (0: none).
pub const STALL_VAR: &str = "TESSEL_OFI_STALL_TIMEOUT";
/// The default stall timeout.
const STALL_DEFAULT: Duration = Duration::from_secs(120);

/// The stall timeout from the environment.
fn stall_timeout() -> Option<Duration> {
    match std::env::var(STALL_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        Some(s) if s <= 0.0 || !s.is_finite() => None,
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => Some(STALL_DEFAULT),
    }
}

/// A different salt for every context of the process (splitmix64 of a
/// counter).
fn next_salt() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut z = COUNTER
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Ofi {
    /// Open the transport for `rank` of `size`: pick a provider, post the
    /// receive buffers, publish the address. Fills `attr` completely (the
    /// caller copies what the engine's `Attr` holds).
    pub fn open(
        rank: u32,
        size: u32,
        engine: Engine,
    ) -> Result<(Box<Self>, Attr), (c_int, String)> {
        if size == 0 || rank >= size {
            return Err((ERR_INVALID, format!("rank {rank} of a job of {size}")));
        }
        let c: Chosen =
            provider::open(size as usize).map_err(|m| (plugin_api::ERR_NO_DEVICE, m))?;
        let (tx_depth, rx_depth) = c.queue_sizes;
        let cap = |depth: usize, want: usize| if depth == 0 { want } else { want.min(depth) };
        let (lat, bw) = provider::estimates(&c);
        let mut attr = Attr {
            flags: 0,
            max_header: MAX_HEADER as u64,
            inline_max: EAGER_MAX as u64,
            eager_max: EAGER_MAX as u64,
            max_message: isize::MAX as u64,
            latency_ns: lat,
            bandwidth_mbs: bw,
            ..Attr::default()
        };
        attr.set_device(&format!("{} on {}", c.provider, c.domain));
        if c.ep.wait_fd().is_some() {
            attr.flags |= ATTR_WAKE_FD;
        }
        if provider::rma_in_hardware(&c) {
            attr.flags |= ATTR_RMA_READ;
        }
        let n_tx = cap(tx_depth, TX_SLOTS);
        let mut me = Box::new(Ofi {
            rx: Slots::new(Kind::Recv, cap(rx_depth, RX_SLOTS), SLOT_SIZE),
            tx: Slots::new(Kind::Send, n_tx, SLOT_SIZE),
            tx_free: (0..n_tx as u32).rev().collect(),
            tx_peer: vec![0; n_tx],
            net: c.ep,
            engine,
            rank,
            size,
            provider: c.provider,
            max_read: if c.max_msg_size == 0 {
                1 << 30
            } else {
                c.max_msg_size.min(1 << 30)
            },
            peers: (0..size).map(|_| Peer::default()).collect(),
            repost: Vec::new(),
            sends: Table::default(),
            tokens: Table::default(),
            fetches: Table::default(),
            blocked: VecDeque::new(),
            fins: VecDeque::new(),
            dropped: 0,
            salt: next_salt(),
            stall_timeout: stall_timeout(),
            stalled: Vec::new(),
        });
        let fail = |e: FiError| (ERR_TRANSPORT, e.to_string());
        if me.net.local_mr() {
            let access = u64::from(sys::FI_SEND | sys::FI_RECV);
            // SAFETY: both regions live in `me`, dropped after its
            // endpoint (field order), which closes the registrations.
            unsafe {
                let (p, n) = me.rx.region();
                me.rx.mr = Some(me.net.mr_reg(p, n, access).map_err(fail)?);
                let (p, n) = me.tx.region();
                me.tx.mr = Some(me.net.mr_reg(p, n, access).map_err(fail)?);
            }
        }
        for i in 0..me.rx.len() as u32 {
            if let Err(e) = me.post_recv(i) {
                if e.is_again() {
                    me.repost.push(i);
                } else {
                    return Err(fail(e));
                }
            }
        }
        let card = wire::put_card(&me.provider, me.net.name());
        me.engine
            .put(&key(rank), &card)
            .map_err(|rc| (rc, format!("publishing the address under {}", key(rank))))?;
        Ok((me, attr))
    }

    /// The descriptor the engine may poll.
    pub fn wake_fd(&self) -> c_int {
        self.net.wait_fd().unwrap_or(ERR_INVALID)
    }

    /// Prepare to sleep: `OK` when nothing is pending and the provider
    /// agrees (`fi_trywait`).
    pub fn arm(&mut self) -> c_int {
        if self.net.wait_fd().is_none() {
            return ERR_INVALID;
        }
        if !self.fins.is_empty() || !self.blocked.is_empty() || !self.repost.is_empty() {
            return ERR_AGAIN;
        }
        match self.net.trywait() {
            Ok(true) => OK,
            Ok(false) => ERR_AGAIN,
            Err(_) => ERR_TRANSPORT,
        }
    }

    fn post_recv(&mut self, i: u32) -> Result<(), FiError> {
        let desc = self
            .rx
            .mr
            .map_or(std::ptr::null_mut(), |m| self.net.mr_desc(m));
        let ctx = self.rx.ctxs[i as usize].as_op_context();
        // SAFETY: buffer `i` and its context live in `self.rx` until the
        // endpoint is dropped (field order); nobody touches the buffer until
        // its completion, which is where it is read.
        unsafe { self.net.recv(self.rx.ptr(i as usize), SLOT_SIZE, desc, ctx) }
    }

    /// The peer's address in the AV, looked up in the engine's key-value
    /// store and inserted on first use.
    fn address(&mut self, peer: u32) -> Result<Addr, c_int> {
        let p = self.peers.get(peer as usize).ok_or(ERR_INVALID)?;
        if let Some(rc) = p.failed {
            return Err(rc);
        }
        if let Some(a) = p.addr {
            return Ok(a);
        }
        let card = self.engine.get(&key(peer)).map_err(|_| ERR_UNREACHABLE)?;
        let (prov, name) = wire::parse_card(&card).ok_or(ERR_UNREACHABLE)?;
        if prov != self.provider {
            return Err(ERR_UNREACHABLE);
        }
        let a = self.net.av_insert(name).map_err(|_| ERR_UNREACHABLE)?;
        self.peers[peer as usize].addr = Some(a);
        Ok(a)
    }

    /// Post send buffer `slot` (`len` bytes filled) to `peer`.
    fn post_send(&mut self, slot: u32, len: usize, peer: u32, dest: Addr) -> Result<(), FiError> {
        self.tx_peer[slot as usize] = peer;
        let desc = self
            .tx
            .mr
            .map_or(std::ptr::null_mut(), |m| self.net.mr_desc(m));
        let ctx = self.tx.ctxs[slot as usize].as_op_context();
        // SAFETY: the buffer was taken from the free list (no operation on
        // it) and returns there only at its completion; buffer and context
        // live until the endpoint is dropped.
        let r = unsafe {
            self.net
                .send(self.tx.ptr(slot as usize), len, desc, dest, ctx)
        };
        match &r {
            Ok(()) => self.note_alive(peer),
            Err(e) => {
                self.tx_free.push(slot);
                if e.is_again() {
                    self.note_again(peer);
                }
            }
        }
        r
    }

    /// `send`: see the ABI. A bad peer or a header over [`MAX_HEADER`] is
    /// `ERR_INVALID`.
    pub fn send(&mut self, peer: u32, header: &[u8], iov: &[&Iov], cookie: u64) -> c_int {
        if peer >= self.size || header.len() > MAX_HEADER {
            return ERR_INVALID;
        }
        let total: usize = iov.iter().map(|p| p.len).sum();
        let dest = match self.address(peer) {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let Some(slot) = self.tx_free.pop() else {
            return ERR_AGAIN;
        };
        if total <= EAGER_MAX {
            let buf = self.tx.bytes(slot as usize);
            let mut at = wire::put_eager(buf, self.rank, header, total);
            for p in iov {
                // SAFETY: the ABI makes `p` `len` readable bytes; the buffer
                // has room (prefix + MAX_HEADER + EAGER_MAX).
                let src = unsafe { std::slice::from_raw_parts(p.base.cast::<u8>(), p.len) };
                buf[at..at + p.len].copy_from_slice(src);
                at += p.len;
            }
            return match self.post_send(slot, at, peer, dest) {
                Ok(()) => OK,
                Err(e) => status_of(&e),
            };
        }
        self.send_rndv(slot, peer, dest, header, iov, total, cookie)
    }

    #[allow(clippy::too_many_arguments)]
    fn send_rndv(
        &mut self,
        slot: u32,
        peer: u32,
        dest: Addr,
        header: &[u8],
        iov: &[&Iov],
        total: usize,
        cookie: u64,
    ) -> c_int {
        // Many pieces: pack them into one buffer of ours.
        let packed = (iov.len() > MAX_SEGS).then(|| {
            let r = Region::new(total);
            let mut at = 0;
            for p in iov {
                // SAFETY: the ABI makes `p` `len` readable bytes; the region
                // holds `total` bytes, the sum of the pieces.
                unsafe {
                    std::ptr::copy_nonoverlapping(p.base.cast::<u8>(), r.as_ptr().add(at), p.len)
                };
                at += p.len;
            }
            r
        });
        let ranges: Vec<(*mut u8, usize)> = match &packed {
            Some(r) => vec![(r.as_ptr(), total)],
            None => iov.iter().map(|p| (p.base.cast::<u8>(), p.len)).collect(),
        };
        let mut mrs = Vec::with_capacity(ranges.len());
        let mut segs = Vec::with_capacity(ranges.len());
        for &(base, len) in &ranges {
            // SAFETY: the payload stays until the send completes (the ABI),
            // which is when the FIN (or a failure) deregisters it; a packed
            // copy lives in the RndvSend, as long as its registration.
            match unsafe { self.net.mr_reg(base, len, u64::from(sys::FI_REMOTE_READ)) } {
                Ok(m) => {
                    segs.push(Seg {
                        addr: if self.net.virt_addr() { base as u64 } else { 0 },
                        key: self.net.mr_key(m),
                        len: len as u64,
                    });
                    mrs.push(m);
                }
                Err(e) => {
                    for m in mrs {
                        self.net.mr_close(m);
                    }
                    self.tx_free.push(slot);
                    return if e.is_again() {
                        ERR_AGAIN
                    } else {
                        ERR_TRANSPORT
                    };
                }
            }
        }
        let op = self.sends.insert(RndvSend {
            cookie: packed.is_none().then_some(cookie),
            peer,
            mrs,
            packed: None,
        });
        let rank = self.rank;
        let n = wire::put_rts(
            self.tx.bytes(slot as usize),
            rank,
            header,
            total as u64,
            op,
            &segs,
        );
        match self.post_send(slot, n, peer, dest) {
            Ok(()) => {
                let done_now = packed.is_some();
                if let Some(s) = self.sends.get_mut(op) {
                    s.packed = packed;
                }
                if done_now { OK } else { IN_PROGRESS }
            }
            Err(e) => {
                if let Some(s) = self.sends.remove(op) {
                    for m in s.mrs {
                        self.net.mr_close(m);
                    }
                }
                status_of(&e)
            }
        }
    }

    /// `fetch`: see the ABI.
    pub fn fetch(&mut self, token: u64, iov: &[&Iov], cookie: u64) -> c_int {
        let token = token ^ self.salt;
        let Some(t) = self.tokens.get(token) else {
            return ERR_INVALID;
        };
        let total: u64 = iov.iter().map(|p| p.len as u64).sum();
        if total != t.len {
            return ERR_INVALID;
        }
        let peer = t.peer;
        if let Some(rc) = self.peers[peer as usize].failed {
            self.tokens.remove(token);
            return rc;
        }
        let src = match self.address(peer) {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let mut pieces: Vec<Piece> = Vec::with_capacity(iov.len());
        for p in iov {
            let mr = if self.net.local_mr() {
                // SAFETY: the engine's buffer stays until the fetch
                // completes (the ABI); the registration is closed then.
                match unsafe {
                    self.net
                        .mr_reg(p.base.cast(), p.len, u64::from(sys::FI_READ))
                } {
                    Ok(m) => Some(m),
                    Err(e) => {
                        for q in pieces {
                            if let Some(m) = q.mr {
                                self.net.mr_close(m);
                            }
                        }
                        return if e.is_again() {
                            ERR_AGAIN
                        } else {
                            ERR_TRANSPORT
                        };
                    }
                }
            } else {
                None
            };
            pieces.push(Piece {
                base: p.base.cast(),
                len: p.len,
                mr,
            });
        }
        let t = self.tokens.remove(token).expect("looked up above");
        let id = self.fetches.insert(Fetch::new(cookie, src, t, pieces));
        if let Some(f) = self.fetches.get_mut(id) {
            f.set_id(id);
        }
        self.issue(id);
        let done = self.fetches.get(id).is_some_and(Fetch::finished);
        if done {
            // Nothing was posted (a zero-length payload, or the first read
            // failed): the answer is the return code, no callback.
            let rc = self.finish_fetch(id);
            self.flush_fins();
            return rc;
        }
        IN_PROGRESS
    }

    /// Issue what fetch `id` can; remember it (and its peer's stall) when
    /// the provider says wait.
    fn issue(&mut self, id: u64) {
        let (net, max_read) = (&self.net, self.max_read);
        let Some(f) = self.fetches.get_mut(id) else {
            return;
        };
        match f.issue(net, max_read) {
            Issue::Done => {}
            Issue::Failed(e) => f.fail(status_of(&e)),
            Issue::Blocked => {
                let peer = f.peer;
                if !self.blocked.contains(&id) {
                    self.blocked.push_back(id);
                }
                self.note_again(peer);
            }
        }
    }

    /// A post to `peer` answered "no resources".
    fn note_again(&mut self, peer: u32) {
        let p = &mut self.peers[peer as usize];
        if p.again_since.is_none() {
            p.again_since = Some(Instant::now());
            if !self.stalled.contains(&peer) {
                self.stalled.push(peer);
            }
        }
    }

    /// `peer` took a post or sent something: it is not stalled.
    fn note_alive(&mut self, peer: u32) {
        if let Some(p) = self.peers.get_mut(peer as usize) {
            p.again_since = None;
        }
    }

    /// Report the peers whose posts answered "no resources" for longer
    /// than the stall timeout: `tcp;ofi_rxm` answers so, forever, when the
    /// peer's connection is refused (it retries the connection and reports
    /// no error). Returns the number of peers reported.
    fn check_stalls(&mut self) -> usize {
        let Some(limit) = self.stall_timeout else {
            return 0;
        };
        let mut reported = 0;
        let now = Instant::now();
        let stalled = std::mem::take(&mut self.stalled);
        for peer in stalled {
            match self.peers[peer as usize].again_since {
                Some(t) if now.duration_since(t) >= limit => {
                    self.peers[peer as usize].again_since = None;
                    let m = format!(
                        "every send to rank {peer} answered \"no resources\" for {:.0} s \
                         (its connection is refused or stuck; FI_LOG_LEVEL=warn shows \
                         libfabric's view; {STALL_VAR} sets the limit)",
                        limit.as_secs_f64()
                    );
                    self.fail_peer(peer, ERR_UNREACHABLE, &m);
                    reported += 1;
                }
                Some(_) => self.stalled.push(peer),
                None => {}
            }
        }
        reported
    }

    /// Remove a finished fetch, deregister, queue its FIN; its status.
    fn finish_fetch(&mut self, id: u64) -> c_int {
        let Some(f) = self.fetches.remove(id) else {
            return ERR_INVALID;
        };
        for p in &f.pieces {
            if let Some(m) = p.mr {
                self.net.mr_close(m);
            }
        }
        if self.peers[f.peer as usize].failed.is_none() {
            let outcome = if f.status == OK { FIN_READ } else { FIN_FAILED };
            self.fins.push_back((f.peer, f.op, outcome));
        }
        f.status
    }

    /// `discard`: see the ABI. An unknown token is ignored.
    pub fn discard(&mut self, token: u64) {
        let token = token ^ self.salt;
        if let Some(t) = self.tokens.remove(token)
            && self.peers[t.peer as usize].failed.is_none()
        {
            self.fins.push_back((t.peer, t.op, FIN_DISCARDED));
            self.flush_fins();
        }
    }

    /// Send the queued FINs while send buffers last.
    fn flush_fins(&mut self) {
        while let Some(&(peer, op, outcome)) = self.fins.front() {
            if self.peers[peer as usize].failed.is_some() {
                self.fins.pop_front();
                continue;
            }
            let dest = match self.address(peer) {
                Ok(a) => a,
                Err(_) => {
                    // Nobody to tell: the sender's side will fail it.
                    self.fins.pop_front();
                    continue;
                }
            };
            let Some(slot) = self.tx_free.pop() else {
                return;
            };
            let rank = self.rank;
            let buf = self.tx.bytes(slot as usize);
            let n = wire::put_fin(buf, rank, op, outcome);
            match self.post_send(slot, n, peer, dest) {
                Ok(()) => {
                    self.fins.pop_front();
                }
                Err(e) if e.is_again() => return,
                Err(_) => {
                    self.fins.pop_front();
                }
            }
        }
    }

    /// `progress`: retry what waits for resources, then read up to
    /// `budget` completions, running the callbacks. Returns the number of
    /// completions handled.
    pub fn progress(&mut self, budget: u32) -> c_int {
        let budget = budget.max(1) as usize;
        let mut events = 0usize;
        let repost = std::mem::take(&mut self.repost);
        for i in repost {
            if self.post_recv(i).is_err() {
                self.repost.push(i);
            }
        }
        self.flush_fins();
        events += self.check_stalls();
        for _ in 0..self.blocked.len() {
            let Some(id) = self.blocked.pop_front() else {
                break;
            };
            self.issue(id);
            events += self.complete_if_finished(id);
        }
        let mut entries = [sys::fi_cq_msg_entry::default(); CQ_BATCH];
        while events < budget {
            let want = CQ_BATCH.min(budget - events);
            match self.net.cq_read(&mut entries[..want]) {
                Ok(0) => break,
                Ok(n) => {
                    for e in &entries[..n] {
                        self.on_completion(e.op_context, e.len);
                    }
                    events += n;
                }
                Err(e) if e.code == sys::FI_EAVAIL as i32 => match self.net.cq_readerr() {
                    Ok(err) => {
                        self.on_error(err.context, err.code, &err.message);
                        events += 1;
                    }
                    Err(_) => return ERR_TRANSPORT,
                },
                Err(_) => return ERR_TRANSPORT,
            }
        }
        self.flush_fins();
        c_int::try_from(events).unwrap_or(c_int::MAX)
    }

    /// Report fetch `id` if it is finished: 1 if it was.
    fn complete_if_finished(&mut self, id: u64) -> usize {
        let Some(f) = self.fetches.get(id) else {
            return 0;
        };
        if !f.finished() {
            return 0;
        }
        let cookie = f.cookie;
        let rc = self.finish_fetch(id);
        self.engine.completed(cookie, rc);
        1
    }

    /// Read the routing fields of a completed operation's context.
    fn route(&self, op_context: *mut c_void) -> Option<(Kind, u32, u64)> {
        if op_context.is_null() {
            return None;
        }
        // SAFETY: every operation is posted with the `as_op_context` of a
        // `Ctx` (its first field, `repr(C)`) that stays allocated until its
        // completion is read, which is now; the provider is done with it.
        let c = unsafe { &*op_context.cast::<Ctx>() };
        Some((c.kind, c.slot, c.id))
    }

    fn on_completion(&mut self, op_context: *mut c_void, len: usize) {
        let Some((kind, slot, id)) = self.route(op_context) else {
            return;
        };
        match kind {
            Kind::Send => self.tx_free.push(slot),
            Kind::Recv => {
                self.on_message(slot as usize, len.min(SLOT_SIZE));
                if self.post_recv(slot).is_err() {
                    self.repost.push(slot);
                }
            }
            Kind::Read => self.on_read(id, slot, OK),
        }
    }

    fn on_read(&mut self, id: u64, ctx: u32, status: c_int) {
        let Some(f) = self.fetches.get_mut(id) else {
            return;
        };
        let peer = f.peer;
        f.read_done(ctx, status);
        if status == OK {
            self.note_alive(peer);
        }
        self.issue(id);
        self.complete_if_finished(id);
    }

    /// A message arrived in receive buffer `slot` (`len` bytes).
    fn on_message(&mut self, slot: usize, len: usize) {
        let max_header = MAX_HEADER;
        let size = self.size;
        // The buffer is read in place; callbacks see slices of it.
        // SAFETY: the receive on `slot` completed, so the provider is done
        // with the buffer until it is posted again (after this function).
        let buf: &[u8] = unsafe { std::slice::from_raw_parts(self.rx.ptr(slot), len) };
        let msg = match wire::parse(buf, max_header) {
            Ok(m) => m,
            Err(_) => {
                self.dropped += 1;
                return;
            }
        };
        match &msg {
            Message::Eager { src, .. } | Message::Rts { src, .. } | Message::Fin { src, .. }
                if *src < size =>
            {
                self.note_alive(*src)
            }
            _ => {}
        }
        match msg {
            Message::Eager { src, header, data } if src < size => {
                self.engine.arrived_data(src, header, data);
            }
            Message::Rts {
                src,
                header,
                len,
                op,
                segs,
            } if src < size => {
                let token = self.tokens.insert(Token {
                    peer: src,
                    op,
                    len,
                    segs,
                });
                self.engine
                    .arrived_token(src, header, len, token ^ self.salt);
            }
            Message::Fin { src, op, outcome } if src < size => match self.sends.get(op) {
                Some(s) if s.peer == src => {
                    let s = self.sends.remove(op).expect("looked up above");
                    for m in s.mrs {
                        self.net.mr_close(m);
                    }
                    if let Some(cookie) = s.cookie {
                        let rc = if outcome == FIN_FAILED {
                            ERR_TRANSPORT
                        } else {
                            OK
                        };
                        self.engine.completed(cookie, rc);
                    }
                }
                _ => self.dropped += 1,
            },
            _ => self.dropped += 1,
        }
    }

    fn on_error(&mut self, op_context: *mut c_void, code: i32, message: &str) {
        let Some((kind, slot, id)) = self.route(op_context) else {
            return;
        };
        let cancelled = code == sys::FI_ECANCELED as i32;
        let status = match status_of(&FiError { call: "", code }) {
            ERR_UNREACHABLE => ERR_UNREACHABLE,
            _ => ERR_PEER_FAILED,
        };
        match kind {
            Kind::Recv => {
                // A receive names no peer; the message (if any) is lost.
                if !cancelled {
                    self.dropped += 1;
                    if self.post_recv(slot).is_err() {
                        self.repost.push(slot);
                    }
                }
            }
            Kind::Send => {
                self.tx_free.push(slot);
                if !cancelled {
                    let peer = self.tx_peer[slot as usize];
                    self.fail_peer(peer, status, &format!("send to rank {peer}: {message}"));
                }
            }
            Kind::Read => {
                let peer = self.fetches.get(id).map(|f| f.peer);
                if let Some(peer) = peer
                    && !cancelled
                {
                    self.fail_peer(peer, status, &format!("read from rank {peer}: {message}"));
                }
                self.on_read(id, slot, if cancelled { ERR_TRANSPORT } else { status });
            }
        }
    }

    /// `peer` failed: report it once, end its operations with `status`.
    fn fail_peer(&mut self, peer: u32, status: c_int, message: &str) {
        let Some(p) = self.peers.get_mut(peer as usize) else {
            return;
        };
        if p.failed.is_some() {
            return;
        }
        p.failed = Some(status);
        self.engine.failed(peer, status, message);
        for op in self.sends.ids_where(|s| s.peer == peer) {
            let s = self.sends.remove(op).expect("listed");
            for m in s.mrs {
                self.net.mr_close(m);
            }
            if let Some(cookie) = s.cookie {
                self.engine.completed(cookie, status);
            }
        }
        for id in self.fetches.ids_where(|f| f.peer == peer) {
            if let Some(f) = self.fetches.get_mut(id) {
                f.fail(status);
            }
            // Reads still posted end with their own completions; the
            // fetch is reported after the last.
            self.complete_if_finished(id);
        }
        self.fins.retain(|&(p, _, _)| p != peer);
    }

    /// Messages dropped as malformed.
    #[allow(dead_code)]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// The key a rank's address card is published under.
fn key(rank: u32) -> String {
    format!("tessel.ofi.{rank}")
}
