//! Flow control: per-peer credits, so a sender never sends into a receive
//! queue with no buffer posted (which would cost an RNR NAK and a retry
//! delay, or with the retries exhausted a broken connection).
//!
//! Each process posts `depth` receive buffers on its QP for each peer,
//! and publishes `depth`. The sender may have at most `depth` messages
//! that the receiver has not yet handed back. Both sides count with
//! wrapping 32-bit cumulative counters:
//!
//! - sender: `sent` (messages posted) and `granted` (the receiver's count
//!   of buffers it re-posted after consuming our messages); available
//!   credits are `depth + granted - sent`, always in `0..=depth`;
//! - receiver: `reposted` (buffers re-posted for this peer) and
//!   `reported` (the last `reposted` value the peer was told).
//!
//! The receiver reports `reposted` in two ways: in the prefix of every
//! message it sends to that peer (free), and, when `depth / 2` or more
//! are unreported and nothing carried them, by a 4-byte-aligned RDMA
//! WRITE of the counter into the peer's credit array (one slot per
//! peer). The write consumes no receive buffer on the other side, so
//! returning credits never needs credits: no deadlock when both sides
//! are out of credits, and FIN messages (which take a credit like any
//! message) can always go eventually. The sender takes the newer of the
//! two reports (the counters are monotonic, so a late report is just
//! old).
//!
//! Why a sender never waits for credits that a sleeping receiver holds:
//! a receiver writes its count as soon as `depth / 2` are owed, so while
//! it owes less, the sender still has more than `depth / 2` credits.

/// `a` is newer than `b` on a wrapping 32-bit counter.
fn newer(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// The sender's view of one peer's receive buffers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Credits {
    depth: u32,
    sent: u32,
    granted: u32,
}

/// A credit report that cannot be true (more buffers handed back than
/// messages sent): the peer is broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadGrant {
    pub(crate) granted: u32,
    pub(crate) sent: u32,
}

impl Credits {
    pub(crate) fn new(depth: u32) -> Self {
        Self {
            depth,
            sent: 0,
            granted: 0,
        }
    }

    /// Messages that may be sent now.
    pub(crate) fn available(&self) -> u32 {
        self.depth
            .wrapping_add(self.granted)
            .wrapping_sub(self.sent)
    }

    /// Spend one credit (the caller checked [`available`](Self::available)).
    pub(crate) fn take(&mut self) {
        debug_assert!(self.available() > 0, "credit taken without one");
        self.sent = self.sent.wrapping_add(1);
    }

    /// Take the peer's cumulative count of re-posted buffers. Older
    /// reports than one already seen change nothing.
    pub(crate) fn grant(&mut self, reposted: u32) -> Result<(), BadGrant> {
        if !newer(reposted, self.granted) {
            return Ok(());
        }
        if newer(reposted, self.sent) {
            return Err(BadGrant {
                granted: reposted,
                sent: self.sent,
            });
        }
        self.granted = reposted;
        Ok(())
    }
}

/// The receiver's side for one peer: buffers re-posted and reported.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Returns {
    reposted: u32,
    reported: u32,
    write_in_flight: bool,
}

impl Returns {
    /// One buffer of this peer's was re-posted.
    pub(crate) fn reposted_one(&mut self) {
        self.reposted = self.reposted.wrapping_add(1);
    }

    /// Buffers re-posted and not yet reported.
    pub(crate) fn owed(&self) -> u32 {
        self.reposted.wrapping_sub(self.reported)
    }

    /// The count to carry in a message's prefix; call
    /// [`reported`](Self::reported) with it once the message is posted.
    pub(crate) fn current(&self) -> u32 {
        self.reposted
    }

    /// `value` (from [`current`](Self::current)) reached the wire.
    pub(crate) fn reported(&mut self, value: u32) {
        if newer(value, self.reported) {
            self.reported = value;
        }
    }

    /// Whether a credit write is due: `threshold` or more owed and no
    /// write in flight.
    pub(crate) fn write_due(&self, threshold: u32) -> bool {
        !self.write_in_flight && self.owed() >= threshold
    }

    /// A credit write carrying `value` was posted.
    pub(crate) fn write_posted(&mut self, value: u32) {
        self.write_in_flight = true;
        self.reported(value);
    }

    /// The credit write completed (successfully or not).
    pub(crate) fn write_done(&mut self) {
        self.write_in_flight = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_never_has_more_than_depth_outstanding() {
        let mut c = Credits::new(4);
        for _ in 0..4 {
            assert!(c.available() > 0);
            c.take();
        }
        assert_eq!(c.available(), 0);
        c.grant(2).unwrap();
        assert_eq!(c.available(), 2);
        // An old report (reordered with a newer one) changes nothing.
        c.grant(1).unwrap();
        assert_eq!(c.available(), 2);
        c.grant(4).unwrap();
        assert_eq!(c.available(), 4);
    }

    #[test]
    fn a_grant_beyond_what_was_sent_is_refused() {
        let mut c = Credits::new(4);
        c.take();
        assert_eq!(
            c.grant(2),
            Err(BadGrant {
                granted: 2,
                sent: 1
            })
        );
        assert_eq!(c.available(), 3);
    }

    #[test]
    fn counters_wrap() {
        let mut c = Credits {
            depth: 8,
            sent: u32::MAX - 1,
            granted: u32::MAX - 1,
        };
        for _ in 0..8 {
            c.take();
        }
        assert_eq!(c.available(), 0);
        c.grant(3).unwrap(); // MAX-1 + 5, wrapped
        assert_eq!(c.available(), 5);
        c.grant(u32::MAX).unwrap(); // older: ignored
        assert_eq!(c.available(), 5);
    }

    #[test]
    fn returns_are_owed_until_reported_and_one_write_flies_at_a_time() {
        let mut r = Returns::default();
        for _ in 0..3 {
            r.reposted_one();
        }
        assert_eq!(r.owed(), 3);
        assert!(!r.write_due(4));
        r.reposted_one();
        assert!(r.write_due(4));
        let v = r.current();
        r.write_posted(v);
        assert_eq!(r.owed(), 0);
        for _ in 0..5 {
            r.reposted_one();
        }
        assert!(!r.write_due(4), "a write is still in flight");
        r.write_done();
        assert!(r.write_due(4));
        // A piggybacked report settles the debt without a write.
        let v = r.current();
        r.reported(v);
        assert!(!r.write_due(1));
        // A stale report does not move `reported` backwards.
        r.reported(v.wrapping_sub(3));
        assert_eq!(r.owed(), 0);
    }

    #[test]
    fn the_two_sides_agree() {
        // One sender, one receiver, messages consumed in random-ish order
        // of rounds; credits never go negative and all come back.
        let depth = 8;
        let mut s = Credits::new(depth);
        let mut r = Returns::default();
        let mut in_queue = 0u32;
        for round in 0..1000u32 {
            let burst = round % 5;
            for _ in 0..burst {
                if s.available() > 0 {
                    s.take();
                    in_queue += 1;
                    assert!(in_queue <= depth);
                }
            }
            let consume = (round * 7) % 4;
            for _ in 0..consume.min(in_queue) {
                in_queue -= 1;
                r.reposted_one();
            }
            if r.write_due(depth / 2) {
                let v = r.current();
                r.write_posted(v);
                s.grant(v).unwrap();
                r.write_done();
            }
        }
        while in_queue > 0 {
            in_queue -= 1;
            r.reposted_one();
        }
        s.grant(r.current()).unwrap();
        assert_eq!(s.available(), depth);
    }
}
