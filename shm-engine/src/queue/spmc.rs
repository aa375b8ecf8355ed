//! Single-producer multi-consumer steal queue of [`CopyTask`]s: the queue
//! each process owns in the node segment and posts chunks of large
//! transfers on, for itself and for any idle local process to take.
//!
//! A bounded ring with a sequence word per slot (Vyukov's bounded MPMC
//! queue, with the producer side reduced to a single owner that needs no
//! CAS). The owner pushes at `tail`; everyone, the owner included, takes at
//! `head` by claiming it with a CAS. A slot's sequence word says whether it
//! is free for the owner's next lap, holds a published task, or is still
//! being read by the process that claimed it.
//!
//! The owner never waits for consumers ("the producer keeps writing,
//! consumers catch up"): when the slot at `tail` is not free (the ring is
//! full, or the process that claimed that slot one lap ago is still
//! copying the task out), [`Owner::push`] fails at once and hands the task
//! back ([`PushError::Full`]); the owner then runs that copy itself. No task
//! is lost and none is run twice.
//!
//! Index invariants (`cap` slots, a power of two; `lap(i) = i & !(cap - 1)`;
//! indices grow without bound, u64 never wraps in practice):
//! - `head <= tail`: a CAS moves `head` past index `i` only after seeing
//!   task `i` published;
//! - the task of index `i` lives in slot `i & (cap - 1)`;
//! - that slot's sequence word is `lap(i)` while the slot is free for index
//!   `i`, `lap(i) + 1` while it holds the published task `i`, and
//!   `lap(i) + cap` (free for index `i + cap`) once the claimer of `i` has
//!   copied the task out. Zero-filled memory is thus an empty queue.
//!
//! Synchronisation (each pair is a SYNC POINT):
//! - SQ1: the owner writes the task, then stores the slot's sequence
//!   `lap + 1` (Release); a taker loads the sequence (Acquire), claims
//!   `head` with a CAS, then reads the task.
//! - SQ2: the taker copies the task out, then stores the sequence
//!   `lap + cap` (Release); the owner loads the sequence (Acquire) before
//!   overwriting the slot.
//! - SQ3: the owner role: dropping an [`Owner`] stores the role word 0
//!   (Release) after its last tail store; [`Owner::claim`] CASes it 0 -> 1
//!   (Acquire) before reading `tail`.
//!
//! The CAS on `head` itself carries no data (the sequence words do), so it
//! is Relaxed.
//!
//! The storage is either a queue inside the node segment
//! ([`QueueView::from_raw`]) or an [`OwnedQueue`] on the heap (tests, loom
//! models): the same code runs on both.

use core::marker::PhantomData;
use core::ptr::NonNull;
use std::sync::Arc;

use crate::layout::{CopyTask, StealHeader};
use crate::sync::{AtomicU64, Ordering, UnsafeCell};

/// Ordering of a taker's load of the slot sequence before its claim (SQ1).
/// The `spmc_claim` mutation weakens it so loom-tests can prove loom
/// notices.
#[cfg(not(tessel_mutation = "spmc_claim"))]
const CLAIM: Ordering = Ordering::Acquire;
#[cfg(tessel_mutation = "spmc_claim")]
const CLAIM: Ordering = Ordering::Relaxed;

/// One slot of a steal queue: its sequence word, the task and the task's
/// hint, on one 64-byte line.
#[repr(C)]
#[derive(Debug, Default)]
pub struct TaskSlot {
    /// See the module's index invariants.
    seq: AtomicU64,
    task: UnsafeCell<CopyTask>,
    /// A word the owner attaches to the task, written with it (before the
    /// SQ1 Release) and readable by a taker *before* it claims the task
    /// ([`Stealer::steal_if`]), because it is an atomic: a stale read is
    /// harmless, the claim then fails.
    hint: AtomicU64,
    _pad: u64,
}

#[cfg(not(tessel_loom))]
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<TaskSlot>() == 64);
    assert!(offset_of!(TaskSlot, task) == 8);
    assert!(offset_of!(TaskSlot, hint) == 48);
};

