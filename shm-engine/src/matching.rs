//! Tag matching with MPI semantics: a posted-receive queue and an
//! unexpected-message queue, both searched in order, so that messages
//! between one pair that match the same receive are received in the order
//! they were sent (non-overtaking), whatever protocol carried them.

use std::collections::VecDeque;

/// Which senders a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Any process (MPI_ANY_SOURCE).
    Any,
    /// Only this process id.
    Rank(u32),
}

impl Source {
    /// Whether a message from `rank` is accepted.
    #[inline]
    pub fn accepts(self, rank: u32) -> bool {
        match self {
            Self::Any => true,
            Self::Rank(r) => r == rank,
        }
    }
}

/// Which tags a receive accepts: those equal to `tag` on the bits of `mask`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagMatch {
    /// Wanted bits.
    pub tag: u64,
    /// Bits that must match; 0 accepts every tag.
    pub mask: u64,
}

impl TagMatch {
    /// Exactly `tag`.
    pub const fn exact(tag: u64) -> Self {
        Self {
            tag,
            mask: u64::MAX,
        }
    }
    /// Any tag (MPI_ANY_TAG).
    pub const fn any() -> Self {
        Self { tag: 0, mask: 0 }
    }
    /// Tags equal to `tag` on the bits of `mask` (for example a context id
    /// in the high bits and a wildcard user tag in the low bits).
    pub const fn masked(tag: u64, mask: u64) -> Self {
        Self { tag, mask }
    }
    /// Whether `tag` is accepted.
    #[inline]
    pub fn accepts(self, tag: u64) -> bool {
        (tag ^ self.tag) & self.mask == 0
    }
}

/// A posted receive, waiting for a message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posted {
    /// The receive's full request id (slot and generation).
    pub(crate) req: u64,
    pub(crate) source: Source,
    pub(crate) tag: TagMatch,
}

/// Both queues.
#[derive(Debug)]
pub(crate) struct Matcher<U> {
    posted: VecDeque<Posted>,
    unexpected: VecDeque<(u32, u64, U)>,
}

/// Remove entry `i` of `queue`: the oldest (almost always the one a match
/// finds) with a pop, which costs a fraction of `VecDeque::remove`'s
/// general move.
#[inline]
fn take_at<T>(queue: &mut VecDeque<T>, i: usize) -> Option<T> {
    if i == 0 {
        queue.pop_front()
    } else {
        queue.remove(i)
    }
}

impl<U> Default for Matcher<U> {
    fn default() -> Self {
        Self {
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
        }
    }
}

impl<U> Matcher<U> {
    /// An arriving message from `source` with `tag`: the oldest posted
    /// receive that accepts it, removed from the queue.
    pub(crate) fn match_arrival(&mut self, source: u32, tag: u64) -> Option<Posted> {
        let i = self
            .posted
            .iter()
            .position(|p| p.source.accepts(source) && p.tag.accepts(tag))?;
        take_at(&mut self.posted, i)
    }

    /// Keep an arrival no receive wanted yet.
    pub(crate) fn push_unexpected(&mut self, source: u32, tag: u64, body: U) {
        self.unexpected.push_back((source, tag, body));
    }

    /// A new receive: the oldest unexpected message it accepts (removed),
    /// or `None` after queueing the receive as posted.
    pub(crate) fn post(&mut self, p: Posted) -> Option<(u32, u64, U)> {
        match self.peek(p.source, p.tag) {
            Some(i) => take_at(&mut self.unexpected, i),
            None => {
                self.posted.push_back(p);
                None
            }
        }
    }

    /// Index of the oldest unexpected message accepted by (source, tag).
    pub(crate) fn peek(&self, source: Source, tag: TagMatch) -> Option<usize> {
        self.unexpected
            .iter()
            .position(|(s, t, _)| source.accepts(*s) && tag.accepts(*t))
    }

    /// The oldest unexpected message accepted by (source, tag), left in
    /// the queue (a probe).
    pub(crate) fn peek_unexpected(&self, source: Source, tag: TagMatch) -> Option<&(u32, u64, U)> {
        self.unexpected.get(self.peek(source, tag)?)
    }

    /// The oldest unexpected message accepted by (source, tag), removed
    /// from the queue (a matched probe: no receive can match it any more).
    pub(crate) fn take_unexpected(
        &mut self,
        source: Source,
        tag: TagMatch,
    ) -> Option<(u32, u64, U)> {
        let i = self.peek(source, tag)?;
        take_at(&mut self.unexpected, i)
    }

    /// Whether any message waits unmatched.
    #[inline]
    pub(crate) fn has_unexpected(&self) -> bool {
        !self.unexpected.is_empty()
    }

