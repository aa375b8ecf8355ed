//! Single-producer single-consumer ring of [`Cell`]s: the control ring
//! (i -> j) of the node segment.
//!
//! FastForward's ring: each slot says itself whether it holds the next
//! message (a stamp in the slot's first line), so a consumer polls the
//! line its next message arrives in, not a shared index on another line
//! (which would move two lines per message). The producer owns `tail`,
//! the consumer owns `head`; the producer keeps a private copy of `head`
//! and re-reads the shared one only when its copy says full.
//!
//! Index invariant: `head <= tail <= head + cells`; both grow without bound
//! and the slot of index `i` is `i & (cells - 1)`. A slot's stamp is
//! `i + 1` once index `i` is written; until then it holds an older index's
//! stamp (or 0 in a fresh ring), never `i + 1`.
//!
//! Synchronisation (each pair is a SYNC POINT):
//! - SP1: the producer writes the cell, then stores the slot's stamp
//!   `i + 1` (Release); the consumer loads the stamp (Acquire), and reads
//!   the cell once it is `head + 1`.
//! - SP2: the consumer copies the cell out, then stores `head` (Release);
//!   the producer loads `head` (Acquire) before overwriting that slot.
//!   The consumer stores `head` once per half ring, and whenever a pop
//!   finds the ring empty: a producer that outpaces its consumer then
//!   reads `head` (a line the consumer writes) once per half ring instead
//!   of once per cell, and gets room in batches it can fill while the
//!   consumer works on the other half. A consumer that stops popping has
//!   either found the ring empty (and handed everything back) or leaves
//!   cells in it (which it pops later, as it must anyway).
//!
//! Only a cell's used bytes are copied ([`Cell::used`]): an inline
//! message of up to 8 bytes stays in the slot's first line.
//!
//! The header also holds the ring's `polled` word, which belongs to the
//! doorbell protocol ([`crate::doorbell`], SP5): both ends reach it here.
//!
//! The storage is either a ring inside the node segment ([`RingView::from_raw`])
//! or an [`OwnedRing`] on the heap (tests, loom models, benches): the same
//! code runs on both.

use core::marker::PhantomData;
use core::ptr::NonNull;
use std::sync::Arc;

use crate::layout::{CELL_HEADER, Cell, RingHeader, RingSlot};
use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell};

/// Ordering of the producer's publishing store (SP1). The
/// `spsc_publish` mutation weakens it so loom-tests can prove loom notices.
#[cfg(not(tessel_mutation = "spsc_publish"))]
const PUBLISH: Ordering = Ordering::Release;
#[cfg(tessel_mutation = "spsc_publish")]
const PUBLISH: Ordering = Ordering::Relaxed;

/// Where a ring lives: its header and `cells` slots. Copyable; it does not
/// own the memory.
#[derive(Clone, Copy, Debug)]
pub struct RingView {
    header: NonNull<RingHeader>,
    slots: NonNull<RingSlot>,
    mask: u64,
}

// SAFETY: a RingView is an address; all shared state behind it is accessed
// through atomics (indices, stamps) or through the SP1/SP2 protocol (cells).
unsafe impl Send for RingView {}

impl RingView {
    /// # Safety
    /// - `header` points to a `RingHeader` and `slots` to `cells` slots, all
    ///   valid for the lifetime of every handle made from this view;
    /// - `cells` is a power of two and equal for every process that opens
    ///   this ring;
    /// - at most one [`Producer`] and one [`Consumer`] exist for the ring
    ///   across all processes (the engine guarantees it by construction:
    ///   ring (i -> j) is produced only by i and consumed only by j).
    pub unsafe fn from_raw(
        header: NonNull<RingHeader>,
        slots: NonNull<RingSlot>,
        cells: u32,
    ) -> Self {
        debug_assert!(cells.is_power_of_two());
        Self {
            header,
            slots,
            mask: u64::from(cells) - 1,
        }
    }

