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
//! plain store for the release. Taken with a plain store too (LK4), it
//! takes 9 ns against 13–16 with the `cmpxchg` on the same host.
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
//! - LK4 (serial mode, the light way): below `MPI_THREAD_MULTIPLE` the
//!   application's calls come one at a time, but the functions MPI lets
//!   any thread call at any time ("any-time" callers: `MPI_Session_init`,
//!   `MPI_Error_string`, ...) may come from another thread meanwhile. The
//!   serial caller takes the lock with no locked instruction: it stores
//!   `inside = 1`, passes the light side of an asymmetric fence (a
//!   compiler fence), and holds the lock if it then reads `heavy == 0`
//!   (Acquire) and serial mode still; otherwise it stores `inside = 0`
//!   and takes the word as in LK2. It releases with `inside = 0`
//!   (Release). An any-time caller announces itself (`heavy += 1`),
//!   passes the heavy side of the fence (`membarrier(2)`, which makes
//!   every running thread of the process execute a full fence), waits
//!   until it reads `inside == 0` (Acquire) and takes the word (the other
//!   way round where the light way may not be open yet); it releases the
//!   word, then withdraws (`heavy -= 1`, Release). The two fences together
//!   order like full fences on both sides (Dekker): either the serial
//!   caller sees the announcement, or the any-time caller sees `inside`.
//!   The light way is used only once a holder of the word registered the
//!   process for `membarrier` (`light`; where the kernel refuses, every
//!   call takes the word). Threaded mode is set only by an any-time
//!   caller, which excludes light holders; after it, nobody takes the
//!   light way, so the word alone excludes.
//!
//! With `TESSEL_MUTATION=lock_release` a release is a plain store in
//! threaded mode too, and loom finds the sleeper that is never woken.
//! With `TESSEL_MUTATION=lock_any_time` an any-time caller does not wait
//! for `inside == 0`, and loom finds two holders.

use crate::sync::{AtomicU32, Ordering, light_fence};

/// Nobody holds the lock.
pub const FREE: u32 = 0;
/// A thread holds the lock; nobody sleeps on it.
pub const HELD: u32 = 1;
/// A thread holds the lock, and others may sleep on the word's futex.
pub const CONTENDED: u32 = 2;

/// Whether the light way is open (LK4): not known yet, or not.
const LIGHT_UNKNOWN: u32 = 0;
const LIGHT_OPEN: u32 = 1;
const LIGHT_CLOSED: u32 = 2;

