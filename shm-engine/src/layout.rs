//! Every `#[repr(C)]` type that lives in the node segment, and where it lives.
//!
//! Only fixed-width integers, atomics from [`crate::sync`] and explicit
//! padding appear here; parts of the segment are located by byte offsets
//! from its base ([`SegmentLayout`]), never by pointers, because each process
//! maps the segment at its own address.
//!
//! ```text
//! +----------------+  0
//! | SegmentHeader  |  magic, version, geometry, offsets, `ready` (stored last)
//! +----------------+  procs_off
//! | process x N    |  per process: bell (futex word) and doorbell mask words
//! |                |  on one line, then its ProcArea (pid, place, wake-up
//! |                |  fd, whether it takes part in flag boards, CPU mask)
//! +----------------+  rings_off
//! | Ring x N*N     |  ring (i -> j) at rings_off + (i*N + j) * ring_stride:
//! |                |  RingHeader (tail line + polled word, head line) +
//! |                |  cells x RingSlot (stamp + cell)
//! +----------------+  staging_off
//! | Staging x N*N  |  staging (i -> j): StagingHeader + staging_slots x slot
//! +----------------+  stealers_off
//! | stealer mask   |  ceil(N / 64) words: bit p = process p is idle
//! +----------------+  steal_off
//! | StealQueue x N |  queue of process p: StealHeader + STEAL_SLOTS x TaskSlot
//! +----------------+  xfer_off
//! | Xfer x N*XFERS |  transfer slot s of process p: XferDesc, chunk words,
//! |                |  copier words, helper words
//! +----------------+  size
//! ```
//!
//! A zero-filled ring, staging area or mask is a valid empty one, so the
//! creator initialises only the header and the process areas: pages of
//! rings whose pair never talks are never touched and cost no memory.

use crate::sync::{AtomicU32, AtomicU64, UnsafeCell};
use crossbeam_utils::CachePadded;

/// `b"TESSEL\0\x01"` read as a little-endian word.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TESSEL\0\x01");
/// Bumped whenever a type in this module changes shape or meaning.
pub const LAYOUT_VERSION: u32 = 11;
/// Bytes of payload carried inside a control cell (the inline protocol).
pub const INLINE_CAPACITY: usize = 72;
/// Alignment of every region: a 4 KiB page, so regions never share pages.
pub const REGION_ALIGN: u64 = 4096;
/// Slots of each process's steal queue (a power of two).
pub const STEAL_SLOTS: u32 = 256;
/// Transfer slots per process: large receives that may be split into
/// chunks at the same time (more wait for a slot or use GET).
pub const XFER_SLOTS: u32 = 16;
/// Most chunks one transfer is split into (a multiple of 64).
pub const MAX_CHUNKS: u32 = 1024;

/// The first bytes of a node segment.
///
/// Written once by the creator before anyone else maps the segment; only
/// `ready` is atomic, stored last with Release; openers check `magic`,
/// `version`, `size` and `ready` (Acquire) before trusting the rest.
#[repr(C)]
#[derive(Debug)]
pub struct SegmentHeader {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// Processes on this node (N).
    pub nlocal: u32,
    /// Total bytes of the segment.
    pub size: u64,
    /// Cells per control ring, a power of two.
    pub ring_cells: u32,
    /// Staging slots per ordered pair.
    pub staging_slots: u32,
    /// Bytes per staging slot.
    pub staging_slot_size: u64,
    /// Offset of the first [`ProcArea`].
    pub procs_off: u64,
    /// Bytes from one [`ProcArea`] to the next.
    pub proc_stride: u64,
    /// Offset of ring (0 -> 0).
    pub rings_off: u64,
    /// Bytes from one ring to the next.
    pub ring_stride: u64,
    /// Offset of staging (0 -> 0).
    pub staging_off: u64,
    /// Bytes from one staging area to the next.
    pub staging_stride: u64,
    /// Offset of the stealer mask.
    pub stealers_off: u64,
    /// Offset of process 0's steal queue.
    pub steal_off: u64,
    /// Offset of process 0's first transfer slot.
    pub xfer_off: u64,
    /// Pid of the creator, whose [`SegmentHeader::cma_probe_addr`] peers read
    /// to learn whether cross-memory attach works.
    pub creator_pid: u64,
    /// Address, in the creator's private memory, of a word holding
    /// [`CMA_PROBE_VALUE`].
    pub cma_probe_addr: u64,
    /// 1 once everything above is written (Release); 0 before.
    pub ready: AtomicU32,
    _pad: u32,
}

