//! The endpoint: one per process, the engine's public face.
//!
//! An endpoint moves tagged messages between processes of a job, identified
//! by their rank in the bootstrap. Between processes of one node it uses the
//! node segment:
//!
//! | protocol | size (defaults)            | how                                                    |
//! |----------|----------------------------|--------------------------------------------------------|
//! | inline   | <= 80 B (`inline_max`)     | payload inside the control cell                        |
//! | eager    | <= 16 KiB (`eager_max`)    | payload in the pair's next staging slot                |
//! | rndv/adaptive | larger, CMA works     | RTS; the receiver picks probe, GET, COOP or work stealing per (peer, size class) ([`crate::rndv`]); FIN |
//! | rndv/pipeline | larger, CMA refused   | RTS; CTS; sender streams chunks through staging slots  |
//!
//! In the adaptive rendezvous the receiver posts chunks of the copy on its
//! steal queue and describes the transfer's ends in one of its transfer
//! slots; it copies what it takes itself, asks the sender (a CTS) to take
//! some, and idle processes waiting in [`Endpoint::progress_or_back_off`]
//! take others from the queues of their peers, nearest first. A GET (and
//! any non-contiguous rendezvous) is one `process_vm_readv` with both
//! lists of pieces. A receive posted without a buffer
//! ([`Endpoint::irecv_managed`]) gets one from the shared heap at the
//! match, so every process of the node can copy into it.
//!
//! A buffer is a list of [`Piece`]s (an I/O vector; a contiguous buffer is
//! the one-piece case): inline and eager senders gather the pieces
//! straight into the cell or slot, receivers scatter straight out of it,
//! the pipeline does both chunk by chunk with a [`Cursor`], and a
//! rendezvous over CMA hands both lists to `process_vm_readv` (the RTS
//! names the sender's list, which the receiver reads first). Only an
//! unexpected eager message is copied into an engine-owned buffer, and
//! scattered when a receive matches it.
//!
//! Staging slots of a pair are used and freed in FIFO order: the receiver
//! copies each slot out as soon as it reads the cell that names it (into the
//! matched buffer, or into an unexpected-message buffer), so a slow
//! receiver never blocks a sender on a slot it is not going to read.
//!
//! When the control ring or the staging of a pair is full, outgoing work
//! waits in that pair's backlog (in order) and is retried by progress:
//! "no resources" is never an error.
//!
//! Beyond send and receive (MPI-4.0 §3.4-§3.8): a synchronous send
//! ([`Endpoint::issend`]) completes once a receive matched it (an inline or
//! eager message carries the sender's request and the receiver answers
//! with an ACK cell at the match; a rendezvous's FIN implies the match);
//! probes look at the unexpected queue ([`Endpoint::iprobe`]) or take a
//! message out of it ([`Endpoint::improbe`], received later with
//! [`Endpoint::imrecv`]); a posted receive that has not matched can be
//! cancelled ([`Endpoint::cancel`]). Waiting loops back off through
//! [`Backoff`] (spin, yield, then sleep on the doorbell futex).

mod remote;

use std::collections::VecDeque;

use crate::bootstrap::Bootstrap;
use crate::config::{CmaMode, Config, RndvMode};
use crate::doorbell;
use crate::error::{Error, InitError};
use crate::heap::{self, HeapRef, PeerHeaps};
use crate::iov::{self, Buf, Cursor, Piece, total};
use crate::layout::{Cell, CellKind, CopyTask, Geometry, XFER_SLOTS};
use crate::locality::Place;
use crate::matching::{Matcher, Posted, Source, TagMatch};
use crate::net::{Incoming, Net};
use crate::queue::spmc::{Owner, PushError, Steal, Stealer};
use crate::queue::spsc::{Consumer, Producer};
use crate::rndv::{self, Adapt, End, Hint, Plan, Protocol, Stats};
use crate::segment::{FdServer, NodeSegment, XferView};
use crate::steal::{self, Snapshot};
use crate::sync::{Ordering, spin_hint};
use crate::sys;
use crate::transport;

/// What a completed receive (or send) reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sender (for a send: this process).
    pub source: u32,
    /// The message's tag.
    pub tag: u64,
    /// Bytes delivered.
    pub len: usize,
    /// The request was cancelled before it matched ([`Endpoint::cancel`]);
    /// nothing was received.
    pub cancelled: bool,
}

impl Status {
    const fn new(source: u32, tag: u64, len: usize) -> Self {
        Self {
            source,
            tag,
            len,
            cancelled: false,
        }
    }
}

/// A message taken out of the unexpected queue by a matched probe
/// ([`Endpoint::improbe`]): no receive can match it any more; receive it
/// with [`Endpoint::imrecv`]. Dropping it discards an eager message, and
/// leaves the sender of a rendezvous message waiting forever.
#[must_use = "a matched message must be received with imrecv"]
#[derive(Debug)]
pub struct Message {
    source: u32,
    tag: u64,
    body: Arrival,
}

/// The state of a waiting loop: it spins, then yields the core, then
/// sleeps on the doorbell futex (woken by any message), so that an
/// oversubscribed job keeps moving. See [`Endpoint::progress_or_back_off`].
#[derive(Debug, Default, Clone)]
pub struct Backoff {
    idle: u32,
}

/// A finished request.
#[derive(Debug, PartialEq, Eq)]
pub struct Completion {
    /// What arrived (or was sent).
    pub status: Status,
    /// For [`Endpoint::irecv`]: the received bytes. `None` otherwise.
    pub data: Option<Vec<u8>>,
    /// For [`Endpoint::irecv_managed`]: the buffer the engine received
    /// into. `None` otherwise.
    pub buffer: Option<RecvBuf>,
}

/// A receive buffer the engine allocated for a receive posted without one
/// ([`Endpoint::irecv_managed`]): in the shared heap, so the sender and
/// idle processes can copy into it directly (no cross-memory attach on
/// that side), or in private memory when the heap cannot grow. The memory
/// is returned when the `RecvBuf` is dropped.
pub struct RecvBuf {
    ptr: std::ptr::NonNull<u8>,
    /// Bytes of the message.
    len: usize,
    /// Bytes allocated (at least `len`).
    cap: usize,
    in_heap: bool,
}

// SAFETY: a RecvBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for RecvBuf {}

impl RecvBuf {
    /// A buffer of `len` bytes (at least one byte is allocated, so every
    /// buffer has its own address).
    fn new(len: usize) -> Self {
        if let Ok(ptr) = heap::alloc(len.max(1)) {
            return Self {
                ptr,
                len,
                cap: len,
                in_heap: true,
            };
        }
        let layout = Self::private_layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let ptr =
            std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Self {
            ptr,
            len,
            cap: len,
            in_heap: false,
        }
    }

    fn private_layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), 64).expect("buffer size fits a layout")
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The received bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes allocated here and written by the receive
        // before the completion handed the buffer out.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable (the application may reuse them until it drops
    /// the buffer).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as for `as_slice`; `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Keep only the first `n` bytes visible (the memory stays allocated
    /// until the buffer is dropped).
    fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it lies in the shared heap.
    pub fn in_shared_heap(&self) -> bool {
        self.in_heap
    }
}

impl Drop for RecvBuf {
    fn drop(&mut self) {
        if self.in_heap {
            // SAFETY: allocated by heap::alloc in `new`, freed once here.
            let _ = unsafe { heap::free(self.ptr) };
        } else {
            // SAFETY: allocated by std::alloc with this layout in `new`.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::private_layout(self.cap)) };
        }
    }
}

impl std::fmt::Debug for RecvBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBuf")
            .field("len", &self.len)
            .field("in_heap", &self.in_heap)
            .finish()
    }
}

impl PartialEq for RecvBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for RecvBuf {}

/// A nonblocking operation in flight. Finish it with [`Endpoint::wait`].
/// A request dropped without waiting still completes, but its bookkeeping
/// (and an owned buffer) stays in the endpoint until the endpoint is dropped.
#[must_use = "a request must be waited for to learn its result"]
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Request {
    id: u64,
}

type ReqId = u64;

fn req_index(id: ReqId) -> usize {
    (id & 0xffff_ffff) as usize
}

#[derive(Debug)]
struct Req {
    generation: u32,
    /// `Some` once complete.
    result: Option<Result<Status, Error>>,
    /// Receive buffer (raw receives, or `owned`'s storage); for a send,
    /// the source buffer.
    buf: Buf,
    /// Bytes in `buf`.
    cap: usize,
    /// Whether this is a receive (its owned buffer is handed back).
    is_recv: bool,
    /// Storage of a safe `isend`/`irecv`.
    owned: Option<Vec<u8>>,
    /// For a receive posted without a buffer: the most bytes it takes;
    /// the engine allocates `recv_buf` when a message matches.
    managed: Option<usize>,
    recv_buf: Option<RecvBuf>,
    /// Pipelined rendezvous receive in progress.
    pipeline: Option<Pipeline>,
    /// A send's status, known when it starts.
    status: Status,
    /// A send to another node: events still owed before it completes
    /// (the plugin's completion, and for a synchronous send the ACK).
    net_pending: u8,
}

/// A pipelined rendezvous receive: chunks arrive in order and are
/// scattered at `cursor`.
#[derive(Debug)]
struct Pipeline {
    source: u32,
    tag: u64,
    size: usize,
    got: usize,
    cursor: Cursor,
}

/// What a receiver owes the sender of a synchronous message once it
/// matches: an ACK naming the sender's request `sreq`, as a cell to local
/// peer `j` or as a message to process `rank` on another node.
#[derive(Clone, Copy, Debug)]
enum Ack {
    Local { j: u32, sreq: u64 },
    Remote { rank: u32, sreq: u64 },
}

/// An unexpected arrival's body.
#[derive(Debug)]
enum Arrival {
    Data {
        bytes: Vec<u8>,
        ack: Option<Ack>,
    },
    Rts(Rts),
    /// A message the sender wrote into a buffer we granted ([`Grant`]).
    Landed(RecvBuf),
    /// A message from another node whose payload waits there: fetched
    /// through the network plugin once a receive matches.
    Fetch {
        len: usize,
        token: u64,
        ack: Option<Ack>,
    },
}

/// A landing buffer a receiver lent us for one later large message.
#[derive(Clone, Copy, Debug)]
struct Grant {
    id: u64,
    cap: usize,
    at: HeapRef,
}

/// Landing buffers lent to one local peer: at most this many at a time.
const GRANTS_PER_PEER: usize = 4;

/// A rendezvous offer, as its RTS cell names it.
#[derive(Clone, Copy, Debug)]
struct Rts {
    /// Local index of the sender.
    from: u32,
    size: usize,
    sreq: u64,
    /// The sender's buffer (`pieces == 0`) or its list of pieces.
    addr: u64,
    pieces: u64,
    pid: u32,
    /// Where the contiguous buffer lies in the sender's shared heap.
    heap: Option<HeapRef>,
}