    fn header(&self) -> &RingHeader {
        // SAFETY: valid for the view's lifetime (from_raw contract); the
        // header contains only atomics, so a shared reference is sound even
        // while another process writes them.
        unsafe { self.header.as_ref() }
    }

    fn slot(&self, index: u64) -> &RingSlot {
        // SAFETY: `index & mask < cells` and the slots are valid (from_raw).
        unsafe { self.slots.add((index & self.mask) as usize).as_ref() }
    }

    fn capacity(&self) -> u64 {
        self.mask + 1
    }
}

/// The producing end of a ring: `Send`, not `Sync`, not `Clone`. `'a` is
/// the lifetime of the ring's memory.
#[derive(Debug)]
pub struct Producer<'a> {
    ring: RingView,
    tail: u64,
    head_cache: u64,
    _owner: Option<Arc<OwnedRing>>,
    _memory: PhantomData<&'a RingHeader>,
}

/// The consuming end of a ring: `Send`, not `Sync`, not `Clone`.
#[derive(Debug)]
pub struct Consumer<'a> {
    ring: RingView,
    head: u64,
    /// The `head` last stored (SP2): cells below it are the producer's.
    released: u64,
    _owner: Option<Arc<OwnedRing>>,
    _memory: PhantomData<&'a RingHeader>,
}

/// The ring had no free cell; the cell was not written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

impl Producer<'_> {
    /// Take the producing role of `ring`, resuming from its shared indices.
    ///
    /// # Safety
    /// No other `Producer` of this ring exists in any process, and the ring's
    /// memory outlives the handle.
    pub unsafe fn new(ring: RingView) -> Self {
        let tail = ring.header().tail.load(Ordering::Relaxed);
        let head_cache = ring.header().head.load(Ordering::Acquire);
        Self {
            ring,
            tail,
            head_cache,
            _owner: None,
            _memory: PhantomData,
        }
    }

    /// Append a copy of `cell`, or report [`Full`].
    #[inline]
    pub fn push(&mut self, cell: &Cell) -> Result<(), Full> {
        if self.tail - self.head_cache == self.ring.capacity() {
            // SP2: Acquire pairs with the consumer's Release of `head`.
            self.head_cache = self.ring.header().head.load(Ordering::Acquire);
            if self.tail - self.head_cache == self.ring.capacity() {
                return Err(Full);
            }
        }
        let slot = self.ring.slot(self.tail);
        slot.cell.with_mut(|p| {
            // SAFETY: slot `tail` is not readable by the consumer until the
            // stamp store below (SP1) and was released by it (SP2); `used`
            // bytes lie inside both cells.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    (cell as *const Cell).cast::<u8>(),
                    p.cast::<u8>(),
                    cell.used(),
                )
            }
        });
        self.tail += 1;
        // SP1: publish the cell.
        slot.stamp.store(self.tail, PUBLISH);
        // Where a new producer would resume; no consumer reads it.
        self.ring.header().tail.store(self.tail, Ordering::Relaxed);
        Ok(())
    }

    /// The ring's `polled` word ([`crate::doorbell::must_ring`]).
    #[inline]
    pub fn polled(&self) -> &AtomicU32 {
        &self.ring.header().polled
    }

    /// Whether a push would succeed now (re-reads `head` only when the
    /// cached copy says full).
    #[inline]
    pub fn has_room(&mut self) -> bool {
        if self.tail - self.head_cache == self.ring.capacity() {
            // SP2, as in push.
            self.head_cache = self.ring.header().head.load(Ordering::Acquire);
        }
        self.tail - self.head_cache < self.ring.capacity()
    }
}