/// What a push that could not place its task returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushError {
    /// The slot at the tail is not free yet; here is the task back, for the
    /// owner to run itself.
    Full(CopyTask),
}

/// The answer of a steal attempt (as crossbeam-deque's `Steal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steal {
    /// Nothing published at the head.
    Empty,
    /// Lost a race with another taker; trying again may succeed.
    Retry,
    /// The task is ours to run, and no one else's.
    Success(CopyTask),
}

impl Steal {
    /// The task, if the steal succeeded.
    pub fn success(self) -> Option<CopyTask> {
        match self {
            Steal::Success(t) => Some(t),
            _ => None,
        }
    }
}

/// Where a steal queue lives: its header and `cap` slots. Copyable; it does
/// not own the memory.
#[derive(Clone, Copy, Debug)]
pub struct QueueView {
    header: NonNull<StealHeader>,
    slots: NonNull<TaskSlot>,
    mask: u64,
}

// SAFETY: a QueueView is an address; all shared state behind it is reached
// through atomics (indices, sequences) or through SQ1/SQ2 (tasks).
unsafe impl Send for QueueView {}

impl QueueView {
    /// # Safety
    /// - `header` points to a `StealHeader` and `slots` to `cap` slots, all
    ///   zero-filled or left by earlier handles of this queue, and valid for
    ///   the lifetime of every handle made from this view;
    /// - `cap` is a power of two, at least 2, and equal for every process
    ///   that opens this queue.
    pub unsafe fn from_raw(
        header: NonNull<StealHeader>,
        slots: NonNull<TaskSlot>,
        cap: u32,
    ) -> Self {
        debug_assert!(cap.is_power_of_two() && cap >= 2);
        Self {
            header,
            slots,
            mask: u64::from(cap) - 1,
        }
    }

    fn header(&self) -> &StealHeader {
        // SAFETY: valid for the view's lifetime (from_raw contract); the
        // header holds only atomics, so a shared reference is sound while
        // other processes write them.
        unsafe { self.header.as_ref() }
    }

    fn slot(&self, index: u64) -> &TaskSlot {
        // SAFETY: `index & mask < cap` and the slots are valid (from_raw);
        // a slot is an atomic and an UnsafeCell accessed only through
        // `with`/`with_mut` under SQ1/SQ2.
        unsafe { self.slots.add((index & self.mask) as usize).as_ref() }
    }

    fn lap(&self, index: u64) -> u64 {
        index & !self.mask
    }

    fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Take the task at the head, if one is published and `want` accepts
    /// its hint.
    fn steal(&self, want: impl FnOnce(u64) -> bool) -> Steal {
        let header = self.header();
        let head = header.head.load(Ordering::Relaxed);
        let slot = self.slot(head);
        // SQ1: Acquire pairs with the owner's Release of the sequence.
        let seq = slot.seq.load(CLAIM);
        let published = self.lap(head) + 1;
        match seq.wrapping_sub(published) as i64 {
            0 => {}
            d if d < 0 => return Steal::Empty,
            _ => return Steal::Retry,
        }
        // Read after the Acquire above, so the hint is the one the owner
        // stored with the task of index `head` (or a later one, and then
        // the CAS below fails).
        if !want(slot.hint.load(Ordering::Relaxed)) {
            return Steal::Empty;
        }
        if header
            .head
            .compare_exchange(head, head + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return Steal::Retry;
        }
        let task = slot.task.with(|p| {
            // SAFETY: the sequence said "published for index `head`" (SQ1)
            // and our CAS made us its only claimer; the owner will not
            // overwrite it before our sequence store below (SQ2).
            unsafe { p.read() }
        });
        // SQ2: hand the slot to the owner's next lap.
        slot.seq
            .store(self.lap(head) + self.capacity(), Ordering::Release);
        Steal::Success(task)
    }

