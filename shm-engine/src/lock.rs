//! A lock for a library's state whose release is a plain store while one
//! thread at a time calls the library, and a futex mutex once threads may
//! contend. `mpi-shim` holds its state behind one, taken by every MPI call:
//! below `MPI_THREAD_MULTIPLE` the application calls from one thread at a
//! time, and the release need not learn whether anyone sleeps.
//!
//! An uncontended `std::sync::Mutex` costs two locked instructions: a
//! `cmpxchg` to take it and an `xchg` to release it (the release must read
//! whether a thread sleeps). `MPI_Comm_rank`, a call that does nothing
//! but take the lock and read a field, took 16 ns with it and 10 ns with a
//! plain store for the release.
//!
//! The word is [`FREE`], [`HELD`] or [`CONTENDED`] (held, and a thread may
//! sleep on the word's futex). The rules, which `loom-tests/tests/lock.rs`
//! checks:
//! - LK1 (exclusion): a thread takes the lock by moving the word from
//!   `FREE` (Acquire), and releases it by making it `FREE` (Release), so
//!   the next holder sees everything the previous one wrote.
//! - LK2 (serial mode, the start): nobody sleeps. A thread that finds the
//!   lock taken yields and tries again, and the release is a plain store.
//!   (Below `MPI_THREAD_MULTIPLE` only the functions MPI lets any thread
//!   call at any time, or a program that breaks its thread level, wait.)
//! - LK3 (threaded mode): set once and for good, by the holder
//!   ([`LockWord::set_threaded`], Release). A waiter that sees it
//!   (Acquire) swaps `CONTENDED` in: if it read `FREE` it holds the lock,
//!   else it sleeps on the futex while the word reads `CONTENDED`. A
//!   release in threaded mode swaps `FREE` in and wakes the futex if it
//!   read `CONTENDED`.
//! - Why a plain-store release never strands a sleeper: a waiter sleeps
//!   only after it saw threaded mode, so the holder that set it took the
//!   lock before the waiter's swap (the flag's Release/Acquire). The
//!   holder at the swap is that one or a later one, and each of them sees
//!   the mode (its own write, or through LK1) and releases by swapping.
//!
//! With `TESSEL_MUTATION=lock_release` a release is a plain store in
//! threaded mode too, and loom finds the sleeper that is never woken.

use crate::sync::{AtomicU32, Ordering};

/// Nobody holds the lock.
pub const FREE: u32 = 0;
/// A thread holds the lock; nobody sleeps on it.
pub const HELD: u32 = 1;
/// A thread holds the lock, and others may sleep on the word's futex.
pub const CONTENDED: u32 = 2;

/// The protocol's state: the lock word and the mode.
#[derive(Debug)]
pub struct LockWord {
    word: AtomicU32,
    threaded: AtomicU32,
}

impl Default for LockWord {
    fn default() -> Self {
        Self::new()
    }
}

impl LockWord {
    /// A free lock in serial mode.
    #[cfg(not(tessel_loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(FREE),
            threaded: AtomicU32::new(0),
        }
    }

    /// A free lock in serial mode.
    #[cfg(tessel_loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(FREE),
            threaded: AtomicU32::new(0),
        }
    }

    /// Take the lock if it is free (LK1).
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.word
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Whether threads may contend (LK3).
    #[inline]
    pub fn threaded(&self) -> bool {
        self.threaded.load(Ordering::Acquire) != 0
    }

    /// From now on, threads may contend. Only the holder may call this: a
    /// holder that took the lock before could release it with a plain
    /// store under a sleeper (LK3).
    pub fn set_threaded(&self) {
        debug_assert_ne!(self.word.load(Ordering::Relaxed), FREE, "set by the holder");
        self.threaded.store(1, Ordering::Release);
    }

    /// Take the lock, waiting as the mode says: in serial mode `pause`
    /// (give the core away) and try again (LK2); in threaded mode announce
    /// a sleeper and, unless the lock was free, `sleep` on the word while
    /// it reads [`CONTENDED`] (spurious returns allowed) and try again
    /// (LK3). The system calls are the caller's, so that the loom models
    /// run this loop with stand-ins.
    pub fn lock(&self, sleep: impl Fn(&AtomicU32), pause: impl Fn()) {
        if self.try_lock() {
            return;
        }
        loop {
            if self.threaded() {
                if self.word.swap(CONTENDED, Ordering::Acquire) == FREE {
                    return;
                }
                sleep(&self.word);
            } else {
                pause();
                if self.try_lock() {
                    return;
                }
            }
        }
    }

    /// Release the lock; `wake` wakes every thread asleep on the word, if
    /// one may be.
    #[inline]
    pub fn unlock(&self, wake: impl FnOnce(&AtomicU32)) {
        if cfg!(tessel_mutation = "lock_release") || !self.threaded() {
            self.word.store(FREE, Ordering::Release);
        } else if self.word.swap(FREE, Ordering::Release) == CONTENDED {
            wake(&self.word);
        }
    }
}

#[cfg(not(tessel_loom))]
pub use imp::{Lock, LockGuard};

#[cfg(not(tessel_loom))]
mod imp {
    use std::marker::PhantomData;
    use std::time::Duration;

