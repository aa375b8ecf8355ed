//! The `tessel-stats:` lines a Tessel process prints on stderr at finalize
//! when `TESSEL_STATS=1`:
//!
//! ```text
//! tessel-stats: rank R proto=get|coop|steal|probe|pipeline class=2^K transfers=N bytes=B
//! tessel-stats: rank R helper=H bytes=B
//! ```
//!
//! The first: rank R received N large messages of size class 2^K (B bytes
//! in all) with that protocol; the second: helper rank H copied B bytes
//! of rank R's receives. The other lines (`copied-for-others`,
//! `board-posts=N`, `board-tiered=N` and `cpus=C oversubscribed=0|1`) are skipped.

use serde::Serialize;

/// Marks a statistics line, wherever the launcher put it in its output.
const MARK: &str = "tessel-stats:";

/// Words of the statistics lines that say nothing about protocols (bytes
/// a process copied for others; its posts on collectives' flag boards;
/// its CPUs and whether it is oversubscribed): skipped, not reported as
/// lines that do not read.
const OTHER_LINES: &[&str] = &[
    "copied-for-others",
    "board-posts=",
    "board-tiered=",
    "oversubscribed=",
];

/// What one statistics line says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Stat {
    /// Receives of one size class by one protocol.
    Proto {
        rank: u32,
        proto: String,
        /// log2 of the size class.
        class: u32,
        transfers: u64,
        bytes: u64,
    },
    /// Bytes a helper copied for this rank's receives.
    Helper { rank: u32, helper: u32, bytes: u64 },
}

/// The statistics lines of `text`, and the lines marked as statistics that
/// do not read as one (to be reported, not dropped silently).
pub fn parse(text: &str) -> (Vec<Stat>, Vec<String>) {
    let mut stats = Vec::new();
    let mut bad = Vec::new();
    for line in text.lines() {
        let Some(at) = line.find(MARK) else { continue };
        let rest = &line[at + MARK.len()..];
        if OTHER_LINES.iter().any(|w| rest.contains(w)) {
            continue;
        }
        match parse_one(rest) {
            Some(s) => stats.push(s),
            None => bad.push(line.trim().to_string()),
        }
    }
    (stats, bad)
}

/// `rank R key=value ...` after the mark.
fn parse_one(rest: &str) -> Option<Stat> {
    let mut words = rest.split_whitespace();
    if words.next()? != "rank" {
        return None;
    }
    let rank = words.next()?.parse().ok()?;
    let mut fields = std::collections::BTreeMap::new();
    for w in words {
        let (k, v) = w.split_once('=')?;
        fields.insert(k, v);
    }
    let number = |k: &str| fields.get(k)?.parse::<u64>().ok();
    let bytes = number("bytes")?;
    match (fields.get("proto"), fields.get("helper")) {
        (Some(proto), None) => Some(Stat::Proto {
            rank,
            proto: proto.to_string(),
            class: fields.get("class")?.strip_prefix("2^")?.parse().ok()?,
            transfers: number("transfers")?,
            bytes,
        }),
        (None, Some(h)) => Some(Stat::Helper {
            rank,
            helper: h.parse().ok()?,
            bytes,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_kinds_and_ignores_other_lines() {
        let text = "mpiexec: starting\n\
            tessel-stats: rank 1 proto=steal class=2^20 transfers=12 bytes=12582912\n\
            [1] tessel-stats: rank 1 helper=3 bytes=4096\n\
            tessel-stats: rank 1 copied-for-others bytes=0\n\
            tessel-stats: rank 1 board-posts=12\n\
            tessel-stats: rank 1 cpus=2 oversubscribed=0\n\
            result bench=x\n";
        let (stats, bad) = parse(text);
        assert!(bad.is_empty());
        assert_eq!(
            stats,
            [
                Stat::Proto {
                    rank: 1,
                    proto: "steal".into(),
                    class: 20,
                    transfers: 12,
                    bytes: 12582912
                },
                Stat::Helper {
                    rank: 1,
                    helper: 3,
                    bytes: 4096
                }
            ]
        );
    }

    #[test]
    fn keeps_what_it_cannot_read() {
        for line in [
            "tessel-stats: rank x proto=get class=2^16 transfers=1 bytes=1",
            "tessel-stats: rank 0 proto=get class=16 transfers=1 bytes=1",
            "tessel-stats: rank 0 proto=get class=2^16 bytes=1",
            "tessel-stats: rank 0 proto=get helper=1 class=2^16 transfers=1 bytes=1",
            "tessel-stats: pid 0 helper=1 bytes=1",
        ] {
            let (stats, bad) = parse(line);
            assert!(stats.is_empty(), "{line}");
            assert_eq!(bad, [line]);
        }
    }
}
