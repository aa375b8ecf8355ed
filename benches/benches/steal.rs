//! The production SPMC steal queue: the owner's push and take on one
//! thread, and an owner pushing 100k copy tasks while a stealer takes them
//! (tasks the owner finds no room for it counts as run itself).
//!
//! `cargo bench -p benches --bench steal`

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shm_engine::layout::CopyTask;
use shm_engine::queue::spmc::{OwnedQueue, PushError, Steal};

const TASKS: u64 = 100_000;
const SLOTS: u32 = 64;

fn task(i: u64) -> CopyTask {
    CopyTask::new(i, i as u32, i * 1024, i * 1024, 1024)
}

fn single_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("steal_queue_push_pop_one_thread");
    g.throughput(Throughput::Elements(1));
    let mut q = OwnedQueue::new(SLOTS);
    let (mut owner, stealer) = q.split();
    g.bench_function("push_pop", |b| {
        b.iter(|| {
            owner.push(task(1)).unwrap();
            black_box(owner.pop().unwrap());
        })
    });
    g.bench_function("push_steal", |b| {
        b.iter(|| {
            owner.push(task(1)).unwrap();
            black_box(stealer.steal());
        })
    });
    g.finish();
}

fn owner_and_stealer() {
    let (mut owner, stealer) = OwnedQueue::new(SLOTS).into_split();
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            loop {
                match stealer.steal() {
                    Steal::Success(t) => {
                        black_box(t);
                    }
                    Steal::Empty if done.load(Ordering::Acquire) => break,
                    _ => std::hint::spin_loop(),
                }
            }
        });
        for i in 0..TASKS {
            if let Err(PushError::Full(t)) = owner.push(task(i)) {
                black_box(t);
            }
        }
        done.store(true, Ordering::Release);
        while let Some(t) = owner.pop() {
            black_box(t);
        }
    });
}

fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("steal_queue_100k_tasks_owner_and_stealer");
    g.throughput(Throughput::Elements(TASKS));
    g.sample_size(20);
    g.bench_function("tessel", |b| b.iter(owner_and_stealer));
    g.finish();
}

criterion_group!(benches, single_thread, two_threads);
criterion_main!(benches);
