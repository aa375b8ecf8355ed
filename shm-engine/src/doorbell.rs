//! Doorbells: how a receiver learns which of its N incoming rings have news
//! without scanning them, and how it sleeps without losing a wake-up.
//!
//! Each process owns a bell word (a futex word) and `ceil(N / 64)` mask
//! words. A sender, after publishing in ring (s -> r) (the ring's SP1):
//! 1. sets bit `s` in r's mask word `s / 64` (`fetch_or`, Release: SP3);
//! 2. sets `RUNG` in r's bell (`fetch_or`, AcqRel: SP4); if the previous
//!    value had `SLEEPING`, it must wake r (futex wake).
//!
//! The receiver [`drain`]s: swaps the bell to 0 (Acquire, SP4), then swaps
//! each mask word to 0 (Acquire, SP3) and visits the rings whose bits were
//! set. To sleep it moves the bell from 0 to `SLEEPING` with a CAS; if any
//! sender rang since the last drain the CAS fails and it drains instead.
//! Because bell updates are all read-modify-writes of one word, either the
//! receiver's CAS sees `RUNG`, or the sender's `fetch_or` sees `SLEEPING`:
//! no wake-up is lost, with no SeqCst fence needed.
//!
//! Invariant checked by loom: "publish, then ring". Whoever sees a sender's
//! mask bit also sees the ring entries published before it (SP3), so a
//! drained bit never hides an unread message.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// Bell bit: some sender rang since the last drain.
pub const RUNG: u32 = 1;
/// Bell bit: the owner is (about to be) asleep on the futex.
pub const SLEEPING: u32 = 2;

/// Ordering of the mask `fetch_or` (SP3). The `doorbell_ring` mutation
/// weakens it so loom-tests can prove loom notices.
#[cfg(not(tessel_mutation = "doorbell_ring"))]
const RING: Ordering = Ordering::Release;
#[cfg(tessel_mutation = "doorbell_ring")]
const RING: Ordering = Ordering::Relaxed;

/// Announce news from `sender` to the owner of `bell` and `masks`. Returns
/// true when the owner sleeps and must be woken.
#[inline]
pub fn ring(bell: &AtomicU32, masks: &[AtomicU64], sender: u32) -> bool {
    let (word, bit) = ((sender / 64) as usize, 1u64 << (sender % 64));
    masks[word].fetch_or(bit, RING); // SP3
    bell.fetch_or(RUNG, Ordering::AcqRel) & SLEEPING != 0 // SP4
}

/// Take all pending news: calls `visit(sender)` for each sender whose bit
/// was set. The bell is cleared first, so news arriving during the visit
/// rings it again.
#[inline]
pub fn drain(bell: &AtomicU32, masks: &[AtomicU64], mut visit: impl FnMut(u32)) {
    if bell.load(Ordering::Relaxed) == 0 {
        return;
    }
    bell.swap(0, Ordering::Acquire); // SP4
    for (w, mask) in masks.iter().enumerate() {
        if mask.load(Ordering::Relaxed) == 0 {
            continue;
        }
        let mut bits = mask.swap(0, Ordering::Acquire); // SP3
        while bits != 0 {
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            visit(w as u32 * 64 + b);
        }
    }
}

/// Try to go to sleep: true when no news arrived since the last drain, and
/// the bell now says `SLEEPING` (wait on the futex for it to change).
#[inline]
pub fn prepare_sleep(bell: &AtomicU32) -> bool {
    bell.compare_exchange(0, SLEEPING, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
}

/// Leave the sleeping state without news (a timed-out sleep).
#[inline]
pub fn cancel_sleep(bell: &AtomicU32) {
    let _ = bell.compare_exchange(SLEEPING, 0, Ordering::AcqRel, Ordering::Relaxed);
}

/// Wake the owner of `bell` without news in a ring (a steal queue got work,
/// or a transfer it waits for completed). Returns true when the owner
/// sleeps and must be woken with a futex wake.
#[inline]
pub fn nudge(bell: &AtomicU32) -> bool {
    bell.fetch_or(RUNG, Ordering::AcqRel) & SLEEPING != 0
}
