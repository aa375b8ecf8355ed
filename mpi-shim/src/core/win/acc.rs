//! The accumulate lock: what makes the accumulating operations on one
//! process's window memory atomic when more than one process applies
//! them.
//!
//! MPI-4.1 §12.7.1 makes accumulates (`MPI_Accumulate`,
//! `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`) to
//! the same location atomic with respect to each other. Each process of
//! a window (unless it is dynamic) keeps a lock word in its shared heap,
//! on a line of its own, which the processes of its node map with the
//! window memory. Whoever applies an accumulating operation to that
//! process's memory holds its lock during the read, combine and write:
//! a node peer that maps the memory applies its operations itself, at
//! once and without the target's participation, and the target applies
//! those that come as messages (from other nodes, or from a peer that
//! could not map the memory).
//!
//! The lock is held for the length of one combine (a few elements, or a
//! copy of the operation's bytes), so a waiter spins briefly and then
//! gives its core away, which keeps oversubscribed runs moving.

use std::ptr::NonNull;

use shm_engine::heap;
use shm_engine::sync::{AtomicU32, Ordering, spin_hint};

use crate::core::{Class, MpiError, MpiResult};

/// Spins before a waiter yields its core between tries.
const SPINS: u32 = 64;

/// Bytes of a lock's block: a line of its own (the heap's blocks are line
/// aligned), so that taking it does not disturb the window's data.
pub(super) const BLOCK: usize = 64;

/// One process's accumulate lock, in its shared heap: 0 free, 1 held.
#[repr(C)]
#[derive(Debug)]
pub(super) struct AccLock {
    word: AtomicU32,
}

impl AccLock {
    /// A free lock in a block of this process's shared heap, which
    /// [`AccLock::free`] returns.
    pub(super) fn alloc() -> MpiResult<NonNull<AccLock>> {
        let block = heap::alloc(BLOCK).map_err(|e| {
            MpiError::new(
                Class::NoMem,
                format!("cannot allocate a window's accumulate lock: {e}"),
            )
        })?;
        let lock = block.cast::<AccLock>();
        // SAFETY: a fresh block of BLOCK bytes, aligned for the word, that
        // no other process knows yet.
        unsafe {
            lock.as_ptr().write(AccLock {
                word: AtomicU32::new(0),
            })
        };
        Ok(lock)
    }

    /// Return the block of a lock from [`AccLock::alloc`].
    ///
    /// # Safety
    /// No process holds or takes the lock any more (the window's
    /// collective free passed its barrier).
    pub(super) unsafe fn free(lock: NonNull<AccLock>) -> MpiResult<()> {
        // SAFETY: the caller's promise; the block came from `heap::alloc`.
        unsafe { heap::free(lock.cast()) }.map_err(|e| MpiError::new(Class::Intern, e.to_string()))
    }

    /// Hold the lock until the guard drops.
    pub(super) fn hold(&self) -> AccGuard<'_> {
        let mut tries = 0u32;
        while self
            .word
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            tries += 1;
            if tries < SPINS {
                spin_hint();
            } else {
                // The holder may be waiting for this core.
                std::thread::yield_now();
            }
        }
        AccGuard(self)
    }
}

/// A held [`AccLock`]: released when dropped.
#[derive(Debug)]
pub(super) struct AccGuard<'a>(&'a AccLock);

impl Drop for AccGuard<'_> {
    fn drop(&mut self) {
        self.0.word.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_makes_read_combine_write_atomic_across_threads() {
        let lock = AccLock::alloc().unwrap();
        let mut sum = 0u64;
        let addr = (&mut sum as *mut u64 as usize, lock.as_ptr() as usize);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(move || {
                    // SAFETY: the lock lives until after the scope.
                    let lock = unsafe { &*(addr.1 as *const AccLock) };
                    for _ in 0..10_000 {
                        let _g = lock.hold();
                        let p = addr.0 as *mut u64;
                        // SAFETY: only holders of the lock touch `sum`,
                        // which outlives the scope.
                        unsafe { p.write_volatile(p.read_volatile() + 1) };
                    }
                });
            }
        });
        assert_eq!(sum, 40_000);
        // SAFETY: the threads are done with it.
        unsafe { AccLock::free(lock) }.unwrap();
    }
}