impl Consumer<'_> {
    /// Take the consuming role of `ring`, resuming from its shared indices.
    ///
    /// # Safety
    /// No other `Consumer` of this ring exists in any process, and the ring's
    /// memory outlives the handle.
    pub unsafe fn new(ring: RingView) -> Self {
        let head = ring.header().head.load(Ordering::Relaxed);
        Self {
            ring,
            head,
            released: head,
            _owner: None,
            _memory: PhantomData,
        }
    }

    /// The ring's `polled` word ([`crate::doorbell::start_polling`]).
    #[inline]
    pub fn polled(&self) -> &AtomicU32 {
        &self.ring.header().polled
    }

    /// Remove and return the oldest cell, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<Cell> {
        let slot = self.ring.slot(self.head);
        // SP1: Acquire pairs with the producer's Release of the stamp.
        if slot.stamp.load(Ordering::Acquire) != self.head + 1 {
            self.release();
            return None;
        }
        let mut cell = Cell::default();
        slot.cell.with(|p| {
            let (src, dst) = (p.cast::<u8>(), (&mut cell as *mut Cell).cast::<u8>());
            // SAFETY: index `head` was published by SP1; the producer will
            // not overwrite it before our head store (SP2). The header
            // first, which says how many bytes the producer wrote (`used`,
            // at most a cell).
            unsafe {
                core::ptr::copy_nonoverlapping(src, dst, CELL_HEADER);
                let used = cell.used();
                core::ptr::copy_nonoverlapping(
                    src.add(CELL_HEADER),
                    dst.add(CELL_HEADER),
                    used - CELL_HEADER,
                );
            }
        });
        self.head += 1;
        if self.head - self.released >= self.batch() {
            self.release();
        }
        Some(cell)
    }

    /// Cells handed back to the producer at once: half the ring.
    fn batch(&self) -> u64 {
        self.ring.capacity().div_ceil(2)
    }

    /// Hand the cells copied out so far back to the producer (SP2).
    #[inline]
    fn release(&mut self) {
        if self.released != self.head {
            self.released = self.head;
            self.ring.header().head.store(self.head, Ordering::Release);
        }
    }
}

/// A ring on the heap, for tests, models and benchmarks.
#[derive(Debug)]
pub struct OwnedRing {
    header: Box<RingHeader>,
    slots: Box<[RingSlot]>,
}

// SAFETY: the slots are reached only through the one Producer and one
// Consumer that `split`/`into_split` hand out, which follow SP1/SP2.
unsafe impl Sync for OwnedRing {}
// SAFETY: as above; the boxes are plain heap memory.
unsafe impl Send for OwnedRing {}

impl OwnedRing {
    /// A ring of `cells` cells (a power of two).
    pub fn new(cells: u32) -> Self {
        assert!(cells.is_power_of_two(), "ring size must be a power of two");
        Self {
            header: Box::default(),
            slots: (0..cells)
                .map(|_| RingSlot {
                    stamp: AtomicU64::new(0),
                    cell: UnsafeCell::new(Cell::default()),
                })
                .collect(),
        }
    }

    /// Split into the two ends, borrowing the ring.
    pub fn split(&mut self) -> (Producer<'_>, Consumer<'_>) {
        let view = self.view();
        // SAFETY: `&mut self` makes these the only two handles, and their
        // lifetime is tied to the borrow.
        unsafe { (Producer::new(view), Consumer::new(view)) }
    }

    /// Split into two ends that keep the ring alive themselves, for threads
    /// that need `'static` handles.
    pub fn into_split(self) -> (Producer<'static>, Consumer<'static>) {
        let owner = Arc::new(self);
        let view = owner.view();
        // SAFETY: `self` was moved in, so these are the only two handles;
        // each holds an Arc, so the memory outlives both.
        let (mut p, mut c) = unsafe { (Producer::new(view), Consumer::new(view)) };
        p._owner = Some(owner.clone());
        c._owner = Some(owner);
        (p, c)
    }