    /// Published but not yet claimed tasks, as seen now (an estimate while
    /// others push or steal).
    pub fn len(&self) -> u64 {
        let head = self.header().head.load(Ordering::Relaxed);
        let tail = self.header().tail.load(Ordering::Relaxed);
        tail.saturating_sub(head)
    }

    /// Whether [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The owning end of a steal queue: pushes, and takes its own tasks.
/// `Send`, not `Sync`, not `Clone`; at most one exists per queue across all
/// processes (the role word). `'a` is the lifetime of the queue's memory.
#[derive(Debug)]
pub struct Owner<'a> {
    queue: QueueView,
    tail: u64,
    _keep: Option<Arc<OwnedQueue>>,
    _memory: PhantomData<&'a StealHeader>,
}

impl<'a> Owner<'a> {
    /// Take the owner role of `queue`, resuming at its tail; `None` when
    /// another owner handle exists.
    ///
    /// # Safety
    /// The queue's memory outlives the handle (`'a`).
    pub unsafe fn claim(queue: QueueView) -> Option<Self> {
        let h = queue.header();
        // SQ3: Acquire pairs with the previous owner's Release in drop.
        h.owner
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        let tail = h.tail.load(Ordering::Relaxed);
        Some(Self {
            queue,
            tail,
            _keep: None,
            _memory: PhantomData,
        })
    }

    /// Publish `task` for any taker, or hand it back at once when the slot
    /// at the tail is not free ([`PushError::Full`]): the owner never waits
    /// for a consumer.
    #[inline]
    pub fn push(&mut self, task: CopyTask) -> Result<(), PushError> {
        self.push_hinted(task, 0)
    }

    /// [`push`](Self::push) with a hint word that takers may read before
    /// claiming ([`Stealer::steal_if`]).
    #[inline]
    pub fn push_hinted(&mut self, task: CopyTask, hint: u64) -> Result<(), PushError> {
        let q = &self.queue;
        let slot = q.slot(self.tail);
        let lap = q.lap(self.tail);
        // SQ2: Acquire pairs with the last claimer's Release of the sequence.
        if slot.seq.load(Ordering::Acquire) != lap {
            return Err(PushError::Full(task));
        }
        slot.task.with_mut(|p| {
            // SAFETY: the sequence says the slot is free for index `tail`
            // (its last claimer is done with it, SQ2), and no taker reads it
            // before the sequence store below (SQ1).
            unsafe { p.write(task) }
        });
        slot.hint.store(hint, Ordering::Relaxed);
        // SQ1: publish the task.
        slot.seq.store(lap + 1, Ordering::Release);
        self.tail += 1;
        q.header().tail.store(self.tail, Ordering::Relaxed);
        Ok(())
    }

    /// Take the oldest published task, as a stealer would; `None` when the
    /// queue is empty.
    #[inline]
    pub fn pop(&mut self) -> Option<CopyTask> {
        loop {
            match self.queue.steal(|_| true) {
                Steal::Success(t) => return Some(t),
                Steal::Empty => return None,
                Steal::Retry => crate::sync::spin_hint(),
            }
        }
    }

    /// A stealer handle of the same queue, living as long as this handle's
    /// memory.
    pub fn stealer(&self) -> Stealer<'a> {
        Stealer {
            queue: self.queue,
            _keep: self._keep.clone(),
            _memory: PhantomData,
        }
    }
}

impl Drop for Owner<'_> {
    fn drop(&mut self) {
        // SQ3: the tail stores above happen before the next claim.
        self.queue.header().owner.store(0, Ordering::Release);
    }
}

/// A taking end of a steal queue: any number of them, in any process.
#[derive(Clone, Debug)]
pub struct Stealer<'a> {
    queue: QueueView,
    _keep: Option<Arc<OwnedQueue>>,
    _memory: PhantomData<&'a StealHeader>,
}

// SAFETY: `steal` takes `&self` and touches shared state only through
// atomics and SQ1/SQ2, which hold whatever thread calls it.
unsafe impl Sync for Stealer<'_> {}