    use super::{CONTENDED, LockWord};
    use crate::sync::UnsafeCell;
    use crate::sys;

    /// Longest sleep on the futex before looking again (a wake ends it at
    /// once).
    const NAP: Duration = Duration::from_millis(100);

    /// `T` behind a [`LockWord`].
    #[derive(Debug)]
    pub struct Lock<T> {
        word: LockWord,
        value: UnsafeCell<T>,
    }

    // SAFETY: the lock hands `value` to one thread at a time (LK1), so a
    // `T` that may move between threads may be shared through it.
    unsafe impl<T: Send> Sync for Lock<T> {}

    impl<T> Lock<T> {
        /// `value`, behind a free lock in serial mode.
        pub const fn new(value: T) -> Self {
            Self {
                word: LockWord::new(),
                value: UnsafeCell::new(value),
            }
        }

        /// Take the lock, waiting as the mode says (LK2, LK3).
        #[inline]
        pub fn lock(&self) -> LockGuard<'_, T> {
            if self.word.try_lock() {
                return LockGuard::new(self);
            }
            self.lock_contended()
        }

        #[cold]
        fn lock_contended(&self) -> LockGuard<'_, T> {
            self.word
                .lock(|word| sys::futex_wait(word, CONTENDED, NAP), sys::yield_now);
            LockGuard::new(self)
        }

        /// The lock if it is free.
        #[inline]
        pub fn try_lock(&self) -> Option<LockGuard<'_, T>> {
            // Not `then_some`: it would build a guard, and drop it (a
            // release of someone else's hold) when the lock is taken.
            if self.word.try_lock() {
                Some(LockGuard::new(self))
            } else {
                None
            }
        }

        /// Whether threads may contend for the lock.
        #[inline]
        pub fn threaded(&self) -> bool {
            self.word.threaded()
        }

        /// From now on threads may contend for the lock (for good). Only
        /// the thread that holds it may call this (LK3).
        pub fn set_threaded(&self) {
            self.word.set_threaded();
        }
    }

    /// The lock, held: the value is the holder's. Shared and sent like
    /// the `&mut T` it stands for (the marker): a guard shared between
    /// threads gives each a `&T`, so it is `Sync` only for a `Sync` `T`.
    ///
    /// ```compile_fail
    /// fn shared<T: Sync>(_: &T) {}
    /// let lock = shm_engine::lock::Lock::new(std::cell::Cell::new(0));
    /// shared(&lock.lock()); // a Cell's guard is not Sync
    /// ```
    ///
    /// ```
    /// fn shared<T: Sync>(_: &T) {}
    /// let lock = shm_engine::lock::Lock::new(0u64);
    /// shared(&lock.lock());
    /// ```
    #[derive(Debug)]
    pub struct LockGuard<'a, T>(&'a Lock<T>, PhantomData<&'a mut T>);

    impl<'a, T> LockGuard<'a, T> {
        /// The guard of a lock this thread just took.
        fn new(lock: &'a Lock<T>) -> Self {
            Self(lock, PhantomData)
        }
    }

    impl<T> std::ops::Deref for LockGuard<'_, T> {
        type Target = T;
        #[inline]
        fn deref(&self) -> &T {
            // SAFETY: this guard holds the lock (LK1): nobody else reaches
            // the value until it drops.
            self.0.value.with(|p| unsafe { &*p })
        }
    }

    impl<T> std::ops::DerefMut for LockGuard<'_, T> {
        #[inline]
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: as for `deref`, and `&mut self` borrows the guard
            // exclusively.
            self.0.value.with_mut(|p| unsafe { &mut *p })
        }
    }

    impl<T> Drop for LockGuard<'_, T> {
        #[inline]
        fn drop(&mut self) {
            self.0.word.unlock(sys::futex_wake);
        }
    }
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::Lock;

    /// A taken lock refuses `try_lock` and stays taken.
    #[test]
    fn try_lock_leaves_a_taken_lock_taken() {
        let lock = Lock::new(());
        let g = lock.lock();
        assert!(lock.try_lock().is_none());
        assert!(lock.try_lock().is_none(), "the first refusal released it");
        drop(g);
        assert!(lock.try_lock().is_some());
    }

    /// Threads that add under the lock, one taking it with `try_lock`
    /// where it can, lose no addition, in both modes; some holds last
    /// long enough for waiters to sleep.
    #[test]
    fn threads_add_under_the_lock() {
        for threaded in [false, true] {
            let lock = Lock::new(0u64);
            if threaded {
                let _g = lock.lock();
                lock.set_threaded();
            }
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        match lock.try_lock() {
                            Some(mut g) => *g += 1,
                            None => *lock.lock() += 1,
                        }
                    }
                });
                for _ in 0..3 {
                    s.spawn(|| {
                        for i in 0..20_000 {
                            let mut g = lock.lock();
                            let v = *g;
                            if i % 1000 == 0 {
                                std::thread::sleep(std::time::Duration::from_micros(200));
                            }
                            *g = v + 1;
                        }
                    });
                }
            });
            assert_eq!(*lock.lock(), 80_000);
        }
    }
}