/// A large receive being copied in chunks through transfer slot `slot`
/// (the receiver's side of [`rndv`]).
#[derive(Debug)]
struct Xfer {
    req: ReqId,
    /// Local index of the sender, its request, its rank.
    j: u32,
    sreq: u64,
    source: u32,
    tag: u64,
    /// The message's size, the receive's capacity.
    size: usize,
    cap: usize,
    chunks: u32,
    chunk_len: usize,
    plan: Plan,
    /// Both ends private: only sender and receiver could copy.
    at_most_coop: bool,
}

impl Arrival {
    /// The message's full size.
    fn len(&self) -> usize {
        match self {
            Self::Data { bytes, .. } => bytes.len(),
            Self::Rts(rts) => rts.size,
            Self::Landed(buf) => buf.len(),
            Self::Fetch { len, .. } => *len,
        }
    }
}

/// Outgoing work for one peer, in order.
#[derive(Debug)]
enum Outgoing {
    /// A ready control cell.
    Cell(Cell),
    /// An eager message needing a staging slot; its data is gathered
    /// from sender request `cell.b`.
    Eager(Cell),
    /// Pipelined rendezvous data: sender request, receiver request, total
    /// length, bytes already staged and where they end in the sender's
    /// pieces.
    Stream {
        sreq: ReqId,
        rreq: u64,
        len: usize,
        off: usize,
        cursor: Cursor,
    },
}

/// Our side of staging (me -> peer): slots are taken and freed in order.
#[derive(Debug)]
struct TxStaging {
    /// Next sequence number to fill.
    staged: u64,
    /// Last known count of slots the peer freed.
    freed: u64,
}

/// Per local peer state: our ends of the two rings and of our staging.
#[derive(Debug)]
struct Peer {
    rank: u32,
    tx: Producer<'static>,
    rx: Consumer<'static>,
    staging: TxStaging,
    backlog: VecDeque<Outgoing>,
    /// Landing buffers this peer lent us, oldest first.
    grants: VecDeque<Grant>,
    /// Landing buffers we lent this peer, by grant id.
    lent: Vec<(u64, RecvBuf)>,
}

/// A process's endpoint.
#[derive(Debug)]
pub struct Endpoint {
    // Declared before `seg`: the rings' and queues' handles must drop
    // before the mapping.
    peers: Vec<Peer>,
    /// Our steal queue (`None` if another handle owns it: never in practice).
    own: Option<Owner<'static>>,
    /// Every local process's steal queue, ours included.
    stealers: Vec<Stealer<'static>>,
    /// Local peers in the order an idle process visits their queues:
    /// nearest first ([`crate::locality::steal_order`]) once every peer has
    /// published its place, a rotation from us until then.
    steal_order: Vec<u32>,
    steal_order_final: bool,
    /// Our transfer slots: large receives being copied in chunks.
    xfers: Vec<Option<Xfer>>,
    /// Transfer slots in use.
    active: u32,
    /// Whether our bit is set in the stealer mask.
    advertised: bool,
    adapt: Adapt,
    stats: Stats,
    heaps: PeerHeaps,
    /// Last grant id handed out.
    next_grant: u64,
    rank: u32,
    size: u32,
    node: u32,
    /// rank -> local index, for ranks on this node.
    local_of: Vec<Option<u32>>,
    me: u32,
    cfg: Config,
    cma: bool,
    reqs: Vec<Option<Req>>,
    free_reqs: Vec<u32>,
    matcher: Matcher<Arrival>,
    /// Peers with a non-empty backlog.
    blocked: Vec<u32>,
    /// Peers whose ring had more than one visit's worth of cells.
    revisit: Vec<u32>,
    flagged: Vec<u32>,
    /// The inter-node path, when the job spans nodes and a plugin opened.
    /// Declared before `boot`: the plugin uses the bootstrap until closed.
    net: Option<Net>,
    /// Scratch for [`Net::poll`].
    incoming: Vec<Incoming>,
    seg: NodeSegment,
    boot: Box<dyn Bootstrap>,
}

/// Where a process is, seen from this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// On this node, at this local index: the node segment.
    Local(u32),
    /// On another node: the network plugin.
    Remote,
}

fn key(node: u32) -> String {
    format!("tessel.seg.{node}")
}

impl Endpoint {
    /// Join the job described by `boot`, with configuration from the
    /// environment. Collective over all processes of the job.
    pub fn new(boot: Box<dyn Bootstrap>) -> Result<Self, InitError> {
        Self::with_config(boot, Config::from_env()?)
    }

    /// Join the job with an explicit configuration. Collective.
    pub fn with_config(mut boot: Box<dyn Bootstrap>, cfg: Config) -> Result<Self, InitError> {
        cfg.validate()?;
        let (rank, size) = (boot.rank(), boot.size());
        let node = boot.node_of(rank);
        let mut local_of = vec![None; size as usize];
        let mut locals = Vec::new();
        for r in 0..size {
            if boot.node_of(r) == node {
                local_of[r as usize] = Some(locals.len() as u32);
                locals.push(r);
            }
        }
        let me = local_of[rank as usize].expect("this process is on its own node");
        let nlocal = locals.len() as u32;
        // A job that spans nodes opens a network plugin now: it publishes
        // its address before the fence below.
        let net = if locals.len() < size as usize {
            let boot_ptr: *mut dyn Bootstrap = &mut *boot;
            // SAFETY: `boot` is boxed, so its contents stay put when the box
            // moves into the endpoint; the transport is dropped before it
            // (field order), and the plugin reaches it only inside calls
            // the endpoint makes while using the bootstrap for nothing else.
            match unsafe { transport::open(&cfg, boot_ptr, rank, size) } {
                Ok(t) => t.map(Net::new),
                Err(e) => {
                    return Err(InitError::Net(format!(
                        "process {rank} (node {node}) has peers on other nodes, but no network \
                         plugin could be used: {e}. Set TESSEL_NET (auto, ucx, verbs, ofi, none) \
                         and TESSEL_PLUGIN_PATH (where libtessel_plugin_*.so are); \
                         `tessel-info` lists the plugins it finds"
                    )));
                }
            }
        } else {
            None
        };

        let seg = if me == 0 {
            let seg = NodeSegment::create(Geometry {
                nlocal,
                ring_cells: cfg.ring_cells,
                staging_slots: cfg.staging_slots,
                staging_slot_size: cfg.staging_slot_size,
            })?;
            let server = if nlocal > 1 {
                let (s, name) = FdServer::start(&seg, nlocal - 1)?;
                boot.put(&key(node), &name)?;
                Some(s)
            } else {
                None
            };
            boot.fence()?;
            // Every local peer fetches the segment right after the fence.
            // Wait for them: a creator that returned and exited at once
            // would take the descriptor server with it, and a peer still
            // connecting would fail. (A peer that dies instead makes the
            // launcher end the job.)
            if let Some(s) = server {
                s.finish();
            }
            seg
        } else {
            boot.fence()?;
            let name = boot.get(&key(node))?;
            FdServer::fetch(&name)?
        };
        if seg.header().nlocal != nlocal {
            return Err(InitError::Segment(crate::segment::SegmentError::BadHeader(
                format!(
                    "segment is for {} processes, this node has {nlocal}",
                    seg.header().nlocal
                ),
            )));
        }
        seg.proc_area(me)
            .pid
            .store(u64::from(sys::pid()), Ordering::Relaxed);
        seg.publish_place(me, Place::current());
        if crate::locality::several_numa_nodes() {
            seg.first_touch(me); // our rings and staging on our NUMA node
        }
        let mut cfg = cfg;
        // The creator's geometry wins; eager messages must fit its slots.
        cfg.eager_max = cfg
            .eager_max
            .min(seg.layout().geometry.staging_slot_size as usize);
        let cma = cfg.cma == CmaMode::Auto && seg.probe_cma();

        let peers = locals
            .iter()
            .enumerate()
            .map(|(j, &r)| {
                let j = j as u32;
                // SAFETY: ring (me -> j) is produced only by this process and
                // ring (j -> me) consumed only by it; the handles are dropped
                // before `seg` (field order), so the memory outlives them.
                let (tx, rx) = unsafe {
                    (
                        Producer::new(seg.ring(me, j)),
                        Consumer::new(seg.ring(j, me)),
                    )
                };
                let freed = seg.staging(me, j).freed.load(Ordering::Acquire);
                Peer {
                    rank: r,
                    tx,
                    rx,
                    staging: TxStaging {
                        staged: freed,
                        freed,
                    },
                    backlog: VecDeque::new(),
                    grants: VecDeque::new(),
                    lent: Vec::new(),
                }
            })
            .collect();
        // SAFETY: the queues live in `seg`, which outlives these handles
        // (field order); each process claims only its own queue's owner role.
        let (own, stealers) = unsafe {
            (
                Owner::claim(seg.steal_queue(me)),
                (0..nlocal)
                    .map(|p| Stealer::new(seg.steal_queue(p)))
                    .collect(),
            )
        };
        Ok(Self {
            peers,
            own,
            stealers,
            steal_order: (1..nlocal).map(|d| (me + d) % nlocal).collect(),
            steal_order_final: nlocal <= 2,
            xfers: (0..XFER_SLOTS).map(|_| None).collect(),
            active: 0,
            advertised: false,
            adapt: Adapt::default(),
            stats: Stats::default(),
            heaps: PeerHeaps::new(),
            next_grant: 0,
            rank,
            size,
            node,
            local_of,
            me,
            cfg,
            cma,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            matcher: Matcher::default(),
            blocked: Vec::new(),
            revisit: Vec::new(),
            flagged: Vec::new(),
            net,
            incoming: Vec::new(),
            seg,
            boot,
        })
    }

    /// This process's id (its rank in the bootstrap).
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of processes in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The node this process runs on.
    pub fn node(&self) -> u32 {
        self.node
    }

    /// Processes on this node, including this one.
    pub fn local_size(&self) -> u32 {
        self.peers.len() as u32
    }

    /// Where process `rank` runs, if it is on this node (`None` for ranks
    /// of other nodes). Waits for a local peer that has not attached yet.
    pub fn place(&self, rank: u32) -> Option<Place> {
        let p = self.local_of.get(rank as usize).copied().flatten()?;
        Some(self.seg.wait_place(p))
    }

    /// Whether large messages use cross-memory attach (`process_vm_readv`)
    /// or the pipelined staging copy.
    pub fn uses_cma(&self) -> bool {
        self.cma
    }

    /// The configuration in force (after the segment creator's geometry).
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The bootstrap this endpoint was built on, for further key exchange.
    pub fn bootstrap(&mut self) -> &mut dyn Bootstrap {
        &mut *self.boot
    }

