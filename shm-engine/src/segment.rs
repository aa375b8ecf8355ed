//! The node segment: one memfd per node, created by the node's first
//! process, handed to its local peers over a unix socket (SCM_RIGHTS), and
//! mapped by each at its own address.
//!
//! No name is ever created in `/dev/shm`: the memory lives as long as some
//! process holds the descriptor or a mapping, and disappears when the last
//! one exits, `kill -9` included. The socket lives in the abstract
//! namespace (no file either) and serves only peers running under the same
//! uid as its owner.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::ptr::NonNull;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::layout::{
    CMA_PROBE_VALUE, Geometry, LAYOUT_VERSION, MAGIC, MAX_CHUNKS, ProcArea, RingHeader, RingSlot,
    STEAL_SLOTS, SegmentHeader, SegmentLayout, StagingHeader, StealHeader, XferDesc,
};
use crate::locality::{CpuMask, Place};
use crate::queue::spmc::{QueueView, TaskSlot};
use crate::queue::spsc::RingView;
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::sys::{self, Mapping};

/// Why a node segment could not be created or opened.
#[derive(Debug)]
#[non_exhaustive]
pub enum SegmentError {
    /// An OS call failed; `what` names it.
    Os {
        /// The failing step.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The segment's header is not one this build understands.
    BadHeader(String),
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Os { what, source } => write!(f, "{what}: {source}"),
            Self::BadHeader(m) => write!(f, "node segment rejected: {m}"),
        }
    }
}

impl std::error::Error for SegmentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Os { source, .. } => Some(source),
            Self::BadHeader(_) => None,
        }
    }
}

fn os(what: &'static str) -> impl FnOnce(io::Error) -> SegmentError {
    move |source| SegmentError::Os { what, source }
}

/// A word in the creator's private memory that peers read with
/// `process_vm_readv` to learn whether cross-memory attach works.
static CMA_PROBE: u64 = CMA_PROBE_VALUE;

/// The shared words of one transfer slot ([`crate::layout::XferDesc`]).
#[derive(Clone, Copy, Debug)]
pub struct XferView<'a> {
    /// What is copied from where to where.
    pub desc: &'a XferDesc,
    /// One bit per copied chunk.
    pub chunk_words: &'a [AtomicU64],
    /// Local index of the process that copied each chunk.
    pub copiers: &'a [AtomicU32],
    /// One bit per process that copied a chunk.
    pub helper_words: &'a [AtomicU64],
}

/// A process's bell ([`ProcArea::bell`]) that stays mapped as long as the
/// handle lives, whatever happens to the [`NodeSegment`] it came from.
#[derive(Clone, Debug)]
pub struct BellRef {
    map: Arc<Mapping>,
    off: usize,
}

impl BellRef {
    /// The bell word.
    pub fn get(&self) -> &AtomicU32 {
        debug_assert!(self.off + size_of::<AtomicU32>() <= self.map.len());
        // SAFETY: `off` is the bell of a process area inside the mapping
        // (layout), aligned, and the mapping lives as long as `self.map`;
        // the bell is an atomic that every local process updates, so a
        // shared reference is sound.
        unsafe { &*self.map.base().add(self.off).cast::<AtomicU32>() }
    }
}

/// A mapped node segment.
#[derive(Debug)]
pub struct NodeSegment {
    /// Shared with the [`Waker`]s handed out, which may outlive us.
    map: Arc<Mapping>,
    layout: SegmentLayout,
    fd: OwnedFd,
}

