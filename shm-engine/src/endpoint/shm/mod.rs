//! The intra-node path: the processes of one node talk through the node
//! segment.
//!
//! | protocol | size (defaults)            | how                                                    |
//! |----------|----------------------------|--------------------------------------------------------|
//! | inline   | <= 72 B (`inline_max`)     | payload inside the control cell                        |
//! | eager    | <= 16 KiB (`eager_max`)    | payload in the pair's next staging slot                |
//! | put      | granted, <= `grant_max`    | written at once into a buffer the receiver lent        |
//! | rndv/adaptive | larger, CMA works     | RTS; the receiver picks probe, GET, COOP or work stealing per (peer, size class) ([`crate::rndv`]); FIN |
//! | rndv/pipeline | larger, CMA refused   | RTS; CTS; sender streams chunks through staging slots  |
//!
//! The parts:
//! - [`cell`]: the control messages, typed; the only code that reads or
//!   writes cell words.
//! - `send`: protocol choice for a send, and each pair's backlog: outgoing
//!   work waits there, in order, when the ring or the staging is full, and
//!   is retried by progress ("no resources" is never an error).
//! - `recv`: draining the rings and acting on each control message.
//! - `grant`: landing buffers lent to a sender, and messages written into
//!   them.
//! - `rendezvous`: GET over cross-memory attach and the staging pipeline.
//! - `chunked`: the adaptive rendezvous in chunks, and work stealing.
//! - `wake`: waking a peer that sleeps, on its futex or in `poll`.
//!
//! A buffer is a list of [`Piece`](crate::iov::Piece)s: inline and eager
//! senders gather them straight into the cell or slot, receivers scatter
//! straight out of it, the pipeline does both chunk by chunk with a
//! [`Cursor`](crate::iov::Cursor), and a rendezvous over CMA hands both
//! lists to `process_vm_readv` (the RTS names the sender's list, which the
//! receiver reads first). Only an unexpected eager message is copied into
//! an engine-owned buffer, and scattered when a receive matches it.
//!
//! Staging slots of a pair are used and freed in FIFO order: the receiver
//! copies each slot out as soon as it reads the cell that names it (into
//! the matched buffer, or into an unexpected-message buffer), so a slow
//! receiver never blocks a sender on a slot it is not going to read.

pub(super) mod cell;
mod chunked;
mod grant;
mod recv;
mod rendezvous;
mod send;
mod wake;

use std::collections::VecDeque;

use cell::Grant;
pub(super) use cell::Rts;
use chunked::Xfer;
pub use recv::Next;
pub(super) use rendezvous::Pipeline;
use send::{Outgoing, TxStaging};
pub use wake::Waker;
use wake::Wakeups;

use super::RecvBuf;
use crate::bootstrap::Bootstrap;
use crate::config::{CmaMode, Config};
use crate::error::InitError;
use crate::heap::PeerHeaps;
use crate::layout::{Geometry, XFER_SLOTS};
use crate::locality::{CpuMask, Place};
use crate::queue::spmc::{Owner, Stealer};
use crate::queue::spsc::{Consumer, Producer};
use crate::rndv::Adapt;
use crate::segment::{FdServer, NodeSegment};
use crate::sync::Ordering;
use crate::sys;

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

/// Most rings a process polls without their doorbell: the peers it hears
/// from most recently. Each costs a load of a line the process's cache
/// keeps while the peer is quiet; a stencil's neighbours fit.
pub(super) const POLLED_RINGS: usize = 8;

/// A ring we poll ([`Shm::polling`]).
#[derive(Clone, Copy, Debug)]
struct Polled {
    /// The local peer that sends on it.
    from: u32,
    /// [`Shm::tick`] when it last delivered.
    last: u64,
}

/// This process's side of the node segment.
#[derive(Debug)]
pub(super) struct Shm {
    // Declared before `seg`: the rings' and queues' handles must drop
    // before the mapping.
    peers: Vec<Peer>,
    /// Our steal queue (`None` if another handle owns it: never in practice).
    own: Option<Owner<'static>>,
    /// Every local process's steal queue, ours included.
    stealers: Vec<Stealer<'static>>,
    /// The local peers known to have published their place, in the order
    /// an idle process visits their queues: nearest first
    /// ([`crate::locality::steal_order`]).
    steal_order: Vec<u32>,
    /// The local processes not known to have published their place: not
    /// started yet, or room in the segment for a later spawn. An idle
    /// process looks at one of them per visit (see `settle_steal_order`).
    unplaced: Vec<u32>,
    /// Which of `unplaced` the next visit looks at (from the first again
    /// past the last).
    probe: usize,
    /// Our transfer slots: large receives being copied in chunks.
    xfers: Vec<Option<Xfer>>,
    /// Transfer slots in use.
    active: u32,
    /// Whether our bit is set in the stealer mask.
    advertised: bool,
    adapt: Adapt,
    heaps: PeerHeaps,
    /// Last grant id handed out.
    next_grant: u64,
    /// Our local index.
    me: u32,
    /// Whether large messages use cross-memory attach.
    cma: bool,
    /// Peers with a non-empty backlog.
    blocked: Vec<u32>,
    /// Peers whose ring had more than one visit's worth of cells.
    revisit: Vec<u32>,
    flagged: Vec<u32>,
    /// The rings we poll on every progress call, whose senders skip our
    /// doorbell ([`crate::doorbell`], SP5): at most [`POLLED_RINGS`].
    polling: Vec<Polled>,
    /// Progress calls so far: when each polled ring last delivered.
    tick: u64,
    wakeups: Wakeups,
    seg: NodeSegment,
}

