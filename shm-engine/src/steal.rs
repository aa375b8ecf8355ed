//! The node-wide stealer mask and the per-request completion set: the
//! shared words the work-stealing protocol for large messages counts on.
//!
//! **Stealer mask.** `ceil(N / 64)` words; bit `p` set means local process
//! `p` is idle (waiting with nothing of its own to do) and willing to take
//! tasks from its peers' steal queues ([`crate::queue::spmc`]). No data is
//! published through it. An owner that posted tasks reads it to wake idle
//! processes that may be asleep on their futex; that must not miss a
//! stealer that looked at the queue too early (SM1).
//!
//! **Completion set.** Each large request has `ceil(chunks / 64)` chunk
//! words and `ceil(N / 64)` helper words. Whoever copies chunk `k` first
//! sets its own helper bit, then chunk bit `k` ([`Completion::mark`]). The
//! request is complete when every chunk bit is set
//! ([`Completion::is_complete`]); only then may FIN be sent and the sender's
//! buffer released. The popcount of the helper bits
//! ([`Completion::helpers`]) tells the protocol how many processes took
//! part.
//!
//! Synchronisation (SYNC POINT):
//! - SM1 (store-load, as Dekker's): a stealer sets its bit, then a SeqCst
//!   fence, then looks at the queues; an owner publishes a task, then a
//!   SeqCst fence, then reads the mask ([`Snapshot::after_posting`]). One
//!   of the two sees the other: the stealer finds the task, or the owner
//!   finds the bit and wakes it.
//! - SC1: a copier copies chunk `k`, sets its helper bit (Relaxed, ordered
//!   by what follows), then sets chunk bit `k` with `fetch_or` (Release);
//!   [`Completion::is_complete`] loads every chunk word (Acquire). Whoever
//!   sees all chunk bits therefore sees every chunk's bytes and every
//!   helper bit set before them.

use crate::sync::{AtomicU64, Ordering};

/// Ordering of the chunk bit `fetch_or` (SC1). The `chunk_done` mutation
/// weakens it so loom-tests can prove loom notices.
#[cfg(not(tessel_mutation = "chunk_done"))]
const CHUNK_DONE: Ordering = Ordering::Release;
#[cfg(tessel_mutation = "chunk_done")]
const CHUNK_DONE: Ordering = Ordering::Relaxed;

/// Words needed for `bits` bits.
pub const fn words_for(bits: u32) -> usize {
    bits.div_ceil(64) as usize
}

fn word_bit(i: u32) -> (usize, u64) {
    ((i / 64) as usize, 1u64 << (i % 64))
}

/// The SM1 fence. The `stealer_mask` mutation removes it so loom-tests can
/// prove loom notices.
#[inline]
fn sm1_fence() {
    #[cfg(not(tessel_mutation = "stealer_mask"))]
    crate::sync::fence(Ordering::SeqCst);
}

/// Advertise local process `rank` as an idle stealer; look at the queues
/// only after this (SM1). Returns whether it was already advertised.
#[inline]
pub fn advertise(mask: &[AtomicU64], rank: u32) -> bool {
    let (w, b) = word_bit(rank);
    let was = mask[w].fetch_or(b, Ordering::Relaxed) & b != 0;
    sm1_fence();
    was
}

/// Withdraw local process `rank` from the stealers (it has work of its own
/// again). Returns whether it was advertised.
#[inline]
pub fn withdraw(mask: &[AtomicU64], rank: u32) -> bool {
    let (w, b) = word_bit(rank);
    mask[w].fetch_and(!b, Ordering::Relaxed) & b != 0
}

/// The advertised stealers, as seen now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot(Vec<u64>);

impl Snapshot {
    /// The mask as an owner that has just published tasks must read it to
    /// wake idle stealers (SM1).
    pub fn after_posting(mask: &[AtomicU64]) -> Self {
        sm1_fence();
        Self::take(mask)
    }

    /// Read the mask.
    pub fn take(mask: &[AtomicU64]) -> Self {
        Self(mask.iter().map(|w| w.load(Ordering::Relaxed)).collect())
    }

    /// How many processes were advertised.
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether `rank` was advertised.
    pub fn contains(&self, rank: u32) -> bool {
        let (w, b) = word_bit(rank);
        self.0.get(w).is_some_and(|x| x & b != 0)
    }

