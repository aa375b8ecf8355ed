//! loom models of the production steal queue (`shm_engine::queue::spmc`)
//! and the completion set (`shm_engine::steal`).
//!
//! `each_task_is_taken_once`: the owner pushes three tasks into a queue of
//! two slots (so a push finds the ring full and the owner runs that task
//! itself) while two stealers steal; afterwards the owner takes what is
//! left. Stealers read each task's hint before claiming it, and the hint
//! they read is the one pushed with the task they get. Every task is taken exactly once, and loom's `UnsafeCell` tracking
//! reports any task read not ordered after its write or any slot
//! overwritten while a stealer still reads it.
//!
//! `fin_only_after_every_chunk`: a receiver posts two chunk tasks on its
//! queue, copies what it can take itself while a stealer copies the rest,
//! and sends FIN once the completion set is full; the sender then reuses
//! its buffer. The receiver reads the destination after seeing all chunk
//! bits, so a chunk copy not visible by then is a race loom reports; so is
//! a copier still reading the source when the sender reuses it. The
//! popcount of helpers equals the number of processes that copied.
//!
//! Mutations: `TESSEL_MUTATION=spmc_claim` makes a taker's load of
//! the slot sequence Relaxed; `TESSEL_MUTATION=chunk_done` makes
//! the chunk bit `fetch_or` Relaxed. The matching `mutation_is_caught` test
//! asserts that loom finds the failure.
//!
//! Both models bound preemptions at 3 unless `LOOM_MAX_PREEMPTIONS` says
//! otherwise, to stay well under a minute each.
#![cfg(tessel_loom)]
// Under a mutation, the models it does not concern are left out.
#![cfg_attr(tessel_mutation, allow(dead_code, unused_imports))]

use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU64;
use loom::thread;
use loom_tests::check;
use shm_engine::layout::CopyTask;
use shm_engine::queue::spmc::{OwnedQueue, PushError, Steal, Stealer};
use shm_engine::steal::Completion;

fn task(n: u64) -> CopyTask {
    CopyTask::new(n, n as u32, 100 + n, 200 + n, 8 + n)
}

/// The hint each task is pushed with.
fn hint_of(t: &CopyTask) -> u64 {
    t.request + 1000
}

/// Steal until the queue says empty; what a stealer took. Each claim goes
/// through `steal_if`, and the hint it read before claiming must be the
/// claimed task's.
fn steal_all(stealer: &Stealer<'_>, mut run: impl FnMut(CopyTask)) {
    loop {
        let mut seen = None;
        match stealer.steal_if(|h| {
            seen = Some(h);
            true
        }) {
            Steal::Success(t) => {
                assert_eq!(seen, Some(hint_of(&t)), "hint read before the claim");
                run(t)
            }
            Steal::Retry => thread::yield_now(),
            Steal::Empty => return,
        }
    }
}

fn queue_model() {
    check(|| {
        const ITEMS: u64 = 3;
        let (mut owner, stealer) = OwnedQueue::new(2).into_split();
        let stealers: Vec<_> = (0..2)
            .map(|_| {
                let stealer = stealer.clone();
                thread::spawn(move || {
                    let mut took = Vec::new();
                    steal_all(&stealer, |t| took.push(t));
                    took
                })
            })
            .collect();
        let mut took = Vec::new();
        for i in 0..ITEMS {
            if let Err(PushError::Full(t)) = owner.push_hinted(task(i), hint_of(&task(i))) {
                took.push(t); // the owner runs it itself
            }
        }
        while let Some(t) = owner.pop() {
            took.push(t);
        }
        for s in stealers {
            took.extend(s.join().unwrap());
        }
        took.sort_by_key(|t| t.request);
        let want: Vec<_> = (0..ITEMS).map(task).collect();
        assert_eq!(took, want, "every task taken exactly once, intact");
    });
}

/// One transfer of two chunks: source and destination buffers and the
/// completion words.
struct Transfer {
    src: [UnsafeCell<u64>; 2],
    dst: [UnsafeCell<u64>; 2],
    chunk_words: [AtomicU64; 1],
    helper_words: [AtomicU64; 1],
}

