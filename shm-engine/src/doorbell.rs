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
//!
//! Polled rings (SP5). Ringing costs the sender two read-modify-writes on
//! a line the receiver keeps clearing: in a stream of small messages that
//! line moves between the two caches on every message. A receiver that
//! hears often from a peer therefore polls that peer's ring on each
//! progress call instead, and says so in the ring's `polled` word
//! ([`start_polling`]). A sender, after publishing, issues a SeqCst fence
//! and reads that word ([`must_ring`]): set, it rings nothing. To stop
//! polling (before it sleeps, or to make room for another ring) the
//! receiver clears the word, issues a SeqCst fence ([`stop_polling`]) and
//! then looks at the ring once more. Of the two fenced store-then-load
//! pairs at least one sees the other's store: either the sender sees the
//! word cleared and rings, or the receiver's last look finds the cell.
//! The fence costs the sender far less than the line's round trip, and
//! the word sits on the ring's tail line, which the sender has just
//! written, so reading it costs no miss.

use crate::sync::{AtomicU32, AtomicU64, Ordering, fence};

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

/// After publishing in a ring whose `polled` word is `polled`: whether the
/// sender must still [`ring`], because its receiver does not poll that
/// ring (SP5).
#[inline]
pub fn must_ring(polled: &AtomicU32) -> bool {
    // SP5. The `doorbell_poll` mutation drops it so loom-tests can prove
    // loom notices.
    #[cfg(not(tessel_mutation = "doorbell_poll"))]
    fence(Ordering::SeqCst);
    polled.load(Ordering::Relaxed) == 0
}

/// The receiver starts polling a ring (its `polled` word): from now on
/// its senders may skip the doorbell, so it must look at the ring on
/// every progress call until [`stop_polling`].
#[inline]
pub fn start_polling(polled: &AtomicU32) {
    polled.store(1, Ordering::Relaxed);
}

/// The receiver stops polling a ring (SP5). It must then look at the ring
/// once more: a cell published before a sender saw this store rang
/// nothing.
#[inline]
pub fn stop_polling(polled: &AtomicU32) {
    polled.store(0, Ordering::Relaxed);
    fence(Ordering::SeqCst);
}

/// Whether news is pending (the bell rang since the last [`drain`]): one
/// relaxed load, for a poll that skips the drain's set-up when quiet.
#[inline]
pub fn rang(bell: &AtomicU32) -> bool {
    bell.load(Ordering::Relaxed) != 0
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