/// The value behind [`SegmentHeader::cma_probe_addr`].
pub const CMA_PROBE_VALUE: u64 = 0x7e55_e1c0_ffee_0001;

/// Per-process area: who the process is and how peers wake it. It
/// follows the process's bell and doorbell mask words
/// ([`SegmentLayout::proc_area`]).
#[repr(C)]
#[derive(Debug)]
pub struct ProcArea {
    /// Pid of the process once attached (0 before).
    pub pid: AtomicU64,
    /// Where the process runs: the ids of a [`Place`](crate::locality::Place)
    /// (core, L2, L3, NUMA node, package), written once at attach, before
    /// `placed`.
    pub place: [AtomicU32; 5],
    /// 1 once `place` is written (Release); 0 before.
    pub placed: AtomicU32,
    /// The process's wake-up eventfd plus one, in its own descriptor table
    /// (0: none). Published when the job spans nodes: the process then
    /// sleeps in `poll` on its network plugin's descriptor and this one,
    /// and a peer that finds it `SLEEPING` writes to this eventfd (a copy
    /// taken with `pidfd_getfd`) as well as waking the futex.
    pub wake_fd: AtomicU32,
    /// 1 if the process takes part in collectives on flag boards: its
    /// `TESSEL_COLL` allows them and it can map its peers' shared heaps
    /// (cross-memory attach allowed, their descriptors reachable); 0 if not.
    /// Written once at attach, before `placed`.
    pub boards: AtomicU32,
    _pad: [u32; 22],
    /// The CPUs the process may run on, its affinity mask at attach
    /// ([`CpuMask`](crate::locality::CpuMask) words). Written once at
    /// attach, before `placed`.
    pub cpus: [AtomicU64; CPU_WORDS],
}

/// Words of a process's CPU mask ([`ProcArea::cpus`]): CPUs 0 to 1023,
/// as many as a `cpu_set_t` holds.
pub const CPU_WORDS: usize = 16;

/// Bytes of a [`ProcArea`] (the last of each process's part of the
/// process region).
const PROC_AREA_LEN: u64 = 256;

/// Bytes from a process's bell to its first doorbell mask word. The bell
/// (the futex word, [`crate::doorbell`] bits `RUNG` and `SLEEPING`) and
/// the mask words (bit j set: ring (j -> this) has news) share a cache
/// line for up to 448 processes: a sender sets both, the owner reads and
/// clears both, so a message moves that line once rather than two.
pub const MASKS_AFTER_BELL: u64 = 8;

/// Producer and consumer indices of one SPSC ring, on separate lines.
///
/// Indices grow without bound (u64 never wraps in practice); the cell of
/// index `i` is `i & (cells - 1)`. The producer's own `tail` and the
/// consumer's own `head` satisfy `head <= tail <= head + cells`; the
/// stored `tail` may lag behind a `head` the consumer already stored (it
/// is written after the stamp that publishes), and only its producer
/// reads it.
#[repr(C)]
#[derive(Debug, Default)]
pub struct RingHeader {
    /// Next index the producer writes, where a new producer resumes. Not
    /// what publishes a cell: its slot's stamp does ([`RingSlot`]), so a
    /// consumer never reads this line.
    pub tail: AtomicU64,
    /// Non-zero while the consumer polls this ring on every progress call,
    /// so the producer need not ring its doorbell ([`crate::doorbell`],
    /// SP5). Written by the consumer, rarely; read by the producer after
    /// each push. On the producer's line, which that read then finds in
    /// its own cache.
    pub polled: AtomicU32,
    /// Next index the consumer reads; stored with Release after the cell
    /// was copied out, so the producer may reuse it.
    pub head: CachePadded<AtomicU64>,
}

