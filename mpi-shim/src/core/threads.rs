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
//! Below `MPI_THREAD_MULTIPLE` only [`take`] runs, and finds the lock
//! free: one call holds it from its start to its end, as a `SERIALIZED`
//! library may. The application's calls take it with a plain store and
//! release it with another; only the functions MPI lets any thread call
//! at any time pay for excluding them ([`Caller`], `shm_engine::lock`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use shm_engine::Waker;
use shm_engine::lock::{Lock, LockGuard};

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
/// sleep of whichever thread holds the lock. Called by a call that holds
/// the library lock (a session or the world model asked for
/// `MPI_THREAD_MULTIPLE`), as switching the lock's mode requires.
pub fn enable(waker: Waker) {
    let _ = WAKER.set(waker);
    super::STATE.set_threaded();
}

/// Whether threads may call MPI at once: from the first request for
/// `MPI_THREAD_MULTIPLE` on, for the rest of the process.
pub fn multiple() -> bool {
    super::STATE.threaded()
}

/// Whether a blocking call waits holding the library lock: below
/// `MPI_THREAD_MULTIPLE`, and inside a callback (which runs under the lock
/// of the call that runs it). Otherwise it releases the lock between the
/// turns of its wait.
#[inline]
pub fn waits_hold_lock() -> bool {
    !multiple() || super::callback_runtime().is_some()
}

/// How a call takes the library lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The application's calls, one at a time below
    /// `MPI_THREAD_MULTIPLE`: they take the lock without a locked
    /// instruction (`shm_engine::lock`, LK4).
    Serial,
    /// The functions MPI lets any thread call at any time, whatever the
    /// thread level (`MPI_Session_init`, `MPI_Error_string`,
    /// `MPI_Error_class`, ...): they may run while the serial caller
    /// holds the lock, so they wait for it in a way that excludes the
    /// serial caller's (a `membarrier`, a system call). Also `MPI_Init`
    /// and `MPI_Init_thread`: only an any-time caller may switch the lock
    /// to threaded mode.
    AnyTime,
}

/// Take `lock` as `caller`: below `MPI_THREAD_MULTIPLE` as the lock's
/// protocol says for it; under it at once if it is free, else waking its
/// holder first.
pub(super) fn take<T>(lock: &'static Lock<T>, caller: Caller) -> LockGuard<'static, T> {
    if !multiple() {
        return match caller {
            Caller::Serial => lock.lock(),
            Caller::AnyTime => lock.lock_any_time(),
        };
    }
    if let Some(g) = lock.try_lock() {
        return g;
    }
    QUEUED.fetch_add(1, Ordering::SeqCst);
    if let Some(w) = WAKER.get() {
        w.wake();
    }
    let g = lock.lock();
    QUEUED.fetch_sub(1, Ordering::SeqCst);
    HANDOFFS.fetch_add(1, Ordering::SeqCst);
    g
}

/// Between two turns of a waiting loop, with the lock released: let a
/// thread queued on the lock take it before this one takes it back (the
/// library lock does not queue: a release wakes its sleepers, and a
/// waiting loop would take it back before they run). Returns at once
/// when nobody is queued.
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

/// The calling thread's number: unique in the process while it runs,
/// from 1 (`MPI_Is_thread_main` compares them without the lock).
pub fn number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}