// SAFETY: the buffers are touched under the protocol the model checks
// (a chunk by its single taker; all of them by the receiver after it saw
// the set complete, by the sender after FIN, here the join); loom reports any race.
unsafe impl Sync for Transfer {}

impl Transfer {
    fn completion(&self) -> Completion<'_> {
        Completion::new(&self.chunk_words, &self.helper_words, 2)
    }

    /// Copy the chunk of `t` as process `me`, then mark it.
    fn copy(&self, t: CopyTask, me: u32) {
        let k = t.chunk as usize;
        // SAFETY: plain reads/writes of u64 cells; ordering is what loom
        // checks.
        let v = self.src[k].with(|p| unsafe { *p });
        // SAFETY: as above; chunk k has exactly one taker.
        self.dst[k].with_mut(|p| unsafe { *p = v });
        assert!(self.completion().mark(t.chunk, me), "chunk copied twice");
    }
}

const RECEIVER: u32 = 0;
const STEALER: u32 = 1;

fn fin_model() {
    check(|| {
        let x = Arc::new(Transfer {
            src: [UnsafeCell::new(10), UnsafeCell::new(11)],
            dst: [UnsafeCell::new(0), UnsafeCell::new(0)],
            chunk_words: [AtomicU64::new(0)],
            helper_words: [AtomicU64::new(0)],
        });
        let (mut owner, stealer) = OwnedQueue::new(2).into_split();
        let helper = {
            let x = x.clone();
            thread::spawn(move || {
                let mut copied = 0;
                steal_all(&stealer, |t| {
                    x.copy(t, STEALER);
                    copied += 1;
                });
                copied
            })
        };
        let receiver = {
            let x = x.clone();
            thread::spawn(move || {
                let mut copied = 0;
                for k in 0..2 {
                    if let Err(PushError::Full(t)) = owner.push_hinted(task(k), hint_of(&task(k))) {
                        x.copy(t, RECEIVER);
                        copied += 1;
                    }
                }
                while let Some(t) = owner.pop() {
                    x.copy(t, RECEIVER);
                    copied += 1;
                }
                while !x.completion().is_complete() {
                    thread::yield_now();
                }
                for k in 0..2 {
                    // SAFETY: every chunk is marked, so copied (SC1).
                    let v = x.dst[k].with(|p| unsafe { *p });
                    assert_eq!(v, 10 + k as u64);
                }
                (copied, x.completion().helpers())
            })
        };
        // The sender: FIN reaches it through a control ring, a Release /
        // Acquire pair like the join that stands for it here; then it
        // reuses its buffer. Only the stealer's chunk bit orders the
        // stealer's source reads before that.
        let (recv_copied, helpers) = receiver.join().unwrap();
        for cell in &x.src {
            // SAFETY: FIN says every copier is done with the source.
            cell.with_mut(|p| unsafe { *p = 0 });
        }
        let stolen = helper.join().unwrap();
        assert_eq!(recv_copied + stolen, 2);
        let copiers = u32::from(recv_copied > 0) + u32::from(stolen > 0);
        assert_eq!(helpers, copiers, "helper popcount counts the copiers");
    });
}

#[cfg(not(tessel_mutation = "spmc_claim"))]
#[test]
fn each_task_is_taken_once() {
    queue_model();
}

#[cfg(not(any(tessel_mutation = "spmc_claim", tessel_mutation = "chunk_done")))]
#[test]
fn fin_only_after_every_chunk() {
    fin_model();
}

#[cfg(tessel_mutation = "spmc_claim")]
#[test]
fn mutation_is_caught() {
    let caught = std::panic::catch_unwind(queue_model).is_err();
    assert!(
        caught,
        "loom did not notice a Relaxed claim in the steal queue"
    );
}

#[cfg(tessel_mutation = "chunk_done")]
#[test]
fn mutation_is_caught() {
    let caught = std::panic::catch_unwind(fin_model).is_err();
    assert!(caught, "loom did not notice a Relaxed chunk completion bit");
}