    /// Which path reaches process `peer`.
    fn route(&self, peer: u32) -> Result<Route, Error> {
        match self.local_of.get(peer as usize) {
            None => Err(Error::InvalidPeer {
                peer,
                size: self.size,
            }),
            Some(Some(j)) => Ok(Route::Local(*j)),
            Some(None) if self.net.is_some() => Ok(Route::Remote),
            Some(None) => Err(Error::Unreachable { peer }),
        }
    }

    /// The name of the network plugin in use, and its limits.
    pub fn network(&self) -> Option<(&str, &transport::Limits)> {
        self.net
            .as_ref()
            .map(|n| (n.transport().name(), n.transport().limits()))
    }

    // ----- requests -------------------------------------------------------

    fn new_req(
        &mut self,
        buf: Buf,
        owned: Option<Vec<u8>>,
        status: Status,
        is_recv: bool,
    ) -> ReqId {
        let idx = self.free_reqs.pop().unwrap_or_else(|| {
            self.reqs.push(None);
            (self.reqs.len() - 1) as u32
        });
        let slot = &mut self.reqs[idx as usize];
        let generation = slot.as_ref().map_or(0, |r| r.generation);
        let cap = total(buf.pieces());
        *slot = Some(Req {
            generation,
            result: None,
            buf,
            cap,
            is_recv,
            owned,
            managed: None,
            recv_buf: None,
            pipeline: None,
            status,
            net_pending: 0,
        });
        (u64::from(generation) << 32) | u64::from(idx)
    }

    fn req_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        self.reqs
            .get_mut(req_index(id))?
            .as_mut()
            .filter(|r| u64::from(r.generation) == id >> 32)
    }

    fn complete(&mut self, id: ReqId, result: Result<Status, Error>) {
        if let Some(r) = self.req_mut(id) {
            r.result = Some(result);
        }
    }

    fn release(&mut self, id: ReqId) {
        let idx = req_index(id);
        if let Some(r) = self.reqs[idx].as_mut() {
            // Keep the slot (and its generation) so a stale id never matches
            // the request that reuses it.
            r.result = None;
            r.owned = None;
            r.managed = None;
            r.recv_buf = None;
            r.buf = Buf::of(&[]);
            r.generation = r.generation.wrapping_add(1);
        }
        self.free_reqs.push(idx as u32);
    }

    // ----- sending --------------------------------------------------------

    /// Start sending `data` to `dest` with `tag`. The engine owns the
    /// buffer until the request completes.
    pub fn isend(&mut self, dest: u32, tag: u64, data: Vec<u8>) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(data.as_ptr().cast_mut(), data.len()));
        self.start_send(dest, tag, one, Some(data), false)
    }

    /// Start a synchronous send of `data` (MPI-4.0 §3.4): it completes
    /// only once a receive (or a matched probe) at `dest` matched it.
    pub fn issend(&mut self, dest: u32, tag: u64, data: Vec<u8>) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(data.as_ptr().cast_mut(), data.len()));
        self.start_send(dest, tag, one, Some(data), true)
    }

    /// Start a synchronous send of `len` bytes at `ptr` (see
    /// [`issend`](Self::issend)).
    ///
    /// # Safety
    /// As for [`isend_raw`](Self::isend_raw).
    pub unsafe fn issend_raw(
        &mut self,
        dest: u32,
        tag: u64,
        ptr: *const u8,
        len: usize,
    ) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(ptr.cast_mut(), len));
        self.start_send(dest, tag, one, None, true)
    }

    /// Start a synchronous send of the concatenation of `pieces` (see
    /// [`issend`](Self::issend) and [`isend_iov_raw`](Self::isend_iov_raw)).
    ///
    /// # Safety
    /// As for [`isend_iov_raw`](Self::isend_iov_raw).
    pub unsafe fn issend_iov_raw(
        &mut self,
        dest: u32,
        tag: u64,
        pieces: &[Piece],
    ) -> Result<Request, Error> {
        self.start_send(dest, tag, Buf::of(pieces), None, true)
    }

    /// Start sending the concatenation of `pieces`, in order, to `dest`
    /// with `tag`, without packing them: the data moves straight from
    /// the pieces (the receiver sees one message of their total size).
    /// The list itself is copied; only the memory it names must stay.
    ///
    /// # Safety
    /// Every piece stays valid for reads and unmodified until the request
    /// completes (through [`wait`](Self::wait) or [`test`](Self::test)).
    pub unsafe fn isend_iov_raw(
        &mut self,
        dest: u32,
        tag: u64,
        pieces: &[Piece],
    ) -> Result<Request, Error> {
        self.start_send(dest, tag, Buf::of(pieces), None, false)
    }

    /// Start sending `len` bytes at `ptr` to `dest` with `tag`.
    ///
    /// # Safety
    /// `ptr..ptr+len` stays valid for reads and unmodified until the request
    /// completes (through [`wait`](Self::wait) or [`test`](Self::test)).
    pub unsafe fn isend_raw(
        &mut self,
        dest: u32,
        tag: u64,
        ptr: *const u8,
        len: usize,
    ) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(ptr.cast_mut(), len));
        self.start_send(dest, tag, one, None, false)
    }

    /// Send and wait for completion.
    pub fn send(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), Error> {
        // SAFETY: `data` outlives the request: we wait for it here.
        let r = unsafe { self.isend_raw(dest, tag, data.as_ptr(), data.len())? };
        self.wait(r).map(drop)
    }

    fn start_send(
        &mut self,
        dest: u32,
        tag: u64,
        buf: Buf,
        owned: Option<Vec<u8>>,
        sync: bool,
    ) -> Result<Request, Error> {
        let route = self.route(dest)?;
        let len = total(buf.pieces());
        let sent = Status::new(self.rank, tag, len);
        let Route::Local(j) = route else {
            let id = self.new_req(buf, owned, sent, false);
            self.send_remote(dest, id, tag, len, sync)?;
            return Ok(Request { id });
        };
        // The RTS names the buffer (or its list, whose heap storage stays
        // put in the request until FIN).
        let (addr, pieces) = match &buf {
            Buf::One(p) => (p.ptr as u64, 0),
            Buf::Many(v) => (v.as_ptr() as u64, v.len() as u64),
        };
        let id = self.new_req(buf, owned, sent, false);
        let mut cell = Cell::new(CellKind::Inline);
        cell.tag = tag;
        cell.size = len as u64;
        // Inline and eager: the receiver acknowledges a synchronous send.
        cell.c = if sync { id + 1 } else { 0 };
        if len <= self.cfg.inline_max {
            cell.len = len as u32;
            let r = self.req_mut(id).expect("new request exists");
            let pieces = r.buf.pieces();
            // SAFETY: the caller guarantees the pieces are readable (`len`
            // bytes in all); the payload array holds inline_max <=
            // INLINE_CAPACITY bytes.
            unsafe { Cursor::start(pieces).gather(pieces, cell.payload.as_mut_ptr(), len) };
            self.enqueue(j, Outgoing::Cell(cell));
            if !sync {
                self.complete(id, Ok(sent));
            }
        } else if len <= self.cfg.eager_max {
            cell.kind = CellKind::Eager as u32;
            cell.len = len as u32;
            cell.b = id;
            self.enqueue(j, Outgoing::Eager(cell));
        } else if !sync && self.put(j, id, tag, len) {
            // Written into a buffer the receiver lent us: done already.
            self.complete(id, Ok(sent));
        } else {
            // A rendezvous completes at FIN, after the match.
            cell.kind = CellKind::Rts as u32;
            cell.a = id;
            cell.b = addr;
            cell.c = u64::from(sys::pid());
            cell.set_rts_pieces(pieces);
            if pieces == 0
                && let Some(h) = heap::locate(addr as usize as *const u8, len)
            {
                set_heap_ref(&mut cell, &h);
            }
            self.enqueue(j, Outgoing::Cell(cell));
        }
        Ok(Request { id })
    }

    fn enqueue(&mut self, j: u32, out: Outgoing) {
        let peer = &mut self.peers[j as usize];
        let was_idle = peer.backlog.is_empty();
        peer.backlog.push_back(out);
        if was_idle {
            self.flush(j);
            if !self.peers[j as usize].backlog.is_empty() {
                self.blocked.push(j);
            }
        }
    }

    /// Move as much of peer `j`'s backlog as its ring and staging accept.
    /// Returns whether anything moved.
    fn flush(&mut self, j: u32) -> bool {
        let slots = u64::from(self.seg.layout().geometry.staging_slots);
        let slot_size = self.seg.layout().geometry.staging_slot_size as usize;
        let mut pushed = false;
        let mut done_sends = Vec::new();
        let (me, seg, reqs) = (self.me, &self.seg, &self.reqs);
        // The pieces of a send still in flight.
        let pieces_of = |id: ReqId| {
            reqs.get(req_index(id))
                .and_then(Option::as_ref)
                .filter(|r| u64::from(r.generation) == id >> 32)
                .map_or(&[][..], |r| r.buf.pieces())
        };
        let Peer {
            tx,
            staging,
            backlog,
            ..
        } = &mut self.peers[j as usize];
        let freed = seg.staging(me, j);
        let has_slot = |st: &mut TxStaging| {
            if st.staged - st.freed < slots {
                return true;
            }
            // Pairs with the receiver's Release in `free_slot`.
            st.freed = freed.freed.load(Ordering::Acquire);
            st.staged - st.freed < slots
        };
        while let Some(front) = backlog.front_mut() {
            let progressed = match front {
                Outgoing::Cell(cell) => tx.push(cell).is_ok(),
                Outgoing::Eager(cell) => {
                    if !(has_slot(staging) && tx.has_room()) {
                        false
                    } else {
                        let dst = seg.staging_slot(me, j, staging.staged);
                        let src = pieces_of(cell.b);
                        // SAFETY: slot `staged` is ours (FIFO staging
                        // protocol: fewer than `slots` unfreed); the pieces
                        // are valid per isend's contract and hold `len` <=
                        // slot size bytes.
                        unsafe { Cursor::start(src).gather(src, dst, cell.len as usize) };
                        cell.a = staging.staged;
                        let ok = tx.push(cell).is_ok();
                        debug_assert!(ok, "room was checked");
                        staging.staged += 1;
                        if cell.c == 0 {
                            // A synchronous send waits for its ACK instead.
                            done_sends.push(cell.b);
                        }
                        cell.b = 0;
                        true
                    }
                }
                Outgoing::Stream {
                    sreq,
                    rreq,
                    len,
                    off,
                    cursor,
                } => {
                    let src = pieces_of(*sreq);
                    while *off < *len && has_slot(staging) && tx.has_room() {
                        let n = (*len - *off).min(slot_size);
                        let dst = seg.staging_slot(me, j, staging.staged);
                        // SAFETY: as for eager; `off + n <= len`, the
                        // total of the pieces.
                        let got = unsafe { cursor.gather(src, dst, n) };
                        debug_assert_eq!(got, n, "the send's pieces hold len bytes");
                        let mut c = Cell::new(CellKind::Chunk);
                        c.a = *rreq;
                        c.b = *off as u64;
                        c.c = staging.staged;
                        c.len = n as u32;
                        let ok = tx.push(&c).is_ok();
                        debug_assert!(ok, "room was checked");
                        staging.staged += 1;
                        *off += n;
                        pushed = true;
                    }
                    if *off == *len {
                        done_sends.push(*sreq);
                        true
                    } else {
                        false
                    }
                }
            };
            if !progressed {
                break;
            }
            pushed = true;
            backlog.pop_front();
        }
        if pushed {
            let (bell, masks) = (self.seg.bell(j), self.seg.masks(j));
            if doorbell::ring(bell, masks, self.me) {
                sys::futex_wake(bell);
            }
        }
        for id in done_sends {
            self.complete_sent(id);
        }
        pushed
    }

    fn complete_sent(&mut self, id: ReqId) {
        if let Some(status) = self.req_mut(id).map(|r| r.status) {
            self.complete(id, Ok(status));
        }
    }
}