impl NodeSegment {
    /// Create, size, seal and initialise a segment for `geometry`.
    pub fn create(geometry: Geometry) -> Result<Self, SegmentError> {
        let layout = SegmentLayout::new(geometry);
        let memfd = memfd::MemfdOptions::default()
            .allow_sealing(true)
            .close_on_exec(true)
            .create("tessel-node")
            .map_err(|e| SegmentError::Os {
                what: "memfd_create",
                source: io::Error::other(e),
            })?;
        memfd
            .as_file()
            .set_len(layout.size)
            .map_err(os("ftruncate"))?;
        memfd
            .add_seals(&[memfd::FileSeal::SealShrink, memfd::FileSeal::SealGrow])
            .and_then(|()| memfd.add_seal(memfd::FileSeal::SealSeal))
            .map_err(|e| SegmentError::Os {
                what: "sealing the segment",
                source: io::Error::other(e),
            })?;
        let fd = OwnedFd::from(memfd.into_file());
        let map = Arc::new(Mapping::map_shared(&fd, layout.size as usize).map_err(os("mmap"))?);
        let header = map.base().cast::<SegmentHeader>();
        // SAFETY: the mapping is fresh, zero-filled, at least a page long and
        // not yet visible to any other process; we write plain fields, then
        // publish with the `ready` Release store below.
        unsafe {
            (*header).magic = MAGIC;
            (*header).version = LAYOUT_VERSION;
            (*header).nlocal = geometry.nlocal;
            (*header).size = layout.size;
            (*header).ring_cells = geometry.ring_cells;
            (*header).staging_slots = geometry.staging_slots;
            (*header).staging_slot_size = geometry.staging_slot_size;
            (*header).procs_off = layout.procs_off;
            (*header).proc_stride = layout.proc_stride;
            (*header).rings_off = layout.rings_off;
            (*header).ring_stride = layout.ring_stride;
            (*header).staging_off = layout.staging_off;
            (*header).staging_stride = layout.staging_stride;
            (*header).stealers_off = layout.stealers_off;
            (*header).steal_off = layout.steal_off;
            (*header).xfer_off = layout.xfer_off;
            (*header).creator_pid = u64::from(sys::pid());
            (*header).cma_probe_addr = &CMA_PROBE as *const u64 as u64;
        }
        let seg = Self { map, layout, fd };
        seg.header().ready.store(1, Ordering::Release);
        Ok(seg)
    }

    /// Map a segment received from its creator and check its header.
    pub fn open(fd: OwnedFd) -> Result<Self, SegmentError> {
        let len = std::fs::File::from(fd.try_clone().map_err(os("dup"))?)
            .metadata()
            .map_err(os("fstat"))?
            .len();
        if len < size_of::<SegmentHeader>() as u64 {
            return Err(SegmentError::BadHeader(format!(
                "segment too small ({len} bytes)"
            )));
        }
        let map = Arc::new(Mapping::map_shared(&fd, len as usize).map_err(os("mmap"))?);
        // SAFETY: at least a header's worth of bytes is mapped. The creator
        // wrote the plain fields before its Release store of `ready`; we
        // read them only after our Acquire load says 1.
        let header = unsafe { &*map.base().cast::<SegmentHeader>() };
        if header.ready.load(Ordering::Acquire) != 1 {
            return Err(SegmentError::BadHeader("segment not initialised".into()));
        }
        if header.magic != MAGIC {
            return Err(SegmentError::BadHeader(format!(
                "bad magic {:#x}",
                header.magic
            )));
        }
        if header.version != LAYOUT_VERSION {
            return Err(SegmentError::BadHeader(format!(
                "layout version {} (this build speaks {LAYOUT_VERSION})",
                header.version
            )));
        }
        if header.size != len {
            return Err(SegmentError::BadHeader(format!(
                "header says {} bytes, file has {len}",
                header.size
            )));
        }
        let layout = SegmentLayout::from_header(header)
            .ok_or_else(|| SegmentError::BadHeader("inconsistent geometry".into()))?;
        Ok(Self { map, layout, fd })
    }

    /// The segment's layout.
    pub fn layout(&self) -> &SegmentLayout {
        &self.layout
    }

    /// The segment's header.
    pub fn header(&self) -> &SegmentHeader {
        // SAFETY: the header is at offset 0 of a mapping at least that long
        // (checked in create/open); after `ready` its plain fields are never
        // written again, and `ready` is atomic.
        unsafe { &*self.map.base().cast::<SegmentHeader>() }
    }

    fn at<T>(&self, off: u64) -> NonNull<T> {
        debug_assert!(off as usize + size_of::<T>() <= self.map.len());
        debug_assert!((off as usize).is_multiple_of(align_of::<T>()));
        // SAFETY: offsets come from `layout`, which keeps every region inside
        // the mapping and aligned (see layout tests).
        unsafe { NonNull::new_unchecked(self.map.base().add(off as usize).cast()) }
    }

    /// Local process `p`'s bell, in a handle that keeps the mapping alive
    /// by itself (for another thread of the process).
    pub fn bell_ref(&self, p: u32) -> BellRef {
        let off = self.layout.bell(p) as usize;
        BellRef {
            map: Arc::clone(&self.map),
            off,
        }
    }