/// Consumer side of one staging area: slots are used in FIFO order, so one
/// counter of freed slots is all the producer needs to read.
#[repr(C)]
#[derive(Debug, Default)]
pub struct StagingHeader {
    /// Number of slots the consumer has finished with (Release).
    pub freed: CachePadded<AtomicU64>,
}

/// Indices of one SPMC steal queue ([`crate::queue::spmc`]): the owner's
/// line (role word and the tail it alone writes) and the stealers' line
/// (the head they claim with a CAS).
///
/// A zero-filled header with zero-filled slots is a valid empty queue
/// without an owner.
#[repr(C)]
#[derive(Debug, Default)]
pub struct StealHeader {
    /// Next index the owner writes. Written only by the owner (Relaxed); a
    /// later owner reads it after claiming the role, and anyone may read it
    /// as an estimate of the queue's length.
    pub tail: CachePadded<AtomicU64>,
    /// Next index to claim; advanced by one with a CAS by whoever takes the
    /// task at that index (a stealer or the owner itself).
    pub head: CachePadded<AtomicU64>,
    /// Role word: 1 while an owner handle exists, 0 otherwise.
    pub owner: CachePadded<AtomicU32>,
}

/// One chunk of a large transfer, as posted on a steal queue: copy `len`
/// bytes from `src` to `dst` for chunk `chunk` of request `request`.
///
/// `src` and `dst` are addresses or segment offsets as the rendezvous
/// protocol that posts the task defines; the queue only moves the task.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyTask {
    /// The posting process's request id.
    pub request: u64,
    /// Chunk index within the request (its bit in the completion set).
    pub chunk: u32,
    _pad: u32,
    /// Where the bytes are read.
    pub src: u64,
    /// Where the bytes are written.
    pub dst: u64,
    /// Bytes to copy.
    pub len: u64,
}

impl CopyTask {
    /// A task copying `len` bytes from `src` to `dst`.
    pub const fn new(request: u64, chunk: u32, src: u64, dst: u64, len: u64) -> Self {
        Self {
            request,
            chunk,
            _pad: 0,
            src,
            dst,
            len,
        }
    }
}

/// The shared description of one large transfer being copied in chunks:
/// what any copier needs besides the [`CopyTask`] (which names the slot and
/// the chunk). Written by the slot's owner (the receiver) before it posts
/// the transfer's first task, so a copier that took a task (SQ1 of the
/// steal queue) sees it; rewritten only after every chunk is marked, so
/// never while a copier may still read it. All words are atomics because a
/// stealer may read a slot speculatively before its claim fails.
///
/// Followed in the segment by `MAX_CHUNKS / 64` chunk words, `MAX_CHUNKS`
/// copier words (`AtomicU32`: local index of who copied each chunk, for
/// statistics) and `ceil(N / 64)` helper words ([`crate::steal::Completion`]).
#[repr(C)]
#[derive(Debug, Default)]
pub struct XferDesc {
    /// Bumped each time the slot is used; tasks carry it.
    pub generation: AtomicU64,
    /// Bytes to copy.
    pub size: AtomicU64,
    /// Bytes per chunk (the last may be shorter).
    pub chunk_len: AtomicU64,
    /// Number of chunks.
    pub chunks: AtomicU64,
    /// 0, or the OS error number of a failed copy plus one.
    pub error: AtomicU64,
    /// Where the bytes are read: an encoded transfer end (`rndv::End`).
    pub src: [AtomicU64; 5],
    /// Where they are written.
    pub dst: [AtomicU64; 5],
    _pad: [u64; 1],
}