/// The bootstrap key of node `node`'s segment.
fn key(node: u32) -> String {
    format!("tessel.seg.{node}")
}

/// How a process comes to the node segment.
#[derive(Clone, Copy, Debug)]
pub(in crate::endpoint) struct Join {
    /// Our job is the one `mpiexec` started: its first local process
    /// creates the segment. A job started later fetches it from the
    /// process that started it, which published where under [`key`] in
    /// the new job's key-value space.
    pub create: bool,
    /// Processes of our job on this node (the segment may have room for
    /// more, see [`crate::bootstrap::Universe`]).
    pub present: u32,
}

impl Shm {
    /// Attach to the segment of node `node`, whose processes are `locals`
    /// (ranks, ascending; we are local index `me`): its first process
    /// creates it and serves its descriptor to the `join.present - 1`
    /// others, which fetch it after a fence. Collective over the job (the fence). The segment's geometry
    /// bounds `cfg.eager_max`. `polls`: this process sleeps in `poll` (a
    /// network plugin is open), so peers must be able to wake it there.
    pub(super) fn attach(
        boot: &mut dyn Bootstrap,
        cfg: &mut Config,
        node: u32,
        locals: &[u32],
        me: u32,
        polls: bool,
        join: Join,
    ) -> Result<Self, InitError> {
        let nlocal = locals.len() as u32;
        let seg = if join.create && me == 0 {
            let seg = NodeSegment::create(Geometry {
                nlocal,
                ring_cells: cfg.ring_cells,
                staging_slots: cfg.staging_slots,
                staging_slot_size: cfg.staging_slot_size,
            })?;
            let server = if join.present > 1 {
                let (s, name) = FdServer::start(&seg, join.present - 1)?;
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
        let cma = cfg.cma == CmaMode::Auto && seg.probe_cma();
        // A flag board maps its members' heaps, which takes their
        // descriptors (`crate::heap`, `sys::peer_fd`): the same permission
        // as cross-memory attach.
        let boards = cfg.coll_board && cma && sys::takes_descriptors();
        seg.publish_place(me, Place::current(), &CpuMask::current(), boards);
        if crate::locality::several_numa_nodes() {
            seg.first_touch(me); // our rings and staging on our NUMA node
        }
        // The creator's geometry wins; eager messages must fit its slots.
        cfg.eager_max = cfg
            .eager_max
            .min(seg.layout().geometry.staging_slot_size as usize);

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
        let wakeups = Wakeups::new(&seg, me, nlocal, polls);
        Ok(Self {
            peers,
            own,
            stealers,
            steal_order: Vec::new(),
            unplaced: (0..nlocal).filter(|&p| p != me).collect(),
            probe: 0,
            xfers: (0..XFER_SLOTS).map(|_| None).collect(),
            active: 0,
            advertised: false,
            adapt: Adapt::default(),
            heaps: PeerHeaps::new(),
            next_grant: 0,
            me,
            cma,
            blocked: Vec::new(),
            revisit: Vec::new(),
            flagged: Vec::new(),
            polling: Vec::new(),
            tick: 0,
            wakeups,
            seg,
        })
    }

    /// Serve the segment to `peers` processes about to join node `node`:
    /// the server, and the bootstrap key and value that name it.
    pub(super) fn share(
        &self,
        node: u32,
        peers: u32,
    ) -> Result<(FdServer, (String, Vec<u8>)), InitError> {
        let (server, name) = FdServer::start(&self.seg, peers)?;
        Ok((server, (key(node), name)))
    }

    /// Processes on this node, including this one.
    pub(super) fn local_size(&self) -> u32 {
        self.peers.len() as u32
    }

    /// Where local process `p` runs (waits until it published its place).
    pub(super) fn place(&self, p: u32) -> Place {
        self.seg.wait_place(p)
    }

    /// Whether large messages use cross-memory attach.
    pub(super) fn uses_cma(&self) -> bool {
        self.cma
    }

    /// Whether local process `j` said it takes part in flag boards.
    pub(super) fn takes_boards(&self, j: u32) -> bool {
        self.seg.takes_boards(j)
    }

    /// How many CPUs the local processes `ps` may run on between them
    /// (the union of the masks they published; waits for those as
    /// [`Shm::place`] does).
    pub(super) fn cpus_among(&self, ps: impl IntoIterator<Item = u32>) -> usize {
        ps.into_iter()
            .fold(CpuMask::default(), |all, p| all.union(self.seg.cpus(p)))
            .count()
    }

    /// Whether work is left that only progress finishes: a backlog, or
    /// transfers whose chunks others may still copy. A waiting loop must
    /// not sleep on the futex then: neither rings a doorbell.
    pub(super) fn busy(&self) -> bool {
        !self.blocked.is_empty() || self.active > 0
    }

    /// Messages and control cells waiting for room to local peer `j`.
    #[cfg(test)]
    pub(super) fn backlog_len(&self, j: u32) -> usize {
        self.peers[j as usize].backlog.len()
    }
}