impl Stealer<'_> {
    /// A stealer of `queue`.
    ///
    /// # Safety
    /// The queue's memory outlives the handle.
    pub unsafe fn new(queue: QueueView) -> Self {
        Self {
            queue,
            _keep: None,
            _memory: PhantomData,
        }
    }

    /// Try once to take the oldest published task.
    #[inline]
    pub fn steal(&self) -> Steal {
        self.queue.steal(|_| true)
    }

    /// Try once to take the oldest published task, but only if `want`
    /// accepts the hint the owner pushed it with; a refused task stays for
    /// others and the answer is [`Steal::Empty`] (nothing for this taker).
    #[inline]
    pub fn steal_if(&self, want: impl FnOnce(u64) -> bool) -> Steal {
        self.queue.steal(want)
    }

    /// Published but not yet claimed tasks (an estimate).
    pub fn len(&self) -> u64 {
        self.queue.len()
    }

    /// Whether [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// A steal queue on the heap, for tests, models and benchmarks.
#[derive(Debug)]
pub struct OwnedQueue {
    header: Box<StealHeader>,
    slots: Box<[TaskSlot]>,
}

// SAFETY: the slots are reached only through Owner and Stealer handles,
// which follow SQ1/SQ2; the role word keeps the owner unique.
unsafe impl Sync for OwnedQueue {}
// SAFETY: as above; the boxes are plain heap memory.
unsafe impl Send for OwnedQueue {}

impl OwnedQueue {
    /// An empty queue of `cap` slots (a power of two, at least 2).
    pub fn new(cap: u32) -> Self {
        assert!(
            cap.is_power_of_two() && cap >= 2,
            "queue size must be a power of two, at least 2"
        );
        Self {
            header: Box::default(),
            slots: (0..cap).map(|_| TaskSlot::default()).collect(),
        }
    }

    /// The owner and a stealer, borrowing the queue.
    pub fn split(&mut self) -> (Owner<'_>, Stealer<'_>) {
        let view = self.view();
        // SAFETY: `&mut self` ties both handles to the borrow, and no other
        // owner handle can exist during it, so the claim succeeds.
        unsafe {
            let owner = Owner::claim(view).expect("no other owner during &mut borrow");
            (owner, Stealer::new(view))
        }
    }

    /// An owner and a stealer that keep the queue alive themselves, for
    /// threads that need `'static` handles.
    pub fn into_split(self) -> (Owner<'static>, Stealer<'static>) {
        let keep = Arc::new(self);
        let view = keep.view();
        // SAFETY: `self` was moved in, so this is the first claim; each
        // handle holds an Arc, so the memory outlives both.
        let mut owner = unsafe { Owner::claim(view) }.expect("fresh queue has no owner");
        owner._keep = Some(keep);
        let stealer = owner.stealer();
        (owner, stealer)
    }

    fn view(&self) -> QueueView {
        let cap = self.slots.len() as u32;
        // SAFETY: the boxes are valid while `self` lives; `cap` is a power
        // of two, at least 2 (checked in new).
        unsafe {
            QueueView::from_raw(
                NonNull::from(&*self.header),
                NonNull::from(&self.slots[0]),
                cap,
            )
        }
    }
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::*;
    use crate::sync::AtomicU32;

    fn task(n: u64) -> CopyTask {
        CopyTask::new(n, n as u32, 0x1000 + n, 0x2000 + n, 1024)
    }

    #[test]
    fn fifo_full_and_wrap() {
        let mut q = OwnedQueue::new(4);
        let (mut owner, stealer) = q.split();
        assert_eq!(stealer.steal(), Steal::Empty);
        for i in 0..4 {
            owner.push(task(i)).unwrap();
        }
        assert_eq!(stealer.len(), 4);
        assert_eq!(owner.push(task(9)), Err(PushError::Full(task(9))));
        assert_eq!(stealer.steal(), Steal::Success(task(0)));
        owner.push(task(4)).unwrap();
        assert_eq!(owner.pop(), Some(task(1)));
        for i in 2..5 {
            assert_eq!(stealer.steal().success(), Some(task(i)));
        }
        assert_eq!(stealer.steal(), Steal::Empty);
        assert_eq!(owner.pop(), None);
        assert!(stealer.is_empty());
    }

