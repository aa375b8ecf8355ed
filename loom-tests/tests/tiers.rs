//! loom model of a tiered barrier: the production flag board
//! (`shm_engine::board`) with the production plan of whom each member
//! waits for (`shm_engine::tiers::barrier_plan` and `awaited`), the steps
//! the MPI layer's barrier takes on a board whose members sit in several
//! packages.
//!
//! `a_tiered_barrier_holds`: three members in two groups, {0, 1} and
//! {2}, so leaders 0 and 2. Each writes its own cell (a loom cell, so
//! loom sees every access), then runs the barrier: it waits for the
//! posts its plan names before its own post, posts, and (member 2)
//! waits for those named after. Member 2 then reads member 1's cell,
//! and checks that every member posted the step (which the library then
//! assumes without a look at the lines). Member 1 is no leader: what it wrote reaches
//! member 2 only through leader 0, which saw member 1's post before it
//! posted (T1), so the Release and Acquire of the two posts must chain.
//!
//! With `TESSEL_MUTATION=board_tiers` a leader posts without waiting for
//! its group, and `tiers_mutation_is_caught` asserts that loom sees a
//! read race a write, a cell read before it was written, or a member
//! leave before everyone posted.
//!
//! The models bound preemptions at 3 unless `LOOM_MAX_PREEMPTIONS` says
//! otherwise.
#![cfg(tessel_loom)]
// Under another mutation, the models here are left out.
#![cfg_attr(tessel_mutation, allow(dead_code, unused_imports))]

use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::thread;
use shm_engine::board::{Area, Board};
use shm_engine::locality::{Place, UNKNOWN};
use shm_engine::tiers::{self, Await, Tiers};

const MEMBERS: usize = 3;

/// Each member's cell: what it wrote before its barrier.
struct Cells([UnsafeCell<u64>; MEMBERS]);

// SAFETY: loom checks every access to the cells; that is the point.
unsafe impl Sync for Cells {}

/// Members 0 and 1 in package 0, member 2 in package 8.
fn grouped() -> Tiers {
    let at = |package| Some(Place::new([UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN, package]));
    Tiers::of(&[at(0), at(0), at(8)]).expect("two packages, one with two members")
}

/// Wait until every member `a` names (for member `me`) posted step `t`.
fn wait_for(b: &Board<'_>, groups: &Tiers, me: usize, a: Await, t: u64) {
    for m in tiers::awaited(Some(groups), MEMBERS, me, a) {
        while !b.posted(m, t) {
            thread::yield_now();
        }
    }
}

/// Member `me`: write its cell, then run its part of the barrier (step
/// 1): wait for the posts its plan names before its own, and post. The
/// member that checks, member 2, then waits for those its plan names
/// after (the leaders'), reads member 1's cell, and checks that it may
/// post the next step. (Members 0 and 1 leave out their own waits after
/// posting and their reads, which only mirror member 2's, to keep the
/// model small enough for loom.)
fn member(areas: &[Area; MEMBERS], cells: &Cells, me: usize) {
    let refs: Vec<&Area> = areas.iter().collect();
    let b = Board::new(&refs, me);
    let groups = grouped();
    let (before, after) = tiers::barrier_plan(Some(&groups), false, me);
    cells.0[me].with_mut(|p| {
        // SAFETY: loom reports a read racing this write.
        unsafe { *p = 1 }
    });
    wait_for(&b, &groups, me, before, 1);
    b.post(1, 0, &[]);
    if me != 2 {
        return;
    }
    wait_for(&b, &groups, me, after, 1);
    let got = cells.0[1].with(|p| {
        // SAFETY: loom reports a write racing this read.
        unsafe { *p }
    });
    assert_eq!(
        got, 1,
        "member 2 read member 1's cell before it was written"
    );
    // The leaders' posts imply everyone's (T1): the next step's BP2
    // check, which the library skips after a tiered wait, would pass.
    assert!(b.may_post(2, true), "member 2 left before everyone posted");
}

/// Run `f` under loom as `loom_tests::check` does, with room for the
/// three members' waiting loops.
fn check(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = builder.preemption_bound.or(Some(3));
    builder.max_branches = 100_000;
    builder.check(f);
}

fn tiered_barriers() {
    check(|| {
        let areas = Arc::new(std::array::from_fn::<_, MEMBERS, _>(|_| Area::after(0)));
        let cells = Arc::new(Cells(std::array::from_fn(|_| UnsafeCell::new(0))));
        let peers: Vec<_> = (1..MEMBERS)
            .map(|m| {
                let (a, c) = (areas.clone(), cells.clone());
                thread::spawn(move || member(&a, &c, m))
            })
            .collect();
        member(&areas, &cells, 0);
        for p in peers {
            p.join().unwrap();
        }
    });
}

#[cfg(not(tessel_mutation))]
#[test]
fn a_tiered_barrier_holds() {
    tiered_barriers();
}

#[cfg(tessel_mutation = "board_tiers")]
#[test]
fn tiers_mutation_is_caught() {
    let caught = std::panic::catch_unwind(tiered_barriers);
    let why = caught.expect_err("loom did not notice a leader that posts before its group");
    let why = loom_tests::panic_text(&*why);
    assert!(
        why.contains("Causality violation")
            || why.contains("before it was written")
            || why.contains("before everyone posted"),
        "loom failed for another reason: {why}"
    );
}