impl Endpoint {
    // ----- receiving ------------------------------------------------------

    /// Start receiving a message of at most `capacity` bytes from `source`
    /// whose tag `tag` accepts. The data comes back in the completion.
    pub fn irecv(
        &mut self,
        source: Source,
        tag: TagMatch,
        capacity: usize,
    ) -> Result<Request, Error> {
        let mut buf = vec![0u8; capacity];
        let one = Buf::One(Piece::new(buf.as_mut_ptr(), capacity));
        self.start_recv(source, tag, one, Some(buf), None)
    }

    /// Start a receive without a buffer, of at most `capacity` bytes: when
    /// a message matches, the engine allocates a buffer of its size in the
    /// shared heap, where the sender and idle processes can copy into it
    /// directly; the completion hands it out ([`Completion::buffer`]).
    pub fn irecv_managed(
        &mut self,
        source: Source,
        tag: TagMatch,
        capacity: usize,
    ) -> Result<Request, Error> {
        let none = Buf::One(Piece::new(std::ptr::null_mut(), 0));
        self.start_recv(source, tag, none, None, Some(capacity))
    }

    /// Give a managed receive its buffer, for a `size`-byte message.
    fn provide(&mut self, id: ReqId, size: usize) {
        if let Some(r) = self.req_mut(id)
            && let Some(cap) = r.managed
            && r.recv_buf.is_none()
        {
            let b = RecvBuf::new(size.min(cap));
            r.buf = Buf::One(Piece::new(b.as_ptr(), b.len()));
            r.cap = cap;
            r.recv_buf = Some(b);
        }
    }

    /// Start receiving into `cap` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr+cap` stays valid for writes and is not otherwise accessed
    /// until the request completes.
    pub unsafe fn irecv_raw(
        &mut self,
        source: Source,
        tag: TagMatch,
        ptr: *mut u8,
        cap: usize,
    ) -> Result<Request, Error> {
        self.start_recv(source, tag, Buf::One(Piece::new(ptr, cap)), None, None)
    }

    /// Start receiving into `pieces`, in order, as if they were one buffer
    /// of their total size: the data lands straight in the pieces (a
    /// message larger than the total is truncated as for
    /// [`irecv_raw`](Self::irecv_raw)). The list itself is copied.
    ///
    /// # Safety
    /// Every piece stays valid for writes and is not otherwise accessed
    /// until the request completes; pieces do not overlap.
    pub unsafe fn irecv_iov_raw(
        &mut self,
        source: Source,
        tag: TagMatch,
        pieces: &[Piece],
    ) -> Result<Request, Error> {
        self.start_recv(source, tag, Buf::of(pieces), None, None)
    }

    /// Receive into `buf` and wait for the message.
    pub fn recv(&mut self, source: Source, tag: TagMatch, buf: &mut [u8]) -> Result<Status, Error> {
        // SAFETY: `buf` outlives the request: we wait for it here.
        let r = unsafe { self.irecv_raw(source, tag, buf.as_mut_ptr(), buf.len())? };
        self.wait(r).map(|c| c.status)
    }

    fn start_recv(
        &mut self,
        source: Source,
        tag: TagMatch,
        buf: Buf,
        owned: Option<Vec<u8>>,
        managed: Option<usize>,
    ) -> Result<Request, Error> {
        let route = match source {
            Source::Rank(r) => Some(self.route(r)?),
            Source::Any => None,
        };
        let id = self.new_req(buf, owned, Status::new(0, 0, 0), true);
        if let Some(r) = self.req_mut(id) {
            r.managed = managed;
        }
        // A managed receive from one peer: lend it a landing buffer, so
        // that its next large message is written at once (no RTS, no CTS).
        if let (Some(cap), Some(Route::Local(j))) = (managed, route)
            && cap > self.cfg.eager_max
            && cap <= self.cfg.grant_max
        {
            self.grant(j, cap);
        }
        let posted = Posted {
            req: req_index(id) as u32,
            source,
            tag,
        };
        if let Some((from, tag, body)) = self.matcher.post(posted) {
            self.receive_arrival(id, from, tag, body);
        }
        Ok(Request { id })
    }

    /// Receive a matched arrival into request `id`.
    fn receive_arrival(&mut self, id: ReqId, from: u32, tag: u64, body: Arrival) {
        match body {
            Arrival::Data { bytes, ack } => {
                self.acknowledge(ack);
                let result = self.deliver(id, from, tag, &bytes);
                self.complete(id, result);
            }
            Arrival::Rts(rts) => self.start_rndv(id, tag, rts),
            Arrival::Landed(buf) => self.land(id, from, tag, buf),
            Arrival::Fetch { len, token, ack } => {
                self.acknowledge(ack);
                self.start_fetch(id, from, tag, len, token);
            }
        }
    }

    /// Receive a message that landed in a granted buffer: a managed
    /// receive takes the buffer itself (no copy), another one copies out.
    fn land(&mut self, id: ReqId, from: u32, tag: u64, buf: RecvBuf) {
        let n = buf.len();
        self.stats.transfer(Protocol::Put, n);
        let r = self.req_mut(id).expect("matched request exists");
        let result = match r.managed {
            Some(cap) if r.recv_buf.is_none() && n <= cap => {
                r.recv_buf = Some(buf);
                Ok(Status::new(from, tag, n))
            }
            _ => self.deliver(id, from, tag, buf.as_slice()),
        };
        self.complete(id, result);
    }

    /// Lend local peer `j` a landing buffer of `cap` bytes for its next
    /// large message to us, if it has fewer than [`GRANTS_PER_PEER`] and
    /// the shared heap has room.
    fn grant(&mut self, j: u32, cap: usize) {
        if !self.cma || self.peers[j as usize].lent.len() >= GRANTS_PER_PEER {
            return;
        }
        let buf = RecvBuf::new(cap);
        let Some(at) = buf
            .in_shared_heap()
            .then(|| heap::locate(buf.as_ptr(), cap))
            .flatten()
        else {
            return;
        };
        self.next_grant += 1;
        let id = self.next_grant;
        let mut cell = Cell::new(CellKind::Grant);
        cell.a = id;
        cell.b = cap as u64;
        cell.c = u64::from(at.pid);
        set_heap_ref(&mut cell, &at);
        self.peers[j as usize].lent.push((id, buf));
        self.enqueue(j, Outgoing::Cell(cell));
    }

    /// Send `id` (`len` bytes) to local peer `j` by writing it at once
    /// into a landing buffer `j` lent us; false when there is none that
    /// fits (or it cannot be mapped here).
    fn put(&mut self, j: u32, id: ReqId, tag: u64, len: usize) -> bool {
        let grants = &mut self.peers[j as usize].grants;
        let Some(k) = grants.iter().position(|g| g.cap >= len) else {
            return false;
        };
        let g = grants.remove(k).expect("found above");
        let Ok(dst) = self.heaps.resolve(&g.at) else {
            // Our mapping failed: the buffer stays with the receiver.
            return false;
        };
        let r = self.req_mut(id).expect("new request exists");
        let pieces = r.buf.pieces();
        // SAFETY: the grant gives us `g.cap >= len` bytes at `dst` until we
        // publish the Put cell; the send's pieces hold `len` readable bytes.
        unsafe { Cursor::start(pieces).gather(pieces, dst, len) };
        let mut cell = Cell::new(CellKind::Put);
        cell.a = g.id;
        cell.tag = tag;
        cell.size = len as u64;
        self.enqueue(j, Outgoing::Cell(cell));
        true
    }

    /// Tell a synchronous sender its message matched.
    fn acknowledge(&mut self, ack: Option<Ack>) {
        match ack {
            None => {}
            Some(Ack::Local { j, sreq }) => {
                let mut cell = Cell::new(CellKind::Ack);
                cell.a = sreq;
                self.enqueue(j, Outgoing::Cell(cell));
            }
            Some(Ack::Remote { rank, sreq }) => self.send_ack_remote(rank, sreq),
        }
    }

    /// The ACK a synchronous inline or eager cell from peer `j` asks for.
    fn ack_of(j: u32, cell: &Cell) -> Option<Ack> {
        (cell.c != 0).then(|| Ack::Local {
            j,
            sreq: cell.c - 1,
        })
    }

    // ----- probing and cancelling (MPI-4.0 §3.8) --------------------------

    /// Progress once, then report the oldest message from `source` with a
    /// tag `tag` accepts that no receive has matched yet, leaving it to be
    /// received. A rendezvous message counts with its full size.
    pub fn iprobe(&mut self, source: Source, tag: TagMatch) -> Option<Status> {
        self.progress();
        self.matcher
            .peek_unexpected(source, tag)
            .map(|(from, tag, body)| Status::new(*from, *tag, body.len()))
    }

    /// Wait (backing off) until [`iprobe`](Self::iprobe) sees a message.
    pub fn probe(&mut self, source: Source, tag: TagMatch) -> Status {
        let mut backoff = Backoff::default();
        loop {
            if let Some(st) = self.iprobe(source, tag) {
                return st;
            }
            self.progress_or_back_off(&mut backoff);
        }
    }

    /// Progress once, then take the oldest message [`iprobe`](Self::iprobe)
    /// would report out of the unexpected queue: it is matched now (a
    /// synchronous sender learns so), and only [`imrecv`](Self::imrecv)
    /// of the returned [`Message`] receives it.
    pub fn improbe(&mut self, source: Source, tag: TagMatch) -> Option<(Status, Message)> {
        self.progress();
        let (from, tag, mut body) = self.matcher.take_unexpected(source, tag)?;
        if let Arrival::Data { ack, .. } | Arrival::Fetch { ack, .. } = &mut body {
            self.acknowledge(ack.take());
        }
        let status = Status::new(from, tag, body.len());
        Some((
            status,
            Message {
                source: from,
                tag,
                body,
            },
        ))
    }