    /// Local process `p`'s area.
    pub fn proc_area(&self, p: u32) -> &ProcArea {
        // SAFETY: ProcArea holds only atomics and padding, so a shared
        // reference is sound while other processes update it.
        unsafe { self.at::<ProcArea>(self.layout.proc_area(p)).as_ref() }
    }

    /// Publish `place` and `cpus` as local process `p`'s, and whether `p`
    /// takes part in flag boards: called once, by `p`, when it attaches.
    pub fn publish_place(&self, p: u32, place: Place, cpus: &CpuMask, boards: bool) {
        let area = self.proc_area(p);
        for (word, id) in area.place.iter().zip(place.ids()) {
            word.store(id, Ordering::Relaxed);
        }
        for (word, &bits) in area.cpus.iter().zip(&cpus.0) {
            word.store(bits, Ordering::Relaxed);
        }
        area.boards.store(u32::from(boards), Ordering::Relaxed);
        // SYNC POINT: Release pairs with the Acquire in `placed`, so a
        // reader that sees 1 sees every id, the CPU mask and `boards`.
        area.placed.store(1, Ordering::Release);
    }

    /// Local process `p`'s place, once it has published it.
    pub fn place(&self, p: u32) -> Option<Place> {
        if !self.placed(p) {
            return None;
        }
        let area = self.proc_area(p);
        Some(Place::new(std::array::from_fn(|i| {
            area.place[i].load(Ordering::Relaxed)
        })))
    }

    /// Whether local process `p` takes part in flag boards, as it
    /// published with its place: waits for that as
    /// [`wait_place`](Self::wait_place) does.
    pub fn takes_boards(&self, p: u32) -> bool {
        self.wait_place(p);
        self.proc_area(p).boards.load(Ordering::Relaxed) == 1
    }

    /// The CPUs local process `p` may run on, as it published them with
    /// its place: waits for that as [`wait_place`](Self::wait_place) does.
    pub fn cpus(&self, p: u32) -> CpuMask {
        self.wait_place(p);
        let area = self.proc_area(p);
        CpuMask(std::array::from_fn(|w| {
            area.cpus[w].load(Ordering::Relaxed)
        }))
    }

    /// Whether local process `p` has published its place (Acquire: its
    /// place words are visible).
    pub fn placed(&self, p: u32) -> bool {
        self.proc_area(p).placed.load(Ordering::Acquire) == 1
    }

    /// Local process `p`'s place, waiting (yielding the CPU) until it has
    /// published it. Every local process publishes its place while it
    /// attaches, right after the start-up fence, so the wait is short; a
    /// process that dies before makes the launcher end the job.
    pub fn wait_place(&self, p: u32) -> Place {
        loop {
            if let Some(place) = self.place(p) {
                return place;
            }
            sys::yield_now();
        }
    }

    /// Allocate, on the caller's NUMA node, the pages local process
    /// `me` reads most: its rings (j -> `me`), staging areas (j -> `me`)
    /// for every j, and its steal queue, so that they live near it.
    ///
    /// The creator never touches these regions (a zero-filled ring is a
    /// valid empty one), so their pages are allocated by the first fault.
    /// For shared memory (tmpfs, memfd) a *read* fault allocates a page
    /// too (unlike anonymous memory, which maps the shared zero page): the
    /// kernel reads the pages in for us with `MADV_POPULATE_READ`, so no
    /// byte is loaded or stored from Rust and nothing races with a peer
    /// that is already writing to us. A page a peer wrote first stays where
    /// it is. Best effort: on a kernel without `MADV_POPULATE_READ` the
    /// pages are placed by whoever touches them first.
    pub fn first_touch(&self, me: u32) {
        let l = &self.layout;
        for j in 0..l.geometry.nlocal {
            let _ = self
                .map
                .populate_read(l.ring(j, me) as usize, l.ring_stride as usize);
            let _ = self
                .map
                .populate_read(l.staging(j, me) as usize, l.staging_stride as usize);
        }
        // Our steal queue: we push to it and pop from it most.
        let _ = self
            .map
            .populate_read(l.steal_queue(me) as usize, l.steal_stride as usize);
    }

    /// Local process `p`'s doorbell mask words.
    pub fn masks(&self, p: u32) -> &[AtomicU64] {
        let first = self.at::<AtomicU64>(self.layout.mask_word(p, 0));
        // SAFETY: `mask_words` consecutive atomics follow the area (layout).
        unsafe { std::slice::from_raw_parts(first.as_ptr(), self.layout.mask_words() as usize) }
    }

