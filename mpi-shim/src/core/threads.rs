//! `MPI_THREAD_MULTIPLE`: threads that call MPI at once.
//!
//! The library's state stays behind one lock ([`super::state`]), but under
//! `MPI_THREAD_MULTIPLE` no blocking call holds it while it waits: a
//! receive, a send, a wait, a probe or a blocking collective starts its
//! operation under the lock, then waits with the lock released between
//! the turns of the progress driver (`mpich::wait_released`), and
//! finishes under it. A thread blocked in MPI never keeps another from
//! calling, and every thread's turn progresses every thread's operations:
//! the engine has one set of rings per process, whichever thread polls.
//!
//! Two rules keep the lock fair to the threads that want it:
//! - a thread that finds the lock taken wakes its holder, which may be
//!   asleep on the engine's bell in a waiting loop ([`Waker`]): the
//!   holder's sleep ends at once instead of at its timeout;
//! - a waiting thread that releases the lock between turns lets a queued
//!   thread take it before it takes it back ([`let_others_in`]).
//!
//! What still holds the lock while it waits: the creation of
//! communicators and windows (their context-id agreement), window
//! synchronization (fence, unlock, flush, complete, wait), buffer flushes
//! and `MPI_Finalize`. A thread in one of those delays the others' calls
//! until it ends; since every thread's turn progresses everything, the
//! others' operations move meanwhile, but their calls start only after.
//!
//! Below `MPI_THREAD_MULTIPLE` nothing here runs: one call holds the lock
//! from its start to its end, as a `SERIALIZED` library may.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};

use shm_engine::Waker;

/// Whether some session or the world model asked for
/// `MPI_THREAD_MULTIPLE`: from then on, for the rest of the process.
static MULTIPLE: AtomicBool = AtomicBool::new(false);

/// Wakes the thread that holds the lock, when it sleeps in the engine
/// (the process's one endpoint lives until exit: set once).
static WAKER: OnceLock<Waker> = OnceLock::new();

/// Threads blocked on the lock.
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// How many times a queued thread got the lock.
static HANDOFFS: AtomicUsize = AtomicUsize::new(0);

/// How many times a waiting thread gives the lock away at most, between
/// two of its turns, before taking it back.
const YIELDS_TO_QUEUED: u32 = 16;

/// From now on, threads may call MPI at once; `waker` ends the engine's
/// sleep of whichever thread holds the lock.
pub fn enable(waker: Waker) {
    let _ = WAKER.set(waker);
    MULTIPLE.store(true, Ordering::SeqCst);
}

/// Whether threads may call MPI at once.
pub fn multiple() -> bool {
    MULTIPLE.load(Ordering::Relaxed)
}

/// Take `lock`; under `MPI_THREAD_MULTIPLE`, wake its holder first if it
/// is taken. A poisoned lock is taken too: a call that panicked left the
/// state as a failed call does, and the process reports and ends anyway.
pub(super) fn take<T>(lock: &'static Mutex<T>) -> MutexGuard<'static, T> {
    if !multiple() {
        return lock.lock().unwrap_or_else(PoisonError::into_inner);
    }
    match lock.try_lock() {
        Ok(g) => return g,
        Err(TryLockError::Poisoned(p)) => return p.into_inner(),
        Err(TryLockError::WouldBlock) => {}
    }
    QUEUED.fetch_add(1, Ordering::SeqCst);
    if let Some(w) = WAKER.get() {
        w.wake();
    }
    let g = lock.lock().unwrap_or_else(PoisonError::into_inner);
    QUEUED.fetch_sub(1, Ordering::SeqCst);
    HANDOFFS.fetch_add(1, Ordering::SeqCst);
    g
}

/// Between two turns of a waiting loop, with the lock released: let a
/// thread queued on the lock take it before this one takes it back (the
/// standard library's lock does not queue fairly, and a waiting loop
/// would take it back at once). Returns at once when nobody is queued.
pub fn let_others_in() {
    if QUEUED.load(Ordering::SeqCst) == 0 {
        return;
    }
    let seen = HANDOFFS.load(Ordering::SeqCst);
    for _ in 0..YIELDS_TO_QUEUED {
        std::thread::yield_now();
        if HANDOFFS.load(Ordering::SeqCst) != seen || QUEUED.load(Ordering::SeqCst) == 0 {
            return;
        }
    }
}