    /// Wait (backing off) until [`improbe`](Self::improbe) takes a message.
    pub fn mprobe(&mut self, source: Source, tag: TagMatch) -> (Status, Message) {
        let mut backoff = Backoff::default();
        loop {
            if let Some(found) = self.improbe(source, tag) {
                return found;
            }
            self.progress_or_back_off(&mut backoff);
        }
    }

    /// Start receiving a matched message into a new buffer of `capacity`
    /// bytes; the data comes back in the completion.
    pub fn imrecv(&mut self, msg: Message, capacity: usize) -> Request {
        let mut buf = vec![0u8; capacity];
        let one = Buf::One(Piece::new(buf.as_mut_ptr(), capacity));
        self.start_mrecv(msg, one, Some(buf))
    }

    /// Start receiving a matched message into `cap` bytes at `ptr`: an
    /// eager message is copied at once, a rendezvous starts here.
    ///
    /// # Safety
    /// As for [`irecv_raw`](Self::irecv_raw).
    pub unsafe fn imrecv_raw(&mut self, msg: Message, ptr: *mut u8, cap: usize) -> Request {
        self.start_mrecv(msg, Buf::One(Piece::new(ptr, cap)), None)
    }

    /// Start receiving a matched message into `pieces` (see
    /// [`imrecv_raw`](Self::imrecv_raw) and
    /// [`irecv_iov_raw`](Self::irecv_iov_raw)).
    ///
    /// # Safety
    /// As for [`irecv_iov_raw`](Self::irecv_iov_raw).
    pub unsafe fn imrecv_iov_raw(&mut self, msg: Message, pieces: &[Piece]) -> Request {
        self.start_mrecv(msg, Buf::of(pieces), None)
    }

    /// Receive a matched message into `buf` and wait for it.
    pub fn mrecv(&mut self, msg: Message, buf: &mut [u8]) -> Result<Status, Error> {
        // SAFETY: `buf` outlives the request: we wait for it here.
        let r = unsafe { self.imrecv_raw(msg, buf.as_mut_ptr(), buf.len()) };
        self.wait(r).map(|c| c.status)
    }

    fn start_mrecv(&mut self, msg: Message, buf: Buf, owned: Option<Vec<u8>>) -> Request {
        let id = self.new_req(buf, owned, Status::new(0, 0, 0), true);
        self.receive_arrival(id, msg.source, msg.tag, msg.body);
        Request { id }
    }

    /// Cancel a receive that has not matched a message yet: it completes
    /// at once with [`Status::cancelled`] set, and a later message goes to
    /// another receive. Returns false, leaving the request to complete
    /// normally, for a receive that already matched and for every send
    /// (MPI-4.0 §3.8.4 allows a cancel to fail).
    pub fn cancel(&mut self, req: &Request) -> bool {
        let waiting = self
            .req_mut(req.id)
            .is_some_and(|r| r.is_recv && r.result.is_none());
        if !waiting || !self.matcher.cancel(req_index(req.id) as u32) {
            return false;
        }
        let mut status = Status::new(0, 0, 0);
        status.cancelled = true;
        self.complete(req.id, Ok(status));
        true
    }

    /// Scatter a whole message into request `id`'s pieces (as much as
    /// fits).
    fn deliver(&mut self, id: ReqId, source: u32, tag: u64, data: &[u8]) -> Result<Status, Error> {
        self.provide(id, data.len());
        let r = self.req_mut(id).expect("matched request exists");
        let pieces = r.buf.pieces();
        // SAFETY: the pieces are writable (irecv contract or our own Vec);
        // `data` is a distinct allocation or a staging slot.
        unsafe { Cursor::start(pieces).scatter(pieces, data.as_ptr(), data.len()) };
        truncation(source, tag, data.len(), r.cap)
    }

    /// Start receiving rendezvous `rts` into matched request `id`: read
    /// it over CMA and send FIN, or (CMA refused) ask for the pipeline.
    fn start_rndv(&mut self, id: ReqId, tag: u64, rts: Rts) {
        self.provide(id, rts.size);
        let j = rts.from;
        let source = self.peers[j as usize].rank;
        if self.cma {
            if self.start_chunked(id, tag, &rts) {
                return;
            }
            let cap = self.req_mut(id).expect("matched request exists").cap;
            if self.cma_get(id, &rts).is_ok() {
                let mut fin = Cell::new(CellKind::Fin);
                fin.a = rts.sreq;
                self.enqueue(j, Outgoing::Cell(fin));
                self.stats.transfer(Protocol::Get, rts.size);
                self.complete(id, truncation(source, tag, rts.size, cap));
                return;
            }
            // Refused after all (ptrace policy changed, seccomp...): fall
            // back to the staging pipeline from now on.
            self.cma = false;
        }
        if let Some(r) = self.req_mut(id) {
            let cursor = Cursor::start(r.buf.pieces());
            r.pipeline = Some(Pipeline {
                source,
                tag,
                size: rts.size,
                got: 0,
                cursor,
            });
        }
        let mut cts = Cell::new(CellKind::CtsPipeline);
        cts.a = rts.sreq;
        cts.b = id;
        self.stats.transfer(Protocol::Pipeline, rts.size);
        self.enqueue(j, Outgoing::Cell(cts));
    }

    /// Read the sender's pieces of `rts` into request `id`'s pieces with
    /// `process_vm_readv` (first the sender's list, when it has one), as
    /// much as fits.
    fn cma_get(&mut self, id: ReqId, rts: &Rts) -> std::io::Result<()> {
        let remote = if rts.pieces == 0 {
            vec![Piece::new(rts.addr as usize as *mut u8, rts.size)]
        } else {
            let n = usize::try_from(rts.pieces).map_err(std::io::Error::other)?;
            let mut list = vec![Piece::new(std::ptr::null_mut(), 0); n];
            // SAFETY: `list` is a local array of `n` pieces, plain data
            // whatever bytes land in it (the sender wrote `iovec`s).
            unsafe {
                sys::cma_read(
                    rts.pid,
                    rts.addr,
                    list.as_mut_ptr().cast(),
                    size_of_val(&list[..]),
                )?;
            }
            list
        };
        let r = self.req_mut(id).expect("matched request exists");
        let mut sink = [0u8; iov::MAX_BRIDGE];
        let bridged = iov::bridge(&remote, r.buf.pieces(), sink.as_mut_ptr());
        let (local, remote) = match &bridged {
            Some((remote, local)) => (&local[..], &remote[..]),
            None => (r.buf.pieces(), &remote[..]),
        };
        // SAFETY: the receive's pieces are writable and untouched until
        // completion (irecv contract, or our own Vec); the sink is a local
        // array nothing reads. `cma_readv` fills the shorter list or fails.
        unsafe { sys::cma_readv(rts.pid, local, remote)? };
        Ok(())
    }

    /// Act on one control cell from local peer `j`.
    fn handle(&mut self, j: u32, cell: &Cell) {
        let from = self.peers[j as usize].rank;
        match CellKind::from_u32(cell.kind) {
            Some(CellKind::Inline) => {
                let ack = Self::ack_of(j, cell);
                self.arrive_data(from, cell.tag, &cell.payload[..cell.len as usize], ack);
            }
            Some(CellKind::Eager) => {
                let slot = self.seg.staging_slot(j, self.me, cell.a);
                // SAFETY: the sender filled `len` bytes of this slot before
                // publishing the cell (ring SP1); it is ours until we free it.
                let data = unsafe { std::slice::from_raw_parts(slot, cell.len as usize) };
                self.arrive_data(from, cell.tag, data, Self::ack_of(j, cell));
                self.free_slot(j, cell.a);
            }
            Some(CellKind::Rts) => {
                let rts = Rts {
                    from: j,
                    size: cell.size as usize,
                    sreq: cell.a,
                    addr: cell.b,
                    pieces: cell.rts_pieces(),
                    pid: cell.c as u32,
                    heap: heap_ref(cell),
                };
                match self.matcher.match_arrival(from, cell.tag) {
                    Some(p) => {
                        let id = self.posted_id(p);
                        self.start_rndv(id, cell.tag, rts);
                    }
                    None => self
                        .matcher
                        .push_unexpected(from, cell.tag, Arrival::Rts(rts)),
                }
            }
            Some(CellKind::Fin | CellKind::Ack) => self.complete_sent(cell.a),
            Some(CellKind::Cts) => self.help(j),
            Some(CellKind::Grant) => {
                let Some(at) = heap_ref(cell) else {
                    return;
                };
                self.peers[j as usize].grants.push_back(Grant {
                    id: cell.a,
                    cap: cell.b as usize,
                    at,
                });
            }
            Some(CellKind::Put) => {
                let lent = &mut self.peers[j as usize].lent;
                let Some(k) = lent.iter().position(|(id, _)| *id == cell.a) else {
                    self.boot.abort(
                        70,
                        &format!("tessel: rank {from} wrote into unknown grant {}", cell.a),
                    );
                    return;
                };
                let (_, mut buf) = lent.swap_remove(k);
                buf.truncate(cell.size as usize);
                match self.matcher.match_arrival(from, cell.tag) {
                    Some(p) => {
                        let id = self.posted_id(p);
                        self.land(id, from, cell.tag, buf);
                    }
                    None => self
                        .matcher
                        .push_unexpected(from, cell.tag, Arrival::Landed(buf)),
                }
            }
            Some(CellKind::CtsPipeline) => {
                let (len, cursor) = match self.req_mut(cell.a) {
                    Some(r) => (r.cap, Cursor::start(r.buf.pieces())),
                    None => return,
                };
                self.enqueue(
                    j,
                    Outgoing::Stream {
                        sreq: cell.a,
                        rreq: cell.b,
                        len,
                        off: 0,
                        cursor,
                    },
                );
            }
            Some(CellKind::Chunk) => {
                let slot = self.seg.staging_slot(j, self.me, cell.c);
                let (off, n) = (cell.b as usize, cell.len as usize);
                let mut finished = None;
                if let Some(r) = self.req_mut(cell.a)
                    && let Some(p) = r.pipeline.as_mut()
                {
                    // Chunks come in order (one FIFO ring per pair).
                    debug_assert_eq!(off, p.got, "pipeline chunk out of order");
                    // SAFETY: the slot holds `n` published bytes (SP1); the
                    // cursor writes only what fits in the receive's pieces.
                    unsafe { p.cursor.scatter(r.buf.pieces(), slot, n) };
                    p.got += n;
                    if p.got == p.size {
                        finished = Some(truncation(p.source, p.tag, p.size, r.cap));
                    }
                }
                self.free_slot(j, cell.c);
                if let Some(result) = finished {
                    self.complete(cell.a, result);
                }
            }
            None => {
                // A peer wrote a kind this build does not know: the layout
                // versions agreed, so this is memory corruption.
                self.boot.abort(
                    70,
                    &format!(
                        "tessel: corrupt control cell (kind {}) from rank {from}",
                        cell.kind
                    ),
                );
            }
        }
    }