    fn view(&self) -> RingView {
        let cells = self.slots.len() as u32;
        // SAFETY: the boxes are valid while `self` lives; `cells` is a power
        // of two (checked in new).
        unsafe {
            RingView::from_raw(
                NonNull::from(&*self.header),
                NonNull::from(&self.slots[0]),
                cells,
            )
        }
    }
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::*;
    use crate::layout::CellKind;

    fn cell(n: u64) -> Cell {
        let mut c = Cell::new(CellKind::Inline);
        c.tag = n;
        c
    }

    #[test]
    fn fifo_and_full() {
        let mut ring = OwnedRing::new(4);
        let (mut p, mut c) = ring.split();
        for i in 0..4 {
            p.push(&cell(i)).unwrap();
        }
        assert_eq!(p.push(&cell(9)), Err(Full));
        assert_eq!(c.pop().unwrap().tag, 0);
        // Half the ring goes back at once: one cell copied out is not
        // the producer's yet, two are.
        assert_eq!(p.push(&cell(9)), Err(Full));
        assert_eq!(c.pop().unwrap().tag, 1);
        p.push(&cell(4)).unwrap();
        p.push(&cell(5)).unwrap();
        assert_eq!(p.push(&cell(9)), Err(Full));
        for i in 2..6 {
            assert_eq!(c.pop().unwrap().tag, i);
        }
        assert!(c.pop().is_none());
    }

    #[test]
    fn a_pop_that_finds_nothing_hands_back_what_it_copied() {
        let mut ring = OwnedRing::new(4);
        let (mut p, mut c) = ring.split();
        p.push(&cell(0)).unwrap();
        assert_eq!(c.pop().unwrap().tag, 0);
        // Less than half the ring: still the consumer's until it finds
        // the ring empty.
        assert!(c.pop().is_none());
        for i in 1..5 {
            p.push(&cell(i)).unwrap();
        }
        assert_eq!(p.push(&cell(9)), Err(Full));
    }

    #[test]
    fn a_cell_carries_its_used_bytes_only() {
        use crate::layout::INLINE_CAPACITY;
        let mut ring = OwnedRing::new(1);
        let (mut p, mut c) = ring.split();
        // A full inline cell, then a 3-byte one in the same slot: the
        // second arrives with its 3 bytes, not the first one's rest.
        let mut full = cell(1);
        full.len = INLINE_CAPACITY as u32;
        full.payload.fill(0xab);
        p.push(&full).unwrap();
        assert_eq!(c.pop(), Some(full));
        let mut short = cell(2);
        short.len = 3;
        short.payload[..3].copy_from_slice(b"abc");
        p.push(&short).unwrap();
        let got = c.pop().unwrap();
        assert_eq!((got.tag, got.len, &got.payload[..3]), (2, 3, &b"abc"[..]));
        assert!(got.payload[3..].iter().all(|&b| b == 0));
        // Other kinds use their payload words: all of it travels.
        let mut rts = Cell::new(CellKind::Rts);
        rts.set_rts_pieces(7);
        rts.payload[INLINE_CAPACITY - 1] = 9;
        p.push(&rts).unwrap();
        assert_eq!(c.pop(), Some(rts));
        // A corrupt length reads no further than the cell.
        let mut bad = cell(3);
        bad.len = u32::MAX;
        p.push(&bad).unwrap();
        assert_eq!(c.pop().unwrap().len, u32::MAX);
        assert!(c.pop().is_none());
    }

    #[test]
    fn threads_keep_order() {
        let mut ring = OwnedRing::new(8);
        let (mut p, mut c) = ring.split();
        const N: u64 = 100_000;
        std::thread::scope(|s| {
            s.spawn(move || {
                for i in 0..N {
                    while p.push(&cell(i)).is_err() {
                        std::thread::yield_now();
                    }
                }
            });
            let mut next = 0;
            while next < N {
                match c.pop() {
                    Some(x) => {
                        assert_eq!(x.tag, next);
                        next += 1;
                    }
                    None => std::thread::yield_now(),
                }
            }
        });
    }
}