    /// The oldest unexpected message accepted by (source, tag), removed
    /// from the queue if `take` says so about its body; else it stays.
    pub(crate) fn take_unexpected_if(
        &mut self,
        source: Source,
        tag: TagMatch,
        take: impl FnOnce(&U) -> bool,
    ) -> Option<(u32, u64, U)> {
        let i = self.peek(source, tag)?;
        if !take(&self.unexpected[i].2) {
            return None;
        }
        take_at(&mut self.unexpected, i)
    }

    /// Withdraw the posted receive of request `req`. Returns false when it
    /// is not waiting any more (it matched, or was never posted).
    pub(crate) fn cancel(&mut self, req: u64) -> bool {
        match self.posted.iter().position(|p| p.req == req) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// Whether any receive is posted.
    #[inline]
    pub(crate) fn has_posted(&self) -> bool {
        !self.posted.is_empty()
    }

    /// Posted receives still waiting.
    #[cfg(test)]
    pub(crate) fn posted_len(&self) -> usize {
        self.posted.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_masks() {
        assert!(TagMatch::any().accepts(123));
        assert!(TagMatch::exact(5).accepts(5));
        assert!(!TagMatch::exact(5).accepts(6));
        let ctx = TagMatch::masked(0x7 << 32, 0xffff_ffff << 32);
        assert!(ctx.accepts((0x7 << 32) | 99));
        assert!(!ctx.accepts((0x8 << 32) | 99));
    }

    #[test]
    fn oldest_match_wins_both_ways() {
        let mut m = Matcher::<&str>::default();
        m.push_unexpected(1, 10, "a");
        m.push_unexpected(2, 10, "b");
        m.push_unexpected(1, 11, "c");
        let any = |req| Posted {
            req,
            source: Source::Any,
            tag: TagMatch::any(),
        };
        let from1 = Posted {
            req: 0,
            source: Source::Rank(1),
            tag: TagMatch::exact(11),
        };
        assert_eq!(m.post(from1).unwrap().2, "c");
        assert_eq!(m.post(any(1)).unwrap().2, "a");
        assert_eq!(m.post(any(2)).unwrap().2, "b");
        assert!(m.post(any(3)).is_none());
        let r4 = Posted {
            req: 4,
            source: Source::Rank(2),
            tag: TagMatch::any(),
        };
        assert!(m.post(r4).is_none());
        assert_eq!(m.match_arrival(2, 7).unwrap().req, 3);
        assert_eq!(m.match_arrival(2, 7).unwrap().req, 4);
        assert!(m.match_arrival(2, 7).is_none());
        assert_eq!(m.posted_len(), 0);
    }

    #[test]
    fn probes_see_and_take_the_oldest_match() {
        let mut m = Matcher::<&str>::default();
        m.push_unexpected(1, 10, "a");
        m.push_unexpected(2, 10, "b");
        m.push_unexpected(2, 11, "c");
        let ten = TagMatch::exact(10);
        assert_eq!(m.peek_unexpected(Source::Any, ten).unwrap().2, "a");
        assert_eq!(m.peek_unexpected(Source::Any, ten).unwrap().2, "a");
        assert_eq!(
            m.take_unexpected(Source::Rank(2), TagMatch::any())
                .unwrap()
                .2,
            "b"
        );
        assert!(
            m.take_unexpected_if(Source::Any, ten, |&b| b != "a")
                .is_none(),
            "the oldest match stays when it is not wanted"
        );
        assert_eq!(m.take_unexpected(Source::Any, ten).unwrap().2, "a");
        assert!(m.take_unexpected(Source::Any, ten).is_none());
        // A taken message is gone for receives too.
        let any = Posted {
            req: 0,
            source: Source::Any,
            tag: TagMatch::any(),
        };
        assert_eq!(m.post(any).unwrap().2, "c");
        assert!(m.peek_unexpected(Source::Any, TagMatch::any()).is_none());
    }

    #[test]
    fn cancel_withdraws_only_a_waiting_receive() {
        let mut m = Matcher::<&str>::default();
        let post = |req, source| Posted {
            req,
            source,
            tag: TagMatch::any(),
        };
        assert!(m.post(post(1, Source::Any)).is_none());
        assert!(m.post(post(2, Source::Rank(3))).is_none());
        assert!(m.cancel(1));
        assert!(!m.cancel(1), "already withdrawn");
        // The arrival goes to the receive still posted, not the cancelled one.
        assert_eq!(m.match_arrival(3, 5).unwrap().req, 2);
        assert!(!m.cancel(2), "already matched");
        assert!(m.match_arrival(3, 5).is_none());
        assert_eq!(m.posted_len(), 0);
    }
}