    fn posted_id(&self, p: Posted) -> ReqId {
        let r = self.reqs[p.req as usize]
            .as_ref()
            .expect("posted request exists");
        (u64::from(r.generation) << 32) | u64::from(p.req)
    }

    fn arrive_data(&mut self, from: u32, tag: u64, data: &[u8], ack: Option<Ack>) {
        match self.matcher.match_arrival(from, tag) {
            Some(p) => {
                let id = self.posted_id(p);
                self.acknowledge(ack);
                let result = self.deliver(id, from, tag, data);
                self.complete(id, result);
            }
            None => {
                let bytes = data.to_vec();
                self.matcher
                    .push_unexpected(from, tag, Arrival::Data { bytes, ack });
            }
        }
    }

    fn free_slot(&mut self, j: u32, seq: u64) {
        // Pairs with the sender's Acquire in `has_slot`: our copy-out is done.
        self.seg
            .staging(j, self.me)
            .freed
            .store(seq + 1, Ordering::Release);
    }

    // ----- progress -------------------------------------------------------

    /// Make progress on every outstanding operation without blocking.
    /// Returns whether anything happened.
    pub fn progress(&mut self) -> bool {
        let mut did = false;
        if !self.blocked.is_empty() {
            let blocked = std::mem::take(&mut self.blocked);
            for j in blocked {
                did |= self.flush(j);
                if !self.peers[j as usize].backlog.is_empty() {
                    self.blocked.push(j);
                }
            }
        }
        let mut flagged = std::mem::take(&mut self.flagged);
        flagged.append(&mut self.revisit);
        doorbell::drain(self.seg.bell(self.me), self.seg.masks(self.me), |j| {
            flagged.push(j)
        });
        let budget = self.seg.layout().geometry.ring_cells;
        for &j in &flagged {
            let mut n = 0;
            while let Some(cell) = self.peers[j as usize].rx.pop() {
                self.handle(j, &cell);
                did = true;
                n += 1;
                if n == budget {
                    self.revisit.push(j);
                    break;
                }
            }
        }
        flagged.clear();
        self.flagged = flagged;
        if self.active > 0 {
            did |= self.progress_chunked();
        }
        if self.net.is_some() {
            did |= self.progress_net();
        }
        did
    }

    /// Progress once and report whether `req` is complete.
    pub fn test(&mut self, req: &Request) -> bool {
        self.progress();
        self.is_complete(req)
    }

    /// Whether `req` is complete, without progressing.
    pub fn is_complete(&self, req: &Request) -> bool {
        self.reqs
            .get(req_index(req.id))
            .and_then(Option::as_ref)
            .is_some_and(|r| u64::from(r.generation) == req.id >> 32 && r.result.is_some())
    }

    /// One step of a waiting loop: progress once; when nothing happened,
    /// back off one step (spin, then yield, then sleep on the futex until
    /// a message arrives or the configured sleep ends). Returns whether
    /// progress happened. A loop waiting for several requests (or for
    /// something the engine does not know) calls this between its checks.
    pub fn progress_or_back_off(&mut self, backoff: &mut Backoff) -> bool {
        if self.progress() || self.steal_round() {
            if self.advertised {
                self.advertised = false;
                steal::withdraw(self.seg.stealers(), self.me);
            }
            backoff.idle = 0;
            return true;
        }
        if !self.advertised {
            self.advertised = true;
            steal::advertise(self.seg.stealers(), self.me);
        }
        backoff.idle += 1;
        self.idle(&mut backoff.idle);
        false
    }

    /// Wait until one of `reqs` completes (backing off while idle) and
    /// return its index; the request stays to be waited for. `None` for
    /// an empty slice.
    pub fn wait_any(&mut self, reqs: &[&Request]) -> Option<usize> {
        if reqs.is_empty() {
            return None;
        }
        let mut backoff = Backoff::default();
        loop {
            if let Some(i) = reqs.iter().position(|r| self.is_complete(r)) {
                return Some(i);
            }
            self.progress_or_back_off(&mut backoff);
        }
    }

    /// Wait until `req` completes, then return its result. Waiting spins,
    /// then yields the core, then sleeps on the futex (woken by any
    /// message), so oversubscribed jobs keep moving.
    pub fn wait(&mut self, req: Request) -> Result<Completion, Error> {
        let mut backoff = Backoff::default();
        while !self.is_complete(&req) {
            self.progress_or_back_off(&mut backoff);
        }
        let id = req.id;
        let r = self.req_mut(id).expect("completed request exists");
        let result = r.result.take().expect("complete");
        let data = r.owned.take().filter(|_| r.is_recv);
        let buffer = r.recv_buf.take();
        self.release(id);
        result.map(|status| Completion {
            status,
            buffer,
            data: data.map(|mut v| {
                v.truncate(status.len);
                v
            }),
        })
    }

    /// One step of backing off while there is nothing to do.
    fn idle(&mut self, idle: &mut u32) {
        let (spin, yields) = (self.cfg.spin, self.cfg.yields);
        if *idle <= spin {
            spin_hint();
        } else if *idle <= spin + yields || !self.blocked.is_empty() || self.active > 0 {
            // A backlog waits for a peer to free ring cells or staging
            // slots, which rings no doorbell: sleeping on the futex would
            // last until its timeout, so keep yielding instead. Likewise
            // while helpers copy chunks of our transfers.
            sys::yield_now();
        } else if let Some(net) = self.net.as_mut() {
            // The futex hears only this node: sleep in `poll` on the
            // plugin's descriptor instead, for at most the futex's time (a
            // local message then waits that long), or yield when the
            // plugin cannot wake us.
            match net.arm() {
                Some(fd) => sys::poll_readable(fd, self.cfg.sleep),
                None => sys::yield_now(),
            }
            *idle = spin;
        } else {
            let bell = self.seg.bell(self.me);
            if doorbell::prepare_sleep(bell) {
                sys::futex_wait(bell, doorbell::SLEEPING, self.cfg.sleep);
                doorbell::cancel_sleep(bell);
            }
            *idle = spin;
        }
    }

    /// Leave the job: deliver every control message still owed to peers,
    /// then a collective fence and the bootstrap's finalize.
    pub fn finalize(mut self) -> Result<(), InitError> {
        let mut idle = 0;
        while !self.blocked.is_empty()
            || self.active > 0
            || self.net.as_ref().is_some_and(Net::busy)
        {
            if self.progress() {
                idle = 0;
            } else {
                idle += 1;
                self.idle(&mut idle);
            }
        }
        if self.advertised {
            steal::withdraw(self.seg.stealers(), self.me);
        }
        if self.cfg.stats {
            let text: String = self
                .stats_lines()
                .iter()
                .map(|l| l.clone() + "\n")
                .collect();
            // One write, so lines of different processes do not interleave.
            use std::io::Write;
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
        self.boot.fence()?;
        self.boot.finalize()?;
        Ok(())
    }
}

impl Endpoint {
    // ----- chunked rendezvous (see `rndv`) ---------------------------------

    /// Start receiving rendezvous `rts` into request `id` in chunks, as the
    /// plan for its (peer, size class) says. False when the plan is GET or
    /// the transfer cannot be chunked (non-contiguous buffers, no free
    /// transfer slot, nothing to copy): the caller then GETs.
    fn start_chunked(&mut self, id: ReqId, tag: u64, rts: &Rts) -> bool {
        let me = self.me;
        let (ptr, cap) = match self.req_mut(id) {
            Some(Req {
                buf: Buf::One(p),
                cap,
                ..
            }) => (p.ptr, *cap),
            _ => return false,
        };
        let n = rts.size.min(cap);
        let free = self.xfers.iter().position(Option::is_none);
        let (Some(slot), false, true, Some(_)) = (free, rts.pieces != 0, n > 0, self.own.as_ref())
        else {
            return false;
        };
        let plan = self
            .adapt
            .plan(self.cfg.rndv, rts.from, rts.size, self.cfg.reprobe);
        if plan == Plan::Get {
            return false;
        }
        let src = End {
            proc: rts.from,
            pid: rts.pid,
            addr: rts.addr,
            heap: rts.heap,
        };
        let dst = End {
            proc: me,
            pid: sys::pid(),
            addr: ptr as u64,
            heap: heap::locate(ptr, n),
        };
        let at_most_coop = src.is_private() && dst.is_private();
        let (chunk_len, chunks) = plan.chunking(n, self.cfg.chunk);
        let slot = slot as u32;
        let x = self.seg.xfer(me, slot);
        // Nobody reads this slot now: its last transfer completed, so no
        // task of it is left to claim. The pushes below publish these
        // stores to whoever takes a task (SQ1 of the steal queue).
        let generation = x.desc.generation.load(Ordering::Relaxed) + 1;
        for w in &x.chunk_words[..steal::words_for(chunks)] {
            w.store(0, Ordering::Relaxed);
        }
        for w in x.helper_words {
            w.store(0, Ordering::Relaxed);
        }
        x.desc.generation.store(generation, Ordering::Relaxed);
        x.desc.size.store(n as u64, Ordering::Relaxed);
        x.desc.chunk_len.store(chunk_len as u64, Ordering::Relaxed);
        x.desc.chunks.store(u64::from(chunks), Ordering::Relaxed);
        x.desc.error.store(0, Ordering::Relaxed);
        src.store(&x.desc.src);
        dst.store(&x.desc.dst);
        self.xfers[slot as usize] = Some(Xfer {
            req: id,
            j: rts.from,
            sreq: rts.sreq,
            source: self.peers[rts.from as usize].rank,
            tag,
            size: rts.size,
            cap,
            chunks,
            chunk_len,
            plan,
            at_most_coop,
        });
        self.active += 1;
        let hint = Hint {
            slot,
            only: at_most_coop.then_some(rts.from),
        }
        .encode();
        let owner = self.own.as_mut().expect("checked above");
        let mut ours = Vec::new();
        for k in 0..chunks {
            let off = k as usize * chunk_len;
            let t = rndv::task(slot, generation, k, off, chunk_len.min(n - off));
            if let Err(PushError::Full(t)) = owner.push_hinted(t, hint) {
                ours.push(t);
            }
        }
        // The sender waits for FIN anyway: ask it to copy what it can take.
        let mut cts = Cell::new(CellKind::Cts);
        cts.a = rts.sreq;
        cts.b = u64::from(slot);
        self.enqueue(rts.from, Outgoing::Cell(cts));
        if !at_most_coop && chunks > 2 {
            self.wake_stealers(chunks - 2, rts.from);
        }
        for t in ours {
            self.run_task(me, t);
        }
        true
    }

