//! loom models of the production library lock's protocol
//! (`shm_engine::lock::LockWord`): exclusion (LK1), serial mode's waits
//! (LK2), and in threaded mode no sleeper left unwoken (LK3), also across
//! the switch from serial to threaded mode.
//!
//! Threads take and release the lock with the production code
//! (`LockWord::lock` and `unlock`, which `shm_engine::lock::Lock` calls
//! with the futex and `sched_yield`), here with a [`Futex`] stand-in and
//! loom's yield, and each adds one to a counter in a loom cell while it
//! holds the lock: two holders at once are a data race loom reports, and
//! a lost wake-up leaves a sleeper parked forever, a deadlock loom
//! reports. (The stand-in is stricter than the kernel's futex: it wakes
//! one sleeper, never on its own.)
//!
//! Serial mode's light way (LK4): the serial caller takes the lock with
//! `LockWord::try_light` while an any-time caller takes it with
//! `LockWord::lock_any_time`; loom has no asymmetric fences, so both
//! sides run a full fence where production runs a compiler fence and a
//! `membarrier` (`shm_engine::sync::light_fence`).
//!
//! With `TESSEL_MUTATION=lock_release` a release in threaded mode is a
//! plain store, which reads no sleeper: `mutation_is_caught` asserts that
//! loom finds the stranded one. With `TESSEL_MUTATION=lock_any_time` an
//! any-time caller does not wait for a light holder, and
//! `any_time_mutation_is_caught` asserts that loom finds the two holders.
#![cfg(tessel_loom)]
// Under a mutation, the models it does not concern are left out.
#![cfg_attr(tessel_mutation, allow(dead_code, unused_imports))]

use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{Ordering, fence};
use loom::thread;
use loom_tests::Futex;
use shm_engine::lock::LockWord;

#[derive(Default)]
struct Shared {
    lock: LockWord,
    futex: Futex,
    count: UnsafeCell<u32>,
}

// SAFETY: threads touch the count only under the lock, which is what the
// models check (loom reports two holders as a race on the cell).
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// Take the lock with the production loop (`LockWord::lock`), the
    /// futex stand-in for the sleep.
    fn lock(&self) {
        self.lock.lock(|_| self.futex.wait(), thread::yield_now);
    }

    fn unlock(&self) {
        self.lock.unlock(|_| self.futex.wake());
    }

    /// Open the light way, as the first taker of the word does in
    /// production (where the kernel has `membarrier`).
    fn open_light(&self) {
        self.lock();
        self.lock.settle_light(|| true);
        self.unlock();
    }

    /// One call of the serial caller: the light way where it can, else
    /// the word.
    fn serial_call(&self) {
        let light = self.lock.try_light();
        if !light {
            self.lock();
        }
        // SAFETY: under the lock.
        self.count.with_mut(|c| unsafe { *c += 1 });
        if light {
            self.lock.unlock_light();
        } else {
            self.unlock();
        }
    }

    /// Take the lock as an any-time caller (the heavy fence: a full one).
    fn lock_any_time(&self) -> bool {
        self.lock.lock_any_time(
            |_| self.futex.wait(),
            thread::yield_now,
            || fence(Ordering::SeqCst),
        )
    }

    /// One call of an any-time caller.
    fn any_time_call(&self) {
        let announced = self.lock_any_time();
        // SAFETY: under the lock.
        self.count.with_mut(|c| unsafe { *c += 1 });
        self.lock.unlock_any_time(announced, |_| self.futex.wake());
    }

    /// One call: take the lock, count, release.
    fn call(&self) {
        self.lock();
        // SAFETY: under the lock; a second holder would be the race loom
        // reports.
        self.count.with_mut(|c| unsafe { *c += 1 });
        self.unlock();
    }

    /// The count; the caller holds the lock.
    fn count(&self) -> u32 {
        // SAFETY: the caller holds the lock.
        self.count.with(|c| unsafe { *c })
    }
}