    /// Local process `p`'s bell word.
    pub fn bell(&self, p: u32) -> &AtomicU32 {
        // SAFETY: an atomic in the segment, which other processes update
        // only atomically.
        unsafe { self.at::<AtomicU32>(self.layout.bell(p)).as_ref() }
    }

    /// Ring (`from` -> `to`).
    pub fn ring(&self, from: u32, to: u32) -> RingView {
        let off = self.layout.ring(from, to);
        // SAFETY: the header and `ring_cells` cells lie inside the mapping
        // (layout); the engine creates one producer (process `from`) and one
        // consumer (process `to`) per ring.
        unsafe {
            RingView::from_raw(
                self.at::<RingHeader>(off),
                self.at::<RingSlot>(off + size_of::<RingHeader>() as u64),
                self.layout.geometry.ring_cells,
            )
        }
    }

    /// The node-wide stealer mask ([`crate::steal`]).
    pub fn stealers(&self) -> &[AtomicU64] {
        let first = self.at::<AtomicU64>(self.layout.stealers_off);
        // SAFETY: `mask_words` atomics at `stealers_off`, inside the
        // mapping (layout).
        unsafe { std::slice::from_raw_parts(first.as_ptr(), self.layout.mask_words() as usize) }
    }

    /// Process `p`'s steal queue. Handles made from it must not outlive
    /// this segment (the caller keeps them in fields dropped before it).
    pub fn steal_queue(&self, p: u32) -> QueueView {
        let off = self.layout.steal_queue(p);
        // SAFETY: the header and STEAL_SLOTS zero-filled (or previously used)
        // slots lie inside the mapping (layout); STEAL_SLOTS is a power of
        // two, the same for every process of this layout version.
        unsafe {
            QueueView::from_raw(
                self.at::<StealHeader>(off),
                self.at::<TaskSlot>(off + size_of::<StealHeader>() as u64),
                STEAL_SLOTS,
            )
        }
    }

    /// Transfer slot `s` of process `p`: its description, chunk words,
    /// copier words and helper words.
    pub fn xfer(&self, p: u32, s: u32) -> XferView<'_> {
        let l = &self.layout;
        let off = l.xfer(p, s);
        let words = (MAX_CHUNKS / 64) as usize;
        // SAFETY: every part is atomics only, inside the mapping and aligned
        // (layout: the slot stride is a multiple of 128, the desc 128 bytes,
        // then 8-byte chunk words, 4-byte copier words, 8-byte helper words).
        unsafe {
            XferView {
                desc: self.at::<XferDesc>(off).as_ref(),
                chunk_words: std::slice::from_raw_parts(
                    self.at::<AtomicU64>(off + 128).as_ptr(),
                    words,
                ),
                copiers: std::slice::from_raw_parts(
                    self.at::<AtomicU32>(l.xfer_copiers(p, s)).as_ptr(),
                    MAX_CHUNKS as usize,
                ),
                helper_words: std::slice::from_raw_parts(
                    self.at::<AtomicU64>(l.xfer_helpers(p, s)).as_ptr(),
                    l.mask_words() as usize,
                ),
            }
        }
    }

    /// Staging (`from` -> `to`) header.
    pub fn staging(&self, from: u32, to: u32) -> &StagingHeader {
        // SAFETY: atomics only; inside the mapping (layout).
        unsafe {
            self.at::<StagingHeader>(self.layout.staging(from, to))
                .as_ref()
        }
    }

    /// First byte of slot `seq % slots` of staging (`from` -> `to`).
    /// Who may touch those bytes is decided by the staging protocol.
    pub fn staging_slot(&self, from: u32, to: u32, seq: u64) -> *mut u8 {
        let g = &self.layout.geometry;
        let off = self.layout.staging(from, to)
            + size_of::<StagingHeader>() as u64
            + (seq % u64::from(g.staging_slots)) * g.staging_slot_size;
        self.at::<u8>(off).as_ptr()
    }

    /// Whether this process can read the creator's memory with
    /// `process_vm_readv` (cross-memory attach).
    pub fn probe_cma(&self) -> bool {
        let h = self.header();
        let mut v = 0u64;
        // SAFETY: `v` is a local of 8 writable bytes.
        let ok = unsafe {
            sys::cma_read(
                h.creator_pid as u32,
                h.cma_probe_addr,
                (&mut v as *mut u64).cast(),
                8,
            )
        };
        ok.is_ok() && v == CMA_PROBE_VALUE
    }
}