    /// Nudge up to `k` advertised stealers other than `except`, nearest
    /// first, so that sleeping ones come and take chunks.
    fn wake_stealers(&mut self, k: u32, except: u32) {
        self.settle_steal_order();
        let idle = Snapshot::after_posting(self.seg.stealers());
        if idle.count() == 0 {
            return;
        }
        for &p in self
            .steal_order
            .iter()
            .filter(|&&p| p != except && idle.contains(p))
            .take(k as usize)
        {
            self.nudge(p);
        }
    }

    /// Wake local process `p` without a message (it may sleep on its futex).
    fn nudge(&self, p: u32) {
        let bell = self.seg.bell(p);
        if doorbell::nudge(bell) {
            sys::futex_wake(bell);
        }
    }

    /// Copy chunk `t` of a transfer of local process `q` (ourselves or a
    /// peer whose queue we took it from), then mark it done.
    fn run_task(&mut self, q: u32, t: CopyTask) {
        let me = self.me;
        let x = self.seg.xfer(q, rndv::task_slot(&t));
        let (src, dst) = (End::load(&x.desc.src), End::load(&x.desc.dst));
        let (s, d) = (
            src.reach(me, &mut self.heaps),
            dst.reach(me, &mut self.heaps),
        );
        let copied = match (s, d) {
            (s, d) if rndv::can_copy(s, d, self.cma) => {
                // SAFETY: we hold task `t` (posted by us, or claimed from
                // q's queue: nobody else copies these bytes); the sender
                // keeps its buffer until FIN and the receiver its own
                // until the last chunk bit, which we set only below.
                unsafe { rndv::copy(s, d, t.src as usize, t.len as usize) }
            }
            // A stealer checks this before claiming; the owner and the
            // sender can always copy (their own end is local, and chunked
            // transfers run only with cross-memory attach).
            _ => Err(std::io::Error::from(std::io::ErrorKind::Unsupported)),
        };
        if let Err(e) = copied {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            let _ = x.desc.error.compare_exchange(
                0,
                errno as u64 + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        x.copiers[t.chunk as usize].store(me, Ordering::Relaxed);
        let chunks = x.desc.chunks.load(Ordering::Relaxed) as u32;
        let done = rndv::completion(&x, chunks);
        let first = done.mark(t.chunk, me);
        debug_assert!(first, "chunk {} of a transfer copied twice", t.chunk);
        if q != me {
            self.stats.helped_others(t.len);
            if done.is_complete() {
                self.nudge(q);
            }
        }
    }

    /// Try to claim a task from local process `q`'s queue that we can run.
    fn try_steal(&mut self, q: u32) -> Option<CopyTask> {
        let (me, cma) = (self.me, self.cma);
        let (seg, heaps, queue) = (&self.seg, &mut self.heaps, &self.stealers[q as usize]);
        let mut can_run = |word: u64| {
            let h = Hint::decode(word);
            h.slot < XFER_SLOTS && h.allows(me) && runnable(&seg.xfer(q, h.slot), me, heaps, cma)
        };
        for _ in 0..16 {
            match queue.steal_if(&mut can_run) {
                Steal::Success(t) => return Some(t),
                Steal::Empty => return None,
                Steal::Retry => spin_hint(),
            }
        }
        None
    }

    /// A CTS from local peer `j`: copy what we can take from its queue.
    fn help(&mut self, j: u32) {
        while let Some(t) = self.try_steal(j) {
            self.run_task(j, t);
        }
    }

    /// Order the peers nearest first, once all have published a place.
    fn settle_steal_order(&mut self) {
        if self.steal_order_final {
            return;
        }
        let places: Option<Vec<Place>> =
            (0..self.local_size()).map(|p| self.seg.place(p)).collect();
        if let Some(places) = places {
            self.steal_order = crate::locality::steal_order(self.me, &places);
            self.steal_order_final = true;
        }
    }

    /// Idle: take one task from the nearest peer that has one for us.
    fn steal_round(&mut self) -> bool {
        self.settle_steal_order();
        for i in 0..self.steal_order.len() {
            let q = self.steal_order[i];
            if self.stealers[q as usize].is_empty() {
                continue;
            }
            if let Some(t) = self.try_steal(q) {
                self.run_task(q, t);
                return true;
            }
        }
        false
    }

    /// Run the tasks left on our own queue, then finish every transfer
    /// whose chunks are all copied. Returns whether anything happened.
    fn progress_chunked(&mut self) -> bool {
        let mut did = false;
        while let Some(t) = self.own.as_mut().and_then(Owner::pop) {
            self.run_task(self.me, t);
            did = true;
        }
        for slot in 0..XFER_SLOTS {
            let Some(x) = &self.xfers[slot as usize] else {
                continue;
            };
            if rndv::completion(&self.seg.xfer(self.me, slot), x.chunks).is_complete() {
                self.finish_chunked(slot);
                did = true;
            }
        }
        did
    }

    /// Every chunk of transfer slot `slot` is copied: FIN to the sender,
    /// complete the receive, learn how many helped.
    fn finish_chunked(&mut self, slot: u32) {
        let x = self.xfers[slot as usize].take().expect("active slot");
        self.active -= 1;
        let view = self.seg.xfer(self.me, slot);
        let helpers = rndv::completion(&view, x.chunks).helpers();
        if self.cfg.stats {
            // Who copied what: only for the statistics printed at finalize.
            let n = x.size.min(x.cap);
            for k in 0..x.chunks as usize {
                let who = view.copiers[k].load(Ordering::Relaxed) as usize;
                let len = x.chunk_len.min(n - k * x.chunk_len);
                if let Some(peer) = self.peers.get(who) {
                    self.stats.helped_by(peer.rank, len as u64);
                }
            }
        }
        let errno = view.desc.error.load(Ordering::Relaxed);
        let mut fin = Cell::new(CellKind::Fin);
        fin.a = x.sreq;
        self.enqueue(x.j, Outgoing::Cell(fin));
        if self.cfg.rndv == RndvMode::Adaptive {
            self.adapt.learn(x.j, x.size, helpers, x.at_most_coop);
        }
        self.stats.transfer(x.plan.protocol(), x.size);
        let result = if errno != 0 {
            Err(Error::Copy {
                source: x.source,
                errno: (errno - 1) as i32,
            })
        } else {
            truncation(x.source, x.tag, x.size, x.cap)
        };
        self.complete(x.req, result);
    }

    /// The statistics `TESSEL_STATS=1` prints at finalize, as lines.
    pub fn stats_lines(&self) -> Vec<String> {
        self.stats.lines(self.rank)
    }

    /// Transfers received with protocol `p` so far (all size classes).
    pub fn transfers(&self, p: Protocol) -> u64 {
        self.stats.transfers(p)
    }
}

/// Name a shared-heap buffer in payload words 1-4 of an RTS or GRANT cell
/// (its owner's pid goes in `c`).
fn set_heap_ref(cell: &mut Cell, r: &HeapRef) {
    cell.set_word(1, 1);
    cell.set_word(2, u64::from(r.fd));
    cell.set_word(3, r.arena_len);
    cell.set_word(4, r.offset);
}

/// The shared-heap buffer a cell names (see [`set_heap_ref`]), if any.
fn heap_ref(cell: &Cell) -> Option<HeapRef> {
    (cell.word(1) == 1).then(|| HeapRef {
        pid: cell.c as u32,
        fd: cell.word(2) as u32,
        arena_len: cell.word(3),
        offset: cell.word(4),
    })
}

/// Whether local process `me` can copy the chunks of transfer `x`.
fn runnable(x: &XferView<'_>, me: u32, heaps: &mut PeerHeaps, cma: bool) -> bool {
    let (src, dst) = (End::load(&x.desc.src), End::load(&x.desc.dst));
    rndv::can_copy(src.reach(me, heaps), dst.reach(me, heaps), cma)
}

fn truncation(source: u32, tag: u64, incoming: usize, capacity: usize) -> Result<Status, Error> {
    if incoming > capacity {
        Err(Error::Truncated {
            source,
            tag,
            incoming,
            capacity,
        })
    } else {
        Ok(Status::new(source, tag, incoming))
    }
}

#[cfg(test)]
mod tests {
    //! One-process endpoints talk to themselves through their own ring,
    //! which exercises every path of matching, probing and cancelling.

    use super::*;
    use crate::bootstrap::Singleton;
    use crate::rndv::Protocol;

    fn endpoint() -> Endpoint {
        Endpoint::new(Box::new(Singleton::default())).expect("one-process endpoint")
    }

    /// Sizes of the inline, eager and rendezvous protocols.
    fn sizes(ep: &Endpoint) -> [usize; 4] {
        let c = ep.config();
        [0, c.inline_max, c.eager_max, c.eager_max * 4 + 3]
    }

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    }

    #[test]
    fn probe_reports_full_size_and_leaves_the_message() {
        let mut ep = endpoint();
        for (k, n) in sizes(&ep).into_iter().enumerate() {
            let tag = 100 + k as u64;
            let data = bytes(n, k as u8);
            let s = ep.isend(0, tag, data.clone()).unwrap();
            let st = ep.probe(Source::Any, TagMatch::exact(tag));
            assert_eq!((st.source, st.tag, st.len), (0, tag, n));
            // Probing again sees the same message.
            assert_eq!(ep.iprobe(Source::Rank(0), TagMatch::any()), Some(st));
            let r = ep
                .irecv(Source::Rank(0), TagMatch::exact(tag), st.len)
                .unwrap();
            assert_eq!(ep.wait(r).unwrap().data.unwrap(), data);
            ep.wait(s).unwrap();
            assert_eq!(ep.iprobe(Source::Any, TagMatch::any()), None);
        }
    }

    #[test]
    fn matched_probe_takes_the_message_from_receives() {
        let mut ep = endpoint();
        for (k, n) in sizes(&ep).into_iter().enumerate() {
            let data = bytes(n, 7 + k as u8);
            let s = ep.isend(0, 5, data.clone()).unwrap();
            let (st, msg) = ep.mprobe(Source::Any, TagMatch::exact(5));
            assert_eq!(st.len, n);
            // A receive posted now does not get the probed message.
            let other = ep.irecv(Source::Any, TagMatch::exact(5), n).unwrap();
            assert!(!ep.test(&other));
            let got = ep.imrecv(msg, n);
            assert_eq!(ep.wait(got).unwrap().data.unwrap(), data);
            ep.wait(s).unwrap();
            assert!(ep.cancel(&other));
            assert!(ep.wait(other).unwrap().status.cancelled);
        }
        assert!(ep.improbe(Source::Any, TagMatch::any()).is_none());
    }

    #[test]
    fn cancel_only_withdraws_an_unmatched_receive() {
        let mut ep = endpoint();
        let r = ep.irecv(Source::Any, TagMatch::exact(1), 8).unwrap();
        assert!(ep.cancel(&r));
        assert!(ep.test(&r));
        let done = ep.wait(r).unwrap();
        assert!(done.status.cancelled);
        assert_eq!(done.status.len, 0);
        // The message goes to the next receive, not the cancelled one.
        ep.send(0, 1, b"abc").unwrap();
        ep.probe(Source::Any, TagMatch::exact(1));
        let r2 = ep.irecv(Source::Any, TagMatch::exact(1), 8).unwrap();
        assert!(!ep.cancel(&r2), "matched at once");
        let done = ep.wait(r2).unwrap();
        assert!(!done.status.cancelled);
        assert_eq!(done.data.unwrap(), b"abc");
        // A send cannot be cancelled; it completes normally.
        let big = ep.config().eager_max * 2;
        let s = ep.isend(0, 2, bytes(big, 1)).unwrap();
        assert!(!ep.cancel(&s));
        let r3 = ep.irecv(Source::Any, TagMatch::exact(2), big).unwrap();
        assert_eq!(ep.wait(r3).unwrap().data.unwrap(), bytes(big, 1));
        assert!(!ep.wait(s).unwrap().status.cancelled);
    }

    #[test]
    fn synchronous_send_completes_only_after_the_match() {
        let mut ep = endpoint();
        for n in sizes(&ep) {
            let data = bytes(n, 3);
            let s = ep.issend(0, 9, data.clone()).unwrap();
            // Delivered, but unmatched: the send stays incomplete.
            ep.probe(Source::Rank(0), TagMatch::exact(9));
            for _ in 0..4 {
                assert!(!ep.test(&s), "{n}-byte ssend completed before a match");
            }
            let r = ep.irecv(Source::Rank(0), TagMatch::exact(9), n).unwrap();
            assert_eq!(ep.wait(r).unwrap().data.unwrap(), data);
            let done = ep.wait(s).unwrap();
            assert_eq!(done.status.len, n);
        }
        // A matched probe is a match too.
        let s = ep.issend(0, 4, vec![1, 2, 3]).unwrap();
        let (_, msg) = ep.mprobe(Source::Any, TagMatch::any());
        ep.wait(s).unwrap();
        let mut buf = [0u8; 3];
        assert_eq!(ep.mrecv(msg, &mut buf).unwrap().len, 3);
        assert_eq!(buf, [1, 2, 3]);
    }

    /// Pieces of `buf` holding `want` bytes in all, of the lengths in
    /// `lens` (cycled, the last one cut short), each followed by a gap of
    /// `gap` untouched bytes.
    fn pieces(buf: &mut [u8], lens: &[usize], gap: usize, want: usize) -> Vec<Piece> {
        let (mut at, mut left, mut out) = (0, want, Vec::new());
        for &n in lens.iter().cycle() {
            if left == 0 && !out.is_empty() {
                break;
            }
            let n = n.min(left);
            out.push(Piece::new(buf[at..at + n].as_mut_ptr(), n));
            (at, left) = (at + n + gap, left - n);
        }
        out
    }

    /// The bytes of `pieces`, in order.
    fn packed(pieces: &[Piece]) -> Vec<u8> {
        let mut v = vec![0; total(pieces)];
        // SAFETY: the pieces lie in a live test buffer.
        unsafe { Cursor::start(pieces).gather(pieces, v.as_mut_ptr(), v.len()) };
        v
    }

    #[test]
    fn pieces_to_pieces_in_every_protocol() {
        pieces_to_pieces(endpoint());
        let cfg = Config {
            cma: CmaMode::Off,
            ..Config::default()
        };
        let ep = Endpoint::with_config(Box::new(Singleton::default()), cfg).unwrap();
        assert!(!ep.uses_cma());
        pieces_to_pieces(ep);
    }

    /// Messages of every protocol from pieces into pieces split another
    /// way, synchronous or not, whole or truncated.
    fn pieces_to_pieces(mut ep: Endpoint) {
        let big = ep.config().staging_slot_size as usize * 3 + 5;
        for (k, n) in sizes(&ep).into_iter().chain([big]).enumerate() {
            let mut src = bytes(2 * n + 64, k as u8);
            let sp = pieces(&mut src, &[0, 5, 1000, 3], 1, n);
            let data = packed(&sp);
            assert_eq!(data.len(), n);
            for (lens, truncate) in [(&[7usize, 0, 64][..], false), (&[300], true)] {
                let mut dst = vec![0u8; 2 * n + 600];
                let cap = if truncate { n.saturating_sub(1) } else { n };
                let dp = pieces(&mut dst, lens, 2, cap);
                let want = data.len().min(total(&dp));
                // SAFETY: both buffers outlive the requests: we wait here.
                let (s, r) = unsafe {
                    let sync = k % 2 == 1;
                    let s = if sync {
                        ep.issend_iov_raw(0, 3, &sp).unwrap()
                    } else {
                        ep.isend_iov_raw(0, 3, &sp).unwrap()
                    };
                    (
                        s,
                        ep.irecv_iov_raw(Source::Any, TagMatch::exact(3), &dp)
                            .unwrap(),
                    )
                };
                let got = ep.wait(r);
                assert_eq!(ep.wait(s).unwrap().status.len, data.len());
                match got {
                    Ok(c) => assert_eq!(c.status.len, data.len()),
                    Err(Error::Truncated {
                        incoming, capacity, ..
                    }) => {
                        assert!(truncate && n > 0);
                        assert_eq!((incoming, capacity), (data.len(), total(&dp)));
                    }
                    Err(e) => panic!("{n} bytes: {e}"),
                }
                assert_eq!(packed(&dp)[..want], data[..want], "{n} bytes, {lens:?}");
            }
        }
    }

    #[test]
    fn unexpected_and_probed_messages_scatter_into_pieces() {
        let mut ep = endpoint();
        for n in sizes(&ep) {
            let data = bytes(n, 9);
            let s = ep.isend(0, 4, data.clone()).unwrap();
            ep.probe(Source::Any, TagMatch::exact(4));
            let mut dst = vec![0u8; 2 * n + 8];
            let dp = pieces(&mut dst, &[1, 17], 1, n);
            let (_, msg) = ep.mprobe(Source::Any, TagMatch::exact(4));
            // SAFETY: `dst` outlives the request: we wait here.
            let r = unsafe { ep.imrecv_iov_raw(msg, &dp) };
            ep.wait(r).unwrap();
            ep.wait(s).unwrap();
            assert_eq!(packed(&dp)[..n], data[..]);
        }
    }

    #[test]
    fn managed_receives_get_a_buffer_of_the_message_size() {
        let mut ep = endpoint();
        for n in sizes(&ep) {
            let data = bytes(n, 11);
            // Posted first, and posted after the message arrived.
            let r = ep
                .irecv_managed(Source::Any, TagMatch::exact(6), usize::MAX)
                .unwrap();
            ep.send(0, 6, &data).unwrap();
            let s = ep.isend(0, 6, data.clone()).unwrap();
            ep.probe(Source::Any, TagMatch::exact(6));
            let r2 = ep
                .irecv_managed(Source::Rank(0), TagMatch::exact(6), usize::MAX)
                .unwrap();
            ep.wait(s).unwrap();
            for r in [r, r2] {
                let done = ep.wait(r).unwrap();
                assert_eq!(done.status.len, n);
                assert!(done.data.is_none());
                let buf = done.buffer.expect("a managed receive hands out its buffer");
                assert_eq!(buf.as_slice(), &data[..], "{n} bytes");
            }
        }
        // Capacity still bounds what is accepted.
        let big = ep.config().eager_max * 3;
        let s = ep.isend(0, 8, bytes(big, 2)).unwrap();
        let r = ep
            .irecv_managed(Source::Any, TagMatch::exact(8), big - 1)
            .unwrap();
        assert!(matches!(ep.wait(r), Err(Error::Truncated { .. })));
        ep.wait(s).unwrap();
    }

    #[test]
    fn granted_buffers_take_large_messages_at_once() {
        let mut ep = endpoint();
        let n = ep.config().eager_max * 4 + 5;
        let data = bytes(n, 21);
        // The managed receive lends its source a landing buffer: the send
        // completes at once, and the receive takes that very buffer.
        let r = ep
            .irecv_managed(Source::Rank(0), TagMatch::exact(1), n)
            .unwrap();
        ep.progress();
        let s = ep.isend(0, 1, data.clone()).unwrap();
        assert!(ep.is_complete(&s), "a put completes when it is written");
        let got = ep.wait(r).unwrap().buffer.unwrap();
        assert!(got.in_shared_heap());
        assert_eq!(got.as_slice(), &data[..]);
        ep.wait(s).unwrap();
        assert_eq!(ep.transfers(Protocol::Put), 1);
        // A grant not used by the next message stays for a later one; a
        // message landing before any receive waits, unexpected; an
        // ordinary receive copies it out.
        let r = ep
            .irecv_managed(Source::Rank(0), TagMatch::exact(2), n)
            .unwrap();
        ep.send(0, 2, b"small").unwrap();
        assert_eq!(ep.wait(r).unwrap().buffer.unwrap().as_slice(), b"small");
        ep.send(0, 3, &data).unwrap();
        assert_eq!(ep.transfers(Protocol::Put), 1, "not received yet");
        let st = ep.probe(Source::Any, TagMatch::exact(3));
        assert_eq!(st.len, n);
        let r = ep.irecv(Source::Any, TagMatch::exact(3), n).unwrap();
        assert_eq!(ep.wait(r).unwrap().data.unwrap(), data);
        assert_eq!(ep.transfers(Protocol::Put), 2);
    }

    #[test]
    fn wait_any_returns_a_completed_request() {
        let mut ep = endpoint();
        let a = ep.irecv(Source::Any, TagMatch::exact(1), 4).unwrap();
        let b = ep.irecv(Source::Any, TagMatch::exact(2), 4).unwrap();
        ep.send(0, 2, b"two").unwrap();
        assert_eq!(ep.wait_any(&[&a, &b]), Some(1));
        assert!(!ep.is_complete(&a));
        assert_eq!(ep.wait(b).unwrap().data.unwrap(), b"two");
        assert!(ep.cancel(&a));
        assert_eq!(ep.wait_any(&[&a]), Some(0));
        ep.wait(a).unwrap();
        assert_eq!(ep.wait_any(&[]), None);
    }
}