/// What a control cell asks of its receiver. Stored as a `u32`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// A whole message in `payload[..len]`. `c`: for a synchronous send,
    /// the sender's request plus one (acknowledge with [`Ack`](Self::Ack)
    /// when the message matches a receive); 0 for a standard send.
    Inline = 1,
    /// A whole message in staging slot `a`, `len` bytes. `c` as for
    /// [`Inline`](Self::Inline).
    Eager = 2,
    /// Request to send `size` bytes: sender request `a`, in process `c`
    /// (pid). The first 8 bytes of `payload` (little-endian) count the
    /// pieces of the sender's buffer ([`Cell::rts_pieces`]): 0 means `b` is
    /// the address of the contiguous buffer; `n > 0` means `b` is the
    /// address of an array of `n` [`Piece`](crate::iov::Piece)s (the
    /// layout of `struct iovec`) that the sender keeps until FIN.
    Rts = 3,
    /// The receiver is done with sender request `a` (rendezvous complete).
    Fin = 4,
    /// Stream sender request `a` through staging to receiver request `b`.
    CtsPipeline = 5,
    /// Bytes `b..b+len` of receiver request `a`, in staging slot `c`.
    Chunk = 6,
    /// The synchronous inline or eager send of sender request `a` matched
    /// a receive (a rendezvous needs none: its FIN implies the match).
    Ack = 7,
    /// Cooperative rendezvous: the receiver split sender request `a` into
    /// chunks on its steal queue (transfer slot `b`); the sender is asked
    /// to copy what it can take from there. FIN still ends the send.
    Cts = 8,
    /// The receiver lends the sender a landing buffer for one later large
    /// message: grant `a`, `b` bytes, in the shared heap of process `c`
    /// (pid), located by payload words 1-4 as in [`Rts`](Self::Rts).
    Grant = 9,
    /// A whole message of `size` bytes was written into the buffer of
    /// grant `a`; the buffer now holds the message.
    Put = 10,
}

impl CellKind {
    /// Decode a kind word written by a peer.
    pub fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            1 => Self::Inline,
            2 => Self::Eager,
            3 => Self::Rts,
            4 => Self::Fin,
            5 => Self::CtsPipeline,
            6 => Self::Chunk,
            7 => Self::Ack,
            8 => Self::Cts,
            9 => Self::Grant,
            10 => Self::Put,
            _ => return None,
        })
    }
}

/// One slot of a control ring: 128 bytes, two cache lines. Index `i` of
/// the ring is published once its slot's `stamp` is `i + 1` (the ring's
/// SP1), so the stamp shares the cell's first line: a consumer waiting
/// for its next message polls the line the message arrives in, and a
/// message of up to 8 bytes moves that one line.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct RingSlot {
    /// `i + 1` once index `i` is written (Release, after the cell).
    pub stamp: AtomicU64,
    /// Written by the producer, read by the consumer, as SP1 and SP2 allow.
    pub cell: UnsafeCell<Cell>,
}

/// Bytes of a [`Cell`] before its payload.
pub const CELL_HEADER: usize = core::mem::offset_of!(Cell, payload);

/// One control message: 120 bytes, the part of a [`RingSlot`] after its
/// stamp.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// A [`CellKind`] as `u32`.
    pub kind: u32,
    /// Bytes of payload in this cell or in its staging slot.
    pub len: u32,
    /// Match tag.
    pub tag: u64,
    /// Total message size.
    pub size: u64,
    /// Kind-specific words (see [`CellKind`]).
    pub a: u64,
    /// Kind-specific.
    pub b: u64,
    /// Kind-specific.
    pub c: u64,
    /// Inline payload.
    pub payload: [u8; INLINE_CAPACITY],
}

impl Cell {
    /// An all-zero cell of the given kind.
    pub const fn new(kind: CellKind) -> Self {
        Self {
            kind: kind as u32,
            len: 0,
            tag: 0,
            size: 0,
            a: 0,
            b: 0,
            c: 0,
            payload: [0; INLINE_CAPACITY],
        }
    }
}

