//! loom model of the production flag board (`shm_engine::board`): the
//! protocol of intra-node collectives.
//!
//! `collectives_in_a_row`: two members run an exchange and `LINES`
//! broadcast steps in a row, posting values in their lines and reading the
//! other's (under loom an area has 4 lines, so a line is reused within
//! the model); the broadcast's reader acknowledges a step before it reads
//! it, as the library's bcast does. The steps start just before the sequence numbers wrap, and
//! either member may run ahead (the root of a broadcast does not wait for
//! its reader, up to `LINES - 1` steps) or arrive late: every read must
//! see the value posted for that very step, never one `LINES` steps
//! earlier or later, and loom reports any read racing with a write.
//!
//! `no_wakeup_is_lost`: a waiter that finds nothing posted goes to sleep
//! the engine's way (bell to `SLEEPING`, fence, last look at the flag,
//! futex); the poster fences after posting and wakes a sleeping bell. A
//! lost wake-up leaves the waiter parked forever, which loom reports.
//!
//! `retiring_spares_a_late_reader`: a member leaving the board marks it
//! while another still reads the line it marks.
//!
//! `data_buffers_are_reused_in_turn`: broadcasts of contributions too
//! large for a line, through the root's two data buffers (step `t` in
//! buffer `t % 2`, as `Board::data` places it; here loom cells, so that
//! loom sees every access). The reader acknowledges a step before it
//! copies it, as the library's bcast does, so the root may rewrite a
//! buffer only once the reader posted the step after: `may_post(t, true)`.
//!
//! With `TESSEL_MUTATION=board_post` the post's sequence store is Relaxed,
//! and `mutation_is_caught` asserts that loom finds the failure. With
//! `TESSEL_MUTATION=board_reuse` a data buffer may be rewritten once
//! everyone posted the step before the last one that used it, and
//! `reuse_mutation_is_caught` asserts that loom sees the write race the
//! reader's copy.
//!
//! The models bound preemptions at 3 unless `LOOM_MAX_PREEMPTIONS` says
//! otherwise.
#![cfg(tessel_loom)]
// Under a mutation, the models it does not concern are left out.
#![cfg_attr(tessel_mutation, allow(dead_code, unused_imports))]

use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU32;
use loom::thread;
use loom_tests::{Futex, check};
use shm_engine::board::{self, Area, Board, LINES};
use shm_engine::doorbell;

/// The step before the model's first: its three steps wrap around.
const BEFORE: u64 = u64::MAX - 1;

/// What member `m` contributes at step `t`.
fn value(m: usize, t: u64) -> [u8; 8] {
    (t ^ (m as u64) << 60).to_ne_bytes()
}

/// Member `me` runs `LINES + 1` steps, all posted in the line: an
/// exchange (each posts, then reads the other's post), then broadcasts
/// from member 0, which does not wait for its reader: it may run up to
/// `LINES - 1` steps ahead, and must wait before it reuses the
/// exchange's line while member 1 may still read it there. At each step
/// a member waits until it may post, posts, and checks what it reads.
fn member(areas: &Arc<[Area; 2]>, me: usize) {
    let refs: Vec<&Area> = areas.iter().collect();
    let b = Board::new(&refs, me);
    let other = 1 - me;
    let mut t = BEFORE;
    for step in 0..=LINES {
        t = t.wrapping_add(1);
        let bcast = step > 0;
        while !b.may_post(t, false) {
            thread::yield_now();
        }
        if bcast && me == 1 {
            // Acknowledge, then read the root's value, as `direct::bcast`
            // does (BP2 lets a member read step `t` until it posts
            // `t + 1`, and the root may run ahead meanwhile).
            while !b.posted(other, t) {
                thread::yield_now();
            }
            b.post(t, 0, &[]);
            let mut got = [0; 8];
            assert_eq!(b.read(other, t, &mut got), 8);
            assert_eq!(got, value(other, t), "member {me} reads step {t}");
            continue;
        }
        b.post(t, 8, &value(me, t));
        if bcast {
            continue;
        }
        while !b.posted(other, t) {
            thread::yield_now();
        }
        let mut got = [0; 8];
        assert_eq!(b.read(other, t, &mut got), 8);
        assert_eq!(got, value(other, t), "member {me} reads step {t}");
    }
}

fn collectives() {
    check(|| {
        let areas = Arc::new([Area::after(BEFORE), Area::after(BEFORE)]);
        let a = areas.clone();
        let peer = thread::spawn(move || member(&a, 1));
        member(&areas, 0);
        peer.join().unwrap();
    });
}

