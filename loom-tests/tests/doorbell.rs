//! loom model of the production doorbell (`shm_engine::doorbell`) together
//! with the production ring: "publish, then ring; drain; no lost wake-up".
//!
//! Two senders each publish one cell in their ring to one receiver and ring
//! its bell. The receiver drains, visits flagged rings, and when it finds
//! nothing goes to sleep the way the engine does (`prepare_sleep`, then a
//! wait on a [`Futex`] stand-in). A sender that sees `SLEEPING` wakes it. A lost wake-up leaves the receiver parked forever, which loom
//! reports as a deadlock; a drained bit whose cell is not yet visible loses
//! the message the same way.
//!
//! With `TESSEL_MUTATION=doorbell_ring` the mask `fetch_or` is
//! Relaxed, and `mutation_is_caught` asserts that loom finds the failure.
//!
//! The second model adds polled rings (SP5): the receiver polls the ring
//! and its sender rings only when `must_ring` says so. With
//! `TESSEL_MUTATION=doorbell_poll` the sender skips SP5's fence, and
//! `poll_mutation_is_caught` asserts that loom finds the lost message.
#![cfg(tessel_loom)]
// Under a mutation, the models it does not concern are left out.
#![cfg_attr(tessel_mutation, allow(dead_code, unused_imports))]

use std::sync::Arc;

use loom::sync::atomic::{AtomicU32, AtomicU64};
use loom::thread;
use loom_tests::Futex;
use shm_engine::doorbell;
use shm_engine::layout::{Cell, CellKind};
use shm_engine::queue::spsc::{Consumer, OwnedRing};

struct Bell {
    bell: AtomicU32,
    masks: [AtomicU64; 1],
    futex: Futex,
}

fn model() {
    loom::model(|| {
        let bell = Arc::new(Bell {
            bell: AtomicU32::new(0),
            masks: [AtomicU64::new(0)],
            futex: Futex::default(),
        });
        let mut consumers = Vec::new();
        let mut senders = Vec::new();
        for s in 0..2u32 {
            let (mut p, c) = OwnedRing::new(2).into_split();
            consumers.push(c);
            let bell = bell.clone();
            senders.push(thread::spawn(move || {
                let mut cell = Cell::new(CellKind::Inline);
                cell.tag = u64::from(s);
                p.push(&cell).unwrap();
                if doorbell::ring(&bell.bell, &bell.masks, s) {
                    bell.futex.wake();
                }
            }));
        }
        let mut got = [false; 2];
        while !(got[0] && got[1]) {
            let mut flagged = Vec::new();
            doorbell::drain(&bell.bell, &bell.masks, |s| flagged.push(s));
            let mut any = false;
            for s in flagged {
                while let Some(cell) = consumers[s as usize].pop() {
                    assert_eq!(cell.tag, u64::from(s));
                    got[s as usize] = true;
                    any = true;
                }
            }
            if !any && doorbell::prepare_sleep(&bell.bell) {
                bell.futex.wait();
                doorbell::cancel_sleep(&bell.bell);
            }
        }
        for s in senders {
            s.join().unwrap();
        }
    });
}

/// A polled ring (SP5): the receiver polls the ring from the start, so
/// the sender's first cell may ring nothing. The receiver then runs the
/// engine's loop: poll, drain the doorbell (a ring that delivered through
/// it is polled again), and when idle stop polling, look once more, and
/// sleep. The sender publishes two cells, each followed by `must_ring`
/// and, if that says so, a ring and a wake-up. A cell published while the
/// receiver stops polling and that neither side notices leaves the
/// receiver asleep forever: a deadlock loom reports.
fn polled_model() {
    loom_tests::check(|| {
        let bell = Arc::new(Bell {
            bell: AtomicU32::new(0),
            masks: [AtomicU64::new(0)],
            futex: Futex::default(),
        });
        let (mut p, mut c) = OwnedRing::new(2).into_split();
        doorbell::start_polling(c.polled());
        let sender = {
            let bell = bell.clone();
            thread::spawn(move || {
                for t in 0..2 {
                    let mut cell = Cell::new(CellKind::Inline);
                    cell.tag = t;
                    p.push(&cell).unwrap();
                    if doorbell::must_ring(p.polled()) && doorbell::ring(&bell.bell, &bell.masks, 0)
                    {
                        bell.futex.wake();
                    }
                }
            })
        };
        let mut next = 0;
        let mut polling = true;
        let take = |c: &mut Consumer<'_>, next: &mut u64| {
            let mut any = false;
            while let Some(cell) = c.pop() {
                assert_eq!(cell.tag, *next, "cells arrive in order");
                *next += 1;
                any = true;
            }
            any
        };
        loop {
            let mut any = polling && take(&mut c, &mut next);
            let mut rang = false;
            doorbell::drain(&bell.bell, &bell.masks, |_| rang = true);
            if rang && take(&mut c, &mut next) {
                any = true;
                if !polling {
                    doorbell::start_polling(c.polled());
                    polling = true;
                }
            }
            if next == 2 {
                break;
            }
            if any {
                continue;
            }
            if polling {
                polling = false;
                doorbell::stop_polling(c.polled());
                if take(&mut c, &mut next) {
                    continue;
                }
            }
            if doorbell::prepare_sleep(&bell.bell) {
                bell.futex.wait();
                doorbell::cancel_sleep(&bell.bell);
            }
        }
        sender.join().unwrap();
    });
}

#[cfg(not(tessel_mutation = "doorbell_ring"))]
#[test]
fn no_message_or_wakeup_is_lost() {
    model();
}

/// Not under the mutations of the ring's publish or the doorbell's mask
/// (which this model notices too: their own models are checked for them)
/// nor of SP5 (`poll_mutation_is_caught`).
#[cfg(not(any(
    tessel_mutation = "spsc_publish",
    tessel_mutation = "doorbell_ring",
    tessel_mutation = "doorbell_poll"
)))]
#[test]
fn a_polled_ring_loses_no_message() {
    polled_model();
}

#[cfg(tessel_mutation = "doorbell_poll")]
#[test]
fn poll_mutation_is_caught() {
    let caught = std::panic::catch_unwind(polled_model).is_err();
    assert!(
        caught,
        "loom did not notice a sender that skips SP5's fence"
    );
}

#[cfg(tessel_mutation = "doorbell_ring")]
#[test]
fn mutation_is_caught() {
    let caught = std::panic::catch_unwind(model).is_err();
    assert!(caught, "loom did not notice a Relaxed doorbell mask update");
}