/// Serves the segment's descriptor to local peers until they all have it.
#[derive(Debug)]
pub struct FdServer {
    listener: Arc<UnixListener>,
    thread: Option<JoinHandle<()>>,
}

impl FdServer {
    /// Listen on a fresh abstract unix address and hand `seg`'s descriptor
    /// to `peers` connecting processes of our uid. Returns the server and
    /// the address's name, to publish through the bootstrap.
    pub fn start(seg: &NodeSegment, peers: u32) -> Result<(Self, Vec<u8>), SegmentError> {
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!("tessel-seg-{}-{nonce:x}", sys::pid()).into_bytes();
        let addr = SocketAddr::from_abstract_name(&name).map_err(os("abstract socket address"))?;
        let listener = Arc::new(UnixListener::bind_addr(&addr).map_err(os("bind segment socket"))?);
        let serving = listener.clone();
        let fd = seg.fd.try_clone().map_err(os("dup"))?;
        let uid = sys::euid();
        let thread = std::thread::Builder::new()
            .name("tessel-fd-server".into())
            .spawn(move || {
                let mut served = 0;
                while served < peers {
                    let Ok((stream, _)) = serving.accept() else {
                        return; // shut down by Drop, or the socket failed
                    };
                    if sys::peer_uid(&stream).ok() != Some(uid) {
                        continue; // not one of ours: drop the connection
                    }
                    if sys::send_fd(&stream, fd.as_raw_fd()).is_ok() {
                        served += 1;
                    }
                }
            })
            .map_err(os("spawn fd server"))?;
        Ok((
            Self {
                listener,
                thread: Some(thread),
            },
            name,
        ))
    }

    /// Wait until every peer has received the descriptor (or the server
    /// failed), then stop serving.
    pub fn finish(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Connect to the server named `name` and receive the segment.
    pub fn fetch(name: &[u8]) -> Result<NodeSegment, SegmentError> {
        let addr = SocketAddr::from_abstract_name(name).map_err(os("abstract socket address"))?;
        let stream = UnixStream::connect_addr(&addr).map_err(os("connect to segment owner"))?;
        let fd = sys::recv_fd(&stream).map_err(os("receive segment descriptor"))?;
        NodeSegment::open(fd)
    }
}

impl Drop for FdServer {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            if !t.is_finished() {
                // SAFETY: we hold the listener, so its fd is open; shutdown
                // only makes the thread's accept() return an error.
                unsafe {
                    libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
                }
            }
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(nlocal: u32) -> NodeSegment {
        NodeSegment::create(Geometry {
            nlocal,
            ring_cells: 64,
            staging_slots: 2,
            staging_slot_size: 4096,
        })
        .expect("memfd segment")
    }

    /// 512-byte blocks the segment's file holds.
    fn blocks(seg: &NodeSegment) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let f = std::fs::File::from(seg.fd.try_clone().unwrap());
        f.metadata().unwrap().blocks()
    }

    #[test]
    fn a_place_is_read_back_once_published() {
        let seg = segment(3);
        assert_eq!(seg.place(1), None);
        let p = Place::new([4, 4, 0, 0, u32::MAX]);
        let cpus = CpuMask::of([4, 5, 70, 1023]);
        seg.publish_place(1, p, &cpus, true);
        assert_eq!(seg.place(1), Some(p));
        assert!(seg.takes_boards(1));
        assert_eq!(seg.cpus(1), cpus);
        assert_eq!(seg.wait_place(1), p);
        assert_eq!(seg.place(0), None);
        assert_eq!(seg.place(2), None);
        seg.publish_place(2, p, &CpuMask::of([5, 6]), false);
        assert!(!seg.takes_boards(2));
        assert_eq!(seg.cpus(1).union(seg.cpus(2)).count(), 5);
    }

    #[test]
    fn first_touch_allocates_exactly_the_consumers_rings_and_staging() {
        let seg = segment(3);
        let before = blocks(&seg);
        seg.first_touch(1);
        let l = seg.layout();
        let expected = (3 * (l.ring_stride + l.staging_stride) + l.steal_stride) / 512;
        assert_eq!(blocks(&seg) - before, expected);
        // Touching again allocates nothing more, and data is untouched.
        seg.first_touch(1);
        assert_eq!(blocks(&seg) - before, expected);
        assert_eq!(seg.staging(0, 1).freed.load(Ordering::Relaxed), 0);
    }
}