/// Threaded mode from the start: two threads contend, a waiter sleeps.
fn threaded() {
    loom_tests::check(|| {
        let s = Arc::new(Shared::default());
        s.lock();
        s.lock.set_threaded();
        s.unlock();
        let t: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.call())
            })
            .collect();
        for t in t {
            t.join().unwrap();
        }
        s.lock();
        assert_eq!(s.count(), 2);
        s.unlock();
    });
}

#[cfg(not(tessel_mutation))]
#[test]
fn threaded_lock_excludes_and_wakes_every_sleeper() {
    threaded();
}

/// A holder switches to threaded mode while another thread calls: it
/// waits in serial mode, or starts after the switch and sleeps, and is
/// not stranded. (With a third thread, the serial mode's yield-and-retry
/// loops exceed loom's bound on branches.)
#[cfg(not(tessel_mutation))]
#[test]
fn switching_to_threaded_mode_strands_no_waiter() {
    loom_tests::check(|| {
        let s = Arc::new(Shared::default());
        let switcher = {
            let s = s.clone();
            thread::spawn(move || {
                s.lock();
                s.lock.set_threaded();
                // SAFETY: under the lock.
                s.count.with_mut(|c| unsafe { *c += 1 });
                s.unlock();
            })
        };
        s.call();
        switcher.join().unwrap();
        s.lock();
        assert_eq!(s.count(), 2);
        s.unlock();
    });
}

#[cfg(tessel_mutation = "lock_release")]
#[test]
fn mutation_is_caught() {
    let caught = std::panic::catch_unwind(threaded).is_err();
    assert!(
        caught,
        "loom did not notice a release that reads no sleeper"
    );
}

/// The serial caller and an any-time caller at once, the light way open:
/// never both hold the lock.
fn light_and_any_time() {
    loom_tests::check(|| {
        let s = Arc::new(Shared::default());
        s.open_light();
        let any_time = {
            let s = s.clone();
            thread::spawn(move || s.any_time_call())
        };
        s.serial_call();
        any_time.join().unwrap();
        s.lock();
        assert_eq!(s.count(), 2);
        s.unlock();
    });
}

#[cfg(not(tessel_mutation))]
#[test]
fn light_holder_and_any_time_caller_exclude_each_other() {
    light_and_any_time();
}

/// The serial caller's first call opens the light way (under the word)
/// while an any-time caller comes, which may find it shut before it takes
/// the word and open after; the serial caller's second call takes the
/// light way.
#[cfg(not(tessel_mutation))]
#[test]
fn opening_the_light_way_while_an_any_time_caller_comes() {
    loom_tests::check(|| {
        let s = Arc::new(Shared::default());
        let any_time = {
            let s = s.clone();
            thread::spawn(move || s.any_time_call())
        };
        s.lock();
        s.lock.settle_light(|| true);
        // SAFETY: under the lock.
        s.count.with_mut(|c| unsafe { *c += 1 });
        s.unlock();
        s.serial_call();
        any_time.join().unwrap();
        s.lock();
        assert_eq!(s.count(), 3);
        s.unlock();
    });
}

/// An any-time caller switches to threaded mode while the serial caller
/// calls twice: the second call, if it comes after the switch, takes the
/// word, and a threaded caller after the switch excludes it.
#[cfg(not(tessel_mutation))]
#[test]
fn switching_to_threaded_mode_closes_the_light_way() {
    loom_tests::check(|| {
        let s = Arc::new(Shared::default());
        s.open_light();
        let switcher = {
            let s = s.clone();
            thread::spawn(move || {
                let announced = s.lock_any_time();
                s.lock.set_threaded();
                s.lock.unlock_any_time(announced, |_| s.futex.wake());
                s.call();
            })
        };
        s.serial_call();
        switcher.join().unwrap();
        s.lock();
        assert_eq!(s.count(), 2);
        s.unlock();
    });
}

#[cfg(tessel_mutation = "lock_any_time")]
#[test]
fn any_time_mutation_is_caught() {
    let caught = std::panic::catch_unwind(light_and_any_time).is_err();
    assert!(
        caught,
        "loom did not notice an any-time caller beside a light holder"
    );
}