    /// The advertised ranks, in increasing order.
    pub fn ranks(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            core::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros();
                    bits &= bits - 1;
                    w as u32 * 64 + b
                })
            })
        })
    }
}

/// The completion set of one request: a view over its chunk and helper
/// words (in the node segment or anywhere else). Zero-filled words are a
/// request with nothing copied yet.
#[derive(Clone, Copy, Debug)]
pub struct Completion<'a> {
    chunk_words: &'a [AtomicU64],
    helper_words: &'a [AtomicU64],
    chunks: u32,
}

impl<'a> Completion<'a> {
    /// The set of a request of `chunks` chunks. Panics when the words are
    /// too few for `chunks` (programmer error).
    pub fn new(chunk_words: &'a [AtomicU64], helper_words: &'a [AtomicU64], chunks: u32) -> Self {
        assert!(
            chunk_words.len() >= words_for(chunks),
            "{chunks} chunks need {} words",
            words_for(chunks)
        );
        Self {
            chunk_words,
            helper_words,
            chunks,
        }
    }

    /// Record that `helper` (a local rank) finished copying chunk `chunk`.
    /// Call after the copy (SC1). Returns false when the chunk was already
    /// marked, which means a chunk was copied twice: a protocol bug.
    #[inline]
    pub fn mark(&self, chunk: u32, helper: u32) -> bool {
        debug_assert!(chunk < self.chunks);
        let (hw, hb) = word_bit(helper);
        // Ordered before the observer by the Release below (SC1).
        self.helper_words[hw].fetch_or(hb, Ordering::Relaxed);
        let (cw, cb) = word_bit(chunk);
        // SC1: publish the chunk's bytes and the helper bit.
        self.chunk_words[cw].fetch_or(cb, CHUNK_DONE) & cb == 0
    }

    /// Whether every chunk is copied; when true, every chunk's bytes and
    /// every helper bit are visible to the caller (SC1).
    #[inline]
    pub fn is_complete(&self) -> bool {
        let full = (self.chunks / 64) as usize;
        let rest = self.chunks % 64;
        // SC1: Acquire pairs with each copier's Release fetch_or.
        self.chunk_words[..full]
            .iter()
            .all(|w| w.load(Ordering::Acquire) == u64::MAX)
            && (rest == 0 || self.chunk_words[full].load(Ordering::Acquire) == (1u64 << rest) - 1)
    }

    /// Whether chunk `chunk` is marked.
    pub fn is_done(&self, chunk: u32) -> bool {
        let (w, b) = word_bit(chunk);
        self.chunk_words[w].load(Ordering::Acquire) & b != 0
    }

    /// How many distinct processes copied at least one chunk. Exact once
    /// [`is_complete`](Self::is_complete) returned true.
    pub fn helpers(&self) -> u32 {
        self.helper_words
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones())
            .sum()
    }

    /// The helper words as they are now, for statistics per helper.
    pub fn helper_snapshot(&self) -> Snapshot {
        Snapshot::take(self.helper_words)
    }
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::*;

    fn words(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn mask_advertise_withdraw_snapshot() {
        let mask = words(2);
        assert!(!advertise(&mask, 3));
        assert!(advertise(&mask, 3));
        assert!(!advertise(&mask, 70));
        let s = Snapshot::take(&mask);
        assert_eq!(s.count(), 2);
        assert!(s.contains(70) && !s.contains(4) && !s.contains(500));
        assert_eq!(s.ranks().collect::<Vec<_>>(), [3, 70]);
        assert!(withdraw(&mask, 3));
        assert!(!withdraw(&mask, 3));
        assert_eq!(Snapshot::take(&mask).ranks().collect::<Vec<_>>(), [70]);
    }

    #[test]
    fn completion_counts_chunks_and_helpers() {
        for chunks in [1u32, 63, 64, 65, 130] {
            let (cw, hw) = (words(words_for(chunks)), words(2));
            let c = Completion::new(&cw, &hw, chunks);
            for k in 0..chunks {
                assert!(!c.is_complete());
                assert!(!c.is_done(k));
                assert!(c.mark(k, [0, 5, 66][k as usize % 3]));
                assert!(c.is_done(k));
            }
            assert!(c.is_complete());
            assert!(!c.mark(0, 0), "a second mark of a chunk is reported");
            assert_eq!(c.helpers(), chunks.min(3));
            assert_eq!(
                c.helper_snapshot().ranks().take(chunks as usize).count(),
                chunks.min(3) as usize
            );
        }
    }
}