impl Cell {
    /// The bytes of this cell its receiver reads: the header and, for an
    /// inline message, its payload (the rest of the slot may hold an
    /// older cell's bytes). Writing and reading only these keeps a small
    /// message to the slot's first line.
    pub fn used(&self) -> usize {
        if self.kind == CellKind::Inline as u32 {
            CELL_HEADER + (self.len as usize).min(INLINE_CAPACITY)
        } else {
            size_of::<Cell>()
        }
    }

    /// The piece count of an [`Rts`](CellKind::Rts) cell.
    pub fn rts_pieces(&self) -> u64 {
        self.word(0)
    }

    /// Set the piece count of an [`Rts`](CellKind::Rts) cell.
    pub fn set_rts_pieces(&mut self, n: u64) {
        self.set_word(0, n);
    }

    /// Payload word `i` (little-endian), `i < 9`.
    pub fn word(&self, i: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.payload[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    }

    /// Set payload word `i`.
    pub fn set_word(&mut self, i: usize, v: u64) {
        self.payload[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
    }
}

// Pinned sizes and offsets: a change here is a layout change and needs a
// LAYOUT_VERSION bump. Loom's atomics are larger, so only in normal builds.
#[cfg(not(tessel_loom))]
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Cell>() == 120);
    assert!(CELL_HEADER == 48);
    assert!(size_of::<RingSlot>() == 128);
    assert!(offset_of!(RingSlot, cell) == 8);
    assert!(size_of::<RingHeader>() == 256);
    assert!(offset_of!(RingHeader, polled) == 8);
    assert!(offset_of!(RingHeader, head) == 128);
    assert!(size_of::<StagingHeader>() == 128);
    assert!(size_of::<ProcArea>() as u64 == PROC_AREA_LEN);
    assert!(offset_of!(ProcArea, pid) == 0);
    assert!(offset_of!(ProcArea, place) == 8);
    assert!(offset_of!(ProcArea, placed) == 28);
    assert!(offset_of!(ProcArea, wake_fd) == 32);
    assert!(offset_of!(ProcArea, boards) == 36);
    assert!(offset_of!(ProcArea, cpus) == 128);
    assert!(offset_of!(SegmentHeader, ready) == 128);
    assert!(size_of::<SegmentHeader>() == 136);
    assert!(size_of::<XferDesc>() == 128);
    assert!(offset_of!(XferDesc, src) == 40);
    assert!(offset_of!(XferDesc, dst) == 80);
    assert!(size_of::<StealHeader>() == 384);
    assert!(offset_of!(StealHeader, head) == 128);
    assert!(offset_of!(StealHeader, owner) == 256);
    assert!(size_of::<CopyTask>() == 40);
    assert!(offset_of!(CopyTask, chunk) == 8);
    assert!(offset_of!(CopyTask, src) == 16);
    assert!(offset_of!(CopyTask, dst) == 24);
    assert!(offset_of!(CopyTask, len) == 32);
};

/// Geometry of a node segment, chosen by its creator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Processes on the node.
    pub nlocal: u32,
    /// Cells per ring (power of two).
    pub ring_cells: u32,
    /// Staging slots per pair.
    pub staging_slots: u32,
    /// Bytes per staging slot (multiple of 64).
    pub staging_slot_size: u64,
}

// Not derivable: `[u8; 72]` has no `Default` (clippy suggests it anyway).
#[allow(clippy::derivable_impls)]
impl Default for Cell {
    fn default() -> Self {
        Self {
            kind: 0,
            ..Self::new(CellKind::Inline)
        }
    }
}