/// The protocol's state: the lock word, the mode and the light way's
/// words.
#[derive(Debug)]
pub struct LockWord {
    word: AtomicU32,
    threaded: AtomicU32,
    /// Whether the light way is open (`LIGHT_*`): set once, by a holder
    /// of the word.
    light: AtomicU32,
    /// 1 while the serial caller holds the lock the light way.
    inside: AtomicU32,
    /// Any-time callers taking or holding the lock.
    heavy: AtomicU32,
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
            light: AtomicU32::new(LIGHT_UNKNOWN),
            inside: AtomicU32::new(0),
            heavy: AtomicU32::new(0),
        }
    }

    /// A free lock in serial mode.
    #[cfg(tessel_loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(FREE),
            threaded: AtomicU32::new(0),
            light: AtomicU32::new(LIGHT_UNKNOWN),
            inside: AtomicU32::new(0),
            heavy: AtomicU32::new(0),
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

    /// From now on, threads may contend. Only a holder of the word that
    /// announced itself as an any-time caller may call this: a holder
    /// that took the lock before could release it with a plain store
    /// under a sleeper (LK3), and a light holder could be inside (LK4).
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

    /// The serial caller's light way in (LK4): `true` if it now holds
    /// the lock, to be released by [`LockWord::unlock_light`]; `false`
    /// if it must take the word ([`LockWord::lock`]).
    #[inline]
    pub fn try_light(&self) -> bool {
        if self.light.load(Ordering::Relaxed) != LIGHT_OPEN
            || self.threaded.load(Ordering::Relaxed) != 0
        {
            return false;
        }
        self.inside.store(1, Ordering::Relaxed);
        light_fence();
        // Serial mode is looked at again after the announcements: an
        // any-time caller that set threaded mode withdrew after it.
        if self.heavy.load(Ordering::Acquire) == 0 && self.threaded.load(Ordering::Relaxed) == 0 {
            return true;
        }
        self.inside.store(0, Ordering::Release);
        false
    }

    /// Release a lock taken the light way.
    #[inline]
    pub fn unlock_light(&self) {
        self.inside.store(0, Ordering::Release);
    }

    /// Open the light way, or find it closed, once: `register` prepares
    /// the heavy fence (`membarrier` registration) and says whether it
    /// can be had. Only a holder of the word may call this.
    pub fn settle_light(&self, register: impl FnOnce() -> bool) {
        if self.light.load(Ordering::Relaxed) == LIGHT_UNKNOWN {
            let open = if register() { LIGHT_OPEN } else { LIGHT_CLOSED };
            self.light.store(open, Ordering::Relaxed);
        }
    }

    /// Take the lock for an any-time caller (LK4), waiting as
    /// [`LockWord::lock`] does; `heavy_fence` is the heavy side of the
    /// fence. Returns whether the caller announced itself, which
    /// [`LockWord::unlock_any_time`] needs (not in threaded mode, where
    /// nobody takes the light way).
    pub fn lock_any_time(
        &self,
        sleep: impl Fn(&AtomicU32),
        pause: impl Fn(),
        heavy_fence: impl FnOnce(),
    ) -> bool {
        if self.threaded() {
            self.lock(sleep, pause);
            return false;
        }
        self.heavy.fetch_add(1, Ordering::SeqCst);
        let wait = || {
            pause();
            true
        };
        // Wait for the light holder before taking the word, so that the
        // serial caller, once out, takes the word for its next calls
        // instead of queuing behind a waiter that holds it. Where the
        // light way was not open yet, look again under the word: a holder
        // of the word opens it.
        if self.light.load(Ordering::Relaxed) == LIGHT_OPEN {
            self.shut_out_light(heavy_fence, wait);
            self.lock(sleep, &pause);
        } else {
            self.lock(sleep, &pause);
            self.shut_out_light(heavy_fence, wait);
        }
        true
    }

    /// [`LockWord::lock_any_time`] without waiting: `Some(announced)` if
    /// the lock was taken, `None` if someone holds it.
    pub fn try_lock_any_time(&self, heavy_fence: impl FnOnce()) -> Option<bool> {
        if self.threaded() {
            return self.try_lock().then_some(false);
        }
        self.heavy.fetch_add(1, Ordering::SeqCst);
        if self.try_lock() {
            if self.shut_out_light(heavy_fence, || false) {
                return Some(true);
            }
            // Serial mode (it changes only under the word): nobody sleeps.
            self.word.store(FREE, Ordering::Release);
        }
        self.heavy.fetch_sub(1, Ordering::Release);
        None
    }

    /// Announced: once the light way is open, make the
    /// announcement visible to the serial caller (`heavy_fence`) and wait
    /// while it holds the lock the light way, each turn asking `again`
    /// whether to go on waiting. Whether it holds it no longer.
    fn shut_out_light(&self, heavy_fence: impl FnOnce(), mut again: impl FnMut() -> bool) -> bool {
        if self.light.load(Ordering::Relaxed) != LIGHT_OPEN {
            return true;
        }
        heavy_fence();
        loop {
            if cfg!(tessel_mutation = "lock_any_time") || self.inside.load(Ordering::Acquire) == 0 {
                return true;
            }
            if !again() {
                return false;
            }
        }
    }

    /// Release a lock taken by an any-time caller that `announced`
    /// itself (the answer of [`LockWord::lock_any_time`]).
    #[inline]
    pub fn unlock_any_time(&self, announced: bool, wake: impl FnOnce(&AtomicU32)) {
        self.unlock(wake);
        if announced {
            self.heavy.fetch_sub(1, Ordering::Release);
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

    /// The heavy side of the light way's fence (LK4): `membarrier`, for
    /// which a holder of the word registered the process before the
    /// light way opened.
    fn heavy_fence() {
        if let Err(e) = sys::membarrier() {
            panic!("membarrier failed after the process registered for it: {e}");
        }
    }

    /// How a guard holds the lock (LK4).
    #[derive(Debug, Clone, Copy)]
    enum Hold {
        /// The serial caller's light way.
        Light,
        /// The word alone.
        Word,
        /// The word, by an any-time caller that announced itself.
        AnyTime,
    }

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

        /// Take the lock as the serial caller (below threaded mode, the
        /// application's calls, one at a time): the light way where it is
        /// open (LK4), else the word, waiting as the mode says (LK2, LK3).
        #[inline]
        pub fn lock(&self) -> LockGuard<'_, T> {
            if self.word.try_light() {
                return LockGuard::new(self, Hold::Light);
            }
            self.lock_word()
        }

        /// Take the word (LK2, LK3), and the first time find out whether
        /// the light way can open (LK4).
        #[cold]
        fn lock_word(&self) -> LockGuard<'_, T> {
            if !self.word.try_lock() {
                self.word
                    .lock(|word| sys::futex_wait(word, CONTENDED, NAP), sys::yield_now);
            }
            self.word.settle_light(sys::membarrier_register);
            LockGuard::new(self, Hold::Word)
        }

        /// Take the lock for a function that any thread may call at any
        /// time, also while the serial caller holds it (LK4).
        pub fn lock_any_time(&self) -> LockGuard<'_, T> {
            let announced = self.word.lock_any_time(
                |word| sys::futex_wait(word, CONTENDED, NAP),
                sys::yield_now,
                heavy_fence,
            );
            LockGuard::new(self, if announced { Hold::AnyTime } else { Hold::Word })
        }

        /// The lock if nobody holds it, taken as [`Lock::lock_any_time`]
        /// does.
        pub fn try_lock_any_time(&self) -> Option<LockGuard<'_, T>> {
            let announced = self.word.try_lock_any_time(heavy_fence)?;
            Some(LockGuard::new(
                self,
                if announced { Hold::AnyTime } else { Hold::Word },
            ))
        }

        /// The word if it is free (in threaded mode, where nobody takes
        /// the light way).
        #[inline]
        pub fn try_lock(&self) -> Option<LockGuard<'_, T>> {
            // Not `then_some`: it would build a guard, and drop it (a
            // release of someone else's hold) when the lock is taken.
            if self.word.try_lock() {
                Some(LockGuard::new(self, Hold::Word))
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
    pub struct LockGuard<'a, T>(&'a Lock<T>, Hold, PhantomData<&'a mut T>);

    impl<'a, T> LockGuard<'a, T> {
        /// The guard of a lock this thread just took.
        fn new(lock: &'a Lock<T>, hold: Hold) -> Self {
            Self(lock, hold, PhantomData)
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
            match self.1 {
                Hold::Light => self.0.word.unlock_light(),
                Hold::Word => self.0.word.unlock(sys::futex_wake),
                Hold::AnyTime => self.0.word.unlock_any_time(true, sys::futex_wake),
            }
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
        // The first take opened the light way (where the kernel has
        // `membarrier`): an any-time caller must not get in beside it.
        let g = lock.lock();
        assert!(lock.try_lock_any_time().is_none());
        assert!(
            lock.try_lock_any_time().is_none(),
            "the first refusal released it"
        );
        drop(g);
        assert!(lock.try_lock_any_time().is_some());
    }

    /// Threads that add under the lock lose no addition. In threaded
    /// mode, all take it as they like, one with `try_lock` where it can.
    /// In serial mode, one thread is the serial caller (the light way)
    /// and the others any-time callers, one with `try_lock_any_time`
    /// where it can (LK4, with the real `membarrier`). Some holds last
    /// long enough for waiters to sleep.
    #[test]
    fn threads_add_under_the_lock() {
        for threaded in [false, true] {
            let lock = Lock::new(0u64);
            // The first take opens the light way.
            drop(lock.lock());
            if threaded {
                let _g = lock.lock_any_time();
                lock.set_threaded();
            }
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let g = if threaded {
                            lock.try_lock()
                        } else {
                            lock.try_lock_any_time()
                        };
                        match g {
                            Some(mut g) => *g += 1,
                            None => *lock.lock_any_time() += 1,
                        }
                    }
                });
                for t in 0..3 {
                    let lock = &lock;
                    s.spawn(move || {
                        for i in 0..20_000 {
                            let mut g = if t == 0 {
                                lock.lock()
                            } else {
                                lock.lock_any_time()
                            };
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