#[cfg(not(tessel_mutation))]
#[test]
fn no_wakeup_is_lost() {
    check(|| {
        let areas = Arc::new([Area::after(0), Area::after(0)]);
        let bell = Arc::new((AtomicU32::new(0), Futex::default()));
        let (a, w) = (areas.clone(), bell.clone());
        let poster = thread::spawn(move || {
            let refs: Vec<&Area> = a.iter().collect();
            let b = Board::new(&refs, 1);
            b.post(1, 1, &[7]);
            board::after_post();
            if board::wake_needed(&w.0) {
                doorbell::nudge(&w.0);
                w.1.wake();
            }
        });
        let refs: Vec<&Area> = areas.iter().collect();
        let b = Board::new(&refs, 0);
        while !b.posted(1, 1) {
            if doorbell::prepare_sleep(&bell.0) {
                if board::may_sleep([(b.seq_word(1, 1), 1)]) {
                    bell.1.wait();
                }
                doorbell::cancel_sleep(&bell.0);
            }
            thread::yield_now();
        }
        let mut got = [0];
        assert_eq!(b.read(1, 1, &mut got), 1);
        assert_eq!(got, [7]);
        poster.join().unwrap();
    });
}

/// A member that leaves the board marks the step after its last one
/// ([`Board::retire`]) without waiting for anyone: here member 0 exchanges
/// step 1, posts step 2 and retires at step `1 + LINES` (line 1 again) while member
/// 1 may still be reading its step 1 there. The retirement must not
/// disturb that read.
#[cfg(not(tessel_mutation))]
#[test]
fn retiring_spares_a_late_reader() {
    check(|| {
        let areas = Arc::new([Area::after(0), Area::after(0)]);
        let a = areas.clone();
        let early = thread::spawn(move || {
            let refs: Vec<&Area> = a.iter().collect();
            let b = Board::new(&refs, 0);
            b.post(1, 8, &value(0, 1));
            while !b.may_post(2, true) {
                thread::yield_now();
            }
            b.post(2, 8, &value(0, 2));
            b.retire(1 + LINES as u64);
        });
        let refs: Vec<&Area> = areas.iter().collect();
        let b = Board::new(&refs, 1);
        b.post(1, 8, &value(1, 1));
        while !b.posted(0, 1) {
            thread::yield_now();
        }
        let mut got = [0; 8];
        assert_eq!(b.read(0, 1, &mut got), 8);
        assert_eq!(got, value(0, 1));
        early.join().unwrap();
    });
}

#[cfg(not(tessel_mutation))]
#[test]
fn collectives_in_a_row() {
    collectives();
}

#[cfg(tessel_mutation = "board_post")]
#[test]
fn mutation_is_caught() {
    let caught = std::panic::catch_unwind(collectives).is_err();
    assert!(caught, "loom did not notice a Relaxed post on the board");
}

/// The root's two data buffers (`Board::data`'s, for steps `t % 2`).
struct Buffers([UnsafeCell<u64>; 2]);

// SAFETY: loom checks every access to the cells; that is the point.
unsafe impl Sync for Buffers {}

/// Three broadcasts through the root's data buffers, from just before
/// the sequence numbers wrap: the root (member 0) waits only until it
/// may rewrite the buffer (`may_post(t, true)`), writes, posts; the
/// reader waits for the post, acknowledges it with its own, then copies.
fn data_bcasts() {
    check(|| {
        let areas = Arc::new([Area::after(BEFORE), Area::after(BEFORE)]);
        let data = Arc::new(Buffers([UnsafeCell::new(0), UnsafeCell::new(0)]));
        let (a, d) = (areas.clone(), data.clone());
        let reader = thread::spawn(move || {
            let refs: Vec<&Area> = a.iter().collect();
            let b = Board::new(&refs, 1);
            let mut t = BEFORE;
            for _ in 0..3 {
                t = t.wrapping_add(1);
                while !b.posted(0, t) {
                    thread::yield_now();
                }
                b.post(t, 0, &[]);
                let got = d.0[(t % 2) as usize].with(|p| {
                    // SAFETY: loom reports a write racing this read.
                    unsafe { *p }
                });
                assert_eq!(
                    got,
                    u64::from_ne_bytes(value(0, t)),
                    "the reader copies step {t}"
                );
            }
        });
        let refs: Vec<&Area> = areas.iter().collect();
        let b = Board::new(&refs, 0);
        let mut t = BEFORE;
        for _ in 0..3 {
            t = t.wrapping_add(1);
            while !b.may_post(t, true) {
                thread::yield_now();
            }
            data.0[(t % 2) as usize].with_mut(|p| {
                // SAFETY: loom reports a read racing this write.
                unsafe { *p = u64::from_ne_bytes(value(0, t)) }
            });
            b.post(t, 8, &[]);
        }
        reader.join().unwrap();
    });
}

#[cfg(not(tessel_mutation))]
#[test]
fn data_buffers_are_reused_in_turn() {
    data_bcasts();
}

#[cfg(tessel_mutation = "board_reuse")]
#[test]
fn reuse_mutation_is_caught() {
    let caught = std::panic::catch_unwind(data_bcasts);
    let why = caught.expect_err("loom did not notice a data buffer rewritten too early");
    let why = loom_tests::panic_text(&*why);
    assert!(
        why.contains("Causality violation") || why.contains("the reader copies step"),
        "loom failed for another reason: {why}"
    );
}