/// Offsets of every region, derived from a [`Geometry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentLayout {
    /// The geometry this layout was computed from.
    pub geometry: Geometry,
    /// See [`SegmentHeader::procs_off`].
    pub procs_off: u64,
    /// See [`SegmentHeader::proc_stride`].
    pub proc_stride: u64,
    /// See [`SegmentHeader::rings_off`].
    pub rings_off: u64,
    /// See [`SegmentHeader::ring_stride`].
    pub ring_stride: u64,
    /// See [`SegmentHeader::staging_off`].
    pub staging_off: u64,
    /// See [`SegmentHeader::staging_stride`].
    pub staging_stride: u64,
    /// See [`SegmentHeader::stealers_off`].
    pub stealers_off: u64,
    /// See [`SegmentHeader::steal_off`].
    pub steal_off: u64,
    /// Bytes from one steal queue to the next.
    pub steal_stride: u64,
    /// See [`SegmentHeader::xfer_off`].
    pub xfer_off: u64,
    /// Bytes from one transfer slot to the next.
    pub xfer_stride: u64,
    /// Total bytes.
    pub size: u64,
}

const fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

impl SegmentLayout {
    /// Compute the layout (the `memory_size` half of two-phase construction).
    pub fn new(g: Geometry) -> Self {
        assert!(g.nlocal > 0 && g.ring_cells.is_power_of_two() && g.staging_slots > 0);
        assert!(g.staging_slot_size > 0 && g.staging_slot_size.is_multiple_of(64));
        let n = u64::from(g.nlocal);
        let procs_off = REGION_ALIGN;
        let mask_words = n.div_ceil(64);
        let proc_stride = align_up(MASKS_AFTER_BELL + 8 * mask_words, 128) + PROC_AREA_LEN;
        let rings_off = align_up(procs_off + n * proc_stride, REGION_ALIGN);
        let ring_stride = align_up(256 + 128 * u64::from(g.ring_cells), REGION_ALIGN);
        let staging_off = rings_off + n * n * ring_stride;
        let staging_stride = align_up(
            128 + u64::from(g.staging_slots) * g.staging_slot_size,
            REGION_ALIGN,
        );
        let stealers_off = staging_off + n * n * staging_stride;
        let steal_off = align_up(stealers_off + 8 * mask_words, REGION_ALIGN);
        let steal_stride = align_up(384 + 64 * u64::from(STEAL_SLOTS), REGION_ALIGN);
        let xfer_off = steal_off + n * steal_stride;
        let chunk_words = u64::from(MAX_CHUNKS / 64);
        let xfer_stride = align_up(
            128 + 8 * chunk_words + 4 * u64::from(MAX_CHUNKS) + 8 * mask_words,
            128,
        );
        let size = align_up(
            xfer_off + n * u64::from(XFER_SLOTS) * xfer_stride,
            REGION_ALIGN,
        );
        Self {
            geometry: g,
            procs_off,
            proc_stride,
            rings_off,
            ring_stride,
            staging_off,
            staging_stride,
            stealers_off,
            steal_off,
            steal_stride,
            xfer_off,
            xfer_stride,
            size,
        }
    }

    /// Read the layout back from a header written by the creator, checking
    /// that it is self-consistent.
    pub fn from_header(h: &SegmentHeader) -> Option<Self> {
        if h.nlocal == 0
            || !h.ring_cells.is_power_of_two()
            || h.staging_slots == 0
            || h.staging_slot_size == 0
            || !h.staging_slot_size.is_multiple_of(64)
        {
            return None;
        }
        let l = Self::new(Geometry {
            nlocal: h.nlocal,
            ring_cells: h.ring_cells,
            staging_slots: h.staging_slots,
            staging_slot_size: h.staging_slot_size,
        });
        let same = l.procs_off == h.procs_off
            && l.proc_stride == h.proc_stride
            && l.rings_off == h.rings_off
            && l.ring_stride == h.ring_stride
            && l.staging_off == h.staging_off
            && l.staging_stride == h.staging_stride
            && l.stealers_off == h.stealers_off
            && l.steal_off == h.steal_off
            && l.xfer_off == h.xfer_off
            && l.size == h.size;
        same.then_some(l)
    }

    /// Offset of process `p`'s bell, the start of its part of the
    /// process region.
    pub fn bell(&self, p: u32) -> u64 {
        self.procs_off + u64::from(p) * self.proc_stride
    }

