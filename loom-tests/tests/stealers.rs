//! loom model of the production stealer mask (`shm_engine::steal`) with the
//! production steal queue: "an idle stealer finds the task, or the owner
//! finds the stealer" (SM1).
//!
//! A stealer advertises itself, then looks at the owner's queue once, as
//! the engine's waiting loop does before it may sleep on its futex. The
//! owner pushes a task, then reads the mask to wake the idle processes it
//! finds. If neither saw the other, the stealer would sleep while a task
//! waits for it: the model asserts that this never happens.
//!
//! (Not run under the `spmc_claim` mutation, whose weakened claim makes any
//! steal a race.) With `TESSEL_MUTATION=stealer_mask` the two SeqCst fences are
//! gone, and `mutation_is_caught` asserts that loom finds the execution
//! where both look too early.
#![cfg(tessel_loom)]
// Under a mutation, the models it does not concern are left out.
#![cfg_attr(tessel_mutation, allow(dead_code, unused_imports))]

use std::sync::Arc;

use loom::sync::atomic::AtomicU64;
use loom::thread;
use shm_engine::layout::CopyTask;
use shm_engine::queue::spmc::{OwnedQueue, Steal};
use shm_engine::steal::{self, Snapshot};

const STEALER: u32 = 1;

fn mask_model() {
    loom::model(|| {
        let mask = Arc::new([AtomicU64::new(0)]);
        let (mut owner, stealer) = OwnedQueue::new(2).into_split();
        let idle = {
            let mask = mask.clone();
            thread::spawn(move || {
                steal::advertise(&mask[..], STEALER);
                loop {
                    match stealer.steal() {
                        Steal::Success(_) => return true,
                        Steal::Empty => return false,
                        Steal::Retry => thread::yield_now(),
                    }
                }
            })
        };
        owner.push(CopyTask::new(1, 0, 0, 0, 8)).expect("room");
        let seen = Snapshot::after_posting(&mask[..]).contains(STEALER);
        let took = idle.join().unwrap();
        assert!(
            took || seen,
            "the stealer missed the task and the owner missed the stealer"
        );
    });
}

#[cfg(not(any(tessel_mutation = "stealer_mask", tessel_mutation = "spmc_claim")))]
#[test]
fn idle_stealer_finds_the_task_or_is_found() {
    mask_model();
}

#[cfg(tessel_mutation = "stealer_mask")]
#[test]
fn mutation_is_caught() {
    let caught = std::panic::catch_unwind(mask_model).is_err();
    assert!(
        caught,
        "loom did not notice the stealer mask without its fences"
    );
}