    #[test]
    fn one_owner_at_a_time_and_resume() {
        let q = OwnedQueue::new(2);
        let view = q.view();
        // SAFETY: `q` outlives every handle of this test.
        let mut first = unsafe { Owner::claim(view) }.unwrap();
        // SAFETY: as above.
        assert!(unsafe { Owner::claim(view) }.is_none());
        first.push(task(1)).unwrap();
        drop(first);
        // SAFETY: as above.
        let mut second = unsafe { Owner::claim(view) }.unwrap();
        second.push(task(2)).unwrap();
        assert_eq!(second.pop(), Some(task(1)));
        assert_eq!(second.pop(), Some(task(2)));
    }

    #[test]
    fn zero_filled_memory_is_an_empty_queue() {
        use std::alloc::{Layout, alloc_zeroed, dealloc};
        let (hl, sl) = (
            Layout::new::<StealHeader>(),
            Layout::array::<TaskSlot>(8).unwrap(),
        );
        // SAFETY: both layouts have a non-zero size.
        let (h, s) = unsafe { (alloc_zeroed(hl), alloc_zeroed(sl)) };
        let (h, s) = (
            NonNull::new(h.cast::<StealHeader>()).unwrap(),
            NonNull::new(s.cast::<TaskSlot>()).unwrap(),
        );
        {
            // SAFETY: zeroed, valid until the dealloc below, which comes
            // after every handle is dropped; 8 is a power of two.
            let view = unsafe { QueueView::from_raw(h, s, 8) };
            // SAFETY: as above.
            let mut owner = unsafe { Owner::claim(view) }.unwrap();
            assert_eq!(owner.stealer().steal(), Steal::Empty);
            for i in 0..20 {
                owner.push(task(i)).unwrap();
                assert_eq!(owner.stealer().steal().success(), Some(task(i)));
            }
        }
        // SAFETY: allocated above with these layouts; no handle is left.
        unsafe {
            dealloc(h.as_ptr().cast(), hl);
            dealloc(s.as_ptr().cast(), sl);
        }
    }

    /// N tasks, several stealers and the owner taking too; every task is
    /// taken exactly once (tasks the owner could not push it runs itself).
    #[test]
    fn threads_take_each_task_once() {
        const N: u64 = 50_000;
        const STEALERS: usize = 3;
        let seen: Vec<AtomicU32> = (0..N).map(|_| AtomicU32::new(0)).collect();
        let take = |t: CopyTask| {
            assert_eq!(t, task(t.request));
            seen[t.request as usize].fetch_add(1, Ordering::Relaxed);
        };
        let mut q = OwnedQueue::new(8);
        let (mut owner, stealer) = q.split();
        let done = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..STEALERS {
                let stealer = stealer.clone();
                let (done, take) = (&done, &take);
                s.spawn(move || {
                    loop {
                        match stealer.steal() {
                            Steal::Success(t) => take(t),
                            Steal::Retry => {}
                            Steal::Empty if done.load(Ordering::Acquire) == 1 => {
                                break;
                            }
                            Steal::Empty => std::thread::yield_now(),
                        }
                    }
                });
            }
            for i in 0..N {
                if let Err(PushError::Full(t)) = owner.push(task(i)) {
                    take(t);
                }
                if i % 64 == 0
                    && let Some(t) = owner.pop()
                {
                    take(t);
                }
            }
            done.store(1, Ordering::Release);
            while let Some(t) = owner.pop() {
                take(t);
            }
        });
        for (i, n) in seen.iter().enumerate() {
            assert_eq!(n.load(Ordering::Relaxed), 1, "task {i}");
        }
    }
}