    /// Offset of process `p`'s doorbell mask word `w`.
    pub fn mask_word(&self, p: u32, w: u32) -> u64 {
        self.bell(p) + MASKS_AFTER_BELL + 8 * u64::from(w)
    }

    /// Offset of process `p`'s [`ProcArea`], after its mask words.
    pub fn proc_area(&self, p: u32) -> u64 {
        self.bell(p) + self.proc_stride - PROC_AREA_LEN
    }

    /// Number of mask words per process.
    pub fn mask_words(&self) -> u32 {
        self.geometry.nlocal.div_ceil(64)
    }

    /// Offset of the header of ring (`from` -> `to`); its cells follow at +256.
    pub fn ring(&self, from: u32, to: u32) -> u64 {
        let n = u64::from(self.geometry.nlocal);
        self.rings_off + (u64::from(from) * n + u64::from(to)) * self.ring_stride
    }

    /// Offset of process `p`'s steal queue header; its `STEAL_SLOTS` task
    /// slots follow at +384.
    pub fn steal_queue(&self, p: u32) -> u64 {
        self.steal_off + u64::from(p) * self.steal_stride
    }

    /// Offset of process `p`'s transfer slot `s`: its [`XferDesc`], then
    /// the chunk words at +128, the copier words at
    /// [`xfer_copiers`](Self::xfer_copiers), the helper words at
    /// [`xfer_helpers`](Self::xfer_helpers).
    pub fn xfer(&self, p: u32, s: u32) -> u64 {
        self.xfer_off + (u64::from(p) * u64::from(XFER_SLOTS) + u64::from(s)) * self.xfer_stride
    }

    /// Offset of the copier words of transfer slot `s` of process `p`.
    pub fn xfer_copiers(&self, p: u32, s: u32) -> u64 {
        self.xfer(p, s) + 128 + 8 * u64::from(MAX_CHUNKS / 64)
    }

    /// Offset of the helper words of transfer slot `s` of process `p`.
    pub fn xfer_helpers(&self, p: u32, s: u32) -> u64 {
        self.xfer_copiers(p, s) + 4 * u64::from(MAX_CHUNKS)
    }

    /// Offset of the header of staging (`from` -> `to`); slots follow at +128.
    pub fn staging(&self, from: u32, to: u32) -> u64 {
        let n = u64::from(self.geometry.nlocal);
        self.staging_off + (u64::from(from) * n + u64::from(to)) * self.staging_stride
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_do_not_overlap() {
        let l = SegmentLayout::new(Geometry {
            nlocal: 70,
            ring_cells: 64,
            staging_slots: 8,
            staging_slot_size: 16384,
        });
        assert_eq!(l.mask_words(), 2);
        assert!(l.procs_off >= size_of::<SegmentHeader>() as u64);
        assert!(l.mask_word(69, 1) + 8 <= l.proc_area(69));
        assert!(l.proc_area(69) + size_of::<ProcArea>() as u64 <= l.rings_off);
        // The bell and the mask words share a line up to 448 processes.
        assert_eq!(l.bell(3) / 64, (l.mask_word(3, 1) + 7) / 64);
        assert!(l.proc_area(3) + 128 <= l.bell(4));
        assert!(l.ring(0, 0) + 256 + 64 * 128 <= l.ring(0, 1));
        assert!(l.ring(69, 69) + l.ring_stride <= l.staging_off);
        assert!(l.staging(69, 69) + l.staging_stride <= l.stealers_off);
        assert!(l.stealers_off + 8 * 2 <= l.steal_off);
        assert!(l.steal_queue(69) + 384 + 64 * u64::from(STEAL_SLOTS) <= l.xfer_off);
        assert!(l.xfer_helpers(0, 0) + 16 <= l.xfer(0, 1));
        assert!(l.xfer(69, XFER_SLOTS - 1) + l.xfer_stride <= l.size);
        assert!(l.size.is_multiple_of(REGION_ALIGN));
        assert_eq!(l.ring(1, 0) - l.ring(0, 0), 70 * l.ring_stride);
    }
}
