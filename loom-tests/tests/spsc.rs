//! loom model of the production SPSC control ring (`shm_engine::queue::spsc`).
//!
//! A producer pushes more cells than the ring holds, so both the "full"
//! path (SP2, with the consumer's batched hand-back) and the "empty"
//! path (SP1) are explored; the consumer checks
//! order and contents. loom's `UnsafeCell` tracking reports any read of a
//! cell that is not ordered after its write.
//!
//! With `TESSEL_MUTATION=spsc_publish` the publishing store is
//! Relaxed, and `mutation_is_caught` asserts that loom finds the race.
#![cfg(tessel_loom)]

use loom::thread;
use shm_engine::layout::{Cell, CellKind, INLINE_CAPACITY};
use shm_engine::queue::spsc::OwnedRing;

/// A full inline cell: every byte of it travels.
fn cell(n: u64) -> Cell {
    let mut c = Cell::new(CellKind::Inline);
    c.tag = n;
    c.len = INLINE_CAPACITY as u32;
    c.payload[0] = n as u8;
    c.payload[INLINE_CAPACITY - 1] = !(n as u8);
    c
}

fn model() {
    loom::model(|| {
        // Four cells, handed back two at a time (or when a pop finds the
        // ring empty); five items make the producer wait for room.
        let (mut p, mut c) = OwnedRing::new(4).into_split();
        const ITEMS: u64 = 5;
        let producer = thread::spawn(move || {
            for i in 0..ITEMS {
                while p.push(&cell(i)).is_err() {
                    thread::yield_now();
                }
            }
        });
        let mut next = 0;
        while next < ITEMS {
            match c.pop() {
                Some(got) => {
                    assert_eq!(got, cell(next), "cells arrive whole and in order");
                    next += 1;
                }
                None => thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert!(c.pop().is_none());
    });
}

#[cfg(not(tessel_mutation = "spsc_publish"))]
#[test]
fn ring_is_fifo_and_race_free() {
    model();
}

#[cfg(tessel_mutation = "spsc_publish")]
#[test]
fn mutation_is_caught() {
    let caught = std::panic::catch_unwind(model).is_err();
    assert!(
        caught,
        "loom did not notice a Relaxed publish in the SPSC ring"
    );
}
