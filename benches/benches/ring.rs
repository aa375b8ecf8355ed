//! The production SPSC control ring against `rtrb`, a well-known SPSC ring
//! crate, in the same run: same 128-byte cells, same two threads.
//!
//! `cargo bench -p benches --bench ring`

use std::hint::black_box;
use std::thread;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shm_engine::layout::{Cell, CellKind};
use shm_engine::queue::spsc::OwnedRing;

const MESSAGES: u64 = 100_000;
const CELLS: u32 = 64;

fn cell(i: u64) -> Cell {
    let mut c = Cell::new(CellKind::Inline);
    c.tag = i;
    c
}

fn tessel_transfer() {
    let (mut p, mut c) = OwnedRing::new(CELLS).into_split();
    let producer = thread::spawn(move || {
        for i in 0..MESSAGES {
            let x = cell(i);
            while p.push(&x).is_err() {
                std::hint::spin_loop();
            }
        }
    });
    let mut n = 0;
    while n < MESSAGES {
        if let Some(x) = c.pop() {
            black_box(x);
            n += 1;
        } else {
            std::hint::spin_loop();
        }
    }
    producer.join().unwrap();
}

fn rtrb_transfer() {
    let (mut p, mut c) = rtrb::RingBuffer::<Cell>::new(CELLS as usize);
    let producer = thread::spawn(move || {
        for i in 0..MESSAGES {
            let mut x = cell(i);
            loop {
                match p.push(x) {
                    Ok(()) => break,
                    Err(rtrb::PushError::Full(back)) => {
                        x = back;
                        std::hint::spin_loop();
                    }
                }
            }
        }
    });
    let mut n = 0;
    while n < MESSAGES {
        if let Ok(x) = c.pop() {
            black_box(x);
            n += 1;
        } else {
            std::hint::spin_loop();
        }
    }
    producer.join().unwrap();
}

fn single_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("push_pop_one_thread");
    g.throughput(Throughput::Elements(1));
    let mut ring = OwnedRing::new(CELLS);
    let (mut p, mut q) = ring.split();
    g.bench_function("tessel", |b| {
        b.iter(|| {
            p.push(&cell(1)).unwrap();
            black_box(q.pop().unwrap());
        })
    });
    let (mut rp, mut rq) = rtrb::RingBuffer::<Cell>::new(CELLS as usize);
    g.bench_function("rtrb", |b| {
        b.iter(|| {
            rp.push(cell(1)).unwrap();
            black_box(rq.pop().unwrap());
        })
    });
    g.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("transfer_100k_cells_two_threads");
    g.throughput(Throughput::Elements(MESSAGES));
    g.sample_size(20);
    g.bench_function("tessel", |b| b.iter(tessel_transfer));
    g.bench_function("rtrb", |b| b.iter(rtrb_transfer));
    g.finish();
}

criterion_group!(benches, single_thread, two_threads);
criterion_main!(benches);
