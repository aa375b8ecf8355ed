//! The engine's statistics, in one place: what `TESSEL_STATS=1` prints at
//! finalize (per protocol and size class, and who copied for whom), and
//! what [`Endpoint::transfers`](crate::Endpoint::transfers) reports.

use std::collections::BTreeMap;
use std::fmt;

use crate::rndv::size_class;

/// How one large message moves (also the protocols' names in statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// The first transfer of a size class, finely chunked to count helpers.
    Probe,
    /// The receiver copies alone.
    Get,
    /// Receiver and sender copy a half each.
    Coop,
    /// Chunks for every helper.
    Steal,
    /// Through staging slots (cross-memory attach refused).
    Pipeline,
    /// Written by the sender at once into a landing buffer the receiver
    /// granted (library-managed receives).
    Put,
    /// To this process itself, copied at once (any size; counted, as the
    /// others, when larger than an eager message).
    ToSelf,
    /// From another node, with its header (a network plugin's eager path).
    NetEager,
    /// From another node, pulled into the matched buffer (a network
    /// plugin's rendezvous or RMA read).
    NetFetch,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Probe => "probe",
            Self::Get => "get",
            Self::Coop => "coop",
            Self::Steal => "steal",
            Self::Pipeline => "pipeline",
            Self::Put => "put",
            Self::ToSelf => "self",
            Self::NetEager => "net-eager",
            Self::NetFetch => "net-fetch",
        })
    }
}

/// Counters printed by `TESSEL_STATS=1`.
#[derive(Debug, Default)]
pub struct Stats {
    /// (protocol, size class) -> (transfers, bytes), for this process's
    /// receives.
    by_protocol: BTreeMap<(Protocol, u32), (u64, u64)>,
    /// Local rank of a copier -> bytes it copied for this process's
    /// receives.
    by_helper: BTreeMap<u32, u64>,
    /// Bytes this process copied for other processes' receives.
    for_others: u64,
    /// Steps this process posted on the flag boards of intra-node
    /// collectives ([`crate::board`]).
    board_posts: u64,
    /// Collectives this process ran on tiered flag boards (groups by
    /// package, NUMA node or L3 cache, with leaders).
    board_tiered: u64,
}

impl Stats {
    /// Count one received message.
    pub fn transfer(&mut self, p: Protocol, size: usize) {
        let e = self.by_protocol.entry((p, size_class(size))).or_default();
        e.0 += 1;
        e.1 += size as u64;
    }

    /// Count bytes a helper (a rank) copied for one of our receives.
    pub fn helped_by(&mut self, rank: u32, bytes: u64) {
        *self.by_helper.entry(rank).or_default() += bytes;
    }

    /// Count bytes we copied for another process.
    pub fn helped_others(&mut self, bytes: u64) {
        self.for_others += bytes;
    }

    /// Count one post on a collective's flag board.
    #[inline]
    pub fn board_post(&mut self) {
        self.board_posts += 1;
    }

    /// Count one collective on a tiered flag board.
    #[inline]
    pub fn board_tiered(&mut self) {
        self.board_tiered += 1;
    }

    /// The lines printed at finalize for `rank`.
    pub fn lines(&self, rank: u32) -> Vec<String> {
        let mut out = Vec::new();
        for ((p, class), (n, bytes)) in &self.by_protocol {
            out.push(format!(
                "tessel-stats: rank {rank} proto={p} class=2^{class} transfers={n} bytes={bytes}"
            ));
        }
        for (h, bytes) in &self.by_helper {
            out.push(format!(
                "tessel-stats: rank {rank} helper={h} bytes={bytes}"
            ));
        }
        out.push(format!(
            "tessel-stats: rank {rank} copied-for-others bytes={}",
            self.for_others
        ));
        out.push(format!(
            "tessel-stats: rank {rank} board-posts={}",
            self.board_posts
        ));
        out.push(format!(
            "tessel-stats: rank {rank} board-tiered={}",
            self.board_tiered
        ));
        out
    }

    /// Transfers counted for protocol `p`, all size classes.
    pub fn transfers(&self, p: Protocol) -> u64 {
        self.by_protocol
            .iter()
            .filter(|((q, _), _)| *q == p)
            .map(|(_, (n, _))| n)
            .sum()
    }
}
